# A PyTorch script beside the .tri files (imported by mistake in fail_import_foreign_file.tri).
import torch
import torch.nn as nn


class Net(nn.Module):
    def forward(self, x):
        return torch.relu(x)

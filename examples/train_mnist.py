#!/usr/bin/env python3
"""Compiles examples/mnist_mlp.tri, trains it for a few steps and deploys it packed.

    PYTHONPATH=runtime /usr/bin/python3 examples/train_mnist.py

The data is synthetic (a fixed random "teacher" labels random images), so the
script needs no download; the loss must fall. After training, tritonrt.pack()
stores the ternary weights at 2 bits each and the packed model must give the
same eval outputs.
"""
import os
import sys

import torch
import torch.nn.functional as F

import tritonrt

here = os.path.dirname(os.path.abspath(__file__))
MnistMLP = tritonrt.compile_model(os.path.join(here, "mnist_mlp.tri"), optimization_level="O2")

torch.manual_seed(0)
images = torch.randn(512, 1, 28, 28) * 0.01  # small: ternary weights start at +-1
teacher = torch.randn(784, 10)
labels = (images.flatten(1) @ teacher).argmax(dim=1)

model = MnistMLP()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
first = last = None
for step in range(60):
    batch = slice((step * 64) % 512, (step * 64) % 512 + 64)
    loss = F.cross_entropy(model(images[batch]), labels[batch])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    first = loss.item() if first is None else first
    last = loss.item()
print("training loss: %.4f -> %.4f" % (first, last))

model.eval()
with torch.no_grad():
    before = model(images[:64])
    bytes_before = sum(t.numel() * t.element_size() for t in model.state_dict().values())
    tritonrt.pack(model)
    after = model(images[:64])
    bytes_after = sum(t.numel() * t.element_size() for t in model.state_dict().values())
print("state_dict: %d -> %d bytes packed; packed outputs identical: %s"
      % (bytes_before, bytes_after, torch.equal(before, after)))
sys.exit(0 if last < first and torch.equal(before, after) else 1)

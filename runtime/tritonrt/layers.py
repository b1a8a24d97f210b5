"""The standard library's ternary layers (LANGUAGE.md section 4): constructor arguments and
``state_dict`` keys of their ``torch.nn`` counterparts, ternary weights quantized in
``forward`` (straight-through) or read from packed buffers after ``tritonrt.pack``."""

import math

import torch
import torch.nn as nn

from . import cpu, cuda, packing
from .packing import weight

__all__ = ["TernaryLinear", "TernaryConv2d"]


def _pair(v):
    if isinstance(v, (tuple, list)):
        if len(v) != 2:
            raise ValueError("expected an int or a pair, got %r" % (v,))
        return (int(v[0]), int(v[1]))
    return (int(v), int(v))


def _init_like_torch(w, b, fan_in):
    # nn.Linear / nn.Conv2d reset_parameters: kaiming_uniform_(a=sqrt(5)), bias U(+-1/sqrt(fan_in))
    nn.init.kaiming_uniform_(w, a=math.sqrt(5))
    if b is not None:
        bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
        nn.init.uniform_(b, -bound, bound)


class TernaryLinear(nn.Module):
    """``nn.Linear`` with a ternary weight: ``y = x @ (s * q)^T + bias``.

    ``weight`` ``[out_features, in_features]`` is a latent float parameter (initialized like
    ``nn.Linear``), quantized with ``method`` (default ``absmean``) in ``forward``.
    """

    _ternary_weights = ("weight",)
    _ternary_methods = {"weight": "absmean"}

    def __init__(self, in_features, out_features, bias=True, *, method="absmean",
                 device=None, dtype=None):
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.in_features = int(in_features)
        self.out_features = int(out_features)
        self.weight = nn.Parameter(torch.empty((self.out_features, self.in_features), **kw))
        if bias:
            self.bias = nn.Parameter(torch.empty(self.out_features, **kw))
        else:
            self.register_parameter("bias", None)
        if method != "absmean":
            self._ternary_methods = {"weight": method}
        self.reset_parameters()
        self._register_load_state_dict_pre_hook(packing._check_unpacked_state, with_module=True)

    def reset_parameters(self):
        _init_like_torch(self.weight, self.bias, self.in_features)

    def forward(self, x):
        # packed weights: the CUDA target's kernel (not in a torch.fx trace: no decision on x)
        if not packing.fx_tracing() and x.is_cuda and cuda.enabled():
            y = cuda.packed_linear(self, "weight", x, kn=False, bias=self.bias)
            if y is not None:
                return y
        return cpu.linear(x, weight(self, "weight"), self.bias)

    def extra_repr(self):
        return "in_features=%d, out_features=%d, bias=%s" % (
            self.in_features, self.out_features, self.bias is not None)


class TernaryConv2d(nn.Module):
    """``nn.Conv2d`` with a ternary weight ``[out_ch, in_ch / groups, kh, kw]``.

    Positional arguments follow the language's standard library:
    ``(in_ch, out_ch, k, stride=1, padding=0, groups=1, bias=False)``; ``nn.Conv2d``'s
    keyword names ``in_channels``, ``out_channels``, ``kernel_size`` and ``dilation`` are
    accepted too.
    """

    _ternary_weights = ("weight",)
    _ternary_methods = {"weight": "absmean"}

    def __init__(self, in_ch=None, out_ch=None, k=None, stride=1, padding=0, groups=1,
                 bias=False, *, dilation=1, method="absmean", in_channels=None,
                 out_channels=None, kernel_size=None, device=None, dtype=None):
        super().__init__()
        in_ch = in_channels if in_ch is None else in_ch
        out_ch = out_channels if out_ch is None else out_ch
        k = kernel_size if k is None else k
        if in_ch is None or out_ch is None or k is None:
            raise TypeError("TernaryConv2d needs in_ch, out_ch and k")
        self.in_channels = int(in_ch)
        self.out_channels = int(out_ch)
        self.groups = int(groups)
        if self.groups < 1 or self.in_channels % self.groups or self.out_channels % self.groups:
            raise ValueError(
                "TernaryConv2d: in_ch (%d) and out_ch (%d) must be divisible by groups (%d)"
                % (self.in_channels, self.out_channels, self.groups))
        self.kernel_size = _pair(k)
        self.stride = _pair(stride)
        self.padding = padding if isinstance(padding, str) else _pair(padding)
        if isinstance(padding, str) and padding not in ("same", "valid"):
            raise ValueError("TernaryConv2d: padding must be 'same', 'valid' or sizes, not %r"
                             % (padding,))
        if padding == "same" and self.stride != (1, 1):
            # As nn.Conv2d: when the module is created, not at its first forward.
            raise ValueError("padding='same' is not supported for strided convolutions")
        self.dilation = _pair(dilation)
        kw = {"device": device, "dtype": dtype}
        shape = (self.out_channels, self.in_channels // self.groups) + self.kernel_size
        self.weight = nn.Parameter(torch.empty(shape, **kw))
        if bias:
            self.bias = nn.Parameter(torch.empty(self.out_channels, **kw))
        else:
            self.register_parameter("bias", None)
        if method != "absmean":
            self._ternary_methods = {"weight": method}
        self.reset_parameters()
        self._register_load_state_dict_pre_hook(packing._check_unpacked_state, with_module=True)

    def reset_parameters(self):
        fan_in = (self.in_channels // self.groups) * self.kernel_size[0] * self.kernel_size[1]
        _init_like_torch(self.weight, self.bias, fan_in)

    def forward(self, x):
        # packed weights: the CUDA target's kernel (not in a torch.fx trace: no decision on x)
        if not packing.fx_tracing() and x.is_cuda and cuda.enabled():
            y = cuda.packed_conv2d(self, x)
            if y is not None:
                return y
        return cpu.conv2d(x, weight(self, "weight"), self.bias, self.stride, self.padding,
                          self.dilation, self.groups)

    def extra_repr(self):
        s = "%d, %d, kernel_size=%s, stride=%s" % (
            self.in_channels, self.out_channels, self.kernel_size, self.stride)
        if self.padding != (0, 0):
            s += ", padding=%s" % (self.padding,)
        if self.dilation != (1, 1):
            s += ", dilation=%s" % (self.dilation,)
        if self.groups != 1:
            s += ", groups=%d" % self.groups
        if self.bias is None:
            s += ", bias=False"
        return s

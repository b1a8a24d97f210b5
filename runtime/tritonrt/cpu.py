"""CPU kernels for float32 inference: oneDNN where torch would use a slow path.

Debian's python3-torch (1.13) is built against the generic reference BLAS
(``BLAS_INFO=generic`` in ``torch.__config__.show()``), so ``F.linear`` and ``torch.matmul``
run at a few GFLOP/s, and so does ``F.conv2d`` whenever torch picks its own im2col + BLAS
path instead of oneDNN (1x1 convolutions with a batch under 16 on one thread). The same
build ships oneDNN, which is 7-15x faster on those shapes. This module sends the ternary
layers' products there (``torch.mkldnn_convolution``; a matrix product is a 1x1
convolution), in inference only:

- float32 CPU tensors, none of which requires a gradient (training, and eval without
  ``torch.no_grad()``, keep torch's own kernels and autograd);
- not while tracing, scripting or compiling (exported graphs keep standard ops);
- with ``auto``, only when the build has oneDNN and its BLAS is the generic one: with MKL or
  OpenBLAS, torch's choice is already good.

The results equal torch's up to float32 summation order: about 1e-7 relative to the terms
summed, which on outputs near zero, or of magnitude 1000 (an MLP on raw pixels), is more than
a tight ``allclose`` against a hand-written module allows. So it is opt-in:
``TRITONRT_CPU_KERNELS=auto`` (or ``set_kernels("auto")``) turns it on where the BLAS is the
generic one, ``onednn`` with any BLAS; ``torch``, the default, keeps torch's kernels, whose
results a hand-written module with the same calls reproduces bit for bit.
"""

import os
import weakref

import torch
import torch.nn.functional as F
from torch.nn.modules.utils import _pair

from .packing import _compiling

__all__ = ["kernels", "set_kernels", "linear", "matmul", "addmm", "conv2d"]

_CHOICES = ("auto", "torch", "onednn")


def _auto():
    backends = getattr(torch, "backends", None)
    mkldnn = getattr(backends, "mkldnn", None)
    if mkldnn is None or not mkldnn.is_available() or not hasattr(torch, "mkldnn_convolution"):
        return False
    try:
        config = torch.__config__.show()
    except Exception:  # pragma: no cover - a torch without a build summary
        return False
    return "BLAS_INFO=generic" in config


def _resolve(choice):
    if choice not in _CHOICES:
        raise ValueError("tritonrt: unknown CPU kernels %r (expected one of %s)"
                         % (choice, ", ".join(_CHOICES)))
    if choice == "auto":
        return _auto()
    return choice == "onednn" and hasattr(torch, "mkldnn_convolution")


_choice = os.environ.get("TRITONRT_CPU_KERNELS", "torch") or "torch"
if _choice not in _CHOICES:
    _choice = "torch"
_enabled = _resolve(_choice)


def kernels():
    """``"onednn"`` or ``"torch"``: what float32 CPU inference of ternary layers runs on."""
    return "onednn" if _enabled else "torch"


def set_kernels(choice):
    """Choose the CPU kernels: ``"torch"`` (default), ``"auto"`` (oneDNN where torch's BLAS is
    the generic one) or ``"onednn"``. Returns the previous choice."""
    global _choice, _enabled
    previous = _choice
    _enabled = _resolve(choice)
    _choice = choice
    return previous


# Below about this many multiply-adds, oneDNN's fixed cost per call (~20 us to set up the
# primitive) outweighs its speed; a matrix-vector product of 200k weights is memory-bound in
# both libraries and ties.
_MIN_WORK = 1 << 18


def _usable(work, *tensors):
    if work < _MIN_WORK:
        return False
    for t in tensors:
        if t is None:
            continue
        if not isinstance(t, torch.Tensor) or t.device.type != "cpu" \
                or t.dtype != torch.float32 or t.layout != torch.strided:
            return False
        if t.requires_grad and torch.is_grad_enabled():
            return False
    return True


def _gemm(x2, w4, bias):
    """``x2 @ W^T + bias`` for ``x2`` ``[m, k]`` and ``w4`` ``[n, k, 1, 1]``."""
    m, k = x2.shape
    y = torch.mkldnn_convolution(x2.reshape(m, k, 1, 1), w4, bias, [0, 0], [1, 1], [1, 1], 1)
    return y.reshape(m, w4.shape[0])


def linear(x, w, bias=None):
    """``F.linear(x, w, bias)``: ``w`` is ``[out, in]``."""
    if not _enabled or _compiling() or w.dim() != 2 or x.dim() < 1 or x.shape[-1] != w.shape[1] \
            or (bias is not None and bias.shape != (w.shape[0],)) \
            or not _usable(x.numel() * w.shape[0], x, w, bias):
        return F.linear(x, w, bias)
    n, k = w.shape
    y = _gemm(x.reshape(-1, k), w.reshape(n, k, 1, 1), bias)
    return y.reshape(x.shape[:-1] + (n,))


# The [n, k] transposes of [k, n] weights, kept while the weight (the tensor object and its
# version) is unchanged: ternary weights in inference are cached tensors (tritonrt.weight).
_transposed = {}


def _weight_t(w):
    key = id(w)
    hit = _transposed.get(key)
    if hit is not None and hit[0]() is w and hit[1] == w._version:
        return hit[2]
    wt = w.t().contiguous()
    _transposed[key] = (weakref.ref(w, lambda _, key=key: _transposed.pop(key, None)),
                        w._version, wt)
    return wt


def _matmul(x, w, bias):
    k, n = w.shape
    y = _gemm(x.reshape(-1, k), _weight_t(w).reshape(n, k, 1, 1), bias)
    return y.reshape(x.shape[:-1] + (n,))


def matmul(x, w):
    """``torch.matmul(x, w)``; oneDNN for a 2-D ``w`` ``[in, out]`` and ``x`` of 2 or more
    dimensions."""
    if not _enabled or _compiling() or w.dim() != 2 or x.dim() < 2 or x.shape[-1] != w.shape[0] \
            or not _usable(x.numel() * w.shape[1], x, w):
        return torch.matmul(x, w)
    return _matmul(x, w, None)


def addmm(bias, x, w):
    """``torch.addmm(bias, x, w)``: ``bias + x @ w`` for 2-D ``x`` and ``w``, ``bias`` 1-D."""
    if not _enabled or _compiling() or w.dim() != 2 or x.dim() != 2 or x.shape[1] != w.shape[0] \
            or not isinstance(bias, torch.Tensor) or bias.shape != (w.shape[1],) \
            or not _usable(x.numel() * w.shape[1], x, w, bias):
        return torch.addmm(bias, x, w)
    return _matmul(x, w, bias)


def _conv_work(x, w, stride):
    """About the multiply-adds of the convolution: each input element meets the filter's taps
    of its group (``w.shape[1:]``, over the ``x.shape[-3] // w.shape[1]`` groups) for each
    output channel, once per stride step."""
    s = _pair(stride)
    taps = w.shape[0] * w.shape[1] * w.shape[2] * w.shape[3]
    return x.numel() * taps // max(1, x.shape[-3]) // max(1, s[0] * s[1])


def conv2d(x, w, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """``F.conv2d`` with the same arguments (``padding`` a number or a pair)."""
    # A mismatch of channels is left to F.conv2d, whose error message users know.
    if not _enabled or _compiling() or x.dim() not in (3, 4) or w.dim() != 4 \
            or isinstance(padding, str) \
            or x.shape[-3] != w.shape[1] * groups or w.shape[0] % groups \
            or not _usable(_conv_work(x, w, stride), x, w, bias):
        return F.conv2d(x, w, bias, stride, padding, dilation, groups)
    unbatched = x.dim() == 3
    y = torch.mkldnn_convolution(x.unsqueeze(0) if unbatched else x, w, bias, _pair(padding),
                                 _pair(stride), _pair(dilation), int(groups))
    return y.squeeze(0) if unbatched else y

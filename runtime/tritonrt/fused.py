"""Reference implementations of the fused epilogues the optimizer emits (matmul or conv,
then scale, bias and activation). Plain PyTorch: on CUDA with packed weights the generated
module may call its specialized kernels instead; these define the results."""

import torch
import torch.nn.functional as F

__all__ = ["ACTIVATIONS", "activation", "fused_matmul", "conv_bn_act"]


def _identity(y):
    return y


_ACTS = {
    "none": _identity,
    "relu": F.relu,
    "gelu": F.gelu,
    "silu": F.silu,
    "relu6": F.relu6,
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "hardswish": F.hardswish,
}

#: The activation names ``fused_matmul`` and ``conv_bn_act`` accept.
ACTIVATIONS = tuple(_ACTS)


def activation(y, act="none"):
    """Apply the activation named ``act`` (one of ``ACTIVATIONS``; ``None`` = ``"none"``)."""
    fn = _ACTS.get("none" if act is None else act)
    if fn is None:
        raise ValueError("tritonrt: unknown activation %r (expected one of %s)"
                         % (act, ", ".join(ACTIVATIONS)))
    return fn(y)


def fused_matmul(x, w, bias=None, scale=None, act="none", layout="matmul"):
    """``act((x @ w) * scale + bias)``.

    ``layout="matmul"``: ``x @ w`` (``torch.matmul`` semantics); ``layout="linear"``: ``w`` is
    ``[out, in]`` and the product is ``x @ w^T``. ``scale`` and ``bias`` (tensors or numbers)
    are skipped when ``None``; the scale is applied before the bias.
    """
    if layout == "matmul":
        y = torch.matmul(x, w)
    elif layout == "linear":
        y = torch.matmul(x, w.transpose(-2, -1) if w.dim() >= 2 else w)
    else:
        raise ValueError("fused_matmul: unknown layout %r (expected 'matmul' or 'linear')"
                         % (layout,))
    if scale is not None:
        y = y * scale
    if bias is not None:
        y = y + bias
    return activation(y, act)


def conv_bn_act(conv, bn, x, act="none"):
    """``act(bn(conv(x)))``, or ``act(conv(x))`` when ``bn`` is ``None``.

    ``conv`` and ``bn`` are modules (or callables); BatchNorm follows its own training /
    eval mode, so the result equals the unfused sequence exactly.
    """
    y = conv(x)
    if bn is not None:
        y = bn(y)
    return activation(y, act)

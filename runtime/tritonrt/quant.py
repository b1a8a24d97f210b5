"""Ternary and int8 quantizers (LANGUAGE.md section 5, "Quantization").

Every quantizer returns the *dequantized* value (``s * q`` for a ternary tensor) as a
floating tensor and is straight-through: in the backward pass the rounding is the
identity, so the gradient with respect to the input is exactly the incoming gradient.

The straight-through form used here is ``y + (x - x.detach())`` where ``y`` is the
quantized value computed without autograd. For finite ``x`` the added term is exactly
zero, so the forward value is bit-for-bit ``s * q`` (unlike ``x + (y - x).detach()``,
which can be off by one ulp); this is what makes packed and unpacked modules agree
exactly. There is no data-dependent Python control flow, so ``torch.compile(fullgraph=True)``
can trace all of it.
"""

import math

import torch

__all__ = [
    "EPS",
    "METHODS",
    "ternary_quantize",
    "ternary_quantize_parts",
    "ste_quantize",
    "ternary_dequantize",
    "stop_gradient",
    "act_quant_int8",
    "ternary_weights",
]

#: Lower bound of every scale (absmean scale, TWN scale, int8 absmax).
EPS = 1e-5

#: The quantization methods of ``ternary_quantize``.
METHODS = ("absmean", "threshold", "stochastic")


def _compute_dtype(x):
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def _straight_through(y, x):
    """``y`` in the forward pass, the identity on ``x`` in the backward pass. Under
    ``torch.jit.trace`` the term is there whatever the grad mode and whether ``x`` requires
    grad (an activation requires it only with grad enabled): the trace is checked by running
    it again under ``no_grad``, and a graph traced under ``no_grad`` would otherwise carry no
    gradient through the quantizer when trained."""
    if torch.jit.is_tracing() or (x.requires_grad and torch.is_grad_enabled()):
        return y + (x - x.detach())
    return y


def _q_and_s(x, method, threshold, training):
    """(q, s) as float tensors of the compute dtype, with no autograd history."""
    if method not in METHODS:
        raise ValueError(
            "ternary_quantize: unknown method %r (expected one of %s)"
            % (method, ", ".join(METHODS))
        )
    xf = x.detach().to(_compute_dtype(x))
    a = xf.abs()
    n = max(a.numel(), 1)  # a static size: an empty tensor gets s = EPS, not NaN
    if method == "threshold":
        d = float(threshold) * (a.sum() / n)
        keep = a > d
        count = keep.sum()
        # The mean over the kept elements, unclamped (LANGUAGE.md section 5); EPS only
        # when none is kept, where any scale gives the same zero tensor.
        s = (a * keep).sum() / count.clamp(min=1).to(a.dtype)
        s = torch.where(count > 0, s, torch.full_like(s, EPS))
        # A NaN or infinite element (a diverged step), or a sum of |x| past the dtype's range,
        # keeps nothing; its NaN scale makes the value NaN, as the formula's is, not a
        # silent zero tensor.
        s = torch.where(torch.isfinite(d), s, torch.full_like(s, math.nan))
        q = xf.sign() * keep
        return q, s
    s = (a.sum() / n).clamp(min=EPS)
    del a  # one weight-sized temporary at a time (allocations dominate on large weights)
    r = xf / s
    if method == "stochastic" and training:
        lo = r.floor()
        r = lo + (torch.rand_like(r) < (r - lo)).to(r.dtype)
    else:
        r.round_()  # r is new: rounded and clamped in place, the same values
    return r.clamp_(-1, 1), s


def ternary_quantize(x, method="absmean", threshold=0.7, training=False):
    """Quantize ``x`` to a ternary tensor and return its value ``s * q``.

    * ``absmean`` (BitNet b1.58): ``s = mean(|x|)`` clamped to ``>= 1e-5``,
      ``q = clamp(round(x / s), -1, 1)`` (``round`` is round-half-to-even, as ``torch.round``).
    * ``threshold`` (TWN): ``d = threshold * mean(|x|)``, ``q = sign(x) * (|x| > d)``,
      ``s = mean(|x|)`` over the kept elements, not clamped. When no element is kept (``x``
      all zero, or ``threshold`` too large) ``q`` is all zero and ``s`` is ``1e-5``; when
      ``x`` holds a NaN or an infinity, or the sum of ``|x|`` overflows its dtype, ``s`` is
      NaN (so is the value).
    * ``stochastic``: like ``absmean``, but when ``training`` is true ``x / s`` is rounded up
      with probability equal to its fractional part (down otherwise), then clamped.

    The scale is computed in float32 (float64 for a float64 ``x``); the result has ``x``'s
    dtype (float32 for a non-floating ``x``). Gradient: the identity with respect to ``x``.
    """
    q, s = _q_and_s(x, method, threshold, training)
    out_dtype = x.dtype if x.is_floating_point() else torch.float32
    y = q.mul_(s).to(out_dtype)  # q is new: scaled in place (s * q, bit for bit)
    if not x.is_floating_point():
        return y
    return _straight_through(y, x)


def ternary_quantize_parts(x, method="absmean", threshold=0.7):
    """The parts of ``ternary_quantize(x, method, threshold)`` in eval mode.

    Returns ``(q, s)``: ``q`` an ``int8`` tensor of ``x``'s shape with values in {-1, 0, 1},
    ``s`` a 0-d tensor of the dtype the scale is computed in (float32; float64 for a float64
    ``x``, so that a float64 model packs without rounding its scales), with ``s * q`` equal to
    ``ternary_quantize(x)`` in eval mode. No autograd (used for packing). ``stochastic``
    quantizes like ``absmean`` here.
    """
    with torch.no_grad():
        q, s = _q_and_s(x, method, threshold, training=False)
        return q.to(torch.int8), s.reshape(())


def ste_quantize(x):
    """``x + stop_gradient(ternary_quantize(x) - x)``: the absmean ternary value of ``x``
    with the identity gradient (bit-for-bit the value of ``ternary_quantize(x)``)."""
    return ternary_quantize(x, method="absmean")


def ternary_dequantize(t):
    """``s * q`` of a ternary value, a float tensor; the runtime's ternary values are already
    dequantized (an integer tensor of trits becomes float32)."""
    return t if t.is_floating_point() else t.to(torch.float32)


def stop_gradient(x):
    """The value of ``x`` with no gradient flowing back."""
    return x.detach()


def act_quant_int8(x):
    """Per-row (last dimension) absmax int8 fake quantization, as in BitNet.

    ``scale = 127 / max(|x|)`` per row (the max clamped to ``>= 1e-5``),
    ``y = clamp(round(x * scale), -128, 127) / scale``, computed in float32 (float64 for a
    float64 ``x``) and returned in ``x``'s dtype (float32 for a non-floating ``x``), with the
    identity gradient.
    """
    xd = x.detach().to(_compute_dtype(x))
    if xd.dim() == 0:
        m = xd.abs()
    elif xd.shape[-1] == 0:
        return xd if not x.is_floating_point() else x.clone()  # empty rows: nothing to scale
    else:
        m = xd.abs().amax(dim=-1, keepdim=True)
    scale = 127.0 / m.clamp(min=EPS)
    y = (xd * scale).round_().clamp_(-128, 127).div_(scale)  # one new tensor, same values
    if not x.is_floating_point():
        return y
    return _straight_through(y.to(x.dtype), x)


def _as_shape(shape):
    if isinstance(shape, int):
        return (shape,)
    if isinstance(shape, torch.Tensor):
        return tuple(int(d) for d in shape.tolist())
    return tuple(int(d) for d in shape)


def ternary_weights(shape, sparsity=0.0, generator=None, *, dtype=None, device=None):
    """The initial latent value of a ternary weight: a tensor of ``shape`` with values in
    {-1, 0, +1}: ``round(sparsity * numel)`` zeros at random positions, the rest +1 or -1
    with equal probability. Draws from ``generator`` (a CPU ``torch.Generator``) when given.
    ``dtype`` defaults to torch's default dtype, as ``nn.Linear``'s parameters do.
    """
    if dtype is None:
        dtype = torch.get_default_dtype()
    shape = _as_shape(shape)
    sparsity = float(sparsity)
    if not 0.0 <= sparsity < 1.0:  # as tritonc checks a constant (docs/language.md)
        raise ValueError("ternary_weights: sparsity must be in [0, 1), got %r" % sparsity)
    n = _prod(shape)
    values = torch.randint(0, 2, (n,), generator=generator).to(dtype) * 2 - 1
    zeros = min(n, int(round(sparsity * n)))
    if zeros > 0:
        values[torch.randperm(n, generator=generator)[:zeros]] = 0
    values = values.reshape(shape)
    if device is not None:
        values = values.to(device)
    return values


def _prod(dims):
    p = 1
    for d in dims:
        p *= int(d)
    return p

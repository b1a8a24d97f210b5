"""Reference implementations of the fused epilogues the optimizer emits (matmul or conv,
then scale, bias and activation). Plain PyTorch: on CUDA with packed weights the generated
module may call its specialized kernels instead, and float32 CPU inference may run on
oneDNN (``cpu``); these define the results."""

import itertools

import torch
import torch.nn.functional as F

from . import cpu, cuda
from .layers import TernaryConv2d, TernaryLinear
from .packing import _cached, _compiling, _refuse_training, _stamp, fx_tracing, weight

__all__ = ["ACTIVATIONS", "activation", "fused_matmul", "fused_conv2d", "conv_bn_act",
           "linear_act", "gelu"]


def _identity(y):
    return y


def _contiguous(grad):
    # None: no gradient reaches the output (a custom Function's backward returned None for
    # it, gradcheck's undefined-gradient check): nothing to reorder.
    return None if grad is None else grad.contiguous()


def _gelu_contiguous_grad(x):
    """``F.gelu(x)``, with its incoming gradient made contiguous first.

    torch 1.13's CPU gelu backward reads a gradient whose strides differ from its input's
    wrongly (values up to 1e38: the gradient of ``gelu(h)`` under ``w @ gelu(h)`` is such a
    transposed tensor). A contiguous gradient is read right whatever ``x``'s layout; the hook
    is a no-op (``contiguous()`` returns the tensor itself) where the gradient already is."""
    y = F.gelu(x)
    if fx_tracing():  # no decision on a Proxy (and no gradient is taken by the tracer)
        return y
    if y.requires_grad:
        y.register_hook(_contiguous)
    return y


def _torch_major():
    try:
        return int(torch.__version__.split(".")[0])
    except ValueError:
        return 2


#: ``gelu(x)``: ``F.gelu`` itself on torch 2 (what ``torch.compile`` sees); on torch 1.x
#: the same values with a contiguous incoming gradient (``_gelu_contiguous_grad``).
gelu = F.gelu if _torch_major() >= 2 else _gelu_contiguous_grad


_ACTS = {
    "none": _identity,
    "relu": F.relu,
    "gelu": gelu,
    "silu": F.silu,
    "relu6": F.relu6,
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "hardswish": F.hardswish,
}

#: The activation names ``fused_matmul`` and ``conv_bn_act`` accept.
ACTIVATIONS = tuple(_ACTS)


_IN_PLACE = {"relu": F.relu, "silu": F.silu, "relu6": F.relu6, "hardswish": F.hardswish}


def activation(y, act="none", inplace=False):
    """Apply the activation named ``act`` (one of ``ACTIVATIONS``; ``None`` = ``"none"``).

    ``inplace=True``: ``y`` is a new tensor that nothing else holds and autograd does not
    keep (a convolution's, product's or batch norm's output), so relu, silu, relu6 and
    hardswish overwrite it (one tensor less to allocate; autograd handles these in-place
    forms)."""
    if inplace and act in _IN_PLACE:
        return _IN_PLACE[act](y, inplace=True)
    fn = _ACTS.get("none" if act is None else act)
    if fn is None:
        raise ValueError("tritonrt: unknown activation %r (expected one of %s)"
                         % (act, ", ".join(ACTIVATIONS)))
    return fn(y)


def _autocast_by_device():
    try:
        torch.is_autocast_enabled("cpu")  # torch >= 2.4 (the old spellings warn there)
        return True
    except TypeError:
        return False


_AUTOCAST_BY_DEVICE = _autocast_by_device()


def _autocasting(x):
    """Whether autocast is on for ``x``'s device."""
    if x.device.type == "meta":  # no autocast there (torch 2.x raises when asked)
        return False
    if _AUTOCAST_BY_DEVICE:
        return torch.is_autocast_enabled(x.device.type)
    if x.is_cuda:
        return torch.is_autocast_enabled()
    return x.device.type == "cpu" and torch.is_autocast_cpu_enabled()


def fused_matmul(x, w, bias=None, scale=None, act="none", layout="matmul"):
    """``act((x @ w) * scale + bias)``.

    ``layout="matmul"``: ``x @ w`` (``torch.matmul`` semantics); ``layout="linear"``: ``w`` is
    ``[out, in]`` and the product is ``x @ w^T``. ``scale`` and ``bias`` (tensors or numbers)
    are skipped when ``None``; the scale is applied before the bias.
    """
    if fx_tracing():  # torch.fx: the steps as written (no decision may read x)
        y = torch.matmul(x, w) if layout == "matmul" else F.linear(x, w)
        y = y if scale is None else y * scale
        return activation(y if bias is None else y + bias, act)
    source = getattr(w, "_tritonrt_source", None)  # a packed weight (tritonrt.weight)
    if source is not None and x.is_cuda and cuda.enabled() and w.dim() >= 1:
        module = source[0]()
        y = None if module is None else cuda.packed_linear(
            module, source[1], x, kn=layout == "matmul", act=act, chscale=scale, bias=bias,
            item=source[2] if len(source) > 2 else None)
        if y is not None:
            return y
    plain_bias = scale is None and isinstance(bias, torch.Tensor) and bias.dim() <= 1 \
        and bias.dtype == x.dtype == w.dtype
    # Under autocast, addmm would run the bias add in the low precision too, where the
    # written `x @ w + b` adds a float32 bias to the bf16/fp16 product and gives float32:
    # the steps as written, so every -O level computes the same values.
    if layout == "matmul" and plain_bias and x.dim() == 2 and w.dim() == 2 \
            and not _autocasting(x):
        return activation(cpu.addmm(bias, x, w), act, inplace=True)  # one kernel: bias + x @ w
    if layout == "linear" and (plain_bias or (scale is None and bias is None)) and w.dim() == 2:
        return activation(cpu.linear(x, w, bias), act, inplace=True)
    if layout == "matmul":
        y = cpu.matmul(x, w)
    elif layout == "linear":
        y = torch.matmul(x, w.transpose(-2, -1) if w.dim() >= 2 else w)
    else:
        raise ValueError("fused_matmul: unknown layout %r (expected 'matmul' or 'linear')"
                         % (layout,))
    if scale is not None:
        y = y * scale
    if bias is not None:
        y = y + bias
    return activation(y, act, inplace=True)


def left_matmul(w, y):
    """``w @ y`` with a ternary matrix ``w`` on the left (token mixing, ``w @ x``; with the
    CUDA target). On CUDA a packed ``w`` runs its kernel on ``y`` transposed (``(y^T @ w^T)^T``,
    the same sums); everywhere else ``w @ y``."""
    if fx_tracing():
        return w @ y
    source = getattr(w, "_tritonrt_source", None)  # a packed weight (tritonrt.weight)
    if source is not None and len(source) == 2 and y.is_cuda and cuda.enabled() and \
            w.dim() == 2:
        module = source[0]()
        out = None if module is None else cuda.packed_left_matmul(module, source[1], y)
        if out is not None:
            return out
    return w @ y


def stack_item(stack, index):
    """``stack[index]``: an item of a stacked ternary weight (``x @ st[i]`` in the source, with
    the CUDA target). Of a packed weight on its way to ``fused_matmul`` the item remembers
    which one it is, so that the product runs the kernel on the item's packed codes."""
    item = stack[index]
    if fx_tracing():
        return item
    source = getattr(stack, "_tritonrt_source", None)
    if source is not None and len(source) == 2 and isinstance(index, int):
        item._tritonrt_source = source + (index,)
    return item


def fused_conv2d(x, w, bias=None, stride=1, padding=0, dilation=1, groups=1, scale=None,
                 act="none"):
    """``act(conv2d(x, w, stride, padding, dilation, groups) * scale + bias)``: the functional
    convolution of a ternary weight with its epilogue (``bias`` per output channel, added after
    the scale; ``scale`` a number or None). On CUDA, a packed weight runs the CUDA target's
    kernel when the model was compiled with it; everywhere else ``F.conv2d`` (``cpu.conv2d``)."""
    if fx_tracing():
        y = F.conv2d(x, w, None, stride, padding, dilation, groups)
        y = y if scale is None else y * scale
        return activation(y if bias is None else y + bias.reshape(-1, 1, 1), act)
    source = getattr(w, "_tritonrt_source", None)  # a packed weight (tritonrt.weight)
    if source is not None and len(source) == 2 and x.is_cuda and cuda.enabled() and w.dim() == 4:
        module = source[0]()
        y = None if module is None else cuda.packed_conv2d_fn(
            module, source[1], x, stride, padding, dilation, groups, act=act, chscale=scale,
            bias=bias)
        if y is not None:
            return y
    if scale is None:
        return activation(cpu.conv2d(x, w, bias, stride, padding, dilation, groups), act,
                          inplace=True)
    y = cpu.conv2d(x, w, None, stride, padding, dilation, groups) * scale
    if bias is not None:
        y = y + bias.reshape(-1, 1, 1)
    return activation(y, act, inplace=True)


def _state_dtype(layer):
    """The float dtype of ``layer``'s own parameters and buffers (the first floating one:
    a packed layer's ``uint8`` codes are passed over for its scale), or ``None``."""
    # The usual cases without walking the module's generators (once per call of every
    # convolution): a float weight parameter first, a packed weight's scale buffer.
    params = getattr(layer, "_parameters", None)
    if params:
        first = next(iter(params.values()))
        if first is not None and first.is_floating_point():
            return first.dtype
    for t in layer.parameters(recurse=False):
        if t.is_floating_point():
            return t.dtype
    for t in layer.buffers(recurse=False):
        if t.is_floating_point():
            return t.dtype
    return None


_NARROW_INTS = (torch.int8, torch.uint8, torch.int16)


def _exact_in_float64(x):
    """Whether float64 holds every sum of products of ``x``'s rows exactly (int8, uint8 and
    int16 rows of fewer than 2**23 elements: each product is below 2**30)."""
    return x.dtype in _NARROW_INTS and x.shape[-1] < 2 ** 23


def int_matmul(a, b):
    """``a @ b`` of two integer tensors of one dtype (the language's ``int8 @ int8``,
    ``int32 @ int32``, ``trit @ trit``), exactly as the CPU computes it (wrapping past the
    dtype's range). CUDA has no integer matmul (cuBLAS multiplies floats): there int8, uint8
    and int16 products are computed in float64, exact while a row has fewer than 2**23
    elements (each product is below 2**30), and converted back through int64, so a result
    past the dtype wraps as the CPU's does; int32 and int64 ones, whose sums float64 cannot
    hold exactly, are computed on the CPU and moved back.

    An operand that is a float tensor is the scaled value of ternary arithmetic
    (``ternary @ ternary`` is typed int32, ``ternary + ternary`` int8, held as ``s * q``
    floats): the product is then the float product in that operand's dtype, scaled too."""
    scaled = _scaled_operand(a, b)
    if scaled is not None:
        return a.to(scaled) @ b.to(scaled)
    if a.is_cuda:
        if _exact_in_float64(a):
            return _int_matmul_in_float64(a, b)
        return (a.cpu() @ b.cpu()).to(a.device)
    return a @ b


def _scaled_operand(*tensors):
    """The float dtype of the first floating tensor among ``tensors`` (a scaled value of
    ternary arithmetic typed as an integer), or None when all are integers."""
    for t in tensors:
        if t is not None and t.is_floating_point():
            return t.dtype
    return None


def _int_matmul_in_float64(a, b):
    return (a.double() @ b.double()).to(torch.int64).to(a.dtype)


def int_linear(x, w, bias=None):
    """``linear(x, w, bias)`` of integer tensors of one dtype: ``F.linear`` on the CPU, and
    on CUDA, which has no integer matmul, computed as ``int_matmul`` is (a float operand, a
    scaled value of ternary arithmetic, makes it the float product)."""
    scaled = _scaled_operand(x, w, bias)
    if scaled is not None:
        return F.linear(x.to(scaled), w.to(scaled), None if bias is None else bias.to(scaled))
    if x.is_cuda:
        if _exact_in_float64(x):
            return _int_linear_in_float64(x, w, bias)
        return F.linear(x.cpu(), w.cpu(), None if bias is None else bias.cpu()).to(x.device)
    return F.linear(x, w, bias)


def _int_linear_in_float64(x, w, bias):
    y = F.linear(x.double(), w.double(), None if bias is None else bias.double())
    return y.to(torch.int64).to(x.dtype)


def mask_causal(scores):
    """Attention ``scores`` ``[..., L, S]`` with ``-inf`` above the diagonal: the lower
    triangle of ``[L, S]`` is kept, as ``scaled_dot_product_attention(..., is_causal=true)``
    (torch's ``is_causal``) does."""
    keep = torch.ones(scores.shape[-2], scores.shape[-1], dtype=torch.bool,
                      device=scores.device).tril()
    return scores.masked_fill(~keep, float("-inf"))


def float_dtype(module):
    """The float dtype of ``module``'s state (sub-modules included): ``torch.float32`` while
    any floating parameter or buffer is float32, else that of the first one (the model was
    converted, ``model.bfloat16()``, ``.double()``), or ``torch.float32`` when it has none. A
    layer whose inputs are ids and whose weights are its sub-modules' creates its float32
    tensors (a causal mask) in this dtype, so that after ``model.bfloat16()`` they do not
    promote the activations. A weight the source declares ``bfloat16`` does not decide it,
    nor does packing (which turns the latent ternary weights into uint8 codes and float32
    scales): audit 59 saw a model's creations switch to bfloat16 after ``pack()``."""
    first = None
    for t in itertools.chain(module.parameters(), module.buffers()):
        if t.is_floating_point():
            if t.dtype == torch.float32:
                return torch.float32
            if first is None:
                first = t.dtype
    return torch.float32 if first is None else first


def run_layer(layer, x):
    """``layer(x)`` for a built-in layer given a float input of another dtype than its own
    state (a ``bfloat16`` input declared in the source, the model left in ``float32``):
    ``x`` is converted to the layer's dtype and the result back to ``x``'s, which is the
    dtype the language gives it. A no-op wrapper when the dtypes agree (after
    ``model.bfloat16()``), so that ``torch.nn`` does not raise on mixed dtypes."""
    dtype = _state_dtype(layer)
    if dtype is None or dtype == x.dtype or not x.is_floating_point():
        return layer(x)
    return layer(x.to(dtype)).to(x.dtype)


def _hooked(module):
    """Whether ``module`` has a forward hook other than pack()'s training guard, or a
    backward hook (a full backward hook returns the module's output as a view that no
    activation may overwrite in place) (asked at every call of every convolution: no list
    is built)."""
    if getattr(module, "_forward_hooks", None) or getattr(module, "_backward_hooks", None) \
            or getattr(module, "_backward_pre_hooks", None):
        return True
    pre = getattr(module, "_forward_pre_hooks", None)
    return bool(pre) and any(h is not _refuse_training for h in pre.values())


def _plain(*modules):
    """Whether calling each module would do exactly what folding assumes: a class this
    package knows (not a subclass with its own ``forward``) and no hooks, on the module or
    global, whose effect running it as one convolution (or an activation in place on its
    output) would skip or break."""
    glob = torch.nn.modules.module
    if getattr(glob, "_global_forward_hooks", None) or \
            getattr(glob, "_global_forward_pre_hooks", None) or \
            getattr(glob, "_global_backward_hooks", None) or \
            getattr(glob, "_global_backward_pre_hooks", None):
        return False
    for m in modules:
        if m is None:
            continue
        if type(m) not in (torch.nn.Conv2d, TernaryConv2d, torch.nn.BatchNorm2d, TernaryLinear) \
                or _hooked(m):
            return False
    return True


def _foldable(conv, bn):
    """Whether ``bn(conv(x))`` can run as one convolution with folded weights."""
    if bn is None or bn.training or not isinstance(bn, torch.nn.BatchNorm2d):
        return False
    if not _plain(conv, bn):
        return False
    if bn.running_mean is None or bn.running_var is None:
        return False
    if getattr(conv, "padding_mode", "zeros") != "zeros":
        return False
    return all(hasattr(conv, a) for a in ("stride", "padding", "dilation", "groups"))


def _conv_weight(conv, cache=True):
    """The weight the convolution computes with (quantized, or unpacked, if ternary;
    ``cache``: as ``tritonrt.weight``'s)."""
    if "weight" in getattr(conv, "_ternary_weights", ()):
        return weight(conv, "weight", cache=cache)
    return conv.weight


def _bn_stamp(conv, bn, tensors):
    """(stamp, content) of a value computed from ``tensors`` (of ``conv`` and ``bn``): the
    stamp (a function, computed only when the value may be cached) changes whenever one of
    them does; ``content``: those whose values ``_cached`` checks as well (none in a packed,
    deployed, model: its tensors change only through their version counters)."""
    frozen = getattr(conv, "_tritonrt_frozen", False) and getattr(bn, "_tritonrt_frozen", False)
    content = () if frozen else tensors

    def stamp():
        s = _stamp(*tensors)
        return s + (id(bn), bn.eps) if s is not None else None

    return stamp, content


def _bn_affine(conv, bn):
    """(per-channel scale, bias) of ``bn(conv(x)) = conv_nobias(x) * scale + bias`` in eval."""
    # Not the convolution's weight: the map does not depend on it.
    sources = ([conv.bias] if getattr(conv, "bias", None) is not None else []) \
        + list(bn.parameters()) + list(bn.buffers())
    stamp, content = _bn_stamp(conv, bn, sources)

    def compute():
        # In float32 at least (half-precision statistics), in float64 for a .double() model.
        dt = torch.promote_types(bn.running_var.dtype, torch.float32)
        inv_std = torch.rsqrt(bn.running_var.to(dt) + bn.eps)
        scale = inv_std * bn.weight.to(dt) if bn.weight is not None else inv_std
        bias = conv.bias.to(dt) if getattr(conv, "bias", None) is not None \
            else torch.zeros_like(scale)
        folded = (bias - bn.running_mean.to(dt)) * scale
        if bn.bias is not None:
            folded = folded + bn.bias.to(dt)
        return scale.contiguous(), folded.contiguous()

    return _cached(conv, "_tritonrt_bn_affine", stamp, compute, sources, content)


def _folded(conv, bn):
    """(weight, bias) of the convolution with ``bn``'s eval-mode affine map folded in."""
    sources = list(conv.parameters()) + list(conv.buffers()) + list(bn.parameters()) \
        + list(bn.buffers())
    stamp, content = _bn_stamp(conv, bn, sources)

    def compute():
        # The weight itself is not kept too: the folded one is (one float copy, not two).
        w = _conv_weight(conv, cache=False)
        scale, bias = _bn_affine(conv, bn)
        return w * scale.reshape(-1, 1, 1, 1).to(w.dtype), bias.to(w.dtype)

    if not getattr(conv, "_tritonrt_cache_unpacked", True):
        return compute()  # pack(cache=False): a serving model keeps no float weight
    return _cached(conv, "_tritonrt_folded_bn", stamp, compute, sources, content)


#: Inputs smaller than this (elements) run the convolution and the batch norm as written
#: (see conv_bn_act).
_FOLD_MIN_ELEMENTS = 1 << 16


def _writable(a, b):
    """Whether ``a + b`` (or ``a - b``) may be written into ``a``: both are tensors of one
    shape and dtype (no broadcast or promotion would make the result another tensor). Under
    torch.fx they are Proxies, whose sizes no Python comparison may read; under
    torch.jit.trace comparing sizes warns that the trace may not generalize, so the sum is
    traced as written. (Checked per call, for a fraction of a microsecond: ``_compiling()``
    would cost more than the add of a small tensor.)"""
    return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) \
        and not torch.jit.is_tracing() and a.shape == b.shape and a.dtype == b.dtype


def add_into(a, b):
    """``a + b``, written into ``a`` where it has the sum's shape and dtype.

    The compiler calls it only where ``a`` is a new tensor that nothing else reads and whose
    value autograd does not keep (a product's, sum's or convolution's output): one tensor
    less to allocate, which on large activations saves the page faults of a new one, as
    hand-written code's ``out += identity``. Otherwise (a broadcast, a dtype promotion, a
    trace being taken) a new tensor, exactly ``a + b``."""
    return a.add_(b) if _writable(a, b) else a + b


def sub_into(a, b):
    """``a - b``, written into ``a`` where it can be (as :func:`add_into`)."""
    return a.sub_(b) if _writable(a, b) else a - b


def _unplanned(x, fn, *args):
    """``fn(*args)``, a layer's plain launcher looked up where the compiler planned its
    residual launcher (a residual of another shape or dtype than the output): not one to warn
    about when missing. (Not under torch.compile, which traces no context manager of ours, and
    no launcher runs there.)"""
    # (A Proxy under torch.fx is no tensor; the cheap tests first: this runs every call.)
    if isinstance(x, torch.Tensor) and x.is_cuda and not _compiling():
        with cuda.unplanned():
            return fn(*args)
    return fn(*args)


def _add_residual(y, residual, act, inplace):
    """``act(y + residual)`` for a new tensor ``y`` that autograd does not keep (a
    convolution's, batch norm's or linear layer's output): the sum written into ``y`` as
    :func:`add_into` does when ``inplace`` (no hook could have kept ``y``), then the
    activation in place on the sum."""
    y = add_into(y, residual) if inplace else y + residual
    return activation(y, act, inplace=True)


def linear_act(linear, x, act="none", mixed_dtype=False, residual=None):
    """``act(linear(x))`` of a :class:`TernaryLinear` module ``linear``, or
    ``act(linear(x) + residual)`` when ``residual`` is given.

    Packed and on CUDA, one kernel applies the activation to its output tile (no second pass
    over the output); elsewhere the module runs, then the activation, in place when no hook
    could have kept the output. ``mixed_dtype`` as for :func:`conv_bn_act`. A module of
    another class (a subclass with its own ``forward``) or with hooks is called as a module.
    A residual is added before the activation, into the layer's output where it can be
    (:func:`_add_residual`).
    """
    if residual is not None:
        plain = not fx_tracing() and _plain(linear)
        if plain and not mixed_dtype and x.is_cuda and cuda.enabled() \
                and getattr(linear, "_tritonrt_packed", False):
            # The residual launcher adds it in the kernel's epilogue.
            y = cuda.packed_linear(linear, "weight", x, kn=False, act=act, bias=linear.bias,
                                   residual=residual)
            if y is not None:
                return y
        y = _unplanned(x, linear_act, linear, x, "none", mixed_dtype)
        return _add_residual(y, residual, act, plain)
    if fx_tracing():  # torch.fx: the module called, as written (a call_module node)
        return activation(linear(x), act)
    if mixed_dtype:
        dtype = _state_dtype(linear)
        if dtype is not None and dtype != x.dtype and x.is_floating_point():
            return linear_act(linear, x.to(dtype), act).to(x.dtype)
    plain = _plain(linear)
    if plain and x.is_cuda and cuda.enabled() and getattr(linear, "_tritonrt_packed", False):
        y = cuda.packed_linear(linear, "weight", x, kn=False, act=act, bias=linear.bias)
        if y is not None:
            return y
    return activation(linear(x), act, inplace=plain)


def conv_bn_act(conv, bn, x, act="none", mixed_dtype=False, residual=None):
    """``act(bn(conv(x)))``, or ``act(conv(x))`` when ``bn`` is ``None``; with ``residual``,
    ``act(bn(conv(x)) + residual)`` (a ResNet block's end), the sum written into the
    convolution's output where it can be (:func:`_add_residual`).

    ``mixed_dtype``: ``x`` is a float16/bfloat16 input declared so in the source, given to
    layers whose state is in the model's float dtype: it runs in the layers' dtype and the
    result comes back in ``x``'s (what :func:`run_layer` does for each layer). Otherwise the
    dtypes must agree, as for the modules themselves (torch raises on a mix).

    ``conv`` and ``bn`` are modules. In training, or with autograd on, the steps run as
    written (batch-norm statistics update as usual). In inference (eval mode under
    ``torch.no_grad()``) the batch norm is folded into the convolution's weight and bias,
    computed once and cached until any of the parameters or statistics change: one
    convolution instead of a convolution and a normalization pass. The result equals the
    unfused sequence up to float rounding. Modules of other classes (subclasses with their
    own ``forward``) or with forward hooks are always called as modules, so that what they
    add is not skipped.
    """
    if residual is not None:
        plain = not fx_tracing() and _plain(conv, bn)
        if plain and not mixed_dtype and x.is_cuda and cuda.enabled() \
                and getattr(conv, "_tritonrt_packed", False) \
                and (bn is None or _foldable(conv, bn)):
            # The residual launcher adds it in the kernel's epilogue.
            chscale, bias = _bn_affine(conv, bn) if bn is not None else (None, None)
            y = cuda.packed_conv2d(conv, x, act=act, chscale=chscale, bias=bias,
                                   residual=residual)
            if y is not None:
                return y
        y = _unplanned(x, conv_bn_act, conv, bn, x, "none", mixed_dtype)
        return _add_residual(y, residual, act, plain)
    if fx_tracing():  # torch.fx: the modules called, as written (call_module nodes)
        y = conv(x)
        return activation(y if bn is None else bn(y), act)
    if mixed_dtype:
        dtype = _state_dtype(conv)
        if dtype is not None and dtype != x.dtype and x.is_floating_point():
            return conv_bn_act(conv, bn, x.to(dtype), act).to(x.dtype)
    if x.is_cuda and cuda.enabled() and getattr(conv, "_tritonrt_packed", False) \
            and (_plain(conv) if bn is None else _foldable(conv, bn)):
        chscale, bias = _bn_affine(conv, bn) if bn is not None else (None, None)
        y = cuda.packed_conv2d(conv, x, act=act, chscale=chscale, bias=bias)
        if y is not None:
            return y
    # Folding saves the normalization pass over the output; checking that the folded weights
    # are current costs reads of the weight and statistics (checksums, unless the model is
    # packed). On small inputs (late layers at batch 1) the check costs more than it saves.
    # (The same rule packed or not: packing leaves the outputs bit for bit as they were.)
    # Not under autocast: the convolution would run the folded weights in bf16/fp16, where
    # -O0 normalizes its low-precision output in float32 (values differ by ~1e-3).
    # (_compiling() first: under torch.jit.trace, x.numel() is a traced value, and
    # comparing it warned "might not generalize" once per block.)
    if not _compiling() and x.numel() >= _FOLD_MIN_ELEMENTS and not torch.is_grad_enabled() \
            and not getattr(conv, "training", False) \
            and _foldable(conv, bn) and not _autocasting(x):
        w, b = _folded(conv, bn)
        y = cpu.conv2d(x, w, b, conv.stride, conv.padding, conv.dilation, conv.groups)
        return activation(y, act, inplace=True)
    y = conv(x)
    if bn is not None:
        y = bn(y)
    # In place when no hook could have kept the output (a feature-extraction hook).
    return activation(y, act, inplace=_plain(conv, bn))

"""2-bit packed ternary weights (TOOLCHAIN.md "Packed ternary format") and packed modules.

Format: code = value + 1 (``00`` = -1, ``01`` = 0, ``10`` = +1, ``11`` invalid), four codes
per byte, element ``j`` of a row at bits ``2 * (j % 4)``. A weight of shape
``[d0, d1, ..., dn]`` is packed as ``d0`` rows of ``d1 * ... * dn`` elements (the reduction
dimension: ``[out, in]`` for a linear weight, ``[out, in/groups * kh * kw]`` for a conv
weight), each row padded with code ``01`` to a multiple of 4, giving a ``uint8`` tensor
``[d0, ceil(d1 * ... * dn / 4)]``. A 1-D weight of ``n`` elements is one row: ``[1, ceil(n/4)]``
(a 0-d tensor is one row of one element: ``[1, 1]``). Weights of matrix products are packed
along their reduction dimension whatever their layout: the compiler lists those reduced over
their second-to-last dimension (``x @ w``) in ``_ternary_packed_by_columns`` and batched ones
reduced over their last (``w @ y``, rank >= 3) in ``_ternary_packed_by_last_dim``; their rows
are runs of that dimension (``packed_rows_shape``).
"""

import math
import os
import threading
import warnings
import weakref

import torch
import torch.fx

from .quant import _as_shape, _prod, ternary_quantize, ternary_quantize_parts

# Under torch.fx.symbolic_trace a weight's quantization is one node of the graph (a call of
# tritonrt.quant.ternary_quantize on the latent parameter): its scale is a reduction whose
# value no trace can know.
torch.fx.wrap("ternary_quantize")

__all__ = ["pack_ternary", "unpack_ternary", "weight", "pack", "unpack", "is_packed",
           "packed_shape", "packed_by_columns", "packed_by_last_dim"]

_SHIFTS = (0, 2, 4, 6)

# The key of a packed module's entry in a state dict's ``_metadata`` that lists its packed
# weights' unpacked shapes.
_SHAPES_KEY = "tritonrt_unpacked_shapes"


def _rows_cols(shape):
    if len(shape) == 0:
        return 1, 1
    if len(shape) == 1:
        return 1, int(shape[0])
    return int(shape[0]), _prod(shape[1:])


def packed_shape(shape):
    """The shape of the packed ``uint8`` tensor for a weight of ``shape``."""
    rows, cols = _rows_cols(_as_shape(shape))
    return (rows, (cols + 3) // 4)


def pack_ternary(q):
    """Pack an integer (or integral float) tensor with values in {-1, 0, 1} into 2-bit codes.

    Returns a ``uint8`` tensor ``[shape[0], ceil(prod(shape[1:]) / 4)]`` (``[1, ceil(n/4)]``
    for 1-D) on ``q``'s device. Raises ``ValueError`` for a value outside {-1, 0, 1}.
    """
    q = torch.as_tensor(q).detach()
    shape = tuple(q.shape)
    rows, cols = _rows_cols(shape)
    if q.dtype == torch.bool or q.is_complex():
        raise TypeError("pack_ternary: expected an integer tensor, got %s" % q.dtype)
    if q.is_floating_point() and q.numel() and bool((q != q.round()).any()):
        raise ValueError("pack_ternary: the tensor has non-integral values")
    qi = q.reshape(rows, cols).to(torch.int16)
    if qi.numel() and bool(((qi < -1) | (qi > 1)).any()):
        raise ValueError("pack_ternary: values must be in {-1, 0, 1}")
    codes = (qi + 1).to(torch.uint8)
    nbytes = (cols + 3) // 4
    pad = nbytes * 4 - cols
    if pad:
        codes = torch.cat([codes, codes.new_ones((rows, pad))], dim=1)
    codes = codes.reshape(rows, nbytes, 4)
    packed = codes[..., 0] | (codes[..., 1] << 2) | (codes[..., 2] << 4) | (codes[..., 3] << 6)
    return packed.contiguous()


def _codes(packed):
    """The 2-bit codes of a ``[rows, nbytes]`` packed tensor as ``[rows, 4 * nbytes]``
    (row padding included)."""
    if torch.onnx.is_in_onnx_export():
        # ONNX has no bitwise AND of integers: the same codes with Mod (packed models export).
        codes = torch.stack([torch.remainder(packed >> s, 4) for s in _SHIFTS], dim=-1)
    else:
        codes = torch.stack([(packed >> s) & 3 for s in _SHIFTS], dim=-1)
    return codes.reshape(packed.shape[0], packed.shape[1] * 4)


def unpack_ternary(packed, shape, check=False):
    """Unpack ``pack_ternary`` output to an ``int8`` tensor of ``shape`` (values -1, 0, 1).

    With ``check=True`` an invalid code ``11`` raises ``ValueError`` (this reads the data, so
    leave it off in ``forward``); without it such a code unpacks as 2.
    """
    shape = _as_shape(shape)
    if packed.dtype != torch.uint8:
        raise TypeError("unpack_ternary: expected a uint8 tensor, got %s" % packed.dtype)
    rows, cols = _rows_cols(shape)
    nbytes = (cols + 3) // 4
    if packed.numel() != rows * nbytes:
        raise ValueError(
            "unpack_ternary: %d packed bytes do not hold a tensor of shape %s (expected %d)"
            % (packed.numel(), list(shape), rows * nbytes)
        )
    codes = _codes(packed.reshape(rows, nbytes))[:, :cols]
    if check and codes.numel() and bool((codes == 3).any()):
        raise ValueError("unpack_ternary: invalid code 0b11 in packed data")
    return (codes.to(torch.int8) - 1).reshape(shape)


def _method_of(module, name):
    """(method, threshold) for the ternary weight ``name`` of ``module``.

    ``module._ternary_methods`` maps a weight name to a method name (``"absmean"``), a
    ``(method, threshold)`` pair, or a dict ``{"method": ..., "threshold": ...}``; a name
    not listed uses ``absmean``.
    """
    methods = getattr(module, "_ternary_methods", None)
    spec = methods.get(name, "absmean") if methods else "absmean"
    if isinstance(spec, str):
        return spec, 0.7
    if isinstance(spec, dict):
        return spec.get("method", "absmean"), spec.get("threshold", 0.7)
    method, threshold = spec
    return method, threshold


def _scaled(q, scale, shape):
    """``s * q`` in the scale's dtype; a scale with one entry per row (``shape[0]`` entries)
    is applied per output channel (the format's per-channel extension)."""
    if scale.numel() == 1 or len(shape) == 0:
        s = scale.reshape(())
    else:
        s = scale.reshape((-1,) + (1,) * (len(shape) - 1))
    return q.to(scale.dtype) * s


def packed_by_columns(module, name):
    """Whether the ternary weight ``name`` of ``module`` is packed by columns: a weight of
    rank >= 2 whose reduction dimension is its second-to-last (``x @ w``, ``w`` ``[in, out]``
    or ``[..., in, out]``), listed by the compiler in the class attribute
    ``_ternary_packed_by_columns``. Its packed rows are the rows of ``w`` with its last two
    dimensions swapped (``[out, ceil(in / 4)]`` bytes for a 2-D weight), so every packed row
    runs along the reduction dimension, as TOOLCHAIN.md's format requires."""
    return name in (getattr(module, "_ternary_packed_by_columns", ()) or ())


def packed_by_last_dim(module, name):
    """Whether the ternary weight ``name`` (rank >= 3) is reduced over its last dimension
    in a batched product (``w @ y``), listed in ``_ternary_packed_by_last_dim``: its packed
    rows are runs of the last dimension (``numel / shape[-1]`` of them), not the rows of its
    first dimension (which would run across several reductions)."""
    return name in (getattr(module, "_ternary_packed_by_last_dim", ()) or ())


def packed_rows_shape(module, name, shape):
    """The shape whose rows are packed: ``[rows, run]`` for a weight reduced over its last
    dimension in a batched product or packed by columns (its last two dimensions swapped),
    ``shape`` itself otherwise (the format's ``[d0, d1 * ... * dn]`` rows)."""
    shape = tuple(shape)
    if len(shape) >= 2 and packed_by_columns(module, name):
        return (_prod(shape[:-2]) * shape[-1], shape[-2])
    if len(shape) >= 3 and packed_by_last_dim(module, name):
        return (_prod(shape[:-1]), shape[-1])
    return shape


def _to_rows(module, name, q):
    """``q`` (of the weight's shape) as the tensor whose rows are packed."""
    rows = packed_rows_shape(module, name, q.shape)
    if q.dim() >= 2 and packed_by_columns(module, name):
        q = q.transpose(-1, -2)
    return q.reshape(rows)


def _from_rows(module, name, rows, shape):
    """The inverse of ``_to_rows``: the tensor of the weight's ``shape``, contiguous like a
    latent weight (so torch takes the same kernels for the packed and unpacked modules, and
    their outputs agree bit for bit)."""
    shape = tuple(shape)
    if len(shape) >= 2 and packed_by_columns(module, name):
        swapped = shape[:-2] + (shape[-1], shape[-2])
        return rows.reshape(swapped).transpose(-1, -2).contiguous()
    return rows.reshape(shape)


def is_packed(module):
    """Whether ``module`` or one of its sub-modules holds packed ternary weights."""
    return any(getattr(m, "_tritonrt_packed", False) and getattr(m, "_ternary_weights", None)
               for m in module.modules())


# (Looked up once: fx_tracing() runs in every layer's and fused op's call.)
_is_fx_tracing = getattr(torch.fx._symbolic_trace, "is_fx_tracing", None) or (lambda: False)


def fx_tracing():
    """Whether ``torch.fx.symbolic_trace`` is tracing the code: tensors are Proxies then,
    whose dtype, device and sizes are not known (no Python decision may depend on them)."""
    return bool(_is_fx_tracing())


def _compiling():
    """Whether torch.compile, torch.jit.trace, torch.jit.script or torch.fx is capturing the
    code (the cache and the oneDNN kernels are skipped then: plain tensor code, standard
    ops)."""
    if fx_tracing():
        return True
    jit = getattr(torch, "jit", None)
    if jit is not None and (jit.is_scripting() or jit.is_tracing()):
        return True
    compiler = getattr(torch, "compiler", None)
    is_compiling = getattr(compiler, "is_compiling", None)
    return bool(is_compiling()) if is_compiling is not None else False


# The Parameters pack() took out of each module, by name, as weak references: unpack()
# puts one back when something still holds it (an optimizer made before pack), so
# packing mid-training to measure the packed model and unpacking goes on training the same
# Parameters, with their trained latent values when the packed codes are still theirs.
# Outside the module, as the caches: a weak reference neither pickles nor keeps memory.
_packed_parameters = weakref.WeakKeyDictionary()

# Inference values cached per module, outside the module: pickle, copy.deepcopy and
# torch.save(model) never carry them (a packed model saved whole would otherwise hold a
# float copy of every weight), and they go with the module.
_caches = weakref.WeakKeyDictionary()


def module_cache(module, kind):
    """The dict of cached inference values of ``kind`` for ``module``."""
    per_module = _caches.get(module)
    if per_module is None:
        per_module = {}
        _caches[module] = per_module
    return per_module.setdefault(kind, {})


def _cached(module, name, stamp, compute, sources, content=()):
    """``compute()`` cached on ``module`` under ``name`` while ``stamp`` is unchanged.

    Used only for inference (eval mode, no autograd): the quantized (or unpacked) weight is
    then a function of the parameter's storage and version counter, which every in-place
    update (optimizer step, ``load_state_dict``, ``.to()``) changes. The entry keeps the
    storage of ``sources`` alive: otherwise ``p.data = a; p.data = b`` could put ``b`` at
    the address of the storage the entry was made from, with the same version, and the
    stale value would be returned.

    ``content``: the tensors (of ``sources``) a user may change through ``.data``, which
    leaves the version counter as it was (``p.data.mul_(d).add_(...)`` of an EMA,
    ``p.data.clamp_()``, a manual ``p.data -= lr * p.grad``, ``p.data.copy_(p.flip(0))``):
    their values are checked as well, those of up to ``_EXACT_MAX`` values against a copy
    kept in the entry, byte for byte, larger ones by a checksum (``_check``). An entry made
    with other ``content`` (none: a frozen module's) is never served. On another device than
    the CPU, reading them would wait for the device at every call: such values are not
    cached. Nor, for a while, values that change at every call (``_VOLATILE_MISSES``)."""
    if torch.is_grad_enabled() or module.training or _compiling():
        return compute()
    cache = module_cache(module, "values")
    hit = cache.get(name)
    if hit is not None and hit[0] is None:  # a value that changed at every call: computed
        if hit[1] > 0:
            hit[1] -= 1
            return compute()
        hit = None
    if callable(stamp):  # computed only when the value may be cached
        stamp = stamp()
    if stamp is None:
        return compute()
    if hit is not None and hit[0] == stamp and len(hit[3]) == len(content) \
            and all(map(_unchanged, content, hit[3])) and _versions(hit[1]) == hit[5]:
        if hit[4]:
            hit[4] = 0
        return hit[1]
    cache.pop(name, None)
    if not _cacheable(sources, content):
        return compute()
    misses = hit[4] + 1 if hit is not None else 0
    if misses >= _VOLATILE_MISSES:
        # An EMA target network's weights, a parametrized weight (a new tensor at every
        # access): checking and copying would only add to every call.
        cache[name] = [None, _VOLATILE_CALLS]
        return compute()
    checks = tuple(map(_check, content))
    del hit  # the old value's memory is free for the new one
    if torch.is_inference_mode_enabled():
        # Not an inference tensor, which has no version counter (_versions): a value
        # handed out and changed in place must be seen there too.
        with torch.inference_mode(False), torch.no_grad():
            value = compute()
    else:
        value = compute()
    cache[name] = [stamp, value, tuple(t.detach() for t in sources), checks, misses,
                   _versions(value)]
    return value


def _versions(value):
    """The version counters of the cached ``value`` (a tensor or a tuple of them): the
    value is handed out, and a module that returns a weight (``return w``, ``return
    transpose(w)``, a view shares its base's counter) gives it to a caller who may change
    it in place (``m(x).mul_(0)``, audit 46H); such an entry is not served again. None
    for what has none (``_cached`` makes no inference tensors)."""
    if isinstance(value, (tuple, list)):
        return tuple(_versions(v) for v in value)
    if not isinstance(value, torch.Tensor):
        return None
    try:
        return value._version
    except RuntimeError:  # "Inference tensors do not track version counter."
        return None


# A value whose entry was made this many times in a row without being served (it changed
# at every call) is computed at every call for the next _VOLATILE_CALLS calls, with no
# stamp, check or copy, then cached again.
_VOLATILE_MISSES = 3
_VOLATILE_CALLS = 64


def clear_cache(module):
    """Forgets the inference values cached for ``module`` and its sub-modules (see
    ``weight``), and the memory they hold. Needed after a change through ``.data`` (which
    leaves the parameter's version counter as it was) only where the check of values
    (``_cached``'s ``content``) cannot see it: in a packed (deployed) model, which checks no
    values, and for an edit of a weight of more than ``_EXACT_MAX`` values that keeps every
    row and column sum (``_checksum``). Returns ``module``."""
    for m in module.modules():
        _caches.pop(m, None)
    return module


def _stamp(*tensors):
    """What identifies the tensors: storage, version counter, layout (``p.data = p.data.t()``
    keeps the storage and the version counter) and negative bit (``torch._neg_view`` keeps
    the bytes), or None for a tensor made under ``torch.inference_mode()``, which has no
    version counter (reading it raises)."""
    try:
        return tuple((t.data_ptr(), t._version, t.device, t.dtype, t.shape, t.stride(),
                      t.is_neg()) for t in tensors)
    except RuntimeError:  # "Inference tensors do not track version counter.", or no storage
        return None


def _cacheable(sources, content):
    """Whether values computed from ``sources`` may be cached (checked when an entry is
    made; the stamp's pointers see a change): not when one lives in shared memory
    (``share_memory()`` moves a tensor there; Hogwild training: another process updates it
    in place without bumping this process's version counter), nor when a tensor whose
    values are checked lives on another device than the CPU (reading it back would wait
    for the device at every call) or is complex (not checked: no ternary weight is)."""
    return not any(t.device.type == "cpu" and t.is_shared() for t in sources) and \
        all(t.device.type == "cpu" and not t.is_complex() for t in content)


_COPY, _SUM = "copy", "sum"  # the kinds of _check


def _check(t):
    """What ``_unchanged`` compares ``t`` with later: for a tensor of up to ``_EXACT_MAX``
    values, ``(_COPY, copy, address, nbytes)``: a copy, its address and, where ``memcmp`` can
    compare it as one block of memory, its size in bytes (else None: ``torch.equal`` of the
    bits); for a larger one, or one with the negative bit (whose bytes are not its values),
    ``(_SUM, checksum)`` (three vectorized reads, no copy; ``_checksum``). A new copy each
    time: another thread may be comparing with the old entry's copy (reusing it served a
    stale value one call in 200 under four threads)."""
    if t.numel() > _EXACT_MAX or t.is_neg():
        return _SUM, _checksum(t)
    copy = t.detach().clone(memory_format=torch.preserve_format)
    dense = _memcmp is not None and copy.stride() == t.stride() and (
        t.is_contiguous() or (t.dim() == 4 and
                              t.is_contiguous(memory_format=torch.channels_last)))
    return _COPY, copy, copy.data_ptr(), t.numel() * t.element_size() if dense else None


def _unchanged(t, check):
    """Whether ``t`` holds what ``check`` (``_check(t)`` when ``t`` had the storage, shape,
    strides and dtype it has now: the stamp says so) recorded, bit for bit for a copy."""
    if check[0] is _SUM:
        return _checksum(t) == check[1]
    _, copy, address, nbytes = check
    if nbytes is not None:
        return _memcmp(t.data_ptr(), address, nbytes) == 0
    bits = _BITS.get(t.dtype)
    if bits is None:  # integers, bool: == is exact
        return torch.equal(t.detach(), copy)
    return torch.equal(t.detach().view(bits), copy.view(bits))


# The integer type of each float type's size: exact comparisons of bits (-0.0 against 0.0,
# NaN payloads) where memcmp cannot run.
_BITS = {torch.float64: torch.int64, torch.float32: torch.int32, torch.float16: torch.int16,
         torch.bfloat16: torch.int16}


def _load_memcmp():
    """The C library's ``memcmp`` through ctypes, or None where it cannot be found."""
    try:
        import ctypes
        import os
        lib = ctypes.cdll.msvcrt if os.name == "nt" else ctypes.CDLL(None)
        memcmp = lib.memcmp
        memcmp.restype = ctypes.c_int
        memcmp.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)
        return memcmp
    except (ImportError, OSError, AttributeError):
        return None


_memcmp = _load_memcmp()


_PROBES = {}


def _probe(n, salt=0):
    """A fixed vector of ``n`` float64 weights in [0.5, 1.5) (the same in every process;
    ``salt`` gives another vector of the same size)."""
    key = (n, salt)
    v = _PROBES.get(key)
    if v is None:
        seed = n * 4 + salt
        v = torch.rand(n, generator=torch.Generator().manual_seed(seed), dtype=torch.float64) + 0.5
        _PROBES[key] = v
    return v


def _checksum(t):
    """What stands for the values of ``t`` (one of more than ``_EXACT_MAX``, or with the
    negative bit) in the inference cache's check, from three vectorized reads and no copy:
    its row sums and its column sums (as ``[rows, -1]``) in its precision, each weighted by
    a fixed vector of its own in float64, so that many changes that keep the plain sum (a
    permutation of rows whose sums differ, a transpose, a sign flip of a weight that sums
    to zero, a clamp of opposite outliers) change it; and the exact sum of each row's bit
    patterns as integers (wrapping), so that no change of a single value is lost to the
    rounding of a float sum (one ulp that moves a value across a rounding edge of the
    quantizer). Blind to an edit that keeps every row and column sum and every row's
    integer sum (rows of equal contents swapped, as in a permuted identity) -- the price of
    not keeping a copy of a large weight (a flat dot with a vector of its size runs on the
    reference BLAS and costs ten times more). A NaN never equals another: a weight holding
    one is recomputed at every call."""
    t = t.detach()
    if t.is_neg():
        t = t.resolve_neg()
    if t.dim() == 0:
        return (float(t),)
    m = t.reshape(t.shape[0], -1)
    dtype = None if t.element_size() >= 4 else torch.float32
    rows = m.sum(dim=1, dtype=dtype).double()
    cols = m.sum(dim=0, dtype=dtype).double()
    bits = _BITS.get(t.dtype)
    exact = (m.view(bits) if bits is not None else m).sum(
        dim=1, dtype=torch.int64 if t.element_size() == 8 else torch.int32)
    return (float(rows @ _probe(rows.numel(), 0)), float(cols @ _probe(cols.numel(), 1)),
            exact.numpy().tobytes())


# Tensors of up to this many values (512 KB in float32) are compared with a copy of
# themselves byte for byte instead of checksummed (docs/performance.md, "Exact comparison
# instead of a checksum"): a copy costs memory, the comparison a few microseconds.
_EXACT_MAX = 1 << 17


_TRAINING_MESSAGE = ("tritonrt: %s has packed ternary weights and runs inference only; "
                     "call .eval() on it (train the unpacked module instead)")


_tracing = threading.local()  # .quiet: weight() is running with TracerWarnings ignored


def weight(module, name, cache=True):
    """The value of the ternary weight ``name`` of ``module`` to compute with.

    Packed module: unpacks the ``uint8`` buffer ``name`` and scales it by ``name + "_scale"``
    (float32 ``s * q``, identical to the unpacked module's eval value). Otherwise:
    ``ternary_quantize`` of the latent parameter with the weight's method and the module's
    training flag (straight-through gradient). In inference (eval mode under
    ``torch.no_grad()``) the value is cached until the parameter changes, unless ``cache``
    is false (the batch-norm fold, which caches the folded weight instead: one float copy
    of the weight, not two).
    """
    # torch.jit.trace warns where a weight's size (static) is read as a Python number:
    # two TracerWarnings per weight that would hide those about the user's own code.
    jit = getattr(torch, "jit", None)
    if jit is not None and jit.is_tracing() and not getattr(_tracing, "quiet", False):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", jit.TracerWarning)
            _tracing.quiet = True
            try:
                return weight(module, name, cache)
            finally:
                _tracing.quiet = False
    # Under torch.compile (or jit tracing) the value is plain tensor code: no cache, whose
    # stamps read data_ptr() and _version, and no tag on the tensor, which the compiler
    # could not trace (torch.compile(fullgraph=True) must capture forward whole).
    compiling = _compiling()
    # The flags pack() sets are plain attributes: read from __dict__ (a missing one through
    # getattr costs nn.Module.__getattr__'s exception, microseconds per weight per call).
    flags = module.__dict__
    if flags.get("_tritonrt_packed", False):
        if module.training:
            raise RuntimeError(_TRAINING_MESSAGE % type(module).__name__)
        shape = module._tritonrt_shapes[name]
        packed = getattr(module, name)
        scale = getattr(module, name + "_scale")

        def unpacked():
            rows = packed_rows_shape(module, name, shape)
            w = _from_rows(module, name, _scaled(unpack_ternary(packed, rows), scale, rows),
                           shape)
            # In the memory format the latent weight had (a channels_last model): torch
            # picks its convolution by the weight's strides, and packing keeps outputs bit
            # for bit.
            memory_format = getattr(module, "_tritonrt_formats", {}).get(name)
            if memory_format is not None:
                w = w.contiguous(memory_format=memory_format)
            if not compiling:
                # Lets tritonrt.fused_matmul find the packed codes for the CUDA kernels.
                w._tritonrt_source = (weakref.ref(module), name)
            return w

        if compiling or not cache or not getattr(module, "_tritonrt_cache_unpacked", True):
            return unpacked()
        return _cached(module, name, _stamp(packed, scale), unpacked, (packed, scale))
    method, threshold = _method_of(module, name)
    latent = getattr(module, name)

    def quantize():
        return ternary_quantize(latent, method=method, threshold=threshold,
                                training=module.training)

    if compiling or not cache:
        return quantize()
    # A frozen (packed, then unpacked) weight's values are not checked: deployed.
    frozen = flags.get("_tritonrt_frozen", False)
    content = () if frozen else (latent,)

    def stamp():
        s = _stamp(latent)
        return s + (method, threshold) if s is not None else None

    return _cached(module, name, stamp, quantize, (latent,), content)


def _packed_state_dict(module, state_dict, prefix, local_metadata):
    """state_dict hook of a packed module. ``<name>_scale`` is float32, as the packed format
    says, where the module computes in float16 or bfloat16 (exact: each of their values is a
    float32 one; loading converts it back, as load_state_dict copies into the buffer). A
    float64 scale stays float64: float32 would change a float64 model's outputs. Such a
    float32 entry is a copy, not a view of the buffer (keep_vars=True gives the buffer).

    The module's own keys keep the unpacked module's order, each ``<name>_scale`` right
    after its ``<name>`` (``weight, weight_scale, bias``, not ``bias, weight, ...``: torch
    lists parameters before buffers, and packing turns a parameter into a buffer)."""
    shapes = module.__dict__.get("_tritonrt_shapes", {})
    if shapes:
        # The unpacked shapes, in the state dict's metadata (saved with it by torch.save):
        # rows of 4k+1..4k+4 values pack to one size, so only these tell a checkpoint of
        # another in_features, kernel size or groups apart (_check_packed_state).
        local_metadata[_SHAPES_KEY] = {name: list(shape) for name, shape in shapes.items()}
    for name in shapes:
        key = prefix + name + "_scale"
        scale = state_dict.get(key)
        # state_dict(keep_vars=True) hands out the buffers themselves: left as they are.
        if isinstance(scale, torch.Tensor) and scale.dtype in (torch.float16, torch.bfloat16) \
                and scale is not module._buffers.get(name + "_scale"):
            state_dict[key] = scale.float()
    _keep_key_order(module, state_dict, prefix)
    return state_dict


def _keep_key_order(module, state_dict, prefix):
    """Puts the module's own keys of ``state_dict`` in the order they had before ``pack``.
    A module's state_dict hook runs after its sub-modules have added theirs, so its own
    keys (torch writes them first) and its sub-modules' are the tail of ``state_dict``
    from its first own key on; the tail is written again in the new order (pop and insert
    again, which a plain dict passed as ``destination`` supports too)."""
    before = module.__dict__.get("_tritonrt_key_order")
    if not before:
        return
    shapes = module.__dict__.get("_tritonrt_shapes", {})
    own = [prefix + n for n in tuple(module._parameters) + tuple(module._buffers)]
    own = [k for k in own if k in state_dict]
    wanted = []
    for name in before:
        for key in (prefix + name, prefix + name + "_scale") if name in shapes else \
                (prefix + name,):
            if key in state_dict and key in own and key not in wanted:
                wanted.append(key)
    wanted += [k for k in own if k not in wanted]
    if wanted == own:
        return
    keys = list(state_dict)
    first = min(keys.index(k) for k in own)
    tail = keys[first:]
    owned = set(own)
    for key in wanted + [k for k in tail if k not in owned]:
        state_dict[key] = state_dict.pop(key)


def _pack_one(m):
    names = tuple(getattr(m, "_ternary_weights", ()) or ())
    shapes = {}
    # What unpack() needs to give the weights back as they were: the parameters' order (an
    # optimizer's state follows it), and whether each weight was a parameter that trained.
    latents = {}
    formats = {}
    order = tuple(m._parameters)
    # The state_dict keys' order before packing, kept by the state_dict hook.
    key_order = tuple(m._parameters) + tuple(m._buffers)
    for name in names:
        latent = getattr(m, name, None)
        if latent is None:
            continue
        if not isinstance(latent, torch.Tensor):
            raise TypeError(
                "tritonrt.pack: %s.%s is not a tensor" % (type(m).__name__, name)
            )
        if latent.dim() == 4 and not latent.is_contiguous() \
                and latent.is_contiguous(memory_format=torch.channels_last):
            formats[name] = torch.channels_last
        method, threshold = _method_of(m, name)
        q, s = ternary_quantize_parts(latent, method=method, threshold=threshold)
        packed = pack_ternary(_to_rows(m, name, q)).to(latent.device)
        if name in m._parameters:
            latents[name] = ("parameter", latent.requires_grad)
            _packed_parameters.setdefault(m, {})[name] = weakref.ref(latent)
            del m._parameters[name]
        elif name in m._buffers:
            latents[name] = ("buffer", False)
            del m._buffers[name]
        else:
            latents[name] = ("attribute", False)
            delattr(m, name)
        m.register_buffer(name, packed)
        # A model converted before packing (.double(), .half()) keeps its dtype in the
        # scale buffer, as in all its float buffers, so the packed module computes in the
        # dtype the unpacked one did; its state_dict holds the scale as float32, as the
        # format says (_packed_state_dict), float64 excepted.
        dtype = latent.dtype if latent.is_floating_point() else torch.float32
        m.register_buffer(name + "_scale", s.to(device=latent.device, dtype=dtype))
        shapes[name] = tuple(latent.shape)
    m._tritonrt_shapes = shapes
    m._tritonrt_formats = formats
    m._tritonrt_latents = (latents, order)
    m._tritonrt_key_order = key_order
    m._tritonrt_packed = True
    m._tritonrt_state_hook = m._register_state_dict_hook(_packed_state_dict)
    m._tritonrt_load_hook = m._register_load_state_dict_pre_hook(_check_packed_state,
                                                                 with_module=True)


def _check_packed_state(module, state_dict, prefix, local_metadata, strict, missing_keys,
                        unexpected_keys, error_msgs):
    """Rejects what this format does not hold, which torch's shape check lets through:
    an invalid code ``11``; a row whose padding is not code ``01`` (the checkpoint of a
    weight with a longer row: the packed shape ``[rows, ceil(n / 4)]`` is the same for
    ``n`` in 4k+1..4k+4, so a model built for another ``in_features`` or kernel size would
    load and compute with scrambled weights); a scale with more than one value. A
    one-element scale of shape ``[1]`` (as other exporters write it) is taken as the 0-d one.
    A refused tensor is left as it was in the module, as torch leaves a key it refuses (the
    entry of the copy of the state dict that torch loads from is replaced with the module's
    own value: torch would otherwise copy it in before raising, and take the first value of
    a per-channel scale).
    """
    def refuse(key, current, message):
        error_msgs.append(message)
        state_dict[key] = current.detach().clone()

    def refuse_weight(key, name, message):  # the codes and their scale, as one weight
        refuse(key, getattr(module, name), message)
        if key + "_scale" in state_dict:
            state_dict[key + "_scale"] = getattr(module, name + "_scale").detach().clone()

    recorded = local_metadata.get(_SHAPES_KEY) if isinstance(local_metadata, dict) else None
    for name, shape in getattr(module, "_tritonrt_shapes", {}).items():
        key = prefix + name
        packed = state_dict.get(key)
        rows, cols = _rows_cols(packed_rows_shape(module, name, shape))
        theirs = recorded.get(name) if isinstance(recorded, dict) else None
        if isinstance(packed, torch.Tensor) and isinstance(theirs, (list, tuple)) \
                and list(theirs) != list(shape):
            refuse_weight(key, name,
                   "tritonrt: %s was packed from a weight of shape %s, but this model's is "
                   "%s (a checkpoint of a model with other sizes, kernel size or groups)"
                   % (key, list(theirs), list(shape)))
            continue
        # torch casts what it copies into a buffer: int64 codes (another program's) would
        # load unchecked, and a float (unpacked) weight of the packed shape would load as
        # codes. (Anything else torch reports: a missing key, a size mismatch.)
        if isinstance(packed, torch.Tensor) and packed.dtype != torch.uint8:
            refuse_weight(key, name,
                   "tritonrt: %s holds %s values; a packed ternary weight holds uint8 codes "
                   "(four 2-bit codes a byte)%s" % (
                       key, str(packed.dtype).replace("torch.", ""),
                       ": this is an unpacked (float) checkpoint; load it before "
                       "tritonrt.pack(), or pack the model it came from" if
                       packed.is_floating_point() else ""))
            continue
        if isinstance(packed, torch.Tensor) and packed.dtype == torch.uint8 \
                and tuple(packed.shape) == (rows, (cols + 3) // 4) and packed.numel():
            codes = _codes(packed)
            if bool((codes == 3).any()):
                refuse_weight(key, name,
                       "tritonrt: %s holds the invalid 2-bit code 0b11 (the format's codes "
                       "are 00 = -1, 01 = 0, 10 = +1)" % key)
            elif bool((codes[:, cols:] != 1).any()):
                refuse_weight(key, name,
                       "tritonrt: %s does not hold a weight of shape %s: its rows of %d values "
                       "are padded to %d with nonzero codes, so it was packed from a weight with "
                       "longer rows (a checkpoint of a model with another in_features or kernel "
                       "size)" % (key, list(shape), cols, codes.shape[1]))
        scale = state_dict.get(key + "_scale")
        if isinstance(scale, torch.Tensor) and scale.dim() != 0:
            if scale.numel() == 1:
                state_dict[key + "_scale"] = scale.reshape(())
            else:
                if key in state_dict:  # the codes and their scale, as one weight
                    state_dict[key] = getattr(module, name).detach().clone()
                refuse(key + "_scale", getattr(module, name + "_scale"),
                       "tritonrt: %s_scale has %d values (shape %s); a packed weight has one "
                       "float32 scale per tensor (0-d); per-channel scales are not supported"
                       % (key, scale.numel(), tuple(scale.shape)))


def _check_unpacked_state(module, state_dict, prefix, local_metadata, strict, missing_keys,
                          unexpected_keys, error_msgs):
    """Says what a packed checkpoint loaded into an unpacked module needs (torch alone
    reports an unexpected ``<name>_scale`` key and a size mismatch, as if the model had
    other sizes). Registered by TernaryLinear and TernaryConv2d."""
    if module.__dict__.get("_tritonrt_packed", False):
        return
    for name in tuple(getattr(module, "_ternary_weights", ()) or ()):
        key = prefix + name
        codes = state_dict.get(key)
        if key + "_scale" in state_dict and isinstance(codes, torch.Tensor) \
                and codes.dtype == torch.uint8:
            error_msgs.append(
                "tritonrt: %s is a packed ternary weight (uint8 codes and %s_scale) and the "
                "model is not packed: call tritonrt.pack(model) before load_state_dict, so that "
                "it holds packed weights too" % (key, key))


class _Tie:
    """The mark of weights tied by hand before pack (one object per group: a deepcopy or
    pickle of a packed model copies it, so each copy's weights tie among themselves only)."""


def _require_module(what, module):
    """A TypeError naming what ``pack``/``unpack`` take, for a state_dict, path or class."""
    if isinstance(module, torch.nn.Module):
        return
    hint = ""
    if isinstance(module, dict):
        hint = ("; for a packed state_dict, pack a model and load it: "
                "m = tritonrt.pack(Model(...)); m.load_state_dict(state)")
    elif isinstance(module, type) and issubclass(module, torch.nn.Module):
        hint = "; construct it first: %s(Model(...))" % what
    elif isinstance(module, (str, bytes, os.PathLike)):
        hint = "; load the model first (tritonrt.compile_model or tritonrt.load)"
    raise TypeError("tritonrt.%s takes an nn.Module, not %s%s"
                    % (what, type(module).__name__, hint))


def pack(module, cache=True):
    """Convert every ternary weight of the module tree to packed form, in place.

    ``cache=False`` (an extension of TOOLCHAIN.md's ``pack(module)``): the module keeps
    only the packed codes in memory while it serves. By default the reference path (CPU,
    or a GPU without the CUDA target's kernels) keeps each weight's unpacked float value
    after the first inference call, a float copy of every ternary weight, so that later
    calls do not unpack again; with ``cache=False`` every call unpacks (slower, about a
    sixteenth of the memory). ``pack(m, cache=...)`` of a packed module changes the choice.

    For each sub-module (``module.modules()``, the root included) whose class or instance
    lists ``_ternary_weights``, each listed parameter is replaced by a ``uint8`` buffer of
    the same name holding the 2-bit codes and a 0-d float32 buffer ``<name>_scale``. The
    original shape is kept in the plain attribute ``_tritonrt_shapes`` (it follows from the
    module's constructor arguments, so ``state_dict`` holds exactly the two buffers per
    weight and loads into another packed module of the same class). Sets
    ``_tritonrt_packed = True`` on those modules and on ``module``, ``_tritonrt_frozen =
    True`` on every sub-module (a packed model is deployed: the values cached for inference,
    such as batch norms folded into convolutions, follow the tensors' version counters, not
    checksums of their contents, so an in-place change through ``.data`` of a packed
    model's float tensors needs ``tritonrt.clear_cache(module)``), drops the inference
    values cached for the latent weights, registers a forward pre-hook on ``module`` that
    raises in training mode before anything runs, puts ``module`` in eval mode and returns
    it. Packing an already packed module changes nothing; a module tree without ternary
    weights is left unchanged, with a warning.
    """
    _require_module("pack", module)
    holders = [m for m in module.modules() if getattr(m, "_ternary_weights", None)]
    if not holders:
        # (e.g. a float weight quantized in the body with ternary_quantize(...): it stays
        # float; only declared ternary weights have a packed form)
        warnings.warn(
            "tritonrt.pack: %s has no ternary weights (TernaryTensor parameters), so nothing "
            "was packed and the module is unchanged; a float weight quantized in the body "
            "with ternary_quantize(...) is packed only when declared as "
            "TernaryTensor<trit, [...]>" % type(module).__name__,
            stacklevel=2,
        )
        return module
    for m in holders:
        if not getattr(m, "_tritonrt_packed", False):
            _bake_reparametrizations(m)
    # One Parameter held by several weights (tied by hand, `m[2].weight = m[0].weight`):
    # each packs on its own, and unpack() gives them one Parameter again.
    held = {}
    for m in holders:
        if getattr(m, "_tritonrt_packed", False):
            continue
        for name in getattr(m, "_ternary_weights", ()) or ():
            p = m._parameters.get(name)
            if p is not None:
                held.setdefault(id(p), []).append((m, name))
    for places in held.values():
        if len(places) > 1:
            tie = _Tie()
            for m, name in places:
                m.__dict__.setdefault("_tritonrt_ties", {})[name] = tie
    for m in holders:
        if not getattr(m, "_tritonrt_packed", False):
            _pack_one(m)
        m._tritonrt_cache_unpacked = bool(cache)
    clear_cache(module)  # the latent weights' quantized values are no longer needed
    for m in module.modules():
        # Deployed: cached inference values (batch norms folded into convolutions) follow
        # the tensors' version counters only, not a checksum of their contents.
        m._tritonrt_frozen = True
    if not getattr(module, "_tritonrt_packed", False):
        if not hasattr(module, "_tritonrt_shapes"):
            module._tritonrt_shapes = {}
        module._tritonrt_packed = True
    if not getattr(module, "_tritonrt_refuses_training", False):
        # Before anything runs: a batch norm ahead of the first ternary weight would
        # otherwise update its running statistics in a call that then raises.
        module._tritonrt_refuses_training = module.register_forward_pre_hook(_refuse_training)
    module.eval()
    return module


def _live_parameter(m, name, latent):
    """The Parameter that ``pack`` took from ``m.name`` when something still holds it (an
    optimizer made before ``pack``) and it can take the weight back: same shape, dtype and
    device as the unpacked ``latent``. It keeps its trained values when they still quantize
    to the packed codes and scale (nothing was loaded into the packed module since), else
    it gets ``latent``'s. None otherwise."""
    ref = _packed_parameters.get(m, {}).get(name)
    old = ref() if ref is not None else None
    if old is None or old.shape != latent.shape or old.dtype != latent.dtype \
            or old.device != latent.device:
        return None
    method, threshold = _method_of(m, name)
    with torch.no_grad():
        q, s = ternary_quantize_parts(old.detach(), method=method, threshold=threshold)
        mine, ms = ternary_quantize_parts(latent, method=method, threshold=threshold)
        if not (torch.equal(q, mine) and torch.equal(s.to(ms.dtype), ms)):
            old.copy_(latent)
    return old


def _bake_reparametrizations(m):
    """Makes each ternary weight of ``m`` that a reparametrization computes (pruning's mask,
    ``weight_norm``, ``spectral_norm``, ``torch.nn.utils.parametrize``) a plain parameter
    holding the value it computes, as ``prune.remove`` and the others' ``remove`` do, so
    that the packed codes hold the pruned (normalized) values and the state dict holds no
    float copy (``weight_orig``, ``weight_g``/``weight_v``). Each reparametrization is
    removed: a packed model is deployed, not trained."""
    import torch.nn.utils.prune  # noqa: F401 (torch.nn.utils does not import it)
    from torch.nn.utils import parametrize

    for name in tuple(getattr(m, "_ternary_weights", ()) or ()):
        if parametrize.is_parametrized(m, name):
            # remove_parametrizations deletes the property from the module's class, which
            # torch 1.13's copy.deepcopy shares with the original: packing a deep copy for
            # deployment took the weight away from the model still training. A class of the
            # module's own first, so the removal edits only this module.
            cls = type(m)
            own = {k: v for k, v in cls.__dict__.items() if k not in ("__dict__", "__weakref__")}
            m.__class__ = type(cls.__name__, cls.__bases__, own)
            parametrize.remove_parametrizations(m, name, leave_parametrized=True)
            continue
        for hook in list(m._forward_pre_hooks.values()):
            if getattr(hook, "_tensor_name", None) == name and hasattr(hook, "remove"):
                torch.nn.utils.prune.remove(m, name)  # a pruning method (or a container)
            elif type(hook).__name__ == "WeightNorm" and getattr(hook, "name", None) == name:
                torch.nn.utils.remove_weight_norm(m, name)
            elif type(hook).__name__ == "SpectralNorm" and getattr(hook, "name", None) == name:
                torch.nn.utils.remove_spectral_norm(m, name)


def _refuse_training(module, inputs):
    if module.training:
        raise RuntimeError(_TRAINING_MESSAGE % type(module).__name__)


def _latent_for(q, s, method, threshold):
    """A latent weight whose quantization with ``method`` gives back ``q`` and ``s``, as
    ``(latent, exact)``; ``exact`` is False when the recomputed scale differs from ``s`` in
    its last bits. None when no latent of this form gives back ``q`` (a threshold >= 1
    with few zeros keeps nothing).

    The nonzero trits get (nearly) one magnitude: absmean's scale is the sum of all
    magnitudes over ``numel``, threshold's the sum over the nonzero count, so the sum ``S``
    to aim for is ``s`` times that divisor. For float32/float64 weights the magnitudes are
    multiples of ``ulp(S)`` spread as evenly as ``S`` allows: every partial sum is then a
    float, so the quantizer's sum is ``S`` exactly in any summation order, and one of the
    ``S`` next to ``s * divisor`` divides back to ``s`` bit for bit."""
    nonzero = q.reshape(-1).nonzero().reshape(-1)
    count = nonzero.numel()
    if count == 0:
        return torch.zeros(q.shape, dtype=s.dtype, device=s.device), True
    target = s.reshape(())
    signs = q.reshape(-1)[nonzero].to(s.dtype)
    q8 = q.to(torch.int8)
    divisor = count if method == "threshold" else max(q.numel(), 1)

    def attempt(mags):
        """The latent with these magnitudes, and how its scale compares with ``s`` (-1, 0,
        1), or None there when its trits are not ``q``."""
        latent = torch.zeros(q.numel(), dtype=s.dtype, device=s.device)
        latent[nonzero] = signs * mags
        latent = latent.reshape(q.shape)
        q2, s2 = ternary_quantize_parts(latent, method=method, threshold=threshold)
        if not torch.equal(q2, q8):
            return latent, None
        s2 = s2.to(target.dtype)
        return latent, 0 if bool(s2 == target) else -1 if bool(s2 < target) else 1

    def spread(lo, hi, first):
        """``hi`` for the first ``first`` nonzero trits, ``lo`` for the others."""
        mags = torch.full((count,), float(lo), dtype=s.dtype, device=s.device)
        mags[:first] = hi
        return mags

    mantissa = {torch.float32: 24, torch.float64: 53}.get(s.dtype)
    best = None
    if mantissa is not None and 0 < float(target) * divisor < float(torch.finfo(s.dtype).max):
        aim = torch.tensor(float(target) * divisor, dtype=s.dtype)
        for sum_ in _around(aim, 3):
            exponent = math.frexp(float(sum_))[1]
            unit = math.ldexp(1.0, exponent - mantissa)  # ulp(S)
            base, extra = divmod(int(float(sum_) / unit), count)
            if base == 0:
                break
            latent, order = attempt(spread(base * unit, (base + 1) * unit, extra))
            if order == 0:
                return latent, True
            if order is not None and best is None:
                best = latent
    # float16/bfloat16 weights (the quantizer sums them in float32, exactly while there are
    # fewer than 2^13 of them), or no exact sum: two neighbouring magnitudes, bisecting how
    # many trits take the larger one (the scale grows with it).
    for lo in _around(target * (divisor / count), 4):
        hi = _step(lo, 1)
        latent, low = attempt(spread(lo, hi, 0))
        if low == 0:
            return latent, True
        if low is None or low > 0:
            continue
        if best is None:
            best = latent
        latent, high = attempt(spread(lo, hi, count))
        if high == 0:
            return latent, True
        if high is None or high < 0:
            continue
        a, b = 0, count  # too small with a, too large with b
        while b - a > 1:
            k = (a + b) // 2
            latent, order = attempt(spread(lo, hi, k))
            if order == 0:
                return latent, True
            if order is None:
                break
            a, b = (k, b) if order < 0 else (a, k)
    return (best, False) if best is not None else None


def _step(x, d):
    """The float ``d`` steps from the positive 0-d float ``x`` in its dtype
    (``torch.nextafter`` has no float16 kernel on CPU in torch 1.13)."""
    width = {torch.float16: torch.int16, torch.bfloat16: torch.int16,
             torch.float32: torch.int32, torch.float64: torch.int64}[x.dtype]
    return (x.reshape(1).view(width) + d).view(x.dtype).reshape(())


def _around(x, steps):
    """``x`` and its ``steps`` neighbours on each side, nearest first."""
    yield x
    for i in range(1, steps + 1):
        yield _step(x, i)
        yield _step(x, -i)



def unpack(module):
    """The inverse of ``pack``, in place: every packed ternary weight of the module tree
    becomes a trainable latent parameter again (a buffer or plain attribute if it was one),
    in the parameters' original order, and the ``<name>_scale`` buffers, the training guard
    and the packed ``load_state_dict`` check go. Use it to resume quantization-aware
    training from a packed checkpoint: ``m = pack(Model(...)); m.load_state_dict(packed);
    unpack(m).train()``.

    The latent value of a weight with trits ``q`` and scale ``s`` is ``q * c``, with ``c``
    chosen so that quantizing it with the weight's method gives back ``q`` and ``s`` exactly
    (``s * numel / nonzeros`` for absmean), so the unpacked module's eval outputs equal the
    packed module's. Raises ``ValueError`` for packed data holding the invalid code ``11``
    and for a weight no latent of this form reproduces. The module keeps its mode (eval
    after ``pack``). A module tree with nothing packed is returned unchanged. Returns
    ``module``.
    """
    _require_module("unpack", module)
    holders = [m for m in module.modules()
               if getattr(m, "_tritonrt_packed", False) and hasattr(m, "_tritonrt_shapes")]
    restored = []
    for m in holders:
        latents, order = getattr(m, "_tritonrt_latents", ({}, ()))
        values = {}
        for name, shape in m._tritonrt_shapes.items():
            rows = packed_rows_shape(m, name, shape)
            q = _from_rows(m, name, unpack_ternary(getattr(m, name), rows, check=True), shape)
            scale = getattr(m, name + "_scale")
            method, threshold = _method_of(m, name)
            found = _latent_for(q, scale, method, threshold)
            if found is None:
                raise ValueError(
                    "tritonrt.unpack: no latent weight quantizes back to %s.%s with method "
                    "%r and threshold %r" % (type(m).__name__, name, method, threshold))
            values[name], exact = found
            if not exact:
                warnings.warn(
                    "tritonrt.unpack: the scale of %s.%s is recomputed from its latent "
                    "weight with a rounding difference in the last bits, so the unpacked "
                    "module's outputs may differ from the packed one's by as much"
                    % (type(m).__name__, name), stacklevel=2)
        restored.append((m, values, latents, order))
    # Nothing changes until every weight has its latent value (an error leaves the module
    # packed and usable).
    tied = {}  # _Tie (hashed by identity) -> the Parameter its first weight got
    for m, values, latents, order in restored:
        formats = getattr(m, "_tritonrt_formats", {})
        ties = m.__dict__.get("_tritonrt_ties", {})
        for name, latent in values.items():
            kind, requires_grad = latents.get(name, ("parameter", True))
            if formats.get(name) is not None:
                latent = latent.contiguous(memory_format=formats[name])
            del m._buffers[name]
            del m._buffers[name + "_scale"]
            if kind == "parameter":
                old = _live_parameter(m, name, latent)
                if old is not None:
                    tie = ties.get(name)
                    if tie is not None:
                        tied.setdefault(tie, old)
                    m.register_parameter(name, old)
                    continue
                # Tied before pack: one Parameter again, unless a checkpoint loaded since
                # gave the weights different values.
                tie = ties.get(name)
                first = tied.get(tie) if tie is not None else None
                if first is not None and first.shape == latent.shape and \
                        first.device == latent.device and \
                        torch.equal(first.detach(), latent.to(first.dtype)):
                    m.register_parameter(name, first)
                    continue
                p = torch.nn.Parameter(latent, requires_grad)
                if tie is not None:
                    tied.setdefault(tie, p)
                m.register_parameter(name, p)
            elif kind == "buffer":
                m.register_buffer(name, latent)
            else:
                setattr(m, name, latent)
        if order:
            params = dict(m._parameters)
            m._parameters.clear()
            for name in tuple(n for n in order if n in params) + tuple(
                    n for n in params if n not in order):
                m._parameters[name] = params[name]
        for attr in ("_tritonrt_shapes", "_tritonrt_latents", "_tritonrt_formats",
                     "_tritonrt_ties", "_tritonrt_key_order"):
            m.__dict__.pop(attr, None)
        _packed_parameters.pop(m, None)
    for m in module.modules():
        for attr in ("_tritonrt_load_hook", "_tritonrt_state_hook"):
            hook = m.__dict__.pop(attr, None)
            if hook is not None:
                hook.remove()
        guard = m.__dict__.pop("_tritonrt_refuses_training", None)
        if guard is not None and not isinstance(guard, bool):
            guard.remove()
        m.__dict__.pop("_tritonrt_packed", None)
        m.__dict__.pop("_tritonrt_frozen", None)
        if "_tritonrt_shapes" in m.__dict__ and not m._tritonrt_shapes:
            del m.__dict__["_tritonrt_shapes"]
    clear_cache(module)
    return module

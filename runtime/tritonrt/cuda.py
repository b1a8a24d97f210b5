"""Ternary CUDA kernels built by ``tritonc compile --target cuda`` (TOOLCHAIN.md "CUDA target").

A generated module compiled for the CUDA target calls ``use_kernels(__file__,
"<stem>_kernels.so")`` at import. The library is loaded with ``ctypes`` the first time a
packed ternary weight runs on a CUDA device; its ``extern "C"`` launchers take raw device
pointers and a ``cudaStream_t`` (no PyTorch headers), one per layer shape, named from the
shape (the compiler's ``TernaryKernel::symbol``)::

    tck_linear_<f32|f16|bf16>_n<N>_k<K>_<nk|kn>_<act>_v<variant>
    tck_conv2d_<dt>_c<CIN>_o<COUT>_k<KH>x<KW>_s<SH>x<SW>_p<PH>x<PW>_d<DH>x<DW>_g<G>_<act>_v<variant>

A shape without a launcher (other hyperparameters than the compiled defaults, a tensor
on the CPU, an unsupported dtype, no library, no GPU) takes the reference path: unpack +
``torch`` ops. With several tile variants (``-O3``), the first call of each launcher and
row count times them and remembers the fastest.
"""

import contextlib
import ctypes
import math
import os
import re
import struct
import threading
import types
import warnings

import torch

from . import packing

__all__ = ["ABI_VERSION", "use_kernels", "libraries", "linear_symbol", "conv2d_symbol",
           "launcher_args",
           "find", "linear", "conv2d", "enabled", "packed_linear", "packed_conv2d",
           "packed_left_matmul"]

#: The launchers' C interface version (tritonc's ``kCudaAbiVersion``).
ABI_VERSION = 1

_DTYPES = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}
_lock = threading.Lock()
_paths = []          # registered library paths, in registration order
_loaded = {}         # path -> ctypes.CDLL, or None when it cannot be used
_symbols = {}        # symbol -> ctypes function, or None when no library has it
_tuned = {}          # (base symbol, rows) -> the fastest variant's function

_LINEAR_ARGS = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_float, ctypes.c_void_p,
                ctypes.c_void_p, ctypes.c_void_p, ctypes.c_longlong, ctypes.c_void_p]
_CONV_ARGS = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_float, ctypes.c_void_p,
              ctypes.c_void_p, ctypes.c_void_p, ctypes.c_longlong, ctypes.c_longlong,
              ctypes.c_longlong, ctypes.c_void_p]
# A residual launcher (`..._<act>_res_v<n>`) takes the residual's pointer after bias.
_LINEAR_RES_ARGS = _LINEAR_ARGS[:5] + [ctypes.c_void_p] + _LINEAR_ARGS[5:]
_CONV_RES_ARGS = _CONV_ARGS[:5] + [ctypes.c_void_p] + _CONV_ARGS[5:]


def launcher_args(symbol):
    """The ctypes parameter types of the launcher ``symbol`` (by its name's form)."""
    residual = re.search(r"_res_v\d+$", symbol) is not None
    if symbol.startswith("tck_conv2d_"):
        return _CONV_RES_ARGS if residual else _CONV_ARGS
    return _LINEAR_RES_ARGS if residual else _LINEAR_ARGS


def use_kernels(module_file, library_name):
    """Register ``library_name`` (next to ``module_file``) as a source of launchers.

    Nothing is loaded until a packed weight runs on CUDA; a missing library (``nvcc`` was
    not available when the module was compiled) just leaves the reference path in use.
    """
    path = os.path.join(os.path.dirname(os.path.abspath(module_file)), library_name)
    with _lock:
        if path not in _paths:
            _paths.append(path)
            _symbols.clear()  # a symbol missing so far may be in the new library
            _missing.clear()
    return path


def libraries():
    """The registered library paths and whether each loaded (None: not tried yet)."""
    with _lock:
        return [(p, None if p not in _loaded else _loaded[p] is not None) for p in _paths]


def enabled():
    """Whether any kernel library is registered (the dispatch is tried at all)."""
    return bool(_paths)


def _truncated_elf(path):
    """Why the ELF64 file at ``path`` is cut short, or ``None``.

    dlopen maps a library's segments without checking them against the file's size, and the
    first read past its end kills the process with SIGBUS (an interrupted copy, a full disk):
    such a file is refused here, with a warning, before ``ctypes`` opens it.
    """
    try:
        with open(path, "rb") as f:
            header = f.read(64)
            size = os.fstat(f.fileno()).st_size
            if len(header) < 64 or header[:4] != b"\x7fELF" or header[4] != 2 or header[5] != 1:
                return None  # not a little-endian ELF64: dlopen says what it is
            phoff, shoff = struct.unpack_from("<QQ", header, 0x20)
            phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", header, 0x36)
            if shnum and shoff + shnum * shentsize > size:
                return "its section headers end past the file's %d bytes" % size
            if phoff + phnum * phentsize > size:
                return "its program headers end past the file's %d bytes" % size
            f.seek(phoff)
            table = f.read(phnum * phentsize)
            for i in range(phnum):
                offset = struct.unpack_from("<Q", table, i * phentsize + 8)[0]  # p_offset
                filesz = struct.unpack_from("<Q", table, i * phentsize + 32)[0]  # p_filesz
                if offset + filesz > size:
                    return "a segment ends at byte %d, past the file's %d" % (offset + filesz,
                                                                             size)
    except OSError:
        return None
    return None


def _load(path):
    if path in _loaded:
        return _loaded[path]
    lib = None
    if os.path.exists(path):
        try:
            cut = _truncated_elf(path)
            if cut is not None:
                raise OSError("truncated: " + cut)
            lib = ctypes.CDLL(path)
            version = lib.tck_abi_version
            version.restype = ctypes.c_int
            version.argtypes = []
            if version() != ABI_VERSION:
                warnings.warn("tritonrt: %s has kernel ABI %d, this runtime expects %d; "
                              "using the reference path" % (path, version(), ABI_VERSION))
                lib = None
        except (OSError, AttributeError) as e:
            warnings.warn("tritonrt: cannot load %s (%s); using the reference path" % (path, e))
            lib = None
    _loaded[path] = lib
    return lib


def find(symbol):
    """The launcher ``symbol`` from the registered libraries, or ``None``."""
    with _lock:
        if symbol in _symbols:
            return _symbols[symbol]
        fn = None
        for path in _paths:
            lib = _load(path)
            if lib is not None and hasattr(lib, symbol):
                fn = getattr(lib, symbol)
                fn.restype = ctypes.c_int
                fn.argtypes = launcher_args(symbol)
                break
        _symbols[symbol] = fn
        return fn


def linear_symbol(dtype, n, k, kn, act, variant=0, residual=False):
    """The launcher's name for ``y[m, n] = act(x[m, k] . W)``; ``kn``: W is ``[k, n]``;
    ``residual``: ``act(x[m, k] . W + r[m, n])``."""
    return "tck_linear_%s_n%d_k%d_%s_%s%s_v%d" % (_DTYPES.get(dtype, "?"), n, k,
                                                  "kn" if kn else "nk", act,
                                                  "_res" if residual else "", variant)


def conv2d_symbol(dtype, cin, cout, kernel, stride, padding, dilation, groups, act, variant=0,
                  residual=False):
    return "tck_conv2d_%s_c%d_o%d_k%dx%d_s%dx%d_p%dx%d_d%dx%d_g%d_%s%s_v%d" % (
        _DTYPES.get(dtype, "?"), cin, cout, kernel[0], kernel[1], stride[0], stride[1],
        padding[0], padding[1], dilation[0], dilation[1], groups, act,
        "_res" if residual else "", variant)


def _residual_for(residual, shape, like):
    """The residual as the launchers read it: a contiguous tensor of the output's ``shape``,
    dtype and device (a smaller one that broadcasts to it is expanded), or ``None`` when the
    sum would be another shape or dtype than the output (the caller adds it itself)."""
    if not isinstance(residual, torch.Tensor) or residual.dtype != like.dtype or \
            residual.device != like.device:
        return None
    shape = tuple(shape)
    if tuple(residual.shape) != shape:
        try:
            if tuple(torch.broadcast_shapes(tuple(residual.shape), shape)) != shape:
                return None
        except RuntimeError:
            return None
        residual = residual.expand(shape)
    return residual.contiguous()


_missing = set()     # launchers reported missing from the loaded libraries
_unplanned = threading.local()  # .depth > 0: launchers looked up that tritonc did not plan


@contextlib.contextmanager
def unplanned():
    """Lookups of launchers the compiler did not plan: a missing one is not warned about.
    (A residual of another shape or dtype than the output, rare, runs its layer's plain
    launcher, which the plan leaves out when the residual launcher serves the layer.)"""
    _unplanned.depth = getattr(_unplanned, "depth", 0) + 1
    try:
        yield
    finally:
        _unplanned.depth -= 1


def _warn_missing(base):
    """Says once per launcher that a loaded library lacks it: the layer runs on the slower
    reference path, which is otherwise silent (a module created with other sizes than the
    compiled ones, activation types left out by --cuda-dtypes, or a ``<stem>_kernels.so``
    rebuilt by another module of the same stem in the same folder)."""
    if getattr(_unplanned, "depth", 0):
        return
    with _lock:
        loaded = [p for p in _paths if _loaded.get(p) is not None]
        if not loaded or base in _missing:
            return
        _missing.add(base)
    warnings.warn("tritonrt: no CUDA kernel %s in %s (built for other sizes or types, or by "
                  "another module of the same name); this layer runs the reference path: "
                  "recompile the module with --target cuda" % (base, ", ".join(loaded)))


def _pick(base, rows, call):
    """The launcher for ``base`` (a symbol without ``_v<n>``); with several variants the
    fastest for this row count, timed on first use with CUDA events."""
    key = (base, rows)
    fn = _tuned.get(key)
    if fn is not None:
        return fn
    variants = []
    for v in range(8):
        f = find("%s_v%d" % (base, v))
        if f is None:
            break
        variants.append(f)
    if not variants:
        _warn_missing(base)
        return None
    best = variants[0]
    if len(variants) > 1:
        best_ms = None
        for f in variants:
            call(f)  # warm-up
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(5):
                call(f)
            end.record()
            end.synchronize()
            ms = start.elapsed_time(end)
            if best_ms is None or ms < best_ms:
                best, best_ms = f, ms
    _tuned[key] = best
    return best


def _ptr(t):
    return None if t is None else ctypes.c_void_p(t.data_ptr())


def _epilogue(t, n, device):
    """A per-feature float32 vector (or ``None``) for the launchers' chscale/bias."""
    if t is None:
        return None
    t = torch.as_tensor(t, device=device).to(torch.float32)
    if t.numel() == 1:
        t = t.reshape(1).expand(n)
    return t.reshape(n).contiguous()


def _usable(x):
    # The launchers have no backward: an input that needs a gradient takes the reference path.
    # Under torch.compile too: a ctypes call and float(scale) cannot be traced (fullgraph).
    return bool(_paths) and x.is_cuda and x.dtype in _DTYPES and \
        not (torch.is_grad_enabled() and x.requires_grad) and not packing._compiling()


def linear(x, codes, scale, n, k, kn, act="none", chscale=None, bias=None, residual=None):
    """``act(scale * (x . W) * chscale + bias [+ residual])`` with the packed ternary
    ``codes``, or ``None`` when no launcher applies (the caller then takes the reference
    path, or adds a residual of another shape or dtype itself)."""
    if not _usable(x) or x.shape[-1] != k or not codes.is_cuda:
        return None
    shape = tuple(x.shape[:-1]) + (n,)
    if residual is not None:
        residual = _residual_for(residual, shape, x)
        if residual is None:
            return None
        residual = residual.reshape(-1, n)
    x2 = x.reshape(-1, k).contiguous()
    y = torch.empty((x2.shape[0], n), dtype=x.dtype, device=x.device)
    if not _launch_linear(x2, [codes], y, scale, n, k, kn, act, chscale, bias, residual):
        return None
    return y.reshape(shape)


def _launch_linear(x, codes, y, scale, n, k, kn, act, chscale, bias, residual=None):
    """Runs the linear launcher on each matrix of the stack: ``x[i]`` (``[m, k]``, contiguous)
    with the packed ``codes[i]`` into ``y[i]`` (``[m, n]``); ``x`` and ``y`` are ``[m, .]``
    for one matrix. With ``residual`` (one matrix, ``[m, n]`` contiguous) the residual
    launcher. False (nothing launched) when no launcher applies."""
    base = linear_symbol(x.dtype, n, k, kn, act, residual=residual is not None)[:-3]
    m = x.shape[-2]
    cs = _epilogue(chscale, n, x.device)
    b = _epilogue(bias, n, x.device)
    s = float(scale)
    stream = ctypes.c_void_p(torch.cuda.current_stream(x.device).cuda_stream)
    xs, ys = (x, y) if len(codes) > 1 else (x.unsqueeze(0), y.unsqueeze(0))

    def call(fn):
        for i, c in enumerate(codes):
            if residual is not None:
                rc = fn(_ptr(xs[i]), _ptr(c), s, _ptr(cs), _ptr(b), _ptr(residual),
                        _ptr(ys[i]), m, stream)
            else:
                rc = fn(_ptr(xs[i]), _ptr(c), s, _ptr(cs), _ptr(b), _ptr(ys[i]), m, stream)
            if rc != 0:
                raise RuntimeError("tritonrt: CUDA kernel %s failed (error %d)" % (base, rc))

    fn = _pick(base, m, call)
    if fn is None:
        return False
    call(fn)
    return True


def conv2d(x, codes, scale, conv, act="none", chscale=None, bias=None, residual=None):
    """The packed ternary convolution of module ``conv`` (stride, padding, dilation,
    groups, kernel size read from it) with the fused epilogue (``residual`` added before the
    activation), or ``None``."""
    if not _usable(x) or x.dim() != 4 or not codes.is_cuda or isinstance(conv.padding, str):
        return None
    cin, cout = conv.in_channels, conv.out_channels
    if x.shape[1] != cin:
        return None
    kernel, stride, padding, dilation = (tuple(conv.kernel_size), tuple(conv.stride),
                                         tuple(conv.padding), tuple(conv.dilation))
    base = conv2d_symbol(x.dtype, cin, cout, kernel, stride, padding, dilation, conv.groups,
                         act, residual=residual is not None)[:-3]
    x = x.contiguous()
    batch, _, h, w = x.shape
    oh = (h + 2 * padding[0] - dilation[0] * (kernel[0] - 1) - 1) // stride[0] + 1
    ow = (w + 2 * padding[1] - dilation[1] * (kernel[1] - 1) - 1) // stride[1] + 1
    if oh <= 0 or ow <= 0:
        return None
    if residual is not None:
        residual = _residual_for(residual, (batch, cout, oh, ow), x)
        if residual is None:
            return None
    y = torch.empty((batch, cout, oh, ow), dtype=x.dtype, device=x.device)
    cs = _epilogue(chscale, cout, x.device)
    b = _epilogue(bias, cout, x.device)
    s = float(scale)
    stream = ctypes.c_void_p(torch.cuda.current_stream(x.device).cuda_stream)

    def call(fn):
        if residual is not None:
            rc = fn(_ptr(x), _ptr(codes), s, _ptr(cs), _ptr(b), _ptr(residual), _ptr(y), batch,
                    h, w, stream)
        else:
            rc = fn(_ptr(x), _ptr(codes), s, _ptr(cs), _ptr(b), _ptr(y), batch, h, w, stream)
        if rc != 0:
            raise RuntimeError("tritonrt: CUDA kernel %s failed (error %d)" % (base, rc))

    fn = _pick(base, batch * oh * ow, call)
    if fn is None:
        return None
    call(fn)
    return y


def _packed_parts(module, name):
    """(codes, scalar scale, per-row scale or None) of a packed ternary weight."""
    codes = getattr(module, name)
    scale = getattr(module, name + "_scale")
    if scale.numel() == 1:
        cache = packing.module_cache(module, "cuda_scales")
        stamp = packing._stamp(scale)
        hit = cache.get(name)
        if hit is None or stamp is None or hit[0] != stamp:
            hit = (stamp, float(scale))  # one device sync per change, not per call
            cache[name] = hit
        return codes, hit[1], None
    return codes, 1.0, scale.reshape(-1).to(torch.float32)


def _times(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return torch.as_tensor(a, dtype=torch.float32) * torch.as_tensor(b, dtype=torch.float32)


def _per_feature(t, n):
    """Whether ``t`` (None, a number or a tensor) can be a per-feature epilogue vector."""
    if t is None or isinstance(t, (int, float)):
        return True
    return isinstance(t, torch.Tensor) and t.numel() in (1, n) and (t.dim() <= 1 or t.numel() == 1)


def packed_linear(module, name, x, kn, act="none", chscale=None, bias=None, item=None,
                  residual=None):
    """The packed weight ``name`` of ``module`` as a matmul on CUDA: ``x @ W`` (``kn``, W is
    ``[k, n]``) or ``x @ W^T`` (W is ``[n, k]``, F.linear), with the epilogue; ``None`` when
    no launcher applies. A 1-D W (``[k]``) is the product of one output feature; a stack of
    matrices (``x @ W``, W ``[..., k, n]`` packed by columns) runs one launch per matrix;
    ``item`` ``i``: the product with ``W[i]`` of such a stack (``tritonrt.stack_item``).
    ``residual`` (a 2-D weight only): added before the activation by the residual launcher."""
    if not _usable(x) or not getattr(module, "_tritonrt_packed", False):
        return None
    if residual is not None and (item is not None or len(module._tritonrt_shapes.get(name, ()))
                                 != 2):
        return None
    shape = module._tritonrt_shapes.get(name)
    if shape is None or x.dim() < 1:
        return None
    if item is not None:
        return _packed_stack(module, name, shape, x, kn, act, chscale, bias, item)
    if len(shape) == 1:  # one packed row of k: x @ w is [..., 1] without its last dimension
        if not (_per_feature(chscale, 1) and _per_feature(bias, 1)):
            return None
        codes, scale, rows = _packed_parts(module, name)
        y = linear(x, codes, scale, 1, shape[0], False, act, _times(rows, chscale), bias)
        return None if y is None else y.reshape(y.shape[:-1])
    if len(shape) > 2:
        return _packed_stack(module, name, shape, x, kn, act, chscale, bias)
    if len(shape) != 2 or x.dim() < 2:
        return None
    k, n = (shape[0], shape[1]) if kn else (shape[1], shape[0])
    if packing.packed_by_columns(module, name):
        # Stored as the rows of W^T, [n, k]: the F.linear layout, whatever the source wrote.
        if not kn:
            return None
        kn = False
    if not (_per_feature(chscale, n) and _per_feature(bias, n)):
        return None
    codes, scale, rows = _packed_parts(module, name)
    if rows is not None and kn:
        return None  # a per-row scale of a [k, n] weight scales the reduction: not an epilogue
    return linear(x, codes, scale, n, k, kn, act, _times(rows, chscale), bias, residual)


def _packed_stack(module, name, shape, x, kn, act, chscale, bias, item=None):
    """``x @ W`` with a stack of ternary matrices W ``[*b, k, n]`` (packed by columns: matrix
    ``j`` is the packed rows ``j * n`` to ``(j + 1) * n``), x ``[*bx, m, k]`` whose batch
    dimensions broadcast to ``b``; with ``item`` ``i``, W is the stack's item ``i`` (a
    matrix, or a smaller stack). ``None`` when no launcher applies."""
    if not kn or not packing.packed_by_columns(module, name) or len(shape) < 3:
        return None
    first = 0  # the first matrix of W in the stack
    if item is not None:
        index = item + shape[0] if item < 0 else item
        if not 0 <= index < shape[0]:
            return None  # torch's indexing raised already; not reached
        shape = tuple(shape[1:])
        first = index * math.prod(shape[:-2])
    batch, k, n = tuple(shape[:-2]), shape[-2], shape[-1]
    if x.shape[-1] != k or not (_per_feature(chscale, n) and _per_feature(bias, n)):
        return None
    codes, scale, rows = _packed_parts(module, name)
    if rows is not None or not codes.is_cuda:
        return None  # a per-row scale (of all the stack's rows) is not a per-feature epilogue
    count = math.prod(batch)
    parts = [codes[(first + j) * n:(first + j + 1) * n] for j in range(count)]
    if any(p.data_ptr() % 16 != 0 for p in parts):
        return None  # the kernels read the packed rows of each matrix 16-byte aligned
    if not batch:  # one matrix: a plain product, x of any rank
        return linear(x, parts[0], scale, n, k, False, act, chscale, bias)
    if x.dim() < 2:
        return None
    try:
        if tuple(torch.broadcast_shapes(tuple(x.shape[:-2]), batch)) != batch:
            return None  # x has more (or larger) batch dimensions than the stack
    except RuntimeError:
        return None
    m = x.shape[-2]
    xs = x.expand(batch + (m, k)).reshape(count, m, k).contiguous()
    y = torch.empty((count, m, n), dtype=x.dtype, device=x.device)
    if not _launch_linear(xs, parts, y, scale, n, k, False, act, chscale, bias):
        return None
    return y.reshape(batch + (m, n))


def packed_left_matmul(module, name, y):
    """``W @ y`` with the packed 2-D ternary weight ``name`` (``[m, k]``, packed by its rows)
    on the left, ``y`` ``[..., k, j]``: the nk kernel of W on ``y`` transposed, whose output
    ``[..., j, m]`` transposed back is the product; ``None`` when no launcher applies."""
    if not _usable(y) or not getattr(module, "_tritonrt_packed", False) or y.dim() < 2:
        return None
    shape = module._tritonrt_shapes.get(name)
    if shape is None or len(shape) != 2 or packing.packed_by_columns(module, name):
        return None
    m, k = shape
    if y.shape[-2] != k:
        return None
    codes, scale, rows = _packed_parts(module, name)
    out = linear(y.transpose(-2, -1), codes, scale, m, k, False, "none", rows, None)
    return None if out is None else out.transpose(-2, -1)


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (int(v), int(v))


def packed_conv2d_fn(module, name, x, stride, padding, dilation, groups, act="none",
                     chscale=None, bias=None):
    """The packed weight ``name`` of ``module`` as a functional convolution (``conv2d(x, W,
    ...)`` in the source) on CUDA with the epilogue, or ``None``."""
    if not _usable(x) or not getattr(module, "_tritonrt_packed", False):
        return None
    shape = module._tritonrt_shapes.get(name)
    if shape is None or len(shape) != 4 or isinstance(padding, str):
        return None
    cout = shape[0]
    if not (_per_feature(chscale, cout) and _per_feature(bias, cout)):
        return None
    conv = types.SimpleNamespace(
        in_channels=shape[1] * int(groups), out_channels=cout, kernel_size=(shape[2], shape[3]),
        stride=_pair(stride), padding=_pair(padding), dilation=_pair(dilation),
        groups=int(groups))
    codes, scale, rows = _packed_parts(module, name)
    return conv2d(x, codes, scale, conv, act, _times(rows, chscale), bias)


def packed_conv2d(conv, x, act="none", chscale=None, bias=None, residual=None):
    """The packed ternary convolution ``conv`` on CUDA with the epilogue (``residual`` added
    before the activation), or ``None``."""
    if not _usable(x) or not getattr(conv, "_tritonrt_packed", False):
        return None
    codes, scale, rows = _packed_parts(conv, "weight")
    if bias is None:
        bias = getattr(conv, "bias", None)
    return conv2d(x, codes, scale, conv, act, _times(rows, chscale), bias, residual)

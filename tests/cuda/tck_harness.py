"""Build instantiations of the kernels/cuda templates into a shared library and call them
through ctypes (used by tests/cuda/test_kernels_gpu.py and bench/cuda/bench_ternary.py).

Only the standard library at import time; torch is imported by the functions that need it.
"""

import concurrent.futures
import ctypes
import functools
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KDIR = ROOT / "kernels" / "cuda"
RUNTIME = ROOT / "runtime"

CXX_TYPES = {"f32": "float", "f16": "__half", "bf16": "__nv_bfloat16"}
ACTS = ("None", "ReLU", "ReLU6", "GELU", "SiLU", "Sigmoid", "Tanh", "Hardswish")
RESIDUALS = ("None", "BeforeAct", "AfterAct")

# cudaError_t values the launchers return for bad arguments.
CUDA_SUCCESS = 0
CUDA_ERROR_INVALID_VALUE = 1
CUDA_ERROR_MISALIGNED_ADDRESS = 716  # cudaErrorMisalignedAddress in driver_types.h


def find_nvcc():
    """The nvcc to use: $NVCC, then PATH, then /usr/local/cuda/bin/nvcc; None if absent."""
    cand = os.environ.get("NVCC") or shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    return cand if cand and os.path.isfile(cand) and os.access(cand, os.X_OK) else None


@dataclass(frozen=True)
class LinearSpec:
    dtype: str  # f32 | f16 | bf16
    n: int
    k: int
    layout: str  # NK | KN
    act: str = "None"
    res: str = "None"
    variant: int = 0

    def symbol(self):
        return "tl_%s_n%d_k%d_%s_%s_%s_v%d" % (self.dtype, self.n, self.k, self.layout, self.act,
                                                self.res, self.variant)

    def source(self):
        t = CXX_TYPES[self.dtype]
        return (
            'extern "C" __attribute__((visibility("default"))) int %s(const void* x, const void* w,\n'
            "    float scale, const float* chs, const float* bias, const void* res, void* y,\n"
            "    long long m, void* stream) {\n"
            "  return tck::ternary_linear<%s, %d, %d, tck::Layout::%s, tck::Act::%s,\n"
            "      tck::Residual::%s, %d>(static_cast<const %s*>(x), static_cast<const uint8_t*>(w),\n"
            "      scale, chs, bias, static_cast<const %s*>(res), static_cast<%s*>(y), m,\n"
            "      static_cast<cudaStream_t>(stream));\n"
            "}\n" % (self.symbol(), t, self.n, self.k, self.layout, self.act, self.res,
                     self.variant, t, t, t))


@dataclass(frozen=True)
class ConvSpec:
    dtype: str
    cin: int
    cout: int
    kh: int
    kw: int
    sh: int = 1
    sw: int = 1
    ph: int = 0
    pw: int = 0
    dh: int = 1
    dw: int = 1
    groups: int = 1
    act: str = "None"
    res: str = "None"
    variant: int = 0

    def symbol(self):
        return "tc_%s_c%d_o%d_k%dx%d_s%dx%d_p%dx%d_d%dx%d_g%d_%s_%s_v%d" % (
            self.dtype, self.cin, self.cout, self.kh, self.kw, self.sh, self.sw, self.ph, self.pw,
            self.dh, self.dw, self.groups, self.act, self.res, self.variant)

    def source(self):
        t = CXX_TYPES[self.dtype]
        return (
            'extern "C" __attribute__((visibility("default"))) int %s(const void* x, const void* w,\n'
            "    float scale, const float* chs, const float* bias, const void* res, void* y,\n"
            "    long long batch, long long h, long long w_, void* stream) {\n"
            "  return tck::ternary_conv2d<%s, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d,\n"
            "      tck::Act::%s, tck::Residual::%s, %d>(static_cast<const %s*>(x),\n"
            "      static_cast<const uint8_t*>(w), scale, chs, bias, static_cast<const %s*>(res),\n"
            "      static_cast<%s*>(y), batch, h, w_, static_cast<cudaStream_t>(stream));\n"
            "}\n" % (self.symbol(), t, self.cin, self.cout, self.kh, self.kw, self.sh, self.sw,
                     self.ph, self.pw, self.dh, self.dw, self.groups, self.act, self.res,
                     self.variant, t, t, t))


def _headers_digest():
    h = hashlib.sha256()
    for p in sorted(KDIR.glob("*.cuh")):
        h.update(p.name.encode())
        h.update(p.read_bytes())
    return h.hexdigest()


@functools.lru_cache(maxsize=None)
def _compiler_version(compiler):
    """The first line of ``compiler --version`` that names a release (nvcc) or the first line
    (clang++); empty if it cannot be run."""
    try:
        r = subprocess.run([compiler, "--version"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return ""
    lines = [ln.strip() for ln in r.stdout.splitlines() if ln.strip()]
    for ln in lines:
        if "release" in ln:
            return ln
    return lines[0] if lines else ""


def _build_library(compiler, flags, link_flags, prefix, suffix, specs, build_dir, jobs,
                   extra_source, digest_extra, log, what):
    """Compiles the wrappers of ``specs`` (plus ``extra_source``) with ``compiler`` and
    ``flags``, spread over ``jobs`` translation units compiled in parallel, and links them into
    ``lib<prefix>_<tag>.so`` in ``build_dir`` (reused when the sources and flags are the same)."""
    specs = list(dict.fromkeys(specs))  # de-duplicate, keep order
    jobs = max(1, min(jobs or os.cpu_count() or 1, max(1, len(specs))))
    key = hashlib.sha256()
    key.update(_headers_digest().encode())
    key.update(digest_extra)
    # Portable key: a library built in another checkout (or on another machine, and carried
    # to a GPU machine) is reused when the compiler's name and version, the flags with the
    # checkout's path taken out, and the sources are the same.
    key.update(" ".join([os.path.basename(compiler), _compiler_version(compiler)]
                        + [f.replace(str(ROOT), "<root>") for f in flags]).encode())
    key.update(extra_source.encode())
    for s in specs:
        key.update(s.source().encode())
    tag = key.hexdigest()[:16]
    if build_dir is None:
        build_dir = tempfile.mkdtemp(prefix=prefix + "_build_")
    out = Path(build_dir)
    out.mkdir(parents=True, exist_ok=True)
    lib = out / ("lib%s_%s.so" % (prefix, tag))
    if lib.exists():
        return str(lib)
    chunks = [specs[i::jobs] for i in range(jobs)]
    sources = []
    for i, chunk in enumerate(chunks):
        src = out / ("%s_%s_%d%s" % (prefix, tag, i, suffix))
        text = '#include "tritonc_kernels.cuh"\n\n' + "".join(s.source() for s in chunk)
        if i == 0:
            text += extra_source
        src.write_text(text)
        sources.append(src)

    def compile_one(src):
        obj = src.with_suffix(".o")
        r = subprocess.run([compiler] + flags + ["-c", "-o", str(obj), str(src)],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            raise RuntimeError("%s failed on %s:\n%s" % (os.path.basename(compiler), src,
                                                         r.stdout[-4000:]))
        return obj

    log("building %d %s in %d unit(s) ..." % (len(specs), what, jobs))
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as ex:
        objs = list(ex.map(compile_one, sources))
    tmp = out / ("lib%s_%s.so.tmp%d" % (prefix, tag, os.getpid()))
    r = subprocess.run([compiler, "-shared"] + link_flags + ["-o", str(tmp)]
                       + [str(o) for o in objs],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        raise RuntimeError("link failed:\n%s" % r.stdout[-4000:])
    os.replace(tmp, lib)
    return str(lib)


def define_flags(defines):
    """["-DNAME=VALUE", ...] of a space-separated "NAME=VALUE ..." string (the kernels' tuning
    knobs, e.g. "TCK_MMA_ACC=4"); [] for None or ""."""
    out = []
    for item in (defines or "").split():
        name = item.split("=", 1)[0]
        if not name.isidentifier():
            raise ValueError("not a NAME=VALUE define: %r" % item)
        out.append("-D" + item)
    return out


def build(specs, arch, build_dir=None, jobs=None, extra_source="", log=print, defines=None):
    """Compile the wrappers of ``specs`` (plus ``extra_source``) for ``arch`` (e.g. "90") into
    one shared library and return its path. The specs are spread over ``jobs`` translation
    units compiled in parallel. A library built from the same sources and flags is reused
    when ``build_dir`` is given. ``defines``: the kernels' tuning knobs, "NAME=VALUE ..."."""
    nvcc = find_nvcc()
    if nvcc is None:
        raise RuntimeError("nvcc not found")
    flags = ["-O3", "-std=c++17", "-Xcompiler", "-fPIC",
             "-gencode", "arch=compute_%s,code=sm_%s" % (arch, arch), "-I", str(KDIR)]
    flags += define_flags(defines)
    return _build_library(nvcc, flags, [], "tck", ".cu", specs, build_dir, jobs, extra_source,
                          b"", log, "kernel wrapper(s) for sm_%s" % arch)


EMU_DIR = Path(__file__).resolve().parent / "emu"


def find_cxx():
    """The C++ compiler for the CPU emulation: $TCK_EMU_CXX, then clang++; None if absent.
    Not g++: it ignores the section attribute of a template's static locals (GCC bug 70435),
    so the kernels' __shared__ arrays would escape the emulator's poisoned section
    (tests/cuda/emu/cuda_runtime.h refuses to build with it)."""
    cand = os.environ.get("TCK_EMU_CXX") or shutil.which("clang++")
    return cand if cand and shutil.which(cand) else None


def build_emulated(specs, build_dir=None, jobs=None, extra_source="", log=print, defines=None):
    """Like ``build``, but the kernels' own code is compiled by the host C++ compiler against
    tests/cuda/emu (a CUDA runtime that runs each thread of a block as a fiber on the CPU):
    the library's functions take host pointers. -fsanitize=alignment (trapping: no
    sanitizer runtime to load) stops the process on a misaligned vector load, as the GPU
    would fault."""
    cxx = find_cxx()
    if cxx is None:
        raise RuntimeError("no clang++ (set TCK_EMU_CXX)")
    flags = ["-std=c++17", "-O1", "-fPIC", "-x", "c++", "-D__CUDACC__", "-D__CUDA_ARCH__=900",
             "-I", str(EMU_DIR), "-I", str(KDIR), "-include", "cuda_runtime.h",
             "-fsanitize=alignment", "-fsanitize-trap=alignment",
             "-Wall", "-Wno-unknown-pragmas", "-Wno-pass-failed"] + define_flags(defines)
    emu = b"".join(p.name.encode() + p.read_bytes() for p in sorted(EMU_DIR.glob("*.h")))
    return _build_library(cxx, flags, [], "tck_emu", ".cpp", specs,
                          build_dir, jobs, extra_source, emu, log,
                          "emulated kernel wrapper(s)")


_LINEAR_ARGS = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_float, ctypes.c_void_p,
                ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_longlong,
                ctypes.c_void_p]
_CONV_ARGS = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_float, ctypes.c_void_p,
              ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_longlong,
              ctypes.c_longlong, ctypes.c_longlong, ctypes.c_void_p]


class Library:
    """A built library; ``fn(spec)`` is the ctypes function of a spec's wrapper."""

    def __init__(self, path):
        self.path = path
        self.lib = ctypes.CDLL(path)
        self._fns = {}

    def has(self, spec):
        return hasattr(self.lib, spec.symbol())

    def fn(self, spec):
        f = self._fns.get(spec)
        if f is None:
            f = getattr(self.lib, spec.symbol())
            f.argtypes = _CONV_ARGS if isinstance(spec, ConvSpec) else _LINEAR_ARGS
            f.restype = ctypes.c_int
            self._fns[spec] = f
        return f

    def call_linear(self, spec, x, w, scale, chs, bias, res, y, m, stream):
        return call_linear(self.fn(spec), x, w, scale, chs, bias, res, y, m, stream)

    def call_conv(self, spec, x, w, scale, chs, bias, res, y, batch, h, w_, stream):
        return call_conv(self.fn(spec), x, w, scale, chs, bias, res, y, batch, h, w_, stream)


def _ptr(t):
    return None if t is None else t.data_ptr()


def call_linear(f, x, w, scale, chs, bias, res, y, m, stream):
    """Call a linear wrapper with torch tensors (or None) and a raw stream handle."""
    return f(_ptr(x), _ptr(w), float(scale), _ptr(chs), _ptr(bias), _ptr(res), _ptr(y), int(m),
             stream)


def call_conv(f, x, w, scale, chs, bias, res, y, batch, h, w_, stream):
    return f(_ptr(x), _ptr(w), float(scale), _ptr(chs), _ptr(bias), _ptr(res), _ptr(y),
             int(batch), int(h), int(w_), stream)


# ---- packing and the reference path (torch) -------------------------------------------------------

def packing():
    """(pack_ternary, unpack_ternary) of the project's runtime (runtime/tritonrt/packing.py)."""
    if str(RUNTIME) not in sys.path:
        sys.path.insert(0, str(RUNTIME))
    from tritonrt.packing import pack_ternary, unpack_ternary  # noqa: E402
    return pack_ternary, unpack_ternary


def activation(v, act):
    import torch
    import torch.nn.functional as F
    if act == "None":
        return v
    if act == "ReLU":
        return torch.relu(v)
    if act == "ReLU6":
        return torch.clamp(v, 0.0, 6.0)
    if act == "GELU":
        return F.gelu(v)  # exact erf form
    if act == "SiLU":
        return v * torch.sigmoid(v)
    if act == "Sigmoid":
        return torch.sigmoid(v)
    if act == "Tanh":
        return torch.tanh(v)
    if act == "Hardswish":
        return v * torch.clamp(v + 3.0, 0.0, 6.0) / 6.0
    raise ValueError(act)


def epilogue(acc, scale, chs, bias, res, act, resmode, chan_shape):
    """The kernels' epilogue in the dtype of ``acc`` (float64 for the reference)."""
    v = acc * scale
    if chs is not None:
        v = v * chs.to(acc.dtype).reshape(chan_shape)
    if bias is not None:
        v = v + bias.to(acc.dtype).reshape(chan_shape)
    if resmode == "BeforeAct":
        v = v + res.to(acc.dtype)
    v = activation(v, act)
    if resmode == "AfterAct":
        v = v + res.to(acc.dtype)
    return v


def ref_linear(x, q, scale, chs, bias, res, act, resmode):
    """Reference: the unpacked weight q [N, K] (int8), y = x @ q^T in float64, then the
    epilogue. Returns (y, bound) where bound = sum |x| |q| |scale chs| (for tolerances)."""
    xd = x.double()
    qd = q.double()
    acc = xd @ qd.t()
    y = epilogue(acc, scale, chs, bias, res, act, resmode, (1, -1))
    mag = xd.abs() @ qd.abs().t() * abs(scale)
    if chs is not None:
        mag = mag * chs.double().abs().reshape(1, -1)
    return y, mag


def ref_conv(x, q, scale, chs, bias, res, act, resmode, stride, padding, dilation, groups):
    import torch.nn.functional as F
    xd = x.double()
    qd = q.double()
    acc = F.conv2d(xd, qd, None, stride, padding, dilation, groups)
    y = epilogue(acc, scale, chs, bias, res, act, resmode, (1, -1, 1, 1))
    mag = F.conv2d(xd.abs(), qd.abs(), None, stride, padding, dilation, groups) * abs(scale)
    if chs is not None:
        mag = mag * chs.double().abs().reshape(1, -1, 1, 1)
    return y, mag


OUT_RTOL = {"f32": 2e-6, "f16": 1e-3, "bf16": 8e-3}  # final rounding to the element type


def compare(y, ref, mag, dtype, lipschitz=1.2):
    """Whether the kernel's y matches the float64 reference: the float accumulation error
    (<= 2e-5 of the sum of |terms|, times the activation's slope) plus the final rounding.
    Returns (ok, worst error/tolerance ratio (inf for NaN), flat index of the worst)."""
    import torch
    if ref.numel() == 0:
        return True, 0.0, None
    yd = y.double()
    tol = 2e-5 * lipschitz * mag + OUT_RTOL[dtype] * ref.abs() + 1e-5
    ratio = ((yd - ref).abs() / tol).flatten()
    ratio = torch.where(torch.isnan(ratio), torch.full_like(ratio, float("inf")), ratio)
    idx = int(ratio.argmax())
    worst = float(ratio[idx])
    return worst <= 1.0, worst, idx

#!/usr/bin/env python3
"""GPU test of the ternary CUDA kernels (kernels/cuda) against the reference path.

    python3 tests/cuda/test_kernels_gpu.py [--quick] [--build-dir DIR] [--jobs N]
    python3 tests/cuda/test_kernels_gpu.py --build-only [--arch 90]   # no GPU needed

Builds wrappers of ternary_linear / ternary_conv2d (every element type, both layouts, every
activation and residual mode, variants 0..2, odd shapes) with nvcc for the device's
architecture, loads them with ctypes and calls them with device pointers
(tensor.data_ptr()) on torch's current stream. Each result is compared with the reference
path of the toolchain contract: the weight packed by tritonrt.pack_ternary and unpacked by
tritonrt.unpack_ternary, then torch.matmul / F.conv2d and the epilogue, in float64; the
tolerance allows for float accumulation (relative to sum |x| |q|) and the final rounding to
the element type. Shapes have K not a multiple of 4 / 16 / 32, N = 1, tails of every tile;
weight sparsity 0..90% plus all-zero rows and an all-zero weight; batches 1..8, 9, 64, 130.

Skips cleanly (exit 0, a SKIP line, "0 passed, 0 failed") without torch, without a CUDA
device or without nvcc. Prints "N passed, N failed" last; exits 1 on any failure.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tck_harness as H  # noqa: E402

DTYPES = ("f32", "f16", "bf16")
LAYOUTS = ("NK", "KN")
# (N, K): N = 1, K = 1 / 3 / 4 / 31 / 33 / 70 / 130 / 4097 (not multiples of 4, 16, 32),
# tails of every GEMV and GEMM tile, one LLM-sized shape.
LIN_SHAPES = ((1, 3), (37, 4097), (64, 33), (13, 64), (129, 31), (256, 256), (100, 70),
              (3, 4), (67, 130), (4096, 4096), (19, 80))
# (40, 512) and (19, 80): rows of 128 and 20 bytes (the tensor-core GEMV's 16-byte and 4-byte
# weight loads) and K % 8 == 0 (16-byte loads of x), as real layers have.
QUICK_SHAPES = ((1, 3), (37, 4097), (129, 31), (67, 130), (40, 512), (19, 80))
# cin, cout, kh, kw, sh, sw, ph, pw, dh, dw, groups
CONV_GEOMS = (
    (3, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1),
    (4, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1),      # 3x3 stride 2
    (64, 128, 1, 1, 1, 1, 0, 0, 1, 1, 1),   # 1x1
    (32, 32, 3, 3, 1, 1, 1, 1, 1, 1, 32),   # depthwise
    (6, 6, 5, 3, 2, 1, 2, 1, 1, 1, 6),      # depthwise, rectangular, strided
    (8, 12, 3, 3, 1, 1, 2, 2, 2, 2, 4),     # grouped, dilated
    (5, 10, 3, 3, 1, 1, 0, 0, 1, 1, 5),     # channel multiplier 2
    (3, 64, 7, 7, 2, 2, 3, 3, 1, 1, 1),     # 7x7 stem, K = 147
    (16, 24, 1, 7, 1, 1, 0, 3, 1, 1, 1),    # Inception's factorized 1x7
    (24, 16, 7, 1, 2, 1, 3, 0, 1, 1, 1),    # and 7x1, strided in height only
    (8, 8, 1, 3, 1, 1, 0, 4, 1, 4, 1),      # a TCN layer: [1, 3] dilated 4 in time
    (8, 8, 3, 3, 1, 1, 2, 2, 2, 2, 8),      # depthwise, dilated
)
BATCHES = (1, 2, 3, 4, 5, 6, 7, 8, 9, 64, 130)
EMULATED_BATCHES = (1, 2, 5, 8, 9, 64)  # each GEMV bucket and the GEMM
BIG_BATCHES = (1, 8, 64)
SPARSITY = (0.0, 0.3, 0.5, 0.7, 0.9)


def linear_specs(quick):
    specs = []
    i = 0
    for dtype in DTYPES:
        for layout in LAYOUTS:
            for v in range(3):
                for n, k in (QUICK_SHAPES if quick else LIN_SHAPES):
                    specs.append(H.LinearSpec(dtype, n, k, layout, H.ACTS[i % 8],
                                              H.RESIDUALS[(i // 8) % 3], v))
                    i += 1
    # every (activation, residual) pair for every element type
    for dtype in DTYPES:
        for a, act in enumerate(H.ACTS):
            for r, res in enumerate(H.RESIDUALS):
                specs.append(H.LinearSpec(dtype, 67, 130, LAYOUTS[(a + r) % 2], act, res,
                                          (a + r) % 3))
    return list(dict.fromkeys(specs))


def conv_specs(quick):
    specs = []
    i = 0
    for geom in (CONV_GEOMS[:4] if quick else CONV_GEOMS):
        for dtype in DTYPES:
            for v in range(3):
                specs.append(H.ConvSpec(dtype, *geom, act=H.ACTS[(3 * i) % 8],
                                        res=H.RESIDUALS[i % 3], variant=v))
                i += 1
    return specs


class Runner:
    def __init__(self, torch, lib, verbose, device="cuda", quiet=False):
        self.torch = torch
        self.lib = lib
        self.verbose = verbose
        self.quiet = quiet
        self.passed = 0
        self.failed = 0
        self.pack, self.unpack = H.packing()
        self.dev = torch.device(device)
        self.gen = torch.Generator(device="cpu")
        self.gen.manual_seed(2024)
        self.tdt = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
        self.batches = BATCHES

    def ok(self, cond, what):
        if cond:
            self.passed += 1
            if self.verbose:
                print("ok   %s" % what)
        else:
            self.failed += 1
            if not self.quiet:
                print("FAIL %s" % what)

    def stream(self):
        return self.torch.cuda.current_stream().cuda_stream if self.dev.type == "cuda" else None

    def sync(self):
        if self.dev.type == "cuda":
            self.torch.cuda.synchronize()

    def trits(self, shape, zero_frac, zero_rows=0):
        torch = self.torch
        u = torch.rand(shape, generator=self.gen)
        s = torch.randint(0, 2, shape, generator=self.gen) * 2 - 1
        q = torch.where(u < zero_frac, torch.zeros_like(s), s).to(torch.int8)
        if zero_rows:
            q[:zero_rows] = 0  # whole zero output rows: the warp-level skip path
        return q

    def randn(self, shape, dtype):
        return self.torch.randn(shape, generator=self.gen).to(self.tdt[dtype]).to(self.dev)

    def epi_tensors(self, nout, idx):
        torch = self.torch
        chs = bias = None
        if idx % 3 != 0:
            chs = (torch.rand(nout, generator=self.gen) * 1.5 + 0.25).to(self.dev)
        if idx % 5 != 1:
            bias = (torch.randn(nout, generator=self.gen) * 0.5).to(self.dev)
        return chs, bias

    # ---- linear -------------------------------------------------------------------------------

    def linear_case(self, spec, m, zero_frac, idx, zero_rows=0, x_offset=0, inplace=False):
        torch = self.torch
        q = self.trits((spec.n, spec.k), zero_frac, zero_rows)  # logical W [N, K]
        qp = q if spec.layout == "NK" else q.t().contiguous()   # packed rows
        w = self.pack(qp).to(self.dev)
        assert torch.equal(self.unpack(w.cpu(), tuple(qp.shape)), qp)
        qref = self.unpack(w, tuple(qp.shape))
        qref = qref if spec.layout == "NK" else qref.t()
        xbuf = self.randn((m * spec.k + x_offset,), spec.dtype)
        x = xbuf[x_offset:].view(m, spec.k)  # x_offset = 1: x not 16-byte aligned
        scale = 0.02 + 0.05 * float(torch.rand(1, generator=self.gen))
        chs, bias = self.epi_tensors(spec.n, idx)
        res = self.randn((m, spec.n), spec.dtype) if spec.res != "None" else None
        y = torch.full((m, spec.n), float("nan"), dtype=self.tdt[spec.dtype], device=self.dev)
        if inplace and res is not None:
            y.copy_(res)
            res_arg = y  # the residual may alias y
        else:
            res_arg = res
        ref, mag = H.ref_linear(x, qref.to(self.dev), scale, chs, bias, res, spec.act, spec.res)
        rc = self.lib.call_linear(spec, x, w, scale, chs, bias, res_arg, y, m, self.stream())
        self.sync()
        good, worst, at = H.compare(y, ref, mag, spec.dtype)
        what = "%s m=%d sparsity=%.1f%s%s%s chs=%s bias=%s" % (
            spec.symbol(), m, zero_frac, " zero_rows=%d" % zero_rows if zero_rows else "",
            " x+%d" % x_offset if x_offset else "", " in-place" if inplace else "",
            chs is not None, bias is not None)
        if rc != 0:
            self.ok(False, "%s: returned %d" % (what, rc))
        elif not good:
            self.ok(False, "%s: worst error/tol %.3g at flat index %s (got %r want %r)" % (
                what, worst, at, float(y.flatten()[at]), float(ref.flatten()[at])))
        else:
            self.ok(True, "%s (worst error/tol %.2g)" % (what, worst))

    def run_linear(self, specs):
        idx = 0
        for spec in specs:
            batches = BIG_BATCHES if spec.n * spec.k > 1 << 20 else self.batches
            for m in batches:
                self.linear_case(spec, m, SPARSITY[idx % len(SPARSITY)], idx)
                idx += 1
        # special paths on a few specs
        for spec in specs:
            if (spec.n, spec.k) == (67, 130) and spec.variant == 0:
                self.linear_case(spec, 3, 0.5, idx, zero_rows=20)
                self.linear_case(spec, 64, 0.5, idx + 1, zero_rows=20)
                self.linear_case(spec, 5, 1.0, idx + 2)  # all-zero weight
                self.linear_case(spec, 64, 0.3, idx + 3, x_offset=1)
                self.linear_case(spec, 2, 0.3, idx + 4, x_offset=1)
                if spec.res != "None":
                    self.linear_case(spec, 4, 0.3, idx + 5, inplace=True)
                    self.linear_case(spec, 70, 0.3, idx + 6, inplace=True)
                idx += 7

    def argument_checks(self, spec):
        torch = self.torch
        q = self.trits((spec.n, spec.k), 0.3)
        qp = q if spec.layout == "NK" else q.t().contiguous()
        w = self.pack(qp).to(self.dev)
        wbuf = torch.zeros(w.numel() + 16, dtype=torch.uint8, device=self.dev)
        wmis = wbuf[1:1 + w.numel()]
        wmis.copy_(w.flatten())
        x = self.randn((4, spec.k), spec.dtype)
        y = torch.zeros((4, spec.n), dtype=self.tdt[spec.dtype], device=self.dev)
        res = torch.zeros_like(y)
        st = self.stream()
        self.ok(self.lib.call_linear(spec, x, wmis, 1.0, None, None, res, y, 4, st)
                == H.CUDA_ERROR_MISALIGNED_ADDRESS, "%s: misaligned w is refused" % spec.symbol())
        self.ok(self.lib.call_linear(spec, x, w, 1.0, None, None, res, y, 0, st) == 0,
                "%s: M = 0 launches nothing" % spec.symbol())
        self.ok(self.lib.call_linear(spec, x, w, 1.0, None, None, res, y, -1, st)
                == H.CUDA_ERROR_INVALID_VALUE, "%s: M < 0 is refused" % spec.symbol())
        if spec.res != "None":
            self.ok(self.lib.call_linear(spec, x, w, 1.0, None, None, None, y, 4, st)
                    == H.CUDA_ERROR_INVALID_VALUE, "%s: missing residual is refused" % spec.symbol())
        self.sync()

    # ---- conv ---------------------------------------------------------------------------------

    def conv_case(self, spec, batch, h, w_, zero_frac, idx):
        torch = self.torch
        out_h = (h + 2 * spec.ph - spec.dh * (spec.kh - 1) - 1) // spec.sh + 1
        out_w = (w_ + 2 * spec.pw - spec.dw * (spec.kw - 1) - 1) // spec.sw + 1
        if out_h < 1 or out_w < 1:
            return
        q = self.trits((spec.cout, spec.cin // spec.groups, spec.kh, spec.kw), zero_frac)
        wp = self.pack(q).to(self.dev)
        qref = self.unpack(wp, tuple(q.shape)).to(self.dev)
        x = self.randn((batch, spec.cin, h, w_), spec.dtype)
        scale = 0.02 + 0.05 * float(torch.rand(1, generator=self.gen))
        chs, bias = self.epi_tensors(spec.cout, idx)
        yshape = (batch, spec.cout, out_h, out_w)
        res = self.randn(yshape, spec.dtype) if spec.res != "None" else None
        y = torch.full(yshape, float("nan"), dtype=self.tdt[spec.dtype], device=self.dev)
        ref, mag = H.ref_conv(x, qref, scale, chs, bias, res, spec.act, spec.res,
                              (spec.sh, spec.sw), (spec.ph, spec.pw), (spec.dh, spec.dw),
                              spec.groups)
        rc = self.lib.call_conv(spec, x, wp, scale, chs, bias, res, y, batch, h, w_,
                         self.stream())
        self.sync()
        good, worst, at = H.compare(y, ref, mag, spec.dtype)
        what = "%s batch=%d h=%d w=%d sparsity=%.1f" % (spec.symbol(), batch, h, w_, zero_frac)
        if rc != 0:
            self.ok(False, "%s: returned %d" % (what, rc))
        elif not good:
            self.ok(False, "%s: worst error/tol %.3g at flat index %s (got %r want %r)" % (
                what, worst, at, float(y.flatten()[at]), float(ref.flatten()[at])))
        else:
            self.ok(True, "%s (worst error/tol %.2g)" % (what, worst))

    def run_conv(self, specs):
        idx = 0
        for spec in specs:
            for batch, h, w_ in ((1, 7, 9), (2, 16, 16), (3, 5, 13)):
                self.conv_case(spec, batch, h, w_, SPARSITY[idx % len(SPARSITY)], idx)
                idx += 1
        # a geometry whose kernel does not fit the input is refused
        for spec in specs:
            if spec.kh > 1 + 2 * spec.ph:
                x = self.randn((1, spec.cin, 1, 1), spec.dtype)
                y = self.torch.zeros(1, dtype=self.tdt[spec.dtype], device=self.dev)
                wp = self.torch.zeros(spec.cout * 64, dtype=self.torch.uint8, device=self.dev)
                rc = self.lib.call_conv(spec, x, wp, 1.0, None, None, y, y, 1, 1, 1,
                                 self.stream())
                self.ok(rc == H.CUDA_ERROR_INVALID_VALUE,
                        "%s: an input smaller than the kernel is refused" % spec.symbol())
                break


class EmulatedLibrary:
    """Stands in for the built library with the launchers' contract computed by torch in
    float32 on the CPU, decoding the packed bytes itself (--cpu-selftest): checks this test's
    own machinery (packing, reference, tolerances, argument plumbing) without a GPU.
    ``perturb`` breaks it (one output off by a little) as a negative control."""

    def __init__(self, torch, perturb=False):
        self.torch = torch
        self.perturb = perturb

    def _decode(self, w, rows, cols):
        torch = self.torch
        codes = torch.stack([(w.to(torch.int32) >> s) & 3 for s in (0, 2, 4, 6)], dim=-1)
        return (codes.reshape(rows, -1)[:, :cols] - 1).to(torch.float32)

    def _epi(self, spec, acc, scale, chs, bias, res, y, chan_shape):
        v = H.epilogue(acc, scale, chs, bias, None if res is None else res.float(), spec.act,
                       spec.res, chan_shape)
        if self.perturb:
            v.view(-1)[v.numel() // 2] += 0.01 * (1.0 + float(v.view(-1)[v.numel() // 2].abs()))
        y.copy_(v.to(y.dtype))
        return 0

    def call_linear(self, spec, x, w, scale, chs, bias, res, y, m, stream):
        if m == 0:
            return 0
        if m < 0 or (spec.res != "None" and res is None):
            return H.CUDA_ERROR_INVALID_VALUE
        if w.data_ptr() % 16:
            return H.CUDA_ERROR_MISALIGNED_ADDRESS
        if spec.layout == "NK":
            q = self._decode(w, spec.n, spec.k)
        else:
            q = self._decode(w, spec.k, spec.n).t()
        acc = x.float() @ q.t()
        return self._epi(spec, acc, scale, chs, bias, res, y, (1, -1))

    def call_conv(self, spec, x, w, scale, chs, bias, res, y, batch, h, w_, stream):
        import torch.nn.functional as F
        oh = (h + 2 * spec.ph - spec.dh * (spec.kh - 1) - 1) // spec.sh + 1
        ow = (w_ + 2 * spec.pw - spec.dw * (spec.kw - 1) - 1) // spec.sw + 1
        if oh < 1 or ow < 1:
            return H.CUDA_ERROR_INVALID_VALUE
        kdim = spec.cin // spec.groups * spec.kh * spec.kw
        q = self._decode(w, spec.cout, kdim).reshape(spec.cout, spec.cin // spec.groups,
                                                      spec.kh, spec.kw)
        acc = F.conv2d(x.float(), q, None, (spec.sh, spec.sw), (spec.ph, spec.pw),
                       (spec.dh, spec.dw), spec.groups)
        return self._epi(spec, acc, scale, chs, bias, res, y, (1, -1, 1, 1))


def cpu_selftest(torch, verbose):
    """The harness against the float32 emulation (must pass) and a perturbed one (must fail)."""
    lspecs = [s for s in linear_specs(True) if s.n * s.k < 1 << 16][::3]
    cspecs = conv_specs(True)[::2]
    good = Runner(torch, EmulatedLibrary(torch), verbose, device="cpu")
    good.run_linear(lspecs)
    for spec in lspecs[:6]:
        good.argument_checks(spec)
    good.run_conv(cspecs)
    bad = Runner(torch, EmulatedLibrary(torch, perturb=True), False, device="cpu", quiet=True)
    bad.run_linear(lspecs[:4])
    bad.run_conv(cspecs[:2])
    print("emulated kernels: %d passed, %d failed; perturbed emulation: %d passed, %d failed"
          % (good.passed, good.failed, bad.passed, bad.failed))
    passed = good.passed + (1 if bad.failed and bad.passed == 0 else 0)
    failed = good.failed + (0 if bad.failed and bad.passed == 0 else 1)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


def emulated_specs(mma_only=False, pre_sm80=False):
    """The cases of --emulate: every element type, layout, variant, activation, residual and
    convolution geometry, on shapes small enough for one CPU (the 4096 x 4096 and K = 4097
    shapes only where the quick list has them). mma_only: the linears the tensor-core GEMV
    takes (16-bit elements, NK layout) in variant 0, whose block shape its tuning knobs
    (--defines) set. pre_sm80: the cases whose launch differs on a GPU before sm_80 (the
    16-bit NK linears of every variant: the tensor-core GEMV needs sm_80); the others take
    the same kernels on every GPU."""
    lspecs = [s for s in linear_specs(True) if s.n * s.k <= 1 << 18]
    if mma_only or pre_sm80:
        return [s for s in lspecs if s.dtype != "f32" and s.layout == "NK"
                and (pre_sm80 or s.variant == 0)], []
    return lspecs, conv_specs(False)


def emulated_run(torch, args):
    """--emulate: the kernels' own code (not a model of it), compiled by the host compiler
    against tests/cuda/emu and run on the CPU, through the same cases and reference."""
    if H.find_cxx() is None:
        print("SKIP: no clang++ (set TCK_EMU_CXX); the emulated kernels were not built")
        print("0 passed, 0 failed")
        return 0
    lspecs, cspecs = emulated_specs(args.mma_only)
    t0 = time.time()
    try:
        path = H.build_emulated(lspecs + cspecs, args.build_dir, args.jobs,
                                defines=args.defines)
    except RuntimeError as e:
        print("FAIL build: %s" % e)
        print("0 passed, 1 failed")
        return 1
    print("built %s in %.1f s" % (path, time.time() - t0))
    if args.pre_sm80:  # a subset, from the library of every case (--emulate's, reused)
        lspecs, cspecs = emulated_specs(pre_sm80=True)
    r = Runner(torch, H.Library(path), args.verbose, device="cpu")
    t0 = time.time()
    r.batches = EMULATED_BATCHES
    r.run_linear(lspecs)
    for spec in lspecs[:6]:
        r.argument_checks(spec)
    r.run_conv(cspecs)
    print("ran in %.1f s" % (time.time() - t0))
    print("%d passed, %d failed" % (r.passed, r.failed))
    return 1 if r.failed else 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer shapes")
    ap.add_argument("--build-only", action="store_true",
                    help="only build and load the library and check its symbols (no GPU needed)")
    ap.add_argument("--arch", help="SM architecture, e.g. 90 (default: the device's, else 80)")
    ap.add_argument("--build-dir", help="keep (and reuse) the built library here")
    ap.add_argument("--jobs", type=int, help="parallel nvcc processes (default: CPU count)")
    ap.add_argument("--cpu-selftest", action="store_true",
                    help="check this test's reference machinery on the CPU against an emulation "
                         "of the kernels' contract (no GPU, no nvcc needed)")
    ap.add_argument("--emulate", action="store_true",
                    help="run the kernels' own code on the CPU (compiled by clang++ against "
                         "tests/cuda/emu: threads as fibers, shared memory poisoned; no GPU "
                         "or nvcc needed)")
    ap.add_argument("--mma-only", action="store_true",
                    help="with --emulate: only the linears of the tensor-core GEMV (16-bit, NK, "
                         "variant 0), for its tuning knobs (--defines)")
    ap.add_argument("--pre-sm80", action="store_true",
                    help="with --emulate: only the cases whose launch differs on a GPU before "
                         "sm_80 (16-bit NK linears); meant with TCK_EMU_CC_MAJOR=7")
    ap.add_argument("--defines", default="",
                    help="the kernels' tuning knobs, \"NAME=VALUE ...\" (e.g. TCK_MMA_ACC=4)")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    if args.pre_sm80 and (not args.emulate or args.mma_only):
        ap.error("--pre-sm80 goes with --emulate, without --mma-only")

    try:
        import torch
    except Exception as e:  # noqa: BLE001 - any import failure means: no torch here
        torch = None
        if not args.build_only:
            print("SKIP: torch is not importable (%s); the CUDA kernels were not run" % e)
            print("0 passed, 0 failed")
            return 0
    if args.emulate:
        if torch is None:
            print("SKIP: torch is not importable; the emulated kernels were not run")
            print("0 passed, 0 failed")
            return 0
        return emulated_run(torch, args)
    if args.cpu_selftest:
        if torch is None:
            print("SKIP: torch is not importable; no CPU self-test")
            print("0 passed, 0 failed")
            return 0
        return cpu_selftest(torch, args.verbose)
    has_gpu = torch is not None and torch.cuda.is_available()
    if not args.build_only and not has_gpu:
        print("SKIP: torch.cuda.is_available() is false (no CUDA device); "
              "the CUDA kernels were not run")
        print("0 passed, 0 failed")
        return 0
    if H.find_nvcc() is None:
        print("SKIP: nvcc not found (set NVCC); the CUDA kernels were not built")
        print("0 passed, 0 failed")
        return 0

    arch = args.arch
    if arch is None:
        arch = "%d%d" % torch.cuda.get_device_capability() if has_gpu else "80"
    lspecs = linear_specs(args.quick)
    cspecs = conv_specs(args.quick)
    t0 = time.time()
    try:
        path = H.build(lspecs + cspecs, arch, args.build_dir, args.jobs, defines=args.defines)
    except RuntimeError as e:
        print("FAIL build: %s" % e)
        print("0 passed, 1 failed")
        return 1
    print("built %s in %.1f s" % (path, time.time() - t0))
    lib = H.Library(path)

    if args.build_only:
        missing = [s.symbol() for s in lspecs + cspecs if not lib.has(s)]
        for s in missing:
            print("FAIL symbol %s missing" % s)
        print("%d passed, %d failed" % (len(lspecs) + len(cspecs) - len(missing), len(missing)))
        return 1 if missing else 0

    print("device: %s (sm_%s)" % (torch.cuda.get_device_name(), arch))
    r = Runner(torch, lib, args.verbose)
    t0 = time.time()
    try:
        r.run_linear(lspecs)
        for spec in lspecs[:6]:
            r.argument_checks(spec)
        r.run_conv(cspecs)
    except Exception as e:  # noqa: BLE001 - a CUDA fault poisons the context: stop, report
        r.ok(False, "aborted by %s: %s" % (type(e).__name__, e))
    print("ran in %.1f s" % (time.time() - t0))
    print("%d passed, %d failed" % (r.passed, r.failed))
    return 1 if r.failed else 0


if __name__ == "__main__":
    sys.exit(main())

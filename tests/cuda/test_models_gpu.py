#!/usr/bin/env python3
"""Whole zoo models on a GPU through the CUDA target's kernels (issue #6: "whole zoo models
on CUDA equal their CPU outputs").

    PYTHONPATH=runtime python3 tests/cuda/test_models_gpu.py --tritonc build/tools/tritonc/tritonc \
        [--models mnist_mlp,tutorial_cnn,...] [--arch 90] [--jobs 8] [--keep DIR]

For each model: `tritonc compile examples/<m>.tri -O2 --target cuda --cuda-arch=<arch>
--cuda-dtypes=f32,f16` builds `<m>_kernels.so` with nvcc (all models in parallel); the entry
layer is built with its default sizes (the sizes the kernels were planned for), its float
state (biases, batch-norm statistics) made nonzero, and packed. Then:
  - float32 on the GPU (kernels) against the same packed model on the CPU (reference path):
    equal within 1e-3 of the output's largest magnitude;
  - every ternary product and convolution ran a kernel: the launches counted through the
    runtime's launcher lookup (`tritonrt.cuda.find`) are at least the ternary weights read;
  - float16 on the GPU against the CPU float32 output within 5e-2 (fp16 activations and
    batch norm through a deep network);
  - the unpacked model on the GPU (reference path: cuBLAS/cuDNN) agrees with the kernels.

Skips cleanly (a SKIP line, "0 passed, 0 failed", exit 0) without a CUDA device or nvcc.
Prints "N passed, N failed" last; exits 1 on any failure.
"""

import argparse
import concurrent.futures
import copy
import os
import shutil
import subprocess
import sys
import tempfile
import traceback

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "runtime"))
sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))

# Models whose default sizes the tests can run (vgg16 and vit_base are made smaller by the
# e2e tests, so their kernels, planned for the defaults, would not match).
DEFAULT_MODELS = ("mnist_mlp,tutorial_cnn,cnn_cifar,resnet_block,resnet18,mobilenet_v2,"
                  "efficientnet_b0,bitnet_mlp,transformer_block")


def find_nvcc():
    cand = os.environ.get("NVCC") or shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    return cand if os.path.isfile(cand) and os.access(cand, os.X_OK) else None


def use_nvcc():
    """The nvcc tritonc is to run ($TRITONC_NVCC is set to it); None, after a SKIP line and
    the summary, when there is none."""
    nvcc = find_nvcc()
    if nvcc is None:
        print("SKIP: nvcc not found\n0 passed, 0 failed")
        return None
    os.environ["TRITONC_NVCC"] = nvcc
    return nvcc


def relative(torch, got, want):
    got = torch.as_tensor(got).detach().to("cpu", torch.float64)
    want = torch.as_tensor(want).detach().to("cpu", torch.float64)
    if got.shape != want.shape:
        raise AssertionError("shape %s, expected %s" % (tuple(got.shape), tuple(want.shape)))
    if not bool(torch.isfinite(got).all()):
        raise AssertionError("non-finite outputs")
    return float((got - want).abs().max() / want.abs().max().clamp_min(1e-12))


class Launches:
    """Counts calls of the launchers the runtime looks up."""

    def __init__(self, cuda):
        self.cuda = cuda
        self.count = 0
        self.symbols = set()
        self.saved = cuda.find

    def __enter__(self):
        # The launchers picked on the first call (the _tuned table) are wrapped, so that
        # only this call's launches count, not a tuner's timing runs.
        self.tuned = dict(self.cuda._tuned)

        def counted(fn, symbol):
            def call(*args):
                self.count += 1
                self.symbols.add(symbol)
                return fn(*args)
            return call

        for key, fn in list(self.cuda._tuned.items()):
            if fn is not None:
                self.cuda._tuned[key] = counted(fn, key[0])

        def find(symbol):
            fn = self.saved(symbol)
            return None if fn is None else counted(fn, symbol)
        self.cuda.find = find
        return self

    def __exit__(self, *exc):
        self.cuda.find = self.saved
        self.cuda._tuned.clear()
        self.cuda._tuned.update(self.tuned)


def compile_model(tritonc, name, outdir, arch):
    py = os.path.join(outdir, name + ".py")
    proc = subprocess.run(
        [tritonc, "compile", os.path.join(REPO, "examples", name + ".tri"), "-O2", "--target",
         "cuda", "--cuda-arch=" + arch, "--cuda-dtypes=f32,f16", "--no-cache", "-o", py],
        capture_output=True, text=True)
    if proc.returncode != 0:
        raise AssertionError("tritonc failed (%d): %s" % (proc.returncode, proc.stderr))
    so = os.path.join(outdir, name + "_kernels.so")
    if not os.path.exists(so):
        raise AssertionError("no %s: %s" % (so, proc.stderr))
    return py


def prebuilt_or_compile(prebuilt, tritonc, name, outdir, arch):
    """The model's module: from ``prebuilt`` when it holds the module and its kernels (built
    for ``arch`` by --build-only, e.g. on a machine with nvcc and no GPU), else compiled."""
    if prebuilt:
        py = os.path.join(prebuilt, name + ".py")
        cu = os.path.join(prebuilt, name + "_kernels.cu")
        so = os.path.join(prebuilt, name + "_kernels.so")
        if all(os.path.exists(p) for p in (py, cu, so)):
            with open(cu) as f:  # its header's build command names the architecture
                if ("arch=compute_%s,code=sm_%s" % (arch, arch)) in f.read(4096):
                    return py
    return compile_model(tritonc, name, outdir, arch)


def build_only(args):
    """Compile the models for --arch into --keep (both required) without running them."""
    if not args.keep or not args.arch:
        print("--build-only needs --keep DIR and --arch")
        return 2
    if use_nvcc() is None:
        return 0
    os.makedirs(args.keep, exist_ok=True)
    names = [n for n in args.models.split(",") if n]
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        built = {n: pool.submit(compile_model, os.path.abspath(args.tritonc), n, args.keep,
                                args.arch) for n in names}
        for name in names:
            try:
                print("built %s" % built[name].result())
            except Exception as e:  # noqa: BLE001
                print("FAIL %s: %s" % (name, e))
                failed += 1
    print("%d passed, %d failed" % (len(names) - failed, failed))
    return 1 if failed else 0


def check_model(torch, tritonrt, gen, cuda_target, name, py):
    module = tritonrt.load(py)
    torch.manual_seed(0)
    model = gen.entry(module)()
    cuda_target._randomize_float_state(model)
    model.eval()
    inputs = gen.example_input(name)
    with torch.no_grad():
        float_gpu = copy.deepcopy(model).cuda()(*[t.cuda() for t in inputs])
        packed = tritonrt.pack(model)
        reads = []
        saved_weight = (tritonrt.fused.weight, tritonrt.layers.weight, tritonrt.weight)
        want = packed(*inputs)
        gpu = copy.deepcopy(packed).cuda()
        tritonrt.clear_cache(gpu)
        x = [t.cuda() for t in inputs]

        def weight(m, n, *args, **kwargs):
            reads.append(n)
            return saved_weight[0](m, n, *args, **kwargs)

        gpu(*x)  # first call: launchers looked up (and, with tile variants, timed)
        torch.cuda.synchronize()
        tritonrt.fused.weight = tritonrt.layers.weight = tritonrt.weight = weight
        try:
            with Launches(tritonrt.cuda) as launches:
                got = gpu(*x)
                torch.cuda.synchronize()
        finally:
            tritonrt.fused.weight, tritonrt.layers.weight, tritonrt.weight = saved_weight
        d32 = relative(torch, got, want)
        if not d32 <= 1e-3:
            raise AssertionError("float32 kernels differ from the CPU reference by %g" % d32)
        if launches.count == 0 or launches.count < len(reads):
            raise AssertionError("%d kernel launches for %d ternary weights read (%s)"
                                 % (launches.count, len(reads), sorted(launches.symbols)))
        dref = relative(torch, got, float_gpu)
        if not dref <= 1e-3:
            raise AssertionError("kernels differ from the unpacked model on the GPU by %g" % dref)
        half = gpu.half()
        tritonrt.clear_cache(half)
        x16 = [t.half() if t.is_floating_point() else t for t in x]  # ids stay integers
        half(*x16)
        with Launches(tritonrt.cuda) as launches16:
            got16 = half(*x16)
            torch.cuda.synchronize()
        d16 = relative(torch, got16, want)
        if not d16 <= 5e-2:
            raise AssertionError("float16 kernels differ from the CPU reference by %g" % d16)
        if launches16.count == 0:
            raise AssertionError("float16: no kernel ran")
    return "f32 %.1e, f16 %.1e, %d launches (%d kernels)" % (
        d32, d16, launches.count, len(launches.symbols))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tritonc", default=os.path.join(REPO, "build", "tools", "tritonc", "tritonc"))
    ap.add_argument("--models", default=DEFAULT_MODELS)
    ap.add_argument("--arch", help="SM architecture, e.g. 90 (default: the device's)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--keep", help="build in this directory and keep it")
    ap.add_argument("--build-only", action="store_true",
                    help="only compile the models into --keep for --arch (no GPU needed)")
    ap.add_argument("--prebuilt", help="take <model>.py and <model>_kernels.so from this "
                    "directory (made by --build-only) where both exist, instead of compiling")
    args = ap.parse_args(argv)
    if args.build_only:
        return build_only(args)
    try:
        import torch
    except ImportError:
        print("SKIP: torch is not installed\n0 passed, 0 failed")
        return 0
    if not torch.cuda.is_available():
        print("SKIP: no CUDA device\n0 passed, 0 failed")
        return 0
    nvcc = use_nvcc()
    if nvcc is None:
        return 0
    # Exact float32 on both GPU paths (cuDNN convolutions default to TF32 on Ampere and later).
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    import tritonrt
    import test_cuda_target as cuda_target  # its nonzero float state for the epilogues
    import test_generated as gen
    arch = args.arch or "%d%d" % torch.cuda.get_device_capability()
    outdir = args.keep or tempfile.mkdtemp(prefix="tritonc-gpu-models-")
    os.makedirs(outdir, exist_ok=True)
    names = [n for n in args.models.split(",") if n]
    print("device: %s (sm_%s), nvcc %s" % (torch.cuda.get_device_name(), arch, nvcc))
    passed = failed = 0
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        built = {n: pool.submit(prebuilt_or_compile, args.prebuilt,
                                os.path.abspath(args.tritonc), n, outdir, arch)
                 for n in names}
        for name in names:
            try:
                py = built[name].result()
                print("PASS %s: %s" % (name, check_model(torch, tritonrt, gen, cuda_target, name, py)))
                passed += 1
            except Exception:  # noqa: BLE001  (report every model)
                print("FAIL %s" % name)
                traceback.print_exc()
                failed += 1
            sys.stdout.flush()
    if not args.keep:
        shutil.rmtree(outdir, ignore_errors=True)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

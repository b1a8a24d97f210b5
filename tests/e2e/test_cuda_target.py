#!/usr/bin/env python3
"""The CUDA target (`tritonc compile --target cuda`), checked without a GPU.

    PYTHONPATH=runtime /usr/bin/python3 tests/e2e/test_cuda_target.py \
        --tritonc build/tools/tritonc/tritonc [-k FILTER] [--nvcc-models mnist_mlp,resnet18]

- every example gets a `<stem>_kernels.cu` whose launchers cover every ternary layer of
  the model as the runtime names them (tritonrt.cuda.linear_symbol / conv2d_symbol), with
  C parameter types that match the runtime's ctypes argtypes;
- the module compiled for CUDA runs on the CPU (reference path) with the outputs of the
  module compiled for PyTorch;
- with nvcc: the .cu of some models compiles, exports exactly the planned launchers plus
  tck_abi_version, and the runtime loads the library and finds them (no GPU needed).
GPU execution is tested by tests/cuda/test_kernels_gpu.py (skipped where there is no GPU).
Ends with "N passed, N failed".
"""
import argparse
import ctypes
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import traceback

import torch

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "runtime"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tritonrt  # noqa: E402
from tritonrt import cuda  # noqa: E402

import test_generated as gen  # noqa: E402  (examples, inputs, loading helpers)

LAUNCHER = re.compile(r"TCK_EXPORT int (tck_(?:linear|conv2d)_\w+)\(([^)]*)\)", re.S)
C_TYPES = {"const void*": ctypes.c_void_p, "void*": ctypes.c_void_p, "float": ctypes.c_float,
           "const float*": ctypes.c_void_p, "long long": ctypes.c_longlong,
           "cudaStream_t": ctypes.c_void_p}  # a pointer (CUstream_st*), as TOOLCHAIN.md names it
SKIP = "skip"


def launchers(cu_text):
    """{symbol: [ctypes type of each parameter]} of the .cu's extern "C" launchers."""
    out = {}
    for name, params in LAUNCHER.findall(cu_text):
        types = []
        for param in params.split(","):
            param = " ".join(param.split())
            if not param:
                continue
            ctype = param.rsplit(" ", 1)[0]
            if ctype not in C_TYPES:
                raise AssertionError("%s: parameter '%s' has no ctypes mapping" % (name, param))
            types.append(C_TYPES[ctype])
        out[name] = types
    return out


def compile_cuda(ctx, name, *flags):
    path = os.path.join(REPO, "examples", name + ".tri")
    ctx.count += 1
    outdir = os.path.join(ctx.workdir, "cuda%d" % ctx.count)
    os.makedirs(outdir)
    py = os.path.join(outdir, name + ".py")
    proc = subprocess.run([ctx.tritonc, "compile", path, "-o", py, "--target", "cuda"] + list(flags),
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise AssertionError("tritonc failed (%d): %s" % (proc.returncode, proc.stderr))
    return py, os.path.join(outdir, name + "_kernels.cu"), proc.stderr


def compile_cuda_text(ctx, stem, src):
    """Compiles the source text `src` as `<stem>.tri` at -O2 for the CUDA target without
    nvcc: (the .py, the .cu written beside it)."""
    ctx.count += 1
    outdir = os.path.join(ctx.workdir, "%s%d" % (stem, ctx.count))
    os.makedirs(outdir)
    tri = os.path.join(outdir, stem + ".tri")
    with open(tri, "w") as f:
        f.write(src)
    py = os.path.join(outdir, stem + ".py")
    proc = subprocess.run([ctx.tritonc, "compile", tri, "-O2", "-o", py, "--target", "cuda",
                           "--nvcc", "/nonexistent/nvcc", "--no-cache"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise AssertionError("tritonc failed (%d): %s" % (proc.returncode, proc.stderr))
    return py, os.path.join(outdir, stem + "_kernels.cu")


def expected_bases(model):
    """The launcher names (without dtype, act and variant) the runtime asks for."""
    bases = set()
    for _, m in model.named_modules():
        if isinstance(m, tritonrt.TernaryLinear):
            bases.add("linear_n%d_k%d_nk" % (m.out_features, m.in_features))
        elif isinstance(m, tritonrt.TernaryConv2d):
            s = cuda.conv2d_symbol(torch.float32, m.in_channels, m.out_channels, m.kernel_size,
                                   m.stride, m.padding, m.dilation, m.groups, "none")
            bases.add(re.sub(r"^tck_(conv2d)_f32_(.*)_none_v0$", r"\1_\2", s))
        for w in getattr(type(m), "_ternary_weights", ()):
            if isinstance(m, (tritonrt.TernaryLinear, tritonrt.TernaryConv2d)):
                continue
            p = getattr(m, w)
            if p.dim() == 2 and tritonrt.packed_by_columns(m, w):
                # tutorial style: x @ w, w is [k, n], packed by columns: rows of w^T, [n, k]
                bases.add("linear_n%d_k%d_nk" % (p.shape[1], p.shape[0]))
    return bases


def strip(symbol):
    """tck_linear_f16_n10_k20_kn_relu_v0 -> linear_n10_k20_kn."""
    s = re.sub(r"^tck_", "", symbol)
    s = re.sub(r"_(f32|f16|bf16)_", "_", s, count=1)
    return re.sub(r"_(none|relu|gelu|silu|relu6)(_res)?_v\d+$", "", s)


def make_coverage_test(name):
    def test(ctx):
        py, cu, _ = compile_cuda(ctx, name, "-O2", "--nvcc", "/nonexistent/nvcc")
        text = open(cu).read()
        found = launchers(text)
        if "int tck_abi_version()" not in text:
            raise AssertionError("%s: no tck_abi_version()" % name)
        for symbol, types in found.items():
            want = cuda.launcher_args(symbol)
            if types != want:
                raise AssertionError("%s: %s takes %s, the runtime passes %s"
                                     % (name, symbol, types, want))
            for dt in ("f32", "f16", "bf16"):
                if re.sub(r"_(f32|f16|bf16)_", "_%s_" % dt, symbol, count=1) not in found:
                    raise AssertionError("%s: %s has no %s twin" % (name, symbol, dt))
        if gen.example_kwargs(name):
            return  # the plan is for the default sizes; the test instantiates smaller ones
        model = gen.entry(gen.load(py))()
        expected = expected_bases(model)
        if expected and not found:
            raise AssertionError("%s: the .cu has no launchers" % name)
        missing = expected - {strip(s) for s in found}
        if missing:
            raise AssertionError("%s: no launcher for %s" % (name, sorted(missing)))
    test.__name__ = "test_cuda_launchers_cover_" + name
    return test


def test_functional_convolutions_get_launchers(ctx):
    """Tutorial-style convolutions (conv2d(x, W) with W a ternary layer parameter) fused at
    -O2 get one launcher each, named as tritonrt.cuda.packed_conv2d_fn asks for them:
    sizes from the filter, stride/padding/groups from the call, the fused activation."""
    _, cu, _ = compile_cuda(ctx, "tutorial_cnn", "-O2", "--nvcc", "/nonexistent/nvcc")
    found = set(launchers(open(cu).read()))
    want = [cuda.conv2d_symbol(torch.float32, 3, 32, (3, 3), (1, 1), (1, 1), (1, 1), 1, "relu"),
            cuda.conv2d_symbol(torch.float32, 32, 64, (3, 3), (2, 2), (1, 1), (1, 1), 1, "relu"),
            cuda.conv2d_symbol(torch.float32, 64, 64, (3, 3), (1, 1), (1, 1), (1, 1), 4, "silu"),
            cuda.conv2d_symbol(torch.float32, 64, 128, (1, 1), (1, 1), (0, 0), (1, 1), 1, "gelu"),
            # fc [128, 10] is used as x @ fc: packed by columns, read by the [n, k] kernel
            cuda.linear_symbol(torch.float32, 10, 128, False, "none")]
    missing = [w for w in want if w not in found]
    if missing:
        raise AssertionError("no launcher for %s (found %s)" % (missing, sorted(found)))
    # At -O1 nothing is fused: each convolution gets a launcher without an activation
    # (the module calls tritonrt.fused_conv2d for it all the same).
    _, cu1, _ = compile_cuda(ctx, "tutorial_cnn", "-O1", "--nvcc", "/nonexistent/nvcc")
    convs = {s for s in launchers(open(cu1).read()) if s.startswith("tck_conv2d_f32_")}
    want1 = {w.replace("_relu_", "_none_").replace("_silu_", "_none_").replace("_gelu_", "_none_")
             for w in want if w.startswith("tck_conv2d_")}
    if convs != want1:
        raise AssertionError("-O1 convolution launchers %s, expected %s" % (sorted(convs),
                                                                           sorted(want1)))


def test_products_past_the_kernels_limits_get_no_launcher(ctx):
    """A ternary product larger than kernels/cuda's templates take (more than 65535 x 64
    output columns, or a size past 2^31) is not planned: the .cu nvcc would reject (exit 3)
    holds no launcher for it, the compile succeeds, and the module runs the reference
    path; a small product of the same layer keeps its launcher."""
    src = """
layer Big(w: TernaryTensor<trit, [4194304, 4]>, v: TernaryTensor<trit, [8, 4]>,
          u: TernaryTensor<trit, [4, 2147483648]>, x: Tensor<float32, [?, 4]>)
    -> Tensor<float32, [?, 8]> {
    return linear(x, v) + mean(linear(x, w)) + mean(x @ u)
}
"""
    _, cu = compile_cuda_text(ctx, "big", src)
    found = set(launchers(open(cu).read()))
    want = cuda.linear_symbol(torch.float32, 8, 4, False, "none")
    if want not in found:
        raise AssertionError("no launcher %s for the small product (found %s)" % (want, sorted(found)))
    big = [f for f in found if "4194304" in f or "2147483648" in f]
    if big:
        raise AssertionError("launchers past the kernels' limits: %s" % big)


def test_extreme_hyperparameters_do_not_crash_the_planner(ctx):
    """The planner evaluates hyperparameters' arithmetic to size kernels: a valid program whose
    int64 hyperparameter overflows that arithmetic (INT64_MIN / -1 crashed tritonc with SIGFPE;
    a product, a negation or a cast out of range was undefined behaviour) compiles for the CUDA
    target, and what depends on such a value gets no launcher while the rest keeps its own."""
    cases = {
        "div": "let j = n / -1", "mod": "let j = n % -1", "neg": "let j = -n",
        "mul": "let j = (n + 1) * 4", "cast": "let j = int64(float(n) * 1.0e10)",
    }
    for name, stmt in cases.items():
        src = """
layer M(n: int64 = -9223372036854775807 - 1, x: Tensor<float32, [?, 4]>)
    -> Tensor<float32, [?, 4]> {
    %s
    let fc = TernaryLinear(4, 4)
    return fc(x) + float(j)
}
""" % stmt
        _, cu = compile_cuda_text(ctx, "extreme_" + name, src)
        found = set(launchers(open(cu).read()))
        want = cuda.linear_symbol(torch.float32, 4, 4, False, "none")
        if want not in found:
            raise AssertionError("%s: no launcher %s (found %s)" % (name, want, sorted(found)))
    src = """
layer F(n: int64 = 4611686018427387904, w: TernaryTensor<trit, [n * 4, 4]>,
        v: TernaryTensor<trit, [4, 4]>, x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {
    return linear(x, v) + mean(linear(x, w))
}
"""
    _, cu = compile_cuda_text(ctx, "extreme_dim", src)
    found = set(launchers(open(cu).read()))
    if cuda.linear_symbol(torch.float32, 4, 4, False, "none") not in found:
        raise AssertionError("overflowing weight size: the small product lost its launcher: %s"
                             % sorted(found))


def test_non_square_convolutions_get_launchers(ctx):
    """Sizes per dimension reach the kernels: TernaryConv2d(8, 16, [1, 7], padding=[0, 3])
    and a 7x1 strided in height only, and the functional conv2d of a [16, 16, 1, 3] weight
    with padding=[0, 1], each get the launcher tritonrt.cuda asks for (named from the
    module's kernel_size, stride and padding tuples, or the filter and the call's sizes)."""
    src = """
layer Net(w: TernaryTensor<trit, [16, 16, 1, 3]>,
          x: Tensor<float32, [?, 8, 12, 12]>) -> Tensor<float32, [?, 16, 6, 12]> {
    let a = TernaryConv2d(8, 16, [1, 7], padding=[0, 3])
    let b = TernaryConv2d(16, 16, [7, 1], stride=[2, 1], padding=[3, 0])
    let h = relu(b(relu(a(x))))
    return conv2d(h, w, padding=[0, 1])
}
"""
    py, cu = compile_cuda_text(ctx, "net", src)
    found = set(launchers(open(cu).read()))
    model = gen.entry(gen.load(py))()
    want = [cuda.conv2d_symbol(torch.float32, m.in_channels, m.out_channels, m.kernel_size,
                               m.stride, m.padding, m.dilation, m.groups, "relu")
            for m in (model.a, model.b)]
    want.append(cuda.conv2d_symbol(torch.float32, 16, 16, (1, 3), (1, 1), (0, 1), (1, 1), 1,
                                   "none"))
    if want[0].find("k1x7_s1x1_p0x3") < 0 or want[1].find("k7x1_s2x1_p3x0") < 0:
        raise AssertionError("the modules' sizes: %s" % want)
    missing = [w for w in want if w not in found]
    if missing:
        raise AssertionError("no launcher for %s (found %s)" % (missing, sorted(found)))


def test_dilated_convolutions_get_launchers(ctx):
    """A dilated TernaryConv2d (TCN and WaveNet layers: a [1, k] convolution per dilation)
    got no kernel and no word (audit 45E: 4 of a TCN's 8 ternary layers); it gets the
    launcher tritonrt.cuda asks for, from the module's dilation, as a functional dilated
    conv2d does."""
    src = """
layer Tcn(x: Tensor<float32, [?, 8, 1, 32]>) -> Tensor<float32, [?, 8, 1, 32]> {
    let c1 = TernaryConv2d(8, 8, [1, 3], padding=[0, 2], dilation=[1, 2])
    let c2 = TernaryConv2d(8, 8, [1, 3], padding=[0, 4], dilation=[1, 4])
    let c3 = TernaryConv2d(8, 8, 3, padding=2, dilation=2)
    return c3(relu(c2(relu(c1(x)))))
}
"""
    py, cu = compile_cuda_text(ctx, "tcn", src)
    found = set(launchers(open(cu).read()))
    model = gen.entry(gen.load(py))()
    want = [cuda.conv2d_symbol(torch.float32, m.in_channels, m.out_channels, m.kernel_size,
                               m.stride, m.padding, m.dilation, m.groups, act)
            for m, act in ((model.c1, "relu"), (model.c2, "relu"), (model.c3, "none"))]
    if want[0].find("_d1x2_") < 0 or want[2].find("_d2x2_") < 0:
        raise AssertionError("the modules' dilations: %s" % want)
    missing = [w for w in want if w not in found]
    if missing:
        raise AssertionError("no launcher for %s (found %s)" % (missing, sorted(found)))


def test_cuda_module_runs_reference_path_on_cpu(ctx):
    for name in ("mnist_mlp", "resnet_block", "tutorial_cnn"):
        py, _, _ = compile_cuda(ctx, name, "-O2", "--nvcc", "/nonexistent/nvcc")
        text = open(py).read()
        if 'tritonrt.use_kernels(__file__, "%s_kernels.so")' % name not in text:
            raise AssertionError("%s: the module does not register its kernels" % name)
        torch.manual_seed(0)
        plain = gen.entry(gen.load(ctx.compile(os.path.join(REPO, "examples", name + ".tri"),
                                               "-O2")))()
        with_cuda = gen.entry(gen.load(py))()
        with_cuda.load_state_dict(plain.state_dict())
        for m in (plain, with_cuda):
            tritonrt.pack(m)
        x = gen.example_input(name)
        with torch.no_grad():
            gen.check_close(with_cuda(*x), plain(*x), name + " --target cuda vs pytorch")


def test_no_nvcc_says_so_and_writes_the_source(ctx):
    py, cu, stderr = compile_cuda(ctx, "mnist_mlp", "--nvcc", "/nonexistent/nvcc")
    if "did not compile it" not in stderr or "[CudaNotCompiled]" not in stderr:
        raise AssertionError("no note about the missing nvcc: %r" % stderr)
    if not os.path.exists(cu) or os.path.exists(cu[:-3] + ".so"):
        raise AssertionError("expected the .cu and no .so")


def test_failed_nvcc_writes_nothing(ctx):
    outdir = tempfile.mkdtemp(dir=ctx.workdir)
    py = os.path.join(outdir, "m.py")
    proc = subprocess.run([ctx.tritonc, "compile", os.path.join(REPO, "examples", "mnist_mlp.tri"),
                           "-o", py, "--target", "cuda", "--nvcc", "/bin/false"],
                          capture_output=True, text=True)
    if proc.returncode != 3 or "[NvccFailed]" not in proc.stderr:
        raise AssertionError("expected exit 3 and NvccFailed, got %d: %s"
                             % (proc.returncode, proc.stderr))
    if os.listdir(outdir):
        raise AssertionError("a failed nvcc left files: %s" % os.listdir(outdir))


def fake_nvcc(ctx, script):
    """A folder of its own holding an executable `nvcc` with the shell `script`."""
    work = tempfile.mkdtemp(dir=ctx.workdir)
    nvcc = os.path.join(work, "nvcc")
    with open(nvcc, "w") as f:
        f.write("#!/bin/sh\n" + script)
    os.chmod(nvcc, 0o755)
    return work, nvcc


def test_failed_nvcc_output_is_shown_line_by_line(ctx):
    # nvcc's own messages follow the error as notes, one per line (they were one line with
    # literal "\\n" escapes), text and JSON alike, and a note says how to see the source.
    work, nvcc = fake_nvcc(ctx, "echo 'm_kernels.cu(12): error: identifier \"foo\" is "
                           "undefined' >&2\necho '1 error detected in the compilation' >&2\n"
                           "exit 2\n")
    source = os.path.join(REPO, "examples", "mnist_mlp.tri")
    base = [ctx.tritonc, "compile", source, "-o", os.path.join(work, "m.py"), "--target", "cuda",
            "--no-cache", "--nvcc", nvcc]
    proc = subprocess.run(base, capture_output=True, text=True)
    lines = proc.stderr.splitlines()
    want = ['note: nvcc: m_kernels.cu(12): error: identifier "foo" is undefined',
            "note: nvcc: 1 error detected in the compilation"]
    if (proc.returncode != 3 or not lines or "exit status 2 [NvccFailed]" not in lines[0]
            or lines[1:3] != want or "--stop-after=emit --dump-code" not in lines[3]):
        raise AssertionError("exit %d, stderr %r" % (proc.returncode, proc.stderr))
    proc = subprocess.run(base + ["--diagnostics-format=json"], capture_output=True, text=True)
    diag = json.loads(proc.stderr.splitlines()[0])
    if diag["code"] != "NvccFailed" or diag["notes"][:2] != [w[len("note: "):] for w in want]:
        raise AssertionError("JSON: %r" % proc.stderr)


def test_killed_nvcc_leaves_no_temporary_files(ctx):
    # nvcc writes its intermediate files (tmpxft_*) to $TMPDIR and leaves them when it is
    # killed: it runs with TMPDIR in tritonc's private folder, which a signal that ends
    # tritonc removes with everything in it (they were left in /tmp by every cancelled build).
    import signal
    import time
    work, nvcc = fake_nvcc(ctx, 'echo "$TMPDIR" > "%s/seen"\n'
                           'echo partial > "$TMPDIR/tmpxft_00001234_00000000-1.cpp"\n'
                           'touch "%s/started"\nsleep 30\n' % (ctx.workdir, ctx.workdir))
    tmpdir = os.path.join(work, "tmp")
    os.makedirs(tmpdir)
    started = os.path.join(ctx.workdir, "started")
    source = os.path.join(REPO, "examples", "mnist_mlp.tri")
    env = dict(os.environ, TMPDIR=tmpdir)
    proc = subprocess.Popen([ctx.tritonc, "compile", source, "-o", os.path.join(work, "m.py"),
                             "--target", "cuda", "--no-cache", "--nvcc", nvcc],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not os.path.exists(started) and time.monotonic() < deadline:
            time.sleep(0.05)
        if not os.path.exists(started):
            raise AssertionError("the fake nvcc never ran")
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    seen = open(os.path.join(ctx.workdir, "seen")).read().strip()
    if not seen.startswith(os.path.join(tmpdir, "tritonc-nvcc.")):
        raise AssertionError("nvcc ran with TMPDIR=%r, not in tritonc's private folder" % seen)
    if code != -signal.SIGTERM or os.listdir(tmpdir):
        raise AssertionError("exit %d; left in $TMPDIR: %s" % (code, os.listdir(tmpdir)))


def test_file_names_never_reach_nvccs_shell(ctx):
    """nvcc runs its steps through `sh -c` with the file names inside double quotes, so an
    input named `x$(touch PWNED).tri` ran that command when its kernels were built (audit
    45A). nvcc now works in a private folder on `kernels.cu` and `kernels.so`; what it says
    about `kernels.cu` is shown with the name of the .cu written."""
    # As nvcc does: a step run by a shell, the source's name quoted in it.
    work, nvcc = fake_nvcc(ctx, 'for a; do cu=$a; done\nsh -c "test -f \\"$cu\\""\npwd > ran_in\n'
                           'echo "$cu(3): error: identifier \\"x\\" is undefined" >&2\n'
                           'exit 1\n')
    name = "x$(touch PWNED)`touch PWNED2`.tri"
    shutil.copy(os.path.join(REPO, "examples", "mnist_mlp.tri"), os.path.join(work, name))
    proc = subprocess.run([ctx.tritonc, "compile", name, "--target", "cuda", "--no-cache",
                           "--nvcc", nvcc], capture_output=True, text=True, cwd=work)
    ran = [n for n in ("PWNED", "PWNED2") if os.path.exists(os.path.join(work, n))]
    if ran:
        raise AssertionError("the file name ran commands: %s exist" % ran)
    want = 'note: nvcc: x$(touch PWNED)`touch PWNED2`_kernels.cu(3): error: identifier "x" is undefined'
    if proc.returncode != 3 or want not in proc.stderr.splitlines():
        raise AssertionError("exit %d: %s" % (proc.returncode, proc.stderr))
    # nvcc runs in the current directory: relative paths in NVCC_APPEND_FLAGS (-ccbin,
    # -I, --keep) mean what they meant (review 45D: a private working folder broke them).
    if sorted(os.listdir(work)) != sorted(["nvcc", name, "ran_in"]):
        raise AssertionError("files left: %s" % os.listdir(work))
    with open(os.path.join(work, "ran_in")) as f:
        if os.path.realpath(f.read().strip()) != os.path.realpath(work):
            raise AssertionError("nvcc ran in another folder")


def test_nvcc_without_a_host_compiler_is_no_nvcc(ctx):
    # nvcc cannot build anything without gcc and g++ on PATH: as without nvcc, the .py and
    # the .cu are written with a note saying why (it was exit 3 and nothing written, so
    # `PATH=/nowhere tritonc compile --target cuda` failed on a machine with CUDA).
    work = tempfile.mkdtemp(dir=ctx.workdir)
    bindir = os.path.join(work, "bin")
    os.makedirs(bindir)
    nvcc = os.path.join(bindir, "nvcc")
    with open(nvcc, "w") as f:
        f.write("#!/bin/sh\n: > %s/ran\nexit 1\n" % work)
    os.chmod(nvcc, 0o755)
    env = {k: v for k, v in os.environ.items()
           if k not in ("TRITONC_NVCC", "NVCC_CCBIN", "NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS")}
    env["PATH"] = bindir
    py = os.path.join(work, "m.py")
    proc = subprocess.run([ctx.tritonc, "compile", os.path.join(REPO, "examples", "mnist_mlp.tri"),
                           "-o", py, "--target", "cuda", "--no-cache"],
                          capture_output=True, text=True, env=env)
    if (proc.returncode != 0 or "[CudaNotCompiled]" not in proc.stderr
            or "has no host compiler ('gcc' is not on PATH" not in proc.stderr
            or os.path.exists(os.path.join(work, "ran"))):
        raise AssertionError("exit %d: %s" % (proc.returncode, proc.stderr))
    if not os.path.exists(py) or not os.path.exists(os.path.join(work, "mnist_mlp_kernels.cu")):
        raise AssertionError("expected m.py and mnist_mlp_kernels.cu: %s" % os.listdir(work))
    # NVCC_CCBIN or --compiler-bindir in NVCC_PREPEND_FLAGS names the host compiler, and an
    # nvcc named by --nvcc may be a wrapper that brings one: nvcc runs (and this one fails).
    for extra_env, flags in [({"NVCC_CCBIN": "/usr/bin/g++"}, []),
                             ({"NVCC_PREPEND_FLAGS": "--compiler-bindir=/usr/bin"}, []),
                             ({}, ["--nvcc", nvcc])]:
        if os.path.exists(os.path.join(work, "ran")):
            os.remove(os.path.join(work, "ran"))
        proc = subprocess.run([ctx.tritonc, "compile",
                               os.path.join(REPO, "examples", "mnist_mlp.tri"), "-o", py,
                               "--target", "cuda", "--no-cache"] + flags,
                              capture_output=True, text=True, env=dict(env, **extra_env))
        if proc.returncode != 3 or not os.path.exists(os.path.join(work, "ran")):
            raise AssertionError("with %s %s: exit %d: %s"
                                 % (extra_env, flags, proc.returncode, proc.stderr))


def test_nvcc_is_found_on_path(ctx):
    # Without --nvcc or $TRITONC_NVCC, the first executable `nvcc` in $PATH runs (an empty
    # PATH entry is the current directory, as for execvp); files called nvcc that cannot
    # run and directories called nvcc are passed over.
    work = tempfile.mkdtemp(dir=ctx.workdir)
    for name in ("plain", "dir", "fake", "later"):
        os.makedirs(os.path.join(work, name))
    open(os.path.join(work, "plain", "nvcc"), "w").write("#!/bin/sh\nexit 0\n")
    os.makedirs(os.path.join(work, "dir", "nvcc"))
    log = os.path.join(work, "ran")
    for name in ("fake", "later"):
        with open(os.path.join(work, name, "nvcc"), "w") as f:
            f.write("#!/bin/sh\necho %s >> %s\necho 'fake nvcc says no' >&2\nexit 1\n" % (name, log))
        os.chmod(os.path.join(work, name, "nvcc"), 0o755)
    env = {k: v for k, v in os.environ.items() if k != "TRITONC_NVCC"}
    source = os.path.join(REPO, "examples", "mnist_mlp.tri")
    for path, expected in [
            (["plain", "dir", "fake", "later"], "fake"),
            (["/nonexistent", "", "later"], "fake")]:  # "" = the current directory: fake/
        env["PATH"] = ":".join(p if p.startswith("/") or not p else os.path.join(work, p)
                               for p in path) + ":/usr/bin:/bin"
        if os.path.exists(log):
            os.remove(log)
        proc = subprocess.run([ctx.tritonc, "compile", source, "-o", os.path.join(work, "m.py"),
                               "--target", "cuda", "--no-cache"], capture_output=True, text=True,
                              env=env, cwd=os.path.join(work, "fake"))
        ran = open(log).read().split() if os.path.exists(log) else []
        if proc.returncode != 3 or "[NvccFailed]" not in proc.stderr or ran != [expected]:
            raise AssertionError("PATH=%s: exit %d, nvccs run %s: %s"
                                 % (env["PATH"], proc.returncode, ran, proc.stderr))


def test_unwritable_outputs_are_not_blamed_on_nvcc(ctx):
    # A missing output directory is CannotWriteFile whether or not nvcc runs; without
    # nvcc, no note says a .cu was written when the outputs could not be.
    source = os.path.join(REPO, "examples", "mnist_mlp.tri")
    outdir = tempfile.mkdtemp(dir=ctx.workdir)
    blocked = os.path.join(outdir, "blocked")
    os.makedirs(os.path.join(blocked, "mnist_mlp.py"))  # a directory where the module goes
    for nvcc, out in [("/bin/true", os.path.join(outdir, "missing", "m.py")),
                      ("/nonexistent/nvcc", os.path.join(outdir, "missing", "m.py")),
                      ("/nonexistent/nvcc", blocked + "/")]:
        proc = subprocess.run([ctx.tritonc, "compile", source, "-o", out, "--target", "cuda",
                               "--nvcc", nvcc, "--no-cache"], capture_output=True, text=True)
        if proc.returncode != 3 or "[CannotWriteFile]" not in proc.stderr or \
                "[NvccFailed]" in proc.stderr or "[CudaNotCompiled]" in proc.stderr:
            raise AssertionError("%s -o %s: %d: %s" % (nvcc, out, proc.returncode, proc.stderr))
    if sorted(os.listdir(blocked)) != ["mnist_mlp.py"] or \
            os.path.exists(os.path.join(outdir, "missing")):
        raise AssertionError("files were left: %s" % os.listdir(blocked))


class _OnGpu(torch.Tensor):
    """A CPU tensor that says it is on a GPU: the runtime's dispatch then asks for kernels."""
    @property
    def is_cuda(self):
        return True


_ACTS = r"(none|relu|gelu|silu|relu6)(_res)?"
_LINEAR_SYMBOL = re.compile(r"^tck_linear_f32_n(\d+)_k(\d+)_(nk|kn)_%s_v\d+$" % _ACTS)
_CONV_SYMBOL = re.compile(r"^tck_conv2d_f32_c(\d+)_o(\d+)_k(\d+)x(\d+)_s(\d+)x(\d+)_p(\d+)x(\d+)"
                          r"_d(\d+)x(\d+)_g(\d+)_%s_v\d+$" % _ACTS)
_EMULATED_ACTS = {"none": lambda t: t, "relu": torch.relu, "relu6": lambda t: t.clamp(0, 6),
                  "gelu": torch.nn.functional.gelu, "silu": torch.nn.functional.silu}


def _memory(ptr, count, dtype):
    """A tensor over ``count`` elements at address ``ptr`` (a ctypes pointer or None)."""
    if ptr is None or ptr.value is None:
        return None
    size = count * torch.empty((), dtype=dtype).element_size()
    return torch.frombuffer((ctypes.c_char * size).from_address(ptr.value), dtype=dtype,
                            count=count)


def _decode(codes, rows, cols):
    """Rows of 2-bit codes (TOOLCHAIN.md's format, read independently of tritonrt) as a
    float32 [rows, cols] matrix of -1/0/+1."""
    per_row = (cols + 3) // 4
    b = codes.reshape(rows, per_row).to(torch.int16)
    trits = torch.stack([(b >> shift) & 3 for shift in (0, 2, 4, 6)], dim=-1)
    if bool((trits == 3).any()):
        raise AssertionError("a launcher was handed the invalid code 0b11")
    return (trits.reshape(rows, per_row * 4)[:, :cols] - 1).to(torch.float32)


def emulated_launcher(symbol):
    """A CPU stand-in for the .cu launcher ``symbol`` (float32 only): it reads its arguments
    through the raw pointers the runtime passes, as the kernel would, and writes
    ``act(scale * (x . W) * chscale + bias)`` into ``y`` (a residual launcher, ``_res``,
    adds the residual it is given before the activation). So a dispatch test checks the
    pointers, sizes, layouts and epilogue the runtime hands over, not only that it called."""
    lin = _LINEAR_SYMBOL.match(symbol)
    conv = _CONV_SYMBOL.match(symbol)
    if lin:
        n, k, layout, act = int(lin.group(1)), int(lin.group(2)), lin.group(3), lin.group(4)

        def launch(x, w, scale, chscale, bias, *rest):
            residual, y, m, stream = rest if lin.group(5) else (None,) + rest
            xs = _memory(x, m * k, torch.float32).reshape(m, k)
            if layout == "nk":
                weight = _decode(_memory(w, n * ((k + 3) // 4), torch.uint8), n, k)
            else:
                weight = _decode(_memory(w, k * ((n + 3) // 4), torch.uint8), k, n).t()
            out = (xs.double() @ weight.double().t()) * scale
            res = _memory(residual, m * n, torch.float32)
            return _finish(out, chscale, bias, act, n, _memory(y, m * n, torch.float32),
                           None if res is None else res.reshape(m, n))
        return launch
    if conv:
        cin, cout, kh, kw, sh, sw, ph, pw, dh, dw, groups = (int(g) for g in conv.groups()[:11])
        act = conv.group(12)

        def launch(x, w, scale, chscale, bias, *rest):
            residual, y, batch, h, w_, stream = rest if conv.group(13) else (None,) + rest
            xs = _memory(x, batch * cin * h * w_, torch.float32).reshape(batch, cin, h, w_)
            per = cin // groups * kh * kw
            weight = _decode(_memory(w, cout * ((per + 3) // 4), torch.uint8), cout, per)
            weight = weight.reshape(cout, cin // groups, kh, kw)
            out = torch.nn.functional.conv2d(xs.double(), weight.double(), None, (sh, sw),
                                             (ph, pw), (dh, dw), groups) * scale
            res = _memory(residual, out.numel(), torch.float32)
            if res is not None:  # NCHW, as y
                res = res.reshape(out.shape).permute(0, 2, 3, 1).reshape(-1, cout)
            out = out.permute(0, 2, 3, 1)  # channels last, for the per-channel epilogue
            ys = _memory(y, out.numel(), torch.float32)
            result = torch.empty(out.shape, dtype=torch.float32)
            _finish(out.reshape(-1, cout), chscale, bias, act, cout, result.view(-1), res)
            ys.copy_(result.permute(0, 3, 1, 2).reshape(-1))
            return 0
        return launch
    raise AssertionError("no emulation for launcher %s" % symbol)


def _finish(out, chscale, bias, act, n, y, residual=None):
    """The launchers' epilogue on ``out`` [rows, n] (float64), written into ``y``; a residual
    ([rows, n]) is added before the activation."""
    cs = _memory(chscale, n, torch.float32)
    b = _memory(bias, n, torch.float32)
    if cs is not None:
        out = out * cs.double()
    if b is not None:
        out = out + b.double()
    if residual is not None:
        out = out + residual.double()
    y.copy_(_EMULATED_ACTS[act](out.to(torch.float32)).reshape(-1))
    return 0


def _randomize_float_state(model):
    """Nonzero biases, batch-norm statistics and affine parameters (models start with zero
    biases), so that a launcher's epilogue that drops or misplaces one shows."""
    with torch.no_grad():
        for m in model.modules():
            ternary = set(getattr(type(m), "_ternary_weights", ()) or ())
            for name, t in list(m.named_parameters(recurse=False)) + \
                    list(m.named_buffers(recurse=False)):
                if name in ternary or not t.is_floating_point():
                    continue
                if name == "running_var":
                    t.uniform_(0.5, 1.5)
                elif name != "weight" or not isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
                    t.add_(torch.randn_like(t) * 0.1)
                else:
                    t.uniform_(0.5, 1.5)


def dispatched_ternary_ops(py, cu, inputs, entry_kwargs=None):
    """(ternary weight reads, kernel launches, largest difference) of one eval forward of
    the packed module, on CPU, with every launcher the .cu exports answering as if the
    library were loaded: emulated (``emulated_launcher``), so the forward's output is
    compared with the same packed module's reference path; the difference is relative to
    the output's largest magnitude."""
    exported = set(re.findall(r"TCK_EXPORT int (tck_\w+_v0)\(", open(cu).read()))
    launched, reads = [], []
    saved = (cuda.find, torch.cuda.current_stream, cuda.linear, cuda.conv2d,
             tritonrt.fused.weight, tritonrt.layers.weight, tritonrt.weight, cuda._packed_stack)

    def find(symbol):
        if symbol not in exported:
            return None
        emulate = emulated_launcher(symbol)
        return lambda *args: launched.append(symbol) or emulate(*args)

    def on_gpu(f):
        return lambda *a, **k: (lambda y: None if y is None else y.as_subclass(_OnGpu))(f(*a, **k))

    def weight(module, name):
        reads.append(name)
        return saved[4](module, name)

    cuda.find = find
    cuda._tuned.clear()  # launchers picked for an earlier module
    torch.cuda.current_stream = lambda *a, **k: type("S", (), {"cuda_stream": 0})()
    cuda.linear, cuda.conv2d = on_gpu(saved[2]), on_gpu(saved[3])
    cuda._packed_stack = on_gpu(saved[7])
    tritonrt.fused.weight = tritonrt.layers.weight = tritonrt.weight = weight
    try:
        module = gen.load(py)
        torch.manual_seed(0)
        model = gen.entry(module)(**(entry_kwargs or {}))
        _randomize_float_state(model)
        model = tritonrt.pack(model)
        with torch.no_grad():
            want = model(*inputs)
            ops = len(reads)
            tritonrt.clear_cache(model)
            for m in model.modules():
                for name in list(getattr(m, "_tritonrt_shapes", {}) or {}):
                    m._buffers[name] = m._buffers[name].as_subclass(_OnGpu)
            got = model(*[t.as_subclass(_OnGpu) for t in inputs])
    finally:
        cuda._tuned.clear()
        (cuda.find, torch.cuda.current_stream, cuda.linear, cuda.conv2d,
         tritonrt.fused.weight, tritonrt.layers.weight, tritonrt.weight,
         cuda._packed_stack) = saved
    want = torch.as_tensor(want).as_subclass(torch.Tensor).double()
    got = torch.as_tensor(got).as_subclass(torch.Tensor).double()
    if got.shape != want.shape:
        raise AssertionError("the kernels gave shape %s, the reference path %s"
                             % (tuple(got.shape), tuple(want.shape)))
    diff = float((got - want).abs().max() / want.abs().max().clamp_min(1e-12)) \
        if want.numel() else 0.0
    return ops, len(launched), diff


def test_every_ternary_op_reaches_its_kernel(ctx):
    # TOOLCHAIN.md: the module uses the kernels for packed weights on CUDA. Tutorial-style
    # code (x @ w, conv2d(x, w), linear(x, w)) goes through tritonrt.fused_* with the CUDA
    # target at every level, not only where -O2 fused an epilogue. Simulated on CPU: tensors
    # claim to be on a GPU and the .cu's launchers answer.
    for name in ["tutorial_cnn", "transformer_block", "mnist_mlp"]:
        for level in ["-O0", "-O1", "-O2"]:
            py, cu, _ = compile_cuda(ctx, name, level, "--nvcc", "/nonexistent/nvcc")
            ops, launches, diff = dispatched_ternary_ops(py, cu, gen.example_input(name))
            if ops == 0 or launches != ops:
                raise AssertionError("%s %s: %d of %d ternary ops ran a kernel"
                                     % (name, level, launches, ops))
            if not diff <= 1e-5:
                raise AssertionError("%s %s: the kernels' output differs by %g"
                                     % (name, level, diff))


def compile_source_for_cuda(ctx, name, src, level):
    """Writes `src` to <name>.tri, compiles it for the CUDA target at `level` without nvcc
    and returns the module's and the .cu's paths."""
    path = os.path.join(ctx.workdir, name + ".tri")
    with open(path, "w") as f:
        f.write(src)
    ctx.count += 1
    outdir = os.path.join(ctx.workdir, "cuda%d" % ctx.count)
    os.makedirs(outdir)
    py = os.path.join(outdir, name + ".py")
    subprocess.run([ctx.tritonc, "compile", path, "-o", py, "--target", "cuda", level,
                    "--nvcc", "/nonexistent/nvcc"], capture_output=True, check=True)
    return py, py[:-3] + "_kernels.cu"


def expect_launches(ctx, name, src, inputs, expected):
    """For each level of `expected` ({level: launches}): one packed forward of `src`'s entry
    layer runs that many emulated launches and gives the reference path's output."""
    for level, want in expected.items():
        py, cu = compile_source_for_cuda(ctx, name, src, level)
        _, launches, diff = dispatched_ternary_ops(py, cu, inputs)
        if launches != want:
            raise AssertionError("%s %s: %d launches, expected %d" % (name, level, launches, want))
        if not diff <= 1e-5:
            raise AssertionError("%s %s: the kernels' output differs by %g" % (name, level, diff))


def test_other_spellings_reach_their_kernels(ctx):
    # `x @ w.T`, `x @ transpose(w)` (the linear layout) and `depthwise_conv2d` of a ternary
    # weight are the products and convolutions `linear(x, w)` and `conv2d(..., groups=C)`
    # are: from -O1 on they run the same kernels (at -O0, unoptimized, the reference path).
    src = """
layer M(tw: TernaryTensor<trit, [6, 8]>, uw: TernaryTensor<trit, [6, 8]>,
        dw: TernaryTensor<trit, [3, 1, 3, 3]>, x: Tensor<float32, [?, 8]>,
        img: Tensor<float32, [?, 3, 6, 6]>) -> Tensor<float32, [?, 6]> {
    let a = x @ tw.T
    let b = relu(x @ transpose(uw))
    let c = depthwise_conv2d(img, dw, padding=1)
    let d = silu(depthwise_conv2d(img, dw, stride=2))
    return a + b + sum(c) + sum(d)
}
"""
    inputs = (torch.randn(2, 8), torch.randn(2, 3, 6, 6))
    # two products, two convolutions (dw is read once, used twice)
    expect_launches(ctx, "spellings", src, inputs, {"-O1": 4, "-O2": 4, "-O3": 4})


def test_activations_after_ternary_linear_modules_run_in_the_kernel(ctx):
    # `gelu(fc1(x))` with a TernaryLinear sub-module (the BitNet/ViT MLP): from -O2 the
    # activation is the kernel's epilogue (tritonrt.linear_act and a `_gelu` launcher), not
    # a `_none` launch and a second pass over the output. -O1 keeps them apart.
    src = """
layer Mlp(d: int = 8, x: Tensor<float32, [?, 5, d]>) -> Tensor<float32, [?, 5, d]> {
    let fc1 = TernaryLinear(d, 4 * d)
    let fc2 = TernaryLinear(4 * d, d, bias=false)
    let gate = TernaryLinear(d, d)
    let h = gelu(fc1(x))
    return relu(fc2(h)) + silu(gate(x))
}
"""
    inputs = (torch.randn(3, 5, 8),)
    expect_launches(ctx, "linear_acts", src, inputs, {"-O1": 3, "-O2": 3, "-O3": 3})
    for level, fused in (("-O1", False), ("-O2", True)):
        py, cu = compile_source_for_cuda(ctx, "linear_acts", src, level)
        exported = set(re.findall(r"TCK_EXPORT int (tck_linear_f32_\w+)_v0\(", open(cu).read()))
        want = {"tck_linear_f32_n32_k8_nk_gelu", "tck_linear_f32_n8_k32_nk_relu",
                "tck_linear_f32_n8_k8_nk_silu"} if fused else {
            "tck_linear_f32_n32_k8_nk_none", "tck_linear_f32_n8_k32_nk_none",
            "tck_linear_f32_n8_k8_nk_none"}
        if exported != want:
            raise AssertionError("%s: launchers %s, expected %s" % (level, sorted(exported),
                                                                   sorted(want)))
        calls = open(py).read().count("tritonrt.linear_act(")
        if calls != (3 if fused else 0):
            raise AssertionError("%s: %d tritonrt.linear_act calls" % (level, calls))


def test_residuals_are_added_in_the_kernels_epilogue(ctx):
    # A ResNet block's `relu(bn2(conv2(out)) + x)`, a sum with a broadcast residual
    # (`conv4(y) + gamma`, gamma [c, 1, 1]) and a transformer MLP's `fc2(...) + x`: from -O2
    # each is one `_res` launcher (the kernel adds the residual before the activation; the
    # runtime expands a residual that broadcasts to the output), whose output equals the
    # reference path's. -O1 runs the plain launchers and adds the residual itself.
    src = """
layer Mlp(d: int, x: Tensor<float32, [?, d]>) -> Tensor<float32, [?, d]> {
    let fc1 = TernaryLinear(d, 2 * d)
    let fc2 = TernaryLinear(2 * d, d)
    return fc2(gelu(fc1(x))) + x
}

layer Block(c: int = 8, gamma: Tensor<float32, [c, 1, 1]> = ones([c, 1, 1]),
            x: Tensor<float32, [?, c, 6, 6]>) -> Tensor<float32, [?, c]> {
    let conv1 = TernaryConv2d(c, c, 3, padding=1)
    let bn1 = BatchNorm2d(c)
    let conv2 = TernaryConv2d(c, c, 3, padding=1)
    let bn2 = BatchNorm2d(c)
    let conv4 = TernaryConv2d(c, c, 1)
    let mlp = Mlp(c)
    let out = relu(bn1(conv1(x)))
    let y = relu(bn2(conv2(out)) + x)
    let g = conv4(y) + gamma * 0.5
    return mlp(mean(g, [2, 3]))
}
"""
    inputs = (torch.randn(3, 8, 6, 6),)
    expect_launches(ctx, "residuals", src, inputs, {"-O1": 5, "-O2": 5, "-O3": 5})
    for level, fused in (("-O1", False), ("-O2", True)):
        py, cu = compile_source_for_cuda(ctx, "residuals", src, level)
        exported = set(re.findall(r"TCK_EXPORT int (tck_\w+_f32_\w+)_v0\(", open(cu).read()))
        res = sorted(re.sub(r"^tck_(\w+?)_f32_.*_(\w+_res)$", r"\1 \2", s)
                     for s in exported if s.endswith("_res"))
        want = ["conv2d none_res", "conv2d relu_res", "linear none_res"] if fused else []
        if res != want:
            raise AssertionError("%s: residual launchers %s, expected %s: %s"
                                 % (level, res, want, sorted(exported)))


def test_product_spellings_reach_their_kernels(ctx):
    # `matmul(x, w)`, `transpose(w, 0, 1)` / `transpose(w, -1, -2)`, `permute(w, [1, 0])` and
    # (-O2 on) `x @ -w` are products of a 2-D ternary weight like `x @ w` / `x @ w.T`: each
    # runs its weight's kernel, and the emulated launchers give the reference path's output.
    src = """
layer M(a: TernaryTensor<trit, [6, 8]>, b: TernaryTensor<trit, [6, 8]>,
        c: TernaryTensor<trit, [6, 8]>, d: TernaryTensor<trit, [8, 6]>,
        g: TernaryTensor<trit, [8, 6]>, bias: Tensor<float32, [6]>,
        x: Tensor<float32, [?, 8]>) -> Tensor<float32, [?, 6]> {
    let p1 = matmul(x, transpose(a))
    let p2 = relu(x @ transpose(b, -1, -2) + bias)
    let p3 = matmul(x, permute(c, [1, 0]))
    let p4 = silu(x @ -d + bias)
    let p5 = matmul(x, g) * 0.5
    return p1 + p2 + p3 + p4 + p5
}
"""
    # -O1 leaves `-d` a negation (no kernel for it)
    expect_launches(ctx, "products", src, (torch.randn(3, 8),), {"-O1": 4, "-O2": 5, "-O3": 5})


def test_vector_and_stacked_weights_reach_their_kernels(ctx):
    # `x @ v` with a 1-D ternary v (one output feature) and `x @ st` with a stack of ternary
    # matrices (rank 3, packed by columns) run the linear kernels: one launch per matrix,
    # x broadcast over the stack. A stack whose matrices are not 16-byte aligned in the
    # packed codes (7 x 3: 6 bytes each) gets no kernel: the reference path.
    src = """
layer M(v: TernaryTensor<trit, [8]>, st: TernaryTensor<trit, [2, 8, 16]>,
        odd: TernaryTensor<trit, [3, 7, 3]>, bias: Tensor<float32, [16]>,
        x: Tensor<float32, [?, 8]>, xb: Tensor<float32, [2, ?, 8]>,
        xo: Tensor<float32, [3, ?, 7]>) -> Tensor<float32, [?]> {
    let a = x @ v
    let b = relu(xb @ st + bias)
    let c = x @ st
    let d = xo @ odd
    return a + sum(b, dim=2)[0] + sum(c, dim=2)[1] + sum(d, dim=2)[2]
}
"""
    inputs = (torch.randn(3, 8), torch.randn(2, 3, 8), torch.randn(3, 3, 7))
    for level in ["-O0", "-O2"]:
        _, cu = compile_source_for_cuda(ctx, "stacks", src, level)
        planned = set(launchers(open(cu).read()))
        if planned != {"tck_linear_%s_n1_k8_nk_none_v0" % t for t in ("f32", "f16", "bf16")} | \
                {"tck_linear_%s_n16_k8_nk_%s_v0" % (t, a) for t in ("f32", "f16", "bf16")
                 for a in ("none", "relu" if level == "-O2" else "none")}:
            raise AssertionError("%s: planned %s" % (level, sorted(planned)))
    # a: 1, b: 2, c: 2 (one per matrix), d: none
    expect_launches(ctx, "stacks", src, inputs, {"-O0": 5, "-O2": 5})


def test_stack_items_reach_their_kernels(ctx):
    # `x @ st[i]`, an item of a stack of ternary matrices (layers or experts in a loop), runs
    # the kernel on the item's packed codes (tritonrt.stack_item): a constant, a negative and
    # a loop index; an item of a rank-4 stack is a smaller stack (one launch per matrix). A
    # slice (`st[1:]`, `sq[:, 1]`) is no item (the final review found them read as `st[1]`).
    src = """
layer M(st: TernaryTensor<trit, [3, 8, 16]>, deep: TernaryTensor<trit, [2, 2, 8, 16]>,
        sq: TernaryTensor<trit, [8, 8, 16]>, bias: Tensor<float32, [16]>,
        x: Tensor<float32, [?, 8]>, xb: Tensor<float32, [2, ?, 8]>) -> Tensor<float32, [?, 16]> {
    let a = x @ st[1]
    let h = x @ st[0]
    for i in range(3) {
        h = h + relu(x @ st[i] + bias)
    }
    let d = xb @ deep[1]
    let e = matmul(x, st[-1])
    let f = x @ st[1:]
    let g = x @ sq[0] + x @ sq[:, 1]
    return a + h + sum(d, dim=0) + e + sum(f, dim=0) + g
}
"""
    # a, h: 1 each; the loop: 3; d: 2 (a stack of two); e: 1; sq[0]: 1. Slices (st[1:],
    # sq[:, 1]) are not items: the reference path, and the values must still agree.
    expect_launches(ctx, "items", src, (torch.randn(3, 8), torch.randn(2, 3, 8)),
                    {"-O0": 9, "-O1": 9, "-O2": 9})


def test_left_hand_weights_reach_their_kernels(ctx):
    # `w @ y` with a 2-D ternary w on the left (MLP-Mixer's token mixing): the kernel of w
    # runs on y transposed (tritonrt.left_matmul); `@` and `matmul`, y 2-D and batched.
    src = """
layer Mix(tok: TernaryTensor<trit, [6, 5]>, ch: TernaryTensor<trit, [8, 8]>,
          x: Tensor<float32, [?, 5, 8]>, y: Tensor<float32, [5, ?]>) -> Tensor<float32, [?, 6, 8]> {
    let t = tok @ x
    let u = matmul(tok, x)
    let v = tok @ y
    return t + u + relu(t @ ch) + sum(v)
}
"""
    # -O2: CSE makes t and u one product
    expect_launches(ctx, "mix", src, (torch.randn(2, 5, 8), torch.randn(5, 3)),
                    {"-O0": 4, "-O2": 3})


def find_nvcc():
    return shutil.which("nvcc") or (
        "/usr/local/cuda/bin/nvcc" if os.access("/usr/local/cuda/bin/nvcc", os.X_OK) else None)


def make_nvcc_test(name):
    def test(ctx):
        nvcc = find_nvcc()
        if nvcc is None:
            raise gen.Skip("nvcc is not installed")
        py, cu, _ = compile_cuda(ctx, name, "-O2", "--nvcc", nvcc, "--cuda-arch=80",
                                 "--cuda-dtypes=f16")
        so = cu[:-3] + ".so"
        if not os.path.exists(so):
            raise AssertionError("%s: no %s" % (name, so))
        planned = set(launchers(open(cu).read())) | {"tck_abi_version"}
        nm = subprocess.run(["nm", "-D", "--defined-only", so], capture_output=True, text=True,
                            check=True).stdout
        exported = {line.split()[-1] for line in nm.splitlines() if " T " in line}
        exported = {s for s in exported if s.startswith("tck_")}
        if exported != planned:
            raise AssertionError("%s: exported %s, planned %s"
                                 % (name, sorted(exported ^ planned)[:5], len(planned)))
        lib = cuda._load(so)  # loads without a GPU; checks the ABI version
        if lib is None:
            raise AssertionError("%s: the runtime refused %s" % (name, so))
        cuda.use_kernels(py, os.path.basename(so))
        for symbol in sorted(planned - {"tck_abi_version"})[:20]:
            if cuda.find(symbol) is None:
                raise AssertionError("%s: the runtime cannot find %s" % (name, symbol))
    test.__name__ = "test_nvcc_builds_" + name
    return test


def test_models_without_ternary_kernels_build_a_small_library(ctx):
    """A model without ternary matmuls or convolutions gets a `.cu` without the kernel
    templates (nvcc compiled them for nothing: ~30 s on this project's 2-core machines for a
    library whose only export is `tck_abi_version`); the library is still built and loads."""
    nvcc = find_nvcc()
    if nvcc is None:
        raise gen.Skip("nvcc is not installed")
    ctx.count += 1
    outdir = os.path.join(ctx.workdir, "float%d" % ctx.count)
    os.makedirs(outdir)
    with open(os.path.join(outdir, "dense.tri"), "w") as f:
        f.write("layer Dense(x: Tensor<float32, [?, 8]>) -> Tensor<float32, [?, 4]> {\n"
                "    let fc = Linear(8, 4)\n"
                "    return relu(fc(x))\n"
                "}\n")
    proc = subprocess.run([ctx.tritonc, "compile", "dense.tri", "-O2", "--target", "cuda",
                           "--nvcc", nvcc, "--no-cache"], capture_output=True, text=True,
                          cwd=outdir)
    if proc.returncode != 0:
        raise AssertionError("compile failed: %s" % proc.stderr)
    cu = open(os.path.join(outdir, "dense_kernels.cu")).read()
    if "tck_abi_version" not in cu or "ternary_linear" in cu or launchers(cu):
        raise AssertionError("the .cu of a model without ternary kernels: %s" % cu[:600])
    so = os.path.join(outdir, "dense_kernels.so")
    if cuda._load(so) is None:
        raise AssertionError("the runtime refused %s" % so)


def test_cuda_libraries_are_reproducible(ctx):
    """The same source built twice (in another directory, by another process) gives the same
    `<stem>_kernels.so`, byte for byte: its local symbols named nvcc's temporary files and
    tritonc's (`tmpxft_<pid>_...`, `<stem>_kernels.cu.tmp.<pid>`), and two builds differed."""
    nvcc = find_nvcc()
    if nvcc is None:
        raise gen.Skip("nvcc is not installed")
    src = """layer Tiny(w: TernaryTensor<trit, [32, 16]>, x: Tensor<float32, [?, 32]>)
        -> Tensor<float32, [?, 16]> {
    return relu(x @ w)
}
"""
    libraries = []
    for _ in range(2):
        ctx.count += 1
        outdir = os.path.join(ctx.workdir, "repro%d" % ctx.count)
        os.makedirs(outdir)
        with open(os.path.join(outdir, "tiny.tri"), "w") as f:
            f.write(src)
        proc = subprocess.run([ctx.tritonc, "compile", "tiny.tri", "-O2", "--target", "all",
                               "--nvcc", nvcc, "--cuda-arch=80", "--cuda-dtypes=f32",
                               "--no-cache"], capture_output=True, text=True, cwd=outdir)
        if proc.returncode != 0:
            raise AssertionError("tritonc failed (%d): %s" % (proc.returncode, proc.stderr))
        with open(os.path.join(outdir, "tiny_kernels.so"), "rb") as f:
            libraries.append(f.read())
    # The `.cu` says it "can be rebuilt anywhere with the command in its header": that
    # command (which lacked -Xlinker --strip-all) builds the same library (audit 46B).
    hand = os.path.join(ctx.workdir, "repro-hand")
    os.makedirs(hand)
    shutil.copy(os.path.join(outdir, "tiny_kernels.cu"), hand)
    with open(os.path.join(hand, "tiny_kernels.cu")) as f:
        build = [line for line in f.read().splitlines() if line.startswith("// Build: ")]
    if len(build) != 1 or not build[0].startswith("// Build: nvcc "):
        raise AssertionError("no build command in the header: %r" % build)
    argv = [nvcc] + shlex.split(build[0][len("// Build: nvcc "):])
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=hand)
    if proc.returncode != 0:
        raise AssertionError("the header's command failed: %s" % proc.stderr)
    with open(os.path.join(hand, "tiny_kernels.so"), "rb") as f:
        libraries.append(f.read())
    for other in libraries[1:]:
        if libraries[0] != other:
            differ = sum(a != b for a, b in zip(libraries[0], other)) + abs(
                len(libraries[0]) - len(other))
            raise AssertionError("two builds of one source differ in %d bytes" % differ)


def test_the_headers_build_command_is_the_one_run(ctx):
    """The `.cu`'s header shows the command that builds it; tritonc ran nvcc with flags the
    header left out (-Xlinker --strip-all -w), so a hand build gave another library (audit
    46B). The flags nvcc receives, but for the names of the files, are the header's."""
    work, nvcc = fake_nvcc(ctx, 'for a; do printf "%s\\n" "$a"; done > "$(dirname "$0")/argv"\n'
                           'exit 1\n')
    shutil.copy(os.path.join(REPO, "examples", "mnist_mlp.tri"), os.path.join(work, "m.tri"))
    for archs in ([], ["--cuda-arch=86"]):
        proc = subprocess.run([ctx.tritonc, "compile", "m.tri", "--target", "cuda", "--no-cache",
                               "--nvcc", nvcc, "--stop-after=emit", "--dump-code"] + archs,
                              capture_output=True, text=True, cwd=work)
        subprocess.run([ctx.tritonc, "compile", "m.tri", "--target", "cuda", "--no-cache",
                        "--nvcc", nvcc] + archs, capture_output=True, text=True, cwd=work)
        with open(os.path.join(work, "argv")) as f:
            ran = f.read().splitlines()
        build = [line for line in proc.stdout.splitlines() if line.startswith("// Build: nvcc ")]
        if len(build) != 1:
            raise AssertionError("no build command in the dump: %s" % proc.stdout[:2000])
        shown = shlex.split(build[0][len("// Build: nvcc "):])
        # nvcc FLAGS... -o OUT [-x cu] SOURCE: compare all but the files.
        flags_ran = ran[:ran.index("-o")]
        flags_shown = shown[:shown.index("-o")]
        if flags_ran != flags_shown or "--strip-all" not in flags_shown:
            raise AssertionError("nvcc ran with %s, the header shows %s" % (flags_ran, flags_shown))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tritonc", required=True)
    parser.add_argument("-k", default="")
    parser.add_argument("--nvcc-models", default="mnist_mlp,resnet18",
                        help="examples whose .cu is compiled with nvcc (slow: ~1 min each)")
    args = parser.parse_args()
    tests = [make_coverage_test(n) for n in gen.EXAMPLES]
    tests += [test_functional_convolutions_get_launchers,
              test_products_past_the_kernels_limits_get_no_launcher,
              test_non_square_convolutions_get_launchers,
              test_dilated_convolutions_get_launchers,
              test_extreme_hyperparameters_do_not_crash_the_planner,
              test_cuda_module_runs_reference_path_on_cpu,
              test_no_nvcc_says_so_and_writes_the_source, test_failed_nvcc_writes_nothing,
              test_unwritable_outputs_are_not_blamed_on_nvcc, test_nvcc_is_found_on_path,
              test_every_ternary_op_reaches_its_kernel,
              test_other_spellings_reach_their_kernels,
              test_product_spellings_reach_their_kernels,
              test_activations_after_ternary_linear_modules_run_in_the_kernel,
              test_residuals_are_added_in_the_kernels_epilogue,
              test_vector_and_stacked_weights_reach_their_kernels,
              test_stack_items_reach_their_kernels,
              test_left_hand_weights_reach_their_kernels,
              test_failed_nvcc_output_is_shown_line_by_line,
              test_file_names_never_reach_nvccs_shell,
              test_killed_nvcc_leaves_no_temporary_files,
              test_nvcc_without_a_host_compiler_is_no_nvcc,
              test_the_headers_build_command_is_the_one_run,
              test_cuda_libraries_are_reproducible,
              test_models_without_ternary_kernels_build_a_small_library]
    tests += [make_nvcc_test(n) for n in args.nvcc_models.split(",") if n]
    workdir = tempfile.mkdtemp(prefix="tritonc-cuda-")
    ctx = gen.Context(os.path.abspath(args.tritonc), workdir)
    passed = failed = 0
    for test in tests:
        if args.k and args.k not in test.__name__:
            continue
        try:
            test(ctx)
            print("PASS", test.__name__)
            passed += 1
        except gen.Skip as e:
            print("SKIP", test.__name__, "-", e)
        except Exception:  # noqa: BLE001  (report every failure, keep going)
            print("FAIL", test.__name__)
            traceback.print_exc()
            failed += 1
        sys.stdout.flush()
    shutil.rmtree(workdir, ignore_errors=True)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Generated PyTorch modules (-O0, -O2) against hand-written PyTorch, CPU, eval mode.

    PYTHONPATH=runtime /usr/bin/python3 bench/pytorch_vs_handwritten.py [--repeat 30]
        [--batch 32] [--models mnist_mlp,resnet18,...] [--onednn] [--baseline TRITONC]

For each model and batch size: the median forward time of the hand-written reference and of
the generated modules (same weights, loaded by state_dict key), and their ratios. With
``--onednn``, a fourth column: -O2 with ``tritonrt.cpu.set_kernels("auto")`` (oneDNN for the
ternary layers' products where torch's BLAS is the generic one), interleaved with the others.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "runtime"))
sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))

import torch  # noqa: E402

import test_generated as e2e  # noqa: E402  (the hand-written references live there)


class RefMnist(torch.nn.Module):
    def __init__(self, state):
        super().__init__()
        for k, v in state.items():
            setattr(self, k, torch.nn.Parameter(v.clone()))

    def forward(self, x):
        q = e2e.absmean
        h = x.flatten(1)
        h = torch.relu(h @ q(self.w1) + self.b1)
        h = torch.relu(h @ q(self.w2) + self.b2)
        return h @ q(self.w3) + self.b3


def median_ms(fn, x, repeat):
    with torch.no_grad():
        for _ in range(3):
            fn(x)
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            fn(x)
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def _act_quant_int8(x):
    scale = 127.0 / x.abs().amax(dim=-1, keepdim=True).clamp(min=1e-5)
    return (x * scale).round().clamp(-128, 127) / scale


class RefBitLinear(torch.nn.Module):
    """BitNet b1.58's BitLinear as written by hand: LayerNorm, per-token int8 activations,
    the absmean ternary weight quantized at every call (a QAT model in eval)."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.empty(n_out, n_in))
        self.norm = torch.nn.LayerNorm(n_in)

    def forward(self, x):
        return torch.nn.functional.linear(_act_quant_int8(self.norm(x)), e2e.absmean(self.weight))


class RefSwiGLU(torch.nn.Module):
    def __init__(self, d, f):
        super().__init__()
        self.gate_proj, self.up_proj = RefBitLinear(d, f), RefBitLinear(d, f)
        self.down_proj = RefBitLinear(f, d)

    def forward(self, x):
        return x + self.down_proj(torch.nn.functional.silu(self.gate_proj(x)) * self.up_proj(x))


class RefBitNetFFN(torch.nn.Module):
    """examples/bitnet_mlp.tri's entry (gated, d_model 512, d_ff 1376)."""

    def __init__(self, d_model=512, d_ff=1376):
        super().__init__()
        self.swiglu = RefSwiGLU(d_model, d_ff)

    def forward(self, x):
        return self.swiglu(x)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--batch", type=int, default=32, help="the larger batch size")
    parser.add_argument("--models", default="mnist_mlp,resnet18,resnet34,resnet50,resnet101,"
                        "resnet152,vgg16,mobilenet_v2,efficientnet_b0,densenet121,vit_base,bitnet_mlp",
                        help="comma-separated examples to time")
    parser.add_argument("--onednn", action="store_true",
                        help="also time -O2 with tritonrt.cpu.set_kernels('auto')")
    parser.add_argument("--tritonc", default=os.path.join(REPO, "build", "tools", "tritonc", "tritonc"))
    parser.add_argument("--baseline", metavar="TRITONC",
                        help="also time -O2 as another tritonc compiles it (an earlier build: a "
                        "before/after comparison in one run, with this runtime)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    workdir = tempfile.mkdtemp()

    def generated(name, level, tritonc=None):
        out = os.path.join(workdir, "%s%s%s.py" % (name, level.replace("-", "_"),
                                                    "_baseline" if tritonc else ""))
        subprocess.run([tritonc or args.tritonc, "compile",
                        os.path.join(REPO, "examples", name + ".tri"), level, "-o", out,
                        "--no-cache"], check=True)
        return e2e.entry(e2e.load(out))

    print("torch %s, 1 thread, median of %d runs" % (torch.__version__, args.repeat))
    import tritonrt  # noqa: E402
    header = "%-16s %5s %10s %10s %10s %8s %8s" % ("model", "batch", "hand ms", "-O0 ms",
                                                  "-O2 ms", "-O0/hand", "-O2/hand")
    if args.onednn:
        header += " %12s %12s" % ("-O2 onednn", "onednn/hand")
    if args.baseline:
        header += " %12s %12s" % ("baseline ms", "-O2/baseline")
    print(header)
    references = {"resnet18": e2e.RefResNet18, "resnet34": e2e.RefResNet34,
                  "resnet50": e2e.RefResNet50, "resnet101": e2e.RefResNet101,
                  "resnet152": e2e.RefResNet152, "vgg16": e2e.RefVGG16,
                  "mobilenet_v2": e2e.RefMobileNetV2, "efficientnet_b0": e2e.RefEfficientNetB0,
                  "densenet121": e2e.RefDenseNet121, "vit_base": e2e.RefViTBase,
                  "bitnet_mlp": RefBitNetFFN}
    cases = [("mnist_mlp", (1, 1, 28, 28)), ("mnist_mlp", (32, 1, 28, 28)),
             ("bitnet_mlp", (1, 16, 512)), ("bitnet_mlp", (args.batch, 16, 512))]
    for name in args.models.split(","):
        if name in references and name != "bitnet_mlp":
            image = tuple(e2e.example_input(name)[0].shape[1:])
            cases += [(name, (1,) + image), (name, (args.batch,) + image)]
    for name, shape in cases:
        if name not in args.models.split(","):
            continue
        kwargs = e2e.example_kwargs(name)
        m0 = generated(name, "-O0")(**kwargs)
        if name == "mnist_mlp":
            ref = RefMnist(m0.state_dict())
        else:
            ref = references[name](**kwargs)
            ref.load_state_dict(e2e.random_state(ref.state_dict(), 0))
            m0.load_state_dict(ref.state_dict())
        m2 = generated(name, "-O2")(**kwargs)
        m2.load_state_dict(m0.state_dict())
        mb = None
        if args.baseline:
            mb = generated(name, "-O2", args.baseline)(**kwargs)
            mb.load_state_dict(m0.state_dict())
        for m in (ref, m0, m2, mb):
            if m is not None:
                m.eval()
        x = torch.randn(*shape)
        # Interleave the three so that machine noise hits them alike.
        t_ref, t0, t2, t_dnn, t_base = [], [], [], [], []
        for _ in range(5):
            t_ref.append(median_ms(ref, x, args.repeat // 5 + 1))
            t0.append(median_ms(m0, x, args.repeat // 5 + 1))
            t2.append(median_ms(m2, x, args.repeat // 5 + 1))
            if args.onednn:
                previous = tritonrt.cpu.set_kernels("auto")
                t_dnn.append(median_ms(m2, x, args.repeat // 5 + 1))
                tritonrt.cpu.set_kernels(previous)
            if mb is not None:
                t_base.append(median_ms(mb, x, args.repeat // 5 + 1))
        h, a, b = statistics.median(t_ref), statistics.median(t0), statistics.median(t2)
        line = "%-16s %5d %10.3f %10.3f %10.3f %8.3f %8.3f" % (name, shape[0], h, a, b, a / h,
                                                               b / h)
        if args.onednn:
            d = statistics.median(t_dnn)
            line += " %12.3f %12.3f" % (d, d / h)
        if mb is not None:
            base = statistics.median(t_base)
            line += " %12.3f %12.3f" % (base, b / base)
        print(line, flush=True)


if __name__ == "__main__":
    main()

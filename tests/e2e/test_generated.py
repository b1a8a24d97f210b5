#!/usr/bin/env python3
"""End-to-end tests of the generated PyTorch modules.

Compiles every example model (and a few focused programs) with the real
`tritonc`, imports the result and checks what a user relies on:

* every optimization level gives the same outputs for the same weights
  (the -O0 module's state_dict loads into the -O2 one: same keys);
* the MNIST model equals a hand-written PyTorch model with those weights;
* state_dict keys read like the source;
* training works: a backward pass reaches every latent weight;
* tritonrt.pack() keeps eval outputs identical and shrinks ternary weights;
* the generated file has no line over 100 columns and only used imports.

Usage: test_generated.py --tritonc build/tools/tritonc/tritonc
Prints `N passed, N failed` and exits non-zero on any failure.
"""

import argparse
import contextlib
import copy
import importlib.util
import io
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "runtime"))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import tritonrt  # noqa: E402

LEVELS = ["-O0", "-O1", "-O2", "-O3", "-Os"]


class Skip(Exception):
    """A test that cannot run here (reported as SKIP, counted neither way)."""


def example_input(name):
    g = torch.Generator().manual_seed(7)
    if name == "mnist_mlp":
        return (torch.randn(4, 1, 28, 28, generator=g),)
    if name in ("cnn_cifar", "tutorial_cnn"):
        return (torch.rand(2, 3, 32, 32, generator=g),)
    if name == "resnet_block":
        return (torch.rand(2, 3, 32, 32, generator=g),)
    if name == "bitnet_mlp":
        return (torch.randn(2, 5, 512, generator=g),)
    if name in ("resnet18", "resnet34", "resnet50", "resnet101", "resnet152", "mobilenet_v2",
                "efficientnet_b0", "densenet121"):
        return (torch.rand(2, 3, 64, 64, generator=g),)
    if name == "vgg16":
        return (torch.rand(2, 3, 32, 32, generator=g),)
    if name == "vit_base":
        return (torch.rand(2, 3, 64, 64, generator=g),)
    if name == "transformer_block":
        return (torch.randint(0, 1000, (2, 7), generator=g),)
    raise KeyError(name)


def example_kwargs(name):
    """Constructor arguments for the tests: VGG-16's 4096-wide classifier is made small and
    ViT-Base (full width and depth) sees 64x64 images, 16 patches of 16x16."""
    if name == "vgg16":
        return {"num_classes": 10, "hidden": 256}
    if name == "vit_base":
        return {"image_size": 64, "num_classes": 10}
    return {}


EXAMPLES = ["mnist_mlp", "tutorial_cnn", "cnn_cifar", "resnet_block", "resnet18", "resnet34", "resnet50",
            "resnet101", "resnet152", "mobilenet_v2", "efficientnet_b0", "densenet121", "vgg16",
            "vit_base", "bitnet_mlp", "transformer_block"]


class Context:
    def __init__(self, tritonc, workdir):
        self.tritonc = tritonc
        self.workdir = workdir
        self.count = 0

    def compile(self, source_path, *flags):
        self.count += 1
        out = os.path.join(self.workdir, "m%d.py" % self.count)
        proc = subprocess.run([self.tritonc, "compile", source_path, "-o", out] + list(flags),
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise AssertionError("tritonc failed (%d): %s" % (proc.returncode, proc.stderr))
        return out

    def compile_text(self, text, *flags):
        self.count += 1
        src = os.path.join(self.workdir, "src%d.tri" % self.count)
        with open(src, "w") as f:
            f.write(text)
        return self.compile(src, *flags)


def load(path):
    spec = importlib.util.spec_from_file_location("gen_%d" % abs(hash(path)), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def entry(module):
    return getattr(module, module.ENTRY)


def check_close(a, b, what, atol=1e-5, rtol=1e-5):
    if a.shape != b.shape:
        raise AssertionError("%s: shapes differ: %s vs %s" % (what, tuple(a.shape), tuple(b.shape)))
    if not torch.allclose(a, b, atol=atol, rtol=rtol):
        diff = (a - b).abs().max().item()
        raise AssertionError("%s: outputs differ (max abs diff %g)" % (what, diff))


def expect_rejected(ctx, name, text, message):
    """`tritonc check` of `text` (written to `name` in the work directory) exits 1 with
    `message` in its diagnostics."""
    path = os.path.join(ctx.workdir, name)
    with open(path, "w") as f:
        f.write(text)
    proc = subprocess.run([ctx.tritonc, "check", path], capture_output=True, text=True)
    if proc.returncode != 1 or message not in proc.stderr:
        raise AssertionError("%s: exit %d, %s" % (name, proc.returncode, proc.stderr))


# ---- tests --------------------------------------------------------------------------------

def make_level_test(name):
    def test(ctx):
        path = os.path.join(REPO, "examples", name + ".tri")
        torch.manual_seed(0)
        reference_model = entry(load(ctx.compile(path, "-O0")))(**example_kwargs(name))
        reference_model.eval()
        inputs = example_input(name)
        with torch.no_grad():
            expected = reference_model(*inputs)
        state = reference_model.state_dict()
        for level in LEVELS[1:]:
            model = entry(load(ctx.compile(path, level)))(**example_kwargs(name))
            model.load_state_dict(state)  # strict: same keys and shapes at every level
            model.eval()
            with torch.no_grad():
                got = model(*inputs)
            check_close(got, expected, "%s %s vs -O0" % (name, level), atol=1e-4, rtol=1e-4)
    test.__name__ = "test_levels_agree_" + name
    return test


def make_train_test(name):
    def test(ctx):
        path = os.path.join(REPO, "examples", name + ".tri")
        torch.manual_seed(1)
        model = entry(load(ctx.compile(path, "-O2")))(**example_kwargs(name))
        model.train()
        out = model(*example_input(name))
        loss = out.float().pow(2).mean()
        loss.backward()
        ternary = []
        for mod_name, mod in model.named_modules():
            for w in getattr(mod, "_ternary_weights", ()):
                ternary.append(((mod_name + "." if mod_name else "") + w, getattr(mod, w)))
        params = [p for p in model.parameters() if p.requires_grad]
        if not any(p.grad is not None and p.grad.abs().sum() > 0 for p in params):
            raise AssertionError("%s: no parameter received a gradient" % name)
        for key, p in ternary:
            if p.grad is None:
                raise AssertionError("%s: no gradient reached the latent weight %s" % (name, key))
    test.__name__ = "test_trains_" + name
    return test


def make_pack_test(name):
    def test(ctx):
        path = os.path.join(REPO, "examples", name + ".tri")
        torch.manual_seed(2)
        model = entry(load(ctx.compile(path, "-O2")))(**example_kwargs(name))
        model.eval()
        inputs = example_input(name)
        with torch.no_grad():
            before = model(*inputs)
        ternary_keys = []
        for mod_name, mod in model.named_modules():
            for w in getattr(mod, "_ternary_weights", ()):
                ternary_keys.append((mod_name + "." if mod_name else "") + w)

        def ternary_bytes():
            sd = model.state_dict()
            return sum(sd[k].numel() * sd[k].element_size() for k in ternary_keys)

        size_before = ternary_bytes()
        tritonrt.pack(model)
        with torch.no_grad():
            after = model(*inputs)
        if not torch.equal(before, after):
            raise AssertionError("%s: packed outputs differ from unpacked eval outputs" % name)
        size_after = ternary_bytes()
        # 2 bits instead of 32 per weight: about 16x (rows are padded to 4).
        if ternary_keys and size_after * 12 > size_before:
            raise AssertionError("%s: packing shrank the state_dict only %d -> %d bytes"
                                 % (name, size_before, size_after))
    test.__name__ = "test_pack_" + name
    return test


def make_format_test(name):
    def test(ctx):
        path = os.path.join(REPO, "examples", name + ".tri")
        for level in ("-O0", "-O2"):
            text = open(ctx.compile(path, level)).read()
            for number, line in enumerate(text.splitlines(), 1):
                if len(line) > 100:
                    raise AssertionError("%s %s line %d has %d columns" % (name, level, number, len(line)))
            body = "\n".join(l for l in text.splitlines() if not l.startswith("import"))
            for module, prefix in (("torch.nn.functional as F", "F."), ("torch.nn as nn", "nn."),
                                   ("tritonrt", "tritonrt."), ("math", "math.")):
                imported = ("import " + module) in text
                used = prefix in body
                if imported and not used:
                    raise AssertionError("%s %s: unused import %s" % (name, level, module))
                if used and not imported:
                    raise AssertionError("%s %s: %s used but not imported" % (name, level, prefix))
            compile(text, path, "exec")
    test.__name__ = "test_format_" + name
    return test


def test_mnist_matches_handwritten(ctx):
    """The generated MNIST model equals hand-written PyTorch with the same weights."""
    path = os.path.join(REPO, "examples", "mnist_mlp.tri")
    torch.manual_seed(3)
    model = entry(load(ctx.compile(path, "-O2")))()
    model.eval()
    sd = model.state_dict()
    if sorted(sd) != ["b1", "b2", "b3", "w1", "w2", "w3"]:
        raise AssertionError("unexpected state_dict keys %s" % sorted(sd))

    def q(w):  # absmean ternary quantization, written out
        s = w.abs().mean().clamp(min=1e-5)
        return (w / s).round().clamp(-1, 1) * s

    x = example_input("mnist_mlp")[0]
    h = x.flatten(1)
    h = F.relu(h @ q(sd["w1"]) + sd["b1"])
    h = F.relu(h @ q(sd["w2"]) + sd["b2"])
    expected = h @ q(sd["w3"]) + sd["b3"]
    with torch.no_grad():
        got = model(x)
    check_close(got, expected, "mnist -O2 vs hand-written")


TORCH_CTOR_ARGS = """
layer Net(x: Tensor<float32, [?, 3, 17, 17]>, ids: Tensor<int64, [?, 5]>) -> Tensor<float32, [?, 10]> {
    let conv = Conv2d(3, 8, 3, padding=2, dilation=2, bias=false, padding_mode="reflect")
    let bn = BatchNorm2d(8, affine=false, track_running_stats=false)
    let pool = MaxPool2d(2, ceil_mode=true)
    let apool = AvgPool2d(3, stride=2, ceil_mode=true, count_include_pad=false, divisor_override=4)
    let tc = TernaryConv2d(in_channels=8, out_channels=8, kernel_size=3, padding=1)
    let ln = LayerNorm(10, elementwise_affine=false)
    let drop = Dropout(0.1, inplace=true)
    let emb = Embedding(20, 4, padding_idx=0, max_norm=1.0)
    let fc = Linear(8 * 4 * 4 + 20, 10)
    let h: Tensor<float32, [?, 8, 4, 4]> = apool(tc(pool(relu(bn(conv(x))))))
    let e = reshape(emb(ids), [-1, 20])
    return drop(ln(fc(concat([reshape(h, [-1, 8 * 4 * 4]), e], dim=1))))
}
"""


def test_builtin_layers_take_torch_constructor_arguments(ctx):
    """LANGUAGE.md §4: built-in layers take their torch.nn counterparts' constructor
    arguments (dilation, padding_mode, affine, track_running_stats, ceil_mode, ...), with
    the shapes they imply and the same state_dict keys as torch.nn."""

    class Ref(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=2, dilation=2, bias=False,
                                  padding_mode="reflect")
            self.bn = nn.BatchNorm2d(8, affine=False, track_running_stats=False)
            self.pool = nn.MaxPool2d(2, ceil_mode=True)
            self.apool = nn.AvgPool2d(3, stride=2, ceil_mode=True, count_include_pad=False,
                                      divisor_override=4)
            self.tc = tritonrt.TernaryConv2d(8, 8, 3, padding=1)
            self.ln = nn.LayerNorm(10, elementwise_affine=False)
            self.drop = nn.Dropout(0.1, inplace=True)
            self.emb = nn.Embedding(20, 4, padding_idx=0, max_norm=1.0)
            self.fc = nn.Linear(148, 10)

        def forward(self, x, ids):
            h = self.apool(self.tc(self.pool(F.relu(self.bn(self.conv(x))))))
            e = self.emb(ids).reshape(-1, 20)
            return self.drop(self.ln(self.fc(torch.cat([h.reshape(-1, 128), e], 1))))

    torch.manual_seed(6)
    ref = Ref().eval()
    x = torch.randn(2, 3, 17, 17)
    ids = torch.randint(0, 20, (2, 5))
    with torch.no_grad():
        expected = ref(x, ids)
    for level in LEVELS:
        model = entry(load(ctx.compile_text(TORCH_CTOR_ARGS, level)))().eval()
        if sorted(model.state_dict()) != sorted(ref.state_dict()):
            raise AssertionError("%s: keys %s, torch.nn has %s"
                                 % (level, sorted(model.state_dict()), sorted(ref.state_dict())))
        model.load_state_dict(ref.state_dict())
        with torch.no_grad():
            got = model(x, ids)
        check_close(got, expected, "torch constructor arguments %s" % level)


def test_assert_on_a_bool_tensor_holds_when_every_element_does(ctx):
    src = """
fn positive(x: Tensor<float32, [?]>) -> Tensor<float32, [?]> {
    assert(x > 0.0, "all elements must be positive")
    return x
}
"""
    for level in LEVELS:
        m = load(ctx.compile_text(src, level))
        got = m.positive(torch.tensor([1.0, 2.0]))
        if not torch.equal(got, torch.tensor([1.0, 2.0])):
            raise AssertionError("%s: positive() returned %s" % (level, got))
        try:
            m.positive(torch.tensor([1.0, -2.0]))
        except AssertionError as e:
            if "all elements must be positive" not in str(e):
                raise AssertionError("%s: the assertion says %r" % (level, str(e)))
        else:
            raise AssertionError("%s: a negative element passed the assert" % level)


def test_tutorial_cnn_matches_handwritten(ctx):
    """The tutorial-style CNN (functional ternary convolutions, fused at -O2 into
    fused_conv2d) equals hand-written PyTorch with the same weights, at every level."""
    path = os.path.join(REPO, "examples", "tutorial_cnn.tri")
    x = example_input("tutorial_cnn")[0]
    for level in LEVELS:
        torch.manual_seed(5)
        model = entry(load(ctx.compile(path, level)))()
        model.eval()
        sd = {k: v.detach() for k, v in model.state_dict().items()}
        if sorted(sd) != ["b2", "c1", "c2", "c3", "c4", "fc", "fc_b"]:
            raise AssertionError("unexpected state_dict keys %s" % sorted(sd))
        with torch.no_grad():
            sd["b2"].uniform_(-0.5, 0.5)  # non-zero biases, in the model too
            sd["fc_b"].uniform_(-0.5, 0.5)
            h1 = F.relu(F.conv2d(x, absmean(sd["c1"]), padding=1))
            h2 = F.relu(F.conv2d(h1, absmean(sd["c2"]), sd["b2"], stride=2, padding=1))
            h3 = F.silu(F.conv2d(h2, absmean(sd["c3"]), padding=1, groups=4) * 0.5)
            h4 = F.gelu(F.conv2d(F.max_pool2d(h3 + h2, 2), absmean(sd["c4"])))
            expected = F.adaptive_avg_pool2d(h4, 1).flatten(1) @ absmean(sd["fc"]) + sd["fc_b"]
            got = model(x)
        check_close(got, expected, "tutorial_cnn %s vs hand-written" % level)


def test_dead_tensors_are_released(ctx):
    """From -O2 on, forward releases each intermediate tensor after its last use: in ResNet-18
    the stem's output is gone by the time layer1_1 runs (at -O1 it lives until return)."""
    import weakref
    path = os.path.join(REPO, "examples", "resnet18.tri")
    x = example_input("resnet18")[0]
    for level, expect_alive in (("-O1", True), ("-O2", False), ("-O3", False), ("-Os", False)):
        model = entry(load(ctx.compile(path, level)))()
        model.eval()
        refs, alive = {}, []
        model.maxpool.register_forward_hook(
            lambda m, i, o: refs.__setitem__("stem", weakref.ref(o)))
        model.layer1_1.register_forward_pre_hook(
            lambda m, i: alive.append(refs["stem"]() is not None))
        with torch.no_grad():
            model(x)
        if alive != [expect_alive]:
            raise AssertionError("%s: stem output alive when layer1_1 runs: %s (expected %s)"
                                 % (level, alive, [expect_alive]))


RESIDUAL = """
layer Mlp(d: int, x: Tensor<float32, [?, d]>) -> Tensor<float32, [?, d]> {
    let fc1 = TernaryLinear(d, 2 * d)
    let fc2 = TernaryLinear(2 * d, d)
    return fc2(gelu(fc1(x))) + x
}

layer Block(c: int = 8, gamma: Tensor<float32, [c, 1, 1]> = ones([c, 1, 1]),
            x: Tensor<float32, [?, c, ?, ?]>) -> Tensor<float32, [?, c]> {
    let conv1 = TernaryConv2d(c, c, 3, padding=1)
    let bn1 = BatchNorm2d(c)
    let conv2 = TernaryConv2d(c, c, 3, padding=1)
    let bn2 = BatchNorm2d(c)
    let conv3 = Conv2d(c, c, 1)
    let conv4 = TernaryConv2d(c, c, 1)
    let mlp = Mlp(c)
    let out = relu(bn1(conv1(x)))
    let shortcut = x * 0.5
    let y = relu(bn2(conv2(out)) + shortcut)
    let z = conv3(y) + y
    let g = conv4(z) + gamma
    let h = (z - g * 2.0) + (g + z)
    return mlp(mean(h, [2, 3]))
}
"""


def test_residual_sums_are_written_into_the_convolutions_output(ctx):
    """-O2: a tensor added to a convolution's (with its batch norm) or a TernaryLinear's
    output, the activation after the sum, is the fused op's residual
    (`conv_bn_act(..., residual=shortcut)`), written into the layer's new output as
    hand-written ResNets do (`out += identity`); other sums of new tensors that nothing else
    reads are `tritonrt.add_into`. Outputs, gradients and batch-norm statistics equal -O0's in
    eval and training mode; a broadcast residual (`gamma`) makes a new tensor; a forward hook
    on the batch norm keeps its own output, not the sum."""
    results = {}
    for level in ("-O0", "-O2"):
        path = ctx.compile_text(RESIDUAL, level)
        with open(path) as f:
            code = f.read()
        fused = re.findall(r"residual=", code)
        if (level == "-O2") != (len(fused) >= 4) or (level == "-O2") != ("add_into" in code):
            raise AssertionError("%s: %d residuals, add_into %s:\n%s"
                                 % (level, len(fused), "add_into" in code, code))
        torch.manual_seed(0)
        model = entry(load(path))()
        if level != "-O0":
            model.load_state_dict(results["-O0"][0])
        initial = {k: v.clone() for k, v in model.state_dict().items()}
        kept = []
        model.bn2.register_forward_hook(lambda m, i, o: kept.append(o))
        x = torch.randn(3, 8, 6, 6)
        model.eval()
        with torch.no_grad():
            evaluated = model(x)
        kept_eval = kept.pop()
        model.train()
        xg = x.clone().requires_grad_(True)
        y = model(xg)
        (y * torch.arange(1.0, 9.0)).sum().backward()
        grads = [xg.grad] + [p.grad.clone() for p in model.parameters()]
        results[level] = (initial, evaluated, kept_eval, kept.pop(), y.detach(),
                          grads, [b.clone() for b in model.buffers()])
        if level == "-O2":
            # Traced as written: torch.fx (Proxies: no sizes to compare) and torch.jit.trace
            # (sizes compared would warn that the trace may not generalize).
            import warnings
            model.eval()
            fresh = entry(load(path))()
            fresh.load_state_dict(model.state_dict())
            fresh.eval()
            with torch.no_grad():
                check_close(torch.fx.symbolic_trace(fresh)(x), fresh(x), "-O2 fx trace")
                with warnings.catch_warnings():
                    warnings.simplefilter("error", torch.jit.TracerWarning)
                    traced = torch.jit.trace(fresh, (x,))
                check_close(traced(x * 2.0), fresh(x * 2.0), "-O2 jit.trace")
    ref, got = results["-O0"], results["-O2"]
    for what, a, b in (("eval output", ref[1], got[1]), ("kept by the hook (eval)", ref[2], got[2]),
                       ("kept by the hook (train)", ref[3], got[3]),
                       ("training output", ref[4], got[4])):
        check_close(b, a, "-O2 " + what)
    for i, (a, b) in enumerate(zip(ref[5] + ref[6], got[5] + got[6])):
        check_close(b, a, "-O2 gradient or statistic %d" % i)


LOOPS = """
layer Net(w: TernaryTensor<trit, [16, 16]>, x: Tensor<float32, [?, 16]>, deep: bool = true)
    -> Tensor<float32, [?, 16]> {
    let h = x
    for i in range(3) {
        let a = relu(h @ w)
        let b = a * 2.0
        let c = sigmoid(b) + a
        h = c * h
    }
    if deep {
        let d = tanh(h @ w)
        let e = d * d
        h = e + h
    }
    return h
}
"""


def test_dead_tensors_are_released_in_loops_and_branches(ctx):
    """-O2 also releases the tensors computed inside a loop or an `if` body after their last
    use there (never what comes from outside); outputs and gradients equal -O1's."""
    results = []
    for level in ("-O1", "-O2"):
        path = ctx.compile_text(LOOPS, level)
        with open(path) as f:
            code = f.read()
        body_dels = [line for line in code.splitlines() if line.startswith(" " * 8 + "del ")]
        if (level == "-O2") != bool(body_dels):
            raise AssertionError("%s: del statements inside loop/if bodies: %s\n%s"
                                 % (level, body_dels, code))
        torch.manual_seed(0)
        model = entry(load(path))()
        x = torch.randn(4, 16, requires_grad=True)
        y = model(x)
        y.sum().backward()
        results.append((y.detach(), x.grad.clone(), model.w.grad.clone()))
    for a, b in zip(results[0], results[1]):
        if not torch.allclose(a, b, rtol=1e-5, atol=1e-6):
            raise AssertionError("-O1 and -O2 differ: %s vs %s" % (a, b))


GRU_CONCAT = """
layer TernaryGRU(inp: int, hid: int, x: Tensor<float32, [?, ?, inp]>) -> Tensor<float32, [?, ?, hid]> {
    let wx = TernaryLinear(inp, 3 * hid)
    let wh = TernaryLinear(hid, 3 * hid, bias=false)
    let outs = zeros([x.shape[0], 0, hid])
    let h = zeros([x.shape[0], hid])
    for i in range(x.shape[1]) {
        let gx = split(wx(x[:, i, :]), hid, dim=1)
        let gh = split(wh(h), hid, dim=1)
        let r = sigmoid(gx[0] + gh[0])
        let z = sigmoid(gx[1] + gh[1])
        let n = tanh(gx[2] + r * gh[2])
        h = (1.0 - z) * n + z * h
        outs = concat([outs, unsqueeze(h, 1)], dim=1)
    }
    return outs
}

layer Model(x: Tensor<float32, [?, ?, 8]>) -> Tensor<float32, [?, ?, 16]> {
    let rnn = TernaryGRU(8, 16)
    return rnn(x)
}
"""


def test_accumulated_concat_equals_the_loop_as_written(ctx):
    """-O2 writes a loop-carried `outs = concat([outs, x], dim=1)` as appends to a list and one
    torch.cat after the loop; outputs and gradients equal -O0's (which concatenates at every
    step), for several lengths including none."""
    results = {}
    for level in ("-O0", "-O2", "-Os"):
        path = ctx.compile_text(GRU_CONCAT, level)
        with open(path) as f:
            code = f.read()
        if (level != "-O0") != ("outs_parts.append(" in code):
            raise AssertionError("%s: accumulation %s\n%s" % (
                level, "missing" if level != "-O0" else "at -O0", code))
        torch.manual_seed(0)
        model = entry(load(path))()
        if level != "-O0":
            model.load_state_dict(results["-O0"][0])
        runs = []
        for steps in (0, 1, 5):
            x = torch.randn(3, steps, 8, requires_grad=True)
            y = model(x)
            if steps == 0:  # the initial zeros: nothing to differentiate
                runs.append((y.detach(),))
                continue
            y.sum().backward()
            runs.append((y.detach(), x.grad.clone(), model.rnn.wx.weight.grad.clone()))
            model.zero_grad()
        results[level] = (model.state_dict(), runs)
    for level in ("-O2", "-Os"):
        for (a, b) in zip(results["-O0"][1], results[level][1]):
            for u, v in zip(a, b):
                if u.shape != v.shape or not torch.allclose(u, v, rtol=1e-5, atol=1e-6):
                    raise AssertionError("-O0 and %s differ: %s vs %s" % (level, u, v))


def test_os_writes_single_use_values_into_their_statement(ctx):
    """-Os: a short value used once, by the next statement, is written into it (no local of
    its own), sub-module calls included; -O2 keeps one statement per op (but returns a
    value directly). Outputs agree (test_levels_agree_*)."""
    path = os.path.join(REPO, "examples", "resnet18.tri")
    with open(ctx.compile(path, "-Os")) as f:
        small = f.read()
    with open(ctx.compile(path, "-O2")) as f:
        full = f.read()
    # (The residual sum itself is the last convolution's: conv_bn_act(..., residual=).)
    pattern = r"if \w+ or \(self\.in_ch != self\.out_ch\):"
    if not re.search(pattern, small) or re.search(pattern, full):
        raise AssertionError("-Os did not write the comparison into the condition (or -O2 did)")
    # A sub-module's call goes into the next statement when no tensor it used last would
    # then live longer (the stem's input is the caller's); the blocks' calls do not chain,
    # so that each block's input is released before the next block runs
    # (test_dead_tensors_are_released).
    chain = r"stem = self\.maxpool\(tritonrt\.conv_bn_act\(self\.conv1, self\.bn1, x,"
    if not re.search(chain, small) or re.search(chain, full):
        raise AssertionError("-Os did not write the stem's call into the pooling (or -O2 did)")
    if re.search(r"self\.layer1_1\(x=self\.layer1_0\(", small):
        raise AssertionError("-Os chained the blocks' calls: their inputs live longer")
    if len(small.splitlines()) >= len(full.splitlines()):
        raise AssertionError("-Os is not shorter than -O2: %d >= %d lines"
                             % (len(small.splitlines()), len(full.splitlines())))


def test_os_merges_identical_declarations(ctx):
    """-Os merge-functions: a layer (fn) with the same code as an earlier one is defined by it
    (`class BlockCopy(Block)`, `act_copy = act`); names, state_dict keys and outputs are those
    of -O2, where nothing merges."""
    path = os.path.join(REPO, "tests", "golden", "opt", "merge_functions.tri")
    small = load(ctx.compile(path, "-Os"))
    full = load(ctx.compile(path, "-O2"))
    if not issubclass(small.BlockCopy, small.Block) or small.act_copy is not small.act:
        raise AssertionError("-Os did not merge BlockCopy into Block or act_copy into act")
    if small.ScaledHalf is small.Scaled or issubclass(small.ScaledHalf, small.Scaled) \
            or issubclass(small.ProjOther, small.Proj) or small.act_named is small.act:
        raise AssertionError("-Os merged declarations that differ")
    if issubclass(full.BlockCopy, full.Block) or full.act_copy is full.act:
        raise AssertionError("-O2 merged declarations")
    torch.manual_seed(3)
    a, b = small.Net(), full.Net()
    if list(a.state_dict()) != list(b.state_dict()):
        raise AssertionError("state_dict keys differ: %s vs %s"
                             % (list(a.state_dict()), list(b.state_dict())))
    b.load_state_dict(a.state_dict())
    if type(a.b).__name__ != "BlockCopy":
        raise AssertionError("the merged layer's instances lost their class name")
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(2))
    check_close(a(x), b(x), "merged -Os against -O2")
    g = torch.randn(3, 5)
    check_close(small.act_copy(x=g), torch.relu(g) * 2.0, "merged fn")


CONSTANT_TRITS = [[1, 0, -1], [0, 0, 0], [-1, 1, 0], [0, 1, -1]]


def test_constant_ternary_products(ctx):
    """x @ C with C a ternary tensor literal: at -O2 and up its zero terms are dropped (sums
    and differences of x's columns); at every level the output and the gradient equal
    x @ C in float."""
    src = ("layer Net(x: Tensor<float32, [?, ?, 4]>) -> Tensor<float32, [?, ?, 3]> {\n"
           "    let k: TernaryTensor<trit, [4, 3]> = tensor(%s)\n"
           "    return x @ k\n}\n" % CONSTANT_TRITS)
    c = torch.tensor(CONSTANT_TRITS, dtype=torch.float32)
    for level in ("-O0", "-O1", "-O2", "-O3", "-Os"):
        path = ctx.compile_text(src, level)
        with open(path) as f:
            code = f.read()
        if (level in ("-O2", "-O3", "-Os")) != ("torch.stack(" in code):
            raise AssertionError("%s: zero terms dropped: %s\n%s"
                                 % (level, "torch.stack(" in code, code))
        torch.manual_seed(1)
        x = torch.randn(2, 5, 4, requires_grad=True)
        y = entry(load(path))()(x)
        y.sum().backward()
        x_ref = x.detach().clone().requires_grad_(True)
        (x_ref @ c).sum().backward()
        if not torch.allclose(y, x_ref @ c, rtol=1e-5, atol=1e-6) or \
                not torch.allclose(x.grad, x_ref.grad):
            raise AssertionError("%s: x @ C differs from float" % level)


# ---- hand-written references ---------------------------------------------------------

def absmean(w):
    """BitNet b1.58 ternary quantization, written out (LANGUAGE.md section 5)."""
    s = w.abs().mean().clamp(min=1e-5)
    return (w / s).round().clamp(-1, 1) * s


class RefTernaryConv2d(nn.Module):
    def __init__(self, in_ch, out_ch, k, stride=1, padding=0, groups=1, bias=False):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(out_ch, in_ch // groups, k, k))
        self.bias = nn.Parameter(torch.empty(out_ch)) if bias else None
        self.stride, self.padding, self.groups = stride, padding, groups

    def forward(self, x):
        return F.conv2d(x, absmean(self.weight), self.bias, self.stride, self.padding, 1,
                        self.groups)


class RefBasicBlock(nn.Module):
    def __init__(self, in_ch, out_ch, stride=1):
        super().__init__()
        self.conv1 = RefTernaryConv2d(in_ch, out_ch, 3, stride, 1)
        self.bn1 = nn.BatchNorm2d(out_ch)
        self.conv2 = RefTernaryConv2d(out_ch, out_ch, 3, 1, 1)
        self.bn2 = nn.BatchNorm2d(out_ch)
        self.project = stride != 1 or in_ch != out_ch
        if self.project:
            self.down = RefTernaryConv2d(in_ch, out_ch, 1, stride)
            self.down_bn = nn.BatchNorm2d(out_ch)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        shortcut = self.down_bn(self.down(x)) if self.project else x
        return F.relu(out + shortcut)


class RefResNet(nn.Module):
    """torchvision-style ResNet: float stem, stages of `block(in, width, stride)`, float fc.
    Blocks are named `layer<stage>_<i>` as in the examples."""
    BLOCK = None
    EXPANSION = 1
    COUNTS = ()

    def __init__(self, num_classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        self.names = []
        in_ch = 64
        for stage, (width, count) in enumerate(zip((64, 128, 256, 512), self.COUNTS), 1):
            for i in range(count):
                name = "layer%d_%d" % (stage, i)
                stride = 2 if stage > 1 and i == 0 else 1
                setattr(self, name, type(self).BLOCK(in_ch, width, stride))
                self.names.append(name)
                in_ch = width * self.EXPANSION
        self.fc = nn.Linear(in_ch, num_classes)

    def forward(self, x):
        x = self.maxpool(F.relu(self.bn1(self.conv1(x))))
        for name in self.names:
            x = getattr(self, name)(x)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class RefResNet18(RefResNet):
    BLOCK = RefBasicBlock
    COUNTS = (2, 2, 2, 2)


class RefResNet34(RefResNet18):
    COUNTS = (3, 4, 6, 3)


class RefBottleneck(nn.Module):
    def __init__(self, in_ch, width, stride=1):
        super().__init__()
        self.conv1 = RefTernaryConv2d(in_ch, width, 1)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = RefTernaryConv2d(width, width, 3, stride, 1)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = RefTernaryConv2d(width, 4 * width, 1)
        self.bn3 = nn.BatchNorm2d(4 * width)
        self.project = stride != 1 or in_ch != 4 * width
        if self.project:
            self.down = RefTernaryConv2d(in_ch, 4 * width, 1, stride)
            self.down_bn = nn.BatchNorm2d(4 * width)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        shortcut = self.down_bn(self.down(x)) if self.project else x
        return F.relu(out + shortcut)


class RefResNet50(RefResNet):
    BLOCK = RefBottleneck
    EXPANSION = 4
    COUNTS = (3, 4, 6, 3)


class RefResNet101(RefResNet50):
    COUNTS = (3, 4, 23, 3)


class RefResNet152(RefResNet50):
    COUNTS = (3, 8, 36, 3)


class RefDepthwiseBlock(nn.Module):
    def __init__(self, in_ch, out_ch):
        super().__init__()
        self.dw = RefTernaryConv2d(in_ch, in_ch, 3, 1, 1, groups=in_ch)
        self.dw_bn = nn.BatchNorm2d(in_ch)
        self.project = RefTernaryConv2d(in_ch, out_ch, 1)
        self.project_bn = nn.BatchNorm2d(out_ch)

    def forward(self, x):
        return self.project_bn(self.project(F.relu6(self.dw_bn(self.dw(x)))))


class RefInvertedResidual(nn.Module):
    def __init__(self, in_ch, out_ch, stride=1, expand=6):
        super().__init__()
        hidden = in_ch * expand
        self.expand_conv = RefTernaryConv2d(in_ch, hidden, 1)
        self.expand_bn = nn.BatchNorm2d(hidden)
        self.dw = RefTernaryConv2d(hidden, hidden, 3, stride, 1, groups=hidden)
        self.dw_bn = nn.BatchNorm2d(hidden)
        self.project = RefTernaryConv2d(hidden, out_ch, 1)
        self.project_bn = nn.BatchNorm2d(out_ch)
        self.residual = stride == 1 and in_ch == out_ch

    def forward(self, x):
        h = F.relu6(self.expand_bn(self.expand_conv(x)))
        out = self.project_bn(self.project(F.relu6(self.dw_bn(self.dw(h)))))
        return out + x if self.residual else out


class RefMobileNetV2(nn.Module):
    # (in, out, stride) of blocks b2..b17, expansion 6 (torchvision's table, unrolled).
    BLOCKS = [(16, 24, 2), (24, 24, 1), (24, 32, 2), (32, 32, 1), (32, 32, 1), (32, 64, 2),
              (64, 64, 1), (64, 64, 1), (64, 64, 1), (64, 96, 1), (96, 96, 1), (96, 96, 1),
              (96, 160, 2), (160, 160, 1), (160, 160, 1), (160, 320, 1)]

    def __init__(self, num_classes=1000):
        super().__init__()
        self.stem = nn.Conv2d(3, 32, 3, stride=2, padding=1, bias=False)
        self.stem_bn = nn.BatchNorm2d(32)
        self.b1 = RefDepthwiseBlock(32, 16)
        for i, (cin, cout, stride) in enumerate(self.BLOCKS, 2):
            setattr(self, "b%d" % i, RefInvertedResidual(cin, cout, stride))
        self.head = RefTernaryConv2d(320, 1280, 1)
        self.head_bn = nn.BatchNorm2d(1280)
        self.drop = nn.Dropout(0.2)
        self.fc = nn.Linear(1280, num_classes)

    def forward(self, x):
        x = F.relu6(self.stem_bn(self.stem(x)))
        for i in range(1, 18):
            x = getattr(self, "b%d" % i)(x)
        x = F.relu6(self.head_bn(self.head(x)))
        return self.fc(self.drop(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)))


class RefTernaryLinear(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(out_features, in_features))
        self.bias = nn.Parameter(torch.empty(out_features)) if bias else None

    def forward(self, x):
        return F.linear(x, absmean(self.weight), self.bias)


class RefConvBNReLU(nn.Module):
    def __init__(self, in_ch, out_ch):
        super().__init__()
        self.conv = RefTernaryConv2d(in_ch, out_ch, 3, 1, 1)
        self.bn = nn.BatchNorm2d(out_ch)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


class RefVGG16(nn.Module):
    STAGES = [["1_2"], ["2_1", "2_2"], ["3_1", "3_2", "3_3"], ["4_1", "4_2", "4_3"],
              ["5_1", "5_2", "5_3"]]

    def __init__(self, num_classes=1000, hidden=4096):
        super().__init__()
        self.conv1_1 = nn.Conv2d(3, 64, 3, padding=1)
        self.bn1_1 = nn.BatchNorm2d(64)
        widths = {"1": 64, "2": 128, "3": 256, "4": 512, "5": 512}
        previous = 64
        for stage in self.STAGES:
            for name in stage:
                width = widths[name[0]]
                setattr(self, "conv" + name, RefConvBNReLU(previous, width))
                previous = width
        self.fc1 = RefTernaryLinear(512 * 7 * 7, hidden)
        self.fc2 = RefTernaryLinear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, num_classes)

    def forward(self, x):
        x = F.relu(self.bn1_1(self.conv1_1(x)))
        for stage in self.STAGES:
            for name in stage:
                x = getattr(self, "conv" + name)(x)
            x = F.max_pool2d(x, 2)
        x = torch.flatten(F.adaptive_avg_pool2d(x, 7), 1)
        x = F.relu(self.fc1(x))  # dropout: identity in eval
        x = F.relu(self.fc2(x))
        return self.fc3(x)


class RefTransformerBlock(nn.Module):
    """Pre-norm block of examples/transformer_block.tri, written out."""

    def __init__(self, d, n_heads):
        super().__init__()
        self.d, self.n_heads = d, n_heads
        shapes = {"ln1_g": [d], "ln1_b": [d], "wq": [d, d], "wk": [d, d], "wv": [d, d],
                  "wo": [d, d], "ln2_g": [d], "ln2_b": [d], "w_fc": [d, 4 * d],
                  "b_fc": [4 * d], "w_proj": [4 * d, d], "b_proj": [d]}
        for name, shape in shapes.items():
            setattr(self, name, nn.Parameter(torch.empty(shape)))

    def forward(self, x):
        b, t, d = x.shape
        a = F.layer_norm(x, [d], self.ln1_g, self.ln1_b)

        def heads(y):
            return y.reshape(b, t, self.n_heads, -1).transpose(1, 2)

        q, k, v = (heads(a @ absmean(w)) for w in (self.wq, self.wk, self.wv))
        scores = q @ k.transpose(-2, -1) / (q.shape[-1] ** 0.5)
        ctx = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(b, t, -1)
        h = x + ctx @ absmean(self.wo)
        m = F.layer_norm(h, [d], self.ln2_g, self.ln2_b)
        return h + F.gelu(m @ absmean(self.w_fc) + self.b_fc) @ absmean(self.w_proj) + self.b_proj


class RefTinyTransformerLM(nn.Module):
    def __init__(self, vocab=1000, d=128, n_heads=4, max_len=256):
        super().__init__()
        self.pos_emb = nn.Parameter(torch.empty(max_len, d))
        self.tok_emb = nn.Embedding(vocab, d)
        self.block1 = RefTransformerBlock(d, n_heads)
        self.block2 = RefTransformerBlock(d, n_heads)
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = RefTernaryLinear(d, vocab, bias=False)

    def forward(self, ids):
        h = self.tok_emb(ids) + self.pos_emb[:ids.shape[1]]
        return self.lm_head(self.ln_f(self.block2(self.block1(h))))


class RefSqueezeExcite(nn.Module):
    def __init__(self, ch, squeeze):
        super().__init__()
        self.reduce = RefTernaryConv2d(ch, squeeze, 1, bias=True)
        self.expand = RefTernaryConv2d(squeeze, ch, 1, bias=True)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        return x * torch.sigmoid(self.expand(F.silu(self.reduce(s))))


class RefMBConv(nn.Module):
    """torchvision's MBConv with ternary convolutions (expand 1: no expansion conv)."""

    def __init__(self, in_ch, out_ch, k=3, stride=1, expand=6):
        super().__init__()
        hidden = in_ch * expand
        self.expand = expand
        if expand != 1:
            self.expand_conv = RefTernaryConv2d(in_ch, hidden, 1)
            self.expand_bn = nn.BatchNorm2d(hidden)
        self.dw = RefTernaryConv2d(hidden, hidden, k, stride, (k - 1) // 2, groups=hidden)
        self.dw_bn = nn.BatchNorm2d(hidden)
        self.se = RefSqueezeExcite(hidden, max(1, in_ch // 4))
        self.project = RefTernaryConv2d(hidden, out_ch, 1)
        self.project_bn = nn.BatchNorm2d(out_ch)
        self.residual = stride == 1 and in_ch == out_ch

    def forward(self, x):
        h = F.silu(self.expand_bn(self.expand_conv(x))) if self.expand != 1 else x
        h = self.se(F.silu(self.dw_bn(self.dw(h))))
        out = self.project_bn(self.project(h))
        return out + x if self.residual else out


class RefEfficientNetB0(nn.Module):
    # torchvision's stage table (expand, kernel, stride, in, out, layers).
    STAGES = [(1, 3, 1, 32, 16, 1), (6, 3, 2, 16, 24, 2), (6, 5, 2, 24, 40, 2),
              (6, 3, 2, 40, 80, 3), (6, 5, 1, 80, 112, 3), (6, 5, 2, 112, 192, 4),
              (6, 3, 1, 192, 320, 1)]

    def __init__(self, num_classes=1000):
        super().__init__()
        self.stem = nn.Conv2d(3, 32, 3, stride=2, padding=1, bias=False)
        self.stem_bn = nn.BatchNorm2d(32)
        self.blocks = []
        for expand, k, stride, cin, cout, layers in self.STAGES:
            for i in range(layers):
                name = "b%d" % (len(self.blocks) + 1)
                setattr(self, name, RefMBConv(cin if i == 0 else cout, cout, k,
                                              stride if i == 0 else 1, expand))
                self.blocks.append(name)
        self.head = RefTernaryConv2d(320, 1280, 1)
        self.head_bn = nn.BatchNorm2d(1280)
        self.fc = nn.Linear(1280, num_classes)

    def forward(self, x):
        x = F.silu(self.stem_bn(self.stem(x)))
        for name in self.blocks:
            x = getattr(self, name)(x)
        x = F.silu(self.head_bn(self.head(x)))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))  # dropout: eval


class RefDenseLayer(nn.Module):
    def __init__(self, in_ch, growth):
        super().__init__()
        self.norm1 = nn.BatchNorm2d(in_ch)
        self.conv1 = RefTernaryConv2d(in_ch, 4 * growth, 1)
        self.norm2 = nn.BatchNorm2d(4 * growth)
        self.conv2 = RefTernaryConv2d(4 * growth, growth, 3, padding=1)

    def forward(self, x):
        new = self.conv2(F.relu(self.norm2(self.conv1(F.relu(self.norm1(x))))))
        return torch.cat([x, new], 1)


class RefDenseBlock(nn.Sequential):
    def __init__(self, n, in_ch, growth=32):
        super().__init__()
        for i in range(n):
            self.add_module("layer%d" % (i + 1), RefDenseLayer(in_ch + i * growth, growth))


class RefTransition(nn.Module):
    def __init__(self, in_ch, out_ch):
        super().__init__()
        self.norm = nn.BatchNorm2d(in_ch)
        self.conv = RefTernaryConv2d(in_ch, out_ch, 1)

    def forward(self, x):
        return F.avg_pool2d(self.conv(F.relu(self.norm(x))), 2)


class RefDenseNet121(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        self.conv0 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.norm0 = nn.BatchNorm2d(64)
        channels = 64
        for i, n in enumerate((6, 12, 24, 16), 1):
            setattr(self, "block%d" % i, RefDenseBlock(n, channels))
            channels += n * 32
            if i < 4:
                setattr(self, "trans%d" % i, RefTransition(channels, channels // 2))
                channels //= 2
        self.norm5 = nn.BatchNorm2d(channels)
        self.classifier = nn.Linear(channels, num_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.norm0(self.conv0(x))), 3, 2, 1)
        for i in range(1, 5):
            x = getattr(self, "block%d" % i)(x)
            if i < 4:
                x = getattr(self, "trans%d" % i)(x)
        x = F.relu(self.norm5(x))
        return self.classifier(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class RefEncoderBlock(nn.Module):
    def __init__(self, d, n_heads, mlp_dim):
        super().__init__()
        self.n_heads = n_heads
        self.ln1 = nn.LayerNorm(d)
        for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
            setattr(self, name, RefTernaryLinear(d, d))
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = RefTernaryLinear(d, mlp_dim)
        self.fc2 = RefTernaryLinear(mlp_dim, d)

    def forward(self, x):
        b, t, _ = x.shape
        a = self.ln1(x)

        def heads(y):
            return y.reshape(b, t, self.n_heads, -1).transpose(1, 2)

        q, k, v = heads(self.q_proj(a)), heads(self.k_proj(a)), heads(self.v_proj(a))
        scores = q @ k.transpose(-2, -1) / (q.shape[-1] ** 0.5)
        ctx = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(b, t, -1)
        h = x + self.out_proj(ctx)
        return h + self.fc2(F.gelu(self.fc1(self.ln2(h))))


class RefViTBase(nn.Module):
    def __init__(self, image_size=224, patch=16, d=768, n_heads=12, mlp_dim=3072,
                 num_classes=1000):
        super().__init__()
        n = (image_size // patch) ** 2
        self.cls_token = nn.Parameter(torch.zeros(1, 1, d))
        self.pos_embedding = nn.Parameter(torch.zeros(1, n + 1, d))
        self.patch_embed = nn.Conv2d(3, d, patch, stride=patch)
        for i in range(1, 13):
            setattr(self, "block%d" % i, RefEncoderBlock(d, n_heads, mlp_dim))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, num_classes)

    def forward(self, x):
        patches = self.patch_embed(x).flatten(2).transpose(1, 2)
        h = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), patches], 1)
        h = h + self.pos_embedding
        for i in range(1, 13):
            h = getattr(self, "block%d" % i)(h)
        return self.head(self.ln(h)[:, 0])


def random_state(state, seed):
    """Random weights and batch-norm statistics for every key of `state`."""
    g = torch.Generator().manual_seed(seed)
    out = {}
    for key, value in state.items():
        if key.endswith("num_batches_tracked"):
            pass
        elif key.endswith("running_mean"):
            value = torch.randn(value.shape, generator=g) * 0.1
        elif key.endswith("running_var"):
            value = torch.rand(value.shape, generator=g) + 0.5
        elif key.endswith("weight") and value.dim() == 1:  # batch/layer-norm gain
            value = 1.0 + torch.randn(value.shape, generator=g) * 0.1
        elif key.endswith("weight"):  # He-style scale keeps activations alive through depth
            fan_in = max(1, value[0].numel())
            value = torch.randn(value.shape, generator=g) * (2.0 / fan_in) ** 0.5
        else:
            value = torch.randn(value.shape, generator=g) * 0.1
        out[key] = value
    return out


def make_reference_test(name, reference_class):
    def test(ctx):
        compare_with_reference(ctx, name, reference_class(**example_kwargs(name)))
    test.__name__ = "test_%s_matches_handwritten" % name
    return test


def compare_with_reference(ctx, name, reference):
    path = os.path.join(REPO, "examples", name + ".tri")
    torch.manual_seed(6)
    state = random_state(reference.state_dict(), 6)
    reference.load_state_dict(state)
    reference.eval()
    x = example_input(name)[0]
    # Calibrate the batch-norm statistics on the input (momentum 1: the running statistics
    # become this batch's), so that activations stay alive through every block.
    batch_norms = [m for m in reference.modules() if isinstance(m, nn.BatchNorm2d)]
    if batch_norms:
        calibration = torch.rand((8,) + tuple(x.shape[1:]),
                                 generator=torch.Generator().manual_seed(9))
        for m in batch_norms:
            m.momentum = 1.0
        reference.train()
        with torch.no_grad():
            reference(calibration)
    reference.eval()
    state = reference.state_dict()
    with torch.no_grad():
        expected = reference(x)
        changed = torch.flip(x, dims=[0]) * 0.5 if x.is_floating_point() else (x.flip(0) + 1) % 1000
        other = reference(changed)
    # The tolerance: 1e-4, or four times the reference's own float32 rounding error where a
    # deep network accumulates more (-O2 folds batch norms into convolutions in eval, which
    # rounds differently; ResNet-50's float32 output is 3.4e-4 off its float64 value).
    with torch.no_grad():
        exact = copy.deepcopy(reference).double()(x.double() if x.is_floating_point() else x)
    atol = max(1e-4, 4.0 * (expected.double() - exact).abs().max().item())
    # A comparison means something only if the output depends on the input.
    if (expected - torch.flip(other, dims=[0])).abs().max() < 0.1 * expected.abs().mean():
        raise AssertionError("%s: the reference output does not depend on the input" % name)
    for level in ("-O0", "-O2"):
        model = entry(load(ctx.compile(path, level)))(**example_kwargs(name))
        model.load_state_dict(state)  # strict: the reference's keys, one to one
        model.eval()
        with torch.no_grad():
            got = model(x)
        check_close(got, expected, "%s %s vs hand-written" % (name, level), atol=atol, rtol=1e-4)


def test_cnn_state_dict_keys(ctx):
    path = os.path.join(REPO, "examples", "cnn_cifar.tri")
    model = entry(load(ctx.compile(path, "-O2")))()
    keys = set(model.state_dict())
    for key in ("block1.conv.weight", "block1.bn.running_mean", "block2.conv.weight",
                "block3.bn.weight", "fc.weight", "head.weight"):
        if key not in keys:
            raise AssertionError("missing state_dict key %s (have %s)" % (key, sorted(keys)[:12]))


def test_nested_instances_each_run(ctx):
    """b(a(x)) runs a, then b (regression: the outer call took the inner instance)."""
    src = """
layer Scale(k: float32, x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {
    return x * k
}
layer Net(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {
    let a = Scale(2.0)
    let b = Scale(3.0)
    return b(a(x)) + a(x)
}
"""
    for level in LEVELS:
        model = entry(load(ctx.compile_text(src, level)))()
        x = torch.ones(2, 4)
        check_close(model(x), x * 8.0, "nested instances " + level)


def test_control_flow_and_builtins(ctx):
    src = """
fn poly(x: Tensor<float32, [?, ?]>, n: int) -> Tensor<float32, [?, ?]> {
    let acc = x
    for i in range(n) {
        acc = acc * 0.5 + x
    }
    if n > 2 {
        acc = acc - 1.0
    } else {
        acc = acc + 1.0
    }
    return acc
}
layer Net(n: int = 3, x: Tensor<float32, [?, 6]>) -> Tensor<float32, [?, 3]> {
    let y = poly(x, n)
    let z = softmax(y, dim=-1) + sum(y, dim=1, keepdim=true)
    let parts = split(z, 3, dim=1)
    return max(parts[0], parts[1]) + clip(transpose(reshape(parts[1], [-1, 3]), 0, 1).T, -1.0, 1.0)
}
"""

    def reference(x, n):
        acc = x
        for _ in range(n):
            acc = acc * 0.5 + x
        acc = acc - 1.0 if n > 2 else acc + 1.0
        z = torch.softmax(acc, dim=-1) + acc.sum(dim=1, keepdim=True)
        p0, p1 = torch.split(z, 3, dim=1)
        return torch.maximum(p0, p1) + p1.reshape(-1, 3).clamp(-1.0, 1.0)

    x = torch.randn(5, 6, generator=torch.Generator().manual_seed(4))
    for level in LEVELS:
        cls = entry(load(ctx.compile_text(src, level)))
        for n in (1, 3):
            check_close(cls(n=n)(x), reference(x, n), "control flow %s n=%d" % (level, n))


def test_loop_body_is_checked_with_the_sizes_of_later_iterations(ctx):
    """A loop body that resizes a variable declared before the loop runs its later iterations
    with the new sizes. It was checked once, with the sizes on entry, so a declared type or a
    weight's size that held on the first iteration only was taken as proven: -O0 ran the
    second iteration without a check (and torch's error, if any, had no location). Now -O0
    raises at the statement, on the iteration that breaks it; a valid loop still runs."""
    src = """
layer Bad(w: Tensor<float32, [4, 4]>, x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {
    let f = x
    for i in range(2) {
        let g: Tensor<float32, [?, 4]> = f
        f = concat([g, g], dim=1)
    }
    return linear(x, w)
}
layer Early(x: Tensor<float32, [?, 4]>) {
    let f = x
    for i in range(3) {
        if i == 2 {
            return f
        }
        f = concat([f, x], dim=1)
    }
    return f
}
layer Good(w: Tensor<float32, [4, 4]>, x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {
    let f = x
    let h = x
    for i in range(3) {
        h = relu(linear(h, w))
        f = concat([f, h], dim=1)
    }
    return h + mean(f)
}
"""
    x = torch.randn(3, 4)
    for level in LEVELS:
        mod = load(ctx.compile_text(src, level))
        good = mod.Good()
        h = x
        f = x
        for _ in range(3):
            h = torch.relu(F.linear(h, good.w))
            f = torch.cat([f, h], dim=1)
        check_close(good(x), h + f.mean(), "valid growing loop " + level)
        # A return type decided by a `return` in such a loop is the widened one: it was
        # the entry's [?, 4], and -O0 checked the early return against it.
        check_close(mod.Early()(x), torch.cat([x, x, x], dim=1), "early return " + level)
        bad = mod.Bad()
        if level == "-O0":
            expect_check_failures([(lambda: bad(x), ":5:42: shape mismatch: dimension 1 of 'f' is 8, "
                                                    "but 4 was expected")])
        else:
            check_close(bad(x), F.linear(x, bad.w), "Bad above -O0 " + level)


def test_trit_tensors_have_the_dtype_of_their_static_type(ctx):
    """A plain Tensor<trit> is held as float32 (docs/pytorch.md); with an integer or float16
    tensor it was left so, and torch's result (float32) was not the checker's dtype:
    `trit @ int8` raised "expected both vectors to have same dtype", `trit + int8` was
    float32. trit @ trit was typed trit although it sums products (now int32, as ternary @
    ternary), and a bool tensor plus a trit number was int64 where int8 was typed. Integer
    products are written as tritonrt.int_matmul / int_linear (torch has no integer matmul on
    CUDA)."""
    src = """
fn mm(a: Tensor<trit, [3]>, b: Tensor<int8, [3]>) -> Tensor<int8, []> { return a @ b }
fn add(a: Tensor<trit, [3]>, b: Tensor<int8, [3]>) -> Tensor<int8, [3]> { return a + b }
fn half(a: Tensor<trit, [3]>, h: Tensor<float16, [3]>) -> Tensor<float16, [3]> { return h * a }
fn dot(a: Tensor<trit, [3]>, b: Tensor<trit, [3]>) -> Tensor<int32, []> { return a @ b }
fn mask(m: Tensor<bool, [3]>, t: trit) -> Tensor<int8, [3]> { return m + t }
fn lin(a: Tensor<trit, [1, 3]>, b: Tensor<trit, [1, 3]>) -> Tensor<int32, [1, 1]> { return linear(a, b) }
fn total(a: Tensor<trit, [3]>, b: Tensor<int8, [3]>) -> Tensor<int64, [3]> { return sum(a) + b }
layer Net(x: Tensor<float32, [?, 3]>) -> Tensor<float32, [?, 3]> { return x }
"""
    a = torch.tensor([1.0, -1.0, 1.0])  # a trit tensor as the module holds one
    b = torch.tensor([3, 4, 5], dtype=torch.int8)
    h = torch.tensor([1.5, 2.5, 3.5], dtype=torch.float16)
    m = torch.tensor([True, False, True])
    for level in LEVELS:
        path = ctx.compile_text(src, level)
        with open(path) as f:
            code = f.read()
        # CUDA has no integer matmul: the three integer products go through tritonrt.int_*.
        if len(re.findall(r"tritonrt\.int_(?:matmul|linear)\(", code)) != 3:
            raise AssertionError("%s: integer products not through tritonrt:\n%s" % (level, code))
        mod = load(path)
        cases = [(mod.mm(a=a, b=b), torch.tensor(4, dtype=torch.int8)),
                 (mod.add(a=a, b=b), torch.tensor([4, 3, 6], dtype=torch.int8)),
                 (mod.half(a=a, h=h), torch.tensor([1.5, -2.5, 3.5], dtype=torch.float16)),
                 (mod.dot(a=a, b=a), torch.tensor(3, dtype=torch.int32)),
                 (mod.mask(m=m, t=1), torch.tensor([2, 1, 2], dtype=torch.int8)),
                 (mod.lin(a=a[None], b=a[None]), torch.tensor([[3]], dtype=torch.int32)),
                 (mod.total(a=a, b=b), torch.tensor([4, 5, 6], dtype=torch.int64))]
        for k, (got, want) in enumerate(cases):
            if got.dtype != want.dtype or not torch.equal(got, want):
                raise AssertionError("%s case %d: %r, expected %r" % (level, k, got, want))


def test_clip_of_an_integer_tensor_by_wider_bounds(ctx):
    """clip(x_int8, 0, 200) (or by an `int`) compiled to torch.clamp(x, 0, 200), which raises
    "value cannot be converted to type int8_t without overflow" on every call: x is widened
    to int32 first, as `x_int8 * 300` is; bounds that fit keep int8."""
    src = """
fn f(x: Tensor<int8, [?]>) -> Tensor<int32, [?]> { return clip(x, 0, 200) }
fn g(x: Tensor<int8, [?]>, lo: int, hi: int) -> Tensor<int32, [?]> { return clip(x, lo, hi) }
fn h(x: Tensor<int8, [?]>) -> Tensor<int8, [?]> { return clip(x, -5, 100) }
layer Net(x: Tensor<float32, [?, 3]>) -> Tensor<float32, [?, 3]> { return x }
"""
    x = torch.tensor([-100, 5, 120], dtype=torch.int8)
    for level in LEVELS:
        mod = load(ctx.compile_text(src, level))
        cases = [(mod.f(x=x), torch.tensor([0, 5, 120], dtype=torch.int32)),
                 (mod.g(x=x, lo=-50, hi=300), torch.tensor([-50, 5, 120], dtype=torch.int32)),
                 (mod.h(x=x), torch.tensor([-5, 5, 100], dtype=torch.int8))]
        for k, (got, want) in enumerate(cases):
            if got.dtype != want.dtype or not torch.equal(got, want):
                raise AssertionError("%s case %d: %r, expected %r" % (level, k, got, want))


def test_linear_of_integers_with_a_float_bias(ctx):
    """linear(x_int, w_int, b_float) is a float, as x @ w^T + b: the bias was converted to
    int32 (0.7 became 0) and the result typed int32."""
    src = """
fn f(x: Tensor<int32, [?, 4]>, w: Tensor<int32, [3, 4]>, b: Tensor<float32, [3]>)
    -> Tensor<float32, [?, 3]> {
    return linear(x, w, b)
}
layer Net(x: Tensor<float32, [?, 3]>) -> Tensor<float32, [?, 3]> { return x }
"""
    x = torch.tensor([[1, 2, 0, 1]], dtype=torch.int32)
    w = torch.ones(3, 4, dtype=torch.int32)
    b = torch.tensor([0.7, -0.2, 1.5])
    for level in LEVELS:
        got = load(ctx.compile_text(src, level)).f(x=x, w=w, b=b)
        check_close(got, x.float() @ w.float().T + b, "linear int with float bias " + level)


def test_keepdim_and_split_dim_known_only_when_run(ctx):
    """A keepdim or a split dim that is an input (or hyperparameter) decides the result's
    shape when it runs: the checker took keepdim for false and the split dimension for none,
    so a declared type was 'proven' wrong and unchecked at -O0, and argmax(x, keepdim=k)
    dropped keepdim."""
    src = """
fn f(x: Tensor<float32, [2, 4, 6]>, k: bool) -> Tensor<float32, [2, 6]> { return sum(x, 1, k) }
fn g(x: Tensor<float32, [2, 4, 6]>, k: bool) -> Tensor<int64> { return argmax(x, keepdim=k) }
fn h(x: Tensor<float32, [2, 4, 6]>, k: bool) -> Tensor<float32> {
    return max(x, keepdim=k) + sum(x, keepdim=k)
}
fn s(x: Tensor<float32, [2, 4, 6]>, n: int) -> Tensor<float32, [2, 4, 6]> {
    return split(x, 2, dim=n)[0]
}
layer Net(x: Tensor<float32, [?, 3]>) -> Tensor<float32, [?, 3]> { return x }
"""
    x = torch.randn(2, 4, 6, generator=torch.Generator().manual_seed(9))
    for level in LEVELS:
        mod = load(ctx.compile_text(src, level))
        check_close(mod.f(x=x, k=False), x.sum(1), "sum keepdim=False " + level)
        for k in (False, True):
            check_close(mod.g(x=x, k=k), torch.argmax(x, keepdim=k), "argmax %s %s" % (k, level))
            ref = (x.amax(dim=(0, 1, 2), keepdim=k) + x.sum(dim=(0, 1, 2), keepdim=k))
            check_close(mod.h(x=x, k=k), ref, "max/sum keepdim %s %s" % (k, level))
        if level == "-O0":
            expect_check_failures([
                (lambda: mod.f(x=x, k=True), "'sum(x, 1, k)' has 3 dimensions, but 2 were expected"),
                (lambda: mod.s(x=x, n=2), "dimension 2 of 'split(x, 2, dim=n)[0]' is 2, but 6 was expected")])


def test_depthwise_conv_with_a_channel_multiplier(ctx):
    """depthwise_conv2d runs F.conv2d with groups = the input's channels, which takes a
    weight [channels * multiplier, 1, k, k] (MobileNet's multiplier); the checker took groups
    for the weight's output channels and rejected it."""
    src = """
layer Net(w: Tensor<float32, [6, 1, 3, 3]>, x: Tensor<float32, [?, 3, 8, 8]>)
    -> Tensor<float32, [?, 6, 6, 6]> {
    return depthwise_conv2d(x, w)
}
"""
    x = torch.randn(2, 3, 8, 8, generator=torch.Generator().manual_seed(3))
    for level in LEVELS:
        model = entry(load(ctx.compile_text(src, level)))()
        check_close(model(x), F.conv2d(x, model.w, groups=3), "depthwise x2 " + level)


def test_split_with_a_list_of_sizes(ctx):
    """split(x, [a, b, ...], dim) cuts pieces of those sizes, as torch.split (it was an
    ArgumentType error: only one size was accepted)."""
    src = """
layer Net(n: int = 2, x: Tensor<float32, [?, 8]>) -> Tensor<float32, [?, 8]> {
    let parts = split(x, [3, 5], dim=1)
    let rows = split(x, [n, 1], axis=0)
    let head = split(parts[1], [1, 1, 3], dim=-1)
    return concat([relu(parts[1]), parts[0] * 2.0], dim=1) + sum(rows[1]) + mean(head[2])
}
"""

    def reference(x, n):
        p0, p1 = torch.split(x, [3, 5], dim=1)
        r1 = torch.split(x, [n, 1], dim=0)[1]
        h2 = torch.split(p1, [1, 1, 3], dim=-1)[2]
        return torch.cat([torch.relu(p1), p0 * 2.0], dim=1) + r1.sum() + h2.mean()

    for level in LEVELS:
        cls = entry(load(ctx.compile_text(src, level)))
        for n in (1, 3):
            x = torch.randn(n + 1, 8, generator=torch.Generator().manual_seed(n))
            check_close(cls(n=n)(x), reference(x, n), "split sizes %s n=%d" % (level, n))


def test_adaptive_pool_to_height_and_width(ctx):
    """adaptive_avgpool2d(x, [h, w]) pools to h x w, as F.adaptive_avg_pool2d with a tuple
    (a list was an ArgumentType error)."""
    src = """
layer Net(x: Tensor<float32, [?, 3, ?, ?]>) -> Tensor<float32, [?, 21]> {
    let a = adaptive_avgpool2d(x, [2, 3])
    let b = adaptive_avgpool2d(x, 1)
    return concat([flatten(a), flatten(b)], dim=1)
}
"""
    x = torch.randn(2, 3, 7, 9, generator=torch.Generator().manual_seed(6))
    ref = torch.cat([F.adaptive_avg_pool2d(x, (2, 3)).flatten(1),
                     F.adaptive_avg_pool2d(x, 1).flatten(1)], dim=1)
    for level in LEVELS:
        cls = entry(load(ctx.compile_text(src, level)))
        check_close(cls()(x), ref, "adaptive pool %s" % level)


def test_values_updated_together(ctx):
    """Variables a loop or a branch updates from each other's old values (`a, b = b, a`):
    Python must see one parallel assignment, not `a = b` then `b = a`."""
    src = """
fn rot3(n: int) -> int {
    let a = 1
    let b = 2
    let c = 3
    for i in range(n) {
        let t = a
        a = b
        b = c
        c = t
    }
    return a * 100 + b * 10 + c
}
fn ifswap(flag: bool) -> int {
    let a = 1
    let b = 2
    if flag {
        let t = a
        a = b
        b = t
    }
    return a * 10 + b
}
fn whileswap(n: int) -> int {
    let a = 1
    let b = 2
    let i = 0
    while i < n {
        let t = a
        a = b
        b = t
        i = i + 1
    }
    return a * 10 + b
}
fn breakswap(n: int) -> int {
    let a = 1
    let b = 2
    for i in range(10) {
        if i == n {
            let t = a
            a = b
            b = t
            break
        }
        a = a + b
    }
    return a * 100 + b
}
fn fib(n: int) -> int {
    let a = 0
    let b = 1
    for i in range(n) {
        let t = a + b
        a = b
        b = t
    }
    return a
}
fn tswap(x: Tensor<float32, [?, ?]>, y: Tensor<float32, [?, ?]>, n: int) -> Tensor<float32, [?, ?]> {
    let p = x
    let q = y
    for i in range(n) {
        let t = p
        p = q * 2.0
        q = t
    }
    return p - q
}
"""

    def rot3(n):
        a, b, c = 1, 2, 3
        for _ in range(n):
            a, b, c = b, c, a
        return a * 100 + b * 10 + c

    def swaps(n):
        a, b = 1, 2
        for _ in range(n):
            a, b = b, a
        return a * 10 + b

    def breakswap(n):
        a, b = 1, 2
        for i in range(10):
            if i == n:
                a, b = b, a
                break
            a = a + b
        return a * 100 + b

    def fib(n):
        a, b = 0, 1
        for _ in range(n):
            a, b = b, a + b
        return a

    x = torch.randn(2, 3, generator=torch.Generator().manual_seed(5))
    y = torch.randn(2, 3, generator=torch.Generator().manual_seed(6))
    for level in LEVELS:
        m = load(ctx.compile_text(src, level))
        for n in range(5):
            got = (m.rot3(n), m.whileswap(n), m.breakswap(n), m.fib(n), m.ifswap(n % 2 == 1))
            want = (rot3(n), swaps(n), breakswap(n), fib(n), swaps(n % 2))
            if got != want:
                raise AssertionError("%s n=%d: got %s, expected %s" % (level, n, got, want))
            p, q = x, y
            for _ in range(n):
                p, q = q * 2.0, p
            check_close(m.tswap(x, y, n), p - q, "tensor swap %s n=%d" % (level, n))


def test_implicit_widening_converts_values(ctx):
    """A value bound to a wider declared type is converted, as clang's implicit casts: an
    int8 tensor passed as a float32 input is a float32 tensor inside (torch's matmul
    rejects int8 @ float32), an int bound to a float is a float, and an integer literal
    expression keeps integer arithmetic before it converts (`7 / 2` is 3, then 3.0)."""
    src = """
fn project(x: Tensor<float32, [?, 4]>, w: Tensor<float32, [4, 2]>) -> Tensor<float32, [?, 2]> {
    return x @ w
}
fn widened(x: Tensor<int8, [?, 4]>) -> Tensor<float32, [?, 4]> {
    return x
}
fn half(n: int) -> float32 {
    let y: float = n / 2
    return y
}
fn literal_half() -> float32 {
    let a: float = 7 / 2
    let b: float = 0.0
    b = 7 / 2
    return a + b + lift(7 / 2)
}
fn lift(v: float32) -> float32 {
    return v
}
fn count(flag: bool) -> int32 {
    return flag
}
fn use(x: Tensor<int8, [?, 4]>, w: Tensor<float32, [4, 2]>) -> Tensor<float32, [?, 2]> {
    return project(x, w)
}
"""
    x = torch.tensor([[1, -2, 3, 0], [0, 1, 1, -1]], dtype=torch.int8)
    w = torch.randn(4, 2, generator=torch.Generator().manual_seed(7))
    for level in LEVELS:
        m = load(ctx.compile_text(src, level))
        got = m.use(x, w)
        if got.dtype != torch.float32:
            raise AssertionError("%s: use() gave %s, expected float32" % (level, got.dtype))
        check_close(got, x.float() @ w, "int8 input widened %s" % level)
        if m.widened(x).dtype != torch.float32:
            raise AssertionError("%s: widened() kept %s" % (level, m.widened(x).dtype))
        for value, want in ((m.half(7), 3.0), (m.literal_half(), 9.0)):
            if not isinstance(value, float) or value != want:
                raise AssertionError("%s: got %r, expected %r" % (level, value, want))
        for flag, want in ((True, 1), (False, 0)):
            got = m.count(flag)
            if isinstance(got, bool) or got != want:
                raise AssertionError("%s: count(%s) gave %r" % (level, flag, got))


def test_constants_computed_by_fns(ctx):
    """A top-level constant whose initializer calls a fn (or reads such a constant) is defined
    after the defs it calls: the module imports without NameError, at every level, and also
    through --incremental."""
    src = """
fn sq(x: int) -> int {
    return x * x
}
let A = sq(3)
let B = A + 1
let C = 7
fn total() -> int {
    return A + B + C
}
layer P(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {
    return x * float32(B + C)
}
"""
    x = torch.randn(2, 4, generator=torch.Generator().manual_seed(3))
    for level in LEVELS:
        for extra in ([], ["--incremental"]):
            m = load(ctx.compile_text(src, level, *extra))
            if (m.A, m.B, m.C, m.total()) != (9, 10, 7, 26):
                raise AssertionError("%s %s: constants %r" % (level, extra, (m.A, m.B, m.C)))
            check_close(m.P()(x), x * 17.0, "P %s %s" % (level, extra))


def test_quantize_semantics_agree_across_levels(ctx):
    """Two rules -O2 applies by rewriting must hold at -O0 at run time too: re-quantizing a value
    that is already ternary returns it unchanged (scale included), and a fn that quantizes
    stochastically follows its caller's training mode (the inliner puts its body in the
    layer, where it sees the module's flag)."""
    src = """
fn q(x: Tensor<float32, [?, 8]>) -> TernaryTensor<trit, [?, 8]> {
    return ternary_quantize(x, method="stochastic")
}
fn twice(x: Tensor<float32, [?, 8]>) -> Tensor<float32, [?, 8]> {
    return q(x) * 2.0
}
layer M(x: Tensor<float32, [?, 8]>) -> Tensor<float32, [?, 8]> {
    let t = ternary_quantize(x)
    let u = ternary_quantize(t)
    return u + twice(x)
}
"""
    x = torch.randn(64, 8, generator=torch.Generator().manual_seed(11))

    def absmean(v):
        s = v.abs().mean().clamp(min=1e-5)
        return s * torch.clamp(torch.round(v / s), -1, 1)

    def expected(training):
        if not training:
            return absmean(x) + 2.0 * absmean(x)
        torch.manual_seed(7)
        return absmean(x) + 2.0 * tritonrt.ternary_quantize(x, method="stochastic", training=True)

    for level in LEVELS:
        model = entry(load(ctx.compile_text(src, level)))()
        for training in (False, True):
            model.train(training)
            torch.manual_seed(7)
            with torch.no_grad():
                got = model(x)
            check_close(got, expected(training), "%s training=%s" % (level, training))
    # The stochastic rounding really is on in training (else the check above proves nothing).
    if torch.allclose(expected(True), expected(False)):
        raise AssertionError("stochastic rounding gave the eval result; pick another input")


def test_reads_of_module_state_stay_in_order(ctx):
    """A batch norm updates its running statistics in place when it runs in training; a read of
    them (and what is computed from it) before or after that update keeps its place at every
    level: not merged with the same read on the other side (CSE), not hoisted out of a loop that
    runs the batch norm (LICM), not overtaken by a fused conv + batch norm (fusion). Weights
    given to a functional batch_norm as its statistics are such state too."""
    src = """
layer Cse(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [4]> {
    let bn = BatchNorm1d(4)
    let before = bn.running_mean * 1.0
    let y = bn(x)
    let after = bn.running_mean * 1.0
    return after - before
}
layer Loop(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [4]> {
    let bn = BatchNorm1d(4)
    let acc = zeros([4])
    for i in range(3) {
        acc = acc + bn.running_mean * 2.0
        let y = bn(x)
    }
    return acc
}
layer Fused(x: Tensor<float32, [?, 2, 5, 5]>) -> Tensor<float32, [3]> {
    let conv = TernaryConv2d(2, 3, 3)
    let bn = BatchNorm2d(3)
    let y = bn(conv(x))
    let stat = bn.running_mean * 2.0
    let r = relu(y)
    return stat + 0.0 * sum(r, dim=[0, 2, 3])
}
layer Functional(g: Tensor<float32, [4]> = ones(), bb: Tensor<float32, [4]>,
                 rm: Tensor<float32, [4]>, rv: Tensor<float32, [4]> = ones(),
                 x: Tensor<float32, [?, 4]>) -> Tensor<float32, [4]> {
    let before = rm * 2.0
    let y = batch_norm(x, g, bb, running_mean=rm, running_var=rv)
    let after = rm * 2.0
    return after - before + 0.0 * sum(y, dim=0)
}
layer Branch(flag: bool = true, x: Tensor<float32, [?, 4]>) -> Tensor<float32, [4]> {
    let bn = BatchNorm1d(4)
    let r = zeros([4])
    if flag {
        r = bn.running_mean
    }
    let p = r * 2.0
    let y = bn(x)
    let q = r * 2.0
    return q - p
}
layer Stats(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [4]> {
    let bn = BatchNorm1d(4)
    let y = bn(x)
    return bn.running_mean
}
layer Returned(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [4]> {
    let st = Stats()
    let a = st(x)
    let p = a * 2.0
    let b = st(x)
    let q = a * 2.0
    return q - p
}
layer Local(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [4]> {
    let rm = zeros([4])
    let y = batch_norm(x, ones([4]), zeros([4]), running_mean=rm, running_var=ones([4]))
    return rm * 1.0
}
"""
    x = torch.randn(5, 4, generator=torch.Generator().manual_seed(3)) + 3.0
    mean = x.mean(0)
    xc = torch.randn(2, 2, 5, 5, generator=torch.Generator().manual_seed(4)) + 3.0
    for level in LEVELS:
        module = load(ctx.compile_text(src, level))
        got = module.Cse().train()(x)
        check_close(got, 0.1 * mean, "%s: the running mean's change" % level)
        # Reads before each of three updates: m0 = 0, m1 = 0.1 mean, m2 = 0.19 mean.
        got = module.Loop().train()(x)
        check_close(got, 2.0 * (0.1 + 0.19) * mean, "%s: reads inside the loop" % level)
        fused = module.Fused().train()
        with torch.no_grad():
            conv_out = fused.conv(xc)
        got = fused(xc)
        check_close(got, 2.0 * 0.1 * conv_out.mean((0, 2, 3)), "%s: read after the update" % level)
        functional = module.Functional()
        with torch.no_grad():
            functional.rm.zero_()
        got = functional.train()(x)
        check_close(got, 2.0 * 0.1 * mean, "%s: functional statistics" % level)
        # A read that an `if` or a sub-layer's return hands on is the buffer too.
        check_close(module.Branch().train()(x), 2.0 * 0.1 * mean, "%s: read in an if" % level)
        check_close(module.Returned().train()(x), 2.0 * 0.09 * mean,
                    "%s: returned by a sub-layer" % level)
        # Statistics that are not module state are updated in a copy: a local keeps its value.
        check_close(module.Local().train()(x), torch.zeros(4), "%s: local statistics" % level)


def test_in_place_dropout_changes_no_other_value(ctx):
    """Values never change once computed: Dropout(inplace=true) overwrites its input only where
    nothing else reads it (the inplace pass, -O2), and runs out of place elsewhere, at every
    level; even where simplification made `x * 1.0` the input itself."""
    src = """
layer Shared(x: Tensor<float32, [?, 8]>) -> Tensor<float32, [?, 8]> {
    let d = Dropout(0.5, inplace=true)
    let h = x + 1.0
    let before = h * 2.0
    let y = d(h)
    let after = h * 2.0
    return after - before + 0.0 * y
}
layer Input(x: Tensor<float32, [?, 8]>) -> Tensor<float32, [?, 8]> {
    let d = Dropout(0.5, inplace=true)
    return d(x * 1.0)
}
layer Alone(w: TernaryTensor<trit, [8, 8]>, x: Tensor<float32, [?, 8]>) -> Tensor<float32, [?, 8]> {
    let d = Dropout(0.5, inplace=true)
    return d(x @ w)
}
"""
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(5))
    first_alone, expected = None, None
    for level in LEVELS:
        path = ctx.compile_text(src, level)
        module = load(path)
        got = module.Shared().train()(x)
        check_close(got, torch.zeros_like(x), "%s: h after the dropout" % level)
        leaf = x.clone().requires_grad_()
        out = module.Input().train()(leaf)
        out.sum().backward()  # an in-place op on a leaf that requires grad would raise
        check_close(leaf.detach(), x, "%s: the caller's input" % level)
        if bool((out == 0).sum() == 0):
            raise AssertionError("%s: the dropout dropped nothing; pick another seed" % level)
        # Still a call of the sub-module: its hooks run, and it can be replaced.
        shared = module.Shared().train()
        calls = []
        shared.d.register_forward_hook(lambda *args: calls.append(1))
        shared(x)
        shared.d = torch.nn.Identity()
        shared(x)
        if len(calls) != 1:
            raise AssertionError("%s: the dropout's hook ran %d times" % (level, len(calls)))
        with open(path) as f:
            code = f.read()
        alone_code = code.split("class Alone")[1]
        in_place = "self.d(" in alone_code and ".clone() if self.d.training" not in alone_code
        if in_place != (level in ("-O2", "-O3", "-Os")):
            raise AssertionError("%s: Alone's dropout in place: %s" % (level, in_place))
        alone = module.Alone().train()
        if first_alone is not None:
            alone.load_state_dict(first_alone.state_dict())
        if first_alone is None:
            first_alone = alone
        torch.manual_seed(9)
        got = alone(x)
        expected = expected if expected is not None else got  # -O0's, run first
        check_close(got, expected, "%s: Alone" % level)


def test_weights_never_share_a_module_constant(ctx):
    """A weight initialized with a module constant (`b: ... = G`) is a Parameter of its own:
    training one instance changes neither G nor the instances made after it."""
    src = """
let G = tensor([1.0, 2.0, 3.0, 4.0])
layer M(b: Tensor<float32, [4]> = G, x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {
    return x + b
}
"""
    for level in LEVELS:
        module = load(ctx.compile_text(src, level))
        first = module.M()
        with torch.no_grad():
            first.b.add_(10.0)
        check_close(module.M().b.detach(), torch.tensor([1.0, 2.0, 3.0, 4.0]),
                    "%s: a later instance's weight" % level)
        check_close(module.G, torch.tensor([1.0, 2.0, 3.0, 4.0]), "%s: G" % level)


def test_runtime_dtypes_follow_static_types(ctx):
    """Values keep the dtypes the checker gives them, so torch accepts every operation: a trit
    tensor is held as float32 (its value s * q), an integer tensor meeting a float-only
    operation (mean, softmax, linear, float @ int, ...) is converted to float first, and a list
    literal bound to a tensor type becomes that tensor."""
    src = """
layer M(w: Tensor<float32, [4, 4]>, x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {
    let t = trit(w)
    let n = int32(w)
    let lit: TernaryTensor<trit, [4, 4]> = [[1, 0, -1, 0], [0, 1, 1, -1], [1, 1, 0, 0], [-1, 0, 0, 1]]
    let bias: Tensor<float32, [4]> = [0.5, -1.5, 2.0, 0.0]
    let a = linear(x, t) + x @ lit + matmul(x, n) + linear(x, n, bias)
    let b = softmax(n) + log_softmax(t) + gelu(n) + layer_norm(n, [4]) + relu(n)
    let c = mean(n) + std(t) + mean(n, dim=1) + mse_loss(n, t)
    return a + x @ b + c
}
"""
    torch.manual_seed(4)
    w = torch.randn(4, 4) * 2
    x = torch.randn(3, 4)
    t = torch.clamp(torch.round(w), -1, 1)
    n = w.to(torch.int32).float()
    lit = torch.tensor([[1, 0, -1, 0], [0, 1, 1, -1], [1, 1, 0, 0], [-1, 0, 0, 1]], dtype=torch.float32)
    bias = torch.tensor([0.5, -1.5, 2.0, 0.0])
    a = F.linear(x, t) + x @ lit + x @ n + F.linear(x, n, bias)
    b = (torch.softmax(n, -1) + torch.log_softmax(t, -1) + F.gelu(n) + F.layer_norm(n, [4])
         + F.relu(n))
    c = n.mean() + t.std() + n.mean(dim=1) + F.mse_loss(n, t)
    expected = a + x @ b + c
    for level in LEVELS:
        model = entry(load(ctx.compile_text(src, level)))()
        with torch.no_grad():
            model.w.copy_(w)
            got = model(x)
        if got.dtype != torch.float32:
            raise AssertionError("%s: dtype %s" % (level, got.dtype))
        check_close(got, expected, level)


def check_packed_codes(level, model, expected, inputs, before):
    """After tritonrt.pack(model): each state_dict entry of ``expected`` holds those packed
    codes, and the packed model's outputs on ``inputs`` equal ``before``. Returns the
    state_dict."""
    sd = model.state_dict()
    for name, codes in expected.items():
        if not torch.equal(sd[name], codes):
            raise AssertionError("%s: %s packed as %s, expected %s"
                                 % (level, name, tuple(sd[name].shape), tuple(codes.shape)))
    with torch.no_grad():
        after = model(*inputs)
    if not torch.equal(before, after):
        raise AssertionError("%s: packed outputs differ" % level)
    return sd


def test_packed_rows_run_along_the_reduction_dimension(ctx):
    """TOOLCHAIN.md packs a ternary weight row by row along its reduction dimension. A weight
    used as `x @ w` ([in, out]) reduces over its first dimension, so its packed rows are the
    rows of w^T ([out, ceil(in / 4)] bytes), whatever else uses it element-wise, and also when
    it is reduced in another form (`x @ -w`, `transpose(w) @ y`); a linear(x, w) weight
    ([out, in]), `x @ w.T`, and one also reduced along its last dimension (`w @ y`) keep their
    own rows. The choice follows
    applications (FC's w) and is the same at every level, so a packed state_dict loads into
    a model compiled at another."""
    src = """
layer FC(w: TernaryTensor<trit, [n_in, n_out]>, x: Tensor<float32, [?, n_in]>) -> Tensor<float32, [?, n_out]> {
    return x @ w
}
layer Net(a: TernaryTensor<trit, [6, 5]>, l: TernaryTensor<trit, [3, 5]>,
          both: TernaryTensor<trit, [5, 5]>, mixed: TernaryTensor<trit, [5, 5]>,
          neg: TernaryTensor<trit, [5, 5]>, tc: TernaryTensor<trit, [5, 5]>,
          tt: TernaryTensor<trit, [5, 5]>, x: Tensor<float32, [?, 6]>) -> Tensor<float32, [?, 3]> {
    let h = FC(a, x)
    let g = h @ both + sum(both, dim=0)
    let g2 = g @ mixed + transpose(mixed @ transpose(g))
    let g3 = transpose(transpose(tc) @ transpose(g2)) @ tt.T
    return linear(g3 @ -neg, l)
}
"""
    x = torch.randn(4, 6, generator=torch.Generator().manual_seed(9))
    states = {}
    for level in LEVELS:
        torch.manual_seed(3)
        model = entry(load(ctx.compile_text(src, level)))().eval()
        with torch.no_grad():
            before = model(x)
        q = {}
        for name in ("a", "l", "both", "mixed", "neg", "tc", "tt"):
            q[name], _ = tritonrt.quant.ternary_quantize_parts(getattr(model, name))
        tritonrt.pack(model)
        columns = lambda name: tritonrt.pack_ternary(q[name].t().contiguous())  # noqa: E731
        expected = {"a": columns("a"),  # [5, 2]: by columns
                    "l": tritonrt.pack_ternary(q["l"]),  # [3, 2]: linear's [out, in] rows
                    "both": columns("both"),  # also summed: still by columns
                    "mixed": tritonrt.pack_ternary(q["mixed"]),  # reduced both ways: own rows
                    "neg": columns("neg"),  # x @ -neg
                    "tc": columns("tc"),  # transpose(tc) @ y reduces tc's first dimension
                    "tt": tritonrt.pack_ternary(q["tt"])}  # x @ tt.T: its last
        sd = check_packed_codes(level, model, expected, (x,), before)
        states[level] = (sd, before)
    reference_sd, reference_out = states[LEVELS[0]]
    for level in LEVELS[1:]:
        model = tritonrt.pack(entry(load(ctx.compile_text(src, level)))())
        model.load_state_dict(reference_sd)
        with torch.no_grad():
            check_close(model(x), reference_out, "%s loading -O0's packed state" % level)
    # Bit-identical outputs also at the sizes where torch's GEMM paths differ by layout
    # (MNIST's 784 x 256 weight, a batch of 64): the unpacked w^T is made contiguous again.
    torch.manual_seed(0)
    mnist = entry(load(ctx.compile(os.path.join(REPO, "examples", "mnist_mlp.tri"), "-O2")))()
    with torch.no_grad():  # trained-like latent weights: scales that are not round numbers
        for p in mnist.parameters():
            p.copy_(torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel())))
    images = torch.randn(64, 1, 28, 28, generator=torch.Generator().manual_seed(1)) * 0.01
    mnist.eval()
    with torch.no_grad():
        before = mnist(images)
        tritonrt.pack(mnist)
        after = mnist(images)
    if not torch.equal(before, after):
        raise AssertionError("mnist_mlp: packed outputs differ (max abs diff %g)"
                             % (before - after).abs().max().item())


def test_batched_weights_pack_along_their_reduction_dimension(ctx):
    """A ternary weight of rank 3 in a batched product is packed in runs of its reduction
    dimension too: `x @ w` (w [b, k, n]) reduces over k, so its packed rows are the b * n
    runs of k (w with its last two dimensions swapped); `w @ y` (w [b, n, k]) reduces over its
    last dimension, so its rows are the b * n runs of k as stored, not the b rows of n * k
    that the format's [d0, d1 * ... * dn] rule gives conv weights (those would run across
    several reductions, with no padding between them). `transpose(w, -1, -2) @ y` counts as
    `x @ w`. Packed outputs are unchanged and a packed model unpacks to equal outputs."""
    src = """
layer Heads(wr: TernaryTensor<trit, [2, 6, 3]>, wl: TernaryTensor<trit, [2, 3, 5]>,
            wt: TernaryTensor<trit, [2, 7, 3]>, conv: TernaryTensor<trit, [4, 2, 3, 3]>,
            x: Tensor<float32, [2, ?, 6]>, y: Tensor<float32, [2, 5, ?]>,
            z: Tensor<float32, [2, ?, 7]>, img: Tensor<float32, [?, 2, 5, 5]>)
        -> Tensor<float32, [2, 3, ?]> {
    let a = x @ wr
    let b = wl @ y
    let c = transpose(wt, -1, -2) @ transpose(z, -1, -2)
    return transpose(a, -1, -2) + b + c + sum(conv2d(img, conv))
}
"""
    gen = torch.Generator().manual_seed(4)
    inputs = (torch.randn(2, 4, 6, generator=gen), torch.randn(2, 5, 4, generator=gen),
              torch.randn(2, 4, 7, generator=gen), torch.randn(1, 2, 5, 5, generator=gen))
    for level in LEVELS:
        torch.manual_seed(5)
        cls = entry(load(ctx.compile_text(src, level)))
        if sorted(getattr(cls, "_ternary_packed_by_columns", ())) != ["wr", "wt"] or \
                tuple(getattr(cls, "_ternary_packed_by_last_dim", ())) != ("wl",):
            raise AssertionError("%s: by columns %r, by last dim %r" % (
                level, getattr(cls, "_ternary_packed_by_columns", None),
                getattr(cls, "_ternary_packed_by_last_dim", None)))
        model = cls().eval()
        with torch.no_grad():
            before = model(*inputs)
        q = {name: tritonrt.quant.ternary_quantize_parts(getattr(model, name))[0]
             for name in ("wr", "wl", "wt", "conv")}
        tritonrt.pack(model)
        runs = {"wr": q["wr"].transpose(-1, -2).reshape(6, 6),  # 2 * 3 runs of k = 6
                "wl": q["wl"].reshape(6, 5),                   # 2 * 3 runs of k = 5
                "wt": q["wt"].transpose(-1, -2).reshape(6, 7),  # transpose(wt) @ z: k = 7
                "conv": q["conv"].reshape(4, 18)}              # [out, in * kh * kw]
        check_packed_codes(level, model, {name: tritonrt.pack_ternary(rows)
                                          for name, rows in runs.items()}, inputs, before)
        tritonrt.unpack(model)
        with torch.no_grad():
            again = model(*inputs)
        if not torch.equal(before, again):
            raise AssertionError("%s: unpacked outputs differ" % level)


def test_scaled_weights_pack_along_their_reduction_dimension(ctx):
    """A ternary weight scaled before its product (`x @ (w * 2.0)`, `x @ (0.5 * v / 3)`, a
    per-output gain broadcast into it, `linear(x, u * 1.5)`) is reduced along the dimension
    the product reduces, so it packs in runs of that dimension, as `x @ w` does (audit 48B:
    `w * 2.0` hid the product, and w packed in runs of its output dimension)."""
    src = """
layer Scaled(w: TernaryTensor<trit, [6, 5]>, v: TernaryTensor<trit, [6, 5]>,
             u: TernaryTensor<trit, [5, 6]>, g: Tensor<float32, [5]>,
             x: Tensor<float32, [?, 6]>) -> Tensor<float32, [?, 5]> {
    return x @ (w * 2.0) + x @ (0.5 * v / 3) + linear(x, u * 1.5) + x @ (w * g)
}
"""
    x = torch.randn(3, 6, generator=torch.Generator().manual_seed(6))
    for level in LEVELS:
        torch.manual_seed(7)
        cls = entry(load(ctx.compile_text(src, level)))
        if sorted(getattr(cls, "_ternary_packed_by_columns", ())) != ["v", "w"]:
            raise AssertionError("%s: by columns %r" % (
                level, getattr(cls, "_ternary_packed_by_columns", None)))
        model = cls().eval()
        with torch.no_grad():
            model.g.copy_(torch.linspace(0.5, 1.5, 5))
            before = model(x)
        q = {name: tritonrt.quant.ternary_quantize_parts(getattr(model, name))[0]
             for name in ("w", "v", "u")}
        tritonrt.pack(model)
        runs = {"w": q["w"].t(), "v": q["v"].t(), "u": q["u"]}  # 5 runs of k = 6 each
        check_packed_codes(level, model, {name: tritonrt.pack_ternary(rows.contiguous())
                                          for name, rows in runs.items()}, (x,), before)


def test_application_takes_hyperparameters_in_header_order(ctx):
    """An application may pass every argument positionally in the header's order, a
    hyperparameter first (`Heads(2, w, x)`) or last (`Scale(g, y, 3)`, `Scale(g, y, 2, 0.5)`),
    as Python binds a call; the same values named give the same result (audit 48A: this was
    CreateAndApply)."""
    src = """
layer Heads(n_heads: int, w: TernaryTensor<trit, [d, d]>, x: Tensor<float32, [?, ?, d]>)
        -> Tensor<float32, [?, ?, ?, ?]> {
    return transpose(reshape(x @ w, [x.shape[0], x.shape[1], n_heads, -1]), 1, 2)
}
layer Scale(w: Tensor<float32, [4]>, x: Tensor<float32, [?, 4]>, k: int = 1,
            shift: float32 = 0.0) -> Tensor<float32, [?, 4]> {
    return x * w * float32(k) + shift
}
layer Top(d: int = 8, w: TernaryTensor<trit, [d, d]>, g: Tensor<float32, [4]>,
          x: Tensor<float32, [?, ?, d]>, y: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {
    let a = Heads(2, w, x)
    let b = Heads(w, x, n_heads=4)
    let c = Scale(g, y, 3) + Scale(g, y, 2, 0.5) + Scale(g, y, shift=1.0)
    return c + sum(a * a) + sum(b) * 0.5 + float32(a.shape[1]) + float32(b.shape[1]) * 10.0
}
"""
    gen = torch.Generator().manual_seed(8)
    x, y = torch.randn(2, 3, 8, generator=gen), torch.randn(5, 4, generator=gen)
    for level in LEVELS:
        torch.manual_seed(9)
        model = entry(load(ctx.compile_text(src, level)))().eval()
        with torch.no_grad():
            got = model(x, y)
            wq = tritonrt.quant.ternary_quantize_parts(model.w)
            w = wq[0].to(torch.float32) * wq[1]
            g = model.g
            h = x @ w
            a = h.reshape(2, 3, 2, -1).transpose(1, 2)
            b = h.reshape(2, 3, 4, -1).transpose(1, 2)
            c = y * g * 3.0 + (y * g * 2.0 + 0.5) + (y * g * 1.0 + 1.0)
            want = c + (a * a).sum() + b.sum() * 0.5 + 2.0 + 40.0
        if not torch.allclose(got, want, rtol=1e-5, atol=1e-5):
            raise AssertionError("%s: max abs diff %g" % (level, (got - want).abs().max().item()))


def test_locals_never_shadow_module_names(ctx):
    """A constant or fn named like a temporary (`t`, `t_2`, `t_3`), and a `let` shadowing a
    constant after reading it: Python makes every name a function assigns local to the whole
    function, so a local with a module-level name the function reads would raise
    UnboundLocalError (or call the wrong thing)."""
    src = """
let t = 2.0
let t_2 = 3
let h = 0.5
fn t_3(x: float) -> float {
    return x + 1.0
}
fn f(x: float, n: int) -> float {
    let a = x * t + float(n)
    let b = a * a - t_3(a)
    return b * float(t_2) + t
}
fn g(x: float) -> float {
    let y = x * h
    let h = y + 1.0
    return h * 2.0
}
layer L(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {
    let y = relu(x) * t
    return y * y + float(t_2)
}
"""
    x = torch.randn(3, 4, generator=torch.Generator().manual_seed(8))
    a = 1.5 * 2.0 + 2
    for level in LEVELS:
        m = load(ctx.compile_text(src, level))
        got = (m.f(x=1.5, n=2), m.g(x=3.0))
        want = ((a * a - (a + 1.0)) * 3 + 2.0, (3.0 * 0.5 + 1.0) * 2.0)
        if got != want:
            raise AssertionError("%s: got %s, expected %s" % (level, got, want))
        y = torch.relu(x) * 2.0
        check_close(m.L()(x), y * y + 3.0, "layer " + level)


def test_source_names_never_take_generated_names(ctx):
    """Names that begin with '_' are the generated code's (`_<G>_t` temporaries of a constant,
    `_<L>_apply`, `_training`, `_ternary_weights`): a source name spelled like one of them gets
    a trailing '_' in Python, so it neither overwrites one nor is overwritten."""
    src = """
let _A_t = 100.0
let A = -_A_t
fn _D_apply(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {
    return x * 2.0
}
layer D(_training: Tensor<float32, [4, 4]>, x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {
    let q = ternary_quantize(_training, method="stochastic")
    return _D_apply(x @ q) + _A_t + A
}
"""
    torch.manual_seed(2)
    w = torch.randn(4, 4)
    x = torch.randn(3, 4)
    want = (x @ absmean(w)) * 2.0 + 100.0 - 100.0
    for level in LEVELS:
        m = load(ctx.compile_text(src, level))
        if (m._A_t_, m.A) != (100.0, -100.0):
            raise AssertionError("%s: constants %s, %s" % (level, m._A_t_, m.A))
        model = m.D().eval()
        with torch.no_grad():
            model._training_.copy_(w)
        check_close(model(x), want, level)
        if list(model.state_dict()) != ["_training_"]:
            raise AssertionError("%s: keys %s" % (level, list(model.state_dict())))


def test_weights_named_like_the_generated_codes_modules_keep_their_keys(ctx):
    """A weight or sub-module named `torch`, `tritonrt`, `F`, `math` or `self` is an attribute
    of that name: only the generated code's variables must avoid those names, not attributes,
    so the state_dict keys read like the source. They were stored as `tritonrt_` etc. with a
    RenamedInStateDict warning. Packed, the ternary one is `tritonrt` + `tritonrt_scale`."""
    src = """
layer Inner(F: Tensor<float32, [4]> = ones(), x: Tensor<float32, [?, 4]>)
        -> Tensor<float32, [?, 4]> {
    return x * F
}
layer L(torch: Tensor<float32, [4]> = ones(), tritonrt: TernaryTensor<trit, [4, 4]>,
        math: Tensor<float32, [4]> = zeros(), x: Tensor<float32, [?, 4]>)
        -> Tensor<float32, [?, 4]> {
    let self = Inner()
    return self(x @ tritonrt) * torch + math
}
"""
    torch.manual_seed(3)
    x = torch.randn(3, 4)
    for level in LEVELS:
        model = load(ctx.compile_text(src, level)).L().eval()
        keys = sorted(model.state_dict())
        if keys != ["math", "self.F", "torch", "tritonrt"]:
            raise AssertionError("%s: keys %s" % (level, keys))
        lat = model.tritonrt.detach()
        s = lat.abs().mean().clamp(min=1e-5)
        want = x @ ((lat / s).round().clamp(-1, 1) * s)
        with torch.no_grad():
            check_close(model(x), want, level)
            tritonrt.pack(model)
            check_close(model(x), want, level + " packed")
        if sorted(model.state_dict()) != ["math", "self.F", "torch", "tritonrt",
                                          "tritonrt_scale"]:
            raise AssertionError("%s: packed keys %s" % (level, sorted(model.state_dict())))
    src_path = os.path.join(ctx.workdir, "keys.tri")
    with open(src_path, "w") as f:
        f.write(src)
    proc = subprocess.run([ctx.tritonc, "check", src_path], capture_output=True, text=True)
    if proc.returncode != 0 or "RenamedInStateDict" in proc.stderr:
        raise AssertionError(proc.stderr)


def test_source_names_never_shadow_torch_or_python(ctx):
    """A hyperparameter, weight or sub-module named like an nn.Module attribute (`training`,
    `parameters`, `modules`, `to`) is stored under that name + '_', so train()/eval()/to()
    keep working; constructor arguments keep the source names. Names mangled by that rule and
    names that already end in '_' never meet (`lambda` -> `lambda_`, `lambda_` -> `lambda__`),
    and a fn named `str` does not break the -O0 checks' messages."""
    src = """
let super = 4
fn super_(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {
    return x + 1.0
}
fn str(x: Tensor<float32, [?, ?]>) -> Tensor<float32, [?, ?]> {
    return x
}
layer Inner(parameters: Tensor<float32, [4]> = ones(), x: Tensor<float32, [?, 4]>)
        -> Tensor<float32, [?, 4]> {
    return x * parameters
}
layer T(type: str = "double", x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {
    if type == "double" {
        return x * 2.0
    }
    return x
}
layer L(training: bool, to: float32 = 2.0, lambda: float32 = 0.1, lambda_: float32 = 0.2,
        x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {
    let modules = Inner()
    let h = modules(str(x)) * to * float32(super + 1) + lambda + lambda_
    if training {
        return super_(h)
    }
    return h
}
"""
    x = torch.randn(3, 4)
    for level in LEVELS:
        m = load(ctx.compile_text(src, level))
        for flag in [True, False]:
            model = m.L(training=flag, to=3.0, lambda_=0.5, lambda__=0.25)
            want = x * 3.0 * 5.0 + 0.75 + (1.0 if flag else 0.0)
            for mode in [model.train(), model.eval()]:
                check_close(mode(x), want, level)
            check_close(model.to(torch.float64)(x.double()), want.double(), level)
        keys = list(m.L(training=False).state_dict())
        if keys != ["modules_.parameters_"]:
            raise AssertionError("%s: keys %s" % (level, keys))
        if (m.super_, m.super__(torch.zeros(1, 4)).sum().item()) != (4, 4.0):
            raise AssertionError("%s: super_ %r" % (level, m.super_))
        # `type` is an argument by its own name and nn.Module.type() still works.
        check_close(m.T(type="same").float()(x), x, level)
        check_close(m.T().double()(x.double()), 2.0 * x.double(), level)
    bad = load(ctx.compile_text("""
fn str(x: Tensor<float32, [?, ?]>) -> Tensor<float32, [?, ?]> {
    return x
}
layer K(w: Tensor<float32, [n, 3]>, y: Tensor<float32, [?, ?]>) -> Tensor<float32, [?, 3]> {
    return str(y) @ w
}
""", "-O0"))
    try:
        bad.K(n=4)(torch.zeros(2, 5))
    except ValueError as error:
        if "shape mismatch" not in str(error):
            raise
    else:
        raise AssertionError("-O0: a wrong-sized input was not reported")


def test_mixed_float_dtypes_are_converted(ctx):
    """float16/bfloat16 weights meeting float32 inputs in @, matmul, linear, conv2d and
    layer_norm (the checker promotes to float32, LANGUAGE.md section 3; torch does not): the
    narrower side is converted, at every level. A bfloat16 input @ a ternary weight (float32
    at run time) converts the weight; ternary_quantize of a bfloat16 input is float32."""
    mixed = """
layer Mix(w16: Tensor<float16, [6, 5]>, wb: Tensor<bfloat16, [6, 5]>, wl: TernaryTensor<trit, [5, 6]>,
          b16: Tensor<float16, [5]>, lw16: Tensor<float16, [5, 6]>,
          cw: Tensor<float16, [4, 3, 3, 3]>, cb: Tensor<float16, [4]>,
          g16: Tensor<float16, [5]>, x: Tensor<float32, [?, 6]>, img: Tensor<float32, [?, 3, 8, 8]>)
          -> Tensor<float32, [?, 5]> {
    let a = x @ w16 + matmul(x, wb)
    let b = linear(x, wl, b=b16) + linear(x, lw16, b=b16)
    let c = layer_norm(a + b, [5], weight=g16, bias=b16)
    let d = conv2d(img, cw, bias=cb, padding=1)
    return c + mean(mean(mean(d, dim=3), dim=2), dim=1, keepdim=true)
}
"""
    half = """
layer Half(w: TernaryTensor<trit, [6, 5]>, x: Tensor<bfloat16, [?, 6]>) -> Tensor<bfloat16, [?, 5]> {
    return x @ w
}
"""
    quantized = """
layer Q(x: Tensor<bfloat16, [?, 6]>, w: Tensor<float32, [6, 3]>) -> Tensor<float32, [?, 3]> {
    return ternary_quantize(x) @ w
}
"""
    torch.manual_seed(5)
    x, img, xb = torch.randn(3, 6), torch.randn(3, 3, 8, 8), torch.randn(3, 6).bfloat16()
    for level in LEVELS:
        model = load(ctx.compile_text(mixed, level)).Mix().eval()
        sd = {k: torch.randn(v.shape).to(v.dtype) for k, v in model.state_dict().items()}
        model.load_state_dict(sd)
        s = {k: v.float() for k, v in sd.items()}
        a = x @ s["w16"] + x @ s["wb"]
        b = F.linear(x, absmean(s["wl"]), s["b16"]) + F.linear(x, s["lw16"], s["b16"])
        c = F.layer_norm(a + b, [5], s["g16"], s["b16"])
        d = F.conv2d(img, s["cw"], s["cb"], padding=1).mean(dim=(1, 2, 3))
        with torch.no_grad():
            check_close(model(x, img), c + d.reshape(3, 1), level)
        model = load(ctx.compile_text(half, level)).Half().eval()
        with torch.no_grad():
            got = model(xb)
        want = (xb.float() @ absmean(model.w.detach())).bfloat16()
        if got.dtype != torch.bfloat16:
            raise AssertionError("%s: dtype %s" % (level, got.dtype))
        check_close(got.float(), want.float(), level, atol=0.05, rtol=0.02)
        # A ternary value is float32: ternary_quantize of a bfloat16 input gives one.
        model = load(ctx.compile_text(quantized, level)).Q()
        w = torch.randn(6, 3)
        model.w.data.copy_(w)
        check_close(model(xb), absmean(xb.float()) @ w, level, atol=1e-5)


def test_weight_defaults_without_shape(ctx):
    """LANGUAGE.md section 5: inside a weight default the shape may be omitted, for every
    creation builtin: `eye()` takes n and m from the weight, `full(v)` is the value."""
    src = """
layer L(c: int = 3, m: Tensor<float32, [c, c]> = eye(), r: Tensor<float32, [2, c]> = eye(),
        b: Tensor<float32, [c]> = full(0.25), o: Tensor<float32, [c]> = ones(),
        x: Tensor<float32, [?, c]>) -> Tensor<float32, [?, c]> {
    return x @ m + b + o + sum(r, dim=0)
}
"""
    x = torch.randn(2, 4)
    for level in LEVELS:
        model = load(ctx.compile_text(src, level)).L(c=4)
        if not torch.equal(model.m, torch.eye(4)) or not torch.equal(model.r, torch.eye(2, 4)):
            raise AssertionError("%s: eye() defaults %s %s" % (level, model.m, model.r))
        check_close(model(x), x + 0.25 + 1.0 + torch.tensor([1.0, 1.0, 0.0, 0.0]), level)


def test_pow_with_tensor_exponent(ctx):
    """pow(scalar, tensor) is a tensor (torch's `2.0 ** x`), and pow(x, e) broadcasts both."""
    src = """
layer P(x: Tensor<float32, [?, 4]>, e: Tensor<int32, [?]>) -> Tensor<float32, [?, 4]> {
    let a = pow(2.0, x)
    let b = pow(x, e)
    let c = pow(2, e)
    return unsqueeze(a, 0)[0] + b + float32(c) + pow(x, x)
}
"""
    x = torch.rand(3, 4) + 0.5
    e = torch.tensor([0, 1, 2, 3], dtype=torch.int32)
    for level in LEVELS:
        model = load(ctx.compile_text(src, level)).P()
        check_close(model(x, e), 2.0 ** x + x ** e + (2 ** e).float() + x ** x, level)


def test_variables_take_tensors_of_other_sizes(ctx):
    """A `let` without a declared type takes a tensor of the same dtype and rank but other
    sizes, as Python's variables do: the loop that collects per-step outputs, and a
    straight-line `h = concat([h, h], dim=1)` (after which h is exactly [?, 8]); in
    straight-line code another rank too (`y = reshape(y, ...)`, PyTorch's `x = x.view(...)`)."""
    src = """
layer Collect(d: int = 4, x: Tensor<float32, [?, ?, d]>) -> Tensor<float32, [?, ?, d]> {
    let b = x.shape[0]
    let outs = zeros([b, 0, d])
    for i in range(x.shape[1]) {
        outs = concat([outs, unsqueeze(x[:, i, :] * 2.0, 1)], dim=1)
    }
    return outs
}
layer Grow(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 8]> {
    let h = x
    h = concat([h, h], dim=1)
    return h
}
layer Heads(x: Tensor<float32, [?, ?, 8]>) -> Tensor<float32, [?, ?, 8]> {
    let b = x.shape[0]
    let t = x.shape[1]
    let y = transpose(reshape(x, [b, t, 2, 4]), 1, 2)
    y = softmax(y, dim=-1)
    y = reshape(transpose(y, 1, 2), [b, t, 8])
    return y * 2.0
}
"""
    x = torch.randn(2, 3, 4)
    xh = torch.randn(2, 3, 8)
    heads = torch.softmax(xh.reshape(2, 3, 2, 4).transpose(1, 2), dim=-1)
    heads = heads.transpose(1, 2).reshape(2, 3, 8) * 2.0
    for level in LEVELS:
        m = load(ctx.compile_text(src, level))
        check_close(m.Heads()(xh), heads, level + " Heads")
        check_close(m.Collect()(x), x * 2.0, level)
        check_close(m.Grow()(x[:, 0, :]), torch.cat([x[:, 0, :]] * 2, dim=1), level)


def test_reductions_over_several_dimensions(ctx):
    """sum, mean and std take a list of dimensions (`dim=[2, 3]`), as torch does."""
    src = """
layer R(x: Tensor<float32, [?, 3, 4, 5]>) -> Tensor<float32, [?, 3]> {
    let a = sum(x, dim=[2, 3])
    let b = mean(x, dim=[-1, -2], keepdim=true)
    let c = std(x, axis=[3, 2])
    return a + b[:, :, 0, 0] + c
}
"""
    x = torch.randn(2, 3, 4, 5)
    for level in LEVELS:
        got = load(ctx.compile_text(src, level)).R()(x)
        check_close(got, x.sum(dim=(2, 3)) + x.mean(dim=(2, 3)) + x.std(dim=(2, 3)), level)


def test_concat_sizes_are_checked_at_O0(ctx):
    """concat (and stack) of tensors whose other sizes cannot be compared at compile time
    ([?, n] with [?, m]) is checked at run time at -O0, as LANGUAGE.md section 3 says of
    every undecidable comparison: a ValueError with the location, not torch's error."""
    src = """
layer C(a: Tensor<float32, [?, n]>, b: Tensor<float32, [?, m]>) -> Tensor<float32, [?, n]> {
    return concat([a, b], dim=0)
}
"""
    model = load(ctx.compile_text(src, "-O0")).C()
    check_close(model(torch.ones(2, 3), torch.zeros(1, 3)), torch.cat([torch.ones(2, 3),
                                                                       torch.zeros(1, 3)]), "-O0")
    try:
        model(torch.ones(2, 3), torch.ones(1, 4))
    except ValueError as error:
        if "shape mismatch" not in str(error) or ":3:12:" not in str(error):
            raise
    else:
        raise AssertionError("-O0: concat of [2, 3] and [1, 4] was not reported")


def test_unknown_sizes_are_compared_with_each_other_at_O0(ctx):
    """`?` against `?` is undecidable too (LANGUAGE.md section 3: checked at run time at -O0):
    the inner sizes of `@` and `linear`, and the other sizes of concat and stack, are compared
    between the two values when they run, with the location and both names; -O2 trusts the
    types (torch's own error)."""
    src = """
layer M(x: Tensor<float32, [?, ?]>, y: Tensor<float32, [?, ?]>) -> Tensor<float32, [?, ?]> {
    return x @ y
}
layer L(x: Tensor<float32, [?, ?]>, w: Tensor<float32, [?, ?]>) -> Tensor<float32, [?, ?]> {
    return linear(x, w)
}
layer C(x: Tensor<float32, [?, ?]>, y: Tensor<float32, [?, ?]>) -> Tensor<float32, [?, ?]> {
    return concat([x, y], dim=0)
}
layer S(x: Tensor<float32, [?]>, y: Tensor<float32, [?]>) -> Tensor<float32, [2, ?]> {
    return stack([x, y], dim=0)
}
"""
    cases = [
        ("M", (torch.ones(2, 3), torch.ones(3, 4)), (torch.ones(2, 3), torch.ones(2, 4)),
         ":3:12: shape mismatch: dimension 0 of 'y' is 2, but dimension 1 of 'x' is 3"),
        ("L", (torch.ones(2, 3), torch.ones(4, 3)), (torch.ones(2, 3), torch.ones(4, 5)),
         ":6:12: shape mismatch: dimension 1 of 'w' is 5, but dimension 1 of 'x' is 3"),
        ("C", (torch.ones(2, 3), torch.ones(1, 3)), (torch.ones(2, 3), torch.ones(1, 4)),
         ":9:12: shape mismatch: dimension 1 of 'y' is 4, but dimension 1 of 'x' is 3"),
        ("S", (torch.ones(3), torch.ones(3)), (torch.ones(3), torch.ones(2)),
         ":12:12: shape mismatch: dimension 0 of 'y' is 2, but dimension 0 of 'x' is 3"),
    ]
    for level in ("-O0", "-O2"):
        module = load(ctx.compile_text(src, level))
        for name, good, bad, message in cases:
            model = getattr(module, name)()
            model(*good)
            try:
                model(*bad)
            except ValueError as error:
                if level != "-O0" or not str(error).endswith(message):
                    raise AssertionError("%s %s: %s" % (level, name, error))
            except RuntimeError as error:
                if level == "-O0":
                    raise AssertionError("-O0 %s: torch's error, not the check: %s"
                                         % (name, error))
            else:
                raise AssertionError("%s %s: %r ran" % (level, name, bad))


def test_a_size_broadcast_against_an_unknown_one_is_checked_at_O0(ctx):
    """`[?, n] + [?, ?]` is typed `[?, n]`, which is wrong exactly when n is 1 and the `?` is
    not (torch broadcasts to the `?`'s size): at -O0 the result is checked, for `+`, `@`'s
    batch dimensions and max(a, b), so a layer never returns a shape it did not declare;
    valid broadcasts (a `?` of 1, or equal to n) pass. A constant other than 1 needs no
    check (torch raises itself). Found by audit 45C: -O0 returned [2, 5] from `-> [?, n]`."""
    src = """
layer Add(n: int, x: Tensor<float32, [?, n]>, y: Tensor<float32, [?, ?]>) -> Tensor<float32, [?, n]> {
    return x + y
}
layer Bmm(n: int, a: Tensor<float32, [?, n, 2, 2]>, b: Tensor<float32, [?, ?, 2, 2]>)
    -> Tensor<float32, [?, n, 2, 2]> {
    return a @ b
}
layer Max(n: int, x: Tensor<float32, [?, n]>, y: Tensor<float32, [?, ?]>) -> Tensor<float32, [?, n]> {
    return max(x, y)
}
"""
    module = load(ctx.compile_text(src, "-O0"))
    cases = [
        ("Add", (torch.ones(2, 1), torch.ones(2, 5)), (torch.ones(2, 3), torch.ones(2, 1)),
         ":3:12: shape mismatch: dimension 1 of 'x + y' is 5, but n = 1 was expected"),
        ("Bmm", (torch.ones(2, 1, 2, 2), torch.ones(2, 5, 2, 2)),
         (torch.ones(2, 3, 2, 2), torch.ones(2, 3, 2, 2)),
         ":7:12: shape mismatch: dimension 1 of 'a @ b' is 5, but n = 1 was expected"),
        ("Max", (torch.ones(2, 1), torch.ones(2, 5)), (torch.ones(2, 3), torch.ones(2, 3)),
         ":10:12: shape mismatch: dimension 1 of 'max(x, y)' is 5, but n = 1 was expected"),
    ]
    for name, bad, good, message in cases:
        # Valid: n = 3 with a `?` of 1 or 3; n = 1 with a `?` of 1.
        getattr(module, name)(n=3)(*good)
        getattr(module, name)(n=1)(*(t[:, :1] if t.dim() == 2 else t[:, :1] for t in bad))
        try:
            getattr(module, name)(n=1)(*bad)
        except ValueError as error:
            if not str(error).endswith(message):
                raise AssertionError("%s: %s" % (name, error))
        else:
            raise AssertionError("%s: n = 1 with a `?` of 5 returned a shape it did not declare"
                                 % name)
    # Against a constant other than 1 there is nothing to check: torch raises.
    plain = load(ctx.compile_text("""
layer K(x: Tensor<float32, [?, 4]>, y: Tensor<float32, [?, ?]>) -> Tensor<float32, [?, 4]> {
    return x + y
}
""", "-O0"))
    if "of 'x + y'" in plain.__loader__.get_data(plain.__file__).decode():
        raise AssertionError("a check was emitted for a constant size other than 1")


def test_concat_of_unknown_then_known_sizes_is_checked_at_O0(ctx):
    """concat/stack of a list whose first element has `?` where a later one has a known
    size compared nothing at -O0 (torch's error appeared); the first is now checked against
    the known size. Found by audit 45C."""
    src = """
layer S(x: Tensor<float32, [?, 3]>, y: Tensor<float32, [2, ?]>) -> Tensor<float32, [2, 2, 3]> {
    return stack([y, x])
}
layer C(x: Tensor<float32, [?, 3]>, y: Tensor<float32, [2, ?]>) -> Tensor<float32, [?, 3]> {
    return concat([y, x])
}
"""
    module = load(ctx.compile_text(src, "-O0"))
    for name, line in (("S", 3), ("C", 6)):
        model = getattr(module, name)()
        model(torch.ones(2, 3), torch.ones(2, 3))
        try:
            model(torch.ones(2, 3), torch.ones(2, 5))
        except ValueError as error:
            if not str(error).endswith(":%d:12: shape mismatch: dimension 1 of 'y' is 5, but 3 "
                                       "was expected" % line):
                raise AssertionError("%s: %s" % (name, error))
        else:
            raise AssertionError("%s: a [2, 5] element with [2, 3] was not reported" % name)


def test_cross_entropy_batch_sizes_are_compared_at_O0(ctx):
    """cross_entropy's logits [?, C] and class indices [?] (or probabilities [?, C]) have
    one batch size: compared at -O0 with the location (it was torch's "Expected input
    batch_size (2) to match target batch_size (5)"). Found by audit 45C."""
    src = """
fn ce(x: Tensor<float32, [?, 3]>, t: Tensor<int64, [?]>) -> Tensor<float32, []> {
    return cross_entropy(x, t)
}
fn soft(x: Tensor<float32, [?, 3]>, p: Tensor<float32, [?, 3]>) -> Tensor<float32, []> {
    return cross_entropy(x, p)
}
"""
    module = load(ctx.compile_text(src, "-O0"))
    x = torch.randn(2, 3, generator=torch.Generator().manual_seed(1))
    t = torch.tensor([0, 2])
    check_close(module.ce(x, t), F.cross_entropy(x, t), "cross_entropy")
    check_close(module.soft(x, torch.softmax(x, 1)), F.cross_entropy(x, torch.softmax(x, 1)),
                "cross_entropy of probabilities")
    for call, expected in ((lambda: module.ce(x, torch.tensor([0, 1, 2, 0, 1])),
                            ":3:12: shape mismatch: dimension 0 of 't' is 5, but dimension 0 of "
                            "'x' is 2"),
                           (lambda: module.soft(x, torch.ones(5, 3) / 3),
                            ":6:12: shape mismatch: dimension 0 of 'p' is 5, but dimension 0 of "
                            "'x' is 2")):
        try:
            call()
        except ValueError as error:
            if not str(error).endswith(expected):
                raise AssertionError(str(error))
        else:
            raise AssertionError("a batch of 2 logits with 5 targets was not reported")


def test_depthwise_conv_of_an_unbatched_input(ctx):
    """depthwise_conv2d of a [C, H, W] input (accepted, as conv2d's is) passed groups = H
    (x.shape[1]) to F.conv2d: every call raised unless H happened to equal C. Found by audit
    45C."""
    src = """
layer DW(w: Tensor<float32, [6, 1, 3, 3]>, x: Tensor<float32, [6, ?, ?]>) -> Tensor<float32, [6, ?, ?]> {
    return depthwise_conv2d(x, w, padding=1)
}
"""
    for level in LEVELS:
        model = entry(load(ctx.compile_text(src, level)))()
        for shape in ((6, 4, 5), (6, 3, 3), (6, 6, 7)):
            x = torch.randn(*shape, generator=torch.Generator().manual_seed(2))
            check_close(model(x), F.conv2d(x.unsqueeze(0), model.w, padding=1, groups=6)[0],
                        "unbatched depthwise %s %s" % (shape, level))


def test_hyperparameters_named_like_temporaries(ctx):
    """A hyperparameter (or implicit size variable) named `t`, the emitter's base name for
    temporaries, was overwritten in __init__ by the first weight initializer's temporary
    (`t = torch.zeros((t,))`): accepted, but the module failed when built (audit 45E, a
    token count `t` in an MLP-Mixer)."""
    src = """
layer A(t: int = 4, b: Tensor<float32, [t]> = zeros(), g: Tensor<float32, [t]> = ones(),
        x: Tensor<float32, [?, t]>) -> Tensor<float32, [?, t]> {
    let fc = TernaryLinear(t, t)
    return fc(x) * g + b
}
layer M(w: TernaryTensor<trit, [h, t]> = ternary_quantize(kaiming_uniform()),
        s: Tensor<float32, [h]> = ones(), x: Tensor<float32, [?, t]>) -> Tensor<float32, [?, h]> {
    return linear(x, w) * s
}
layer Top(x: Tensor<float32, [?, 6]>) -> Tensor<float32, [?, 3]> {
    let m = M(h=3, t=6)
    let a = A(t=6)
    return m(a(x))
}
"""
    x = torch.randn(2, 6, generator=torch.Generator().manual_seed(4))
    for level in LEVELS:
        module = load(ctx.compile_text(src, level))
        a = module.A()
        check_close(a.b, torch.zeros(4), "A().b " + level)
        if a.fc.in_features != 4:
            raise AssertionError("%s: TernaryLinear got %r" % (level, a.fc.in_features))
        out = module.Top()(x)
        if tuple(out.shape) != (2, 3):
            raise AssertionError("%s: Top gave %s" % (level, tuple(out.shape)))


def test_statistics_passed_through_layers_and_fns_are_the_same_at_every_level(ctx):
    """Running statistics that reach batch_norm through a layer's inputs or a fn's
    parameters (a fn's take training=false): -O0/-O1/-Os updated a copy (the applied
    layer's inputs are values) and -O2/-O3, which inline it, the caller's weights; and such
    weights were trainable
    Parameters that never get a gradient (DDP fails) only where not inlined (audit 45B).
    Now a statistic that is a parameter is updated in place when its caller passed a weight
    (an nn.Parameter), in a copy otherwise, at every level; and a weight read only as
    statistics, wherever, takes no gradient."""
    src = """
layer Norm(g: Tensor<float32, [8]>, b: Tensor<float32, [8]>, x: Tensor<float32, [?, 8]>,
           rm: Tensor<float32, [?]>, rv: Tensor<float32, [?]>) -> Tensor<float32, [?, 8]> {
    return batch_norm(x, g, b, running_mean=rm, running_var=rv)
}
fn norm_eval(x: Tensor<float32, [?, 8]>, g: Tensor<float32, [8]>, m: Tensor<float32, [8]>,
             v: Tensor<float32, [8]>) -> Tensor<float32, [?, 8]> {
    return batch_norm(x, g, g, running_mean=m, running_var=v, training=false)
}
layer M(g: Tensor<float32, [8]> = ones(), b: Tensor<float32, [8]> = zeros(),
        rm: Tensor<float32, [8]> = zeros(), rv: Tensor<float32, [8]> = ones(),
        sm: Tensor<float32, [8]> = zeros(), sv: Tensor<float32, [8]> = ones(),
        x: Tensor<float32, [?, 8]>) -> Tensor<float32, [?, 8]> {
    let local = zeros([8])
    let h = Norm(g, b, x, rm, rv)
    return norm_eval(h, g, sm, sv) + norm_eval(h, g, local, ones([8]))
}
"""
    x = torch.randn(16, 8, generator=torch.Generator().manual_seed(1)) * 3 + 2
    results = {}
    for level in ("-O0", "-O1", "-O2", "-O3", "-Os"):
        m = entry(load(ctx.compile_text(src, level)))()
        frozen = sorted(n for n, p in m.named_parameters() if not p.requires_grad)
        m.train()
        for _ in range(3):
            m(x)
        m.eval()
        with torch.no_grad():
            y = m(x)
        results[level] = (frozen, m.rm.clone(), m.sv.clone(), y)
    frozen, rm, sv, y = results["-O0"]
    if frozen != ["rm", "rv", "sm", "sv"]:
        raise AssertionError("-O0: frozen parameters %s" % frozen)
    if float(rm.abs().max()) == 0.0:
        raise AssertionError("-O0: the caller's running statistics were not updated")
    for level, (f, r, v, out) in results.items():
        if f != frozen:
            raise AssertionError("%s: frozen parameters %s, -O0 %s" % (level, f, frozen))
        check_close(r, rm, "rm " + level)
        check_close(v, sv, "sv " + level)
        check_close(out, y, "eval output " + level)


def test_names_python_would_mangle(ctx):
    """Python mangles a name that begins with two underscores and does not end with two,
    inside a class body: a layer `_Cell` (its helper `__Cell__apply`), a fn `__f`, a
    constant `__k` read in a method raised NameError ('_Net__f_'), and a weight `__w` had
    the state_dict key `_Net__w_` (audit 45F). They run at every level now, and the key is
    the escaped name the RenamedInStateDict warning gives."""
    src = """
let __k: float32 = 2.0
fn __f(a: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {
    return a * 3.0
}
layer _Cell(w: TernaryTensor<trit, [4, 4]>, x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {
    return x @ w
}
layer Net(__w: Tensor<float32, [4]> = ones(), x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {
    let lin = Linear(4, 4)
    let c = _Cell()
    let h = _Cell(c.w, lin(x))
    return __f(c(h)) * __w * __k
}
"""
    x = torch.randn(2, 4, generator=torch.Generator().manual_seed(5))
    for level in LEVELS:
        model = load(ctx.compile_text(src, level)).Net()
        keys = model.state_dict()
        if "__w_u__" not in keys or any(k.startswith("_Net") for k in keys):
            raise AssertionError("%s: state_dict keys %s" % (level, sorted(keys)))
        q = tritonrt.ternary_quantize(keys["c.w"])
        h = (x @ keys["lin.weight"].T + keys["lin.bias"]) @ q
        check_close(model(x), (h @ q) * 3.0 * keys["__w_u__"] * 2.0, "mangled names " + level)


def test_cross_entropy_takes_int32_class_indices(ctx):
    """cross_entropy's class indices may be any integer tensor (`Tensor<int, [?]>` is the
    natural spelling): torch wants int64, so the target is converted. Float probabilities
    shaped like the logits stay floats."""
    src = """
fn hard(logits: Tensor<float32, [?, 10]>, target: Tensor<int, [?]>) -> Tensor<float32, []> {
    return cross_entropy(logits, target)
}
fn small(logits: Tensor<float32, [?, 10]>, target: Tensor<int8, [?]>) -> Tensor<float32, []> {
    return cross_entropy(logits, target)
}
fn soft(logits: Tensor<float32, [?, 10]>, target: Tensor<float32, [?, 10]>) -> Tensor<float32, []> {
    return cross_entropy(logits, target)
}
"""
    logits = torch.randn(6, 10)
    labels = torch.tensor([0, 3, 9, 1, 1, 5])
    probs = torch.softmax(torch.randn(6, 10), dim=1)
    for level in LEVELS:
        module = load(ctx.compile_text(src, level))
        expected = F.cross_entropy(logits, labels)
        check_close(module.hard(logits, labels.to(torch.int32)), expected, level)
        check_close(module.small(logits, labels.to(torch.int8)), expected, level)
        check_close(module.soft(logits, probs), F.cross_entropy(logits, probs), level)


def test_converted_models_compute_in_their_dtype(ctx):
    """After `model.double()` (or `.half()` on a GPU) the tensors a body creates as float32
    (`zeros`, `tensor(...)`, list literals) and the float32 tensor constants it reads take the
    dtype of the layer's float32 input, as a hand-written module's buffers would: conv2d of a
    float64 input with a float32 constant filter raised in torch before."""
    src = """
let EDGE = tensor([[[[0.0, 1.0, 0.0], [1.0, -4.0, 1.0], [0.0, 1.0, 0.0]]]])
let MEAN: Tensor<float32, [1]> = [0.25]
layer Stem(x: Tensor<float32, [?, 1, 8, 8]>, ids: Tensor<int64, [?]>) -> Tensor<float32, [?, 36]> {
    let fc = Linear(36, 36)
    let e = conv2d(x - MEAN, EDGE) + zeros([6, 6]) + tensor([0.5])
    let h = flatten(e) + full([36], 0.125) + arange(0, 36) * 0.01
    return fc(h) + float32(ids[0])
}
"""
    x = torch.randn(2, 1, 8, 8, dtype=torch.float64)
    ids = torch.tensor([3, 1])
    edge = torch.tensor([[[[0.0, 1.0, 0.0], [1.0, -4.0, 1.0], [0.0, 1.0, 0.0]]]], dtype=torch.float64)
    for level in LEVELS:
        model = load(ctx.compile_text(src, level)).Stem().double().eval()
        got = model(x, ids)
        if got.dtype != torch.float64:
            raise AssertionError("%s: the output is %s, not float64" % (level, got.dtype))
        e = F.conv2d(x - 0.25, edge) + 0.5
        h = e.flatten(1) + 0.125 + torch.arange(36, dtype=torch.float64) * 0.01
        check_close(got, F.linear(h, model.fc.weight, model.fc.bias) + 3.0, level)


def test_ternary_sums_and_integer_tensors_follow_the_models_dtype(ctx):
    """`ternary + ternary` (int8, scaled) and `ternary @ ternary` (int32) hold floats of the
    weights' dtype, and an integer tensor added to activations is converted: all to the
    model's float dtype, not float32. After `.double()` or `.to(torch.bfloat16)` the forward
    once raised "expected scalar type Double but found Float" in the matmuls, and the integer
    tensor turned a bfloat16 model's output into float32."""
    src = """
layer TwoTernary(w_a: TernaryTensor<trit, [4, 4]>, w_b: TernaryTensor<trit, [4, 4]>,
                 x: Tensor<float32, [?, 4]>, bias: Tensor<int32, [?, 4]>)
    -> Tensor<float32, [?, 4]> {
    return x @ (w_a + w_b) + x @ (w_a @ w_b) + bias
}
"""
    torch.manual_seed(5)
    x = torch.randn(3, 4)
    bias = torch.tensor([[1, -2, 0, 3]] * 3, dtype=torch.int32)
    for level in LEVELS:
        model = load(ctx.compile_text(src, level)).TwoTernary().eval()
        with torch.no_grad():
            want = model(x, bias)
            for dtype, tol in ((torch.float64, 1e-5), (torch.bfloat16, 0.25)):
                got = copy.deepcopy(model).to(dtype)(x.to(dtype), bias)
                if got.dtype != dtype:
                    raise AssertionError("%s: %s model gives %s" % (level, dtype, got.dtype))
                check_close(got.float(), want, "%s in %s" % (level, dtype), atol=tol, rtol=tol)


def test_built_in_layers_take_a_bfloat16_input_declared_in_the_source(ctx):
    """A `bfloat16` input declared in the source, given to built-in and standard layers of a
    model left in float32: each layer runs in its own dtype and its result comes back in
    bfloat16, as the checker types it. torch.nn raised "mat1 and mat2 must have the same
    dtype" (TernaryLinear, Linear) and "Input type ... and weight type ... should be the
    same" (TernaryConv2d) in every mode. The result equals the float32 model's on the same
    input, and after `model.bfloat16()` nothing is converted."""
    src = """
layer Dense(d: int = 8, x: Tensor<bfloat16, [?, d]>) -> Tensor<bfloat16, [?, d]> {
    let fc = TernaryLinear(d, d)
    let lin = Linear(d, d)
    let ln = LayerNorm(d)
    let bn = BatchNorm1d(d)
    return bn(ln(lin(fc(x))))
}
layer Convs(x: Tensor<bfloat16, [?, 3, 8, 8]>) -> Tensor<bfloat16, [?, 4, 6, 6]> {
    let c = TernaryConv2d(3, 4, 3)
    let bn = BatchNorm2d(4)
    let c2 = Conv2d(4, 4, 1)
    return relu(c2(relu(bn(c(x)))))
}
"""
    torch.manual_seed(9)
    inputs = {"Dense": torch.randn(5, 8).bfloat16(), "Convs": torch.randn(2, 3, 8, 8).bfloat16()}
    for level in LEVELS:
        module = load(ctx.compile_text(src, level))
        for name, x in inputs.items():
            model = getattr(module, name)()
            model.train()
            got = model(x)  # batch statistics updated in float32
            got.float().sum().backward()
            if got.dtype != torch.bfloat16 or model.bn.running_mean.dtype != torch.float32:
                raise AssertionError("%s %s: %s" % (level, name, got.dtype))
            model.eval()
            with torch.no_grad():
                got = model(x)
                want = model(x.float())
                check_close(got.float(), want, "%s %s" % (level, name), atol=0.05, rtol=0.05)
                converted = copy.deepcopy(model).bfloat16()(x)
                check_close(converted.float(), want, "%s %s .bfloat16()" % (level, name),
                            atol=0.1, rtol=0.1)
                tritonrt.pack(model)
                check_close(model(x).float(), got.float(), "%s %s packed" % (level, name))


def test_conv_bn_blocks_take_the_dtypes_the_unfused_layers_take(ctx):
    """A convolution, batch norm and activation fused by -O2 (`tritonrt.conv_bn_act`) take
    the inputs that -O0's unfused modules take: the model's own float dtype (float32, or
    float64 after `model.double()`), and nothing else. The fused call converted any float
    input to the model's dtype and back: a float64 input to a float32 model, which -O0
    refuses with torch's error, ran in float32 and came back as float64 (float32 precision
    labelled float64), and a float64 model computed a float32 input in double."""
    src = """
layer Net(x: Tensor<float32, [?, 3, ?, ?]>) -> Tensor<float32, [?, 8, ?, ?]> {
    let conv = TernaryConv2d(3, 8, 3, padding=1)
    let bn = BatchNorm2d(8)
    return relu(bn(conv(x)))
}
"""
    x = torch.randn(2, 3, 8, 8)
    for level in LEVELS:
        module = load(ctx.compile_text(src, level))
        torch.manual_seed(3)
        model = module.Net().eval()
        double = copy.deepcopy(model).double()
        with torch.no_grad():
            check_close(double(x.double()), model(x).double(), level, atol=1e-5)
            if double(x.double()).dtype != torch.float64:
                raise AssertionError("%s: a float64 model's output is not float64" % level)
            for what, run in (("a float64 input", lambda: model(x.double())),
                              ("a float32 input to a float64 model", lambda: double(x))):
                try:
                    got = run()
                except RuntimeError:
                    continue  # torch's own dtype error, as -O0's modules raise it
                raise AssertionError("%s: %s ran (%s) where the layers raise" %
                                     (level, what, got.dtype))


def test_entry_names_a_layer_as_the_file_sees_it(ctx):
    """`--entry Proj` is the layer the file calls `Proj` (its own, else the one an unqualified
    import brings in), and `--entry a.Proj` the one of `import "a.tri" as a`: with two
    imported files that both define `Proj`, `--entry Proj` once picked whichever was written
    out as the Python class `Proj` (the aliased one) and the other could not be chosen."""
    folder = tempfile.mkdtemp(dir=ctx.workdir)
    for stem, factor in (("a", 1.0), ("b", 2.0)):
        with open(os.path.join(folder, stem + ".tri"), "w") as f:
            f.write("layer Proj(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {\n"
                    "    return x * %s\n}\n" % factor)
    main = os.path.join(folder, "main.tri")
    with open(main, "w") as f:
        f.write('import "a.tri" as a\nimport "b.tri"\n'
                "layer Top(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {\n"
                "    return Proj(x) + a.Proj(x) * 10.0\n}\n")
    x = torch.ones(1, 4)
    for name, want in (("Proj", 2.0), ("a.Proj", 1.0), ("Top", 12.0), (None, 12.0)):
        flags = ["--entry", name] if name else []
        module = load(ctx.compile(main, "-O1", *flags))
        got = getattr(module, module.ENTRY)()(x)
        check_close(got, torch.full((1, 4), want), "--entry %s" % name)
    proc = subprocess.run([ctx.tritonc, "compile", main, "--entry", "b.Proj", "-o",
                           os.path.join(folder, "out.py")], capture_output=True, text=True)
    # A flag naming no layer of a valid file is a usage error (TOOLCHAIN.md's status 2).
    if proc.returncode != 2 or "did you mean 'a.Proj'?" not in proc.stderr:
        raise AssertionError("--entry b.Proj: exit %d, %s" % (proc.returncode, proc.stderr))


GUARD_CLAUSES = """
layer Tree(d: int, depth: int, x: Tensor<float32, [?, d]>) -> Tensor<float32, [?, d]> {
    if depth == 0 {
        return x
    }
    let proj = TernaryLinear(d, d)
    let child = Tree(d, depth - 1)
    return relu(child(proj(x))) + x
}
layer Block(cin: int, cout: int, x: Tensor<float32, [?, cin]>) -> Tensor<float32, [?, cout]> {
    let fc = Linear(cin, cout)
    if cin == cout {
        let scale = Linear(cout, cout, bias=false)
        return relu(fc(x)) + scale(x)
    }
    let scale = Linear(cin, cout)
    return relu(fc(x)) + scale(x)
}
layer Net(x: Tensor<float32, [?, 8]>) -> Tensor<float32, [?, 4]> {
    let t = Tree(8, 3)
    let same = Block(8, 8)
    let down = Block(8, 4)
    return down(same(t(x)))
}
"""


def test_guard_clauses_decide_which_sub_modules_exist(ctx):
    """After a guard clause on hyperparameters (`if depth == 0 { return x }`) the rest of the
    body runs only in the other branch, as Python's early return: a layer may create itself
    there (a recursive tree of depth 3), the sub-modules created there exist only in that
    branch (no unused `scale.bias` in a block that returned early), and one name may be
    created on both sides. State dict keys and outputs equal a hand-written recursive module
    at every level; constructing it used to be RecursiveInstantiation."""
    class Tree(nn.Module):
        def __init__(self, d, depth):
            super().__init__()
            self.depth = depth
            if depth != 0:
                self.proj = tritonrt.TernaryLinear(d, d)
                self.child = Tree(d, depth - 1)

        def forward(self, x):
            if self.depth == 0:
                return x
            return F.relu(self.child(self.proj(x))) + x

    class Block(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.fc = nn.Linear(cin, cout)
            self.scale = nn.Linear(cin, cout, bias=cin != cout)

        def forward(self, x):
            return F.relu(self.fc(x)) + self.scale(x)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.t = Tree(8, 3)
            self.same = Block(8, 8)
            self.down = Block(8, 4)

        def forward(self, x):
            return self.down(self.same(self.t(x)))

    torch.manual_seed(0)
    ref = Net().eval()
    x = torch.randn(5, 8)
    for level in LEVELS:
        model = entry(load(ctx.compile_text(GUARD_CLAUSES, level)))().eval()
        if sorted(model.state_dict()) != sorted(ref.state_dict()):
            raise AssertionError("%s: keys %s, expected %s"
                                 % (level, sorted(model.state_dict()), sorted(ref.state_dict())))
        model.load_state_dict(ref.state_dict())
        with torch.no_grad():
            check_close(model(x), ref(x), "guard clauses at %s" % level)


def test_zoo_runs_in_float64(ctx):
    """The models whose bodies create tensors or read constants (cnn_cifar's mean and std,
    ViT's class-token zeros), and two others, converted with `.double()`: unpacked and packed,
    they compute in float64 and agree with the float32 model."""
    for name in ("cnn_cifar", "vit_base", "resnet18", "transformer_block"):
        path = os.path.join(REPO, "examples", name + ".tri")
        cls = entry(load(ctx.compile(path, "-O2")))
        model = cls(**example_kwargs(name)).eval()
        x = example_input(name)
        wide = cls(**example_kwargs(name))
        wide.load_state_dict(model.state_dict())
        wide = wide.double().eval()
        x64 = tuple(t.double() if t.is_floating_point() else t for t in x)
        with torch.no_grad():
            want = model(*x)
            for packed in (False, True):
                if packed:
                    tritonrt.pack(wide)
                got = wide(*x64)
                what = "%s%s in float64" % (name, " packed" if packed else "")
                if got.dtype != torch.float64:
                    raise AssertionError("%s: the output is %s" % (what, got.dtype))
                check_close(got.float(), want, what, atol=1e-4, rtol=1e-4)


def test_zoo_runs_on_the_meta_device(ctx):
    """Every zoo model, at -O0 and -O2, in training and eval mode, moved with `.to("meta")`:
    torch's `meta` device stands in for a GPU here (no GPU in CI), and any tensor a body creates
    or reads on the CPU instead of its inputs' device makes torch refuse to mix them. (Packed
    models are not run: the meta device has no bit shifts to unpack with.)"""
    for name in EXAMPLES:
        path = os.path.join(REPO, "examples", name + ".tri")
        for level in ("-O0", "-O2"):
            cls = entry(load(ctx.compile(path, level)))
            x = tuple(t.to("meta") for t in example_input(name))
            for training in (True, False):
                model = cls(**example_kwargs(name)).train(training).to("meta")
                with torch.no_grad():
                    out = model(*x)
                what = "%s %s %s" % (name, level, "train" if training else "eval")
                if out.device.type != "meta" or out.shape[0] != x[0].shape[0]:
                    raise AssertionError("%s: %s %s" % (what, out.device, tuple(out.shape)))


def test_min_max_take_the_spec_parameter_names(ctx):
    """LANGUAGE.md §5 writes the element-wise forms `min(a, b)` and `max(a, b)`: they take
    `a=` and `b=` (`max(a=x, b=1)` is the bound 1, not dimension 1), the reductions
    `dim=`/`axis=`; `max(x, dim=y)` of a tensor y was the element-wise max."""
    src = """
fn f(x: Tensor<float32, [?, 4]>, y: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {
    return max(a=x, b=y) + min(x, b=0.5) + max(a=x, b=1) + min(b=y, a=x)
}
fn g(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?]> {
    return max(x, dim=1) + min(x, axis=1) + max(a=x, dim=0)[0]
}
"""
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    want_f = torch.maximum(x, y) + x.clamp(max=0.5) + x.clamp(min=1.0) + torch.minimum(x, y)
    want_g = x.amax(dim=1) + x.amin(dim=1) + x.amax(dim=0)[0]
    for level in LEVELS:
        m = load(ctx.compile_text(src, level))
        check_close(m.f(x=x, y=y), want_f, level + " f")
        check_close(m.g(x=x), want_g, level + " g")
    expect_rejected(ctx, "max_dim_tensor.tri", """
fn h(x: Tensor<float32, [?, 4]>, y: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {
    return max(x, dim=y)
}
""", "argument 'dim' of 'max' must be an integer dimension")
    expect_rejected(ctx, "max_int_b.tri", """
fn h(x: Tensor<int32, [?, 4]>) -> Tensor<int32, [?, 4]> { return max(a=x, b=1) }
""", "is written 'clip(x, lo, hi)'")


def test_functional_batch_norm_with_weight_statistics(ctx):
    """`batch_norm` given a layer's weights as running statistics: they are Parameters, which
    torch refuses to differentiate; the module runs in training and eval mode, updates the
    statistics in place in training (as torch.nn.BatchNorm1d does) and trains g and b."""
    src = """
layer L(g: Tensor<float32, [3]> = ones(), b: Tensor<float32, [3]> = zeros(),
        rm: Tensor<float32, [3]> = zeros(), rv: Tensor<float32, [3]> = ones(),
        x: Tensor<float32, [?, 3]>) -> Tensor<float32, [?, 3]> {
    return batch_norm(x, g, b, running_mean=rm, running_var=rv)
}
"""
    torch.manual_seed(3)
    x = torch.randn(8, 3) * 2 + 1
    for level in LEVELS:
        model = entry(load(ctx.compile_text(src, level)))()
        ref = torch.nn.BatchNorm1d(3)
        model.train()
        out = model(x)
        check_close(out, ref(x), level + " train")
        check_close(model.rm, ref.running_mean, level + " running_mean")
        check_close(model.rv, ref.running_var, level + " running_var")
        out.sum().backward()
        if model.g.grad is None or model.rm.grad is not None:
            raise AssertionError("%s: gradients g %s rm %s" % (level, model.g.grad, model.rm.grad))
        model.eval()
        ref.eval()
        check_close(model(x), ref(x), level + " eval")


def test_weights_keep_their_declared_dtypes(ctx):
    """A weight is a Parameter of its declared dtype: float16 and bfloat16 ones learn, integer
    and bool ones (an embedding's indices, a mask) are frozen (requires_grad=False, which
    optimizers skip); a created initializer (`ones()`, `zeros()`) makes values of that dtype."""
    src = """
layer L(table: Tensor<float32, [10, 4]>, ids: Tensor<int64, [3]>,
        h: Tensor<float16, [4]> = ones(), b: Tensor<bfloat16, [2, 4]>,
        keep: Tensor<bool, [4]> = ones(), x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {
    let picked = sum(embedding(ids, table), dim=0)
    return x + picked * float32(h) * float32(keep) + float32(sum(b, dim=0))
}
"""
    torch.manual_seed(5)
    table = torch.randn(10, 4)
    ids = torch.tensor([1, 7, 7])
    x = torch.randn(2, 4)
    want_dtypes = {"table": torch.float32, "ids": torch.int64, "h": torch.float16,
                   "b": torch.bfloat16, "keep": torch.bool}
    for level in LEVELS:
        model = entry(load(ctx.compile_text(src, level)))()
        state = model.state_dict()
        got = {k: v.dtype for k, v in state.items()}
        if got != want_dtypes:
            raise AssertionError("%s: dtypes %s" % (level, got))
        frozen = sorted(n for n, p in model.named_parameters() if not p.requires_grad)
        if frozen != ["ids", "keep"]:
            raise AssertionError("%s: frozen %s" % (level, frozen))
        if not torch.equal(model.h, torch.ones(4, dtype=torch.float16)) or not model.keep.all():
            raise AssertionError("%s: initializers %s %s" % (level, model.h, model.keep))
        with torch.no_grad():
            model.table.copy_(table)
            model.ids.copy_(ids)
            model.b.zero_()
        check_close(model(x), x + table[ids].sum(0), level)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model(x).sum().backward()
        opt.step()
        if not torch.equal(model.ids, ids):
            raise AssertionError("%s: a frozen weight changed" % level)


def test_half_weight_initializers_compute_in_the_weights_dtype(ctx):
    """In the default of a float16 or bfloat16 weight every creation makes values of that
    dtype, so `randn() * 0.02` (GPT-2's init) and `ones() * 0.5` are float16 expressions:
    only a bare creation was before, and the others were NarrowingConversion errors. A
    bfloat16 `eye` is made in float32 and converted (torch 1.13 has no bfloat16 eye on CPU),
    also in a body of a model converted with `.bfloat16()`."""
    src = """
layer H(w: Tensor<float16, [64, 64]> = randn() * 0.02, b: Tensor<float16, [4]> = zeros() + 1.0,
        g: Tensor<bfloat16, [4]> = ones() * 0.5,
        e: Tensor<bfloat16, [4, 4]> = eye() * 2.0 + full(0.25) - rand() * 0.0,
        k: Tensor<bfloat16, [4, 4]> = kaiming_uniform() * 0.5,
        u: Tensor<float16, [4, 4]> = kaiming_uniform(),
        x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {
    return x @ eye(4) + float32(b) * float32(g) + float32(sum(e, dim=0)) + float32(w[0, 0:4])
}
"""
    torch.manual_seed(11)
    x = torch.randn(3, 4)
    for level in LEVELS:
        model = entry(load(ctx.compile_text(src, level)))()
        got = {k: v.dtype for k, v in model.state_dict().items()}
        want = {"w": torch.float16, "b": torch.float16, "g": torch.bfloat16, "e": torch.bfloat16,
                "k": torch.bfloat16, "u": torch.float16}
        if got != want:
            raise AssertionError("%s: dtypes %s" % (level, got))
        if not 0.01 < float(model.w.float().std()) < 0.03:
            raise AssertionError("%s: randn() * 0.02 has std %s" % (level, model.w.float().std()))
        want_e = torch.full((4, 4), 0.25) + 2.0 * torch.eye(4)
        if not torch.equal(model.b.float(), torch.ones(4)) or \
                not torch.equal(model.g.float(), torch.full((4,), 0.5)) or \
                not torch.equal(model.e.float(), want_e):
            raise AssertionError("%s: initializers %s %s %s" % (level, model.b, model.g, model.e))
        want_y = x + 0.5 + want_e.sum(0) + model.w[0, :4].float()
        check_close(model(x), want_y, level)
        wide = model.bfloat16()
        y = wide(x.bfloat16())
        if y.dtype != torch.bfloat16:
            raise AssertionError("%s: .bfloat16() model gives %s" % (level, y.dtype))
        check_close(y.float(), want_y, level + " bfloat16", atol=0.1, rtol=0.02)


def test_tensor_constants_follow_the_inputs_device(ctx):
    """A top-level tensor constant is made on the default device at import; layers and fns
    use it on their inputs' device, and a fn with no tensor input creates its tensors on the
    device its caller passes (`_device`). Run on torch's `meta` device, which stands in for a GPU
    here: any tensor left on the CPU makes torch refuse to mix them."""
    src = """
let BIAS = tensor([1.0, 2.0, 3.0, 4.0])
let SCALE: Tensor<float32, [4]> = [0.5, 0.5, 2.0, 2.0]
fn shift(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {
    return x * SCALE + ones([4])
}
fn grid(n: int) -> Tensor<float32, [?, ?]> {
    return ones([n, n]) * 0.5
}
fn doubled() -> Tensor<float32, [4]> {
    return BIAS * 2.0 + sum(grid(4), dim=0)
}
layer L(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {
    return (shift(x) + BIAS) @ grid(4) + doubled()
}
"""
    x = torch.randn(2, 4)
    bias = torch.arange(1.0, 5.0)
    want = ((x * torch.tensor([0.5, 0.5, 2.0, 2.0]) + 1 + bias) @ torch.full((4, 4), 0.5)
            + bias * 2 + 2.0)
    for level in LEVELS:
        m = load(ctx.compile_text(src, level))
        check_close(m.L()(x), want, level)
        out = m.L().to("meta")(x.to("meta"))
        if out.device.type != "meta" or tuple(out.shape) != (2, 4):
            raise AssertionError("%s: %s %s" % (level, out.device, tuple(out.shape)))


def test_string_options_compare(ctx):
    """A `str` hyperparameter compares with `==` and `!=` (`if act == "relu"`), as the
    activation choice of a block usually is written."""
    src = """
layer Act(act: str = "relu", x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {
    if act == "relu" {
        return relu(x)
    }
    if act != "gelu" {
        return silu(x)
    }
    return gelu(x)
}
layer Net(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {
    let a = Act("gelu")
    let b = Act()
    let c = Act("silu")
    return a(x) + b(x) + c(x)
}
"""
    x = torch.randn(3, 4, generator=torch.Generator().manual_seed(6))
    for level in LEVELS:
        check_close(entry(load(ctx.compile_text(src, level)))()(x),
                    F.gelu(x) + torch.relu(x) + F.silu(x), level)


def test_gelu_trains_under_token_mixing(ctx):
    """`w @ gelu(h)` (a ternary token-mixing matrix on the left) trains with the float64
    gradients at every level: the gradient gelu receives there is `w^T @ g`, transposed,
    which torch 1.13's CPU gelu backward reads wrongly (tritonrt.gelu makes it contiguous)."""
    src = """
layer Mix(w: TernaryTensor<trit, [5, 8]>, x: Tensor<float32, [?, 8, 6]>) -> Tensor<float32, [?, 5, 6]> {
    return w @ gelu(x * 2.0)
}
"""
    g = torch.Generator().manual_seed(15)
    x0 = torch.randn(3, 8, 6, generator=g)
    out_w = torch.randn(3, 5, 6, generator=g)
    latent = torch.randn(5, 8, generator=g)
    x64 = x0.double().requires_grad_()
    w64 = latent.double().requires_grad_()
    s = w64.detach().abs().mean().clamp(min=1e-5)
    q = (w64.detach() / s).round().clamp(-1, 1) * s + (w64 - w64.detach())
    ((q @ F.gelu(x64 * 2.0)) * out_w.double()).sum().backward()
    for level in LEVELS:
        m = entry(load(ctx.compile_text(src, level)))()
        m.load_state_dict({"w": latent})
        m.train()
        x = x0.clone().requires_grad_()
        (m(x) * out_w).sum().backward()
        check_close(x.grad.double(), x64.grad, level + ": input gradient", atol=1e-4)
        check_close(m.w.grad.double(), w64.grad, level + ": weight gradient", atol=1e-4)


def test_fn_batch_norm_without_the_training_flag(ctx):
    """A fn may call batch_norm with `training=false` (running statistics read, not
    updated) or without running statistics (the batch's): neither reads the training
    flag. Values equal F.batch_norm's in train and eval mode, and the statistics the fn
    reads are never written."""
    src = """
fn norm_eval(x: Tensor<float32, [?, 4]>, m: Tensor<float32, [4]>, v: Tensor<float32, [4]>,
             g: Tensor<float32, [4]>, b: Tensor<float32, [4]>) -> Tensor<float32, [?, 4]> {
    return batch_norm(x, g, b, running_mean=m, running_var=v, training=false)
}
fn norm_batch(x: Tensor<float32, [?, 4]>, g: Tensor<float32, [4]>, b: Tensor<float32, [4]>)
    -> Tensor<float32, [?, 4]> {
    return batch_norm(x, g, b, eps=0.01)
}
layer Net(m: Tensor<float32, [4]>, v: Tensor<float32, [4]> = ones(),
          g: Tensor<float32, [4]> = ones(), b: Tensor<float32, [4]>,
          x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {
    return norm_eval(x, m, v, g, b) + norm_batch(x, g, b)
}
"""
    gen = torch.Generator().manual_seed(16)
    x = torch.randn(5, 4, generator=gen)
    state = {"m": torch.randn(4, generator=gen), "v": torch.rand(4, generator=gen) + 0.5,
             "g": torch.randn(4, generator=gen), "b": torch.randn(4, generator=gen)}
    want = (F.batch_norm(x, state["m"], state["v"], state["g"], state["b"], training=False)
            + F.batch_norm(x, None, None, state["g"], state["b"], training=True, eps=0.01))
    for level in LEVELS:
        m = entry(load(ctx.compile_text(src, level)))()
        m.load_state_dict(state)
        for mode in (True, False):
            m.train(mode)
            with torch.no_grad():
                check_close(m(x), want, "%s, training=%s" % (level, mode))
        for k in ("m", "v"):
            if not torch.equal(getattr(m, k).detach(), state[k]):
                raise AssertionError("%s: the fn wrote the statistic %s" % (level, k))


def test_defaults_computed_from_other_hyperparameters(ctx):
    """A hyperparameter's default computed from another one (`scale: float32 = 1.0 /
    float32(d)`, `h: int = d * 2`) holds in the constructor and in the apply function,
    which a caller reaches by application (`L(x)`, the defaults not given) or with one of
    them given. From -O1 the apply function wrote such a default as an expression statement
    and the hyperparameter as None (TypeError)."""
    src = """
layer L(d: int = 8, scale: float32 = 1.0 / float32(d), h: int = d * 2,
        x: Tensor<float32, [?, d]>) -> Tensor<float32, [?, d]> {
    return x * scale * float32(h)
}
layer Net(x: Tensor<float32, [?, 8]>) -> Tensor<float32, [?, 8]> {
    return L(x) + L(x, h=3) + L(x, scale=0.5)
}
"""
    x = torch.randn(2, 8, generator=torch.Generator().manual_seed(17))
    want = x * (1 / 8) * 16 + x * (1 / 8) * 3 + x * 0.5 * 16
    for level in LEVELS:
        module = load(ctx.compile_text(src, level))
        check_close(module.Net()(x), want, level + ": applied")
        check_close(module.L(d=4)(x[:, :4]), x[:, :4] * 0.25 * 8, level + ": created, d=4")
        check_close(module.L()(x), x * (1 / 8) * 16, level + ": created")


def test_non_square_sizes_match_torch(ctx):
    """Built-in layers' sizes per dimension (`TernaryConv2d(c, o, [1, k], padding=[0, k / 2])`,
    Inception's factorized 7x7; `MaxPool2d([3, 1], stride=[2, 1])`, `AdaptiveAvgPool2d([2, 1])`)
    are torch.nn's tuples: weights [o, c, 1, k] and [o, o, k, 1], the output sizes per
    dimension, the same values and gradients as the hand-written module in training and
    evaluation, and packing keeps the evaluation outputs, at every level (also with `k` given
    another value). Non-square pairs were rejected before."""
    src = """
layer Factorized(c: int, o: int, k: int = 7,
                 x: Tensor<float32, [?, c, 16, 16]>) -> Tensor<float32, [?, o, 2, 1]> {
    let row = TernaryConv2d(c, o, [1, k], padding=[0, k / 2])
    let col = Conv2d(o, o, kernel_size=[k, 1], padding=[k / 2, 0], bias=false)
    let bn = BatchNorm2d(o)
    let pool = MaxPool2d([3, 1], stride=[2, 1], padding=[1, 0])
    let avg = AvgPool2d(kernel_size=[1, 2])
    let head = AdaptiveAvgPool2d([2, 1])
    let h = relu(bn(col(row(x))))
    return head(avg(pool(h)))
}
"""

    class Ref(nn.Module):
        def __init__(self, c, o, k):
            super().__init__()
            self.k = k
            self.row = nn.Conv2d(c, o, (1, k), padding=(0, k // 2), bias=False)
            self.col = nn.Conv2d(o, o, (k, 1), padding=(k // 2, 0), bias=False)
            self.bn = nn.BatchNorm2d(o)

        def forward(self, x):
            # TernaryConv2d: absmean-quantized weight, straight-through gradient
            w = self.row.weight
            w = w + (absmean(w) - w).detach()
            h = F.conv2d(x, w, self.row.bias, 1, (0, self.k // 2))
            h = F.relu(self.bn(self.col(h)))
            h = F.max_pool2d(h, (3, 1), (2, 1), (1, 0))
            return F.adaptive_avg_pool2d(F.avg_pool2d(h, (1, 2)), (2, 1))

    g = torch.Generator().manual_seed(42)
    x = torch.randn(3, 4, 16, 16, generator=g)
    for level in LEVELS:
        module = load(ctx.compile_text(src, level))
        for k in (7, 3):
            what = "%s, k=%d" % (level, k)
            torch.manual_seed(1)
            m = module.Factorized(4, 6, k=k)
            shapes = {key: tuple(v.shape) for key, v in m.state_dict().items()}
            if shapes["row.weight"] != (6, 4, 1, k) or shapes["col.weight"] != (6, 6, k, 1):
                raise AssertionError("%s: weight shapes %s" % (what, shapes))
            ref = Ref(4, 6, k)
            ref.load_state_dict(m.state_dict())
            for mode in ("train", "eval"):
                getattr(m, mode)()
                getattr(ref, mode)()
                xa = x.clone().requires_grad_(True)
                xb = x.clone().requires_grad_(True)
                y, want = m(xa), ref(xb)
                if tuple(y.shape) != (3, 6, 2, 1):
                    raise AssertionError("%s %s: output %s" % (what, mode, tuple(y.shape)))
                check_close(y, want, "%s %s: output" % (what, mode))
                (y * torch.arange(6.0).view(1, 6, 1, 1)).sum().backward()
                (want * torch.arange(6.0).view(1, 6, 1, 1)).sum().backward()
                check_close(xa.grad, xb.grad, "%s %s: input gradient" % (what, mode))
                check_close(m.row.weight.grad, ref.row.weight.grad,
                            "%s %s: latent weight gradient" % (what, mode))
                m.zero_grad()
                ref.zero_grad()
            m.eval()
            with torch.no_grad():
                before = m(x)
                tritonrt.pack(m)
                check_close(m(x), before, what + ": packed")


def test_torch_fx_traces_the_examples(ctx):
    """torch.fx.symbolic_trace (what torchvision's feature extraction and FX quantization run
    on) traces the generated modules from -O1 on (-O0's run-time shape checks are Python
    decisions on sizes, which FX cannot trace): a ternary weight's quantization is one node,
    the fused ops take their written steps, a shape read for its sizes is `x.shape`, a
    created tensor is `x.new_zeros(...)`/`x.new_tensor(...)`, the body's quantizers
    (`act_quant_int8`) are nodes; the traced graph computes what the module does in
    evaluation and training, and a latent weight gets its gradient through it. (Every example
    with ternary weights failed to trace before.)"""
    import torch.fx
    for name in ("mnist_mlp", "cnn_cifar", "resnet_block", "mobilenet_v2", "vit_base",
                 "transformer_block", "bitnet_mlp"):
        for level in ("-O1", "-O2", "-Os"):
            what = "%s %s" % (name, level)
            module = load(ctx.compile(os.path.join(REPO, "examples", name + ".tri"), level,
                                      "--no-cache"))
            torch.manual_seed(3)
            model = entry(module)(**example_kwargs(name))
            traced = torch.fx.symbolic_trace(model)
            (x,) = example_input(name)
            for mode in ("eval", "train"):
                model.train(mode == "train")
                traced.train(mode == "train")
                torch.manual_seed(4)
                want = model(x)
                torch.manual_seed(4)
                got = traced(x)
                check_close(got, want, "%s %s: traced output" % (what, mode))
            model.zero_grad()
            traced(x).float().square().mean().backward()
            latent = [p for n, p in traced.named_parameters()
                      if n.rsplit(".", 1)[-1] in _ternary_names(model, n)]
            latent = latent or [p for p in traced.parameters() if p.dim() >= 2]
            if not latent or any(p.grad is None or not p.grad.abs().sum() > 0 for p in latent):
                raise AssertionError("%s: a latent ternary weight has no gradient through the "
                                     "traced graph" % what)


FX_LEVELS = [level for level in LEVELS if level != "-O0"]


def _check_traced(model, x, want, what):
    """torch.fx.symbolic_trace(model) computes what the module does and what `want` says,
    in evaluation and training; returns the traced graph module."""
    import torch.fx
    traced = torch.fx.symbolic_trace(model)
    for mode in ("eval", "train"):
        model.train(mode == "train")
        traced.train(mode == "train")
        got, expected = traced(x), model(x)
        check_close(expected, want, "%s %s: module output" % (what, mode))
        check_close(got, want, "%s %s: traced output" % (what, mode))
    return traced


def test_torch_fx_traces_causal_attention(ctx):
    """scaled_dot_product_attention(..., is_causal=true) traces with torch.fx at every level
    from -O1 (the causal mask, made from the scores' sizes, is one node): it raised
    "ones() received an invalid combination of arguments - got (Proxy, Proxy, ...)"."""
    import torch.fx
    src = """
layer CausalAttn(d: int = 8, x: Tensor<float32, [?, ?, d]>) -> Tensor<float32, [?, ?, d]> {
    let qkv = Linear(d, 3 * d)
    let parts = split(qkv(x), d, dim=-1)
    let q = unsqueeze(parts[0], 1)
    let k = unsqueeze(parts[1], 1)
    let v = unsqueeze(parts[2], 1)
    return squeeze(scaled_dot_product_attention(q, k, v, is_causal=true), 1)
}
"""
    x = torch.randn(2, 5, 8)
    for level in ("-O1", "-O2", "-O3"):
        torch.manual_seed(0)
        model = entry(load(ctx.compile_text(src, level)))().eval()
        traced = torch.fx.symbolic_trace(model)
        want = model(x)
        check_close(traced(x), want, "%s: traced causal attention" % level)
        # The first position attends to itself only: its output is its own value row.
        v = model.qkv(x)[..., 16:]
        check_close(want[:, 0], v[:, 0], "%s: causal mask" % level)


def test_torch_fx_traces_depthwise_convs_of_hyperparameter_channels(ctx):
    """depthwise_conv2d whose input's channel count is a hyperparameter (`c`, `c * t`) is
    F.conv2d with `groups=self.c` (an int, known at construction), not `x.shape[-3]` (a
    Proxy under torch.fx, which F.conv2d rejects): the modules trace from -O1 on and the
    traced graph computes the hand-written depthwise convolution, for a ternary weight (the
    conv2d rewrite, fused at -O2 with its scale and activation) and a float one, with the
    hyperparameter at its default and given; the latent weight gets its gradient through
    the traced graph."""
    src = """
layer DW(c: int = 4, w: TernaryTensor<trit, [c, 1, 3, 3]>, x: Tensor<float32, [?, c, ?, ?]>)
    -> Tensor<float32, [?, c, ?, ?]> {
    return depthwise_conv2d(x, w, padding=1)
}
layer FloatDW(c: int, w: Tensor<float32, [c, 1, 3, 3]>, x: Tensor<float32, [?, c, ?, ?]>)
    -> Tensor<float32, [?, c, ?, ?]> {
    return depthwise_conv2d(x, w, stride=2, padding=1)
}
layer Expand(c: int, t: int = 2, w: TernaryTensor<trit, [c * t, 1, 3, 3]>,
             x: Tensor<float32, [?, c, ?, ?]>) -> Tensor<float32, [?, c * t, ?, ?]> {
    let expand = TernaryConv2d(c, c * t, 1)
    let h = relu(expand(x))
    return relu(depthwise_conv2d(h, w, padding=1) * 0.5)
}
"""
    g = torch.Generator().manual_seed(53)
    for level in FX_LEVELS:
        module = load(ctx.compile_text(src, level))
        for c in (4, 6):
            what = "%s, c=%d" % (level, c)
            x = torch.randn(2, c, 7, 7, generator=g)
            torch.manual_seed(5)
            m = module.DW() if c == 4 else module.DW(c=c)
            w = m.state_dict()["w"]
            traced = _check_traced(m, x, F.conv2d(x, absmean(w), padding=1, groups=c),
                                   what + " DW")
            traced(x).square().mean().backward()
            if traced.w.grad is None or not traced.w.grad.abs().sum() > 0:
                raise AssertionError("%s DW: no gradient to the latent weight" % what)
            m = module.FloatDW(c)
            w = m.state_dict()["w"]
            _check_traced(m, x, F.conv2d(x, w, stride=2, padding=1, groups=c),
                          what + " FloatDW")
            m = module.Expand(c)
            sd = m.state_dict()
            h = F.relu(F.conv2d(x, absmean(sd["expand.weight"]), sd.get("expand.bias")))
            want = F.relu(F.conv2d(h, absmean(sd["w"]), padding=1, groups=2 * c) * 0.5)
            _check_traced(m, x, want, what + " Expand")


def test_torch_fx_traces_split_pieces(ctx):
    """A split read piece by piece (`parts[0] + parts[1]`, `parts[i]` in a loop) is
    torch.split's tuple, which torch.fx traces (it makes no list of a Proxy:
    `list(torch.split(...))` raised IndexError); the traced graph computes the hand-written
    slices. A split used as a list (returned) is still a list."""
    src = """
layer Sp(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 2]> {
    let parts = split(x, 2, dim=1)
    return parts[0] + parts[1]
}
layer Mix(x: Tensor<float32, [?, 6]>) -> Tensor<float32, [?, 6]> {
    let parts = split(x, 3, dim=1)
    let s = parts[0]
    for i in 1..2 {
        s = s * parts[i]
    }
    let uneven = split(x, [2, 4], dim=1)
    return concat([s, parts[1]], dim=1) + concat([uneven[1], uneven[0]], dim=1)
}
layer Halves(x: Tensor<float32, [?, 4]>) {
    return split(x, 2, dim=1)
}
"""
    x = torch.randn(3, 6, generator=torch.Generator().manual_seed(54))
    for level in FX_LEVELS:
        module = load(ctx.compile_text(src, level))
        _check_traced(module.Sp(), x[:, :4], x[:, :2] + x[:, 2:4], level + " Sp")
        a, b = x[:, :3], x[:, 3:]
        _check_traced(module.Mix(), x,
                      torch.cat([a * b, b], dim=1) + torch.cat([x[:, 2:], x[:, :2]], dim=1),
                      level + " Mix")
        halves = module.Halves()(x[:, :4])
        if not isinstance(halves, list) or len(halves) != 2:
            raise AssertionError("%s: a returned split is %r, not a list of 2"
                                 % (level, type(halves)))
        check_close(halves[1], x[:, 2:4], level + " Halves")


def test_torch_fx_traces_tensor_constants(ctx):
    """A top-level tensor constant read in a body (`x * K`, through a fn, a ternary one in a
    product) is `tritonrt.constant_to(K, x.device, dtype=x.dtype)`, one torch.fx node
    (`K.to(device=x.device, dtype=x.dtype)` raised TypeError under symbolic_trace: a real
    tensor's method given Proxies): the modules trace from -O1 on, and the traced graph
    computes the hand-written product, in float32 and, traced from a model converted with
    .double(), in float64 (docs/pytorch.md "Dtypes of converted models")."""
    src = """
let K = tensor([0.5, -1.0, 2.0, 1.0])
let T = tensor([[1, 0], [0, -1]])
fn scaled(v: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {
    return v * K
}
layer Kc(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {
    let y = scaled(x)
    return concat([y[:, 0:2] @ T, y[:, 2:4]], dim=1)
}
"""
    k = torch.tensor([0.5, -1.0, 2.0, 1.0])
    t = torch.tensor([[1.0, 0.0], [0.0, -1.0]])
    x = torch.randn(3, 4, generator=torch.Generator().manual_seed(55))
    y = x * k
    want = torch.cat([y[:, :2] @ t, y[:, 2:]], dim=1)
    for level in FX_LEVELS:
        module = load(ctx.compile_text(src, level))
        _check_traced(module.Kc(), x, want, level + " Kc")
        traced = _check_traced(module.Kc().double(), x.double(), want.double(),
                               level + " Kc.double()")
        if traced(x.double()).dtype != torch.float64:
            raise AssertionError("%s: the traced float64 model computes in %s"
                                 % (level, traced(x.double()).dtype))
        if module.K.dtype != torch.float32 or not torch.equal(module.K, k):
            raise AssertionError("%s: the constant K changed: %r" % (level, module.K))


def _ternary_names(model, qualified):
    """The ternary weight names of the sub-module that parameter `qualified` belongs to."""
    owner = model
    for part in qualified.split(".")[:-1]:
        owner = getattr(owner, part)
    return tuple(getattr(owner, "_ternary_weights", ()) or ())


def test_running_statistics_weights_take_no_gradient(ctx):
    """Running statistics declared as weights (a functional batch_norm's running_mean and
    running_var, which F.batch_norm updates in place and never differentiates) are Parameters
    with requires_grad=False, so that every trainable Parameter gets a gradient (DDP without
    find_unused_parameters checks it at its second step); they still update in training as
    a hand-written module's buffers do, and the affine weights still train. A weight read
    otherwise as well stays trainable."""
    src = """
layer TBlock(w: TernaryTensor<trit, [8, 3, 3, 3]>,
             g: Tensor<float32, [8]> = ones(), b: Tensor<float32, [8]> = zeros(),
             rm: Tensor<float32, [8]> = zeros(), rv: Tensor<float32, [8]> = ones(),
             x: Tensor<float32, [?, 3, ?, ?]>) -> Tensor<float32, [?, 8, ?, ?]> {
    let h = conv2d(x, w, padding=1)
    return relu(batch_norm(h, g, b, running_mean=rm, running_var=rv))
}
layer Read(g: Tensor<float32, [4]> = ones(), b: Tensor<float32, [4]> = zeros(),
           rm: Tensor<float32, [4]> = zeros(), rv: Tensor<float32, [4]> = ones(),
           x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {
    return batch_norm(x, g, b, running_mean=rm, running_var=rv) + rm
}
"""
    g = torch.Generator().manual_seed(21)
    x = torch.randn(4, 3, 6, 6, generator=g)
    for level in LEVELS:
        module = load(ctx.compile_text(src, level))
        torch.manual_seed(2)
        m = module.TBlock()
        flags = {n: p.requires_grad for n, p in m.named_parameters()}
        if flags != {"w": True, "g": True, "b": True, "rm": False, "rv": False}:
            raise AssertionError("%s: requires_grad %s" % (level, flags))
        sd = {k: v.clone() for k, v in m.state_dict().items()}
        m.train()
        m(x).square().mean().backward()
        missing = [n for n, p in m.named_parameters() if p.requires_grad and p.grad is None]
        if missing:
            raise AssertionError("%s: trainable parameters without a gradient: %s"
                                 % (level, missing))
        # the statistics moved as F.batch_norm moves buffers
        rm, rv = sd["rm"].clone(), sd["rv"].clone()
        h = F.conv2d(x, absmean(sd["w"]), padding=1)
        F.batch_norm(h, rm, rv, sd["g"], sd["b"], training=True)
        check_close(m.rm.detach(), rm, level + ": running_mean")
        check_close(m.rv.detach(), rv, level + ": running_var")
        r = module.Read()
        if not r.rm.requires_grad:
            raise AssertionError("%s: a statistic read otherwise too lost requires_grad" % level)


def test_several_results_are_a_list(ctx):
    """A layer with two heads returns a list (`return [a, b]`, no result type: docs/pytorch.md
    "Several results"); forward returns a Python list, a caller indexes it, and the
    gradients of both heads reach the shared trunk, at every level."""
    src = """
layer TwoHeads(x: Tensor<float32, [?, 8]>) {
    let trunk = TernaryLinear(8, 6)
    let cls = Linear(6, 3)
    let reg = Linear(6, 1)
    let h = relu(trunk(x))
    return [cls(h), reg(h)]
}
layer Net(x: Tensor<float32, [?, 8]>) -> Tensor<float32, [?, 3]> {
    let heads = TwoHeads()
    let outs = heads(x)
    return outs[0] * outs[1]
}
"""
    g = torch.Generator().manual_seed(18)
    x = torch.randn(4, 8, generator=g)
    for level in LEVELS:
        module = load(ctx.compile_text(src, level))
        torch.manual_seed(0)
        m = module.TwoHeads()
        outs = m(x)
        if not isinstance(outs, list) or len(outs) != 2:
            raise AssertionError("%s: forward returned %r, not a list of 2" % (level, type(outs)))
        sd = m.state_dict()
        h = F.relu(F.linear(x, absmean(sd["trunk.weight"]), sd["trunk.bias"]))
        check_close(outs[0], F.linear(h, sd["cls.weight"], sd["cls.bias"]), level + ": cls")
        check_close(outs[1], F.linear(h, sd["reg.weight"], sd["reg.bias"]), level + ": reg")
        net = module.Net()
        net.heads.load_state_dict(sd)
        y = net(x)
        check_close(y, outs[0].detach() * outs[1].detach(), level + ": indexed")
        y.sum().backward()
        if net.heads.trunk.weight.grad is None or net.heads.reg.weight.grad is None:
            raise AssertionError("%s: a head's gradient did not reach the weights" % level)


def test_one_sub_module_name_in_exclusive_branches(ctx):
    """`if gated { let proj = TernaryLinear(d, d) } else { let proj = Linear(d, d) }`: one
    attribute either way, as a PyTorch module writes `self.proj = A if gated else B`; the
    state_dict has `proj.*` in both configurations."""
    src = """
layer Head(d: int, gated: bool = true, x: Tensor<float32, [?, d]>) -> Tensor<float32, [?, d]> {
    let y = x
    if gated {
        let proj = TernaryLinear(d, d)
        y = proj(x)
    } else {
        let proj = Linear(d, d, bias=false)
        y = relu(proj(x))
    }
    return y
}
"""
    torch.manual_seed(1)
    x = torch.randn(3, 8)
    w = torch.randn(8, 8)
    for level in LEVELS:
        cls = entry(load(ctx.compile_text(src, level)))
        for gated in (True, False):
            model = cls(d=8, gated=gated).eval()
            keys = sorted(model.state_dict())
            want_keys = ["proj.bias", "proj.weight"] if gated else ["proj.weight"]
            if keys != want_keys:
                raise AssertionError("%s gated=%s: keys %s" % (level, gated, keys))
            with torch.no_grad():
                model.proj.weight.copy_(w)
                if gated:
                    model.proj.bias.zero_()
                want = x @ absmean(w).t() if gated else torch.relu(x @ w.t())
                check_close(model(x), want, "%s gated=%s" % (level, gated))


def test_runtime_shape_check_at_O0(ctx):
    src = """
layer L(w: Tensor<float32, [8, 4]>, x: Tensor<float32, [?, ?]>) -> Tensor<float32, [?, 4]> {
    return x @ w
}
"""
    model = entry(load(ctx.compile_text(src, "-O0")))()
    try:
        model(torch.randn(2, 5))
    except ValueError as e:
        if "shape mismatch" not in str(e):
            raise AssertionError("unexpected message: %s" % e)
    else:
        raise AssertionError("-O0 did not check the shape at run time")
    check_close(model(torch.zeros(2, 8)), torch.zeros(2, 4), "shape check passes valid input")


def test_runtime_check_names_the_expected_value(ctx):
    """A size variable in the -O0 run-time check is given with its value: "dimension 1 is 5,
    but m = 3 was expected"."""
    src = """
fn proj(a: Tensor<float32, [?, n]>, w: Tensor<float32, [m, k]>) -> Tensor<float32, [?, k]> {
    return a @ w
}
"""
    module = load(ctx.compile_text(src, "-O0"))
    try:
        module.proj(torch.ones(2, 5), torch.ones(3, 4))
    except ValueError as e:
        if not str(e).endswith("shape mismatch: dimension 1 of 'a' is 5, but m = 3 was expected"):
            raise AssertionError("unexpected message: %s" % e)
    else:
        raise AssertionError("-O0 did not check the shape at run time")
    check_close(module.proj(torch.ones(2, 3), torch.ones(3, 4)), torch.full((2, 4), 3.0), "-O0")


def expect_check_failures(cases):
    """Each (call, message): the call raises the -O0 check's ValueError ending in message."""
    for call, message in cases:
        try:
            call()
        except ValueError as e:
            if not str(e).endswith(message):
                raise AssertionError("unexpected message: %s (expected ...%s)" % (e, message))
        else:
            raise AssertionError("-O0 did not check: %s" % message)


def test_inputs_are_checked_against_their_declared_type_at_O0(ctx):
    """At -O0 a tensor input of the wrong rank or of a size its declared type fixes (a
    constant, a hyperparameter, a size variable another input binds, a fn's int input) fails at
    entry with the parameter's location; -O2 trusts the declared type; valid inputs pass at
    both."""
    src = """
layer Net(n_out: int = 4, w: TernaryTensor<trit, [6, n_out]>,
          x: Tensor<float32, [?, 6]>, y: Tensor<float32, [?, n_out]>) -> Tensor<float32, [?, n_out]> {
    return x @ w + y
}
fn pair(a: Tensor<float32, [?, k]>, b: Tensor<float32, [k, ?]>) -> Tensor<float32, [?, ?]> {
    return a @ b
}
fn scale(n: int, x: Tensor<float32, [n]>) -> Tensor<float32, [n]> { return x * float32(n) }
"""
    module = load(ctx.compile_text(src, "-O0"))
    model = module.Net().eval()
    cases = [
        (lambda: model(torch.ones(2, 5), torch.ones(2, 4)),
         ":3:11: shape mismatch: dimension 1 of 'x' is 5, but 6 was expected"),
        (lambda: model(torch.ones(6), torch.ones(2, 4)),
         ":3:11: shape mismatch: 'x' has 1 dimensions, but 2 were expected"),
        (lambda: model(torch.ones(2, 6), torch.ones(2, 3)),
         ":3:39: shape mismatch: dimension 1 of 'y' is 3, but n_out = 4 was expected"),
        (lambda: module.pair(torch.ones(2, 3), torch.ones(4, 2)),
         ":6:37: shape mismatch: dimension 0 of 'b' is 4, but k = 3 was expected"),
        (lambda: module.scale(2, torch.ones(3)),
         ":9:18: shape mismatch: dimension 0 of 'x' is 3, but n = 2 was expected"),
    ]
    expect_check_failures(cases)
    with torch.no_grad():
        check_close(model(torch.ones(2, 6), torch.zeros(2, 4)),
                    torch.ones(2, 6) @ tritonrt.weight(model, "w"), "-O0 valid input")
    check_close(module.pair(torch.ones(2, 3), torch.ones(3, 2)), torch.full((2, 2), 3.0), "-O0")
    check_close(module.scale(3, torch.ones(3)), torch.full((3,), 3.0), "-O0")
    # -O2 trusts the types: the same wrong call reaches torch, which raises its own error.
    fast = load(ctx.compile_text(src, "-O2")).Net().eval()
    try:
        fast(torch.ones(2, 5), torch.ones(2, 4))
    except RuntimeError:
        pass
    else:
        raise AssertionError("-O2 accepted a [2, 5] input to a [6, 4] product")


def test_values_of_unknown_rank_are_checked_at_O0(ctx):
    """A value whose rank the checker cannot know (`squeeze` of a `?` dimension, a
    `Tensor<float32>` input) returned as a ranked type: -O0 checks its rank and the sizes
    the type fixes (it once returned a [3, 4] tensor from a fn declared to return [?])."""
    src = """
fn sq(x: Tensor<float32, [?, ?]>) -> Tensor<float32, [?]> {
    return squeeze(x, 1)
}
fn anyrank(x: Tensor<float32>) -> Tensor<float32, [?, 3]> {
    return x
}
"""
    module = load(ctx.compile_text(src, "-O0"))
    cases = [
        (lambda: module.sq(torch.ones(3, 4)),
         ":3:12: shape mismatch: 'squeeze(x, 1)' has 2 dimensions, but 1 was expected"),
        (lambda: module.anyrank(torch.ones(5)),
         ":6:12: shape mismatch: 'x' has 1 dimensions, but 2 were expected"),
        (lambda: module.anyrank(torch.ones(2, 4)),
         ":6:12: shape mismatch: dimension 1 of 'x' is 4, but 3 was expected"),
    ]
    expect_check_failures(cases)
    check_close(module.sq(torch.ones(3, 1)), torch.ones(3), "-O0 valid squeeze")
    check_close(module.anyrank(torch.ones(2, 3)), torch.ones(2, 3), "-O0 valid rank")


def test_mixed_float_operands_take_the_language_dtype(ctx):
    """Element-wise operators on float tensors of two dtypes compute in the dtype LANGUAGE.md
    section 3 gives (float16 < bfloat16 < float32), where torch would not: float16 + bfloat16
    is float32 in torch, and a 0-d float32 operand (a reduction) never widens a float16 one."""
    src = """
fn center(a: Tensor<float16, [?, 4]>, x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {
    return a - mean(x)
}
fn mix(a: Tensor<float16, [?, 4]>, b: Tensor<bfloat16, [?, 4]>) -> Tensor<bfloat16, [?, 4]> {
    return a + b
}
"""
    a = torch.full((1, 4), 1000.0, dtype=torch.float16)
    x = torch.full((2, 4), 0.3)
    h = torch.ones(1, 4, dtype=torch.float16)
    b = torch.ones(1, 4, dtype=torch.bfloat16)
    for level in LEVELS:
        module = load(ctx.compile_text(src, level))
        got = module.center(a, x)
        if got.dtype != torch.float32:
            raise AssertionError("%s: center gives %s" % (level, got.dtype))
        check_close(got, a.float() - x.mean(), level)
        got = module.mix(h, b)
        if got.dtype != torch.bfloat16:
            raise AssertionError("%s: mix gives %s" % (level, got.dtype))
        check_close(got.float(), torch.full((1, 4), 2.0), level)


def test_tensor_with_a_number_promotes_as_the_language_says(ctx):
    """A tensor with a scalar variable, a wider 0-d tensor, or a literal that does not fit its
    dtype computes in the promoted dtype of LANGUAGE.md section 3, where torch keeps the
    tensor's dtype (an int8 tensor compared with 200 wrapped it to -56; `x_int8 == 300` was
    True for 44; float16 + 70000.0 overflowed to inf). A literal that fits still adapts.
    Products of integer tensors of two widths compute in the wider (torch raised)."""
    src = """
fn lt_var(x: Tensor<int8, [?]>, n: int) -> Tensor<bool, [?]> { return x < n }
fn eq_lit(x: Tensor<int8, [?]>) -> Tensor<bool, [?]> { return x == 300 }
fn add_var(x: Tensor<int8, [?]>, n: int) -> Tensor<int32, [?]> { return x + n }
fn mul_lit(x: Tensor<int8, [?]>) -> Tensor<int32, [?]> { return x * 300 }
fn mul_fit(x: Tensor<int8, [?]>) -> Tensor<int8, [?]> { return x * 2 }
fn f16_var(x: Tensor<float16, [?]>, f: float) -> Tensor<float32, [?]> { return x + f }
fn f16_lit(x: Tensor<float16, [?]>) -> Tensor<float32, [?]> { return x * 70000.0 }
fn f16_fit(x: Tensor<float16, [?]>) -> Tensor<float16, [?]> { return x * 0.5 }
fn int_half(x: Tensor<int16, [?]>, h: float16) -> Tensor<float16, [?]> { return x * h }
fn add_sum(x: Tensor<int8, [?]>, y: Tensor<int32, [?]>) -> Tensor<int64, [?]> {
    return x + sum(y)
}
fn add_elem(x: Tensor<int8, [?]>, y: Tensor<int32, [?]>) -> Tensor<int32, [?]> {
    return x + y[0]
}
fn lt_max(x: Tensor<int8, [?]>, y: Tensor<int32, [?]>) -> Tensor<bool, [?]> { return x < max(y) }
fn mm(x: Tensor<int8, [?, 2]>, w: Tensor<int32, [2, 3]>) -> Tensor<int32, [?, 3]> { return x @ w }
fn lin(x: Tensor<int64, [?, 2]>, w: Tensor<int16, [3, 2]>) -> Tensor<int64, [?, 3]> {
    return linear(x, w)
}
"""
    x = torch.tensor([44, 1], dtype=torch.int8)
    h = torch.tensor([1.0, 2.0], dtype=torch.float16)
    y = torch.tensor([300, 200], dtype=torch.int32)
    wide = x.to(torch.int64)
    cases = [
        ("lt_var", (x, 200), wide < 200),
        ("eq_lit", (x,), wide == 300),
        ("add_var", (x, 200), (wide + 200).int()),
        ("mul_lit", (x,), (wide * 300).int()),
        ("mul_fit", (x,), x * 2),
        ("f16_var", (h, 70000.0), h.float() + 70000.0),
        ("f16_lit", (h,), h.float() * 70000.0),
        ("f16_fit", (h,), h * 0.5),
        ("int_half", (torch.tensor([3, -5], dtype=torch.int16), 0.5),
         torch.tensor([1.5, -2.5], dtype=torch.float16)),
        ("add_sum", (x, y), wide + 500),
        ("add_elem", (x, y), (wide + 300).int()),
        ("lt_max", (x, y), wide < 300),
        ("mm", (x.reshape(1, 2), torch.full((2, 3), 100, dtype=torch.int32)),
         torch.full((1, 3), 4500, dtype=torch.int32)),
        ("lin", (wide.reshape(1, 2), torch.full((3, 2), 1000, dtype=torch.int16)),
         torch.full((1, 3), 45000, dtype=torch.int64)),
    ]
    for level in LEVELS:
        module = load(ctx.compile_text(src, level))
        for name, args, want in cases:
            got = getattr(module, name)(*args)
            if got.dtype != want.dtype or not torch.equal(got, want):
                raise AssertionError("%s: %s gives %r, wanted %r" % (level, name, got, want))


def test_list_elements_can_be_assigned(ctx):
    """`xs[i] = v` on a list replaces one element of a copy (value semantics, as for tensors):
    the module once called `.clone()` on the Python list."""
    src = """
fn first(n: int) -> int {
    let xs = [1, 2, 3]
    let ys = xs
    ys[0] = 100
    return xs[0] + ys[0] * n
}
fn loop(n: int) -> int {
    let xs = [n, n]
    for i in range(2) { xs[i] = xs[i] * 10 + i }
    return xs[0] + xs[1]
}
fn rows(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {
    let parts = [x, x]
    parts[1] = x * 2.0
    return parts[0] + parts[1]
}
"""
    x = torch.arange(8.0).reshape(2, 4)
    for level in LEVELS:
        module = load(ctx.compile_text(src, level))
        got = (module.first(5), module.loop(2))
        if got != (501, 41):
            raise AssertionError("%s: list assignment gives %s" % (level, got))
        check_close(module.rows(x), 3.0 * x, level)


def test_inlining_keeps_loop_nests_within_python_limits(ctx):
    """CPython compiles at most 20 nested loops in one function. The checker holds each body to
    that; the inliner must not nest a callee's 10 loops inside a caller's 15 (at -O3 the module
    failed at import with "too many statically nested blocks")."""
    def nest(count, var, trips, body):
        head = "".join("for %s%d in range(%d) {\n" % (var, i, trips) for i in range(count))
        return head + body + "\n" + "}\n" * count
    src = ("fn inner(c: int) -> int {\nlet d = c\n" + nest(10, "j", 2, "d += 1") +
           "return d\n}\n" + "fn outer() -> int {\nlet c = 0\n" + nest(15, "i", 1, "c = inner(c)") +
           "return c\n}\n")
    for level in LEVELS:
        module = load(ctx.compile_text(src, level))
        if module.outer() != 1024:
            raise AssertionError("%s: outer() gives %s" % (level, module.outer()))


def test_else_if_chains_are_written_with_elif(ctx):
    """An else-if chain of 150 arms is written as `if ... elif ...` (nesting each `if` in the
    previous `else:` would pass Python's 100 indentation levels), both when the arms return and
    when they assign a variable, and picks the right arm, at every level: -O0, which writes
    each value as a statement of its own, writes such a condition into its `elif` too (the
    chain nested there, and 98 arms were too deep). A chain whose conditions take two
    statements at -O0 (`k == -3`: the negation first) still nests there, and the compiler says
    it is too deep. (Conditions written past the 100th column were wrapped as `(k == 30,)`, a
    tuple, which is always true.)"""
    def chain(arms, style, sign=""):
        lines = ["fn pick(k: int) -> int {", "    let r = -1"]
        for i in range(arms):
            head = "    if" if i == 0 else "    } else if"
            lines.append("%s k == %s%d {" % (head, sign, i))
            lines.append("        return %d" % (i * i) if style == "return" else
                         "        r = %d" % (i * i))
        lines += ["    }", "    return r", "}"]
        return "\n".join(lines) + "\n"
    for arms, levels in ((150, LEVELS), (60, LEVELS)):
        for style in ("return", "assign"):
            src = chain(arms, style)
            for level in levels:
                path = ctx.compile_text(src, level)
                module = load(path)
                got = [module.pick(k) for k in (0, 1, 29, 30, arms - 1, arms, -3)]
                want = [0, 1, 29 * 29, 30 * 30, (arms - 1) ** 2, -1, -1]
                if got != want:
                    raise AssertionError("%d arms, %s, %s: %s, expected %s"
                                         % (arms, style, level, got, want))
                elifs = open(path).read().count("elif ")
                if elifs != arms - 1:
                    raise AssertionError("%d arms, %s, %s: %d elifs" % (arms, style, level, elifs))
    src = os.path.join(ctx.workdir, "chain150.tri")
    with open(src, "w") as f:
        f.write(chain(150, "return", sign="-"))
    proc = subprocess.run([ctx.tritonc, "compile", "-O0", "-o", os.path.join(ctx.workdir, "c.py"),
                           src], capture_output=True, text=True)
    if proc.returncode != 1 or "[TooDeepForPython]" not in proc.stderr:
        raise AssertionError("-O0: exit %d, %s" % (proc.returncode, proc.stderr))


def test_bools_widen_in_arithmetic(ctx):
    """`bool` is the bottom of LANGUAGE.md section 3's promotion order: a mask times a float
    tensor is float32, `flag + 1` an int, `mask * n` an int32 tensor (torch would give int64
    for a Python int). Two bools still only compare for equality."""
    src = """
fn masked(x: Tensor<float32, [?]>, m: Tensor<bool, [?]>) -> Tensor<float32, [?]> { return x * m }
fn plus(a: bool) -> int { return a + 1 }
fn scaled(a: bool, f: float) -> float { return f * a }
fn bumped(x: Tensor<int8, [?]>, m: Tensor<bool, [?]>) -> Tensor<int8, [?]> { return x + m }
fn times(m: Tensor<bool, [?]>, n: int) -> Tensor<int32, [?]> { return m * n }
fn twice(m: Tensor<bool, [?]>) -> Tensor<int32, [?]> { return m * 2 }
fn same(a: bool, n: int) -> bool { return a == n }
"""
    m = torch.tensor([True, False])
    cases = [
        ("masked", (torch.tensor([1.5, 2.0]), m), torch.tensor([1.5, 0.0])),
        ("bumped", (torch.tensor([1, 2], dtype=torch.int8), m),
         torch.tensor([2, 2], dtype=torch.int8)),
        ("times", (m, 300), torch.tensor([300, 0], dtype=torch.int32)),
        ("twice", (m,), torch.tensor([2, 0], dtype=torch.int32)),
    ]
    for level in LEVELS:
        module = load(ctx.compile_text(src, level))
        got = (module.plus(True), module.scaled(True, 2.5), module.same(True, 1))
        if got != (2, 2.5, True):
            raise AssertionError("%s: bool scalars give %s" % (level, got))
        for name, args, want in cases:
            got = getattr(module, name)(*args)
            if got.dtype != want.dtype or not torch.equal(got, want):
                raise AssertionError("%s: %s gives %r, wanted %r" % (level, name, got, want))


def test_int64_minimum_is_a_literal(ctx):
    """`-9223372036854775808` is int64's minimum: 2^63 alone does not fit int64, its negation
    does (it was LiteralDoesNotFit)."""
    src = """
let LOWEST: int64 = -9223372036854775808
fn lo() -> int64 { return -9223372036854775808 }
fn as_float() -> float { return -9223372036854775808 }
fn below(n: int64) -> bool { return n > -9223372036854775808 }
"""
    for level in LEVELS:
        module = load(ctx.compile_text(src, level))
        got = (module.LOWEST, module.lo(), module.as_float(), module.below(-2 ** 63),
               module.below(0))
        if got != (-2 ** 63, -2 ** 63, -2.0 ** 63, False, True):
            raise AssertionError("%s: int64 minimum gives %s" % (level, got))


def test_scalar_rounding_keeps_floats(ctx):
    """`floor`, `ceil` and `round` of a float scalar are floats with torch's meaning: 2.0 (not
    2), inf and nan pass through (math.floor raised OverflowError/ValueError), halves round to
    even. Of an int they stay ints."""
    src = """
fn fl(a: float) -> float { return floor(a) }
fn ce(a: float) -> float { return ceil(a) }
fn rd(a: float) -> float { return round(a) }
fn whole(n: int) -> int { return floor(n) + ceil(n) + round(n) }
"""
    values = [2.5, -2.5, 3.5, -0.5, float("inf"), float("-inf"), float("nan")]
    for level in LEVELS:
        module = load(ctx.compile_text(src, level))
        for name, op in (("fl", torch.floor), ("ce", torch.ceil), ("rd", torch.round)):
            got = torch.tensor([getattr(module, name)(v) for v in values], dtype=torch.float64)
            want = op(torch.tensor(values, dtype=torch.float64))
            kinds = {type(getattr(module, name)(v)) for v in values}
            if kinds != {float} or not torch.equal(got.nan_to_num(7.0), want.nan_to_num(7.0)):
                raise AssertionError("%s: %s gives %s (%s), wanted %s" % (level, name, got, kinds,
                                                                       want))
        if module.whole(3) != 9 or type(module.whole(3)) is not int:
            raise AssertionError("%s: whole(3) gives %r" % (level, module.whole(3)))


def test_scalar_min_max_propagate_nan(ctx):
    """Scalar `min`/`max` of floats give nan when either side is nan, as torch.minimum and
    torch.maximum do (Python's min(1.0, nan) is 1.0, min(nan, 1.0) nan), at every level,
    constant-folded or not."""
    src = """
fn lo(a: float, b: float) -> float { return min(a, b) }
fn hi(a: float, b: float) -> float { return max(a, b) }
fn mixed(a: int, b: float) -> float { return min(a, b) + max(b, a) }
fn folded() -> float { return min(1.0, 2.0) + max(3.0, -1.0) }
"""
    nan = float("nan")
    pairs = [(1.0, nan), (nan, 1.0), (nan, nan), (1.0, 2.0), (2.0, -1.0), (float("inf"), 3.0)]
    for level in LEVELS:
        module = load(ctx.compile_text(src, level))
        for a, b in pairs:
            for name, op in (("lo", torch.minimum), ("hi", torch.maximum)):
                got = getattr(module, name)(a, b)
                want = op(torch.tensor(a, dtype=torch.float64),
                          torch.tensor(b, dtype=torch.float64)).item()
                if not (got == want or (got != got and want != want)):
                    raise AssertionError("%s: %s(%r, %r) gives %r, torch %r" % (level, name, a, b,
                                                                               got, want))
        if not math.isnan(module.mixed(1, nan)) or module.mixed(1, 2.0) != 3.0:
            raise AssertionError("%s: mixed gives %r, %r" % (level, module.mixed(1, nan),
                                                            module.mixed(1, 2.0)))
        if module.folded() != 4.0:
            raise AssertionError("%s: folded() gives %r" % (level, module.folded()))


def test_clip_bounds_and_keepdim_without_dim(ctx):
    """`clip` with one tensor bound and one number bound (torch.clamp takes two of a kind),
    reductions with `keepdim=true` but no `dim`, which keep every dimension as 1 as the checker
    types them (torch drops keepdim without a dim), and `clip`/`pow` of a bool tensor with
    integers, typed int64 as torch computes them (they were typed bool: a mask)."""
    src = """
fn lo_t(x: Tensor<float32, [?, 4]>, lo: Tensor<float32, [4]>) -> Tensor<float32, [?, 4]> {
    return clip(x, lo, 0.5)
}
fn hi_t(x: Tensor<float32, [?, 4]>, hi: Tensor<float32, [4]>) -> Tensor<float32, [?, 4]> {
    return clip(x, -0.5, hi)
}
fn kept(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [1, 1]> {
    return sum(x, keepdim=true) + mean(x, keepdim=true) + max(x, keepdim=true) +
        min(x, keepdim=true) + std(x, keepdim=true)
}
fn kept_arg(x: Tensor<float32, [?, 4]>) -> Tensor<int64, [1, 1]> { return argmax(x, keepdim=true) }
fn corner(x: Tensor<float32, [?, 4]>) -> Tensor<float32, []> { return sum(x, keepdim=true)[0, 0] }
fn mask_clip(m: Tensor<bool, [?]>) -> Tensor<int64, [?]> { return clip(m, 0, 10) + pow(m, 2) }
"""
    x = torch.randn(3, 4)
    bound = torch.tensor([-1.0, 0.0, 0.2, 1.0])
    all_dims = (0, 1)
    want = (x.sum(dim=all_dims, keepdim=True) + x.mean(dim=all_dims, keepdim=True)
            + x.amax(dim=all_dims, keepdim=True) + x.amin(dim=all_dims, keepdim=True)
            + x.std(dim=all_dims, keepdim=True))
    for level in LEVELS:
        module = load(ctx.compile_text(src, level))
        check_close(module.lo_t(x, bound), torch.clamp(torch.maximum(x, bound), max=0.5), level)
        check_close(module.hi_t(x, bound), torch.minimum(torch.clamp(x, min=-0.5), bound), level)
        got = module.kept(x)
        if got.shape != (1, 1):
            raise AssertionError("%s: keepdim without dim gives shape %s" % (level, got.shape))
        check_close(got, want, level)
        arg = module.kept_arg(x)
        if arg.shape != (1, 1) or arg.item() != torch.argmax(x).item():
            raise AssertionError("%s: argmax(keepdim=true) gives %s" % (level, arg))
        check_close(module.corner(x), x.sum(), level)
        # A bool tensor with integer numbers computes in int64, as typed.
        m = torch.tensor([True, False, True])
        got = module.mask_clip(m)
        if got.dtype != torch.int64 or got.tolist() != [2, 0, 2]:
            raise AssertionError("%s: clip/pow of a mask give %s" % (level, got))


def test_long_attention_expressions_wrap_into_valid_python(ctx):
    """At -Os the attention with an additive padding mask is written out as one expression; its
    line wrapping once took an earlier call's commas for the last call's and wrote a module
    that failed at import. Every level imports and computes softmax(q k^T / sqrt(d) + mask) v."""
    src = """
fn attend(query: Tensor<float32, [?, ?, ?, ?]>, keys: Tensor<float32, [?, ?, ?, ?]>,
          values: Tensor<float32, [?, ?, ?, ?]>, pad: Tensor<float32, [?, ?]>)
    -> Tensor<float32, [?, ?, ?, ?]> {
    let bias = reshape(pad * -1e9, [pad.shape[0], 1, 1, pad.shape[1]])
    return scaled_dot_product_attention(query, keys, values, mask=bias)
}
"""
    q, k, v = torch.randn(2, 3, 5, 4), torch.randn(2, 3, 6, 4), torch.randn(2, 3, 6, 4)
    pad = (torch.rand(2, 6) > 0.7).float()
    bias = (pad * -1e9).reshape(2, 1, 1, 6)
    want = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(4) + bias, dim=-1) @ v
    for level in LEVELS:
        path = ctx.compile_text(src, level)
        with open(path) as f:
            long_lines = [n for n, text in enumerate(f, 1) if len(text.rstrip("\n")) > 100]
        if long_lines:
            raise AssertionError("%s: lines over 100 columns: %s" % (level, long_lines))
        check_close(load(path).attend(q, k, v, pad), want, level)


def test_the_header_and_kernel_registration_keep_to_100_columns(ctx):
    """The header comment and `tritonrt.use_kernels(...)` are stamped with the input's name
    after the code was wrapped, and were never wrapped: `resnet_block.tri -O2 --entry
    BasicBlock --target cuda` gave a 106-column header, a long file name 131 columns and a
    101-column registration (audit 46B). Both are wrapped now, the names kept whole."""
    # (The second name keeps its two spaces: it is one word of the header, review 46I.)
    for stem, flags in (
            ("a_rather_long_model_file_name_as_experiment_trackers_write_them_run_0042",
             ["-O2", "--entry", "BasicBlock", "--target", "cuda"]),
            ("a_rather_long_model_file_name_as_experiment_trackers_write_them_run_0042",
             ["-O0", "--target", "all", "--no-cache"]),
            ("a_rather_long_model_file_name_as_experiment_trackers_write_them_run_0042",
             ["-O2", "--entry", "BasicBlock"]),
            ("a rather long model  file name with  two spaces as trackers write them, run 43",
             ["-O2", "--entry", "BasicBlock", "--target", "cuda"])):
        work = os.path.join(ctx.workdir, "header%d" % ctx.count)
        os.makedirs(work)
        ctx.count += 1
        src = os.path.join(work, stem + ".tri")
        shutil.copy(os.path.join(REPO, "examples", "resnet_block.tri"), src)
        env = dict(os.environ, TRITONC_NVCC=os.path.join(work, "no-nvcc"))
        out = os.path.join(work, stem + ".py")
        proc = subprocess.run([ctx.tritonc, "compile", src, "-o", out] + flags,
                              capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            raise AssertionError("tritonc failed (%d): %s" % (proc.returncode, proc.stderr))
        with open(out, encoding="utf-8") as f:
            text = f.read()
        long_lines = [n for n, line in enumerate(text.splitlines(), 1) if len(line) > 100]
        if long_lines:
            raise AssertionError("%s: lines over 100 columns: %s" % (flags, long_lines))
        header = []
        for line in text.splitlines():
            if not line.startswith("#"):
                break
            header.append(line[1:].strip())
        joined = " ".join(header)
        want = "Generated by tritonc %s from %s.tri with %s. Do not edit." % (
            joined.split()[3], stem, " ".join(f for f in flags if f != "--no-cache")
            .replace("--target all", "--target cuda"))
        if joined != want:
            raise AssertionError("%s: header %r, wanted %r" % (flags, joined, want))
        module = load(out)
        if "--target" in flags and module.__dict__.get("tritonrt") is None:
            raise AssertionError("%s: no tritonrt import" % flags)
        if "--target" in flags and ("%s_kernels.so" % stem) not in text:
            raise AssertionError("%s: the library is not registered" % flags)


def test_long_strings_wrap_within_100_columns(ctx):
    """A string from the source longer than a line (a top-level constant, a `str`
    hyperparameter's default, a message printed by `main`) is written as adjacent literals in
    parentheses, so the file keeps to 100 columns; Python joins them back into the same
    string, escapes and non-ASCII text included."""
    long_text = ("the model with the extremely long name compiled and ran; the output is "
                 "\"fine\"\n -- \u00fcn\u00efc\u00f6d\u00e9 text that goes well past one "
                 "hundred columns of text")
    source_text = long_text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    src = """
let BANNER = "%(t)s"

layer Pick(mode: str = "%(t)s", x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {
    if mode == BANNER {
        return relu(x)
    }
    return -x
}

layer Net(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {
    let same = Pick()
    let other = Pick("short")
    return same(x) + other(x)
}

main {
    print("%(t)s")
    print(BANNER)
}
""" % {"t": source_text}
    x = torch.randn(3, 4, generator=torch.Generator().manual_seed(11))
    for level in LEVELS:
        path = ctx.compile_text(src, level)
        with open(path, encoding="utf-8") as f:
            long_lines = [n for n, text in enumerate(f, 1) if len(text.rstrip("\n")) > 100]
        if long_lines:
            raise AssertionError("%s: lines over 100 columns: %s" % (level, long_lines))
        module = load(path)
        if module.BANNER != long_text:
            raise AssertionError("%s: BANNER is %r" % (level, module.BANNER))
        check_close(module.Net()(x), torch.relu(x) - x, level)
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            module.main()
        if printed.getvalue() != long_text + "\n" + long_text + "\n":
            raise AssertionError("%s: main printed %r" % (level, printed.getvalue()))


LONG_LINES = r"""
let IMAGENET_CHANNEL_STATISTICS = tensor([[0.485, 0.456, 0.406], [0.229, 0.224, 0.225]])
let GREETING_PRINTED_BY_THE_MAIN_FUNCTION = "tabs\tand \"quotes\" and backslashes \\ in a message that main prints, long enough for two literals"

layer Normalize(pixel_values_batch: Tensor<float32, [?, 3, ?, ?]>) -> Tensor<float32, [?, 3, ?, ?]> {
    assert(pixel_values_batch.shape[1] == 3, "expected an RGB image batch: three channels in dimension 1, not another count of channels, please")
    return pixel_values_batch - reshape(IMAGENET_CHANNEL_STATISTICS[0], [1, 3, 1, 1])
}

fn accumulate_nested(first_input_of_the_function: Tensor<float32, [?, ?]>,
                     second_input_of_the_function: Tensor<float32, [?, ?]>) -> Tensor<float32, [?, ?]> {
    let accumulated_total_of_products = first_input_of_the_function
    for outer_iteration_index in range(2) {
        for inner_iteration_index in range(2) {
            if outer_iteration_index == inner_iteration_index {
                let both_inputs_one_after_the_other = concat([first_input_of_the_function, second_input_of_the_function, accumulated_total_of_products], dim=0)
                accumulated_total_of_products = accumulated_total_of_products + both_inputs_one_after_the_other[0:first_input_of_the_function.shape[0]] * second_input_of_the_function
            }
        }
    }
    return accumulated_total_of_products
}

fn deeply_nested(left_operand_with_a_long_name: Tensor<float32, [?, ?]>,
                 right_operand_with_a_long_name: Tensor<float32, [?, ?]>) -> Tensor<float32, [?, ?]> {
    let running_total_across_all_the_levels = left_operand_with_a_long_name
    for level_1 in range(1) { for level_2 in range(1) { for level_3 in range(1) {
        for level_4 in range(1) { for level_5 in range(1) { for level_6 in range(1) {
            for level_7 in range(1) { for level_8 in range(1) {
                running_total_across_all_the_levels = running_total_across_all_the_levels + concat([left_operand_with_a_long_name, right_operand_with_a_long_name], dim=0)[0:left_operand_with_a_long_name.shape[0]] * right_operand_with_a_long_name
                assert(running_total_across_all_the_levels.shape[0] == right_operand_with_a_long_name.shape[0], "the running total keeps the number of rows of the right operand")
            } }
        } } }
    } } }
    return running_total_across_all_the_levels
}

fn combine_three(the_first_factor_of_the_product_to_compute: Tensor<float32, [?]>,
                 the_second_factor_of_the_product_to_compute: Tensor<float32, [?]>,
                 the_third_factor_of_the_product_to_compute: Tensor<float32, [?]>) -> Tensor<float32, [?]> {
    let first_intermediate_value_of_the_whole_computation = the_first_factor_of_the_product_to_compute * 2.0
    let second_intermediate_value_of_the_whole_computation = the_second_factor_of_the_product_to_compute * 3.0
    let third_intermediate_value_of_the_whole_computation = the_third_factor_of_the_product_to_compute * 4.0
    let sum_of_the_three_intermediate_values = first_intermediate_value_of_the_whole_computation + second_intermediate_value_of_the_whole_computation + third_intermediate_value_of_the_whole_computation
    return sum_of_the_three_intermediate_values * the_first_factor_of_the_product_to_compute * the_second_factor_of_the_product_to_compute
}

main {
    print(GREETING_PRINTED_BY_THE_MAIN_FUNCTION)
    let a_vector_of_three_values_given_to_the_combine_three_function = ones([3]) * 2.0
    print(combine_three(the_first_factor_of_the_product_to_compute=a_vector_of_three_values_given_to_the_combine_three_function, the_second_factor_of_the_product_to_compute=a_vector_of_three_values_given_to_the_combine_three_function, the_third_factor_of_the_product_to_compute=ones([3]))[0])
}
"""


def test_long_lines_wrap_within_100_columns_at_every_level(ctx):
    """Lines black would wrap (a list literal of long names, an assert whose long message was
    cut into adjacent literals, a tensor constant moved to the input's device and indexed,
    `.to(...)[0]`, keyword arguments with long values, long products, a long `del`, run-time
    shape checks 9 levels deep at -O0) are wrapped inside brackets within 100 columns at every
    level; they were left whole (up to 118 columns). The module imports and computes what the
    source says: the messages are the same strings, the values those computed by hand."""
    greeting = ('tabs\tand "quotes" and backslashes \\ in a message that main prints, long '
                'enough for two literals')
    message = ("expected an RGB image batch: three channels in dimension 1, not another count "
               "of channels, please")
    stats = torch.tensor([[0.485, 0.456, 0.406], [0.229, 0.224, 0.225]])
    g = torch.Generator().manual_seed(23)
    images = torch.rand(2, 3, 4, 5, generator=g)
    a, b = torch.randn(3, 4, generator=g), torch.randn(3, 4, generator=g)
    u, v, w = torch.randn(5, generator=g), torch.randn(5, generator=g), torch.randn(5, generator=g)
    for level in LEVELS:
        path = ctx.compile_text(LONG_LINES, level)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        long_lines = ["%d (%d)" % (n, len(line))
                      for n, line in enumerate(text.splitlines(), 1) if len(line) > 100]
        if long_lines:
            raise AssertionError("%s: lines over 100 columns: %s" % (level, long_lines))
        module = load(path)
        check_close(module.Normalize()(images), images - stats[0].reshape(1, 3, 1, 1), level)
        try:
            module.Normalize()(torch.rand(2, 4, 4, 5, generator=g))
        except AssertionError as error:  # the assert (-O1 and up)
            if level == "-O0" or str(error) != message:
                raise AssertionError("%s: the assert says %r" % (level, str(error)))
        except ValueError:  # -O0's check of the declared shape, before the assert
            if level != "-O0":
                raise
        else:
            raise AssertionError("%s: a 4-channel batch passed" % level)
        # both[0:n] is the first input: the total grows by a * b on each of the 2 diagonal steps.
        check_close(module.accumulate_nested(a, b), a + a * b + a * b, level)
        check_close(module.deeply_nested(a, b), a + a * b, level)  # (the rows of a, times b)
        check_close(module.combine_three(u, v, w), (2 * u + 3 * v + 4 * w) * u * v, level)
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            module.main()
        # (2*2 + 3*2 + 4*1) * 2 * 2 = 56 for the first element
        if printed.getvalue() != greeting + "\n" + str(torch.tensor(56.0)) + "\n":
            raise AssertionError("%s: main printed %r" % (level, printed.getvalue()))


def test_a_sub_modules_ternary_weight_read_as_a_member_is_quantized(ctx):
    """A tied decoder reads the encoder's ternary weight as `enc.weight`: the value is s * q (as
    the encoder uses it), gradients reach the latent weight through both uses, and the packed
    module gives the same eval output (it read the raw latent floats, and after packing the
    uint8 codes)."""
    src = """
layer Proj(w: TernaryTensor<trit, [8, 4]>, x: Tensor<float32, [?, 8]>) -> Tensor<float32, [?, 4]> {
    return x @ w
}
layer TiedAE(x: Tensor<float32, [?, 8]>) -> Tensor<float32, [?, 8]> {
    let enc = TernaryLinear(8, 4, bias=false)
    let proj = Proj()
    return linear(enc(x), enc.weight.T) + proj(x) @ proj.w.T
}
"""
    torch.manual_seed(3)
    x = torch.randn(3, 8)
    for level in LEVELS:
        model = load(ctx.compile_text(src, level)).TiedAE().eval()
        with torch.no_grad():
            w = tritonrt.ternary_quantize(model.enc.weight)
            p = tritonrt.ternary_quantize(model.proj.w)
            want = F.linear(F.linear(x, w), w.T) + (x @ p) @ p.T
            check_close(model(x), want, level)
        model.train()
        model(x).pow(2).sum().backward()
        for name in ("enc.weight", "proj.w"):
            grad = model.get_parameter(name).grad
            if grad is None or not grad.abs().sum() > 0:
                raise AssertionError("%s: no gradient reaches %s" % (level, name))
        model.eval()
        tritonrt.pack(model)
        with torch.no_grad():
            check_close(model(x), want, level + " packed")


def test_subtracting_a_bool_converts_it(ctx):
    """torch has no `-` for bools: a bool tensor or flag subtracted from (or by) a float, int or
    ternary operand is converted to the result's dtype, as the checker types it."""
    src = """
fn a(x: Tensor<float32, [?]>, m: Tensor<bool, [?]>) -> Tensor<float32, [?]> { return x - m }
fn b(x: Tensor<float32, [?]>, m: Tensor<bool, [?]>) -> Tensor<float32, [?]> { return m - x }
fn c(t: TernaryTensor<trit, [?]>, m: Tensor<bool, [?]>) -> Tensor<float32, [?]> { return m - t }
fn d(x: Tensor<float32, [?]>, flag: bool) -> Tensor<float32, [?]> { return x - flag }
fn e(x: Tensor<int32, [?]>, flag: bool) -> Tensor<int32, [?]> { return flag - x }
fn g(m: Tensor<bool, [?]>, s: float) -> Tensor<float32, [?]> {
    let y = s - m
    y -= m
    return y
}
"""
    x = torch.tensor([1.5, -2.0, 0.0])
    m = torch.tensor([True, False, True])
    xi = torch.tensor([1, 2, 3], dtype=torch.int32)
    mf = m.float()
    for level in LEVELS:
        module = load(ctx.compile_text(src, level))
        check_close(module.a(x, m), x - mf, level)
        check_close(module.b(x, m), mf - x, level)
        check_close(module.c(torch.tensor([1.0, 0.0, -1.0]), m), mf - torch.tensor([1.0, 0, -1]),
                    level)
        check_close(module.d(x, True), x - 1, level)
        got = module.e(xi, True)
        if got.dtype != torch.int32 or got.tolist() != [0, -1, -2]:
            raise AssertionError("%s: flag - x gives %s" % (level, got))
        check_close(module.g(m, 0.5), 0.5 - 2 * mf, level)


def test_rounding_and_argmax_of_bools(ctx):
    """abs, sign, floor, ceil and round of a bool (tensor or flag) are the identity, typed bool
    as the checker types them (torch has no bool kernels for abs/floor/ceil/round and Python's
    give ints); argmax of a bool tensor is the first True, as numpy's."""
    src = """
fn r(m: Tensor<bool, [?, ?]>) -> Tensor<bool, [?, ?]> {
    return abs(m) && floor(m) && ceil(m) && round(m) && sign(m)
}
fn am(m: Tensor<bool, [?, ?]>) -> Tensor<int64, [?]> { return argmax(m, dim=1) }
fn aall(m: Tensor<bool, [?, ?]>) -> Tensor<int64, []> { return argmax(m) }
fn flag(b: bool) -> bool { return abs(b) && round(b) && sign(b) }
"""
    m = torch.tensor([[False, True, True], [False, False, False], [True, False, True]])
    for level in LEVELS:
        module = load(ctx.compile_text(src, level))
        got = module.r(m)
        if got.dtype != torch.bool or not torch.equal(got, m):
            raise AssertionError("%s: rounding bools gives %s" % (level, got))
        if module.am(m).tolist() != [1, 0, 0]:
            raise AssertionError("%s: argmax(m, dim=1) gives %s" % (level, module.am(m)))
        if module.aall(m).item() != 1:
            raise AssertionError("%s: argmax(m) gives %s" % (level, module.aall(m)))
        if module.flag(True) is not True or module.flag(False) is not False:
            raise AssertionError("%s: abs/round/sign of a flag gives %r" % (level, module.flag(True)))


def test_builtins_of_two_dtypes_compute_in_the_checked_dtype(ctx):
    """max, min, pow, clip, concat and stack of two dtypes give the dtype the checker types
    (LANGUAGE.md section 3) at run time: torch computes float16 with bfloat16 in float32 and a
    tensor with a 0-d one of its category in its own dtype, so the operands are converted, as
    for the arithmetic operators; a literal number takes the tensor's dtype."""
    src = """
fn mx(x: Tensor<float16, [?]>, y: Tensor<bfloat16, [?]>) -> Tensor<bfloat16, [?]> {
    return max(x, y)
}
fn mn(x: Tensor<int32, [?]>, y: Tensor<int64, [?]>) -> Tensor<int64, [?]> {
    return min(x, sum(y))
}
fn pw(x: Tensor<bfloat16, [?]>, y: Tensor<float32, [?]>) -> Tensor<float32, [?]> {
    return pow(x, mean(y))
}
fn cl(x: Tensor<int8, [?]>, a: Tensor<int32, [?]>) -> Tensor<int64, [?]> {
    return clip(x, sum(a) - 8, sum(a))
}
fn two(x: Tensor<bfloat16, [?]>) -> Tensor<bfloat16, [?]> { return pow(2.0, x) }
fn lit(x: Tensor<bfloat16, [?]>) -> Tensor<bfloat16, [?]> { return max(x, 2.5) }
fn cat(x: Tensor<float16, [?]>, y: Tensor<bfloat16, [?]>) -> Tensor<bfloat16, [?]> {
    return concat([x, y])
}
fn stk(x: Tensor<float16, [?]>, y: Tensor<bfloat16, [?]>) -> Tensor<bfloat16, [2, ?]> {
    return stack([x, y])
}
"""
    h = torch.tensor([1.5, -2.0, 3.25], dtype=torch.float16)
    b = torch.tensor([0.5, -1.0, 4.0], dtype=torch.bfloat16)
    i32 = torch.tensor([100, -7, 3], dtype=torch.int32)
    i64 = torch.tensor([2 ** 40, 5, -1], dtype=torch.int64)
    f = torch.tensor([1.0, 2.0, 3.5])
    i8 = torch.tensor([-100, 20, 100], dtype=torch.int8)
    expected = {
        "mx": ((h, b), torch.maximum(h.to(torch.bfloat16), b)),
        "mn": ((i32, i64), torch.minimum(i32.to(torch.int64), i64.sum())),
        "pw": ((b.abs(), f), torch.pow(b.abs().float(), f.mean())),
        "cl": ((i8, i32), torch.clamp(i8.to(torch.int64), 88, 96)),
        "two": ((b,), torch.pow(2.0, b)),
        "lit": ((b,), torch.clamp(b, min=2.5)),
        "cat": ((h, b), torch.cat([h.to(torch.bfloat16), b])),
        "stk": ((h, b), torch.stack([h.to(torch.bfloat16), b])),
    }
    for level in LEVELS:
        module = load(ctx.compile_text(src, level))
        for name, (args, want) in expected.items():
            got = getattr(module, name)(*args)
            if got.dtype != want.dtype or not torch.equal(got, want):
                raise AssertionError("%s: %s gives %s, want %s" % (level, name, got, want))


def test_pools_embeddings_and_attention_take_any_dtype_the_checker_accepts(ctx):
    """torch has no integer pooling, takes only int32/int64 ids and one float dtype in
    attention: integer feature maps are pooled as float32 (the checker types pools as floats),
    int8/int16/bool ids index the table, and queries, keys and values of two float dtypes
    compute in the promoted one; built-in layers convert an integer input the same way."""
    src = """
fn mp(x: Tensor<int8, [?, 1, 4, 4]>) -> Tensor<float32, [?, 1, 2, 2]> { return maxpool2d(x, 2) }
fn ap(x: Tensor<int32, [?, 1, 4, 4]>) -> Tensor<float32, [?, 1, 2, 2]> { return avgpool2d(x, 2) }
fn gp(x: Tensor<bool, [?, 1, 4, 4]>) -> Tensor<float32, [?, 1, 1, 1]> { return global_avgpool(x) }
fn em(ids: Tensor<int8, [?]>, table: Tensor<float32, [5, 2]>) -> Tensor<float32, [?, 2]> {
    return embedding(ids, table)
}
fn sd(q: Tensor<float32, [?, 3, 4]>, k: Tensor<bfloat16, [?, 5, 4]>) -> Tensor<float32, [?, 3, 4]> {
    return scaled_dot_product_attention(q, k, k)
}
layer Pools(x: Tensor<int64, [?, 1, 4, 4]>, ids: Tensor<int16, [?]>) -> Tensor<float32, [?]> {
    let pool = MaxPool2d(2)
    let avg = AdaptiveAvgPool2d(1)
    let emb = Embedding(5, 1)
    return sum(flatten(pool(x)), dim=1) + sum(flatten(avg(x)), dim=1) + sum(emb(ids), dim=1)
}
"""
    x8 = torch.arange(32, dtype=torch.int8).reshape(2, 1, 4, 4)
    ids = torch.tensor([4, 0, 2])
    table = torch.arange(10, dtype=torch.float32).reshape(5, 2)
    q = torch.randn(2, 3, 4)
    k = torch.randn(2, 5, 4).to(torch.bfloat16)
    kf = k.float()
    attention = torch.softmax(q @ kf.transpose(-2, -1) / 2.0, dim=-1) @ kf
    for level in LEVELS:
        module = load(ctx.compile_text(src, level))
        check_close(module.mp(x8), F.max_pool2d(x8.float(), 2), level)
        check_close(module.ap(x8.int()), F.avg_pool2d(x8.float(), 2), level)
        check_close(module.gp(x8 > 9), (x8 > 9).float().mean(dim=(2, 3), keepdim=True), level)
        check_close(module.em(ids.to(torch.int8), table), table[ids], level)
        check_close(module.sd(q, k), attention, level)
        torch.manual_seed(0)
        pools = module.Pools()
        want = (F.max_pool2d(x8.float(), 2).sum(dim=(1, 2, 3)) + x8.float().mean(dim=(1, 2, 3))
                + pools.emb.weight[:2, 0])
        check_close(pools(x8.long(), torch.tensor([0, 1], dtype=torch.int16)), want, level)


def test_builtins_of_numbers_give_the_checked_type(ctx):
    """Of Python numbers, max/min/clip give the operand Python picks and sign of a float an
    int: the module converts the result to the type the checker gives (a float from
    max(int, float), an int from clip(int, lo, hi) of ints, a float from sign(float), nan
    kept), so a later use (range, a shape, printing) sees that type."""
    src = """
fn mx(a: int, b: float) -> float { return max(a, b) }
fn mn(a: bool, b: int) -> int { return min(a, b) }
fn cl(a: int, lo: float, hi: float) -> float { return clip(a, lo, hi) }
fn ci(a: bool, lo: int, hi: int) -> int { return clip(a, lo, hi) }
fn sg(a: float) -> float { return sign(a) }
fn pw(a: bool, b: int) -> int { return pow(a, b) }
fn use(a: int, b: float) -> int { return int32(max(a, b)) + 1 }
"""
    cases = [
        ("mx", (3, 2.5), 3.0, float), ("mx", (1, 2.5), 2.5, float),
        ("mn", (True, 3), 1, int), ("cl", (3, 0.5, 2.5), 2.5, float),
        ("cl", (1, 0.5, 2.5), 1.0, float), ("ci", (True, 2, 5), 2, int),
        ("ci", (True, 0, 5), 1, int), ("sg", (2.5,), 1.0, float), ("sg", (-0.5,), -1.0, float),
        ("sg", (0.0,), 0.0, float), ("pw", (True, 3), 1, int), ("use", (3, 2.5), 4, int),
    ]
    for level in LEVELS:
        module = load(ctx.compile_text(src, level))
        for name, args, want, kind in cases:
            got = getattr(module, name)(*args)
            if type(got) is not kind or got != want:
                raise AssertionError("%s: %s%r gives %r, want %r" % (level, name, args, got, want))
        if not math.isnan(module.sg(float("nan"))):
            raise AssertionError("%s: sign(nan) gives %r" % (level, module.sg(float("nan"))))


def test_powers_of_negative_numbers_agree_at_every_level(ctx):
    """A negative base of `**` or `pow` keeps its sign at every level (-O1 and up once wrote
    `-3.0 ** 2.0`, which Python reads as -(3.0 ** 2.0) = -9.0), and two numbers with a
    fractional power of a negative base raise ValueError (math.pow) at every level rather than
    give a complex number at -O0 and nan at -O2."""
    src = """
let SQUARE = pow(-3.0, 2.0)
fn sq() -> float { return pow(-3.0, 2.0) }
fn isq() -> int { return pow(-3, 2) }
fn by_tensor(x: Tensor<float32, [?]>) -> Tensor<float32, [?]> { return pow(-2.0, x) }
fn let_base(x: Tensor<float32, [?]>) -> Tensor<float32, [?]> {
    let b = -2.0
    return b ** x
}
fn root(a: float) -> float { return a ** 0.5 }
"""
    x = torch.tensor([2.0, 3.0])
    for level in LEVELS:
        module = load(ctx.compile_text(src, level))
        got = (module.SQUARE, module.sq(), module.isq())
        if got != (9.0, 9.0, 9):
            raise AssertionError("%s: (-3) ** 2 gives %s" % (level, got))
        check_close(module.by_tensor(x), torch.pow(-2.0, x), level)
        check_close(module.let_base(x), torch.pow(-2.0, x), level)
        if module.root(4.0) != 2.0:
            raise AssertionError("%s: 4.0 ** 0.5 gives %s" % (level, module.root(4.0)))
        try:
            value = module.root(-4.0)
        except ValueError:
            continue
        raise AssertionError("%s: (-4.0) ** 0.5 gives %r instead of raising" % (level, value))


def test_scalar_sigmoid_never_overflows(ctx):
    """A number's sigmoid is computed with math.exp, which raises OverflowError past e^709:
    sigmoid(-1000.0) once raised where torch.sigmoid gives 0. It is exact on both sides of 0
    and agrees with torch (float64) at every level."""
    src = """
fn s(a: float) -> float { return sigmoid(a) }
fn t(x: Tensor<float32, [?]>, a: float) -> Tensor<float32, [?]> { return x * sigmoid(a) }
"""
    points = [-1000.0, -745.5, -40.0, -1.5, 0.0, 0.25, 30.0, 1000.0]
    for level in LEVELS:
        module = load(ctx.compile_text(src, level))
        for a in points:
            expected = torch.sigmoid(torch.tensor(a, dtype=torch.float64)).item()
            got = module.s(a)
            if abs(got - expected) > 4e-16 * abs(expected):
                raise AssertionError("%s: sigmoid(%r) = %r, torch gives %r"
                                     % (level, a, got, expected))
        check_close(module.t(torch.ones(2), -1000.0), torch.zeros(2), level)


def test_reassigned_variable_is_checked_at_O0(ctx):
    """`h = concat([x, x], dim=1)` where `h` held an [?, n] tensor: in straight-line code `h`
    is then exactly [?, n + n], which a declared return of [?, n] is not (a size is at least
    1): an error. Under an `if` it may hold either, so `h` is [?, ?] from there on and the
    declared return type is checked at run time at -O0 (it used to be taken as proven: the
    layer returned [2, 6])."""
    expect_rejected(ctx, "reassigned.tri", """
layer A(n: int = 3, x: Tensor<float32, [?, n]>) -> Tensor<float32, [?, n]> {
    let h = x
    h = concat([x, x], dim=1)
    return h
}
""", "but its declared return type is 'Tensor<float32, [?, n]>'")
    src = """
layer C(n: int = 3, m: int = 1, x: Tensor<float32, [?, n]>) -> Tensor<float32, [?, n]> {
    let h = x
    h = concat([x, x[:, :m]], dim=1)
    return h
}
layer B(n: int = 3, x: Tensor<float32, [?, n]>) -> Tensor<float32, [?, n]> {
    let h = x
    if n > 100 {
        h = concat([x, x], dim=1)
    }
    return h
}
"""
    m = load(ctx.compile_text(src, "-O0"))
    try:
        m.C()(torch.randn(2, 3))
    except ValueError as e:
        if "shape mismatch" not in str(e) or ":5:12:" not in str(e):
            raise AssertionError("unexpected message: %s" % e)
    else:
        raise AssertionError("-O0 did not check the reassigned variable")
    check_close(m.B()(torch.ones(2, 3)), torch.ones(2, 3), "the branch not taken")


def test_bool_tensors_combine_element_wise(ctx):
    """`&&` and `||` with a bool tensor on either side are element-wise (torch's `&`, `|`),
    broadcast like the other operators; with bool scalars they still short-circuit."""
    src = """
layer L(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {
    let m = (x > 0.0) && (x < 1.0)
    let n = (x < -1.0) || m
    let k = m && true
    return float32(m) + float32(!(x > 0.0)) + float32(n) * 2.0 + float32(k)
}
"""
    x = torch.randn(5, 4, generator=torch.Generator().manual_seed(4))
    m = (x > 0) & (x < 1)
    want = m.float() + (~(x > 0)).float() + ((x < -1) | m).float() * 2 + m.float()
    for level in LEVELS:
        check_close(entry(load(ctx.compile_text(src, level)))()(x), want, level)


def test_python_keywords_are_escaped(ctx):
    src = """
layer K(lambda: float32 = 0.5, x: Tensor<float32, [?, 2]>) -> Tensor<float32, [?, 2]> {
    let pass = x * lambda
    return pass
}
"""
    model = entry(load(ctx.compile_text(src, "-O1")))(lambda_=2.0)
    check_close(model(torch.ones(1, 2)), torch.full((1, 2), 2.0), "escaped keywords")


def test_failed_compile_writes_nothing(ctx):
    out = os.path.join(ctx.workdir, "bad.py")
    src = os.path.join(ctx.workdir, "bad.tri")
    with open(src, "w") as f:
        f.write("layer L(x: Tensor<float32, [?, 2]>) -> Tensor<float32, [?, 2]> {\n"
                "    return x @ undefined_name\n}\n")
    proc = subprocess.run([ctx.tritonc, "compile", src, "-o", out], capture_output=True, text=True)
    if proc.returncode != 1:
        raise AssertionError("expected exit 1, got %d" % proc.returncode)
    if os.path.exists(out):
        raise AssertionError("a failed compile left %s" % out)


def make_compile_test(name):
    def test(ctx):
        if int(torch.__version__.split(".")[0]) < 2 or not hasattr(torch, "compile"):
            raise Skip("torch.compile needs torch >= 2 (this is %s)" % torch.__version__)
        path = os.path.join(REPO, "examples", name + ".tri")
        torch.manual_seed(5)
        model = entry(load(ctx.compile(path, "-O2")))(**example_kwargs(name))
        model.eval()
        inputs = example_input(name)
        with torch.no_grad():
            expected = model(*inputs)
            compiled = torch.compile(model, fullgraph=True, backend="eager")
            got = compiled(*inputs)
        check_close(got, expected, "%s torch.compile(fullgraph=True)" % name)
    test.__name__ = "test_torch_compile_fullgraph_" + name
    return test


def test_every_accepted_golden_imports(ctx):
    """LANGUAGE.md section 6: a program the compiler accepts never fails at import time.

    Every golden input that compiles (at -O0 and -O2) must give Python that imports."""
    import glob
    accepted = 0
    for path in sorted(glob.glob(os.path.join(REPO, "tests", "golden", "**", "*.tri"),
                                 recursive=True)):
        for level in ("-O0", "-O2"):
            proc = subprocess.run([ctx.tritonc, "compile", path, level, "--stop-after=emit",
                                   "--dump-code"], capture_output=True, text=True)
            if proc.returncode != 0:
                continue
            accepted += 1
            ctx.count += 1
            out = os.path.join(ctx.workdir, "golden%d.py" % ctx.count)
            with open(out, "w") as f:
                f.write(proc.stdout)
            try:
                load(out)
            except Exception as e:  # noqa: BLE001
                raise AssertionError("%s %s: the generated module does not import: %s: %s"
                                     % (os.path.relpath(path, REPO), level, type(e).__name__, e))
    if accepted < 20:
        raise AssertionError("only %d golden inputs compiled; the test lost its corpus" % accepted)


IMPORT_TIME_FAILURES = """
let BN = batch_norm(ones([1, 3])[0:1], ones([3]), zeros([3]))
let CE = cross_entropy(tensor([[1.0, 2.0]]), tensor([5], dtype=int64) * 1)
let EMB = embedding(tensor([7], dtype=int64) + 0, ones([4, 2]))
let REM = tensor([5], dtype=int32) % int32(0.5)
let DIV = 1 / int32(0.5)
let BIG = full([2], 1e38 * (10.0 + float32(int32(0.5))))
let KAIMING = kaiming_uniform([3])
let FINE = ones([2]) * 2.0
let AFTER = BN + 1.0
let DIVN = 2.0 + DIV
let CMP = DIV == 1.0
let NEGD = -DIVN
let HOLDS = [DIV, 2.0]
let HEQ = HOLDS == [1.0, 2.0]
let COPY = DIV
let CPLUS = COPY + 1.0
let N = 4 * 16 + 1
layer Uses(x: Tensor<float32, [?, 3]>) -> Tensor<float32, [?, 3]> {
    return x + BN
}
layer Fine(x: Tensor<float32, [?, 2]>) -> Tensor<float32, [?, 2]> {
    return x * FINE + float32(N)
}
"""


def test_constants_that_raise_never_fail_the_import(ctx):
    """LANGUAGE.md section 6: an accepted program never fails at import. Top-level constants
    whose initializers torch rejects only when they run failed the import of the whole module:
    batch_norm of one value per channel, a class index or embedding id past the end, an
    integer tensor % zero, a value past float32, kaiming_uniform of rank 1, a division by a
    call's zero (each here in a form the checker does not see through: a slice, arithmetic
    on the ids, `int32(0.5)`; the plain forms are compile errors). Now each is computed inside `try`: the module imports, the constants that could be
    computed are there, and using a failed one raises ConstantUnavailable naming it, with the
    original exception as the cause, as a body that raises would. So does a number computed
    from a failed number."""
    for level in LEVELS:
        module = load(ctx.compile_text(IMPORT_TIME_FAILURES, level))
        x = torch.randn(3, 2)
        check_close(module.Fine()(x), x * 2.0 + 65.0, level)
        if module.N != 65:
            raise AssertionError("%s: N is %r" % (level, module.N))
        failed = {"BN": ValueError, "CE": IndexError, "EMB": IndexError, "REM": RuntimeError,
                  "DIV": ZeroDivisionError, "BIG": RuntimeError, "KAIMING": ValueError,
                  "AFTER": tritonrt.ConstantUnavailable, "DIVN": tritonrt.ConstantUnavailable,
                  "CMP": tritonrt.ConstantUnavailable, "NEGD": tritonrt.ConstantUnavailable,
                  "HEQ": tritonrt.ConstantUnavailable, "CPLUS": tritonrt.ConstantUnavailable}
        # Numbers computed from an unavailable number, a copy of one or a list holding
        # one (list equality compares the elements) were written without `try`: the
        # import raised. A list holding one is bound as it is.
        if module.HOLDS[1] != 2.0 or not isinstance(module.HOLDS[0], type(module.DIV)):
            raise AssertionError("%s: HOLDS is %r" % (level, module.HOLDS))
        for name, cause in failed.items():
            value = getattr(module, name)
            for use in (lambda: value + 1, lambda: value.to("cpu"), lambda: torch.relu(value),
                        lambda: float(value), lambda: value[0]):
                try:
                    use()
                except tritonrt.ConstantUnavailable as e:
                    if ("'%s'" % name) not in str(e) or not isinstance(e.__cause__, cause):
                        raise AssertionError("%s %s: %s (cause %r)" % (level, name, e,
                                                                       e.__cause__))
                else:
                    raise AssertionError("%s: using %s did not raise" % (level, name))
        try:
            module.Uses()(torch.randn(1, 3))
        except tritonrt.ConstantUnavailable as e:
            if "'BN'" not in str(e):
                raise
        else:
            raise AssertionError("%s: a layer reading BN ran" % level)


def run_main(ctx, src, level, expected):
    """Compiles `src` at `level` and runs the file as a script (its main()): the standard
    output must be `expected`. Returns the generated file's path."""
    path = ctx.compile_text(src, level)
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "runtime"))
    proc = subprocess.run([sys.executable, path], capture_output=True, text=True, env=env)
    if proc.returncode != 0 or proc.stdout != expected:
        raise AssertionError("main() %s: exit %d, stdout %r, stderr %s"
                             % (level, proc.returncode, proc.stdout, proc.stderr[-500:]))
    return path


def test_members_and_main(ctx):
    """Instance members (`fc.weight`) in a layer and in main; main() runs as a script."""
    src = """
layer Net(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 3]> {
    let fc = Linear(4, 3)
    return x @ fc.weight.T + fc.bias
}
main {
    let net = Net()
    let lin = Linear(2, 2)
    print(lin.weight.shape)
    print(net(ones([1, 4])).shape)
}
"""
    for level in ("-O0", "-O2"):
        path = run_main(ctx, src, level, "[2, 2]\n[1, 3]\n")
        model = entry(load(path))()
        x = torch.randn(5, 4)
        check_close(model(x), x @ model.fc.weight.T + model.fc.bias, "members " + level)


def test_main_instance_names_are_not_reused(ctx):
    """An instance in main named like the emitter's temporaries (`t`) keeps its name:
    `let t = Id(4)` then `t(randn([2, 4]))` ran `[2, 4](...)` (the shape list had
    overwritten `t`: TypeError)."""
    src = """
layer Id(c: int, x: Tensor<float32, [?, c]>) -> Tensor<float32, [?, c]> {
    let fc = Linear(c, c)
    return fc(x)
}
main {
    let t = Id(4)
    let t_2 = Id(4)
    print(t(randn([2, 4])).shape)
    print(t_2(randn([3, 4])).shape)
}
"""
    for level in ("-O0", "-O2"):
        run_main(ctx, src, level, "[2, 4]\n[3, 4]\n")


def test_main_runs_its_instances_in_eval_mode(ctx):
    """main calls layers in eval mode, its instances too: `let n = Noisy()` then `n(x)`
    dropped half of x (a module starts in training mode in torch) while the application
    `Noisy(x)` did not, and a BatchNorm1d instance raised on a batch of one."""
    src = """
layer Noisy(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {
    return dropout(x, 0.5)
}
layer Net(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {
    let bn = BatchNorm1d(4)
    return bn(x)
}
main {
    let x = ones([64, 4])
    let n = Noisy()
    print(sum(Noisy(x)) == 256.0)
    print(sum(n(x)) == 256.0)
    let d = Dropout(0.5)
    print(sum(d(x)) == 256.0)
    let m = Net()
    print(m(ones([1, 4])).shape)
}
"""
    for level in ("-O0", "-O2"):
        run_main(ctx, src, level, "tensor(True)\n" * 3 + "[1, 4]\n")


def test_sub_layers_take_their_inputs_positionally(ctx):
    """A generated sub-layer is called as a hand-written one is, `self.b(x)`: forward hooks
    and pre-hooks see its input (torch passes hooks the positional arguments only), a pre-hook
    that returns a new input takes effect, and replacing the sub-layer with nn.Identity()
    works. (It was called `self.b(x=x)`: hooks saw `()`, Identity raised TypeError.)"""
    src = """
layer Block(c: int, x: Tensor<float32, [?, c]>) -> Tensor<float32, [?, c]> {
    let fc = Linear(c, c)
    return relu(fc(x)) + x
}
layer Net(x: Tensor<float32, [?, 8]>) -> Tensor<float32, [?, 8]> {
    let a = Block(8)
    let b = Block(8)
    return b(a(x))
}
"""
    for level in ("-O0", "-O2"):
        model = entry(load(ctx.compile_text(src, level)))().eval()
        x = torch.randn(3, 8)
        seen = []
        handle = model.b.register_forward_hook(lambda mod, inp, out: seen.append(len(inp)))
        with torch.no_grad():
            expected = model.b(model.a(x))
            check_close(model(x), expected, "hooked " + level)
        handle.remove()
        if seen != [1, 1]:
            raise AssertionError("%s: the forward hook saw inputs %r, not one each call"
                                 % (level, seen))
        handle = model.b.register_forward_pre_hook(lambda mod, inp: (torch.zeros_like(inp[0]),))
        with torch.no_grad():
            check_close(model(x), model.b(torch.zeros(3, 8)), "pre-hook " + level)
        handle.remove()
        model.b = torch.nn.Identity()
        with torch.no_grad():
            check_close(model(x), model.a(x), "Identity " + level)


def test_sizes_from_max_min_abs_of_constants(ctx):
    """Sizes computed with Python's max, min and abs of integer constants are known sizes
    (they were ConstantSizeNotInteger): the weights have the computed shapes at every level
    and the module computes x @ w."""
    src = """
let D = 16
let HIDDEN = max(64, 2 * D)
let HEADS = min(D / 2, 8)
let K = abs(1 - 4)
layer Block(w: Tensor<float32, [HIDDEN, HEADS]>, v: Tensor<float32, [K, HEADS]>,
            x: Tensor<float32, [?, HIDDEN]>) -> Tensor<float32, [?, HEADS]> {
    return x @ w + v[0]
}
"""
    for level in LEVELS:
        module = load(ctx.compile_text(src, level))
        if (module.HIDDEN, module.HEADS, module.K) != (64, 8, 3):
            raise AssertionError("%s: constants %r" % (level, (module.HIDDEN, module.HEADS,
                                                               module.K)))
        model = module.Block()
        shapes = {k: tuple(v.shape) for k, v in model.state_dict().items()}
        if shapes != {"w": (64, 8), "v": (3, 8)}:
            raise AssertionError("%s: state_dict shapes %r" % (level, shapes))
        x = torch.randn(5, 64)
        check_close(model(x), x @ model.w + model.v[0], "sizes from max " + level)


def test_builtin_layer_sizes_as_lists(ctx):
    """Built-in layers' sizes written as lists in the square forms torch takes as tuples
    ([3, 3], [k, k], LayerNorm([d])) build the same torch modules as the integers (they were
    emitted as None: creating the module raised TypeError)."""
    src = """
layer T(k: int = 3, x: Tensor<float32, [?, 4, 8, 8]>) -> Tensor<float32, [?, 4, 4, 4]> {
    let c = Conv2d(4, 4, [k, k], padding=[1, 1], stride=[k - 2, k - 2])
    let p = MaxPool2d([2, 2])
    return p(c(x))
}
layer U(x: Tensor<float32, [?, 4, 8, 8]>) -> Tensor<float32, [?, 4]> {
    let a = AdaptiveAvgPool2d([1, 1])
    let n = LayerNorm([4])
    return n(flatten(a(x), 1))
}
"""
    for level in LEVELS:
        module = load(ctx.compile_text(src, level))
        model = module.T().eval()
        c = torch.nn.Conv2d(4, 4, 3, padding=1)
        model.load_state_dict({"c.weight": c.weight, "c.bias": c.bias})
        x = torch.randn(2, 4, 8, 8)
        check_close(model(x), torch.nn.functional.max_pool2d(c(x), 2), "sizes as lists " + level)
        norm = module.U().eval()
        n = torch.nn.LayerNorm(4)
        with torch.no_grad():
            n.weight.uniform_()
            n.bias.uniform_()
        norm.load_state_dict({"n.weight": n.weight, "n.bias": n.bias})
        want = n(torch.nn.functional.adaptive_avg_pool2d(x, 1).flatten(1))
        check_close(norm(x), want, "LayerNorm([d]) and AdaptiveAvgPool2d([1, 1]) " + level)

def test_a_variable_that_grows_in_a_loop_runs_at_O0(ctx):
    """A DenseNet-style loop that grows a variable (`f = concat([f, ...], dim=1)`): the -O0
    run-time checks recorded in the body compared sizes with those on entry to the loop, so
    the second iteration raised "dimension 1 is 8, but 4 was expected" at -O0 only. The body
    is checked again with the sizes that change widened to `?`, so its checks hold on every
    iteration."""
    src = """
layer Grow(w: Tensor<float32, [4, 12]>,
           x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 12]> {
    let f = x
    for i in range(2) {
        f = concat([f, linear(f, w[:, :4 + 4 * i])], dim=1)
    }
    return f
}
"""
    for level in LEVELS:
        model = entry(load(ctx.compile_text(src, level)))()
        x = torch.randn(3, 4)
        f = x
        for i in range(2):
            f = torch.cat([f, torch.nn.functional.linear(f, model.w[:, :4 + 4 * i])], dim=1)
        check_close(model(x), f, "growing loop " + level)
        if level == "-O0":
            try:
                model(torch.randn(3, 5))
            except ValueError as e:
                if "dimension 1 of 'x' is 5, but 4 was expected" not in str(e):
                    raise
            else:
                raise AssertionError("-O0: the input's size is no longer checked")


def test_shapeless_creation_inside_a_weight_default_expression(ctx):
    """LANGUAGE.md section 5: inside a weight default the shape may be omitted. GPT-style
    `randn() * 0.02` (and `1.0 + zeros()`, `full(0.5) * 2.0`, `ternary_quantize(randn())`)
    was MissingArgument: only a call that was the whole default took the weight's shape."""
    src = """
layer P(d: int = 8, pos: Tensor<float32, [4, d]> = randn() * 0.02,
        g: Tensor<float32, [d]> = 1.0 + zeros(),
        h: Tensor<float32, [2, d]> = full(0.5) * 2.0,
        q: TernaryTensor<trit, [d, d]> = ternary_quantize(randn()),
        x: Tensor<float32, [?, 4, d]>) -> Tensor<float32, [?, 4, d]> {
    return (x + pos) * g @ q + h[0]
}
"""
    for level in LEVELS:
        torch.manual_seed(0)
        model = entry(load(ctx.compile_text(src, level)))(d=16)
        shapes = {k: tuple(v.shape) for k, v in model.state_dict().items()}
        if shapes != {"pos": (4, 16), "g": (16,), "h": (2, 16), "q": (16, 16)}:
            raise AssertionError("%s: shapes %r" % (level, shapes))
        if not (0.005 < float(model.pos.std()) < 0.05) or not torch.all(model.g == 1.0) \
                or not torch.all(model.h == 1.0):
            raise AssertionError("%s: initial values pos std %f, g %r, h %r"
                                 % (level, float(model.pos.std()), model.g, model.h))


def test_ternary_constants_follow_a_converted_model(ctx):
    """A ternary constant (elements all -1/0/1) is held as floats like a float constant, so
    after `.double()` it converts with the inputs; it was moved to their device only and
    `x @ C` raised "expected scalar type Double but found Float"."""
    src = """
let C = tensor([[1, 0], [0, -1]])
layer Z(w: Tensor<float32, [2, 2]>, x: Tensor<float32, [?, 2]>) -> Tensor<float32, [?, 2]> {
    return x @ w @ C + x @ tensor([[1, 1], [0, -1]])
}
"""
    c = torch.tensor([[1.0, 0.0], [0.0, -1.0]], dtype=torch.float64)
    d = torch.tensor([[1.0, 1.0], [0.0, -1.0]], dtype=torch.float64)
    for level in LEVELS:
        model = entry(load(ctx.compile_text(src, level)))().double()
        x = torch.randn(3, 2, dtype=torch.float64)
        out = model(x)
        if out.dtype != torch.float64:
            raise AssertionError("%s: %s" % (level, out.dtype))
        check_close(out, x @ model.w @ c + x @ d, "ternary constant in float64 " + level)


def test_broadcast_of_two_size_variables_is_checked_against_the_declared_type(ctx):
    """`x: [?, n] + y: [?, m]` may be [?, m] (n = 1): it was typed [?, n], taken as proven,
    and a declared return of [?, n] was not checked at -O0."""
    src = """
fn f(x: Tensor<float32, [?, n]>, y: Tensor<float32, [?, m]>) -> Tensor<float32, [?, n]> {
    return x + y
}
"""
    module = load(ctx.compile_text(src, "-O0"))
    try:
        module.f(x=torch.ones(2, 1), y=torch.ones(2, 4))
    except ValueError as e:
        if "dimension 1 of 'x + y' is 4, but n = 1 was expected" not in str(e):
            raise
    else:
        raise AssertionError("a [2, 4] result passed for a declared [?, n] with n = 1")
    check_close(module.f(x=torch.ones(2, 4), y=torch.ones(2, 1)), torch.full((2, 4), 2.0),
                "broadcast n against 1")


def test_standard_ternary_layers_take_a_quantizer_method(ctx):
    """TernaryLinear/TernaryConv2d(..., method="threshold"|"stochastic") quantize their weight
    with that method (it was UnknownNamedArgument: no packable ternary layer could train with
    another quantizer), also after pack()."""
    src = """
layer N(x: Tensor<float32, [?, 8]>) -> Tensor<float32, [?, 4]> {
    let a = TernaryLinear(8, 8, method="threshold")
    let c = TernaryConv2d(2, 4, 1, method="threshold")
    return flatten(c(reshape(a(x), [-1, 2, 2, 2])), 1)[:, :4]
}
"""
    for level in LEVELS:
        model = entry(load(ctx.compile_text(src, level)))().eval()
        x = torch.randn(5, 8)
        qa = tritonrt.ternary_quantize(model.a.weight, method="threshold")
        qc = tritonrt.ternary_quantize(model.c.weight, method="threshold")
        h = torch.nn.functional.linear(x, qa, model.a.bias).reshape(-1, 2, 2, 2)
        want = torch.nn.functional.conv2d(h, qc).flatten(1)[:, :4]
        check_close(model(x), want, "method threshold " + level)
        tritonrt.pack(model)
        check_close(model(x), want, "method threshold packed " + level)
    expect_rejected(ctx, "bad_method.tri",
                    src.replace('"threshold")\n    let c', '"thresh")\n    let c'),
                    "must be 'absmean', 'threshold' or 'stochastic'")


def test_conv_and_layer_norm_sizes_are_checked_at_O0(ctx):
    """LANGUAGE.md section 3: sizes not decided at compile time are checked at -O0. conv2d's
    input channels and layer_norm's normalized sizes against a `?` gave torch's error from
    inside the op, without the source location."""
    src = """
fn ln(x: Tensor<float32, [?, ?]>) -> Tensor<float32, [?, 4]> {
    return layer_norm(x, [4])
}
fn cv(x: Tensor<float32, [?, ?, 8, 8]>, w: Tensor<float32, [6, 3, 3, 3]>) -> Tensor<float32, [?, 6, 6, 6]> {
    return conv2d(x, w)
}
layer C(g: int = 2, x: Tensor<float32, [?, ?, 8, 8]>) -> Tensor<float32, [?, 4, 8, 8]> {
    let c = Conv2d(4, 4, 3, padding=1, groups=g)
    return c(x)
}
"""
    module = load(ctx.compile_text(src, "-O0"))
    for call, where, message in [
            (lambda: module.ln(torch.randn(2, 5)), ":3:12:", "dimension 1 of 'x' is 5, but 4"),
            (lambda: module.cv(torch.randn(1, 4, 8, 8), torch.randn(6, 3, 3, 3)), ":6:12:",
             "dimension 1 of 'x' is 4, but 3"),
            (lambda: module.C()(torch.randn(1, 3, 8, 8)), ":10:12:",
             "dimension 1 of 'x' is 3, but 4")]:
        try:
            call()
        except ValueError as e:
            if where not in str(e) or message not in str(e):
                raise
        else:
            raise AssertionError("no error for " + message)
    x = torch.randn(2, 4)
    check_close(module.ln(x), torch.nn.functional.layer_norm(x, [4]), "layer_norm -O0")
    w = torch.randn(6, 3, 3, 3)
    x = torch.randn(1, 3, 8, 8)
    check_close(module.cv(x, w), torch.nn.functional.conv2d(x, w), "conv2d -O0")


def test_a_bool_mask_times_a_float_matrix_promotes(ctx):
    """`@` promotes as LANGUAGE.md section 3 says, a bool side included (it was
    InvalidOperands, though linear(m, w) and m * w were accepted)."""
    src = """
fn f(m: Tensor<bool, [?, 4]>, w: Tensor<float32, [4, 3]>) -> Tensor<float32, [?, 3]> {
    return m @ w
}
fn g(w: Tensor<float32, [3, 4]>, m: Tensor<bool, [4]>) -> Tensor<float32, [3]> {
    return w @ m
}
"""
    for level in LEVELS:
        module = load(ctx.compile_text(src, level))
        m, w = torch.rand(2, 4) > 0.5, torch.randn(4, 3)
        check_close(module.f(m, w), m.float() @ w, "bool @ float " + level)
        w2, v = torch.randn(3, 4), torch.rand(4) > 0.5
        check_close(module.g(w2, v), w2 @ v.float(), "float @ bool " + level)


def test_float_literals_of_minus_one_zero_one_are_ternary_where_declared(ctx):
    """LANGUAGE.md section 3: a literal or `tensor(...)` whose elements are all -1/0/1 is
    ternary; `tensor([1.0, -1.0])` was rejected where a TernaryTensor is declared (only the
    integer spelling was accepted). Without a declared TernaryTensor it stays float32."""
    src = """
layer T(x: Tensor<float32, [?, 3]>) -> Tensor<float32, [?, 2]> {
    let w: TernaryTensor<trit, [3, 2]> = tensor([[1.0, 0.0], [-1.0, 1.0], [0.0, -1.0]])
    let v: TernaryTensor<trit, [2]> = [1.0, -1]
    let f = tensor([1.0, 0.0])
    return x @ w + v + f * 0.5
}
"""
    w = torch.tensor([[1.0, 0.0], [-1.0, 1.0], [0.0, -1.0]])
    for level in LEVELS:
        model = entry(load(ctx.compile_text(src, level)))()
        x = torch.randn(4, 3)
        check_close(model(x), x @ w + torch.tensor([1.0, -1.0]) + torch.tensor([0.5, 0.0]),
                    "float-valued ternary literal " + level)
    # A list literal given for a weight makes the call an application (it was taken for an
    # instantiation, "cannot also take the input 'x'").
    applied = """
layer Fq(w: TernaryTensor<trit, [2, 2]>, x: Tensor<float32, [?, 2]>) -> Tensor<float32, [?, 2]> {
    return x @ w
}
layer G(x: Tensor<float32, [?, 2]>) -> Tensor<float32, [?, 2]> {
    return Fq(tensor([[1.0, 0.0], [-1.0, 1.0]]), x) + Fq([[1, 0], [-1, -1]], x)
}
"""
    for level in LEVELS:
        model = entry(load(ctx.compile_text(applied, level)))()
        x = torch.randn(4, 2)
        check_close(model(x), x @ torch.tensor([[1.0, 0.0], [-1.0, 1.0]])
                    + x @ torch.tensor([[1.0, 0.0], [-1.0, -1.0]]),
                    "list literals as weights " + level)
    bad = """
layer B(x: Tensor<float32, [?, 2]>) -> Tensor<float32, [?, 2]> {
    let w: TernaryTensor<trit, [2, 2]> = tensor([[1.0, 0.5], [-1.0, 1.0]])
    return x @ w
}
"""
    expect_rejected(ctx, "not_ternary_float.tri", bad, "[NotTernary]")


def test_functional_convolutions_and_pools_take_sizes_per_dimension(ctx):
    """PyTorch meaning (LANGUAGE.md section 5): F.conv2d and the pools take [h, w] for their
    sizes and F.conv2d padding="same"/"valid"; all were rejected ("must be an integer"), and a
    negative padding, which torch rejects, was accepted."""
    src = """
layer C(w: Tensor<float32, [8, 3, 1, 7]>, w2: Tensor<float32, [8, 8, 3, 3]>,
        dw: Tensor<float32, [8, 1, 3, 3]>, t: TernaryTensor<trit, [8, 8, 1, 3]>,
        x: Tensor<float32, [?, 3, 16, 16]>) -> Tensor<float32, [?, 8, 5, 8]> {
    let a = conv2d(x, w, stride=[1, 1], padding=[0, 3])
    let b = conv2d(a, w2, padding="same", dilation=[2, 1])
    let d = depthwise_conv2d(b, dw, stride=[2, 1], padding=[1, 1])
    let e = relu(conv2d(d, t, stride=[1, 1], padding=[0, 1]) * 0.5)
    let f = conv2d(e, w2, padding="valid")
    return maxpool2d(avgpool2d(f, [2, 1], stride=[1, 1]), kernel_size=[1, 2], padding=[0, 1])
}
"""
    torch.manual_seed(0)
    for level in LEVELS:
        model = entry(load(ctx.compile_text(src, level)))().eval()
        sd = model.state_dict()
        x = torch.randn(2, 3, 16, 16)
        tq = absmean(sd["t"])
        a = F.conv2d(x, sd["w"], stride=1, padding=(0, 3))
        b = F.conv2d(a, sd["w2"], padding="same", dilation=(2, 1))
        d = F.conv2d(b, sd["dw"], stride=(2, 1), padding=1, groups=8)
        e = F.relu(F.conv2d(d, tq, padding=(0, 1)) * 0.5)
        f = F.conv2d(e, sd["w2"])
        expected = F.max_pool2d(F.avg_pool2d(f, (2, 1), stride=1), kernel_size=(1, 2),
                                padding=(0, 1))
        with torch.no_grad():
            check_close(model(x), expected, "sizes per dimension " + level, atol=1e-4)
    for bad, message in [("padding=-1", "must be a non-negative integer, not -1"),
                         ('padding="same", stride=[2, 2]', 'must be 1 with padding="same"'),
                         ("stride=[1, 2, 3]", "or a list of two integers [h, w]")]:
        expect_rejected(ctx, "conv_bad.tri",
                        "layer B(w: Tensor<float32, [8, 3, 3, 3]>, x: Tensor<float32, [?, 3, 9, 9]>)"
                        " -> Tensor<float32> {\n    return conv2d(x, w, %s)\n}\n" % bad, message)


def test_conv_layers_take_padding_same(ctx):
    """nn.Conv2d(..., padding="same") (and TernaryConv2d's) keeps the input's size: it was an
    ArgumentType error ("must be an integer"); a strided "same", which torch rejects when the
    module is created, is an error."""
    src = """
layer S(c: int, x: Tensor<float32, [?, c, ?, ?]>) -> Tensor<float32, [?, c, ?, ?]> {
    let a = TernaryConv2d(c, c, 3, padding="same")
    let b = Conv2d(c, c, 5, padding="same", dilation=2)
    let v = Conv2d(c, c, 1, padding="valid")
    return v(b(relu(a(x)))) + x
}
layer M(x: Tensor<float32, [?, 4, 9, 9]>) -> Tensor<float32, [?, 4, 9, 9]> {
    let s = S(4)
    return s(x)
}
"""
    for level in LEVELS:
        torch.manual_seed(0)
        model = entry(load(ctx.compile_text(src, level)))().eval()
        sd = model.state_dict()
        x = torch.randn(2, 4, 9, 9)
        wq = absmean(sd["s.a.weight"])
        h = F.relu(F.conv2d(x, wq, padding=1))
        h = F.conv2d(h, sd["s.b.weight"], sd["s.b.bias"], padding="same", dilation=2)
        expected = F.conv2d(h, sd["s.v.weight"], sd["s.v.bias"]) + x
        with torch.no_grad():
            check_close(model(x), expected, 'padding="same" ' + level, atol=1e-5)
            tritonrt.pack(model)
            check_close(model(x), expected, 'padding="same" packed ' + level, atol=1e-5)
    expect_rejected(ctx, "same_strided.tri",
                    src.replace('3, padding="same")', '3, padding="same", stride=2)'),
                    'no strided "same"')


def test_joined_ternary_weights_are_quantized_again_with_one_scale(ctx):
    """concat/stack of two ternary weights holds both scales (s1 * q1, s2 * q2): it was typed
    a TernaryTensor, so ternary_quantize of it was dropped as a no-op and the fused weight had
    two magnitudes (LANGUAGE.md section 3 does not list concat as a ternary source)."""
    src = """
layer Fused(wq: TernaryTensor<trit, [4, 8]>, wk: TernaryTensor<trit, [4, 8]>,
            x: Tensor<float32, [?, 8]>) -> Tensor<float32, [?, 8]> {
    let wqk = ternary_quantize(concat([wq, wk], dim=0))
    return linear(x, wqk)
}
"""
    for level in LEVELS:
        torch.manual_seed(0)
        model = entry(load(ctx.compile_text(src, level)))().eval()
        with torch.no_grad():
            model.wq.copy_(torch.randn(4, 8) * 0.1)
            model.wk.copy_(torch.randn(4, 8) * 3.0)
            x = torch.randn(2, 8)
            c = torch.cat([tritonrt.weight(model, "wq"), tritonrt.weight(model, "wk")], 0)
            check_close(model(x), F.linear(x, absmean(c)), "requantized concat " + level,
                        atol=1e-5)
    expect_rejected(ctx, "concat_ternary.tri",
                    src.replace("let wqk = ternary_quantize(concat([wq, wk], dim=0))",
                                "let wqk: TernaryTensor<trit, [8, 8]> = concat([wq, wk], dim=0)"),
                    "[NotTernary]")


def test_attention_adds_a_float_mask_in_the_scores_dtype(ctx):
    """A float32 additive mask with bfloat16 queries promoted the scores to float32, and the
    product with the bfloat16 values raised "expected scalar type Float but found BFloat16" at
    every level (the checker typed the result bfloat16). The mask is converted now."""
    src = """
layer SM(q: Tensor<bfloat16, [?, ?, ?, 8]>, mask: Tensor<float32, [?, ?]>)
        -> Tensor<bfloat16, [?, ?, ?, 8]> {
    return scaled_dot_product_attention(q, q, q, mask)
}
"""
    torch.manual_seed(0)
    q = torch.randn(1, 2, 4, 8)
    mask = torch.triu(torch.ones(4, 4), 1) * -1e9
    scores = q @ q.transpose(-2, -1) / math.sqrt(8) + mask
    expected = torch.softmax(scores, dim=-1) @ q
    for level in LEVELS:
        module = entry(load(ctx.compile_text(src, level)))()
        out = module(q.bfloat16(), mask)
        if out.dtype != torch.bfloat16:
            raise AssertionError("%s: %s" % (level, out.dtype))
        check_close(out.float(), expected, "bf16 attention " + level, atol=0.1, rtol=0.05)


def test_masks_follow_a_converted_language_model(ctx):
    """After `model.bfloat16()`, float32 tensors a body creates follow the model's dtype. A fn
    with no tensor input (a causal mask from a length) made float32 at -O0/-O1 (inlined at
    -O2 it followed), and a layer whose inputs are ids and whose weights are its sub-modules'
    had no tensor to follow: both promoted the scores and the bfloat16 product raised."""
    src = """
fn causal(t: int) -> Tensor<float32, [?, ?]> {
    let i = arange(0, t)
    return float32(unsqueeze(i, 1) < unsqueeze(i, 0)) * -1e9
}
layer LM(ids: Tensor<int64, [?, ?]>) -> Tensor<float32, [?, ?, 50]> {
    let tok = Embedding(50, 16)
    let head = TernaryLinear(16, 50)
    let h = tok(ids)
    let t = ids.shape[1]
    let i = arange(0, t)
    let mask = float32(unsqueeze(i, 1) < unsqueeze(i, 0)) * -1e9
    let s = h @ transpose(h, 1, 2) / 4.0 + mask + causal(t)
    return head(softmax(s, dim=-1) @ h + zeros([16]))
}
"""
    for level in LEVELS:
        torch.manual_seed(0)
        model = entry(load(ctx.compile_text(src, level)))().eval()
        ids = torch.randint(0, 50, (2, 5))
        with torch.no_grad():
            expected = model(ids)
            out = model.bfloat16()(ids)
        if out.dtype != torch.bfloat16:
            raise AssertionError("%s: %s" % (level, out.dtype))
        check_close(out.float(), expected, "bfloat16 language model " + level, atol=0.5, rtol=0.1)


def test_stacked_weights_pack_along_their_reduction(ctx):
    """TOOLCHAIN.md "Packed ternary format": rows run along the reduction dimension. Stacked
    weights read by index (`linear(h, ws[0])`, `h @ vs[i]`) were packed as [L, out * in] rows
    (the index hid the reduction from the layout analysis)."""
    src = """
layer Stack(L: int = 2, ws: TernaryTensor<trit, [L, 5, 6]>, vs: TernaryTensor<trit, [L, 6, 5]>,
            x: Tensor<float32, [?, 6]>) -> Tensor<float32, [?, 5]> {
    let h = x
    let y = linear(h, ws[0])
    for i in range(L) {
        y = y + h @ vs[i]
    }
    return y
}
"""
    for level in LEVELS:
        torch.manual_seed(0)
        model = entry(load(ctx.compile_text(src, level)))().eval()
        x = torch.randn(3, 6)
        with torch.no_grad():
            expected = model(x)
            tritonrt.pack(model)
            shapes = {k: tuple(v.shape) for k, v in model.state_dict().items()}
            check_close(model(x), expected, "packed stacked weights " + level)
        if shapes.get("ws") != (10, 2) or shapes.get("vs") != (10, 2):
            raise AssertionError("%s: packed shapes %s, expected 10 runs of 6 each" % (level, shapes))


def test_attention_takes_is_causal(ctx):
    """F.scaled_dot_product_attention's is_causal=True (the lower triangle of [L, S]), as
    GPT-style code writes it; it was an unknown named argument."""
    src = """
layer A(q: Tensor<float32, [?, 2, ?, 8]>, k: Tensor<float32, [?, 2, ?, 8]>)
        -> Tensor<float32, [?, 2, ?, 8]> {
    return (scaled_dot_product_attention(q, k, k, is_causal=true)
        + scaled_dot_product_attention(q, k, k, is_causal=false))
}
"""
    q = torch.randn(2, 2, 5, 8)
    k = torch.randn(2, 2, 7, 8)
    s = q @ k.transpose(-2, -1) / math.sqrt(8)
    mask = torch.ones(5, 7, dtype=torch.bool).tril()
    expected = (torch.softmax(s.masked_fill(~mask, float("-inf")), -1) @ k
                + torch.softmax(s, -1) @ k)
    for level in LEVELS:
        model = entry(load(ctx.compile_text(src, level)))()
        check_close(model(q, k), expected, "is_causal " + level)


def test_creations_take_a_dtype(ctx):
    """zeros/ones/randn/rand/full/arange take torch's dtype= (`zeros([n], dtype=int64)`), which
    was an unknown named argument; float32 still follows a converted model."""
    src = """
layer C(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {
    let a = zeros([2, 4], dtype=int64)
    let b = ones([4], dtype=bool)
    let c = full([4], 3, dtype=int8)
    let d = arange(0, 4, dtype=float32)
    let e = randn([4], dtype=float16)
    return x + float32(a[0]) + float32(b) + float32(c) + d + float32(e) * 0.0
}
"""
    for level in LEVELS:
        model = entry(load(ctx.compile_text(src, level)))()
        x = torch.randn(3, 4)
        check_close(model(x), x + 4 + torch.arange(0, 4).float(), "creation dtypes " + level)
        out = model.double()(x.double())
        if out.dtype != torch.float64:
            raise AssertionError("%s: %s after .double()" % (level, out.dtype))


def all_tests():
    tests = []
    for name in EXAMPLES:
        tests += [make_level_test(name), make_train_test(name), make_pack_test(name),
                  make_format_test(name), make_compile_test(name)]
    tests += [test_main_instance_names_are_not_reused, test_main_runs_its_instances_in_eval_mode,
              test_sub_layers_take_their_inputs_positionally]
    tests += [test_mnist_matches_handwritten, test_tutorial_cnn_matches_handwritten,
              test_builtin_layers_take_torch_constructor_arguments,
              test_assert_on_a_bool_tensor_holds_when_every_element_does,
              make_reference_test("resnet18", RefResNet18),
              make_reference_test("resnet34", RefResNet34),
              make_reference_test("resnet50", RefResNet50),
              make_reference_test("resnet101", RefResNet101),
              make_reference_test("resnet152", RefResNet152),
              make_reference_test("mobilenet_v2", RefMobileNetV2),
              make_reference_test("efficientnet_b0", RefEfficientNetB0),
              make_reference_test("densenet121", RefDenseNet121),
              make_reference_test("vgg16", RefVGG16),
              make_reference_test("vit_base", RefViTBase),
              make_reference_test("transformer_block", RefTinyTransformerLM),
              test_cnn_state_dict_keys, test_dead_tensors_are_released,
              test_sizes_from_max_min_abs_of_constants, test_builtin_layer_sizes_as_lists,
              test_a_variable_that_grows_in_a_loop_runs_at_O0,
              test_shapeless_creation_inside_a_weight_default_expression,
              test_ternary_constants_follow_a_converted_model,
              test_standard_ternary_layers_take_a_quantizer_method,
              test_conv_and_layer_norm_sizes_are_checked_at_O0,
              test_a_bool_mask_times_a_float_matrix_promotes,
              test_float_literals_of_minus_one_zero_one_are_ternary_where_declared,
              test_functional_convolutions_and_pools_take_sizes_per_dimension,
              test_conv_layers_take_padding_same,
              test_joined_ternary_weights_are_quantized_again_with_one_scale,
              test_attention_adds_a_float_mask_in_the_scores_dtype,
              test_masks_follow_a_converted_language_model,
              test_stacked_weights_pack_along_their_reduction,
              test_attention_takes_is_causal,
              test_creations_take_a_dtype,
              test_broadcast_of_two_size_variables_is_checked_against_the_declared_type,
              test_dead_tensors_are_released_in_loops_and_branches,
              test_residual_sums_are_written_into_the_convolutions_output,
              test_torch_fx_traces_causal_attention,
              test_accumulated_concat_equals_the_loop_as_written,
              test_constant_ternary_products, test_os_writes_single_use_values_into_their_statement,
              test_nested_instances_each_run, test_control_flow_and_builtins,
              test_split_with_a_list_of_sizes, test_adaptive_pool_to_height_and_width,
              test_loop_body_is_checked_with_the_sizes_of_later_iterations,
              test_trit_tensors_have_the_dtype_of_their_static_type,
              test_clip_of_an_integer_tensor_by_wider_bounds,
              test_linear_of_integers_with_a_float_bias,
              test_keepdim_and_split_dim_known_only_when_run,
              test_depthwise_conv_with_a_channel_multiplier,
              test_values_updated_together, test_os_merges_identical_declarations,
              test_locals_never_shadow_module_names, test_implicit_widening_converts_values,
              test_source_names_never_take_generated_names,
              test_source_names_never_shadow_torch_or_python,
              test_weights_named_like_the_generated_codes_modules_keep_their_keys,
        test_mixed_float_dtypes_are_converted,
        test_weight_defaults_without_shape,
        test_pow_with_tensor_exponent,
        test_variables_take_tensors_of_other_sizes,
        test_reductions_over_several_dimensions,
        test_concat_sizes_are_checked_at_O0,
        test_unknown_sizes_are_compared_with_each_other_at_O0,
        test_a_size_broadcast_against_an_unknown_one_is_checked_at_O0,
        test_concat_of_unknown_then_known_sizes_is_checked_at_O0,
        test_cross_entropy_batch_sizes_are_compared_at_O0, test_depthwise_conv_of_an_unbatched_input,
        test_hyperparameters_named_like_temporaries,
        test_statistics_passed_through_layers_and_fns_are_the_same_at_every_level,
        test_names_python_would_mangle,
              test_functional_batch_norm_with_weight_statistics,
              test_reads_of_module_state_stay_in_order,
              test_in_place_dropout_changes_no_other_value,
              test_weights_never_share_a_module_constant,
              test_cross_entropy_takes_int32_class_indices,
              test_converted_models_compute_in_their_dtype, test_zoo_runs_in_float64,
              test_zoo_runs_on_the_meta_device, test_min_max_take_the_spec_parameter_names,
              test_runtime_check_names_the_expected_value,
              test_inputs_are_checked_against_their_declared_type_at_O0,
              test_values_of_unknown_rank_are_checked_at_O0,
              test_mixed_float_operands_take_the_language_dtype,
    test_tensor_with_a_number_promotes_as_the_language_says,
    test_list_elements_can_be_assigned,
    test_bools_widen_in_arithmetic,
    test_int64_minimum_is_a_literal,
    test_scalar_rounding_keeps_floats,
    test_scalar_min_max_propagate_nan,
    test_clip_bounds_and_keepdim_without_dim,
    test_long_attention_expressions_wrap_into_valid_python,
    test_a_sub_modules_ternary_weight_read_as_a_member_is_quantized,
    test_subtracting_a_bool_converts_it,
    test_rounding_and_argmax_of_bools,
    test_builtins_of_two_dtypes_compute_in_the_checked_dtype,
    test_pools_embeddings_and_attention_take_any_dtype_the_checker_accepts,
    test_builtins_of_numbers_give_the_checked_type,
    test_inlining_keeps_loop_nests_within_python_limits,
    test_else_if_chains_are_written_with_elif,
              test_powers_of_negative_numbers_agree_at_every_level,
    test_scalar_sigmoid_never_overflows,
              test_weights_keep_their_declared_dtypes,
              test_half_weight_initializers_compute_in_the_weights_dtype,
              test_tensor_constants_follow_the_inputs_device, test_string_options_compare,
              test_gelu_trains_under_token_mixing, test_fn_batch_norm_without_the_training_flag,
              test_defaults_computed_from_other_hyperparameters, test_several_results_are_a_list,
              test_non_square_sizes_match_torch, test_torch_fx_traces_the_examples,
              test_torch_fx_traces_depthwise_convs_of_hyperparameter_channels,
              test_torch_fx_traces_split_pieces, test_torch_fx_traces_tensor_constants,
              test_running_statistics_weights_take_no_gradient,
              test_one_sub_module_name_in_exclusive_branches,
              test_reassigned_variable_is_checked_at_O0, test_bool_tensors_combine_element_wise,
              test_constants_computed_by_fns, test_quantize_semantics_agree_across_levels,
              test_runtime_dtypes_follow_static_types,
              test_packed_rows_run_along_the_reduction_dimension,
    test_batched_weights_pack_along_their_reduction_dimension,
    test_scaled_weights_pack_along_their_reduction_dimension,
    test_application_takes_hyperparameters_in_header_order,
              test_runtime_shape_check_at_O0, test_python_keywords_are_escaped,
              test_long_strings_wrap_within_100_columns,
              test_the_header_and_kernel_registration_keep_to_100_columns,
              test_long_lines_wrap_within_100_columns_at_every_level,
              test_ternary_sums_and_integer_tensors_follow_the_models_dtype,
              test_built_in_layers_take_a_bfloat16_input_declared_in_the_source,
              test_conv_bn_blocks_take_the_dtypes_the_unfused_layers_take,
              test_constants_that_raise_never_fail_the_import,
              test_entry_names_a_layer_as_the_file_sees_it,
              test_guard_clauses_decide_which_sub_modules_exist,
              test_every_accepted_golden_imports, test_members_and_main,
              test_failed_compile_writes_nothing,
              test_invisible_characters_in_strings_are_escaped,
              test_print_shows_hyperparameters, test_long_size_chains_import,
              test_bools_where_integers_are_meant, test_created_tensors_keep_the_models_dtype,
              test_linear_of_ternary_values_adds_a_float_bias,
              test_invisible_characters_of_file_names_are_escaped_in_headers]
    return tests


def test_invisible_characters_in_strings_are_escaped(ctx):
    """Strings keep their value, but characters that print as nothing or reorder the text
    around them (a right-to-left override, zero-width spaces, a byte order mark, C1 controls
    such as NEL, the line separator) reach the module as \\u escapes, never raw (Trojan
    Source: GitHub flags such files). A string long enough to be wrapped is cut between
    escapes, never inside one. Visible non-ASCII text (accents, symbols) stays as written."""
    hidden = "\u202e\u200b\ufeff\u0085\u2028\u2066\u00ad"
    short = "admin" + hidden[:3] + " caf\u00e9 \u2713"
    long_text = "x" * 70 + hidden * 12
    program = ('let SHORT = "%s"\nlet LONG = "%s"\nmain {\n    print(SHORT)\n}\n'
               % (short, long_text))
    for level in LEVELS:
        path = ctx.compile_text(program, level)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        raw = sorted(set(ch for ch in text if ch in hidden))
        if raw:
            raise AssertionError("%s: raw invisible characters %r in the module" % (level, raw))
        if "caf\u00e9 \u2713" not in text:
            raise AssertionError("%s: visible non-ASCII text was escaped" % level)
        module = load(path)
        if module.SHORT != short or module.LONG != long_text:
            raise AssertionError("%s: the strings changed: %r %r" % (level, module.SHORT,
                                                                     module.LONG))


def test_print_shows_hyperparameters(ctx):
    """print(model) shows each layer's hyperparameters under their source names, as torch.nn's
    layers show theirs (an extra_repr): `Block(d=8, act='relu', float=0.5)`, a renamed one
    (`float`, stored as `float_`) included, at every level."""
    program = (
        'layer Block(d: int, act: str = "relu", float: float32 = 0.5,\n'
        '            x: Tensor<float32, [?, d]>) -> Tensor<float32, [?, d]> {\n'
        '    let fc = Linear(d, d)\n'
        '    return fc(x) * float\n'
        '}\n'
        'layer Net(width: int = 8, x: Tensor<float32, [?, 8]>) -> Tensor<float32, [?, 8]> {\n'
        '    let b = Block(width)\n'
        '    return b(x)\n'
        '}\n')
    for level in LEVELS:
        module = load(ctx.compile_text(program, level))
        text = repr(module.Net())
        for want in ("Net(\n  width=8\n", "(b): Block(\n    d=8, act='relu', float=0.5\n",
                     "(fc): Linear(in_features=8, out_features=8, bias=True)"):
            if want not in text:
                raise AssertionError("%s: %r not in %s" % (level, want, text))


def test_long_size_chains_import(ctx):
    """Dimension arithmetic and hyperparameter arithmetic of a long chain (`n + n + ... + n`,
    250 terms) import: each step in its own parentheses nested past the 200 CPython's parser
    takes ("too many nested parentheses", stop 54 review). A chain of one precedence is
    written as Python reads it, `n + n + n`; other precedences keep theirs (`(a + b) * c`,
    `a - (b - c)`), which the values check."""
    terms = " + ".join(["n"] * 250)
    product = " * ".join(["n"] * 300)
    program = (
        "layer W(n: int = 1, m: int = 3, w: Tensor<float32, [%s]>, v: Tensor<float32, [%s]>,\n"
        "        u: Tensor<float32, [(n + m) * 2 - (m - n) - 1]>,\n"
        "        x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {\n"
        "    return x\n"
        "}\n"
        "layer Net(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {\n"
        "    let b = W(%s)\n"
        "    return b(x)\n"
        "}\n" % (terms, product, " + ".join(["1"] * 300) + " - 299"))
    for level in LEVELS:
        module = load(ctx.compile_text(program, level))
        for made, n in ((module.Net().b, 1), (module.W(), 1)):
            shapes = (tuple(made.w.shape), tuple(made.v.shape), tuple(made.u.shape))
            want = ((250 * n,), (n ** 300,), ((n + 3) * 2 - (3 - n) - 1,))
            if shapes != want:
                raise AssertionError("%s, n = %d: shapes %s, not %s" % (level, n, shapes, want))


def test_bools_where_integers_are_meant(ctx):
    """A bool used where an integer is meant (an index, a slice bound, a `dim`, a size in a
    shape list) is the integer LANGUAGE.md's widening makes it (`int(flag)`): torch reads
    `x[True]` as a new axis and rejects a bool `dim` (audit 59: `x[first]` returned
    `(1, 3, 4)` for the declared `[3, 4]`, `unsqueeze(x, b)` raised TypeError)."""
    program = (
        "layer T(first: bool = true, x: Tensor<float32, [?, 3, 4]>) -> Tensor<float32, [?, 4]> {\n"
        "    let a = x[first]\n"
        "    let b = x[:, first]\n"
        "    let c = x[1, first]\n"
        "    let u = unsqueeze(x, first)\n"
        "    let s = softmax(x, dim=first)\n"
        "    let t = transpose(x, first, 0)\n"
        "    let m = sum(x, dim=first)\n"
        "    let f = flatten(x, first)\n"
        "    let cc = concat([x, x], dim=first)\n"
        "    let am = argmax(x, dim=first) + max(x, first)\n"
        "    let sl = x[first:2]\n"
        "    let z = ones([first + 1, 4])\n"
        "    return b + mean(a) + mean(c) + mean(u) + mean(s) + mean(t) + m + mean(f) +\n"
        "        mean(cc) + float32(am) + mean(sl) + sum(z, 0)\n"
        "}\n")

    def reference(x, first):
        i = int(first)
        a, b, c = x[i], x[:, i], x[1, i]
        u, s, t = x.unsqueeze(i), torch.softmax(x, dim=i), x.transpose(i, 0)
        m, f, cc = x.sum(dim=i), x.flatten(i), torch.cat([x, x], dim=i)
        am = x.argmax(dim=i) + x.max(i).values
        sl, z = x[i:2], torch.ones(i + 1, 4)
        return (b + a.mean() + c.mean() + u.mean() + s.mean() + t.mean() + m + f.mean()
                + cc.mean() + am.float() + sl.mean() + z.sum(0))

    x = torch.randn(3, 3, 4)
    for level in LEVELS:
        module = load(ctx.compile_text(program, level))
        for first in (True, False):
            got = module.T(first=first)(x)
            want = reference(x, first)
            if got.shape != want.shape or not torch.allclose(got, want, atol=1e-5):
                raise AssertionError("%s, first=%s: %s against %s" % (level, first, got, want))


def test_created_tensors_keep_the_models_dtype(ctx):
    """Tensors a body creates in float32 follow the model's dtype, whatever packing does and
    whatever a weight declared bfloat16 is (audit 59): an all-ternary layer over ids anchors
    on its ternary weight's value (it created float32 tensors after `.double()`, and
    F.linear raised); a layer with sub-modules and a bfloat16 weight keeps float32 while
    any state is float32 (pack() made the bfloat16 weight the first floating parameter:
    its creations turned bfloat16, outputs changed or F.linear raised)."""
    program = (
        "layer Stateless(w: TernaryTensor<trit, [4, 4]> = ternary_quantize(kaiming_uniform()),\n"
        "                ids: Tensor<int64, [?]>) -> Tensor<float32, [?, 4]> {\n"
        "    let c = full([ids.shape[0], 4], 0.1)\n"
        "    return linear(c, w)\n"
        "}\n"
        "layer Mixed(w: TernaryTensor<trit, [4, 4]> = ternary_quantize(kaiming_uniform()),\n"
        "            g: Tensor<bfloat16, [4]> = ones(),\n"
        "            ids: Tensor<int64, [?]>) -> Tensor<float32, [?, 4]> {\n"
        "    let drop = Dropout(0.0)\n"
        "    let c = full([ids.shape[0], 4], 0.1)\n"
        "    return drop(linear(c, w) + embedding(ids, w) + c * g)\n"
        "}\n")
    ids = torch.tensor([0, 3, 1])
    for level in LEVELS:
        module = load(ctx.compile_text(program, level))
        torch.manual_seed(0)
        for convert in (torch.float64, torch.bfloat16):
            m = module.Stateless().to(convert).eval()
            got = m(ids)
            w = m.w.detach()
            s = w.abs().mean().clamp(min=1e-5)
            want = torch.full((3, 4), 0.1, dtype=convert) @ ((w / s).round().clamp(-1, 1) * s).t()
            if got.dtype != convert or not torch.allclose(got, want, atol=1e-2):
                raise AssertionError("%s, Stateless().to(%s): %s %s against %s"
                                     % (level, convert, got.dtype, got, want))
        m = module.Mixed().eval()
        with torch.no_grad():
            before = m(ids)
            tritonrt.pack(m)
            after = m(ids)
        if before.dtype != torch.float32 or not torch.equal(before, after):
            raise AssertionError("%s: Mixed's outputs %s (%s) before pack(), %s after"
                                 % (level, before, before.dtype, after))
    # A fn over ids making float32 tensors takes its caller's dtype (`_dtype`), as its
    # body inlined at -O2 does.
    program = (
        "fn one_hot(ids: Tensor<int64, [?]>, n: int) -> Tensor<float32, [?, ?]> {\n"
        "    return float32(unsqueeze(ids, -1) == unsqueeze(arange(0, n), 0))\n"
        "}\n"
        "fn ramp(ids: Tensor<int64, [?]>) -> Tensor<float32, [?, 1]> {\n"
        "    return unsqueeze(float32(ids), 1) * 0.5 + zeros([ids.shape[0], 1])\n"
        "}\n"
        "fn both(ids: Tensor<int64, [?]>, n: int) -> Tensor<float32, [?, ?]> {\n"
        "    return one_hot(ids, n) + ramp(ids)\n"
        "}\n"
        "layer OneHotNet(vocab: int = 6, d: int = 4,\n"
        "                w: TernaryTensor<trit, [d, vocab]> = ternary_quantize(kaiming_uniform()),\n"
        "                g: Tensor<float32, [d]> = ones(),\n"
        "                ids: Tensor<int64, [?]>) -> Tensor<float32, [?, d]> {\n"
        "    return linear(both(ids, vocab), w) * g + ramp(ids)\n"
        "}\n")
    for level in LEVELS:
        module = load(ctx.compile_text(program, level))
        m = module.OneHotNet().double().eval()
        got = m(ids)
        w = m.w.detach()
        s = w.abs().mean().clamp(min=1e-5)
        ramp = ids.double().unsqueeze(1) * 0.5
        hot = F.one_hot(ids, 6).double() + ramp
        want = F.linear(hot, (w / s).round().clamp(-1, 1) * s) * m.g.detach() + ramp
        if got.dtype != torch.float64 or not torch.allclose(got, want):
            raise AssertionError("%s: OneHotNet().double(): %s %s against %s"
                                 % (level, got.dtype, got, want))


def test_linear_of_ternary_values_adds_a_float_bias(ctx):
    """`linear(ternary_quantize(x), w, b)` (ternary activations, as TWN nets have them): the
    int32-valued product of two ternary values meets a float bias as `+` does, a float32
    (audit 59: the bias was converted to int32, `b.to(torch.int32)`, and F.linear raised
    "self and mat2 must have the same dtype" at every level)."""
    program = (
        "layer TT(w: TernaryTensor<trit, [4, 8]> = ternary_quantize(kaiming_uniform()),\n"
        "         b: Tensor<float32, [4]> = randn(), x: Tensor<float32, [?, 8]>)\n"
        "         -> Tensor<float32, [?, 4]> {\n"
        "    return linear(ternary_quantize(x), w, b) + linear(trit(x), w, b)\n"
        "}\n")

    def quantized(t):
        s = t.abs().mean().clamp(min=1e-5)
        return (t / s).round().clamp(-1, 1) * s

    x = torch.randn(3, 8)
    for level in LEVELS:
        module = load(ctx.compile_text(program, level))
        m = module.TT().eval()
        w, b = m.w.detach(), m.b.detach()
        want = (F.linear(quantized(x), quantized(w), b)
                + F.linear(x.round().clamp(-1, 1), quantized(w), b))
        got = m(x)
        if got.dtype != torch.float32 or not torch.allclose(got, want, atol=1e-5):
            raise AssertionError("%s: %s against %s" % (level, got, want))


def test_invisible_characters_of_file_names_are_escaped_in_headers(ctx):
    """A file name's bidi controls, zero-width characters and C1 controls print as nothing or
    reorder the line (Trojan Source): the header comments of the .py and .cu (and the .cu's
    build command) write them as `\\u202e`-style escapes, as the code's strings do; visible
    non-ASCII text stays (stop 54 review)."""
    folder = os.path.join(ctx.workdir, "names")
    os.makedirs(folder, exist_ok=True)
    src = os.path.join(folder, "caf\u00e9\u202e\u200b\u0085.tri")
    with open(src, "w") as f:
        f.write(PROGRAMS_FOR_NAMES)
    out = os.path.join(folder, "m.py")
    proc = subprocess.run([ctx.tritonc, "compile", src, "-o", out, "--target", "cuda",
                           "--nvcc", "/nonexistent/nvcc", "--no-cache"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise AssertionError(proc.stderr)
    cu = [f for f in os.listdir(folder) if f.endswith("_kernels.cu")]
    for path in [out] + [os.path.join(folder, f) for f in cu]:
        head = "".join(open(path, encoding="utf-8").readlines()[:3])
        for raw in ("\u202e", "\u200b", "\u0085"):
            if raw in head:
                raise AssertionError("%s: raw U+%04X in %r" % (path, ord(raw), head))
        for escaped in ("\\u202e", "\\u200b", "\\u0085", "caf\u00e9"):
            if escaped not in head:
                raise AssertionError("%s: %r not in %r" % (path, escaped, head))


PROGRAMS_FOR_NAMES = (
    "layer Net(w: TernaryTensor<trit, [8, 4]>, x: Tensor<float32, [?, 8]>)\n"
    "    -> Tensor<float32, [?, 4]> {\n"
    "    return x @ w\n"
    "}\n")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tritonc", required=True)
    parser.add_argument("-k", default="", help="run only tests whose name contains this")
    parser.add_argument("--shard", default="1/1", metavar="I/N",
                        help="run only the I-th of N interleaved parts of the selected tests "
                             "(N processes in parallel cover them all)")
    args = parser.parse_args()
    shard, shards = (int(v) for v in args.shard.split("/"))
    if not 1 <= shard <= shards:
        parser.error("--shard: I/N with 1 <= I <= N")
    selected = [t for t in all_tests() if not args.k or args.k in t.__name__]
    passed = failed = 0
    with tempfile.TemporaryDirectory() as workdir:
        ctx = Context(os.path.abspath(args.tritonc), workdir)
        for test in selected[shard - 1::shards]:
            start = time.monotonic()
            try:
                test(ctx)
                passed += 1
                print("PASS %s (%.1f s)" % (test.__name__, time.monotonic() - start))
            except Skip as why:
                print("SKIP", test.__name__, "-", why)
            except Exception:  # noqa: BLE001 - report every failure and go on
                failed += 1
                print("FAIL", test.__name__)
                traceback.print_exc()
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Incremental compiles (`--incremental`) through the binary.

    python3 tests/e2e/test_incremental.py --tritonc build/tools/tritonc/tritonc

After every edit of a script of edits (a body, a constant used as a dimension, a new layer
that becomes the entry, a deletion, a rename, a reordering, comments, lines inserted above
everything, a type error and a syntax error and their fixes, two layers with one name),
`compile --incremental` writes exactly what a full `--no-cache` compile writes, byte for
byte, with the same exit status and diagnostics, at -O0, -O2 and -O3. The --verbose line
says how many declarations were recompiled, and the test checks the counts an edit implies
(only the edited declaration and those that use it), so a compile that silently did
everything again fails. Every example compiled with --incremental equals its full compile
and a second compile reuses every declaration. In a file with imports, its own declarations
are recompiled on their own and an edit to an imported file recompiles all of them.
Ends with "N passed, N failed".
"""
import os
import random
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import runner  # noqa: E402

REPO = runner.REPO
EXAMPLES = sorted(os.path.join(REPO, "examples", f)
                  for f in os.listdir(os.path.join(REPO, "examples")) if f.endswith(".tri"))

# Eight declarations: constants (one used as a dimension), fns, a tutorial-style layer, a
# module-style block, a head, an unused layer, the entry model and main.
SOURCE = """\
# a model file edited by the test
let HIDDEN = 64
let SCALE = 0.5

fn act(x: Tensor<float32, [?, ?]>) -> Tensor<float32, [?, ?]> {
    return relu(x) * SCALE
}

layer TernaryFC(w: TernaryTensor<trit, [n_in, n_out]>, b: Tensor<float32, [n_out]>,
                x: Tensor<float32, [?, n_in]>) -> Tensor<float32, [?, n_out]> {
    return act(x @ w + b)
}

layer Block(d: int, x: Tensor<float32, [?, d]>) -> Tensor<float32, [?, d]> {
    let fc = TernaryLinear(d, d)
    let norm = LayerNorm(d)
    return x + fc(norm(x))
}

layer Spare(x: Tensor<float32, [?, 8]>) -> Tensor<float32, [?, 8]> {
    return sigmoid(x)
}

layer Model(w1: TernaryTensor<trit, [784, HIDDEN]>, b1: Tensor<float32, [HIDDEN]>,
            x: Tensor<float32, [?, 784]>) -> Tensor<float32, [?, 10]> {
    let block = Block(HIDDEN)
    let head = Linear(HIDDEN, 10)
    let h = TernaryFC(w1, b1, x)
    return head(block(h))
}

main {
    let model = Model()
    print(model(randn([2, 784])).shape)
}
"""


def run(tritonc, work, *args):
    env = runner.tritonc_env(work)
    return subprocess.run([tritonc] + list(args), cwd=work, env=env, capture_output=True,
                          timeout=300)


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def counts(stderr):
    """(changed, units, recompiled) from the --verbose line, or the reason it fell back."""
    text = stderr.decode()
    m = re.search(r"incremental: \S+: (\d+) of (\d+) declaration\(s\) changed, (\d+) recompiled",
                  text)
    if m:
        return tuple(int(g) for g in m.groups())
    m = re.search(r"incremental: \S+: compiled in full \((.*)\)", text)
    return m.group(1) if m else None


def compare(tritonc, work, name, level, extra=()):
    """Compiles `name` incrementally and in full; asserts identical results; returns the
    incremental compile's counts."""
    inc_out, full_out = os.path.join(work, "inc.py"), os.path.join(work, "full.py")
    for path in (inc_out, full_out):
        if os.path.exists(path):
            os.unlink(path)
    inc = run(tritonc, work, "compile", name, "-O" + level, "--incremental", "--verbose",
              "-o", inc_out, *extra)
    full = run(tritonc, work, "compile", name, "-O" + level, "--no-cache", "-o", full_out,
               *extra)
    assert inc.returncode == full.returncode, (inc.returncode, full.returncode, inc.stderr)
    diagnostics = [line for line in inc.stderr.decode().splitlines()
                   if not line.startswith("tritonc: ")]  # the --verbose log lines
    assert diagnostics == full.stderr.decode().splitlines(), (diagnostics, full.stderr)
    assert read(inc_out) == read(full_out), "the incremental module differs from a full compile"
    return counts(inc.stderr)


def edit(path, old, new, count=1):
    with open(path) as f:
        text = f.read()
    assert old in text, old
    with open(path, "w") as f:
        f.write(text.replace(old, new, count))


def check_edits(tritonc, work, level):
    path = os.path.join(work, "model.tri")
    with open(path, "w") as f:
        f.write(SOURCE)
    c = compare(tritonc, work, "model.tri", level)
    assert c == (8, 8, 8), c  # nothing stored yet: everything compiled, and stored
    assert compare(tritonc, work, "model.tri", level, ["--entry", "Block"])[1] == 8
    # An unchanged file is an L3 hit (no incremental line); after an edit of one leaf
    # declaration nobody uses, only it is recompiled.
    edit(path, "return sigmoid(x)", "return sigmoid(x) * 2.0")
    assert compare(tritonc, work, "model.tri", level) == (1, 8, 1)
    # A fn used by TernaryFC, which Model uses: the three of them change; main uses
    # Model, so it changes too, and only these four are recompiled; what they use (SCALE,
    # HIDDEN, Block) is read again with them, its pieces reused; Spare is not read.
    edit(path, "return relu(x) * SCALE", "return gelu(x) * SCALE")
    assert compare(tritonc, work, "model.tri", level) == (4, 8, 4)
    # A constant used as a dimension.
    edit(path, "let HIDDEN = 64", "let HIDDEN = 32")
    c = compare(tritonc, work, "model.tri", level)
    assert c[0] == 3 and c[2] < 8, c  # HIDDEN, Model, main
    # Comments and blank lines between declarations change nothing at -O1 and up.
    edit(path, "# a model file edited by the test\n", "# a model file\n# edited\n\n")
    c = compare(tritonc, work, "model.tri", level)
    if level == "0":
        assert c[0] >= 1, c  # -O0 quotes lines in its run-time checks
    else:
        assert c == (0, 8, 0), c
    # A new layer at the end becomes the entry.
    with open(path, "a") as f:
        f.write("\nlayer Wrapper(x: Tensor<float32, [?, 784]>) -> Tensor<float32, [?, 10]> {\n"
                "    let inner = Model()\n    return softmax(inner(x), dim=-1)\n}\n")
    c = compare(tritonc, work, "model.tri", level)
    assert c[:2] == (1, 9), c
    # A type error in one layer, then its fix.
    edit(path, "return x + fc(norm(x))", "return x + fc(norm(x)) + missing_name")
    assert compare(tritonc, work, "model.tri", level) == "a changed declaration has diagnostics"
    edit(path, "return x + fc(norm(x)) + missing_name", "return x + fc(norm(x))")
    c = compare(tritonc, work, "model.tri", level)
    assert isinstance(c, tuple), c
    # A syntax error, then its fix.
    edit(path, "return sigmoid(x) * 2.0", "return sigmoid(x * 2.0")
    c = compare(tritonc, work, "model.tri", level)
    assert c in ("unbalanced brackets", "a changed declaration does not parse cleanly"), c
    edit(path, "return sigmoid(x * 2.0", "return sigmoid(x) * 2.0")
    assert isinstance(compare(tritonc, work, "model.tri", level), tuple)
    edit(path, "return sigmoid(x) * 2.0", "return sigmoid(x) * * 2.0")
    c = compare(tritonc, work, "model.tri", level)
    assert c == "a changed declaration does not parse cleanly", c
    edit(path, "return sigmoid(x) * * 2.0", "return sigmoid(x * 2.0")
    # A lexical error anywhere.
    edit(path, "let SCALE = 0.5", "let SCALE = 0.5 $")
    assert compare(tritonc, work, "model.tri", level) == "the file has diagnostics"
    edit(path, "let SCALE = 0.5 $", "let SCALE = 0.5")
    edit(path, "return sigmoid(x * 2.0", "return sigmoid(x) * 2.0")
    assert isinstance(compare(tritonc, work, "model.tri", level), tuple)
    # A rename of a layer and of its use; a deletion; two layers swapped.
    edit(path, "Block", "Residual", count=10)
    c = compare(tritonc, work, "model.tri", level)
    assert isinstance(c, tuple) and c[0] >= 2, c
    with open(path) as f:
        text = f.read()
    start = text.index("layer Spare(")
    end = text.index("}\n", start) + 2
    with open(path, "w") as f:
        f.write(text[:start] + text[end:])
    c = compare(tritonc, work, "model.tri", level)
    assert c[1] == 8, c
    with open(path) as f:
        text = f.read()
    fc = text[text.index("layer TernaryFC("):text.index("layer Residual(")]
    text = text.replace(fc, "")
    text = text.replace("layer Model(", fc + "layer Model(")
    with open(path, "w") as f:
        f.write(text)
    assert isinstance(compare(tritonc, work, "model.tri", level), tuple)
    # Two layers with one name: the full compile reports it.
    with open(path, "a") as f:
        f.write("\nlayer Wrapper(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {\n"
                "    return x\n}\n")
    assert compare(tritonc, work, "model.tri", level) == "two declarations are named 'Wrapper'"


def test_edits_at_O2(tritonc, work):
    check_edits(tritonc, work, "2")


def test_edits_at_O0(tritonc, work):
    check_edits(tritonc, work, "0")


def test_edits_at_O3(tritonc, work):
    check_edits(tritonc, work, "3")


def test_examples(tritonc, work):
    for example in EXAMPLES:
        name = os.path.basename(example)
        with open(example) as f:
            text = f.read()
        with open(os.path.join(work, name), "w") as f:
            f.write(text)
        for level in ["1", "2", "3"]:
            c = compare(tritonc, work, name, level)
            assert isinstance(c, tuple) and c[0] == c[1] == c[2], (name, c)
        # An edit at the end of the file (a new layer nobody uses) recompiles one unit.
        with open(os.path.join(work, name), "a") as f:
            f.write("\nlayer ZZExtra(x: Tensor<float32, [?, 3]>) -> Tensor<float32, [?, 3]> {\n"
                    "    return tanh(x)\n}\n")
        c = compare(tritonc, work, name, "2")
        assert c[0] == 1 and c[2] == 1, (name, c)


def test_many_edits_roll_the_delta_into_the_base(tritonc, work):
    # Twelve independent layers edited one after the other: each edit recompiles one
    # unit; the stored delta grows until it is folded into a new base.
    layers = ["layer L%d(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {\n"
              "    return relu(x) * %d.0\n}\n" % (i, i) for i in range(12)]
    path = os.path.join(work, "many.tri")
    with open(path, "w") as f:
        f.write("\n".join(layers))
    assert compare(tritonc, work, "many.tri", "2") == (12, 12, 12)
    for round_ in range(2):
        for i in range(12):
            edit(path, "relu(x) * %d.%d" % (i, round_), "relu(x) * %d.%d" % (i, round_ + 1))
            assert compare(tritonc, work, "many.tri", "2") == (1, 12, 1), (round_, i)
    entries = sum(len(files) for _, _, files in os.walk(os.path.join(work, "cache", "l3")))
    assert entries <= 2, entries  # one base and one delta: nothing piles up


def test_random_edits_match_full_compiles(tritonc, work):
    # Line-level edits at random (fixed seed) on a few examples, each compiled after the
    # previous one: deleted, duplicated and swapped lines, changed numbers and names. Many
    # break the file; whatever happens, --incremental must do what a full compile does.
    rng = random.Random(9)
    names = ["resnet18.tri", "transformer_block.tri", "cnn_cifar.tri", "bitnet_mlp.tri"]
    fallbacks = reused = 0
    for name in names:
        with open(os.path.join(REPO, "examples", name)) as f:
            lines = f.read().split("\n")
        for step in range(12):
            i = rng.randrange(len(lines))
            j = rng.randrange(len(lines))
            kind = rng.choice(["delete", "duplicate", "swap", "number", "name", "restore"])
            if kind == "delete" and len(lines) > 5:
                del lines[i]
            elif kind == "duplicate":
                lines.insert(i, lines[j])
            elif kind == "swap":
                lines[i], lines[j] = lines[j], lines[i]
            elif kind == "number":
                lines[i] = re.sub(r"\b\d+\b", lambda m: str(int(m.group()) + 1), lines[i], 1)
            elif kind == "name":
                lines[i] = re.sub(r"\b([a-z_]\w*)\b", r"\1_x", lines[i], 1)
            else:
                with open(os.path.join(REPO, "examples", name)) as f:
                    lines = f.read().split("\n")
            with open(os.path.join(work, name), "w") as f:
                f.write("\n".join(lines))
            c = compare(tritonc, work, name, rng.choice(["0", "2"]))
            assert c is not None, (name, step)
            if isinstance(c, str):
                fallbacks += 1
            elif c[2] < c[1]:
                reused += 1
    assert fallbacks > 0 and reused > 0, (fallbacks, reused)  # both paths were exercised


def test_cuda_target_compiles_in_full(tritonc, work):
    with open(os.path.join(work, "model.tri"), "w") as f:
        f.write(SOURCE)
    flags = ["--target", "cuda", "--nvcc", os.path.join(work, "no-nvcc")]
    c = compare(tritonc, work, "model.tri", "2", flags)
    assert c == "the CUDA target is compiled in full", c


def test_os_compiles_in_full(tritonc, work):
    """-Os merges identical declarations across the file: a unit's code depends on others."""
    with open(os.path.join(work, "model.tri"), "w") as f:
        f.write(SOURCE)
    c = compare(tritonc, work, "model.tri", "s")
    assert c == "-Os defines identical declarations by one another", c


LIB = """let SCALE = 2.0
fn act(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {
    return relu(x) * SCALE
}
layer Proj(w: TernaryTensor<trit, [4, 4]>, x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {
    return act(x @ w)
}
"""

NET = """import "lib/blocks.tri"
import "lib/other.tri" as o

layer A(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {
    return act(x) + 1.0
}

layer Spare(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {
    return tanh(x)
}

layer Net(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {
    let p = Proj()
    return A(o.twice(p(x)))
}
"""


def test_files_with_imports(tritonc, work):
    # Units of the compiled file are recompiled on their own; an edit to an imported file
    # (or to an import item) recompiles every unit; a declaration named like an imported
    # one compiles in full. The module equals a full compile after every step.
    os.makedirs(os.path.join(work, "lib"))
    with open(os.path.join(work, "lib", "blocks.tri"), "w") as f:
        f.write(LIB)
    with open(os.path.join(work, "lib", "other.tri"), "w") as f:
        f.write("fn twice(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {\n"
                "    return x * 2.0\n}\n")
    path = os.path.join(work, "net.tri")
    with open(path, "w") as f:
        f.write(NET)
    for level in ["2", "0"]:
        assert compare(tritonc, work, "net.tri", level) == (5, 5, 5)
        edit(path, "return tanh(x)", "return tanh(x) * 3.0")  # Spare: nobody uses it
        assert compare(tritonc, work, "net.tri", level) == (1, 5, 1)  # (imports read again)
        edit(path, "return act(x) + 1.0", "return act(x) + 2.0")  # A, and Net uses A
        assert compare(tritonc, work, "net.tri", level) == (2, 5, 2)
        edit(os.path.join(work, "lib", "blocks.tri"), "* SCALE", "* SCALE * 0.5")
        assert compare(tritonc, work, "net.tri", level) == (5, 5, 5)
        edit(path, 'import "lib/other.tri" as o', 'import "lib/other.tri" as oo')
        c = compare(tritonc, work, "net.tri", level)  # Net's `o.twice` is now an error
        assert c == "a changed declaration has diagnostics", c
        edit(path, "o.twice", "oo.twice")
        assert isinstance(compare(tritonc, work, "net.tri", level), tuple)
        # Nothing changed: every piece, the imported ones included, from the cache.
        assert compare(tritonc, work, "net.tri", level) == (0, 5, 0)
        with open(path, "a") as f:
            f.write("\nfn act(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {\n"
                    "    return sigmoid(x)\n}\n")
        c = compare(tritonc, work, "net.tri", level)
        assert c == "a declaration has the name of an imported one", c
        with open(path, "w") as f:
            f.write(NET)
        with open(os.path.join(work, "lib", "blocks.tri"), "w") as f:
            f.write(LIB)
    # An imported file with a warning: compiled in full, the warning reported as usual.
    edit(os.path.join(work, "lib", "blocks.tri"), "let SCALE", "/* a /* b */\nlet SCALE")
    assert compare(tritonc, work, "net.tri", "2") == "an imported file has diagnostics"


def test_damaged_pieces_entry_is_recompiled(tritonc, work):
    path = os.path.join(work, "model.tri")
    with open(path, "w") as f:
        f.write(SOURCE)
    assert compare(tritonc, work, "model.tri", "2") == (8, 8, 8)
    # Every cache entry damaged (the pieces entry among them): all is compiled again,
    # the output is still right, and validate finds nothing left to remove.
    for root, _, files in os.walk(os.path.join(work, "cache")):
        for name in files:
            if name == "stats":
                continue
            with open(os.path.join(root, name), "r+b") as f:
                f.seek(80)
                byte = f.read(1)
                f.seek(80)
                f.write(bytes([(byte[0] ^ 0xFF) if byte else 0]))
    edit(path, "return sigmoid(x)", "return sigmoid(x) + 1.0")
    assert compare(tritonc, work, "model.tri", "2") == (8, 8, 8)
    proc = run(tritonc, work, "cache", "validate")
    assert proc.returncode == 0 and b"0 corrupt" in proc.stdout, proc.stdout


def test_an_import_found_elsewhere_with_the_same_text(tritonc, work):
    """At -O0 the run-time checks quote the imported file's path; the incremental key covered
    the imported texts, not where they were found, so after `-I A` then `-I B` (the same
    text) the module still named A/blocks.tri (audit 45A). A damaged pieces entry is said
    under --verbose, as every corrupt entry is."""
    for folder in ("A", "B"):
        os.makedirs(os.path.join(work, folder))
        with open(os.path.join(work, folder, "blocks.tri"), "w") as f:
            f.write("layer Blk(w: TernaryTensor<trit, [8, 8]>, x: Tensor<float32, [?, 8]>)"
                    " -> Tensor<float32, [?, 8]> {\n    return relu(x @ w)\n}\n")
    with open(os.path.join(work, "main.tri"), "w") as f:
        f.write('import "blocks.tri"\nlayer Top(x: Tensor<float32, [?, 8]>) -> '
                'Tensor<float32, [?, 8]> {\n    let b = Blk()\n    return b(x)\n}\n')
    assert isinstance(compare(tritonc, work, "main.tri", "0", ("-I", "A")), tuple)
    assert isinstance(compare(tritonc, work, "main.tri", "0", ("-I", "B")), tuple)
    assert b"B/blocks.tri" in read(os.path.join(work, "inc.py"))
    # The pieces entries damaged: discarded, said, recompiled.
    for root, _, files in os.walk(os.path.join(work, "cache", "l3")):
        for name in files:
            with open(os.path.join(root, name), "r+b") as f:
                f.seek(70)
                f.write(b"\xff\xfe")
    proc = run(tritonc, work, "compile", "main.tri", "-O0", "-I", "B", "--incremental",
               "--verbose", "-o", "again.py")
    assert proc.returncode == 0, proc.stderr
    assert b"L3 corrupt entry discarded for main.tri" in proc.stderr, proc.stderr
    assert read(os.path.join(work, "again.py")) == read(os.path.join(work, "full.py"))


if __name__ == "__main__":
    sys.exit(runner.main([test_edits_at_O2, test_edits_at_O0, test_edits_at_O3, test_examples,
                          test_random_edits_match_full_compiles,
                          test_many_edits_roll_the_delta_into_the_base,
                          test_cuda_target_compiles_in_full, test_os_compiles_in_full,
                          test_files_with_imports, test_damaged_pieces_entry_is_recompiled,
                          test_an_import_found_elsewhere_with_the_same_text],
                         lambda tritonc, work: (tritonc, work)))

#!/usr/bin/env python3
"""Programs made of several files (`import`), through the binary and torch.

    python3 tests/e2e/test_imports.py --tritonc build/tools/tritonc/tritonc

- Every multi-layer example split in two (its last layer in one file importing the rest)
  compiles, at every -O level, to exactly the code of the single file (the generated module
  inlines what it imports; only the header line names another file).
- A program with a diamond, an alias, an imported constant and a clashing name runs in torch
  and computes what its pieces compute by hand.
- Cache keys cover imported files: editing one recompiles, restoring it hits again.
- A multi-file compile where one input imports another writes both modules.
Ends with "N passed, N failed".
"""
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import runner  # noqa: E402

REPO = runner.REPO
LEVELS = ["-O0", "-O1", "-O2", "-O3", "-Os"]
SPLIT = ["resnet18", "resnet50", "mobilenet_v2", "transformer_block", "vit_base",
         "efficientnet_b0", "densenet121", "bitnet_mlp"]


def run(tritonc, work, *args, check=True):
    env = runner.tritonc_env(work)
    proc = subprocess.run([tritonc] + list(args), cwd=work, env=env, capture_output=True,
                          text=True, timeout=120)
    if check and proc.returncode != 0:
        raise AssertionError("tritonc %s: exit %d\n%s" % (" ".join(args), proc.returncode,
                                                          proc.stderr))
    return proc


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def read(path):
    with open(path) as f:
        return f.read()


def body(code):
    """The generated module without its header line (which names the source file)."""
    return code.split("\n", 1)[1]


def test_split_examples_compile_to_the_same_code(tritonc, work):
    for name in SPLIT:
        source = read(os.path.join(REPO, "examples", name + ".tri"))
        layers = [m.start() for m in re.finditer(r"^layer ", source, re.M)]
        assert len(layers) >= 2, name
        write(os.path.join(work, "lib", name + "_parts.tri"), source[:layers[-1]])
        write(os.path.join(work, name + ".tri"),
              'import "lib/%s_parts.tri"\n%s' % (name, source[layers[-1]:]))
        write(os.path.join(work, "whole", name + ".tri"), source)
        for level in LEVELS:
            run(tritonc, work, "compile", name + ".tri", level, "-o", "split.py", "--no-cache")
            run(tritonc, work, "compile", "whole/%s.tri" % name, level, "-o", "whole.py",
                "--no-cache")
            split, whole = read(os.path.join(work, "split.py")), read(os.path.join(work, "whole.py"))
            # -O0's run-time checks name the place (file:line:col) of the checked code,
            # which moves when the program is split; their messages are cut into literals
            # that fit the line, so where they are cut moves with it.
            split, whole = (re.sub(r'"\n\s*"', "", re.sub(r'"[^"\n]*\.tri:\d+:\d+: ', '"LOC: ',
                                                            code))
                            for code in (split, whole))
            assert body(split) == body(whole), "%s %s: the split program compiles differently" % (
                name, level)
            assert "from %s.tri" % name in split.split("\n", 1)[0]


PROGRAM = {
    "lib/shapes.tri": """let WIDTH = 8
let GAIN = 0.5

fn double(x: Tensor<float32, [?, WIDTH]>) -> Tensor<float32, [?, WIDTH]> {
    return x * 2.0
}

layer Proj(n: int, x: Tensor<float32, [?, n]>) -> Tensor<float32, [?, n]> {
    let fc = TernaryLinear(n, n)
    return fc(x)
}
""",
    "lib/left.tri": """import "shapes.tri"

layer Left(x: Tensor<float32, [?, WIDTH]>) -> Tensor<float32, [?, WIDTH]> {
    let p = Proj(WIDTH)
    return double(p(x))
}
""",
    "lib/right.tri": """import "shapes.tri" as s

let WIDTH = 3

layer Right(x: Tensor<float32, [?, 8]>) -> Tensor<float32, [?, 8]> {
    return relu(s.double(x)) * WIDTH * s.GAIN
}
""",
    "model.tri": """import "lib/left.tri"
import "lib/right.tri" as r
import "lib/shapes.tri" as shapes

layer Proj(x: Tensor<float32, [?, 8]>) -> Tensor<float32, [?, 8]> {
    return x - 1.0
}

layer Model(x: Tensor<float32, [?, 8]>) -> Tensor<float32, [?, 8]> {
    let left = Left()
    let right = r.Right()
    let p = shapes.Proj(shapes.WIDTH)
    return Proj(p(left(x)) + right(x))
}
""",
}

CHECK = r"""
import sys, torch
sys.path.insert(0, sys.argv[1])
import model
torch.manual_seed(0)
m = model.Model().eval()
keys = sorted(m.state_dict().keys())
assert keys == ["left.p.fc.bias", "left.p.fc.weight", "p.fc.bias", "p.fc.weight"], keys
x = torch.randn(5, 8)
with torch.no_grad():
    got = m(x)
    left = 2.0 * m.left.p(x)           # Left: double(Proj(WIDTH)(x))
    right = torch.relu(2.0 * x) * 3 * 0.5   # Right: its own WIDTH (3), shapes' GAIN
    want = m.p(left) + right - 1.0     # the local Proj subtracts 1
assert torch.allclose(got, want, atol=1e-5), (got - want).abs().max()
assert model.ENTRY == "Model"
assert hasattr(model, "shapes_Proj") and hasattr(model, "Proj")
print("ok")
"""


def test_program_with_imports_runs(tritonc, work):
    for path, text in PROGRAM.items():
        write(os.path.join(work, path), text)
    for level in LEVELS:
        run(tritonc, work, "compile", "model.tri", level, "-o", "model.py")
        proc = subprocess.run(["/usr/bin/python3", "-c", CHECK, work], capture_output=True,
                              text=True, timeout=300,
                              env=dict(os.environ, PYTHONPATH=os.path.join(REPO, "runtime")))
        assert proc.returncode == 0 and "ok" in proc.stdout, "%s:\n%s" % (level, proc.stderr)


def test_cache_keys_cover_imported_files(tritonc, work):
    for path, text in PROGRAM.items():
        write(os.path.join(work, path), text)
    first = run(tritonc, work, "compile", "model.tri", "-o", "a.py", "--verbose").stderr
    assert "L3 miss" in first, first
    again = run(tritonc, work, "compile", "model.tri", "-o", "b.py", "--verbose").stderr
    assert "L3 hit" in again, again
    assert read(os.path.join(work, "a.py")) == read(os.path.join(work, "b.py"))
    # An edit two imports away changes the program: a miss, and new code.
    shapes = os.path.join(work, "lib/shapes.tri")
    write(shapes, PROGRAM["lib/shapes.tri"].replace("x * 2.0", "x * 3.0"))
    edited = run(tritonc, work, "compile", "model.tri", "-o", "c.py", "--verbose").stderr
    assert "L3 miss" in edited, edited
    assert "3.0" in read(os.path.join(work, "c.py"))
    write(shapes, PROGRAM["lib/shapes.tri"])
    restored = run(tritonc, work, "compile", "model.tri", "-o", "d.py", "--verbose").stderr
    assert "L3 hit" in restored, restored
    assert read(os.path.join(work, "d.py")) == read(os.path.join(work, "a.py"))
    # Another -O level reuses the checked program (L2), imported files included.
    o2 = run(tritonc, work, "compile", "model.tri", "-O2", "-o", "e.py", "--verbose").stderr
    assert "L2 hit" in o2, o2
    run(tritonc, work, "compile", "model.tri", "-O2", "-o", "f.py", "--no-cache")
    assert read(os.path.join(work, "e.py")) == read(os.path.join(work, "f.py"))


def test_several_inputs_importing_each_other(tritonc, work):
    for path, text in PROGRAM.items():
        write(os.path.join(work, path), text)
    os.makedirs(os.path.join(work, "out"))
    run(tritonc, work, "compile", "model.tri", "lib/left.tri", "lib/shapes.tri", "-o", "out")
    for stem in ["model", "left", "shapes"]:
        assert os.path.getsize(os.path.join(work, "out", stem + ".py")) > 0, stem
    left = read(os.path.join(work, "out", "left.py"))
    assert "class Left" in left and "class Proj" in left and "class Model" not in left


def test_dependency_files_name_every_imported_file(tritonc, work):
    """-MD writes a make rule beside each module: its outputs depend on the input and every
    file it imports, directly or not (make could not see a change to an imported file
    before); -MP adds a phony target per imported file (a deleted one breaks no build); -MF
    names the file (one input). Written only by a compile that succeeds, also from the cache.
    make reads it: the module is up to date, then out of date once an imported file changes."""
    for path, text in PROGRAM.items():
        write(os.path.join(work, path), text)
    os.makedirs(os.path.join(work, "out"))
    imported = ["lib/left.tri", "lib/shapes.tri", "lib/right.tri"]
    for attempt in ("compiled", "from the cache"):
        run(tritonc, work, "compile", "model.tri", "-o", "out/model.py", "-MD", "-MP")
        rule = read(os.path.join(work, "out", "model.d"))
        head, _, phony = rule.partition("\n\n")
        targets, _, deps = head.partition(":")
        deps = deps.replace("\\\n", " ").split()
        assert targets == "out/model.py", (attempt, rule)
        assert deps[0] == "model.tri" and sorted(deps[1:]) == sorted(imported), (attempt, rule)
        assert sorted(phony.split()) == sorted(f + ":" for f in imported), (attempt, rule)
    os.makedirs(os.path.join(work, "deps"))
    run(tritonc, work, "compile", "model.tri", "-MF", "deps/model.dep", "-o", "m2.py")
    rule = read(os.path.join(work, "deps", "model.dep"))
    assert rule.startswith("m2.py: model.tri") and "\n\n" not in rule, rule
    proc = run(tritonc, work, "compile", "model.tri", "lib/left.tri", "-MF", "x.d", check=False)
    assert proc.returncode == 2 and "-MF names one dependency file" in proc.stderr, proc.stderr
    # A failed compile writes none.
    write(os.path.join(work, "bad.tri"), 'import "lib/left.tri"\nlet X = 1 +\n')
    run(tritonc, work, "compile", "bad.tri", "-MD", check=False)
    assert not os.path.exists(os.path.join(work, "bad.d"))
    if subprocess.run(["which", "make"], capture_output=True).returncode != 0:
        raise AssertionError("make is not installed (scripts/setup.sh installs it)")
    write(os.path.join(work, "Makefile"),
          "out/model.py: model.tri\n\t%s compile model.tri -o out/model.py -MD -MP\n"
          "-include out/model.d\n" % tritonc)
    now = time.time()
    for path in ["model.tri"] + imported:  # sources older than the module
        os.utime(os.path.join(work, path), (now - 20, now - 20))
    os.utime(os.path.join(work, "out", "model.py"), (now - 10, now - 10))
    assert subprocess.run(["make", "-q", "out/model.py"], cwd=work).returncode == 0
    os.utime(os.path.join(work, "lib", "shapes.tri"), (now, now))  # an import edited
    assert subprocess.run(["make", "-q", "out/model.py"], cwd=work).returncode == 1, \
        "make does not see the imported file's change"


def test_dependency_files_of_dot_names_and_standard_output(tritonc, work):
    """`-o .hidden` wrote its rule to `.d` (a leading dot taken for an extension), so every
    dot-named module of a folder shared one; `-o -` named a target `-`, a file make looks for
    and never finds (audit 46A). The rule goes to `.hidden.d`; a module on standard output is
    named by its default name, `<stem>.py`, as gcc names an object it writes to `-` (`a.o`)."""
    for path, text in PROGRAM.items():
        write(os.path.join(work, path), text)
    os.makedirs(os.path.join(work, "sub"))
    for out, depfile, target in ((".hidden", ".hidden.d", ".hidden"),
                                 ("sub/.hidden", "sub/.hidden.d", "sub/.hidden"),
                                 (".m.py", ".m.d", ".m.py")):
        run(tritonc, work, "compile", "model.tri", "-o", out, "-MD", "--no-cache")
        rule = read(os.path.join(work, depfile))
        assert rule.startswith(target + ": model.tri"), (out, rule)
    assert not os.path.exists(os.path.join(work, ".d"))
    proc = run(tritonc, work, "compile", "model.tri", "-o", "-", "-MD", "--no-cache")
    assert proc.stdout.startswith("# Generated by tritonc"), proc.stdout[:200]
    rule = read(os.path.join(work, "model.d"))
    assert rule.startswith("model.py: model.tri"), rule
    os.remove(os.path.join(work, "model.d"))
    run(tritonc, work, "compile", "model.tri", "-o", "/dev/stdout", "-MD", "--no-cache")
    rule = read(os.path.join(work, "model.d"))
    assert rule.startswith("model.py: model.tri"), rule
    # A ':' in an imported file's name stopped make ("multiple target patterns"): `\:`.
    write(os.path.join(work, "run:3", "lib.tri"), PROGRAM["lib/shapes.tri"])
    write(os.path.join(work, "colon.tri"), 'import "run:3/lib.tri"\n')
    run(tritonc, work, "compile", "colon.tri", "-MD", "-MP", "--no-cache")
    rule = read(os.path.join(work, "colon.d"))
    assert rule == "colon.py: colon.tri \\\n  run\\:3/lib.tri\n\nrun\\:3/lib.tri:\n", rule
    write(os.path.join(work, "Makefile"), "colon.py: colon.tri\n\ttouch colon.py\n"
          "-include colon.d\n")
    proc = subprocess.run(["make", "-q", "colon.py"], cwd=work, capture_output=True, text=True)
    assert proc.returncode in (0, 1) and "multiple target" not in proc.stderr, proc.stderr


def test_dependency_files_never_hold_what_make_would_run(tritonc, work):
    """A file name make cannot read in a rule, whatever the escaping (';' starts a recipe,
    '=' makes a variable assignment such as SHELL=..., '|' order-only prerequisites, a
    newline ends the rule), written raw let `make` run what an imported file's name said
    (stop 54 review: `import "m.tri;touch${IFS}PWNED;.tri"`). Such a compile fails (exit 3,
    CannotWriteFile naming the path) and writes nothing; make runs nothing."""
    lib = PROGRAM["lib/shapes.tri"]
    for i, name in enumerate(("m.tri;touch${IFS}PWNED;.tri", "SHELL=x.tri", "a|b.tri",
                              "line\\n\\ttouch PWNED\\nx.tri")):
        # (the last one written with the escapes in the import string, a newline and a TAB
        # in the file's name)
        real = name.replace("\\n", "\n").replace("\\t", "\t")
        write(os.path.join(work, real), lib)
        src = "inj%d.tri" % i
        write(os.path.join(work, src), 'import "%s"\n' % name)
        proc = run(tritonc, work, "compile", src, "-MD", "--no-cache", check=False)
        assert proc.returncode == 3 and "[CannotWriteFile]" in proc.stderr \
            and "a make rule cannot name" in proc.stderr, (name, proc.returncode, proc.stderr)
        stem = "inj%d" % i
        assert not os.path.exists(os.path.join(work, stem + ".d")), name
        assert not os.path.exists(os.path.join(work, stem + ".py")), name
    assert not os.path.exists(os.path.join(work, "PWNED"))


def test_inputs_of_one_command_have_their_own_imports_at_every_j(tritonc, work):
    """With -j 1 (the default on a 1-CPU machine) the inputs of one command shared one
    import loader (audit 46E): a module's -MD rule named every file the inputs before it
    imported, an input reaching a shared file by another spelling got -O0 messages naming
    the first input's spelling, and a broken imported file was reported for its first
    importer only. Every output and every diagnostic is now the same for -j 1 and -j 2."""
    fn = ("fn f(x: Tensor<float32, [?, 8]>, w: Tensor<float32, [8, ?]>) -> "
          "Tensor<float32, [?, 8]> {\n    return x @ w * %s\n}\n")
    use = ('import "%s"\nlayer %s(x: Tensor<float32, [?, 8]>) -> Tensor<float32, [?, 8]> {\n'
           '    return f(x, x[0:8, :])\n}\n')
    write(os.path.join(work, "d1", "lib.tri"), fn % "2.0")
    write(os.path.join(work, "d2", "lib.tri"), fn % "3.0")
    write(os.path.join(work, "d1", "m.tri"), use % ("lib.tri", "M"))
    write(os.path.join(work, "d2", "n.tri"), use % ("lib.tri", "N"))
    write(os.path.join(work, "shared", "blocks.tri"), fn % "4.0")
    write(os.path.join(work, "d1", "b.tri"), use % ("../shared/blocks.tri", "B"))
    write(os.path.join(work, "d2", "e.tri"), use % ("blocks.tri", "E"))
    inputs = ["d1/m.tri", "d2/n.tri", "d1/b.tri", "d2/e.tri"]
    outputs = {}
    for jobs in ("1", "2"):
        out = "out" + jobs
        run(tritonc, work, "compile", *inputs, "-I", "shared", "-O0", "-o", out, "-j", jobs,
            "-MD", "--no-cache")
        outputs[jobs] = {name: read(os.path.join(work, out, name))
                         for name in sorted(os.listdir(os.path.join(work, out)))}
    for name, text in outputs["2"].items():
        assert outputs["1"].get(name, "").replace("out1/", "out2/") == text, \
            (name, outputs["1"].get(name), text)
    deps = outputs["1"]["n.d"].replace("\\\n", " ").split()
    assert deps == ["out1/n.py:", "d2/n.tri", "d2/lib.tri"], deps
    assert "shared/blocks.tri" in outputs["1"]["e.py"] and \
        "../shared/blocks.tri" not in outputs["1"]["e.py"], outputs["1"]["e.py"]
    # A broken imported file is reported for each input importing it.
    write(os.path.join(work, "shared", "broken.tri"), "let X = 1 +\n")
    write(os.path.join(work, "p.tri"), 'import "shared/broken.tri"\n')
    write(os.path.join(work, "q.tri"), 'import "shared/broken.tri"\n')
    texts = set()
    for jobs in ("1", "2"):
        proc = run(tritonc, work, "check", "p.tri", "q.tri", "-j", jobs, check=False)
        assert proc.returncode == 1, proc.stderr
        assert proc.stderr.count("error:") == 2, (jobs, proc.stderr)
        assert "p.tri" in proc.stderr and "q.tri" in proc.stderr, (jobs, proc.stderr)
        texts.add(proc.stderr)
    assert len(texts) == 1, texts


def test_broken_import_writes_nothing(tritonc, work):
    write(os.path.join(work, "model.tri"), 'import "gone.tri"\n' + PROGRAM["lib/shapes.tri"])
    proc = run(tritonc, work, "compile", "model.tri", "-o", "model.py", check=False)
    assert proc.returncode == 1, proc.returncode
    assert "model.tri:1:8: error: cannot find the imported file 'gone.tri'" in proc.stderr
    assert not os.path.exists(os.path.join(work, "model.py"))


if __name__ == "__main__":
    sys.exit(runner.main([test_split_examples_compile_to_the_same_code,
                          test_program_with_imports_runs,
                          test_cache_keys_cover_imported_files,
                          test_several_inputs_importing_each_other,
                          test_dependency_files_name_every_imported_file,
                          test_dependency_files_of_dot_names_and_standard_output,
                          test_dependency_files_never_hold_what_make_would_run,
                          test_inputs_of_one_command_have_their_own_imports_at_every_j,
                          test_broken_import_writes_nothing],
                         lambda tritonc, work: (tritonc, work)))

#!/usr/bin/env python3
"""Long programs of one shape each: the compiler must finish them at every level, without
crashing, running out of memory or taking quadratic time, and write a module Python can
compile.

    python3 tests/robustness/large_programs.py --tritonc build/tools/tritonc/tritonc

Each shape repeats one construct N times: a chain of fns each calling the previous one (a
recursive analysis overflowed the stack; -O3 inlined the whole chain into every fn),
reassigning one value (the emitter's names and `del` lines were quadratic), an else-if chain
(written nested, then rewritten into `elif`s level by level: cubic), loops (CSE and
LICM moved a long block's list once per loop), layers, sub-modules, branches, constants and
operator chains just under the nesting limit, and a 1 MB string literal without spaces (its
wrapping searched the whole text for a space once per 60-byte piece: quadratic).
The timeout only guards against hangs; times are `bench/scaling.py`'s.
Ends with `N passed, N failed`; exits 1 on any failure.
"""
import argparse
import os
import py_compile
import subprocess
import sys
import tempfile

TENSOR = "Tensor<float32, [?, 4]>"


def program(shape, n):
    """The source of a program that repeats `shape` `n` times."""
    out = []
    body = lambda lines: (["layer L(k: int = 3, x: %s) -> %s {" % (TENSOR, TENSOR)] + lines  # noqa: E731
                          + ["    return y", "}"])
    if shape == "fn chain":
        out.append("fn f0(x: %s) -> %s { return x }" % (TENSOR, TENSOR))
        out += ["fn f%d(x: %s) -> %s { return f%d(x) + 1.0 }" % (i, TENSOR, TENSOR, i - 1)
                for i in range(1, n)]
        out.append("layer L(x: %s) -> %s { return f%d(x) }" % (TENSOR, TENSOR, n - 1))
    elif shape == "reassignments":
        out += body(["    let y = x"] + ["    y = y + y"] * n)
    elif shape == "loops":
        out += body(["    let y = x"] + ["    for i in range(2) { y = y + 1.0 }"] * n)
    elif shape == "branches":
        out += body(["    let y = x"] + ["    if k > %d { y = y + 1.0 } else { y = y * 2.0 }" % i
                                         for i in range(n)])
    elif shape == "else-if chain":
        out += body(["    let y = x", "    if k == 0 { y = y + 0.5 }"]
                    + ["    else if k == %d { y = y + %d.0 }" % (i, i) for i in range(1, n)]
                    + ["    else { y = y * 2.0 }"])
    elif shape == "sub-modules":
        out += body(["    let fc%d = Linear(4, 4)" % i for i in range(n)] + ["    let y = x"]
                    + ["    y = fc%d(y)" % i for i in range(n)])
    elif shape == "layers":
        out += ["layer A%d(x: %s) -> %s { return relu(x) * 2.0 }" % (i, TENSOR, TENSOR)
                for i in range(n)]
    elif shape == "constants":
        out += ["let C%d = %d * 2 + 1" % (i, i) for i in range(n)]
        out.append("layer L(x: %s) -> %s { return x * float32(C%d) }" % (TENSOR, TENSOR, n - 1))
    elif shape == "int operator chain":
        out.append("fn f(a: int) -> int { return a%s }" % (" + a" * n))
    elif shape == "tensor operator chain":
        out.append("fn f(a: %s) -> %s { return a%s }" % (TENSOR, TENSOR, " * a" * n))
    elif shape == "string literal":
        out.append('main {\n    print("%s")\n}' % ("a" * n))
    elif shape == "bool operator chain":
        out.append("fn f(a: bool, b: bool) -> bool { return a%s }" % (" && b" * n))
    else:
        raise ValueError(shape)
    return "\n".join(out) + "\n"


# Programs no level can compile (none: -O0 writes an else-if chain's conditions into its
# `elif`s too; docs/pytorch.md "Nesting". CPython 3.11 compiles an elif chain of at most
# about 2900 branches.)
EXPECTED_ERRORS = {}

# The operator chains stay just under the tree-depth limit (4096, docs/language.md): they
# are valid programs, and their recursive checking, IR generation and emission overflowed an
# 8 MiB stack from about 3,150 operators (the compiler now runs on a 64 MiB one).
SHAPES = {"fn chain": 32000, "reassignments": 100000, "loops": 32000, "branches": 20000,
          "else-if chain": 2500,
          "sub-modules": 20000, "layers": 20000, "constants": 20000,
          "int operator chain": 4090, "tensor operator chain": 4090,
          "bool operator chain": 4090, "string literal": 1000000}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tritonc", required=True)
    parser.add_argument("--levels", default="0,2,3,s")
    parser.add_argument("--timeout", type=float, default=300, help="seconds (a hang guard)")
    args = parser.parse_args()
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for shape, n in SHAPES.items():
            src = os.path.join(tmp, "p.tri")
            with open(src, "w") as f:
                f.write(program(shape, n))
            for level in args.levels.split(","):
                out = os.path.join(tmp, "p_%s.py" % level)
                what = "%s x%d -O%s" % (shape, n, level)
                try:
                    r = subprocess.run([args.tritonc, "compile", src, "-O" + level, "--no-cache",
                                        "-o", out], capture_output=True, text=True,
                                       timeout=args.timeout)
                    expected = EXPECTED_ERRORS.get((shape, level))
                    if expected:
                        problem = None if r.returncode == 1 and "[%s]" % expected in r.stderr \
                            else "exit %d, expected 1 with %s: %s" % (
                                r.returncode, expected, r.stderr.strip()[:200])
                    else:
                        problem = None if r.returncode == 0 else "exit %d: %s" % (
                            r.returncode, (r.stderr.strip().splitlines() or [""])[0][:200])
                    if problem is None and not expected:
                        py_compile.compile(out, doraise=True)
                except subprocess.TimeoutExpired:
                    problem = "no result after %.0f s" % args.timeout
                except py_compile.PyCompileError as e:
                    problem = "the module does not compile: %s" % str(e)[:200]
                if problem:
                    failed += 1
                    print("FAIL %s: %s" % (what, problem), flush=True)
                else:
                    passed += 1
                    print("PASS %s" % what, flush=True)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

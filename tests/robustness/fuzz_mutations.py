#!/usr/bin/env python3
"""Mutation fuzzing and deep-nesting checks for ``tritonc check``.

Usage:
    fuzz_mutations.py --tritonc PATH --corpus DIR [--corpus DIR ...]
                      [--count 150] [--seed 1] [--nested 100000] [-j N] [--timeout 10]

1. Collects every ``*.tri`` under the corpus directories and derives ``--count`` mutants
   with a ``random.Random(seed)``: 1-4 operators per mutant among delete a byte range,
   duplicate a byte range, swap two lines, insert a Triton DSL token, set a byte to a
   random value (0..255: invalid UTF-8, NUL...), truncate.  The same seed and corpus give
   the same mutants.
2. Generates deep-nesting programs with N = --nested levels (parentheses, brackets, unary
   minus, nested blocks, ...).  The nesting limit of the language is 256, so each of these
   must be rejected with exit 1 and a diagnostic.  (A few extra stress inputs, e.g. a long
   ``1 + 1 + ...`` chain, only have to be handled without crashing: exit 0 or 1.)

Each input is written to a temporary directory and checked with
``tritonc check FILE`` (timeout --timeout seconds).  An outcome is OK when
  - exit 0 and stderr contains no ``error:``, or
  - exit 1 and stderr has a line matching ``:LINE:COL: error: ``.
Anything else (signal, exit 2/3/>3, timeout, exit 1 without a diagnostic, exit 0 with an
error) fails; the input is saved to ``tests/robustness/failures/`` and the command that
reproduces it is printed.

The last line printed is ``N passed, N failed``; exit status 1 when anything failed.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import hashlib
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

SCRIPT_DIR = Path(__file__).resolve().parent
REPO_ROOT = SCRIPT_DIR.parents[1]
FAILURE_DIR = SCRIPT_DIR / "failures"

NESTING_LIMIT = 256
DIAG_RE = re.compile(r":\d+:\d+: error: ")

TOKENS = [
    "layer", "fn", "let", "return", "if", "else", "for", "in", "while", "break",
    "continue", "import", "main", "(", ")", "[", "]", "{", "}", ",", ":", ";", ".", "..",
    "?", "->", "@", "**", "==", "!=", "<=", ">=", "&&", "||", "!", "=", "+=", "@=", "\"",
    "'", "/*", "*/", "#", "0x", "1e", "1_000", "\n",
]

# Used when the corpus is empty, so that mutation still has something to work on.
FALLBACK_SEED = b"""# fallback seed program
layer TernaryFC(weights: TernaryTensor<trit, [784, 128]>, bias: Tensor<float32, [128]>,
                x: Tensor<float32, [?, 784]>) -> Tensor<float32, [?, 128]> {
    let h = x @ weights + bias
    if true { h = relu(h) } else { h = h * 0.5 }
    for i in 0..3 { h += 1.0e-5 }
    return h
}
"""


@dataclasses.dataclass
class Case:
    name: str                  # file stem, unique
    data: bytes
    origin: str                # human readable description
    must_reject: bool = False  # exit 1 with a diagnostic required


@dataclasses.dataclass
class Outcome:
    case: Case
    ok: bool
    reason: str
    exit_code: int | None
    stderr: str
    saved_as: Path | None = None


# --------------------------------------------------------------------------------------
# Mutation


def op_delete(rng: random.Random, d: bytearray) -> str:
    if not d:
        return "delete(empty)"
    start = rng.randrange(len(d))
    length = min(len(d) - start, rng.choice([1, 1, 2, 4, 8, 16, 64, 256]))
    del d[start:start + length]
    return f"delete[{start}:+{length}]"


def op_duplicate(rng: random.Random, d: bytearray) -> str:
    if not d:
        return "duplicate(empty)"
    start = rng.randrange(len(d))
    length = min(len(d) - start, rng.choice([1, 2, 4, 8, 16, 64, 256]))
    chunk = bytes(d[start:start + length])
    at = rng.choice([start + length, rng.randrange(len(d) + 1)])
    d[at:at] = chunk
    return f"duplicate[{start}:+{length}]@{at}"


def op_swap_lines(rng: random.Random, d: bytearray) -> str:
    lines = bytes(d).split(b"\n")
    if len(lines) < 2:
        return "swap(<2 lines)"
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    d[:] = b"\n".join(lines)
    return f"swap-lines({i + 1},{j + 1})"


def op_insert_token(rng: random.Random, d: bytearray) -> str:
    tok = rng.choice(TOKENS).encode()
    if rng.random() < 0.5:
        tok = b" " + tok + b" "
    at = rng.randrange(len(d) + 1)
    d[at:at] = tok
    return f"insert({tok!r})@{at}"


def op_flip_byte(rng: random.Random, d: bytearray) -> str:
    if not d:
        d.append(rng.randrange(256))
        return "flip(empty)"
    at = rng.randrange(len(d))
    d[at] = rng.choice([0, 0x80, 0xC0, 0xFF, rng.randrange(256), rng.randrange(256)])
    return f"flip@{at}={d[at]:#04x}"


def op_truncate(rng: random.Random, d: bytearray) -> str:
    at = rng.randrange(len(d) + 1)
    del d[at:]
    return f"truncate@{at}"


OPERATORS = [op_delete, op_duplicate, op_swap_lines, op_insert_token, op_flip_byte,
             op_truncate]
# Truncation destroys most of the input; make it rarer than the others.
OPERATOR_WEIGHTS = [3, 3, 3, 4, 3, 1]


def make_mutants(corpus: list[tuple[str, bytes]], count: int, seed: int) -> list[Case]:
    rng = random.Random(seed)
    cases = []
    for i in range(count):
        src_name, src = corpus[rng.randrange(len(corpus))]
        d = bytearray(src)
        ops = [rng.choices(OPERATORS, OPERATOR_WEIGHTS)[0](rng, d)
               for _ in range(rng.randint(1, 4))]
        cases.append(Case(name=f"mutant-s{seed}-{i:04d}", data=bytes(d),
                          origin=f"{src_name}: {', '.join(ops)}"))
    return cases


# --------------------------------------------------------------------------------------
# Deep nesting


def nested_cases(n: int) -> list[Case]:
    must = [
        ("parens", b"let x = " + b"(" * n + b"1" + b")" * n + b"\n"),
        ("parens-only-unbalanced", b"(" * n),
        ("parens-unbalanced", b"let x = " + b"(" * n + b"\n"),
        ("brackets-unbalanced", b"let x = " + b"[" * n + b"\n"),
        ("brackets", b"let x = " + b"[" * n + b"1" + b"]" * n + b"\n"),
        ("unary-minus", b"let x = " + b"-" * n + b"1\n"),
        ("unary-not", b"let x = " + b"!" * n + b"true\n"),
        ("blocks", b"layer F() {\n" + b"if true {\n" * n + b"}\n" * n + b"}\n"),
        ("blocks-unbalanced", b"layer F() {\n" + b"if true {\n" * n),
        ("call-args", b"let x = " + b"f(" * n + b"1" + b")" * n + b"\n"),
        ("type-args", b"layer F(x: " + b"Tensor<" * n + b"float32" + b">" * n +
         b") {\n}\n"),
    ]
    # Long chains that a parser may build iteratively: accepting or rejecting them is
    # fine (exit 0, or exit 1 with a diagnostic); crashing or hanging is not.
    either = [
        ("power-chain", b"let x = 2" + b" ** 2" * n + b"\n"),
        ("else-if-chain", b"layer F() {\nif true {\n" + b"} else if true {\n" * n +
         b"}\n}\n"),
        ("flat-add-chain", b"let x = 1" + b" + 1" * n + b"\n"),
        ("flat-postfix-chain", b"let x = a" + b".b" * n + b"\n"),
        ("many-statements", b"layer F() {\n" + b"let a = 1\n" * n + b"}\n"),
        ("long-identifier", b"let " + b"a" * n + b" = 1\n"),
    ]
    deep = n > NESTING_LIMIT  # with a small --nested the balanced cases are valid programs
    return ([Case(f"nested-{k}-n{n}", v, f"deep nesting: {k}, N={n}", deep) for k, v in must]
            + [Case(f"stress-{k}-n{n}", v, f"stress: {k}, N={n}", False) for k, v in either])


# --------------------------------------------------------------------------------------
# Running


def describe_exit(code: int | None) -> str:
    if code is None:
        return "timeout"
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit {code}"


def check_environment(tmpdir: str) -> dict[str, str]:
    env = dict(os.environ)
    for k in ("TRITONC_CONFIG", "XDG_CACHE_HOME", "CLICOLOR_FORCE", "FORCE_COLOR"):
        env.pop(k, None)
    env.update({"NO_COLOR": "1", "TERM": "dumb",
                "TRITONC_CACHE_DIR": os.path.join(tmpdir, "cache")})
    return env


def classify(case: Case, code: int | None, stderr: str) -> tuple[bool, str]:
    if code is None:
        return False, "timeout"
    if code < 0 or code > 3:
        return False, f"crash ({describe_exit(code)})"
    if code in (2, 3):
        return False, f"{describe_exit(code)} (usage/internal error on a source file)"
    has_diag = any(DIAG_RE.search(line) for line in stderr.splitlines())
    if code == 1:
        if not has_diag:
            return False, "exit 1 without a 'file:line:col: error: ' diagnostic"
        return True, "rejected with a diagnostic"
    # code == 0
    if case.must_reject:
        return False, "accepted (exit 0) but nesting beyond 256 must be a diagnostic"
    if "error:" in stderr:
        return False, "exit 0 but stderr contains 'error:'"
    return True, "accepted"


# The tritonc arguments before the input file (--command); `check` by default.
COMMAND = ["check"]


def run_case(tritonc: str, case: Case, workdir: str, timeout: float) -> Outcome:
    path = os.path.join(workdir, case.name + ".tri")
    with open(path, "wb") as f:
        f.write(case.data)
    proc = subprocess.Popen([tritonc, *COMMAND, path], cwd=workdir,
                            env=check_environment(workdir), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        _, err = proc.communicate(timeout=timeout)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
        _, err = proc.communicate()
        code = None
    stderr = err.decode("utf-8", "replace")
    ok, reason = classify(case, code, stderr)
    return Outcome(case, ok, reason, code, stderr)


def save_failure(case: Case) -> Path:
    FAILURE_DIR.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha1(case.data).hexdigest()[:8]
    dest = FAILURE_DIR / f"{case.name}-{digest}.tri"
    tmp = dest.with_suffix(".tmp")
    tmp.write_bytes(case.data)
    os.replace(tmp, dest)
    return dest


def display_path(p: Path) -> str:
    try:
        return os.path.relpath(p)
    except ValueError:
        return str(p)


def collect_corpus(dirs: list[str]) -> list[tuple[str, bytes]]:
    corpus: dict[str, bytes] = {}
    for d in dirs:
        root = Path(d)
        files = [root] if root.is_file() else sorted(root.rglob("*.tri"))
        for p in files:
            if p.is_file() and FAILURE_DIR not in p.resolve().parents:
                try:
                    corpus[display_path(p)] = p.read_bytes()
                except OSError as e:
                    print(f"warning: cannot read {p}: {e}", file=sys.stderr)
    return sorted(corpus.items())


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tritonc", required=True, help="path to the tritonc binary")
    ap.add_argument("--corpus", action="append", default=[], metavar="DIR",
                    help="directory (or file) of .tri seeds; may be repeated")
    ap.add_argument("--count", type=int, default=150, help="number of mutants (150)")
    ap.add_argument("--seed", type=int, default=1, help="random seed (1)")
    ap.add_argument("--nested", type=int, default=100000,
                    help="nesting depth of the deep-nesting cases (100000); 0 skips them")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds per run (10)")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1,
                    help="parallel runs (default: number of CPUs)")
    ap.add_argument("-v", "--verbose", action="store_true", help="list every case")
    ap.add_argument("--command", default="check",
                    help="tritonc arguments before the input (default: check), e.g. "
                         "'compile --stop-after=opt -O2 --verify-each'")
    ap.add_argument("--replay", action="append", default=[], metavar="DIR",
                    help="run every file of DIR unmutated (e.g. the fuzzer's regression "
                         "corpus) instead of generating mutants; may be repeated")
    args = ap.parse_args(argv)

    global COMMAND
    COMMAND = shlex.split(args.command)
    tritonc = os.path.abspath(args.tritonc)
    if not os.path.isfile(tritonc) or not os.access(tritonc, os.X_OK):
        print(f"error: --tritonc {args.tritonc}: not an executable file", file=sys.stderr)
        print("0 passed, 1 failed")
        return 2

    if args.replay:
        cases = replay_cases(args.replay)
        print(f"replaying {len(cases)} saved inputs with {tritonc}")
        return run_and_report(tritonc, cases, args)

    corpus = collect_corpus(args.corpus)
    if args.corpus and not corpus:
        print("warning: no .tri files in the corpus; mutating a built-in seed program",
              file=sys.stderr)
    if not corpus:
        corpus = [("<builtin seed>", FALLBACK_SEED)]
    cases = make_mutants(corpus, args.count, args.seed)
    if args.nested > 0:
        cases += nested_cases(args.nested)
    print(f"fuzzing {tritonc} with {len(cases)} inputs ({args.count} mutants of "
          f"{len(corpus)} corpus files, seed {args.seed}; nesting N={args.nested})")
    return run_and_report(tritonc, cases, args)


def replay_cases(dirs: list[str]) -> list[Case]:
    """Every regular file under the directories except README files, as is."""
    cases = []
    for d in dirs:
        for path in sorted(Path(d).rglob("*")):
            if path.is_file() and not path.name.startswith("README"):
                cases.append(Case(name=f"replay-{path.name}", data=path.read_bytes(),
                                  origin=str(path)))
    return cases


def run_and_report(tritonc: str, cases: list[Case], args: argparse.Namespace) -> int:
    sys.stdout.flush()

    workdir = tempfile.mkdtemp(prefix="tritonc-fuzz-")
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            futures = [pool.submit(run_case, tritonc, c, workdir, args.timeout)
                       for c in cases]
            outcomes = []
            for c, f in zip(cases, futures):
                try:
                    outcomes.append(f.result())
                except Exception as e:  # harness problem: never count as a pass
                    outcomes.append(Outcome(c, False, f"harness error: {e!r}", None, ""))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    passed = failed = 0
    for o in outcomes:
        if o.ok:
            passed += 1
            if args.verbose:
                print(f"PASS: {o.case.name}: {o.reason}")
            continue
        failed += 1
        o.saved_as = save_failure(o.case)
        print(f"FAIL: {o.case.name}: {o.reason}")
        print(f"  input: {o.case.origin}")
        print(f"  saved: {display_path(o.saved_as)}")
        print(f"  reproduce: {shlex.quote(tritonc)} check "
              f"{shlex.quote(display_path(o.saved_as))}")
        if o.stderr:
            lines = o.stderr.splitlines()
            shown = lines[-10:]
            if len(lines) > len(shown):
                print(f"  stderr (last {len(shown)} of {len(lines)} lines):")
            else:
                print("  stderr:")
            for line in shown:
                print("    " + (line if len(line) <= 300 else line[:300] + "..."))
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

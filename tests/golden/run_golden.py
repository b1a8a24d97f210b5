#!/usr/bin/env python3
"""Golden-file test harness for tritonc (Carbon / lit style).

Every ``*.tri`` file found (recursively) under the test directories is a test when it
contains one or more lines

    # RUN: <command>

The command is run with ``/bin/sh -c`` from the repository root (two levels above this
script).  Substitutions:

    %tritonc   the compiler binary given with --tritonc (absolute, shell-quoted)
    %s         the test file, relative to the repository root
    %S         the directory of the test file, relative to the repository root
    %t         a scratch directory private to the test (shared by its RUN lines)
    %%         a literal '%'

A RUN line ending with a backslash continues on the next ``# RUN:`` line.

The expected output lives next to the test in ``<name>.expected``; for each RUN line, in
order:

    # RUN: <command as written>
    # EXIT: <code>
    # STDOUT:
    <stdout lines>
    # STDERR:
    <stderr lines>

A ``# STDOUT:`` / ``# STDERR:`` section is omitted when that stream is empty.  When a
stream does not end with a newline, its section ends with the marker line ``# NOEOL``.
In the captured output, the test's scratch directory is written as ``%t``, the compiler's
absolute path as ``%tritonc`` and the absolute repository root as ``%root``, so expected
files do not depend on the machine.

Comparison is exact.  A timeout, or an exit code that is not 0..3 (crash, signal), is
always a failure and is never written as expected output, even with --autoupdate.

Environment of every command: the caller's environment with NO_COLOR=1, TERM=dumb,
HOME=%t/home, TRITONC_CACHE_DIR=%t/cache, and TRITONC_CONFIG, TRITONC_NO_CACHE,
XDG_CACHE_HOME, CLICOLOR_FORCE, FORCE_COLOR removed (hermetic, parallel-safe).

--diag-def PATH adds one extra test, ``diagnostic-coverage``: every kind declared in the
X-macro file as ``DIAG(KindName, Error|Warning|Note, "format")`` must appear as
``[KindName]`` (or as a JSON ``"code": "KindName"``) in some ``.expected`` file under the
test directories.

The last line printed is always ``N passed, N failed``; the exit status is 1 when anything
failed, else 0 (2 for a usage error of this script).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import difflib
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

SCRIPT_DIR = Path(__file__).resolve().parent
REPO_ROOT = SCRIPT_DIR.parents[1]

TIMEOUT_S = 20
MAX_OK_EXIT = 3  # 0 ok, 1 source errors, 2 usage error, 3 internal error

RUN_RE = re.compile(r"^[ \t]*#[ \t]*RUN:[ \t]?(.*?)[ \t]*$")
SUBST_RE = re.compile(r"%(tritonc|%|s|S|t)")
NOEOL_MARKER = "# NOEOL"

ENV_REMOVE = ("TRITONC_CONFIG", "TRITONC_NO_CACHE", "XDG_CACHE_HOME", "CLICOLOR_FORCE",
              "FORCE_COLOR")


# --------------------------------------------------------------------------------------
# Data


@dataclasses.dataclass
class RunResult:
    command: str              # as written in the test
    exit_code: int | None     # None on timeout
    stdout: str
    stderr: str
    timed_out: bool = False

    @property
    def crashed(self) -> bool:
        return (not self.timed_out and self.exit_code is not None
                and not 0 <= self.exit_code <= MAX_OK_EXIT)


@dataclasses.dataclass
class TestOutcome:
    name: str                 # repo-relative path of the test (or a pseudo name)
    passed: bool
    messages: list[str]
    updated: bool = False


# --------------------------------------------------------------------------------------
# Helpers


def describe_exit(code: int | None) -> str:
    if code is None:
        return "no exit code"
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    if code > 128:
        try:
            return f"exit code {code} (probably signal {signal.Signals(code - 128).name})"
        except ValueError:
            pass
    return f"exit code {code}"


def read_text(path: Path) -> str:
    with open(path, "r", encoding="utf-8", errors="surrogateescape", newline="") as f:
        return f.read()


def write_text_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # mkstemp creates 0600; use the usual mode
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape",
                       newline="") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def repo_relative(path: Path) -> str:
    return Path(os.path.relpath(path.resolve(), REPO_ROOT)).as_posix()


def parse_run_lines(text: str) -> list[str]:
    """Returns the RUN commands of a test file, joining backslash continuations."""
    commands: list[str] = []
    pending: str | None = None
    for line in text.splitlines():
        m = RUN_RE.match(line)
        if not m:
            if pending is not None:  # continuation not followed by a RUN line
                commands.append(pending.rstrip())
                pending = None
            continue
        part = m.group(1)
        if pending is not None:
            part = pending + " " + part.lstrip()
            pending = None
        if part.endswith("\\"):
            pending = part[:-1].rstrip()
            continue
        commands.append(part)
    if pending is not None:
        commands.append(pending.rstrip())
    return [c for c in commands if c.strip()]


def render_stream(text: str) -> str:
    if text.endswith("\n"):
        return text
    return text + "\n" + NOEOL_MARKER + "\n"


def render_expected(results: list[RunResult]) -> str:
    out: list[str] = []
    for r in results:
        out.append(f"# RUN: {r.command}\n")
        out.append(f"# EXIT: {r.exit_code}\n")
        if r.stdout:
            out.append("# STDOUT:\n")
            out.append(render_stream(r.stdout))
        if r.stderr:
            out.append("# STDERR:\n")
            out.append(render_stream(r.stderr))
    return "".join(out)


def unified_diff(expected: str, actual: str, expected_name: str) -> str:
    lines = difflib.unified_diff(expected.splitlines(keepends=True),
                                 actual.splitlines(keepends=True),
                                 fromfile=expected_name, tofile="actual output")
    return "".join(l if l.endswith("\n") else l + "\n\\ No newline at end of file\n"
                   for l in lines)


def tail(text: str, lines: int = 15) -> str:
    parts = text.splitlines()
    if len(parts) > lines:
        parts = [f"... ({len(parts) - lines} lines omitted)"] + parts[-lines:]
    return "\n".join("    " + p for p in parts)


# --------------------------------------------------------------------------------------
# Running one test


class Runner:
    def __init__(self, tritonc: Path, timeout: float, verbose: bool):
        self.tritonc = tritonc
        self.timeout = timeout
        self.verbose = verbose

    def substitute(self, command: str, rel_test: str, tmpdir: str) -> str:
        def repl(m: re.Match[str]) -> str:
            key = m.group(1)
            if key == "tritonc":
                return shlex.quote(str(self.tritonc))
            if key == "s":
                return shlex.quote(rel_test)
            if key == "S":
                return shlex.quote(Path(rel_test).parent.as_posix())
            if key == "t":
                return shlex.quote(tmpdir)
            return "%"
        return SUBST_RE.sub(repl, command)

    def environment(self, tmpdir: str) -> dict[str, str]:
        env = dict(os.environ)
        for k in ENV_REMOVE:
            env.pop(k, None)
        home = os.path.join(tmpdir, "home")
        os.makedirs(home, exist_ok=True)
        env.update({
            "NO_COLOR": "1",
            "TERM": "dumb",
            "HOME": home,
            "TRITONC_CACHE_DIR": os.path.join(tmpdir, "cache"),
        })
        return env

    def normalize(self, text: str, tmpdir: str) -> str:
        replacements = [
            (os.path.realpath(tmpdir), "%t"),
            (tmpdir, "%t"),
            (str(self.tritonc), "%tritonc"),
            (str(REPO_ROOT), "%root"),
        ]
        # Longest first, so that a path inside another one is replaced as a whole.
        for old, new in sorted(set(replacements), key=lambda p: -len(p[0])):
            if old:
                text = text.replace(old, new)
        return text

    def run_command(self, command: str, shell_command: str, env: dict[str, str],
                    tmpdir: str) -> RunResult:
        proc = subprocess.Popen(["/bin/sh", "-c", shell_command], cwd=REPO_ROOT, env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
        timed_out = False
        try:
            out, err = proc.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                proc.kill()
            out, err = proc.communicate()
        if not timed_out:
            # Reap anything the command left behind in its process group.
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        decode = lambda b: self.normalize(b.decode("utf-8", "surrogateescape"), tmpdir)
        return RunResult(command=command, exit_code=None if timed_out else proc.returncode,
                         stdout=decode(out), stderr=decode(err), timed_out=timed_out)

    def run_test(self, test: Path, autoupdate: bool) -> TestOutcome:
        rel = repo_relative(test)
        messages: list[str] = []
        try:
            commands = parse_run_lines(read_text(test))
        except OSError as e:
            return TestOutcome(rel, False, [f"cannot read test: {e}"])
        expected_path = test.with_suffix(".expected")
        tmpdir = tempfile.mkdtemp(prefix="tritonc-golden-")
        try:
            env = self.environment(tmpdir)
            results: list[RunResult] = []
            for i, cmd in enumerate(commands, 1):
                shell_cmd = self.substitute(cmd, rel, tmpdir)
                if self.verbose:
                    messages.append(f"  $ {shell_cmd}")
                r = self.run_command(cmd, shell_cmd, env, tmpdir)
                results.append(r)
                if r.timed_out or r.crashed:
                    break
        finally:
            shutil.rmtree(tmpdir, ignore_errors=True)

        broken = False
        for i, r in enumerate(results, 1):
            if r.timed_out:
                broken = True
                messages.append(f"  TIMEOUT: RUN line {i} did not finish within "
                                f"{self.timeout:g} s: {r.command}")
            elif r.crashed:
                broken = True
                messages.append(f"  CRASH: RUN line {i} ({describe_exit(r.exit_code)}): "
                                f"{r.command}")
            if r.timed_out or r.crashed:
                if r.stderr:
                    messages.append("  stderr:\n" + tail(r.stderr))
        if broken:
            if len(results) < len(commands):
                messages.append(f"  (RUN lines {len(results) + 1}..{len(commands)} not run)")
            if autoupdate:
                messages.append(f"  not updating {repo_relative(expected_path)}")
            return TestOutcome(rel, False, messages)

        actual = render_expected(results)
        expected: str | None
        try:
            expected = read_text(expected_path)
        except FileNotFoundError:
            expected = None
        except OSError as e:
            return TestOutcome(rel, False, messages + [f"  cannot read expected file: {e}"])

        if expected == actual:
            return TestOutcome(rel, True, messages)
        if autoupdate:
            try:
                write_text_atomic(expected_path, actual)
            except OSError as e:
                return TestOutcome(rel, False, messages + [f"  cannot write: {e}"])
            what = "created" if expected is None else "updated"
            return TestOutcome(rel, True, messages + [f"  {what} {repo_relative(expected_path)}"],
                               updated=True)
        if expected is None:
            messages.append(f"  missing {repo_relative(expected_path)}; run "
                            f"{repo_relative(Path(__file__))} --tritonc PATH --autoupdate "
                            f"to create it")
            return TestOutcome(rel, False, messages)
        messages.append(unified_diff(expected, actual, repo_relative(expected_path)).rstrip("\n"))
        return TestOutcome(rel, False, messages)


# --------------------------------------------------------------------------------------
# Diagnostic coverage


def strip_c_comments(text: str) -> str:
    """Removes // and /* */ comments, keeping string and char literals intact."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            out.append(" ")
            i = n if j < 0 else j + 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def strip_preprocessor(text: str) -> str:
    out: list[str] = []
    in_directive = False
    for line in text.split("\n"):
        if in_directive or line.lstrip().startswith("#"):
            in_directive = line.rstrip().endswith("\\")
            out.append("")
            continue
        out.append(line)
    return "\n".join(out)


DIAG_ENTRY_RE = re.compile(
    r"\bDIAG\s*\(\s*([A-Za-z_]\w*)\s*,\s*(?:[A-Za-z_]\w*::)*(Error|Warning|Note)\s*,")


def parse_diag_def(path: Path) -> list[str]:
    text = strip_preprocessor(strip_c_comments(read_text(path)))
    kinds: list[str] = []
    for m in DIAG_ENTRY_RE.finditer(text):
        if m.group(1) not in kinds:
            kinds.append(m.group(1))
    return kinds


def diagnostic_coverage(def_path: Path, dirs: list[Path]) -> TestOutcome:
    name = "diagnostic-coverage"
    try:
        kinds = parse_diag_def(def_path)
    except OSError as e:
        return TestOutcome(name, False, [f"  cannot read {def_path}: {e}"])
    if not kinds:
        return TestOutcome(name, False, [f"  no DIAG(Kind, Severity, \"...\") entries found "
                                         f"in {def_path}"])
    seen: set[str] = set()
    bracket = re.compile(r"\[([A-Za-z_]\w*)\]")
    json_code = re.compile(r'"code"\s*:\s*"([A-Za-z_]\w*)"')
    for d in dirs:
        for p in sorted(d.rglob("*.expected")):
            try:
                text = read_text(p)
            except OSError:
                continue
            seen.update(bracket.findall(text))
            seen.update(json_code.findall(text))
    missing = [k for k in kinds if k not in seen]
    if not missing:
        return TestOutcome(name, True, [f"  all {len(kinds)} diagnostic kinds covered"])
    msgs = [f"  {len(missing)} of {len(kinds)} diagnostic kinds declared in "
            f"{def_path} never appear as [KindName] in an .expected file:"]
    msgs += [f"    {k}" for k in missing]
    return TestOutcome(name, False, msgs)


# --------------------------------------------------------------------------------------
# Main


def find_tests(dirs: list[Path], name_filter: str | None) -> list[Path]:
    tests: set[Path] = set()
    for d in dirs:
        if d.is_file() and d.suffix == ".tri":
            candidates = [d]
        else:
            candidates = d.rglob("*.tri")
        for p in candidates:
            if not p.is_file():
                continue
            if name_filter and name_filter not in repo_relative(p):
                continue
            tests.add(p.resolve())
    return sorted(tests, key=repo_relative)


def main(argv: list[str]) -> int:
    try:
        sys.stdout.reconfigure(errors="backslashreplace")  # type: ignore[attr-defined]
    except AttributeError:
        pass
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tritonc", required=True, help="path to the tritonc binary")
    ap.add_argument("--autoupdate", action="store_true",
                    help="rewrite the .expected files from the actual output")
    ap.add_argument("--filter", metavar="SUBSTR",
                    help="only run tests whose repo-relative path contains SUBSTR")
    ap.add_argument("-v", "--verbose", action="store_true", help="show passing tests too")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1,
                    help="parallel tests (default: number of CPUs)")
    ap.add_argument("--diag-def", metavar="PATH",
                    help="diagnostics X-macro file; check that every kind is covered")
    ap.add_argument("--timeout", type=float, default=TIMEOUT_S,
                    help=f"seconds per RUN command (default {TIMEOUT_S})")
    ap.add_argument("dirs", nargs="*", metavar="DIR",
                    help="test directories or files (default: this script's directory)")
    args = ap.parse_args(argv)

    tritonc = Path(os.path.abspath(args.tritonc))
    if not tritonc.is_file() or not os.access(tritonc, os.X_OK):
        print(f"error: --tritonc {args.tritonc}: not an executable file", file=sys.stderr)
        print("0 passed, 1 failed")
        return 2
    dirs = [Path(os.path.abspath(d)) for d in args.dirs] or [SCRIPT_DIR]
    for d in dirs:
        if not d.exists():
            print(f"error: {d}: no such file or directory", file=sys.stderr)
            print("0 passed, 1 failed")
            return 2

    all_tri = find_tests(dirs, args.filter)
    tests: list[Path] = []
    for t in all_tri:
        try:
            has_run = bool(parse_run_lines(read_text(t)))
        except OSError:
            has_run = True  # let run_test report the error
        if has_run:
            tests.append(t)
        elif args.verbose:
            print(f"SKIP: {repo_relative(t)} (no RUN lines)")

    # Expected files whose test is gone are reported (not failures).
    if not args.filter:
        for d in dirs:
            if d.is_dir():
                for e in sorted(d.rglob("*.expected")):
                    if not e.with_suffix(".tri").exists():
                        print(f"warning: {repo_relative(e)} has no {e.with_suffix('.tri').name}")

    runner = Runner(tritonc, args.timeout, args.verbose)
    lock = threading.Lock()
    outcomes: list[TestOutcome] = []

    def report(o: TestOutcome) -> None:
        with lock:
            if not o.passed:
                print(f"FAIL: {o.name}")
            elif o.updated:
                print(f"UPDATED: {o.name}")
            elif args.verbose:
                print(f"PASS: {o.name}")
            if not o.passed or o.updated or args.verbose:
                for m in o.messages:
                    print(m)
            sys.stdout.flush()

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {pool.submit(runner.run_test, t, args.autoupdate): t for t in tests}
        done: dict[Path, TestOutcome] = {}
        for fut in concurrent.futures.as_completed(futures):
            t = futures[fut]
            try:
                done[t] = fut.result()
            except Exception as e:  # harness bug: never count it as a pass
                done[t] = TestOutcome(repo_relative(t), False, [f"  harness error: {e!r}"])
        for t in tests:  # deterministic order
            outcomes.append(done[t])
            report(done[t])

    if args.diag_def:
        o = diagnostic_coverage(Path(os.path.abspath(args.diag_def)), dirs)
        outcomes.append(o)
        report(o)

    if not tests:
        print("warning: no tests found", file=sys.stderr)
    if args.autoupdate:
        n_updated = sum(1 for o in outcomes if o.updated)
        print(f"{n_updated} expected file(s) written")
    passed = sum(1 for o in outcomes if o.passed)
    failed = len(outcomes) - passed
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

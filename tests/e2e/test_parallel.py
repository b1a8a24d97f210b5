#!/usr/bin/env python3
"""Parallel compiles (`-j N`) through the binary.

    python3 tests/e2e/test_parallel.py --tritonc build/tools/tritonc/tritonc

- Every example (and a program with imports) compiled with -j 1, 2 and 4 gives byte-identical
  outputs; so does one big file, whose layers the jobs emit in parallel.
- Diagnostics of several failing files come grouped per file, in input order, identically
  for every -j and every run; the exit status is the same.
- A progress line ([done/total] file) is drawn on a terminal and erased; never when stderr is
  not a terminal.
- --time-trace with -j puts each worker's phases on a track of its own.
Ends with "N passed, N failed".
"""
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import runner  # noqa: E402

REPO = runner.REPO
EXAMPLES = sorted(os.path.join(REPO, "examples", f)
                  for f in os.listdir(os.path.join(REPO, "examples")) if f.endswith(".tri"))


def run(tritonc, work, *args):
    env = runner.tritonc_env(work)
    return subprocess.run([tritonc] + list(args), cwd=work, env=env, capture_output=True,
                          timeout=300)


def tree(path):
    out = {}
    for name in sorted(os.listdir(path)):
        with open(os.path.join(path, name), "rb") as f:
            out[name] = f.read()
    return out


def test_outputs_do_not_depend_on_jobs(tritonc, work):
    with open(os.path.join(work, "lib.tri"), "w") as f:
        f.write("fn act(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {\n"
                "    return relu(x)\n}\n")
    with open(os.path.join(work, "net.tri"), "w") as f:
        f.write('import "lib.tri"\nlayer Net(w: TernaryTensor<trit, [8, 4]>, '
                "x: Tensor<float32, [?, 8]>) -> Tensor<float32, [?, 4]> {\n"
                "    return act(x @ w)\n}\n")
    inputs = EXAMPLES + ["net.tri", "lib.tri"]
    outputs = {}
    for jobs in ["1", "2", "4"]:
        out = os.path.join(work, "out" + jobs)
        os.makedirs(out)
        proc = run(tritonc, work, "compile", *inputs, "-O2", "-o", out, "--no-cache", "-j", jobs)
        assert proc.returncode == 0, proc.stderr.decode()
        outputs[jobs] = tree(out)
    assert len(outputs["1"]) == len(inputs), sorted(outputs["1"])
    assert outputs["1"] == outputs["2"] == outputs["4"]


def zoo_file(models):
    """The examples copied round-robin into one file of `models` models (names suffixed per
    copy, `main` dropped): big enough for -j to split the emission of its layers."""
    parts = []
    for copy in range(models):
        with open(EXAMPLES[copy % len(EXAMPLES)]) as f:
            text = f.read()
        m = re.search(r"^main \{.*?^\}\n", text, flags=re.S | re.M)
        if m:
            text = text[:m.start()] + text[m.end():]
        for n in sorted(set(re.findall(r"^(?:layer|fn|let)\s+(\w+)", text, flags=re.M)),
                        key=len, reverse=True):
            text = re.sub(r"\b%s\b" % re.escape(n), "%s_c%d" % (n, copy), text)
        parts.append(text)
    return "\n".join(parts)


def test_one_big_file_does_not_depend_on_jobs(tritonc, work):
    # One input: the jobs compile its models in parallel groups; the module is the one a
    # serial compile writes, at every level.
    with open(os.path.join(work, "zoo.tri"), "w") as f:
        f.write(zoo_file(48))
    outputs = {}
    for level in ["0", "1", "2", "3"]:
        for jobs in ["1", "2", "4"]:
            out = os.path.join(work, "zoo-%s-%s.py" % (level, jobs))
            proc = run(tritonc, work, "compile", "zoo.tri", "-O" + level, "-o", out, "--no-cache",
                       "-j", jobs, "--verbose")
            assert proc.returncode == 0, proc.stderr.decode()
            grouped = re.search(rb"compiled in (\d+) parallel groups", proc.stderr)
            if jobs == "1":
                assert grouped is None, proc.stderr.decode()
            else:
                assert grouped and grouped.group(1) == jobs.encode(), proc.stderr.decode()
            with open(out, "rb") as f:
                outputs[level, jobs] = f.read()
        assert outputs[level, "1"] == outputs[level, "2"] == outputs[level, "4"], level
    # With the cache: the first compile stores the groups' checked IR in L2; the other
    # levels, -O0 included (the IR has its run-time checks), finish from it in groups.
    # -j is not in the keys: -O2 -j 1 finishes the groups serially.
    for level, jobs, from_l2 in [("1", "2", False), ("2", "1", True), ("3", "4", True),
                                 ("0", "2", True)]:
        out = os.path.join(work, "zoo-cached-%s-%s.py" % (level, jobs))
        proc = run(tritonc, work, "compile", "zoo.tri", "-O" + level, "-o", out, "-j", jobs,
                   "--verbose")
        assert proc.returncode == 0, proc.stderr.decode()
        finished = b"compiled from L2 in" in proc.stderr
        assert finished == from_l2, (level, jobs, proc.stderr.decode())
        with open(out, "rb") as f:
            assert f.read() == outputs[level, "1"], (level, jobs)


def groups_used(proc):
    return b"parallel groups" in proc.stderr


def chain_file(layers, extra_roots):
    """`layers` small layers that one layer `All` applies in turn, and `extra_roots` layers
    that use only the first: the file's roots cannot be split evenly."""
    text = "".join("layer L%d(x: Tensor<float32, [?, 8]>) -> Tensor<float32, [?, 8]> {\n"
                   "    return relu(x) * %d.0\n}\n" % (i, i + 1) for i in range(layers))
    text += "".join("layer Side%d(x: Tensor<float32, [?, 8]>) -> Tensor<float32, [?, 8]> {\n"
                    "    return L0(x) + %d.0\n}\n" % (i, i) for i in range(extra_roots))
    text += "layer All(x: Tensor<float32, [?, 8]>) -> Tensor<float32, [?, 8]> {\n    let h = x\n"
    text += "".join("    h = L%d(h)\n" % i for i in range(layers))
    return text + "    return h\n}\n"


def test_big_file_that_does_not_split_compiles_as_one(tritonc, work):
    # A layer that uses nearly everything leaves one group with most of the file: it is
    # compiled as one, and the module is the serial one either way, with and without --entry.
    cases = {"chain.tri": (chain_file(250, 3), False),
             "zoo_and_chain.tri": (zoo_file(24) + chain_file(40, 8), True)}
    for name, (text, splits) in cases.items():
        with open(os.path.join(work, name), "w") as f:
            f.write(text)
        for extra in [[], ["--entry", "L1"]]:
            outs = []
            for jobs in ["1", "2"]:
                out = os.path.join(work, "%s-%s.py" % (name, jobs))
                proc = run(tritonc, work, "compile", name, "-O2", "-o", out, "--no-cache",
                           "-j", jobs, "--verbose", *extra)
                assert proc.returncode == 0, proc.stderr.decode()
                assert groups_used(proc) == (splits and jobs == "2"), proc.stderr.decode()
                with open(out, "rb") as f:
                    outs.append(f.read())
            assert outs[0] == outs[1], (name, extra)
            assert (b'ENTRY = "L1"' in outs[0]) == bool(extra)
        if not splits:
            assert b"compiled as one group (one group would compile most" in proc.stderr


def test_big_file_with_diagnostics_reports_as_a_serial_compile(tritonc, work):
    # A warning in one model and an error in another: the groups give way to the full
    # pipeline, which reports exactly what -j 1 reports.
    zoo = zoo_file(24)
    warned = zoo + "fn warns(a: int) -> int {\n    return a % 0\n}\n"
    broken = warned + BROKEN[0].format(i=7)
    for name, text, status in [("warned.tri", warned, 0), ("broken.tri", broken, 1)]:
        with open(os.path.join(work, name), "w") as f:
            f.write(text)
        for command in ["compile", "check"]:
            results = set()
            for jobs in ["1", "2"]:
                args = [command, name, "-j", jobs, "--color=never"]
                if command == "compile":
                    args += ["-o", name + jobs + ".py", "--no-cache"]
                proc = run(tritonc, work, *args)
                assert proc.returncode == status, (name, command, proc.stderr.decode())
                results.add(proc.stderr)
            assert len(results) == 1, (name, command, results)
            text = results.pop()
            assert b"DivisionByZeroWhenRun" in text, text
            assert (b"missing7" in text) == (status == 1), text


def test_check_splits_a_clean_big_file(tritonc, work):
    with open(os.path.join(work, "zoo.tri"), "w") as f:
        f.write(zoo_file(24))
    for args in [["check"], ["compile", "--stop-after=check", "--no-cache"]]:
        proc = run(tritonc, work, *args, "zoo.tri", "-j", "2", "--verbose")
        assert proc.returncode == 0, proc.stderr.decode()
        assert groups_used(proc), proc.stderr.decode()
        assert not os.path.exists(os.path.join(work, "zoo.py"))


BROKEN = ["layer L{i}(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {{\n"
          "    return x + missing{i}\n}}\n",
          "layer M{i}(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {{\n"
          "    return x @ x @ undefined{i}\n}}\nfn f{i}( -> int {{ return 1 }}\n"]


def test_diagnostics_grouped_per_file_in_input_order(tritonc, work):
    names = []
    for i in range(6):
        name = "f%d.tri" % i
        with open(os.path.join(work, name), "w") as f:
            f.write(BROKEN[i % 2].format(i=i))
        names.append(name)
    names.append(os.path.relpath(EXAMPLES[0], work))  # one good file among them
    seen = set()
    for jobs in ["1", "2", "4", "1", "2", "4"]:
        proc = run(tritonc, work, "check", *names, "-j", jobs)
        assert proc.returncode == 1, proc.returncode
        seen.add(proc.stderr)
    assert len(seen) == 1, "diagnostics differ between runs"
    text = seen.pop().decode()
    order = [line.split(":")[0] for line in text.splitlines() if ": error:" in line]
    assert order == sorted(order, key=lambda n: names.index(n)), order
    assert set(order) == set(names[:-1]), order


def test_progress_line_only_on_a_terminal(tritonc, work):
    out = os.path.join(work, "out")
    os.makedirs(out)
    args = ["compile"] + EXAMPLES[:6] + ["-o", out, "--no-cache", "-j", "2"]
    proc = run(tritonc, work, *args)
    assert proc.returncode == 0 and b"[6/6]" not in proc.stderr, proc.stderr
    script = shutil.which("script")
    assert script, "util-linux `script` is needed to give tritonc a terminal"
    command = " ".join("'%s'" % a for a in [tritonc] + args)
    tty = subprocess.run([script, "-qec", command, "/dev/null"], cwd=work, capture_output=True,
                         timeout=120, env=dict(os.environ, TRITONC_CACHE_DIR=work + "/cache"))
    assert tty.returncode == 0, tty.stdout
    assert b"[6/6]" in tty.stdout and b"\r\x1b[K" in tty.stdout, tty.stdout
    # The count only goes up ([6/16] once followed [16/16]: counted outside the lock that
    # orders the redraws); each file is counted once.
    args = ["compile"] + EXAMPLES + ["-o", out, "--no-cache", "-j", "8"]
    command = " ".join("'%s'" % a for a in [tritonc] + args)
    for attempt in range(5):
        tty = subprocess.run([script, "-qec", command, "/dev/null"], cwd=work,
                             capture_output=True, timeout=120,
                             env=dict(os.environ, TRITONC_CACHE_DIR=work + "/cache"))
        assert tty.returncode == 0, tty.stdout
        counts = [int(n) for n in re.findall(rb"\[(\d+)/%d\]" % len(EXAMPLES), tty.stdout)]
        assert counts == list(range(1, len(EXAMPLES) + 1)), (attempt, counts)
    # With JSON diagnostics every line of stderr is one object: no progress line between them
    # (an IDE reads stderr through a terminal too).
    bad = os.path.join(work, "bad.tri")
    with open(bad, "w") as f:
        f.write("layer Bad(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {\n"
                "    return relu(y)\n}\n")
    args = ["compile"] + EXAMPLES[:3] + [bad, "-o", out, "--no-cache", "-j", "2",
                                         "--diagnostics-format=json"]
    command = " ".join("'%s'" % a for a in [tritonc] + args)
    tty = subprocess.run([script, "-qec", command, "/dev/null"], cwd=work, capture_output=True,
                         timeout=120, env=dict(os.environ, TRITONC_CACHE_DIR=work + "/cache"))
    assert tty.returncode == 1, tty.stdout
    lines = [line for line in tty.stdout.replace(b"\r\n", b"\n").split(b"\n") if line]
    assert lines, tty.stdout
    for line in lines:
        assert json.loads(line)["code"], line


def test_time_trace_has_a_track_per_worker(tritonc, work):
    out = os.path.join(work, "out")
    os.makedirs(out)
    trace = os.path.join(work, "t.json")
    proc = run(tritonc, work, "compile", *EXAMPLES[:8], "-o", out, "--no-cache", "-j", "2",
               "--time-trace=" + trace, "--timing")
    assert proc.returncode == 0, proc.stderr.decode()
    with open(trace) as f:
        events = json.load(f)["traceEvents"]
    tracks = {e["tid"] for e in events if e["ph"] == "X" and e["name"] == "parser"}
    assert tracks and tracks <= {1, 2}, tracks  # the main thread works too (track 1)
    names = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    # On a loaded machine the calling thread may take every file before the other starts.
    assert ("worker 1" in names) == (2 in tracks), (names, tracks)
    assert any(e["name"] == "compile files" for e in events if e["ph"] == "X")
    assert b"compile files" in proc.stderr  # the --timing table


def test_jobs_past_what_the_system_gives(tritonc, work):
    """-j 64 under an address-space limit that leaves room for a few of its 64 MiB thread
    stacks only: the files are compiled by the threads it got (a failed thread start used to
    abort the process with std::terminate), and a big file's parallel groups too (Workers
    used to hang)."""
    import resource

    def limited():
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    inputs = []
    for i in range(40):  # 40 files: -j 64 asks for 40 threads, 2.5 GiB of stacks
        inputs.append(os.path.join(work, "m%d.tri" % i))
        shutil.copy(EXAMPLES[i % len(EXAMPLES)], inputs[-1])
    env = runner.tritonc_env(work)
    proc = subprocess.run([tritonc, "check", "-j", "64", "--no-cache"] + inputs, cwd=work,
                          env=env, capture_output=True, timeout=120, preexec_fn=limited)
    assert proc.returncode == 0, (proc.returncode, proc.stderr.decode()[-2000:])
    big = os.path.join(work, "zoo.tri")
    with open(big, "w") as f:
        f.write(zoo_file(24))
    out = os.path.join(work, "zoo.py")
    proc = subprocess.run([tritonc, "compile", big, "-o", out, "-j", "64", "--no-cache"],
                          cwd=work, env=env, capture_output=True, timeout=120,
                          preexec_fn=limited)
    assert proc.returncode == 0, (proc.returncode, proc.stderr.decode()[-2000:])
    assert os.path.getsize(out) > 0


if __name__ == "__main__":
    sys.exit(runner.main([test_outputs_do_not_depend_on_jobs,
                          test_one_big_file_does_not_depend_on_jobs,
                          test_big_file_that_does_not_split_compiles_as_one,
                          test_big_file_with_diagnostics_reports_as_a_serial_compile,
                          test_check_splits_a_clean_big_file,
                          test_diagnostics_grouped_per_file_in_input_order,
                          test_progress_line_only_on_a_terminal,
                          test_time_trace_has_a_track_per_worker,
                          test_jobs_past_what_the_system_gives],
                         lambda tritonc, work: (tritonc, work)))

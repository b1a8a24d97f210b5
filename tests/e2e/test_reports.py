#!/usr/bin/env python3
"""The phase timer's reports, through the binary: `--timing`, `--timing=json`, `--time-trace`.

    python3 tests/e2e/test_reports.py --tritonc build/tools/tritonc/tritonc

Times differ run to run, so these tests check structure and consistency: every stage
reports, passes nest inside the optimizer, shares add up, the cache line and the JSON cache
counters match what happened, and the trace is valid Chrome trace JSON whose nested events
lie inside their parents. Ends with "N passed, N failed".
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import runner  # noqa: E402

REPO = runner.REPO
EXAMPLE = os.path.join(REPO, "examples", "resnet18.tri")
STAGES = ["read inputs", "lexer", "parser", "type checker", "IR generation", "optimizer",
          "PyTorch emitter", "write outputs"]


class Ctx:
    def __init__(self, tritonc, work):
        self.tritonc, self.work = tritonc, work
        self.env = {k: v for k, v in os.environ.items()
                    if k not in ("TRITONC_NO_CACHE", "TRITONC_CONFIG", "TRITONC_CACHE_DIR")}
        self.env["TRITONC_CACHE_DIR"] = os.path.join(work, "cache")
        self.env["TRITONC_CONFIG"] = os.path.join(work, "absent.yaml")

    def run(self, *args, expect=0):
        return runner.run_tritonc(self.tritonc, args, self.env, self.work, expect)


def check(cond, message):
    if not cond:
        raise AssertionError(message)


def test_text_report(ctx):
    err = ctx.run("compile", EXAMPLE, "-O2", "-o", "a.py", "--no-cache", "--timing").stderr
    check("tritonc profiling report" in err, "no report header:\n" + err)
    lines = err.splitlines()
    names = [line[:32].rstrip() for line in lines]
    for stage in STAGES:
        check(stage in names, "no row for %r:\n%s" % (stage, err))
    check("  pass inline" in names and "  pass fuse-ternary" in names,
          "passes are not nested under the optimizer:\n" + err)
    check(any(line.startswith("total ") and "ms wall" in line for line in lines),
          "no totals line:\n" + err)
    check("cache: not used" in err, "--no-cache: the cache line should say so:\n" + err)
    check("bottlenecks" in err, "no bottleneck section:\n" + err)


def test_json_report_and_cache_counters(ctx):
    first = json.loads(ctx.run("compile", EXAMPLE, "-O2", "-o", "b.py", "--timing=json").stderr)
    for key in ("total_ms", "cpu_ms", "peak_rss_mib", "phases", "bottlenecks", "cache"):
        check(key in first, "no %r in %s" % (key, sorted(first)))
    phases = {p["name"]: p for p in first["phases"]}
    for stage in STAGES:
        check(stage in phases, "no phase %r" % stage)
    check(phases["pass cse"]["depth"] == 1 and phases["optimizer"]["depth"] == 0,
          "pass depth: %s" % phases["pass cse"])
    nested = sum(p["wall_ms"] for p in first["phases"] if p["depth"] == 1)
    check(nested <= phases["optimizer"]["wall_ms"] + 1e-6, "passes outlast the optimizer")
    top = sum(p["percent"] for p in first["phases"] if p["depth"] == 0)
    check(abs(top - 100.0) < 0.5, "top-level shares add up to %.2f%%" % top)
    check(abs(sum(p["wall_ms"] for p in first["phases"] if p["depth"] == 0) - first["total_ms"])
          < 1e-3, "total is not the sum of the top-level phases")
    check(first["peak_rss_mib"] > 1, "peak memory %s" % first["peak_rss_mib"])
    for b in first["bottlenecks"]:
        check(phases[b]["percent"] >= 10.0, "bottleneck %r under 10%%" % b)
    check(first["cache"]["l3"]["misses"] == 1 and first["cache"]["l3"]["hits"] == 0,
          "first compile: %s" % first["cache"])
    second = json.loads(ctx.run("compile", EXAMPLE, "-O2", "-o", "b.py", "--timing=json").stderr)
    check(second["cache"]["l3"]["hits"] == 1 and second["cache"]["hit_rate"] == 1.0,
          "second compile: %s" % second["cache"])
    names = [p["name"] for p in second["phases"]]
    check("lexer" not in names and "cache lookup (L3)" in names,
          "an L3 hit should not run the pipeline: %s" % names)
    check("skipped_phases" not in first, "the first compile skipped %s" % first.get("skipped_phases"))
    check(second.get("skipped_phases") == ["lexer", "parser", "type checker", "IR generation",
                                           "optimizer", "PyTorch emitter"],
          "an L3 hit should name the phases it did not run: %s" % second.get("skipped_phases"))
    # The text report names them too (a report without a lexer line, unexplained, reads as
    # a broken report), and an L2 hit (another -O) skips only the front end.
    text = ctx.run("compile", EXAMPLE, "-O2", "-o", "b.py", "--timing").stderr
    check("not run (their results came from the cache): lexer, parser, type checker, "
          "IR generation, optimizer, PyTorch emitter" in text, "L3 hit, text:\n" + text)
    l2 = json.loads(ctx.run("compile", EXAMPLE, "-O3", "-o", "b.py", "--timing=json").stderr)
    check(l2["cache"]["l2"]["hits"] == 1 and l2.get("skipped_phases") == [
        "lexer", "parser", "type checker", "IR generation"], "L2 hit: %s %s" % (
            l2["cache"], l2.get("skipped_phases")))


def test_timing_with_json_diagnostics_keeps_stderr_json(ctx):
    """With --diagnostics-format=json, stderr is read line by line as JSON: --timing's
    report is then the one-line JSON object (the text table broke such readers), and
    --verbose's lines are JSON objects too."""
    with open(os.path.join(ctx.work, "bad.tri"), "w") as f:
        f.write("layer A(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> {\n"
                "    return y\n}\n")
    for args, status in (([EXAMPLE, "-o", "j.py"], 0), ([os.path.join(ctx.work, "bad.tri")], 1)):
        for log in ("--verbose", "--debug"):
            r = ctx.run("compile", *args, "--no-cache", "--timing", "--diagnostics-format=json",
                        log, expect=status)
            lines = [json.loads(line) for line in r.stderr.splitlines()]
            reports = [o for o in lines if "phases" in o]
            check(len(reports) == 1, "one JSON timing report: %r" % r.stderr[:300])
            # --verbose's (and --debug's) lines are objects too: {"log", "message"}
            logs = [o for o in lines if "log" in o]
            check(logs and all(set(o) == {"log", "message"} for o in logs) and
                  any(o["message"].startswith("pipeline: ") for o in logs), r.stderr[:300])
            if status:
                check(any(o.get("code") == "UndefinedName" for o in lines), r.stderr[:300])


def test_cpu_time_covers_the_workers(ctx):
    # With -j, the workers' phases are nested under "compile files": its CPU time and the
    # total's include the workers' (they counted the main thread's only, which waited, and
    # a child's 3.67 ms CPU exceeded the total's 2.66 ms).
    names = ["resnet50", "vgg16", "resnet152", "vit_base", "densenet121", "efficientnet_b0",
             "mobilenet_v2", "resnet101"]
    inputs = [os.path.join(REPO, "examples", name + ".tri") for name in names]
    os.makedirs(os.path.join(ctx.work, "outj"))
    report = json.loads(ctx.run("compile", *inputs, "-j", "4", "-o", "outj", "--no-cache",
                                "--timing=json").stderr)
    phases = report["phases"]
    slack = 0.002  # ms: the rounding of the report's six decimals
    for p in phases:
        check(p["cpu_ms"] <= report["cpu_ms"] + slack,
              "%s: %.3f ms CPU, more than the total's %.3f ms" % (p["name"], p["cpu_ms"],
                                                                  report["cpu_ms"]))
    check(abs(sum(p["cpu_ms"] for p in phases if p["depth"] == 0) - report["cpu_ms"]) < slack,
          "the total CPU time is not the sum of the top-level phases'")
    # each phase's CPU time covers its children's (rows follow their parents)
    for i, parent in enumerate(phases):
        children = 0.0
        for p in phases[i + 1:]:
            if p["depth"] <= parent["depth"]:
                break
            if p["depth"] == parent["depth"] + 1:
                children += p["cpu_ms"]
        check(children <= parent["cpu_ms"] + slack,
              "%s: %.3f ms CPU, less than its phases' %.3f ms" % (parent["name"],
                                                                 parent["cpu_ms"], children))
    text = ctx.run("compile", *inputs, "-j", "4", "-o", "outj", "--no-cache", "--timing").stderr
    total = [line for line in text.splitlines() if line.startswith("total ") and "ms CPU" in line]
    check(len(total) == 1, "no totals line:\n" + text)


def test_check_and_bad_format(ctx):
    report = json.loads(ctx.run("check", EXAMPLE, "--timing=json").stderr)
    check([p["name"] for p in report["phases"]] == ["read inputs", "lexer", "parser",
                                                     "type checker"],
          "check phases: %s" % [p["name"] for p in report["phases"]])
    err = ctx.run("compile", EXAMPLE, "--timing=xml", expect=2).stderr
    check("--timing" in err, "usage error does not name the flag: " + err)


def test_time_trace(ctx):
    trace_path = os.path.join(ctx.work, "t.json")
    ctx.run("compile", EXAMPLE, "-O2", "-o", "c.py", "--no-cache", "--time-trace=" + trace_path)
    with open(trace_path) as f:
        trace = json.load(f)
    events = trace["traceEvents"]
    meta = [e for e in events if e["ph"] == "M"]
    check({e["name"] for e in meta} >= {"process_name", "thread_name"},
          "no process/thread names: %s" % meta)
    spans = [e for e in events if e["ph"] == "X"]
    for e in spans:
        for key in ("name", "ts", "dur", "pid", "tid"):
            check(key in e, "event without %r: %s" % (key, e))
        check(e["dur"] >= 0 and e["ts"] >= 0, "negative time: %s" % e)
    by_name = {e["name"]: e for e in spans}
    for stage in STAGES:
        check(stage in by_name, "no trace event %r" % stage)
    opt = by_name["optimizer"]
    for e in spans:
        if e["name"].startswith("pass "):
            inside = (opt["ts"] <= e["ts"] + 1e-3
                      and e["ts"] + e["dur"] <= opt["ts"] + opt["dur"] + 1e-3)
            check(inside, "%s lies outside the optimizer's span" % e["name"])
    # The default file name is <stem>.trace.json in the current directory.
    ctx.run("compile", EXAMPLE, "-O1", "-o", "d.py", "--time-trace")
    with open(os.path.join(ctx.work, "resnet18.trace.json")) as f:
        json.load(f)


TESTS = [test_text_report, test_json_report_and_cache_counters, test_check_and_bad_format,
         test_time_trace, test_cpu_time_covers_the_workers,
         test_timing_with_json_diagnostics_keeps_stderr_json]


if __name__ == "__main__":
    sys.exit(runner.main(TESTS, lambda tritonc, work: (Ctx(tritonc, work),)))

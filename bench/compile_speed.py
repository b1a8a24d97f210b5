#!/usr/bin/env python3
"""Compile speed of the model zoo and of generated models (issue #8), next to the seeds' figures.

    python3 bench/compile_speed.py [--tritonc build-release/tools/tritonc/tritonc] [--runs 30]
        [--level 2] [--json OUT.json] [--scaling 1000,10000,100000,1000000]

Table: for every example, its lines, the whole-process cold compile (`--no-cache`) and warm
compile (an L3 cache hit) medians, the in-process lexer / parser / type checker / codegen
(IR generation + optimizer + emitters) medians from `--timing=json`, the peak resident
memory of a cold compile, the seed toolchain's time for the same model, and the ratio.

--scaling N,...: generated models (`tritonc_bench_gen N`) compiled cold, time and peak memory
against lines, with a least-squares line through the origin and its R^2.

--json: everything measured, for bench/compare.py (regression check against a baseline).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The seed toolchain's compile times (seconds) for the models it names. Our zoo has
# DenseNet-121 where the seed measured DenseNet-201 (same blocks, 1.4x the layers).
SEED_SECONDS = {"mnist_mlp": 0.32, "resnet18": 1.87, "resnet34": 3.37, "resnet50": 4.23,
                "mobilenet_v2": 2.29, "vgg16": 1.42, "efficientnet_b0": 2.75,
                "resnet152": 9.34, "densenet121": 11.67}
CODEGEN = ("IR generation", "optimizer", "PyTorch emitter", "CUDA emitter")


def spawn(argv, env):
    """Runs a process; returns (wall ms, stderr text)."""
    start = time.perf_counter_ns()
    proc = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True)
    elapsed = (time.perf_counter_ns() - start) / 1e6
    if proc.returncode != 0:
        raise SystemExit("failed: %s\n%s" % (" ".join(argv), proc.stderr))
    return elapsed, proc.stderr


def phase_ms(report, names):
    return sum(p["wall_ms"] for p in report["phases"] if p["name"] in names and p["depth"] == 0)


def measure(tritonc, src, level, runs, env, work):
    out = os.path.join(work, "out.py")
    cold = [tritonc, "compile", src, "-O" + level, "-o", out, "--no-cache", "--timing=json"]
    warm = [tritonc, "compile", src, "-O" + level, "-o", out,
            "--cache-dir", os.path.join(work, "cache")]
    spawn(warm, env)  # fill the cache
    walls, warms, reports = [], [], []
    for _ in range(runs):
        wall, err = spawn(cold, env)
        walls.append(wall)
        reports.append(json.loads(err))
        warms.append(spawn(warm, env)[0])
    med = statistics.median
    with open(src) as f:
        lines = sum(1 for _ in f)
    return {
        "lines": lines,
        "cold_ms": med(walls),
        "warm_ms": med(warms),
        "lexer_ms": med(phase_ms(r, ("lexer",)) for r in reports),
        "parser_ms": med(phase_ms(r, ("parser",)) for r in reports),
        "typecheck_ms": med(phase_ms(r, ("type checker",)) for r in reports),
        "codegen_ms": med(phase_ms(r, CODEGEN) for r in reports),
        "in_process_ms": med(r["total_ms"] for r in reports),
        "peak_rss_mib": max(r["peak_rss_mib"] for r in reports),
    }


def fit_through_origin(xs, ys):
    """y = a * x by least squares; returns (a, R^2)."""
    a = sum(x * y for x, y in zip(xs, ys)) / sum(x * x for x in xs)
    mean = statistics.fmean(ys)
    ss_res = sum((y - a * x) ** 2 for x, y in zip(xs, ys))
    ss_tot = sum((y - mean) ** 2 for y in ys)
    return a, (1 - ss_res / ss_tot) if ss_tot else 1.0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tritonc", default=os.path.join(REPO, "build-release/tools/tritonc/tritonc"))
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--level", default="2")
    parser.add_argument("--models", default="", help="examples (default: all)")
    parser.add_argument("--scaling", default="", help="generated model sizes in lines")
    parser.add_argument("--json", default="", help="write the results here")
    args = parser.parse_args()
    tritonc = os.path.abspath(args.tritonc)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRITONC_")}
    work = tempfile.mkdtemp(prefix="tritonc-speed-")
    env["TRITONC_CONFIG"] = os.path.join(work, "absent.yaml")
    results = {"level": args.level, "runs": args.runs, "models": {}, "scaling": []}
    try:
        models = args.models.split(",") if args.models else sorted(
            f[:-4] for f in os.listdir(os.path.join(REPO, "examples")) if f.endswith(".tri"))
        print("tritonc %s, -O%s, %d cold and %d warm runs per model (medians)"
              % (tritonc, args.level, args.runs, args.runs))
        print("| model | lines | lexer ms | parser ms | typecheck ms | codegen ms | cold ms "
              "| warm ms | peak MiB | seed s | seed / cold |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for model in models:
            r = measure(tritonc, os.path.join(REPO, "examples", model + ".tri"), args.level,
                        args.runs, env, work)
            results["models"][model] = r
            seed = SEED_SECONDS.get(model)
            print("| %s | %d | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.1f | %s | %s |" % (
                model, r["lines"], r["lexer_ms"], r["parser_ms"], r["typecheck_ms"],
                r["codegen_ms"], r["cold_ms"], r["warm_ms"], r["peak_rss_mib"],
                "%.2f" % seed if seed else "-",
                "%.0fx" % (seed * 1000 / r["cold_ms"]) if seed else "-"))
        if args.scaling:
            gen = os.path.join(os.path.dirname(tritonc), "..", "..", "bench", "tritonc_bench_gen")
            print("\n| generated lines | cold ms | in-process ms | peak MiB | ms per 1k lines |")
            print("|---:|---:|---:|---:|---:|")
            for n in (int(v) for v in args.scaling.split(",")):
                src = os.path.join(work, "gen%d.tri" % n)
                with open(src, "w") as f:
                    subprocess.run([gen, str(n)], stdout=f, check=True)
                runs = max(3, min(args.runs, int(3e6 / n)))
                r = measure(tritonc, src, args.level, runs, env, work)
                results["scaling"].append(r)
                print("| %d | %.1f | %.1f | %.1f | %.2f |" % (
                    r["lines"], r["cold_ms"], r["in_process_ms"], r["peak_rss_mib"],
                    r["in_process_ms"] / r["lines"] * 1000))
            xs = [r["lines"] for r in results["scaling"]]
            if len(xs) >= 2:
                a, r2 = fit_through_origin(xs, [r["in_process_ms"] for r in results["scaling"]])
                m, r2m = fit_through_origin(xs, [r["peak_rss_mib"] for r in results["scaling"]])
                results["fit"] = {"ms_per_line": a, "r2_time": r2, "mib_per_line": m,
                                  "r2_memory": r2m}
                print("\ntime = %.4f ms x kilo-lines (R^2 = %.4f); peak memory = %.3f MiB x "
                      "kilo-lines (R^2 = %.4f)" % (a * 1000, r2, m * 1000, r2m))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(results, f, indent=1, sort_keys=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

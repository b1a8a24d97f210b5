#!/usr/bin/env python3
"""Whole-process compile times with and without the compile cache (issue #7's targets).

    python3 bench/cache/bench_cache.py [--tritonc build-release/tools/tritonc/tritonc]
        [--models resnet50,resnet18,mnist_mlp|PATH.tri,...] [--runs 200] [--level 2]

For each model, one run of this script measures, interleaved round by round so that load on
the shared machine hits every mode alike:

  true       /bin/true, the floor of starting any process from here
  version    tritonc --version
  cold       tritonc compile -O<level> --no-cache
  miss       an edited file (a comment appended) compiled with the cache: lookups miss, the
             pipeline runs, and its checked IR (L2) and generated code (L3) are stored
  first      the same into an empty cache directory (its folders are created too)
  l2 hit     L3 empty, L2 holding the checked IR (the pipeline from the optimizer on)
  l3 hit     the warm case: the outputs come from the cache

Processes are started with posix_spawn and reaped with waitpid, so the figures include what a
build system pays to run tritonc (exec, dynamic loading) and no Python overhead beyond the
spawn itself. cold and miss write a new output file each; the others rewrite the same -o
path with identical contents (which tritonc only touches: replacing a file by rename makes
ext4 flush it at once, ~1.2 ms here). Prints medians (ms), p10/p90 and the ratios the issue asks for.
"""
import argparse
import os
import shutil
import statistics
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def spawn(argv, env):
    devnull = os.open(os.devnull, os.O_WRONLY)
    start = time.perf_counter_ns()
    pid = os.posix_spawn(argv[0], argv, env, file_actions=[
        (os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)])
    _, status = os.waitpid(pid, 0)
    elapsed = time.perf_counter_ns() - start
    os.close(devnull)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(argv)}")
    return elapsed / 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tritonc", default=os.path.join(REPO, "build-release/tools/tritonc/tritonc"))
    parser.add_argument("--models", default="resnet50,resnet18,mnist_mlp")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--level", default="2")
    args = parser.parse_args()
    tritonc = os.path.abspath(args.tritonc)
    work = tempfile.mkdtemp(prefix="tritonc-cache-bench-")
    env = {k: v for k, v in os.environ.items()
           if k not in ("TRITONC_NO_CACHE", "TRITONC_CONFIG", "TRITONC_CACHE_DIR")}
    env["TRITONC_CONFIG"] = os.path.join(work, "absent.yaml")
    try:
        print(f"tritonc: {tritonc}; {args.runs} runs per mode, interleaved; -O{args.level}")
        for model in args.models.split(","):
            # A name is an example; a path (e.g. from `tritonc_bench_gen LINES`) is used as is.
            src = model if os.sep in model else os.path.join(REPO, "examples", model + ".tri")
            model = os.path.splitext(os.path.basename(model))[0]
            out = os.path.join(work, model + ".py")
            warm = os.path.join(work, "warm-" + model)
            l2only = os.path.join(work, "l2-" + model)
            compile_ = [tritonc, "compile", src, f"-O{args.level}", "-o", out]
            # Fill the warm cache, and an L2-only cache (L3 removed before each L2 run).
            spawn(compile_ + ["--cache-dir", warm], env)
            spawn(compile_ + ["--cache-dir", l2only], env)
            # Edited copies: a new key each, the same work.
            with open(src) as f:
                text = f.read()
            edited = []
            for i in range(args.runs):
                path = os.path.join(work, f"{model}-edit{i}.tri")
                with open(path, "w") as f:
                    f.write(text + f"# edit {i}\n")
                edited.append(path)
            modes = ("true", "version", "cold", "miss", "first", "l2 hit", "l3 hit")
            times = {m: [] for m in modes}
            for i in range(args.runs):
                times["true"].append(spawn(["/bin/true"], env))
                times["version"].append(spawn([tritonc, "--version"], env))
                edit = [tritonc, "compile", edited[i], f"-O{args.level}", "-o"]
                times["cold"].append(spawn(edit + [out + f".cold{i}", "--no-cache"], env))
                times["miss"].append(spawn(edit + [out + f".miss{i}", "--cache-dir", warm], env))
                empty = os.path.join(work, f"empty-{model}-{i}")
                times["first"].append(spawn(compile_ + ["--cache-dir", empty], env))
                shutil.rmtree(empty)
                shutil.rmtree(os.path.join(l2only, "l3"), ignore_errors=True)
                times["l2 hit"].append(spawn(compile_ + ["--cache-dir", l2only], env))
                times["l3 hit"].append(spawn(compile_ + ["--cache-dir", warm], env))
            with open(src) as f:
                lines = sum(1 for _ in f)
            med = {m: statistics.median(t) for m, t in times.items()}
            print(f"\n{model} ({lines} lines)")
            print(f"  {'mode':<8} {'median ms':>10} {'p10':>8} {'p90':>8}")
            for m, t in times.items():
                q = statistics.quantiles(t, n=10)
                print(f"  {m:<8} {med[m]:>10.3f} {q[0]:>8.3f} {q[-1]:>8.3f}")
            print(f"  l3 hit / cold = {med['l3 hit'] / med['cold']:.2f}   "
                  f"l2 hit / cold = {med['l2 hit'] / med['cold']:.2f}   "
                  f"miss / cold = {med['miss'] / med['cold']:.3f}   "
                  f"(cold - true = {med['cold'] - med['true']:.3f} ms, "
                  f"l3 hit - true = {med['l3 hit'] - med['true']:.3f} ms)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

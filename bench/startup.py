#!/usr/bin/env python3
"""Whole-process start-up and small-compile times of one or more tritonc binaries.

    python3 bench/startup.py [--runs 500] [--model resnet50] TRITONC [TRITONC...]

Measures, interleaved round by round (so that load on a shared machine hits every binary
and command alike), the median wall time of:

  /bin/true                the floor of starting any process from here
  --version                answered before the command line is parsed
  check MODEL              lex, parse and type-check; no cache, no output
  compile MODEL (L3 hit)   the warm compile-cache case: start, key, read the entry, touch -o
  compile MODEL --no-cache a whole cold compile at -O2

Each binary has a cache directory of its own. Processes are started with posix_spawn and
reaped with waitpid, as in bench/cache/bench_cache.py. With several binaries, each row also
gives its time as a ratio of the first binary's (before/after comparisons of one change).
"""
import argparse
import os
import shutil
import statistics
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "bench", "cache"))
from bench_cache import spawn  # noqa: E402  (posix_spawn + waitpid, timed)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tritonc", nargs="+")
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--model", default="resnet50")
    args = parser.parse_args()
    model = args.model if os.sep in args.model else os.path.join(REPO, "examples",
                                                                 args.model + ".tri")
    work = tempfile.mkdtemp(prefix="tritonc-startup-")
    env = {k: v for k, v in os.environ.items()
           if k not in ("TRITONC_NO_CACHE", "TRITONC_CONFIG", "TRITONC_CACHE_DIR")}
    env["TRITONC_CONFIG"] = os.path.join(work, "absent.yaml")
    try:
        commands = [("/bin/true", ["/bin/true"])]
        for i, binary in enumerate(args.tritonc):
            t = os.path.abspath(binary)
            out = os.path.join(work, f"out{i}.py")
            hit = [t, "compile", model, "-O2", "-o", out, "--cache-dir",
                   os.path.join(work, f"cache{i}")]
            spawn(hit, env)  # fills the cache: every later run is an L3 hit
            commands += [(f"[{i}] --version", [t, "--version"]),
                         (f"[{i}] check", [t, "check", model]),
                         (f"[{i}] compile (L3 hit)", hit),
                         (f"[{i}] compile --no-cache",
                          [t, "compile", model, "-O2", "-o", os.path.join(work, f"cold{i}.py"),
                           "--no-cache"])]
        times = {name: [] for name, _ in commands}
        for _ in range(args.runs):
            for name, argv in commands:
                times[name].append(spawn(argv, env))
        med = {name: statistics.median(t) for name, t in times.items()}
        for i, binary in enumerate(args.tritonc):
            print(f"[{i}] {binary}")
        print(f"{args.runs} runs each, interleaved; model {os.path.basename(model)}\n")
        print(f"{'command':<26} {'median ms':>10} {'p10':>8} {'p90':>8} {'vs [0]':>7}")
        for name, t in times.items():
            q = statistics.quantiles(t, n=10)
            base = name.replace(name[:3], "[0]", 1) if name.startswith("[") else name
            ratio = f"{med[name] / med[base]:.2f}" if base != name else ""
            print(f"{name:<26} {med[name]:>10.3f} {q[0]:>8.3f} {q[-1]:>8.3f} {ratio:>7}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

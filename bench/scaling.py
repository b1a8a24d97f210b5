#!/usr/bin/env python3
"""How compile time grows with program length, per shape of program (the shapes of
tests/robustness/large_programs.py): whole `tritonc compile --no-cache` processes at N and 4N
repetitions, median of a few runs, and the ratio (4 for linear growth, 16 for quadratic).

    python3 bench/scaling.py [--tritonc build-release/tools/tritonc/tritonc] [--runs 3]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests", "robustness"))

import large_programs  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tritonc", default=os.path.join(REPO, "build-release", "tools",
                                                          "tritonc", "tritonc"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--levels", default="0,2")
    parser.add_argument("--shapes", default="",
                        help="comma-separated shapes of tests/robustness/large_programs.py "
                             "(default: all)")
    args = parser.parse_args()
    print("| shape | level | N | ms at N | ms at 4N | ratio |")
    print("|---|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for shape, big in large_programs.SHAPES.items():
            if args.shapes and shape not in args.shapes.split(","):
                continue
            n = big // 4
            for level in args.levels.split(","):
                medians = []
                for size in (n, 4 * n):
                    src = os.path.join(tmp, "p.tri")
                    with open(src, "w") as f:
                        f.write(large_programs.program(shape, size))
                    times = []
                    for _ in range(args.runs):
                        t0 = time.perf_counter()
                        subprocess.run([args.tritonc, "compile", src, "-O" + level, "--no-cache",
                                        "-o", os.path.join(tmp, "p.py")], check=True)
                        times.append((time.perf_counter() - t0) * 1e3)
                    medians.append(statistics.median(times))
                print("| %s | -O%s | %d | %.1f | %.1f | %.1f |" % (
                    shape, level, n, medians[0], medians[1], medians[1] / medians[0]), flush=True)


if __name__ == "__main__":
    main()

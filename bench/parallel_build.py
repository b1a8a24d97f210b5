#!/usr/bin/env python3
"""Parallel builds (issue #9): N independent files compiled with -j 1 and -j 2 (and -j CORES).

    python3 bench/parallel_build.py [--tritonc build-release/tools/tritonc/tritonc]
        [--files 16] [--lines 20000] [--runs 7] [--level 2]
    python3 bench/parallel_build.py --one-file [--runs 31]

--one-file times one file whose models the jobs compile in parallel groups instead: the
example zoo copied into 40 and into 160 models (as in bench/incremental.py), whole
`compile FILE --no-cache` and `check FILE` processes with -j 1 and -j 2, alternating.

Generates --files models of about --lines lines each (`tritonc_bench_gen`, each headed by its own
comment so that no two are alike), then times whole `tritonc compile FILES... -o DIR
--no-cache -j N` processes, alternating the job counts run by run so that machine noise
hits all of them alike. Prints each median, the speed-up over -j 1, and checks that every
job count wrote byte-identical outputs.
"""
import argparse
import filecmp
import os
import shutil
import statistics
import subprocess
import tempfile
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tritonc", default=os.path.join(REPO, "build-release/tools/tritonc/tritonc"))
    parser.add_argument("--files", type=int, default=16)
    parser.add_argument("--lines", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--level", default="2")
    parser.add_argument("--one-file", action="store_true")
    args = parser.parse_args()
    if args.one_file:
        return one_file(args)
    tritonc = os.path.abspath(args.tritonc)
    gen = os.path.join(os.path.dirname(tritonc), "..", "..", "bench", "tritonc_bench_gen")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRITONC_")}
    cores = os.cpu_count() or 1
    jobs = sorted({1, 2, cores})
    work = tempfile.mkdtemp(prefix="tritonc-parallel-")
    try:
        files = []
        for i in range(args.files):
            path = os.path.join(work, "model%02d.tri" % i)
            text = subprocess.run([gen, str(args.lines)], capture_output=True, text=True,
                                  check=True).stdout
            with open(path, "w") as f:
                f.write("# file %d of the parallel build benchmark\n" % i + text)
            files.append(path)
        lines = sum(sum(1 for _ in open(p)) for p in files)
        times = {j: [] for j in jobs}
        for _ in range(args.runs):
            for j in jobs:
                out = os.path.join(work, "out-j%d" % j)
                shutil.rmtree(out, ignore_errors=True)
                os.makedirs(out)
                start = time.perf_counter()
                subprocess.run([tritonc, "compile"] + files + ["-o", out, "--no-cache",
                                                               "-O" + args.level, "-j", str(j)],
                               env=env, check=True)
                times[j].append((time.perf_counter() - start) * 1000)
        base = os.path.join(work, "out-j1")
        for j in jobs:
            other = os.path.join(work, "out-j%d" % j)
            diff = filecmp.dircmp(base, other)
            same = not diff.left_only and not diff.right_only and all(
                filecmp.cmp(os.path.join(base, f), os.path.join(other, f), shallow=False)
                for f in diff.common_files)
            assert same, "-j %d wrote different outputs" % j
        print("%d files, %d lines in all, -O%s, %d runs per job count, %d cores; outputs "
              "identical for every -j" % (args.files, lines, args.level, args.runs, cores))
        print("| -j | median ms | speed-up over -j 1 |")
        print("|---:|---:|---:|")
        m1 = statistics.median(times[1])
        for j in jobs:
            m = statistics.median(times[j])
            print("| %d | %.1f | %.2fx |" % (j, m, m1 / m))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def one_file(args):
    sys.path.insert(0, os.path.join(REPO, "bench"))
    import incremental  # noqa: E402  (its zoo file)
    tritonc = os.path.abspath(args.tritonc)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRITONC_")}
    work = tempfile.mkdtemp(prefix="tritonc-one-file-")
    try:
        print("| file | lines | command | -j 1 median ms | -j 2 median ms | speed-up |")
        print("|---|---:|---|---:|---:|---:|")
        for models in [40, 160]:
            path = os.path.join(work, "zoo%d.tri" % models)
            with open(path, "w") as f:
                f.write(incremental.zoo_file(models))
            lines = sum(1 for _ in open(path))
            commands = {
                "compile -O" + args.level: lambda j: ["compile", path, "-O" + args.level,
                                                      "--no-cache", "-j", str(j), "-o",
                                                      os.path.join(work, "out%d.py" % j)],
                "check": lambda j: ["check", path, "-j", str(j)],
            }
            for name, command in commands.items():
                times = {1: [], 2: []}
                for _ in range(args.runs):
                    for j in (1, 2):
                        start = time.perf_counter()
                        subprocess.run([tritonc] + command(j), env=env, check=True)
                        times[j].append((time.perf_counter() - start) * 1000)
                if name.startswith("compile"):
                    assert filecmp.cmp(os.path.join(work, "out1.py"),
                                       os.path.join(work, "out2.py"), shallow=False)
                m1, m2 = statistics.median(times[1]), statistics.median(times[2])
                print("| zoo x%d | %d | %s | %.2f | %.2f | %.2fx |" % (models, lines, name, m1, m2,
                                                                     m1 / m2))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

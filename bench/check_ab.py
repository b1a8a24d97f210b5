#!/usr/bin/env python3
"""Alternates two tritonc binaries' `check -j1` on the same files, round by round, and prints
the medians and their ratio (on a shared machine, ratios measured in one run are what count).

    python3 bench/check_ab.py OLD_TRITONC NEW_TRITONC FILE.tri... [--rounds N]
"""
import argparse
import statistics
import subprocess
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("files", nargs="+")
    parser.add_argument("--rounds", type=int, default=11)
    args = parser.parse_args()
    bins = {"old": args.old, "new": args.new}
    for f in args.files:
        times = {k: [] for k in bins}
        for _ in range(args.rounds):
            for k, b in bins.items():
                start = time.perf_counter()
                subprocess.run([b, "check", f, "-j1"], check=True)
                times[k].append(time.perf_counter() - start)
        old, new = statistics.median(times["old"]), statistics.median(times["new"])
        print(f"{f}: old {old * 1000:.0f} ms, new {new * 1000:.0f} ms, new/old {new / old:.2f}")


if __name__ == "__main__":
    main()

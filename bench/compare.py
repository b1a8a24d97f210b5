#!/usr/bin/env python3
"""Compares two runs of bench/compile_speed.py --json and flags slowdowns (issue #8).

    python3 bench/compare.py BASELINE.json CURRENT.json [--threshold 20]

For every model in both runs and every measured time (cold, warm, lexer, parser, type
checker, codegen), prints the ratio current / baseline; a ratio over 1 + threshold% is a
regression. Times under 0.2 ms are compared only when one exceeds it (below that, run to
run noise on a shared machine is larger than the threshold). Exits 1 when
there is a regression, so CI can run it on demand:

    python3 bench/compile_speed.py --json new.json && python3 bench/compare.py base.json new.json
"""
import argparse
import json
import sys

KEYS = ("cold_ms", "warm_ms", "lexer_ms", "parser_ms", "typecheck_ms", "codegen_ms",
        "peak_rss_mib")
FLOOR = 0.2


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("baseline")
    parser.add_argument("current")
    parser.add_argument("--threshold", type=float, default=20.0, help="percent")
    args = parser.parse_args()
    with open(args.baseline) as f:
        base = json.load(f)
    with open(args.current) as f:
        cur = json.load(f)
    limit = 1 + args.threshold / 100
    regressions = []
    rows = 0
    for model in sorted(set(base["models"]) & set(cur["models"])):
        for key in KEYS:
            b, c = base["models"][model].get(key), cur["models"][model].get(key)
            if b is None or c is None or (b < FLOOR and c < FLOOR and key != "peak_rss_mib"):
                continue
            rows += 1
            ratio = c / b if b else float("inf")
            flag = ratio > limit
            print("%-18s %-13s %10.3f -> %10.3f  x%.2f%s" % (model, key, b, c, ratio,
                                                            "  REGRESSION" if flag else ""))
            if flag:
                regressions.append((model, key, ratio))
    missing = sorted(set(base["models"]) - set(cur["models"]))
    if missing:
        print("not in the current run: %s" % ", ".join(missing))
    print("%d comparisons, %d regressions over %.0f%%" % (rows, len(regressions), args.threshold))
    return 1 if regressions else 0


if __name__ == "__main__":
    sys.exit(main())

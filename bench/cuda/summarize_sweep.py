#!/usr/bin/env python3
"""Summarize a bench_ternary.py JSON of several define sets (scripts/gpu_defaults.sh): per
shape and batch, each set's variant 0 (what -O2 modules launch) and best variant against the
defaults' (time / default time), and per set the geometric means of those ratios (below 1:
faster than the defaults). A variant whose result is off cuBLAS's by more than 1 % of the
largest output (`max_rel_err`) is listed as WRONG and left out of the comparison.

    python3 bench/cuda/summarize_sweep.py [--brief] bench.json [bench_hot.json ...]

--brief: per shape and batch one line (the defaults and the set whose variant 0 is fastest).
"""
import json
import math
import sys


WRONG = 1e-2  # a result off cuBLAS's by more (relative to the largest output) is wrong


def split_label(label):
    """("SET", variant) of a label "V" or "SET:V" (a set's defines may hold no ':')."""
    if ":" in label:
        dset, v = label.rsplit(":", 1)
        return dset, int(v)
    return "", int(label)


def summarize(path, out=sys.stdout, brief=False):
    with open(path) as f:
        doc = json.load(f)
    rows = doc.get("results", [])
    sets = doc.get("define_sets") or [""]
    print("%s: %s, %d rows, %d define set(s)" % (path, doc.get("device", "?"), len(rows),
                                                 len(sets)), file=out)
    ratios = {d: ([], []) for d in sets}  # (variant 0, best) ratios
    for r in rows:
        best, v0 = {}, {}  # set -> (us, variant); set -> us
        for label, t in r.get("variants", {}).items():
            dset, v = split_label(label)
            us = t.get("median_us")
            if us is None:
                continue
            err = t.get("max_rel_err")
            if err is not None and not err <= WRONG:  # NaN too
                print("WRONG %5dx%-5d M=%-4d %s: max relative error %s vs cuBLAS" % (
                    r["n"], r["k"], r["m"], label, err), file=out)
                continue
            if v == 0:
                v0[dset] = us
            if dset not in best or us < best[dset][0]:
                best[dset] = (us, v)
        if "" not in best:
            continue
        base = best[""][0]
        head = "%5dx%-5d M=%-4d default v0 %7.2f us, best %7.2f us (v%d), cuBLAS %7.2f us" % (
            r["n"], r["k"], r["m"], v0.get("", float("nan")), base, best[""][1],
            r.get("cublas_fp16_us", float("nan")))
        if r.get("stream_us"):  # the ceiling: only reading the packed bytes
            head += ", read-only %.2f us" % r["stream_us"]
        if brief:
            top = min((d for d in v0 if d), key=lambda d: v0[d], default=None)
            if top is not None and "" in v0:
                head += "; fastest v0: %s %.2f us (%.2fx)" % (top, v0[top], v0[top] / v0[""])
        print(head, file=out)
        for dset in sets:
            if dset == "" or dset not in best:
                continue
            us, v = best[dset]
            line = "    %-56s" % dset
            if dset in v0 and "" in v0:
                ratios[dset][0].append(v0[dset] / v0[""])
                line += " v0 %7.2f us %5.2fx" % (v0[dset], v0[dset] / v0[""])
            ratios[dset][1].append(us / base)
            line += "  best %7.2f us (v%d) %5.2fx" % (us, v, us / base)
            if not brief:
                print(line + ("  <-" if us < 0.95 * base else ""), file=out)

    def gmean(xs):
        return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")

    print("geometric mean of time / default time, per set (variant 0; best):", file=out)
    for dset in sets:
        if dset and ratios[dset][1]:
            print("    %-56s %5.3f; %5.3f over %d rows" % (
                dset, gmean(ratios[dset][0]), gmean(ratios[dset][1]), len(ratios[dset][1])),
                file=out)
    return 0


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    brief = "--brief" in argv[1:]
    paths = [a for a in argv[1:] if a != "--brief"]
    if not paths:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    status = 0
    for path in paths:
        try:
            summarize(path, brief=brief)
        except (OSError, ValueError, KeyError) as e:
            print("%s: %s" % (path, e), file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))

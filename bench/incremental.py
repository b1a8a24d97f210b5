#!/usr/bin/env python3
"""Incremental compiles (issue #9): editing one layer of a 40-model file.

    python3 bench/incremental.py [--tritonc build-release/tools/tritonc/tritonc]
        [--runs 21] [--level 2]

Two 40-model files: `generated` (tritonc_bench_gen: 40 groups of a tutorial-style layer, a
residual block, an attention layer and a model, 160 declarations) and `zoo` (the examples
copied round-robin until there are 40 models, each copy's names suffixed, `main` blocks
dropped). Each run, alternating so that machine noise hits all alike, times whole
`tritonc` processes:

- cold: `compile FILE` into an empty cache directory (what a first compile costs);
- no cache: `compile FILE --no-cache`;
- incremental: one layer in the middle of the file gets a new statement, then
  `compile FILE --incremental` with the cache its previous compile left.

Prints medians and the ratio incremental / cold (target: <= 30%), and checks that every
incremental output equals a full compile of the same text byte for byte.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def zoo_file(models=40):
    examples = sorted(f for f in os.listdir(os.path.join(REPO, "examples")) if f.endswith(".tri"))
    parts = []
    for copy in range(models):
        name = examples[copy % len(examples)]
        with open(os.path.join(REPO, "examples", name)) as f:
            text = f.read()
        # drop `main { ... }` (a file has one main)
        m = re.search(r"^main \{.*?^\}\n", text, flags=re.S | re.M)
        if m:
            text = text[:m.start()] + text[m.end():]
        names = re.findall(r"^(?:layer|fn|let)\s+(\w+)", text, flags=re.M)
        for n in sorted(set(names), key=len, reverse=True):
            text = re.sub(r"\b%s\b" % re.escape(n), "%s_c%d" % (n, copy), text)
        parts.append("# ---- model %d: %s\n%s" % (copy, name, text))
    return "\n".join(parts)


def edit_point(text):
    """The offset after the opening line of a layer in the middle of the file."""
    starts = [m.end() for m in re.finditer(r"^layer .*?\{\n", text, flags=re.M | re.S)]
    return starts[len(starts) // 2]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tritonc", default=os.path.join(REPO, "build-release/tools/tritonc/tritonc"))
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--level", default="2")
    args = parser.parse_args()
    tritonc = os.path.abspath(args.tritonc)
    gen = os.path.join(os.path.dirname(tritonc), "..", "..", "bench", "tritonc_bench_gen")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRITONC_")}
    work = tempfile.mkdtemp(prefix="tritonc-incremental-")
    try:
        sources = {
            "generated": subprocess.run([gen, "2000"], capture_output=True, text=True,
                                        check=True).stdout,
            "zoo": zoo_file(),
        }
        level = "-O" + args.level
        print("| file | lines | declarations | cold ms | no-cache ms | incremental ms | "
              "incremental / cold | incremental / no-cache |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for label, text in sources.items():
            path = os.path.join(work, label + ".tri")
            out = os.path.join(work, label + ".py")
            ref = os.path.join(work, label + ".ref.py")
            cache = os.path.join(work, "cache-" + label)
            at = edit_point(text)

            def compile_(*flags, cache_dir=cache):
                start = time.perf_counter()
                subprocess.run([tritonc, "compile", path, level, "-o", out] + list(flags),
                               env=dict(env, TRITONC_CACHE_DIR=cache_dir), check=True)
                return (time.perf_counter() - start) * 1000

            def write(body):
                with open(path, "w") as f:
                    f.write(body)

            cold, nocache, incremental = [], [], []
            write(text)
            compile_("--incremental")  # the pieces the first edit starts from
            declarations = len(re.findall(r"^(?:layer|fn|let|main)\b", text, flags=re.M))
            for run in range(args.runs):
                edited = text[:at] + "    let edit_marker = %d\n" % run + text[at:]
                write(edited)
                incremental.append(compile_("--incremental"))
                shutil.copyfile(out, out + ".inc")
                nocache.append(compile_("--no-cache"))
                with open(out, "rb") as a, open(out + ".inc", "rb") as b:
                    assert a.read() == b.read(), "incremental output differs (run %d)" % run
                cold_dir = os.path.join(work, "cold-cache")
                shutil.rmtree(cold_dir, ignore_errors=True)
                cold.append(compile_(cache_dir=cold_dir))
            m = statistics.median
            print("| %s | %d | %d | %.2f | %.2f | %.2f | %.0f%% | %.0f%% |" % (
                label, text.count("\n"), declarations, m(cold), m(nocache), m(incremental),
                100 * m(incremental) / m(cold), 100 * m(incremental) / m(nocache)))
        print("(%s, %d runs each, medians of whole processes; incremental outputs identical to "
              "full compiles)" % (level, args.runs))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

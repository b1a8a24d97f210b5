#!/usr/bin/env python3
"""A GRU that collects its outputs with `outs = concat([outs, h], dim=1)` (the e2e test's
GRU_CONCAT), eval under no_grad, batch 32, one thread: -O0 (concatenates at every step,
quadratic in the steps) against -O2 (appends to a list, one torch.cat after the loop).

    PYTHONPATH=runtime /usr/bin/python3 bench/rnn_concat.py [--tritonc PATH]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "runtime"))
sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))

import torch  # noqa: E402

import test_generated as e2e  # noqa: E402
import tritonrt  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tritonc",
                        default=os.path.join(REPO, "build", "tools", "tritonc", "tritonc"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    work = tempfile.mkdtemp()
    source = os.path.join(work, "gru.tri")
    with open(source, "w") as f:
        f.write(e2e.GRU_CONCAT)
    models = {}
    for level in ("-O0", "-O2"):
        out = os.path.join(work, "gru%s.py" % level.replace("-", "_"))
        subprocess.run([args.tritonc, "compile", source, level, "-o", out, "--no-cache"],
                       check=True)
        models[level] = tritonrt.load(out).Model().eval()
    models["-O2"].load_state_dict(models["-O0"].state_dict())
    print("| steps | -O0 ms | -O2 ms | -O2/-O0 |")
    print("|---:|---:|---:|---:|")
    with torch.no_grad():
        for steps in (20, 100, 400):
            x = torch.randn(32, steps, 8)
            for model in models.values():  # warm-up
                model(x)
            times = {level: [] for level in models}
            for _ in range(7):  # interleaved rounds
                for level, model in models.items():
                    start = time.perf_counter()
                    model(x)
                    times[level].append((time.perf_counter() - start) * 1e3)
            a, b = (statistics.median(times[level]) for level in ("-O0", "-O2"))
            print("| %d | %.2f | %.2f | %.3f |" % (steps, a, b, b / a), flush=True)


if __name__ == "__main__":
    main()

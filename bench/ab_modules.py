#!/usr/bin/env python3
"""A/B of two generated modules of one model (say, compiled by an earlier and the current
tritonc): the same runtime and weights, eval mode under ``torch.no_grad()``, one thread, the
two timed alternately; prints the medians, their ratio and the outputs' largest difference.

    tritonc-old compile examples/resnet50.tri -O2 -o before.py
    build/tools/tritonc/tritonc compile examples/resnet50.tri -O2 -o after.py
    /usr/bin/python3 bench/ab_modules.py before.py after.py BATCH IMAGE_SIZE ROUNDS
"""
import importlib.util
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "runtime"))

import torch  # noqa: E402


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    old, new = sys.argv[1], sys.argv[2]
    batch, size, rounds = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    torch.set_num_threads(1)
    a, b = load(old, "before"), load(new, "after")
    ma, mb = getattr(a, a.ENTRY)(), getattr(b, b.ENTRY)()
    mb.load_state_dict(ma.state_dict())
    ma.eval()
    mb.eval()
    x = torch.randn(batch, 3, size, size)
    with torch.no_grad():
        diff = (ma(x) - mb(x)).abs().max().item()
        ta, tb = [], []
        for _ in range(rounds):
            for m, t in ((ma, ta), (mb, tb)):
                t0 = time.perf_counter()
                m(x)
                t.append(time.perf_counter() - t0)
    before, after = statistics.median(ta), statistics.median(tb)
    print("%s batch %d %dx%d: before %.1f ms, after %.1f ms, after/before %.3f (max diff %.1e)"
          % (b.ENTRY, batch, size, size, before * 1e3, after * 1e3, after / before, diff))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Per-call cost of tritonrt.weight on TernaryLinear weights of several sizes in inference
(eval, no_grad): a cache hit that checks the weight's values (the default), a hit that does
not (a packed-then-unpacked, "frozen" module), and quantizing at every call as a
hand-written module does. `/usr/bin/python3 bench/weight_cache_cost.py` (medians of 7 x 400
calls, one thread)."""
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "runtime"))
import tritonrt  # noqa: E402
from tritonrt import packing as P  # noqa: E402
from tritonrt.quant import ternary_quantize  # noqa: E402

torch.set_num_threads(1)


def per_call_us(f, n=400):
    for _ in range(50):
        f()
    rounds = []
    for _ in range(7):
        start = time.perf_counter()
        for _ in range(n):
            f()
        rounds.append((time.perf_counter() - start) / n * 1e6)
    return statistics.median(rounds)


print("| weight | values | hit, values checked | hit, frozen | quantized | checked/quantized |")
print("|---|---:|---:|---:|---:|---:|")
for (o, i) in [(16, 16), (96, 32), (64, 128), (128, 256), (400, 120), (256, 256), (256, 512),
               (512, 512), (512, 4608)]:
    m = tritonrt.TernaryLinear(i, o).eval()
    with torch.no_grad():
        hit = per_call_us(lambda: P.weight(m, "weight"))
        m._tritonrt_frozen = True
        frozen = per_call_us(lambda: P.weight(m, "weight"))
        del m._tritonrt_frozen
        q = per_call_us(lambda: ternary_quantize(m.weight, training=False))
    print(f"| {o}x{i} | {o * i:,} | {hit:.1f} us | {frozen:.1f} us | {q:.1f} us | "
          f"{hit / q:.2f} |")

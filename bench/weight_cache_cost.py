#!/usr/bin/env python3
"""Per-call cost of tritonrt.weight on TernaryLinear weights of several sizes, cached (stamp +
lookup) against quantized at every call: `/usr/bin/python3 bench/weight_cache_cost.py`."""
import sys, time, statistics, torch
sys.path.insert(0, __import__("os").path.join(__import__("os").path.dirname(__file__), "..", "runtime"))
import tritonrt
from tritonrt import packing as P
torch.set_num_threads(1)
def t(f, n=400):
    for _ in range(50): f()
    rs = []
    for _ in range(7):
        s = time.perf_counter()
        for _ in range(n): f()
        rs.append((time.perf_counter() - s) / n * 1e6)
    return statistics.median(rs)
for (o, i) in [(16, 16), (32, 32), (96, 32), (64, 128), (128, 128), (128, 256), (256, 256), (400, 120), (256, 512)]:
    m = tritonrt.TernaryLinear(i, o).eval()
    with torch.no_grad():
        P._UNCACHED_MIN, P._UNCACHED_MAX = 1, 0  # every weight cached
        hit = t(lambda: P.weight(m, "weight"))
        P._UNCACHED_MIN, P._UNCACHED_MAX = 0, 1 << 62  # every weight quantized at each call
        q = t(lambda: P.weight(m, "weight"))
    print(f"{o*i:7d} ({o}x{i}): cached hit {hit:6.1f} us, quantize {q:6.1f} us, hit/quantize {hit/q:.2f}")

#!/usr/bin/env python3
"""Benchmark of the ternary CUDA kernels (kernels/cuda) against torch fp16 matmul (cuBLAS).

    python3 bench/cuda/bench_ternary.py [--json FILE] [--shapes 4096x4096,...] [--batches 1,8,64]
                                        [--variants 0,1,2] [--layout NK|KN] [--hot] [--no-graph]
                                        [--defines ";TCK_MMA_ACC=4;..."] [--build-only --arch 90]

For each weight shape N x K (default 4096x4096, 4096x11008, 11008x4096) and batch M (default
1, 8, 64) it times y = x @ W^T with x, y fp16:
  - ternary_linear<__half, N, K, NK, None, None, V> for every variant V (the best is
    reported, all are kept in the JSON), packed 2-bit weight, scale;
  - torch.nn.functional.linear with the dequantized fp16 weight (cuBLAS).
Timing: the calls are captured in a CUDA graph (no launch gaps; --no-graph times eager
launches), replayed many times after a warm-up, each replay timed with CUDA events; the
median per call is reported. Unless --hot, every call uses another copy of the weight so that
the working set exceeds twice the L2 cache (the weight streams from device memory, as in a
real model). Effective bandwidth counts the packed weight bytes only (N * ceil(K/4)); peak =
2 * memory clock * bus width (cudaDeviceGetAttribute), else a table (H100, H200, A100, ...).
The ternary result is checked against the cuBLAS one (max relative error reported).

Two references bound what a kernel can reach, timed the same way (graph, same weight copies):
  - stream: a kernel that only reads the packed bytes (16-byte loads, the best of a few grid
    sizes) - the practical ceiling for reading that many bytes in one launch; "%stream" is
    its time / the ternary time;
  - empty: an empty kernel - the per-launch floor of the timing itself.

Skips cleanly (exit 0, a SKIP line) without torch, a CUDA device or nvcc.
"""

import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "cuda"))
import tck_harness as H  # noqa: E402

# Peak device-memory bandwidth (GB/s) by device-name fragment, when the attributes are missing.
PEAK_TABLE = (
    ("H200", 4800.0),
    ("H100 NVL", 3900.0),
    ("H100 PCIe", 2000.0),
    ("H100", 3350.0),  # SXM5
    ("GH200", 4000.0),
    ("A100-SXM4-80GB", 2039.0),
    ("A100 80GB PCIe", 1935.0),
    ("A100", 1555.0),
    ("L40S", 864.0),
    ("L4", 300.0),
    ("A10", 600.0),
    ("T4", 320.0),
    ("RTX 4090", 1008.0),
    ("RTX 3090", 936.0),
)

PEAK_SOURCE = r'''
extern "C" __attribute__((visibility("default"))) double tck_bench_peak_gbps(int dev) {
  int clock_khz = 0, bus_bits = 0;
  if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, dev) != cudaSuccess) return 0.0;
  if (cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, dev) != cudaSuccess) return 0.0;
  return 2.0 * clock_khz * 1e3 * (bus_bits / 8.0) / 1e9;
}

// The references of the benchmark's ceiling: reading n16 16-byte words (grid-stride, four
// loads in flight a thread), and an empty kernel. The XOR of what was read is stored only if
// it equals a value no input here gives, so the loads stay and nothing is written.
__global__ void tck_bench_stream_kernel(const uint4* __restrict__ p, long long n16,
                                        unsigned* out) {
  unsigned acc = 0;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n16; i += 4 * stride) {
    const uint4 a = __ldg(p + i), b = __ldg(p + i + stride), c = __ldg(p + i + 2 * stride),
                d = __ldg(p + i + 3 * stride);
    acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^
           d.z ^ d.w;
  }
  for (; i < n16; i += stride) {
    const uint4 a = __ldg(p + i);
    acc ^= a.x ^ a.y ^ a.z ^ a.w;
  }
  if (acc == 0x9e3779b9u) out[0] = acc;
}
__global__ void tck_bench_empty_kernel() {}

extern "C" __attribute__((visibility("default"))) int tck_bench_stream(
    const void* p, long long bytes, void* out, int blocks, int threads, void* stream) {
  tck_bench_stream_kernel<<<blocks, threads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const uint4*>(p), bytes / 16, static_cast<unsigned*>(out));
  return static_cast<int>(cudaGetLastError());
}
extern "C" __attribute__((visibility("default"))) int tck_bench_empty(void* stream) {
  tck_bench_empty_kernel<<<1, 32, 0, static_cast<cudaStream_t>(stream)>>>();
  return static_cast<int>(cudaGetLastError());
}
'''


def parse_shapes(text):
    out = []
    for item in text.split(","):
        n, k = item.lower().split("x")
        out.append((int(n), int(k)))
    return out


def peak_bandwidth(torch, lib):
    import ctypes
    name = torch.cuda.get_device_name()
    try:
        f = lib.lib.tck_bench_peak_gbps
        f.argtypes = [ctypes.c_int]
        f.restype = ctypes.c_double
        v = float(f(torch.cuda.current_device()))
        if v > 0:
            return v, "cudaDeviceGetAttribute (2 x memory clock x bus width)"
    except AttributeError:
        pass
    for frag, gbps in PEAK_TABLE:
        if frag in name:
            return gbps, "table (%s)" % frag
    return None, "unknown"


def reference_fns(lib):
    """(stream, empty) ctypes functions of the library's ceiling references, or (None, None)
    for a library built before they existed."""
    import ctypes
    try:
        s, e = lib.lib.tck_bench_stream, lib.lib.tck_bench_empty
    except AttributeError:
        return None, None
    s.argtypes = [ctypes.c_void_p, ctypes.c_longlong, ctypes.c_void_p, ctypes.c_int,
                  ctypes.c_int, ctypes.c_void_p]
    s.restype = ctypes.c_int
    e.argtypes = [ctypes.c_void_p]
    e.restype = ctypes.c_int
    return s, e


def stream_grids(sms, nbytes):
    """(blocks, threads) tried for the stream reference: 1-8 resident blocks of 256 threads an
    SM (grid-stride), and one 16-byte word a thread."""
    n16 = max(1, nbytes // 16)
    grids = [(sms * b, 256) for b in (1, 2, 4, 8)]
    grids.append((max(1, -(-n16 // 256)), 256))
    return list(dict.fromkeys(grids))


def time_calls(torch, calls, reps, warmup, use_graph):
    """Median and min milliseconds per call of ``calls`` (a list of zero-argument callables run
    in sequence, one "call" each), timed with CUDA events over ``reps`` repetitions."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(warmup):
            for c in calls:
                c()
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = None
    if use_graph:
        try:
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                for c in calls:
                    c()
            graph.replay()
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001 - fall back to eager launches
            print("  (graph capture failed: %s; timing eager launches)" % e)
            graph = None
            torch.cuda.synchronize()
    times = []
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    for _ in range(reps):
        start.record()
        if graph is not None:
            graph.replay()
        else:
            for c in calls:
                c()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / len(calls))
    return statistics.median(times), min(times), graph is not None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", default="4096x4096,4096x11008,11008x4096",
                    help="N x K weight shapes, comma separated")
    ap.add_argument("--batches", default="1,8,64")
    ap.add_argument("--variants", default="0,1,2")
    ap.add_argument("--layout", default="NK", choices=("NK", "KN"))
    ap.add_argument("--reps", type=int, default=50, help="timed repetitions (median)")
    ap.add_argument("--calls", type=int, default=20, help="calls per repetition")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--hot", action="store_true", help="reuse one weight (L2-resident)")
    ap.add_argument("--no-graph", action="store_true", help="time eager launches")
    ap.add_argument("--build-dir", help="keep (and reuse) the built library here")
    ap.add_argument("--jobs", type=int)
    ap.add_argument("--json", help="write the results to this JSON file")
    ap.add_argument("--build-only", action="store_true",
                    help="only build the library into --build-dir for --arch (no GPU needed)")
    ap.add_argument("--arch", help="SM architecture, e.g. 90 (default: the device's)")
    ap.add_argument("--defines", default="",
                    help="sets of the kernels' tuning knobs to compare, ';' between sets, "
                         "'NAME=VALUE ...' in a set, an empty set the defaults (e.g. "
                         "\";TCK_MMA_ACC=4\"): one library each, every set x variant timed")
    args = ap.parse_args(argv)
    shapes = parse_shapes(args.shapes)
    variants = [int(v) for v in args.variants.split(",")]
    dsets = [" ".join(d.split()) for d in args.defines.split(";")]
    specs = [H.LinearSpec("f16", n, k, args.layout, "None", "None", v)
             for n, k in shapes for v in variants]
    if args.build_only:
        for d in dsets:
            print(H.build(specs, args.arch or "90", args.build_dir, args.jobs,
                          extra_source=PEAK_SOURCE, defines=d))
        return 0

    try:
        import torch
        import torch.nn.functional as F
    except Exception as e:  # noqa: BLE001
        print("SKIP: torch is not importable (%s); nothing benchmarked" % e)
        return 0
    if not torch.cuda.is_available():
        print("SKIP: torch.cuda.is_available() is false (no CUDA device); nothing benchmarked")
        return 0
    if H.find_nvcc() is None:
        print("SKIP: nvcc not found (set NVCC); nothing benchmarked")
        return 0

    batches = [int(b) for b in args.batches.split(",")]
    arch = args.arch or "%d%d" % torch.cuda.get_device_capability()
    t0 = time.time()
    libs = {d: H.Library(H.build(specs, arch, args.build_dir, args.jobs,
                                 extra_source=PEAK_SOURCE, defines=d)) for d in dsets}
    lib = libs[dsets[0]]
    print("built %d kernels x %d define set(s) in %.1f s" % (len(specs), len(dsets),
                                                             time.time() - t0))
    # The configurations timed: (define set, variant), labelled "V" or "SET:V".
    confs = [(d, v, str(v) if not d else "%s:%d" % (d, v)) for d in dsets for v in variants]
    pack, unpack = H.packing()
    peak, peak_src = peak_bandwidth(torch, lib)
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    l2 = getattr(props, "L2_cache_size", 0) or 50 * 1024 * 1024
    dev = torch.device("cuda")
    print("device: %s, sm_%s, %d SMs, L2 %.0f MiB, peak memory bandwidth %s GB/s (%s)" % (
        torch.cuda.get_device_name(), arch, props.multi_processor_count, l2 / 2**20,
        "%.0f" % peak if peak else "?", peak_src))
    print("timing: %s, %s weights, median of %d x %d calls" % (
        "CUDA graph" if not args.no_graph else "eager", "hot" if args.hot else "rotating",
        args.reps, args.calls))

    def write_json():  # after every row: a run cut short by its time limit keeps what it timed
        if not args.json:
            return
        doc = {
            "device": torch.cuda.get_device_name(), "arch": "sm_%s" % arch,
            "peak_gbps": peak, "peak_source": peak_src, "l2_bytes": l2,
            "timing": {"graph": not args.no_graph, "hot": args.hot, "reps": args.reps,
                       "calls": args.calls, "statistic": "median"},
            "torch": torch.__version__, "define_sets": dsets, "results": rows,
        }
        tmp = args.json + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=2)
        os.replace(tmp, args.json)

    gen = torch.Generator(device="cpu")
    gen.manual_seed(0)
    rows = []
    stream_fn, empty_fn = reference_fns(lib)
    sink = torch.zeros(4, dtype=torch.int32, device=dev)
    empty_us = None
    if empty_fn is not None and empty_fn(torch.cuda.current_stream().cuda_stream) != 0:
        print("  the empty reference kernel did not launch; not timed")
        empty_fn = None
    if empty_fn is not None:
        ecalls = [lambda: empty_fn(torch.cuda.current_stream().cuda_stream)] * args.calls
        empty_us = time_calls(torch, ecalls, args.reps, args.warmup, not args.no_graph)[0] * 1e3
        print("empty kernel: %.2f us a call (the timing's floor)" % empty_us)
    hdr = ("%-11s %4s %3s %10s %10s %8s %9s %7s %9s %9s %8s" % (
        "N x K", "M", "var", "ternary_us", "cublas_us", "speedup", "GB/s", "%peak", "max_rel",
        "stream_us", "%stream"))
    print(hdr)
    print("-" * len(hdr))
    for n, k in shapes:
        q = (torch.randint(0, 3, (n, k), generator=gen) - 1).to(torch.int8)
        packed = pack(q if args.layout == "NK" else q.t().contiguous()).to(dev)
        scale = 0.02
        w16 = (q.to(torch.float32) * scale).to(torch.float16).to(dev)
        pbytes = packed.numel()
        ncopy_t = 1 if args.hot else min(64, max(1, -(-2 * l2 // pbytes) + 1))
        ncopy_c = 1 if args.hot else min(16, max(1, -(-2 * l2 // (w16.numel() * 2)) + 1))
        packs = [packed] + [packed.clone() for _ in range(ncopy_t - 1)]
        w16s = [w16] + [w16.clone() for _ in range(ncopy_c - 1)]
        # The ceiling: only reading the packed bytes, from the same copies (best grid).
        stream_us, stream_grid = None, None
        if stream_fn is not None and pbytes % 16 == 0:
            for blocks, threads in stream_grids(props.multi_processor_count, pbytes):
                if stream_fn(packs[0].data_ptr(), pbytes, sink.data_ptr(), blocks, threads,
                             torch.cuda.current_stream().cuda_stream) != 0:
                    print("  the read-only reference did not launch with %d x %d; skipped"
                          % (blocks, threads))
                    continue
                def make_s(wp, blocks=blocks, threads=threads):
                    return lambda: stream_fn(wp.data_ptr(), pbytes, sink.data_ptr(), blocks,
                                             threads, torch.cuda.current_stream().cuda_stream)
                scalls = [make_s(packs[i % len(packs)])
                          for i in range(max(args.calls, len(packs)))]
                us = time_calls(torch, scalls, args.reps, args.warmup, not args.no_graph)[0] * 1e3
                if stream_us is None or us < stream_us:
                    stream_us, stream_grid = us, [blocks, threads]
        for m in batches:
            x = (torch.randn(m, k, generator=gen) * 0.5).to(torch.float16).to(dev)
            y = torch.empty(m, n, dtype=torch.float16, device=dev)
            ref = F.linear(x, w16)
            per_variant = {}
            max_rel = None
            for dset, v, label in confs:
                spec = H.LinearSpec("f16", n, k, args.layout, "None", "None", v)
                fn = libs[dset].fn(spec)
                rc = H.call_linear(fn, x, packed, scale, None, None, None, y, m,
                                   torch.cuda.current_stream().cuda_stream)
                torch.cuda.synchronize()
                if rc != 0:
                    print("  %dx%d M=%d %s: launch returned %d" % (n, k, m, label, rc))
                    continue
                rel = float(((y.float() - ref.float()).abs().max()
                             / ref.float().abs().max().clamp_min(1e-6)))
                max_rel = rel if max_rel is None else max(max_rel, rel)

                def make(wp, fn=fn, x=x, y=y, m=m):
                    return lambda: H.call_linear(fn, x, wp, scale, None, None, None, y, m,
                                                 torch.cuda.current_stream().cuda_stream)
                calls = [make(packs[i % len(packs)]) for i in range(max(args.calls, len(packs)))]
                med, best, graphed = time_calls(torch, calls, args.reps, args.warmup,
                                                not args.no_graph)
                per_variant[label] = {"median_us": med * 1e3, "min_us": best * 1e3,
                                      "max_rel_err": rel}
            out16 = torch.empty(m, n, dtype=torch.float16, device=dev)

            def make_c(wt, x=x, out16=out16):
                return lambda: torch.matmul(x, wt.t(), out=out16)
            ccalls = [make_c(w16s[i % len(w16s)]) for i in range(max(args.calls, len(w16s)))]
            cmed, cbest, _ = time_calls(torch, ccalls, args.reps, args.warmup, not args.no_graph)
            if not per_variant:
                continue
            bv = min(per_variant, key=lambda v: per_variant[v]["median_us"])
            t_us = per_variant[bv]["median_us"]
            gbps = pbytes / (t_us * 1e-6) / 1e9
            row = {
                "n": n, "k": k, "m": m, "layout": args.layout, "best_variant": bv,
                "ternary_us": t_us, "ternary_min_us": per_variant[bv]["min_us"],
                "variants": dict(per_variant),
                "cublas_fp16_us": cmed * 1e3, "cublas_fp16_min_us": cbest * 1e3,
                "speedup": cmed * 1e3 / t_us, "packed_bytes": pbytes,
                "packed_gbps": gbps, "pct_peak": (100.0 * gbps / peak) if peak else None,
                "cublas_weight_gbps": n * k * 2 / (cmed * 1e-3) / 1e9,
                "max_rel_err_vs_cublas": max_rel,
                "stream_us": stream_us, "stream_grid": stream_grid,
                "pct_stream": (100.0 * stream_us / t_us) if stream_us else None,
                "empty_us": empty_us,
            }
            rows.append(row)
            print("%-11s %4d %3s %10.2f %10.2f %7.2fx %9.1f %6s%% %9.2e %9s %7s%%" % (
                "%dx%d" % (n, k), m, bv, t_us, cmed * 1e3, row["speedup"], gbps,
                "%.1f" % row["pct_peak"] if peak else "?", max_rel if max_rel is not None else 0,
                "%.2f" % stream_us if stream_us else "-",
                "%.1f" % row["pct_stream"] if stream_us else "-"))
            write_json()
    if args.json:
        write_json()
        print("wrote %s" % args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())

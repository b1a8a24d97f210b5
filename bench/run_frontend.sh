#!/usr/bin/env bash
# Builds tritonc_bench in Release (build-release/) and runs the front-end
# benchmarks: 5 repetitions per case, medians printed.
#
#   bench/run_frontend.sh [extra Google Benchmark flags...]
#
# e.g. bench/run_frontend.sh --benchmark_filter='BM_LexParse'
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${root}/build-release"

cmake -S "${root}" -B "${build}" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DTRITONC_BUILD_TESTS=OFF -DTRITONC_BUILD_BENCH=ON >/dev/null
cmake --build "${build}" --target tritonc_bench

json="$(mktemp "${TMPDIR:-/tmp}/tritonc_bench.XXXXXX.json")"
trap 'rm -f "${json}"' EXIT

"${build}/bench/tritonc_bench" \
  --benchmark_repetitions=5 \
  --benchmark_report_aggregates_only=true \
  --benchmark_out="${json}" --benchmark_out_format=json \
  "$@"

# The console table above has mean, median, stddev and cv; repeat the medians
# in one short table.
echo
echo "Medians over the repetitions:"
python3 - "${json}" <<'PY'
import json, sys
data = json.load(open(sys.argv[1]))
print(f"{'benchmark':<24} {'CPU time/iter':>13} {'lines/s':>14} {'MB/s':>10}")
for b in data["benchmarks"]:
    if b.get("aggregate_name") != "median":
        continue
    name = b["run_name"]
    unit = b.get("time_unit", "ns")
    lines = b.get("lines/s", 0.0)
    mbs = b.get("bytes_per_second", 0.0) / 1e6
    print(f"{name:<24} {b['cpu_time']:>10.3f} {unit:<2} {lines / 1e6:>11.2f} M/s {mbs:>10.1f}")
PY

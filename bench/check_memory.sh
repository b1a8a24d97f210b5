#!/usr/bin/env bash
# Peak memory and time of a whole `tritonc check` process on generated,
# well-typed models of growing size (memory should grow linearly).
#   bench/check_memory.sh [BUILD_DIR]   (default: build-release, built here)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-${root}/build-release}"
if [ "$#" -eq 0 ]; then
  cmake -S "${root}" -B "${build}" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DTRITONC_BUILD_TESTS=OFF -DTRITONC_BUILD_BENCH=ON >/dev/null
  cmake --build "${build}" --target tritonc tritonc_bench_gen >/dev/null
fi
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
printf '%10s %10s %12s %12s %14s\n' lines MiB "peak MiB" "ms (check)" "bytes/line"
for lines in 10000 100000 1000000; do
  "${build}/bench/tritonc_bench_gen" "${lines}" >"${work}/m.tri"
  size=$(stat -c %s "${work}/m.tri")
  /usr/bin/time -f '%M %e' -o "${work}/time" "${build}/tools/tritonc/tritonc" check \
    "${work}/m.tri"
  read -r kb seconds <"${work}/time"
  awk -v l="${lines}" -v s="${size}" -v kb="${kb}" -v t="${seconds}" 'BEGIN {
    printf "%10d %10.1f %12.1f %12.0f %14.0f\n", l, s / 1048576, kb / 1024, t * 1000, kb * 1024 / l }'
done

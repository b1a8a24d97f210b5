#!/usr/bin/env bash
# Builds the libFuzzer front-end target in build-fuzz/ (clang, ASan + UBSan,
# coverage-instrumented stage libraries) and fuzzes it for SECONDS (default 60).
#
#   tests/fuzz/run_fuzzer.sh [SECONDS]
#
# The corpus is seeded from every .tri file under examples/, tests/corpus/ and
# tests/golden/ plus tests/fuzz/regressions/*, in a temporary directory that is
# removed afterwards. Crash, timeout, OOM and leak inputs are copied to
# tests/fuzz/regressions/crash-<sha1> (replayed by the regular test suite) and
# the script exits 1. On success the last line reads
#   fuzzer: N runs, no crash
#
# Extra libFuzzer flags may be passed in FUZZ_FLAGS, e.g. FUZZ_FLAGS='-only_ascii=1'.
set -euo pipefail

seconds="${1:-60}"
if ! [[ "${seconds}" =~ ^[0-9]+$ ]] || [[ "${seconds}" -eq 0 ]]; then
  echo "usage: $0 [SECONDS]" >&2
  exit 2
fi

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${root}/build-fuzz"
fuzz_dir="${root}/tests/fuzz"
regressions="${fuzz_dir}/regressions"

# -fsanitize=fuzzer-no-link instruments the stage libraries for coverage;
# TRITONC_SANITIZE adds ASan + UBSan to every target (TritoncCompilerFlags.cmake).
cmake -S "${root}" -B "${build}" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_CXX_FLAGS=-fsanitize=fuzzer-no-link \
  -DTRITONC_FUZZ=ON -DTRITONC_SANITIZE=ON -DTRITONC_BUILD_BENCH=OFF >/dev/null
cmake --build "${build}" --target tritonc_fuzz_frontend

fuzzer="$(find "${build}" -type f -name tritonc_fuzz_frontend -perm -u+x | head -n 1)"
if [[ -z "${fuzzer}" ]]; then
  echo "run_fuzzer.sh: tritonc_fuzz_frontend was not built" >&2
  exit 2
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/tritonc-fuzz.XXXXXX")"
trap 'rm -rf "${work}"' EXIT
corpus="${work}/corpus"
artifacts="${work}/artifacts"
mkdir -p "${corpus}" "${artifacts}"

# Seed corpus, named by content hash so files with equal names do not collide.
seed() {
  local file="$1" sum
  sum="$(sha1sum "${file}" | cut -d' ' -f1)"
  cp "${file}" "${corpus}/seed-${sum}"
}
seeds=0
for dir in examples tests/corpus tests/golden; do
  [[ -d "${root}/${dir}" ]] || continue
  while IFS= read -r -d '' file; do
    seed "${file}"
    seeds=$((seeds + 1))
  done < <(find "${root}/${dir}" -type f -name '*.tri' -print0)
done
if [[ -d "${regressions}" ]]; then
  while IFS= read -r -d '' file; do
    seed "${file}"
    seeds=$((seeds + 1))
  done < <(find "${regressions}" -maxdepth 1 -type f ! -name 'README.md' -print0)
fi
echo "run_fuzzer.sh: ${seeds} seed inputs, fuzzing for ${seconds}s"

symbolizer="$(command -v llvm-symbolizer || command -v llvm-symbolizer-14 || true)"
if [[ -n "${symbolizer}" ]]; then
  export ASAN_SYMBOLIZER_PATH="${symbolizer}"
fi
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1:symbolize=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:symbolize=1}"

log="${work}/fuzz.log"
status=0
# shellcheck disable=SC2086  # FUZZ_FLAGS is a list of flags
"${fuzzer}" \
  -max_total_time="${seconds}" \
  -max_len=4096 \
  -timeout=10 \
  -rss_limit_mb=2048 \
  -dict="${fuzz_dir}/tri.dict" \
  -artifact_prefix="${artifacts}/" \
  -print_final_stats=1 \
  ${FUZZ_FLAGS:-} \
  "${corpus}" 2>&1 | tee "${log}" || status=$?  # pipefail: the fuzzer's status

runs="$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "${log}" | tail -n 1)"
if [[ -z "${runs}" ]]; then
  runs="$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "${log}" | tail -n 1)"
fi
runs="${runs:-0}"

found=0
mkdir -p "${regressions}"
for artifact in "${artifacts}"/*; do
  [[ -f "${artifact}" ]] || continue
  kind="$(basename "${artifact}")"
  kind="${kind%%-*}"
  case "${kind}" in
    crash | timeout | oom | leak) ;;
    *) continue ;;  # slow-unit-*: not a failure
  esac
  sum="$(sha1sum "${artifact}" | cut -d' ' -f1)"
  cp "${artifact}" "${regressions}/crash-${sum}"
  echo "run_fuzzer.sh: ${kind} input saved as tests/fuzz/regressions/crash-${sum}"
  found=$((found + 1))
done

if [[ "${found}" -gt 0 || "${status}" -ne 0 ]]; then
  echo "fuzzer: ${runs} runs, FAILED (exit status ${status}, ${found} artifact(s))"
  exit 1
fi
echo "fuzzer: ${runs} runs, no crash"

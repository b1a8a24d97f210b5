#!/usr/bin/env bash
# Builds tritonc and runs every test suite, then prints one line
# "N passed, N failed" (the sum over the suites) and exits non-zero on any
# failure. Suites: unit tests (GoogleTest via ctest), golden tests (dumps and
# diagnostics, IR and passes, with the diagnostic coverage check), robustness
# (150 mutants and 100,000-deep nesting through `check`, 300 mutants through
# the -O2 pipeline with IR verification), the fuzzer's regression corpus, the
# compile cache (tests/cache), the tritonrt runtime, the generated PyTorch modules
# (run with /usr/bin/python3), the CUDA target and the CUDA kernels (on the host and
# with nvcc; on a GPU where present).
#   TRITONC_FUZZ_SECONDS  also run libFuzzer for this long (CI sets it)
set -uo pipefail
cd "$(dirname "$0")/.."
build_dir="${TRITONC_BUILD_DIR:-build}"

bash scripts/setup.sh || { echo "0 passed, 1 failed"; exit 1; }
tritonc="$build_dir/tools/tritonc/tritonc"
log_dir="$(mktemp -d)"
# One fresh compile cache for the whole run (suites that test the cache itself
# use their own directories): hermetic, and later suites hit what earlier
# ones stored, as a user's repeated compiles would.
export TRITONC_CACHE_DIR="$log_dir/cache"
unset TRITONC_NO_CACHE TRITONC_CONFIG
total_pass=0
total_fail=0

# Adds the counts of one suite from its "N passed, N failed" line.
count() {
  local name=$1 log=$2 status=$3 line p f
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
  if [ -z "$line" ]; then
    echo "== $name: no result line (exit $status)"
    total_fail=$((total_fail + 1))
    return
  fi
  p=$(echo "$line" | sed -E 's/^([0-9]+) passed.*/\1/')
  f=$(echo "$line" | sed -E 's/.*passed, ([0-9]+) failed.*/\1/')
  if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  echo "== $name: $p passed, $f failed"
  total_pass=$((total_pass + p))
  total_fail=$((total_fail + f))
}

echo "== unit tests"
(cd "$build_dir" && ctest --output-on-failure -j "$(nproc)") >"$log_dir/unit.log" 2>&1
status=$?
tail -n 3 "$log_dir/unit.log"
# ctest: "100% tests passed, 0 tests failed out of 120"
ctest_line=$(grep -E 'tests passed, [0-9]+ tests failed out of' "$log_dir/unit.log" | tail -n 1)
if [ -n "$ctest_line" ]; then
  out_of=$(echo "$ctest_line" | sed -E 's/.*out of ([0-9]+).*/\1/')
  failed=$(echo "$ctest_line" | sed -E 's/.*passed, ([0-9]+) tests failed.*/\1/')
  echo "$((out_of - failed)) passed, $failed failed" >>"$log_dir/unit.log"
else
  grep -B5 -A30 -E 'FAILED|Error' "$log_dir/unit.log" | head -n 80
fi
count "unit tests" "$log_dir/unit.log" $status

echo "== golden tests"
python3 tests/golden/run_golden.py --tritonc "$tritonc" \
  --diag-def include/tritonc/diag/Diagnostics.def >"$log_dir/golden.log" 2>&1
status=$?
grep -E '^(FAIL|TIMEOUT|CRASH)' -A25 "$log_dir/golden.log" | head -n 120
count "golden tests" "$log_dir/golden.log" $status

echo "== robustness"
python3 tests/robustness/fuzz_mutations.py --tritonc "$tritonc" --corpus tests/golden \
  --corpus examples --count 150 --nested 100000 >"$log_dir/robust.log" 2>&1
status=$?
grep -E 'FAIL|reproduce' "$log_dir/robust.log" | head -n 40
count "robustness" "$log_dir/robust.log" $status

echo "== robustness through the optimizer"
python3 tests/robustness/fuzz_mutations.py --tritonc "$tritonc" --corpus tests/golden \
  --corpus examples --count 300 --seed 2 --nested 0 \
  --command "compile --stop-after=emit -O2 --verify-each" >"$log_dir/robust-opt.log" 2>&1
status=$?
grep -E 'FAIL|reproduce' "$log_dir/robust-opt.log" | head -n 40
count "robustness through the optimizer" "$log_dir/robust-opt.log" $status

echo "== fuzzer regressions"
python3 tests/robustness/fuzz_mutations.py --tritonc "$tritonc" --replay tests/fuzz/regressions \
  >"$log_dir/replay.log" 2>&1
status=$?
grep -E 'FAIL|reproduce' "$log_dir/replay.log" | head -n 40
count "fuzzer regressions" "$log_dir/replay.log" $status
python3 tests/robustness/fuzz_mutations.py --tritonc "$tritonc" --replay tests/fuzz/regressions \
  --command "compile --stop-after=emit -O3 --verify-each" >"$log_dir/replay-opt.log" 2>&1
status=$?
grep -E 'FAIL|reproduce' "$log_dir/replay-opt.log" | head -n 40
count "fuzzer regressions through the optimizer" "$log_dir/replay-opt.log" $status

echo "== compile cache"
/usr/bin/python3 tests/cache/test_cache.py --tritonc "$tritonc" >"$log_dir/cache.log" 2>&1
status=$?
grep -E '^FAIL' -A25 "$log_dir/cache.log" | head -n 80
count "compile cache" "$log_dir/cache.log" $status

echo "== timing reports"
/usr/bin/python3 tests/e2e/test_reports.py --tritonc "$tritonc" >"$log_dir/reports.log" 2>&1
status=$?
grep -E '^FAIL' -A25 "$log_dir/reports.log" | head -n 60
count "timing reports" "$log_dir/reports.log" $status

echo "== watch"
/usr/bin/python3 tests/e2e/test_watch.py --tritonc "$tritonc" >"$log_dir/watch.log" 2>&1
status=$?
grep -E '^FAIL' -A25 "$log_dir/watch.log" | head -n 60
count "watch" "$log_dir/watch.log" $status

echo "== runtime (tritonrt)"
PYTHONPATH=runtime /usr/bin/python3 tests/runtime/test_tritonrt.py >"$log_dir/runtime.log" 2>&1
status=$?
grep -E '^(FAIL|ERROR)' -A20 "$log_dir/runtime.log" | head -n 60
count "runtime" "$log_dir/runtime.log" $status

echo "== generated PyTorch modules (torch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)' 2>/dev/null))"
/usr/bin/python3 tests/e2e/test_generated.py --tritonc "$tritonc" >"$log_dir/e2e.log" 2>&1
status=$?
grep -E '^FAIL' -A25 "$log_dir/e2e.log" | head -n 80
count "generated modules" "$log_dir/e2e.log" $status

echo "== CUDA target (launchers, nvcc builds; no GPU needed)"
PYTHONPATH=runtime /usr/bin/python3 tests/e2e/test_cuda_target.py --tritonc "$tritonc" \
  >"$log_dir/cuda-target.log" 2>&1
status=$?
grep -E '^(FAIL|SKIP)' -A25 "$log_dir/cuda-target.log" | head -n 80
count "CUDA target" "$log_dir/cuda-target.log" $status

# The kernels themselves: index arithmetic on the host, nvcc instantiations, and (only
# where a GPU is present) results against the reference path.
for suite in tests/cuda/*.sh; do
  [ -e "$suite" ] || continue
  echo "== kernels: $(basename "$suite")"
  bash "$suite" >"$log_dir/kernels.log" 2>&1
  status=$?
  grep -E '^(FAIL|SKIP)' -A10 "$log_dir/kernels.log" | head -n 40
  count "kernels: $(basename "$suite")" "$log_dir/kernels.log" $status
done
if [ -e tests/cuda/test_kernels_gpu.py ]; then
  echo "== kernels on a GPU"
  PYTHONPATH=runtime /usr/bin/python3 tests/cuda/test_kernels_gpu.py >"$log_dir/gpu.log" 2>&1
  status=$?
  grep -E '^(FAIL|SKIP)' -A10 "$log_dir/gpu.log" | head -n 40
  count "kernels on a GPU" "$log_dir/gpu.log" $status
fi

if [ -n "${TRITONC_FUZZ_SECONDS:-}" ]; then
  echo "== libFuzzer (${TRITONC_FUZZ_SECONDS}s)"
  if bash tests/fuzz/run_fuzzer.sh "$TRITONC_FUZZ_SECONDS" >"$log_dir/fuzz.log" 2>&1; then
    tail -n 1 "$log_dir/fuzz.log"
    echo "1 passed, 0 failed" >>"$log_dir/fuzz.log"
    count "libFuzzer" "$log_dir/fuzz.log" 0
  else
    tail -n 40 "$log_dir/fuzz.log"
    echo "0 passed, 1 failed" >>"$log_dir/fuzz.log"
    count "libFuzzer" "$log_dir/fuzz.log" 1
  fi
fi

rm -rf "$log_dir"
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]

#!/usr/bin/env bash
# Builds tritonc and runs every test suite, then prints one line
# "N passed, N failed" (the sum over the suites) and exits non-zero on any
# failure. Suites: unit tests (GoogleTest via ctest), golden tests (dumps and
# diagnostics, IR and passes, with the diagnostic coverage check), robustness
# (150 mutants and 100,000-deep nesting through `check`, 300 mutants through
# the -O2 pipeline with IR verification), the fuzzer's regression corpus, the
# compile cache (tests/cache), the tritonrt runtime, the generated PyTorch modules
# (run with /usr/bin/python3), the CUDA target and the CUDA kernels (on the host and
# with nvcc; on a GPU where present). The CUDA suites run in a second lane beside the
# others (their emulated kernels keep one core busy for minutes) and report at the end.
#   TRITONC_FUZZ_SECONDS  also run libFuzzer for this long (CI sets it)
set -uo pipefail
cd "$(dirname "$0")/.."
build_dir="${TRITONC_BUILD_DIR:-build}"

bash scripts/setup.sh || { echo "0 passed, 1 failed"; exit 1; }
echo "== setup and build: $SECONDS s"
tritonc="$build_dir/tools/tritonc/tritonc"
log_dir="$(mktemp -d)"
# One thread per torch process: the two lanes below keep both cores busy, and torch's
# OpenMP threads spinning against the other lane doubled the generated modules' time.
export OMP_NUM_THREADS=1
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

# A suite is NAME, LOG (a file name in $log_dir), PATTERN (the lines worth showing
# when it fails), then the command. run_suite runs it and writes its exit status and
# seconds to LOG.status; report_suite shows what failed and adds its counts to the totals.
run_suite() {
  local log="$log_dir/$2" start=$SECONDS status
  shift 3
  "$@" >"$log" 2>&1
  status=$?
  echo "$status $((SECONDS - start))" >"$log.status"
}
report_suite() {
  local name=$1 log="$log_dir/$2" pattern=$3 status=1 seconds="?"
  if [ -f "$log.status" ]; then read -r status seconds <"$log.status"; fi
  status=${status:-1}  # (a lane killed while it wrote the file)
  touch "$log"
  grep -E "$pattern" -A25 "$log" | head -n 80
  count "$name" "$log" "$status"
  echo "   ($seconds s)"
}
suite() {
  echo "== $1"
  run_suite "$@"
  report_suite "$1" "$2" "$3"
}

# The CUDA suites (nvcc builds, and the kernels' device code emulated on the CPU, which
# runs on one core) run in a second lane beside the others, as two cores allow, and
# report after them. Each appends "NAME<tab>LOG<tab>PATTERN" to the lane's manifest.
cuda_manifest="$log_dir/cuda-lane.manifest"
lane_suite() {
  printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$cuda_manifest"
  run_suite "$@"
}
cuda_lane() {
  lane_suite "CUDA target (launchers, nvcc builds; no GPU needed)" cuda-target.log \
    '^(FAIL|SKIP)' \
    env PYTHONPATH=runtime /usr/bin/python3 tests/e2e/test_cuda_target.py --tritonc "$tritonc"
  # The kernels themselves: nvcc instantiations, the device code emulated on the CPU, and
  # (only where a GPU is present) results against the reference path. (Their index
  # arithmetic on the host, host_check.sh, runs in the first lane.)
  local script
  for script in tests/cuda/*.sh; do
    [ -e "$script" ] && [ "$script" != tests/cuda/host_check.sh ] || continue
    lane_suite "kernels: $(basename "$script")" "kernels-$(basename "$script" .sh).log" \
      '^(FAIL|SKIP)' bash "$script"
  done
  if [ -e tests/cuda/test_kernels_gpu.py ]; then
    lane_suite "kernels on a GPU" gpu.log '^(FAIL|SKIP)' \
      env PYTHONPATH=runtime /usr/bin/python3 tests/cuda/test_kernels_gpu.py
  fi
  if [ -e tests/cuda/test_models_gpu.py ]; then
    lane_suite "zoo models on a GPU" gpu-models.log '^(FAIL|SKIP)' \
      env PYTHONPATH=runtime /usr/bin/python3 tests/cuda/test_models_gpu.py --tritonc "$tritonc"
  fi
}
: >"$cuda_manifest"
# The lane in a process group of its own, so that an interrupted run (Ctrl-C, a CI
# timeout) stops it too rather than leave it compiling.
set -m
cuda_lane &
cuda_lane_pid=$!
set +m
trap 'kill -- -"$cuda_lane_pid" 2>/dev/null' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

suite "golden tests" golden.log '^(FAIL|TIMEOUT|CRASH)' \
  python3 tests/golden/run_golden.py --tritonc "$tritonc" \
  --diag-def include/tritonc/diag/Diagnostics.def
suite "robustness" robust.log 'FAIL|reproduce' \
  python3 tests/robustness/fuzz_mutations.py --tritonc "$tritonc" --corpus tests/golden \
  --corpus examples --count 150 --nested 100000
suite "robustness through the optimizer" robust-opt.log 'FAIL|reproduce' \
  python3 tests/robustness/fuzz_mutations.py --tritonc "$tritonc" --corpus tests/golden \
  --corpus examples --count 300 --seed 2 --nested 0 \
  --command "compile --stop-after=emit -O2 --verify-each"
suite "large programs" large.log '^FAIL' \
  python3 tests/robustness/large_programs.py --tritonc "$tritonc"
suite "fuzzer regressions" replay.log 'FAIL|reproduce' \
  python3 tests/robustness/fuzz_mutations.py --tritonc "$tritonc" --replay tests/fuzz/regressions
suite "fuzzer regressions through the optimizer" replay-opt.log 'FAIL|reproduce' \
  python3 tests/robustness/fuzz_mutations.py --tritonc "$tritonc" --replay tests/fuzz/regressions \
  --command "compile --stop-after=emit -O3 --verify-each"
suite "compile cache" cache.log '^FAIL' \
  /usr/bin/python3 tests/cache/test_cache.py --tritonc "$tritonc"
suite "timing reports" reports.log '^FAIL' \
  /usr/bin/python3 tests/e2e/test_reports.py --tritonc "$tritonc"
suite "output safety" output-safety.log '^FAIL' \
  /usr/bin/python3 tests/e2e/test_output_safety.py --tritonc "$tritonc"
suite "watch" watch.log '^FAIL' /usr/bin/python3 tests/e2e/test_watch.py --tritonc "$tritonc"
suite "imports" imports.log '^FAIL' /usr/bin/python3 tests/e2e/test_imports.py --tritonc "$tritonc"
suite "parallel compiles (-j)" parallel.log '^FAIL' \
  /usr/bin/python3 tests/e2e/test_parallel.py --tritonc "$tritonc"
suite "incremental compiles" incremental.log '^FAIL' \
  /usr/bin/python3 tests/e2e/test_incremental.py --tritonc "$tritonc"
suite "runtime (tritonrt)" runtime.log '^(FAIL|ERROR)' \
  env PYTHONPATH=runtime /usr/bin/python3 tests/runtime/test_tritonrt.py --tritonc "$tritonc"
torch_version=$(/usr/bin/python3 -c 'import torch; print(torch.__version__)' 2>/dev/null)
suite "generated modules (torch $torch_version)" e2e.log '^FAIL' \
  /usr/bin/python3 tests/e2e/test_generated.py --tritonc "$tritonc"
suite "differential semantics (random programs against a reference interpreter)" \
  differential.log '^FAIL' \
  /usr/bin/python3 tests/e2e/test_differential.py --tritonc "$tritonc" --programs 1000
suite "layer differential (random models, gradients and packing against a torch reference)" \
  layer-differential.log '^FAIL' \
  env PYTHONPATH=runtime /usr/bin/python3 tests/e2e/test_layer_differential.py \
  --tritonc "$tritonc" --programs 400
suite "kernels: host_check.sh" kernels-host_check.log '^(FAIL|SKIP)' bash tests/cuda/host_check.sh
if [ -n "${TRITONC_FUZZ_SECONDS:-}" ]; then
  echo "== libFuzzer (${TRITONC_FUZZ_SECONDS}s)"
  fuzz_start=$SECONDS
  if bash tests/fuzz/run_fuzzer.sh "$TRITONC_FUZZ_SECONDS" >"$log_dir/fuzz.log" 2>&1; then
    tail -n 1 "$log_dir/fuzz.log"
    echo "1 passed, 0 failed" >>"$log_dir/fuzz.log"
    count "libFuzzer" "$log_dir/fuzz.log" 0
  else
    tail -n 40 "$log_dir/fuzz.log"
    echo "0 passed, 1 failed" >>"$log_dir/fuzz.log"
    count "libFuzzer" "$log_dir/fuzz.log" 1
  fi
  echo "   ($((SECONDS - fuzz_start)) s, with the fuzzer's build)"
fi

echo "== waiting for the CUDA lane"
wait "$cuda_lane_pid"
lane_status=$?
trap - EXIT
if [ "$lane_status" -ne 0 ]; then
  # Each suite's own status is counted below; a lane that died between suites left
  # those after it out of the manifest.
  echo "== the CUDA lane exited with status $lane_status"
  total_fail=$((total_fail + 1))
fi
while IFS=$'\t' read -r name log pattern; do
  echo "== $name"
  report_suite "$name" "$log" "$pattern"
done <"$cuda_manifest"

rm -rf "$log_dir"
echo "== all suites: $SECONDS s"
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]

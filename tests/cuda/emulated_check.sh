#!/usr/bin/env bash
# The kernels' own device code on the CPU, without a GPU or nvcc (tests/cuda/emu):
#   1. the emulator's self-test: correct kernels compute the right values, and the faults it
#      claims to catch (threads at different barriers, a collective after a lane exited,
#      misaligned wmma, shared memory read before it is written, a missing barrier) are caught;
#   2. test_kernels_gpu.py --emulate: every element type, layout, variant, activation,
#      residual and convolution geometry against the reference path, with argument checks;
#   3. test_kernels_gpu.py --cpu-selftest: that test's reference and tolerances against a
#      model of the kernels' contract, and a perturbed model that must fail;
#   4. --emulate again as a GPU before sm_80 (TCK_EMU_CC_MAJOR=7): the launchers' other paths
#      (--pre-sm80: the 16-bit NK linears, the only cases whose launch differs there);
#   5. the tensor-core GEMV's linears (--mma-only) with tuning knobs the defaults leave off
#      (split-K over a thread-block cluster in every M bucket, the software pipeline), and
#      again where no cluster fits (TCK_EMU_NO_CLUSTERS=1: the launchers' fallback).
# Skips cleanly (exit 0) without clang++ or torch. Prints "N passed, N failed" last.
# clang++ (or $TCK_EMU_CXX), not g++: g++ ignores the section attribute that puts the
# kernels' __shared__ arrays in the emulator's poisoned section (tests/cuda/emu/cuda_runtime.h).
set -uo pipefail
cd "$(dirname "$0")/../.."
cxx="${TCK_EMU_CXX:-clang++}"
if ! command -v "$cxx" >/dev/null 2>&1; then
  echo "SKIP: no clang++; the emulated kernels were not run"
  echo "0 passed, 0 failed"
  exit 0
fi
out="$(mktemp -d "${TMPDIR:-/tmp}/tck_emu.XXXXXX")"
trap 'rm -rf "$out"' EXIT
pass=0
fail=0
add() {  # adds the counts of the last "N passed, N failed" line of $1 (exit status $2)
  local line p f
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$1" | tail -n 1)
  if [ -z "$line" ]; then
    echo "FAIL $3: no result line (exit $2)"
    fail=$((fail + 1))
    return
  fi
  p=${line%% passed*}
  f=${line#*passed, }
  f=${f%% failed*}
  if [ "$2" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  pass=$((pass + p))
  fail=$((fail + f))
}

if "$cxx" -std=c++17 -O1 -Wall -Wextra -Werror -Wno-unknown-pragmas -x c++ -I tests/cuda/emu \
    -include cuda_runtime.h tests/cuda/emu/emu_selftest.cpp -o "$out/emu_selftest" 2>"$out/build.log"; then
  "$out/emu_selftest" >"$out/self.log" 2>&1
  status=$?
  cat "$out/self.log"
  add "$out/self.log" $status "emulator self-test"
else
  cat "$out/build.log"
  echo "FAIL emu_selftest does not build"
  fail=$((fail + 1))
fi

# The third run is a GPU before sm_80 to the launchers (TCK_EMU_CC_MAJOR=7): 16-bit linears
# take the CUDA-core GEMV and the WMMA GEMM there, not the tensor-core GEMV.
for run in "--emulate" "--cpu-selftest" "--emulate --pre-sm80 TCK_EMU_CC_MAJOR=7"; do
  mode=${run%% *}
  flags=""
  extra=""
  case "$run" in
    *TCK_EMU_CC_MAJOR=7) flags="--pre-sm80"; extra="TCK_EMU_CC_MAJOR=7" ;;
  esac
  # shellcheck disable=SC2086
  env PYTHONPATH=runtime $extra /usr/bin/python3 tests/cuda/test_kernels_gpu.py "$mode" $flags \
    --build-dir "$out/build" >"$out/run.log" 2>&1
  status=$?
  grep -E '^(FAIL|SKIP|built|ran in|emulated)' "$out/run.log" | head -n 60
  tail -n 1 "$out/run.log"
  add "$out/run.log" $status "test_kernels_gpu.py $run"
done

knobs="TCK_MMA_SMALL_CS=2 TCK_MMA_EIGHT_CS=2 TCK_MMA_LARGE_CS=4 TCK_MMA_PIPE=1 TCK_MMA_PD=2"
for extra in "" "TCK_EMU_NO_CLUSTERS=1"; do
  env PYTHONPATH=runtime $extra /usr/bin/python3 tests/cuda/test_kernels_gpu.py --emulate \
    --mma-only --defines "$knobs" --build-dir "$out/build" >"$out/run.log" 2>&1
  status=$?
  grep -E '^(FAIL|SKIP|built|ran in)' "$out/run.log" | head -n 60
  tail -n 1 "$out/run.log"
  add "$out/run.log" $status "test_kernels_gpu.py --emulate --mma-only $extra ($knobs)"
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

#!/usr/bin/env bash
# Every check that needs a GPU, in one run: a lent GPU machine has minutes, not hours.
#
#   bash scripts/gpu_session.sh [OUTDIR]
#
# Needs a tritonc binary: $TRITONC, else build/tools/tritonc/tritonc, else .gpu/tritonc.
# `bash scripts/gpu_prepare.sh` builds, on a machine with nvcc and no GPU, the stripped static
# binary and every kernel library and model into .gpu/ (carry `.gpu` to the GPU machine), so
# that the GPU machine's minutes go to running, not to nvcc. Runs, each step with its own time
# limit and log in OUTDIR ($OUT, else /tmp/gpu-session):
#   at once, in parallel (the GPU steps use little of the GPU, the others none):
#     kernels        tests/cuda/test_kernels_gpu.py --quick: every kernel against the reference
#     kernels_knobs  the same with $KERNEL_DEFINES (scripts/gpu_defaults.sh; "" skips it)
#     models         tests/cuda/test_models_gpu.py: zoo models, kernels on the GPU vs the CPU
#     e2e1..e2e6     tests/e2e/test_generated.py under this machine's torch, in six parts,
#                    with the torch.compile(fullgraph=True) tests of torch 2 (-k torch_compile)
#     runtime1..2    tests/runtime/test_tritonrt.py under this machine's torch
#     differential, layer_differential   random programs and models, this machine's torch
#   then alone on the GPU:
#     bench          bench/cuda/bench_ternary.py: GEMV/GEMM against fp16 cuBLAS (JSON too),
#                    each tile variant with the kernels' default knobs and the sets of
#                    $BENCH_DEFINES (scripts/gpu_defaults.sh; "" for the defaults alone)
#     bench_hot      the same with an L2-resident weight (--hot)
#     ncu            bench/cuda/profile_gemv.sh: Nsight Compute's counters of the tensor-core
#                    GEMV (stall reasons, occupancy), unless GPU_NCU=0
# and prints each one's failures and last lines. Exit status: 1 if a test step failed.
set -u
cd "$(dirname "$0")/.."
out="${1:-${OUT:-/tmp/gpu-session}}"
mkdir -p "$out"
py="${PYTHON:-python3}"
pre="${GPU_PREBUILT:-.gpu}"
if [ -f "$pre/bundle.tar.xz" ]; then  # what gpu_prepare.sh built, compressed to travel
  "$py" -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
    "$pre/bundle.tar.xz" "$pre" || { echo "cannot unpack $pre/bundle.tar.xz"; exit 2; }
fi
tritonc="${TRITONC:-}"
for cand in build/tools/tritonc/tritonc "$pre/tritonc"; do
  if [ -z "$tritonc" ] && [ -x "$cand" ]; then tritonc="$cand"; fi
done
if [ -z "$tritonc" ]; then
  echo "no tritonc: set TRITONC or build it (bash scripts/setup.sh)"; exit 2
fi
tritonc="$(cd "$(dirname "$tritonc")" && pwd)/$(basename "$tritonc")"
jobs="$(nproc 2>/dev/null || echo 4)"
export PYTHONPATH="$PWD/runtime${PYTHONPATH:+:$PYTHONPATH}"
{ nvidia-smi; "$py" -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name())'
  "$tritonc" --version; } >"$out/device.txt" 2>&1
cat "$out/device.txt"
. scripts/gpu_defaults.sh  # gpu_models, bench_defines, kernel_defines
launch() {  # launch NAME SECONDS COMMAND...: runs in the background, exit status to NAME.rc
  local name=$1 limit=$2
  shift 2
  ( start=$SECONDS
    timeout "$limit" "$@" >"$out/$name.log" 2>&1
    echo "$? $((SECONDS - start))" >"$out/$name.rc" ) &
}
report() {  # report NAME: its failures and last lines; returns its exit status
  local name=$1 rc secs
  read -r rc secs <"$out/$name.rc"
  echo "== $name (exit $rc, $secs s)"
  grep -E '^(FAIL|SKIP|ERROR)' -A12 "$out/$name.log" | head -n 40
  tail -n 3 "$out/$name.log"
  return "$rc"
}
# A lent machine gives one command at most 600 s and a session 900 s, its start included.
launch kernels 200 "$py" tests/cuda/test_kernels_gpu.py --quick --jobs "$jobs" \
  --build-dir "$pre/kbuild"
if [ -n "$kernel_defines" ]; then
  launch kernels_knobs 200 "$py" tests/cuda/test_kernels_gpu.py --quick --jobs "$jobs" \
    --build-dir "$pre/kbuild" --defines "$kernel_defines"
fi
launch models 200 "$py" tests/cuda/test_models_gpu.py --tritonc "$tritonc" --jobs "$jobs" \
  --models "$gpu_models" --prebuilt "$pre/models" \
  --keep "$out/models-build"
if [ -z "${GPU_ONLY:-}" ]; then
  # The CPU suites, one torch thread each: the machine's cores are shared by twelve processes.
  # test_generated.py holds the torch.compile(fullgraph=True) tests (test_torch_compile_*).
  for i in 1 2 3 4 5 6; do
    launch "e2e$i" 200 env OMP_NUM_THREADS=1 "$py" tests/e2e/test_generated.py \
      --tritonc "$tritonc" --shard "$i/6"
  done
  for i in 1 2; do
    launch "runtime$i" 200 env OMP_NUM_THREADS=1 "$py" tests/runtime/test_tritonrt.py \
      --tritonc "$tritonc" --shard "$i/2"
  done
  launch differential 200 env OMP_NUM_THREADS=1 "$py" tests/e2e/test_differential.py \
    --tritonc "$tritonc" --programs 300
  launch layer_differential 200 env OMP_NUM_THREADS=1 "$py" \
    tests/e2e/test_layer_differential.py --tritonc "$tritonc" --programs 150
fi
wait
status=0
for name in kernels kernels_knobs models e2e1 e2e2 e2e3 e2e4 e2e5 e2e6 runtime1 runtime2 differential \
    layer_differential; do
  [ -f "$out/$name.rc" ] && { report "$name" || status=1; }
done
launch bench 150 "$py" bench/cuda/bench_ternary.py --json "$out/bench.json" \
  --build-dir "$pre/bbuild" --defines "$bench_defines"
wait
report bench || true
# The same with one weight (L2-resident): what the kernels cost without device memory.
# Variant 0 only: the define sets change variant 0's shape (and all variants' knobs).
launch bench_hot 150 "$py" bench/cuda/bench_ternary.py --hot --batches 1,4,8,16,64,128 \
  --variants 0 --json "$out/bench_hot.json" --build-dir "$pre/bbuild" --defines "$bench_defines"
wait
report bench_hot || true
# The define sets side by side (the whole table: summarize_sweep.py without --brief).
for j in bench bench_hot; do
  [ -f "$out/$j.json" ] && "$py" bench/cuda/summarize_sweep.py --brief "$out/$j.json"
done
# Why the GEMV waits: Nsight Compute's stall reasons and occupancy (GPU_NCU=0 skips it).
if [ "${GPU_NCU:-1}" != 0 ]; then
  launch ncu 200 bash bench/cuda/profile_gemv.sh "$out" "$pre/bbuild"
  wait
  report ncu || true
fi
# At most 8 files come back from a lent machine: the logs travel bundled.
rm -rf "$out/models-build"
(cd "$out" && tar czf logs.tgz ./*.log ./*.rc ./*.csv ./*.err 2>/dev/null
 rm -f ./*.log ./*.rc ./*.csv ./*.err)
exit $status

#!/usr/bin/env bash
# Nsight Compute's counters for the tensor-core GEMV, where a timing alone cannot say why a
# kernel waits (docs/performance.md, "Where the time goes"): speed of light, occupancy,
# launch statistics, warp stall reasons, scheduler and memory statistics of variant 0 with
# the default knobs, batches 1, 8 and 64, one L2-resident weight (--hot), eager launches.
#
#   bash bench/cuda/profile_gemv.sh OUTDIR [BUILD_DIR]
#
# Writes OUTDIR/ncu_<N>x<K>.csv (ncu --csv --page details) and .err per shape. Needs ncu
# (PATH, $NCU or the CUDA toolkit's) and counter access; exits 0 with a note without them.
set -u
cd "$(dirname "$0")/../.."
out="${1:?usage: profile_gemv.sh OUTDIR [BUILD_DIR]}"
bdir="${2:-.gpu/bbuild}"
py="${PYTHON:-python3}"
mkdir -p "$out"
ncu="${NCU:-$(command -v ncu || true)}"
for cand in /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu; do
  if [ -z "$ncu" ] && [ -x "$cand" ]; then ncu="$cand"; fi
done
if [ -z "$ncu" ]; then
  echo "SKIP: ncu not found (set NCU); no counters read"
  exit 0
fi
status=0
for shape in 4096x4096 4096x11008; do
  # The bench launches each batch twice (a check, then one timed call): 6 launches.
  timeout 90 "$ncu" --target-processes all -k regex:gemv_mma_kernel --launch-count 6 \
    --section SpeedOfLight --section LaunchStats --section Occupancy \
    --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
    --csv --page details \
    "$py" bench/cuda/bench_ternary.py --shapes "$shape" --batches 1,8,64 --variants 0 \
    --reps 1 --calls 1 --warmup 0 --no-graph --hot --build-dir "$bdir" \
    >"$out/ncu_$shape.csv" 2>"$out/ncu_$shape.err"
  rc=$?
  echo "ncu $shape: exit $rc, $(grep -c gemv_mma "$out/ncu_$shape.csv") counter rows"
  tail -n 3 "$out/ncu_$shape.err"
  [ "$rc" -eq 0 ] || status=1
done
exit $status

#!/usr/bin/env bash
# Every check that needs a GPU, in one run: a lent GPU machine has minutes, not hours.
#
#   bash scripts/gpu_session.sh [OUTDIR]
#
# Needs a tritonc binary: $TRITONC, else build/tools/tritonc/tritonc, else .gpu/tritonc (the
# binary is static: `strip -o .gpu/tritonc build/tools/tritonc/tritonc` here, 6 MB, and carry
# `.gpu` to the GPU machine). Runs, each with its own time limit, logging to OUTDIR ($OUT,
# else /tmp/gpu-session):
#   1. tests/cuda/test_kernels_gpu.py --quick   every kernel against the reference path
#   2. tests/cuda/test_models_gpu.py            zoo models: kernels on the GPU vs CPU
#   3. tests/e2e/test_generated.py -k torch_compile   torch.compile(fullgraph=True), torch 2
#   4. bench/cuda/bench_ternary.py              GEMV/GEMM against fp16 cuBLAS (JSON too)
# and prints each one's last lines. Exit status: 1 if a test step failed.
set -u
cd "$(dirname "$0")/.."
out="${1:-${OUT:-/tmp/gpu-session}}"
mkdir -p "$out"
tritonc="${TRITONC:-}"
for cand in build/tools/tritonc/tritonc .gpu/tritonc; do
  if [ -z "$tritonc" ] && [ -x "$cand" ]; then tritonc="$cand"; fi
done
if [ -z "$tritonc" ]; then
  echo "no tritonc: set TRITONC or build it (bash scripts/setup.sh)"; exit 2
fi
jobs="$(nproc 2>/dev/null || echo 4)"
py="${PYTHON:-python3}"
export PYTHONPATH="$PWD/runtime${PYTHONPATH:+:$PYTHONPATH}"
{ nvidia-smi; "$py" -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name())'
  "$tritonc" --version; } >"$out/device.txt" 2>&1
cat "$out/device.txt"
status=0
step() {  # step NAME SECONDS COMMAND...
  local name=$1 limit=$2 rc
  shift 2
  echo "== $name"
  local start=$SECONDS
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  rc=$?
  grep -E '^(FAIL|SKIP)' -A12 "$out/$name.log" | head -n 40
  tail -n 3 "$out/$name.log"
  echo "   ($name: exit $rc, $((SECONDS - start)) s)"
  return $rc
}
# A lent machine gives one command at most 600 s and a session 900 s, its start included:
# the steps together stay under 480 s.
step kernels 150 "$py" tests/cuda/test_kernels_gpu.py --quick --jobs "$jobs" \
  --build-dir "$out/kernels-build" || status=1
step models 150 "$py" tests/cuda/test_models_gpu.py --tritonc "$tritonc" --jobs "$jobs" \
  --models "${GPU_MODELS:-mnist_mlp,tutorial_cnn,resnet18,mobilenet_v2,transformer_block}" \
  --keep "$out/models-build" || status=1
step torch_compile 120 "$py" tests/e2e/test_generated.py --tritonc "$tritonc" \
  -k torch_compile || status=1
step bench 60 "$py" bench/cuda/bench_ternary.py --json "$out/bench.json" || true
rm -rf "$out/kernels-build" "$out/models-build"
exit $status

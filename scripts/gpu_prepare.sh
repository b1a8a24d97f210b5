#!/usr/bin/env bash
# Builds here, with this machine's nvcc and no GPU, everything scripts/gpu_session.sh would
# otherwise build on a lent GPU machine, whose minutes are scarce:
#
#   bash scripts/gpu_prepare.sh [ARCH]        # ARCH: the GPU's SM architecture, default 90
#
# into .gpu/bundle.tar.xz (ignored by git; carry it: `run` with carry [".gpu"]), holding:
#   .gpu/tritonc   the stripped static compiler
#   .gpu/kbuild    tests/cuda/test_kernels_gpu.py --quick's kernel library
#   .gpu/bbuild    bench/cuda/bench_ternary.py's kernel libraries (one per define set)
#   .gpu/models    tests/cuda/test_models_gpu.py's modules and <model>_kernels.so
# The kernel libraries are keyed by nvcc's version, the flags and the sources, and the models
# by their --cuda-arch: on a GPU machine with another nvcc or another architecture they are
# built there instead.
set -euo pipefail
cd "$(dirname "$0")/.."
arch="${1:-90}"
jobs="$(nproc 2>/dev/null || echo 2)"
py="${PYTHON:-/usr/bin/python3}"
. scripts/gpu_defaults.sh  # gpu_models, bench_defines, kernel_defines
export PYTHONPATH="$PWD/runtime${PYTHONPATH:+:$PYTHONPATH}"
mkdir -p .gpu
# The binary embeds kernels/cuda/*.cuh when it is built: build it now, or the models would
# carry the kernels of its last build.
cmake --build build --target tritonc
strip -o .gpu/tritonc build/tools/tritonc/tritonc
"$py" tests/cuda/test_kernels_gpu.py --build-only --quick --arch "$arch" --jobs "$jobs" \
  --build-dir .gpu/kbuild
if [ -n "$kernel_defines" ]; then
  "$py" tests/cuda/test_kernels_gpu.py --build-only --quick --arch "$arch" --jobs "$jobs" \
    --build-dir .gpu/kbuild --defines "$kernel_defines"
fi
"$py" bench/cuda/bench_ternary.py --build-only --arch "$arch" --jobs "$jobs" \
  --build-dir .gpu/bbuild --defines "$bench_defines"
"$py" tests/cuda/test_models_gpu.py --build-only --tritonc .gpu/tritonc --arch "$arch" \
  --jobs "$jobs" --keep .gpu/models --models "$gpu_models"
# Only the libraries travel: the objects and sources beside them are not needed.
rm -f .gpu/kbuild/*.o .gpu/kbuild/*.cu .gpu/bbuild/*.o .gpu/bbuild/*.cu
# A lent machine takes at most 64 MiB of carried files and a benchmark library is 3.5 MB a
# define set: everything travels as one xz archive (about 12x smaller), which
# gpu_session.sh unpacks where it finds it.
"$py" -c '
import os, tarfile
with tarfile.open(".gpu/bundle.tar.xz.tmp", "w:xz") as t:
    for name in ("tritonc", "kbuild", "bbuild", "models"):
        t.add(os.path.join(".gpu", name), arcname=name)
os.replace(".gpu/bundle.tar.xz.tmp", ".gpu/bundle.tar.xz")
'
rm -rf .gpu/tritonc .gpu/kbuild .gpu/bbuild .gpu/models
du -sh .gpu

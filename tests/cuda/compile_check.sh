#!/usr/bin/env bash
# Compile check of the ternary CUDA kernel templates (kernels/cuda).
#
#   bash tests/cuda/compile_check.sh        (NVCC=/path/to/nvcc to choose the compiler)
#
# 1. Writes a .cu that includes tritonc_kernels.cuh and instantiates, in extern "C" wrappers,
#    ternary_linear for all three element types x both layouts x variants 0..2 (18
#    combinations) with every (Act, Residual) pair (24 wrappers) over odd sizes (N = 1,
#    K = 3, K = 4097, ...), and ternary_conv2d for every element type x variant (3x3 stride 2,
#    depthwise, grouped + dilated, 1x1, 7x7 stem, channel multiplier 2); compiles it with
#    nvcc -shared -Xcompiler -fPIC for sm_80 and sm_90 into a .so and checks with nm -D that
#    every wrapper is exported; any nvcc output other than ptxas spill notes fails.
# 2. Concatenates kernels/cuda/*.cuh in file-name order (what the code generator embeds)
#    into one .cu with a wrapper and compiles it without include paths (sm_80 only).
# 3. Compiles the tensor-core GEMV with split-K over clusters and the software pipeline
#    (tuning knobs off by default) for sm_80 and sm_90.
# Skips cleanly (exit 0) when nvcc is absent. Prints "N passed, N failed" last.
set -u

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
kdir="$root/kernels/cuda"

nvcc="${NVCC:-}"
if [ -z "$nvcc" ]; then
  if command -v nvcc >/dev/null 2>&1; then
    nvcc="$(command -v nvcc)"
  elif [ -x /usr/local/cuda/bin/nvcc ]; then
    nvcc=/usr/local/cuda/bin/nvcc
  fi
fi
if [ -z "$nvcc" ] || [ ! -x "$nvcc" ]; then
  echo "SKIP: nvcc not found (set NVCC or install the CUDA toolkit); kernels not compiled"
  echo "0 passed, 0 failed"
  exit 0
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/tck_compile.XXXXXX")"
trap 'rm -rf "$work"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

dtypes=(float __half __nv_bfloat16)
dtags=(f32 f16 bf16)
acts=(None ReLU ReLU6 GELU SiLU Sigmoid Tanh Hardswish)
ress=(None BeforeAct AfterAct)
layouts=(NK KN)
# (N K) pairs: odd and tail sizes, one LLM-sized.
shapes=("1 3" "37 4097" "4096 4096" "13 64" "3 4" "67 130" "1 1" "129 31")
# conv: CIN COUT KH KW SH SW PH PW DH DW GROUPS
convs=("4 6 3 3 2 2 1 1 1 1 1"      # 3x3 stride 2
       "32 32 3 3 1 1 1 1 1 1 32"   # depthwise
       "8 12 3 3 1 1 2 2 2 2 4"     # grouped, dilated
       "64 128 1 1 1 1 0 0 1 1 1"   # 1x1
       "3 64 7 7 2 2 3 3 1 1 1"     # 7x7 stem (K = 147)
       "6 6 5 3 2 1 2 1 1 1 6"      # depthwise, rectangular, strided
       "5 10 3 3 1 1 0 0 1 1 5")    # channel multiplier 2 (grouped GEMM)

cu="$work/instances.cu"
syms=()
{
  echo '#include "tritonc_kernels.cuh"'
  echo '#define CC_EXPORT extern "C" __attribute__((visibility("default")))'
  for i in $(seq 0 23); do
    d=$((i % 3)); l=$(((i / 3) % 2)); v=$(((i / 6) % 3))
    a=$((i % 8)); r=$(((i / 8) % 3))
    read -r n k <<<"${shapes[$((i % ${#shapes[@]}))]}"
    t="${dtypes[$d]}"
    s="cc_linear_${dtags[$d]}_${layouts[$l]}_v${v}_${acts[$a]}_${ress[$r]}_n${n}_k${k}"
    syms+=("$s")
    cat <<EOF
CC_EXPORT int $s(const void* x, const void* w, float scale, const float* chs, const float* bias,
    const void* res, void* y, long long m, void* stream) {
  return tck::ternary_linear<$t, $n, $k, tck::Layout::${layouts[$l]}, tck::Act::${acts[$a]},
      tck::Residual::${ress[$r]}, $v>(static_cast<const $t*>(x), static_cast<const uint8_t*>(w),
      scale, chs, bias, static_cast<const $t*>(res), static_cast<$t*>(y), m,
      static_cast<cudaStream_t>(stream));
}
EOF
  done
  # Past 65535 blocks of 16 rows (the planner allows up to 65535 x 64 columns): the
  # tensor-core GEMV's gridDim.y limit must send it to the other paths, not fail to compile.
  for t in __half __nv_bfloat16; do
    s="cc_linear_${t#__}_NK_v0_wide_n1100000_k8"
    syms+=("$s")
    cat <<EOF
CC_EXPORT int $s(const void* x, const void* w, float scale, const float* chs, const float* bias,
    const void* res, void* y, long long m, void* stream) {
  return tck::ternary_linear<$t, 1100000, 8, tck::Layout::NK, tck::Act::None,
      tck::Residual::None, 0>(static_cast<const $t*>(x), static_cast<const uint8_t*>(w),
      scale, chs, bias, static_cast<const $t*>(res), static_cast<$t*>(y), m,
      static_cast<cudaStream_t>(stream));
}
EOF
  done
  for i in $(seq 0 11); do
    d=$((i % 3)); v=$(((i / 3) % 3))
    a=$(((i * 3) % 8)); r=$((i % 3))
    read -r ci co kh kw sh sw ph pw dh dw g <<<"${convs[$((i % ${#convs[@]}))]}"
    t="${dtypes[$d]}"
    s="cc_conv2d_${dtags[$d]}_v${v}_${acts[$a]}_${ress[$r]}_c${ci}_o${co}_k${kh}x${kw}_s${sh}_g${g}"
    syms+=("$s")
    cat <<EOF
CC_EXPORT int $s(const void* x, const void* w, float scale, const float* chs, const float* bias,
    const void* res, void* y, long long batch, long long h, long long w_, void* stream) {
  return tck::ternary_conv2d<$t, $ci, $co, $kh, $kw, $sh, $sw, $ph, $pw, $dh, $dw, $g,
      tck::Act::${acts[$a]}, tck::Residual::${ress[$r]}, $v>(static_cast<const $t*>(x),
      static_cast<const uint8_t*>(w), scale, chs, bias, static_cast<const $t*>(res),
      static_cast<$t*>(y), batch, h, w_, static_cast<cudaStream_t>(stream));
}
EOF
  done
} >"$cu"

so="$work/libtck_instances.so"
echo "nvcc: $nvcc ($("$nvcc" --version | tail -1))"
echo "compiling ${#syms[@]} wrappers for sm_80 + sm_90 ..."
start=$(date +%s.%N)
if "$nvcc" -O3 -std=c++17 -shared -Xcompiler -fPIC --threads 2 \
    -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 -Xptxas -warn-spills \
    -I "$kdir" -o "$so" "$cu" >"$work/nvcc.log" 2>&1; then
  ok
else
  bad "nvcc failed on $cu:"
  sed -n 1,60p "$work/nvcc.log"
fi
end=$(date +%s.%N)
echo "nvcc time: $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }') s"
# ptxas' register-spill notes are information (its occupancy heuristics may trade a few
# bytes of spills outside the main loops); any other output is a failure.
spills="$(grep -c "Registers are spilled" "$work/nvcc.log" || true)"
echo "ptxas: $spills kernel/arch pair(s) with register spills$(grep -o '[0-9]* bytes spill stores' "$work/nvcc.log" | sort -n | tail -1 | sed 's/^/, largest /')"
grep -v "Registers are spilled" "$work/nvcc.log" >"$work/nvcc.other" || true
if [ -s "$work/nvcc.other" ] && [ "$fail" -eq 0 ]; then
  echo "nvcc printed:"
  sed -n 1,30p "$work/nvcc.other"
  bad "nvcc printed warnings"
fi

if [ -f "$so" ]; then
  exported="$(nm -D --defined-only "$so" 2>/dev/null | awk '{print $NF}')"
  for s in "${syms[@]}"; do
    if grep -qx "$s" <<<"$exported"; then ok; else bad "symbol $s not exported by the .so"; fi
  done
else
  for s in "${syms[@]}"; do bad "symbol $s: no .so"; done
fi

# The concatenation of the headers in file-name order compiles on its own.
amal="$work/amalgamated.cu"
{
  for f in "$kdir"/*.cuh; do cat "$f"; echo; done
  cat <<'EOF'
extern "C" int amal_linear(const void* x, const void* w, float s, void* y, long long m, void* st) {
  return tck::ternary_linear<__half, 100, 70, tck::Layout::KN, tck::Act::SiLU, tck::Residual::None>(
      static_cast<const __half*>(x), static_cast<const uint8_t*>(w), s, nullptr, nullptr, nullptr,
      static_cast<__half*>(y), m, static_cast<cudaStream_t>(st));
}
EOF
} >"$amal"
if (cd "$work" && "$nvcc" -O3 -std=c++17 -c -Xcompiler -fPIC -gencode arch=compute_80,code=sm_80 \
    -o amalgamated.o amalgamated.cu >"$work/amal.log" 2>&1) && [ ! -s "$work/amal.log" ]; then
  ok
else
  bad "the concatenated headers do not compile cleanly on their own:"
  sed -n 1,30p "$work/amal.log"
fi

# The tuning knobs that change the device code the most compile with nvcc too (the defaults
# above do not instantiate them): split-K over thread-block clusters in every M bucket and
# the software pipeline, for sm_80 (no clusters: the launcher takes the kernel without
# them) and sm_90. tests/cuda/emulated_check.sh runs the same knobs.
knobs="$work/knobs.cu"
{
  echo '#include "tritonc_kernels.cuh"'
  for t in __half __nv_bfloat16; do
    for nk in "4096 4096" "37 4097"; do
      read -r n k <<<"$nk"
      cat <<EOF
extern "C" int knobs_${t#__}_n${n}_k${k}(const void* x, const void* w, float s, const float* b,
    const void* r, void* y, long long m, void* st) {
  return tck::ternary_linear<$t, $n, $k, tck::Layout::NK, tck::Act::GELU,
      tck::Residual::AfterAct, 0>(static_cast<const $t*>(x), static_cast<const uint8_t*>(w), s,
      nullptr, b, static_cast<const $t*>(r), static_cast<$t*>(y), m,
      static_cast<cudaStream_t>(st));
}
EOF
    done
  done
} >"$knobs"
if (cd "$work" && "$nvcc" -O3 -std=c++17 -c -Xcompiler -fPIC --threads 2 \
    -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
    -DTCK_MMA_SMALL_CS=2 -DTCK_MMA_EIGHT_CS=4 -DTCK_MMA_LARGE_CS=4 -DTCK_MMA_PIPE=1 \
    -DTCK_MMA_PD=2 -I "$kdir" -o knobs.o knobs.cu >"$work/knobs.log" 2>&1) &&
    [ ! -s "$work/knobs.log" ]; then
  ok
else
  bad "the kernels with split-K and the pipeline (TCK_MMA_*_CS, TCK_MMA_PIPE) do not compile cleanly:"
  sed -n 1,30p "$work/knobs.log"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

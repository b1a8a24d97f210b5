//===- tck_launch.cuh - the public API: ternary_linear, ternary_conv2d -*- C++ -*-===//
//
// Host-side entry points. They validate the arguments, pick the path and launch on the
// given stream; they never synchronize. Return 0 or the cudaError_t value (as int).
//
//   ternary_linear:  M <= 8 -> GEMV (tck_gemv.cuh) with an M bucket of 1, 2, 4 or 8: on
//                    tensor cores (mma.m16n8k16) for half/bf16 and the NK layout on an sm_80+
//                    device, else on CUDA cores;
//                    8 < M <= 256, half/bf16, NK, sm_80+ -> the tensor-core GEMV per 16 rows
//                    of x (TCK_MMA_MB_LARGE),
//                    M  > 8 otherwise -> tiled GEMM (tck_gemm.cuh; tensor cores for half/bf16).
//   ternary_conv2d:  GROUPS == CIN == COUT -> depthwise kernel (tck_dwconv.cuh),
//                    otherwise implicit GEMM per group (tck_gemm.cuh).
//
// Requirements (checked): x, w, y non-null; residual non-null when R != None; w 16-byte
// aligned (any allocation from cudaMalloc / torch is), else cudaErrorMisalignedAddress;
// M, batch >= 0 (0 launches nothing); H, W >= 1 and the kernel fits the padded input.
// The residual may alias y (every element is read before it is written, by one thread).
//
//===----------------------------------------------------------------------===//
#ifndef TCK_LAUNCH_CUH
#define TCK_LAUNCH_CUH

#ifndef TCK_DWCONV_CUH
#include "tck_dwconv.cuh"
#endif
#ifndef TCK_GEMM_CUH
#include "tck_gemm.cuh"
#endif
#ifndef TCK_GEMV_CUH
#include "tck_gemv.cuh"
#endif

namespace tck {

// y[m, n] = epilogue(scale * sum_k x[m, k] * q[n, k]);
// epilogue: v = v * (chscale ? chscale[n] : 1) + (bias ? bias[n] : 0);
//           if Residual::BeforeAct v += residual[m, n]; v = act(v);
//           if Residual::AfterAct v += residual[m, n]
template <typename T, int N, int K, Layout L, Act A, Residual R, int VARIANT = 0>
int ternary_linear(const T* x, const uint8_t* w, float scale, const float* chscale,
                   const float* bias, const T* residual, T* y, long long M, cudaStream_t stream) {
  static_assert(detail::IsElem<T>::value, "T is float, __half or __nv_bfloat16");
  static_assert(N >= 1 && K >= 1, "positive sizes");
  static_assert(VARIANT >= 0 && VARIANT <= 2, "variants 0, 1, 2");
  if (M == 0) return 0;
  if (M < 0 || x == nullptr || w == nullptr || y == nullptr) return static_cast<int>(cudaErrorInvalidValue);
  if (R != Residual::None && residual == nullptr) return static_cast<int>(cudaErrorInvalidValue);
  if (reinterpret_cast<uintptr_t>(w) % 16 != 0) return static_cast<int>(cudaErrorMisalignedAddress);

  Args<T> a;
  a.x = x;
  a.w = w;
  a.scale = scale;
  a.chscale = chscale;
  a.bias = bias;
  a.residual = residual;
  a.y = y;
  a.M = M;
  a.batch = M;
  a.H = a.W = a.OH = a.OW = 1;
  a.x_vec16 = reinterpret_cast<uintptr_t>(x) % 16 == 0;

  if (M <= kGemvMaxM) {
    switch (gemv_bucket(M)) {
      case 1: return detail::launch_gemv<T, N, K, L, A, R, VARIANT, 1>(a, stream);
      case 2: return detail::launch_gemv<T, N, K, L, A, R, VARIANT, 2>(a, stream);
      case 4: return detail::launch_gemv<T, N, K, L, A, R, VARIANT, 4>(a, stream);
      default: return detail::launch_gemv<T, N, K, L, A, R, VARIANT, 8>(a, stream);
    }
  }
  constexpr int MB = detail::kMmaLargeMB;
  if constexpr (detail::gemv_mma_takes<T, N, L, VARIANT, MB>()) {
    // Up to kMmaGemvMaxM rows, the tensor-core GEMV in groups of MB (16) rows beats the
    // tiled GEMM, whose shared-memory decode and few blocks (N / 64) starve a large GPU.
    if (M <= kMmaGemvMaxM && detail::device_has_mma16816())
      return detail::launch_gemv_mma<T, N, K, A, R, VARIANT, MB>(a, stream);
  }
  return detail::launch_gemm<T, LinearProblem<N, K, L>, A, R, VARIANT>(a, stream);
}

// NCHW conv2d with the ternary weight [COUT, CIN/GROUPS, KH, KW] (NK-packed: COUT rows of
// CIN/GROUPS*KH*KW in (c, kh, kw) order), the same epilogue per output channel; residual is
// NCHW like y. y has shape [batch, COUT, OH, OW], OH = (H + 2*PH - DH*(KH-1) - 1) / SH + 1.
template <typename T, int CIN, int COUT, int KH, int KW, int SH, int SW, int PH, int PW, int DH,
          int DW, int GROUPS, Act A, Residual R, int VARIANT = 0>
int ternary_conv2d(const T* x, const uint8_t* w, float scale, const float* chscale,
                   const float* bias, const T* residual, T* y, long long batch, long long H,
                   long long W, cudaStream_t stream) {
  static_assert(detail::IsElem<T>::value, "T is float, __half or __nv_bfloat16");
  static_assert(VARIANT >= 0 && VARIANT <= 2, "variants 0, 1, 2");
  using G = ConvGeom<CIN, COUT, KH, KW, SH, SW, PH, PW, DH, DW, GROUPS>;
  if (batch == 0) return 0;
  if (batch < 0 || H < 1 || W < 1 || H > 0x7fffffffLL || W > 0x7fffffffLL)
    return static_cast<int>(cudaErrorInvalidValue);
  if (x == nullptr || w == nullptr || y == nullptr) return static_cast<int>(cudaErrorInvalidValue);
  if (R != Residual::None && residual == nullptr) return static_cast<int>(cudaErrorInvalidValue);
  if (reinterpret_cast<uintptr_t>(w) % 16 != 0) return static_cast<int>(cudaErrorMisalignedAddress);
  const long long OH = conv_out_dim(H, KH, SH, PH, DH);
  const long long OW = conv_out_dim(W, KW, SW, PW, DW);
  if (OH < 1 || OW < 1 || OH * OW > 0x7fffffffLL) return static_cast<int>(cudaErrorInvalidValue);

  Args<T> a;
  a.x = x;
  a.w = w;
  a.scale = scale;
  a.chscale = chscale;
  a.bias = bias;
  a.residual = residual;
  a.y = y;
  a.M = batch * OH * OW;
  a.batch = batch;
  a.H = static_cast<int>(H);
  a.W = static_cast<int>(W);
  a.OH = static_cast<int>(OH);
  a.OW = static_cast<int>(OW);
  a.x_vec16 = false;

  if constexpr (G::DEPTHWISE) {
    return detail::launch_dwconv<T, G, A, R, VARIANT>(a, stream);
  } else {
    return detail::launch_gemm<T, ConvProblem<G>, A, R, VARIANT>(a, stream);
  }
}

}  // namespace tck

#endif  // TCK_LAUNCH_CUH

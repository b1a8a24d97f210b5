//===- tritonc_kernels.cuh - ternary CUDA kernels, umbrella header -*- C++ -*-===//
//
// Included by a generated <model>_kernels.cu. Under nvcc it provides (namespace tck):
//
//   template <typename T, int N, int K, Layout L, Act A, Residual R, int VARIANT = 0>
//   int ternary_linear(const T* x, const uint8_t* w, float scale, const float* chscale,
//                      const float* bias, const T* residual, T* y, long long M,
//                      cudaStream_t stream);
//   template <typename T, int CIN, int COUT, int KH, int KW, int SH, int SW, int PH, int PW,
//             int DH, int DW, int GROUPS, Act A, Residual R, int VARIANT = 0>
//   int ternary_conv2d(const T* x, const uint8_t* w, float scale, const float* chscale,
//                      const float* bias, const T* residual, T* y, long long batch,
//                      long long H, long long W, cudaStream_t stream);
//
// With a plain host compiler only the host-checkable helpers of tck_common.cuh are
// available. See README.md in this directory.
//
// Embedding: every header guards its includes of the others with the others' include
// guards, and the file names sort in dependency order (tck_common, tck_device, tck_dwconv,
// tck_gemm, tck_gemv, tck_launch, tritonc_kernels), so the concatenation of the *.cuh files
// in name order is a self-contained source.
//
//===----------------------------------------------------------------------===//
#ifndef TRITONC_KERNELS_CUH
#define TRITONC_KERNELS_CUH

#ifndef TCK_COMMON_CUH
#include "tck_common.cuh"
#endif

#ifdef __CUDACC__
#ifndef TCK_LAUNCH_CUH
#include "tck_launch.cuh"
#endif
#endif

#endif  // TRITONC_KERNELS_CUH

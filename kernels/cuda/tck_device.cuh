//===- tck_device.cuh - device-side utilities (nvcc only) -------*- C++ -*-===//
//
// Element-type conversions (float / __half / __nv_bfloat16, accumulation in float), warp
// reductions and the epilogue store (the argument block Args is in tck_common.cuh).
//
//===----------------------------------------------------------------------===//
#ifndef TCK_DEVICE_CUH
#define TCK_DEVICE_CUH

#ifndef TCK_COMMON_CUH
#include "tck_common.cuh"
#endif

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include <type_traits>

// kernel<<<grid, block, 0, stream>>>, where `kernel` is a pointer to a __global__ function
// (a name without commas, so that it passes through a macro): tests/cuda/emu, which runs the
// kernels' own code on the CPU, defines it to its launcher.
#ifndef TCK_LAUNCH
#define TCK_LAUNCH(kernel, grid, block, stream) kernel<<<grid, block, 0, stream>>>
#endif

namespace tck {
namespace detail {

template <typename T>
struct IsElem
    : std::integral_constant<bool, std::is_same<T, float>::value || std::is_same<T, __half>::value ||
                                       std::is_same<T, __nv_bfloat16>::value> {};

template <typename T>
__device__ TCK_INLINE float to_f(T v);
template <>
__device__ TCK_INLINE float to_f<float>(float v) {
  return v;
}
template <>
__device__ TCK_INLINE float to_f<__half>(__half v) {
  return __half2float(v);
}
template <>
__device__ TCK_INLINE float to_f<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

template <typename T>
__device__ TCK_INLINE T from_f(float v);
template <>
__device__ TCK_INLINE float from_f<float>(float v) {
  return v;
}
template <>
__device__ TCK_INLINE __half from_f<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ TCK_INLINE __nv_bfloat16 from_f<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

/// x[i] through the read-only path, as float.
template <typename T>
__device__ TCK_INLINE float ldg_f(const T* p) {
  return to_f<T>(__ldg(p));
}

/// Two floats -> the 32-bit pair of 16-bit elements (lo = a); exact for trits.
template <typename T>
__device__ TCK_INLINE uint32_t pack2(float a, float b);
template <>
__device__ TCK_INLINE uint32_t pack2<__half>(float a, float b) {
  __half2 h = __floats2half2_rn(a, b);
  return *reinterpret_cast<uint32_t*>(&h);
}
template <>
__device__ TCK_INLINE uint32_t pack2<__nv_bfloat16>(float a, float b) {
  __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
  return *reinterpret_cast<uint32_t*>(&h);
}

__device__ TCK_INLINE float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

/// The epilogue of output feature/channel n, written at y[off] (residual read at off).
template <typename T, Act A, Residual R>
__device__ TCK_INLINE void store_out(const Args<T>& a, long long off, int n, float acc) {
  const float chs = a.chscale != nullptr ? __ldg(a.chscale + n) : 1.f;
  const float bs = a.bias != nullptr ? __ldg(a.bias + n) : 0.f;
  float res = 0.f;
  if constexpr (R != Residual::None) res = ldg_f<T>(a.residual + off);
  a.y[off] = from_f<T>(epilogue<A, R>(acc, a.scale, chs, bs, res));
}

}  // namespace detail
}  // namespace tck

#endif  // TCK_DEVICE_CUH

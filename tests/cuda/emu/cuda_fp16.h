//===- cuda_fp16.h - __half for the CPU emulation (see cuda_runtime.h) -*- C++ -*-===//
//
// Only what kernels/cuda uses: storage, round-to-nearest-even conversions (GCC's _Float16,
// IEEE binary16) and the pair type.
//
//===----------------------------------------------------------------------===//
#ifndef TCK_EMU_CUDA_FP16_H
#define TCK_EMU_CUDA_FP16_H

#include <stdint.h>
#include <string.h>

struct alignas(2) __half {
  uint16_t bits;
};
struct alignas(4) __half2 {
  __half x, y;
};

inline __half __float2half_rn(float f) {
  _Float16 h = static_cast<_Float16>(f);
  __half r;
  memcpy(&r.bits, &h, 2);
  return r;
}
inline float __half2float(__half h) {
  _Float16 v;
  memcpy(&v, &h.bits, 2);
  return static_cast<float>(v);
}
inline __half2 __floats2half2_rn(float a, float b) { return __half2{__float2half_rn(a), __float2half_rn(b)}; }

#endif  // TCK_EMU_CUDA_FP16_H

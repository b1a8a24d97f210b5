//===- cuda_bf16.h - __nv_bfloat16 for the CPU emulation (see cuda_runtime.h) -*- C++ -*-===//
//
// Storage, round-to-nearest-even conversion (a NaN stays a quiet NaN) and the pair type.
//
//===----------------------------------------------------------------------===//
#ifndef TCK_EMU_CUDA_BF16_H
#define TCK_EMU_CUDA_BF16_H

#include <stdint.h>
#include <string.h>

struct alignas(2) __nv_bfloat16 {
  uint16_t bits;
};
struct alignas(4) __nv_bfloat162 {
  __nv_bfloat16 x, y;
};

inline __nv_bfloat16 __float2bfloat16_rn(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  __nv_bfloat16 r;
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    r.bits = static_cast<uint16_t>((u >> 16) | 0x40u);
  } else {
    u += 0x7fffu + ((u >> 16) & 1u);
    r.bits = static_cast<uint16_t>(u >> 16);
  }
  return r;
}
inline float __bfloat162float(__nv_bfloat16 h) {
  uint32_t u = static_cast<uint32_t>(h.bits) << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) {
  return __nv_bfloat162{__float2bfloat16_rn(a), __float2bfloat16_rn(b)};
}

#endif  // TCK_EMU_CUDA_BF16_H

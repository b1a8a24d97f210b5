//===- cuda_fp16.h - __half for the CPU emulation (see cuda_runtime.h) -*- C++ -*-===//
//
// Only what kernels/cuda uses: storage, round-to-nearest-even conversions (IEEE binary16,
// in integer arithmetic: the emulation is built by clang++, whose x86 target has no
// _Float16 before clang 15; emu_selftest.cpp checks them exhaustively) and the pair type.
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
  uint32_t u;
  memcpy(&u, &f, 4);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t a = u & 0x7fffffffu;
  uint32_t r;
  if (a > 0x7f800000u) {
    r = 0x7e00u | ((a >> 13) & 0x3ffu);  // NaN: quiet, the payload's top bits kept
  } else if (a >= 0x477ff000u) {
    r = 0x7c00u;  // 65520 and above (and infinity): infinity
  } else if (a < 0x38800000u) {
    // Below 2^-14: a multiple of 2^-24 (subnormal), rounded to nearest even; 2^-25 and
    // less round to zero.
    if (a <= 0x33000000u) {
      r = 0;
    } else {
      const uint32_t m = (a & 0x7fffffu) | 0x800000u;
      const int shift = 126 - static_cast<int>(a >> 23);  // 14 .. 24
      r = m >> shift;
      const uint32_t rem = m & ((1u << shift) - 1u), halfway = 1u << (shift - 1);
      if (rem > halfway || (rem == halfway && (r & 1u))) ++r;
    }
  } else {
    r = (a >> 13) - 0x1c000u;  // the exponent rebiased (127 -> 15), 10 mantissa bits
    const uint32_t rem = a & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r;  // a carry may reach infinity
  }
  __half h;
  h.bits = static_cast<uint16_t>(sign | r);
  return h;
}

inline float __half2float(__half h) {
  const uint32_t sign = static_cast<uint32_t>(h.bits & 0x8000u) << 16;
  const uint32_t e = (h.bits >> 10) & 0x1fu, m = h.bits & 0x3ffu;
  uint32_t u;
  if (e == 0x1fu) {
    u = sign | 0x7f800000u | (m << 13);
  } else if (e != 0) {
    u = sign | ((e + 112u) << 23) | (m << 13);
  } else {
    const float v = static_cast<float>(m) * (1.f / 16777216.f);  // m * 2^-24, exact
    memcpy(&u, &v, 4);
    u |= sign;
  }
  float f;
  memcpy(&f, &u, 4);
  return f;
}
inline __half2 __floats2half2_rn(float a, float b) { return __half2{__float2half_rn(a), __float2half_rn(b)}; }

#endif  // TCK_EMU_CUDA_FP16_H

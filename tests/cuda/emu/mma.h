//===- mma.h - nvcuda::wmma for the CPU emulation (see cuda_runtime.h) -*- C++ -*-===//
//
// A fragment holds its whole tile in every lane (the layout of a real fragment is opaque
// to the kernels: they only load, multiply, fill and store), so each lane computes the
// warp's result; a store writes each lane's share of the tile. Loads and stores check what
// CUDA requires: a 256-bit aligned pointer, a leading dimension that is a multiple of 16
// bytes, and the same arguments in every lane of the warp (checked through a meeting of the
// warp, as the real operations are collective).
//
//===----------------------------------------------------------------------===//
#ifndef TCK_EMU_MMA_H
#define TCK_EMU_MMA_H

#include "cuda_bf16.h"
#include "cuda_fp16.h"
#include "cuda_runtime.h"

#include <type_traits>

namespace nvcuda {
namespace wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

namespace emu {
inline float toF(float v) { return v; }
inline float toF(__half v) { return __half2float(v); }
inline float toF(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
inline void checkCollective(const void* p, unsigned ldm) {
  if (reinterpret_cast<uintptr_t>(p) % 32 != 0) tck_emu::fatal("wmma: pointer not 256-bit aligned");
  if ((ldm * sizeof(T)) % 16 != 0) tck_emu::fatal("wmma: leading dimension not a multiple of 16 bytes");
  uint32_t all[32];
  const uint32_t key = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(p) * 2654435761u) ^ ldm;
  tck_emu::exchange(0xffffffffu, key, all);
  for (int l = 0; l < 32; ++l)
    if (all[l] != key) tck_emu::fatal("wmma: lanes of a warp pass different arguments");
}
}  // namespace emu

template <typename Use, int M, int N, int K, typename T, typename Layout = void>
struct fragment {
  static constexpr int ROWS = std::is_same<Use, matrix_b>::value ? K : M;
  static constexpr int COLS = std::is_same<Use, matrix_a>::value ? K : N;
  float v[ROWS * COLS];  // element (r, c) at v[r * COLS + c]
};

template <typename Use, int M, int N, int K, typename T, typename L>
inline void fill_fragment(fragment<Use, M, N, K, T, L>& f, float value) {
  for (float& e : f.v) e = value;
}

template <typename Use, int M, int N, int K, typename T, typename L>
inline void load_matrix_sync(fragment<Use, M, N, K, T, L>& f, const T* p, unsigned ldm) {
  static_assert(!std::is_same<Use, accumulator>::value, "the emulation loads operands only");
  emu::checkCollective<T>(p, ldm);
  using F = fragment<Use, M, N, K, T, L>;
  constexpr bool col = std::is_same<L, col_major>::value;
  for (int r = 0; r < F::ROWS; ++r)
    for (int c = 0; c < F::COLS; ++c) f.v[r * F::COLS + c] = emu::toF(col ? p[c * ldm + r] : p[r * ldm + c]);
}

template <int M, int N, int K, typename T, typename LA, typename LB>
inline void mma_sync(fragment<accumulator, M, N, K, float>& d, const fragment<matrix_a, M, N, K, T, LA>& a,
                     const fragment<matrix_b, M, N, K, T, LB>& b,
                     const fragment<accumulator, M, N, K, float>& c) {
  float out[M * N];
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      float s = c.v[i * N + j];
      for (int k = 0; k < K; ++k) s += a.v[i * K + k] * b.v[k * N + j];
      out[i * N + j] = s;
    }
  for (int e = 0; e < M * N; ++e) d.v[e] = out[e];
}

template <int M, int N, int K>
inline void store_matrix_sync(float* p, const fragment<accumulator, M, N, K, float>& f, unsigned ldm,
                              layout_t layout) {
  emu::checkCollective<float>(p, ldm);
  // Each lane writes its share (elements lane, lane + 32, ...), as the lanes of a real warp
  // write the parts of the tile their fragments hold: a lane that reads the tile before the
  // warp meets again (__syncwarp) misses what the lanes after it write.
  for (int e = static_cast<int>(tck_emu::lane()); e < M * N; e += 32) {
    const int r = e / N, c = e % N;
    float& dst = layout == mem_col_major ? p[c * ldm + r] : p[r * ldm + c];
    dst = f.v[e];
  }
}

}  // namespace wmma
}  // namespace nvcuda

namespace tck_emu {

/// One 16-bit element (lo = 0, hi = 1) of a 32-bit fragment register, as float.
template <typename T>
inline float fragmentElement(uint32_t reg, int hi) {
  T v;
  v.bits = static_cast<uint16_t>(hi ? reg >> 16 : reg & 0xffffu);
  if constexpr (std::is_same<T, __half>::value) {
    return __half2float(v);
  } else {
    return __bfloat162float(v);
  }
}

/// PTX `mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32 d, a, b, d`: the
/// warp's fragments are exchanged (a collective, as on the GPU) and each lane computes its
/// four accumulators from the register layout of the PTX ISA ("Matrix Fragments for
/// mma.m16n8k16"), with g = lane / 4, t = lane % 4:
///   a[0] = A[g][2t..2t+1]   a[1] = A[g+8][2t..2t+1]   a[2] = A[g][2t+8..]   a[3] = A[g+8][2t+8..]
///   b[0] = B[2t..2t+1][g]   b[1] = B[2t+8..2t+9][g]
///   d[0..1] = D[g][2t..2t+1]   d[2..3] = D[g+8][2t..2t+1]
/// (lo half = the lower column / row index).
template <typename T>
inline void mma_m16n8k16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  uint32_t A[4][32], B[2][32];
  for (int i = 0; i < 4; ++i) exchange(0xffffffffu, a[i], A[i]);
  for (int i = 0; i < 2; ++i) exchange(0xffffffffu, b[i], B[i]);
  const int g = static_cast<int>(lane() >> 2), t = static_cast<int>(lane() & 3u);
  for (int j = 0; j < 4; ++j) {
    const int row = g + 8 * (j >> 1), col = 2 * t + (j & 1);
    float s = d[j];
    for (int k = 0; k < 16; ++k) {
      const int q = (k % 8) / 2, hi = k % 2;
      const float av = fragmentElement<T>(A[(row >= 8 ? 1 : 0) + (k >= 8 ? 2 : 0)][(row % 8) * 4 + q], hi);
      const float bv = fragmentElement<T>(B[k >= 8 ? 1 : 0][col * 4 + q], hi);
      s += av * bv;
    }
    d[j] = s;
  }
}

/// __hsub2 of two 16-bit pairs given as bits (the kernels' trit decode; exact there).
template <typename T>
inline uint32_t sub2(uint32_t x, uint32_t y) {
  uint32_t r = 0;
  for (int hi = 0; hi < 2; ++hi) {
    const float v = fragmentElement<T>(x, hi) - fragmentElement<T>(y, hi);
    uint16_t bits;
    if constexpr (std::is_same<T, __half>::value) {
      bits = __float2half_rn(v).bits;
    } else {
      bits = __float2bfloat16_rn(v).bits;
    }
    r |= static_cast<uint32_t>(bits) << (16 * hi);
  }
  return r;
}

}  // namespace tck_emu

#endif  // TCK_EMU_MMA_H

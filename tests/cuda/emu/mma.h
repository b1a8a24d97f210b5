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

#endif  // TCK_EMU_MMA_H

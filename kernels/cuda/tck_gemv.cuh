//===- tck_gemv.cuh - memory-bound GEMV path (M <= 8) -----------*- C++ -*-===//
//
// Layout::NK (y = x @ W^T, W packed as N rows of K):
//   A block of WARPS warps owns WARPS * ROWS consecutive output features; each warp owns
//   ROWS of them. The block stages a chunk of x (MB rows, converted to float) in shared
//   memory in a padded unit-major layout (16 elements + 4 pad floats per unit), then every
//   lane streams one 32-bit word (16 trits) of each of its warp's ROWS rows per unit: lanes
//   read consecutive words (128 B per row per warp instruction), all loads of a chunk are
//   issued before any use. A word of 16 zero trits (0x55555555) in all ROWS rows is
//   skipped. Decode: exact float magic (tck_common.cuh, one LOP3 + one FADD per trit)
//   shared by the MB x-rows, so the inner loop is ROWS * (2 + MB) instructions per trit
//   column. x is read from shared memory as float4 without bank conflicts (unit stride of
//   20 floats). At the end each (m, row) sum is a warp shuffle reduction.
//
// Layout::KN (y = x @ W, W packed as K rows of N):
//   A block owns CWB column units (a unit = CB bytes = 4*CB output columns) and splits K
//   over NT / CWB thread rows; a thread streams units of rows k, k + KS, ... (U loads in
//   flight), decodes 4*CB trits and accumulates MB * 4*CB partial sums (<= 32 registers),
//   then the block reduces over K with shuffles and shared memory. No split-K across blocks
//   (the API has no workspace), so small N gives few blocks: the NK layout is the fast one.
//
//===----------------------------------------------------------------------===//
#ifndef TCK_GEMV_CUH
#define TCK_GEMV_CUH

#ifndef TCK_DEVICE_CUH
#include "tck_device.cuh"
#endif

namespace tck {
namespace detail {

// ---- NK ---------------------------------------------------------------------------------------

template <typename T, int N, int K, Act A, Residual R, int MB, int ROWS, int WARPS>
__global__ void __launch_bounds__(WARPS * 32)
    gemv_nk_kernel(const Args<T> args) {
  using C = GemvNkChunk<MB>;
  constexpr int NUNITS = static_cast<int>(gemv_nk_units(K));
  constexpr int NT = WARPS * 32;
  static_assert(MB * C::UNITS * C::XS * 4 <= 20480, "x chunk fits in 20 KiB");

  __shared__ __align__(16) float xs[MB][C::UNITS * C::XS];

  const T* __restrict__ x = args.x;
  const uint8_t* __restrict__ w = args.w;
  const int M = static_cast<int>(args.M);
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int row0 = (blockIdx.x * WARPS + warp) * ROWS;

  float acc[MB][ROWS];
#pragma unroll
  for (int m = 0; m < MB; ++m)
#pragma unroll
    for (int r = 0; r < ROWS; ++r) acc[m][r] = 0.f;

  for (int cb = 0; cb < NUNITS; cb += C::UNITS) {
    const int cu = imin(C::UNITS, NUNITS - cb);  // units in this chunk

    // Weights first (independent of shared memory): P units x ROWS rows per lane.
    uint32_t wd[C::P][ROWS];
#pragma unroll
    for (int p = 0; p < C::P; ++p) {
      const int u = lane + 32 * p;
#pragma unroll
      for (int r = 0; r < ROWS; ++r) {
        const int row = row0 + r;
        uint32_t v = kZeroWord;
        if (u < cu && row < N) v = gemv_nk_word<K>(w, row, cb + u);
        wd[p][r] = v;
      }
    }

    __syncthreads();  // the previous chunk is consumed
    for (int e = threadIdx.x; e < cu * 16; e += NT) {
      const int k = cb * 16 + e;
      const int slot = C::slot(e);
#pragma unroll
      for (int m = 0; m < MB; ++m) {
        xs[m][slot] = (m < M && k < K) ? ldg_f<T>(x + static_cast<long long>(m) * K + k) : 0.f;
      }
    }
    __syncthreads();

#pragma unroll
    for (int p = 0; p < C::P; ++p) {
      const int u = lane + 32 * p;
      uint32_t any = 0;
#pragma unroll
      for (int r = 0; r < ROWS; ++r) any |= wd[p][r] ^ kZeroWord;
      if (u >= cu || any == 0) continue;  // out of the row, or 16 x ROWS zero trits
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        uint32_t hw[ROWS];
#pragma unroll
        for (int r = 0; r < ROWS; ++r) hw[r] = h ? (wd[p][r] >> 16) : wd[p][r];
#pragma unroll
        for (int q = 0; q < 2; ++q) {
          float4 xv[MB];
#pragma unroll
          for (int m = 0; m < MB; ++m)
            xv[m] = *reinterpret_cast<const float4*>(&xs[m][u * C::XS + 8 * h + 4 * q]);
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int i = 4 * q + e;
#pragma unroll
            for (int r = 0; r < ROWS; ++r) {
              const float t = trit_f32_lo8(hw[r], i);
#pragma unroll
              for (int m = 0; m < MB; ++m) {
                const float xe = e == 0 ? xv[m].x : e == 1 ? xv[m].y : e == 2 ? xv[m].z : xv[m].w;
                acc[m][r] = fmaf(t, xe, acc[m][r]);
              }
            }
          }
        }
      }
    }
  }

#pragma unroll
  for (int m = 0; m < MB; ++m) {
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
      const float s = warp_sum(acc[m][r]);
      const int row = row0 + r;
      if (lane == ((m * ROWS + r) & 31) && m < M && row < N) {
        store_out<T, A, R>(args, static_cast<long long>(m) * N + row, row, s);
      }
    }
  }
}

template <typename T, int N, int K, Act A, Residual R, int VARIANT, int MB>
int launch_gemv_nk(const Args<T>& a, cudaStream_t stream) {
  using Cfg = GemvNkConfig<VARIANT>;
  constexpr int ROWS_PER_BLOCK = Cfg::ROWS * Cfg::WARPS;
  const unsigned grid = static_cast<unsigned>(ceil_div(N, ROWS_PER_BLOCK));
  const auto kernel = gemv_nk_kernel<T, N, K, A, R, MB, Cfg::ROWS, Cfg::WARPS>;
  TCK_LAUNCH(kernel, grid, Cfg::WARPS * 32, stream)(a);
  return static_cast<int>(cudaGetLastError());
}

// ---- KN ---------------------------------------------------------------------------------------

template <typename T, int N, int K, Act A, Residual R, int MB, int CB, int CWB, int NT, int U>
__global__ void __launch_bounds__(NT) gemv_kn_kernel(const Args<T> args) {
  constexpr long long NB = packed_row_bytes(N);
  constexpr long long NU = gemv_kn_units(N, CB);
  constexpr int EPU = 4 * CB;     // columns per unit
  constexpr int KS = NT / CWB;    // thread rows along K
  constexpr int NW = NT / 32;     // warps
  constexpr int J = MB * EPU;     // accumulators per thread
  static_assert(NB % CB == 0, "units never cross a row");
  static_assert(is_pow2(CWB) && CWB <= 32 && NT % 32 == 0, "CWB: power of two <= 32");
  static_assert(J <= 32, "accumulators");

  __shared__ float red[NW][J][CWB];

  const T* __restrict__ x = args.x;
  const uint8_t* __restrict__ w = args.w;
  const int M = static_cast<int>(args.M);
  const int cw = threadIdx.x % CWB;
  const int ks = threadIdx.x / CWB;
  const long long gu = static_cast<long long>(blockIdx.x) * CWB + cw;
  const bool uvalid = gu < NU;

  float acc[MB][EPU];
#pragma unroll
  for (int m = 0; m < MB; ++m)
#pragma unroll
    for (int e = 0; e < EPU; ++e) acc[m][e] = 0.f;

  for (int k0 = ks; k0 < K; k0 += KS * U) {
    uint32_t wv[U];
#pragma unroll
    for (int j = 0; j < U; ++j) {
      const int k = k0 + j * KS;
      uint32_t v = zero_unit<CB>();
      if (uvalid && k < K) v = gemv_kn_unit<N, CB>(w, k, gu);
      wv[j] = v;
    }
#pragma unroll
    for (int j = 0; j < U; ++j) {
      if (wv[j] == zero_unit<CB>()) continue;  // 4*CB zero trits (or no work)
      const int k = k0 + j * KS;
      float xv[MB];
#pragma unroll
      for (int m = 0; m < MB; ++m)
        xv[m] = m < M ? ldg_f<T>(x + static_cast<long long>(m) * K + k) : 0.f;
#pragma unroll
      for (int e = 0; e < EPU; ++e) {
        const float t = trit_f32(wv[j], e);
#pragma unroll
        for (int m = 0; m < MB; ++m) acc[m][e] = fmaf(t, xv[m], acc[m][e]);
      }
    }
  }

  // Reduce over the KS thread rows: lanes of one warp with the same cw first.
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
#pragma unroll
  for (int m = 0; m < MB; ++m) {
#pragma unroll
    for (int e = 0; e < EPU; ++e) {
      float v = acc[m][e];
#pragma unroll
      for (int o = 16; o >= CWB; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
      if (lane < CWB) red[warp][m * EPU + e][lane] = v;
    }
  }
  __syncthreads();
  for (int o = threadIdx.x; o < J * CWB; o += NT) {
    const int c = o % CWB;
    const int jj = o / CWB;
    float s = 0.f;
#pragma unroll
    for (int wp = 0; wp < NW; ++wp) s += red[wp][jj][c];
    const int m = jj / EPU;
    const int e = jj % EPU;
    const long long n = (static_cast<long long>(blockIdx.x) * CWB + c) * EPU + e;
    if (m < M && n < N) store_out<T, A, R>(args, static_cast<long long>(m) * N + n, static_cast<int>(n), s);
  }
}

template <typename T, int N, int K, Act A, Residual R, int VARIANT, int MB>
int launch_gemv_kn(const Args<T>& a, cudaStream_t stream) {
  constexpr int CB = gemv_kn_unit_bytes(MB, N);
  constexpr long long NU = gemv_kn_units(N, CB);
  constexpr int CWB = gemv_kn_cwb<VARIANT>(NU);
  constexpr int NT = kGemvKnThreads;
  constexpr int U = kGemvKnUnroll;
  const unsigned grid = static_cast<unsigned>(ceil_div(NU, CWB));
  const auto kernel = gemv_kn_kernel<T, N, K, A, R, MB, CB, CWB, NT, U>;
  TCK_LAUNCH(kernel, grid, NT, stream)(a);
  return static_cast<int>(cudaGetLastError());
}

template <typename T, int N, int K, Layout L, Act A, Residual R, int VARIANT, int MB>
int launch_gemv(const Args<T>& a, cudaStream_t stream) {
  if constexpr (L == Layout::NK) {
    return launch_gemv_nk<T, N, K, A, R, VARIANT, MB>(a, stream);
  } else {
    return launch_gemv_kn<T, N, K, A, R, VARIANT, MB>(a, stream);
  }
}

}  // namespace detail
}  // namespace tck

#endif  // TCK_GEMV_CUH

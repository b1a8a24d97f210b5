//===- tck_gemm.cuh - tiled GEMM path (M > 8) and implicit-GEMM conv -*- C++ -*-===//
//
// One kernel template per arithmetic, parameterized by a problem policy (tck_common.cuh):
//   LinearProblem<N, K, L>  A[m][k] = x[m * K + k],               out(m, n) = y[m * N + n]
//   ConvProblem<Geom>       A[p][kk] = x gathered (implicit GEMM), out(p, n) = NCHW y; one
//                           GEMM per group (blockIdx.z).
// B[k][n] is the packed weight, decoded tile by tile into shared memory (the decode is
// amortized over BM rows of A). Every index comes from the tile maps of tck_common.cuh
// (MmaMap, SimtMap), which tests/cuda/host_check.cpp replays on the host.
//
// gemm_mma_kernel (__half, __nv_bfloat16): tensor cores through WMMA 16x16x16 fragments
//   with float accumulators. Shared tiles are double buffered with register staging (the
//   next tile's global loads are in flight during the current tile's MMAs), one barrier per
//   K step. A is row-major [BM][BK+8] (linear: 16-byte vector loads along k) or
//   column-major [BK][BM+8] (conv: the gather runs along output pixels, which are
//   contiguous in NCHW). B is [BN][BK+8] (NK, col-major B) or [BK][BN+8] (KN, row-major B),
//   i.e. the natural order of the packed rows, so a decoded word (16 trits) becomes two
//   16-byte shared stores. The +8 padding keeps ldmatrix free of bank conflicts. The
//   epilogue goes through a 16x16 float patch per warp in shared memory.
//   Built for sm_80+ (bf16) / sm_70+ (half); on an older target the body falls back to a
//   plain per-output loop, so any -arch compiles.
// gemm_simt_kernel (float): CUDA cores, register-blocked TM x TN outer products (float4
//   shared loads, sub-tiles interleaved by 4 to avoid bank conflicts), the same double
//   buffering. Float accumulation, no TF32 (matches torch's default fp32 matmul).
//
//===----------------------------------------------------------------------===//
#ifndef TCK_GEMM_CUH
#define TCK_GEMM_CUH

#ifndef TCK_DEVICE_CUH
#include "tck_device.cuh"
#endif

#include <mma.h>

namespace tck {
namespace detail {

// ---- tensor-core kernel (16-bit types) ---------------------------------------------------------

/// Plain per-output loop (targets without the needed MMA; never the sm_80/sm_90 path).
template <typename T, class P, Act A, Residual R, int BM, int BN, int NT>
__device__ void gemm_tile_naive(const Args<T>& a, long long m0, int n0, int g) {
  for (int i = threadIdx.x; i < BM * BN; i += NT) {
    const long long m = m0 + i / BN;
    const int n = n0 + i % BN;
    if (m >= a.M || n >= P::NDIM) continue;
    const typename P::Row row = P::template row<T>(a, m, g);
    float acc = 0.f;
    for (int k = 0; k < P::KDIM; ++k) {
      const long long off = P::template a_off<T>(a, row, g, k);
      if (off < 0) continue;
      const int nn = P::L == Layout::NK ? g * P::NDIM + n : n;
      const int t = weight_trit(P::L, a.w, P::L == Layout::NK ? P::NDIM * P::GROUPS : P::NDIM,
                                P::KDIM, nn, k);
      acc += static_cast<float>(t) * ldg_f<T>(a.x + off);
    }
    const typename P::Out o = P::template out<T>(a, m, g);
    store_out<T, A, R>(a, o.base + n * o.cstride, g * P::NDIM + n, acc);
  }
}

template <typename T, class P, class Cfg, Act A, Residual R>
__global__ void __launch_bounds__(Cfg::NT) gemm_mma_kernel(const Args<T> args) {
  constexpr bool ACOL = P::CONV;             // A tile column-major [BK][BM+8]
  constexpr bool BCOL = P::L == Layout::NK;  // B tile [BN][BK+8] (col-major B)
  using Map = MmaMap<Cfg, ACOL, BCOL>;
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, NT = Cfg::NT;
  constexpr int FM = Cfg::FM, FN = Cfg::FN;
  constexpr int LDA = Map::LDA, LDB = Map::LDB, STAGE = Map::STAGE;
  constexpr int KT = static_cast<int>(ceil_div(P::KDIM, BK));  // K tiles
  static_assert((Map::A_ELEMS * 2) % 32 == 0 && (Map::B_ELEMS * 2) % 32 == 0, "32-byte aligned tiles");
  static_assert(2 * STAGE * 2 >= Cfg::NWARPS * 256 * 4, "epilogue patches fit");
  static_assert(2 * STAGE * 2 <= 48 * 1024, "static shared memory");

  __shared__ __align__(128) T smem[2 * STAGE];

  const long long m0 = static_cast<long long>(blockIdx.x) * BM;
  const int n0 = blockIdx.y * BN;
  const int g = blockIdx.z;

  if constexpr (!MmaArch<T>::OK) {
    gemm_tile_naive<T, P, A, R, BM, BN, NT>(args, m0, n0, g);
  } else {
    using namespace nvcuda;
    using ALay = typename std::conditional<ACOL, wmma::col_major, wmma::row_major>::type;
    using BLay = typename std::conditional<BCOL, wmma::col_major, wmma::row_major>::type;

    const T* __restrict__ x = args.x;
    const uint8_t* __restrict__ w = args.w;
    const int tid = threadIdx.x;
    const int warp = tid >> 5;
    const int lane = tid & 31;

    uint4 areg[Map::VA];      // row-major A: 8-element vectors
    T aeg[Map::EA];           // col-major A: elements
    uint32_t breg[Map::VB];   // B: packed words

    typename P::Row crow;  // conv: the pixel of this thread's A row (fixed for all k)
    if constexpr (ACOL) {
      int r, k;
      Map::a_elem(tid, 0, r, k);
      crow = P::template row<T>(args, m0 + r, g);
    }
    const bool xvec = args.x_vec16 && (P::KDIM % 8 == 0);

    auto load_tiles = [&](int k0) {
      if constexpr (!ACOL) {
#pragma unroll
        for (int i = 0; i < Map::VA; ++i) {
          int r, kl;
          Map::a_vec(tid, i, r, kl);
          const int k = k0 + kl;
          const long long m = m0 + r;
          union {
            uint4 u;
            T e[8];
          } buf;
          buf.u = make_uint4(0u, 0u, 0u, 0u);
          if (m < args.M) {
            const T* src = x + m * P::KDIM + k;
            if (xvec && k + 8 <= P::KDIM) {
              buf.u = __ldg(reinterpret_cast<const uint4*>(src));
            } else {
#pragma unroll
              for (int e = 0; e < 8; ++e)
                if (k + e < P::KDIM) buf.e[e] = src[e];
            }
          }
          areg[i] = buf.u;
        }
      } else {
#pragma unroll
        for (int i = 0; i < Map::EA; ++i) {
          int r, kl;
          Map::a_elem(tid, i, r, kl);
          const long long off = P::template a_off<T>(args, crow, g, k0 + kl);
          aeg[i] = off >= 0 ? __ldg(x + off) : from_f<T>(0.f);
        }
      }
#pragma unroll
      for (int i = 0; i < Map::VB; ++i) {
        int n, k;
        Map::b_word(tid, i, n, k);
        breg[i] = load_b_word<P>(w, g, n0 + n, k0 + k);
      }
    };

    auto store_tiles = [&](int buf) {
      T* As = smem + buf * STAGE;
      T* Bs = As + Map::A_ELEMS;
      if constexpr (!ACOL) {
#pragma unroll
        for (int i = 0; i < Map::VA; ++i) {
          int r, k;
          Map::a_vec(tid, i, r, k);
          *reinterpret_cast<uint4*>(As + Map::a_smem(r, k)) = areg[i];
        }
      } else {
#pragma unroll
        for (int i = 0; i < Map::EA; ++i) {
          int r, k;
          Map::a_elem(tid, i, r, k);
          As[Map::a_smem(r, k)] = aeg[i];
        }
      }
#pragma unroll
      for (int i = 0; i < Map::VB; ++i) {
        int n, k;
        Map::b_word(tid, i, n, k);
        T* dst = Bs + Map::b_smem(n, k);  // 16 consecutive elements
        const uint32_t wd = breg[i];
        const uint32_t hi = wd >> 16;
        uint4 lo4, hi4;
        lo4.x = pack2<T>(trit_f32_lo8(wd, 0), trit_f32_lo8(wd, 1));
        lo4.y = pack2<T>(trit_f32_lo8(wd, 2), trit_f32_lo8(wd, 3));
        lo4.z = pack2<T>(trit_f32_lo8(wd, 4), trit_f32_lo8(wd, 5));
        lo4.w = pack2<T>(trit_f32_lo8(wd, 6), trit_f32_lo8(wd, 7));
        hi4.x = pack2<T>(trit_f32_lo8(hi, 0), trit_f32_lo8(hi, 1));
        hi4.y = pack2<T>(trit_f32_lo8(hi, 2), trit_f32_lo8(hi, 3));
        hi4.z = pack2<T>(trit_f32_lo8(hi, 4), trit_f32_lo8(hi, 5));
        hi4.w = pack2<T>(trit_f32_lo8(hi, 6), trit_f32_lo8(hi, 7));
        reinterpret_cast<uint4*>(dst)[0] = lo4;
        reinterpret_cast<uint4*>(dst)[1] = hi4;
      }
    };

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[FM][FN];
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
      for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.f);

    load_tiles(0);
    store_tiles(0);
    __syncthreads();

    for (int kt = 0; kt < KT; ++kt) {
      const int cur = kt & 1;
      if (kt + 1 < KT) load_tiles((kt + 1) * BK);  // in flight during the MMAs
      const T* As = smem + cur * STAGE;
      const T* Bs = As + Map::A_ELEMS;
#pragma unroll
      for (int kk = 0; kk < BK; kk += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, ALay> fa[FM];
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, BLay> fb[FN];
#pragma unroll
        for (int i = 0; i < FM; ++i)
          wmma::load_matrix_sync(fa[i], As + Map::a_smem(Map::frag_row(warp, i), kk), LDA);
#pragma unroll
        for (int j = 0; j < FN; ++j)
          wmma::load_matrix_sync(fb[j], Bs + Map::b_smem(Map::frag_col(warp, j), kk), LDB);
#pragma unroll
        for (int i = 0; i < FM; ++i)
#pragma unroll
          for (int j = 0; j < FN; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
      }
      if (kt + 1 < KT) store_tiles(cur ^ 1);
      __syncthreads();
    }

    // ---- epilogue: one 16x16 float patch per warp (the tiles are no longer read) ----
    float* patch = reinterpret_cast<float*>(smem) + warp * 256;
#pragma unroll
    for (int i = 0; i < FM; ++i) {
#pragma unroll
      for (int j = 0; j < FN; ++j) {
        wmma::store_matrix_sync(patch, acc[i][j], 16, wmma::mem_row_major);
        __syncwarp();
        const long long mb = m0 + Map::frag_row(warp, i);
        const int nb = n0 + Map::frag_col(warp, j);
        if constexpr (P::CONV) {
          int r, c;
          Map::epi(true, lane, 0, r, c);
          const long long m = mb + r;
          if (m < args.M) {
            const typename P::Out o = P::template out<T>(args, m, g);  // one pixel per lane
#pragma unroll
            for (int e = 0; e < 8; ++e) {
              Map::epi(true, lane, e, r, c);
              const int n = nb + c;
              if (n < P::NDIM)
                store_out<T, A, R>(args, o.base + n * o.cstride, g * P::NDIM + n, patch[r * 16 + c]);
            }
          }
        } else {
#pragma unroll
          for (int e = 0; e < 8; ++e) {
            int r, c;
            Map::epi(false, lane, e, r, c);
            const long long m = mb + r;
            const int n = nb + c;
            if (m < args.M && n < P::NDIM) {
              const typename P::Out o = P::template out<T>(args, m, g);
              store_out<T, A, R>(args, o.base + n * o.cstride, n, patch[r * 16 + c]);
            }
          }
        }
        __syncwarp();
      }
    }
  }
}

// ---- SIMT kernel (float) --------------------------------------------------------------------------

template <typename T, class P, class Cfg, Act A, Residual R>
__global__ void __launch_bounds__(Cfg::NT) gemm_simt_kernel(const Args<T> args) {
  using Map = SimtMap<Cfg, P::CONV, P::L>;
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK;
  constexpr int TM = Cfg::TM, TN = Cfg::TN, SM = Cfg::SM, SN = Cfg::SN;
  constexpr int LDA = Map::LDA, LDB = Map::LDB;
  constexpr int KT = static_cast<int>(ceil_div(P::KDIM, BK));
  static_assert(2 * (BK * LDA + BK * LDB) * 4 <= 48 * 1024, "static shared memory");

  __shared__ __align__(16) float As[2][BK][LDA];
  __shared__ __align__(16) float Bs[2][BK][LDB];

  const T* __restrict__ x = args.x;
  const uint8_t* __restrict__ w = args.w;
  const int tid = threadIdx.x;
  const int tx = tid % Cfg::TX;
  const int ty = tid / Cfg::TX;
  const long long m0 = static_cast<long long>(blockIdx.x) * BM;
  const int n0 = blockIdx.y * BN;
  const int g = blockIdx.z;

  typename P::Row crow;  // conv: this thread's A row (pixel) is the same for every element
  if constexpr (P::CONV) {
    int r, k;
    Map::a_elem(tid, 0, r, k);
    crow = P::template row<T>(args, m0 + r, g);
  }

  float areg[Map::EA];
  uint32_t breg[Map::VB];

  auto load_tiles = [&](int k0) {
#pragma unroll
    for (int i = 0; i < Map::EA; ++i) {
      int r, kl;
      float v = 0.f;
      if (Map::a_elem(tid, i, r, kl)) {
        long long off;
        if constexpr (P::CONV) {
          off = P::template a_off<T>(args, crow, g, k0 + kl);
        } else {
          off = P::template a_off<T>(args, P::template row<T>(args, m0 + r, g), g, k0 + kl);
        }
        if (off >= 0) v = ldg_f<T>(x + off);
      }
      areg[i] = v;
    }
#pragma unroll
    for (int i = 0; i < Map::VB; ++i) {
      int n, k;
      breg[i] = Map::b_word(tid, i, n, k) ? load_b_word<P>(w, g, n0 + n, k0 + k) : kZeroWord;
    }
  };

  auto store_tiles = [&](int buf) {
#pragma unroll
    for (int i = 0; i < Map::EA; ++i) {
      int r, k;
      if (Map::a_elem(tid, i, r, k)) As[buf][k][r] = areg[i];
    }
#pragma unroll
    for (int i = 0; i < Map::VB; ++i) {
      int n, k;
      if (!Map::b_word(tid, i, n, k)) continue;
      const uint32_t wd = breg[i];
      if constexpr (P::L == Layout::NK) {  // 16 k values of column n
#pragma unroll
        for (int j = 0; j < 16; ++j) Bs[buf][k + j][n] = trit_f32(wd, j);
      } else {  // 16 n values of row k
#pragma unroll
        for (int j = 0; j < 16; j += 4) {
          *reinterpret_cast<float4*>(&Bs[buf][k][n + j]) =
              make_float4(trit_f32(wd, j), trit_f32(wd, j + 1), trit_f32(wd, j + 2),
                          trit_f32(wd, j + 3));
        }
      }
    }
  };

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;

  load_tiles(0);
  store_tiles(0);
  __syncthreads();

  for (int kt = 0; kt < KT; ++kt) {
    const int cur = kt & 1;
    if (kt + 1 < KT) load_tiles((kt + 1) * BK);
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float a[TM], b[TN];
#pragma unroll
      for (int s = 0; s < SM; ++s) {
        const float4 v = *reinterpret_cast<const float4*>(&As[cur][k][Map::out_row(tid, 4 * s)]);
        a[4 * s] = v.x;
        a[4 * s + 1] = v.y;
        a[4 * s + 2] = v.z;
        a[4 * s + 3] = v.w;
      }
#pragma unroll
      for (int s = 0; s < SN; ++s) {
        const float4 v = *reinterpret_cast<const float4*>(&Bs[cur][k][Map::out_col(tid, 4 * s)]);
        b[4 * s] = v.x;
        b[4 * s + 1] = v.y;
        b[4 * s + 2] = v.z;
        b[4 * s + 3] = v.w;
      }
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    if (kt + 1 < KT) store_tiles(cur ^ 1);
    __syncthreads();
  }
  (void)tx;
  (void)ty;

#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const long long m = m0 + Map::out_row(tid, i);
    if (m >= args.M) continue;
    const typename P::Out o = P::template out<T>(args, m, g);
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int n = n0 + Map::out_col(tid, j);
      if (n < P::NDIM) store_out<T, A, R>(args, o.base + n * o.cstride, g * P::NDIM + n, acc[i][j]);
    }
  }
}

template <typename T, class P, Act A, Residual R, int VARIANT>
int launch_gemm(const Args<T>& a, cudaStream_t stream) {
  constexpr bool MMA = !std::is_same<T, float>::value;
  constexpr int BM = MMA ? MmaConfig<VARIANT>::BM : SimtConfig<VARIANT>::BM;
  constexpr int BN = MMA ? MmaConfig<VARIANT>::BN : SimtConfig<VARIANT>::BN;
  constexpr int NT = MMA ? MmaConfig<VARIANT>::NT : SimtConfig<VARIANT>::NT;
  static_assert(ceil_div(P::NDIM, BN) <= 65535 && P::GROUPS <= 65535, "grid y/z limits");
  const long long gx = ceil_div(a.M, BM);
  if (gx > 0x7fffffffLL) return static_cast<int>(cudaErrorInvalidConfiguration);
  const dim3 grid(static_cast<unsigned>(gx), static_cast<unsigned>(ceil_div(P::NDIM, BN)),
                  static_cast<unsigned>(P::GROUPS));
  if constexpr (MMA) {
    const auto kernel = gemm_mma_kernel<T, P, MmaConfig<VARIANT>, A, R>;
    TCK_LAUNCH(kernel, grid, NT, stream)(a);
  } else {
    const auto kernel = gemm_simt_kernel<T, P, SimtConfig<VARIANT>, A, R>;
    TCK_LAUNCH(kernel, grid, NT, stream)(a);
  }
  return static_cast<int>(cudaGetLastError());
}

}  // namespace detail
}  // namespace tck

#endif  // TCK_GEMM_CUH

//===- tck_gemv.cuh - GEMV paths (M <= 8; tensor cores to M = 256) -*- C++ -*-===//
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

// ---- NK on tensor cores (__half, __nv_bfloat16) -------------------------------------------------
//
// y^T = W x^T as mma.m16n8k16 tiles: A = 16 weight rows x 16 k (decoded trits, exact in T),
// B = 16 k x 8 batch rows of x (batch rows >= M are zero registers), float accumulators.
// The decode (decode_pairs: two trits per LOP3 and per HSUB2) costs about one instruction
// per trit whatever M is, where the CUDA-core path above costs 2 + M; the products are exact
// and the sums float, as there.
//
// The reduction order inside a tile is free, so k is permuted to fit the packed words: in a
// superblock of 256 k (64 bytes of a row), lane (g = lane / 4, t = lane % 4) loads bytes
// [16 t, 16 t + 16) of rows g and g + 8 of its 16-row tile (one 16-byte load each: a warp
// reads 16 rows x 64 contiguous bytes), and word b (0..3) of those 16 bytes feeds four mma
// steps s = 0..3 through the pairs P_e = (trit e, trit e + 8) of decode_pairs:
//   a[0] = P_2s(row g)  a[1] = P_2s(row g+8)  a[2] = P_2s+1(row g)  a[3] = P_2s+1(row g+8)
// so the logical k = 2t + j (j = 0, 1) of step (b, s) is the physical k
// 256 sb + 16 (4t + b) + 2s + 8j, and k = 2t + 8 + j is that + 1. x is staged in shared
// memory in that order (b[0] = (x[k0 + 2s], x[k0 + 2s + 8]), b[1] = (x[k0 + 2s + 1],
// x[k0 + 2s + 9]), k0 = 256 sb + 16 (4t + b)), 32 bytes per lane and word, read with two
// 16-byte loads whose halves are swapped for odd g (no bank conflicts).
//
// A block takes MB rows of x (blockIdx.x: M > MB in groups, each group decoding the weights
// again, from L2, as the groups of one row block run side by side) and WR * RT tiles of 16
// weight rows (blockIdx.y). Its KW * WR warps: warp (kw, wr) has the RT tiles wr * RT ..
// and the superblocks kw, kw + KW, ... of K, and all BT = MB / 8 tiles of 8 rows of x, which
// share each decoded word. With KW > 1 the warps add their accumulators through shared
// memory at the end. x is staged in chunks of 64 / MB superblocks (32 KiB). A warp loads up
// to PD of its superblocks at once (the first of them while the chunk's x is staged), then
// multiplies them.

// Tuning knobs of the tensor-core GEMV, for benchmarks (bench/cuda/bench_ternary.py
// --defines): the defaults are the configuration measured in docs/performance.md.
//   TCK_MMA_ACC         independent accumulator sets per warp tile (sub-block b uses set
//                       b % TCK_MMA_ACC; 1, 2 or 4): shorter chains of dependent mma
//   TCK_MMA_MIN_BLOCKS  __launch_bounds__'s minimum blocks per SM (fewer registers a thread)
//   TCK_MMA_PD          superblocks a warp loads at once (0: 8 / RT)
//   TCK_MMA_GRID_Y      at most this many blocks along the rows (0: one per row block);
//                       each loops over row blocks, staging x once when K is one chunk
//   TCK_MMA_PIPE        1: a warp loads its next round of PD superblocks (of this chunk,
//                       the next chunk or, with TCK_MMA_GRID_Y, the next row block) while
//                       it multiplies the current one (twice the registers for weights)
//   TCK_MMA_MB_LARGE    rows of x per block for M > 8 (8, 16, 32 or 64; the M bucket of
//                       ternary_linear's tensor-core path above the GEMV buckets)
//   TCK_MMA_SMALL_RT, _KW, _WR, _CS (and TCK_MMA_EIGHT_*, TCK_MMA_LARGE_*)
//                       variant 0's block shape for M <= 4 (M = 8, M > 8): RT, KW, WR, CS
//                       of GemvMmaConfig (KW <= 64 / MB; CS 1, 2, 4 or 8: split-K over a
//                       thread-block cluster of CS blocks, sm_90+); variants 1 and 2 keep
//                       theirs
#ifndef TCK_MMA_ACC
#define TCK_MMA_ACC 1
#endif
#ifndef TCK_MMA_MIN_BLOCKS
#define TCK_MMA_MIN_BLOCKS 1
#endif
#ifndef TCK_MMA_PD
#define TCK_MMA_PD 0
#endif
#ifndef TCK_MMA_GRID_Y
#define TCK_MMA_GRID_Y 0
#endif
#ifndef TCK_MMA_PIPE
#define TCK_MMA_PIPE 0
#endif
static_assert(TCK_MMA_PIPE == 0 || TCK_MMA_PIPE == 1, "TCK_MMA_PIPE: 0 or 1");
#ifndef TCK_MMA_MB_LARGE
#define TCK_MMA_MB_LARGE 16
#endif
static_assert(TCK_MMA_MB_LARGE == 8 || TCK_MMA_MB_LARGE == 16 || TCK_MMA_MB_LARGE == 32 ||
                  TCK_MMA_MB_LARGE == 64,
              "TCK_MMA_MB_LARGE: 8, 16, 32 or 64");
inline constexpr int kMmaLargeMB = TCK_MMA_MB_LARGE;

/// A block shape {RT, KW, WR, CS} (GemvMmaConfig's); a 0 takes the built-in value.
struct MmaShape {
  int rt = 0, kw = 0, wr = 0, cs = 0;
};
#ifndef TCK_MMA_SMALL_RT
#define TCK_MMA_SMALL_RT 0
#endif
#ifndef TCK_MMA_SMALL_KW
#define TCK_MMA_SMALL_KW 0
#endif
#ifndef TCK_MMA_SMALL_WR
#define TCK_MMA_SMALL_WR 0
#endif
#ifndef TCK_MMA_SMALL_CS
#define TCK_MMA_SMALL_CS 0
#endif
#ifndef TCK_MMA_EIGHT_RT
#define TCK_MMA_EIGHT_RT 0
#endif
#ifndef TCK_MMA_EIGHT_KW
#define TCK_MMA_EIGHT_KW 0
#endif
#ifndef TCK_MMA_EIGHT_WR
#define TCK_MMA_EIGHT_WR 0
#endif
#ifndef TCK_MMA_EIGHT_CS
#define TCK_MMA_EIGHT_CS 0
#endif
#ifndef TCK_MMA_LARGE_RT
#define TCK_MMA_LARGE_RT 0
#endif
#ifndef TCK_MMA_LARGE_KW
#define TCK_MMA_LARGE_KW 0
#endif
#ifndef TCK_MMA_LARGE_WR
#define TCK_MMA_LARGE_WR 0
#endif
#ifndef TCK_MMA_LARGE_CS
#define TCK_MMA_LARGE_CS 0
#endif
inline constexpr MmaShape kMmaV0SMALL{TCK_MMA_SMALL_RT, TCK_MMA_SMALL_KW, TCK_MMA_SMALL_WR,
                                         TCK_MMA_SMALL_CS};
inline constexpr MmaShape kMmaV0EIGHT{TCK_MMA_EIGHT_RT, TCK_MMA_EIGHT_KW, TCK_MMA_EIGHT_WR,
                                         TCK_MMA_EIGHT_CS};
inline constexpr MmaShape kMmaV0LARGE{TCK_MMA_LARGE_RT, TCK_MMA_LARGE_KW, TCK_MMA_LARGE_WR,
                                         TCK_MMA_LARGE_CS};

/// The tensor-core GEMV's block shape for an M bucket (MB rows of x per block; kMmaLargeMB
/// for M > 8). More weight rows per block share one staged x (which every block reads from L2),
/// fewer give more blocks; KW = 1 leaves the chunk's superblocks to every warp.
template <int VARIANT, int MB>
struct GemvMmaConfig {
  static constexpr int V = VARIANT;
  static constexpr MmaShape O = V != 0 ? MmaShape{} : MB <= 4 ? kMmaV0SMALL
                                                    : MB == 8 ? kMmaV0EIGHT : kMmaV0LARGE;
  static constexpr int RT = O.rt > 0 ? O.rt
                            : MB <= 4 ? (V == 1 ? 2 : 1)
                            : MB == 8 ? (V == 0 ? 2 : V == 1 ? 4 : 1)
                                      : (V == 1 ? 2 : 1);
  static constexpr int KW0 = O.kw > 0 ? O.kw
                             : MB <= 4 ? (V == 0 ? 8 : 4)
                             : MB == 8 ? (V == 0 ? 4 : 8)
                                       : (V == 2 ? 2 : 1);
  static constexpr int KW = KW0 < 64 / MB ? KW0 : 64 / MB;  // at most a chunk's superblocks
  static constexpr int WR = O.wr > 0 ? O.wr : MB <= 8 ? 1 : (V == 0 ? 8 : 4);
  static constexpr int CS = O.cs > 0 ? O.cs : 1;  // blocks of a cluster splitting K
  static_assert(RT >= 1 && KW >= 1 && WR >= 1 && KW * WR <= 32, "block shape");
  static_assert(CS == 1 || CS == 2 || CS == 4 || CS == 8, "CS: 1, 2, 4 or 8 blocks a cluster");
};

/// Bytes [16 t, 16 t + 16) of superblock sb of weight row `row` (16 zero trits per word past
/// the row end or for rows >= N).
template <int N, int K>
__device__ TCK_INLINE uint4 gemv_mma_words(const uint8_t* w, int row, long long sb, int t) {
  constexpr long long KB = packed_row_bytes(K);
  const long long b0 = sb * 64 + 16 * t;
  uint4 v = make_uint4(kZeroWord, kZeroWord, kZeroWord, kZeroWord);
  if (row >= N || b0 >= KB) return v;
  const uint8_t* rp = w + static_cast<long long>(row) * KB;
  if constexpr (KB % 16 == 0) {
    v = __ldg(reinterpret_cast<const uint4*>(rp + b0));
  } else if constexpr (KB % 4 == 0) {  // 4-byte aligned rows: words, the row's end checked
    v.x = load_word_aligned(rp + b0);
    if (b0 + 4 < KB) v.y = load_word_aligned(rp + b0 + 4);
    if (b0 + 8 < KB) v.z = load_word_aligned(rp + b0 + 8);
    if (b0 + 12 < KB) v.w = load_word_aligned(rp + b0 + 12);
  } else {
    v.x = load_word_masked(rp, b0, KB);
    v.y = load_word_masked(rp, b0 + 4, KB);
    v.z = load_word_masked(rp, b0 + 8, KB);
    v.w = load_word_masked(rp, b0 + 12, KB);
  }
  return v;
}

TCK_HD TCK_INLINE uint32_t uint4_at(const uint4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

/// dst = src, a round of weights (TCK_MMA_PIPE: the round loaded ahead becomes the current).
template <int PD, int RT>
__device__ TCK_INLINE void gemv_mma_copy_round(uint4 (&dst)[PD][RT][2],
                                               const uint4 (&src)[PD][RT][2]) {
#pragma unroll
  for (int p = 0; p < PD; ++p)
#pragma unroll
    for (int r = 0; r < RT; ++r)
#pragma unroll
      for (int h = 0; h < 2; ++h) dst[p][r][h] = src[p][r][h];
}

/// One round of a warp of the tensor-core GEMV: its PD superblocks base, base + KW, ... of
/// the chunk at superblock c0 (nsb superblocks), for its RT tiles from row n0 (zero words
/// past the chunk).
template <int N, int K, int PD, int RT, int KW>
__device__ TCK_INLINE void gemv_mma_round(uint4 (&dst)[PD][RT][2], const uint8_t* w, int n0,
                                          long long c0, int nsb, int base, int g, int t) {
#pragma unroll
  for (int p = 0; p < PD; ++p) {
    const int sbl = base + p * KW;
#pragma unroll
    for (int r = 0; r < RT; ++r) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        dst[p][r][h] = sbl < nsb ? gemv_mma_words<N, K>(w, n0 + 16 * r + g + 8 * h, c0 + sbl, t)
                                 : make_uint4(kZeroWord, kZeroWord, kZeroWord, kZeroWord);
      }
    }
  }
}

template <typename T, int N, int K, Act A, Residual R, int MB, int RT, int KW, int WR, int CS>
#if TCK_MMA_MIN_BLOCKS > 1
#define TCK_MMA_BOUNDS(nt) __launch_bounds__(nt, TCK_MMA_MIN_BLOCKS)
#else
#define TCK_MMA_BOUNDS(nt) __launch_bounds__(nt)
#endif
__global__ void TCK_MMA_BOUNDS(KW * WR * 32) gemv_mma_kernel(const Args<T> args) {
  constexpr int NT = KW * WR * 32;
  constexpr int BT = MB < 8 ? 1 : MB / 8;      // tiles of 8 rows of x
  constexpr long long SB = ceil_div(static_cast<long long>(K), 256LL);  // superblocks
  constexpr int XCH = 64 / MB;                 // superblocks per staged x chunk
  constexpr int XW = XCH * 4 * MB * 4 * 8;     // 32-bit words of the chunk: 32 KiB
  // superblocks per warp in flight (16 B x 2 RT each)
  constexpr int PD = TCK_MMA_PD > 0 ? TCK_MMA_PD : RT >= 8 ? 1 : 8 / RT;
  constexpr int RED = KW > 1 ? KW : 1;
  constexpr int PER = RT * BT * 4;  // accumulators per lane
  static_assert(MB == 1 || MB == 2 || MB == 4 || MB % 8 == 0, "x rows per block");
  static_assert(XCH >= KW, "every warp has a superblock of each chunk");
  // Split-K (CS > 1): block z of a cluster of CS (blockIdx.z = its rank) takes the
  // superblocks [SB z / CS, SB (z + 1) / CS) of K, in chunks of XCH from the first, and the
  // blocks add their partial sums through distributed shared memory, each storing a CS-th
  // of the outputs. One row block a block (no TCK_MMA_GRID_Y). Built for a target without
  // clusters (a compute_80 PTX run on sm_90), block 0 takes all of K.
  constexpr bool SPLIT = CS > 1 && kClusterArch;
  constexpr int GRIDY = CS > 1 ? 0 : TCK_MMA_GRID_Y;
  static_assert(KW > 1 || !SPLIT || WR * PER * 32 <= XW, "the partial sums fit where x was");
  static_assert(CS <= SB, "every block of a cluster has a superblock");
  if (CS > 1 && !SPLIT && blockIdx.z != 0) return;
  const int kz = SPLIT ? static_cast<int>(blockIdx.z) : 0;
  const long long sb_begin = SPLIT ? SB * kz / CS : 0;
  const long long sb_end = SPLIT ? SB * (kz + 1) / CS : SB;

  __shared__ __align__(16) uint32_t xs[XW];
  __shared__ float red[KW > 1 ? RED : 1][KW > 1 ? WR * RT * BT * 4 * 32 : 1];

  const long long mbase = static_cast<long long>(MB) * blockIdx.x;
  const T* __restrict__ x = args.x + mbase * K;
  const uint8_t* __restrict__ w = args.w;
  const int M = static_cast<int>(args.M - mbase < MB ? args.M - mbase : MB);
  const int tid = threadIdx.x;
  const int lane = tid & 31;
  const int wi = tid >> 5;
  const int kw = wi % KW, wr = wi / KW;
  const int g = lane >> 2, t = lane & 3;
  [[maybe_unused]] constexpr int NRB = ceil_div(N, 16 * RT * WR);  // row blocks
#if TCK_MMA_PIPE
  // The round loaded ahead (TCK_MMA_PIPE); wnext_ok: it is the first round of the next chunk
  // this warp multiplies (the next chunk's, or the next row block's first).
  [[maybe_unused]] uint4 wnext[PD][RT][2];
  [[maybe_unused]] bool wnext_ok = false;
#endif
#if TCK_MMA_GRID_Y > 0
  // Fewer blocks than row blocks (TCK_MMA_GRID_Y): each takes row blocks blockIdx.y,
  // + gridDim.y, ...; x of a single chunk is staged once, for all of them (with CS > 1,
  // one row block a block).
  for (int rb = blockIdx.y; rb < NRB; rb += GRIDY > 0 ? static_cast<int>(gridDim.y) : NRB) {
#else
  {
    const int rb = blockIdx.y;
#endif
    const int nb = rb * 16 * RT * WR;  // the block's first row
    const int n0 = nb + 16 * RT * wr;  // the warp's first row
    // x's chunk is in shared memory already (one chunk, a later row block): not staged again
    [[maybe_unused]] const bool restage =
        GRIDY == 0 || SB > XCH || rb == static_cast<int>(blockIdx.y);

    if constexpr (!MmaArch<T>::M16N8K16) {
      // Targets without mma.m16n8k16 (before sm_80): one output per thread, plain sums.
      for (int i = tid; i < 16 * RT * WR * MB; i += NT) {
        const int n = nb + i / MB, m = i % MB;
        if (n >= N || m >= M) continue;
        float acc = 0.f;
        for (int k = 0; k < K; ++k)
          acc += static_cast<float>(weight_trit(Layout::NK, w, N, K, n, k)) *
                 ldg_f<T>(x + static_cast<long long>(m) * K + k);
        store_out<T, A, R>(args, (mbase + m) * N + n, n, acc);
      }
    } else {
      constexpr int NA = TCK_MMA_ACC;
      static_assert(NA == 1 || NA == 2 || NA == 4, "TCK_MMA_ACC: 1, 2 or 4");
      float acc[NA][RT][BT][4];
#pragma unroll
      for (int a = 0; a < NA; ++a)
#pragma unroll
        for (int r = 0; r < RT; ++r)
#pragma unroll
          for (int j = 0; j < BT; ++j)
#pragma unroll
            for (int q = 0; q < 4; ++q) acc[a][r][j][q] = 0.f;

      const uint4* xs4 = reinterpret_cast<const uint4*>(xs);
      for (long long c0 = sb_begin; c0 < sb_end; c0 += XCH) {
        const int nsb = static_cast<int>(sb_end - c0 < XCH ? sb_end - c0 : XCH);

        uint4 wv[PD][RT][2];
        auto load_round = [&](int base) {
          gemv_mma_round<N, K, PD, RT, KW>(wv, w, n0, c0, nsb, base, g, t);
        };
#if TCK_MMA_PIPE
        if (wnext_ok) {
          gemv_mma_copy_round(wv, wnext);
        } else {
          load_round(kw);
        }
        wnext_ok = false;
#else
        load_round(kw);
#endif

        if (restage) {
          __syncthreads();  // the previous chunk is consumed
          // Stage x[0..M)[256 c0 ..) in the permuted order. A lane record (8 words) holds the
          // 16 elements kb .. kb + 15, kb = 256 sb + 16 q (q = 4t + b), as word j = (x[kb + j],
          // x[kb + j + 8]); consecutive threads take consecutive 32-byte pieces of a row of x.
          const bool xvec = args.x_vec16 && K % 8 == 0;
          for (int i = tid; i < nsb * M * 16; i += NT) {
            const int q = i & 15;
            const int m = (i >> 4) % M;
            const int sbl = (i >> 4) / M;
            const int tt = q >> 2, b = q & 3;
            const long long kb = (c0 + sbl) * 256 + 16 * q;
            const T* xr = x + static_cast<long long>(m) * K + kb;
            uint32_t lo[4], hi[4];
            if (xvec && kb + 16 <= K) {
              const uint4 a = __ldg(reinterpret_cast<const uint4*>(xr));
              const uint4 c = __ldg(reinterpret_cast<const uint4*>(xr) + 1);
              lo[0] = a.x, lo[1] = a.y, lo[2] = a.z, lo[3] = a.w;
              hi[0] = c.x, hi[1] = c.y, hi[2] = c.z, hi[3] = c.w;
            } else {
    #pragma unroll
              for (int e = 0; e < 4; ++e) {
                uint32_t v[4];
    #pragma unroll
                for (int h = 0; h < 4; ++h) {  // elements 2e, 2e + 1 (lo) and + 8 (hi)
                  const long long k = kb + 2 * e + (h & 1) + 8 * (h >> 1);
                  uint16_t bits = 0;
                  if (k < K) {
                    const T v16 = __ldg(xr + 2 * e + (h & 1) + 8 * (h >> 1));
                    memcpy(&bits, &v16, 2);
                  }
                  v[h] = bits;
                }
                lo[e] = v[0] | (v[1] << 16);
                hi[e] = v[2] | (v[3] << 16);
              }
            }
            uint32_t pr[8];
    #pragma unroll
            for (int e = 0; e < 4; ++e) {
              pr[2 * e] = (lo[e] & 0xffffu) | (hi[e] << 16);          // (x[kb+2e], x[kb+2e+8])
              pr[2 * e + 1] = (lo[e] >> 16) | (hi[e] & 0xffff0000u);  // (x[kb+2e+1], x[kb+2e+9])
            }
            // record ((sbl * 4 + b) * MB + m) * 4 + tt, its 16-byte halves swapped for odd m
            uint4* dst = reinterpret_cast<uint4*>(xs) + 2 * (((sbl * 4 + b) * MB + m) * 4 + tt);
            const int sw = m & 1;
            dst[sw] = make_uint4(pr[0], pr[1], pr[2], pr[3]);
            dst[sw ^ 1] = make_uint4(pr[4], pr[5], pr[6], pr[7]);
          }
          __syncthreads();
        }

        for (int base = kw; base < nsb; base += PD * KW) {
#if TCK_MMA_PIPE
          // Load the next round before multiplying this one: the chunk's next, else the next
          // chunk's first, else (TCK_MMA_GRID_Y) the next row block's first.
          const int nbase = base + PD * KW;
          if (nbase < nsb) {
            gemv_mma_round<N, K, PD, RT, KW>(wnext, w, n0, c0, nsb, nbase, g, t);
          } else if (c0 + XCH < sb_end) {
            const long long c1 = c0 + XCH;
            const int nsb2 = static_cast<int>(sb_end - c1 < XCH ? sb_end - c1 : XCH);
            gemv_mma_round<N, K, PD, RT, KW>(wnext, w, n0, c1, nsb2, kw, g, t);
            wnext_ok = true;
          } else if (GRIDY > 0 && rb + static_cast<int>(gridDim.y) < NRB) {
            constexpr int nsb0 = static_cast<int>(SB < XCH ? SB : XCH);
            const int n0next = n0 + static_cast<int>(gridDim.y) * 16 * RT * WR;
            gemv_mma_round<N, K, PD, RT, KW>(wnext, w, n0next, 0, nsb0, kw, g, t);
            wnext_ok = true;
          }
#else
          if (base != kw) load_round(base);
#endif
#pragma unroll
          for (int p = 0; p < PD; ++p) {
            const int sbl = base + p * KW;
            if (sbl >= nsb) break;  // the same for every lane of the warp
#pragma unroll
            for (int b = 0; b < 4; ++b) {
              uint32_t pa[RT][8], pb[RT][8];
#pragma unroll
              for (int r = 0; r < RT; ++r) {
                decode_pairs<T>(uint4_at(wv[p][r][0], b), pa[r]);
                decode_pairs<T>(uint4_at(wv[p][r][1], b), pb[r]);
              }
#pragma unroll
              for (int j = 0; j < BT; ++j) {
                const int m = 8 * j + g;  // this lane's row of x in the B fragments
                uint32_t bx[8];
                if (m < M) {
                  const int rec = 2 * (((sbl * 4 + b) * MB + m) * 4 + t);
                  const int sw = m & 1;
                  const uint4 v0 = xs4[rec + sw];
                  const uint4 v1 = xs4[rec + (sw ^ 1)];
                  bx[0] = v0.x, bx[1] = v0.y, bx[2] = v0.z, bx[3] = v0.w;
                  bx[4] = v1.x, bx[5] = v1.y, bx[6] = v1.z, bx[7] = v1.w;
                } else {
#pragma unroll
                  for (int i = 0; i < 8; ++i) bx[i] = 0u;
                }
#pragma unroll
                for (int r = 0; r < RT; ++r) {
#pragma unroll
                  for (int s2 = 0; s2 < 4; ++s2) {
                    const uint32_t af[4] = {pa[r][2 * s2], pb[r][2 * s2], pa[r][2 * s2 + 1],
                                            pb[r][2 * s2 + 1]};
                    const uint32_t bf[2] = {bx[2 * s2], bx[2 * s2 + 1]};
                    mma_16816<T>(acc[b % NA][r][j], af, bf);
                  }
                }
              }
            }
          }
#if TCK_MMA_PIPE
          if (nbase < nsb) {
            gemv_mma_copy_round(wv, wnext);
          }
#endif
        }
      }

      // The sets in a fixed order (deterministic); acc[0][r][j][q] is
      // y[m = 8j + 2t + (q & 1)][n0 + 16 r + g + 8 (q >> 1)].
#pragma unroll
      for (int a = 1; a < NA; ++a)
#pragma unroll
        for (int r = 0; r < RT; ++r)
#pragma unroll
          for (int j = 0; j < BT; ++j)
#pragma unroll
            for (int q = 0; q < 4; ++q) acc[0][r][j][q] += acc[a][r][j][q];
      // Partial sum i of the block (red's order: lane, then q, j, r, warp row) is output
      // (m, n): ix = {l, q, j, r, warp row} of i, then store_partial.
      struct Ix {
        int l, q, j, r, wr2;
      };
      auto index_of = [](int i) {
        const int l = i & 31, e = i >> 5;
        const int wr2 = e / PER, rjq = e % PER;
        const int q = rjq & 3, j = (rjq >> 2) % BT, r = (rjq >> 2) / BT;
        return Ix{l, q, j, r, wr2};
      };
      auto store_partial = [&](const Ix& ix, float sum) {
        const int m = 8 * ix.j + 2 * (ix.l & 3) + (ix.q & 1);
        const int n = nb + 16 * (RT * ix.wr2 + ix.r) + (ix.l >> 2) + 8 * (ix.q >> 1);
        if (m < M && n < N) store_out<T, A, R>(args, (mbase + m) * N + n, n, sum);
      };
      if constexpr (KW == 1 && !SPLIT) {
#pragma unroll
        for (int r = 0; r < RT; ++r)
#pragma unroll
          for (int j = 0; j < BT; ++j)
#pragma unroll
            for (int q = 0; q < 4; ++q) {
              const int m = 8 * j + 2 * t + (q & 1);
              const int n = n0 + 16 * r + g + 8 * (q >> 1);
              if (m < M && n < N) store_out<T, A, R>(args, (mbase + m) * N + n, n, acc[0][r][j][q]);
            }
      } else {
        // The block's partial sums, one per (warp row, accumulator, lane): with KW > 1 the
        // KW warps' added in warp order (deterministic) into red[0]; with KW = 1 where x
        // was (split-K only).
        float* part;
        if constexpr (KW == 1) {
          __syncthreads();  // every warp has read its last x
          part = reinterpret_cast<float*>(xs);
        } else {
          part = red[0];
        }
#pragma unroll
        for (int r = 0; r < RT; ++r)
#pragma unroll
          for (int j = 0; j < BT; ++j)
#pragma unroll
            for (int q = 0; q < 4; ++q)
              (KW > 1 ? red[kw] : part)[((wr * PER + (r * BT + j) * 4 + q) << 5) + lane] =
                  acc[0][r][j][q];
        if constexpr (KW > 1) {
          __syncthreads();
          for (int i = tid; i < WR * PER * 32; i += NT) {
            [[maybe_unused]] const Ix ix = index_of(i);
            float sum = 0.f;
#pragma unroll
            for (int v = 0; v < KW; ++v) sum += red[v][i];
            if constexpr (SPLIT) {
              part[i] = sum;  // red[0][i]: read above by this thread only
            } else {
              store_partial(ix, sum);
            }
          }
        }
        if constexpr (SPLIT) {
          // The cluster's partial sums in rank order (deterministic); block z stores the
          // z-th CS-th of them. The second barrier keeps every block's shared memory
          // until the other blocks have read it.
          // All of a thread's remote loads are issued before its first store (one round
          // trip to the other blocks' shared memory, not one per output).
          constexpr int TOT = WR * PER * 32;
          constexpr int SLICE = static_cast<int>(ceil_div(TOT, CS));
          constexpr int PT = static_cast<int>(ceil_div(SLICE, NT));  // outputs a thread
          cluster_sync();
          const int begin = kz * SLICE + tid, end = imin(TOT, (kz + 1) * SLICE);
          float sums[PT];
#pragma unroll
          for (int u = 0; u < PT; ++u) {
            const int i = begin + u * NT;
            sums[u] = 0.f;
            if (i < end) {
#pragma unroll
              for (int v = 0; v < CS; ++v)
                sums[u] += cluster_map(part, static_cast<unsigned>(v))[i];
            }
          }
#pragma unroll
          for (int u = 0; u < PT; ++u) {
            const int i = begin + u * NT;
            if (i < end) store_partial(index_of(i), sums[u]);
          }
          cluster_sync();
        }
        // The next row block's partial sums overwrite red: every thread has read it.
        if constexpr (GRIDY > 0) __syncthreads();
      }
    }
  }
}

/// Whether the tensor-core GEMV takes this problem: 16-bit elements, the NK layout, and at
/// most 65535 row blocks (gridDim.y; N up to about a million rows: larger layers, which
/// the planner allows up to 65535 x 64 columns, take the other paths).
template <typename T, int N, Layout L, int VARIANT, int MB>
constexpr bool gemv_mma_takes() {
  using Cfg = GemvMmaConfig<VARIANT, MB>;
  return L == Layout::NK && !std::is_same<T, float>::value &&
         ceil_div(N, 16 * Cfg::RT * Cfg::WR) <= 65535;
}

/// Blocks a cluster that split K for this shape: GemvMmaConfig's CS, at most the
/// superblocks of K (256 k each), so that every block has one.
template <int VARIANT, int MB, int K>
constexpr int gemv_mma_split() {
  constexpr long long sb = ceil_div(static_cast<long long>(K), 256LL);
  constexpr int cs = GemvMmaConfig<VARIANT, MB>::CS;
  return cs <= sb ? cs : cs / 2 <= sb ? cs / 2 : cs / 4 <= sb ? cs / 4 : 1;
}

template <typename T, int N, int K, Act A, Residual R, int VARIANT, int MB>
int launch_gemv_mma(const Args<T>& a, cudaStream_t stream) {
  using Cfg = GemvMmaConfig<VARIANT, MB>;
  constexpr int ROWS = 16 * Cfg::RT * Cfg::WR;
  static_assert(ceil_div(N, ROWS) <= 65535, "row blocks in gridDim.y (gemv_mma_takes)");
  constexpr int NRB = ceil_div(N, ROWS);
  constexpr int NT = Cfg::KW * Cfg::WR * 32;
  const unsigned mblocks = static_cast<unsigned>(ceil_div(a.M, static_cast<long long>(MB)));
  constexpr int CS = gemv_mma_split<VARIANT, MB, K>();
  if constexpr (CS > 1) {
    static std::atomic<int> clusters_ok[64];
    const auto kernel = gemv_mma_kernel<T, N, K, A, R, MB, Cfg::RT, Cfg::KW, Cfg::WR, CS>;
    const dim3 cluster(1, 1, static_cast<unsigned>(CS));
    if (cluster_launch_ok(kernel, NT, cluster, clusters_ok)) {
      const dim3 grid(mblocks, static_cast<unsigned>(NRB), static_cast<unsigned>(CS));
      const cudaError_t e = TCK_LAUNCH_CLUSTER(kernel, grid, NT, cluster, stream)(a);
      const cudaError_t last = cudaGetLastError();
      return static_cast<int>(e != cudaSuccess ? e : last);
    }
  }
  constexpr int GY = TCK_MMA_GRID_Y > 0 && TCK_MMA_GRID_Y < NRB ? TCK_MMA_GRID_Y : NRB;
  const dim3 grid(mblocks, static_cast<unsigned>(GY));
  const auto kernel = gemv_mma_kernel<T, N, K, A, R, MB, Cfg::RT, Cfg::KW, Cfg::WR, 1>;
  TCK_LAUNCH(kernel, grid, NT, stream)(a);
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
  if constexpr (gemv_mma_takes<T, N, L, VARIANT, MB>()) {
    if (device_has_mma16816()) return launch_gemv_mma<T, N, K, A, R, VARIANT, MB>(a, stream);
  }
  if constexpr (L == Layout::NK) {
    return launch_gemv_nk<T, N, K, A, R, VARIANT, MB>(a, stream);
  } else {
    return launch_gemv_kn<T, N, K, A, R, VARIANT, MB>(a, stream);
  }
}

}  // namespace detail
}  // namespace tck

#endif  // TCK_GEMV_CUH

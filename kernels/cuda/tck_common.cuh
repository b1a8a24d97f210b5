//===- tck_common.cuh - packed-ternary index and decode helpers -*- C++ -*-===//
//
// The arithmetic every ternary kernel shares, written once as __host__ __device__
// functions so that the host test (tests/cuda/host_check.cpp, plain g++) checks the
// exact code the kernels run:
//   - the 2-bit packed format (TOOLCHAIN.md "Packed ternary format"): row strides,
//     byte / shift of element j, code -> trit, masked word loads at row ends;
//   - the exact float decode of a trit by exponent "magic" (no int->float convert);
//   - the weight index of W[n][k] in both layouts (NK = F.linear, KN = x @ w);
//   - the implicit-GEMM mapping of a convolution (output pixel, reduction index
//     -> input coordinate or padding) and the NCHW offsets;
//   - the fused epilogue (scale, channel scale, bias, residual, activation).
//
// Compiles with nvcc and with a plain C++17 host compiler (no CUDA headers then).
// Kept free of include-time side effects so that the code generator can embed the
// headers of this directory, concatenated in file-name order, into one .cu file.
//
//===----------------------------------------------------------------------===//
#ifndef TCK_COMMON_CUH
#define TCK_COMMON_CUH

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define TCK_HD __host__ __device__
#define TCK_INLINE __forceinline__
#else
#define TCK_HD
#define TCK_INLINE inline
#endif

// A read-only global load on the device (LDG through the non-coherent path), a plain
// load on the host.
#if defined(__CUDA_ARCH__)
#define TCK_LDG(p) __ldg(p)
#else
#define TCK_LDG(p) (*(p))
#endif

namespace tck {

enum class Act : int {
  None = 0,
  ReLU = 1,
  ReLU6 = 2,
  GELU = 3,  // exact erf form (torch F.gelu default)
  SiLU = 4,
  Sigmoid = 5,
  Tanh = 6,
  Hardswish = 7
};
enum class Layout : int { NK = 0, KN = 1 };
enum class Residual : int { None = 0, BeforeAct = 1, AfterAct = 2 };

// ---- small integer helpers -------------------------------------------------------------

TCK_HD constexpr long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }
TCK_HD constexpr long long round_up(long long a, long long b) { return ceil_div(a, b) * b; }
TCK_HD constexpr int imin(int a, int b) { return a < b ? a : b; }
TCK_HD constexpr int imax(int a, int b) { return a > b ? a : b; }
TCK_HD constexpr bool is_pow2(long long v) { return v > 0 && (v & (v - 1)) == 0; }

// ---- the packed format -----------------------------------------------------------------

/// Codes: value + 1. 0b00 = -1, 0b01 = 0, 0b10 = +1, 0b11 invalid (decodes as +2, like
/// tritonrt.unpack_ternary without check=True).
inline constexpr unsigned kCodeZero = 1u;
/// A byte / word of four / sixteen zero trits (the row padding code 01 repeated).
inline constexpr uint8_t kZeroByte = 0x55u;
inline constexpr uint32_t kZeroWord = 0x55555555u;

/// Bytes per packed row of `len` elements: ceil(len / 4).
TCK_HD constexpr long long packed_row_bytes(long long len) { return (len + 3) / 4; }
/// The byte of a row that holds element j.
TCK_HD constexpr long long packed_elem_byte(long long j) { return j >> 2; }
/// The bit position of element j inside its byte: 2 * (j % 4).
TCK_HD constexpr int packed_elem_shift(long long j) { return static_cast<int>(j & 3) * 2; }
/// The 2-bit code of element j of a packed row.
TCK_HD inline unsigned packed_code(const uint8_t* row, long long j) {
  return (static_cast<unsigned>(row[packed_elem_byte(j)]) >> packed_elem_shift(j)) & 3u;
}
/// code -> trit value (-1, 0, +1; the invalid code 3 gives 2).
TCK_HD constexpr int code_to_trit(unsigned code) { return static_cast<int>(code & 3u) - 1; }
/// The code of element i (0..15) of a little-endian 32-bit word of 16 codes.
TCK_HD constexpr unsigned word_code(uint32_t w, int i) { return (w >> (2 * i)) & 3u; }

/// Bit masks of a packed word: bit 2i of `pos` is set when element i is +1 (code 10),
/// bit 2i of `neg` when it is -1 (code 00). (Invalid code 11 sets neither bit.)
TCK_HD constexpr uint32_t word_pos_mask(uint32_t w) { return (w >> 1) & ~w & kZeroWord; }
TCK_HD constexpr uint32_t word_neg_mask(uint32_t w) { return ~(w | (w >> 1)) & kZeroWord; }
/// Whether all 16 / 4 trits are zero (skip test).
TCK_HD constexpr bool word_is_zero(uint32_t w) { return w == kZeroWord; }

/// Bytes [b0, b0 + 4) of a packed row of `row_bytes` bytes as a little-endian word,
/// reading byte by byte; bytes at or past the row end read as 0x55 (zero trits), so a
/// word never reaches into the next row or past the buffer.
TCK_HD TCK_INLINE uint32_t load_word_masked(const uint8_t* row, long long b0, long long row_bytes) {
  uint32_t w = 0;
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
  for (int i = 0; i < 4; ++i) {
    const long long b = b0 + i;
    const uint32_t v = b < row_bytes ? static_cast<uint32_t>(TCK_LDG(row + b)) : uint32_t(kZeroByte);
    w |= v << (8 * i);
  }
  return w;
}

/// Like load_word_masked for units of NBYTES (1, 2 or 4) bytes.
template <int NBYTES>
TCK_HD TCK_INLINE uint32_t load_unit_masked(const uint8_t* row, long long b0, long long row_bytes) {
  static_assert(NBYTES == 1 || NBYTES == 2 || NBYTES == 4, "unit of 1, 2 or 4 bytes");
  uint32_t w = 0;
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
  for (int i = 0; i < NBYTES; ++i) {
    const long long b = b0 + i;
    const uint32_t v = b < row_bytes ? static_cast<uint32_t>(TCK_LDG(row + b)) : uint32_t(kZeroByte);
    w |= v << (8 * i);
  }
  return w;
}

/// The zero pattern of a unit of NBYTES bytes.
template <int NBYTES>
TCK_HD constexpr uint32_t zero_unit() {
  return NBYTES == 4 ? kZeroWord : (NBYTES == 2 ? 0x5555u : 0x55u);
}

// ---- exact float decode ------------------------------------------------------------------
//
// Element i (0..7) of the low 16 bits of h sits at bits 2i..2i+1. OR-ing those two bits
// (kept in place) into the float 2^(23-2i) puts them at the mantissa position of weight
// 2^(23-2i) * 2^(2i-23) = 1, so the float is 2^(23-2i) + code exactly; subtracting
// 2^(23-2i) + 1 gives code - 1 in {-1, 0, 1, 2} exactly. One LOP3 and one FADD per trit
// (elements 8..15 of a word use h = w >> 16).

TCK_HD TCK_INLINE float bits_to_float(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
#endif
}
TCK_HD TCK_INLINE uint32_t float_to_bits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
#endif
}

/// The float bits of 2^(23-2i) (biased exponent 150 - 2i), for i in 0..7.
TCK_HD constexpr uint32_t trit_magic_bits(int i) { return static_cast<uint32_t>(150 - 2 * i) << 23; }
/// 2^(23-2i) + 1, exact in float for i in 0..7.
TCK_HD constexpr float trit_magic_bias(int i) { return static_cast<float>((1 << (23 - 2 * i)) + 1); }
/// The mask of element i (0..7) in a half word.
TCK_HD constexpr uint32_t trit_mask(int i) { return 3u << (2 * i); }

/// Trit i (0..7) of the low 16 bits of h as an exact float.
TCK_HD TCK_INLINE float trit_f32_lo8(uint32_t h, int i) {
  return bits_to_float((h & trit_mask(i)) | trit_magic_bits(i)) - trit_magic_bias(i);
}
/// Trit j (0..15) of a packed word as an exact float.
TCK_HD TCK_INLINE float trit_f32(uint32_t w, int j) {
  return j < 8 ? trit_f32_lo8(w, j) : trit_f32_lo8(w >> 16, j - 8);
}

// ---- weight indexing ------------------------------------------------------------------------
//
// The logical weight is W[n][k] (n = output feature, k = reduction index).
// Layout::NK packs N rows of K elements (torch F.linear / conv); Layout::KN packs K rows of
// N elements (x @ w with w of shape [K, N]).

/// Bytes per packed row.
TCK_HD constexpr long long weight_row_bytes(Layout l, long long N, long long K) {
  return l == Layout::NK ? packed_row_bytes(K) : packed_row_bytes(N);
}
/// Total packed bytes.
TCK_HD constexpr long long weight_bytes(Layout l, long long N, long long K) {
  return (l == Layout::NK ? N : K) * weight_row_bytes(l, N, K);
}
/// Byte offset of W[n][k] in the packed buffer.
TCK_HD constexpr long long weight_byte_offset(Layout l, long long N, long long K, long long n,
                                              long long k) {
  return l == Layout::NK ? n * packed_row_bytes(K) + packed_elem_byte(k)
                         : k * packed_row_bytes(N) + packed_elem_byte(n);
}
/// Bit shift of W[n][k] inside its byte.
TCK_HD constexpr int weight_bit_shift(Layout l, long long n, long long k) {
  return l == Layout::NK ? packed_elem_shift(k) : packed_elem_shift(n);
}
/// The trit W[n][k].
TCK_HD inline int weight_trit(Layout l, const uint8_t* w, long long N, long long K, long long n,
                              long long k) {
  return code_to_trit(static_cast<unsigned>(w[weight_byte_offset(l, N, K, n, k)]) >>
                      weight_bit_shift(l, n, k));
}

// ---- GEMV / GEMM work decomposition (shared by kernels and the host mirror) ------------------

/// M bucket of the GEMV path: 1, 2, 4 or 8 rows of x per launch (M <= 8).
TCK_HD constexpr int gemv_bucket(long long M) { return M <= 1 ? 1 : M <= 2 ? 2 : M <= 4 ? 4 : 8; }
/// Largest M that takes the GEMV path.
inline constexpr int kGemvMaxM = 8;
/// The tensor-core GEMV (16-bit types, NK layout) serves up to this many rows of x.
inline constexpr long long kMmaGemvMaxM = 256;

/// NK GEMV: a row is processed in units of 16 elements (one 32-bit word, 4 bytes); the last
/// unit of a row may be partial (bytes past the row end read as zero trits).
TCK_HD constexpr long long gemv_nk_units(long long K) { return ceil_div(packed_row_bytes(K), 4); }
/// KN GEMV: a K-row is processed in column units of CB bytes (4*CB columns).
TCK_HD constexpr long long gemv_kn_units(long long N, int CB) {
  return ceil_div(packed_row_bytes(N), CB);
}
/// KN GEMV unit bytes for an M bucket: keeps MB * 4 * CB accumulators <= 32 per thread,
/// then the largest of 4, 2, 1 that divides the row bytes (so a unit never crosses a row).
TCK_HD constexpr int gemv_kn_unit_bytes(int MB, long long N) {
  return (MB <= 2 && packed_row_bytes(N) % 4 == 0)   ? 4
         : (MB <= 4 && packed_row_bytes(N) % 2 == 0) ? 2
                                                     : 1;
}

// ---- convolution geometry ----------------------------------------------------------------------

/// Output size of a convolution along one axis (0 when the kernel does not fit).
TCK_HD constexpr long long conv_out_dim(long long in, int k, int s, int p, int d) {
  return in + 2LL * p - static_cast<long long>(d) * (k - 1) - 1 < 0
             ? 0
             : (in + 2LL * p - static_cast<long long>(d) * (k - 1) - 1) / s + 1;
}

/// An output pixel of the implicit GEMM: row p of the GEMM is (b, oh, ow) with
/// p = (b * OH + oh) * OW + ow; ih0 / iw0 are the input coordinates of tap (0, 0).
struct ConvPixel {
  long long b;
  int oh, ow;
  int ih0, iw0;
};

/// Compile-time geometry of a convolution [COUT, CIN/G, KH, KW] on NCHW input.
/// The implicit GEMM of group g: A[p][kk] = x[b][g*CING + c][ih][iw] (0 in the padding) with
/// kk = (c * KH + kh) * KW + kw, B[kk][n] = W[g*COUTG + n][kk] (NK-packed rows of KDIM).
template <int CIN, int COUT, int KH, int KW, int SH, int SW, int PH, int PW, int DH, int DW,
          int GROUPS>
struct ConvGeom {
  static_assert(CIN > 0 && COUT > 0 && KH > 0 && KW > 0, "positive sizes");
  static_assert(SH > 0 && SW > 0 && DH > 0 && DW > 0 && PH >= 0 && PW >= 0, "stride/dilation/pad");
  static_assert(GROUPS > 0 && CIN % GROUPS == 0 && COUT % GROUPS == 0, "groups divide channels");
  static constexpr int CIN_ = CIN, COUT_ = COUT, KH_ = KH, KW_ = KW, SH_ = SH, SW_ = SW;
  static constexpr int PH_ = PH, PW_ = PW, DH_ = DH, DW_ = DW, GROUPS_ = GROUPS;
  static constexpr int CING = CIN / GROUPS;
  static constexpr int COUTG = COUT / GROUPS;
  static constexpr int TAPS = KH * KW;
  static constexpr int KDIM = CING * TAPS;  // GEMM reduction length = packed row length
  static constexpr int NDIM = COUTG;        // GEMM columns per group
  static constexpr long long ROW_BYTES = packed_row_bytes(KDIM);
  static constexpr bool DEPTHWISE = GROUPS == CIN && GROUPS == COUT;

  /// GEMM row p -> output pixel.
  TCK_HD static TCK_INLINE ConvPixel pixel(long long p, int OH, int OW) {
    ConvPixel px;
    const long long hw = static_cast<long long>(OH) * OW;
    px.b = p / hw;
    const int r = static_cast<int>(p - px.b * hw);
    px.oh = r / OW;
    px.ow = r - px.oh * OW;
    px.ih0 = px.oh * SH - PH;
    px.iw0 = px.ow * SW - PW;
    return px;
  }
  /// Reduction index kk -> (c, kh, kw), c relative to the group.
  TCK_HD static TCK_INLINE void tap(int kk, int& c, int& kh, int& kw) {
    c = kk / TAPS;
    const int t = kk - c * TAPS;
    kh = t / KW;
    kw = t - kh * KW;
  }
  /// Input coordinates of tap (kh, kw) for a pixel; false in the zero padding.
  TCK_HD static TCK_INLINE bool input_coord(const ConvPixel& px, int kh, int kw, int H, int W,
                                            int& ih, int& iw) {
    ih = px.ih0 + kh * DH;
    iw = px.iw0 + kw * DW;
    return ih >= 0 && ih < H && iw >= 0 && iw < W;
  }
  /// Input offset (dh, dw) = (kh * DH, kw * DW) of filter tap t = kh * KW + kw.
  TCK_HD static TCK_INLINE void tap_delta(int t, int& dh, int& dw) {
    const int kh = t / KW;
    dh = kh * DH;
    dw = (t - kh * KW) * DW;
  }
  /// NCHW offset of x[b][c_abs][ih][iw].
  TCK_HD static TCK_INLINE long long x_offset(long long b, int c_abs, int ih, int iw, int H, int W) {
    return ((b * CIN + c_abs) * H + ih) * static_cast<long long>(W) + iw;
  }
  /// NCHW offset of y[b][co][oh][ow] (also the residual's).
  TCK_HD static TCK_INLINE long long y_offset(long long b, int co, int oh, int ow, int OH, int OW) {
    return ((b * COUT + co) * OH + oh) * static_cast<long long>(OW) + ow;
  }
  /// The implicit-GEMM element A[p][kk] of group g as an offset into x, or -1 for padding
  /// (or kk >= KDIM).
  TCK_HD static TCK_INLINE long long a_offset(const ConvPixel& px, int g, int kk, int H, int W) {
    if (kk >= KDIM) return -1;
    int c, kh, kw, ih, iw;
    tap(kk, c, kh, kw);
    if (!input_coord(px, kh, kw, H, W, ih, iw)) return -1;
    return x_offset(px.b, g * CING + c, ih, iw, H, W);
  }
};

// ---- run-time arguments and GEMM problems --------------------------------------------------------

/// Everything a kernel launch needs at run time. M is the GEMM row count (linear: rows of
/// x; conv: batch * OH * OW). H, W, OH, OW are used by the conv kernels only.
template <typename T>
struct Args {
  const T* x;
  const uint8_t* w;
  float scale;
  const float* chscale;
  const float* bias;
  const T* residual;
  T* y;
  long long M;
  long long batch;
  int H, W, OH, OW;
  bool x_vec16;  // x is 16-byte aligned (vector loads allowed where the row length permits)
};

/// A little-endian 32-bit word at a 4-byte aligned address of the packed buffer.
TCK_HD TCK_INLINE uint32_t load_word_aligned(const uint8_t* p) {
#ifdef __CUDA_ARCH__
  return __ldg(reinterpret_cast<const unsigned int*>(p));
#else
  uint32_t v;
  memcpy(&v, p, sizeof v);
  return v;
#endif
}
/// NBYTES (1, 2, 4) little-endian bytes at an NBYTES-aligned address.
template <int NBYTES>
TCK_HD TCK_INLINE uint32_t load_unit_aligned(const uint8_t* p) {
#ifdef __CUDA_ARCH__
  if constexpr (NBYTES == 4) return __ldg(reinterpret_cast<const unsigned int*>(p));
  else if constexpr (NBYTES == 2) return __ldg(reinterpret_cast<const unsigned short*>(p));
  else return __ldg(p);
#else
  uint32_t v = 0;
  for (int i = 0; i < NBYTES; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
#endif
}

/// y = x @ W^T (NK) or x @ W (KN): A[m][k] = x[m * K + k], out(m, n) = y[m * N + n].
template <int N_, int K_, Layout L_>
struct LinearProblem {
  static constexpr bool CONV = false;
  static constexpr int NDIM = N_;
  static constexpr int KDIM = K_;
  static constexpr int GROUPS = 1;
  static constexpr Layout L = L_;
  static constexpr long long ROW_BYTES = weight_row_bytes(L_, N_, K_);

  struct Row {  // an A row
    long long off;
    bool valid;
  };
  template <typename T>
  TCK_HD static TCK_INLINE Row row(const Args<T>& a, long long m, int /*g*/) {
    Row r;
    r.valid = m < a.M;
    r.off = m * KDIM;
    return r;
  }
  /// Offset of A[m][k] in x, or -1 (outside).
  template <typename T>
  TCK_HD static TCK_INLINE long long a_off(const Args<T>&, const Row& r, int /*g*/, int k) {
    return (r.valid && k < KDIM) ? r.off + k : -1;
  }
  /// Output (and residual) offset of (m, n) = base + n * cstride.
  struct Out {
    long long base, cstride;
  };
  template <typename T>
  TCK_HD static TCK_INLINE Out out(const Args<T>&, long long m, int /*g*/) {
    return Out{m * NDIM, 1};
  }
};

/// Implicit GEMM of a convolution, group g: A[p][kk] gathered from NCHW x, out(p, n) =
/// y[b][g * COUTG + n][oh][ow].
template <class G>
struct ConvProblem {
  static constexpr bool CONV = true;
  static constexpr int NDIM = G::NDIM;
  static constexpr int KDIM = G::KDIM;
  static constexpr int GROUPS = G::GROUPS_;
  static constexpr Layout L = Layout::NK;
  static constexpr long long ROW_BYTES = G::ROW_BYTES;

  struct Row {
    ConvPixel px;
    bool valid;
  };
  template <typename T>
  TCK_HD static TCK_INLINE Row row(const Args<T>& a, long long m, int /*g*/) {
    Row r;
    r.valid = m < a.M;
    r.px = G::pixel(r.valid ? m : 0, a.OH, a.OW);
    return r;
  }
  template <typename T>
  TCK_HD static TCK_INLINE long long a_off(const Args<T>& a, const Row& r, int g, int k) {
    return r.valid ? G::a_offset(r.px, g, k, a.H, a.W) : -1;
  }
  struct Out {
    long long base, cstride;
  };
  template <typename T>
  TCK_HD static TCK_INLINE Out out(const Args<T>& a, long long m, int g) {
    const ConvPixel px = G::pixel(m, a.OH, a.OW);
    return Out{G::y_offset(px.b, g * NDIM, px.oh, px.ow, a.OH, a.OW),
               static_cast<long long>(a.OH) * a.OW};
  }
};

/// The packed word (16 trits) of B for group g at (n, k .. k+15) (NK: along a weight row,
/// k a multiple of 16) or (k, n .. n+15) (KN: along a K row, n a multiple of 16); zero trits
/// outside the weight. Never reads outside the row.
template <class P>
TCK_HD TCK_INLINE uint32_t load_b_word(const uint8_t* w, int g, int n, int k) {
  constexpr long long RB = P::ROW_BYTES;
  long long row, b0;
  bool ok;
  if constexpr (P::L == Layout::NK) {
    ok = n < P::NDIM;
    row = static_cast<long long>(g) * P::NDIM + n;
    b0 = k >> 2;
  } else {
    ok = k < P::KDIM;
    row = k;
    b0 = n >> 2;
  }
  if (!ok || b0 >= RB) return kZeroWord;
  const uint8_t* rp = w + row * RB;
  if constexpr (RB % 4 == 0) {
    return load_word_aligned(rp + b0);
  } else {
    return load_word_masked(rp, b0, RB);
  }
}

// ---- tile configurations and thread -> data maps ---------------------------------------------------
//
// The kernels take every index below from these functions; tests/cuda/host_check.cpp replays
// them for every thread of every configuration and checks coverage and results.

/// Tensor-core GEMM tile: BM x BN x BK, WM x WN warps, 16x16x16 fragments.
template <int BM_, int BN_, int BK_, int WM_, int WN_>
struct MmaTile {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, WM = WM_, WN = WN_;
  static constexpr int NWARPS = WM * WN;
  static constexpr int NT = NWARPS * 32;
  static constexpr int WTM = BM / WM, WTN = BN / WN;  // warp tile
  static constexpr int FM = WTM / 16, FN = WTN / 16;  // fragments per warp
  static_assert(WTM % 16 == 0 && WTN % 16 == 0 && BK % 16 == 0, "16x16x16 fragments");
};
template <int VARIANT>
struct MmaConfig;
template <>
struct MmaConfig<0> : MmaTile<64, 64, 32, 2, 2> {};
template <>
struct MmaConfig<1> : MmaTile<128, 128, 32, 2, 4> {};
template <>
struct MmaConfig<2> : MmaTile<32, 128, 32, 1, 4> {};

/// Shared layout and thread maps of the tensor-core kernel. ACOL: A stored column-major
/// [BK][BM+8] (conv gather along pixels), else row-major [BM][BK+8]. BCOL (NK): B stored
/// [BN][BK+8] (col-major B), else (KN) [BK][BN+8] (row-major B). Offsets in elements.
template <class Cfg, bool ACOL, bool BCOL>
struct MmaMap {
  static constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, NT = Cfg::NT;
  static constexpr int LDA = ACOL ? BM + 8 : BK + 8;
  static constexpr int LDB = BCOL ? BK + 8 : BN + 8;
  static constexpr int A_ELEMS = ACOL ? BK * LDA : BM * LDA;
  static constexpr int B_ELEMS = BCOL ? BN * LDB : BK * LDB;
  static constexpr int STAGE = A_ELEMS + B_ELEMS;
  static constexpr int VA = ACOL ? 1 : (BM * BK / 8) / NT;  // row-major A: 8-element vectors
  static constexpr int EA = ACOL ? (BM * BK) / NT : 1;      // col-major A: elements
  static constexpr int VB = (BN * BK / 16) / NT;            // B: packed words
  static_assert(ACOL || (BM * BK / 8) % NT == 0, "A vectors per thread");
  static_assert(!ACOL || ((BM * BK) % NT == 0 && NT % BM == 0), "A elements per thread");
  static_assert((BN * BK / 16) % NT == 0, "B words per thread");

  /// Row-major A: vector i of thread tid covers (r, k .. k+7).
  TCK_HD static TCK_INLINE void a_vec(int tid, int i, int& r, int& k) {
    const int v = tid + i * NT;
    r = v / (BK / 8);
    k = (v % (BK / 8)) * 8;
  }
  /// Col-major A: element i of thread tid is (r, k); r is the same for all i.
  TCK_HD static TCK_INLINE void a_elem(int tid, int i, int& r, int& k) {
    r = tid % BM;
    k = tid / BM + i * (NT / BM);
  }
  TCK_HD static constexpr int a_smem(int r, int k) { return ACOL ? k * LDA + r : r * LDA + k; }
  /// Word i of thread tid: NK covers (n, k .. k+15), KN covers (k, n .. n+15).
  TCK_HD static TCK_INLINE void b_word(int tid, int i, int& n, int& k) {
    const int v = tid + i * NT;
    if (BCOL) {
      n = v / (BK / 16);
      k = (v % (BK / 16)) * 16;
    } else {
      n = (v % (BN / 16)) * 16;
      k = v / (BN / 16);
    }
  }
  TCK_HD static constexpr int b_smem(int n, int k) { return BCOL ? n * LDB + k : k * LDB + n; }
  /// Warp w's fragment (i, j) starts at tile row / column:
  TCK_HD static constexpr int frag_row(int warp, int i) { return (warp / Cfg::WN) * Cfg::WTM + i * 16; }
  TCK_HD static constexpr int frag_col(int warp, int j) { return (warp % Cfg::WN) * Cfg::WTN + j * 16; }
  /// Epilogue: element e (0..7) of lane in a 16x16 patch; conv runs lanes along rows (pixels,
  /// contiguous in NCHW), linear along columns (contiguous in y).
  TCK_HD static TCK_INLINE void epi(bool conv, int lane, int e, int& r, int& c) {
    if (conv) {
      r = lane & 15;
      c = (lane >> 4) + 2 * e;
    } else {
      c = lane & 15;
      r = (lane >> 4) + 2 * e;
    }
  }
};

/// CUDA-core GEMM tile: BM x BN x BK, TM x TN outputs per thread in 4x4 sub-tiles spread
/// BM/SM (BN/SN) apart.
template <int BM_, int BN_, int BK_, int TM_, int TN_>
struct SimtTile {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, TM = TM_, TN = TN_;
  static constexpr int TX = BN / TN, TY = BM / TM;  // threads along n, m
  static constexpr int NT = TX * TY;
  static constexpr int SM = TM / 4, SN = TN / 4;
  static_assert(TM % 4 == 0 && TN % 4 == 0 && BM % TM == 0 && BN % TN == 0, "tile shape");
  static_assert(BK % 16 == 0 && BN % 16 == 0, "whole packed words per tile");
};
template <int VARIANT>
struct SimtConfig;
template <>
struct SimtConfig<0> : SimtTile<64, 64, 16, 4, 4> {};
template <>
struct SimtConfig<1> : SimtTile<128, 128, 16, 8, 8> {};
template <>
struct SimtConfig<2> : SimtTile<32, 128, 16, 4, 4> {};

/// Shared layout As[k][m] (LDA = BM+4), Bs[k][n] (LDB = BN+4) and thread maps of the
/// CUDA-core kernel.
template <class Cfg, bool CONV, Layout L>
struct SimtMap {
  static constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, NT = Cfg::NT;
  static constexpr int LDA = BM + 4, LDB = BN + 4;
  static constexpr int EA = (BM * BK + NT - 1) / NT;
  static constexpr int NWB = BN * BK / 16;
  static constexpr int VB = (NWB + NT - 1) / NT;
  static_assert(!CONV || NT % BM == 0, "conv A mapping");
  /// A element i of thread tid; linear runs along k (x rows), conv along m (pixels).
  TCK_HD static TCK_INLINE bool a_elem(int tid, int i, int& r, int& k) {
    const int e = tid + i * NT;
    if (CONV) {
      r = e % BM;
      k = e / BM;
    } else {
      r = e / BK;
      k = e % BK;
    }
    return e < BM * BK;
  }
  /// B word i of thread tid: NK covers (n, k .. k+15), KN covers (k, n .. n+15).
  TCK_HD static TCK_INLINE bool b_word(int tid, int i, int& n, int& k) {
    const int v = tid + i * NT;
    if (L == Layout::NK) {
      n = v % BN;
      k = (v / BN) * 16;
    } else {
      n = (v % (BN / 16)) * 16;
      k = v / (BN / 16);
    }
    return v < NWB;
  }
  /// Output row i (0..TM-1) / column j (0..TN-1) of thread tid inside the tile.
  TCK_HD static constexpr int out_row(int tid, int i) {
    return (i / 4) * (BM / Cfg::SM) + (tid / Cfg::TX) * 4 + (i % 4);
  }
  TCK_HD static constexpr int out_col(int tid, int j) {
    return (j / 4) * (BN / Cfg::SN) + (tid % Cfg::TX) * 4 + (j % 4);
  }
};

/// NK GEMV: P units (16 elements) per lane per chunk, a chunk of 32*P units; x staged as
/// float with 20 floats per unit (16 + 4 pad: conflict-free float4 reads).
template <int MB>
struct GemvNkChunk {
  static constexpr int P = MB <= 2 ? 4 : (MB == 4 ? 2 : 1);
  static constexpr int UNITS = 32 * P;
  static constexpr int XS = 20;
  /// Shared slot of chunk element e.
  TCK_HD static constexpr int slot(int e) { return (e >> 4) * XS + (e & 15); }
};
template <int VARIANT>
struct GemvNkConfig;
template <>
struct GemvNkConfig<0> {
  static constexpr int ROWS = 4, WARPS = 4;
};
template <>
struct GemvNkConfig<1> {
  static constexpr int ROWS = 2, WARPS = 4;  // twice the blocks: small N
};
template <>
struct GemvNkConfig<2> {
  static constexpr int ROWS = 8, WARPS = 2;  // more x reuse per shared load
};
/// Word `unit` (16 trits) of weight row `row` of an NK GEMV (zero trits past the row end).
template <int K>
TCK_HD TCK_INLINE uint32_t gemv_nk_word(const uint8_t* w, int row, int unit) {
  constexpr long long KB = packed_row_bytes(K);
  const uint8_t* rp = w + static_cast<long long>(row) * KB;
  if constexpr (KB % 4 == 0) {
    return load_word_aligned(rp + 4LL * unit);
  } else {
    return load_word_masked(rp, 4LL * unit, KB);
  }
}

/// KN GEMV: column units per block. VARIANT 0 aims at >= 128 blocks, 1 at >= 64, 2 takes
/// 32 units (whole 128-byte row segments per warp).
template <int VARIANT>
TCK_HD constexpr int gemv_kn_cwb(long long NU) {
  if (VARIANT == 2) return 32;
  const long long target = VARIANT == 0 ? 128 : 64;
  int c = 32;
  while (c > 1 && ceil_div(NU, c) < target) c >>= 1;
  return c;
}
inline constexpr int kGemvKnThreads = 256;
inline constexpr int kGemvKnUnroll = 4;
/// Unit gu (CB bytes, 4*CB columns) of K row k of a KN GEMV (CB divides the row bytes).
template <int N, int CB>
TCK_HD TCK_INLINE uint32_t gemv_kn_unit(const uint8_t* w, int k, long long gu) {
  return load_unit_aligned<CB>(w + static_cast<long long>(k) * packed_row_bytes(N) + gu * CB);
}

/// Depthwise: NT threads x PPT pixels per block.
template <int VARIANT>
struct DwConfig;
template <>
struct DwConfig<0> {
  static constexpr int NT = 256, PPT = 1;
};
template <>
struct DwConfig<1> {
  static constexpr int NT = 128, PPT = 2;
};
template <>
struct DwConfig<2> {
  static constexpr int NT = 256, PPT = 4;
};

// ---- epilogue ----------------------------------------------------------------------------------

template <Act A>
TCK_HD TCK_INLINE float act_apply(float v) {
  if constexpr (A == Act::None) {
    return v;
  } else if constexpr (A == Act::ReLU) {
    return v < 0.f ? 0.f : v;  // NaN passes through, as torch.relu
  } else if constexpr (A == Act::ReLU6) {
    return v < 0.f ? 0.f : (v > 6.f ? 6.f : v);
  } else if constexpr (A == Act::GELU) {
    return 0.5f * v * (1.f + erff(v * 0.70710678118654752440f));
  } else if constexpr (A == Act::SiLU) {
    return v / (1.f + expf(-v));
  } else if constexpr (A == Act::Sigmoid) {
    return 1.f / (1.f + expf(-v));
  } else if constexpr (A == Act::Tanh) {
    return tanhf(v);
  } else {  // Hardswish: x * relu6(x + 3) / 6
    const float r = v + 3.f;
    return v * (r < 0.f ? 0.f : (r > 6.f ? 6.f : r)) / 6.f;
  }
}

/// The fused epilogue of one output: acc is sum_k x * q (float).
///   v = scale * acc; v = v * chs + bias; [v += res]; v = act(v); [v += res]
/// (chs = chscale[n] or 1, bias = bias[n] or 0, res = residual at the output's index.)
template <Act A, Residual R>
TCK_HD TCK_INLINE float epilogue(float acc, float scale, float chs, float bias, float res) {
  float v = scale * acc;
  v = v * chs + bias;
  if constexpr (R == Residual::BeforeAct) v += res;
  v = act_apply<A>(v);
  if constexpr (R == Residual::AfterAct) v += res;
  return v;
}

}  // namespace tck

#endif  // TCK_COMMON_CUH

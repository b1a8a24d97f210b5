// Host checks of the ternary CUDA kernels' arithmetic (kernels/cuda/tck_common.cuh).
//
//   g++ -std=c++17 -O2 -Wall -Wextra -Werror -I kernels/cuda tests/cuda/host_check.cpp
//       -o host_check && ./host_check
//
// (a) An independent packer mirroring runtime/tritonrt/packing.py (checked against bytes
//     produced by pack_ternary) packs random ternary matrices of every shape 1..67 x 1..67;
//     the header's decode helpers must recover every element in both layouts. The exact
//     float decode, the +/- masks and the masked word loads are checked exhaustively.
// (b) Host replays of the kernels, built only from the header's helpers (the same thread ->
//     data maps, word loads, decode, shared-memory layouts, fragment origins, reductions and
//     epilogue the kernels call), run every tile configuration (VARIANT 0..2) of the GEMV,
//     tensor-core GEMM, CUDA-core GEMM, implicit-GEMM conv and depthwise kernels over odd
//     shapes, strides, paddings, dilations and groups with every epilogue, and are compared
//     with a naive reference computed from the raw ternary values. Shared memory is
//     poisoned with NaN so that reading a slot no thread wrote shows up; every output must
//     be written exactly once.
// (c) Coverage / alignment / bank-conflict properties of every configuration.
//
// Prints "N passed, N failed" last; exits 1 on any failure.
#include "tritonc_kernels.cuh"

#include <cmath>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

using namespace tck;

namespace {

int g_pass = 0;
int g_fail = 0;

void check(bool ok, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void check(bool ok, const char* fmt, ...) {
  if (ok) {
    ++g_pass;
    return;
  }
  ++g_fail;
  if (g_fail <= 40) {
    va_list ap;
    va_start(ap, fmt);
    std::printf("FAIL: ");
    std::vprintf(fmt, ap);
    std::printf("\n");
    va_end(ap);
  }
}

const float kNaN = std::numeric_limits<float>::quiet_NaN();

struct Rng {
  std::mt19937_64 g{12345};
  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(g); }
  double unit() { return std::uniform_real_distribution<double>(0.0, 1.0)(g); }
  int trit(double zero_frac) {
    if (unit() < zero_frac) return 0;
    return uniform(0, 1) ? 1 : -1;
  }
  // Values on a 1/4 grid: every sum below is exact in float, whatever the order.
  float xval() { return static_cast<float>(uniform(-8, 8)) * 0.25f; }
};

/// A copy of a buffer that ends right before an inaccessible page, so that a replay reading
/// past the end of the packed weight or of x crashes (and fails the test) instead of
/// silently reading neighbouring memory.
template <typename T>
class Guarded {
 public:
  explicit Guarded(const std::vector<T>& v) : n_(v.size()) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t bytes = n_ * sizeof(T);
    len_ = (bytes + page - 1) / page * page + page;
    void* m = mmap(nullptr, len_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
      std::perror("mmap");
      std::exit(2);
    }
    base_ = static_cast<char*>(m);
    mprotect(base_ + len_ - page, page, PROT_NONE);
    data_ = reinterpret_cast<T*>(base_ + len_ - page - bytes);
    if (bytes) std::memcpy(data_, v.data(), bytes);
  }
  ~Guarded() { munmap(base_, len_); }
  Guarded(const Guarded&) = delete;
  Guarded& operator=(const Guarded&) = delete;
  const T* data() const { return data_; }

 private:
  size_t n_, len_;
  char* base_;
  T* data_;
};

// ---- independent packer (mirrors runtime/tritonrt/packing.py pack_ternary) ----------------------

std::vector<uint8_t> pack_rows(const std::vector<int>& q, int rows, int cols) {
  const int nbytes = (cols + 3) / 4;
  std::vector<uint8_t> out(static_cast<size_t>(rows) * nbytes);
  for (int r = 0; r < rows; ++r) {
    for (int b = 0; b < nbytes; ++b) {
      unsigned v = 0;
      for (int j = 0; j < 4; ++j) {
        const int c = 4 * b + j;
        const unsigned code = c < cols ? static_cast<unsigned>(q[static_cast<size_t>(r) * cols + c] + 1) : 1u;
        v |= code << (2 * j);
      }
      out[static_cast<size_t>(r) * nbytes + b] = static_cast<uint8_t>(v);
    }
  }
  return out;
}

/// Logical W[n][k] (N x K, row-major) packed in layout L.
std::vector<uint8_t> pack_weight(const std::vector<int>& wnk, int N, int K, Layout L) {
  if (L == Layout::NK) return pack_rows(wnk, N, K);
  std::vector<int> t(static_cast<size_t>(K) * N);
  for (int n = 0; n < N; ++n)
    for (int k = 0; k < K; ++k) t[static_cast<size_t>(k) * N + n] = wnk[static_cast<size_t>(n) * K + k];
  return pack_rows(t, K, N);
}

// ---- naive reference -------------------------------------------------------------------------------

double naive_act(int act, double v) {
  switch (act) {
    case 0: return v;
    case 1: return v > 0 ? v : 0;
    case 2: return std::min(std::max(v, 0.0), 6.0);
    case 3: return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
    case 4: return v / (1.0 + std::exp(-v));
    case 5: return 1.0 / (1.0 + std::exp(-v));
    case 6: return std::tanh(v);
    default: return v * std::min(std::max(v + 3.0, 0.0), 6.0) / 6.0;
  }
}

double naive_epilogue(int act, int res, double acc, double scale, double chs, double bias, double r) {
  double v = acc * scale * chs + bias;
  if (res == 1) v += r;
  v = naive_act(act, v);
  if (res == 2) v += r;
  return v;
}

// ---- the header's epilogue, dispatched at run time over its template arguments -------------------

template <Act A>
float epi_r(int res, float acc, float scale, float chs, float bias, float r) {
  switch (res) {
    case 0: return epilogue<A, Residual::None>(acc, scale, chs, bias, r);
    case 1: return epilogue<A, Residual::BeforeAct>(acc, scale, chs, bias, r);
    default: return epilogue<A, Residual::AfterAct>(acc, scale, chs, bias, r);
  }
}
float epi_rt(int act, int res, float acc, float scale, float chs, float bias, float r) {
  switch (act) {
    case 0: return epi_r<Act::None>(res, acc, scale, chs, bias, r);
    case 1: return epi_r<Act::ReLU>(res, acc, scale, chs, bias, r);
    case 2: return epi_r<Act::ReLU6>(res, acc, scale, chs, bias, r);
    case 3: return epi_r<Act::GELU>(res, acc, scale, chs, bias, r);
    case 4: return epi_r<Act::SiLU>(res, acc, scale, chs, bias, r);
    case 5: return epi_r<Act::Sigmoid>(res, acc, scale, chs, bias, r);
    case 6: return epi_r<Act::Tanh>(res, acc, scale, chs, bias, r);
    default: return epi_r<Act::Hardswish>(res, acc, scale, chs, bias, r);
  }
}

/// A launch's data plus the host "device": outputs start as NaN, writes are counted.
struct Job {
  int act = 0, res = 0;
  Args<float> a{};
  std::vector<float> y;
  std::vector<int> writes;
  void init(size_t ny) {
    y.assign(ny, kNaN);
    writes.assign(ny, 0);
    a.y = y.data();
  }
  /// Mirror of store_out (tck_device.cuh).
  void store(long long off, int n, float acc) {
    const float chs = a.chscale ? a.chscale[n] : 1.f;
    const float bs = a.bias ? a.bias[n] : 0.f;
    const float r = res ? a.residual[off] : 0.f;
    y[static_cast<size_t>(off)] = epi_rt(act, res, acc, a.scale, chs, bs, r);
    ++writes[static_cast<size_t>(off)];
  }
};

bool close_to(float got, double want) {
  if (std::isnan(got)) return false;
  return std::fabs(got - want) <= 1e-4 + 2e-5 * std::fabs(want);
}

/// Compares a job's outputs with the naive reference; every output written exactly once.
void compare(const Job& j, const std::vector<double>& ref, const std::string& what) {
  size_t bad = 0, first = 0, multi = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (j.writes[i] != 1) ++multi;
    if (!close_to(j.y[i], ref[i])) {
      if (bad++ == 0) first = i;
    }
  }
  if (bad == 0 && multi == 0) {
    check(true, "%s", what.c_str());
  } else {
    check(false, "%s: %zu of %zu outputs differ (first #%zu: got %g want %g), %zu not written once",
          what.c_str(), bad, ref.size(), first, bad ? j.y[first] : 0.f, bad ? ref[first] : 0.0, multi);
  }
}

// ---- replay: GEMV (mirror of tck_gemv.cuh) --------------------------------------------------------

template <int N, int K, int VARIANT, int MB>
void replay_gemv_nk(Job& j) {
  using Cfg = GemvNkConfig<VARIANT>;
  using C = GemvNkChunk<MB>;
  constexpr int ROWS = Cfg::ROWS, WARPS = Cfg::WARPS, NT = WARPS * 32;
  constexpr int NUNITS = static_cast<int>(gemv_nk_units(K));
  const Args<float>& a = j.a;
  const int M = static_cast<int>(a.M);
  const int grid = static_cast<int>(ceil_div(N, ROWS * WARPS));
  std::vector<float> xs(static_cast<size_t>(MB) * C::UNITS * C::XS);
  for (int blk = 0; blk < grid; ++blk) {
    std::vector<float> acc(static_cast<size_t>(NT) * MB * ROWS, 0.f);  // [tid][m][r]
    for (int cb = 0; cb < NUNITS; cb += C::UNITS) {
      const int cu = imin(C::UNITS, NUNITS - cb);
      std::fill(xs.begin(), xs.end(), kNaN);
      for (int tid = 0; tid < NT; ++tid) {
        for (int e = tid; e < cu * 16; e += NT) {
          const int k = cb * 16 + e;
          for (int m = 0; m < MB; ++m)
            xs[static_cast<size_t>(m) * C::UNITS * C::XS + C::slot(e)] =
                (m < M && k < K) ? a.x[static_cast<long long>(m) * K + k] : 0.f;
        }
      }
      for (int tid = 0; tid < NT; ++tid) {
        const int lane = tid & 31, warp = tid >> 5;
        const int row0 = (blk * WARPS + warp) * ROWS;
        for (int p = 0; p < C::P; ++p) {
          const int u = lane + 32 * p;
          uint32_t wd[ROWS];
          uint32_t any = 0;
          for (int r = 0; r < ROWS; ++r) {
            const int row = row0 + r;
            wd[r] = (u < cu && row < N) ? gemv_nk_word<K>(a.w, row, cb + u) : kZeroWord;
            any |= wd[r] ^ kZeroWord;
          }
          if (u >= cu || any == 0) continue;
          for (int h = 0; h < 2; ++h)
            for (int q = 0; q < 2; ++q)
              for (int e = 0; e < 4; ++e) {
                const int i = 4 * q + e;
                for (int r = 0; r < ROWS; ++r) {
                  const float t = trit_f32_lo8(h ? wd[r] >> 16 : wd[r], i);
                  for (int m = 0; m < MB; ++m) {
                    const float xe = xs[static_cast<size_t>(m) * C::UNITS * C::XS + u * C::XS + 8 * h + 4 * q + e];
                    float& ac = acc[(static_cast<size_t>(tid) * MB + m) * ROWS + r];
                    ac = std::fma(t, xe, ac);
                  }
                }
              }
        }
      }
    }
    for (int warp = 0; warp < WARPS; ++warp) {
      for (int m = 0; m < MB; ++m)
        for (int r = 0; r < ROWS; ++r) {
          float v[32];
          for (int l = 0; l < 32; ++l) v[l] = acc[(static_cast<size_t>(warp * 32 + l) * MB + m) * ROWS + r];
          for (int o = 16; o > 0; o >>= 1) {  // __shfl_xor_sync butterfly
            float nv[32];
            for (int l = 0; l < 32; ++l) nv[l] = v[l] + v[l ^ o];
            std::memcpy(v, nv, sizeof v);
          }
          const int row = (blk * WARPS + warp) * ROWS + r;
          for (int lane = 0; lane < 32; ++lane)
            if (lane == ((m * ROWS + r) & 31) && m < M && row < N)
              j.store(static_cast<long long>(m) * N + row, row, v[lane]);
        }
    }
  }
}

template <int N, int K, int VARIANT, int MB>
void replay_gemv_kn(Job& j) {
  constexpr int CB = gemv_kn_unit_bytes(MB, N);
  constexpr long long NU = gemv_kn_units(N, CB);
  constexpr int CWB = gemv_kn_cwb<VARIANT>(NU);
  constexpr int NT = kGemvKnThreads, U = kGemvKnUnroll;
  constexpr int EPU = 4 * CB, KS = NT / CWB, NW = NT / 32, J = MB * EPU;
  static_assert(packed_row_bytes(N) % CB == 0, "units never cross a row");
  static_assert(J <= 32, "accumulators");
  const Args<float>& a = j.a;
  const int M = static_cast<int>(a.M);
  const int grid = static_cast<int>(ceil_div(NU, CWB));
  for (int blk = 0; blk < grid; ++blk) {
    std::vector<float> acc(static_cast<size_t>(NT) * J, 0.f);
    for (int tid = 0; tid < NT; ++tid) {
      const int cw = tid % CWB, ks = tid / CWB;
      const long long gu = static_cast<long long>(blk) * CWB + cw;
      const bool uvalid = gu < NU;
      for (int k0 = ks; k0 < K; k0 += KS * U) {
        for (int jj = 0; jj < U; ++jj) {
          const int k = k0 + jj * KS;
          const uint32_t wv = (uvalid && k < K) ? gemv_kn_unit<N, CB>(a.w, k, gu) : zero_unit<CB>();
          if (wv == zero_unit<CB>()) continue;
          for (int e = 0; e < EPU; ++e) {
            const float t = trit_f32(wv, e);
            for (int m = 0; m < MB; ++m) {
              const float xv = m < M ? a.x[static_cast<long long>(m) * K + k] : 0.f;
              float& ac = acc[static_cast<size_t>(tid) * J + m * EPU + e];
              ac = std::fma(t, xv, ac);
            }
          }
        }
      }
    }
    std::vector<float> red(static_cast<size_t>(NW) * J * CWB, kNaN);
    for (int warp = 0; warp < NW; ++warp)
      for (int jj = 0; jj < J; ++jj) {
        float v[32];
        for (int l = 0; l < 32; ++l) v[l] = acc[static_cast<size_t>(warp * 32 + l) * J + jj];
        for (int o = 16; o >= CWB; o >>= 1) {
          float nv[32];
          for (int l = 0; l < 32; ++l) nv[l] = v[l] + v[l ^ o];
          std::memcpy(v, nv, sizeof v);
        }
        for (int lane = 0; lane < CWB; ++lane) red[(static_cast<size_t>(warp) * J + jj) * CWB + lane] = v[lane];
      }
    for (int tid = 0; tid < NT; ++tid)
      for (int o = tid; o < J * CWB; o += NT) {
        const int c = o % CWB, jj = o / CWB;
        float s = 0.f;
        for (int wp = 0; wp < NW; ++wp) s += red[(static_cast<size_t>(wp) * J + jj) * CWB + c];
        const int m = jj / EPU, e = jj % EPU;
        const long long n = (static_cast<long long>(blk) * CWB + c) * EPU + e;
        if (m < M && n < N) j.store(static_cast<long long>(m) * N + n, static_cast<int>(n), s);
      }
  }
}

// ---- replay: GEMM (mirror of tck_gemm.cuh) -------------------------------------------------------

/// Tensor-core kernel: tiles staged through the same maps into NaN-poisoned shared arrays,
/// fragments read with WMMA's load_matrix_sync semantics (row_major: ptr[r * ld + c],
/// col_major: ptr[c * ld + r]) from the pointers the kernel passes.
template <class P, int VARIANT>
void replay_mma(Job& j) {
  using Cfg = MmaConfig<VARIANT>;
  constexpr bool ACOL = P::CONV, BCOL = P::L == Layout::NK;
  using Map = MmaMap<Cfg, ACOL, BCOL>;
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, NT = Cfg::NT;
  constexpr int FM = Cfg::FM, FN = Cfg::FN, NWARPS = Cfg::NWARPS;
  constexpr int KT = static_cast<int>(ceil_div(P::KDIM, BK));
  const Args<float>& a = j.a;
  const long long gx = ceil_div(a.M, BM);
  const int gy = static_cast<int>(ceil_div(P::NDIM, BN));
  std::vector<float> As(Map::A_ELEMS), Bs(Map::B_ELEMS);
  std::vector<float> acc(static_cast<size_t>(NWARPS) * FM * FN * 256);
  for (int g = 0; g < P::GROUPS; ++g)
    for (int by = 0; by < gy; ++by)
      for (long long bx = 0; bx < gx; ++bx) {
        const long long m0 = bx * BM;
        const int n0 = by * BN;
        std::fill(acc.begin(), acc.end(), 0.f);
        for (int kt = 0; kt < KT; ++kt) {
          const int k0 = kt * BK;
          std::fill(As.begin(), As.end(), kNaN);
          std::fill(Bs.begin(), Bs.end(), kNaN);
          for (int tid = 0; tid < NT; ++tid) {
            if constexpr (!ACOL) {
              for (int i = 0; i < Map::VA; ++i) {
                int r, kl;
                Map::a_vec(tid, i, r, kl);
                const int k = k0 + kl;
                const long long m = m0 + r;
                for (int e = 0; e < 8; ++e) {
                  float v = 0.f;
                  if (m < a.M && k + e < P::KDIM) v = a.x[m * P::KDIM + k + e];
                  As[static_cast<size_t>(Map::a_smem(r, kl) + e)] = v;
                }
              }
            } else {
              int r0, k0l;
              Map::a_elem(tid, 0, r0, k0l);
              const typename P::Row crow = P::template row<float>(a, m0 + r0, g);
              for (int i = 0; i < Map::EA; ++i) {
                int r, kl;
                Map::a_elem(tid, i, r, kl);
                const long long off = P::template a_off<float>(a, crow, g, k0 + kl);
                As[static_cast<size_t>(Map::a_smem(r, kl))] = off >= 0 ? a.x[off] : 0.f;
              }
            }
            for (int i = 0; i < Map::VB; ++i) {
              int n, k;
              Map::b_word(tid, i, n, k);
              const uint32_t wd = load_b_word<P>(a.w, g, n0 + n, k0 + k);
              const int dst = Map::b_smem(n, k);
              for (int e = 0; e < 16; ++e) Bs[static_cast<size_t>(dst + e)] = trit_f32(wd, e);
            }
          }
          for (int warp = 0; warp < NWARPS; ++warp)
            for (int kk = 0; kk < BK; kk += 16)
              for (int i = 0; i < FM; ++i)
                for (int jn = 0; jn < FN; ++jn) {
                  const float* pa = As.data() + Map::a_smem(Map::frag_row(warp, i), kk);
                  const float* pb = Bs.data() + Map::b_smem(Map::frag_col(warp, jn), kk);
                  float* c = &acc[((static_cast<size_t>(warp) * FM + i) * FN + jn) * 256];
                  for (int r = 0; r < 16; ++r)
                    for (int cc = 0; cc < 16; ++cc) {
                      float s = c[r * 16 + cc];
                      for (int t = 0; t < 16; ++t) {
                        const float av = ACOL ? pa[t * Map::LDA + r] : pa[r * Map::LDA + t];
                        const float bv = BCOL ? pb[cc * Map::LDB + t] : pb[t * Map::LDB + cc];
                        s += av * bv;
                      }
                      c[r * 16 + cc] = s;
                    }
                }
        }
        for (int warp = 0; warp < NWARPS; ++warp)
          for (int i = 0; i < FM; ++i)
            for (int jn = 0; jn < FN; ++jn) {
              const float* patch = &acc[((static_cast<size_t>(warp) * FM + i) * FN + jn) * 256];
              const long long mb = m0 + Map::frag_row(warp, i);
              const int nb = n0 + Map::frag_col(warp, jn);
              for (int lane = 0; lane < 32; ++lane) {
                if constexpr (P::CONV) {
                  int r, c;
                  Map::epi(true, lane, 0, r, c);
                  const long long m = mb + r;
                  if (m >= a.M) continue;
                  const typename P::Out o = P::template out<float>(a, m, g);
                  for (int e = 0; e < 8; ++e) {
                    Map::epi(true, lane, e, r, c);
                    const int n = nb + c;
                    if (n < P::NDIM) j.store(o.base + n * o.cstride, g * P::NDIM + n, patch[r * 16 + c]);
                  }
                } else {
                  for (int e = 0; e < 8; ++e) {
                    int r, c;
                    Map::epi(false, lane, e, r, c);
                    const long long m = mb + r;
                    const int n = nb + c;
                    if (m < a.M && n < P::NDIM) {
                      const typename P::Out o = P::template out<float>(a, m, g);
                      j.store(o.base + n * o.cstride, n, patch[r * 16 + c]);
                    }
                  }
                }
              }
            }
      }
}

/// CUDA-core kernel: As[k][m], Bs[k][n] staged through the maps, per-thread TM x TN
/// micro-tiles read as float4 sub-tiles exactly like the kernel.
template <class P, int VARIANT>
void replay_simt(Job& j) {
  using Cfg = SimtConfig<VARIANT>;
  using Map = SimtMap<Cfg, P::CONV, P::L>;
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, NT = Cfg::NT;
  constexpr int TM = Cfg::TM, TN = Cfg::TN, SM = Cfg::SM, SN = Cfg::SN;
  constexpr int LDA = Map::LDA, LDB = Map::LDB;
  constexpr int KT = static_cast<int>(ceil_div(P::KDIM, BK));
  const Args<float>& a = j.a;
  const long long gx = ceil_div(a.M, BM);
  const int gy = static_cast<int>(ceil_div(P::NDIM, BN));
  std::vector<float> As(static_cast<size_t>(BK) * LDA), Bs(static_cast<size_t>(BK) * LDB);
  std::vector<float> acc(static_cast<size_t>(NT) * TM * TN);
  for (int g = 0; g < P::GROUPS; ++g)
    for (int by = 0; by < gy; ++by)
      for (long long bx = 0; bx < gx; ++bx) {
        const long long m0 = bx * BM;
        const int n0 = by * BN;
        std::fill(acc.begin(), acc.end(), 0.f);
        for (int kt = 0; kt < KT; ++kt) {
          const int k0 = kt * BK;
          std::fill(As.begin(), As.end(), kNaN);
          std::fill(Bs.begin(), Bs.end(), kNaN);
          for (int tid = 0; tid < NT; ++tid) {
            typename P::Row crow{};
            if constexpr (P::CONV) {
              int r, k;
              Map::a_elem(tid, 0, r, k);
              crow = P::template row<float>(a, m0 + r, g);
            }
            for (int i = 0; i < Map::EA; ++i) {
              int r, kl;
              if (!Map::a_elem(tid, i, r, kl)) continue;
              float v = 0.f;
              long long off;
              if constexpr (P::CONV) {
                off = P::template a_off<float>(a, crow, g, k0 + kl);
              } else {
                off = P::template a_off<float>(a, P::template row<float>(a, m0 + r, g), g, k0 + kl);
              }
              if (off >= 0) v = a.x[off];
              As[static_cast<size_t>(kl) * LDA + r] = v;
            }
            for (int i = 0; i < Map::VB; ++i) {
              int n, k;
              if (!Map::b_word(tid, i, n, k)) continue;
              const uint32_t wd = load_b_word<P>(a.w, g, n0 + n, k0 + k);
              for (int e = 0; e < 16; ++e) {
                if (P::L == Layout::NK) {
                  Bs[static_cast<size_t>(k + e) * LDB + n] = trit_f32(wd, e);
                } else {
                  Bs[static_cast<size_t>(k) * LDB + n + e] = trit_f32(wd, e);
                }
              }
            }
          }
          for (int tid = 0; tid < NT; ++tid)
            for (int k = 0; k < BK; ++k) {
              float av[TM], bv[TN];
              for (int s = 0; s < SM; ++s)
                for (int q = 0; q < 4; ++q) av[4 * s + q] = As[static_cast<size_t>(k) * LDA + Map::out_row(tid, 4 * s) + q];
              for (int s = 0; s < SN; ++s)
                for (int q = 0; q < 4; ++q) bv[4 * s + q] = Bs[static_cast<size_t>(k) * LDB + Map::out_col(tid, 4 * s) + q];
              for (int i = 0; i < TM; ++i)
                for (int jn = 0; jn < TN; ++jn) {
                  float& c = acc[(static_cast<size_t>(tid) * TM + i) * TN + jn];
                  c = std::fma(av[i], bv[jn], c);
                }
            }
        }
        for (int tid = 0; tid < NT; ++tid)
          for (int i = 0; i < TM; ++i) {
            const long long m = m0 + Map::out_row(tid, i);
            if (m >= a.M) continue;
            const typename P::Out o = P::template out<float>(a, m, g);
            for (int jn = 0; jn < TN; ++jn) {
              const int n = n0 + Map::out_col(tid, jn);
              if (n < P::NDIM)
                j.store(o.base + n * o.cstride, g * P::NDIM + n, acc[(static_cast<size_t>(tid) * TM + i) * TN + jn]);
            }
          }
      }
}

// ---- replay: depthwise (mirror of tck_dwconv.cuh) ------------------------------------------------

template <class G, int VARIANT>
void replay_dw(Job& j) {
  using Cfg = DwConfig<VARIANT>;
  constexpr int NT = Cfg::NT, PPT = Cfg::PPT, TAPS = G::TAPS, C = G::CIN_;
  const Args<float>& a = j.a;
  const long long npix = static_cast<long long>(a.OH) * a.OW;
  const long long planes = a.batch * C;
  const long long gx = ceil_div(npix, static_cast<long long>(NT) * PPT);
  const long long gy = planes < 65535 ? planes : 65535;
  for (long long by = 0; by < gy; ++by)
    for (long long bx = 0; bx < gx; ++bx)
      for (long long plane = by; plane < planes; plane += gy) {
        const int c = static_cast<int>(plane % C);
        std::vector<int> dh(TAPS, -1000000), dw(TAPS, -1000000);
        std::vector<float> tv(TAPS, kNaN);
        int count = 0;
        const uint8_t* row = a.w + static_cast<long long>(c) * G::ROW_BYTES;
        for (int base = 0; base < TAPS; base += 32) {  // warp 0's ballot compaction
          unsigned mask = 0;
          unsigned codes[32];
          for (int lane = 0; lane < 32; ++lane) {
            const int t = base + lane;
            codes[lane] = t < TAPS ? packed_code(row, t) : kCodeZero;
            if (codes[lane] != kCodeZero) mask |= 1u << lane;
          }
          for (int lane = 0; lane < 32; ++lane) {
            if (!(mask & (1u << lane))) continue;
            const int pos = count + __builtin_popcount(mask & ((1u << lane) - 1u));
            G::tap_delta(base + lane, dh[pos], dw[pos]);
            tv[pos] = static_cast<float>(code_to_trit(codes[lane]));
          }
          count += __builtin_popcount(mask);
        }
        const float* xp = a.x + plane * static_cast<long long>(a.H) * a.W;
        for (int tid = 0; tid < NT; ++tid)
          for (int jj = 0; jj < PPT; ++jj) {
            const long long pix = (bx * PPT + jj) * NT + tid;
            if (pix >= npix) break;
            const int oh = static_cast<int>(pix / a.OW);
            const int ow = static_cast<int>(pix - static_cast<long long>(oh) * a.OW);
            const int ih0 = oh * G::SH_ - G::PH_, iw0 = ow * G::SW_ - G::PW_;
            float acc = 0.f;
            for (int t = 0; t < count; ++t) {
              const int ih = ih0 + dh[t], iw = iw0 + dw[t];
              if (ih >= 0 && ih < a.H && iw >= 0 && iw < a.W)
                acc = std::fma(tv[t], xp[static_cast<long long>(ih) * a.W + iw], acc);
            }
            j.store(plane * npix + pix, c, acc);
          }
      }
}

// ---- linear tests ----------------------------------------------------------------------------------

struct Epi {
  int act, res;
  bool chs, bias;
};

Epi pick_epi(int i) {
  return Epi{i % 8, (i / 8) % 3, (i % 3) != 0, (i % 5) != 1};
}

template <int N, int K, Layout L>
struct LinearCase {
  std::vector<int> q;  // W[n][k]
  std::vector<uint8_t> packed;
  std::vector<float> chs, bias;
  float scale = 0.75f;

  explicit LinearCase(Rng& rng, double zero_frac) {
    q.resize(static_cast<size_t>(N) * K);
    for (int& v : q) v = rng.trit(zero_frac);
    packed = pack_weight(q, N, K, L);
    chs.resize(N);
    bias.resize(N);
    for (int n = 0; n < N; ++n) {
      chs[static_cast<size_t>(n)] = static_cast<float>(rng.uniform(1, 12)) * 0.125f;
      bias[static_cast<size_t>(n)] = static_cast<float>(rng.uniform(-8, 8)) * 0.25f;
    }
  }

  template <class F>
  void run(Rng& rng, long long M, const Epi& ep, const std::string& what, F&& replay) {
    std::vector<float> x(static_cast<size_t>(M) * K), res(static_cast<size_t>(M) * N);
    for (float& v : x) v = rng.xval();
    for (float& v : res) v = rng.xval();
    Job j;
    j.act = ep.act;
    j.res = ep.res;
    j.a.x = x.data();
    j.a.w = packed.data();
    j.a.scale = scale;
    j.a.chscale = ep.chs ? chs.data() : nullptr;
    j.a.bias = ep.bias ? bias.data() : nullptr;
    j.a.residual = ep.res ? res.data() : nullptr;
    j.a.M = M;
    j.a.batch = M;
    j.a.H = j.a.W = j.a.OH = j.a.OW = 1;
    j.a.x_vec16 = true;
    j.init(static_cast<size_t>(M) * N);
    const Guarded<float> gx(x);
    const Guarded<uint8_t> gw(packed);
    j.a.x = gx.data();
    j.a.w = gw.data();
    replay(j);
    std::vector<double> ref(static_cast<size_t>(M) * N);
    for (long long m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) {
        double s = 0;
        for (int k = 0; k < K; ++k) s += static_cast<double>(x[static_cast<size_t>(m * K + k)]) * q[static_cast<size_t>(n) * K + k];
        ref[static_cast<size_t>(m * N + n)] =
            naive_epilogue(ep.act, ep.res, s, scale, ep.chs ? chs[static_cast<size_t>(n)] : 1.0,
                           ep.bias ? bias[static_cast<size_t>(n)] : 0.0, ep.res ? res[static_cast<size_t>(m * N + n)] : 0.0);
      }
    char buf[200];
    std::snprintf(buf, sizeof buf, "linear %s N=%d K=%d %s M=%lld act=%d res=%d chs=%d bias=%d", what.c_str(), N, K,
                  L == Layout::NK ? "NK" : "KN", M, ep.act, ep.res, ep.chs, ep.bias);
    compare(j, ref, buf);
  }
};

template <int N, int K, Layout L, int V, int MB>
void gemv_case(LinearCase<N, K, L>& lc, Rng& rng, long long M, const Epi& ep) {
  lc.run(rng, M, ep, "gemv v" + std::to_string(V), [](Job& j) {
    if constexpr (L == Layout::NK) {
      replay_gemv_nk<N, K, V, MB>(j);
    } else {
      replay_gemv_kn<N, K, V, MB>(j);
    }
  });
}

template <int N, int K, Layout L, int V>
void gemv_variant(LinearCase<N, K, L>& lc, Rng& rng, int& seq) {
  for (long long M : {1LL, 2LL, 3LL, 5LL, 8LL}) {
    const Epi ep = pick_epi(seq++);
    switch (gemv_bucket(M)) {
      case 1: gemv_case<N, K, L, V, 1>(lc, rng, M, ep); break;
      case 2: gemv_case<N, K, L, V, 2>(lc, rng, M, ep); break;
      case 4: gemv_case<N, K, L, V, 4>(lc, rng, M, ep); break;
      default: gemv_case<N, K, L, V, 8>(lc, rng, M, ep); break;
    }
  }
}

template <int N, int K, Layout L, int V>
void gemm_variant(LinearCase<N, K, L>& lc, Rng& rng, int& seq, std::initializer_list<long long> Ms) {
  using P = LinearProblem<N, K, L>;
  for (long long M : Ms) {
    lc.run(rng, M, pick_epi(seq++), "mma v" + std::to_string(V), [](Job& j) { replay_mma<P, V>(j); });
    lc.run(rng, M, pick_epi(seq++), "simt v" + std::to_string(V), [](Job& j) { replay_simt<P, V>(j); });
  }
}

template <int N, int K, Layout L>
void linear_shape(Rng& rng, int& seq, std::initializer_list<long long> gemm_Ms = {9, 40, 130}) {
  LinearCase<N, K, L> lc(rng, 0.1 * (seq % 10));  // sparsity 0..90%
  gemv_variant<N, K, L, 0>(lc, rng, seq);
  gemv_variant<N, K, L, 1>(lc, rng, seq);
  gemv_variant<N, K, L, 2>(lc, rng, seq);
  gemm_variant<N, K, L, 0>(lc, rng, seq, gemm_Ms);
  gemm_variant<N, K, L, 1>(lc, rng, seq, gemm_Ms);
  gemm_variant<N, K, L, 2>(lc, rng, seq, gemm_Ms);
}

template <int N, int K>
void linear_both(Rng& rng, int& seq, std::initializer_list<long long> gemm_Ms = {9, 40, 130}) {
  linear_shape<N, K, Layout::NK>(rng, seq, gemm_Ms);
  linear_shape<N, K, Layout::KN>(rng, seq, gemm_Ms);
}

void test_linear() {
  Rng rng;
  int seq = 0;
  linear_both<1, 1>(rng, seq);
  linear_both<1, 3>(rng, seq);
  linear_both<3, 4>(rng, seq);
  linear_both<2, 5>(rng, seq);
  linear_both<5, 16>(rng, seq);
  linear_both<7, 17>(rng, seq);
  linear_both<16, 32>(rng, seq);
  linear_both<9, 33>(rng, seq);
  linear_both<13, 64>(rng, seq);
  linear_both<31, 67>(rng, seq);
  linear_both<67, 67>(rng, seq);
  linear_both<64, 130>(rng, seq);
  linear_both<33, 257>(rng, seq);
  linear_both<130, 96>(rng, seq);
  linear_both<129, 31>(rng, seq);
  linear_both<1, 600>(rng, seq);
  linear_both<70, 8>(rng, seq);
  linear_both<3, 4097>(rng, seq, {9, 70});
  linear_both<17, 2100>(rng, seq, {9});
  // Every epilogue combination (act x residual x chscale/bias) on one GEMV and one GEMM shape.
  {
    LinearCase<13, 37, Layout::NK> lc(rng, 0.3);
    for (int act = 0; act < 8; ++act)
      for (int res = 0; res < 3; ++res)
        for (int cb = 0; cb < 4; ++cb) {
          const Epi ep{act, res, (cb & 1) != 0, (cb & 2) != 0};
          gemv_case<13, 37, Layout::NK, 0, 4>(lc, rng, 3, ep);
          lc.run(rng, 21, ep, "mma v0", [](Job& j) { replay_mma<LinearProblem<13, 37, Layout::NK>, 0>(j); });
        }
  }
}

// ---- conv tests --------------------------------------------------------------------------------------

template <int CIN, int COUT, int KH, int KW, int SH, int SW, int PH, int PW, int DH, int DW, int G>
void conv_case(Rng& rng, int& seq, long long batch, int H, int W) {
  using Geom = ConvGeom<CIN, COUT, KH, KW, SH, SW, PH, PW, DH, DW, G>;
  using P = ConvProblem<Geom>;
  constexpr int KD = Geom::KDIM;
  const int OH = static_cast<int>(conv_out_dim(H, KH, SH, PH, DH));
  const int OW = static_cast<int>(conv_out_dim(W, KW, SW, PW, DW));
  check(OH >= 1 && OW >= 1, "conv geometry fits");
  if (OH < 1 || OW < 1) return;
  std::vector<int> q(static_cast<size_t>(COUT) * KD);  // [COUT][CIN/G][KH][KW]
  const double zero_frac = 0.1 * (seq % 10);
  for (int& v : q) v = rng.trit(zero_frac);
  const std::vector<uint8_t> packed = pack_rows(q, COUT, KD);
  std::vector<float> x(static_cast<size_t>(batch) * CIN * H * W);
  for (float& v : x) v = rng.xval();
  std::vector<float> chs(COUT), bias(COUT);
  for (int c = 0; c < COUT; ++c) {
    chs[static_cast<size_t>(c)] = static_cast<float>(rng.uniform(1, 12)) * 0.125f;
    bias[static_cast<size_t>(c)] = static_cast<float>(rng.uniform(-8, 8)) * 0.25f;
  }
  const size_t ny = static_cast<size_t>(batch) * COUT * OH * OW;
  std::vector<float> res(ny);
  for (float& v : res) v = rng.xval();

  // Naive reference: the convolution formula on the raw trits.
  auto reference = [&](const Epi& ep) {
    std::vector<double> ref(ny);
    for (long long b = 0; b < batch; ++b)
      for (int co = 0; co < COUT; ++co) {
        const int g = co / (COUT / G);
        for (int oh = 0; oh < OH; ++oh)
          for (int ow = 0; ow < OW; ++ow) {
            double s = 0;
            for (int c = 0; c < CIN / G; ++c)
              for (int kh = 0; kh < KH; ++kh)
                for (int kw = 0; kw < KW; ++kw) {
                  const int ih = oh * SH - PH + kh * DH, iw = ow * SW - PW + kw * DW;
                  if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                  const int ci = g * (CIN / G) + c;
                  s += static_cast<double>(x[static_cast<size_t>(((b * CIN + ci) * H + ih) * W + iw)]) *
                       q[static_cast<size_t>(((co * (CIN / G) + c) * KH + kh) * KW + kw)];
                }
            const size_t o = static_cast<size_t>(((b * COUT + co) * OH + oh) * OW + ow);
            ref[o] = naive_epilogue(ep.act, ep.res, s, 0.75, ep.chs ? chs[static_cast<size_t>(co)] : 1.0,
                                    ep.bias ? bias[static_cast<size_t>(co)] : 0.0, ep.res ? res[o] : 0.0);
          }
      }
    return ref;
  };
  auto run = [&](const std::string& what, auto&& replay) {
    const Epi ep = pick_epi(seq++);
    Job j;
    j.act = ep.act;
    j.res = ep.res;
    j.a.x = x.data();
    j.a.w = packed.data();
    j.a.scale = 0.75f;
    j.a.chscale = ep.chs ? chs.data() : nullptr;
    j.a.bias = ep.bias ? bias.data() : nullptr;
    j.a.residual = ep.res ? res.data() : nullptr;
    j.a.M = batch * OH * OW;
    j.a.batch = batch;
    j.a.H = H;
    j.a.W = W;
    j.a.OH = OH;
    j.a.OW = OW;
    j.a.x_vec16 = false;
    j.init(ny);
    const Guarded<float> gx(x);
    const Guarded<uint8_t> gw(packed);
    j.a.x = gx.data();
    j.a.w = gw.data();
    replay(j);
    char buf[240];
    std::snprintf(buf, sizeof buf,
                  "conv %s cin=%d cout=%d k=%dx%d s=%d,%d p=%d,%d d=%d,%d g=%d batch=%lld H=%d W=%d act=%d res=%d",
                  what.c_str(), CIN, COUT, KH, KW, SH, SW, PH, PW, DH, DW, G, batch, H, W, ep.act, ep.res);
    compare(j, reference(ep), buf);
  };
  run("mma v0", [](Job& j) { replay_mma<P, 0>(j); });
  run("mma v1", [](Job& j) { replay_mma<P, 1>(j); });
  run("mma v2", [](Job& j) { replay_mma<P, 2>(j); });
  run("simt v0", [](Job& j) { replay_simt<P, 0>(j); });
  run("simt v1", [](Job& j) { replay_simt<P, 1>(j); });
  run("simt v2", [](Job& j) { replay_simt<P, 2>(j); });
  if constexpr (Geom::DEPTHWISE) {
    run("dw v0", [](Job& j) { replay_dw<Geom, 0>(j); });
    run("dw v1", [](Job& j) { replay_dw<Geom, 1>(j); });
    run("dw v2", [](Job& j) { replay_dw<Geom, 2>(j); });
  }
}

void test_conv() {
  Rng rng;
  rng.g.seed(777);
  int seq = 0;
  conv_case<3, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1>(rng, seq, 2, 7, 6);
  conv_case<4, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1>(rng, seq, 1, 9, 8);    // 3x3 stride 2
  conv_case<4, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1>(rng, seq, 3, 10, 11);
  conv_case<6, 4, 1, 1, 1, 1, 0, 0, 1, 1, 1>(rng, seq, 2, 5, 7);    // 1x1
  conv_case<6, 20, 1, 1, 2, 2, 0, 0, 1, 1, 1>(rng, seq, 1, 9, 9);   // 1x1 stride 2
  conv_case<8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 8>(rng, seq, 2, 6, 5);    // depthwise
  conv_case<6, 6, 5, 3, 2, 1, 2, 1, 1, 1, 6>(rng, seq, 1, 11, 7);   // depthwise, rect, stride
  conv_case<5, 5, 3, 3, 1, 1, 2, 2, 2, 2, 5>(rng, seq, 2, 8, 9);    // depthwise dilated
  conv_case<8, 12, 3, 3, 1, 1, 2, 2, 2, 2, 4>(rng, seq, 2, 7, 8);   // grouped, dilated
  conv_case<4, 8, 2, 3, 1, 2, 0, 1, 2, 1, 2>(rng, seq, 1, 6, 9);    // grouped, asymmetric
  conv_case<5, 6, 1, 7, 1, 1, 0, 3, 1, 1, 1>(rng, seq, 2, 4, 9);    // Inception's 1x7
  conv_case<6, 5, 7, 1, 2, 1, 3, 0, 1, 1, 1>(rng, seq, 1, 9, 4);    // 7x1, stride 2x1
  conv_case<5, 10, 3, 3, 1, 1, 0, 0, 1, 1, 5>(rng, seq, 2, 5, 5);   // channel multiplier 2
  conv_case<3, 7, 7, 7, 2, 2, 3, 3, 1, 1, 1>(rng, seq, 1, 15, 13);  // 7x7 stem, K = 147
  conv_case<16, 33, 3, 3, 1, 1, 1, 1, 1, 1, 1>(rng, seq, 1, 13, 12);  // K = 144, M = 156
  conv_case<2, 3, 3, 3, 3, 3, 0, 0, 1, 1, 1>(rng, seq, 2, 3, 4);    // one output row
  conv_case<1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1>(rng, seq, 1, 1, 1);    // 1x1x1x1
}

// ---- unit checks of the helpers ------------------------------------------------------------------------

void test_format(Rng& rng) {
  // Bytes produced by runtime/tritonrt/packing.py pack_ternary for these matrices.
  {
    const std::vector<int> q = {-1, 0, 1, 1, -1, 0, 0, 0, 1, 1, 1, -1, -1, 0, 0};
    check(pack_rows(q, 3, 5) == std::vector<uint8_t>({164, 84, 149, 86, 66, 85}), "packer == pack_ternary 3x5");
    check(pack_rows({1, -1, 0, 1, 0, 0, -1, 1, 1}, 1, 9) == std::vector<uint8_t>({146, 133, 86}),
          "packer == pack_ternary 1x9");
    check(pack_rows({-1, 1, 0}, 1, 3) == std::vector<uint8_t>({88}), "packer == pack_ternary 1-D");
  }
  for (long long len = 0; len < 200; ++len) {
    check(packed_row_bytes(len) == (len + 3) / 4 && packed_row_bytes(len) * 4 >= len &&
              (len == 0 || packed_row_bytes(len) * 4 < len + 4),
          "packed_row_bytes(%lld)", len);
  }
  // Every shape 1..67 x 1..67, both layouts: decode recovers every element.
  for (int N = 1; N <= 67; ++N)
    for (int K = 1; K <= 67; ++K) {
      std::vector<int> q(static_cast<size_t>(N) * K);
      for (int& v : q) v = rng.trit(0.33);
      bool ok = true;
      for (Layout L : {Layout::NK, Layout::KN}) {
        const std::vector<uint8_t> p = pack_weight(q, N, K, L);
        ok = ok && static_cast<long long>(p.size()) == weight_bytes(L, N, K);
        for (int n = 0; n < N && ok; ++n)
          for (int k = 0; k < K; ++k) {
            const int want = q[static_cast<size_t>(n) * K + k];
            const long long off = weight_byte_offset(L, N, K, n, k);
            const int t1 = weight_trit(L, p.data(), N, K, n, k);
            // the same element through a row pointer and a 16-trit word
            const long long rb = weight_row_bytes(L, N, K);
            const long long row = L == Layout::NK ? n : k, j = L == Layout::NK ? k : n;
            const uint8_t* rp = p.data() + row * rb;
            const int t2 = code_to_trit(packed_code(rp, j));
            const uint32_t wd = load_word_masked(rp, (j / 16) * 4, rb);
            const int t3 = static_cast<int>(trit_f32(wd, static_cast<int>(j % 16)));
            const int t4 = code_to_trit(word_code(wd, static_cast<int>(j % 16)));
            if (off / rb != row || t1 != want || t2 != want || t3 != want || t4 != want) {
              ok = false;
              break;
            }
          }
        // padding: elements past the row end decode as 0 in the masked word
        const long long rb = weight_row_bytes(L, N, K), len = L == Layout::NK ? K : N;
        const long long rows = L == Layout::NK ? N : K;
        for (long long r = 0; r < rows && ok; ++r)
          for (long long j = len; j < round_up(len, 16); ++j) {
            const uint32_t wd = load_word_masked(p.data() + r * rb, (j / 16) * 4, rb);
            if (trit_f32(wd, static_cast<int>(j % 16)) != 0.f) ok = false;
          }
      }
      check(ok, "decode of every element, shape %dx%d, both layouts", N, K);
    }
  // Exact float decode and the +/- masks, exhaustively over 16-bit halves.
  {
    bool ok = true;
    for (uint32_t h = 0; h < 65536 && ok; ++h) {
      const uint32_t w = h | (h << 16);
      const uint32_t pos = word_pos_mask(w), neg = word_neg_mask(w);
      for (int i = 0; i < 16; ++i) {
        const unsigned code = (w >> (2 * i)) & 3u;
        const float t = trit_f32(w, i);
        const int want = static_cast<int>(code) - 1;
        const int pm = static_cast<int>((pos >> (2 * i)) & 1u) - static_cast<int>((neg >> (2 * i)) & 1u);
        if (t != static_cast<float>(want) || word_code(w, i) != code ||
            (code != 3 && pm != want) || (code == 3 && pm != 0)) {
          ok = false;
          break;
        }
        if (i < 8 && trit_f32_lo8(h, i) != static_cast<float>(want)) ok = false;
      }
      if (word_is_zero(w) != (h == 0x5555u)) ok = false;
    }
    check(ok, "exact float decode / masks over all 16-bit patterns");
  }
  // Masked loads never read past the row: a row of rb bytes followed by poison.
  {
    bool ok = true;
    for (int rb = 1; rb <= 12; ++rb) {
      std::vector<uint8_t> buf(static_cast<size_t>(rb) + 8, 0xFF);
      for (int i = 0; i < rb; ++i) buf[static_cast<size_t>(i)] = static_cast<uint8_t>(rng.uniform(0, 255));
      for (int b0 = 0; b0 < rb + 4; b0 += 1) {
        const uint32_t wd = load_word_masked(buf.data(), b0, rb);
        for (int i = 0; i < 4; ++i) {
          const int b = b0 + i;
          const uint32_t want = b < rb ? buf[static_cast<size_t>(b)] : 0x55u;
          if (((wd >> (8 * i)) & 0xFF) != want) ok = false;
        }
        const uint32_t u2 = load_unit_masked<2>(buf.data(), b0, rb);
        const uint32_t u1 = load_unit_masked<1>(buf.data(), b0, rb);
        if (u2 != (wd & 0xFFFF) || u1 != (wd & 0xFF)) ok = false;
      }
      for (int b0 = 0; b0 + 4 <= rb; b0 += 4)
        if (load_word_aligned(buf.data() + b0) != load_word_masked(buf.data(), b0, rb)) ok = false;
      for (int b0 = 0; b0 + 2 <= rb; b0 += 2)
        if (load_unit_aligned<2>(buf.data() + b0) != load_unit_masked<2>(buf.data(), b0, rb)) ok = false;
    }
    check(ok, "masked / aligned word loads");
  }
  check(zero_unit<4>() == 0x55555555u && zero_unit<2>() == 0x5555u && zero_unit<1>() == 0x55u, "zero units");
  for (long long M = 1; M <= kGemvMaxM; ++M) {
    const int b = gemv_bucket(M);
    check(b >= M && (b == 1 || b / 2 < M) && (b & (b - 1)) == 0, "gemv bucket of M=%lld", M);
  }
  for (int MB : {1, 2, 4, 8})
    for (long long N = 1; N < 300; ++N) {
      const int cb = gemv_kn_unit_bytes(MB, N);
      check(packed_row_bytes(N) % cb == 0 && MB * 4 * cb <= 32, "kn unit bytes MB=%d N=%lld", MB, N);
    }
}

void test_conv_geometry() {
  // conv_out_dim against the formula, zero when the kernel does not fit.
  bool ok = true;
  for (int in = 1; in < 20; ++in)
    for (int k = 1; k < 6; ++k)
      for (int s = 1; s < 4; ++s)
        for (int p = 0; p < 3; ++p)
          for (int d = 1; d < 3; ++d) {
            long long want = 0;
            for (long long o = 0;; ++o) {  // count output positions whose window starts in range
              if (o * s + static_cast<long long>(d) * (k - 1) >= in + 2 * p) break;
              want = o + 1;
            }
            if (conv_out_dim(in, k, s, p, d) != want) ok = false;
          }
  check(ok, "conv_out_dim");
  // pixel / tap decompositions invert the composition.
  using G = ConvGeom<6, 9, 3, 5, 2, 1, 1, 2, 2, 1, 3>;
  ok = true;
  for (int OH = 1; OH < 7; ++OH)
    for (int OW = 1; OW < 7; ++OW)
      for (long long p = 0; p < 3LL * OH * OW; ++p) {
        const ConvPixel px = G::pixel(p, OH, OW);
        if ((px.b * OH + px.oh) * OW + px.ow != p || px.oh >= OH || px.ow >= OW || px.ih0 != px.oh * 2 - 1 ||
            px.iw0 != px.ow * 1 - 2)
          ok = false;
      }
  for (int kk = 0; kk < G::KDIM; ++kk) {
    int c, kh, kw, dh, dw;
    G::tap(kk, c, kh, kw);
    G::tap_delta(kk % G::TAPS, dh, dw);
    if ((c * 3 + kh) * 5 + kw != kk || c >= G::CING || kh >= 3 || kw >= 5 || dh != kh * 2 || dw != kw) ok = false;
  }
  check(ok, "conv pixel / tap decomposition");
  static_assert(G::KDIM == 2 * 15 && G::NDIM == 3 && G::ROW_BYTES == 8 && !G::DEPTHWISE, "geometry constants");
  static_assert(ConvGeom<8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 8>::DEPTHWISE, "depthwise");
  static_assert(!ConvGeom<4, 8, 3, 3, 1, 1, 1, 1, 1, 1, 4>::DEPTHWISE, "multiplier 2 is not depthwise");
}

// Coverage, alignment and bank conflicts of every tile configuration.
template <int V, bool ACOL, bool BCOL>
void mma_map_props() {
  using Cfg = MmaConfig<V>;
  using Map = MmaMap<Cfg, ACOL, BCOL>;
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, NT = Cfg::NT;
  std::vector<int> a_cov(static_cast<size_t>(BM) * BK, 0), b_cov(static_cast<size_t>(BN) * BK, 0);
  std::set<int> a_slots, b_slots;
  bool align = true;
  for (int tid = 0; tid < NT; ++tid) {
    if (ACOL) {
      int r0, k0;
      Map::a_elem(tid, 0, r0, k0);
      for (int i = 0; i < Map::EA; ++i) {
        int r, k;
        Map::a_elem(tid, i, r, k);
        if (r != r0 || r >= BM || k >= BK) align = false;
        else ++a_cov[static_cast<size_t>(r) * BK + k];
        a_slots.insert(Map::a_smem(r, k));
      }
    } else {
      for (int i = 0; i < Map::VA; ++i) {
        int r, k;
        Map::a_vec(tid, i, r, k);
        if ((Map::a_smem(r, k) * 2) % 16 != 0 || r >= BM || k + 8 > BK) align = false;
        for (int e = 0; e < 8 && r < BM && k + e < BK; ++e) {
          ++a_cov[static_cast<size_t>(r) * BK + k + e];
          a_slots.insert(Map::a_smem(r, k + e));
        }
      }
    }
    for (int i = 0; i < Map::VB; ++i) {
      int n, k;
      Map::b_word(tid, i, n, k);
      if ((Map::b_smem(n, k) * 2) % 16 != 0) align = false;
      for (int e = 0; e < 16; ++e) {
        const int nn = BCOL ? n : n + e, kk = BCOL ? k + e : k;
        if (nn >= BN || kk >= BK) {
          align = false;
          continue;
        }
        ++b_cov[static_cast<size_t>(nn) * BK + kk];
        if (Map::b_smem(nn, kk) != Map::b_smem(n, k) + e) align = false;  // 16 consecutive
        b_slots.insert(Map::b_smem(nn, kk));
      }
    }
  }
  bool cov = true;
  for (int v : a_cov) cov = cov && v == 1;
  for (int v : b_cov) cov = cov && v == 1;
  cov = cov && static_cast<int>(a_slots.size()) == BM * BK && static_cast<int>(b_slots.size()) == BN * BK;
  for (int s : a_slots) cov = cov && s >= 0 && s < Map::A_ELEMS;
  for (int s : b_slots) cov = cov && s >= 0 && s < Map::B_ELEMS;
  // fragments: cover the block tile once; fragment pointers 32-byte aligned, ld % 8 == 0
  std::vector<int> c_cov(static_cast<size_t>(BM) * BN, 0);
  for (int warp = 0; warp < Cfg::NWARPS; ++warp)
    for (int i = 0; i < Cfg::FM; ++i)
      for (int j = 0; j < Cfg::FN; ++j) {
        for (int kk = 0; kk < BK; kk += 16) {
          if ((Map::a_smem(Map::frag_row(warp, i), kk) * 2) % 32 != 0) align = false;
          if ((Map::b_smem(Map::frag_col(warp, j), kk) * 2) % 32 != 0) align = false;
        }
        for (int r = 0; r < 16; ++r)
          for (int c = 0; c < 16; ++c) ++c_cov[static_cast<size_t>(Map::frag_row(warp, i) + r) * BN + Map::frag_col(warp, j) + c];
      }
  for (int v : c_cov) cov = cov && v == 1;
  align = align && Map::LDA % 8 == 0 && Map::LDB % 8 == 0 && (Map::A_ELEMS * 2) % 32 == 0 &&
          (Map::B_ELEMS * 2) % 32 == 0 && 2 * Map::STAGE * 2 <= 48 * 1024 &&
          2 * Map::STAGE * 2 >= Cfg::NWARPS * 1024;
  for (bool conv : {false, true}) {
    std::vector<int> e_cov(256, 0);
    for (int lane = 0; lane < 32; ++lane) {
      int r0, c0;
      Map::epi(conv, lane, 0, r0, c0);
      for (int e = 0; e < 8; ++e) {
        int r, c;
        Map::epi(conv, lane, e, r, c);
        if (conv && r != r0) cov = false;  // one pixel per lane
        ++e_cov[static_cast<size_t>(r) * 16 + c];
      }
    }
    for (int v : e_cov) cov = cov && v == 1;
  }
  check(cov, "mma map v%d acol=%d bcol=%d covers every element once", V, ACOL, BCOL);
  check(align, "mma map v%d acol=%d bcol=%d alignment and shared size", V, ACOL, BCOL);
}

template <int V, bool CONV, Layout L>
void simt_map_props() {
  using Cfg = SimtConfig<V>;
  using Map = SimtMap<Cfg, CONV, L>;
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, NT = Cfg::NT;
  std::vector<int> a_cov(static_cast<size_t>(BM) * BK, 0), b_cov(static_cast<size_t>(BN) * BK, 0),
      c_cov(static_cast<size_t>(BM) * BN, 0);
  bool ok = true;
  for (int tid = 0; tid < NT; ++tid) {
    int r0 = -1, k0;
    for (int i = 0; i < Map::EA; ++i) {
      int r, k;
      if (!Map::a_elem(tid, i, r, k)) continue;
      if (CONV && r0 >= 0 && r != r0) ok = false;  // one pixel per thread
      r0 = r;
      if (r >= BM || k >= BK) ok = false;
      else ++a_cov[static_cast<size_t>(r) * BK + k];
    }
    (void)k0;
    for (int i = 0; i < Map::VB; ++i) {
      int n, k;
      if (!Map::b_word(tid, i, n, k)) continue;
      if (L == Layout::KN && (n % 4) != 0) ok = false;  // float4 stores
      for (int e = 0; e < 16; ++e) {
        const int nn = L == Layout::NK ? n : n + e, kk = L == Layout::NK ? k + e : k;
        if (nn >= BN || kk >= BK) ok = false;
        else ++b_cov[static_cast<size_t>(nn) * BK + kk];
      }
    }
    for (int i = 0; i < Cfg::TM; ++i)
      for (int j = 0; j < Cfg::TN; ++j) ++c_cov[static_cast<size_t>(Map::out_row(tid, i)) * BN + Map::out_col(tid, j)];
    for (int s = 0; s < Cfg::SM; ++s) {
      if (Map::out_row(tid, 4 * s) % 4 != 0) ok = false;  // float4 loads
      for (int q = 0; q < 4; ++q) ok = ok && Map::out_row(tid, 4 * s + q) == Map::out_row(tid, 4 * s) + q;
    }
    for (int s = 0; s < Cfg::SN; ++s) {
      if (Map::out_col(tid, 4 * s) % 4 != 0) ok = false;
      for (int q = 0; q < 4; ++q) ok = ok && Map::out_col(tid, 4 * s + q) == Map::out_col(tid, 4 * s) + q;
    }
  }
  for (int v : a_cov) ok = ok && v == 1;
  for (int v : b_cov) ok = ok && v == 1;
  for (int v : c_cov) ok = ok && v == 1;
  ok = ok && Map::LDA % 4 == 0 && Map::LDB % 4 == 0 && 2 * BK * (Map::LDA + Map::LDB) * 4 <= 48 * 1024;
  check(ok, "simt map v%d conv=%d %s covers every element once, aligned", V, CONV, L == Layout::NK ? "NK" : "KN");
}

template <int MB>
void gemv_chunk_props() {
  using C = GemvNkChunk<MB>;
  bool ok = MB * C::UNITS * C::XS * 4 <= 20480;
  std::set<int> slots;
  for (int e = 0; e < C::UNITS * 16; ++e) slots.insert(C::slot(e));
  ok = ok && static_cast<int>(slots.size()) == C::UNITS * 16 && *slots.rbegin() < C::UNITS * C::XS;
  // float4 reads: 16-byte aligned, and each quarter warp (8 lanes) hits 8 disjoint bank groups.
  for (int p = 0; p < C::P; ++p)
    for (int h = 0; h < 2; ++h)
      for (int q = 0; q < 2; ++q)
        for (int qw = 0; qw < 4; ++qw) {
          std::set<int> banks;
          for (int l = 8 * qw; l < 8 * qw + 8; ++l) {
            const int u = l + 32 * p;
            const int word = u * C::XS + 8 * h + 4 * q;
            if (word % 4 != 0) ok = false;
            for (int b = 0; b < 4; ++b) banks.insert((word + b) % 32);
          }
          if (banks.size() != 32) ok = false;
        }
  check(ok, "gemv NK x chunk MB=%d: slots unique, float4 reads aligned and conflict-free", MB);
}

void test_maps() {
  mma_map_props<0, false, true>();
  mma_map_props<0, false, false>();
  mma_map_props<0, true, true>();
  mma_map_props<1, false, true>();
  mma_map_props<1, false, false>();
  mma_map_props<1, true, true>();
  mma_map_props<2, false, true>();
  mma_map_props<2, false, false>();
  mma_map_props<2, true, true>();
  simt_map_props<0, false, Layout::NK>();
  simt_map_props<0, false, Layout::KN>();
  simt_map_props<0, true, Layout::NK>();
  simt_map_props<1, false, Layout::NK>();
  simt_map_props<1, false, Layout::KN>();
  simt_map_props<1, true, Layout::NK>();
  simt_map_props<2, false, Layout::NK>();
  simt_map_props<2, false, Layout::KN>();
  simt_map_props<2, true, Layout::NK>();
  gemv_chunk_props<1>();
  gemv_chunk_props<2>();
  gemv_chunk_props<4>();
  gemv_chunk_props<8>();
  for (int v = 0; v < 3; ++v) {
    for (long long nu : {1LL, 3LL, 64LL, 256LL, 688LL, 100000LL}) {
      const int c = v == 0 ? gemv_kn_cwb<0>(nu) : v == 1 ? gemv_kn_cwb<1>(nu) : gemv_kn_cwb<2>(nu);
      check(is_pow2(c) && c <= 32 && kGemvKnThreads % c == 0 && 32 % c == 0, "kn cwb v%d nu=%lld", v, nu);
    }
  }
}

// The epilogue order on hand-picked values (independent of the naive reference).
void test_epilogue() {
  check(epilogue<Act::None, Residual::None>(2.f, 0.5f, 3.f, 1.f, 100.f) == 4.f, "epilogue scale*chs+bias");
  check(epilogue<Act::ReLU, Residual::BeforeAct>(2.f, 1.f, 1.f, 0.f, -5.f) == 0.f, "residual before act");
  check(epilogue<Act::ReLU, Residual::AfterAct>(2.f, 1.f, 1.f, 0.f, -5.f) == -3.f, "residual after act");
  check(epilogue<Act::ReLU6, Residual::None>(10.f, 1.f, 1.f, 0.f, 0.f) == 6.f, "relu6");
  check(std::isnan(act_apply<Act::ReLU>(kNaN)), "relu keeps NaN");
  check(act_apply<Act::Hardswish>(-4.f) == 0.f && act_apply<Act::Hardswish>(4.f) == 4.f, "hardswish");
  check(std::fabs(act_apply<Act::GELU>(1.f) - 0.8413447f) < 1e-6f, "gelu(1) exact erf form");
  check(std::fabs(act_apply<Act::SiLU>(-100.f)) < 1e-30f && act_apply<Act::Sigmoid>(-200.f) == 0.f,
        "silu / sigmoid saturate");
}

// A replay that reads past a guard page (or trips an assertion) still ends with the summary.
size_t fmt_uint(char* out, long v) {
  char tmp[24];
  size_t n = 0;
  do {
    tmp[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v > 0);
  for (size_t i = 0; i < n; ++i) out[i] = tmp[n - 1 - i];
  return n;
}

extern "C" void on_crash(int sig) {
  char buf[160];
  size_t n = 0;
  const char* msg = "FAIL: crashed (signal ";
  for (const char* p = msg; *p; ++p) buf[n++] = *p;
  n += fmt_uint(buf + n, sig);
  const char* msg2 = "): an access outside a buffer or a failed assertion\n";
  for (const char* p = msg2; *p; ++p) buf[n++] = *p;
  n += fmt_uint(buf + n, g_pass);
  const char* msg3 = " passed, ";
  for (const char* p = msg3; *p; ++p) buf[n++] = *p;
  n += fmt_uint(buf + n, g_fail + 1);
  const char* msg4 = " failed\n";
  for (const char* p = msg4; *p; ++p) buf[n++] = *p;
  fflush(stdout);
  if (write(1, buf, n) < 0) _exit(2);
  _exit(1);
}

}  // namespace

int main() {
  std::signal(SIGSEGV, on_crash);
  std::signal(SIGBUS, on_crash);
  std::signal(SIGABRT, on_crash);
  Rng rng;
  test_format(rng);
  test_conv_geometry();
  test_maps();
  test_epilogue();
  test_linear();
  test_conv();
  std::printf("%d passed, %d failed\n", g_pass, g_fail);
  return g_fail ? 1 : 0;
}

//===- tck_dwconv.cuh - depthwise ternary convolution -----------*- C++ -*-===//
//
// GROUPS == CIN == COUT: one KH x KW filter per channel. A block owns NT * PPT output
// pixels of one (batch, channel) plane; warp 0 compacts the channel's nonzero taps (offset,
// trit) into shared memory with a ballot, so every thread loops over the nonzero taps only
// (a warp-uniform trip count: zero trits cost nothing). Input reads go through the
// read-only cache (neighbouring pixels share their taps' rows). Planes beyond gridDim.y
// are walked in a grid-stride loop (batch * C may exceed 65535).
//
//===----------------------------------------------------------------------===//
#ifndef TCK_DWCONV_CUH
#define TCK_DWCONV_CUH

#ifndef TCK_DEVICE_CUH
#include "tck_device.cuh"
#endif

namespace tck {
namespace detail {

template <typename T, class G, Act A, Residual R, int NT, int PPT>
__global__ void __launch_bounds__(NT) dwconv_kernel(const Args<T> args) {
  static_assert(G::DEPTHWISE, "depthwise geometry");
  static_assert(NT % 32 == 0, "whole warps");
  constexpr int TAPS = G::TAPS;
  constexpr long long RB = G::ROW_BYTES;
  constexpr int C = G::CIN_;

  __shared__ int s_dh[TAPS];
  __shared__ int s_dw[TAPS];
  __shared__ float s_t[TAPS];
  __shared__ int s_n;

  const T* __restrict__ x = args.x;
  const uint8_t* __restrict__ w = args.w;
  const int H = args.H, W = args.W, OH = args.OH, OW = args.OW;
  const long long npix = static_cast<long long>(OH) * OW;
  const long long planes = args.batch * C;
  const int lane = threadIdx.x & 31;

  for (long long plane = blockIdx.y; plane < planes; plane += gridDim.y) {
    const int c = static_cast<int>(plane % C);
    __syncthreads();  // the previous plane's taps are consumed
    if (threadIdx.x < 32) {
      const uint8_t* row = w + static_cast<long long>(c) * RB;
      int count = 0;
      for (int base = 0; base < TAPS; base += 32) {
        const int t = base + lane;
        const unsigned code = t < TAPS ? packed_code(row, t) : kCodeZero;
        const bool nz = code != kCodeZero;
        const unsigned mask = __ballot_sync(0xffffffffu, nz);
        if (nz) {
          const int pos = count + __popc(mask & ((1u << lane) - 1u));
          G::tap_delta(t, s_dh[pos], s_dw[pos]);
          s_t[pos] = static_cast<float>(code_to_trit(code));
        }
        count += __popc(mask);
      }
      if (lane == 0) s_n = count;
    }
    __syncthreads();
    const int nnz = s_n;
    const T* xp = x + plane * static_cast<long long>(H) * W;

#pragma unroll
    for (int j = 0; j < PPT; ++j) {
      const long long pix = (static_cast<long long>(blockIdx.x) * PPT + j) * NT + threadIdx.x;
      if (pix >= npix) break;
      const int oh = static_cast<int>(pix / OW);
      const int ow = static_cast<int>(pix - static_cast<long long>(oh) * OW);
      const int ih0 = oh * G::SH_ - G::PH_;
      const int iw0 = ow * G::SW_ - G::PW_;
      float acc = 0.f;
      for (int t = 0; t < nnz; ++t) {
        const int ih = ih0 + s_dh[t];
        const int iw = iw0 + s_dw[t];
        if (ih >= 0 && ih < H && iw >= 0 && iw < W)
          acc = fmaf(s_t[t], ldg_f<T>(xp + static_cast<long long>(ih) * W + iw), acc);
      }
      store_out<T, A, R>(args, plane * npix + pix, c, acc);
    }
  }
}

template <typename T, class G, Act A, Residual R, int VARIANT>
int launch_dwconv(const Args<T>& a, cudaStream_t stream) {
  using Cfg = DwConfig<VARIANT>;
  const long long npix = static_cast<long long>(a.OH) * a.OW;
  const long long planes = a.batch * G::CIN_;
  const long long gx = ceil_div(npix, static_cast<long long>(Cfg::NT) * Cfg::PPT);
  if (gx > 0x7fffffffLL) return static_cast<int>(cudaErrorInvalidConfiguration);
  const dim3 grid(static_cast<unsigned>(gx), static_cast<unsigned>(planes < 65535 ? planes : 65535));
  const auto kernel = dwconv_kernel<T, G, A, R, Cfg::NT, Cfg::PPT>;
  TCK_LAUNCH(kernel, grid, Cfg::NT, stream)(a);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace detail
}  // namespace tck

#endif  // TCK_DWCONV_CUH

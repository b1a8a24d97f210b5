//===- tck_device.cuh - device-side utilities (nvcc only) -------*- C++ -*-===//
//
// Element-type conversions (float / __half / __nv_bfloat16, accumulation in float), warp
// reductions and the epilogue store (the argument block Args is in tck_common.cuh).
//
//===----------------------------------------------------------------------===//
#ifndef TCK_DEVICE_CUH
#define TCK_DEVICE_CUH

#ifndef TCK_COMMON_CUH
#include "tck_common.cuh"
#endif

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include <atomic>
#include <type_traits>

#ifdef TCK_EMU_CUDA_RUNTIME_H
#include <mma.h>  // tests/cuda/emu: tck_emu::mma_m16n8k16, tck_emu::sub2
#else
#include <cooperative_groups.h>  // this_cluster() (sm_90+)
#endif

// kernel<<<grid, block, 0, stream>>>, where `kernel` is a pointer to a __global__ function
// (a name without commas, so that it passes through a macro): tests/cuda/emu, which runs the
// kernels' own code on the CPU, defines it to its launcher.
#ifndef TCK_LAUNCH
#define TCK_LAUNCH(kernel, grid, block, stream) kernel<<<grid, block, 0, stream>>>
#endif
// The same in thread-block clusters of shape `cluster` (a dim3; sm_90+): cudaLaunchKernelEx
// with cudaLaunchAttributeClusterDimension; the call returns the launch's cudaError_t.
#ifndef TCK_LAUNCH_CLUSTER
#define TCK_LAUNCH_CLUSTER(kernel, grid, block, cluster, stream) \
  ::tck::detail::ClusterLaunch<decltype(kernel)>{kernel, grid, block, cluster, stream}
#endif

namespace tck {
namespace detail {

#ifndef TCK_EMU_CUDA_RUNTIME_H
/// A launch of `grid` x `block` on `stream` in clusters of `cluster` blocks (the attribute
/// lives beside the configuration that points to it: not copyable).
struct ClusterConfig {
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute attr[1];

  ClusterConfig(dim3 grid, dim3 block, dim3 cluster, cudaStream_t stream) {
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = 0;
    cfg.stream = stream;
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = cluster.x;
    attr[0].val.clusterDim.y = cluster.y;
    attr[0].val.clusterDim.z = cluster.z;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
  }
  ClusterConfig(const ClusterConfig&) = delete;
  ClusterConfig& operator=(const ClusterConfig&) = delete;
};

/// TCK_LAUNCH_CLUSTER's call: kernel(arg) on `grid` in clusters of `cluster` blocks.
template <typename K>
struct ClusterLaunch {
  K kernel;
  dim3 grid, block, cluster;
  cudaStream_t stream;

  template <typename Arg>
  cudaError_t operator()(const Arg& arg) const {
    const ClusterConfig c(grid, block, cluster, stream);
    return cudaLaunchKernelEx(&c.cfg, kernel, arg);
  }
};
#endif

template <typename T>
struct IsElem
    : std::integral_constant<bool, std::is_same<T, float>::value || std::is_same<T, __half>::value ||
                                       std::is_same<T, __nv_bfloat16>::value> {};

template <typename T>
__device__ TCK_INLINE float to_f(T v);
template <>
__device__ TCK_INLINE float to_f<float>(float v) {
  return v;
}
template <>
__device__ TCK_INLINE float to_f<__half>(__half v) {
  return __half2float(v);
}
template <>
__device__ TCK_INLINE float to_f<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

template <typename T>
__device__ TCK_INLINE T from_f(float v);
template <>
__device__ TCK_INLINE float from_f<float>(float v) {
  return v;
}
template <>
__device__ TCK_INLINE __half from_f<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ TCK_INLINE __nv_bfloat16 from_f<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

/// x[i] through the read-only path, as float.
template <typename T>
__device__ TCK_INLINE float ldg_f(const T* p) {
  return to_f<T>(__ldg(p));
}

/// Two floats -> the 32-bit pair of 16-bit elements (lo = a); exact for trits.
template <typename T>
__device__ TCK_INLINE uint32_t pack2(float a, float b);
template <>
__device__ TCK_INLINE uint32_t pack2<__half>(float a, float b) {
  __half2 h = __floats2half2_rn(a, b);
  return *reinterpret_cast<uint32_t*>(&h);
}
template <>
__device__ TCK_INLINE uint32_t pack2<__nv_bfloat16>(float a, float b) {
  __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
  return *reinterpret_cast<uint32_t*>(&h);
}

__device__ TCK_INLINE float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// ---- tensor-core fragments (sm_80+) -------------------------------------------------------

/// What the architecture of this compilation pass offers a 16-bit element type T (the host
/// pass and tests/cuda/emu, which defines __CUDA_ARCH__ 900, count as sm_90 or later):
/// OK: WMMA 16x16x16 (half from sm_70, bf16 from sm_80); M16N8K16: mma.m16n8k16 (sm_80).
template <typename T>
struct MmaArch {
#if defined(__CUDA_ARCH__)
  static constexpr int ARCH = __CUDA_ARCH__;
#else
  static constexpr int ARCH = 1000;
#endif
  static constexpr bool OK = std::is_same<T, __half>::value ? ARCH >= 700 : ARCH >= 800;
  static constexpr bool M16N8K16 = !std::is_same<T, float>::value && ARCH >= 800;
};

/// `ask(dev)` for the current device, remembered per device in `memo` (0: not asked yet):
/// `ask` returns a positive answer, or 0 when the device could not be asked (not
/// remembered; 0 is returned). The launchers' device queries go through it, so a launch
/// asks the driver once per device and kernel, not at every call.
template <typename Ask>
int per_device(std::atomic<int> (&memo)[64], Ask ask) {
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0) return 0;
  int v = dev < 64 ? memo[dev].load(std::memory_order_relaxed) : 0;
  if (v == 0) {
    v = ask(dev);
    if (v > 0 && dev < 64) memo[dev].store(v, std::memory_order_relaxed);
  }
  return v > 0 ? v : 0;
}

/// The current device's compute capability major (0 when it cannot be asked).
inline int device_cc_major() {
  static std::atomic<int> major[64];
  return per_device(major, [](int dev) {
    int m = 0;
    return cudaDeviceGetAttribute(&m, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess ? m
                                                                                              : 0;
  });
}

/// Whether the current device runs mma.m16n8k16 (compute capability 8.0 or later): a
/// library built for sm_75 and sm_90 holds both bodies of the tensor-core GEMV, and before
/// sm_80 its body is a plain loop, so the launchers take the CUDA-core GEMV and the WMMA
/// GEMM there instead.
inline bool device_has_mma16816() { return device_cc_major() >= 8; }

/// cudaOccupancyMaxActiveClusters for `kernel` in clusters of `cluster` blocks of `threads`
/// threads on the current device (-1 when the query failed).
template <typename Kernel>
int max_active_clusters(Kernel kernel, unsigned threads, dim3 cluster) {
#ifdef TCK_EMU_CUDA_RUNTIME_H
  (void)kernel, (void)threads, (void)cluster;
  return tck_emu::maxActiveClusters();
#else
  const ClusterConfig c(cluster, dim3(threads), cluster, nullptr);
  int clusters = 0;
  return cudaOccupancyMaxActiveClusters(&clusters, kernel, &c.cfg) == cudaSuccess ? clusters : -1;
#endif
}

/// Whether `kernel` runs in clusters of `cluster` blocks of `threads` threads on the current
/// device, asked once per device through `known` (one per kernel: 1 yes, 2 no): the device
/// launches clusters (cudaDevAttrClusterLaunch: sm_90+), the code that runs was compiled
/// for sm_90+ (a compute_80 PTX JIT-compiled there has no cluster code: its ptxVersion is
/// 80), and one such cluster fits on the device (cudaOccupancyMaxActiveClusters; none may
/// under a MIG or MPS partition). Otherwise the caller launches without clusters. A query
/// the driver refuses counts as "no", and its error is taken off the thread's last error
/// (the caller's launch reports cudaGetLastError() as its own); an error the caller had
/// before stays.
template <typename Kernel>
bool cluster_launch_ok(Kernel kernel, unsigned threads, dim3 cluster, std::atomic<int> (&known)[64]) {
  return per_device(known, [&](int dev) {
    int attr = 0;
    cudaFuncAttributes fa = {};
    bool refused = cudaDeviceGetAttribute(&attr, cudaDevAttrClusterLaunch, dev) != cudaSuccess;
    bool ok = !refused && attr != 0;
    if (ok) {
      refused = cudaFuncGetAttributes(&fa, kernel) != cudaSuccess;
      ok = !refused && fa.ptxVersion >= 90;
    }
    if (ok) {
      const int clusters = max_active_clusters(kernel, threads, cluster);
      refused = clusters < 0;
      ok = clusters > 0;
    }
    if (refused) (void)cudaGetLastError();
    return ok ? 1 : 2;
  }) == 1;
}

// ---- thread-block clusters (sm_90+) -------------------------------------------------------

/// Whether this compilation pass has thread-block clusters (tests/cuda/emu: sm_90). A
/// kernel built for an older target but run in a cluster (a compute_80 PTX JIT-compiled on
/// an sm_90 device) must not rely on them: see gemv_mma_kernel.
inline constexpr bool kClusterArch =
#if defined(TCK_EMU_CUDA_RUNTIME_H) || (defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900)
    true;
#else
    false;
#endif

/// cluster.sync(): a barrier of every thread of the cluster's blocks, with release and
/// acquire semantics for shared memory (also a barrier of the block).
__device__ TCK_INLINE void cluster_sync() {
#if defined(TCK_EMU_CUDA_RUNTIME_H)
  tck_emu::clusterSync();
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cooperative_groups::this_cluster().sync();
#endif
}

/// The address of __shared__ `p` in the shared memory of block `rank` of the cluster.
template <typename U>
__device__ TCK_INLINE U* cluster_map(U* p, unsigned rank) {
#if defined(TCK_EMU_CUDA_RUNTIME_H)
  return tck_emu::mapSharedRank(p, rank);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  return cooperative_groups::this_cluster().map_shared_rank(p, rank);
#else
  (void)rank;
  return p;  // never called: callers test kClusterArch
#endif
}

/// d += A * B for one 16 x 8 x 16 tile: PTX mma.sync.aligned.m16n8k16.row.col.f32.T.T.f32
/// (fragment registers as the PTX ISA lays them out; tests/cuda/emu/mma.h spells it out).
template <typename T>
__device__ TCK_INLINE void mma_16816(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#if defined(TCK_EMU_CUDA_RUNTIME_H)
  tck_emu::mma_m16n8k16<T>(d, a, b);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (std::is_same<T, __half>::value) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
#else
  (void)d, (void)a, (void)b;  // never called: callers test MmaArch<T>::M16N8K16
#endif
}

/// x - y of two pairs of 16-bit T given as bits (exact where the trit decode uses it).
template <typename T>
__device__ TCK_INLINE uint32_t sub2_bits(uint32_t x, uint32_t y) {
#if defined(TCK_EMU_CUDA_RUNTIME_H)
  return tck_emu::sub2<T>(x, y);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (std::is_same<T, __half>::value) {
    __half2 r = __hsub2(*reinterpret_cast<const __half2*>(&x), *reinterpret_cast<const __half2*>(&y));
    return *reinterpret_cast<uint32_t*>(&r);
  } else {
    __nv_bfloat162 r = __hsub2(*reinterpret_cast<const __nv_bfloat162*>(&x),
                               *reinterpret_cast<const __nv_bfloat162*>(&y));
    return *reinterpret_cast<uint32_t*>(&r);
  }
#else
  (void)y;
  return x;  // never called: callers test MmaArch<T>::M16N8K16
#endif
}

/// The 8 pairs (trit e, trit e + 8), e = 0..7, of a packed word (16 trits) as exact 16-bit
/// T pairs (lo = trit e). Each pair's two 2-bit codes are masked, in place, into the mantissas
/// of a magic number M whose lowest code bit weighs 1 (M + code), and M + 1 is subtracted:
/// the float decode of tck_common.cuh, two elements per LOP3 and per HSUB2. __half's 10
/// mantissa bits take the codes at bits 0..7 of each half (M = 1024, 256, 64, 16), so the
/// word and the word >> 8 give 4 pairs each; __nv_bfloat16's 7 take bits 0..5 (M = 128, 32,
/// 8): the word, >> 6 and >> 12 give 3, 3 and 2.
template <typename T>
__device__ TCK_INLINE void decode_pairs(uint32_t w, uint32_t (&p)[8]) {
  if constexpr (std::is_same<T, __half>::value) {
    constexpr uint32_t magic[4] = {0x64006400u, 0x5C005C00u, 0x54005400u, 0x4C004C00u};
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      const int i = e & 3;
      const uint32_t src = e < 4 ? w : w >> 8;
      const uint32_t mask = 0x00030003u << (2 * i);
      p[e] = sub2_bits<T>((src & mask) | magic[i], magic[i] | (0x00010001u << (2 * i)));
    }
  } else {
    constexpr uint32_t magic[3] = {0x43004300u, 0x42004200u, 0x41004100u};
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      const int i = e < 3 ? e : e < 6 ? e - 3 : e - 6;
      const uint32_t src = e < 3 ? w : e < 6 ? w >> 6 : w >> 12;
      const uint32_t mask = 0x00030003u << (2 * i);
      p[e] = sub2_bits<T>((src & mask) | magic[i], magic[i] | (0x00010001u << (2 * i)));
    }
  }
}

/// The epilogue of output feature/channel n, written at y[off] (residual read at off).
template <typename T, Act A, Residual R>
__device__ TCK_INLINE void store_out(const Args<T>& a, long long off, int n, float acc) {
  const float chs = a.chscale != nullptr ? __ldg(a.chscale + n) : 1.f;
  const float bs = a.bias != nullptr ? __ldg(a.bias + n) : 0.f;
  float res = 0.f;
  if constexpr (R != Residual::None) res = ldg_f<T>(a.residual + off);
  a.y[off] = from_f<T>(epilogue<A, R>(acc, a.scale, chs, bs, res));
}

}  // namespace detail
}  // namespace tck

#endif  // TCK_DEVICE_CUH

// Self-test of the CPU emulation of CUDA (tests/cuda/emu): it must run correct kernels
// correctly and catch the faults it claims to catch. Each faulty kernel runs in a child
// process, which must die with the emulator's message.
//
//   clang++ -std=c++17 -x c++ -I tests/cuda/emu -include cuda_runtime.h
//       tests/cuda/emu/emu_selftest.cpp -o emu_selftest && ./emu_selftest
//
// Prints "N passed, N failed" last; exits 1 on any failure.
#include "mma.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <string>

namespace {

int g_pass = 0;
int g_fail = 0;

void check(bool ok, const std::string& what) {
  if (ok) {
    ++g_pass;
  } else {
    ++g_fail;
    printf("FAIL: %s\n", what.c_str());
  }
}

struct Buf {
  float* in;
  float* out;
  int n;
};

// Block-wide sum through shared memory and a tree of barriers, then a warp shuffle.
__global__ void block_sum(Buf b) {
  __shared__ float s[256];
  const int t = threadIdx.x;
  const int i = blockIdx.x * blockDim.x + t;
  s[t] = i < b.n ? b.in[i] : 0.f;
  __syncthreads();
  for (int o = blockDim.x / 2; o >= 32; o >>= 1) {
    if (t < o) s[t] += s[t + o];
    __syncthreads();
  }
  if (t < 32) {
    float v = s[t];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (t == 0) b.out[blockIdx.x] = v;
  }
}

// The same without the first barrier: a thread reads a slot another thread has not written.
__global__ void block_sum_racy(Buf b) {
  __shared__ float s[256];
  const int t = threadIdx.x;
  s[t] = b.in[blockIdx.x * blockDim.x + t];
  if (t < 128) s[t] += s[t + 128];
  __syncthreads();
  if (t == 0) {
    float v = 0.f;
    for (int j = 0; j < 128; ++j) v += s[j];
    b.out[blockIdx.x] = v;
  }
}

// Half a warp waits at the block's barrier, the other half at the warp's: neither meets.
__global__ void divergent_barrier(Buf b) {
  if (threadIdx.x < 16) {
    __syncthreads();
  } else {
    __syncwarp();
  }
  b.out[threadIdx.x] = 1.f;
}

// A shuffle after half of the warp has returned.
__global__ void shuffle_after_exit(Buf b) {
  if (threadIdx.x >= 16) return;
  b.out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1.f, 1);
}

// Shared memory read before any thread wrote it.
__global__ void read_unwritten(Buf b) {
  __shared__ float s[64];
  if (threadIdx.x == 0) s[0] = 1.f;
  __syncthreads();
  b.out[threadIdx.x] = s[threadIdx.x];
}

// The same in a kernel template (the kernels' shared arrays are static locals of templates).
template <int N>
__global__ void read_unwritten_t(Buf b) {
  __shared__ float s[N];
  if (threadIdx.x == 0) s[0] = 1.f;
  __syncthreads();
  b.out[threadIdx.x] = s[threadIdx.x];
}

__global__ void ballot(Buf b) {
  const unsigned m = __ballot_sync(0xffffffffu, threadIdx.x % 3 == 0);
  if (threadIdx.x == 0) b.out[0] = static_cast<float>(m);
}

// One 16x16x16 product of half tiles through wmma.
struct MmaArgs {
  const __half* a;
  const __half* bt;
  float* c;
  int lda;
};
__global__ void wmma_tile(MmaArgs m) {
  using namespace nvcuda;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.f);
  wmma::load_matrix_sync(fa, m.a, m.lda);
  wmma::load_matrix_sync(fb, m.bt, 16);
  wmma::mma_sync(acc, fa, fb, acc);
  wmma::store_matrix_sync(m.c, acc, 16, wmma::mem_row_major);
}

// Split-K over a cluster of gridDim.z blocks: each block sums its slice of the input into
// four slots of shared memory, then (after the cluster's barrier) block `rank` adds slots
// rank, rank + gridDim.z, ... of every block's partials, in rank order, through distributed
// shared memory.
__global__ void cluster_sum(Buf b) {
  __shared__ float part[4];
  const unsigned cs = gridDim.z, rank = blockIdx.z;
  const int t = threadIdx.x;
  if (t < 4) {
    float v = 0.f;
    for (int i = static_cast<int>(rank) * 4 + t; i < b.n; i += 4 * static_cast<int>(cs)) v += b.in[i];
    part[t] = v;
  }
  tck_emu::clusterSync();
  if (t == 0) {
    for (unsigned slot = rank; slot < 4; slot += cs) {
      float v = 0.f;
      for (unsigned r = 0; r < cs; ++r) v += tck_emu::mapSharedRank(part, r)[slot];
      b.out[slot] = v;
    }
  }
  tck_emu::clusterSync();
}

// The same without the first cluster barrier: a block reads partials not yet written.
__global__ void cluster_sum_racy(Buf b) {
  __shared__ float part[4];
  const unsigned rank = blockIdx.z;
  if (threadIdx.x < 4) part[threadIdx.x] = b.in[rank * 4 + threadIdx.x];
  __syncthreads();
  if (threadIdx.x == 0) {
    float v = 0.f;
    for (unsigned r = 0; r < gridDim.z; ++r) v += tck_emu::mapSharedRank(part, r)[0];
    b.out[rank] = v;
  }
  tck_emu::clusterSync();
}

// Block 1 exits while block 0 still reads its shared memory (no second barrier): caught in
// the cluster whose blocks run in reverse.
__global__ void cluster_read_exited(Buf b) {
  __shared__ float part[1];
  part[0] = 1.f;
  tck_emu::clusterSync();
  if (blockIdx.z == 0) b.out[0] = tck_emu::mapSharedRank(part, 1)[0];
}

// Half of a block waits at the cluster's barrier, the other half at the block's.
__global__ void cluster_divergent(Buf b) {
  if (threadIdx.x < 32) {
    tck_emu::clusterSync();
  } else {
    __syncthreads();
  }
  b.out[threadIdx.x] = 1.f;
}

// Runs f in a child; true when the child died by abort() (the emulator's fatal()).
template <typename F>
bool dies(F f) {
  fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    freopen("/dev/null", "w", stderr);
    f();
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

}  // namespace

int main() {
  const int n = 1000;
  static float in[1024], out[1024];
  for (int i = 0; i < n; ++i) in[i] = static_cast<float>(i % 17) - 8.f;
  Buf b{in, out, n};

  // Correct kernels compute the right values.
  TCK_LAUNCH(block_sum, dim3(4), dim3(256), nullptr)(b);
  check(cudaGetLastError() == cudaSuccess, "block_sum launches");
  float total = out[0] + out[1] + out[2] + out[3], want = 0.f;
  for (int i = 0; i < n; ++i) want += in[i];
  check(total == want, "block_sum adds up the input (" + std::to_string(total) + " vs " +
                           std::to_string(want) + ")");
  TCK_LAUNCH(ballot, dim3(1), dim3(32), nullptr)(b);
  unsigned want_mask = 0;
  for (int l = 0; l < 32; ++l)
    if (l % 3 == 0) want_mask |= 1u << l;
  check(out[0] == static_cast<float>(want_mask), "ballot collects the predicate of every lane");

  alignas(32) static __half a[16 * 24], bt[16 * 16];
  alignas(32) static float c[16 * 16];
  float ref[16][16] = {};
  for (int i = 0; i < 16; ++i)
    for (int k = 0; k < 16; ++k) {
      a[i * 24 + k] = __float2half_rn(static_cast<float>((i * 7 + k) % 5) - 2.f);
      bt[i * 16 + k] = __float2half_rn(static_cast<float>((i + 3 * k) % 3) - 1.f);  // B[k][i]
    }
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j)
      for (int k = 0; k < 16; ++k) ref[i][j] += __half2float(a[i * 24 + k]) * __half2float(bt[j * 16 + k]);
  TCK_LAUNCH(wmma_tile, dim3(1), dim3(32), nullptr)(MmaArgs{a, bt, c, 24});
  bool same = true;
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) same = same && c[i * 16 + j] == ref[i][j];
  check(same, "wmma 16x16x16 product (row-major A with ld 24, column-major B)");

  // Conversions round to nearest even, as the device does.
  check(__half2float(__float2half_rn(1.f + 1.f / 2048.f)) == 1.f, "half rounds a tie to even");
  check(__bfloat162float(__float2bfloat16_rn(1.f + 1.f / 256.f)) == 1.f, "bfloat16 rounds a tie to even");
  check(std::isnan(__bfloat162float(__float2bfloat16_rn(NAN))), "bfloat16 keeps a NaN");
  // Every finite half converts to float and back to itself; the midpoint of two neighbours
  // rounds to the even one, a float just beside it to the nearer one.
  int half_bad = 0;
  for (uint32_t h = 0; h < 0x7c00u; ++h) {
    for (uint32_t sign : {0u, 0x8000u}) {
      const __half x{static_cast<uint16_t>(h | sign)};
      const float f = __half2float(x);
      half_bad += __float2half_rn(f).bits != x.bits;
      const double next = h + 1 < 0x7c00u ? __half2float(__half{static_cast<uint16_t>(h + 1)})
                                          : 65536.0;  // the midpoint to 65504's neighbour
      const float mid = static_cast<float>((std::fabs(static_cast<double>(f)) + next) / 2);
      const uint16_t even = static_cast<uint16_t>((h & 1u ? h + 1 : h) | sign);
      const float smid = sign ? -mid : mid;
      half_bad += __float2half_rn(smid).bits != even;
      half_bad += __float2half_rn(std::nextafter(smid, 0.f)).bits != (h | sign);
      half_bad += __float2half_rn(std::nextafter(smid, sign ? -INFINITY : INFINITY)).bits !=
                  ((h + 1) | sign);
    }
  }
  check(half_bad == 0, "half conversions round to nearest even (" + std::to_string(half_bad) +
                           " wrong)");
  check(__float2half_rn(1e-8f).bits == 0 && __float2half_rn(65520.f).bits == 0x7c00u &&
            std::isinf(__half2float(__float2half_rn(INFINITY))) &&
            std::isnan(__half2float(__float2half_rn(NAN))) &&
            __half2float(__half{1}) == std::ldexp(1.f, -24),
        "half: underflow to zero, overflow to infinity, NaN, the least subnormal");

  // Faults are caught.
  check(dies([&] { TCK_LAUNCH(divergent_barrier, dim3(1), dim3(64), nullptr)(b); }),
        "threads waiting at different barriers are a deadlock");
  check(dies([&] { TCK_LAUNCH(shuffle_after_exit, dim3(1), dim3(32), nullptr)(b); }),
        "a shuffle waiting for exited lanes is caught");
  check(dies([&] { TCK_LAUNCH(wmma_tile, dim3(1), dim3(32), nullptr)(MmaArgs{a + 8, bt, c, 24}); }),
        "a wmma load from a pointer that is not 256-bit aligned is caught");
  check(dies([&] { TCK_LAUNCH(wmma_tile, dim3(1), dim3(32), nullptr)(MmaArgs{a, bt, c, 20}); }),
        "a wmma leading dimension that is not a multiple of 16 bytes is caught");
  TCK_LAUNCH(read_unwritten, dim3(1), dim3(64), nullptr)(b);
  check(out[0] == 1.f && std::isnan(out[1]) && std::isnan(out[63]),
        "shared memory no thread wrote reads as NaN");
  TCK_LAUNCH(read_unwritten_t<64>, dim3(1), dim3(64), nullptr)(b);
  check(out[0] == 1.f && std::isnan(out[1]) && std::isnan(out[63]),
        "shared memory of a kernel template no thread wrote reads as NaN");
  // The race shows in one of the two thread orders (odd blocks run in reverse).
  TCK_LAUNCH(block_sum_racy, dim3(2), dim3(256), nullptr)(b);
  check(std::isnan(out[0]) || std::isnan(out[1]), "a read before the barrier that orders it is NaN");
  TCK_LAUNCH(block_sum, dim3(1), dim3(2048), nullptr)(b);
  check(cudaGetLastError() == cudaErrorInvalidConfiguration, "a block of 2048 threads is refused");

  // Thread-block clusters: blocks of a cluster meet at its barrier and read each other's
  // shared memory; each cluster starts from poisoned shared memory.
  for (unsigned cs : {1u, 2u, 4u}) {
    for (int i = 0; i < 8; ++i) out[i] = -1.f;
    const cudaError_t e = TCK_LAUNCH_CLUSTER(cluster_sum, dim3(2, 1, cs), dim3(64), dim3(1, 1, cs),
                                             nullptr)(b);
    check(e == cudaSuccess && cudaGetLastError() == cudaSuccess, "a cluster launch succeeds");
    const float sum = out[0] + out[1] + out[2] + out[3];
    check(sum == want && out[4] == -1.f, "split-K over a cluster of " + std::to_string(cs) +
                                   " blocks adds up the input (" + std::to_string(sum) + ")");
  }
  TCK_LAUNCH_CLUSTER(cluster_sum_racy, dim3(1, 1, 2), dim3(32), dim3(1, 1, 2), nullptr)(b);
  check(std::isnan(out[0]) || std::isnan(out[1]),
        "another block's shared memory read before the cluster's barrier is NaN");
  check(dies([&] {
          TCK_LAUNCH_CLUSTER(cluster_read_exited, dim3(2, 1, 2), dim3(32), dim3(1, 1, 2), nullptr)(b);
        }),
        "reading the shared memory of a block that exited is caught");
  check(dies([&] {
          TCK_LAUNCH_CLUSTER(cluster_divergent, dim3(1, 1, 2), dim3(64), dim3(1, 1, 2), nullptr)(b);
        }),
        "threads waiting at the cluster's and the block's barrier are a deadlock");
  check(TCK_LAUNCH_CLUSTER(cluster_sum, dim3(1, 1, 3), dim3(32), dim3(1, 1, 2), nullptr)(b) ==
                cudaErrorInvalidConfiguration &&
            cudaGetLastError() == cudaErrorInvalidConfiguration,
        "a grid that is not a whole number of clusters is refused");

  printf("%d passed, %d failed\n", g_pass, g_fail);
  return g_fail == 0 ? 0 : 1;
}

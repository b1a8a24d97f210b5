//===- cuda_runtime.h - the CUDA surface of kernels/cuda, run on the CPU -*- C++ -*-===//
//
// A test double for <cuda_runtime.h> (with cuda_fp16.h, cuda_bf16.h and mma.h beside it):
// the kernels' own device code, compiled by clang++, runs on the CPU. Each thread of a block is
// a fiber (ucontext) with a stack of its own; fibers switch only at the points where CUDA
// threads meet (__syncthreads, __syncwarp, __shfl_xor_sync, __ballot_sync), so a block runs
// exactly as CUDA's semantics allow and deterministically. Blocks run one after another;
// the blocks of a thread-block cluster (TCK_LAUNCH_CLUSTER) run side by side, one at a time
// until it waits at the cluster's barrier, each with its own copy of the shared section
// (swapped in while it runs), which the others reach through cluster_map (DSMEM).
//
// What it checks beyond the outputs (each a failure of the launch, reported on stderr and
// as cudaErrorLaunchFailure by cudaGetLastError):
//   - a barrier some threads of the block (or lanes of the warp) never reach: deadlock;
//   - a warp collective (shuffle, ballot, __syncwarp with the full mask) after a lane of the
//     warp exited;
//   - shared memory read before it is written: every __shared__ array lives in one section
//     that is filled with 0xff bytes (a NaN for floats) before each block;
//   - a race the barriers do not order: odd blocks run their threads in reverse order, so a
//     thread that reads what a later thread writes before the barrier sees the poison in one
//     of the two orders;
//   - a cluster barrier some threads of the cluster never reach (deadlock), and the shared
//     memory of a block of the cluster read after that block exited;
//   - wmma loads and stores: pointer 32-byte aligned, leading dimension a multiple of 16
//     bytes (CUDA's requirements), every lane of the warp passing the same arguments.
// Vector loads (float4, uint4) are 16-byte aligned types: compiled with
// -fsanitize=alignment, a misaligned one stops the process.
//
// Used by tests/cuda/tck_harness.py (build_emulated) and test_kernels_gpu.py --emulate.
//
//===----------------------------------------------------------------------===//
#ifndef TCK_EMU_CUDA_RUNTIME_H
#define TCK_EMU_CUDA_RUNTIME_H

// Every __shared__ array must land in the section "tck_emu_shared" (poisoned before each
// block, one copy per block of a cluster). GCC places the static locals of function
// templates, i.e. the kernels' shared arrays, in sections of their own whatever their section
// attribute says (GCC bug 70435), which would leave them unpoisoned and shared by the blocks
// of a cluster: build the emulation with clang++.
#if defined(__GNUC__) && !defined(__clang__)
#error "tests/cuda/emu needs clang++ (g++ ignores the section of a template's static locals)"
#endif

// Fibers switch with _setjmp/_longjmp between stacks, which the fortified longjmp refuses.
#undef _FORTIFY_SOURCE

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <algorithm>
#include <type_traits>
#include <utility>
#include <vector>

#define __host__
#define __device__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
// Static storage in one section, so that it can be poisoned before each block.
#define __shared__ static __attribute__((section("tck_emu_shared")))

struct uint3 {
  unsigned x, y, z;
};
struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
struct alignas(16) float4 {
  float x, y, z, w;
};
struct alignas(16) uint4 {
  unsigned x, y, z, w;
};
struct alignas(8) float2 {
  float x, y;
};
inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return uint4{x, y, z, w}; }

typedef struct tck_emu_stream* cudaStream_t;
enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorLaunchFailure = 719,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorMisalignedAddress = 716,  // driver_types.h (CUDA 10 and later)
};
typedef cudaError_t cudaError;

extern "C" char __start_tck_emu_shared[] __attribute__((weak));
extern "C" char __stop_tck_emu_shared[] __attribute__((weak));

namespace tck_emu {

// The running thread's coordinates (fibers share one OS thread; set before each switch).
inline uint3 threadIdx_{0, 0, 0};
inline uint3 blockIdx_{0, 0, 0};
inline dim3 blockDim_;
inline dim3 gridDim_;
inline cudaError_t lastError = cudaSuccess;

[[noreturn]] inline void fatal(const char* what) {
  fprintf(stderr, "tck_emu: %s (block %u,%u,%u thread %u)\n", what, blockIdx_.x, blockIdx_.y,
          blockIdx_.z, threadIdx_.x);
  fflush(stderr);
  abort();
}

enum class Wait { Run, Block, Warp, Cluster, Done };

struct Fiber {
  ucontext_t ctx;  // how it starts (makecontext); then it switches through `jb`
  jmp_buf jb;
  bool started = false;
  char* stack = nullptr;
  unsigned tid = 0;
  Wait wait = Wait::Run;
  unsigned warpMask = 0;  // for Wait::Warp: the lanes that must meet
};

struct Block {
  static constexpr size_t kStack = 256 * 1024;
  jmp_buf sched;
  std::vector<Fiber> fibers;
  void (*body)(void*) = nullptr;
  void* arg = nullptr;
  unsigned current = 0;
  uint32_t slots[32][32];  // per warp, per lane: the value a collective exchanges

  ~Block() {
    for (Fiber& f : fibers) munmap(f.stack, kStack);
  }
};
inline Block* block_ = nullptr;

inline void yieldTo(Wait w, unsigned mask = 0) {
  Fiber& f = block_->fibers[block_->current];
  f.wait = w;
  f.warpMask = mask;
  if (_setjmp(f.jb) == 0) _longjmp(block_->sched, 1);
}

/// Runs fiber t until it waits or finishes (no system call: swapcontext would save and
/// restore the signal mask at every switch).
inline void resume(Block& b, unsigned t);

extern "C" inline void tck_emu_trampoline() {
  block_->body(block_->arg);
  yieldTo(Wait::Done);
  fatal("a finished thread was resumed");
}

inline void resume(Block& b, unsigned t) {
  Fiber& f = b.fibers[t];
  b.current = t;
  threadIdx_ = uint3{t, 0, 0};
  if (_setjmp(b.sched) == 0) {
    if (!f.started) {
      f.started = true;
      setcontext(&f.ctx);
    }
    _longjmp(f.jb, 1);
  }
}

/// Gives block b `nt` fibers at the start of the kernel.
inline void prepareBlock(Block& b, unsigned nt) {
  if (b.fibers.size() != nt) {
    for (Fiber& f : b.fibers) munmap(f.stack, Block::kStack);
    b.fibers.assign(nt, Fiber{});
    for (Fiber& f : b.fibers) {
      void* s = mmap(nullptr, Block::kStack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
      if (s == MAP_FAILED) fatal("no memory for a thread's stack");
      f.stack = static_cast<char*>(s);
    }
  }
  for (unsigned t = 0; t < nt; ++t) {
    Fiber& f = b.fibers[t];
    f.tid = t;
    f.wait = Wait::Run;
    f.started = false;
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = f.stack;
    f.ctx.uc_stack.ss_size = Block::kStack;
    f.ctx.uc_link = nullptr;
    makecontext(&f.ctx, reinterpret_cast<void (*)()>(tck_emu_trampoline), 0);
  }
}

/// How far runBlock got: every thread finished; every thread not finished waits at the
/// cluster's barrier; or the threads wait at different barriers (deadlock).
enum class Stop { Done, Cluster, Stuck };

/// Runs the `nt` threads of block b (prepared) until they finish or all wait at the
/// cluster's barrier.
inline Stop runBlock(Block& b, unsigned nt, bool reverse) {
  block_ = &b;
  const unsigned nw = (nt + 31) / 32;
  while (true) {
    // One warp at a time, as far as it can go (its lanes in lockstep from one meeting to the
    // next), before the next warp starts: a warp that reads what another warp writes without
    // a barrier between them reads it before it is written (or after it is overwritten).
    for (unsigned wi = 0; wi < nw; ++wi) {
      const unsigned w = reverse ? nw - 1 - wi : wi;
      const unsigned lanes = nt - w * 32 < 32 ? nt - w * 32 : 32;
      while (true) {
        bool ran = false;
        for (unsigned li = 0; li < lanes; ++li) {
          const unsigned t = w * 32 + (reverse ? lanes - 1 - li : li);
          Fiber& f = b.fibers[t];
          if (f.wait != Wait::Run) continue;
          resume(b, t);
          ran = true;
        }
        if (ran) continue;
        // A warp collective: every lane of the mask waiting (an exited lane is an error).
        unsigned waiting = 0, done = 0, mask = 0;
        for (unsigned l = 0; l < lanes; ++l) {
          const Fiber& f = b.fibers[w * 32 + l];
          if (f.wait == Wait::Warp) {
            waiting |= 1u << l;
            mask = f.warpMask;
          } else if (f.wait == Wait::Done) {
            done |= 1u << l;
          }
        }
        if (waiting == 0) break;
        if (mask & done) {
          threadIdx_ = uint3{w * 32 + static_cast<unsigned>(__builtin_ctz(waiting)), 0, 0};
          fatal("a warp collective waits for a lane that has exited");
        }
        if ((waiting & mask) != mask) break;
        for (unsigned l = 0; l < lanes; ++l)
          if (mask >> l & 1u) b.fibers[w * 32 + l].wait = Wait::Run;
      }
    }
    // Every warp is stopped: finished, or at __syncthreads (with every thread that has not
    // exited), or stuck.
    bool allDone = true, blockReady = true, clusterReady = true;
    for (Fiber& f : b.fibers) {
      allDone = allDone && f.wait == Wait::Done;
      blockReady = blockReady && (f.wait == Wait::Block || f.wait == Wait::Done);
      clusterReady = clusterReady && (f.wait == Wait::Cluster || f.wait == Wait::Done);
    }
    if (allDone) return Stop::Done;
    if (clusterReady) return Stop::Cluster;
    if (!blockReady) return Stop::Stuck;
    for (Fiber& f : b.fibers)
      if (f.wait == Wait::Block) f.wait = Wait::Run;
  }
}

// The running cluster: its size, the running block's rank, each block's copy of the shared
// section (the running block's copy is the section itself) and whether it has exited.
inline unsigned clusterSize_ = 1;
inline unsigned clusterRank_ = 0;
inline std::vector<std::vector<char>> clusterShared_;
inline std::vector<bool> clusterExited_;

inline char* sharedBegin() { return __start_tck_emu_shared; }
inline size_t sharedBytes() {
  return __start_tck_emu_shared != nullptr
             ? static_cast<size_t>(__stop_tck_emu_shared - __start_tck_emu_shared)
             : 0;
}

template <typename Arg>
struct Thunk {
  void (*kernel)(Arg);
  const Arg* arg;
  static void run(void* p) {
    Thunk* t = static_cast<Thunk*>(p);
    t->kernel(*t->arg);
  }
};

/// kernel<<<grid, block, smem, stream>>>(arg), run to completion on the calling thread;
/// `cluster`: the thread-block cluster's shape (cudaLaunchAttributeClusterDimension).
template <typename Arg>
struct Launch {
  void (*kernel)(Arg);
  dim3 grid, block, cluster;

  cudaError_t operator()(const Arg& arg) const {
    const unsigned cs = cluster.x * cluster.y * cluster.z;
    if (block.x == 0 || block.x > 1024 || block.y != 1 || block.z != 1 || grid.x == 0 ||
        grid.y == 0 || grid.z == 0 || grid.y > 65535 || grid.z > 65535 || cs == 0 || cs > 8 ||
        grid.x % cluster.x != 0 || grid.y % cluster.y != 0 || grid.z % cluster.z != 0) {
      lastError = cudaErrorInvalidConfiguration;
      return lastError;
    }
    Thunk<Arg> thunk{kernel, &arg};
    std::vector<Block> blocks(cs);
    for (Block& b : blocks) {
      b.body = &Thunk<Arg>::run;
      b.arg = &thunk;
    }
    gridDim_ = grid;
    blockDim_ = block;
    clusterSize_ = cs;
    const size_t bytes = sharedBytes();
    clusterShared_.assign(cs, std::vector<char>(bytes, static_cast<char>(0xff)));
    clusterExited_.assign(cs, false);
    std::vector<Stop> stops(cs);
    for (unsigned z = 0; z < grid.z; z += cluster.z)
      for (unsigned y = 0; y < grid.y; y += cluster.y)
        for (unsigned x = 0; x < grid.x; x += cluster.x) {
          // Rank r of the cluster is block (x + r % cx, y + r / cx % cy, z + r / (cx cy)),
          // as cluster.block_rank() numbers them. Odd clusters run their blocks in reverse.
          auto coords = [&](unsigned r) {
            return uint3{x + r % cluster.x, y + r / cluster.x % cluster.y,
                         z + r / (cluster.x * cluster.y)};
          };
          const bool reverseRanks = (x / cluster.x + y / cluster.y + z / cluster.z) % 2 == 1;
          for (unsigned r = 0; r < cs; ++r) {
            std::fill(clusterShared_[r].begin(), clusterShared_[r].end(), static_cast<char>(0xff));
            clusterExited_[r] = false;
            prepareBlock(blocks[r], block.x);
            stops[r] = Stop::Cluster;
          }
          while (true) {
            for (unsigned ri = 0; ri < cs; ++ri) {
              const unsigned r = reverseRanks ? cs - 1 - ri : ri;
              if (stops[r] != Stop::Cluster) continue;
              // Resume the block: release its threads from the cluster's barrier.
              for (Fiber& f : blocks[r].fibers)
                if (f.wait == Wait::Cluster) f.wait = Wait::Run;
              const uint3 c = coords(r);
              blockIdx_ = c;
              clusterRank_ = r;
              if (bytes != 0) memcpy(sharedBegin(), clusterShared_[r].data(), bytes);
              stops[r] = runBlock(blocks[r], block.x, (c.x + c.y + c.z) % 2 == 1);
              if (bytes != 0) memcpy(clusterShared_[r].data(), sharedBegin(), bytes);
              if (stops[r] == Stop::Stuck) fatal("deadlock: threads wait at different barriers");
              if (stops[r] == Stop::Done) clusterExited_[r] = true;
            }
            bool done = true;
            for (unsigned r = 0; r < cs; ++r) done = done && stops[r] == Stop::Done;
            if (done) break;
            // Every block has finished or waits at the cluster's barrier: release them all.
          }
        }
    block_ = nullptr;
    clusterSize_ = 1;
    clusterRank_ = 0;
    return cudaSuccess;
  }
};

template <typename Arg>
Launch<Arg> launch(void (*kernel)(Arg), dim3 grid, dim3 block, dim3 cluster = dim3(1, 1, 1)) {
  return Launch<Arg>{kernel, grid, block, cluster};
}

/// cluster.sync(): every thread of every block of the cluster (finished threads count as
/// arrived, as for __syncthreads).
inline void clusterSync() { yieldTo(Wait::Cluster); }

/// cluster.map_shared_rank(p, rank): p, a __shared__ address of the running block, in the
/// shared memory of block `rank` of the cluster.
template <typename T>
T* mapSharedRank(T* p, unsigned rank) {
  if (rank >= clusterSize_) fatal("cluster_map: rank outside the cluster");
  if (rank == clusterRank_) return p;
  if (clusterExited_[rank]) fatal("cluster_map: the shared memory of a block that has exited");
  const char* c = reinterpret_cast<const char*>(p);
  if (c < sharedBegin() || c >= sharedBegin() + sharedBytes())
    fatal("cluster_map: not a __shared__ address");
  return reinterpret_cast<T*>(clusterShared_[rank].data() + (c - sharedBegin()));
}

inline unsigned lane() { return threadIdx_.x & 31u; }
inline unsigned warp() { return threadIdx_.x >> 5; }

/// Lane l publishes v; returns the 32 published values of the warp after all lanes of
/// `mask` have published (the slots are read before the next collective overwrites them:
/// a second meeting follows the read).
inline void exchange(unsigned mask, uint32_t v, uint32_t out[32]) {
  if (!(mask >> lane() & 1u)) fatal("a warp collective's mask leaves out the calling lane");
  block_->slots[warp()][lane()] = v;
  yieldTo(Wait::Warp, mask);
  memcpy(out, block_->slots[warp()], sizeof(uint32_t) * 32);
  yieldTo(Wait::Warp, mask);
}

}  // namespace tck_emu

#define threadIdx (::tck_emu::threadIdx_)
#define blockIdx (::tck_emu::blockIdx_)
#define blockDim (::tck_emu::blockDim_)
#define gridDim (::tck_emu::gridDim_)

// What kernels/cuda launches with (tck_device.cuh: TCK_LAUNCH).
#define TCK_LAUNCH(kernel, grid, block, stream) ::tck_emu::launch(kernel, grid, block)
#define TCK_LAUNCH_CLUSTER(kernel, grid, block, cluster, stream) \
  ::tck_emu::launch(kernel, grid, block, cluster)

inline void __syncthreads() { ::tck_emu::yieldTo(::tck_emu::Wait::Block); }
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  uint32_t ignored[32];
  ::tck_emu::exchange(mask, 0, ignored);
}
inline float __shfl_xor_sync(unsigned mask, float v, int laneMask, int width = 32) {
  uint32_t all[32], bits;
  memcpy(&bits, &v, sizeof bits);
  ::tck_emu::exchange(mask, bits, all);
  const unsigned l = ::tck_emu::lane();
  const unsigned src = (l ^ static_cast<unsigned>(laneMask)) & 31u;
  // Outside the lane's segment of `width` lanes the value is the lane's own (CUDA).
  const unsigned from = (src / width == l / width) ? src : l;
  float r;
  memcpy(&r, &all[from], sizeof r);
  return r;
}
inline unsigned __ballot_sync(unsigned mask, int pred) {
  uint32_t all[32];
  ::tck_emu::exchange(mask, pred != 0, all);
  unsigned r = 0;
  for (unsigned l = 0; l < 32; ++l)
    if ((mask >> l & 1u) && all[l]) r |= 1u << l;
  return r;
}
inline int __popc(unsigned v) { return __builtin_popcount(v); }
inline float __uint_as_float(unsigned u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
inline unsigned __float_as_uint(float f) {
  unsigned u;
  memcpy(&u, &f, sizeof u);
  return u;
}
template <typename T>
inline T __ldg(const T* p) {
  return *p;
}

// The emulated device: compute capability 9.0 (the kernels are built with __CUDA_ARCH__ 900),
// or $TCK_EMU_CC_MAJOR.0, which makes the launchers pick the paths of an older GPU (the
// device code stays sm_90's).
enum cudaDeviceAttr {
  cudaDevAttrComputeCapabilityMajor = 75,
  cudaDevAttrComputeCapabilityMinor = 76,
  cudaDevAttrClusterLaunch = 120,
};
inline cudaError_t cudaGetDevice(int* device) {
  *device = 0;
  return cudaSuccess;
}
inline cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int /*device*/) {
  const char* major = getenv("TCK_EMU_CC_MAJOR");
  const int cc = major != nullptr ? atoi(major) : 9;
  *value = attr == cudaDevAttrComputeCapabilityMajor ? cc
           : attr == cudaDevAttrClusterLaunch        ? cc >= 9
                                                     : 0;
  return cudaSuccess;
}

// Cluster launches (tck_device.cuh: cluster_launch_ok): the emulated kernels are sm_90 code
// (ptxVersion 90), and a cluster fits unless $TCK_EMU_NO_CLUSTERS is set (a MIG or MPS
// partition where none does), which makes the launchers take their paths without clusters.
struct cudaFuncAttributes {
  int ptxVersion;
  int binaryVersion;
};
template <typename Kernel>
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, Kernel) {
  attr->ptxVersion = 90;
  attr->binaryVersion = 90;
  return cudaSuccess;
}
namespace tck_emu {
/// cudaOccupancyMaxActiveClusters (tck_device.cuh: max_active_clusters; the emulator has
/// no cudaLaunchConfig_t, whose gridDim and blockDim members its macros would replace).
inline int maxActiveClusters() {
  const char* none = getenv("TCK_EMU_NO_CLUSTERS");
  return none != nullptr && *none != '\0' ? 0 : 1;
}
}  // namespace tck_emu
inline cudaError_t cudaGetLastError() {
  cudaError_t e = ::tck_emu::lastError;
  ::tck_emu::lastError = cudaSuccess;
  return e;
}

#endif  // TCK_EMU_CUDA_RUNTIME_H

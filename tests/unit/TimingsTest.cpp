// Timings (base/Timings.h): a phase's CPU time covers the phases other threads
// ran under it (absorbed, as the -j workers' are), once.
#include "tritonc/base/Timings.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <ctime>
#include <string>
#include <thread>

namespace tritonc {
namespace {

int64_t threadCpuNs() {
  struct timespec ts {};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// Spends `ns` of the calling thread's CPU time.
void burn(int64_t ns) {
  int64_t until = threadCpuNs() + ns;
  volatile uint64_t sink = 0;
  while (threadCpuNs() < until) {
    for (int i = 0; i < 1000; ++i) sink = sink + static_cast<uint64_t>(i);
  }
}

const Timings::Event& find(const Timings& timings, const std::string& label) {
  for (const Timings::Event& event : timings.events()) {
    if (event.label == label) return event;
  }
  ADD_FAILURE() << "no phase " << label;
  return timings.events().front();
}

TEST(TimingsTest, ParentCpuTimeCoversOtherThreadsPhasesOnce) {
  constexpr int64_t kMs = 1000000;
  Timings timings;
  size_t parent = timings.begin("compile files", "");
  // A worker's phases, on another thread; and the calling thread's own share,
  // timed in a Timings of its own too (as `-j` does with track 1).
  Timings worker, own;
  std::thread thread([&] {
    ScopedTimer timer(&worker, "type checker");
    burn(30 * kMs);
  });
  {
    ScopedTimer timer(&own, "type checker");
    burn(20 * kMs);
  }
  thread.join();
  timings.absorb(worker, timings.depth(), 2);
  timings.absorb(own, timings.depth(), 1);
  timings.end(parent);

  int64_t workerCpu = worker.events().front().cpuNs;
  int64_t ownCpu = own.events().front().cpuNs;
  int64_t parentCpu = find(timings, "compile files").cpuNs;
  EXPECT_GE(workerCpu, 30 * kMs);
  EXPECT_GE(ownCpu, 20 * kMs);
  // The worker's CPU time is added; the calling thread's share is in its
  // clock already and is not added twice.
  EXPECT_GE(parentCpu, workerCpu + ownCpu);
  EXPECT_LT(parentCpu, workerCpu + ownCpu + 10 * kMs);
  // The report's total is the parent's (the only top-level phase).
  char total[64];
  std::snprintf(total, sizeof total, "\"cpu_ms\":%.6f,", static_cast<double>(parentCpu) / 1e6);
  std::string json = timings.formatJson();
  EXPECT_NE(json.find(total), std::string::npos) << json;
}

TEST(TimingsTest, OtherThreadsCpuTimeReachesTheTopThroughTheCallingThreadsPhases) {
  // A file compiled on the calling thread whose groups ran on a worker: the
  // file's phase carries the worker's CPU time up to "compile files".
  constexpr int64_t kMs = 1000000;
  Timings timings;
  size_t parent = timings.begin("compile files", "");
  Timings file;
  {
    ScopedTimer timer(&file, "compile declarations");
    Timings group;
    std::thread thread([&] {
      ScopedTimer inner(&group, "type checker");
      burn(25 * kMs);
    });
    thread.join();
    file.absorb(group, file.depth(), 2);
  }
  timings.absorb(file, timings.depth(), 1);
  timings.end(parent);
  const Timings::Event& declarations = find(file, "compile declarations");
  EXPECT_GE(declarations.otherThreadsCpuNs, 25 * kMs);
  EXPECT_GE(declarations.cpuNs, declarations.otherThreadsCpuNs);
  EXPECT_GE(find(timings, "compile files").cpuNs, declarations.cpuNs);
}

}  // namespace
}  // namespace tritonc

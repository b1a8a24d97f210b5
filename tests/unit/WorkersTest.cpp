// Workers (base/Workers.h): every task runs exactly once, on the thread its
// index names, across repeated runs of any size.
#include "tritonc/base/Workers.h"

#include <gtest/gtest.h>

#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <thread>
#include <vector>

namespace tritonc {
namespace {

TEST(WorkersTest, EveryTaskRunsOnceOnItsThread) {
  for (unsigned count : {0u, 1u, 3u}) {
    Workers workers(count);
    EXPECT_EQ(workers.count(), count);
    for (size_t n : {0u, 1u, 2u, 4u, 9u, 4u}) {
      std::vector<std::atomic<int>> runs(n);
      std::vector<std::thread::id> ran(n);
      workers.run(n, [&](size_t i) {
        ++runs[i];
        ran[i] = std::this_thread::get_id();
      });
      std::set<std::thread::id> threads;
      for (size_t i = 0; i < n; ++i) {
        EXPECT_EQ(runs[i].load(), 1) << "task " << i << " of " << n;
        // Task i and task i + count + 1 share a thread; task 0 is the caller's.
        if (i + count + 1 < n) {
          EXPECT_EQ(ran[i], ran[i + count + 1]);
        }
        threads.insert(ran[i]);
      }
      if (n > 0) {
        EXPECT_EQ(ran[0], std::this_thread::get_id());
      }
      EXPECT_EQ(threads.size(), std::min<size_t>(n, count + 1));
    }
  }
}

TEST(WorkersTest, TasksRunAtTheSameTime) {
  // Each task waits until all have started: only threads running together finish.
  Workers workers(3);
  std::atomic<int> started{0};
  workers.run(4, [&](size_t) {
    ++started;
    while (started.load() < 4) std::this_thread::yield();
  });
  EXPECT_EQ(started.load(), 4);
}

#if !defined(__SANITIZE_ADDRESS__)
TEST(WorkersTest, GoesOnWithTheThreadsTheSystemGives) {
  // A memory limit that leaves room for a few thread stacks only: the
  // constructor keeps the threads it got (it used to let the exception out
  // with threads waiting on its condition variables: a hang), and run()
  // still runs every task. In a child, which the alarm ends if it hangs.
  EXPECT_EXIT(
      {
        alarm(30);
        long pages = 0;
        if (FILE* f = std::fopen("/proc/self/statm", "r")) {
          if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
          std::fclose(f);
        }
        rlimit limit{};
        limit.rlim_cur = limit.rlim_max =
            static_cast<rlim_t>(pages) * static_cast<rlim_t>(sysconf(_SC_PAGESIZE)) + (48 << 20);
        if (pages == 0 || setrlimit(RLIMIT_AS, &limit) != 0) std::_Exit(0);  // cannot test here
        Workers workers(256);
        if (workers.count() >= 256) std::_Exit(2);  // the limit did not bite
        std::atomic<size_t> sum{0};
        workers.run(1000, [&](size_t i) { sum += i; });
        std::_Exit(sum.load() == 499500 ? 0 : 3);
      },
      ::testing::ExitedWithCode(0), "");
}
#endif

}  // namespace
}  // namespace tritonc

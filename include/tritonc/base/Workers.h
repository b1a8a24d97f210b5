//===- Workers.h - threads started early, given work later -----*- C++ -*-===//
//
// Starting a thread and getting it onto another core costs about half a
// millisecond on these machines: as much as checking a few hundred lines.
// A compile that may split a file into parallel groups starts its workers
// before it lexes the file, so they are running by the time there is work.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tritonc {

class Workers {
 public:
  /// Starts `count` idle threads, or as many as the system gives (count()
  /// says how many: a failed start is not an error, the caller does more).
  explicit Workers(unsigned count);
  /// Joins them (work given to them has finished: run() waits for it).
  ~Workers();
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;

  unsigned count() const { return count_; }
  /// Runs task(0) .. task(n - 1), each once, on the workers and the calling
  /// thread, and returns when all have finished. Thread k (0 the caller,
  /// 1..count() the workers) runs tasks k, k + count() + 1, ...; with
  /// n <= count() + 1 task i runs on thread i, so the caller may keep
  /// per-thread state by index.
  void run(size_t n, const std::function<void(size_t)>& task);

 private:
  void loop(size_t index);

  unsigned count_;
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  const std::function<void(size_t)>* task_ = nullptr;
  size_t tasks_ = 0;
  size_t generation_ = 0;
  size_t running_ = 0;
  bool stopping_ = false;
};

}  // namespace tritonc

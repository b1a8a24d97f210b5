//===- Workers.cpp - threads started early, given work later --------------===//
#include "tritonc/base/Workers.h"

#include <system_error>

namespace tritonc {

Workers::Workers(unsigned count) : count_(count) {
  threads_.reserve(count);
  for (unsigned i = 0; i < count; ++i) {
    try {
      threads_.emplace_back(&Workers::loop, this, i + 1);
    } catch (const std::system_error&) {
      // No thread to be had (a memory limit against the 64 MiB stacks, a
      // process limit): go on with the ones started, the caller taking the
      // rest. Letting the exception out destroyed the condition variables
      // their threads wait on (a hang) and then joinable threads (abort).
      break;
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  count_ = static_cast<unsigned>(threads_.size());
}

Workers::~Workers() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

void Workers::run(size_t n, const std::function<void(size_t)>& task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    task_ = &task;
    tasks_ = n;
    running_ = count_;
    ++generation_;
  }
  wake_.notify_all();
  // The caller takes task 0 and whatever the workers do not have.
  for (size_t i = 0; i < n; i += count_ + 1) task(i);
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return running_ == 0; });
  task_ = nullptr;
}

void Workers::loop(size_t index) {
  size_t seen = 0;
  for (;;) {
    const std::function<void(size_t)>* task;
    size_t tasks;
    size_t stride;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      task = task_;
      tasks = tasks_;
      stride = count_ + 1;
    }
    for (size_t i = index; i < tasks; i += stride) (*task)(i);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (--running_ == 0) done_.notify_one();
    }
  }
}

}  // namespace tritonc

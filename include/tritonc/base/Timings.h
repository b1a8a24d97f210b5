//===- Timings.h - phase timer for --timing and --time-trace ----*- C++ -*-===//
//
// `ScopedTimer t(timings, "parse")` records how long a phase took and the
// process's peak memory when it ended. A null `Timings*` makes the timer free,
// so phases are always wrapped and only pay when the user asked for timing.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace tritonc {

/// The recorded phases of one run, in the order they started.
class Timings {
 public:
  struct Event {
    std::string label;
    std::string detail;   ///< e.g. the file the phase worked on
    int64_t startNs = 0;  ///< relative to construction of the Timings
    int64_t durationNs = 0;
    int depth = 0;
    int64_t peakRssKb = 0;
  };

  Timings();
  /// Starts a phase; returns its index for `end`.
  size_t begin(std::string label, std::string detail);
  void end(size_t index);
  const std::vector<Event>& events() const { return events_; }
  /// A line printed under the table (e.g. the cache's hits and misses).
  void addNote(std::string note) { notes_.push_back(std::move(note)); }

  /// A table of phases: time, share of the total, peak memory.
  std::string formatTable() const;
  /// A Chrome trace (chrome://tracing, Perfetto): {"traceEvents":[{ph:"X",...}]}.
  std::string formatChromeTrace() const;

 private:
  int64_t nowNs() const;
  std::chrono::steady_clock::time_point origin_;
  std::vector<Event> events_;
  std::vector<std::string> notes_;
  int depth_ = 0;
};

/// Times the enclosing scope as one phase; does nothing when `timings` is null.
class ScopedTimer {
 public:
  ScopedTimer(Timings* timings, const char* label, std::string detail = {})
      : timings_(timings) {
    if (timings_ != nullptr) {
      index_ = timings_->begin(label, std::move(detail));
    }
  }
  /// A label built at run time (a pass name); only built when timing.
  template <typename MakeLabel>
    requires std::is_invocable_r_v<std::string, MakeLabel>
  ScopedTimer(Timings* timings, MakeLabel&& makeLabel) : timings_(timings) {
    if (timings_ != nullptr) {
      index_ = timings_->begin(makeLabel(), {});
    }
  }
  ~ScopedTimer() {
    if (timings_ != nullptr) {
      timings_->end(index_);
    }
  }
  ScopedTimer(const ScopedTimer&) = delete;
  ScopedTimer& operator=(const ScopedTimer&) = delete;

 private:
  Timings* timings_;
  size_t index_ = 0;
};

/// Peak resident set size of this process in KiB.
int64_t peakRssKb();

}  // namespace tritonc

//===- Timings.h - phase timer for --timing and --time-trace ----*- C++ -*-===//
//
// `ScopedTimer t(timings, "parse")` records how long a phase took (wall and
// CPU time) and the process's peak memory when it ended; timers nest (each
// pass inside "optimizer"). A null `Timings*` makes the timer free (no clock
// is read), so phases are always wrapped and only pay when the user asked
// for timing. Three renderings: the --timing report, its JSON form
// (--timing=json) and a Chrome trace (--time-trace).
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
    /// CPU time of the calling thread during the phase, plus that of the
    /// phases other threads ran for it (absorbed while it was open: the
    /// workers of -j), so that a phase's CPU time covers its children's.
    int64_t cpuNs = 0;
    int depth = 0;
    int64_t peakRssKb = 0;
    int track = 1;        ///< the trace's thread: 1 main, 2.. the workers of -j
    uint64_t thread = 0;  ///< the thread that ran it (a number of this process's own)
    int64_t otherThreadsCpuNs = 0;  ///< the part of `cpuNs` other threads spent
  };
  /// A section under the table, given in both renderings (e.g. the cache's
  /// hits and misses): `text` for the report, `json` a JSON value.
  struct Section {
    std::string name;
    std::string text;
    std::string json;
  };

  Timings();
  /// Starts a phase; returns its index for `end`.
  size_t begin(std::string label, std::string detail);
  void end(size_t index);
  const std::vector<Event>& events() const { return events_; }
  void addSection(Section section) { sections_.push_back(std::move(section)); }
  /// Adds the finished phases of `other` (a worker's), nested `depthOffset`
  /// levels deeper, on trace track `track`, on this object's clock. The CPU
  /// time of those another thread ran is added to the phases open at the
  /// depths above them (their parents).
  void absorb(const Timings& other, int depthOffset, int track);
  /// How many phases are open (the depth a worker's phases are absorbed at).
  int depth() const { return depth_; }

  /// The --timing report: totals, a table of phases (runs, wall and CPU
  /// time, share of the total, peak memory), the sections, and the
  /// bottlenecks (leaf phases over 10% of the total, largest first).
  std::string formatTable() const;
  /// The same as one JSON object (--timing=json).
  std::string formatJson() const;
  /// A Chrome trace (chrome://tracing, Perfetto): {"traceEvents":[{ph:"X",...}]}.
  std::string formatChromeTrace() const;
  /// How every trace of formatChromeTrace begins (the process named first):
  /// how a trace tritonc wrote is told from another JSON file.
  static constexpr std::string_view kChromeTraceHead =
      "{\"traceEvents\":[\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,"
      "\"args\":{\"name\":\"tritonc\"}}";

 private:
  struct Row;
  std::vector<Row> rows(int64_t* total, int64_t* cpuTotal) const;
  static std::vector<const Row*> bottlenecks(const std::vector<Row>& table, int64_t total);
  int64_t nowNs() const;
  std::chrono::steady_clock::time_point origin_;
  std::vector<Event> events_;
  std::vector<Section> sections_;
  int depth_ = 0;
  /// The phases begun and not ended, outermost first, with the CPU time
  /// other threads spent on their behalf so far.
  std::vector<std::pair<size_t, int64_t>> open_;
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

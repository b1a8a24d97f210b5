//===- Timings.cpp - phase timer ------------------------------------------===//
#include "tritonc/base/Timings.h"

#include "tritonc/base/Text.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>

namespace tritonc {

int64_t peakRssKb() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

Timings::Timings() : origin_(std::chrono::steady_clock::now()) {}

int64_t Timings::nowNs() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                              origin_)
      .count();
}

size_t Timings::begin(std::string label, std::string detail) {
  events_.push_back(Event{std::move(label), std::move(detail), nowNs(), 0, depth_, 0});
  ++depth_;
  return events_.size() - 1;
}

void Timings::end(size_t index) {
  Event& event = events_[index];
  event.durationNs = nowNs() - event.startNs;
  event.peakRssKb = peakRssKb();
  --depth_;
}

std::string Timings::formatTable() const {
  // One row per phase label, summed over its runs (e.g. the lexer over every
  // input file), in the order phases first ran; the trace keeps each run.
  struct Row {
    std::string label;
    int depth = 0;
    int64_t durationNs = 0;
    int64_t peakRssKb = 0;
    int runs = 0;
  };
  std::vector<Row> rows;
  int64_t total = 0;
  for (const Event& event : events_) {
    if (event.depth == 0) {
      total += event.durationNs;
    }
    auto it = std::find_if(rows.begin(), rows.end(), [&](const Row& row) {
      return row.label == event.label && row.depth == event.depth;
    });
    if (it == rows.end()) {
      rows.push_back(Row{event.label, event.depth, 0, 0, 0});
      it = rows.end() - 1;
    }
    it->durationNs += event.durationNs;
    it->peakRssKb = std::max(it->peakRssKb, event.peakRssKb);
    ++it->runs;
  }
  std::string out = fmt::format("{:<28} {:>5} {:>11} {:>7} {:>11}\n", "phase", "runs",
                                "time (ms)", "%", "peak (MiB)");
  for (const Row& row : rows) {
    std::string label(static_cast<size_t>(row.depth) * 2, ' ');
    label += row.label;
    double pct = total > 0 ? 100.0 * static_cast<double>(row.durationNs) /
                                 static_cast<double>(total)
                           : 0.0;
    out += fmt::format("{:<28} {:>5} {:>11.3f} {:>6.1f}% {:>11.1f}\n", label, row.runs,
                       static_cast<double>(row.durationNs) / 1e6, pct,
                       static_cast<double>(row.peakRssKb) / 1024.0);
  }
  out += fmt::format("{:<28} {:>5} {:>11.3f} {:>6.1f}% {:>11.1f}\n", "total", "",
                     static_cast<double>(total) / 1e6, 100.0,
                     static_cast<double>(peakRssKb()) / 1024.0);
  for (const std::string& note : notes_) {
    out += note + "\n";
  }
  return out;
}

std::string Timings::formatChromeTrace() const {
  std::string out = "{\"traceEvents\":[\n";
  for (size_t i = 0; i < events_.size(); ++i) {
    const Event& event = events_[i];
    out += "{\"name\":";
    appendJsonString(out, event.label);
    out += fmt::format(",\"cat\":\"tritonc\",\"ph\":\"X\",\"ts\":{:.3f},\"dur\":{:.3f},"
                       "\"pid\":1,\"tid\":1,\"args\":{{\"detail\":",
                       static_cast<double>(event.startNs) / 1e3,
                       static_cast<double>(event.durationNs) / 1e3);
    appendJsonString(out, event.detail);
    out += fmt::format(",\"peak_rss_kb\":{}}}}}{}\n", event.peakRssKb,
                       i + 1 < events_.size() ? "," : "");
  }
  out += "],\"displayTimeUnit\":\"ms\"}\n";
  return out;
}

}  // namespace tritonc

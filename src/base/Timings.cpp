//===- Timings.cpp - phase timer ------------------------------------------===//
#include "tritonc/base/Timings.h"

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
  int64_t total = 0;
  for (const Event& event : events_) {
    if (event.depth == 0) {
      total += event.durationNs;
    }
  }
  std::string out = fmt::format("{:<32} {:>10} {:>7} {:>10}\n", "phase", "time (ms)", "%",
                                "peak (MiB)");
  for (const Event& event : events_) {
    std::string label(static_cast<size_t>(event.depth) * 2, ' ');
    label += event.label;
    if (!event.detail.empty()) {
      label += " (" + event.detail + ")";
    }
    double pct = total > 0 ? 100.0 * static_cast<double>(event.durationNs) /
                                 static_cast<double>(total)
                           : 0.0;
    out += fmt::format("{:<32} {:>10.3f} {:>6.1f}% {:>10.1f}\n", label,
                       static_cast<double>(event.durationNs) / 1e6, pct,
                       static_cast<double>(event.peakRssKb) / 1024.0);
  }
  out += fmt::format("{:<32} {:>10.3f} {:>6.1f}% {:>10.1f}\n", "total",
                     static_cast<double>(total) / 1e6, 100.0,
                     static_cast<double>(peakRssKb()) / 1024.0);
  return out;
}

namespace {
std::string jsonEscape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        } else {
          out += c;
        }
    }
  }
  return out;
}
}  // namespace

std::string Timings::formatChromeTrace() const {
  std::string out = "{\"traceEvents\":[\n";
  for (size_t i = 0; i < events_.size(); ++i) {
    const Event& event = events_[i];
    out += fmt::format(
        "{{\"name\":\"{}\",\"cat\":\"tritonc\",\"ph\":\"X\",\"ts\":{:.3f},\"dur\":{:.3f},"
        "\"pid\":1,\"tid\":1,\"args\":{{\"detail\":\"{}\",\"peak_rss_kb\":{}}}}}{}\n",
        jsonEscape(event.label), static_cast<double>(event.startNs) / 1e3,
        static_cast<double>(event.durationNs) / 1e3, jsonEscape(event.detail), event.peakRssKb,
        i + 1 < events_.size() ? "," : "");
  }
  out += "],\"displayTimeUnit\":\"ms\"}\n";
  return out;
}

}  // namespace tritonc

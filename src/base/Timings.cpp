//===- Timings.cpp - phase timer ------------------------------------------===//
#include "tritonc/base/Timings.h"

#include "tritonc/base/Text.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <cstdlib>
#include <cstdio>
#include <ctime>

namespace tritonc {

namespace {

// VmHWM of /proc/self/status: the peak resident set of this process image.
int64_t statusPeakKb() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  char line[256];
  int64_t kb = -1;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::strncmp(line, "VmHWM:", 6) == 0) {
      kb = std::strtoll(line + 6, nullptr, 10);
      break;
    }
  }
  std::fclose(f);
  return kb;
}

}  // namespace

int64_t peakRssKb() {
  // getrusage is cheap, but Linux carries ru_maxrss across execve: a process
  // started by a big parent (a Python test harness) inherits its peak. Then
  // /proc's VmHWM, which starts afresh with the new image, is read instead.
  static const bool inherited = [] {
    struct rusage usage {};
    getrusage(RUSAGE_SELF, &usage);
    int64_t hwm = statusPeakKb();
    return hwm >= 0 && usage.ru_maxrss > hwm + 512;
  }();
  if (inherited) {
    return statusPeakKb();
  }
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

namespace {

int64_t threadCpuNs() {
  struct timespec ts {};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// A number for the calling thread, distinct from every other thread's.
uint64_t threadNumber() {
  static std::atomic<uint64_t> next{1};
  thread_local const uint64_t number = next++;
  return number;
}

double ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }
double mib(int64_t kb) { return static_cast<double>(kb) / 1024.0; }

// Phases over this share of the total are reported as bottlenecks.
constexpr double kBottleneckPercent = 10.0;

}  // namespace

void Timings::absorb(const Timings& other, int depthOffset, int track) {
  int64_t shift =
      std::chrono::duration_cast<std::chrono::nanoseconds>(other.origin_ - origin_).count();
  // The CPU time other threads spent on the absorbed phases, for the phases
  // above them: it is not in the CPU clock of the thread that waited. A phase
  // this thread ran (its own share of the work) is in that clock already,
  // less what other threads ran under it.
  size_t parents = std::min(open_.size(), static_cast<size_t>(std::max(depthOffset, 0)));
  for (const Event& event : other.events_) {
    if (event.depth != 0) continue;
    int64_t foreign = event.thread == threadNumber() ? event.otherThreadsCpuNs : event.cpuNs;
    for (size_t i = 0; i < parents; ++i) open_[i].second += foreign;
  }
  for (Event event : other.events_) {
    event.startNs += shift;
    event.depth += depthOffset;
    event.track = track;
    events_.push_back(std::move(event));
  }
}

size_t Timings::begin(std::string label, std::string detail) {
  Event event{std::move(label), std::move(detail), nowNs(), 0, 0, depth_, 0};
  event.cpuNs = threadCpuNs();  // the start, until end() makes it a duration
  event.thread = threadNumber();
  events_.push_back(std::move(event));
  ++depth_;
  open_.emplace_back(events_.size() - 1, 0);
  return events_.size() - 1;
}

void Timings::end(size_t index) {
  Event& event = events_[index];
  event.durationNs = nowNs() - event.startNs;
  event.cpuNs = threadCpuNs() - event.cpuNs;
  for (size_t i = open_.size(); i-- > 0;) {
    if (open_[i].first == index) {
      event.otherThreadsCpuNs = open_[i].second;
      event.cpuNs += open_[i].second;
      open_.erase(open_.begin() + static_cast<long>(i));
      break;
    }
  }
  event.peakRssKb = peakRssKb();
  --depth_;
}

// One row per phase label at its depth, summed over its runs (e.g. the lexer
// over every input file), in the order phases first ran; the trace keeps each
// run.
struct Timings::Row {
  std::string label;
  int depth = 0;
  int64_t durationNs = 0;
  int64_t cpuNs = 0;
  int64_t peakRssKb = 0;
  int runs = 0;
  bool leaf = true;
};

std::vector<Timings::Row> Timings::rows(int64_t* total, int64_t* cpuTotal) const {
  std::vector<Row> rows;
  *total = 0;
  *cpuTotal = 0;
  std::vector<size_t> open;  // the row of the enclosing event at each depth
  for (const Event& event : events_) {
    if (event.depth == 0) {
      *total += event.durationNs;
      *cpuTotal += event.cpuNs;
    }
    open.resize(static_cast<size_t>(event.depth));
    auto it = std::find_if(rows.begin(), rows.end(), [&](const Row& row) {
      return row.label == event.label && row.depth == event.depth;
    });
    if (it == rows.end()) {
      rows.push_back(Row{event.label, event.depth, 0, 0, 0, 0, true});
      it = rows.end() - 1;
    }
    it->durationNs += event.durationNs;
    it->cpuNs += event.cpuNs;
    it->peakRssKb = std::max(it->peakRssKb, event.peakRssKb);
    ++it->runs;
    if (!open.empty()) rows[open.back()].leaf = false;
    open.push_back(static_cast<size_t>(it - rows.begin()));
  }
  return rows;
}

namespace {

double share(int64_t ns, int64_t total) {
  return total > 0 ? 100.0 * static_cast<double>(ns) / static_cast<double>(total) : 0.0;
}

}  // namespace

// Leaf phases over the threshold, largest first, at most five.
std::vector<const Timings::Row*> Timings::bottlenecks(const std::vector<Row>& table,
                                                      int64_t total) {
  std::vector<const Row*> slow;
  for (const Row& row : table) {
    if (row.leaf && share(row.durationNs, total) >= kBottleneckPercent) slow.push_back(&row);
  }
  std::stable_sort(slow.begin(), slow.end(),
                   [](const Row* a, const Row* b) { return a->durationNs > b->durationNs; });
  if (slow.size() > 5) slow.resize(5);
  return slow;
}

std::string Timings::formatTable() const {
  int64_t total = 0, cpuTotal = 0;
  std::vector<Row> table = rows(&total, &cpuTotal);
  auto percent = [&](int64_t ns) { return share(ns, total); };
  std::string rule(78, '=');
  std::string out = rule + "\n" + "tritonc profiling report\n" + rule + "\n";
  out += fmt::format("total {:.3f} ms wall, {:.3f} ms CPU; peak memory {:.1f} MiB\n\n", ms(total),
                     ms(cpuTotal), mib(peakRssKb()));
  out += fmt::format("{:<32} {:>5} {:>10} {:>10} {:>7} {:>11}\n", "phase", "runs", "wall (ms)",
                     "cpu (ms)", "%", "peak (MiB)");
  for (const Row& row : table) {
    std::string label(static_cast<size_t>(row.depth) * 2, ' ');
    label += row.label;
    out += fmt::format("{:<32} {:>5} {:>10.3f} {:>10.3f} {:>6.1f}% {:>11.1f}\n", label, row.runs,
                       ms(row.durationNs), ms(row.cpuNs), percent(row.durationNs),
                       mib(row.peakRssKb));
  }
  out += fmt::format("{:<32} {:>5} {:>10.3f} {:>10.3f} {:>6.1f}% {:>11.1f}\n", "total", "",
                     ms(total), ms(cpuTotal), 100.0, mib(peakRssKb()));
  for (const Section& section : sections_) {
    out += section.text + "\n";
  }
  std::vector<const Row*> slow = bottlenecks(table, total);
  if (slow.empty()) {
    out += fmt::format("bottlenecks: no phase takes {:.0f}% of the total\n", kBottleneckPercent);
  } else {
    out += fmt::format("bottlenecks (phases over {:.0f}% of the total):\n", kBottleneckPercent);
    for (size_t i = 0; i < slow.size(); ++i) {
      out += fmt::format("  {}. {} {:.3f} ms ({:.1f}%)\n", i + 1, slow[i]->label,
                         ms(slow[i]->durationNs), percent(slow[i]->durationNs));
    }
  }
  return out;
}

std::string Timings::formatJson() const {
  int64_t total = 0, cpuTotal = 0;
  std::vector<Row> table = rows(&total, &cpuTotal);
  auto percent = [&](int64_t ns) { return share(ns, total); };
  std::string out = fmt::format("{{\"total_ms\":{:.6f},\"cpu_ms\":{:.6f},\"peak_rss_mib\":{:.3f},"
                                "\"phases\":[",
                                ms(total), ms(cpuTotal), mib(peakRssKb()));
  for (size_t i = 0; i < table.size(); ++i) {
    const Row& row = table[i];
    out += i ? "," : "";
    out += "{\"name\":";
    appendJsonString(out, row.label);
    out += fmt::format(",\"depth\":{},\"runs\":{},\"wall_ms\":{:.6f},\"cpu_ms\":{:.6f},"
                       "\"percent\":{:.3f},\"peak_rss_mib\":{:.3f}}}",
                       row.depth, row.runs, ms(row.durationNs), ms(row.cpuNs),
                       percent(row.durationNs), mib(row.peakRssKb));
  }
  std::vector<const Row*> slow = bottlenecks(table, total);
  out += "],\"bottlenecks\":[";
  for (size_t i = 0; i < slow.size(); ++i) {
    out += i ? "," : "";
    appendJsonString(out, slow[i]->label);
  }
  out += "]";
  for (const Section& section : sections_) {
    out += ",";
    appendJsonString(out, section.name);
    out += ":" + section.json;
  }
  return out + "}\n";
}

std::string Timings::formatChromeTrace() const {
  // Names for the track: Perfetto and chrome://tracing show them.
  std::string out(kChromeTraceHead);
  out += ",\n";
  out += "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,"
         "\"args\":{\"name\":\"main\"}}";
  int tracks = 1;
  for (const Event& event : events_) tracks = std::max(tracks, event.track);
  for (int track = 2; track <= tracks; ++track) {
    out += fmt::format(",\n{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":{},"
                       "\"args\":{{\"name\":\"worker {}\"}}}}",
                       track, track - 1);
  }
  out += events_.empty() ? "\n" : ",\n";
  for (size_t i = 0; i < events_.size(); ++i) {
    const Event& event = events_[i];
    out += "{\"name\":";
    appendJsonString(out, event.label);
    out += fmt::format(",\"cat\":\"tritonc\",\"ph\":\"X\",\"ts\":{:.3f},\"dur\":{:.3f},"
                       "\"pid\":1,\"tid\":{},\"args\":{{\"detail\":",
                       static_cast<double>(event.startNs) / 1e3,
                       static_cast<double>(event.durationNs) / 1e3, event.track);
    appendJsonString(out, event.detail);
    out += fmt::format(",\"cpu_us\":{:.3f},\"peak_rss_kb\":{}}}}}{}\n",
                       static_cast<double>(event.cpuNs) / 1e3, event.peakRssKb,
                       i + 1 < events_.size() ? "," : "");
  }
  out += "],\"displayTimeUnit\":\"ms\"}\n";
  return out;
}

}  // namespace tritonc

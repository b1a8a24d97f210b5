//===- CacheCommands.cpp - `tritonc cache ...` and `tritonc config ...` ------===//
#include <sys/stat.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "tritonc/base/FileSystem.h"
#include "tritonc/base/Text.h"
#include "tritonc/driver/Driver.h"

namespace tritonc {
namespace {

// "1 entry", "5 entries".
std::string entriesText(uint64_t n) { return fmt::format("{} {}", n, n == 1 ? "entry" : "entries"); }

// Environment failures of these commands: one diagnostic, exit 3.
int fail(const std::string& message) {
  TextDiagnosticConsumer printer(stderr, false);
  DiagnosticEngine diags(printer);
  diags.reportForPath(Diag::CacheCommandFailed, "", message);
  return kExitInternalError;
}

std::string jsonString(std::string_view text) {
  std::string out;
  appendJsonString(out, text);
  return out;
}

std::string percent(uint64_t hits, uint64_t lookups) {
  return lookups == 0 ? "-" : fmt::format("{:.1f}%", 100.0 * static_cast<double>(hits) /
                                                         static_cast<double>(lookups));
}

std::string seconds(uint64_t ns) { return fmt::format("{:.3f} s", static_cast<double>(ns) / 1e9); }

// A time rounded to what is printed of it (ms in the table, us in JSON): the
// total is the sum of the rows as printed, so that the column adds up.
constexpr uint64_t kTableUnitNs = 1000000;
constexpr uint64_t kJsonUnitNs = 1000;
uint64_t rounded(uint64_t ns, uint64_t unit) {
  return (ns / unit + (ns % unit >= unit / 2 ? 1 : 0)) * unit;
}

int stats(const cache::Settings& settings, bool json) {
  // No directory yet is an empty cache; a file in its place is an error,
  // as for clear, prune and validate.
  // A path that cannot be looked at (a loop of links, a parent not
  // searchable) is an error too, not an empty cache.
  struct stat dir {};
  if (::stat(settings.dir.c_str(), &dir) != 0) {
    if (errno != ENOENT) {
      return fail(fmt::format("cannot access {}: {}", settings.dir, std::strerror(errno)));
    }
  } else if (!S_ISDIR(dir.st_mode)) {
    return fail(fmt::format("{} is not a directory", settings.dir));
  }
  // A file where a level's folder belongs stops every store: as prune does.
  if (std::string problem = cache::blockingFileProblem(settings.dir); !problem.empty()) {
    return fail(problem);
  }
  cache::Counters counters = cache::readCounters(settings.dir);
  struct Row {
    std::string name, description;
    bool onDisk;
    cache::LevelUsage usage;
    uint64_t limit;
    cache::LevelCounters c;
  };
  std::vector<Row> rows;
  for (cache::Level level : cache::kLevels) {
    int i = static_cast<int>(level);
    bool onDisk = level != cache::Level::L1;
    rows.push_back(Row{std::string(levelName(level)), std::string(levelDescription(level)), onDisk,
                       onDisk ? cache::scanLevel(settings.dir, level) : cache::LevelUsage{},
                       settings.maxBytes[i], counters.levels[i]});
  }
  // The total counts every lookup once: a hit at the level that served it
  // (L1, L2 or L3), a miss when none did. An L1 miss is not one: the lookup
  // goes on to disk, and L2 or L3 counts its hit or miss (adding L1's misses
  // counted those lookups twice and diluted the rate). A compile that misses
  // L3 and finds its checked IR in L2 makes two lookups, a miss and a hit.
  Row total{"total", "", true, {}, 0, {}};
  uint64_t tableSavedNs = 0, jsonSavedNs = 0;
  for (const Row& r : rows) {
    total.usage.entries += r.usage.entries;
    total.usage.bytes += r.usage.bytes;
    total.c.hits += r.c.hits;
    total.c.misses += r.onDisk ? r.c.misses : 0;
    total.c.stores += r.c.stores;
    total.c.corrupt += r.c.corrupt;
    total.c.evicted += r.c.evicted;
    tableSavedNs += rounded(r.c.savedNs, kTableUnitNs);
    jsonSavedNs += rounded(r.c.savedNs, kJsonUnitNs);
  }
  std::string config = cache::configPath();
  struct stat st {};
  bool configExists = !config.empty() && ::stat(config.c_str(), &st) == 0;
  if (json) {
    auto level = [&](const Row& r) {
      uint64_t lookups = r.c.hits + r.c.misses;
      return fmt::format(
          "{{\"description\":{},\"entries\":{},\"size_bytes\":{},\"limit_bytes\":{},"
          "\"hits\":{},\"misses\":{},\"hit_rate\":{},\"stores\":{},\"corrupt\":{},"
          "\"evicted\":{},\"time_saved_s\":{:.6f}}}",
          jsonString(r.description), r.usage.entries, r.usage.bytes,
          r.limit ? std::to_string(r.limit) : "null", r.c.hits, r.c.misses,
          lookups ? fmt::format("{:.4f}", static_cast<double>(r.c.hits) / static_cast<double>(lookups))
                  : "null",
          r.c.stores, r.c.corrupt, r.c.evicted,
          static_cast<double>(rounded(r.c.savedNs, kJsonUnitNs)) / 1e9);
    };
    total.c.savedNs = jsonSavedNs;
    std::string out = fmt::format(
        "{{\"cache_dir\":{},\"enabled\":{},\"disabled_by\":{},\"config_file\":{},"
        "\"config_file_exists\":{},\"levels\":{{",
        jsonString(settings.dir), settings.enabled ? "true" : "false",
        settings.disabledBy.empty() ? "null" : jsonString(settings.disabledBy), jsonString(config),
        configExists ? "true" : "false");
    for (size_t i = 0; i < rows.size(); ++i) {
      out += fmt::format("{}{}:{}", i ? "," : "", jsonString(rows[i].name), level(rows[i]));
    }
    out += "},\"total\":" + level(total) + "}\n";
    writeStandardOutput(out);
    return kExitSuccess;
  }
  std::string out;
  out += fmt::format("cache directory   {}\n", settings.dir);
  out += fmt::format("config file       {}{}\n", config.empty() ? "(none)" : config,
                     configExists ? "" : " (absent: defaults)");
  out += fmt::format("enabled           {}\n\n",
                     settings.enabled ? "yes" : "no (" + settings.disabledBy + ")");
  out += fmt::format("{:<6} {:<15} {:>8} {:>22} {:>8} {:>8} {:>9} {:>8} {:>11}\n", "level",
                     "holds", "entries", "size / limit", "hits", "misses", "hit rate", "corrupt",
                     "time saved");
  for (const Row& r : rows) {
    std::string size = !r.onDisk ? "-"
                       : r.limit ? cache::formatSize(r.usage.bytes) + " / " + cache::formatSize(r.limit)
                                 : cache::formatSize(r.usage.bytes);
    // "L1", "L2", "L3" as TOOLCHAIN.md names the levels (JSON keys and --level: l1, l2, l3).
    std::string label = r.name;
    for (char& c : label) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    out += fmt::format("{:<6} {:<15} {:>8} {:>22} {:>8} {:>8} {:>9} {:>8} {:>11}\n", label,
                       r.description, r.onDisk ? std::to_string(r.usage.entries) : "-", size,
                       r.c.hits, r.c.misses, percent(r.c.hits, r.c.hits + r.c.misses),
                       r.c.corrupt, seconds(rounded(r.c.savedNs, kTableUnitNs)));
  }
  total.c.savedNs = tableSavedNs;
  out += fmt::format("{:<6} {:<15} {:>8} {:>22} {:>8} {:>8} {:>9} {:>8} {:>11}\n", "total", "",
                     total.usage.entries, cache::formatSize(total.usage.bytes), total.c.hits,
                     total.c.misses, percent(total.c.hits, total.c.hits + total.c.misses),
                     total.c.corrupt, seconds(total.c.savedNs));
  out += fmt::format("\n{} entries evicted so far; L1 lives in each process's memory (shared by "
                     "the files of one compile).\nThe total counts each lookup once: a hit at the "
                     "level that served it, a miss at L2 or L3 (an L1 miss goes on to disk; a "
                     "compile served from L2 made two lookups, an L3 miss and an L2 hit).\n",
                     total.c.evicted);
  writeStandardOutput(out);
  return kExitSuccess;
}

}  // namespace

// After a report has been printed: entries that could not be removed make
// the command fail (exit 3), naming the first and why.
// "removed 2 stale temporary files (1.2 KiB) left by interrupted writes\n",
// or nothing.
std::string staleTemporaries(const cache::MaintenanceReport& report) {
  size_t count = report.staleTemporaries.size();
  if (count == 0) return "";
  return fmt::format("removed {} stale temporary {} ({}) left by interrupted writes\n", count,
                     count == 1 ? "file" : "files", cache::formatSize(report.staleBytes));
}

int failedRemovals(const cache::MaintenanceReport& report) {
  if (report.failed == 0) return kExitSuccess;
  return fail(fmt::format("could not remove {} {} ({})", report.failed,
                          report.failed == 1 ? "entry" : "entries", report.firstFailure));
}

int runCacheCommand(const CacheCommand& command) {
  // A usage error (exit 2), worded as the command line's others, before
  // anything is looked at.
  std::optional<uint64_t> maxBytes;
  if (command.action == "prune" && command.maxSizeGiven) {
    maxBytes = cache::parseSize(command.maxSize);
    if (!maxBytes) {
      std::fprintf(stderr,
                   "tritonc: error: --max-size: '%s' is not a size such as 500M, 2G or 4096\n"
                   "Run 'tritonc cache prune --help' for usage.\n",
                   command.maxSize.c_str());
      return kExitUsageError;
    }
  }
  cache::Settings settings = cache::resolveSettings(command.cacheDir, false);
  if (!settings.configWarning.empty()) {
    // As a compile says it: the limits and directory shown or applied are
    // the defaults, not the file's.
    TextDiagnosticConsumer printer(stderr, false);
    DiagnosticEngine diags(printer);
    diags.reportForPath(Diag::ConfigIgnored, "", settings.configWarning)
        .about(cache::configPath());
  }
  if (settings.dir.empty()) {
    return fail("no cache directory is known (set TRITONC_CACHE_DIR or HOME)");
  }
  if (command.action == "stats") {
    return stats(settings, command.json);
  }
  if (command.action == "clear") {
    // Each level named once, in level order (`--level l3,l2 --level l3`).
    std::vector<cache::Level> levels;
    for (cache::Level level : cache::kLevels) {
      for (const std::string& name : command.levels) {
        if (cache::parseLevel(name) == level) {
          levels.push_back(level);
          break;
        }
      }
    }
    Expected<cache::MaintenanceReport> report = cache::clear(settings.dir, levels);
    if (!report) return fail(report.error().message);
    std::string cleared;
    for (cache::Level level : levels) {
      cleared += (cleared.empty() ? "" : ", ") + std::string(levelName(level));
    }
    writeStandardOutput(fmt::format("cleared {}: removed {} ({})\n{}",
                            levels.empty() ? "the cache" : cleared, entriesText(report->removed),
                            cache::formatSize(report->removedBytes), staleTemporaries(*report)));
    return failedRemovals(*report);
  }
  if (command.action == "prune") {
    Expected<cache::MaintenanceReport> report = cache::prune(settings, command.days, maxBytes);
    if (!report) return fail(report.error().message);
    uint64_t entries = 0, bytes = 0;
    for (cache::Level level : {cache::Level::L2, cache::Level::L3}) {
      cache::LevelUsage usage = cache::scanLevel(settings.dir, level);
      entries += usage.entries;
      bytes += usage.bytes;
    }
    writeStandardOutput(fmt::format("pruned {} ({}); {} ({}) left\n{}",
                                    entriesText(report->removed),
                                    cache::formatSize(report->removedBytes), entriesText(entries),
                                    cache::formatSize(bytes), staleTemporaries(*report)));
    return failedRemovals(*report);
  }
  if (command.action == "validate") {
    Expected<cache::MaintenanceReport> report = cache::validate(settings.dir);
    if (!report) return fail(report.error().message);
    std::string out;
    for (const std::string& entry : report->corruptEntries) {
      out += "corrupt: " + entry + " (removed)\n";
    }
    for (const std::string& temp : report->staleTemporaries) {
      out += "stale temporary: " + temp + " (removed)\n";
    }
    out += fmt::format("checked {}: {} valid, {} corrupt (removed)\n",
                       entriesText(report->checked), report->checked - report->corrupt,
                       report->corrupt);
    out += staleTemporaries(*report);
    writeStandardOutput(out);
    return failedRemovals(*report);
  }
  return kExitUsageError;
}

int runConfigCommand(const CacheCommand& command) {
  std::string path = cache::configPath();
  bool known = false;
  for (const cache::ConfigKey& key : cache::configKeys()) known |= command.key == key.name;
  if (!known) {
    TextDiagnosticConsumer printer(stderr, false);
    DiagnosticEngine diags(printer);
    auto report = diags.reportForPath(Diag::ConfigKeyUnknown, "", command.key);
    std::string hint = cache::closestConfigKey(command.key);
    if (!hint.empty()) report.note(Note::DidYouMean, hint);
    std::string keys;
    for (const cache::ConfigKey& key : cache::configKeys()) keys += keys.empty() ? key.name : std::string(", ") + key.name;
    report.note(Note::ConfigKeys, keys);
    return kExitUsageError;
  }
  if (command.action == "get") {
    std::string ignored;
    Expected<std::string> value = cache::configGet(path, command.key, &ignored);
    if (!value) return fail(value.error().message);
    if (!ignored.empty()) {  // as a compile says it, and the value in effect
      TextDiagnosticConsumer printer(stderr, false);
      DiagnosticEngine diags(printer);
      diags.reportForPath(Diag::ConfigIgnored, "", ignored).about(path);
    }
    writeStandardOutput(*value + "\n");
    return kExitSuccess;
  }
  // A value of the wrong type is the user's mistake (exit 2); a file that
  // cannot be read or written is the environment's (exit 3).
  if (Expected<std::string> value = cache::checkConfigValue(command.key, command.value); !value) {
    TextDiagnosticConsumer printer(stderr, false);
    DiagnosticEngine diags(printer);
    diags.reportForPath(Diag::ConfigValueInvalid, "", value.error().message);
    return kExitUsageError;
  }
  Expected<bool> set = cache::configSet(path, command.key, command.value);
  if (!set) {
    return fail(set.error().message);
  }
  return kExitSuccess;
}

}  // namespace tritonc

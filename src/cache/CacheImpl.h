//===- CacheImpl.h - helpers shared by the cache's files ---------*- C++ -*-===//
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tritonc/cache/Cache.h"

namespace tritonc::cache::detail {

/// One entry file on disk.
struct EntryFile {
  std::string path;
  uint64_t bytes = 0;
  int64_t lastUseNs = 0;  ///< mtime
  /// False for anything else found where entries live (a FIFO, a symbolic
  /// link, a directory): never an entry; validate, clear and prune remove it.
  bool regular = true;
};

/// The bytes of the entry file at `path`, or nullopt. Only a regular file is
/// read (readRegularFile, not following a symbolic link): anything else sets
/// *notEntry.
std::optional<std::string> readEntryFile(const std::string& path, bool* notEntry);

/// Every entry file of a level (temporary files excluded).
std::vector<EntryFile> listEntries(const std::string& dir, Level level);
/// Temporary files older than an hour, left by killed processes.
std::vector<EntryFile> listStaleTemporaries(const std::string& dir);

/// Removes the least recently used entries of `files` until the rest fit in
/// `maxBytes` (strict LRU: once one does not fit, every older one goes too);
/// and, when `maxAgeDays` is set, every entry unused for that many days (0: all).
/// Updates `report` and returns what is left.
std::vector<EntryFile> evict(std::vector<EntryFile> files, std::optional<uint64_t> maxBytes,
                             std::optional<uint64_t> maxAgeDays, MaintenanceReport& report);

/// `<dir>/stats`, locked with flock(2) while it is read and rewritten.
class StatsFile {
 public:
  explicit StatsFile(const std::string& dir);
  ~StatsFile();
  bool locked() const { return fd_ >= 0; }
  Counters read() const;
  void write(const Counters& counters);

 private:
  int fd_ = -1;
};

std::string formatCounters(const Counters& counters);
Counters parseCounters(std::string_view text);

}  // namespace tritonc::cache::detail

//===- CacheImpl.h - helpers shared by the cache's files ---------*- C++ -*-===//
#pragma once

#include <sys/stat.h>

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
/// read (not following a symbolic link, not waiting on a FIFO): anything else
/// sets *notEntry. Its header is read first, then at most the size it gives
/// and a byte: a sparse terabyte or another program's file is not read
/// whole, and the bytes returned make decodeEntry report it ("truncated
/// payload", "trailing bytes", "bad magic").
/// `status`, when given, gets the file's status (size, last use).
std::optional<std::string> readEntryFile(const std::string& path, bool* notEntry,
                                         struct stat* status = nullptr);

/// Whether an entry last used at `lastUseNs` (its mtime) is older than `days`
/// days (`cache.*.ttl_days`, `prune --days`) at `nowNs`: last used at or
/// before the cutoff, or more than a day in the future (a cache copied from a
/// machine whose clock was ahead would never age). 0 days: every entry.
bool olderThanDays(int64_t lastUseNs, uint64_t days, int64_t nowNs);
/// Nanoseconds since the epoch.
int64_t nowNs();
/// A file's modification time (an entry's last use) in nanoseconds since the epoch.
inline int64_t mtimeNs(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

/// The size of the entry file whose header (its first kEntryHeaderSize bytes)
/// is `header`; nullopt when it is not an entry's header.
std::optional<uint64_t> declaredEntrySize(std::string_view header);

/// Every entry file of a level (temporary files excluded): the files named
/// as entries in its two-hex-digit shards, nothing else. `unreadable`, when
/// given, gets the first folder that could not be listed, and why.
std::vector<EntryFile> listEntries(const std::string& dir, Level level,
                                   std::string* unreadable = nullptr);
/// Temporary files older than an hour (or dated more than a day ahead), left
/// by killed processes.
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
  /// The counters; `intact` (when given) says whether the file held them
  /// (false when it was missing, empty or damaged: they start from zero).
  Counters read(bool* intact = nullptr) const;
  void write(const Counters& counters);

 private:
  int fd_ = -1;
};

std::string formatCounters(const Counters& counters);
Counters parseCounters(std::string_view text, bool* intact = nullptr);

}  // namespace tritonc::cache::detail

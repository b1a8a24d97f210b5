//===- Maintenance.cpp - stats, clear, prune, validate ----------------------===//
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "CacheImpl.h"
#include "tritonc/base/FileSystem.h"

namespace tritonc::cache {
namespace {
// Removes an entry file, counting it; one that cannot be removed (and still
// exists) is counted as failed with the first reason, which the commands
// report (exit 3) instead of claiming success.
bool removeEntry(const std::string& path, MaintenanceReport& report) {
  if (removePath(path)) {
    ++report.removed;
    return true;
  }
  if (errno != ENOENT) {
    if (report.failed++ == 0) report.firstFailure = path + ": " + std::strerror(errno);
  }
  return false;
}

// A folder of the cache that could not be listed: its entries were neither
// checked nor removed, which is a failure as an entry not removed is.
void noteUnreadable(const std::string& unreadable, MaintenanceReport& report) {
  if (unreadable.empty()) return;
  if (report.failed++ == 0) report.firstFailure = unreadable;
}

// Removes the temporary files that writes killed long ago left behind (a
// write in progress is younger than an hour and kept), naming each in the
// report; they are not entries, so neither `removed` nor `failed` counts them.
void removeStaleTemporaries(const std::string& dir, MaintenanceReport& report) {
  for (const detail::EntryFile& temp : detail::listStaleTemporaries(dir)) {
    if (::unlink(temp.path.c_str()) != 0) continue;
    report.staleTemporaries.push_back(temp.path.substr(dir.size() + 1));
    report.staleBytes += temp.bytes;
  }
}
}  // namespace

namespace detail {

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

namespace {

bool isTemporary(const char* name) { return std::strstr(name, ".tmp.") != nullptr; }

// Lower-case hex digits, as Key::hex() writes them.
bool hexDigits(const char* name, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    char c = name[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// A shard's name: two hex digits, the key's first byte.
bool isShard(const char* name) { return std::strlen(name) == 2 && hexDigits(name, 2); }

// An entry's name: the key's other 30 hex digits, alone or followed by a
// write's temporary suffix (`.tmp.<pid>.<n>`).
bool isEntryName(const char* name) {
  constexpr size_t kDigits = 30;
  size_t length = std::strlen(name);
  return length >= kDigits && hexDigits(name, kDigits) &&
         (length == kDigits || std::strncmp(name + kDigits, ".tmp.", 5) == 0);
}

// Calls `visit(path, name, stat)` for every file named as an entry (or an
// entry's temporary file) in the shards of a level. Nothing else is the
// cache's: a README, a folder of the user's, files of a shard linked
// elsewhere are neither counted nor removed. `unreadable` gets the first
// folder that could not be listed, and why.
template <typename Visit>
void walkLevel(const std::string& dir, Level level, Visit&& visit, std::string* unreadable) {
  auto failed = [&](const std::string& folder) {
    if (unreadable != nullptr && unreadable->empty() && errno != ENOENT) {
      *unreadable = folder + ": " + std::strerror(errno);
    }
  };
  std::string root = dir + "/" + std::string(levelName(level));
  DIR* top = ::opendir(root.c_str());
  if (top == nullptr) {
    failed(root);
    return;
  }
  while (dirent* sub = ::readdir(top)) {
    if (!isShard(sub->d_name)) continue;
    std::string folder = root + "/" + sub->d_name;
    DIR* inner = ::opendir(folder.c_str());
    if (inner == nullptr) {
      if (errno != ENOTDIR) failed(folder);  // a file there is blockingFiles' to report
      continue;
    }
    while (dirent* file = ::readdir(inner)) {
      if (!isEntryName(file->d_name)) continue;
      std::string path = folder + "/" + file->d_name;
      struct stat st {};
      if (::lstat(path.c_str(), &st) == 0) visit(path, file->d_name, st);
    }
    ::closedir(inner);
  }
  ::closedir(top);
}

}  // namespace

std::vector<EntryFile> listEntries(const std::string& dir, Level level, std::string* unreadable) {
  std::vector<EntryFile> files;
  walkLevel(
      dir, level,
      [&](const std::string& path, const char* name, const struct stat& st) {
        bool regular = S_ISREG(st.st_mode);
        if (regular && isTemporary(name)) return;
        files.push_back(EntryFile{path, regular ? static_cast<uint64_t>(st.st_size) : 0,
                                  detail::mtimeNs(st), regular});
      },
      unreadable);
  return files;
}

std::vector<EntryFile> listStaleTemporaries(const std::string& dir) {
  std::vector<EntryFile> stale;
  int64_t now = nowNs() / 1000000000;
  int64_t hourAgo = now - 3600;
  // A write in progress was touched just now; one dated more than a day
  // ahead (a cache copied off a machine whose clock was ahead) would never
  // grow an hour old: stale, as such entries count as too old.
  int64_t dayAhead = now + 86400;
  for (Level level : {Level::L2, Level::L3}) {
    walkLevel(dir, level, [&](const std::string& path, const char* name, const struct stat& st) {
      if (S_ISREG(st.st_mode) && isTemporary(name) &&
          (st.st_mtim.tv_sec < hourAgo || st.st_mtim.tv_sec > dayAhead)) {
        stale.push_back(EntryFile{path, static_cast<uint64_t>(st.st_size), 0});
      }
    }, nullptr);
  }
  std::sort(stale.begin(), stale.end(),
            [](const EntryFile& a, const EntryFile& b) { return a.path < b.path; });
  return stale;
}

namespace {
constexpr int64_t kDayNs = int64_t{86400} * 1000000000;

// An entry last used more than a day in the future (a cache copied from a
// machine whose clock was ahead, a restore that kept odd times) would never
// age: it counts as used at the dawn of time (too old, least recently used).
int64_t effectiveLastUse(int64_t lastUseNs, int64_t now) {
  int64_t future = now <= INT64_MAX - kDayNs ? now + kDayNs : INT64_MAX;
  return lastUseNs > future ? INT64_MIN : lastUseNs;
}
}  // namespace

bool olderThanDays(int64_t lastUseNs, uint64_t days, int64_t now) {
  if (days == 0) return true;
  // A number of days further back than 64-bit nanoseconds reach is no cutoff
  // at all (it would wrap around to a cutoff in the future).
  if (days > static_cast<uint64_t>(INT64_MAX / kDayNs)) return false;
  int64_t age = static_cast<int64_t>(days) * kDayNs;
  int64_t cutoff = now >= INT64_MIN + age ? now - age : INT64_MIN;
  return effectiveLastUse(lastUseNs, now) <= cutoff;
}

std::vector<EntryFile> evict(std::vector<EntryFile> files, std::optional<uint64_t> maxBytes,
                             std::optional<uint64_t> maxAgeDays, MaintenanceReport& report) {
  int64_t now = nowNs();
  auto lastUse = [now](const EntryFile& f) { return effectiveLastUse(f.lastUseNs, now); };
  // Most recently used first; ties by path, so eviction is deterministic.
  std::sort(files.begin(), files.end(), [&](const EntryFile& a, const EntryFile& b) {
    return lastUse(a) != lastUse(b) ? lastUse(a) > lastUse(b) : a.path < b.path;
  });
  std::vector<EntryFile> kept;
  uint64_t total = 0;
  bool full = false;  // strict LRU: once one entry does not fit, every older one goes
  for (EntryFile& file : files) {
    if (!file.regular) {  // not an entry: in the way of one
      removeEntry(file.path, report);
      continue;
    }
    // Entries last used at or before the cutoff are too old; `--days 0` is every entry.
    bool tooOld = maxAgeDays && olderThanDays(file.lastUseNs, *maxAgeDays, now);
    full = full || (maxBytes && total + file.bytes > *maxBytes);
    if ((tooOld || full) && removeEntry(file.path, report)) {
      report.removedBytes += file.bytes;
      continue;
    }
    total += file.bytes;
    kept.push_back(std::move(file));
  }
  return kept;
}

// ---- stats ---------------------------------------------------------------------------

namespace {
constexpr const char* kStatsMagic = "tritonc-cache-stats 1";
// The counters take a few hundred bytes; what follows 64 KiB is not theirs
// (a `stats` grown or replaced by something else is read no further).
constexpr size_t kStatsMaxBytes = 64 * 1024;

template <typename Field>
void forEachField(Counters& c, Field&& field) {
  for (Level level : kLevels) {
    LevelCounters& l = c.levels[static_cast<int>(level)];
    std::string p = std::string(levelName(level)) + ".";
    field(p + "hits", reinterpret_cast<int64_t*>(&l.hits));
    field(p + "misses", reinterpret_cast<int64_t*>(&l.misses));
    field(p + "stores", reinterpret_cast<int64_t*>(&l.stores));
    field(p + "corrupt", reinterpret_cast<int64_t*>(&l.corrupt));
    field(p + "evicted", reinterpret_cast<int64_t*>(&l.evicted));
    field(p + "saved_ns", reinterpret_cast<int64_t*>(&l.savedNs));
    field(p + "bytes", &l.bytes);
    field(p + "entries", &l.entries);
  }
  field("last_ttl_sweep", reinterpret_cast<int64_t*>(&c.lastTtlSweep));
}
}  // namespace

std::string formatCounters(const Counters& counters) {
  Counters c = counters;
  std::string out = std::string(kStatsMagic) + "\n";
  forEachField(c, [&](const std::string& name, int64_t* value) {
    out += fmt::format("{} {}\n", name, *value);
  });
  return out;
}

Counters parseCounters(std::string_view text, bool* intact) {
  // Lenient: an unknown or damaged line is skipped (counters are advisory).
  Counters c;
  bool magic = text.substr(0, std::strlen(kStatsMagic)) == kStatsMagic;
  if (intact != nullptr) *intact = magic;
  if (!magic) return c;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) break;  // a torn last line is ignored
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    size_t space = line.find(' ');
    if (space == std::string_view::npos) continue;
    std::string name(line.substr(0, space));
    std::string number(line.substr(space + 1));
    char* stop = nullptr;
    errno = 0;
    long long value = std::strtoll(number.c_str(), &stop, 10);
    if (errno != 0 || stop == number.c_str() || *stop != '\0') continue;
    forEachField(c, [&](const std::string& field, int64_t* slot) {
      if (field == name) *slot = value;
    });
  }
  return c;
}

StatsFile::StatsFile(const std::string& dir) {
  std::string path = dir + "/stats";
  // A regular file only, not through a link: a `stats` linked to a file of
  // someone's would be overwritten, a FIFO would block, /dev/zero never end.
  // Anything else there leaves the counters unkept (they are advisory).
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK,
               0666);  // less the umask
  struct stat st {};
  if (fd_ >= 0 && (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode) ||
                   ::flock(fd_, LOCK_EX) != 0)) {
    ::close(fd_);
    fd_ = -1;
  }
}

StatsFile::~StatsFile() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

Counters StatsFile::read(bool* intact) const {
  std::string text;
  (void)readFileAt(fd_, text, kStatsMaxBytes, 0);  // what could be read: counters are advisory
  return parseCounters(text, intact);
}

void StatsFile::write(const Counters& counters) {
  // In place (under the lock): a rename would make ext4 flush at once.
  std::string text = formatCounters(counters);
  if (::pwrite(fd_, text.data(), text.size(), 0) == static_cast<ssize_t>(text.size())) {
    (void)::ftruncate(fd_, static_cast<off_t>(text.size()));
  }
}

}  // namespace detail

// ---- commands -----------------------------------------------------------------------

LevelUsage scanLevel(const std::string& dir, Level level) {
  LevelUsage usage;
  for (const detail::EntryFile& f : detail::listEntries(dir, level)) {
    if (!f.regular) continue;
    ++usage.entries;
    usage.bytes += f.bytes;
  }
  return usage;
}

std::vector<std::string> blockingFiles(const std::string& dir) {
  std::vector<std::string> blocking;
  for (Level level : {Level::L2, Level::L3}) {
    // Followed through symbolic links (a level linked to another disk is a folder); a
    // dangling link blocks as a file does.
    auto isFolder = [](const std::string& path) {
      struct stat st {};
      return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
    };
    auto exists = [](const std::string& path) {
      struct stat st {};
      return ::lstat(path.c_str(), &st) == 0;
    };
    std::string root = dir + "/" + std::string(levelName(level));
    if (!exists(root)) continue;
    if (!isFolder(root)) {
      blocking.push_back(root);
      continue;
    }
    DIR* top = ::opendir(root.c_str());
    if (top == nullptr) continue;
    while (dirent* sub = ::readdir(top)) {
      // Only a shard's name (two hex digits, the key's first byte) is in a store's way.
      const char* name = sub->d_name;
      if (!detail::isShard(name)) {
        continue;
      }
      std::string folder = root + "/" + name;
      if (!isFolder(folder)) blocking.push_back(folder);
    }
    ::closedir(top);
  }
  std::sort(blocking.begin(), blocking.end());
  return blocking;
}

std::string blockingFileProblem(const std::string& dir) {
  std::vector<std::string> blocking = blockingFiles(dir);
  if (blocking.empty()) return {};
  return blocking.front() +
         " is not a directory; 'tritonc cache validate' (or 'cache clear') removes it";
}

Counters readCounters(const std::string& dir) {
  // As StatsFile: a regular file, not through a link, at most kStatsMaxBytes of it.
  FoundFile found = FoundFile::Missing;
  int fd = openRegularFile(dir + "/stats", /*followLinks=*/false, &found);
  if (fd < 0) return Counters{};
  std::string text;
  bool read = readFileAt(fd, text, detail::kStatsMaxBytes, 0);
  ::close(fd);
  return read ? detail::parseCounters(text) : Counters{};
}

namespace {

Expected<bool> requireDirectory(const std::string& dir) {
  if (dir.empty()) return Error{"no cache directory is known (set TRITONC_CACHE_DIR or HOME)"};
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT) return false;  // nothing cached yet
    return Error{"cannot access " + dir + ": " + std::strerror(errno)};
  }
  if (!S_ISDIR(st.st_mode)) return Error{dir + " is not a directory"};
  return true;
}

// A file where the cache keeps a folder (`l3`, `l3/ab`) stops every store
// under it. prune (and stats) say so; clear and validate remove it.
Expected<bool> requireStructure(const std::string& dir) {
  std::string problem = blockingFileProblem(dir);
  if (problem.empty()) return true;
  return Error{problem};
}

void removeBlockingFiles(const std::string& dir, MaintenanceReport& report) {
  for (const std::string& path : blockingFiles(dir)) {
    struct stat st {};
    uint64_t bytes = ::lstat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
    if (::unlink(path.c_str()) != 0) {
      ++report.failed;
      if (report.firstFailure.empty()) report.firstFailure = path + ": " + std::strerror(errno);
      continue;
    }
    ++report.checked;
    ++report.corrupt;
    ++report.removed;
    report.removedBytes += bytes;
    report.corruptEntries.push_back(path.substr(dir.size() + 1) +
                                    ": a file where the cache keeps a folder");
  }
}

// Rewrites the counters of `levels` from what is on disk after `report`.
void recount(const std::string& dir, const std::vector<Level>& levels, bool reset,
             const std::array<uint64_t, kLevelCount>& evicted) {
  detail::StatsFile file(dir);
  if (!file.locked()) return;
  Counters c = file.read();
  for (Level level : levels) {
    LevelCounters& l = c.levels[static_cast<int>(level)];
    if (reset) l = LevelCounters{};
    LevelUsage usage = scanLevel(dir, level);
    l.entries = static_cast<int64_t>(usage.entries);
    l.bytes = static_cast<int64_t>(usage.bytes);
    l.evicted += evicted[static_cast<int>(level)];
  }
  file.write(c);
}

}  // namespace

Expected<MaintenanceReport> clear(const std::string& dir, const std::vector<Level>& levels) {
  std::vector<Level> chosen = levels.empty() ? std::vector<Level>(kLevels.begin(), kLevels.end())
                                             : levels;
  MaintenanceReport report;
  TRITONC_TRY(exists, requireDirectory(dir));
  if (!exists) return report;
  removeBlockingFiles(dir, report);
  for (Level level : chosen) {
    if (level == Level::L1) continue;  // lives in each process's memory
    std::string unreadable;
    for (const detail::EntryFile& f : detail::listEntries(dir, level, &unreadable)) {
      if (removeEntry(f.path, report)) report.removedBytes += f.bytes;
    }
    noteUnreadable(unreadable, report);
  }
  // The whole cache: the stale temporary files of interrupted writes too (as
  // prune and validate remove them; a write in progress is kept).
  if (levels.empty()) removeStaleTemporaries(dir, report);
  recount(dir, chosen, /*reset=*/true, {});
  return report;
}

Expected<MaintenanceReport> prune(const Settings& settings, std::optional<uint64_t> maxAgeDays,
                                  std::optional<uint64_t> maxBytes) {
  MaintenanceReport report;
  TRITONC_TRY(exists, requireDirectory(settings.dir));
  if (!exists) return report;
  TRITONC_TRY(structured, requireStructure(settings.dir));
  (void)structured;
  std::array<uint64_t, kLevelCount> evicted{};
  auto evictLevel = [&](Level level, std::optional<uint64_t> bytes,
                        std::optional<uint64_t> days) {
    uint64_t before = report.removed;
    std::string unreadable;
    std::vector<detail::EntryFile> left =
        detail::evict(detail::listEntries(settings.dir, level, &unreadable), bytes, days, report);
    noteUnreadable(unreadable, report);
    evicted[static_cast<int>(level)] += report.removed - before;
    return left;
  };
  if (!maxAgeDays && !maxBytes) {
    // The configured limits.
    for (Level level : {Level::L2, Level::L3}) {
      uint64_t limit = settings.maxBytes[static_cast<int>(level)];
      uint64_t ttl = settings.ttlDays[static_cast<int>(level)];
      evictLevel(level, limit ? std::optional<uint64_t>(limit) : std::nullopt,
                 ttl ? std::optional<uint64_t>(ttl) : std::nullopt);
    }
  } else {
    if (maxAgeDays) {
      for (Level level : {Level::L2, Level::L3}) evictLevel(level, std::nullopt, *maxAgeDays);
    }
    if (maxBytes) {
      // One budget over both levels, least recently used first, whatever the level.
      std::string unreadable;
      std::vector<detail::EntryFile> all = detail::listEntries(settings.dir, Level::L2, &unreadable);
      size_t l2Count = all.size();
      std::vector<detail::EntryFile> l3 = detail::listEntries(settings.dir, Level::L3, &unreadable);
      noteUnreadable(unreadable, report);
      all.insert(all.end(), l3.begin(), l3.end());
      std::vector<std::string> l2Paths;
      for (size_t i = 0; i < l2Count; ++i) l2Paths.push_back(all[i].path);
      uint64_t before = report.removed;
      std::vector<detail::EntryFile> left = detail::evict(all, *maxBytes, std::nullopt, report);
      uint64_t l2Left = 0;
      for (const detail::EntryFile& f : left) {
        l2Left += std::find(l2Paths.begin(), l2Paths.end(), f.path) != l2Paths.end();
      }
      uint64_t removed = report.removed - before;
      evicted[static_cast<int>(Level::L2)] += l2Count - l2Left;
      evicted[static_cast<int>(Level::L3)] += removed - (l2Count - l2Left);
    }
  }
  removeStaleTemporaries(settings.dir, report);
  recount(settings.dir, {Level::L2, Level::L3}, /*reset=*/false, evicted);
  return report;
}

Expected<MaintenanceReport> validate(const std::string& dir) {
  MaintenanceReport report;
  TRITONC_TRY(exists, requireDirectory(dir));
  if (!exists) return report;
  removeBlockingFiles(dir, report);
  std::array<uint64_t, kLevelCount> corrupt{};
  for (Level level : {Level::L2, Level::L3}) {
    std::string unreadable;
    std::vector<detail::EntryFile> files = detail::listEntries(dir, level, &unreadable);
    noteUnreadable(unreadable, report);
    for (const detail::EntryFile& f : files) {
      ++report.checked;
      bool notEntry = false;
      std::optional<std::string> bytes = detail::readEntryFile(f.path, &notEntry);
      if (!bytes && !notEntry && errno == ENOENT) {
        // Removed since it was listed (a prune, clear or eviction of another
        // process, which counted it): gone, not corrupt.
        --report.checked;
        continue;
      }
      std::string problem;
      if (notEntry) {
        problem = "not a regular file (a directory, link, FIFO or device where an entry belongs)";
      } else if (!bytes) {
        problem = std::string("cannot read: ") + std::strerror(errno);
      } else if (Expected<Entry> entry = decodeEntry(*bytes); !entry) {
        problem = entry.error().message;
      } else {
        // The file name must be the key, and the folder the level.
        std::string hex = entry->key.hex();
        std::string expected = dir + "/" + std::string(levelName(level)) + "/" + hex.substr(0, 2) +
                               "/" + hex.substr(2);
        if (entry->level != level) problem = "entry of another level";
        else if (f.path != expected) problem = "entry stored under another key";
      }
      if (problem.empty()) continue;
      ++report.corrupt;
      ++corrupt[static_cast<int>(level)];
      report.corruptEntries.push_back(f.path.substr(dir.size() + 1) + ": " + problem);
      if (removeEntry(f.path, report)) report.removedBytes += f.bytes;
    }
  }
  removeStaleTemporaries(dir, report);
  {
    detail::StatsFile file(dir);
    if (file.locked()) {
      Counters c = file.read();
      for (Level level : {Level::L2, Level::L3}) {
        LevelCounters& l = c.levels[static_cast<int>(level)];
        l.corrupt += corrupt[static_cast<int>(level)];
        LevelUsage usage = scanLevel(dir, level);
        l.entries = static_cast<int64_t>(usage.entries);
        l.bytes = static_cast<int64_t>(usage.bytes);
      }
      file.write(c);
    }
  }
  return report;
}

std::optional<uint64_t> parseSize(std::string_view text) {
  // <number>[.<digits>][K|M|G|T][i][B], case-insensitive; a bare number is bytes.
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
    ++i;
  }
  std::string number(text.substr(0, i));
  if (number.find_first_of("0123456789") == std::string::npos ||
      std::count(number.begin(), number.end(), '.') > 1) {
    return std::nullopt;
  }
  std::string unit;
  for (char c : text.substr(i)) unit += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (!unit.empty() && unit.back() == 'B') unit.pop_back();
  if (!unit.empty() && unit.back() == 'I') unit.pop_back();
  double scale;
  if (unit.empty()) scale = 1;
  else if (unit == "K") scale = 1024.0;
  else if (unit == "M") scale = 1024.0 * 1024;
  else if (unit == "G") scale = 1024.0 * 1024 * 1024;
  else if (unit == "T") scale = 1024.0 * 1024 * 1024 * 1024;
  else if (unit == "P") scale = 1024.0 * 1024 * 1024 * 1024 * 1024;
  else if (unit == "E") scale = 1024.0 * 1024 * 1024 * 1024 * 1024 * 1024;
  else return std::nullopt;
  // Bytes are whole: `0.5` is a slip for `0.5G` (rounded down, it would
  // prune everything), not half a byte.
  if (scale == 1 && number.find('.') != std::string::npos) return std::nullopt;
  double value = std::strtod(number.c_str(), nullptr) * scale;
  if (!std::isfinite(value)) return std::nullopt;
  // Past 16 EiB: as large as a size gets (the config's numbers saturate too).
  if (value >= 18446744073709551615.0) return UINT64_MAX;
  return static_cast<uint64_t>(value);
}

std::string formatSize(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 6) {
    value /= 1024;
    ++unit;
  }
  return unit == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", value, units[unit]);
}

}  // namespace tritonc::cache

//===- Store.cpp - looking entries up and storing them ----------------------===//
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include "CacheImpl.h"
#include "tritonc/base/FileSystem.h"

namespace tritonc::cache {

namespace detail {

std::optional<std::string> readEntryFile(const std::string& path, bool* notEntry,
                                         struct stat* status) {
  FoundFile found = FoundFile::Missing;
  struct stat st {};
  int fd = openRegularFile(path, /*followLinks=*/false, &found, &st);
  *notEntry = found == FoundFile::NotRegular;
  if (fd < 0) return std::nullopt;
  if (status != nullptr) *status = st;
  // Not an entry's header, or shorter than it says: the header alone
  // (decodeEntry says "bad magic", "truncated payload"). Longer than it
  // says: what it says and a byte more ("trailing bytes"). No entry is
  // bigger than kLargest: a header saying so is read no further.
  constexpr uint64_t kLargest = uint64_t{4} << 30;
  auto size = static_cast<uint64_t>(st.st_size);
  std::string bytes;
  bool read = readFileAt(fd, bytes, std::min<size_t>(size, kEntryHeaderSize), 0);
  if (read) {
    std::optional<uint64_t> declared = declaredEntrySize(bytes);
    if (declared && *declared <= kLargest && size >= *declared) {
      uint64_t want = std::min(size, *declared + 1);
      read = readFileAt(fd, bytes, static_cast<size_t>(want) - bytes.size(),
                        static_cast<off_t>(bytes.size()));
    }
  }
  int saved = errno;
  ::close(fd);
  errno = saved;
  if (!read) return std::nullopt;
  return bytes;
}

}  // namespace detail

using detail::EntryFile;
using detail::StatsFile;

namespace {

int index(Level level) { return static_cast<int>(level); }

uint64_t unixSeconds() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::seconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

std::string memoryKey(Level level, const Key& key) {
  return std::string(levelName(level)) + key.hex();
}

}  // namespace

Cache Cache::open(const Settings& settings) {
  Cache cache;
  cache.settings_ = settings;
  if (!settings.enabled) {
    return cache;
  }
  if (settings.dir.empty()) {
    cache.warning_ = "no cache directory is known (set TRITONC_CACHE_DIR or HOME)";
    return cache;
  }
  // (Made again when something removes it between the two steps: `rm -rf` of the
  // cache by another job, as a store does in writeEntry.)
  // A link to a folder not made yet (`~/.cache/tritonc -> /scratch/$USER/tritonc`
  // on a fresh node): the folder it names is made, as a missing cache folder is.
  std::string made = settings.dir;
  if (Expected<std::string> target = followSymlinks(settings.dir); target) made = *target;
  for (int attempt = 0;; ++attempt) {
    std::string error;
    if (!makeDirectories(made, &error)) {
      if (attempt < 2 && error.find(std::strerror(ENOENT)) != std::string::npos) continue;
      cache.warning_ = "cannot create the cache directory " + settings.dir + ": " + error;
      return cache;
    }
    if (::access(settings.dir.c_str(), R_OK | W_OK | X_OK) == 0) break;
    if (attempt < 2 && errno == ENOENT) continue;
    cache.warning_ = "the cache directory " + settings.dir + " is not writable: " +
                     std::strerror(errno);
    return cache;
  }
  cache.enabled_ = true;
  cache.dir_ = settings.dir;
  return cache;
}

Cache::Cache() = default;
Cache::Cache(Cache&&) noexcept = default;
Cache& Cache::operator=(Cache&&) noexcept = default;

Cache::~Cache() { flush(); }

void Cache::disable(std::string why) {
  enabled_ = false;
  warning_ = std::move(why);
}

std::string Cache::entryPath(Level level, const Key& key) const {
  std::string hex = key.hex();
  return dir_ + "/" + std::string(levelName(level)) + "/" + hex.substr(0, 2) + "/" + hex.substr(2);
}

Cache::Claim Cache::claim(Level level, const Key& key) {
  auto guard = lock();
  if (!memory_ || !enabled_ || !released_) {
    return {};
  }
  std::string name = memoryKey(level, key);
  std::thread::id self = std::this_thread::get_id();
  for (;;) {
    auto it = claimed_.find(name);
    if (it == claimed_.end()) break;
    if (it->second == self) return {};  // already this thread's: nothing more to release
    released_->wait(guard);
  }
  claimed_.emplace(name, self);
  return Claim(this, std::move(name));
}

void Cache::releaseClaim(const std::string& key) {
  auto guard = lock();
  if (claimed_.erase(key) != 0) {
    released_->notify_all();
  }
}

void Cache::Claim::release() {
  if (cache_ != nullptr) {
    cache_->releaseClaim(key_);
    cache_ = nullptr;
  }
}

std::optional<Entry> Cache::load(Level level, const Key& key,
                                 const std::function<bool(const Entry&)>& usable,
                                 std::string* corrupt) {
  auto guard = lock();
  if (!enabled_) {
    return std::nullopt;
  }
  if (memory_) {
    auto it = l1_.find(memoryKey(level, key));
    LevelCounters& l1 = session_.levels[index(Level::L1)];
    if (it != l1_.end() && (!usable || usable(it->second))) {
      ++l1.hits;
      Entry hit = it->second;
      hit.fromMemory = true;
      return hit;
    }
    ++l1.misses;
    if (it != l1_.end()) {
      // The same entry as on disk: rejected there as well.
      ++session_.levels[index(level)].misses;
      return std::nullopt;
    }
  }
  LevelCounters& counters = session_.levels[index(level)];
  std::string path = entryPath(level, key);
  bool notEntry = false;
  struct stat st {};
  std::optional<std::string> bytes = detail::readEntryFile(path, &notEntry, &st);
  if (notEntry) {
    // A directory, link or FIFO where the entry belongs (never one tritonc
    // writes): removed, so that the store after the compile can write it.
    if (corrupt != nullptr) *corrupt = "not a regular file";
    ++counters.corrupt;
    ++counters.misses;
    removePath(path);
    return std::nullopt;
  }
  if (!bytes) {
    ++counters.misses;
    return std::nullopt;
  }
  // A miss that removes the entry: its bytes and count leave the level's usage.
  auto drop = [&](uint64_t& reason) -> std::optional<Entry> {
    ++reason;
    ++counters.misses;
    counters.bytes -= static_cast<int64_t>(st.st_size);
    --counters.entries;
    return std::nullopt;
  };
  // Unused for longer than the level's ttl_days: expired now, not only at the
  // next daily sweep (a miss; the entry goes, as the sweep would remove it).
  if (uint64_t ttl = settings_.ttlDays[index(level)]; ttl != 0) {
    if (detail::olderThanDays(detail::mtimeNs(st), ttl, detail::nowNs()) &&
        ::unlink(path.c_str()) == 0) {
      return drop(counters.evicted);
    }
  }
  Expected<Entry> entry = decodeEntry(*bytes, &key);
  if (!entry || entry->level != level) {
    // Never trusted, never fatal: dropped, counted, recompiled.
    if (corrupt != nullptr) {
      *corrupt = entry ? "an entry of level " + std::string(levelName(entry->level))
                       : entry.error().message;
    }
    ::unlink(path.c_str());
    return drop(counters.corrupt);
  }
  if (usable && !usable(*entry)) {
    ++counters.misses;
    return std::nullopt;
  }
  ++counters.hits;
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // last use, for LRU eviction
  if (memory_) {
    l1_.emplace(memoryKey(level, key), *entry);
  }
  return std::move(*entry);
}

void Cache::rejectHit(Level level, const Entry& entry, bool corrupt) {
  auto guard = lock();
  LevelCounters& counters = session_.levels[index(level)];
  LevelCounters& hit = entry.fromMemory ? session_.levels[index(Level::L1)] : counters;
  if (hit.hits > 0) --hit.hits;
  ++hit.misses;
  if (entry.fromMemory) ++counters.misses;  // as an L1 miss would have looked on disk
  if (!corrupt) return;
  ++counters.corrupt;
  l1_.erase(memoryKey(level, entry.key));
  std::string path = entryPath(level, entry.key);
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && ::unlink(path.c_str()) == 0) {
    counters.bytes -= static_cast<int64_t>(st.st_size);
    --counters.entries;
  }
}

// A store running on its own thread: compression and the write of a large
// entry overlap with the rest of the pipeline.
struct Cache::Background {
  Level level;
  Key key;
  uint64_t computeNs;
  std::string payload;
  size_t bytes = 0;
  std::string error;
  bool dropped = false;  ///< its folders were removed while it was written
  std::thread thread;
};

std::string Cache::writeEntry(const std::string& path, std::string_view bytes,
                              bool* dropped) const {
  *dropped = false;
  std::string error;
  if (writeFileAtomically(path, bytes, &error)) {
    return {};
  }
  // A directory where the entry belongs (made by hand: never by tritonc) is
  // no reason to call the cache unusable: it goes, and the write is retried.
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && removePath(path) &&
      writeFileAtomically(path, bytes, &error)) {
    return {};
  }
  // The first store into a folder creates it. So does a store after the folders
  // were removed (`rm -rf ~/.cache/tritonc` by a CI cleanup or another job while
  // this compile ran): made again, as ccache does. A removal that keeps racing
  // the write (a loop of `rm -rf`) gets a few attempts; then the entry is
  // dropped, as ccache drops a store it cannot make: the cache was emptied, not
  // made unusable, and the compile goes on.
  std::string folder = path.substr(0, path.find_last_of('/'));
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (makeDirectories(folder, &error) && writeFileAtomically(path, bytes, &error)) {
      return {};
    }
    // ENOENT in a folder just made: something removed it, or the file in it, meanwhile.
    // (Any other error is the directory's: read-only, full, a file in the way.)
    if (error.find(std::strerror(ENOENT)) == std::string::npos) break;
    if (attempt == 2) {
      *dropped = true;
      return {};
    }
  }
  // A file in the way of a folder (`l3`): named, with the command that
  // removes it (the cache directory itself is fine).
  if (std::string problem = blockingFileProblem(dir_); !problem.empty()) {
    return "cannot write to the cache directory " + dir_ + ": " + problem;
  }
  return "cannot write to the cache directory " + dir_ + ": " + error;
}

void Cache::countStore(Level level, const Key& key, size_t bytes, std::string_view payload,
                       uint64_t computeNs, bool remember) {
  LevelCounters& counters = session_.levels[index(level)];
  ++counters.stores;
  counters.bytes += static_cast<int64_t>(bytes);
  ++counters.entries;
  if (memory_ && remember) {
    Entry entry{level, key, computeNs, std::string(payload)};
    l1_.insert_or_assign(memoryKey(level, key), std::move(entry));
  }
}

void Cache::store(Level level, const Key& key, std::string_view payload, uint64_t computeNs,
                  bool compress) {
  auto guard = lock();
  if (!enabled_) {
    return;
  }
  std::string bytes = encodeEntry(level, key, payload, computeNs, compress);
  bool dropped = false;
  if (std::string error = writeEntry(entryPath(level, key), bytes, &dropped); !error.empty()) {
    disable(std::move(error));
    return;
  }
  if (!dropped) countStore(level, key, bytes.size(), payload, computeNs);
}

void Cache::storeInBackground(Level level, const Key& key, std::string payload,
                              uint64_t computeNs) {
  auto guard = lock();
  // Starting a thread costs tens of microseconds: only worth it for entries
  // that take milliseconds to compress.
  constexpr size_t kBackgroundThreshold = 256 * 1024;
  if (!enabled_ || payload.size() < kBackgroundThreshold) {
    store(level, key, payload, computeNs);
    return;
  }
  auto job = std::make_unique<Background>();
  job->level = level;
  job->key = key;
  job->computeNs = computeNs;
  job->payload = std::move(payload);
  if (memory_) {
    // In L1 at once: a thread waiting on this key's claim finds it there.
    l1_.insert_or_assign(memoryKey(level, key), Entry{level, key, computeNs, job->payload});
  }
  Background* raw = job.get();
  std::string path = entryPath(level, key);
  raw->thread = std::thread([this, raw, path] {
    std::string bytes = encodeEntry(raw->level, raw->key, raw->payload, raw->computeNs);
    raw->bytes = bytes.size();
    raw->error = writeEntry(path, bytes, &raw->dropped);
  });
  background_.push_back(std::move(job));
}

void Cache::wait() {
  auto guard = lock();
  for (std::unique_ptr<Background>& job : background_) {
    job->thread.join();
    if (!job->error.empty()) {
      disable(std::move(job->error));
    } else if (enabled_ && !job->dropped) {
      countStore(job->level, job->key, job->bytes, job->payload, job->computeNs,
                 /*remember=*/false);
    }
  }
  background_.clear();
}

void Cache::addSaved(Level level, uint64_t ns) {
  auto guard = lock();
  session_.levels[index(level)].savedNs += ns;
}

void Cache::flush() {
  auto guard = lock();
  wait();
  if (dir_.empty()) {
    return;
  }
  bool changed = false;
  for (const LevelCounters& c : session_.levels) {
    changed |= c.hits || c.misses || c.stores || c.corrupt || c.evicted || c.savedNs;
  }
  if (!changed) {
    return;
  }
  StatsFile file(dir_);
  if (!file.locked()) {
    return;  // counters are best effort; entries never depend on them
  }
  bool intact = true;
  Counters total = file.read(&intact);
  for (int i = 0; i < kLevelCount; ++i) {
    LevelCounters& t = total.levels[i];
    const LevelCounters& s = session_.levels[i];
    if (!intact && i != index(Level::L1)) {
      // The file was lost or damaged: the sizes that eviction works from are
      // counted on disk once (this session's stores included), not from 0.
      LevelUsage usage = scanLevel(dir_, static_cast<Level>(i));
      t.bytes = static_cast<int64_t>(usage.bytes) - s.bytes;
      t.entries = static_cast<int64_t>(usage.entries) - s.entries;
    }
    t.hits += s.hits;
    t.misses += s.misses;
    t.stores += s.stores;
    t.corrupt += s.corrupt;
    t.evicted += s.evicted;
    t.savedNs += s.savedNs;
    t.bytes = std::max<int64_t>(0, t.bytes + s.bytes);
    t.entries = std::max<int64_t>(0, t.entries + s.entries);
  }
  // Over a limit: evict the least recently used down to 90% of it. Entries
  // unused for the configured number of days go once a day.
  uint64_t now = unixSeconds();
  bool sweep = now - total.lastTtlSweep > 24 * 3600;
  for (Level level : {Level::L2, Level::L3}) {
    LevelCounters& t = total.levels[index(level)];
    uint64_t limit = settings_.maxBytes[index(level)];
    uint64_t ttl = settings_.ttlDays[index(level)];
    bool over = limit != 0 && static_cast<uint64_t>(t.bytes) > limit;
    if (!over && !(sweep && ttl != 0)) continue;
    MaintenanceReport report;
    std::vector<EntryFile> left =
        detail::evict(detail::listEntries(dir_, level), over ? std::optional<uint64_t>(limit / 10 * 9) : std::nullopt,
                      sweep && ttl != 0 ? std::optional<uint64_t>(ttl) : std::nullopt, report);
    t.evicted += report.removed;
    t.entries = static_cast<int64_t>(left.size());
    t.bytes = 0;
    for (const EntryFile& f : left) t.bytes += static_cast<int64_t>(f.bytes);
  }
  if (sweep) total.lastTtlSweep = now;
  file.write(total);
  session_ = Counters{};
}

}  // namespace tritonc::cache

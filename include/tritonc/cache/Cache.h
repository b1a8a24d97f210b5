//===- Cache.h - the on-disk compile cache and its configuration -*- C++ -*-===//
//
// Entry header of the cache stage (TOOLCHAIN.md "Cache"). The cache stores
// byte strings under 128-bit keys; what the bytes mean (checked IR, generated
// code) is the driver's business, so this stage depends only on `base`.
//
//   KeyBuilder key("l3");                  // XXH3-128 over delimited fields
//   key.add("source", bytes).add("opt", "2");
//   Cache cache = Cache::open(settings);   // never fails: degrades to disabled
//   if (auto hit = cache.load(Level::L3, key.finish())) ...
//   cache.store(Level::L3, k, payload, computeNs);
//
// Layout of a cache directory:
//   <dir>/l2/ab/cdef...       entries of a level, by key (first byte as folder)
//   <dir>/l3/ab/cdef...
//   <dir>/stats               counters, updated under flock(2) by every process
//
// Every entry starts with a header (magic, format version, level, compression,
// key, sizes, checksum of header and payload). A corrupt, truncated or foreign
// entry is discarded and counted, never used. Writes go to a unique temporary
// file renamed into place, so concurrent processes and a process killed
// mid-write never leave an entry that a reader trusts. The last use of an
// entry is its mtime (refreshed on every hit), which eviction orders by.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <array>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "tritonc/base/Expected.h"

namespace tritonc::cache {

// ---- keys ---------------------------------------------------------------------

/// A 128-bit content key (XXH3-128).
struct Key {
  uint64_t high = 0;
  uint64_t low = 0;
  /// 32 lowercase hex digits.
  std::string hex() const;
  friend bool operator==(const Key&, const Key&) = default;
};

/// XXH3-128 of some bytes, as a key (for hashes combined into other keys).
Key hashOf(std::string_view bytes);

/// Hashes named fields. Each field is written as its name, its length and its
/// bytes, so no two different field lists produce the same byte stream.
class KeyBuilder {
 public:
  /// `domain` separates key spaces ("l2", "l3") that hash the same fields.
  explicit KeyBuilder(std::string_view domain);
  KeyBuilder& add(std::string_view name, std::string_view value);
  KeyBuilder& addInt(std::string_view name, int64_t value);
  Key finish() const;

 private:
  std::string bytes_;
};

// ---- levels and entries ----------------------------------------------------------

enum class Level : uint8_t { L1 = 0, L2 = 1, L3 = 2 };
inline constexpr int kLevelCount = 3;
inline constexpr std::array<Level, kLevelCount> kLevels = {Level::L1, Level::L2, Level::L3};
/// "l1", "l2", "l3".
std::string_view levelName(Level level);
/// "in-memory", "checked IR", "generated code".
std::string_view levelDescription(Level level);
std::optional<Level> parseLevel(std::string_view name);

/// The on-disk format version; entries of another version are foreign.
inline constexpr uint16_t kEntryFormatVersion = 1;
inline constexpr size_t kEntryHeaderSize = 64;

/// What a valid entry holds.
struct Entry {
  Level level = Level::L3;
  Key key;
  uint64_t computeNs = 0;  ///< what producing the payload cost (for "time saved")
  std::string payload;     ///< decompressed
  bool fromMemory = false;  ///< a load's L1 hit (L1 counted it)
};

/// The bytes of an entry file: header + payload (zstd-compressed when that is
/// smaller and `compress` is set).
std::string encodeEntry(Level level, const Key& key, std::string_view payload,
                        uint64_t computeNs, bool compress = true);
/// Checks and decodes an entry file. `expected` (when given) must be its key.
/// Fails with a message saying what is wrong (truncated, bad magic, foreign
/// version, checksum mismatch, ...).
Expected<Entry> decodeEntry(std::string_view bytes, const Key* expected = nullptr);

/// A zstd frame of `bytes` at the entries' level, appended to `out`: for a
/// payload whose parts the threads that made them compress (a big file's
/// checked IR in groups), stored with `compress` false.
void appendCompressed(std::string_view bytes, std::string& out);
/// The bytes of one such frame; fails on a damaged frame and on one that
/// would decompress to more than `maxSize` bytes.
Expected<std::string> decompressFrame(std::string_view frame, size_t maxSize);

/// Several named blobs in one payload (a generated .py, .cu, .so, ...).
using Blobs = std::vector<std::pair<std::string, std::string>>;
std::string packBlobs(const Blobs& blobs);
/// Builds the packed form in place, for blobs written by their producer
/// directly into the payload (a large serialized module is not copied):
///   BlobWriter w(payload); w.add("diagnostics", d);
///   ir::serializeTo(module, w.begin("ir")); w.end();  w.finish();
class BlobWriter {
 public:
  explicit BlobWriter(std::string& out);
  void add(std::string_view name, std::string_view data);
  /// Starts a blob; append its bytes to the returned string, then call end().
  std::string& begin(std::string_view name);
  void end();
  /// Writes the blob count; the payload is complete.
  void finish();

 private:
  std::string& out_;
  size_t start_;
  size_t sizeAt_ = 0;
  uint64_t count_ = 0;
};
/// The blobs of a payload, as views into it (nothing is copied).
using BlobViews = std::vector<std::pair<std::string_view, std::string_view>>;
Expected<BlobViews> unpackBlobs(std::string_view payload);

// ---- configuration -----------------------------------------------------------------

/// The keys of config.yaml (TOOLCHAIN.md "Cache"), with their defaults.
struct Config {
  bool enabled = true;                  ///< cache.enabled
  std::string dir;                      ///< cache.dir (empty: the default location)
  uint64_t l2MaxSizeMb = 1024;          ///< cache.l2_ir.max_size_mb
  uint64_t l3MaxSizeMb = 4096;          ///< cache.l3_code.max_size_mb
  uint64_t l3TtlDays = 30;              ///< cache.l3_code.ttl_days (0: no expiry)
};

/// Every configuration key, in documentation order.
struct ConfigKey {
  const char* name;
  const char* kind;  ///< "bool", "size" (a non-negative integer) or "path"
  const char* help;
};
const std::vector<ConfigKey>& configKeys();

/// `$TRITONC_CONFIG`, else `~/.config/tritonc/config.yaml`; empty when no home
/// directory is known.
std::string configPath();
/// Reads the configuration file; a missing file (or /dev/null) gives the
/// defaults. A file that is not valid YAML, holds an unknown key or a value
/// of the wrong type, or is not a regular file (a FIFO, a directory: never
/// opened) is an Error (callers warn and use the defaults). `dir` comes with
/// `~`, `$VAR` and `${VAR}` expanded, relative to the file's directory.
Expected<Config> loadConfig(const std::string& path);
/// The value of `key` as `config get` prints it: the one in effect, with
/// TRITONC_CACHE_DIR and TRITONC_NO_CACHE applied (the default when unset).
/// A configuration file that cannot be used (as compile ignores it, with a
/// warning) gives the default value and sets `ignored` to why; something
/// other than a regular file at `path` is an Error.
Expected<std::string> configGet(const std::string& path, std::string_view key,
                                std::string* ignored);
/// Checks a value for a key; returns its normalized spelling ("yes" -> "true").
Expected<std::string> checkConfigValue(std::string_view key, std::string_view value);
/// Sets `key` in the file (created if needed, other keys kept), atomically;
/// through a symlink, in the file it names. Fails, leaving the file as it
/// was, when compiles would ignore the file after the edit (the new value
/// would never apply), and when `path` is not a regular file.
Expected<bool> configSet(const std::string& path, std::string_view key, std::string_view value);
/// Suggests a known key for a misspelled one (empty when none is close).
std::string closestConfigKey(std::string_view key);

// ---- the cache ---------------------------------------------------------------------

/// Where the cache is and whether to use it, resolved from flags, environment
/// and configuration.
struct Settings {
  bool enabled = true;
  std::string dir;
  std::string disabledBy;   ///< why it is disabled ("--no-cache", "TRITONC_NO_CACHE", ...)
  std::array<uint64_t, kLevelCount> maxBytes = {0, 0, 0};  ///< 0: unlimited
  std::array<uint64_t, kLevelCount> ttlDays = {0, 0, 0};   ///< 0: no expiry
  std::string configWarning;  ///< a config file that could not be used
  /// Who named the directory: "--cache-dir", "TRITONC_CACHE_DIR" or
  /// "cache.dir in <config>"; empty for the default location.
  std::string chosenBy;
};
/// Precedence: --no-cache / TRITONC_NO_CACHE / cache.enabled disable it; the
/// directory is --cache-dir, else $TRITONC_CACHE_DIR, else cache.dir, else
/// $XDG_CACHE_HOME/tritonc, else ~/.cache/tritonc.
Settings resolveSettings(const std::string& flagDir, bool flagNoCache);

/// Counters of one level, as stored in `<dir>/stats`.
struct LevelCounters {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t stores = 0;
  uint64_t corrupt = 0;    ///< entries found corrupt and discarded
  uint64_t evicted = 0;
  uint64_t savedNs = 0;    ///< estimated compile time saved by hits
  int64_t bytes = 0;       ///< running size estimate (exact after a scan)
  int64_t entries = 0;     ///< running count estimate (exact after a scan)
};
struct Counters {
  std::array<LevelCounters, kLevelCount> levels;
  uint64_t lastTtlSweep = 0;  ///< unix seconds
};

/// A cache directory opened by one process. Never fails: an unusable
/// directory leaves the cache disabled with `warning()` saying why. Its
/// lookups and stores may be called from several threads (`-j`).
class Cache {
 public:
  static Cache open(const Settings& settings);
  /// A disabled cache (for --no-cache).
  Cache();
  Cache(Cache&&) noexcept;
  Cache& operator=(Cache&&) noexcept;
  ~Cache();

  bool enabled() const {
    auto guard = lock();
    return enabled_;
  }
  const std::string& dir() const { return dir_; }
  /// Why the cache could not be used (empty when it works or was turned off).
  const std::string& warning() const { return warning_; }

  /// Keeps entries in memory too (L1), for processes that compile several units.
  void enableMemoryLevel() { memory_ = true; }

  /// A key one thread is computing: while it is held, another thread's
  /// `claim` of the same key waits, so -j workers compiling identical inputs
  /// compute it once and the others find it in L1 (a store puts the entry
  /// there at once, even one written in the background). Released by
  /// `release()` or the destructor.
  class Claim {
   public:
    Claim() = default;
    Claim(Claim&& other) noexcept : cache_(other.cache_), key_(std::move(other.key_)) {
      other.cache_ = nullptr;
    }
    Claim& operator=(Claim&&) = delete;
    ~Claim() { release(); }
    void release();

   private:
    friend class Cache;
    Claim(Cache* cache, std::string key) : cache_(cache), key_(std::move(key)) {}
    Cache* cache_ = nullptr;
    std::string key_;
  };
  /// Waits while another thread holds `key` at `level`, then holds it. Only
  /// with L1 on (otherwise nothing is shared and the claim is empty). A thread
  /// must not wait on one level while holding a claim another thread could
  /// want first: the driver claims only L2 keys, one per file.
  [[nodiscard]] Claim claim(Level level, const Key& key);

  /// Looks `key` up in L1 (when enabled), then on disk at `level` (L2 or L3).
  /// Counts a hit or a miss; a corrupt entry is removed, counted and missed.
  /// An intact entry that `usable` (when given) rejects is a miss as well
  /// (kept: another compile may use it). `corrupt` (when given) is set to
  /// what was wrong with a corrupt entry ("checksum mismatch"), and left
  /// empty otherwise.
  std::optional<Entry> load(Level level, const Key& key,
                            const std::function<bool(const Entry&)>& usable = {},
                            std::string* corrupt = nullptr);
  /// A loaded entry the caller could not use after all: its hit becomes a
  /// miss; `corrupt` (its payload does not decode) also counts it as corrupt
  /// and removes it, as `load` does with a damaged file.
  void rejectHit(Level level, const Entry& entry, bool corrupt);
  /// Stores an entry (L1 as well when enabled). Failure to write disables the
  /// cache for the rest of the process and sets `warning()`. An entry
  /// rewritten by every compile (the incremental pieces) is best stored
  /// uncompressed: a copy instead of zstd's ~2.5 ms per MB.
  void store(Level level, const Key& key, std::string_view payload, uint64_t computeNs,
             bool compress = true);
  /// The same, for a payload it may take: a large one is compressed and
  /// written by a background thread while the caller goes on (`wait()` or
  /// `flush()` joins it).
  void storeInBackground(Level level, const Key& key, std::string payload, uint64_t computeNs);
  /// Joins background stores (their failures disable the cache, as store's do).
  void wait();
  /// Adds to the time-saved estimate of a level.
  void addSaved(Level level, uint64_t ns);

  /// What this process did so far (for --timing and --verbose).
  const Counters& sessionCounters() const { return session_; }
  /// Writes this process's counters into `<dir>/stats` (also done by the
  /// destructor) and evicts when a level is over its limit.
  void flush();

  /// The entry file of a key (for tests and `validate`).
  std::string entryPath(Level level, const Key& key) const;

 private:
  bool enabled_ = false;
  bool memory_ = false;
  std::string dir_;
  std::string warning_;
  Settings settings_;
  Counters session_;
  std::unordered_map<std::string, Entry> l1_;
  /// Keys being computed (see Claim), and the signal that one was released.
  std::unordered_map<std::string, std::thread::id> claimed_;
  std::unique_ptr<std::condition_variable_any> released_ =
      std::make_unique<std::condition_variable_any>();
  void releaseClaim(const std::string& key);
  /// Serializes every public operation (a moved-from cache has none).
  std::unique_ptr<std::recursive_mutex> mutex_ = std::make_unique<std::recursive_mutex>();
  std::unique_lock<std::recursive_mutex> lock() const {
    return mutex_ ? std::unique_lock<std::recursive_mutex>(*mutex_)
                  : std::unique_lock<std::recursive_mutex>();
  }
  struct Background;
  std::vector<std::unique_ptr<Background>> background_;
  void disable(std::string why);
  /// Writes an encoded entry; returns the error (empty on success). An entry whose
  /// folders keep being removed while it is written (`rm -rf` of the cache by another
  /// job) is dropped: empty, with `*dropped` set.
  std::string writeEntry(const std::string& path, std::string_view bytes, bool* dropped) const;
  /// Counts a store; `remember` also puts the entry in L1 (when on).
  void countStore(Level level, const Key& key, size_t bytes, std::string_view payload,
                  uint64_t computeNs, bool remember = true);
};

// ---- maintenance (`tritonc cache ...`) -------------------------------------------

/// What is on disk for one level.
struct LevelUsage {
  uint64_t entries = 0;
  uint64_t bytes = 0;
};
/// Scans the entries of a level (the file sizes; no entry is read).
LevelUsage scanLevel(const std::string& dir, Level level);
/// Files where the cache keeps folders (a level, `l3`, or a shard, `l3/ab`):
/// they stop every store under them. `clear` and `validate` remove them.
std::vector<std::string> blockingFiles(const std::string& dir);
/// "<first blocking file> is not a directory; 'tritonc cache validate' (or 'cache clear')
/// removes it", or "" when none is in the way.
std::string blockingFileProblem(const std::string& dir);
/// The counters in `<dir>/stats` (zeros when absent).
Counters readCounters(const std::string& dir);

struct MaintenanceReport {
  uint64_t removed = 0;
  uint64_t removedBytes = 0;
  uint64_t checked = 0;
  uint64_t corrupt = 0;
  std::vector<std::string> corruptEntries;  ///< "l3/ab/cd...: checksum mismatch"
  /// Temporary files of writes that never finished (older than an hour),
  /// removed by prune and validate: "l3/ab/cd....tmp.<pid>.<n>".
  std::vector<std::string> staleTemporaries;
  uint64_t staleBytes = 0;
  uint64_t failed = 0;        ///< entries that could not be removed
  std::string firstFailure;   ///< the first of them and why ("<path>: Permission denied")
};
/// Removes every entry of the given levels (all when empty) and resets their counters.
Expected<MaintenanceReport> clear(const std::string& dir, const std::vector<Level>& levels);
/// Evicts least-recently-used entries: those unused for `maxAgeDays` (when
/// set), then the oldest until L2 + L3 fit in `maxBytes` (when set). With
/// neither, applies the configured limits of `settings`.
Expected<MaintenanceReport> prune(const Settings& settings, std::optional<uint64_t> maxAgeDays,
                                  std::optional<uint64_t> maxBytes);
/// Reads every entry; removes and reports the corrupt ones (and stale
/// temporary files).
Expected<MaintenanceReport> validate(const std::string& dir);

/// "500M", "2G", "1.5GiB", "4096" (bytes) -> bytes.
std::optional<uint64_t> parseSize(std::string_view text);
/// 1536 -> "1.5 KiB".
std::string formatSize(uint64_t bytes);

}  // namespace tritonc::cache

//===- CacheTest.cpp - keys, entries, eviction, IR serialization ------------===//
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "TestUtil.h"
#include "tritonc/base/FileSystem.h"
#include "tritonc/cache/Cache.h"
#include "tritonc/driver/Driver.h"
#include "tritonc/ir/IR.h"
#include "tritonc/ir/Verifier.h"
#include "tritonc/irgen/IRGen.h"
#include "tritonc/opt/Optimizer.h"

namespace tritonc {
namespace {

namespace fs = std::filesystem;
using cache::Key;
using cache::KeyBuilder;
using cache::Level;
using test::Checked;

// A fresh directory under the system's temporary directory, removed afterwards.
struct TempDir {
  std::string path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "tritonc-cache-test-XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~TempDir() { fs::remove_all(path); }
};

// ---- keys ---------------------------------------------------------------------------

TEST(CacheKey, HexIsThirtyTwoDigits) {
  Key key{0x0123456789abcdefULL, 0xfedcba9876543210ULL};
  EXPECT_EQ(key.hex(), "0123456789abcdeffedcba9876543210");
}

TEST(CacheKey, FieldsAreDelimited) {
  Key a = KeyBuilder("t").add("x", "ab").add("y", "c").finish();
  Key b = KeyBuilder("t").add("x", "a").add("y", "bc").finish();
  Key c = KeyBuilder("t").add("xa", "b").add("y", "c").finish();
  EXPECT_FALSE(a == b);
  EXPECT_FALSE(a == c);
  EXPECT_TRUE(a == KeyBuilder("t").add("x", "ab").add("y", "c").finish());
  // Domains separate key spaces.
  EXPECT_FALSE(KeyBuilder("l2").add("x", "1").finish() == KeyBuilder("l3").add("x", "1").finish());
}

CompileOptions baseOptions() {
  CompileOptions o;
  o.inputs = {"model.tri"};
  o.optLevel = '2';
  return o;
}

constexpr std::string_view kSource = "layer L(x: Tensor<float32, [4]>) -> Tensor<float32, [4]> { return x }\n";

TEST(CacheKey, EveryOutputFlagChangesTheGeneratedCodeKey) {
  std::string id = "tritonc 0.1.0 test";
  CompileOptions base = baseOptions();
  Key k0 = generatedCodeKey(base, kSource, id, "none", "a.tri");
  auto differs = [&](const CompileOptions& o, std::string_view source, std::string_view ident,
                     std::string_view nvcc) {
    return !(generatedCodeKey(o, source, ident, nvcc, "a.tri") == k0);
  };
  for (char level : {'0', '1', '3', 's'}) {
    CompileOptions o = base;
    o.optLevel = level;
    EXPECT_TRUE(differs(o, kSource, id, "none")) << "-O" << level;
  }
  CompileOptions entry = base;
  entry.entry = "L";
  EXPECT_TRUE(differs(entry, kSource, id, "none"));
  CompileOptions target = base;
  target.target = "cuda";
  EXPECT_TRUE(differs(target, kSource, id, "none"));
  CompileOptions all = base;
  all.target = "all";
  EXPECT_FALSE(generatedCodeKey(all, kSource, id, "none", "a.tri") ==
               generatedCodeKey(target, kSource, id, "none", "a.tri"));
  // The CUDA target's own flags, and the nvcc that builds the library.
  Key cuda = generatedCodeKey(target, kSource, id, "none", "a.tri");
  CompileOptions dtypes = target;
  dtypes.cudaDTypes = {"f16"};
  EXPECT_FALSE(generatedCodeKey(dtypes, kSource, id, "none", "a.tri") == cuda);
  CompileOptions archs = target;
  archs.cudaArchs = {"90"};
  EXPECT_FALSE(generatedCodeKey(archs, kSource, id, "none", "a.tri") == cuda);
  EXPECT_FALSE(generatedCodeKey(target, kSource, id, "/usr/bin/nvcc 10 1.2", "a.tri") == cuda);
  // The source and the compiler.
  EXPECT_TRUE(differs(base, std::string(kSource) + " ", id, "none"));
  EXPECT_TRUE(differs(base, kSource, "tritonc 0.1.1 test", "none"));
}

TEST(CacheKey, PathsAndReportingFlagsDoNotChangeTheKey) {
  std::string id = "tritonc test";
  CompileOptions base = baseOptions();
  Key k0 = generatedCodeKey(base, kSource, id, "none", "a.tri");
  Key l2 = checkedIRKey(base, kSource, id, "");
  CompileOptions o = base;
  o.inputs = {"/some/other/dir/renamed.tri"};
  o.output = "/elsewhere/out.py";
  o.quiet = true;
  o.timing = true;
  o.verbose = true;
  o.warningsAsErrors = true;  // warnings are stored and replayed, then promoted
  o.color = ColorMode::Always;
  o.diagnosticsFormat = DiagnosticsFormat::Json;
  o.cacheDir = "/tmp/x";
  o.jobs = 7;
  EXPECT_TRUE(generatedCodeKey(o, kSource, id, "none", "b/renamed.tri") == k0);
  EXPECT_TRUE(checkedIRKey(o, kSource, id, "") == l2);
  // The CUDA flags do not matter for --target pytorch.
  o.cudaDTypes = {"f16"};
  o.cudaArchs = {"70"};
  EXPECT_TRUE(generatedCodeKey(o, kSource, id, "none", "a.tri") == k0);
}

// One checked IR serves every level: it carries -O0's run-time shape checks
// (stripped above -O0) with the compiled file's name as a placeholder.
TEST(CacheKey, CheckedIRIsSharedAcrossLevelsAndTargets) {
  std::string id = "tritonc test";
  CompileOptions o1 = baseOptions(), o2 = baseOptions(), o3 = baseOptions(), o0 = baseOptions();
  o1.optLevel = '1';
  o3.optLevel = 's';
  o0.optLevel = '0';
  EXPECT_TRUE(checkedIRKey(o1, kSource, id, "") == checkedIRKey(o2, kSource, id, ""));
  EXPECT_TRUE(checkedIRKey(o3, kSource, id, "") == checkedIRKey(o2, kSource, id, ""));
  EXPECT_TRUE(checkedIRKey(o0, kSource, id, "") == checkedIRKey(o2, kSource, id, ""));
  CompileOptions target = baseOptions();
  target.target = "cuda";
  EXPECT_TRUE(checkedIRKey(target, kSource, id, "") == checkedIRKey(o2, kSource, id, ""));
  CompileOptions entry = baseOptions();
  entry.entry = "L";
  EXPECT_FALSE(checkedIRKey(entry, kSource, id, "") == checkedIRKey(o2, kSource, id, ""));
  // The imported files' checks name them.
  EXPECT_FALSE(checkedIRKey(o2, kSource, id, "lib/a.tri\n") ==
               checkedIRKey(o2, kSource, id, "other/a.tri\n"));
}

// -O0's run-time shape checks quote the input's name: the generated code's
// key has it there (only); the checked IR has a placeholder.
TEST(CacheKey, TheNameMattersOnlyForO0Code) {
  std::string id = "tritonc test";
  CompileOptions o0 = baseOptions();
  o0.optLevel = '0';
  EXPECT_FALSE(generatedCodeKey(o0, kSource, id, "none", "a.tri") ==
               generatedCodeKey(o0, kSource, id, "none", "b.tri"));
  CompileOptions o2 = baseOptions();
  EXPECT_TRUE(generatedCodeKey(o2, kSource, id, "none", "a.tri") ==
              generatedCodeKey(o2, kSource, id, "none", "b.tri"));
  // The imported files' names too (their checks quote them), only at -O0.
  EXPECT_FALSE(generatedCodeKey(o0, kSource, id, "none", "a.tri", "dir1/lib.tri\n") ==
               generatedCodeKey(o0, kSource, id, "none", "a.tri", "dir2/lib.tri\n"));
  EXPECT_TRUE(generatedCodeKey(o2, kSource, id, "none", "a.tri", "dir1/lib.tri\n") ==
              generatedCodeKey(o2, kSource, id, "none", "a.tri", "dir2/lib.tri\n"));
}

// ---- entries ---------------------------------------------------------------------------

std::string somePayload(size_t size) {
  std::string text;
  for (size_t i = 0; text.size() < size; ++i) text += "self.conv" + std::to_string(i % 97) + " = x\n";
  text.resize(size);
  return text;
}

TEST(CacheEntry, RoundTripsSmallAndCompressedPayloads) {
  Key key{1, 2};
  for (size_t size : {0, 1, 255, 256, 5000, 200000}) {
    std::string payload = somePayload(size);
    std::string bytes = cache::encodeEntry(Level::L3, key, payload, 12345);
    if (size >= 5000) {
      EXPECT_LT(bytes.size(), payload.size() / 2) << "compressed";
    }
    Expected<cache::Entry> entry = cache::decodeEntry(bytes, &key);
    ASSERT_TRUE(entry) << entry.error().message;
    EXPECT_EQ(entry->payload, payload);
    EXPECT_EQ(entry->computeNs, 12345u);
    EXPECT_EQ(entry->level, Level::L3);
  }
}

TEST(CacheEntry, EveryFlippedByteIsDetected) {
  Key key{7, 9};
  for (size_t size : {100, 3000}) {
    std::string bytes = cache::encodeEntry(Level::L2, key, somePayload(size), 1);
    for (size_t i = 0; i < bytes.size(); ++i) {
      for (unsigned char bit : {0x01, 0x80}) {
        std::string damaged = bytes;
        damaged[i] = static_cast<char>(damaged[i] ^ bit);
        EXPECT_FALSE(cache::decodeEntry(damaged, &key)) << "byte " << i << " of " << bytes.size();
      }
    }
  }
}

TEST(CacheEntry, TruncationsForeignVersionsAndOtherKeysAreRejected) {
  Key key{3, 4};
  std::string bytes = cache::encodeEntry(Level::L3, key, somePayload(2000), 1);
  for (size_t n = 0; n < bytes.size(); n += 7) {
    EXPECT_FALSE(cache::decodeEntry(bytes.substr(0, n), &key)) << n;
  }
  EXPECT_FALSE(cache::decodeEntry(bytes + "x", &key));
  Key other{3, 5};
  Expected<cache::Entry> wrong = cache::decodeEntry(bytes, &other);
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message.find("another key"), std::string::npos);
  std::string foreign = bytes;
  foreign[8] = 2;  // format version 2
  Expected<cache::Entry> f = cache::decodeEntry(foreign, &key);
  ASSERT_FALSE(f);
  EXPECT_NE(f.error().message.find("foreign"), std::string::npos);
  EXPECT_FALSE(cache::decodeEntry("garbage that is long enough to hold a header, or is it? ....."));
}

TEST(CacheEntry, BlobsRoundTripAndRejectMalformedPayloads) {
  cache::Blobs blobs = {{"py", "print(1)\n"}, {"empty", ""}, {"so", std::string("\0\1\2", 3)}};
  std::string packed = cache::packBlobs(blobs);
  // Written in place by a producer, the bytes are the same.
  std::string inPlace;
  cache::BlobWriter writer(inPlace);
  writer.add("py", "print(1)\n");
  writer.begin("empty");
  writer.end();
  writer.begin("so").append(std::string("\0\1\2", 3));
  writer.end();
  writer.finish();
  EXPECT_EQ(inPlace, packed);
  Expected<cache::BlobViews> back = cache::unpackBlobs(packed);
  ASSERT_TRUE(back);
  ASSERT_EQ(back->size(), blobs.size());
  for (size_t i = 0; i < blobs.size(); ++i) {
    EXPECT_EQ((*back)[i].first, blobs[i].first);
    EXPECT_EQ((*back)[i].second, blobs[i].second);
  }
  for (size_t n = 0; n < packed.size(); ++n) {
    EXPECT_FALSE(cache::unpackBlobs(packed.substr(0, n))) << n;
  }
  EXPECT_FALSE(cache::unpackBlobs(packed + "z"));
}

// ---- sizes and counters -------------------------------------------------------------------

TEST(CacheSizes, ParseAndFormat) {
  EXPECT_EQ(cache::parseSize("4096"), 4096u);
  EXPECT_EQ(cache::parseSize("3K"), 3072u);
  EXPECT_EQ(cache::parseSize("500M"), 500u * 1024 * 1024);
  EXPECT_EQ(cache::parseSize("2G"), 2ull * 1024 * 1024 * 1024);
  EXPECT_EQ(cache::parseSize("1.5GiB"), 1536ull * 1024 * 1024);
  EXPECT_EQ(cache::parseSize("10mb"), 10u * 1024 * 1024);
  EXPECT_EQ(cache::parseSize("0.5M"), 512u * 1024);
  // A fraction of a byte is a slip (for `0.5G`), not a size that prunes everything.
  EXPECT_EQ(cache::parseSize(".5G"), 512ull * 1024 * 1024);
  EXPECT_EQ(cache::parseSize("1P"), 1ull << 50);
  EXPECT_EQ(cache::parseSize("2E"), 2ull << 60);
  // Past 16 EiB: the largest size, as the config's numbers saturate.
  EXPECT_EQ(cache::parseSize("99999999999999999999"), UINT64_MAX);
  EXPECT_EQ(cache::parseSize("64E"), UINT64_MAX);
  for (const char* bad : {"", "M", ".", ".G", "-1", "1.2.3", "12X", "1e9", "0.5", "2.0", "0.5B"}) {
    EXPECT_FALSE(cache::parseSize(bad)) << bad;
  }
  EXPECT_EQ(cache::formatSize(12), "12 B");
  EXPECT_EQ(cache::formatSize(1536), "1.5 KiB");
  EXPECT_EQ(cache::formatSize(3ull << 30), "3.0 GiB");
}

// ---- the cache in a directory ----------------------------------------------------------------

cache::Settings settingsFor(const std::string& dir) {
  cache::Settings s;
  s.dir = dir;
  return s;
}

TEST(CacheStore, StoresLoadsAndCountsAcrossProcesses) {
  TempDir tmp;
  Key key = KeyBuilder("l3").add("x", "1").finish();
  {
    cache::Cache c = cache::Cache::open(settingsFor(tmp.path));
    ASSERT_TRUE(c.enabled()) << c.warning();
    EXPECT_FALSE(c.load(Level::L3, key));
    c.store(Level::L3, key, "payload", 1000000);
    std::optional<cache::Entry> hit = c.load(Level::L3, key);
    ASSERT_TRUE(hit);
    EXPECT_EQ(hit->payload, "payload");
    EXPECT_EQ(hit->computeNs, 1000000u);
  }  // the destructor writes the counters
  {
    cache::Cache c = cache::Cache::open(settingsFor(tmp.path));
    EXPECT_TRUE(c.load(Level::L3, key));
  }
  cache::Counters counters = cache::readCounters(tmp.path);
  const cache::LevelCounters& l3 = counters.levels[2];
  EXPECT_EQ(l3.hits, 2u);
  EXPECT_EQ(l3.misses, 1u);
  EXPECT_EQ(l3.stores, 1u);
  EXPECT_EQ(cache::scanLevel(tmp.path, Level::L3).entries, 1u);
}

// An entry the caller cannot use (a big file's L2 IR in groups, for a
// compile that needs the whole file's) is a miss, and stays for others.
TEST(CacheStore, AnEntryTheCallerRejectsIsAMissAndIsKept) {
  TempDir tmp;
  Key key = KeyBuilder("l2").add("x", "2").finish();
  cache::Cache c = cache::Cache::open(settingsFor(tmp.path));
  c.store(Level::L2, key, "groups", 1);
  auto wholeOnly = [](const cache::Entry& e) { return e.payload != "groups"; };
  EXPECT_FALSE(c.load(Level::L2, key, wholeOnly));
  EXPECT_EQ(c.sessionCounters().levels[1].misses, 1u);
  EXPECT_EQ(c.sessionCounters().levels[1].hits, 0u);
  EXPECT_EQ(c.sessionCounters().levels[1].corrupt, 0u);
  EXPECT_TRUE(fs::exists(c.entryPath(Level::L2, key)));
  std::optional<cache::Entry> hit = c.load(Level::L2, key);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->payload, "groups");
  EXPECT_EQ(c.sessionCounters().levels[1].hits, 1u);
  // The same from L1: rejected there without a second lookup on disk.
  c.enableMemoryLevel();
  ASSERT_TRUE(c.load(Level::L2, key));  // now in L1 too
  EXPECT_FALSE(c.load(Level::L2, key, wholeOnly));
  EXPECT_EQ(c.sessionCounters().levels[0].misses, 2u);
  EXPECT_EQ(c.sessionCounters().levels[1].misses, 2u) << "rejected in L1, missed in L2";
  EXPECT_EQ(c.sessionCounters().levels[1].hits, 2u);
}

// An entry whose payload the caller cannot finish from after all: its hit
// becomes a miss; one that does not decode is also corrupt and removed.
TEST(CacheStore, RejectedHitsBecomeMissesAndDamagedOnesAreRemoved) {
  TempDir tmp;
  Key key = KeyBuilder("l2").add("x", "4").finish();
  cache::Cache c = cache::Cache::open(settingsFor(tmp.path));
  c.store(Level::L2, key, "groups", 1);
  std::optional<cache::Entry> hit = c.load(Level::L2, key);
  ASSERT_TRUE(hit);
  c.rejectHit(Level::L2, *hit, /*corrupt=*/false);
  const cache::LevelCounters& l2 = c.sessionCounters().levels[1];
  EXPECT_EQ(l2.hits, 0u);
  EXPECT_EQ(l2.misses, 1u);
  EXPECT_EQ(l2.corrupt, 0u);
  EXPECT_TRUE(fs::exists(c.entryPath(Level::L2, key))) << "kept for the compiles that can use it";
  hit = c.load(Level::L2, key);
  ASSERT_TRUE(hit);
  c.rejectHit(Level::L2, *hit, /*corrupt=*/true);
  EXPECT_EQ(l2.hits, 0u);
  EXPECT_EQ(l2.misses, 2u);
  EXPECT_EQ(l2.corrupt, 1u);
  EXPECT_FALSE(fs::exists(c.entryPath(Level::L2, key)));
  EXPECT_FALSE(c.load(Level::L2, key));
  // An L1 hit rejected: L1's hit becomes its miss, and L2 misses too.
  c.enableMemoryLevel();
  c.store(Level::L2, key, "groups", 1);
  hit = c.load(Level::L2, key);
  ASSERT_TRUE(hit && hit->fromMemory);
  c.rejectHit(Level::L2, *hit, /*corrupt=*/true);
  EXPECT_EQ(c.sessionCounters().levels[0].hits, 0u);
  EXPECT_EQ(c.sessionCounters().levels[0].misses, 1u);
  EXPECT_EQ(l2.misses, 4u) << "the lookup after the removal, and this rejection";
  EXPECT_FALSE(c.load(Level::L2, key)) << "removed from L1 and from disk";
}

TEST(CacheEntry, CompressedFramesRoundTripAndRejectDamage) {
  std::string payload = somePayload(100000);
  std::string frame = "prefix";
  cache::appendCompressed(payload, frame);
  std::string_view body = std::string_view(frame).substr(6);
  EXPECT_LT(body.size(), payload.size() / 2);
  Expected<std::string> back = cache::decompressFrame(body, payload.size());
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, payload);
  EXPECT_FALSE(cache::decompressFrame(body, payload.size() - 1)) << "over the limit";
  EXPECT_FALSE(cache::decompressFrame(body.substr(0, body.size() - 1), payload.size()));
  EXPECT_FALSE(cache::decompressFrame(std::string(body) + "x", payload.size()));
  EXPECT_FALSE(cache::decompressFrame("", payload.size()));
}

TEST(CacheStore, CorruptEntriesAreDiscardedAndCounted) {
  TempDir tmp;
  Key key = KeyBuilder("l2").add("x", "2").finish();
  cache::Cache c = cache::Cache::open(settingsFor(tmp.path));
  c.store(Level::L2, key, somePayload(1000), 1);
  std::string path = c.entryPath(Level::L2, key);
  std::optional<std::string> bytes = readWholeFile(path);
  ASSERT_TRUE(bytes);
  (*bytes)[bytes->size() - 3] ^= 0x10;
  std::string error;
  ASSERT_TRUE(writeFileAtomically(path, *bytes, &error));
  EXPECT_FALSE(c.load(Level::L2, key));
  EXPECT_FALSE(fs::exists(path)) << "a corrupt entry is removed";
  EXPECT_EQ(c.sessionCounters().levels[1].corrupt, 1u);
  // An entry of another level under this level's name is corrupt too.
  c.store(Level::L3, key, "x", 1);
  fs::create_directories(fs::path(path).parent_path());
  fs::copy_file(c.entryPath(Level::L3, key), path);
  EXPECT_FALSE(c.load(Level::L2, key));
  EXPECT_EQ(c.sessionCounters().levels[1].corrupt, 2u);
}

// `-o /dev/null` and `-o fifo` write into the file, as clang does: a rename
// would replace the device node (as root) with a regular file. The FIFO's
// read end is opened first (non-blocking), so that a write that replaced the
// FIFO instead shows as nothing received, never as a hang.
TEST(OutputFiles, DevicesAndFifosAreWrittenIntoNotReplaced) {
  TempDir tmp;
  std::string fifo = tmp.path + "/out.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(reader, 0);
  auto received = [&] {
    std::string out(256, '\0');
    ssize_t n = ::read(reader, out.data(), out.size());
    out.resize(n > 0 ? static_cast<size_t>(n) : 0);
    return out;
  };
  auto stillFifo = [&] {
    struct stat st {};
    return ::stat(fifo.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
  };
  std::string error;
  EXPECT_TRUE(writeFileAtomically(fifo, "print(1)\n", &error)) << error;
  EXPECT_EQ(received(), "print(1)\n");
  EXPECT_TRUE(stillFifo());
  // Several outputs: the FIFO is written at commit, no temporary next to it.
  FileTransaction transaction;
  ASSERT_TRUE(transaction.stage(fifo, "x = 1\n", &error)) << error;
  ASSERT_TRUE(transaction.stage(tmp.path + "/a.py", "y = 2\n", &error)) << error;
  std::string failed;
  EXPECT_TRUE(transaction.commit(&failed, &error)) << failed << ": " << error;
  EXPECT_EQ(received(), "x = 1\n");
  EXPECT_TRUE(stillFifo());
  ::close(reader);
  EXPECT_EQ(readWholeFile(tmp.path + "/a.py").value_or(""), "y = 2\n");
  size_t files = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(tmp.path)) ++files;
  EXPECT_EQ(files, 2u) << "no temporary file is left";
}

// Every name in `dir`, sorted.
std::vector<std::string> namesIn(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// A commit that fails half-way puts back what it replaced, created or
// removed before the failure: the paths hold what they held before.
TEST(OutputFiles, AFailedCommitPutsBackTheFilesBeforeIt) {
  TempDir tmp;
  std::string replaced = tmp.path + "/a.py", created = tmp.path + "/b.py",
              removed = tmp.path + "/c.so", blocked = tmp.path + "/d.py";
  std::string error, failed;
  ASSERT_TRUE(writeFileAtomically(replaced, "old a\n", &error)) << error;
  ASSERT_TRUE(writeFileAtomically(removed, "old c\n", &error)) << error;
  FileTransaction transaction;
  ASSERT_TRUE(transaction.stage(replaced, "new a\n", &error)) << error;
  ASSERT_TRUE(transaction.stage(created, "new b\n", &error)) << error;
  transaction.stageRemoval(removed);
  ASSERT_TRUE(transaction.stage(blocked, "new d\n", &error)) << error;
  // A directory (not empty) that appears at the last path: its rename fails.
  fs::create_directories(blocked + "/inside");
  EXPECT_FALSE(transaction.commit(&failed, &error));
  EXPECT_EQ(failed, blocked);
  EXPECT_EQ(readWholeFile(replaced).value_or(""), "old a\n");
  EXPECT_FALSE(fs::exists(created)) << "a file the commit created is left";
  EXPECT_EQ(readWholeFile(removed).value_or(""), "old c\n");
  EXPECT_EQ(namesIn(tmp.path), (std::vector<std::string>{"a.py", "c.so", "d.py"}))
      << "temporary files are left";
}

// SIGINT/SIGTERM/SIGHUP/SIGQUIT while outputs are staged remove their
// temporary files (as clang's RemoveFileOnSignal does) and still end the
// process by the signal.
TEST(OutputFiles, ASignalRemovesTheTemporaryFiles) {
  for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) {
    TempDir tmp;
    std::string path = tmp.path + "/m.py";
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      struct rlimit noCore {0, 0};
      ::setrlimit(RLIMIT_CORE, &noCore);  // SIGQUIT would dump one
      std::string error;
      FileTransaction transaction;
      bool staged = transaction.stage(path, "print(1)\n", &error);
      bool temporaryExists = namesIn(tmp.path).size() == 1;
      if (staged && temporaryExists) ::raise(signal);
      ::_exit(42);  // staging failed or the signal did not end the process
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status)) << "signal " << signal << ": exit " << WEXITSTATUS(status);
    EXPECT_EQ(WTERMSIG(status), signal);
    EXPECT_EQ(namesIn(tmp.path), std::vector<std::string>{}) << "signal " << signal;
  }
}

TEST(CacheStore, LargeEntriesAreStoredInTheBackground) {
  TempDir tmp;
  std::string large = somePayload(600 * 1024);
  Key big = KeyBuilder("l2").add("x", "big").finish();
  Key small = KeyBuilder("l2").add("x", "small").finish();
  {
    cache::Cache c = cache::Cache::open(settingsFor(tmp.path));
    c.storeInBackground(Level::L2, big, large, 5);
    c.storeInBackground(Level::L2, small, "tiny", 5);  // stored at once
    EXPECT_TRUE(fs::exists(c.entryPath(Level::L2, small)));
    c.wait();
    EXPECT_EQ(c.sessionCounters().levels[1].stores, 2u);
    std::optional<cache::Entry> hit = c.load(Level::L2, big);
    ASSERT_TRUE(hit);
    EXPECT_EQ(hit->payload, large);
    c.storeInBackground(Level::L2, KeyBuilder("l2").add("x", "late").finish(), large, 5);
  }  // the destructor joins and counts the last one
  EXPECT_EQ(cache::readCounters(tmp.path).levels[1].stores, 3u);
  EXPECT_EQ(cache::scanLevel(tmp.path, Level::L2).entries, 3u);
}

TEST(CacheStore, MemoryLevelServesRepeatedLookups) {
  TempDir tmp;
  Key key = KeyBuilder("l3").add("x", "3").finish();
  cache::Cache c = cache::Cache::open(settingsFor(tmp.path));
  c.enableMemoryLevel();
  c.store(Level::L3, key, "abc", 1);
  fs::remove(c.entryPath(Level::L3, key));
  std::optional<cache::Entry> hit = c.load(Level::L3, key);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->payload, "abc");
  EXPECT_EQ(c.sessionCounters().levels[0].hits, 1u);
}

// Two threads after one key: the second waits for the first's store and
// finds the entry in L1, even one the first writes in the background.
TEST(CacheStore, ClaimsMakeConcurrentComputationsOfOneKeyWait) {
  TempDir tmp;
  Key key = KeyBuilder("l2").add("x", "shared").finish();
  std::string large = somePayload(600 * 1024);
  cache::Cache c = cache::Cache::open(settingsFor(tmp.path));
  c.enableMemoryLevel();
  std::optional<cache::Cache::Claim> first(c.claim(Level::L2, key));
  ASSERT_FALSE(c.load(Level::L2, key));
  std::atomic<bool> waited{false};
  std::optional<cache::Entry> seen;
  std::thread second([&] {
    cache::Cache::Claim claim = c.claim(Level::L2, key);
    waited = true;
    seen = c.load(Level::L2, key);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(waited.load()) << "the second claim did not wait for the first";
  c.storeInBackground(Level::L2, key, large, 5);
  first.reset();
  second.join();
  EXPECT_TRUE(waited.load());
  ASSERT_TRUE(seen);
  EXPECT_EQ(seen->payload, large);
  EXPECT_EQ(c.sessionCounters().levels[0].hits, 1u);
  // A thread's second claim of a key it holds does not wait for itself.
  cache::Cache::Claim again = c.claim(Level::L2, key);
  cache::Cache::Claim nested = c.claim(Level::L2, key);
  nested.release();
  // Without L1 nothing is shared and claims never wait.
  cache::Cache plain = cache::Cache::open(settingsFor(tmp.path));
  cache::Cache::Claim a = plain.claim(Level::L2, key);
  std::thread other([&] { cache::Cache::Claim b = plain.claim(Level::L2, key); });
  other.join();
}

TEST(CacheStore, UnusableDirectoryDisablesWithAWarning) {
  TempDir tmp;
  std::string file = tmp.path + "/file";
  std::ofstream(file) << "x";
  cache::Cache c = cache::Cache::open(settingsFor(file + "/cache"));
  EXPECT_FALSE(c.enabled());
  EXPECT_NE(c.warning().find("cannot create"), std::string::npos) << c.warning();
  EXPECT_FALSE(c.load(Level::L3, Key{}));
  c.store(Level::L3, Key{}, "x", 1);  // does nothing, does not crash
}

void setAge(const std::string& path, int64_t secondsAgo) {
  struct timespec times[2];
  clock_gettime(CLOCK_REALTIME, &times[0]);
  times[0].tv_sec -= secondsAgo;
  times[1] = times[0];
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
}

TEST(CacheEviction, PruneKeepsTheMostRecentlyUsedWithinTheLimit) {
  TempDir tmp;
  cache::Cache c = cache::Cache::open(settingsFor(tmp.path));
  std::vector<std::string> paths;
  for (int i = 0; i < 10; ++i) {
    Key key = KeyBuilder("l3").addInt("i", i).finish();
    c.store(Level::L3, key, std::string(1000, static_cast<char>('a' + i)), 1);
    paths.push_back(c.entryPath(Level::L3, key));
    setAge(paths.back(), (10 - i) * 100);  // entry 9 is the most recently used
  }
  uint64_t entrySize = fs::file_size(paths[0]);
  Expected<cache::MaintenanceReport> report =
      cache::prune(settingsFor(tmp.path), std::nullopt, entrySize * 4);
  ASSERT_TRUE(report);
  EXPECT_EQ(report->removed, 6u);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(fs::exists(paths[i]), i >= 6) << i;
  // By age: entries unused for more than a day.
  setAge(paths[6], 3 * 86400);
  setAge(paths[7], 2 * 86400);
  report = cache::prune(settingsFor(tmp.path), 1, std::nullopt);
  ASSERT_TRUE(report);
  EXPECT_EQ(report->removed, 2u);
  EXPECT_TRUE(fs::exists(paths[8]) && fs::exists(paths[9]));
}

TEST(CacheEviction, StoresOverTheLimitEvictDownToNinetyPercent) {
  TempDir tmp;
  cache::Settings s = settingsFor(tmp.path);
  s.maxBytes[2] = 20000;
  std::mt19937 rng(1);
  for (int i = 0; i < 40; ++i) {
    std::string incompressible(1000, '\0');
    for (char& ch : incompressible) ch = static_cast<char>(rng());
    cache::Cache c = cache::Cache::open(s);
    c.store(Level::L3, KeyBuilder("l3").addInt("i", i).finish(), incompressible, 1);
  }
  cache::LevelUsage usage = cache::scanLevel(tmp.path, Level::L3);
  EXPECT_LE(usage.bytes, 20000u);
  EXPECT_GT(usage.entries, 5u);
  EXPECT_GT(cache::readCounters(tmp.path).levels[2].evicted, 0u);
}

TEST(CacheValidate, RemovesCorruptEntriesAndStaleTemporaries) {
  TempDir tmp;
  cache::Cache c = cache::Cache::open(settingsFor(tmp.path));
  Key good = KeyBuilder("l3").add("k", "good").finish();
  Key bad = KeyBuilder("l3").add("k", "bad").finish();
  c.store(Level::L3, good, "good", 1);
  c.store(Level::L3, bad, "bad", 1);
  std::ofstream(c.entryPath(Level::L3, bad), std::ios::trunc) << "TRICACHE truncated";
  std::string stale = c.entryPath(Level::L3, good) + ".tmp.99999.0";
  std::ofstream(stale) << "partial";
  setAge(stale, 7200);
  Expected<cache::MaintenanceReport> report = cache::validate(tmp.path);
  ASSERT_TRUE(report);
  EXPECT_EQ(report->checked, 2u);
  EXPECT_EQ(report->corrupt, 1u);
  EXPECT_TRUE(fs::exists(c.entryPath(Level::L3, good)));
  EXPECT_FALSE(fs::exists(c.entryPath(Level::L3, bad)));
  EXPECT_FALSE(fs::exists(stale));
}

// ---- diagnostics and IR ------------------------------------------------------------------------

TEST(CacheRecords, DiagnosticsRoundTrip) {
  SourceBuffer source = SourceBuffer::fromString("m.tri", "let x = 1 < 2 < 3\n");
  Diagnostic d;
  d.kind = Diag::ChainedComparison;
  d.severity = Severity::Warning;
  d.source = &source;
  d.range = {8, 17};
  d.message = "message";
  d.notes.push_back(DiagnosticNote{&source, {8, 9}, "located note"});
  d.notes.push_back(DiagnosticNote{nullptr, {}, "plain note"});
  Diagnostic path;
  path.kind = Diag::CudaNotCompiled;
  path.severity = Severity::Note;
  path.path = "x.cu";
  path.message = "m2";
  std::string bytes = encodeDiagnostics({d, path});
  Expected<std::vector<Diagnostic>> back = decodeDiagnostics(bytes, source);
  ASSERT_TRUE(back);
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ(TextDiagnosticConsumer::render((*back)[0], false),
            TextDiagnosticConsumer::render(d, false));
  EXPECT_EQ(TextDiagnosticConsumer::render((*back)[1], false),
            TextDiagnosticConsumer::render(path, false));
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(decodeDiagnostics(bytes.substr(0, n), source)) << n;
  }
  // A range outside the source (another file's entry) is rejected.
  SourceBuffer shorter = SourceBuffer::fromString("m.tri", "let x = 1\n");
  EXPECT_FALSE(decodeDiagnostics(bytes, shorter));
}

std::vector<fs::path> exampleFiles() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(TRITONC_SOURCE_DIR "/examples")) {
    if (entry.path().extension() == ".tri") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(IRSerialization, EveryExampleRoundTripsBeforeAndAfterOptimization) {
  std::vector<fs::path> files = exampleFiles();
  ASSERT_GE(files.size(), 10u);
  for (const fs::path& file : files) {
    std::ifstream in(file);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    Checked checked(text);
    ASSERT_FALSE(checked.diags.hasErrors()) << file;
    ir::Module module = generateIR(checked.module, IRGenOptions{});
    for (int round = 0; round < 2; ++round) {
      std::string bytes = ir::serialize(module);
      Interner fresh;
      Expected<ir::Module> back = ir::deserialize(bytes, fresh);
      ASSERT_TRUE(back) << file << ": " << back.error().message;
      EXPECT_EQ(back->print(), module.print()) << file;
      EXPECT_TRUE(ir::verify(*back).empty()) << file;
      EXPECT_EQ(ir::serialize(*back), bytes) << file;
      // The optimizer runs on a deserialized module as on the original.
      OptimizerOptions opt;
      opt.level = '2';
      ASSERT_TRUE(optimize(*back, opt).empty());
      ASSERT_TRUE(optimize(module, opt).empty());
      EXPECT_EQ(back->print(), module.print()) << file;
    }
  }
}

TEST(IRSerialization, DamagedBytesFailCleanly) {
  Checked checked{std::string(kSource)};
  ir::Module module = generateIR(checked.module, IRGenOptions{});
  std::string bytes = ir::serialize(module);
  for (size_t n = 0; n < bytes.size(); ++n) {
    Interner fresh;
    EXPECT_FALSE(ir::deserialize(std::string_view(bytes).substr(0, n), fresh)) << n;
  }
  // Random damage must never crash; what still reads back must pass the verifier
  // or fail it with messages (never undefined behaviour under ASan/UBSan).
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string damaged = bytes;
    damaged[rng() % damaged.size()] = static_cast<char>(rng());
    Interner fresh;
    Expected<ir::Module> back = ir::deserialize(damaged, fresh);
    (void)back;
  }
  Interner used;
  used.intern("x");
  EXPECT_FALSE(ir::deserialize(bytes, used)) << "needs an empty interner";
}

}  // namespace
}  // namespace tritonc

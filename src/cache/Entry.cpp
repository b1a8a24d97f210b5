//===- Entry.cpp - keys, entry files and payload blobs ----------------------===//
#include <xxhash.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>

#include "tritonc/base/Check.h"
#include "tritonc/cache/Cache.h"

namespace tritonc::cache {

// ---- keys -------------------------------------------------------------------------

std::string Key::hex() const {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(32, '0');
  for (int i = 0; i < 16; ++i) {
    out[15 - i] = kDigits[(high >> (4 * i)) & 0xf];
    out[31 - i] = kDigits[(low >> (4 * i)) & 0xf];
  }
  return out;
}

namespace {

void appendU64(std::string& out, uint64_t value) {
  char bytes[8];
  std::memcpy(bytes, &value, 8);
  out.append(bytes, 8);
}

uint64_t readU64(const char* p) {
  uint64_t value;
  std::memcpy(&value, p, 8);
  return value;
}

}  // namespace

KeyBuilder::KeyBuilder(std::string_view domain) { add("domain", domain); }

KeyBuilder& KeyBuilder::add(std::string_view name, std::string_view value) {
  // name length, name, value length, value: self-delimiting.
  appendU64(bytes_, name.size());
  bytes_.append(name);
  appendU64(bytes_, value.size());
  bytes_.append(value);
  return *this;
}

KeyBuilder& KeyBuilder::addInt(std::string_view name, int64_t value) {
  return add(name, std::to_string(value));
}

Key KeyBuilder::finish() const {
  XXH128_hash_t h = XXH3_128bits(bytes_.data(), bytes_.size());
  return Key{h.high64, h.low64};
}

Key hashOf(std::string_view bytes) {
  XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  return Key{h.high64, h.low64};
}

// ---- levels -----------------------------------------------------------------------

std::string_view levelName(Level level) {
  switch (level) {
    case Level::L1: return "l1";
    case Level::L2: return "l2";
    case Level::L3: return "l3";
  }
  return "?";
}

std::string_view levelDescription(Level level) {
  switch (level) {
    case Level::L1: return "in-memory";
    case Level::L2: return "checked IR";
    case Level::L3: return "generated code";
  }
  return "?";
}

std::optional<Level> parseLevel(std::string_view name) {
  for (Level level : kLevels) {
    if (name == levelName(level)) return level;
  }
  return std::nullopt;
}

// ---- entries ------------------------------------------------------------------------
//
// Header (64 bytes, native byte order; a cache is local to a machine):
//    0  magic "TRICACHE"
//    8  u16 format version, u8 level, u8 compression (0 none, 1 zstd), u32 header size
//   16  key (high, low)
//   32  u64 payload size once decompressed
//   40  u64 stored payload size
//   48  u64 compute time (ns)
//   56  u64 XXH3-64 of the stored payload, seeded with XXH3-64 of bytes [0, 56)

namespace {

constexpr char kMagic[8] = {'T', 'R', 'I', 'C', 'A', 'C', 'H', 'E'};
constexpr uint8_t kCompressionNone = 0;
constexpr uint8_t kCompressionZstd = 1;
// zstd's fastest regular level: generated code compresses 4-6x at ~400 MB/s.
constexpr int kZstdLevel = 1;

/// Compresses `bytes` as one zstd frame (its content size in the header) onto
/// the end of `out`, which grows as the frame does: a ZSTD_compressBound-sized
/// buffer would be zero-filled whole, a second copy of a large payload in
/// memory (a big file's checked IR: tens of MiB), for output that is a
/// fraction of it. Returns the frame's size, or 0 when zstd failed.
size_t compressOnto(std::string_view bytes, std::string& out) {
  struct Context {
    ZSTD_CCtx* cctx = ZSTD_createCCtx();
    ~Context() { ZSTD_freeCCtx(cctx); }
  } context;
  if (context.cctx == nullptr ||
      ZSTD_isError(ZSTD_CCtx_setParameter(context.cctx, ZSTD_c_compressionLevel, kZstdLevel)) ||
      ZSTD_isError(ZSTD_CCtx_setPledgedSrcSize(context.cctx, bytes.size()))) {
    return 0;
  }
  size_t start = out.size();
  ZSTD_inBuffer in{bytes.data(), bytes.size(), 0};
  size_t chunk = std::max<size_t>(ZSTD_CStreamOutSize(), bytes.size() / 4);
  for (;;) {
    size_t at = out.size();
    out.resize(at + chunk);
    ZSTD_outBuffer o{out.data() + at, chunk, 0};
    size_t left = ZSTD_compressStream2(context.cctx, &o, &in, ZSTD_e_end);
    out.resize(at + o.pos);
    if (ZSTD_isError(left)) {
      out.resize(start);
      return 0;
    }
    if (left == 0) return out.size() - start;
    chunk = std::max(chunk, left);
  }
}

uint64_t entryChecksum(const char* header, std::string_view stored) {
  uint64_t seed = XXH3_64bits(header, 56);
  return XXH3_64bits_withSeed(stored.data(), stored.size(), seed);
}

}  // namespace

std::string encodeEntry(Level level, const Key& key, std::string_view payload,
                        uint64_t computeNs, bool compress) {
  // One buffer: the header, then the payload compressed straight into it.
  std::string out;
  uint8_t compression = kCompressionNone;
  size_t storedSize = payload.size();
  if (compress && payload.size() >= 256) {
    out.resize(kEntryHeaderSize);
    size_t n = compressOnto(payload, out);
    if (n != 0 && n < payload.size()) {
      compression = kCompressionZstd;
      storedSize = n;
    }
  }
  if (compression == kCompressionNone) {
    out.resize(kEntryHeaderSize);
    out.append(payload);
  } else {
    out.resize(kEntryHeaderSize + storedSize);
  }
  std::string header;
  header.reserve(kEntryHeaderSize);
  header.append(kMagic, 8);
  uint16_t version = kEntryFormatVersion;
  uint32_t headerSize = kEntryHeaderSize;
  char fields[8];
  std::memcpy(fields, &version, 2);
  fields[2] = static_cast<char>(level);
  fields[3] = static_cast<char>(compression);
  std::memcpy(fields + 4, &headerSize, 4);
  header.append(fields, 8);
  appendU64(header, key.high);
  appendU64(header, key.low);
  appendU64(header, payload.size());
  appendU64(header, storedSize);
  appendU64(header, computeNs);
  appendU64(header, entryChecksum(header.data(), std::string_view(out).substr(kEntryHeaderSize)));
  std::memcpy(out.data(), header.data(), kEntryHeaderSize);
  return out;
}

namespace detail {

std::optional<uint64_t> declaredEntrySize(std::string_view header) {
  if (header.size() < kEntryHeaderSize || std::memcmp(header.data(), kMagic, 8) != 0) {
    return std::nullopt;
  }
  uint64_t stored = readU64(header.data() + 40);
  if (stored > UINT64_MAX - kEntryHeaderSize) return std::nullopt;
  return kEntryHeaderSize + stored;
}

}  // namespace detail

Expected<Entry> decodeEntry(std::string_view bytes, const Key* expected) {
  if (bytes.size() < kEntryHeaderSize) {
    return Error{"truncated header"};
  }
  const char* h = bytes.data();
  if (std::memcmp(h, kMagic, 8) != 0) {
    return Error{"not a tritonc cache entry (bad magic)"};
  }
  uint16_t version;
  std::memcpy(&version, h + 8, 2);
  uint32_t headerSize;
  std::memcpy(&headerSize, h + 12, 4);
  if (version != kEntryFormatVersion || headerSize != kEntryHeaderSize) {
    return Error{"foreign format version " + std::to_string(version)};
  }
  auto level = static_cast<uint8_t>(h[10]);
  auto compression = static_cast<uint8_t>(h[11]);
  if (level >= kLevelCount || compression > kCompressionZstd) {
    return Error{"bad header field"};
  }
  Entry entry;
  entry.level = static_cast<Level>(level);
  entry.key = Key{readU64(h + 16), readU64(h + 24)};
  uint64_t rawSize = readU64(h + 32);
  uint64_t storedSize = readU64(h + 40);
  entry.computeNs = readU64(h + 48);
  if (bytes.size() - kEntryHeaderSize != storedSize) {
    return Error{bytes.size() - kEntryHeaderSize < storedSize ? "truncated payload"
                                                              : "trailing bytes"};
  }
  std::string_view stored = bytes.substr(kEntryHeaderSize);
  if (entryChecksum(h, stored) != readU64(h + 56)) {
    return Error{"checksum mismatch"};
  }
  if (expected != nullptr && !(entry.key == *expected)) {
    return Error{"entry holds another key"};
  }
  if (compression == kCompressionZstd) {
    unsigned long long frame = ZSTD_getFrameContentSize(stored.data(), stored.size());
    if (frame != rawSize) {
      return Error{"bad compressed size"};
    }
    entry.payload.resize(rawSize);
    size_t n = ZSTD_decompress(entry.payload.data(), rawSize, stored.data(), stored.size());
    if (ZSTD_isError(n) || n != rawSize) {
      return Error{"cannot decompress the payload"};
    }
  } else {
    if (rawSize != storedSize) {
      return Error{"bad payload size"};
    }
    entry.payload.assign(stored);
  }
  return entry;
}

void appendCompressed(std::string_view bytes, std::string& out) {
  size_t n = compressOnto(bytes, out);
  TRITONC_CHECK(n != 0, "zstd failed to compress a frame");
}

Expected<std::string> decompressFrame(std::string_view frame, size_t maxSize) {
  unsigned long long size = ZSTD_getFrameContentSize(frame.data(), frame.size());
  if (size == ZSTD_CONTENTSIZE_UNKNOWN || size == ZSTD_CONTENTSIZE_ERROR || size > maxSize ||
      ZSTD_findFrameCompressedSize(frame.data(), frame.size()) != frame.size()) {
    return Error{"bad compressed frame"};
  }
  std::string bytes(size, '\0');
  size_t n = ZSTD_decompress(bytes.data(), bytes.size(), frame.data(), frame.size());
  if (ZSTD_isError(n) || n != size) {
    return Error{"cannot decompress a frame"};
  }
  return bytes;
}

// ---- blobs ---------------------------------------------------------------------------
// u64 count, then per blob: u64 name size, name, u64 data size, data.

BlobWriter::BlobWriter(std::string& out) : out_(out), start_(out.size()) { appendU64(out_, 0); }

void BlobWriter::add(std::string_view name, std::string_view data) {
  begin(name).append(data);
  end();
}

std::string& BlobWriter::begin(std::string_view name) {
  appendU64(out_, name.size());
  out_.append(name);
  sizeAt_ = out_.size();
  appendU64(out_, 0);
  return out_;
}

void BlobWriter::end() {
  uint64_t size = out_.size() - sizeAt_ - 8;
  std::memcpy(out_.data() + sizeAt_, &size, 8);
  ++count_;
}

void BlobWriter::finish() { std::memcpy(out_.data() + start_, &count_, 8); }

std::string packBlobs(const Blobs& blobs) {
  size_t total = 8;
  for (const auto& [name, data] : blobs) total += 16 + name.size() + data.size();
  std::string out;
  out.reserve(total);
  BlobWriter writer(out);
  for (const auto& [name, data] : blobs) writer.add(name, data);
  writer.finish();
  return out;
}

Expected<BlobViews> unpackBlobs(std::string_view payload) {
  size_t pos = 0;
  auto take = [&](uint64_t* value) {
    if (payload.size() - pos < 8) return false;
    *value = readU64(payload.data() + pos);
    pos += 8;
    return true;
  };
  auto takeString = [&](std::string_view* out) {
    uint64_t n;
    if (!take(&n) || payload.size() - pos < n) return false;
    *out = payload.substr(pos, n);
    pos += n;
    return true;
  };
  uint64_t count;
  if (!take(&count) || count > payload.size()) {
    return Error{"malformed payload"};
  }
  BlobViews blobs(count);
  for (auto& [name, data] : blobs) {
    if (!takeString(&name) || !takeString(&data)) {
      return Error{"malformed payload"};
    }
  }
  if (pos != payload.size()) {
    return Error{"malformed payload"};
  }
  return blobs;
}

}  // namespace tritonc::cache

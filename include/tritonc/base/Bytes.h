//===- Bytes.h - fixed-width binary writing and checked reading --*- C++ -*-===//
//
// The binary forms the cache stores (serialized IR, recorded diagnostics) are
// written with ByteWriter and read back with ByteReader: native byte order,
// fixed-width fields, strings as a u32 length and bytes. The reader never
// reads past its input: a short or damaged input makes it `failed()` and
// every later read returns zeros, so a decoder checks once at the end.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

namespace tritonc {

/// Appends to a string at a cursor; the string is grown geometrically and
/// trimmed by finish(). (Growing it by a few bytes per field was most of the
/// cost of serializing megabyte modules.)
class ByteWriter {
 public:
  explicit ByteWriter(std::string& out, size_t estimate = 256) : out_(out), pos_(out.size()) {
    out_.resize(pos_ + estimate);
  }
  ByteWriter(const ByteWriter&) = delete;
  ByteWriter& operator=(const ByteWriter&) = delete;

  template <typename T>
    requires std::is_arithmetic_v<T> || std::is_enum_v<T>
  void put(T value) {
    reserve(sizeof(T));
    std::memcpy(out_.data() + pos_, &value, sizeof(T));
    pos_ += sizeof(T);
  }
  /// A u32 length, then the bytes.
  void putString(std::string_view text) {
    put(static_cast<uint32_t>(text.size()));
    reserve(text.size());
    std::memcpy(out_.data() + pos_, text.data(), text.size());
    pos_ += text.size();
  }
  /// Trims the string to what was written; call once, last.
  void finish() { out_.resize(pos_); }

 private:
  void reserve(size_t n) {
    if (out_.size() - pos_ < n) out_.resize(std::max(out_.size() * 2, pos_ + n + 4096));
  }
  std::string& out_;
  size_t pos_;
};

/// Reads what a ByteWriter wrote, checking every length against the bytes left.
class ByteReader {
 public:
  explicit ByteReader(std::string_view bytes) : bytes_(bytes) {}
  bool failed() const { return failed_; }
  bool atEnd() const { return pos_ == bytes_.size(); }
  void fail() { failed_ = true; }

  template <typename T>
    requires std::is_arithmetic_v<T> || std::is_enum_v<T>
  T get() {
    T value{};
    if (failed_ || bytes_.size() - pos_ < sizeof(T)) {
      failed_ = true;
      return value;
    }
    std::memcpy(&value, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }
  bool getBool() { return get<uint8_t>() != 0; }
  std::string_view getString() {
    uint32_t size = get<uint32_t>();
    if (failed_ || bytes_.size() - pos_ < size) {
      failed_ = true;
      return {};
    }
    std::string_view text = bytes_.substr(pos_, size);
    pos_ += size;
    return text;
  }
  /// A count of items that each take at least `minBytes`: bounded by what is
  /// left, so a damaged count cannot make the caller allocate gigabytes.
  uint32_t getCount(size_t minBytes = 1) {
    uint32_t count = get<uint32_t>();
    if (!failed_ && static_cast<uint64_t>(count) * minBytes > bytes_.size() - pos_) {
      failed_ = true;
    }
    return failed_ ? 0 : count;
  }
  /// An index below `limit`, or UINT32_MAX ("none") when `allowNone`.
  uint32_t getIndex(size_t limit, bool allowNone = true) {
    uint32_t index = get<uint32_t>();
    if (index == UINT32_MAX ? !allowNone : index >= limit) failed_ = true;
    return index;
  }

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
  bool failed_ = false;
};

}  // namespace tritonc

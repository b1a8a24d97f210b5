//===- Interner.h - identifier interning ------------------------*- C++ -*-===//
//
// Every identifier spelling is stored once and named by a dense `IdentifierId`.
// Lookups hash with XXH3 into an open-addressing table; spellings live in an
// arena, so ids and the string_views they map to stay valid for the lifetime
// of the interner. One interner can be shared by all files of a compilation.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace tritonc {

/// A dense id for an interned identifier.
struct IdentifierId {
  uint32_t index = UINT32_MAX;
  bool isValid() const { return index != UINT32_MAX; }
  friend bool operator==(IdentifierId, IdentifierId) = default;
};

/// Maps identifier spellings to dense ids and back.
class Interner {
 public:
  Interner();
  Interner(const Interner&) = delete;
  Interner& operator=(const Interner&) = delete;

  /// Returns the id of `text`, adding it on first use.
  IdentifierId intern(std::string_view text);
  /// Returns the id of `text` if it was interned, else an invalid id.
  IdentifierId lookup(std::string_view text) const;
  /// The spelling of an interned id.
  std::string_view spelling(IdentifierId id) const { return strings_[id.index]; }
  size_t size() const { return strings_.size(); }

 private:
  struct Slot {
    uint64_t hash = 0;
    uint32_t id = UINT32_MAX;
  };
  const char* store(std::string_view text);
  void grow();

  std::vector<Slot> slots_;
  std::vector<std::string_view> strings_;
  std::vector<std::unique_ptr<char[]>> chunks_;
  char* chunkCur_ = nullptr;
  size_t chunkLeft_ = 0;
};

}  // namespace tritonc

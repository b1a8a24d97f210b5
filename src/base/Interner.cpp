//===- Interner.cpp - identifier interning --------------------------------===//
#include "tritonc/base/Interner.h"

// Inline the hash: identifiers are short and a call costs as much as hashing.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cstring>

namespace tritonc {

namespace {
constexpr size_t kInitialSlots = 1024;  // power of two
constexpr size_t kChunkSize = 64 * 1024;
}  // namespace

Interner::Interner() : slots_(kInitialSlots) {}

const char* Interner::store(std::string_view text) {
  if (text.size() > chunkLeft_) {
    size_t size = text.size() > kChunkSize ? text.size() : kChunkSize;
    chunks_.push_back(std::make_unique<char[]>(size));
    chunkCur_ = chunks_.back().get();
    chunkLeft_ = size;
  }
  char* out = chunkCur_;
  std::memcpy(out, text.data(), text.size());
  chunkCur_ += text.size();
  chunkLeft_ -= text.size();
  return out;
}

void Interner::grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(old.size() * 2, Slot{});
  size_t mask = slots_.size() - 1;
  for (const Slot& slot : old) {
    if (slot.id == UINT32_MAX) {
      continue;
    }
    size_t i = slot.hash & mask;
    while (slots_[i].id != UINT32_MAX) {
      i = (i + 1) & mask;
    }
    slots_[i] = slot;
  }
}

IdentifierId Interner::intern(std::string_view text) {
  uint64_t hash = XXH3_64bits(text.data(), text.size());
  size_t mask = slots_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    Slot& slot = slots_[i];
    if (slot.id == UINT32_MAX) {
      auto id = static_cast<uint32_t>(strings_.size());
      strings_.emplace_back(store(text), text.size());
      slot = Slot{hash, id};
      if (strings_.size() * 2 > slots_.size()) {
        grow();
      }
      return IdentifierId{id};
    }
    if (slot.hash == hash && strings_[slot.id] == text) {
      return IdentifierId{slot.id};
    }
  }
}

IdentifierId Interner::lookup(std::string_view text) const {
  uint64_t hash = XXH3_64bits(text.data(), text.size());
  size_t mask = slots_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const Slot& slot = slots_[i];
    if (slot.id == UINT32_MAX) {
      return IdentifierId{};
    }
    if (slot.hash == hash && strings_[slot.id] == text) {
      return IdentifierId{slot.id};
    }
  }
}

}  // namespace tritonc

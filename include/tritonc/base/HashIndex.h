//===- HashIndex.h - hash-consing index over dense ids ----------*- C++ -*-===//
//
// Maps a 64-bit hash to the dense ids stored under it, without allocating
// per key: an open-addressing table of (hash, id) slots. The caller keeps
// the values and supplies equality, which makes it the index of any
// hash-consing store (types, dimensions).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <vector>

namespace tritonc {

class HashIndex {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  HashIndex() : slots_(256) {}

  /// The id stored under `hash` for which `equal(id)` holds, or kNone.
  template <typename Equal>
  uint32_t find(uint64_t hash, Equal&& equal) const {
    hash = avalanche(hash);
    size_t mask = slots_.size() - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
      const Slot& slot = slots_[i];
      if (slot.id == kNone) {
        return kNone;
      }
      if (slot.hash == hash && equal(slot.id)) {
        return slot.id;
      }
    }
  }

  /// Adds `id` under `hash` (the caller checked it is not there yet).
  void insert(uint64_t hash, uint32_t id) {
    if ((count_ + 1) * 2 > slots_.size()) {
      grow();
    }
    place(avalanche(hash), id);
    ++count_;
  }

 private:
  // Callers combine fields however they like; every bit of the result must
  // depend on every input bit before the low bits pick a slot (splitmix64).
  static uint64_t avalanche(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
  }
  struct Slot {
    uint64_t hash = 0;
    uint32_t id = kNone;
  };
  void place(uint64_t hash, uint32_t id) {
    size_t mask = slots_.size() - 1;
    size_t i = hash & mask;
    while (slots_[i].id != kNone) {
      i = (i + 1) & mask;
    }
    slots_[i] = Slot{hash, id};
  }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.size() * 2, Slot{});
    for (const Slot& slot : old) {
      if (slot.id != kNone) {
        place(slot.hash, slot.id);
      }
    }
  }
  std::vector<Slot> slots_;
  size_t count_ = 0;
};

}  // namespace tritonc

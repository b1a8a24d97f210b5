//===- CSE.cpp - common subexpression elimination -------------------------===//
//
// Walks blocks in order with a scoped table of the pure ops seen so far (a
// region sees the ops of its enclosing blocks, which dominate it). An op that
// computes what an available op computes (same kind, attributes, operands and
// result type) is replaced by it. Ops with effects or training-mode state
// (dropout, forward calls) are never merged. Reads of module state that
// changes in `forward` (a batch norm's running statistics: Purity::
// readsState) merge only when no op that may write state runs between them.
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "PassRegistry.h"

namespace tritonc::opt {

namespace {

using namespace ir;

class CSE {
 public:
  explicit CSE(Module& m) : m_(m), purity_(m), replacements_(m) {}

  bool run() {
    m_.deferErasure();  // a long block may lose many ops
    forEachRegionRoot(m_, [&](BlockId block) { walk(block); });
    m_.flushErasure();
    if (changed_) {
      replacements_.apply(m_);
    }
    return changed_;
  }

 private:
  ValueId resolve(ValueId v) const { return replacements_.resolve(v); }

  // Element-wise `+` and `*` of two operands give the same values in either
  // order (IEEE addition and multiplication commute; broadcasting and type
  // promotion are symmetric).
  bool commutative(OpId id) const {
    OpKind k = m_.op(id).kind;
    return (k == OpKind::Add || k == OpKind::Mul) && m_.operands(id).size() == 2;
  }

  // A hash of what the op computes; equal() decides.
  uint64_t hash(OpId id) const {
    const Op& o = m_.op(id);
    uint64_t h = 0x9e3779b97f4a7c15ULL;
    auto mix = [&h](uint64_t v) {
      h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    };
    mix(static_cast<uint64_t>(o.kind));
    mix(static_cast<uint64_t>(o.constKind));
    mix(static_cast<uint64_t>(o.intAttr));
    uint64_t bits = 0;
    std::memcpy(&bits, &o.floatAttr, sizeof bits);
    mix(bits);
    mix(o.strAttr);
    for (int64_t i : m_.ints(id)) mix(static_cast<uint64_t>(i));
    std::span<const ValueId> operands = m_.operands(id);
    if (commutative(id)) {
      // `b + x` is `x + b`: the operands in one order.
      uint32_t a = resolve(operands[0]).index, b = resolve(operands[1]).index;
      mix(std::min(a, b));
      mix(std::max(a, b));
    } else {
      for (ValueId v : operands) mix(resolve(v).index);
    }
    for (ValueId r : m_.results(id)) mix(m_.typeOf(r).index);
    return h;
  }

  bool equal(OpId a, OpId b) const {
    const Op& x = m_.op(a);
    const Op& y = m_.op(b);
    if (x.kind != y.kind || x.constKind != y.constKind || x.intAttr != y.intAttr ||
        std::memcmp(&x.floatAttr, &y.floatAttr, sizeof x.floatAttr) != 0 ||
        x.strAttr != y.strAttr || x.operandsCount != y.operandsCount ||
        x.intsCount != y.intsCount || x.resultsCount != y.resultsCount) {
      return false;
    }
    std::span<const int64_t> xi = m_.ints(a);
    std::span<const int64_t> yi = m_.ints(b);
    if (!std::equal(xi.begin(), xi.end(), yi.begin())) return false;
    std::span<const ValueId> xo = m_.operands(a);
    std::span<const ValueId> yo = m_.operands(b);
    bool same = true;
    for (size_t i = 0; i < xo.size(); ++i) {
      same = same && resolve(xo[i]) == resolve(yo[i]);
    }
    if (!same && !(commutative(a) && resolve(xo[0]) == resolve(yo[1]) &&
                   resolve(xo[1]) == resolve(yo[0]))) {
      return false;
    }
    std::span<const ValueId> xr = m_.results(a);
    std::span<const ValueId> yr = m_.results(b);
    for (size_t i = 0; i < xr.size(); ++i) {
      if (!(m_.typeOf(xr[i]) == m_.typeOf(yr[i]))) return false;
    }
    return true;
  }

  void walk(BlockId block) {
    std::vector<std::pair<uint64_t, OpId>> added;
    std::vector<OpId> ops = m_.blocks[block.index].ops;
    for (OpId id : ops) {
      const Op& o = m_.op(id);
      bool hasRegions = o.regions[0].isValid() || o.regions[1].isValid();
      if (hasRegions) {
        // A loop's body runs again after its own writes: a new epoch on
        // entering it, and another after it.
        bool writes = purity_.writesState(id);
        stateEpoch_ += writes ? 1 : 0;
        for (BlockId region : o.regions) {
          if (region.isValid()) {
            walk(region);
          }
        }
        stateEpoch_ += writes ? 1 : 0;
        continue;
      }
      if (purity_.writesState(id)) {
        ++stateEpoch_;
        continue;
      }
      // A `let x: T` without value is a Constant with no value: each one is
      // distinct, never merged.
      if (!purity_.isPure(id) || o.resultsCount != 1 ||
          (o.kind == OpKind::Constant && o.constKind == ConstKind::None)) {
        continue;
      }
      uint64_t epoch = purity_.readsState(id) ? stateEpoch_ : 0;
      uint64_t h = hash(id) ^ epoch;
      OpId found;
      auto [first, last] = available_.equal_range(h);
      for (auto it = first; it != last; ++it) {
        if (it->second.epoch == epoch && equal(it->second.op, id)) {
          found = it->second.op;
          break;
        }
      }
      if (found.isValid()) {
        replacements_.record(m_.result(id), m_.result(found));
        m_.erase(id);
        changed_ = true;
        continue;
      }
      available_.emplace(h, Available{id, epoch});
      added.emplace_back(h, id);
    }
    for (const auto& [h, id] : added) {  // leaving the block's scope
      auto [first, last] = available_.equal_range(h);
      for (auto it = first; it != last; ++it) {
        if (it->second.op == id) {
          available_.erase(it);
          break;
        }
      }
    }
  }

  Module& m_;
  Purity purity_;
  Replacements replacements_;
  /// An op whose result may replace equal ones; `epoch`: for a state read,
  /// the stateEpoch_ it was made in (0 for the others).
  struct Available {
    OpId op;
    uint64_t epoch;
  };
  std::unordered_multimap<uint64_t, Available> available_;
  uint64_t stateEpoch_ = 1;  ///< incremented by every op that may write state
  bool changed_ = false;
};

}  // namespace

bool runCSE(Module& m) { return CSE(m).run(); }

}  // namespace tritonc::opt

//===- CSE.cpp - common subexpression elimination -------------------------===//
//
// Walks blocks in order with a scoped table of the pure ops seen so far (a
// region sees the ops of its enclosing blocks, which dominate it). An op that
// computes what an available op computes (same kind, attributes, operands and
// result type) is replaced by it. Ops with effects or training-mode state
// (dropout, forward calls) are never merged.
//
//===----------------------------------------------------------------------===//
#include <cstring>
#include <string>
#include <unordered_map>

#include "PassRegistry.h"

namespace tritonc::opt {

namespace {

using namespace ir;

class CSE {
 public:
  explicit CSE(Module& m) : m_(m), replacement_(m.values.size()) {}

  bool run() {
    forEachRegionRoot(m_, [&](BlockId block) { walk(block); });
    if (changed_) {
      for (ValueId& operand : m_.operandPool) {
        operand = resolve(operand);
      }
    }
    return changed_;
  }

 private:
  ValueId resolve(ValueId v) const {
    while (v.isValid() && replacement_[v.index].isValid()) {
      v = replacement_[v.index];
    }
    return v;
  }

  std::string key(OpId id) const {
    const Op& o = m_.op(id);
    std::string k;
    auto put = [&k](const auto& x) { k.append(reinterpret_cast<const char*>(&x), sizeof x); };
    put(o.kind);
    put(o.constKind);
    put(o.intAttr);
    uint64_t bits = 0;
    std::memcpy(&bits, &o.floatAttr, sizeof bits);
    put(bits);
    put(o.strAttr);
    put(o.intsCount);
    for (int64_t i : m_.ints(id)) put(i);
    put(o.operandsCount);
    for (ValueId v : m_.operands(id)) put(resolve(v).index);
    for (ValueId r : m_.results(id)) put(m_.typeOf(r).index);
    return k;
  }

  void walk(BlockId block) {
    std::vector<std::string> added;
    std::vector<OpId> ops = m_.blocks[block.index].ops;
    for (OpId id : ops) {
      const Op& o = m_.op(id);
      bool hasRegions = o.regions[0].isValid() || o.regions[1].isValid();
      if (hasRegions) {
        for (BlockId region : o.regions) {
          if (region.isValid()) {
            walk(region);
          }
        }
        continue;
      }
      // A `let x: T` without value is a Constant with no value: each one is
      // distinct, never merged.
      if (!isPure(o.kind) || o.resultsCount != 1 ||
          (o.kind == OpKind::Constant && o.constKind == ConstKind::None)) {
        continue;
      }
      std::string k = key(id);
      auto it = available_.find(k);
      if (it != available_.end()) {
        replacement_[m_.result(id).index] = m_.result(it->second);
        m_.erase(id);
        changed_ = true;
        continue;
      }
      available_.emplace(k, id);
      added.push_back(std::move(k));
    }
    for (const std::string& k : added) {
      available_.erase(k);  // leaving the block's scope
    }
  }

  Module& m_;
  std::vector<ValueId> replacement_;
  std::unordered_map<std::string, OpId> available_;
  bool changed_ = false;
};

}  // namespace

bool runCSE(Module& m) { return CSE(m).run(); }

}  // namespace tritonc::opt

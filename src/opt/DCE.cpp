//===- DCE.cpp - dead code elimination ------------------------------------===//
//
// Removes ops whose results are never used and that have no effect: pure ops,
// and `if`/`for`/`while` whose regions hold only pure ops. Ops with effects
// stay even when unused: print/assert, sub-module creation (it is module
// state: state_dict keys), forward calls and training-mode builtins (dropout,
// batch-norm statistics), and anything that returns or leaves a loop.
//
//===----------------------------------------------------------------------===//
#include "PassRegistry.h"

namespace tritonc::opt {

namespace {

using namespace ir;

bool hasEffects(const Module& m, BlockId block) {
  for (OpId id : m.blocks[block.index].ops) {
    const Op& o = m.op(id);
    switch (o.kind) {
      case OpKind::Yield: continue;
      case OpKind::If:
      case OpKind::For:
      case OpKind::While:
        for (BlockId region : o.regions) {
          if (region.isValid() && hasEffects(m, region)) {
            return true;
          }
        }
        continue;
      default:
        if (!isPure(o.kind) || isTerminator(o.kind)) {
          return true;
        }
    }
  }
  return false;
}

bool removable(const Module& m, OpId id) {
  const Op& o = m.op(id);
  if (o.kind == OpKind::If || o.kind == OpKind::For || o.kind == OpKind::While) {
    for (BlockId region : o.regions) {
      if (region.isValid() && hasEffects(m, region)) {
        return false;
      }
    }
    return true;
  }
  return isPure(o.kind) && !isTerminator(o.kind);
}

void countUses(const Module& m, BlockId block, std::vector<uint32_t>& uses, int delta) {
  for (OpId id : m.blocks[block.index].ops) {
    for (ValueId v : m.operands(id)) {
      uses[v.index] += static_cast<uint32_t>(delta);
    }
    for (BlockId region : m.op(id).regions) {
      if (region.isValid()) {
        countUses(m, region, uses, delta);
      }
    }
  }
}

void releaseUses(const Module& m, OpId id, std::vector<uint32_t>& uses) {
  for (ValueId v : m.operands(id)) {
    --uses[v.index];
  }
  for (BlockId region : m.op(id).regions) {
    if (region.isValid()) {
      countUses(m, region, uses, -1);
    }
  }
}

// Sweeps a block backwards, so that removing an op can make the ops that
// computed its operands dead in the same sweep.
bool sweep(Module& m, BlockId block, std::vector<uint32_t>& uses) {
  bool changed = false;
  std::vector<OpId> ops = m.blocks[block.index].ops;
  for (size_t i = ops.size(); i-- > 0;) {
    OpId id = ops[i];
    if (m.op(id).erased) {
      continue;
    }
    bool unused = true;
    for (ValueId r : m.results(id)) {
      unused = unused && uses[r.index] == 0;
    }
    if (unused && removable(m, id)) {
      releaseUses(m, id, uses);
      m.erase(id);
      changed = true;
      continue;
    }
    for (BlockId region : m.op(id).regions) {
      if (region.isValid()) {
        changed = sweep(m, region, uses) || changed;
      }
    }
  }
  return changed;
}

}  // namespace

bool runDCE(Module& m) {
  std::vector<uint32_t> uses(m.values.size(), 0);
  forEachRegionRoot(m, [&](BlockId block) { countUses(m, block, uses, 1); });
  bool changed = false;
  forEachRegionRoot(m, [&](BlockId block) { changed = sweep(m, block, uses) || changed; });
  return changed;
}

}  // namespace tritonc::opt

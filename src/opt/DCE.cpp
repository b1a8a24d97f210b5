//===- DCE.cpp - dead code elimination ------------------------------------===//
//
// Removes ops whose results are never used and that have no effect: pure ops
// (calls of pure functions included), and `if`/`for` whose regions hold only
// pure ops. A `while` is never removed: it might not terminate. An unused
// pure op that could raise at run time (a division by zero, a shape error)
// is removed like any other (its result is unused); docs/passes.md. Ops with effects
// stay even when unused: print/assert, sub-module creation (it is module
// state: state_dict keys), forward calls and training-mode builtins (dropout,
// batch-norm statistics), and anything that returns or leaves a loop.
//
//===----------------------------------------------------------------------===//
#include "PassRegistry.h"

namespace tritonc::opt {

namespace {

using namespace ir;

bool hasEffects(const Module& m, const Purity& purity, BlockId block) {
  for (OpId id : m.blocks[block.index].ops) {
    const Op& o = m.op(id);
    switch (o.kind) {
      case OpKind::Yield: continue;
      case OpKind::If:
      case OpKind::For:
      case OpKind::While:
        if (o.kind == OpKind::While) {
          return true;  // might not terminate
        }
        for (BlockId region : o.regions) {
          if (region.isValid() && hasEffects(m, purity, region)) {
            return true;
          }
        }
        continue;
      default:
        if (!purity.isPure(id) || isTerminator(o.kind)) {
          return true;
        }
    }
  }
  return false;
}

bool removable(const Module& m, const Purity& purity, OpId id) {
  const Op& o = m.op(id);
  if (o.kind == OpKind::While) {
    return false;  // might not terminate
  }
  if (o.kind == OpKind::If || o.kind == OpKind::For) {
    for (BlockId region : o.regions) {
      if (region.isValid() && hasEffects(m, purity, region)) {
        return false;
      }
    }
    return true;
  }
  return purity.isPure(id) && !isTerminator(o.kind);
}

// Forgets the uses an op (and its regions) made.
void releaseUses(const Module& m, OpId id, std::vector<uint32_t>& uses) {
  for (ValueId v : m.operands(id)) {
    --uses[v.index];
  }
  for (BlockId region : m.op(id).regions) {
    if (region.isValid()) {
      for (OpId inner : m.blocks[region.index].ops) {
        if (!m.op(inner).erased) releaseUses(m, inner, uses);  // released when erased
      }
    }
  }
}

// Sweeps a block backwards, so that removing an op can make the ops that
// computed its operands dead in the same sweep.
bool sweep(Module& m, const Purity& purity, BlockId block, std::vector<uint32_t>& uses) {
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
    if (unused && removable(m, purity, id)) {
      releaseUses(m, id, uses);
      m.erase(id);
      changed = true;
      continue;
    }
    for (BlockId region : m.op(id).regions) {
      if (region.isValid()) {
        changed = sweep(m, purity, region, uses) || changed;
      }
    }
  }
  return changed;
}

}  // namespace

bool runDCE(Module& m) {
  std::vector<uint32_t> uses = countUses(m);
  Purity purity(m);
  bool changed = false;
  m.deferErasure();  // a long block loses many ops
  forEachRegionRoot(m, [&](BlockId block) { changed = sweep(m, purity, block, uses) || changed; });
  m.flushErasure();
  return changed;
}

}  // namespace tritonc::opt

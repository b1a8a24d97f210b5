//===- StripChecks.cpp - dropping the -O0 run-time shape checks -----------===//
//
// The checked IR has the -O0 run-time shape checks (`check_dim`) at every
// level, so that one L2 entry serves them all (docs/cache.md). Optimized
// code trusts the declared types: this pass, the first of -O1 and up,
// removes the checks; DCE then removes the sizes they compared.
//
//===----------------------------------------------------------------------===//
#include <algorithm>

#include "PassRegistry.h"

namespace tritonc::opt {

using namespace ir;

namespace {

// What irgen made for a check alone: the constants and the arithmetic of the
// size it expects (IRGen::dimValue makes them fresh for each check). Sizes
// read from the inputs (shape_dim) and hyperparameters were there anyway.
bool madeForCheck(OpKind kind) {
  return kind == OpKind::Constant || kind == OpKind::Add || kind == OpKind::Sub ||
         kind == OpKind::Mul || kind == OpKind::Div;
}

}  // namespace

bool runStripChecks(Module& m) {
  // A compile that keeps no checked IR in L2 generates none.
  if (std::none_of(m.ops.begin(), m.ops.end(),
                   [](const Op& o) { return o.kind == OpKind::CheckDim && !o.erased; })) {
    return false;
  }
  std::vector<uint32_t> uses = countUses(m);
  bool changed = false;
  // The check, then what was made for it and is used no more: the IR is then
  // the one irgen makes without checks (constants left behind would become
  // the first of their kind for CSE, moving later equal ones up).
  std::vector<OpId> unused;
  auto release = [&](OpId id) {
    for (ValueId v : m.operands(id)) {
      OpId def = m.values[v.index].def;
      if (--uses[v.index] == 0 && def.isValid() && madeForCheck(m.op(def).kind) &&
          !m.op(def).erased) {
        unused.push_back(def);
      }
    }
    m.erase(id);
  };
  m.deferErasure();
  forEachRegionRoot(m, [&](BlockId root) {
    m.forEachOp(root, [&](OpId id) {
      if (m.op(id).kind != OpKind::CheckDim) return;
      changed = true;
      release(id);
      while (!unused.empty()) {
        OpId next = unused.back();
        unused.pop_back();
        if (!m.op(next).erased) release(next);
      }
    });
  });
  m.flushErasure();
  return changed;
}

}  // namespace tritonc::opt

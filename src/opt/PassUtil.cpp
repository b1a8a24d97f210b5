//===- PassUtil.cpp - helpers shared by the passes ------------------------===//
#include "PassRegistry.h"

namespace tritonc::opt {

using namespace ir;

Purity::Purity(const Module& module) : m_(module), pure_(module.functions.size(), true) {
  // Greatest fixed point: assume every function pure, then mark the ones
  // whose bodies have an impure op (calls of impure functions included).
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t f = 0; f < module.functions.size(); ++f) {
      if (pure_[f] && module.functions[f].body.isValid() &&
          !blockIsPure(module.functions[f].body)) {
        pure_[f] = false;
        changed = true;
      }
    }
  }
}

bool Purity::blockIsPure(BlockId block) const {
  for (OpId id : m_.blocks[block.index].ops) {
    const Op& o = m_.op(id);
    switch (o.kind) {
      case OpKind::Return:
      case OpKind::Yield:
      case OpKind::Break:
      case OpKind::Continue:
        break;  // control inside the callee: no effect on the caller
      case OpKind::If:
      case OpKind::For:
      case OpKind::While:
        for (BlockId region : o.regions) {
          if (region.isValid() && !blockIsPure(region)) return false;
        }
        break;
      default:
        if (!isPure(id)) return false;
    }
  }
  return true;
}

bool Purity::isPure(OpId id) const {
  const Op& o = m_.op(id);
  if (o.kind == OpKind::Apply || o.kind == OpKind::CallFn) {
    return pure_[static_cast<size_t>(o.intAttr)];
  }
  return ir::isPure(o.kind);
}

namespace {
void count(const Module& m, BlockId block, std::vector<uint32_t>& uses) {
  for (OpId id : m.blocks[block.index].ops) {
    for (ValueId v : m.operands(id)) ++uses[v.index];
    for (BlockId region : m.op(id).regions) {
      if (region.isValid()) count(m, region, uses);
    }
  }
}
}  // namespace

std::vector<uint32_t> countUses(const Module& module) {
  std::vector<uint32_t> uses(module.values.size(), 0);
  forEachRegionRoot(module, [&](BlockId block) { count(module, block, uses); });
  return uses;
}

std::optional<ConstantValue> constantOf(const Module& module, ValueId v) {
  const Value& value = module.values[v.index];
  if (!value.def.isValid()) return std::nullopt;
  const Op& o = module.op(value.def);
  if (o.kind != OpKind::Constant || o.erased) return std::nullopt;
  switch (o.constKind) {
    case ConstKind::Int:
    case ConstKind::Bool: return ConstantValue{o.constKind, o.intAttr, 0.0};
    case ConstKind::Float: return ConstantValue{o.constKind, 0, o.floatAttr};
    default: return std::nullopt;
  }
}

}  // namespace tritonc::opt

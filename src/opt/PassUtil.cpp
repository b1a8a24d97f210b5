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
  // A functional batch_norm given running statistics (parameters 3 and 4)
  // updates them in place in training: weights are then state that changes.
  for (uint32_t i = 0; i < module.ops.size() && !weightsMutable_; ++i) {
    const Op& o = module.ops[i];
    anyState_ = anyState_ || (!o.erased && o.kind == OpKind::InstanceMember);
    if (o.erased || (o.kind != OpKind::Builtin && o.kind != OpKind::BuiltinStateful) ||
        static_cast<BuiltinFn>(o.intAttr) != BuiltinFn::BatchNormFn) {
      continue;
    }
    for (int64_t given : module.ints(OpId{i})) {
      weightsMutable_ = weightsMutable_ || given == 3 || given == 4;
    }
  }
  anyState_ = anyState_ || weightsMutable_;
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
// Reads of module state that a forward call may change in place.
bool readsChangingState(OpKind kind, bool weightsMutable) {
  return kind == OpKind::InstanceMember || (kind == OpKind::Weight && weightsMutable);
}

}  // namespace

bool Purity::aliasesState(ValueId value) const {
  if (!anyState_) return false;
  if (aliases_.size() < m_.values.size()) aliases_.resize(m_.values.size(), -1);
  int8_t known = aliases_[value.index];
  if (known >= 0) return known != 0;
  // A cycle (a loop-carried value that depends on itself) counts as state:
  // the safe answer, so that every answer can be kept.
  aliases_[value.index] = 1;
  OpId def = m_.values[value.index].def;
  bool alias = false;
  if (!m_.types.isTensor(m_.typeOf(value)) && m_.types.kind(m_.typeOf(value)) != TypeKind::List) {
    alias = false;  // numbers are values
  } else if (!def.isValid()) {
    // A loop's carried value: what enters the loop or is carried to the next iteration.
    BlockId block = m_.values[value.index].block;
    OpId owner = block.isValid() ? m_.blocks[block.index].parent : OpId{};
    alias = owner.isValid() && regionOpAliases(owner);
  } else {
    const Op& o = m_.op(def);
    switch (o.kind) {
      case OpKind::If:
      case OpKind::For:
      case OpKind::While: alias = regionOpAliases(def); break;
      case OpKind::Forward:  // a sub-layer may return its state (`return bn.running_mean`)
        alias = true;        // (only in a module that reads state somewhere: anyState_)
        break;
      case OpKind::Apply:
      case OpKind::CallFn:
        alias = functionReadsState(static_cast<size_t>(o.intAttr));
        for (ValueId v : m_.operands(def)) alias = alias || aliasesState(v);
        break;
      default:
        alias = readsChangingState(o.kind, weightsMutable_);
        if (!alias && !makesNewValue(o.kind)) {
          for (ValueId v : m_.operands(def)) alias = alias || aliasesState(v);
        }
    }
  }
  aliases_[value.index] = alias ? 1 : 0;
  return alias;
}

// An If, For or While whose results (or carried values) may be state: what
// enters it or what its regions yield, carry or break with.
bool Purity::regionOpAliases(OpId id) const {
  for (ValueId v : m_.operands(id)) {
    if (aliasesState(v)) return true;
  }
  for (BlockId region : m_.op(id).regions) {
    if (region.isValid() && terminatorsAlias(region)) return true;
  }
  return false;
}

bool Purity::terminatorsAlias(BlockId block) const {
  for (OpId id : m_.blocks[block.index].ops) {
    const Op& o = m_.op(id);
    if (o.kind == OpKind::Yield || o.kind == OpKind::Break || o.kind == OpKind::Continue) {
      for (ValueId v : m_.operands(id)) {
        if (aliasesState(v)) return true;
      }
    }
    for (BlockId region : o.regions) {
      if (region.isValid() && terminatorsAlias(region)) return true;
    }
  }
  return false;
}

// Whether a function's body reads changing state (directly, or through a
// sub-module or a call): what it returns may be that state.
bool Purity::functionReadsState(size_t function) const {
  if (functionState_.size() < m_.functions.size()) functionState_.resize(m_.functions.size(), -1);
  int8_t& known = functionState_[function];
  if (known >= 0) return known != 0;
  known = 0;  // recursion: no more than what the rest of the body shows
  BlockId body = m_.functions[function].body;
  bool reads = body.isValid() && blockReadsState(body);
  functionState_[function] = reads ? 1 : 0;
  return reads;
}

bool Purity::blockReadsState(BlockId block) const {
  for (OpId id : m_.blocks[block.index].ops) {
    const Op& o = m_.op(id);
    if (readsChangingState(o.kind, weightsMutable_) || o.kind == OpKind::Forward) return true;
    if ((o.kind == OpKind::Apply || o.kind == OpKind::CallFn) &&
        functionReadsState(static_cast<size_t>(o.intAttr))) {
      return true;
    }
    for (BlockId region : o.regions) {
      if (region.isValid() && blockReadsState(region)) return true;
    }
  }
  return false;
}

bool Purity::readsState(OpId id) const {
  if (!anyState_) return false;
  if (readsChangingState(m_.op(id).kind, weightsMutable_)) return true;
  for (ValueId v : m_.operands(id)) {
    if (aliasesState(v)) return true;
  }
  return false;
}

bool Purity::writesState(OpId id) const {
  const Op& o = m_.op(id);
  switch (o.kind) {
    case OpKind::If:
    case OpKind::For:
    case OpKind::While: {
      // Remembered: a pass asks it of every `if` of an else-if chain, each
      // holding the rest of the chain.
      if (writes_.size() < m_.ops.size()) writes_.resize(m_.ops.size(), -1);
      if (writes_[id.index] >= 0) return writes_[id.index] != 0;
      bool writes = false;
      for (BlockId region : o.regions) {
        if (!region.isValid()) continue;
        for (OpId inner : m_.blocks[region.index].ops) {
          writes = writes || writesState(inner);
        }
      }
      writes_[id.index] = writes ? 1 : 0;
      return writes;
    }
    case OpKind::CheckDim:
    case OpKind::BuiltinEffect:  // print, assert
    case OpKind::Instantiate:    // a new sub-module: no existing state changes
      return false;
    default: return !isTerminator(o.kind) && !isPure(id);
  }
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

bool matmulToOperator(Module& module, OpId id) {
  Op& o = module.op(id);
  std::span<const int64_t> params = module.ints(id);
  if (o.kind != OpKind::Builtin || static_cast<BuiltinFn>(o.intAttr) != BuiltinFn::Matmul ||
      module.operands(id).size() != 2 || params.size() != 2 || params[0] != 0 || params[1] != 1) {
    return false;
  }
  o.kind = OpKind::MatMul;
  o.intAttr = 0;
  module.setInts(id, std::span<const int64_t>{});
  return true;
}

}  // namespace tritonc::opt

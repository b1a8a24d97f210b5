//===- Layout.cpp - zero-skip hints and in-place activations --------------===//
//
// zero-skip: a ternary weight initialized by ternary_weights(sparsity=s)
// starts with a fraction s of zero trits; the declaration records it so the
// CUDA kernels can choose a zero-skipping variant (TOOLCHAIN.md: the kernels
// skip zero trits) and the PyTorch runtime a sparse layout.
//
// inplace: an activation (relu, relu6, silu, hardswish) may overwrite its
// input when nothing else reads that input and the op that produced it does
// not keep its output for the backward pass. matmul, add, sub, mul, linear,
// conv, fused ops and layer forwards keep their inputs, not their outputs;
// sigmoid, tanh, exp, softmax keep their output, so an in-place op after them
// would corrupt the gradient and is not marked. Function inputs and weights
// are never overwritten (the caller owns them).
//
//===----------------------------------------------------------------------===//
#include "PassRegistry.h"

namespace tritonc::opt {

namespace {

using namespace ir;

void countUses(const Module& m, BlockId block, std::vector<uint32_t>& uses) {
  for (OpId id : m.blocks[block.index].ops) {
    for (ValueId v : m.operands(id)) ++uses[v.index];
    for (BlockId region : m.op(id).regions) {
      if (region.isValid()) countUses(m, region, uses);
    }
  }
}

// Ops whose output autograd does not keep (an in-place op after them is safe).
bool outputNotSaved(const Module& m, ValueId v) {
  OpId def = m.values[v.index].def;
  if (!def.isValid()) return false;  // a block argument: the caller's tensor
  const Op& o = m.op(def);
  switch (o.kind) {
    case OpKind::MatMul:
    case OpKind::Add:
    case OpKind::Sub:
    case OpKind::Mul:
    case OpKind::FusedMatMul:
    case OpKind::FusedConv:
    case OpKind::Forward: return true;
    case OpKind::Builtin:
      switch (static_cast<BuiltinFn>(o.intAttr)) {
        case BuiltinFn::LinearFn:
        case BuiltinFn::Conv2dFn:
        case BuiltinFn::DepthwiseConv2d: return true;
        // Views (flatten, reshape) share their input's storage: not listed.
        default: return false;
      }
    default: return false;
  }
}

bool inplaceCapable(const Op& o) {
  if (o.kind != OpKind::Builtin || o.operandsCount != 1) return false;
  switch (static_cast<BuiltinFn>(o.intAttr)) {
    case BuiltinFn::Relu:
    case BuiltinFn::Relu6:
    case BuiltinFn::Silu:
    case BuiltinFn::Hardswish: return true;
    default: return false;
  }
}

void markInplace(Module& m, BlockId block, const std::vector<uint32_t>& uses, bool& changed) {
  for (OpId id : m.blocks[block.index].ops) {
    Op& o = m.op(id);
    for (BlockId region : o.regions) {
      if (region.isValid()) markInplace(m, region, uses, changed);
    }
    if (o.inplace || !inplaceCapable(o)) continue;
    ValueId input = m.operands(id)[0];
    if (uses[input.index] == 1 && outputNotSaved(m, input)) {
      o.inplace = true;
      changed = true;
    }
  }
}

}  // namespace

bool runZeroSkip(Module& m) {
  bool changed = false;
  for (Function& f : m.functions) {
    for (WeightDecl& w : f.weights) {
      if (!w.init.isValid() || !m.types.isTernary(w.type)) continue;
      const Block& init = m.blocks[w.init.index];
      for (OpId id : init.ops) {
        const Op& o = m.op(id);
        if (o.kind != OpKind::BuiltinStateful ||
            static_cast<BuiltinFn>(o.intAttr) != BuiltinFn::TernaryWeights) {
          continue;
        }
        std::span<const ValueId> operands = m.operands(id);
        std::span<const int64_t> params = m.ints(id);
        for (size_t i = 0; i < operands.size(); ++i) {
          if (params[i] != 1) continue;  // sparsity
          OpId def = m.values[operands[i].index].def;
          if (def.isValid() && m.op(def).kind == OpKind::Constant &&
              m.op(def).constKind == ConstKind::Float && m.op(def).floatAttr > 0.0) {
            w.sparsity = m.op(def).floatAttr;
            changed = true;
          }
        }
      }
    }
  }
  return changed;
}

bool runInplace(Module& m) {
  std::vector<uint32_t> uses(m.values.size(), 0);
  forEachRegionRoot(m, [&](BlockId block) { countUses(m, block, uses); });
  bool changed = false;
  for (const Function& f : m.functions) {
    if (f.body.isValid()) markInplace(m, f.body, uses, changed);
  }
  return changed;
}

}  // namespace tritonc::opt

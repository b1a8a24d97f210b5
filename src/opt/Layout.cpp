//===- Layout.cpp - zero-skip hints and in-place activations --------------===//
//
// zero-skip: a ternary weight initialized by ternary_weights(sparsity=s)
// starts with a fraction s of zero trits; the declaration records it so the
// CUDA kernels can choose a zero-skipping variant (TOOLCHAIN.md: the kernels
// skip zero trits) and the PyTorch runtime a sparse layout.
//
// inplace: an activation (relu, relu6, silu, hardswish) may overwrite its
// input when nothing else reads that input, the input was made in the same
// block (not before a loop the activation is in), and the op that made it
// returns a fresh tensor whose value autograd does not keep: matmul, add,
// sub, mul, linear, conv, fused_matmul without activation. sigmoid, tanh,
// exp, softmax and fused activations keep their output (an in-place op after
// them would corrupt the gradient); layer forwards may return their input.
// Function inputs and weights are never overwritten (the caller owns them).
//
//===----------------------------------------------------------------------===//
#include "PassRegistry.h"

namespace tritonc::opt {

namespace {

using namespace ir;

// Ops that return a new tensor (never their input or a view of it) and whose
// output autograd does not keep: an in-place op after them is safe. Layer
// forwards are not listed: a layer may return its input (an identity block,
// Dropout in eval mode). Fused ops with an activation keep their output.
bool freshAndUnsaved(const Module& m, ValueId v) {
  OpId def = m.values[v.index].def;
  if (!def.isValid()) return false;  // a block argument: the caller's tensor
  const Op& o = m.op(def);
  switch (o.kind) {
    case OpKind::MatMul:
    case OpKind::Add:
    case OpKind::Sub:
    case OpKind::Mul: return true;
    case OpKind::FusedMatMul:
    case OpKind::FusedConv2d: return o.intAttr == 0;  // no activation
    case OpKind::Builtin:
      switch (static_cast<BuiltinFn>(o.intAttr)) {
        case BuiltinFn::LinearFn:
        case BuiltinFn::Conv2dFn:
        case BuiltinFn::DepthwiseConv2d: return true;
        default: return false;  // views (flatten, reshape) share their input's storage
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
    // The producer must be in the same block: an activation inside a loop
    // of a value made before it would overwrite it at every iteration.
    OpId def = m.values[input.index].def;
    bool sameBlock = def.isValid() && m.op(def).parent == block;
    if (uses[input.index] == 1 && sameBlock && freshAndUnsaved(m, input)) {
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
  std::vector<uint32_t> uses = countUses(m);
  bool changed = false;
  for (const Function& f : m.functions) {
    if (f.body.isValid()) markInplace(m, f.body, uses, changed);
  }
  return changed;
}

}  // namespace tritonc::opt

//===- KernelUse.h - which weight reads the CUDA kernels serve ---*- C++ -*-===//
//
// The CUDA target's two halves must agree on every ternary product they
// treat specially: KernelPlan plans a kernel for it, and the PyTorch emitter
// writes the runtime call that finds that kernel (tritonrt.stack_item,
// tritonrt.left_matmul). A read the emitter routes but the planner skips runs
// the reference path; one the planner sizes but the emitter writes as a plain
// torch call, or one read differently by the two (a slice taken for an item),
// is wrong. Both ask these predicates, so they cannot drift apart.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tritonc/ir/IR.h"

namespace tritonc::kernel_use {

/// A ternary weight of `fn` read directly: `v`'s definition is a Weight op.
/// Returns the weight's declaration, or nullptr.
inline const ir::WeightDecl* ternaryWeight(const ir::Module& m, const ir::Function& fn,
                                           ir::ValueId v) {
  if (!v.isValid()) return nullptr;
  ir::OpId def = m.values[v.index].def;
  if (!def.isValid() || m.op(def).kind != ir::OpKind::Weight || !m.types.isTernary(m.typeOf(v))) {
    return nullptr;
  }
  const auto w = static_cast<size_t>(m.op(def).intAttr);
  return w < fn.weights.size() ? &fn.weights[w] : nullptr;
}

/// The stacked ternary weight `st` when `index` reads one item `st[i]` of it:
/// a single integer index (not a slice, not `:`), `st` of rank >= 3 packed by
/// columns, so that each item's packed rows are contiguous in the stack's
/// codes. An invalid ValueId otherwise.
inline ir::ValueId stackOfItem(const ir::Module& m, const ir::Function& fn, ir::OpId index) {
  if (m.op(index).kind != ir::OpKind::Index) return {};
  std::span<const ir::ValueId> in = m.operands(index);
  std::span<const int64_t> codes = m.ints(index);  // -1: an index; else a slice or ':'
  if (in.size() != 2 || codes.size() != 1 || codes[0] != -1) return {};
  TypeId at = m.typeOf(in[1]);
  if (!m.types.isScalar(at) || !isIntegral(m.types.node(at).dtype)) return {};
  const ir::WeightDecl* w = ternaryWeight(m, fn, in[0]);
  TypeId type = m.typeOf(in[0]);
  if (w == nullptr || w->packRuns != ir::PackRuns::Columns || !m.types.node(type).rankKnown ||
      m.types.shape(type).size() < 3) {
    return {};
  }
  return in[0];
}

/// Whether `w @ y` runs the left kernel (tritonrt.left_matmul: w's kernel on
/// y transposed): w a 2-D ternary weight packed by its rows, y a float tensor
/// that is not itself ternary.
inline bool leftProduct(const ir::Module& m, const ir::Function& fn, ir::ValueId w,
                        ir::ValueId y) {
  const ir::WeightDecl* decl = ternaryWeight(m, fn, w);
  if (decl == nullptr || decl->packRuns == ir::PackRuns::Columns || !y.isValid()) return false;
  TypeId wt = m.typeOf(w);
  TypeId yt = m.typeOf(y);
  return m.types.node(wt).rankKnown && m.types.shape(wt).size() == 2 && m.types.isTensor(yt) &&
         !m.types.isTernary(yt) && isFloating(m.types.node(yt).dtype);
}

}  // namespace tritonc::kernel_use

//===- PassRegistry.h - the passes' entry points ----------------*- C++ -*-===//
#pragma once

#include <optional>
#include <vector>

#include "tritonc/ir/IR.h"

namespace tritonc::opt {

/// Each pass transforms the module in place and returns whether it changed it.
#define PASS(Id, Name, Description) bool run##Id(ir::Module& module);
#include "tritonc/opt/Passes.def"

/// Ops reachable from a function's body or a declaration region, in order.
template <typename Fn>
void forEachRegionRoot(const ir::Module& module, Fn&& fn) {
  for (const ir::Global& g : module.globals) {
    if (g.init.isValid()) fn(g.init);
  }
  for (const ir::Function& f : module.functions) {
    for (const ir::HyperDecl& h : f.hypers) {
      if (h.defaultValue.isValid()) fn(h.defaultValue);
    }
    for (const ir::WeightDecl& w : f.weights) {
      if (w.init.isValid()) fn(w.init);
    }
    for (const ir::InputDecl& in : f.inputs) {
      if (in.defaultValue.isValid()) fn(in.defaultValue);
    }
    if (f.body.isValid()) fn(f.body);
  }
}

/// Which functions are pure: their bodies (and the functions they call) have
/// no effect and no state, so a call of them is as pure as an arithmetic op.
class Purity {
 public:
  explicit Purity(const ir::Module& module);
  /// Whether an op may be removed when unused, merged with an equal one or
  /// moved: pure kinds, and apply/call of pure functions.
  bool isPure(ir::OpId op) const;
  bool isPureFunction(size_t function) const { return pure_[function]; }

  /// Module state that changes while `forward` runs: a batch norm in training
  /// updates its running statistics in place (a sub-module's, or weights
  /// passed to a functional `batch_norm` as its running statistics), and an
  /// `Embedding(max_norm=...)` renormalizes its table. A pure read of such
  /// state (`member`, and `weight` when some `batch_norm` takes running
  /// statistics) gives the tensor itself, as in PyTorch: it and what is
  /// computed from it must stay on its side of every op that may write state.
  /// Also an op whose operand is such a tensor or a view of it (its value
  /// depends on when it runs: `rm * 2.0` before and after the update).
  bool readsState(ir::OpId op) const;
  /// Whether a value may be (a view of) module state that changes.
  bool aliasesState(ir::ValueId value) const;
  /// Whether an op (with what its regions hold) may change module state:
  /// forward calls, stateful builtins, impure calls. Checks and prints do not.
  bool writesState(ir::OpId op) const;

 private:
  bool blockIsPure(ir::BlockId block) const;
  const ir::Module& m_;
  std::vector<bool> pure_;
  bool weightsMutable_ = false;  ///< some batch_norm updates weights in place
  bool anyState_ = false;        ///< some op reads changing state (else no search)
  mutable std::vector<int8_t> aliases_;  ///< aliasesState per value: -1 unknown
  mutable std::vector<int8_t> functionState_;  ///< functionReadsState: -1 unknown
  /// writesState of If/For/While ops: -1 unknown. (The passes that hold a
  /// Purity move, merge and erase pure ops: none of that changes the answer.)
  mutable std::vector<int8_t> writes_;
  bool regionOpAliases(ir::OpId op) const;
  bool terminatorsAlias(ir::BlockId block) const;
  bool functionReadsState(size_t function) const;
  bool blockReadsState(ir::BlockId block) const;
};

/// How often each value is used, over every function and declaration region.
std::vector<uint32_t> countUses(const ir::Module& module);

/// Replacements recorded while a pass walks the module and applied to every
/// operand once at the end (instead of a whole-module rewrite per change).
class Replacements {
 public:
  explicit Replacements(const ir::Module& module) : map_(module.values.size()) {}
  void record(ir::ValueId from, ir::ValueId to) {
    if (from.index >= map_.size()) map_.resize(from.index + 1);
    map_[from.index] = to;
  }
  ir::ValueId resolve(ir::ValueId v) const {
    while (v.isValid() && v.index < map_.size() && map_[v.index].isValid()) v = map_[v.index];
    return v;
  }
  void apply(ir::Module& module) const {
    for (ir::ValueId& operand : module.operandPool) operand = resolve(operand);
  }

 private:
  std::vector<ir::ValueId> map_;
};

/// A scalar constant: the attributes of the Constant op defining a value.
struct ConstantValue {
  ir::ConstKind kind = ir::ConstKind::None;
  int64_t i = 0;
  double f = 0.0;
  double asFloat() const { return kind == ir::ConstKind::Float ? f : static_cast<double>(i); }
};
/// The value of `v` if a (live) Constant op defines it.
std::optional<ConstantValue> constantOf(const ir::Module& module, ir::ValueId v);

/// `matmul(a, b)` is `a @ b` (LANGUAGE.md): rewrites the builtin call `id`
/// (both arguments positional, as given) into the operator's op. False when
/// `id` is no such call.
bool matmulToOperator(ir::Module& module, ir::OpId id);

}  // namespace tritonc::opt

//===- Inline.cpp - inlining of layer applications and small fns ----------===//
//
// Replaces `apply @L(...)` (a layer applied to its weights and inputs) and
// `call @f(...)` by a copy of the callee's body with its parameters bound:
// weights and inputs to the arguments, hyperparameters to the arguments, to
// their defaults, or to the size of the argument dimension they name (a size
// variable, as the checker inferred it). The copies' types have the callee's
// size variables replaced by the caller's dimensions.
//
// A callee is inlined when its body returns once, at its end; when every
// weight it has is passed (an applied layer has no state of its own); and,
// for a fn at -O2, when it is small (at most kSmallFn ops). -O3 inlines fns
// of any size (runInlineAggressive); -Os does not inline.
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <unordered_map>

#include "PassRegistry.h"

namespace tritonc::opt {

namespace {

using namespace ir;

constexpr size_t kSmallFn = 40;

size_t countOps(const Module& m, BlockId block) {
  size_t n = 0;
  for (OpId id : m.blocks[block.index].ops) {
    ++n;
    for (BlockId region : m.op(id).regions) {
      if (region.isValid()) n += countOps(m, region);
    }
  }
  return n;
}

bool containsOp(const Module& m, BlockId block, bool (*predicate)(const Op&)) {
  for (OpId id : m.blocks[block.index].ops) {
    if (predicate(m.op(id))) return true;
    for (BlockId region : m.op(id).regions) {
      if (region.isValid() && containsOp(m, region, predicate)) return true;
    }
  }
  return false;
}

class Inliner {
 public:
  Inliner(Module& m, bool aggressive)
      : m_(m), aggressive_(aggressive), inlinable_(m.functions.size(), -1) {}

  bool run() {
    for (size_t f = 0; f < m_.functions.size(); ++f) {
      caller_ = f;
      std::vector<OpId> calls;
      collectCalls(m_.functions[f].body, calls);
      for (OpId call : calls) {
        inlineCall(call);
      }
    }
    if (changed_) {
      // Uses of inlined calls' results, rewritten once for the whole module.
      for (ValueId& operand : m_.operandPool) {
        operand = resolve(operand);
      }
    }
    return changed_;
  }

 private:
  void collectCalls(BlockId block, std::vector<OpId>& out) {
    for (OpId id : m_.blocks[block.index].ops) {
      const Op& o = m_.op(id);
      if (o.kind == OpKind::Apply || o.kind == OpKind::CallFn) out.push_back(id);
      for (BlockId region : o.regions) {
        if (region.isValid()) collectCalls(region, out);
      }
    }
  }

  // Whether a callee can be inlined (computed once per callee).
  bool inlinable(size_t callee, OpKind callKind) {
    if (callee == caller_) return false;
    int& cached = inlinable_[callee];
    if (cached < 0) {
      cached = computeInlinable(callee, callKind) ? 1 : 0;
    }
    return cached == 1;
  }

  bool computeInlinable(size_t callee, OpKind callKind) const {
    const Function& g = m_.functions[callee];
    if (!g.body.isValid()) return false;
    const Block& body = m_.blocks[g.body.index];
    if (body.ops.empty() || m_.op(body.ops.back()).kind != OpKind::Return) return false;
    // One return, at the end; no state.
    for (OpId id : body.ops) {
      const Op& o = m_.op(id);
      for (BlockId region : o.regions) {
        if (region.isValid() && containsOp(m_, region, [](const Op& x) {
              return x.kind == OpKind::Return;
            })) {
          return false;
        }
      }
    }
    if (containsOp(m_, g.body, [](const Op& x) {
          return x.kind == OpKind::Instantiate || x.kind == OpKind::Forward;
        })) {
      return false;
    }
    if (callKind == OpKind::CallFn && !aggressive_ && countOps(m_, g.body) > kSmallFn) {
      return false;
    }
    return true;
  }

  // The callee's size variables in terms of the caller's dimensions.
  TypeId mapType(TypeId type) {
    const TypeStore::Node& t = m_.types.node(type);
    if (t.kind != TypeKind::Tensor || !t.rankKnown) return type;
    std::vector<DimId> shape;
    for (DimId d : m_.types.shape(type)) {
      std::vector<IdentifierId> vars;
      m_.dims.collectVars(d, vars);
      for (IdentifierId v : vars) {
        bindings_.emplace(v.index, m_.dims.unknown());  // unbound: unknown here
      }
      shape.push_back(m_.dims.substitute(d, bindings_));
    }
    return m_.types.tensor(t.dtype, shape, t.ternary);
  }

  void bindShape(TypeId declared, TypeId actual) {
    const TypeStore::Node& d = m_.types.node(declared);
    const TypeStore::Node& a = m_.types.node(actual);
    if (d.kind != TypeKind::Tensor || a.kind != TypeKind::Tensor || !d.rankKnown || !a.rankKnown ||
        m_.types.shape(declared).size() != m_.types.shape(actual).size()) {
      return;
    }
    std::span<const DimId> ds = m_.types.shape(declared);
    std::span<const DimId> as = m_.types.shape(actual);
    for (size_t i = 0; i < ds.size(); ++i) {
      const DimStore::Node& n = m_.dims.node(ds[i]);
      if (n.kind == DimKind::Var && !m_.dims.isUnknown(as[i])) {
        bindings_.emplace(n.var.index, as[i]);
      }
    }
  }

  // Creates a copy of `id` (operands mapped) before `at` in `block`.
  OpId cloneOp(OpId id, BlockId block, size_t& at) {
    const Op source = m_.op(id);
    std::vector<ValueId> operands;
    for (ValueId v : m_.operands(id)) operands.push_back(map(v));
    std::vector<TypeId> types;
    for (ValueId r : m_.results(id)) types.push_back(mapType(m_.typeOf(r)));
    std::vector<int64_t> ints(m_.ints(id).begin(), m_.ints(id).end());
    OpId copy = m_.createOp(BlockId{}, source.kind, operands, types);
    Op& o = m_.op(copy);
    o.constKind = source.constKind;
    o.intAttr = source.intAttr;
    o.floatAttr = source.floatAttr;
    o.strAttr = source.strAttr;
    o.loc = source.loc;
    o.parent = block;
    m_.setInts(copy, ints);
    std::span<const ValueId> from = m_.results(id);
    std::span<const ValueId> to = m_.results(copy);
    for (size_t i = 0; i < from.size(); ++i) vmap_[from[i].index] = to[i];
    for (int r = 0; r < 2; ++r) {
      BlockId region = source.regions[r];
      if (!region.isValid()) continue;
      BlockId newRegion = m_.createBlock(copy);
      for (ValueId arg : std::vector<ValueId>(m_.blocks[region.index].args)) {
        vmap_[arg.index] = m_.addArg(newRegion, mapType(m_.typeOf(arg)), m_.values[arg.index].name);
      }
      size_t end = 0;
      for (OpId inner : std::vector<OpId>(m_.blocks[region.index].ops)) {
        cloneOp(inner, newRegion, end);
      }
      m_.op(copy).regions[r] = newRegion;
    }
    std::vector<OpId>& ops = m_.blocks[block.index].ops;
    ops.insert(ops.begin() + static_cast<long>(at), copy);
    ++at;
    return copy;
  }

  // The caller's value for a callee value: first through the replacements of
  // calls already inlined into the callee (not yet rewritten in its body),
  // then through the copy table.
  ValueId map(ValueId v) const {
    v = resolve(v);
    auto it = vmap_.find(v.index);
    return it == vmap_.end() ? v : resolve(it->second);
  }
  ValueId resolve(ValueId v) const {
    while (v.isValid() && v.index < replacement_.size() && replacement_[v.index].isValid()) {
      v = replacement_[v.index];
    }
    return v;
  }

  void inlineCall(OpId call) {
    const Op& c = m_.op(call);
    if (c.erased) return;
    auto callee = static_cast<size_t>(c.intAttr);
    if (!inlinable(callee, c.kind)) return;
    const Function& g = m_.functions[callee];
    std::vector<ValueId> hypers(g.hypers.size());
    std::vector<ValueId> weights(g.weights.size());
    std::vector<ValueId> inputs(g.inputs.size());
    std::span<const ValueId> operands = m_.operands(call);
    std::span<const int64_t> params = m_.ints(call);
    for (size_t i = 0; i < operands.size(); ++i) {
      ParamRef ref = g.params[static_cast<size_t>(params[i])];
      std::vector<ValueId>& slot = ref.kind == ParamRef::Kind::Hyper    ? hypers
                                   : ref.kind == ParamRef::Kind::Weight ? weights
                                                                        : inputs;
      slot[ref.index] = resolve(operands[i]);
    }
    // An applied layer's weights are all passed; anything else keeps the call.
    for (ValueId w : weights) {
      if (!w.isValid()) return;
    }
    bindings_.clear();
    vmap_.clear();
    for (size_t i = 0; i < g.weights.size(); ++i) bindShape(g.weights[i].type, m_.typeOf(weights[i]));
    for (size_t i = 0; i < g.inputs.size(); ++i) {
      if (inputs[i].isValid()) bindShape(g.inputs[i].type, m_.typeOf(inputs[i]));
    }
    BlockId block = c.parent;
    std::vector<OpId>& ops = m_.blocks[block.index].ops;
    size_t at = static_cast<size_t>(std::find(ops.begin(), ops.end(), call) - ops.begin());
    // Hyperparameters not passed: from the shape they size, or their default.
    TypeId int32 = m_.types.scalar(DType::Int32);
    for (size_t h = 0; h < g.hypers.size(); ++h) {
      if (hypers[h].isValid()) continue;
      ValueId found = sizeOf(g, g.hypers[h].name, weights, inputs, int32, block, at);
      if (!found.isValid() && g.hypers[h].defaultValue.isValid()) {
        found = cloneRegionValue(g.hypers[h].defaultValue, hypers, block, at);
      }
      if (!found.isValid()) return;  // cannot bind: keep the call (nothing was emitted)
      hypers[h] = found;
    }
    for (size_t i = 0; i < g.inputs.size(); ++i) {
      if (inputs[i].isValid()) continue;
      if (!g.inputs[i].defaultValue.isValid()) return;
      inputs[i] = cloneRegionValue(g.inputs[i].defaultValue, hypers, block, at);
    }
    for (size_t h = 0; h < g.hypers.size(); ++h) {
      const Op* def = m_.values[hypers[h].index].def.isValid()
                          ? &m_.op(m_.values[hypers[h].index].def)
                          : nullptr;
      if (def != nullptr && def->kind == OpKind::Constant && def->constKind == ConstKind::Int) {
        bindings_.emplace(g.hypers[h].name.index, m_.dims.constant(def->intAttr));
      }
    }
    // The body, with hyperparameter and weight reads bound to the values.
    const Block& body = m_.blocks[g.body.index];
    for (size_t i = 0; i < body.args.size(); ++i) vmap_[body.args[i].index] = inputs[i];
    std::vector<OpId> bodyOps = body.ops;
    ValueId returned;
    for (OpId id : bodyOps) {
      const Op& o = m_.op(id);
      if (o.kind == OpKind::Hyper) {
        vmap_[m_.result(id).index] = hypers[static_cast<size_t>(o.intAttr)];
      } else if (o.kind == OpKind::Weight) {
        vmap_[m_.result(id).index] = weights[static_cast<size_t>(o.intAttr)];
      } else if (o.kind == OpKind::Return) {
        if (o.operandsCount == 1) returned = map(m_.operands(id)[0]);
      } else {
        cloneOp(id, block, at);
      }
    }
    if (m_.op(call).resultsCount == 1) {
      if (!returned.isValid()) return;
      ValueId result = m_.result(call);
      if (replacement_.size() < m_.values.size()) {
        replacement_.resize(m_.values.size());
      }
      replacement_[result.index] = returned;
    }
    m_.erase(call);
    changed_ = true;
  }

  // The size of the dimension that hyperparameter `name` declares in a weight
  // or input shape of `g`, read from the argument passed for it.
  ValueId sizeOf(const Function& g, IdentifierId name, const std::vector<ValueId>& weights,
                 const std::vector<ValueId>& inputs, TypeId int32, BlockId block, size_t& at) {
    auto search = [&](TypeId declared, ValueId arg) -> ValueId {
      if (!arg.isValid() || !m_.types.isTensor(declared) || !m_.types.node(declared).rankKnown) {
        return ValueId{};
      }
      std::span<const DimId> shape = m_.types.shape(declared);
      for (size_t d = 0; d < shape.size(); ++d) {
        const DimStore::Node& n = m_.dims.node(shape[d]);
        if (n.kind == DimKind::Var && n.var == name) {
          OpId op = m_.createOp(BlockId{}, OpKind::ShapeDim, std::span<const ValueId>(&arg, 1),
                                std::span<const TypeId>(&int32, 1));
          m_.op(op).intAttr = static_cast<int64_t>(d);
          m_.op(op).parent = block;
          std::vector<OpId>& ops = m_.blocks[block.index].ops;
          ops.insert(ops.begin() + static_cast<long>(at), op);
          ++at;
          return m_.result(op);
        }
      }
      return ValueId{};
    };
    for (size_t i = 0; i < g.weights.size(); ++i) {
      if (ValueId v = search(g.weights[i].type, weights[i]); v.isValid()) return v;
    }
    for (size_t i = 0; i < g.inputs.size(); ++i) {
      if (ValueId v = search(g.inputs[i].type, inputs[i]); v.isValid()) return v;
    }
    return ValueId{};
  }

  // Clones a declaration region (a default) and returns the value it yields.
  ValueId cloneRegionValue(BlockId region, const std::vector<ValueId>& hypers, BlockId block,
                           size_t& at) {
    ValueId yielded;
    for (OpId id : std::vector<OpId>(m_.blocks[region.index].ops)) {
      const Op& o = m_.op(id);
      if (o.kind == OpKind::Yield) {
        yielded = map(m_.operands(id)[0]);
      } else if (o.kind == OpKind::Hyper && hypers[static_cast<size_t>(o.intAttr)].isValid()) {
        vmap_[m_.result(id).index] = hypers[static_cast<size_t>(o.intAttr)];
      } else {
        cloneOp(id, block, at);
      }
    }
    return yielded;
  }

  Module& m_;
  bool aggressive_;
  size_t caller_ = 0;
  bool changed_ = false;
  std::vector<int> inlinable_;            ///< per function: -1 unknown, 0/1
  std::vector<ValueId> replacement_;     ///< inlined call results -> their values
  std::unordered_map<uint32_t, DimId> bindings_;
  std::unordered_map<uint32_t, ValueId> vmap_;
};

}  // namespace

bool runInline(Module& m) { return Inliner(m, /*aggressive=*/false).run(); }
bool runInlineAggressive(Module& m) { return Inliner(m, /*aggressive=*/true).run(); }

}  // namespace tritonc::opt

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
#include <optional>
#include <unordered_map>

#include "PassRegistry.h"
#include "tritonc/base/PythonLimits.h"

namespace tritonc::opt {

namespace {

using namespace ir;

constexpr size_t kSmallFn = 40;
/// Inlining adds at most max(kMinInlineBudget, 4 x the module's ops) ops.
constexpr size_t kMinInlineBudget = 20000;

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

/// Control flow around or inside a block, as the emitter writes it: every
/// `if`, `for` and `while` is one indentation level, every loop one of
/// CPython's statically nested blocks.
struct Nesting {
  int blocks = 0;
  int loops = 0;
};

bool isControlFlow(OpKind k) { return k == OpKind::If || k == OpKind::For || k == OpKind::While; }
bool isLoop(OpKind k) { return k == OpKind::For || k == OpKind::While; }

Nesting nestingAround(const Module& m, BlockId block) {
  Nesting n;
  for (OpId op = m.blocks[block.index].parent; op.isValid();
       op = m.blocks[m.op(op).parent.index].parent) {
    n.blocks += isControlFlow(m.op(op).kind) ? 1 : 0;
    n.loops += isLoop(m.op(op).kind) ? 1 : 0;
  }
  return n;
}

Nesting nestingInside(const Module& m, BlockId block) {
  Nesting deepest;
  for (OpId id : m.blocks[block.index].ops) {
    const Op& o = m.op(id);
    for (BlockId region : o.regions) {
      if (!region.isValid()) continue;
      Nesting inner = nestingInside(m, region);
      deepest.blocks = std::max(deepest.blocks, inner.blocks + (isControlFlow(o.kind) ? 1 : 0));
      deepest.loops = std::max(deepest.loops, inner.loops + (isLoop(o.kind) ? 1 : 0));
    }
  }
  return deepest;
}

class Inliner {
 public:
  Inliner(Module& m, bool aggressive)
      : m_(m), aggressive_(aggressive), inlinable_(m.functions.size(), -1), replacements_(m) {}

  bool run() {
    // Inlining copies bodies: along a chain of calls (f_i calls f_{i-1}) the
    // copies add up to a quadratic size. Past a budget the remaining calls
    // stay calls; no model of the zoo comes near it (ResNet-152: 277 ops).
    size_t original = 0;
    for (const Function& f : m_.functions) {
      if (f.body.isValid()) original += countOps(m_, f.body);
    }
    budget_ = std::max<size_t>(kMinInlineBudget, 4 * original);
    for (size_t f = 0; f < m_.functions.size(); ++f) {
      caller_ = f;
      std::vector<OpId> calls;
      collectCalls(m_.functions[f].body, calls);
      for (OpId call : calls) {
        inlineCall(call);
      }
    }
    if (changed_) {
      replacements_.apply(m_);  // uses of inlined calls' results, rewritten once
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
  ValueId resolve(ValueId v) const { return replacements_.resolve(v); }

  void inlineCall(OpId call) {
    const Op& c = m_.op(call);
    if (c.erased) return;
    auto callee = static_cast<size_t>(c.intAttr);
    if (!inlinable(callee, c.kind)) return;
    const Function& g = m_.functions[callee];
    size_t size = countOps(m_, g.body);
    if (size > budget_) return;
    // A copy nests the callee's control flow inside the caller's: it must
    // stay within what CPython compiles (the checker holds each body to it;
    // a class and its method take two of the indentation levels).
    Nesting around = nestingAround(m_, c.parent);
    Nesting inside = nestingInside(m_, g.body);
    if (around.loops + inside.loops > kMaxPythonLoops ||
        around.blocks + inside.blocks + 2 > kMaxPythonIndent) {
      return;
    }
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
    // Plan, before emitting anything, where every hyperparameter not passed
    // comes from: the size of an argument dimension it names, else its
    // default, whose own hyperparameters must be known first.
    std::vector<std::pair<ValueId, size_t>> fromShape(g.hypers.size(), {ValueId{}, 0});
    std::vector<bool> known(g.hypers.size(), false);
    std::vector<size_t> defaultsInOrder;
    for (size_t h = 0; h < g.hypers.size(); ++h) {
      if (hypers[h].isValid()) {
        known[h] = true;
      } else if (auto source = sizeSource(g, g.hypers[h].name, weights, inputs)) {
        fromShape[h] = *source;
        known[h] = true;
      }
    }
    for (bool progress = true; progress;) {
      progress = false;
      for (size_t h = 0; h < g.hypers.size(); ++h) {
        if (known[h] || !g.hypers[h].defaultValue.isValid()) continue;
        if (regionNeeds(g.hypers[h].defaultValue, known)) {
          known[h] = true;
          defaultsInOrder.push_back(h);
          progress = true;
        }
      }
    }
    if (std::find(known.begin(), known.end(), false) != known.end()) return;
    for (size_t i = 0; i < g.inputs.size(); ++i) {
      if (inputs[i].isValid()) continue;
      if (!g.inputs[i].defaultValue.isValid() || !regionNeeds(g.inputs[i].defaultValue, known)) {
        return;
      }
    }
    // Emit: sizes read from arguments, defaults in dependency order.
    BlockId block = c.parent;
    std::vector<OpId>& ops = m_.blocks[block.index].ops;
    size_t at = static_cast<size_t>(std::find(ops.begin(), ops.end(), call) - ops.begin());
    TypeId int32 = m_.types.scalar(DType::Int32);
    for (size_t h = 0; h < g.hypers.size(); ++h) {
      if (!hypers[h].isValid() && fromShape[h].first.isValid()) {
        hypers[h] = emitShapeDim(fromShape[h].first, fromShape[h].second, int32, block, at);
      }
    }
    for (size_t h : defaultsInOrder) {
      hypers[h] = cloneRegionValue(g.hypers[h].defaultValue, hypers, block, at);
    }
    for (size_t i = 0; i < g.inputs.size(); ++i) {
      if (!inputs[i].isValid()) {
        inputs[i] = cloneRegionValue(g.inputs[i].defaultValue, hypers, block, at);
      }
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
    budget_ -= size;
    if (m_.op(call).resultsCount == 1) {
      if (!returned.isValid()) return;
      replacements_.record(m_.result(call), returned);
    }
    m_.erase(call);
    changed_ = true;
  }

  // The argument and dimension whose size hyperparameter `name` is (a size
  // variable of a weight or input shape of `g`), if any.
  std::optional<std::pair<ValueId, size_t>> sizeSource(const Function& g, IdentifierId name,
                                                       const std::vector<ValueId>& weights,
                                                       const std::vector<ValueId>& inputs) const {
    auto search = [&](TypeId declared, ValueId arg) -> std::optional<std::pair<ValueId, size_t>> {
      if (!arg.isValid() || !m_.types.isTensor(declared) || !m_.types.node(declared).rankKnown) {
        return std::nullopt;
      }
      std::span<const DimId> shape = m_.types.shape(declared);
      for (size_t d = 0; d < shape.size(); ++d) {
        const DimStore::Node& n = m_.dims.node(shape[d]);
        if (n.kind == DimKind::Var && n.var == name) return std::make_pair(arg, d);
      }
      return std::nullopt;
    };
    for (size_t i = 0; i < g.weights.size(); ++i) {
      if (auto found = search(g.weights[i].type, weights[i])) return found;
    }
    for (size_t i = 0; i < g.inputs.size(); ++i) {
      if (auto found = search(g.inputs[i].type, inputs[i])) return found;
    }
    return std::nullopt;
  }

  ValueId emitShapeDim(ValueId arg, size_t dim, TypeId int32, BlockId block, size_t& at) {
    OpId op = m_.createOp(BlockId{}, OpKind::ShapeDim, std::span<const ValueId>(&arg, 1),
                          std::span<const TypeId>(&int32, 1));
    m_.op(op).intAttr = static_cast<int64_t>(dim);
    m_.op(op).parent = block;
    std::vector<OpId>& ops = m_.blocks[block.index].ops;
    ops.insert(ops.begin() + static_cast<long>(at), op);
    ++at;
    return m_.result(op);
  }

  // Whether every hyperparameter a default region reads is known (and it
  // reads no weight: a default cannot be copied with one).
  bool regionNeeds(BlockId region, const std::vector<bool>& known) const {
    for (OpId id : m_.blocks[region.index].ops) {
      const Op& o = m_.op(id);
      if (o.kind == OpKind::Hyper && !known[static_cast<size_t>(o.intAttr)]) return false;
      if (o.kind == OpKind::Weight) return false;
      for (BlockId inner : o.regions) {
        if (inner.isValid() && !regionNeeds(inner, known)) return false;
      }
    }
    return true;
  }

  // Clones a declaration region (a default) and returns the value it yields.
  ValueId cloneRegionValue(BlockId region, const std::vector<ValueId>& hypers, BlockId block,
                           size_t& at) {
    ValueId yielded;
    for (OpId id : std::vector<OpId>(m_.blocks[region.index].ops)) {
      const Op& o = m_.op(id);
      if (o.kind == OpKind::Yield) {
        yielded = map(m_.operands(id)[0]);
      } else if (o.kind == OpKind::Hyper) {
        vmap_[m_.result(id).index] = hypers[static_cast<size_t>(o.intAttr)];  // planned
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
  size_t budget_ = 0;  ///< ops inlining may still add to the module
  std::vector<int> inlinable_;            ///< per function: -1 unknown, 0/1
  Replacements replacements_;            ///< inlined call results -> their values
  std::unordered_map<uint32_t, DimId> bindings_;
  std::unordered_map<uint32_t, ValueId> vmap_;
};

}  // namespace

bool runInline(Module& m) { return Inliner(m, /*aggressive=*/false).run(); }
bool runInlineAggressive(Module& m) { return Inliner(m, /*aggressive=*/true).run(); }

}  // namespace tritonc::opt

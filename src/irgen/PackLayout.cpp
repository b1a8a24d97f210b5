//===- PackLayout.cpp - how ternary weights pack along their reductions ---===//
//
// A small interprocedural use analysis. Per function, each weight and input
// gets a summary of the dimension its value is reduced along: nowhere (only
// element-wise or other uses), its second-to-last (the right operand of `@` or
// `matmul`), its last (the left operand, `linear`'s weight), or both. A value
// that only changes form (quantized, negated, converted, scaled by a number
// or a broadcast vector, ...) is the same value for this purpose. A value
// passed to an application or fn call takes the callee's summary of that
// parameter (memoized; a recursive cycle counts as no use, and the other uses
// decide).
//
//===----------------------------------------------------------------------===//
#include "PackLayout.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <unordered_map>

#include "tritonc/sema/CheckedModule.h"

namespace tritonc {

namespace {

using namespace ir;

enum class Use : uint8_t {
  None,          ///< not used
  Neutral,       ///< used, but reduced along no dimension
  SecondToLast,  ///< reduced along its second-to-last dimension (`x @ w`)
  LastDim,       ///< reduced along its last dimension (`w @ y`, `linear(x, w)`)
  Conflict,      ///< both
};

Use join(Use a, Use b) {
  if (a == Use::None || a == Use::Neutral) return b == Use::None ? a : b;
  if (b == Use::None || b == Use::Neutral) return a;
  return a == b ? a : Use::Conflict;
}

// Ops whose result is their first operand in another form (same shape, same
// layout): uses of the result count as uses of the operand.
bool keepsLayout(const Module& m, OpId id) {
  const Op& o = m.op(id);
  switch (o.kind) {
    case OpKind::Neg:
    case OpKind::Cast: return true;
    case OpKind::Builtin:
    case OpKind::BuiltinStateful:
      switch (static_cast<BuiltinFn>(o.intAttr)) {
        case BuiltinFn::TernaryQuantize:
        case BuiltinFn::TernaryDequantize:
        case BuiltinFn::SteQuantize:
        case BuiltinFn::StopGradient:
        case BuiltinFn::Abs:
        case BuiltinFn::Sign: return true;
        default: return false;
      }
    default: return false;
  }
}

// A constant integer operand's value (`-1` is the negation of a constant
// before the optimizer folds it).
std::optional<int64_t> constantInt(const Module& m, ValueId v) {
  OpId def = m.values[v.index].def;
  if (!def.isValid()) return std::nullopt;
  const Op& o = m.op(def);
  if (o.kind == OpKind::Neg && !m.operands(def).empty()) {
    std::optional<int64_t> negated = constantInt(m, m.operands(def)[0]);
    if (!negated || *negated == std::numeric_limits<int64_t>::min()) return std::nullopt;
    return -*negated;
  }
  if (o.kind != OpKind::Constant || o.constKind != ConstKind::Int) return std::nullopt;
  return o.intAttr;
}

// Whether op `id` swaps the last two dimensions of its operand (`w.T` of a
// 2-D `w`, `transpose(w)`, `transpose(w, 0, 1)`, `transpose(v, -1, -2)`): a
// reduction of the result along its second-to-last dimension reduces the
// operand along its last.
bool swapsLastTwo(const Module& m, OpId id) {
  const Op& o = m.op(id);
  std::span<const ValueId> operands = m.operands(id);
  if (operands.empty() || o.resultsCount == 0) return false;
  TypeId t = m.typeOf(operands[0]);
  if (!m.types.isTensor(t) || !m.types.node(t).rankKnown || m.types.shape(t).size() < 2) {
    return false;
  }
  auto rank = static_cast<int64_t>(m.types.shape(t).size());
  if (o.kind == OpKind::TransposeAll) return rank == 2;
  if ((o.kind != OpKind::Builtin && o.kind != OpKind::BuiltinStateful) ||
      static_cast<BuiltinFn>(o.intAttr) != BuiltinFn::Transpose) {
    return false;
  }
  int64_t dims[2] = {-2, -1};  // transpose's defaults
  std::span<const int64_t> params = m.ints(id);
  for (size_t i = 1; i < operands.size() && i < params.size(); ++i) {
    if (params[i] < 1 || params[i] > 2) continue;
    std::optional<int64_t> d = constantInt(m, operands[i]);
    if (!d) return false;
    dims[params[i] - 1] = *d;
  }
  for (int64_t& d : dims) d = d < 0 ? d + rank : d;
  return std::min(dims[0], dims[1]) == rank - 2 && std::max(dims[0], dims[1]) == rank - 1;
}

// Whether op `id` selects along leading dimensions only (`ws[i]` of stacked
// weights [n, out, in], `ws[i, :, :]`): the result's last two dimensions are
// the operand's, so a reduction of the result is one of the operand.
bool selectsLeading(const Module& m, OpId id) {
  const Op& o = m.op(id);
  std::span<const ValueId> operands = m.operands(id);
  if (o.kind != OpKind::Index || operands.empty() || o.resultsCount == 0) return false;
  TypeId t = m.typeOf(operands[0]);
  TypeId r = m.typeOf(m.result(id));
  if (!m.types.isTensor(t) || !m.types.node(t).rankKnown || !m.types.isTensor(r) ||
      !m.types.node(r).rankKnown || m.types.shape(r).size() < 2) {
    return false;
  }
  size_t rank = m.types.shape(t).size();
  std::span<const int64_t> codes = m.ints(id);
  if (rank < 3 || codes.empty()) return false;
  for (size_t i = rank - 2; i < codes.size(); ++i) {
    if (codes[i] != -2) return false;  // the last two are taken whole
  }
  return true;
}

// The operand of op `id` whose layout its result keeps when the op scales it
// element-wise (`w * 2.0`, `s * w`, `w / 4`, `w * gains` with gains broadcast
// into w's shape): the result has that operand's rank, and the other operand is
// a scalar or has no more dimensions. -1 when the op is no such scaling.
int scaledOperand(const Module& m, OpId id) {
  const Op& o = m.op(id);
  std::span<const ValueId> operands = m.operands(id);
  if ((o.kind != OpKind::Mul && o.kind != OpKind::Div) || operands.size() != 2 ||
      o.resultsCount == 0) {
    return -1;
  }
  auto rankOf = [&](TypeId t) -> std::optional<size_t> {
    if (!m.types.isTensor(t)) return 0;  // a number
    if (!m.types.node(t).rankKnown) return std::nullopt;
    return m.types.shape(t).size();
  };
  std::optional<size_t> result = rankOf(m.typeOf(m.result(id)));
  if (!result || *result < 2) return -1;
  for (int i = 0; i < (o.kind == OpKind::Div ? 1 : 2); ++i) {  // a divisor is no weight
    std::optional<size_t> own = rankOf(m.typeOf(operands[static_cast<size_t>(i)]));
    std::optional<size_t> other = rankOf(m.typeOf(operands[static_cast<size_t>(1 - i)]));
    if (own && other && *own == *result && *other < *result) return i;
  }
  return -1;
}

class PackLayouts {
 public:
  explicit PackLayouts(Module& m) : m_(m), summaries_(m.functions.size()) {}

  void run() {
    for (size_t f = 0; f < m_.functions.size(); ++f) {
      Function& fn = m_.functions[f];
      if (fn.kind != Function::Kind::Layer || !fn.body.isValid()) continue;
      const Summary& s = summarize(f);
      for (size_t w = 0; w < fn.weights.size(); ++w) {
        WeightDecl& decl = fn.weights[w];
        decl.packRuns = PackRuns::Rows;
        if (!m_.types.isTernary(decl.type) || !m_.types.isTensor(decl.type) ||
            !m_.types.node(decl.type).rankKnown) {
          continue;
        }
        size_t rank = m_.types.shape(decl.type).size();
        if (rank >= 2 && s.weights[w] == Use::SecondToLast) decl.packRuns = PackRuns::Columns;
        if (rank >= 3 && s.weights[w] == Use::LastDim) decl.packRuns = PackRuns::LastDim;
      }
    }
  }

 private:
  struct Summary {
    enum class State : uint8_t { New, InProgress, Done } state = State::New;
    std::vector<Use> weights, inputs;
  };

  // Summarizes `f` after the functions it calls, depth first with an
  // explicit stack (a chain of calls may be as long as the file).
  const Summary& summarize(size_t f) {
    if (summaries_[f].state != Summary::State::New) return summaries_[f];
    std::vector<std::pair<size_t, size_t>> stack{{f, 0}};  // (function, next callee)
    summaries_[f].state = Summary::State::InProgress;
    while (!stack.empty()) {
      auto& [at, next] = stack.back();
      const std::vector<size_t>& callees = calleesOf(at);
      if (next < callees.size()) {
        size_t callee = callees[next++];
        if (summaries_[callee].state == Summary::State::New) {
          summaries_[callee].state = Summary::State::InProgress;
          stack.emplace_back(callee, 0);
        }
        continue;
      }
      summarizeBody(at);
      stack.pop_back();
    }
    return summaries_[f];
  }

  const std::vector<size_t>& calleesOf(size_t f) {
    auto found = callees_.try_emplace(f);
    std::vector<size_t>& callees = found.first->second;
    if (found.second && m_.functions[f].body.isValid()) {
      m_.forEachOp(m_.functions[f].body, [&](OpId id) {
        const Op& o = m_.op(id);
        if (o.kind == OpKind::Apply || o.kind == OpKind::CallFn) {
          callees.push_back(static_cast<size_t>(o.intAttr));
        }
      });
    }
    return callees;
  }

  // `f`'s summary, from its callees' (done, or in progress: a recursive
  // cycle, which counts as no use).
  void summarizeBody(size_t f) {
    Summary& s = summaries_[f];
    const Function& fn = m_.functions[f];
    s.weights.assign(fn.weights.size(), Use::None);
    s.inputs.assign(fn.inputs.size(), Use::None);
    if (fn.body.isValid()) {
      // The values tracked: the body's arguments (inputs) and weight reads,
      // and what they become through layout-keeping ops and transposes of
      // their last two dimensions.
      struct Tracked {
        bool weight;
        uint32_t index;
        bool transposed;  ///< its last two dimensions swapped: they trade places
      };
      std::unordered_map<uint32_t, Tracked> tracked;  // by value
      const Block& body = m_.blocks[fn.body.index];
      for (size_t i = 0; i < body.args.size() && i < fn.inputs.size(); ++i) {
        tracked[body.args[i].index] = {false, static_cast<uint32_t>(i), false};
      }
      std::vector<Use> weights(fn.weights.size(), Use::None), inputs(fn.inputs.size(), Use::None);
      auto note = [&](ValueId v, Use use) {
        auto it = tracked.find(v.index);
        if (it == tracked.end()) return;
        if (it->second.transposed) {
          use = use == Use::SecondToLast ? Use::LastDim
                : use == Use::LastDim    ? Use::SecondToLast
                                         : use;
        }
        Use& slot = it->second.weight ? weights[it->second.index] : inputs[it->second.index];
        slot = join(slot, use);
      };
      m_.forEachOp(fn.body, [&](OpId id) {
        const Op& o = m_.op(id);
        if (o.kind == OpKind::Weight && o.resultsCount > 0) {
          tracked[m_.result(id).index] = {true, static_cast<uint32_t>(o.intAttr), false};
        }
        std::span<const ValueId> operands = m_.operands(id);
        if (o.kind == OpKind::Apply || o.kind == OpKind::CallFn) {
          auto callee = static_cast<size_t>(o.intAttr);
          std::span<const int64_t> params = m_.ints(id);
          const Summary& cs = summaries_[callee];
          const Function& g = m_.functions[callee];
          for (size_t i = 0; i < operands.size(); ++i) {
            const ParamRef& p = g.params[static_cast<size_t>(params[i])];
            Use use = p.kind == ParamRef::Kind::Weight && p.index < cs.weights.size()
                          ? cs.weights[p.index]
                      : p.kind == ParamRef::Kind::Input && p.index < cs.inputs.size()
                          ? cs.inputs[p.index]
                          : Use::Neutral;
            note(operands[i], use);
          }
        } else if (int scaled = scaledOperand(m_, id);
                   scaled >= 0 && tracked.count(operands[static_cast<size_t>(scaled)].index) != 0) {
          tracked[m_.result(id).index] = tracked[operands[static_cast<size_t>(scaled)].index];
          note(operands[static_cast<size_t>(1 - scaled)], Use::Neutral);
        } else if (bool swaps = swapsLastTwo(m_, id);
                   (swaps || keepsLayout(m_, id) || selectsLeading(m_, id)) &&
                   o.resultsCount > 0 && !operands.empty() &&
                   tracked.count(operands[0].index) != 0) {
          Tracked t = tracked[operands[0].index];
          t.transposed = t.transposed != swaps;
          tracked[m_.result(id).index] = t;
          for (size_t i = 1; i < operands.size(); ++i) note(operands[i], Use::Neutral);
        } else {
          bool matmul = o.kind == OpKind::MatMul ||
                        ((o.kind == OpKind::Builtin || o.kind == OpKind::BuiltinStateful) &&
                         static_cast<BuiltinFn>(o.intAttr) == BuiltinFn::Matmul);
          bool linear = (o.kind == OpKind::Builtin || o.kind == OpKind::BuiltinStateful) &&
                        static_cast<BuiltinFn>(o.intAttr) == BuiltinFn::LinearFn;
          for (size_t i = 0; i < operands.size(); ++i) {
            Use use = Use::Neutral;
            if (matmul && operands.size() >= 2 && i < 2) {
              use = operands[0] == operands[1] ? Use::Conflict
                    : i == 0                   ? Use::LastDim
                                               : Use::SecondToLast;
            } else if (linear && i == 1) {
              use = Use::LastDim;
            }
            note(operands[i], use);
          }
        }
      });
      s.weights = std::move(weights);
      s.inputs = std::move(inputs);
    }
    s.state = Summary::State::Done;
  }

  Module& m_;
  std::vector<Summary> summaries_;
  std::unordered_map<size_t, std::vector<size_t>> callees_;
};

}  // namespace

void annotatePackLayouts(ir::Module& module) { PackLayouts(module).run(); }

}  // namespace tritonc

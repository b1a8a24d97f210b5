//===- PackLayout.cpp - which ternary weights pack by columns -------------===//
//
// A small interprocedural use analysis. Per function, each weight and input
// gets a summary of how its value is used: not at all, only as the right
// operand of `@`, or otherwise. A value passed to an application or fn call
// takes the callee's summary of that parameter (memoized; a recursive cycle
// counts as no use, and the other uses decide).
//
//===----------------------------------------------------------------------===//
#include "PackLayout.h"

#include <unordered_map>

namespace tritonc {

namespace {

using namespace ir;

enum class Use : uint8_t { None, MatmulRhs, Other };

Use join(Use a, Use b) {
  if (a == Use::None) return b;
  if (b == Use::None) return a;
  return a == b ? a : Use::Other;
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
        decl.packByColumns = m_.types.isTernary(decl.type) && m_.types.isTensor(decl.type) &&
                             m_.types.node(decl.type).rankKnown &&
                             m_.types.shape(decl.type).size() == 2 &&
                             s.weights[w] == Use::MatmulRhs;
      }
    }
  }

 private:
  struct Summary {
    enum class State : uint8_t { New, InProgress, Done } state = State::New;
    std::vector<Use> weights, inputs;
  };

  const Summary& summarize(size_t f) {
    Summary& s = summaries_[f];
    if (s.state != Summary::State::New) return s;  // done, or a recursive cycle
    s.state = Summary::State::InProgress;
    const Function& fn = m_.functions[f];
    s.weights.assign(fn.weights.size(), Use::None);
    s.inputs.assign(fn.inputs.size(), Use::None);
    if (fn.body.isValid()) {
      // The values tracked: the body's arguments (inputs) and weight reads.
      std::unordered_map<uint32_t, std::pair<bool, uint32_t>> tracked;  // value -> (weight?, index)
      const Block& body = m_.blocks[fn.body.index];
      for (size_t i = 0; i < body.args.size() && i < fn.inputs.size(); ++i) {
        tracked[body.args[i].index] = {false, static_cast<uint32_t>(i)};
      }
      std::vector<Use> weights(fn.weights.size(), Use::None), inputs(fn.inputs.size(), Use::None);
      auto note = [&](ValueId v, Use use) {
        auto it = tracked.find(v.index);
        if (it == tracked.end()) return;
        Use& slot = it->second.first ? weights[it->second.second] : inputs[it->second.second];
        slot = join(slot, use);
      };
      m_.forEachOp(fn.body, [&](OpId id) {
        const Op& o = m_.op(id);
        if (o.kind == OpKind::Weight && o.resultsCount > 0) {
          tracked[m_.result(id).index] = {true, static_cast<uint32_t>(o.intAttr)};
        }
        std::span<const ValueId> operands = m_.operands(id);
        if (o.kind == OpKind::Apply || o.kind == OpKind::CallFn) {
          auto callee = static_cast<size_t>(o.intAttr);
          std::span<const int64_t> params = m_.ints(id);
          const Summary& cs = summarize(callee);
          const Function& g = m_.functions[callee];
          for (size_t i = 0; i < operands.size(); ++i) {
            const ParamRef& p = g.params[static_cast<size_t>(params[i])];
            Use use = p.kind == ParamRef::Kind::Weight && p.index < cs.weights.size()
                          ? cs.weights[p.index]
                      : p.kind == ParamRef::Kind::Input && p.index < cs.inputs.size()
                          ? cs.inputs[p.index]
                          : Use::Other;
            note(operands[i], use);
          }
        } else {
          for (size_t i = 0; i < operands.size(); ++i) {
            bool rhs = o.kind == OpKind::MatMul && i == 1 && operands[0] != operands[1];
            note(operands[i], rhs ? Use::MatmulRhs : Use::Other);
          }
        }
      });
      s.weights = std::move(weights);
      s.inputs = std::move(inputs);
    }
    s.state = Summary::State::Done;
    return s;
  }

  Module& m_;
  std::vector<Summary> summaries_;
};

}  // namespace

void annotatePackLayouts(ir::Module& module) { PackLayouts(module).run(); }

}  // namespace tritonc

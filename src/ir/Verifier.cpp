//===- Verifier.cpp - IR invariants ---------------------------------------===//
#include "tritonc/ir/Verifier.h"

#include <fmt/format.h>

namespace tritonc::ir {

namespace {

class Verifier {
 public:
  explicit Verifier(const Module& m) : m_(m), visible_(m.values.size(), false) {}

  std::vector<std::string> run() {
    for (size_t i = 0; i < m_.globals.size(); ++i) {
      where_ = fmt::format("global #{}", i);
      function_ = nullptr;
      checkRegion(m_.globals[i].init, 1, OpId{});
    }
    for (size_t i = 0; i < m_.functions.size(); ++i) {
      const Function& f = m_.functions[i];
      where_ = f.name.isValid() ? std::string(m_.interner->spelling(f.name)) : "main";
      function_ = &f;
      for (const HyperDecl& h : f.hypers) checkRegion(h.defaultValue, 1, OpId{});
      for (const WeightDecl& w : f.weights) checkRegion(w.init, 1, OpId{});
      for (const InputDecl& in : f.inputs) checkRegion(in.defaultValue, 1, OpId{});
      if (f.sameAs >= 0 && (static_cast<size_t>(f.sameAs) >= i ||
                            m_.functions[static_cast<size_t>(f.sameAs)].kind != f.kind ||
                            m_.functions[static_cast<size_t>(f.sameAs)].sameAs >= 0 ||
                            f.kind == Function::Kind::Main)) {
        problem("'same as' must name an earlier declaration of the same kind, itself not merged");
      }
      if (!f.body.isValid()) {
        problem("function without a body");
        continue;
      }
      checkBlock(f.body, OpId{}, 0);
    }
    return std::move(problems_);
  }

 private:
  template <typename... Args>
  void problem(fmt::format_string<Args...> format, Args&&... args) {
    problems_.push_back(where_ + ": " + fmt::format(format, std::forward<Args>(args)...));
  }

  // A region that must yield `yields` values.
  void checkRegion(BlockId block, size_t yields, OpId owner) {
    if (!block.isValid()) {
      return;
    }
    checkBlock(block, owner, 0);
    const Block& b = m_.blocks[block.index];
    if (!b.ops.empty()) {
      const Op& last = m_.op(b.ops.back());
      if (last.kind == OpKind::Yield && last.operandsCount != yields) {
        problem("a region yields {} values where {} are expected", last.operandsCount, yields);
      }
    }
  }

  void checkBlock(BlockId block, OpId owner, int loopDepth) {
    const Block& b = m_.blocks[block.index];
    std::vector<ValueId> defined;
    for (ValueId arg : b.args) {
      visible_[arg.index] = true;
      defined.push_back(arg);
    }
    if (b.ops.empty()) {
      problem("an empty block (every block ends with a terminator)");
    }
    for (size_t i = 0; i < b.ops.size(); ++i) {
      OpId id = b.ops[i];
      const Op& o = m_.op(id);
      if (o.erased) {
        problem("an erased op is still listed in a block");
        continue;
      }
      if (!(o.parent == block)) {
        problem("op '{}' is listed in a block it does not belong to", opName(o.kind));
      }
      bool last = i + 1 == b.ops.size();
      if (isTerminator(o.kind) != last && !(last && neverFallsThrough(id))) {
        if (last) {
          problem("a block ends with '{}', which is not a terminator", opName(o.kind));
        } else {
          problem("terminator '{}' is not the last op of its block", opName(o.kind));
        }
      }
      if ((o.kind == OpKind::Break || o.kind == OpKind::Continue)) {
        if (loops_.empty()) {
          problem("'{}' outside of a loop", opName(o.kind));
        } else if (o.operandsCount != m_.op(loops_.back()).resultsCount) {
          problem("'{}' carries {} values where its loop has {}", opName(o.kind),
                  o.operandsCount, m_.op(loops_.back()).resultsCount);
        }
      }
      checkReferences(id, o);
      for (ValueId operand : m_.operands(id)) {
        if (!operand.isValid() || operand.index >= visible_.size() || !visible_[operand.index]) {
          problem("op '{}' uses a value that does not dominate it", opName(o.kind));
        }
      }
      checkRegions(id, loopDepth);
      for (ValueId result : m_.results(id)) {
        if (!m_.typeOf(result).isValid()) {
          problem("op '{}' has a result without a type", opName(o.kind));
        }
        visible_[result.index] = true;
        defined.push_back(result);
      }
    }
    for (ValueId v : defined) {
      visible_[v.index] = false;
    }
    (void)owner;
  }

  // An `if` both of whose branches return (or leave a loop) ends its block
  // as a terminator would: control never reaches what follows it.
  bool neverFallsThrough(OpId id) const {
    const Op& o = m_.op(id);
    if (o.kind != OpKind::If) {
      return false;
    }
    for (BlockId region : o.regions) {
      const Block& b = m_.blocks[region.index];
      if (b.ops.empty()) {
        return false;
      }
      OpId last = b.ops.back();
      const Op& l = m_.op(last);
      bool exits = (isTerminator(l.kind) && l.kind != OpKind::Yield) || neverFallsThrough(last);
      if (!exits) {
        return false;
      }
    }
    return true;
  }

  // Attribute indices name declarations that exist; a division's type is
  // the language's.
  void checkReferences(OpId id, const Op& o) {
    auto index = static_cast<size_t>(o.intAttr);
    switch (o.kind) {
      case OpKind::Hyper:
        if (function_ == nullptr || index >= function_->hypers.size()) {
          problem("'hyper' reads hyperparameter #{}, which this function does not have", index);
        }
        break;
      case OpKind::Weight:
        if (function_ == nullptr || index >= function_->weights.size()) {
          problem("'weight' reads weight #{}, which this function does not have", index);
        }
        break;
      case OpKind::Global:
        if (index >= m_.globals.size()) problem("'global' reads global #{}", index);
        break;
      case OpKind::Instantiate:
      case OpKind::Forward:
        if (function_ == nullptr || index >= function_->instances.size()) {
          problem("'{}' names instance #{}, which this function does not have", opName(o.kind),
                  index);
        }
        break;
      case OpKind::Apply:
      case OpKind::CallFn:
        if (index >= m_.functions.size()) problem("'{}' calls function #{}", opName(o.kind), index);
        break;
      case OpKind::Div:
        // `/` of tensors is true division, as torch's (LANGUAGE.md): its
        // result is floating; only numbers floor (Python's `//`).
        if (o.resultsCount == 1 && m_.typeOf(m_.result(id)).isValid() &&
            m_.types.isTensor(m_.typeOf(m_.result(id))) &&
            isIntegral(m_.types.node(m_.typeOf(m_.result(id))).dtype)) {
          problem("'div' of tensors has an integer result; '/' of tensors is true division");
        }
        break;
      default: break;
    }
  }

  void checkRegions(OpId id, int loopDepth) {
    const Op& o = m_.op(id);
    size_t results = o.resultsCount;
    switch (o.kind) {
      case OpKind::If:
        for (BlockId region : o.regions) {
          if (!region.isValid()) {
            problem("'if' without both regions");
            continue;
          }
          checkYield(region, results);
          checkBlock(region, id, loopDepth);
        }
        break;
      case OpKind::For: {
        BlockId body = o.regions[0];
        if (!body.isValid() || m_.blocks[body.index].args.size() != results + 1) {
          problem("'for' body must take the induction variable and {} carried values", results);
          return;
        }
        if (o.operandsCount != results + 3) {
          problem("'for' must have start, stop, step and {} initial values", results);
        }
        checkYield(body, results);
        loops_.push_back(id);
        checkBlock(body, id, loopDepth + 1);
        loops_.pop_back();
        break;
      }
      case OpKind::While: {
        BlockId cond = o.regions[0];
        BlockId body = o.regions[1];
        if (!cond.isValid() || !body.isValid()) {
          problem("'while' without its condition and body");
          return;
        }
        if (m_.blocks[cond.index].args.size() != results ||
            m_.blocks[body.index].args.size() != results || o.operandsCount != results) {
          problem("'while' carries {} values, but its regions take {} and {} and it starts with {}",
                  results, m_.blocks[cond.index].args.size(), m_.blocks[body.index].args.size(),
                  o.operandsCount);
        }
        checkYield(cond, 1);
        checkYield(body, results);
        checkBlock(cond, id, loopDepth);
        loops_.push_back(id);
        checkBlock(body, id, loopDepth + 1);
        loops_.pop_back();
        break;
      }
      default:
        if (o.regions[0].isValid() || o.regions[1].isValid()) {
          problem("op '{}' cannot have regions", opName(o.kind));
        }
        break;
    }
  }

  void checkYield(BlockId region, size_t count) {
    const Block& b = m_.blocks[region.index];
    if (b.ops.empty()) {
      return;  // reported by checkBlock
    }
    const Op& last = m_.op(b.ops.back());
    if (last.kind == OpKind::Yield && last.operandsCount != count) {
      problem("a region yields {} values where its op has {} results", last.operandsCount, count);
    }
  }

  const Module& m_;
  const Function* function_ = nullptr;
  std::vector<OpId> loops_;  ///< the enclosing loops, innermost last
  std::vector<bool> visible_;
  std::vector<std::string> problems_;
  std::string where_;
};

}  // namespace

std::vector<std::string> verify(const Module& module) { return Verifier(module).run(); }

}  // namespace tritonc::ir

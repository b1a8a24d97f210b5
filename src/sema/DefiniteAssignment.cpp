//===- DefiniteAssignment.cpp - a `let` without a value is set before use -===//
//
// `let x: T` (or `let x`) without a value leaves x undefined until it is
// assigned. Reading it on a path where no assignment came first would read
// Python's None at run time, so it is an error here, as in Swift, Java and
// C#: definite assignment over the statement tree, after the body is checked
// (names are resolved by then).
//
// The state is the set of such variables that may still be unset. A branch
// joins its paths by union; a path that ends (return, break, continue)
// reaches no join. A loop may run zero times, so after it the state is the
// one before it, except for `while true`, left only by its breaks.
//
//===----------------------------------------------------------------------===//
#include <set>

#include "SemaImpl.h"

namespace tritonc::sema {
namespace {

struct State {
  std::set<uint32_t> maybeUnset;  ///< symbols of value-less lets not yet assigned on some path
  bool reachable = true;
};

State join(State a, const State& b) {
  if (!a.reachable) return b;
  if (!b.reachable) return a;
  a.maybeUnset.insert(b.maybeUnset.begin(), b.maybeUnset.end());
  return a;
}

}  // namespace

class Checker::DefiniteAssignment {
 public:
  explicit DefiniteAssignment(Checker& checker) : c_(checker), tree_(checker.tree_) {}

  void run(NodeId body) { block(body, State{}); }

 private:
  struct Loop {
    bool untilBreak = false;   ///< `while true`: the state after it comes from its breaks
    State afterBreaks{{}, false};
  };

  State block(NodeId node, State s) {
    if (!node.isValid()) return s;
    for (NodeId statement : tree_.list(tree_.listA(node))) {
      s = this->statement(statement, std::move(s));
    }
    return s;
  }

  State statement(NodeId node, State s) {
    switch (tree_.kind(node)) {
      case NodeKind::Let: {
        NodeId init = tree_.childB(node);
        reads(init, s);
        uint32_t symbol = c_.module_.nodeSymbol[node.index];
        if (!init.isValid() && symbol != UINT32_MAX) {
          s.maybeUnset.insert(symbol);
          declared_.emplace(symbol, node);
        }
        return s;
      }
      case NodeKind::Assign: {
        NodeId target = tree_.childA(node);
        bool plain = c_.tokens().kind(tree_.token(node)) == TokenKind::Equal;
        reads(tree_.childB(node), s);
        if (plain && tree_.kind(target) == NodeKind::Name) {
          s.maybeUnset.erase(c_.module_.nodeSymbol[target.index]);
        } else {
          reads(target, s);  // `x[i] = v` and `x += v` read x
        }
        return s;
      }
      case NodeKind::ExprStmt: reads(tree_.childA(node), s); return s;
      case NodeKind::Return:
        reads(tree_.childA(node), s);
        s.reachable = false;
        return s;
      case NodeKind::Break:
        if (!loops_.empty()) {
          loops_.back().afterBreaks = join(std::move(loops_.back().afterBreaks), s);
        }
        s.reachable = false;
        return s;
      case NodeKind::Continue: s.reachable = false; return s;
      case NodeKind::If: {
        reads(tree_.childA(node), s);
        State then = block(tree_.childB(node), s);
        NodeId otherwise = tree_.childC(node);
        State other = !otherwise.isValid()                     ? s
                      : tree_.kind(otherwise) == NodeKind::If ? statement(otherwise, s)
                                                               : block(otherwise, s);
        return join(std::move(then), other);
      }
      case NodeKind::For:
        reads(tree_.childA(node), s);
        loop(tree_.childB(node), s, /*untilBreak=*/false);
        return s;
      case NodeKind::While: {
        NodeId cond = tree_.childA(node);
        reads(cond, s);
        bool forever = tree_.kind(cond) == NodeKind::BoolLit &&
                       c_.tokens().kind(tree_.token(cond)) == TokenKind::KwTrue;
        State after = loop(tree_.childB(node), s, forever);
        return forever ? after : s;
      }
      default: return s;
    }
  }

  /// Walks a loop body from `s` (its first iteration: the least assigned);
  /// returns the state its breaks leave.
  State loop(NodeId body, const State& s, bool untilBreak) {
    loops_.push_back(Loop{untilBreak});
    block(body, s);
    State after = std::move(loops_.back().afterBreaks);
    loops_.pop_back();
    return after;
  }

  void reads(NodeId expr, const State& s) {
    if (!expr.isValid() || !s.reachable || s.maybeUnset.empty()) return;
    tree_.forEachNode(expr, [&](NodeId n) {
      if (tree_.kind(n) != NodeKind::Name) return;
      uint32_t symbol = c_.module_.nodeSymbol[n.index];
      if (symbol == UINT32_MAX || s.maybeUnset.count(symbol) == 0 ||
          c_.subModuleAssigned_.count(symbol) != 0 || !reported_.insert(symbol).second) {
        return;
      }
      std::string name(c_.spelling(c_.module_.symbols[symbol].name));
      NodeId let = declared_.at(symbol);
      c_.diags_->report(Diag::UsedBeforeAssigned, c_.source(), c_.rangeOf(n), name)
          .note(Note::DeclaredWithoutValue, c_.source(), c_.tokens().range(tree_.token(let)), name);
    });
  }

  Checker& c_;
  const Tree& tree_;
  std::vector<Loop> loops_;
  std::unordered_map<uint32_t, NodeId> declared_;
  std::set<uint32_t> reported_;  ///< one diagnostic per variable
};

void Checker::checkDefiniteAssignment(NodeId body) { DefiniteAssignment(*this).run(body); }

}  // namespace tritonc::sema

//===- LICM.cpp - loop-invariant code motion ------------------------------===//
//
// Moves pure ops out of `for` and `while` bodies when all their operands are
// defined outside the loop, so they run once instead of once per iteration.
// Hoisting runs the op before everything else of the loop, so an op that can
// raise (division, tensor ops with shape checks) moves only when it would
// have run first anyway: out of a `for` whose constant trip count is at least
// one, and only if no op before it in the body may leave the loop (break,
// continue, return) or has an effect (print, assert, a stateful op). Ops that
// cannot raise (constants, reads of hyperparameters, weights and globals,
// shapes, scalar arithmetic other than division) always move. Stateful ops
// (random draws, dropout, forward calls) and impure calls never move, nor
// do reads of state that an op of the loop may change (a batch norm's
// running statistics, updated by its forward in training).
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "PassRegistry.h"

namespace tritonc::opt {

namespace {

using namespace ir;

class LICM {
 public:
  explicit LICM(Module& m) : m_(m), purity_(m), inside_(m.values.size(), false) {}

  bool run() {
    forEachRegionRoot(m_, [&](BlockId block) { walk(block); });
    return changed_;
  }

 private:
  void walk(BlockId block) {
    std::vector<OpId> ops = m_.blocks[block.index].ops;
    for (OpId id : ops) {
      if (m_.op(id).erased) {
        continue;
      }
      for (BlockId region : m_.regionsOf(id)) {  // by value: the walk may create ops
        if (region.isValid()) {
          walk(region);  // inner loops first: what leaves them may leave this one too
        }
      }
      OpKind kind = m_.op(id).kind;
      if (kind == OpKind::For || kind == OpKind::While) {
        hoist(id);
      }
    }
    placeHoisted(block);
  }

  // Puts the ops hoisted out of the loops of `block` before their loops, in
  // one pass over the block (inserting them loop by loop moved the rest of
  // the block each time: quadratic in a block of many loops). Done before
  // the loop that contains the block hoists from it in turn.
  void placeHoisted(BlockId block) {
    auto it = hoisted_.find(block.index);
    if (it == hoisted_.end()) return;
    std::unordered_map<uint32_t, const std::vector<OpId>*> before;
    size_t count = m_.blocks[block.index].ops.size();
    for (const auto& [loop, moved] : it->second) {
      before.emplace(loop.index, &moved);
      count += moved.size();
    }
    std::vector<OpId> placed;
    placed.reserve(count);
    for (OpId id : m_.blocks[block.index].ops) {
      auto at = before.find(id.index);
      if (at != before.end()) placed.insert(placed.end(), at->second->begin(), at->second->end());
      placed.push_back(id);
    }
    m_.blocks[block.index].ops = std::move(placed);
    hoisted_.erase(it);
  }

  void mark(BlockId block, bool value) {
    for (ValueId arg : m_.blocks[block.index].args) {
      inside_[arg.index] = value;
    }
    for (OpId id : m_.blocks[block.index].ops) {
      for (ValueId r : m_.results(id)) {
        inside_[r.index] = value;
      }
      for (BlockId region : m_.regionsOf(id)) {  // by value: the walk may create ops
        if (region.isValid()) {
          mark(region, value);
        }
      }
    }
  }

  std::optional<int64_t> constInt(ValueId v) const {
    std::optional<ConstantValue> c = constantOf(m_, v);
    if (c && c->kind == ConstKind::Int) {
      return c->i;
    }
    return std::nullopt;
  }

  // Whether the loop surely runs its body at least once.
  bool runsAtLeastOnce(OpId loop) const {
    const Op& o = m_.op(loop);
    if (o.kind != OpKind::For) {
      return false;
    }
    std::span<const ValueId> operands = m_.operands(loop);
    std::optional<int64_t> start = constInt(operands[0]);
    std::optional<int64_t> stop = constInt(operands[1]);
    std::optional<int64_t> step = constInt(operands[2]);
    return start && stop && step && ((*step > 0 && *stop > *start) || (*step < 0 && *stop < *start));
  }

  bool cannotRaise(OpId id) const {
    const Op& o = m_.op(id);
    switch (o.kind) {
      case OpKind::Constant:
      case OpKind::Hyper:
      case OpKind::Weight:
      case OpKind::Global:
      case OpKind::List:
      case OpKind::ShapeOf:
      case OpKind::ShapeDim:
      case OpKind::TransposeAll: return true;
      case OpKind::Add:
      case OpKind::Sub:
      case OpKind::Mul:
      case OpKind::Neg:
      case OpKind::Not:
      case OpKind::Eq:
      case OpKind::Ne:
      case OpKind::Lt:
      case OpKind::Le:
      case OpKind::Gt:
      case OpKind::Ge:
      case OpKind::And:
      case OpKind::Or:
      case OpKind::Cast:
        // Scalar arithmetic; tensor operands could fail to broadcast.
        for (ValueId v : m_.operands(id)) {
          if (!m_.types.isScalar(m_.typeOf(v))) {
            return false;
          }
        }
        if (o.kind == OpKind::Cast) {
          // int(x) of a float raises on infinity and NaN (trit() too).
          DType to = m_.types.node(m_.typeOf(m_.result(id))).dtype;
          DType from = m_.types.node(m_.typeOf(m_.operands(id)[0])).dtype;
          if (isIntegral(to) && to != DType::Bool && isFloating(from)) return false;
        }
        return true;
      default: return false;
    }
  }

  void hoist(OpId loop) {
    for (BlockId region : m_.op(loop).regions) {
      if (region.isValid()) {
        mark(region, true);
      }
    }
    bool runsFirst = runsAtLeastOnce(loop);  // until an exit or an effect is seen
    bool writesState = purity_.writesState(loop);
    BlockId body = m_.op(loop).kind == OpKind::For ? m_.op(loop).regions[0]
                                                   : m_.op(loop).regions[1];
    BlockId parent = m_.op(loop).parent;
    std::vector<OpId> candidates = m_.blocks[body.index].ops;
    std::vector<OpId> moved;
    for (OpId id : candidates) {
      const Op& o = m_.op(id);
      bool pure = purity_.isPure(id) && !isTerminator(o.kind) && !o.regions[0].isValid();
      bool movable = pure && (runsFirst || cannotRaise(id)) &&
                     !(writesState && purity_.readsState(id));
      if (!pure) {
        runsFirst = false;  // an exit or an effect: later ops may not have run
      }
      for (ValueId v : m_.operands(id)) {
        movable = movable && !inside_[v.index];
      }
      if (!movable) {
        continue;
      }
      for (ValueId r : m_.results(id)) {
        inside_[r.index] = false;  // later ops using it may move too
      }
      moved.push_back(id);
    }
    if (!moved.empty()) {
      std::unordered_set<uint32_t> leaving;
      for (OpId id : moved) {
        leaving.insert(id.index);
        m_.op(id).parent = parent;
      }
      std::erase_if(m_.blocks[body.index].ops,
                    [&](OpId id) { return leaving.count(id.index) != 0; });
      hoisted_[parent.index].emplace_back(loop, std::move(moved));  // placeHoisted()
      changed_ = true;
    }
    for (BlockId region : m_.op(loop).regions) {
      if (region.isValid()) {
        mark(region, false);
      }
    }
  }

  Module& m_;
  /// Per block: its loops and the ops hoisted out of each, to be placed
  /// before them (placeHoisted).
  std::unordered_map<uint32_t, std::vector<std::pair<OpId, std::vector<OpId>>>> hoisted_;
  Purity purity_;
  std::vector<bool> inside_;
  bool changed_ = false;
};

}  // namespace

bool runLICM(Module& m) { return LICM(m).run(); }

}  // namespace tritonc::opt

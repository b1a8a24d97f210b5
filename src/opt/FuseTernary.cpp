//===- FuseTernary.cpp - fusion of ternary matmul epilogues ---------------===//
//
// A product with a ternary weight and what follows it become one
// `fused_matmul`: act(scale * (x @ W) + bias). The CUDA target turns it into
// one kernel that reads W at 2 bits and applies the epilogue in registers;
// the PyTorch target into F.linear/addmm and an in-place activation.
//
//   basic (-O1):  x @ W + b,  linear(x, W, b)          with W ternary
//   full  (-O2):  also a scalar scale (x @ W * s + b) and an activation
//                 (relu, gelu, silu, relu6) of the result; and a convolution
//                 sub-module with the BatchNorm2d and activation after it
//                 (fused_conv: batch-norm folding for inference); and the
//                 functional conv2d(x, W) with a ternary W, its scale and
//                 activation (fused_conv2d); and a TernaryLinear sub-module
//                 with the activation after it (fused_linear); and a tensor
//                 added to a convolution (with its batch norm) or TernaryLinear
//                 output, with the activation after the sum: the residual of
//                 a ResNet block or transformer MLP (fused_conv/fused_linear
//                 with a second operand, at the add's place)
//
// Each absorbed op must be the only use of the value it consumes, so no
// intermediate result that something else reads disappears. The fused op
// computes the same expression; only the emitter's evaluation order changes.
// A fused_conv (stateful: the batch norm updates its statistics in
// training) takes the convolution's place, so random draws stay in order;
// the batch norm then runs before the ops between it and the convolution,
// so none of those may read its state (Purity::readsState), run the same
// sub-modules, or be an assert, print or run-time check. A pure fused op takes its last op's place: the product moves
// later, so no op between may change state the product reads.
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <initializer_list>
#include <unordered_map>

#include "PassRegistry.h"

namespace tritonc::opt {

namespace {

using namespace ir;

enum Activation : int64_t { kNone = 0, kRelu = 1, kGelu = 2, kSilu = 3, kRelu6 = 4 };

class Fuser {
 public:
  Fuser(Module& m, bool full)
      : m_(m), full_(full), uses_(countUses(m)), replacements_(m), purity_(m) {}

  bool run() {
    for (Function& f : m_.functions) {
      function_ = &f;
      if (f.body.isValid()) walk(f.body);
    }
    function_ = nullptr;
    if (changed_) {
      replacements_.apply(m_);
    }
    return changed_;
  }

 private:
  const Op* defOf(ValueId v) const {
    const Value& value = m_.values[v.index];
    return value.def.isValid() && !m_.op(value.def).erased ? &m_.op(value.def) : nullptr;
  }
  bool ternary(ValueId v) const { return m_.types.isTernary(m_.typeOf(v)); }
  bool floatTensor(ValueId v) const {
    TypeId t = m_.typeOf(v);
    return m_.types.isTensor(t) && isFloating(m_.types.node(t).dtype) && !m_.types.isTernary(t);
  }
  bool floatScalar(ValueId v) const {
    TypeId t = m_.typeOf(v);
    return m_.types.isScalar(t) && isFloating(m_.types.node(t).dtype);
  }
  // A bias: a 1-D float tensor of the output features.
  bool isBias(ValueId v, ValueId product) const {
    TypeId b = m_.typeOf(v);
    TypeId p = m_.typeOf(product);
    if (!floatTensor(v) || !m_.types.node(b).rankKnown || !m_.types.node(p).rankKnown) {
      return false;
    }
    std::span<const DimId> bs = m_.types.shape(b);
    std::span<const DimId> ps = m_.types.shape(p);
    return bs.size() == 1 && !ps.empty() && m_.dims.equal(bs[0], ps.back()) == Decision::Yes;
  }

  // Operands of a fused op under construction.
  struct Fused {
    ValueId x, w, bias, scale;
    ValueId negated;  ///< `x @ -w`: w, whose negation the scale -1 replaces
    int64_t layout = 0;
    int64_t act = kNone;
    std::vector<OpId> chain;  ///< the absorbed ops, the product first
  };

  void walk(BlockId block) {
    std::vector<OpId> ops = m_.blocks[block.index].ops;
    for (OpId id : ops) {
      if (m_.op(id).erased) continue;
      for (BlockId region : m_.regionsOf(id)) {  // by value: fusing creates ops
        if (region.isValid()) walk(region);
      }
      tryFuse(id);
    }
  }

  // The op that uses `v`, if it is the only use and in the same block.
  OpId soleUser(ValueId v, BlockId block) const {
    if (uses_[v.index] != 1) return OpId{};
    for (OpId id : m_.blocks[block.index].ops) {
      for (ValueId operand : m_.operands(id)) {
        if (operand == v) return m_.op(id).erased ? OpId{} : id;
      }
    }
    return OpId{};
  }

  // The instance declaration a forward op calls, in the function of `block`.
  const InstanceDecl* instanceOf(OpId forward) const {
    const Op& o = m_.op(forward);
    if (o.kind != OpKind::Forward || function_ == nullptr) return nullptr;
    return &function_->instances[static_cast<size_t>(o.intAttr)];
  }
  bool isLayer(const InstanceDecl* decl, std::initializer_list<BuiltinLayer> kinds) const {
    if (decl == nullptr || !decl->builtin) return false;
    for (BuiltinLayer k : kinds) {
      if (static_cast<BuiltinLayer>(decl->decl) == k) return true;
    }
    return false;
  }
  static int64_t activationOf(const Op& o) {
    if (o.kind != OpKind::Builtin || o.operandsCount != 1) return kNone;
    switch (static_cast<BuiltinFn>(o.intAttr)) {
      case BuiltinFn::Relu: return kRelu;
      case BuiltinFn::Gelu: return kGelu;
      case BuiltinFn::Silu: return kSilu;
      case BuiltinFn::Relu6: return kRelu6;
      default: return kNone;
    }
  }

  // forward @lin(x) -> act with a TernaryLinear: one fused_linear (full
  // fusion), whose kernel applies the activation to its output tile.
  void tryFuseLinear(OpId id) {
    if (!full_ || !isLayer(instanceOf(id), {BuiltinLayer::TernaryLinear})) return;
    BlockId block = m_.op(id).parent;
    ValueId current = m_.result(id);
    OpId user = soleUser(current, block);
    int64_t act = user.isValid() ? activationOf(m_.op(user)) : kNone;
    if (act == kNone) return;
    std::vector<OpId> chain{id, user};
    if (!canMoveUp(chain, block)) return;
    int64_t ints[] = {m_.op(id).intAttr};
    fuseInstanceChain(chain, OpKind::FusedLinear, act, ints, m_.result(user), block);
  }

  // The chain of sub-module forwards (and its activation) as one `kind` op
  // on the first forward's input, at that forward's place.
  void fuseInstanceChain(const std::vector<OpId>& chain, OpKind kind, int64_t act,
                         std::span<const int64_t> ints, ValueId current, BlockId block) {
    OpId first = chain.front();
    ValueId x = m_.operands(first)[0];
    TypeId type = m_.typeOf(current);
    OpId fused = m_.createOp(BlockId{}, kind, std::span<const ValueId>(&x, 1),
                             std::span<const TypeId>(&type, 1));
    m_.op(fused).intAttr = act;
    m_.op(fused).loc = m_.op(first).loc;
    m_.setInts(fused, ints);
    replaceChain(chain, fused, current, block, /*up=*/true);
  }

  // forward @conv(x) [-> forward @bn] [-> act]: one fused_conv (full fusion).
  void tryFuseConv(OpId id) {
    const InstanceDecl* conv = instanceOf(id);
    if (!full_ || !isLayer(conv, {BuiltinLayer::Conv2d, BuiltinLayer::TernaryConv2d})) return;
    BlockId block = m_.op(id).parent;
    std::vector<OpId> chain{id};
    int64_t bn = -1;
    int64_t act = kNone;
    ValueId current = m_.result(id);
    OpId user = soleUser(current, block);
    if (user.isValid() && isLayer(instanceOf(user), {BuiltinLayer::BatchNorm2d})) {
      bn = m_.op(user).intAttr;
      chain.push_back(user);
      current = m_.result(user);
      user = soleUser(current, block);
    }
    if (user.isValid() && (act = activationOf(m_.op(user))) != kNone) {
      chain.push_back(user);
      current = m_.result(user);
    }
    if (chain.size() == 1 || !canMoveUp(chain, block)) return;
    int64_t ints[] = {m_.op(id).intAttr, bn};
    fuseInstanceChain(chain, OpKind::FusedConv, act, ints, current, block);
  }

  // The ops between the chain's first and last op, not in the chain.
  std::vector<OpId> between(const std::vector<OpId>& chain, BlockId block) const {
    const std::vector<OpId>& list = m_.blocks[block.index].ops;
    auto first = std::find(list.begin(), list.end(), chain.front());
    auto last = std::find(first, list.end(), chain.back());
    std::vector<OpId> others;
    for (auto it = first; it != last; ++it) {
      if (std::find(chain.begin(), chain.end(), *it) == chain.end()) others.push_back(*it);
    }
    return others;
  }

  // Whether an op (or one inside its regions) reads module state, runs one
  // of `instances`, or asserts (a failed assert or run-time check must come
  // before the batch norm's update, as written).
  bool touches(OpId id, const std::vector<int64_t>& instances) const {
    const Op& o = m_.op(id);
    if (purity_.readsState(id) || o.kind == OpKind::BuiltinEffect || o.kind == OpKind::CheckDim) {
      return true;
    }
    if (o.kind == OpKind::Forward &&
        std::find(instances.begin(), instances.end(), o.intAttr) != instances.end()) {
      return true;
    }
    if (o.kind == OpKind::FusedConv || o.kind == OpKind::FusedLinear) {
      for (int64_t i : m_.ints(id)) {
        if (std::find(instances.begin(), instances.end(), i) != instances.end()) return true;
      }
    }
    return anyNested(id, [&](OpId inner) { return touches(inner, instances); });
  }

  // Whether `pred` holds for an op of one of `id`'s regions (the caller's
  // predicate recurses further where it needs to).
  template <typename Pred>
  bool anyNested(OpId id, Pred&& pred) const {
    for (BlockId region : m_.regionsOf(id)) {
      if (!region.isValid()) continue;
      for (OpId inner : m_.blocks[region.index].ops) {
        if (!m_.op(inner).erased && pred(inner)) return true;
      }
    }
    return false;
  }

  // A sub-module chain (conv, bn, act) may run at the convolution's place.
  bool canMoveUp(const std::vector<OpId>& chain, BlockId block) const {
    std::vector<int64_t> instances;
    for (OpId id : chain) {
      if (m_.op(id).kind == OpKind::Forward) instances.push_back(m_.op(id).intAttr);
    }
    for (OpId id : between(chain, block)) {
      if (touches(id, instances)) return false;
    }
    return true;
  }

  // A pure chain may run at its last op's place: no op between may change
  // state that the product's operands read (a batch norm's statistics).
  bool canMoveDown(const std::vector<OpId>& chain, BlockId block) const {
    if (!purity_.readsState(chain.front())) return true;
    for (OpId id : between(chain, block)) {
      if (purity_.writesState(id)) return false;
    }
    return true;
  }

  // The fused op replaces the chain, at its first op's place when `up`, else
  // at its last op's.
  void replaceChain(const std::vector<OpId>& chain, OpId fused, ValueId current, BlockId block,
                    bool up = false) {
    std::vector<OpId>& list = m_.blocks[block.index].ops;
    m_.op(fused).parent = block;
    list.insert(std::find(list.begin(), list.end(), up ? chain.front() : chain.back()), fused);
    replacements_.record(current, m_.result(fused));
    // The generated code names it as the source named the value it replaces.
    m_.values[m_.result(fused).index].name = m_.values[current.index].name;
    for (OpId absorbed : chain) {
      m_.erase(absorbed);
    }
    uses_.resize(m_.values.size(), 0);
    changed_ = true;
  }

  // conv2d(x, W, ...) [* s] [-> act] with W ternary: one fused_conv2d (full
  // fusion). A scale is absorbed only without a bias (act(s * conv + b) is
  // what the kernels compute; (conv + b) * s is not that).
  void tryFuseConvFn(OpId id) {
    std::span<const ValueId> in = m_.operands(id);
    std::span<const int64_t> params = m_.ints(id);
    if (in.size() < 2 || params[0] != 0 || params[1] != 1 || !ternary(in[1]) ||
        !floatTensor(in[0])) {
      return;
    }
    bool hasBias = std::find(params.begin(), params.end(), 2) != params.end();
    BlockId block = m_.op(id).parent;
    std::vector<OpId> chain{id};
    ValueId current = m_.result(id);
    ValueId scale;
    int64_t act = kNone;
    if (!hasBias) {
      OpId user = soleUser(current, block);
      if (user.isValid() && m_.op(user).kind == OpKind::Mul) {
        std::span<const ValueId> mul = m_.operands(user);
        ValueId other = mul[0] == current ? mul[1] : mul[0];
        if (floatScalar(other) && m_.typeOf(m_.result(user)) == m_.typeOf(current)) {
          scale = other;
          chain.push_back(user);
          current = m_.result(user);
        }
      }
    }
    OpId user = soleUser(current, block);
    if (user.isValid() && (act = activationOf(m_.op(user))) != kNone) {
      chain.push_back(user);
      current = m_.result(user);
    }
    if (chain.size() == 1 || !canMoveDown(chain, block)) return;  // a bare convolution stays
    std::vector<ValueId> operands(in.begin(), in.end());
    std::vector<int64_t> given(params.begin(), params.end());
    if (scale.isValid()) operands.push_back(scale);
    TypeId type = m_.typeOf(current);
    OpId fused = m_.createOp(BlockId{}, OpKind::FusedConv2d, operands,
                             std::span<const TypeId>(&type, 1));
    m_.op(fused).intAttr = act;
    m_.op(fused).loc = m_.op(id).loc;
    m_.setInts(fused, given);
    replaceChain(chain, fused, current, block);
  }

  // The constant integer of `v` (after constant folding), if it is one.
  std::optional<int64_t> intConstant(ValueId v) const {
    std::optional<ConstantValue> c = constantOf(m_, v);
    if (!c || c->kind != ConstKind::Int) return std::nullopt;
    return c->i;
  }

  // Whether op `t` swaps the two dimensions of a matrix: `w.T`, `transpose(w)`,
  // `transpose(w, 0, 1)` (any order, negative dims too) or `permute(w, [1, 0])`
  // of a 2-D `w`.
  bool swapsMatrix(OpId tId) const {
    const Op& t = m_.op(tId);
    std::span<const ValueId> in = m_.operands(tId);
    if (in.empty()) return false;
    TypeId wt = m_.typeOf(in[0]);
    if (!m_.types.node(wt).rankKnown || m_.types.shape(wt).size() != 2) return false;
    if (t.kind == OpKind::TransposeAll) return true;
    if (t.kind != OpKind::Builtin) return false;
    std::span<const int64_t> params = m_.ints(tId);
    auto normalized = [](int64_t d) { return d < 0 ? d + 2 : d; };
    if (static_cast<BuiltinFn>(t.intAttr) == BuiltinFn::Transpose) {
      int64_t dims[2] = {-2, -1};  // transpose's defaults: the last two
      for (size_t i = 1; i < in.size() && i < params.size(); ++i) {
        std::optional<int64_t> d = intConstant(in[i]);
        if (!d || params[i] < 1 || params[i] > 2) return false;
        dims[params[i] - 1] = *d;
      }
      int64_t a = normalized(dims[0]), b = normalized(dims[1]);
      return (a == 0 && b == 1) || (a == 1 && b == 0);
    }
    if (static_cast<BuiltinFn>(t.intAttr) == BuiltinFn::Permute && in.size() == 2) {
      const Value& list = m_.values[in[1].index];
      if (!list.def.isValid() || m_.op(list.def).kind != OpKind::List) return false;
      std::span<const ValueId> order = m_.operands(list.def);
      if (order.size() != 2) return false;
      std::optional<int64_t> first = intConstant(order[0]), second = intConstant(order[1]);
      return first && second && normalized(*first) == 1 && normalized(*second) == 0;
    }
    return false;
  }

  // `x @ w.T` (or any other swap of its two dimensions, swapsMatrix) of a 2-D
  // ternary weight is `linear(x, w)`, the product the kernels and the packed
  // rows are laid out for.
  void transposedToLinear(OpId id) {
    std::span<ValueId> in = m_.mutableOperands(id);
    if (in.size() != 2 || !floatTensor(in[0])) return;
    OpId tId = m_.values[in[1].index].def;
    if (!tId.isValid() || m_.op(tId).erased || uses_[in[1].index] != 1 || !swapsMatrix(tId)) {
      return;
    }
    ValueId w = m_.operands(tId)[0];
    if (!ternary(w)) return;
    in[1] = w;
    Op& o = m_.op(id);
    o.kind = OpKind::Builtin;
    o.intAttr = static_cast<int64_t>(BuiltinFn::LinearFn);
    int64_t given[] = {0, 1};
    m_.setInts(id, given);
    eraseWithOperandList(tId);
    changed_ = true;
  }

  // Erases `id`, and the list it alone read (permute's dims), so -O1 (no DCE
  // after fusion) leaves no dead list behind.
  void eraseWithOperandList(OpId id) {
    for (ValueId v : m_.operands(id)) {
      OpId def = m_.values[v.index].def;
      if (def.isValid() && !m_.op(def).erased && m_.op(def).kind == OpKind::List &&
          uses_[v.index] == 1) {
        m_.erase(def);
      }
    }
    m_.erase(id);
  }

  // `x @ -w` of a ternary w (full fusion): the product of w with the scale -1,
  // bit for bit the same (negation is exact), so it reaches w's kernel. The
  // negated weight must have no other use.
  ValueId negatedWeight(OpId product) {
    ValueId operand = m_.operands(product)[1];
    OpId negId = m_.values[operand.index].def;
    if (!negId.isValid() || m_.op(negId).erased || m_.op(negId).kind != OpKind::Neg ||
        uses_[operand.index] != 1 || m_.op(negId).parent != m_.op(product).parent) {
      return ValueId{};
    }
    ValueId w = m_.operands(negId)[0];
    return ternary(w) ? w : ValueId{};
  }

  // A float32 constant placed just before `before` in its block.
  ValueId floatConstantBefore(OpId before, double value) {
    TypeId f32 = m_.types.scalar(DType::Float32);
    OpId c = m_.createOp(BlockId{}, OpKind::Constant, {}, std::span<const TypeId>(&f32, 1));
    m_.op(c).constKind = ConstKind::Float;
    m_.op(c).floatAttr = value;
    return placeBefore(c, before);
  }

  // Puts the new op `op` (made outside any block) just before `before`, at its location,
  // with its one result used once. Returns that result.
  ValueId placeBefore(OpId op, OpId before) {
    BlockId block = m_.op(before).parent;
    m_.op(op).loc = m_.op(before).loc;
    m_.op(op).parent = block;
    std::vector<OpId>& list = m_.blocks[block.index].ops;
    list.insert(std::find(list.begin(), list.end(), before), op);
    uses_.resize(m_.values.size(), 0);
    uses_[m_.result(op).index] = 1;
    return m_.result(op);
  }

  // Whether dimension `d` is known when the module is constructed: constants
  // and the hyperparameters of the function being fused, in arithmetic.
  bool knownAtConstruction(DimId d) const {
    const DimStore::Node& n = m_.dims.node(d);
    switch (n.kind) {
      case DimKind::Const: return true;
      case DimKind::Var: return hyperIndex(n.var).has_value();
      case DimKind::Unknown: return false;
      default: return knownAtConstruction(n.lhs) && knownAtConstruction(n.rhs);
    }
  }
  // The integer hyperparameter of the function being fused named `name`.
  // (Inlining rewrote a callee's sizes into the caller's, so a size variable
  // of a type here is the caller's own.)
  std::optional<size_t> hyperIndex(IdentifierId name) const {
    if (function_ == nullptr) return std::nullopt;
    for (size_t h = 0; h < function_->hypers.size(); ++h) {
      const HyperDecl& decl = function_->hypers[h];
      if (decl.name == name && m_.types.isScalar(decl.type) &&
          isIntegral(m_.types.node(decl.type).dtype)) {
        return h;
      }
    }
    return std::nullopt;
  }
  // The value of dimension `d` (knownAtConstruction), computed by ops placed
  // just before `before`: a constant, a hyperparameter read (`self.c` in a
  // forward), or integer arithmetic of those (Div is floor division, as in a
  // type).
  ValueId dimValueBefore(OpId before, DimId d) {
    const DimStore::Node& n = m_.dims.node(d);
    TypeId int32 = m_.types.scalar(DType::Int32);
    std::vector<ValueId> operands;
    OpKind kind = OpKind::Constant;
    TypeId type = int32;
    switch (n.kind) {
      case DimKind::Const: break;
      case DimKind::Var:
        kind = OpKind::Hyper;
        type = function_->hypers[*hyperIndex(n.var)].type;
        break;
      default:
        operands = {dimValueBefore(before, n.lhs), dimValueBefore(before, n.rhs)};
        kind = n.kind == DimKind::Add   ? OpKind::Add
               : n.kind == DimKind::Sub ? OpKind::Sub
               : n.kind == DimKind::Mul ? OpKind::Mul
                                        : OpKind::Div;
        break;
    }
    OpId op = m_.createOp(BlockId{}, kind, operands, std::span<const TypeId>(&type, 1));
    if (kind == OpKind::Constant) {
      m_.op(op).constKind = ConstKind::Int;
      m_.op(op).intAttr = n.value;
    } else if (kind == OpKind::Hyper) {
      m_.op(op).intAttr = static_cast<int64_t>(*hyperIndex(n.var));
    }
    return placeBefore(op, before);
  }

  // depthwise_conv2d(x, w, stride, padding) with a channel count C known at
  // construction (a constant, or a hyperparameter: `self.c`) is
  // conv2d(x, w, stride=stride, padding=padding, groups=C): one convolution
  // path (fusion, the CUDA kernels) for both spellings, and an int groups that
  // torch.fx can trace (`x.shape[-3]` is a Proxy there, which F.conv2d
  // rejects).
  void depthwiseToConv2d(OpId id) {
    std::span<const ValueId> in = m_.operands(id);
    if (in.size() < 2 || !ternary(in[1]) || !floatTensor(in[0])) return;
    TypeId xt = m_.typeOf(in[0]);
    if (!m_.types.node(xt).rankKnown || m_.types.shape(xt).size() < 3) return;
    std::span<const DimId> xs = m_.types.shape(xt);
    DimId channels = xs[xs.size() - 3];
    if (!knownAtConstruction(channels)) return;
    BlockId block = m_.op(id).parent;
    ValueId groups = dimValueBefore(id, channels);
    in = m_.operands(id);  // (creating ops may have moved the operand storage)
    // depthwise's parameters 2, 3 (stride, padding) are conv2d's 3, 4.
    std::vector<ValueId> operands(in.begin(), in.end());
    std::vector<int64_t> given;
    for (int64_t p : m_.ints(id)) given.push_back(p < 2 ? p : p + 1);
    operands.push_back(groups);
    given.push_back(6);
    TypeId type = m_.typeOf(m_.result(id));
    OpId conv = m_.createOp(BlockId{}, OpKind::Builtin, operands, std::span<const TypeId>(&type, 1));
    m_.op(conv).intAttr = static_cast<int64_t>(BuiltinFn::Conv2dFn);
    m_.op(conv).loc = m_.op(id).loc;
    m_.setInts(conv, given);
    ValueId result = m_.result(id);
    replaceChain({id}, conv, result, block);
    // Its users read the convolution now (not only once the pass ends), so
    // that it fuses with them.
    replaceUses(function_->body, result, m_.result(conv));
    uses_.resize(m_.values.size(), 0);
    uses_[m_.result(conv).index] = uses_[result.index];
    if (full_) tryFuseConvFn(conv);
  }

  void replaceUses(BlockId block, ValueId from, ValueId to) {
    for (OpId id : m_.blocks[block.index].ops) {
      for (ValueId& v : m_.mutableOperands(id)) {
        if (v == from) v = to;
      }
      for (BlockId region : m_.regionsOf(id)) {
        if (region.isValid()) replaceUses(region, from, to);
      }
    }
  }

  // Whether the sub-module may draw random numbers when it runs: a ternary
  // layer whose method is not a constant "absmean" or "threshold" (the
  // stochastic quantizer draws in training), or a user layer.
  bool instanceMayDraw(int64_t index) {
    // Once per instance of the function being walked (its creation is searched for).
    if (drawsOf_.first != function_) drawsOf_ = {function_, {}};
    auto known = drawsOf_.second.find(index);
    if (known != drawsOf_.second.end()) return known->second;
    return drawsOf_.second[index] = searchInstanceMayDraw(index);
  }
  bool searchInstanceMayDraw(int64_t index) const {
    const InstanceDecl& decl = function_->instances[static_cast<size_t>(index)];
    if (!decl.builtin) return true;
    auto layer = static_cast<BuiltinLayer>(decl.decl);
    if (layer != BuiltinLayer::TernaryConv2d && layer != BuiltinLayer::TernaryLinear) {
      return false;  // Conv2d, BatchNorm2d: no draws
    }
    int64_t methodParam = layer == BuiltinLayer::TernaryLinear ? 3 : 8;  // Builtins.def
    bool may = false;
    m_.forEachOp(function_->body, [&](OpId id) {
      const Op& o = m_.op(id);
      if (o.kind != OpKind::Instantiate || o.intAttr != index) return;
      std::span<const ValueId> args = m_.operands(id);
      std::span<const int64_t> params = m_.ints(id);
      for (size_t i = 0; i < args.size() && i < params.size(); ++i) {
        if (params[i] != methodParam) continue;
        const Op* c = defOf(args[i]);
        bool known = c != nullptr && c->kind == OpKind::Constant &&
                     c->constKind == ConstKind::String &&
                     (m_.strings[c->strAttr] == "absmean" || m_.strings[c->strAttr] == "threshold");
        may = may || !known;
      }
    });
    return may;
  }

  // Whether an op (or one in its regions) may draw random numbers: dropout and
  // random builtins, sub-module and layer calls, reads of ternary weights (a
  // stochastic one draws when quantized).
  bool mayDraw(OpId id) const {
    const Op& o = m_.op(id);
    switch (o.kind) {
      case OpKind::BuiltinStateful:
      case OpKind::Forward:
      case OpKind::FusedConv:
      case OpKind::FusedLinear:
      case OpKind::Apply:
      case OpKind::CallFn: return true;
      case OpKind::Weight:
      case OpKind::InstanceMember: return ternary(m_.result(id));
      default: break;
    }
    return anyNested(id, [&](OpId inner) { return mayDraw(inner); });
  }

  // The residual's form of a fused_conv/fused_linear: out + r [-> act],
  // where out is a fused_conv without activation, or a convolution or
  // TernaryLinear sub-module's output, used only by the add. The fused op
  // takes the add's (or the activation's) place, since the residual is often
  // made after the convolution (a ResNet's shortcut): the convolution moves
  // down past the ops between, none of which may touch its sub-modules,
  // read changing state, assert or check (canMoveUp's conditions, the same
  // ops in between).
  void tryFuseResidual(OpId id) {
    BlockId block = m_.op(id).parent;
    std::span<const ValueId> in = m_.operands(id);
    if (in.size() != 2 || in[0] == in[1]) return;
    for (size_t i = 0; i < 2; ++i) {
      // Operands still name the values the fused ops replaced (applied at the end).
      ValueId own = in[i];
      ValueId residual = in[1 - i];
      if (uses_[own.index] != 1 || !floatTensor(own) || !floatTensor(residual)) continue;
      OpId def = m_.values[replacements_.resolve(own).index].def;
      if (!def.isValid() || m_.op(def).erased || m_.op(def).parent != block ||
          m_.op(def).operandsCount != 1) {
        continue;
      }
      const Op& p = m_.op(def);
      OpKind kind;
      std::vector<int64_t> ints;
      if ((p.kind == OpKind::FusedConv || p.kind == OpKind::FusedLinear) && p.intAttr == kNone) {
        kind = p.kind;
        ints.assign(m_.ints(def).begin(), m_.ints(def).end());
      } else if (isLayer(instanceOf(def), {BuiltinLayer::Conv2d, BuiltinLayer::TernaryConv2d})) {
        kind = OpKind::FusedConv;
        ints = {p.intAttr, -1};
      } else if (isLayer(instanceOf(def), {BuiltinLayer::TernaryLinear})) {
        kind = OpKind::FusedLinear;
        ints = {p.intAttr};
      } else {
        continue;
      }
      std::vector<OpId> chain{def, id};
      ValueId current = m_.result(id);
      OpId user = soleUser(current, block);
      int64_t act = user.isValid() ? activationOf(m_.op(user)) : kNone;
      if (act != kNone) {
        chain.push_back(user);
        current = m_.result(user);
      }
      std::vector<int64_t> instances;
      for (int64_t ref : ints) {
        if (ref >= 0) instances.push_back(ref);
      }
      bool movable = true;
      bool draws = std::any_of(instances.begin(), instances.end(),
                               [&](int64_t inst) { return instanceMayDraw(inst); });
      for (OpId other : between(chain, block)) {
        // Random draws stay in order: a stochastic ternary layer moves past none.
        movable = movable && !touches(other, instances) && !(draws && mayDraw(other));
      }
      if (!movable) continue;
      ValueId operands[] = {m_.operands(def)[0], residual};
      TypeId type = m_.typeOf(current);
      OpId fused = m_.createOp(BlockId{}, kind, operands, std::span<const TypeId>(&type, 1));
      m_.op(fused).intAttr = act;
      m_.op(fused).loc = m_.op(def).loc;
      m_.setInts(fused, ints);
      replaceChain(chain, fused, current, block);
      return;
    }
  }

  void tryFuse(OpId id) {
    const Op& o = m_.op(id);
    if (full_ && o.kind == OpKind::Add) {
      tryFuseResidual(id);
      if (m_.op(id).erased) return;
    }
    if (o.kind == OpKind::Forward) {
      tryFuseConv(id);
      if (!m_.op(id).erased) tryFuseLinear(id);
      return;
    }
    if (o.kind == OpKind::Builtin &&
        static_cast<BuiltinFn>(o.intAttr) == BuiltinFn::DepthwiseConv2d) {
      depthwiseToConv2d(id);
      return;
    }
    // `matmul(x, w)` with a ternary right operand takes the operator's form
    // (simplify does it for every product, but runs only from -O2), so every
    // product below sees one spelling.
    if (o.kind == OpKind::Builtin && static_cast<BuiltinFn>(o.intAttr) == BuiltinFn::Matmul &&
        m_.operands(id).size() == 2 && ternary(m_.operands(id)[1]) &&
        floatTensor(m_.operands(id)[0]) && matmulToOperator(m_, id)) {
      changed_ = true;
    }
    if (o.kind == OpKind::MatMul) transposedToLinear(id);
    if (full_ && o.kind == OpKind::Builtin &&
        static_cast<BuiltinFn>(o.intAttr) == BuiltinFn::Conv2dFn) {
      tryFuseConvFn(id);
      return;
    }
    Fused f;
    BlockId block = o.parent;
    if (o.kind == OpKind::MatMul) {
      std::span<const ValueId> in = m_.operands(id);
      if (!ternary(in[1]) || !floatTensor(in[0])) return;
      f.x = in[0];
      f.w = in[1];
      f.layout = 0;
      if (full_) {
        f.negated = negatedWeight(id);
        if (f.negated.isValid()) f.w = f.negated;
      }
    } else if (o.kind == OpKind::Builtin && static_cast<BuiltinFn>(o.intAttr) == BuiltinFn::LinearFn) {
      std::span<const ValueId> in = m_.operands(id);
      std::span<const int64_t> params = m_.ints(id);
      if (in.size() < 2 || params[0] != 0 || params[1] != 1 || !ternary(in[1]) || !floatTensor(in[0])) {
        return;
      }
      f.x = in[0];
      f.w = in[1];
      f.layout = 1;
      if (in.size() == 3) f.bias = in[2];
    } else {
      return;
    }
    f.chain.push_back(id);
    ValueId current = m_.result(id);
    auto next = [&](OpId user) {
      f.chain.push_back(user);
      current = m_.result(user);
    };
    // Scale (full fusion): current * s with s a float scalar.
    if (full_ && !f.bias.isValid() && !f.negated.isValid()) {
      OpId user = soleUser(current, block);
      if (user.isValid() && m_.op(user).kind == OpKind::Mul) {
        std::span<const ValueId> in = m_.operands(user);
        ValueId other = in[0] == current ? in[1] : in[0];
        if (floatScalar(other) && m_.typeOf(m_.result(user)) == m_.typeOf(current)) {
          f.scale = other;
          next(user);
        }
      }
    }
    // Bias: current + b.
    if (!f.bias.isValid()) {
      OpId user = soleUser(current, block);
      if (user.isValid() && m_.op(user).kind == OpKind::Add) {
        std::span<const ValueId> in = m_.operands(user);
        ValueId other = in[0] == current ? in[1] : in[0];
        if (isBias(other, current) && m_.typeOf(m_.result(user)) == m_.typeOf(current)) {
          f.bias = other;
          next(user);
        }
      }
    }
    // Activation (full fusion).
    if (full_) {
      OpId user = soleUser(current, block);
      if (user.isValid() && (f.act = activationOf(m_.op(user))) != kNone) {
        next(user);
      }
    }
    // Worth it only with an epilogue (a bare ternary product stays a matmul).
    if ((!f.bias.isValid() && !f.scale.isValid() && !f.negated.isValid() && f.act == kNone) ||
        !canMoveDown(f.chain, block)) {
      return;
    }
    if (f.negated.isValid()) {
      OpId neg = m_.values[m_.operands(id)[1].index].def;
      f.scale = floatConstantBefore(id, -1.0);
      m_.erase(neg);
    }
    std::vector<ValueId> operands{f.x, f.w};
    if (f.bias.isValid()) operands.push_back(f.bias);
    if (f.scale.isValid()) operands.push_back(f.scale);
    TypeId type = m_.typeOf(current);
    OpId fused = m_.createOp(BlockId{}, OpKind::FusedMatMul, operands,
                             std::span<const TypeId>(&type, 1));
    m_.op(fused).intAttr = f.act;
    m_.op(fused).loc = m_.op(id).loc;
    int64_t ints[] = {f.layout, f.bias.isValid() ? 1 : 0, f.scale.isValid() ? 1 : 0};
    m_.setInts(fused, ints);
    // Every absorbed op had its result used once, by the next: all of them go.
    replaceChain(f.chain, fused, current, block);
  }

  Module& m_;
  const Function* function_ = nullptr;
  bool full_;
  bool changed_ = false;
  std::vector<uint32_t> uses_;
  /// instanceMayDraw's answers, for one function.
  std::pair<const Function*, std::unordered_map<int64_t, bool>> drawsOf_{nullptr, {}};
  Replacements replacements_;
  Purity purity_;
};

}  // namespace

bool runFuseTernaryBasic(Module& m) { return Fuser(m, /*full=*/false).run(); }
bool runFuseTernary(Module& m) { return Fuser(m, /*full=*/true).run(); }

}  // namespace tritonc::opt

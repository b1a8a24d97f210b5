//===- Simplify.cpp - algebraic simplification ----------------------------===//
//
// Rewrites by identities that hold exactly, for every input including NaN,
// infinities and signed zeros, so a model computes the same bits:
//   x * 1, 1 * x, x / 1, x - 0   -> x
//   x + 0, 0 + x                 -> x       (integers: -0.0 + 0.0 is +0.0)
//   x * -1, -1 * x               -> -x
//   x * 0, 0 * x                 -> 0       (integer scalars: NaN * 0 is NaN)
//   -(-x), !!x                   -> x
//   x.T.T, transpose(transpose(x, a, b), a, b) -> x
//   matmul(a, b)                 -> a @ b   (one spelling for CSE and fusion)
//   ternary_quantize(t) with t already ternary  -> t   (docs/language.md)
// Not simplified: ternary_dequantize(ternary_quantize(x)), which is the
// straight-through fake quantization of x, not x.
// A rewrite applies only when the result has exactly x's type, so
// broadcasting and dtype promotion (int tensor * 1.0) are never lost. Nor is
// a copy of module state that changes in `forward` (`bn.running_mean * 1.0`
// keeps the value from before the batch norm's update; `x` itself is the
// running buffer: Purity::readsState).
//
//===----------------------------------------------------------------------===//
#include <cmath>

#include "PassRegistry.h"

namespace tritonc::opt {

namespace {

using namespace ir;

class Simplifier {
 public:
  explicit Simplifier(Module& m) : m_(m), replacements_(m), purity_(m) {}

  bool run() {
    forEachRegionRoot(m_, [&](BlockId block) { walk(block); });
    if (changed_) {
      replacements_.apply(m_);
    }
    return changed_;
  }

 private:
  ValueId resolve(ValueId v) const { return replacements_.resolve(v); }
  const Op* defOf(ValueId v) const {
    const Value& value = m_.values[v.index];
    return value.def.isValid() && !m_.op(value.def).erased ? &m_.op(value.def) : nullptr;
  }
  // Whether v is the constant `k` (an int, or a float of that value; a float
  // zero must be +0.0: x - (-0.0) is x + 0.0, which turns -0.0 into +0.0).
  bool isConstant(ValueId v, int k) const {
    std::optional<ConstantValue> c = constantOf(m_, v);
    if (!c) {
      return false;
    }
    if (c->kind == ConstKind::Int) {
      return c->i == k;
    }
    return c->kind == ConstKind::Float && c->f == static_cast<double>(k) &&
           !(k == 0 && std::signbit(c->f));
  }
  bool integral(ValueId v) const {
    TypeId type = m_.typeOf(v);
    const TypeStore::Node& t = m_.types.node(type);
    return (t.kind == TypeKind::Scalar || t.kind == TypeKind::Tensor) && isIntegral(t.dtype) &&
           !t.ternary;
  }
  void replace(OpId id, ValueId with) {
    if (purity_.aliasesState(with)) return;  // the copy is the point
    replacements_.record(m_.result(id), with);
    m_.erase(id);
    changed_ = true;
  }

  void walk(BlockId block) {
    std::vector<OpId> ops = m_.blocks[block.index].ops;
    for (OpId id : ops) {
      if (m_.op(id).erased) {
        continue;
      }
      for (BlockId region : m_.regionsOf(id)) {  // by value: the walk may create ops
        if (region.isValid()) {
          walk(region);
        }
      }
      simplify(id);
    }
  }

  void simplify(OpId id) {
    Op& o = m_.op(id);
    if (o.resultsCount != 1) {
      return;
    }
    std::span<ValueId> operands = m_.mutableOperands(id);
    for (ValueId& v : operands) {
      v = resolve(v);
    }
    TypeId type = m_.typeOf(m_.result(id));
    auto sameType = [&](ValueId v) { return m_.typeOf(v) == type; };
    switch (o.kind) {
      case OpKind::Mul: {
        for (int side = 0; side < 2; ++side) {
          ValueId x = operands[side];
          ValueId k = operands[1 - side];
          if (isConstant(k, 1) && sameType(x)) {
            return replace(id, x);
          }
          if (isConstant(k, -1) && sameType(x)) {
            o.kind = OpKind::Neg;  // x * -1 is -x, bit for bit
            operands[0] = x;
            o.operandsCount = 1;
            changed_ = true;
            return;
          }
          if (isConstant(k, 0) && integral(x) && m_.types.isScalar(type) && sameType(k)) {
            return replace(id, k);
          }
        }
        return;
      }
      case OpKind::Div:
        if (isConstant(operands[1], 1) && sameType(operands[0])) {
          replace(id, operands[0]);
        }
        return;
      case OpKind::Sub:
        if (isConstant(operands[1], 0) && sameType(operands[0])) {
          replace(id, operands[0]);
        }
        return;
      case OpKind::Add:
        for (int side = 0; side < 2; ++side) {
          ValueId x = operands[side];
          if (isConstant(operands[1 - side], 0) && integral(x) && sameType(x)) {
            return replace(id, x);
          }
        }
        return;
      case OpKind::Neg:
      case OpKind::Not:
      case OpKind::TransposeAll: {
        const Op* inner = defOf(operands[0]);
        if (inner != nullptr && inner->kind == o.kind) {
          ValueId x = resolve(m_.operandPool[inner->operandsBegin]);
          if (sameType(x)) {
            replace(id, x);
          }
        }
        return;
      }
      case OpKind::BuiltinStateful:
      case OpKind::Builtin: {
        // ternary_quantize of a value that is already ternary returns it
        // unchanged, scale included (docs/language.md), whatever the method;
        // so does ste_quantize (LANGUAGE.md defines it by ternary_quantize).
        auto fn = static_cast<BuiltinFn>(o.intAttr);
        if ((fn == BuiltinFn::TernaryQuantize || fn == BuiltinFn::SteQuantize) &&
            !operands.empty() && m_.types.isTernary(m_.typeOf(operands[0])) &&
            sameType(operands[0])) {
          replace(id, operands[0]);
          return;
        }
        // matmul(a, b) is a @ b (LANGUAGE.md): one spelling, so CSE sees
        // equal products and fusion one form.
        if (o.kind == OpKind::Builtin && matmulToOperator(m_, id)) {
          changed_ = true;
          return;
        }
        if (o.kind != OpKind::Builtin || static_cast<BuiltinFn>(o.intAttr) != BuiltinFn::Transpose) {
          return;
        }
        const Op* inner = defOf(operands[0]);
        if (inner == nullptr || inner->kind != OpKind::Builtin ||
            static_cast<BuiltinFn>(inner->intAttr) != BuiltinFn::Transpose) {
          return;
        }
        OpId innerId = m_.values[operands[0].index].def;
        auto dims = [&](OpId t) -> std::optional<std::pair<int64_t, int64_t>> {
          int64_t d[2] = {-2, -1};
          std::span<const ValueId> args = m_.operands(t);
          std::span<const int64_t> params = m_.ints(t);
          for (size_t i = 1; i < args.size(); ++i) {
            const Op* c = defOf(resolve(args[i]));
            if (c == nullptr || c->kind != OpKind::Constant || c->constKind != ConstKind::Int) {
              return std::nullopt;
            }
            d[params[i] - 1] = c->intAttr;
          }
          return std::make_pair(std::min(d[0], d[1]), std::max(d[0], d[1]));
        };
        std::optional<std::pair<int64_t, int64_t>> outer = dims(id);
        std::optional<std::pair<int64_t, int64_t>> in = dims(innerId);
        ValueId x = resolve(m_.operandPool[inner->operandsBegin]);
        if (outer && in && *outer == *in && sameType(x)) {
          replace(id, x);
        }
        return;
      }
      default: return;
    }
  }

  Module& m_;
  Replacements replacements_;
  Purity purity_;
  bool changed_ = false;
};

}  // namespace

bool runSimplify(Module& m) { return Simplifier(m).run(); }

}  // namespace tritonc::opt

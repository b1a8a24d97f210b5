//===- ConstantFold.cpp - constant folding --------------------------------===//
//
// Evaluates scalar ops whose operands are all constants (integer arithmetic
// with the language's floor division and modulo, float arithmetic in double
// precision as the generated Python computes it, comparisons, logic, casts,
// Python's max, min and abs of numbers) by turning the op into a constant in
// place, so its result keeps its id and no use needs rewriting. An `if` whose
// condition is a constant is replaced by the ops of the branch it takes.
// float16 and bfloat16 results are left alone: their rounding is the
// runtime's. The size of a dimension that a tensor's type knows is a constant.
//
//===----------------------------------------------------------------------===//
#include <cmath>
#include <compare>
#include <optional>

#include "PassRegistry.h"
#include "tritonc/base/PythonMath.h"

namespace tritonc::opt {

namespace {

// An int against a float as Python orders them: exactly.
std::partial_ordering intVersusFloat(int64_t i, double d) {
  if (std::isnan(d)) return std::partial_ordering::unordered;
  if (d >= 9223372036854775808.0) return std::partial_ordering::less;
  if (d < -9223372036854775808.0) return std::partial_ordering::greater;
  double whole = std::floor(d);
  auto w = static_cast<int64_t>(whole);  // exact: |whole| < 2^63
  if (i != w) return i <=> w;
  return whole < d ? std::partial_ordering::less : std::partial_ordering::equivalent;
}

std::partial_ordering exactOrder(const ConstantValue& a, const ConstantValue& b) {
  bool af = a.kind == ir::ConstKind::Float, bf = b.kind == ir::ConstKind::Float;
  if (af && bf) return a.f <=> b.f;
  if (!af && !bf) return a.i <=> b.i;
  if (!af) return intVersusFloat(a.i, b.f);
  std::partial_ordering r = intVersusFloat(b.i, a.f);
  return r == std::partial_ordering::less      ? std::partial_ordering::greater
         : r == std::partial_ordering::greater ? std::partial_ordering::less
                                               : r;
}

using namespace ir;

using Constant = ConstantValue;

class Folder {
 public:
  explicit Folder(Module& m) : m_(m) {}

  bool run() {
    forEachRegionRoot(m_, [&](BlockId block) { walk(block); });
    return changed_;
  }

 private:
  std::optional<Constant> constantOf(ValueId v) const { return opt::constantOf(m_, v); }

  void walk(BlockId block) {
    std::vector<OpId> ops = m_.blocks[block.index].ops;
    for (OpId id : ops) {
      Op& o = m_.op(id);
      if (o.erased) {
        continue;
      }
      if (o.kind == OpKind::If) {
        if (foldIf(id)) {
          continue;
        }
      }
      for (BlockId region : m_.regionsOf(id)) {  // by value: the walk may create ops
        if (region.isValid()) {
          walk(region);
        }
      }
      foldScalar(id);
    }
  }

  // Makes `id` a constant of its (scalar) result type.
  void becomeConstant(OpId id, ConstKind kind, int64_t i, double f) {
    Op& o = m_.op(id);
    o.kind = OpKind::Constant;
    o.constKind = kind;
    o.intAttr = i;
    o.floatAttr = f;
    o.operandsCount = 0;
    o.intsCount = 0;
    changed_ = true;
  }

  void foldScalar(OpId id) {
    Op& o = m_.op(id);
    if (o.kind == OpKind::Global) {
      // A global whose initializer is a constant is that constant.
      const Block& init = m_.blocks[m_.globals[static_cast<size_t>(o.intAttr)].init.index];
      if (init.ops.size() == 2 && m_.op(init.ops[1]).kind == OpKind::Yield) {
        const Op& c = m_.op(init.ops[0]);
        if (c.kind == OpKind::Constant && c.constKind != ConstKind::None &&
            m_.operands(init.ops[1])[0] == m_.result(init.ops[0])) {
          o.kind = OpKind::Constant;
          o.constKind = c.constKind;
          o.intAttr = c.intAttr;
          o.floatAttr = c.floatAttr;
          o.strAttr = c.strAttr;
          changed_ = true;
        }
      }
      return;
    }
    if (o.kind == OpKind::ShapeDim) {
      // The size of a dimension the type knows statically.
      TypeId type = m_.typeOf(m_.operands(id)[0]);
      if (m_.types.isTensor(type) && m_.types.node(type).rankKnown &&
          static_cast<size_t>(o.intAttr) < m_.types.shape(type).size()) {
        std::optional<int64_t> size =
            m_.dims.constValue(m_.types.shape(type)[static_cast<size_t>(o.intAttr)]);
        if (size) {
          becomeConstant(id, ConstKind::Int, *size, 0.0);
        }
      }
      return;
    }
    if (o.resultsCount != 1 || o.operandsCount == 0 || o.operandsCount > 2) {
      return;
    }
    TypeId type = m_.typeOf(m_.result(id));
    if (!m_.types.isScalar(type)) {
      return;
    }
    DType dtype = m_.types.node(type).dtype;
    if (dtype == DType::Float16 || dtype == DType::BFloat16 || dtype == DType::Str) {
      return;
    }
    std::span<const ValueId> operands = m_.operands(id);
    std::optional<Constant> first = constantOf(operands[0]);
    if (!first) {
      return;
    }
    const Constant a0 = *first;
    const Constant* a = &a0;
    Constant b0;
    const Constant* b = nullptr;
    if (operands.size() > 1) {
      std::optional<Constant> second = constantOf(operands[1]);
      if (!second) {
        return;
      }
      b0 = *second;
      b = &b0;
    }
    bool floats = a->kind == ConstKind::Float || (b != nullptr && b->kind == ConstKind::Float);
    auto result = [&](double value) {
      if (dtype == DType::Bool) {
        becomeConstant(id, ConstKind::Bool, value != 0.0 ? 1 : 0, 0.0);
      } else if (isFloating(dtype)) {
        // As the generated code computes it: Python floats are doubles.
        becomeConstant(id, ConstKind::Float, 0, value);
      } else {
        becomeConstant(id, ConstKind::Int, static_cast<int64_t>(value), 0.0);
      }
    };
    auto resultInt = [&](int64_t value) {
      if (isIntegral(dtype) && dtype != DType::Bool && !fitsInteger(dtype, value)) {
        return;  // overflows the result's type: left to the runtime's wrap-around
      }
      if (dtype == DType::Bool) {
        becomeConstant(id, ConstKind::Bool, value != 0 ? 1 : 0, 0.0);
      } else if (isFloating(dtype)) {
        result(static_cast<double>(value));
      } else {
        becomeConstant(id, ConstKind::Int, value, 0.0);
      }
    };
    auto compare = [&](bool value) { becomeConstant(id, ConstKind::Bool, value ? 1 : 0, 0.0); };
    int64_t out = 0;
    switch (o.kind) {
      case OpKind::Neg:
        if (floats) result(-a->asFloat());
        else if (a->i != INT64_MIN) resultInt(-a->i);
        return;
      case OpKind::Not: compare(a->i == 0); return;
      case OpKind::Cast:
        if (dtype == DType::Trit) {
          double v = std::nearbyint(a->asFloat());
          resultInt(v > 1 ? 1 : v < -1 ? -1 : static_cast<int64_t>(v));
        } else if (isIntegral(dtype) && floats) {
          double v = std::trunc(a->asFloat());
          if (std::fabs(v) < 9.0e18) resultInt(static_cast<int64_t>(v));
        } else if (floats || isFloating(dtype)) {
          result(a->asFloat());
        } else {
          resultInt(a->i);
        }
        return;
      case OpKind::Builtin:
        if (a->kind == ConstKind::Bool || (b != nullptr && b->kind == ConstKind::Bool)) {
          return;  // abs(True) is the int 1 in Python
        }
        if (static_cast<BuiltinFn>(o.intAttr) == BuiltinFn::Abs && b == nullptr) {
          if (floats) result(std::fabs(a->asFloat()));
          else if (a->i != INT64_MIN) resultInt(a->i < 0 ? -a->i : a->i);
        } else if (b != nullptr && (static_cast<BuiltinFn>(o.intAttr) == BuiltinFn::Max ||
                                    static_cast<BuiltinFn>(o.intAttr) == BuiltinFn::Min)) {
          // As the emitter computes it: Python's max(a, b) (`b if b > a
          // else a`, min with `<`, comparing an int with a float exactly),
          // converted to the result's type, and a NaN on either side wins
          // as in torch.maximum.
          if (floats && (std::isnan(a->asFloat()) || std::isnan(b->asFloat()))) {
            result(std::nan(""));
            return;
          }
          std::partial_ordering order = exactOrder(*b, *a);
          bool second = static_cast<BuiltinFn>(o.intAttr) == BuiltinFn::Max ? order > 0
                                                                                 : order < 0;
          const Constant& pick = second ? *b : *a;
          if (floats) result(pick.asFloat());
          else resultInt(pick.i);
        }
        return;
      default: break;
    }
    if (b == nullptr) {
      return;
    }
    if (floats) {
      double x = a->asFloat();
      double y = b->asFloat();
      switch (o.kind) {
        case OpKind::Add: result(x + y); return;
        case OpKind::Sub: result(x - y); return;
        case OpKind::Mul: result(x * y); return;
        case OpKind::Div: if (y != 0.0) result(x / y); return;
        case OpKind::Pow:
          // math.pow raises there at run time (the checker warned): not folded.
          if (!mathPowRaises(x, y)) result(std::pow(x, y));
          return;
        default: break;
      }
      // Python compares an int with a float exactly (2**53 + 1 > 2.0**53),
      // not through a double as the arithmetic above does.
      std::partial_ordering order = exactOrder(*a, *b);
      switch (o.kind) {
        case OpKind::Eq: compare(order == 0); return;
        case OpKind::Ne: compare(order != 0); return;
        case OpKind::Lt: compare(order < 0); return;
        case OpKind::Le: compare(order <= 0); return;
        case OpKind::Gt: compare(order > 0); return;
        case OpKind::Ge: compare(order >= 0); return;
        default: return;
      }
    }
    int64_t x = a->i;
    int64_t y = b->i;
    switch (o.kind) {
      case OpKind::Add: if (!__builtin_add_overflow(x, y, &out)) resultInt(out); return;
      case OpKind::Sub: if (!__builtin_sub_overflow(x, y, &out)) resultInt(out); return;
      case OpKind::Mul: if (!__builtin_mul_overflow(x, y, &out)) resultInt(out); return;
      case OpKind::Div:
        // Integer '/' is floor division in Triton DSL; a float result
        // (true division of tensors) is not folded here.
        if (y != 0 && !(x == INT64_MIN && y == -1) && isIntegral(dtype)) {
          resultInt(x / y - ((x % y != 0) && ((x < 0) != (y < 0)) ? 1 : 0));
        }
        return;
      case OpKind::Mod:
        if (y != 0 && !(x == INT64_MIN && y == -1)) {
          int64_t r = x % y;  // the sign of the divisor, without overflow
          resultInt(r != 0 && ((r < 0) != (y < 0)) ? r + y : r);
        }
        return;
      case OpKind::Pow:
        if (y >= 0 && y < 64) {
          int64_t p = 1;
          for (int64_t k = 0; k < y; ++k) {
            if (__builtin_mul_overflow(p, x, &p)) return;
          }
          resultInt(p);
        }
        return;
      case OpKind::Eq: compare(x == y); return;
      case OpKind::Ne: compare(x != y); return;
      case OpKind::Lt: compare(x < y); return;
      case OpKind::Le: compare(x <= y); return;
      case OpKind::Gt: compare(x > y); return;
      case OpKind::Ge: compare(x >= y); return;
      case OpKind::And: compare(x != 0 && y != 0); return;
      case OpKind::Or: compare(x != 0 || y != 0); return;
      default: return;
    }
  }

  // `if true { A } else { B }` becomes A, spliced in place of the if.
  bool foldIf(OpId id) {
    std::optional<Constant> cond = constantOf(m_.operands(id)[0]);
    if (!cond || cond->kind != ConstKind::Bool) {
      return false;
    }
    Op& o = m_.op(id);
    BlockId parent = o.parent;
    BlockId taken = o.regions[cond->i != 0 ? 0 : 1];
    std::vector<OpId>& outer = m_.blocks[parent.index].ops;
    size_t at = static_cast<size_t>(std::find(outer.begin(), outer.end(), id) - outer.begin());
    std::vector<OpId> moved = m_.blocks[taken.index].ops;
    OpId last = moved.empty() ? OpId{} : moved.back();
    bool yields = last.isValid() && m_.op(last).kind == OpKind::Yield;
    if (yields) {
      std::span<const ValueId> yielded = m_.operands(last);
      std::span<const ValueId> results = m_.results(id);
      for (size_t i = 0; i < results.size(); ++i) {
        m_.replaceAllUses(results[i], yielded[i]);
      }
      moved.pop_back();
    }
    for (OpId op : moved) {
      m_.op(op).parent = parent;
    }
    m_.blocks[taken.index].ops.clear();
    if (yields) {
      m_.blocks[taken.index].ops.push_back(last);  // erased with the if
    }
    outer.insert(outer.begin() + static_cast<long>(at), moved.begin(), moved.end());
    if (!yields) {
      // The branch returns or leaves a loop: what follows the if is dead.
      std::vector<OpId> after(outer.begin() + static_cast<long>(at + moved.size() + 1),
                              outer.end());
      for (OpId dead : after) {
        m_.erase(dead);
      }
    }
    m_.erase(id);
    changed_ = true;
    // The spliced ops may fold further (a spliced `if` on a constant too).
    for (OpId op : moved) {
      if (m_.op(op).erased) continue;
      if (m_.op(op).kind == OpKind::If && foldIf(op)) continue;
      for (BlockId region : m_.regionsOf(op)) {  // by value: the walk may create ops
        if (region.isValid()) walk(region);
      }
      foldScalar(op);
    }
    return true;
  }

  Module& m_;
  bool changed_ = false;
};

}  // namespace

bool runConstantFold(Module& m) { return Folder(m).run(); }

}  // namespace tritonc::opt

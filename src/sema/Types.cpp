//===- Types.cpp - types and symbolic dimensions --------------------------===//
#include "tritonc/sema/Types.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "tritonc/base/Check.h"

namespace tritonc {

// ---- dtypes -----------------------------------------------------------------

std::string_view dtypeName(DType dtype) {
  switch (dtype) {
    case DType::Bool: return "bool";
    case DType::Trit: return "trit";
    case DType::Int8: return "int8";
    case DType::Int16: return "int16";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::Float16: return "float16";
    case DType::BFloat16: return "bfloat16";
    case DType::Float32: return "float32";
    case DType::Str: return "str";
  }
  return "?";
}

std::optional<DType> dtypeFromName(std::string_view name) {
  static constexpr std::pair<std::string_view, DType> kNames[] = {
      {"bool", DType::Bool},       {"trit", DType::Trit},       {"int8", DType::Int8},
      {"int16", DType::Int16},     {"int32", DType::Int32},     {"int64", DType::Int64},
      {"int", DType::Int32},       {"float16", DType::Float16}, {"bfloat16", DType::BFloat16},
      {"float32", DType::Float32}, {"float", DType::Float32},   {"str", DType::Str},
  };
  for (const auto& [spelling, dtype] : kNames) {
    if (spelling == name) {
      return dtype;
    }
  }
  return std::nullopt;
}

bool isIntegral(DType dtype) { return dtype <= DType::Int64; }
bool isFloating(DType dtype) { return dtype >= DType::Float16 && dtype <= DType::Float32; }
bool isNumeric(DType dtype) { return dtype != DType::Str; }
DType promote(DType a, DType b) { return std::max(a, b); }

bool fitsFloat(DType dtype, double value) {
  // Where torch's conversion rounds to inf: half a unit in the last place
  // past the largest finite value (65504 + 16 for float16). bfloat16 is
  // rounded to float32 first, so its bound is the float32 rounding of its own.
  // An infinity or a NaN is one in every float dtype: nothing is lost.
  if (!std::isfinite(value)) return true;
  switch (dtype) {
    case DType::Float16: return std::abs(value) < 65520.0;
    case DType::BFloat16: return std::abs(value) < 3.396177427818412e38;
    case DType::Float32: return std::abs(value) < 3.4028235677973366e38;
    default: return true;
  }
}

bool fitsInteger(DType dtype, int64_t value) {
  switch (dtype) {
    case DType::Bool: return value == 0 || value == 1;
    case DType::Trit: return value >= -1 && value <= 1;
    case DType::Int8: return value >= -128 && value <= 127;
    case DType::Int16: return value >= -32768 && value <= 32767;
    case DType::Int32:
      return value >= std::numeric_limits<int32_t>::min() &&
             value <= std::numeric_limits<int32_t>::max();
    case DType::Int64: return true;
    case DType::Float16: return value > -65520 && value < 65520;  // rounds to 65504 below
    case DType::BFloat16:
    case DType::Float32: return true;
    case DType::Str: return false;
  }
  return false;
}

// ---- dims -------------------------------------------------------------------

namespace {
uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}
}  // namespace

DimStore::DimStore() {
  nodes_.push_back(Node{DimKind::Unknown, 0, IdentifierId{}, DimId{}, DimId{}});
  unknown_ = DimId{0};
}

DimId DimStore::intern(const Node& node) {
  uint64_t h = mix(mix(mix(static_cast<uint64_t>(node.kind), static_cast<uint64_t>(node.value)),
                       node.var.index),
                   (static_cast<uint64_t>(node.lhs.index) << 32) | node.rhs.index);
  uint32_t found = index_.find(h, [&](uint32_t candidate) {
    const Node& n = nodes_[candidate];
    return n.kind == node.kind && n.value == node.value && n.var == node.var &&
           n.lhs == node.lhs && n.rhs == node.rhs;
  });
  if (found != HashIndex::kNone) {
    return DimId{found};
  }
  nodes_.push_back(node);
  auto id = static_cast<uint32_t>(nodes_.size() - 1);
  index_.insert(h, id);
  return DimId{id};
}

DimId DimStore::constant(int64_t value) {
  return intern(Node{DimKind::Const, value, IdentifierId{}, DimId{}, DimId{}});
}

DimId DimStore::var(IdentifierId name) {
  return intern(Node{DimKind::Var, 0, name, DimId{}, DimId{}});
}

std::optional<int64_t> DimStore::constValue(DimId id) const {
  const Node& n = nodes_[id.index];
  if (n.kind == DimKind::Const) {
    return n.value;
  }
  return std::nullopt;
}

DimId DimStore::binary(DimKind op, DimId lhs, DimId rhs) {
  if (isUnknown(lhs) || isUnknown(rhs)) {
    return unknown_;
  }
  std::optional<int64_t> a = constValue(lhs);
  std::optional<int64_t> b = constValue(rhs);
  if (a && b) {
    int64_t out = 0;
    switch (op) {
      // A size beyond int64 is no size: unknown, as a division by zero.
      case DimKind::Add: return __builtin_add_overflow(*a, *b, &out) ? unknown_ : constant(out);
      case DimKind::Sub: return __builtin_sub_overflow(*a, *b, &out) ? unknown_ : constant(out);
      case DimKind::Mul: return __builtin_mul_overflow(*a, *b, &out) ? unknown_ : constant(out);
      case DimKind::Div:
        if (*b == 0 || (*a == INT64_MIN && *b == -1)) {
          return unknown_;
        }
        // Floor division, as Python's // (LANGUAGE.md §3: `/` on dims).
        return constant(*a / *b - ((*a % *b != 0) && ((*a < 0) != (*b < 0)) ? 1 : 0));
      default: break;
    }
  }
  switch (op) {
    case DimKind::Add:
      if (a == 0) return rhs;
      if (b == 0) return lhs;
      break;
    case DimKind::Sub:
      if (b == 0) return lhs;
      if (lhs == rhs) return constant(0);
      break;
    case DimKind::Mul:
      if (a == 1) return rhs;
      if (b == 1) return lhs;
      if (a == 0 || b == 0) return constant(0);
      // Canonical order for commutative operators: constants first.
      if (b && !a) std::swap(lhs, rhs);
      break;
    case DimKind::Div:
      if (b == 1) return lhs;
      break;
    default: break;
  }
  if (op == DimKind::Add && constValue(rhs) && !constValue(lhs)) {
    std::swap(lhs, rhs);
  }
  return intern(Node{op, 0, IdentifierId{}, lhs, rhs});
}

bool DimStore::containsUnknown(DimId id) const {
  const Node& n = nodes_[id.index];
  switch (n.kind) {
    case DimKind::Unknown: return true;
    case DimKind::Const:
    case DimKind::Var: return false;
    default: return containsUnknown(n.lhs) || containsUnknown(n.rhs);
  }
}

bool DimStore::addLinear(DimId id, int64_t factor, Linear& out) const {
  const Node& n = nodes_[id.index];
  auto term = [&](int64_t by) {
    int64_t& f = out.factorOf(id.index);
    return !__builtin_mul_overflow(factor, by, &by) && !__builtin_add_overflow(f, by, &f);
  };
  switch (n.kind) {
    case DimKind::Unknown: return false;
    case DimKind::Const: {
      int64_t v = 0;
      return !__builtin_mul_overflow(factor, n.value, &v) &&
             !__builtin_add_overflow(out.constant, v, &out.constant);
    }
    case DimKind::Add: return addLinear(n.lhs, factor, out) && addLinear(n.rhs, factor, out);
    case DimKind::Sub:
      return factor != INT64_MIN && addLinear(n.lhs, factor, out) &&
             addLinear(n.rhs, -factor, out);
    case DimKind::Mul: {
      // binary() puts a constant factor first.
      std::optional<int64_t> c = constValue(n.lhs);
      int64_t scaled = 0;
      if (c && !__builtin_mul_overflow(factor, *c, &scaled)) return addLinear(n.rhs, scaled, out);
      return term(1);  // a product of sizes: one opaque term
    }
    case DimKind::Var:
    case DimKind::Div: return term(1);  // floor division: an opaque term
  }
  return false;
}

Decision DimStore::equal(DimId a, DimId b) const {
  if (isUnknown(a) || isUnknown(b)) {
    return Decision::Unknown;
  }
  if (a == b) {
    return Decision::Yes;
  }
  std::optional<int64_t> x = constValue(a);
  std::optional<int64_t> y = constValue(b);
  if (x && y) {
    return Decision::No;  // hash-consing: equal constants share an id
  }
  if (nodes_[a.index].kind == DimKind::Var && nodes_[b.index].kind == DimKind::Var) {
    return Decision::Unknown;  // two size variables (the common case)
  }
  // a - b as a sum of terms (size variables and opaque sub-expressions, by
  // node) with integer factors and a constant: `2 * d + e` and `e + d * 2`
  // are equal, `d + 1` and `d` never are. A size variable stands for a size
  // of at least 1 (a layer or tensor of width 0 computes nothing: LANGUAGE.md
  // leaves `?` and two different size variables undecided, not `4 * d` and
  // `d`), so a difference whose terms are size variables with factors of one
  // sign is bounded by its value with every variable at 1: `4 * d` and `d`
  // differ (3 * d >= 3), as do `2 * d + 1` and `d`; `2 * d` and `d + 1` may
  // not (d = 1).
  Linear diff;
  if (!addLinear(a, 1, diff) || !addLinear(b, -1, diff)) {
    return Decision::Unknown;
  }
  bool zero = diff.constant == 0, opaque = false, positive = true, negative = true;
  int64_t atOne = diff.constant;  // the difference with every size variable at 1
  for (const auto& [node, factor] : diff.terms) {
    if (factor == 0) continue;
    zero = false;
    opaque = opaque || nodes_[node].kind != DimKind::Var ||
             __builtin_add_overflow(atOne, factor, &atOne);
    (factor > 0 ? negative : positive) = false;
  }
  if (zero) return Decision::Yes;
  if (opaque) return Decision::Unknown;
  if ((positive && atOne > 0) || (negative && atOne < 0)) return Decision::No;
  return Decision::Unknown;
}

DimId DimStore::substitute(DimId id, const std::unordered_map<uint32_t, DimId>& bindings) {
  Node n = nodes_[id.index];
  switch (n.kind) {
    case DimKind::Const:
    case DimKind::Unknown: return id;
    case DimKind::Var: {
      auto it = bindings.find(n.var.index);
      return it == bindings.end() ? id : it->second;
    }
    default: return binary(n.kind, substitute(n.lhs, bindings), substitute(n.rhs, bindings));
  }
}

void DimStore::collectVars(DimId id, std::vector<IdentifierId>& out) const {
  const Node& n = nodes_[id.index];
  switch (n.kind) {
    case DimKind::Var:
      if (std::find(out.begin(), out.end(), n.var) == out.end()) {
        out.push_back(n.var);
      }
      return;
    case DimKind::Const:
    case DimKind::Unknown: return;
    default:
      collectVars(n.lhs, out);
      collectVars(n.rhs, out);
  }
}

bool DimStore::mentions(DimId id, IdentifierId var) const {
  const Node& n = nodes_[id.index];
  switch (n.kind) {
    case DimKind::Var: return n.var == var;
    case DimKind::Const:
    case DimKind::Unknown: return false;
    default: return mentions(n.lhs, var) || mentions(n.rhs, var);
  }
}

size_t DimStore::countTerms(DimId id) const {
  const Node& n = nodes_[id.index];
  switch (n.kind) {
    case DimKind::Add:
    case DimKind::Sub: return countTerms(n.lhs) + countTerms(n.rhs);
    case DimKind::Mul:
      if (constValue(n.lhs)) return countTerms(n.rhs);
      return 1;
    default: return 1;
  }
}

std::optional<std::string> DimStore::formatCollected(DimId id, const Interner& interner) const {
  Linear sum;
  if (!addLinear(id, 1, sum)) return std::nullopt;
  size_t kept = sum.constant != 0 ? 1 : 0;
  for (const auto& [node, factor] : sum.terms) kept += factor != 0 ? 1 : 0;
  // Only a sum whose terms merge or cancel (`c + g + g`, `h + 2 - 3`) reads
  // better collected; otherwise the expression stays as it was written.
  if (kept >= countTerms(id)) return std::nullopt;
  if (kept == 0) return std::string("0");
  std::string out;
  auto append = [&](bool negative, const std::string& text) {
    if (out.empty()) {
      out = negative ? "-" + text : text;
    } else {
      out += (negative ? " - " : " + ") + text;
    }
  };
  // Added terms first, in the order they were written, then subtracted ones.
  for (bool negatives : {false, true}) {
    for (const auto& [node, factor] : sum.terms) {
      if (factor == 0 || (factor < 0) != negatives) continue;
      // |INT64_MIN| has no int64: addLinear gave up on overflow long before.
      int64_t magnitude = factor < 0 ? -factor : factor;
      DimKind k = nodes_[node].kind;
      std::string text = format(DimId{node}, interner);
      if (magnitude != 1) {
        bool compound = k == DimKind::Mul || k == DimKind::Div;
        text = std::to_string(magnitude) + " * " + (compound ? "(" + text + ")" : text);
      }
      append(negatives, text);
    }
  }
  if (sum.constant != 0) {
    bool negative = sum.constant < 0 && !out.empty() && sum.constant != INT64_MIN;
    append(negative, std::to_string(negative ? -sum.constant : sum.constant));
  }
  return out;
}

std::string DimStore::format(DimId id, const Interner& interner) const {
  const Node& n = nodes_[id.index];
  if (n.kind == DimKind::Add || n.kind == DimKind::Sub || n.kind == DimKind::Mul) {
    if (std::optional<std::string> collected = formatCollected(id, interner)) return *collected;
  }
  auto operand = [&](DimId child, bool tight) {
    std::string text = format(child, interner);
    DimKind k = nodes_[child.index].kind;
    bool compound = k == DimKind::Add || k == DimKind::Sub || (tight && (k == DimKind::Mul || k == DimKind::Div));
    return compound ? "(" + text + ")" : text;
  };
  switch (n.kind) {
    case DimKind::Const: return std::to_string(n.value);
    case DimKind::Var: return std::string(interner.spelling(n.var));
    case DimKind::Unknown: return "?";
    case DimKind::Add:
      // binary() puts a constant term first; it reads as written last (`d + 1`).
      if (std::optional<int64_t> c = constValue(n.lhs); c && !constValue(n.rhs)) {
        bool minus = *c < 0 && *c != INT64_MIN;
        return format(n.rhs, interner) + (minus ? " - " : " + ") + std::to_string(minus ? -*c : *c);
      }
      return format(n.lhs, interner) + " + " + format(n.rhs, interner);
    case DimKind::Sub: return format(n.lhs, interner) + " - " + operand(n.rhs, false);
    case DimKind::Mul: return operand(n.lhs, false) + " * " + operand(n.rhs, true);
    case DimKind::Div: return operand(n.lhs, false) + " / " + operand(n.rhs, true);
  }
  return "?";
}

// ---- types ------------------------------------------------------------------

TypeStore::TypeStore() {
  error_ = make(TypeKind::Error);
  unknown_ = make(TypeKind::Unknown);
  void_ = make(TypeKind::Void);
}

TypeId TypeStore::intern(const Node& node, std::span<const DimId> shape) {
  uint64_t h = mix(mix(mix(static_cast<uint64_t>(node.kind), static_cast<uint64_t>(node.dtype)),
                       (node.ternary ? 2 : 0) | (node.rankKnown ? 1 : 0)),
                   (static_cast<uint64_t>(node.ref) << 32) | node.count);
  for (DimId d : shape) {
    h = mix(h, d.index);
  }
  uint32_t found = index_.find(h, [&](uint32_t candidate) {
    const Node& n = nodes_[candidate];
    return n.kind == node.kind && n.dtype == node.dtype && n.ternary == node.ternary &&
           n.rankKnown == node.rankKnown && n.ref == node.ref && n.count == node.count &&
           std::equal(shape.begin(), shape.end(), shapes_[n.shape].begin(),
                      shapes_[n.shape].end());
  });
  if (found != HashIndex::kNone) {
    return TypeId{found};
  }
  Node stored = node;
  stored.shape = static_cast<uint32_t>(shapes_.size());
  shapes_.emplace_back(shape.begin(), shape.end());
  nodes_.push_back(stored);
  auto id = static_cast<uint32_t>(nodes_.size() - 1);
  index_.insert(h, id);
  return TypeId{id};
}

TypeId TypeStore::scalar(DType dtype) {
  Node n;
  n.kind = TypeKind::Scalar;
  n.dtype = dtype;
  return intern(n, {});
}

TypeId TypeStore::tensor(DType dtype, std::span<const DimId> shape, bool ternary) {
  Node n;
  n.kind = TypeKind::Tensor;
  n.dtype = ternary ? DType::Trit : dtype;
  n.ternary = ternary;
  n.rankKnown = true;
  return intern(n, shape);
}

TypeId TypeStore::tensorAnyRank(DType dtype, bool ternary) {
  Node n;
  n.kind = TypeKind::Tensor;
  n.dtype = ternary ? DType::Trit : dtype;
  n.ternary = ternary;
  n.rankKnown = false;
  return intern(n, {});
}

TypeId TypeStore::list(TypeId element, uint32_t length) {
  Node n;
  n.kind = TypeKind::List;
  n.ref = element.index;
  n.count = length;
  return intern(n, {});
}

TypeId TypeStore::make(TypeKind kind, uint32_t ref) {
  Node n;
  n.kind = kind;
  n.ref = ref;
  return intern(n, {});
}

std::span<const DimId> TypeStore::shape(TypeId id) const {
  return shapes_[nodes_[id.index].shape];
}

TypeId TypeStore::withDType(TypeId tensorType, DType dtype, bool ternary) {
  const Node& n = nodes_[tensorType.index];
  TRITONC_CHECK(n.kind == TypeKind::Tensor, "withDType on a non-tensor");
  if (!n.rankKnown) {
    return tensorAnyRank(dtype, ternary);
  }
  std::vector<DimId> dims(shape(tensorType).begin(), shape(tensorType).end());
  return tensor(dtype, dims, ternary);
}

std::string TypeStore::format(TypeId id, const DimStore& dims, const Interner& interner,
                              const DeclNamer& namer) const {
  const Node& n = nodes_[id.index];
  switch (n.kind) {
    case TypeKind::Error: return "<error>";
    case TypeKind::Unknown: return "<unknown>";
    case TypeKind::Void: return "void";
    case TypeKind::Scalar: return std::string(dtypeName(n.dtype));
    case TypeKind::Tensor: {
      std::string out = n.ternary ? "TernaryTensor<" : "Tensor<";
      out += dtypeName(n.dtype);
      if (n.rankKnown) {
        out += ", [";
        bool first = true;
        for (DimId d : shape(id)) {
          out += first ? "" : ", ";
          out += dims.format(d, interner);
          first = false;
        }
        out += "]";
      }
      return out + ">";
    }
    case TypeKind::List:
      return "list<" + format(TypeId{n.ref}, dims, interner, namer) +
             (n.count == UINT32_MAX ? "" : ", " + std::to_string(n.count)) + ">";
    case TypeKind::Range: return "range";
    case TypeKind::DTypeValue: return "dtype";
    default: return namer ? namer(n.kind, n.ref) : "<decl>";
  }
}

}  // namespace tritonc

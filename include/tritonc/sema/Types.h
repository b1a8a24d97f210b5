//===- Types.h - types and symbolic dimensions ------------------*- C++ -*-===//
//
// Types are interned in a `TypeStore` and named by `TypeId`, so comparing two
// types is comparing two integers. Tensor shapes are lists of `DimId`s from a
// `DimStore`: integer constants, size variables (`n`), the unknown `?`, and
// + - * / of those, folded and hash-consed so that provably equal dimensions
// have the same id.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <deque>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "tritonc/base/HashIndex.h"
#include "tritonc/base/Interner.h"

namespace tritonc {

/// Element types, in promotion order (LANGUAGE.md §3), then `str`.
enum class DType : uint8_t { Bool, Trit, Int8, Int16, Int32, Int64, Float16, BFloat16, Float32, Str };

std::string_view dtypeName(DType dtype);
/// Looks up a scalar type name, including the aliases int, float.
std::optional<DType> dtypeFromName(std::string_view name);
bool isIntegral(DType dtype);  ///< bool, trit and the int types
bool isFloating(DType dtype);
bool isNumeric(DType dtype);   ///< everything but str
/// The type both operands promote to (the later in promotion order).
DType promote(DType a, DType b);
/// Whether a value of `value` fits `dtype` (literals take their context's type).
bool fitsInteger(DType dtype, int64_t value);
/// Whether a float constant is finite in float dtype `dtype` (float16's
/// largest is 65504; bfloat16 and float32 hold every literal that parses).
bool fitsFloat(DType dtype, double value);

struct DimId {
  uint32_t index = UINT32_MAX;
  bool isValid() const { return index != UINT32_MAX; }
  friend bool operator==(DimId, DimId) = default;
};

enum class DimKind : uint8_t { Const, Var, Unknown, Add, Sub, Mul, Div };

/// Three-valued answer of a comparison that may be undecidable.
enum class Decision : uint8_t { No, Yes, Unknown };

class DimStore {
 public:
  struct Node {
    DimKind kind;
    int64_t value = 0;   ///< Const
    IdentifierId var;    ///< Var
    DimId lhs, rhs;      ///< binary kinds
  };

  DimStore();
  DimId constant(int64_t value);
  DimId var(IdentifierId name);
  DimId unknown() const { return unknown_; }
  /// a op b, folded: constants evaluate, x+0, x*1, x*0, x/1 simplify.
  DimId binary(DimKind op, DimId lhs, DimId rhs);

  const Node& node(DimId id) const { return nodes_[id.index]; }
  std::optional<int64_t> constValue(DimId id) const;
  bool isUnknown(DimId id) const { return id == unknown_; }
  /// True when the dimension mentions `?` anywhere.
  bool containsUnknown(DimId id) const;
  /// Yes when provably equal, No when provably different, else Unknown.
  Decision equal(DimId a, DimId b) const;
  /// Replaces size variables by the dimensions `bindings` gives them.
  DimId substitute(DimId id, const std::unordered_map<uint32_t, DimId>& bindings);
  /// Size variables the dimension mentions, in first-seen order.
  void collectVars(DimId id, std::vector<IdentifierId>& out) const;
  /// Whether `id` mentions the size variable `var`.
  bool mentions(DimId id, IdentifierId var) const;
  std::string format(DimId id, const Interner& interner) const;

  /// Serialization (the L2 cache): the number of nodes, and re-adding a node
  /// read back (nodes are re-added in id order, so ids are preserved).
  size_t size() const { return nodes_.size(); }
  DimId restore(const Node& node) { return intern(node); }

 private:
  /// A dimension as a constant plus size variables and opaque terms (keyed by
  /// node index) times integer factors.
  struct Linear {
    int64_t constant = 0;
    std::vector<std::pair<uint32_t, int64_t>> terms;  ///< few: searched in order
    int64_t& factorOf(uint32_t node) {
      for (auto& [n, f] : terms) {
        if (n == node) return f;
      }
      return terms.emplace_back(node, 0).second;
    }
  };
  /// Adds `factor` times `id` to `out`; false on `?` or overflow.
  bool addLinear(DimId id, int64_t factor, Linear& out) const;
  DimId intern(const Node& node);
  /// The terms of a sum as written (`c + g + g`: 3; `2 * (a + b)`: 2).
  size_t countTerms(DimId id) const;
  /// A sum with its like terms collected (`c + 2 * g`), when that has fewer
  /// terms than the sum as written; nullopt otherwise.
  std::optional<std::string> formatCollected(DimId id, const Interner& interner) const;
  /// A deque: node() references stay valid while sizes are added (a checker
  /// holding one across a call that makes a new size must not read freed
  /// memory).
  std::deque<Node> nodes_;
  HashIndex index_;
  DimId unknown_;
};

struct TypeId {
  uint32_t index = UINT32_MAX;
  bool isValid() const { return index != UINT32_MAX; }
  friend bool operator==(TypeId, TypeId) = default;
};

enum class TypeKind : uint8_t {
  Error,         ///< a mistake already reported: accepted everywhere, silently
  Unknown,       ///< not decidable at compile time: accepted, checked at run time
  Void,          ///< no value (print, assert, a layer without return)
  Scalar,        ///< dtype
  Tensor,        ///< dtype, ternary flag, shape (or unknown rank)
  List,          ///< element type (ref), length (count)
  Range,         ///< what `range(...)` and `a..b` give a `for` loop
  DTypeValue,    ///< a type name used as a value (`dtype=float32`)
  Layer,         ///< a user layer (ref = layer index): apply or instantiate it
  Instance,      ///< an instance of a user layer (ref = layer index)
  BuiltinLayer,  ///< a built-in stateful layer (ref = builtin layer index)
  BuiltinInstance,
  Function,      ///< a user fn (ref = fn index)
  Builtin,       ///< a builtin function (ref = Builtin)
  Module,        ///< an imported file's alias
};

class TypeStore {
 public:
  struct Node {
    TypeKind kind = TypeKind::Error;
    DType dtype = DType::Float32;
    bool ternary = false;
    bool rankKnown = false;
    uint32_t ref = 0;     ///< decl index, element type, builtin id (by kind)
    uint32_t count = 0;   ///< list length (UINT32_MAX = unknown)
    uint32_t shape = 0;   ///< index into shapes (Tensor)
  };

  TypeStore();
  TypeId error() const { return error_; }
  TypeId unknown() const { return unknown_; }
  TypeId voidType() const { return void_; }
  TypeId scalar(DType dtype);
  /// A tensor of known rank.
  TypeId tensor(DType dtype, std::span<const DimId> shape, bool ternary = false);
  /// A tensor of unknown rank (`Tensor<float32>`).
  TypeId tensorAnyRank(DType dtype, bool ternary = false);
  TypeId list(TypeId element, uint32_t length);
  TypeId make(TypeKind kind, uint32_t ref = 0);

  const Node& node(TypeId id) const { return nodes_[id.index]; }
  TypeKind kind(TypeId id) const { return nodes_[id.index].kind; }
  std::span<const DimId> shape(TypeId id) const;
  bool isTensor(TypeId id) const { return kind(id) == TypeKind::Tensor; }
  bool isTernary(TypeId id) const { return isTensor(id) && nodes_[id.index].ternary; }
  bool isScalar(TypeId id) const { return kind(id) == TypeKind::Scalar; }
  /// Error and Unknown: types that any check accepts without a diagnostic.
  bool isLenient(TypeId id) const {
    return kind(id) == TypeKind::Error || kind(id) == TypeKind::Unknown;
  }
  /// The same tensor with another dtype/ternary flag, or another shape.
  TypeId withDType(TypeId tensor, DType dtype, bool ternary = false);

  /// Names the declaration a Layer/Instance/Function/Builtin type refers to.
  using DeclNamer = std::function<std::string(TypeKind kind, uint32_t ref)>;
  /// `Tensor<float32, [?, 128]>`, `TernaryTensor<trit, [4, 4]>`, `int32`, ...
  std::string format(TypeId id, const DimStore& dims, const Interner& interner,
                     const DeclNamer& namer) const;

  /// Serialization (the L2 cache), as for DimStore.
  size_t size() const { return nodes_.size(); }
  TypeId restore(const Node& node, std::span<const DimId> shape) { return intern(node, shape); }

 private:
  TypeId intern(const Node& node, std::span<const DimId> shape);
  /// A deque, as DimStore's: node() references stay valid while types are
  /// added (`const Node& t = ts.node(x)` then a conversion that makes a type).
  std::deque<Node> nodes_;
  std::vector<std::vector<DimId>> shapes_;
  HashIndex index_;
  TypeId error_, unknown_, void_;
};

}  // namespace tritonc

//===- IR.h - the tritonc intermediate representation -----------*- C++ -*-===//
//
// A typed SSA dataflow IR of tensor operations (ops from Ops.def). A module
// holds one function per layer, fn and `main`. A layer function separates
// module-level state (hyperparameters, weights with their initializers,
// sub-module instances) from its `forward` body. Control flow is structured:
// `if`, `for` and `while` ops own regions (blocks) whose `yield`s produce the
// op's results, so every value has one definition that dominates its uses.
//
// Storage is flat and index-based: ops, values and blocks live in vectors of
// the module and are named by ids; passes edit them in place and
// `Module::compact()` drops what they erased.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "tritonc/base/Expected.h"
#include "tritonc/base/Interner.h"
#include "tritonc/sema/CheckedModule.h"
#include "tritonc/sema/Types.h"

namespace tritonc::ir {

enum class OpKind : uint8_t {
#define OP(Name, Spelling, Flags) Name,
#include "tritonc/ir/Ops.def"
};
std::string_view opName(OpKind kind);
bool isPure(OpKind kind);
bool isTerminator(OpKind kind);
/// Whether an op's result is always a new tensor, never an operand or a view
/// of one: arithmetic, comparisons, products and the fused products.
bool makesNewValue(OpKind kind);
/// The element-wise operators of the language: arithmetic (+ - * / % **),
/// negation, comparisons and logic.
bool isElementwise(OpKind kind);

struct ValueId {
  uint32_t index = UINT32_MAX;
  bool isValid() const { return index != UINT32_MAX; }
  friend bool operator==(ValueId, ValueId) = default;
};
struct OpId {
  uint32_t index = UINT32_MAX;
  bool isValid() const { return index != UINT32_MAX; }
  friend bool operator==(OpId, OpId) = default;
};
struct BlockId {
  uint32_t index = UINT32_MAX;
  bool isValid() const { return index != UINT32_MAX; }
  friend bool operator==(BlockId, BlockId) = default;
};

/// What a Constant op holds.
enum class ConstKind : uint8_t { None, Int, Float, Bool, String };

struct Op {
  OpKind kind;
  ConstKind constKind = ConstKind::None;
  bool erased = false;
  bool inplace = false;              ///< may overwrite its input (set by the inplace pass)
  int64_t intAttr = 0;
  double floatAttr = 0.0;
  uint32_t strAttr = UINT32_MAX;     ///< index into Module::strings
  uint32_t intsBegin = 0, intsCount = 0;
  uint32_t operandsBegin = 0, operandsCount = 0;
  uint32_t resultsBegin = 0, resultsCount = 0;
  BlockId regions[2];
  BlockId parent;
  uint32_t loc = UINT32_MAX;         ///< source byte offset, for run-time check messages
};

struct Value {
  TypeId type;
  OpId def;          ///< the defining op, or invalid for a block argument
  BlockId block;     ///< for block arguments
  IdentifierId name; ///< the source name it was bound to, if any (for dumps)
};

struct Block {
  std::vector<ValueId> args;
  std::vector<OpId> ops;
  OpId parent;       ///< the op owning this region; invalid for a function body
};

struct HyperDecl {
  IdentifierId name;
  TypeId type;
  bool implicit = false;   ///< a size variable promoted to a keyword-only int
  BlockId defaultValue;    ///< yields the default, or invalid
};
/// How a ternary weight's packed rows run (TOOLCHAIN.md packs them along the
/// reduction dimension; irgen/PackLayout.h decides).
enum class PackRuns : uint8_t {
  Rows,     ///< the rows of the tensor as stored, `[d0, d1 * ... * dn]` (linear, conv)
  Columns,  ///< reduced over its second-to-last dimension (the right operand of `@`):
            ///< the rows of `w` with its last two dimensions swapped
  LastDim,  ///< a weight of rank >= 3 reduced over its last dimension (the left operand
            ///< of a batched `@`): runs of its last dimension, not rows of `d0`
};

struct WeightDecl {
  IdentifierId name;
  TypeId type;
  BlockId init;            ///< yields the initial value, or invalid for the type's default
  double sparsity = 0.0;   ///< fraction of zero trits at initialization (zero-skip pass)
  PackRuns packRuns = PackRuns::Rows;
};
struct InputDecl {
  IdentifierId name;
  TypeId type;
  BlockId defaultValue;
};
struct InstanceDecl {
  IdentifierId name;       ///< the attribute name
  bool builtin = false;
  uint32_t decl = 0;       ///< function index, or BuiltinLayer
};

/// A header parameter in declaration order: which declaration it became.
struct ParamRef {
  enum class Kind : uint8_t { Hyper, Weight, Input };
  Kind kind;
  uint32_t index;  ///< into hypers, weights or inputs
};

struct Function {
  enum class Kind : uint8_t { Layer, Fn, Main };
  Kind kind = Kind::Layer;
  IdentifierId name;
  /// The parameters in declaration order (the order of apply/call bindings).
  std::vector<ParamRef> params;
  std::vector<HyperDecl> hypers;
  std::vector<WeightDecl> weights;
  std::vector<InputDecl> inputs;
  std::vector<InstanceDecl> instances;
  TypeId returnType;
  BlockId body;            ///< args: the inputs, in order
  uint32_t origin = 0;     ///< the file that defines it (Module::origins)
  /// An earlier function with the same code (-Os, merge-functions): the
  /// emitters define this one by it. -1: none.
  int32_t sameAs = -1;
};

/// A top-level constant: `let NAME = <constant>`.
struct Global {
  IdentifierId name;
  TypeId type;
  BlockId init;            ///< yields the value
  uint32_t origin = 0;     ///< the file that defines it (Module::origins)
};

class Module {
 public:
  TypeStore types;
  DimStore dims;
  const Interner* interner = nullptr;
  std::vector<Function> functions;
  std::vector<Global> globals;
  int entry = -1;          ///< functions index of the entry layer
  /// The files a program is made of, for names: [0] is the compiled file
  /// (empty), the others are imported files, named by the stem of their
  /// import (a Python identifier). Empty when nothing is imported.
  std::vector<std::string> origins;

  std::vector<Op> ops;
  std::vector<Value> values;
  std::vector<Block> blocks;
  std::vector<ValueId> operandPool;
  std::vector<ValueId> resultPool;
  std::vector<int64_t> intPool;
  std::vector<std::string> strings;

  // ---- construction -------------------------------------------------------
  BlockId createBlock(OpId parent = OpId{});
  ValueId addArg(BlockId block, TypeId type, IdentifierId name = IdentifierId{});
  /// Appends a new op to `block` (or creates it detached when block is invalid).
  OpId createOp(BlockId block, OpKind kind, std::span<const ValueId> operands,
                std::span<const TypeId> resultTypes);
  void setInts(OpId op, std::span<const int64_t> ints);
  /// The index of `text` in `strings`, added if new (hashed: a module of
  /// thousands of run-time check messages interns each once).
  uint32_t internString(std::string text);

  // ---- access -------------------------------------------------------------
  Op& op(OpId id) { return ops[id.index]; }
  const Op& op(OpId id) const { return ops[id.index]; }
  /// An op's regions by value: safe to iterate while ops are created (which
  /// may move the op array under a reference).
  std::array<BlockId, 2> regionsOf(OpId id) const {
    return {op(id).regions[0], op(id).regions[1]};
  }
  /// Calls fn(OpId) for each live op of `block` and of the regions nested in
  /// it, in program order (an op before the ops of its regions).
  template <typename Fn>
  void forEachOp(BlockId block, Fn&& fn) const {
    for (OpId id : blocks[block.index].ops) {
      if (op(id).erased) continue;
      fn(id);
      for (BlockId region : regionsOf(id)) {
        if (region.isValid()) forEachOp(region, fn);
      }
    }
  }
  std::span<const ValueId> operands(OpId id) const {
    const Op& o = ops[id.index];
    return {operandPool.data() + o.operandsBegin, o.operandsCount};
  }
  std::span<ValueId> mutableOperands(OpId id) {
    Op& o = ops[id.index];
    return {operandPool.data() + o.operandsBegin, o.operandsCount};
  }
  std::span<const ValueId> results(OpId id) const {
    const Op& o = ops[id.index];
    return {resultPool.data() + o.resultsBegin, o.resultsCount};
  }
  ValueId result(OpId id) const { return results(id)[0]; }
  std::span<const int64_t> ints(OpId id) const {
    const Op& o = ops[id.index];
    return {intPool.data() + o.intsBegin, o.intsCount};
  }
  TypeId typeOf(ValueId value) const { return values[value.index].type; }

  /// Replaces every use of a value by another (in every function).
  void replaceAllUses(ValueId from, ValueId to);
  /// Removes an op from its block (and its regions' ops with it).
  void erase(OpId op);
  /// Erasing many ops of one long block one at a time shifts the block's
  /// list each time, which is quadratic. Between deferErasure() and
  /// flushErasure(), erase() only marks ops erased: they stay in their
  /// blocks' lists, flagged, until the flush removes them all, in one pass
  /// per block. For passes that skip erased ops when they walk a list.
  void deferErasure() { deferErasure_ = true; }
  void flushErasure();

 private:
  bool deferErasure_ = false;
  std::vector<uint32_t> erasedFrom_;  ///< blocks with flagged ops (deferErasure)
  /// internString's index: strings[0, indexedStrings_) by hash (the others,
  /// read or pushed directly, are added at its next call).
  std::unordered_multimap<size_t, uint32_t> stringIndex_;
  size_t indexedStrings_ = 0;

 public:

  std::string formatType(TypeId type) const;
  /// The deterministic textual form of --dump-ir.
  std::string print() const;
};

/// In a `check_dim` message, the compiled file's name, which the emitter
/// fills in (besides `{actual}` and `{expected}`, the sizes compared; `{{`
/// is a brace of the text).
inline constexpr std::string_view kCheckSourcePlaceholder = "{source}";

/// A compact binary form of a module (the L2 cache stores it): everything a
/// module holds, with the identifiers of its interner.
std::string serialize(const Module& module);
/// The same, appended to `out`.
void serializeTo(const Module& module, std::string& out);
/// Reads a module written by `serialize`. Its identifiers are interned into
/// `interner`, which must be empty (ids are kept as they were). Fails on
/// malformed input; ids are range-checked, so the result is safe to verify.
Expected<Module> deserialize(std::string_view bytes, Interner& interner);

}  // namespace tritonc::ir

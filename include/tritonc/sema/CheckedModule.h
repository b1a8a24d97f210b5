//===- CheckedModule.h - the type checker's output --------------*- C++ -*-===//
//
// A checked program: the tree it was checked from plus, per node, the type of
// every expression, the symbol every name refers to and how every call is
// made; per layer, its parameters classified into hyperparameters, weights
// and inputs. The IR generator reads this and re-derives nothing.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "tritonc/parse/Tree.h"
#include "tritonc/sema/Types.h"

namespace tritonc {

/// Every builtin function and layer, from Builtins.def.
enum class BuiltinFn : uint16_t {
#define BUILTIN_FN(Id, Name, Rule, Params) Id,
#include "tritonc/sema/Builtins.def"
};
enum class BuiltinLayer : uint16_t {
#define BUILTIN_LAYER(Id, Name, Rule, Params) Id,
#include "tritonc/sema/Builtins.def"
};
std::string_view builtinFnName(BuiltinFn fn);
std::string_view builtinLayerName(BuiltinLayer layer);
/// Parameter names of a builtin function / layer constructor, in order.
std::vector<std::string_view> builtinFnParamNames(BuiltinFn fn);
std::vector<std::string_view> builtinLayerParamNames(BuiltinLayer layer);
/// The creation builtins whose shape a weight's default may leave out
/// (`zeros()`, `randn()`, `full(v)`, ...): each returns a new tensor.
bool createsValues(BuiltinFn fn);

/// Which group a layer's header parameter falls into (LANGUAGE.md §4).
enum class ParamClass : uint8_t { Hyper, Weight, Input };

struct ParamInfo {
  IdentifierId name;
  NodeId node;        ///< the Param node; invalid for implicit size variables
  ParamClass cls = ParamClass::Input;
  TypeId type;
  bool implicit = false;  ///< a size variable promoted to a keyword-only int
  bool hasDefault = false;
  /// The default's value when it is a known integer (sub-module shapes).
  std::optional<int64_t> defaultValue;
  /// A float hyperparameter's default when it is a known number (`p: float32
  /// = 0.1`), checked where a creation leaves it out (`Dropout(p)`).
  std::optional<double> defaultFloat;
  /// A str parameter's default (`method: str = "absmean"`), checked where a
  /// creation or call leaves it out and the body passes it to a string option.
  std::optional<std::string> defaultStr;
  /// An integer hyperparameter's default as a size over the layer's other
  /// hyperparameters (`4 * d`); invalid when it is none.
  DimId defaultDim;
};

/// A size variable of an input's shape (`n` in `x: Tensor<float32, [?, n]>`)
/// that is not a parameter: an int in the body, read from that input.
struct ShapeVarInfo {
  IdentifierId name;
  uint32_t param = 0;  ///< index in params
  uint32_t dim = 0;    ///< dimension of that parameter's shape
};

/// A user layer or fn.
struct CallableInfo {
  IdentifierId name;
  NodeId node;
  bool isFn = false;
  std::vector<ParamInfo> params;
  std::vector<ShapeVarInfo> shapeVars;
  std::vector<uint32_t> paramSymbols;     ///< the symbol of each parameter, in order
  std::vector<uint32_t> shapeVarSymbols;  ///< the symbol of each shape variable
  TypeId returnType;  ///< declared, or Void when there is none
  bool declaredReturn = false;  ///< the header has `-> type`
  bool stateful = false;        ///< creates sub-modules (known once its body is checked)
};

enum class SymbolKind : uint8_t {
  Local,        ///< let in a body
  Param,        ///< a header parameter (ref = index in params)
  ShapeVar,     ///< a size variable of an input shape (ref = index in shapeVars)
  LoopVar,
  Constant,     ///< top-level let
  Layer,        ///< ref = index in callables
  Fn,           ///< ref = index in callables
  Builtin,      ///< ref = BuiltinFn
  BuiltinLayer, ///< ref = BuiltinLayer
  TypeName,     ///< a scalar type name used as a cast or dtype (ref = DType)
  ImportAlias,
};

struct Symbol {
  SymbolKind kind;
  IdentifierId name;
  NodeId decl;
  TypeId type;
  uint32_t ref = 0;
};

/// How a Call node is made.
enum class CallKind : uint8_t {
  None,
  Builtin,       ///< a builtin function
  Cast,          ///< int8(x), trit(x), float32(x), ...
  Apply,         ///< a layer applied to weights and inputs (a pure call)
  Instantiate,   ///< a layer given hyperparameters only: a sub-module
  Forward,       ///< an instance called on its inputs
  FnCall,
};

/// One instantiation site: `let blk = L(...)`.
struct InstanceInfo {
  bool builtin = false;
  int owner = -1;             ///< the layer (callables index) that creates it; -1 in main
  uint32_t decl = 0;          ///< callables index, or BuiltinLayer
  NodeId site;                ///< the Call node
  bool conditional = false;   ///< created under an `if`
  IdentifierId name;          ///< the attribute name (the let's name)
  /// Hyperparameter values as dimensions (for shapes): one per constructor
  /// parameter in declaration order; unknown() when not a known integer.
  std::vector<DimId> args;
  /// Float arguments, by constructor parameter like `args` (shorter when the
  /// last ones are not floats): a known constant, the creating layer's
  /// hyperparameter passed on unchanged (`Dropout(p)`), or an expression of
  /// its hyperparameters (`Dropout(p / 10.0)`), so that a value given further
  /// up is checked.
  struct FloatArg {
    std::optional<double> value;
    IdentifierId param;
    NodeId expr;  ///< the expression, when neither of the above
  };
  std::vector<FloatArg> floats;
  /// User layers' str arguments, by constructor parameter like `args`
  /// (shorter when the last ones are not strings): a known string, or the
  /// creating layer's str hyperparameter passed on (`Q(method=m)`).
  struct StrArg {
    std::optional<std::string> value;
    IdentifierId param;
  };
  std::vector<StrArg> strs;
  /// User layers: the hyperparameters the creation leaves to their defaults, by
  /// index like `args` (empty when it gives them all), so that a default computed
  /// from others (`hidden: int = 4 * d`) takes the creation's values.
  std::vector<bool> defaulted;
  /// Conv2d/TernaryConv2d(..., padding="same"): the output keeps the input's size.
  bool samePadding = false;
  /// Built-in layers' sizes given per dimension (`kernel_size=[1, 7]`): the
  /// width by constructor parameter, like `args` (whose value is the height);
  /// shorter, or invalid, where one size is both.
  std::vector<DimId> widths;
  /// Parameter `i`'s width: `widths[i]` where a pair gave one, else `args[i]`.
  DimId width(size_t i) const {
    if (i < widths.size() && widths[i].isValid()) return widths[i];
    return i < args.size() ? args[i] : DimId{};
  }
};

/// How one call's arguments bound to the callee's parameters, so that later
/// stages never bind them again.
struct CallInfo {
  CallKind kind = CallKind::None;
  /// Builtin: BuiltinFn; Cast: DType; Apply/FnCall: callables index;
  /// Instantiate/Forward: instances index.
  uint32_t callee = 0;
  /// (parameter index, argument expression) in the order given. Parameter
  /// indices count in: the builtin's parameters; the callable's params
  /// (Apply, FnCall, Forward of a user layer); the callable's hyperparameters
  /// in order, implicit ones included (Instantiate of a user layer);
  /// the constructor's parameters (Instantiate of a built-in layer); the
  /// inputs (Forward of a built-in layer).
  std::vector<std::pair<uint32_t, NodeId>> args;
};

/// A shape comparison that could not be decided at compile time: at -O0 the
/// generated code checks that dimension `dim` of the value of `value` equals
/// `expected` (in terms of the enclosing function's constants,
/// hyperparameters and size variables) and reports `node`'s location if not.
struct RuntimeShapeCheck {
  static constexpr uint32_t kRank = UINT32_MAX;  ///< `dim` of a check of the rank
  NodeId node;
  NodeId value;
  uint32_t dim = 0;
  DimId expected;
  DimId actual;
  /// When neither size is known (`?` against `?`): the other value, computed
  /// before `value`, whose dimension `otherDim` it must equal.
  NodeId other = NodeId{};
  uint32_t otherDim = 0;
  /// The layer (callables index) whose body makes the comparison; -1 in a
  /// `fn`, `main` or at top level.
  int owner = -1;
  /// Under an `if`, a loop, a guard clause or the right operand of `&&`/`||`:
  /// the comparison may not be made every time the body runs.
  bool conditional = false;
};

/// A top-level `let` with a value: a constant of the file.
struct ConstantInfo {
  uint32_t symbol = 0;
  NodeId node;
  std::optional<int64_t> intValue;   ///< a known integer (or bool)
  std::optional<double> floatValue;
};

struct CheckedModule {
  const Tree* tree = nullptr;
  const Interner* interner = nullptr;
  TypeStore types;
  DimStore dims;
  std::vector<Symbol> symbols;
  std::vector<CallableInfo> callables;
  std::vector<InstanceInfo> instances;
  std::vector<RuntimeShapeCheck> runtimeChecks;
  std::vector<ConstantInfo> constants;  ///< in source order (= the IR's globals)
  std::vector<TypeId> nodeType;      ///< per node; invalid for non-expressions
  std::vector<uint32_t> nodeSymbol;  ///< per Name/Let/Param/For node; UINT32_MAX if none
  std::vector<CallKind> callKind;    ///< per Call node
  std::vector<CallInfo> calls;
  std::vector<uint32_t> callOf;      ///< per Call node: index in calls, or UINT32_MAX
  /// Implicit conversions that change a run-time value, like clang's
  /// ImplicitCastExpr: value node -> the type it becomes where it is bound to
  /// a declared type (a `let` or assignment, an argument, a return). Integer
  /// or bool scalars widened to float (or bool to an integer), and tensors
  /// whose dtype changes; IR generation makes each one a Cast.
  std::unordered_map<uint32_t, TypeId> conversions;
  int entryLayer = -1;               ///< callables index of the entry layer
  /// callables[0, firstLocal) come from imported files (ImportContext).
  uint32_t firstLocal = 0;

  std::string formatType(TypeId type) const;
  /// --dump-types: each layer's classified signature, then the AST with types.
  std::string dump() const;
};

/// What a file sees of the files it imports, which were checked (and lowered)
/// before it, in import order: the callables of all of them, numbered as in
/// the program being built, and the type and dimension stores their types
/// live in. The checked module starts from copies of these, so every id
/// stays valid across the files of one program.
struct ImportContext {
  TypeStore types;
  DimStore dims;
  /// Signatures only: their `node`s are invalid (they are in other trees).
  std::vector<CallableInfo> callables;
  /// One per `import` item of the file, in source order.
  struct Import {
    NodeId item;                    ///< the Import node
    std::string path;               ///< the file it resolved to, for messages
    std::string stem;               ///< a Python identifier from its name, for hints
    std::vector<uint32_t> exports;  ///< indices in callables of what that file defines
    /// Its top-level constants; `global` is the program's global holding one.
    struct Constant {
      IdentifierId name;
      TypeId type;
      std::optional<int64_t> intValue;
      std::optional<double> floatValue;
      uint32_t global = 0;
    };
    std::vector<Constant> constants;
  };
  std::vector<Import> imports;
};

}  // namespace tritonc

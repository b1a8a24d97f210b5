//===- SemaImpl.h - the type checker's internal interface -------*- C++ -*-===//
//
// Shared between Sema.cpp (names, statements, expressions, layers) and
// Builtins.cpp (the rules of the builtin functions and layers).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "tritonc/diag/Diagnostics.h"
#include "tritonc/sema/Sema.h"
#include "tritonc/sema/CheckedModule.h"

namespace tritonc::sema {

/// What the checker knows about the value of an expression.
struct ExprInfo {
  TypeId type;
  std::optional<int64_t> intValue;   ///< a known integer (or bool) constant
  /// Integer constants that folded past int64 (`3 ** 40`, `2 ** 63`): a value
  /// no integer type holds (a Python int when it runs).
  bool pastInt64 = false;
  std::optional<double> floatValue;  ///< a known float constant
  std::optional<std::string_view> strValue;  ///< points into the token buffer
  DimId dim;                 ///< an integer value as a dimension (literal, hyperparameter, shape)
  bool literal = false;      ///< an untyped literal: takes its context's type when it fits
  bool hyperConst = false;   ///< built from literals and hyperparameters only
  std::vector<DimId> listDims;  ///< a list of integers, as dimensions (shapes)
  bool allTrits = false;     ///< a (nested) list whose elements are all -1, 0 or 1
  /// A (nested) list literal, or `tensor(...)` of one, whose elements are all
  /// -1, 0 or 1 written as integers or floats (`[1.0, -1.0]`): a float tensor
  /// where nothing asks for more, a TernaryTensor where one is declared.
  bool tritValued = false;
  /// A ternary value known to carry a scale other than 1 (`ternary_quantize`'s,
  /// a ternary weight's: `s * q` with s = mean |w|): a float32, which an integer
  /// or float16 tensor would truncate or overflow. Others (`trit(x)`, literals,
  /// a fn's TernaryTensor parameter) may hold -1, 0 and 1 themselves.
  bool scaled = false;
  bool ragged = false;       ///< a nested list whose rows differ in length
  std::vector<DimId> listShape; ///< the shape of a nested list literal
  std::vector<TypeId> elementTypes; ///< a list literal's element types, in order
  /// The smallest and largest known constant elements of a list literal (or
  /// the value of `full(v)`), where they are, to check them against the
  /// dtype of the tensor they become (`Tensor<int8, [2]> = [1, 300]`).
  struct Element {
    double value = 0;
    std::optional<int64_t> integer;  ///< the value, when it is an integer constant
    NodeId node;
  };
  std::optional<Element> lowest;
  std::optional<Element> highest;
  /// The widest dtype among a list literal's elements that are not known
  /// constants, and one such element: they must widen to the tensor's dtype.
  std::optional<std::pair<DType, NodeId>> widestVariable;
  NodeId node;               ///< the expression (for diagnostics)

  /// The known constant as a number (an integer converted), if any.
  std::optional<double> number() const {
    if (floatValue) return floatValue;
    if (intValue) return static_cast<double>(*intValue);
    return std::nullopt;
  }
};

/// One argument of a call after binding to parameters.
struct BoundArg {
  ExprInfo info;
  bool present = false;
};

/// Parameter names of a builtin, parsed from Builtins.def (views of its
/// string literals: parsing every builtin's list allocates nothing more).
struct BuiltinParam {
  std::string_view name;
  std::string_view alias;  ///< `dim|axis`
  bool optional = false;
  std::string_view defaultText;
};

const std::vector<BuiltinParam>& builtinFnParams(BuiltinFn fn);
const std::vector<BuiltinParam>& builtinLayerParams(BuiltinLayer layer);
std::optional<BuiltinFn> findBuiltinFn(std::string_view name);
std::optional<BuiltinLayer> findBuiltinLayer(std::string_view name);
/// "function" or "layer" when `name` is a builtin's (a user name that hides
/// it), else nullptr.
inline const char* builtinKindNamed(std::string_view name) {
  if (findBuiltinFn(name)) return "function";
  if (findBuiltinLayer(name)) return "layer";
  return nullptr;
}

/// `max(a, b)`, `min(a, b)` or `abs(a)` of integer constants, given the
/// arguments' values in parameter order (nullopt: not a constant), as the
/// generated Python computes it; nullopt for any other call.
std::optional<int64_t> foldIntegerBuiltin(BuiltinFn fn,
                                          std::span<const std::optional<int64_t>> args);

/// The type checker. One instance checks one file.
class Checker {
 public:
  Checker(const Tree& tree, const Interner& interner, DiagnosticEngine& diags,
          const ImportContext* imports, const CheckOptions& options);
  CheckedModule run();

  // ---- services for the builtin rules ----------------------------------------
  CheckedModule& module() { return module_; }
  const CheckedModule& module() const { return module_; }
  TypeStore& types() { return module_.types; }
  DimStore& dims() { return module_.dims; }
  const Tree& tree() const { return tree_; }
  const TokenizedBuffer& tokens() const { return tree_.tokens(); }
  const Interner& interner() const { return interner_; }
  const SourceBuffer& source() const { return tree_.tokens().source(); }
  DiagnosticEngine& diags() { return *diags_; }
  std::string fmt(TypeId type) const { return module_.formatType(type); }
  std::string fmtShape(std::span<const DimId> shape) const;
  std::string fmtDim(DimId dim) const { return module_.dims.format(dim, interner_); }
  SourceRange rangeOf(NodeId node) const { return tree_.range(node); }
  /// The source text of `node`.
  std::string_view textOf(NodeId node) const { return tree_.text(node); }
  /// UndeclaredSize for the names in the shapes of a body `let`'s declared
  /// `type` that nothing declares: no parameter, input size, constant or local.
  void warnUndeclaredSizes(NodeId type);
  /// The size names of a type (`[d, 2 * n]`: d, n), as written.
  std::vector<NodeId> sizeNamesIn(NodeId type) const;
  /// A weight's size that becomes an implicit hyperparameter but is one edit
  /// from a parameter or input size (`d_inn` beside `d_in`): a typo, warned.
  void warnImplicitSizeLikeDeclared(const CallableInfo& info, IdentifierId var);
  /// FlooredDivision when `value` is a `/` of two integer constants that
  /// does not divide evenly (`1 / 8` is 0) and float arithmetic takes it.
  void warnFlooredDivision(const ExprInfo& value);
  /// Whether `name` is the target of some assignment (`x = ...`) anywhere in
  /// the file; the names are gathered once.
  bool assignedInFile(std::string_view name) const;
  /// Notes where the sub-modules whose outputs meet in the binary operation
  /// `node` are created (`tok_emb(ids) + pos`: the creation `Embedding(d,
  /// vocab)` is what gives the size that does not match).
  void noteOperandCreations(DiagnosticBuilder& builder, NodeId node) const;
  /// When `node` calls a sub-module (`bn2(h)`), notes where it is created.
  void noteCreationOf(DiagnosticBuilder& builder, NodeId node) const;
  /// Reports at `node` unless an operand was already an error.
  template <typename... Args>
  void report(Diag kind, NodeId node, Args&&... args) {
    auto builder = diags_->report(kind, source(), rangeOf(node), std::forward<Args>(args)...);
    // As clang: a binary expression's caret is its operator, with the
    // operands underlined, so `a\n + b` shows the line of the '+'.
    if (tree_.kind(node) == NodeKind::Binary) {
      builder.caretAt(tokens().range(tree_.token(node)).begin);
    }
  }
  /// A float hyperparameter where an integer is needed (`width: float32 = 16.0`
  /// used as a channel count): the mistake is its declaration, so it is
  /// reported once, at the first such use, with a note there; true when
  /// `node` is such a use already reported (the caller reports nothing).
  bool floatHyperAgain(NodeId node);
  void noteFloatHyper(DiagnosticBuilder& builder, NodeId node);
  template <typename... Args>
  void reportIntegerNeeded(Diag kind, NodeId node, Args&&... args) {
    if (floatHyperAgain(node)) return;
    auto builder = diags_->report(kind, source(), rangeOf(node), std::forward<Args>(args)...);
    noteFloatHyper(builder, node);
  }
  ExprInfo make(TypeId type, NodeId node) const {
    ExprInfo info;
    info.type = type;
    info.node = node;
    return info;
  }
  /// The result shape of broadcasting a and b (NumPy rules); reports a
  /// provable mismatch at `node` for operator `op` and returns nullopt.
  /// `assumed`, when given, receives the result's dimensions (counted from
  /// the last, 0 for the last) where a `?` met a size that may be 1 and the
  /// result was given that size: it is wrong when the size is 1 and the `?`
  /// is not, so the caller whose value has this shape checks it at -O0
  /// (checkAssumedSizes).
  std::optional<std::vector<DimId>> broadcast(
      std::span<const DimId> a, std::span<const DimId> b, NodeId node, std::string_view op,
      std::span<const DimId> shownA = {}, std::span<const DimId> shownB = {},
      std::vector<size_t>* assumed = nullptr,
      const std::function<void(DiagnosticBuilder&)>& mismatchNotes = nullptr);
  /// The note of a `*` whose operands fit `@` (the matrix product was meant).
  void noteMatmulInsteadOfProduct(DiagnosticBuilder& builder, NodeId node,
                                  std::span<const DimId> a, std::span<const DimId> b);
  /// Records -O0 checks that `node`'s value, shaped `shape`, has the sizes
  /// broadcast() assumed (`assumed`, counted from the last of the `rank`
  /// broadcast dimensions that precede `tail` more) where it still has them.
  void checkAssumedSizes(NodeId node, std::span<const DimId> shape,
                         std::span<const size_t> assumed, size_t tail = 0);
  /// Converts `value`, a tensor of another dtype, to the float `dtype` an
  /// operation computing in floats needs: LANGUAGE.md types mean, softmax,
  /// linear, float @ int, ... as floats, and float16 @ float32 as float32,
  /// where torch rejects integer tensors and mixed float dtypes. Ternary
  /// tensors are float32 at run time (x: float16 @ w: ternary converts w).
  void convertToFloat(const ExprInfo& value, DType dtype);
  /// The text of `call` with its arguments `a` and `b` (a before b, on one
  /// line) exchanged: `conv2d(x, w, padding=1)` for `conv2d(w, x, padding=1)`.
  std::optional<std::string> swappedCall(NodeId call, NodeId a, NodeId b) const;
  std::string withArgument(NodeId site, std::string_view layer, std::string_view name,
                           std::string_view value) const;
  /// For `let NAME = F(args)` with `F` at token `callee`: NAME, and `fn` applied
  /// to an input with those arguments after it (`softmax(x, dim=1)`), which is
  /// what to write where NAME is applied when `F` is a function created as a
  /// module; nullopt in any other context or for arguments over several lines.
  struct AppliedInstead {
    std::string_view module;
    std::string call;
  };
  std::optional<AppliedInstead> appliedInstead(TokenId callee, std::string_view fn) const;
  /// The value node of the argument that a creation `site` gives its
  /// parameter `position` (positionally, or named `name` or `alias`); invalid
  /// when it leaves it to its default.
  NodeId argumentAt(NodeId site, size_t position, std::string_view name,
                    std::string_view alias = {}) const;
  /// The text of `site` (one line) with `value` for the argument node `arg`.
  std::optional<std::string> withArgumentText(NodeId site, NodeId arg,
                                              std::string_view value) const;
  /// An integer number where a float is meant (`max(a=x, b=1)`): a literal
  /// is written as a float (`1.0`), another value converted with float().
  void convertNumberToFloat(const ExprInfo& value) {
    noteConversion(value, module_.types.scalar(DType::Float32), value.node);
  }
  /// A bool scalar where an integer is meant (a `dim`, a size, an index):
  /// converted with int(), as LANGUAGE.md's widening says; torch rejects a bool
  /// `dim` and reads a bool index as a mask (`x[True]` adds a dimension).
  void convertBoolToInt(const ExprInfo& value) {
    const TypeStore& ts = module_.types;
    if (value.node.isValid() && ts.isScalar(value.type) &&
        ts.node(value.type).dtype == DType::Bool) {
      module_.conversions[value.node.index] = module_.types.scalar(DType::Int32);
    }
  }
  /// Converts an operand of a product (`@`, `linear`) to its result \p dtype:
  /// torch's matmul does not promote.
  void convertToProduct(const ExprInfo& value, DType dtype);
  static DType productDType(const TypeStore::Node& a, const TypeStore::Node& b);
  /// Converts \p value, an operand of an element-wise operator, to \p dtype
  /// where torch would otherwise compute it in its own narrower dtype.
  void convertOperand(const ExprInfo& value, const ExprInfo& other, DType dtype);
  /// Both operands of an element-wise operation converted as convertOperand does.
  void convertOperands(const ExprInfo& a, const ExprInfo& b, DType dtype) {
    convertOperand(a, b, dtype);
    convertOperand(b, a, dtype);
  }
  /// Reports an integer tensor `base` raised to a negative integer constant
  /// (torch raises when it runs; an error at import); true when reported.
  bool negativeIntegerPower(const ExprInfo& base, const ExprInfo& exponent, NodeId node,
                            NodeId baseNode);
  /// The dtype of an element-wise builtin of two values, at least one a
  /// tensor (`max(a, b)`, `pow`, `clip`), as the arithmetic operators type
  /// it: a literal number takes the tensor's dtype when it fits, a ternary
  /// tensor counts as float32. Callers convert the operands with
  /// convertOperand.
  DType elementwiseDType(const ExprInfo& a, const ExprInfo& b) const;
  /// Whether a literal of \p literalDType takes the other operand's dtype
  /// \p context (LANGUAGE.md section 3: when its value fits).
  bool literalAdapts(const ExprInfo& literal, DType literalDType, DType context) const;
  /// A tensor `value` is converted to `dtype` where it is used (irgen casts it).
  void convertTo(const ExprInfo& value, DType dtype);
  /// torch.matmul typing of a @ b.
  ExprInfo matmul(const ExprInfo& a, const ExprInfo& b, NodeId node, std::string_view op);
  /// Checks that a value may be used where `target` is expected.
  /// `what` names the place for TypeMismatch ("argument 'x' of 'f'").
  bool checkAssignable(const ExprInfo& value, TypeId target, NodeId where, bool quiet = false);
  /// Records an undecidable comparison for -O0: dimension `dim` of the value
  /// of `value` must equal `expected` (nothing is recorded when `expected` is
  /// itself unknown: such a check could never fail).
  /// `other`/`otherDim`: the value whose size `value`'s must equal when
  /// `expected` is unknown too (`?` against `?`).
  void recordRuntimeCheck(NodeId node, NodeId value, size_t dim, DimId expected, DimId actual,
                          NodeId other = NodeId{}, size_t otherDim = 0);
  /// `declared` with the sizes that a value of type `value` does not
  /// provably have made unknown (the rank too when it differs): the type of
  /// a variable whose value did not fit its declaration.
  TypeId unprovenShape(TypeId declared, TypeId value);
  /// Whether `value` has more than two dimensions whose sizes after the
  /// first multiply to the known `features` that a 2-D place takes (a
  /// feature map given to a classifier).
  bool flattens(const ExprInfo& value, DimId features);
  /// Then adds "its sizes after the batch multiply to 784: flatten it first".
  void flattenHint(DiagnosticBuilder& builder, const ExprInfo& value, DimId features);
  /// A note for a 4-D input whose last dimension, not its dimension 1, has the
  /// `channels` a convolution or 2-D batch norm wants: an NHWC image (true
  /// when it added the note).
  bool channelsLastHint(DiagnosticBuilder& builder, const ExprInfo& value, DimId channels);
  /// A note for an element-wise operand whose sizes are a run of the other's, not its last
  /// dimensions: the reshape that lines them up (`reshape(mean, [1, 3, 1, 1])`).
  void noteBroadcastAlong(DiagnosticBuilder& builder, NodeId node, std::span<const DimId> a,
                          std::span<const DimId> b);
  /// Whether the enclosing hyperparameter tests make size variables `a` and
  /// `b` equal here (`if ni == nf { ... }`, or the else of `ni != nf`).
  bool testedEqual(IdentifierId a, IdentifierId b) const;
  /// Notes where a just recorded check is made (its layer, whether always).
  void placeRuntimeCheck(RuntimeShapeCheck& check) const;
  /// SimilarSizeVariables, once per pair, when `actual` and `expected` are two
  /// size variables spelled nearly alike (a typo, not two sizes on purpose), of
  /// at least minLength letters (a broadcast: `dx` and `dy` may be one and 1).
  void warnSimilarSizeVariables(NodeId node, DimId actual, DimId expected,
                                size_t minLength = 0);
  /// Whether a comparison made now is made on every run of a layer's body
  /// (not under an if, a loop, a guard, the right side of && and ||, nor
  /// after a `return` in any branch before it).
  void recordReshape(NodeId call, std::vector<DimId> x, std::vector<DimId> target, DimId restX,
                     DimId restTarget, bool inferred, std::string_view kept) {
    if (alwaysInLayer()) {
      reshapeChecks_.push_back(ReshapeCheck{ctx_.callable, call, std::move(x), std::move(target),
                                            restX, restTarget, inferred, std::string(kept)});
    }
  }
  bool alwaysInLayer() const {
    return !ctx_.isFn && !ctx_.isMain && ctx_.callable >= 0 && ctx_.loopDepth == 0 &&
           ctx_.ifDepth == 0 && ctx_.guardDepth == 0 && ctx_.shortCircuitDepth == 0 &&
           !ctx_.returnsSeen;
  }
  /// Whether an operation that raises would raise when the module is
  /// imported (a top-level constant), and whether it is guarded by && or ||.
  bool atImport() const { return ctx_.callable < 0 && !ctx_.isMain; }
  bool guarded() const { return ctx_.shortCircuitDepth != 0; }
  /// Numbers to a power are computed with math.pow, which raises for a
  /// negative base with a fractional exponent and for zero to a negative
  /// power (Python's `**` would give a complex number or raise): reports
  /// MathDomainError at import, MathDomainErrorWhenRun in a body. Returns
  /// whether the module could not be imported.
  bool powOutsideDomain(const ExprInfo& base, const ExprInfo& exponent, NodeId node);
  /// The declared shape of the weight whose default `call` is, when `call`
  /// is one (a creation builtin there may leave its shape out).
  std::optional<std::vector<DimId>> weightShapeFor(NodeId call) const;
  /// Inside the default of a float16 or bfloat16 weight, that dtype: what its creations
  /// make (`randn() * 0.02`), as `torch.randn(..., dtype=)` would; float32 elsewhere.
  DType createdFloatDType() const;
  /// A normalized dimension index (negative counts from the end), or nullopt
  /// after reporting DimOutOfRange.
  std::optional<size_t> normalizeDim(int64_t dim, size_t rank, NodeId node);

  /// Whether the known constant elements of `value` (ExprInfo::lowest and
  /// highest) fit in a tensor of `dtype`; reports LiteralDoesNotFit at the one
  /// that does not (torch would raise, wrap or make inf when it runs).
  bool elementsFit(const ExprInfo& value, DType dtype);

 private:
  // What the body being checked is.
  struct Context {
    int callable = -1;       ///< callables index; -1 at top level and in main
    bool isFn = false;
    bool isMain = false;
    int loopDepth = 0;
    int dynamicIfDepth = 0;  ///< enclosing ifs whose condition is not a hyperparameter test
    NodeId dynamicIfCondition;  ///< the condition of the outermost such if
    int ifDepth = 0;         ///< enclosing ifs of any kind
    /// Guard clauses passed in the enclosing blocks: hyperparameter tests
    /// one branch of which returns (`if depth == 0 { return x }`), so that
    /// what follows runs only in the other branch.
    int guardDepth = 0;
    /// Set by an `if` statement that is such a guard: its If node and the
    /// branch the statements after it belong to (checkBlock takes it).
    std::optional<std::pair<uint32_t, uint8_t>> guard;
    int shortCircuitDepth = 0;  ///< enclosing right operands of && and ||
    std::unordered_set<uint32_t> assigned;  ///< identifiers assigned anywhere in the body
    /// Attribute names of the layer (weights, instances) and where they are defined.
    std::unordered_map<uint32_t, NodeId> attributes;
    /// The branches of hyperparameter tests enclosing the statement being
    /// checked: (If node, 0 for its then-block or 1 for its else-part),
    /// outermost first.
    std::vector<std::pair<uint32_t, uint8_t>> branches;
    /// Per sub-module name, the branches enclosing each of its creations.
    std::unordered_map<uint32_t, std::vector<std::vector<std::pair<uint32_t, uint8_t>>>>
        attributeBranches;
    bool returnsSeen = false;  ///< a `return` was checked (what follows may not run)
    /// The body's first symbol: a use of an undeclared name looks among the
    /// body's symbols for a `let` whose block has ended (Python's names
    /// outlive their `if`; these do not).
    uint32_t firstSymbol = 0;
    /// Names whose undeclared use was reported in this body: later uses are
    /// the same mistake (reported once per body, as gcc does).
    std::unordered_set<uint32_t> undeclaredReported;
    bool instantiationInFnReported = false;  ///< InstantiationInFn, once per fn
  };
  /// The body's last `let` (or loop variable) of `name` whose block has
  /// ended, or -1: what an undeclared use most likely meant.
  int64_t endedDeclaration(IdentifierId name) const;
  /// Starts checking a body (or a top-level let): a fresh Context.
  void resetContext() {
    ctx_ = Context{};
    ctx_.firstSymbol = static_cast<uint32_t>(module_.symbols.size());
  }
  struct Binding {
    uint32_t identifier;
    uint32_t previous;
  };

  // Scopes: the current symbol of each identifier, with an undo log.
  void pushScope() { scopeMarks_.push_back(undo_.size()); }
  void popScope();
  uint32_t declare(Symbol symbol, NodeId nameNode);
  std::optional<uint32_t> lookup(IdentifierId name) const;
  void reportUndefined(NodeId node, IdentifierId name);

  // Declarations.
  void declareBuiltins();
  void declareImports();
  /// A symbol for an imported constant, bound to its name when `inScope`.
  uint32_t declareImportedConstant(const ImportContext::Import::Constant& constant, NodeId item,
                                   bool inScope);
  void declareItems();
  /// The callable `alias.NAME` names (`callee` a Member node whose base is an
  /// import's alias); reports and returns nullopt when there is none.
  std::optional<uint32_t> importedCallable(NodeId callee, uint32_t aliasSymbol);
  void checkSignature(int index);
  TypeId resolveType(NodeId typeNode, int callable);
  /// A dimension of a declared shape; `whole`: the whole size, which may not
  /// be negative (a part of it may: `[2 - 3 + 5]` is 4).
  DimId resolveDim(NodeId dimNode, int callable, bool whole = true);

  // Bodies and statements.
  /// Checks the bodies of the callables `item` names whose return type is
  /// inferred (no `-> type`) and not checked yet, callees first, so that a
  /// call to a layer or fn defined further down has its real result type.
  /// Mutual recursion is broken where it closes (such a call is `unknown`).
  void checkInferredCalleesFirst(NodeId item);
  void checkCallableBody(int index);
  void checkMain(NodeId mainNode);
  void checkTopLevelLet(NodeId let);
  bool checkBlock(NodeId block);  ///< returns true when every path returns
  bool checkStatement(NodeId statement);
  void checkLoopNesting(NodeId loop);
  void checkPackedScaleNames(const CallableInfo& info);
  void checkLet(NodeId let);
  void checkAssign(NodeId assign);
  /// `branch`: an `if` (a mask can replace it), not a `while`.
  void checkCondition(NodeId cond, const ExprInfo& info, bool branch);
  void collectAssigned(NodeId node);
  /// A `let` without a value must be assigned on every path before it is
  /// read (DefiniteAssignment.cpp).
  void checkDefiniteAssignment(NodeId body);
  class DefiniteAssignment;

  // Expressions.
  /// An expression whose value is used: a call that returns nothing (`print`,
  /// a fn without `return value`) is NoValue here.
  ExprInfo checkExpr(NodeId node);
  /// `info` of `node` when it has a value; else NoValue and an error type.
  ExprInfo requireValue(ExprInfo info, NodeId node);
  /// An expression statement: its value, if any, is dropped.
  ExprInfo checkExprAnyResult(NodeId node);
  ExprInfo checkName(NodeId node);
  ExprInfo checkLiteral(NodeId node);
  ExprInfo checkUnary(NodeId node);
  ExprInfo checkBinary(NodeId node);
  ExprInfo checkOperator(NodeId node);
  bool isFirstChainLink(NodeId node) const;
  /// `mismatch`: the right operand's type when the chain is not valid.
  void reportChainedComparison(NodeId node, std::optional<TypeId> mismatch);
  ExprInfo checkArithmetic(std::string_view op, TokenKind kind, const ExprInfo& a,
                           const ExprInfo& b, NodeId node);
  ExprInfo checkList(NodeId node);
  ExprInfo checkIndex(NodeId node);
  void warnIfReductionIndexedAsTuple(NodeId call, const std::vector<ExprInfo>& indices,
                                     const std::vector<bool>& isSlice);
  ExprInfo checkMember(NodeId node);
  /// `nn.Linear`, `torch.cat`, `self.conv1`: a member of an undeclared name
  /// that PyTorch users write. Reports it and returns true.
  bool reportForeignMember(NodeId node, NodeId call);
  /// The parameter `node` names (parentheses skipped) when a creation or call
  /// of the callable being checked fixes its value: a layer's hyperparameter,
  /// with `fnInputs` also an fn's parameter; else an invalid id.
  IdentifierId passedParameter(NodeId node, bool fnInputs) const;
  /// What checkCreatedArguments needs of a float hyperparameter's argument.
  InstanceInfo::FloatArg floatArg(const ExprInfo& value) const;
  /// What checkCreatedArguments needs of a str hyperparameter's argument.
  InstanceInfo::StrArg strArg(const ExprInfo& value) const;
  std::optional<TypeId> builtinMemberType(const InstanceInfo& instance, const std::string& member);
  /// On a NoMember report of a built-in instance: the note that says which
  /// flag of its creation (bias=false, affine=false) left the member out.
  void noteMemberTurnedOff(DiagnosticBuilder& builder, const InstanceInfo& instance,
                           std::string_view member);
  ExprInfo checkCall(NodeId node, IdentifierId letName = IdentifierId{});
  ExprInfo checkCast(DType dtype, NodeId call);
  ExprInfo checkBuiltinFnCall(BuiltinFn fn, NodeId call);
  std::vector<int> declarationOrderArgs(const CallableInfo& info, NodeId call, bool applies);
  void reportCreateAndApply(bool builtin, uint32_t decl, NodeId call, IdentifierId letName,
                            NodeId firstInput, bool makesSubModules);
  ExprInfo checkLayerCall(int layer, NodeId call, IdentifierId letName);
  std::optional<std::string> applicationForm(uint32_t decl, bool builtin, NodeId call);
  ExprInfo checkInstantiation(bool builtin, uint32_t decl, NodeId call, IdentifierId letName);
  ExprInfo checkForward(uint32_t instance, NodeId call);
  ExprInfo checkFnCall(int fn, NodeId call);
  /// Binds a user callable's parameters from arguments; returns the result.
  ExprInfo applyCallable(int callable, NodeId call, std::vector<int> positionalParams,
                         const std::unordered_map<uint32_t, DimId>* hyperBindings,
                         std::string_view calleeName);
  bool unifyShape(TypeId declared, const ExprInfo& actual,
                  std::unordered_map<uint32_t, DimId>& bindings, NodeId where,
                  std::string_view what);
  TypeId substituteType(TypeId type, const std::unordered_map<uint32_t, DimId>& bindings);
  /// `TernaryLinear(x.shape[1], 10)` of an `x` whose dimension 1 is '?': the
  /// size hyperparameter to declare, the type to give `x` and the creation.
  void noteSizeOfUnknownDimension(DiagnosticBuilder& builder, NodeId call, std::string_view layer,
                                  NodeId arg, size_t position);
  void noteInstantiationRules(NodeId call, std::string_view name, IdentifierId letName,
                              const std::vector<ExprInfo>& args);
  ExprInfo literalToContext(const ExprInfo& value, TypeId target);
  /// After checkAssignable accepted `value` (at `node`) for `target`: types a
  /// literal number in the target type, or records the conversion IR
  /// generation must make (CheckedModule::conversions).
  void noteConversion(const ExprInfo& value, TypeId target, NodeId node);
  bool checkAssignableImpl(const ExprInfo& value, TypeId target, NodeId where);
  void noteNotATrit(DiagnosticBuilder& builder, const ExprInfo& value);
  /// "the value of '3 ** 40' does not fit in 'int64'" (or the `dtype` given).
  void reportPastInt64(NodeId node, DType dtype = DType::Int64);
  /// The value of an integer constant expression (literals, + - * / %, unary
  /// minus, parentheses, earlier top-level constants), without diagnostics.
  std::optional<int64_t> constantValue(NodeId expr) const;
  std::optional<int64_t> constantCallValue(NodeId call) const;
  void checkLoopBody(NodeId body, NodeId condition = {});
  bool sizeFromList(BuiltinLayer layer, std::string_view param, std::string_view callee,
                    ExprInfo& value, DimId& width);
  /// Binds every size variable of `type` that `bindings` lacks to `?`, so that
  /// a callee's variable names never leak into the caller's types.
  void bindRemainingToUnknown(TypeId type, std::unordered_map<uint32_t, DimId>& bindings);

  /// The arguments of a call, checked, before binding to parameters.
  struct CallArgs {
    std::vector<ExprInfo> positional;
    std::vector<std::pair<TokenId, ExprInfo>> named;
  };
  CallArgs gatherArgs(NodeId call);
  std::pair<std::vector<std::string>, std::vector<std::string>> argumentTexts(NodeId call) const;
  /// Calls of PyTorch names (ForeignName) and tensor methods (NoMember with a rewrite),
  /// and the depth of checking their arguments (the same habits there are not reported).
  std::unordered_set<uint32_t> foreignCalls_;
  /// Callables reported calling themselves before their return type is known.
  std::unordered_set<uint32_t> recursiveUntyped_;
  int foreignArgs_ = 0;
  /// Records how a call bound its arguments (CheckedModule::calls).
  void recordCall(NodeId call, CallKind kind, uint32_t callee,
                  const std::vector<BoundArg>& bound);
  /// Binds arguments to parameters `names`; positional ones go to the
  /// parameters listed in `positionalTargets`, in order. Reports unknown
  /// names (with "did you mean"), duplicates and surplus arguments.
  /// bindArgs for a builtin's parameters, with their other spellings (`dim|axis`).
  std::optional<std::vector<BoundArg>> bindBuiltinArgs(const std::vector<BuiltinParam>& params,
                                                       const std::vector<int>& positional,
                                                       CallArgs& args, NodeId call,
                                                       std::string_view calleeName);
  /// `inputsOnly`: a call of an instance, which passes its inputs only (the
  /// others are the instance's): no note suggests passing them by name.
  std::optional<std::vector<BoundArg>> bindArgs(const std::vector<std::string_view>& names,
                                                const std::vector<int>& positionalTargets,
                                                CallArgs& args, NodeId call,
                                                std::string_view calleeName,
                                                const std::vector<bool>* inputsOnly = nullptr);

  std::string_view spelling(IdentifierId id) const { return interner_.spelling(id); }
  /// Reports each cycle of layers that create each other as sub-modules
  /// outside any `if`: their constructors would recurse forever.
  void checkRecursiveInstantiation();
  /// Warns of each cycle of fn calls and layer applications that run on every
  /// path through their callers (alwaysCalls_): they never return.
  void checkInfiniteRecursion();
  /// Top-level initializers that call a fn or layer reading (through what it
  /// calls) a constant defined at or after them: ReadBeforeDefinition.
  void checkConstantsReadThroughCalls();
  bool createsValues(NodeId node) const;
  bool makesTernaryValues(NodeId node) const;
  void widenAfterReassignment(NodeId target, TypeId assigned);
  bool resizable(NodeId target, TypeId assigned) const;
  void warnIfRenamedInStateDict(const char* what, IdentifierId name, NodeId where);
  void warnIfRenamedClass(IdentifierId name, NodeId layer);
  /// `h = relu(h)` after `let h = ste_quantize(x)`: NotTernary, with the `let` to
  /// declare float (reported; false when this is not that case).
  bool floatIntoTernaryLocal(NodeId target, const ExprInfo& value, NodeId valueNode);
  bool resizedInput(NodeId target, const ExprInfo& value, NodeId valueNode);
  bool rankChangeInBranch(NodeId target, const ExprInfo& value, NodeId valueNode);
  /// A value of the wrong type that `x.T` (rank 3 or more) or a `concat`/`stack`
  /// without `dim` made: the transpose or dimension that gives `want`.
  void noteOtherAxis(DiagnosticBuilder& builder, const ExprInfo& value, TypeId want);
  std::optional<uint32_t> untypedLocal(NodeId target) const;
  void retypeAfterReassignment(NodeId target, TypeId assigned);
  // ---- hyperparameter values along creation chains (SemaCreations.cpp) -------
  struct CreationWalk;
  /// Values of a created layer's hyperparameters, by name: integers as sizes,
  /// and the floats that are known.
  using DimBindings = std::unordered_map<uint32_t, DimId>;
  using FloatBindings = std::unordered_map<uint32_t, double>;
  /// A number computed as Python computes it when the module is built.
  struct Number {
    double value = 0;
    bool integer = false;
  };
  /// Follows every chain of unconditional creations and reports what their
  /// values make wrong (see SemaCreations.cpp).
  void checkCreatedArguments();
  void walkCreations(CreationWalk& walk, size_t owner, const DimBindings& bindings,
                     const FloatBindings& floatBindings);
  /// Whether sizes `a` and `b` of layer `owner` are expressions of its
  /// hyperparameters only (a creation can give them values).
  bool ofHyperparameters(int owner, DimId a, DimId b) const;
  /// The run-time comparisons and broadcasts of `owner`'s body, with the values.
  void checkComparisonsWithValues(CreationWalk& walk, size_t owner, const DimBindings& bindings);
  /// A user layer's weight sizes that the values make negative or divide by zero.
  void checkWeightSizes(CreationWalk& walk, size_t owner, const DimBindings& bindings);
  /// A built-in layer's constructor arguments, with the values.
  void checkBuiltinCreation(CreationWalk& walk, const InstanceInfo& instance,
                            std::span<const DimId> args, const DimBindings& bindings,
                            const FloatBindings& floatBindings);
  /// Records a problem at `site` with a note per creation of the walk's chain.
  void addCreationProblem(CreationWalk& walk, std::pair<uint32_t, uint32_t> key, NodeId site,
                          DiagnosticBuilder builder, bool atInnermost = false);
  /// Whether `d`, or a part of it that is not a literal, is 1 with the values.
  bool mayBeOne(DimId d, const DimBindings& bindings, bool part = false);
  /// Float argument `i` of a creation, where known.
  std::optional<double> floatArgument(const InstanceInfo& instance, size_t i,
                                      const DimBindings& bindings,
                                      const FloatBindings& floatBindings) const;
  /// A float argument computed from hyperparameters (`p / 10.0`, `float(half)
  /// * 0.1`) with the values: numbers, hyperparameters and constants, `+ - * /`
  /// (an integer `/` floors, as the language's), casts. Nothing else is
  /// evaluated (nullopt), nor a division by zero.
  std::optional<Number> evaluateWithValues(NodeId node, const DimBindings& ints,
                                           const FloatBindings& floats, int depth) const;
  /// LayerWithoutInputs: `x: Tensor<float32, [B, 784]>` made a layer's only
  /// tensor a weight (see the function).
  /// Per callable: whether the file creates (instantiates) or applies it
  /// anywhere, or with `byCallablesOnly` in a layer or fn (not in `main`).
  std::vector<bool> createdOrApplied(bool byCallablesOnly = false) const;
  void warnLayersWithoutInputs();
  void warnTernaryInputs();
  void warnEntryByOrder();
  /// UnusedSubModule, UnusedWeight: learned state of a layer that nothing reads.
  void warnUnusedState();
  std::string callableName(int index) const {
    return std::string(spelling(module_.callables[index].name));
  }
  void setType(NodeId node, TypeId type) { module_.nodeType[node.index] = type; }

  const Tree& tree_;
  const Interner& interner_;
  DiagnosticEngine* diags_;  ///< swapped for a silent one by quiet checks
  CheckedModule module_;
  std::vector<uint32_t> current_;  ///< per identifier: symbol + 1, or 0
  std::vector<Binding> undo_;
  std::vector<size_t> scopeMarks_;
  std::vector<ExprInfo> symbolValue_;  ///< what is known of a symbol's value
  /// The loops being checked, outermost first: the first symbol declared in
  /// each, and whether its body resized a variable declared before it.
  struct LoopMark {
    uint32_t firstSymbol = 0;
    bool resizesOuter = false;
  };
  std::vector<LoopMark> loops_;
  /// Shapes naming a constant whose value is not an integer of literals.
  std::vector<std::pair<NodeId, uint32_t>> constantDims_;
  /// (callable, name) of hyperparameters of a non-integer type used as sizes,
  /// reported once each.
  std::unordered_set<uint64_t> nonIntegerSizes_;
  /// While a call's arguments are unified: the argument that bound each size
  /// variable (by identifier), for the note of a mismatch.
  std::unordered_map<uint32_t, NodeId> bindingSites_;
  /// Per callable without a declared return type: the `return` value whose
  /// type became it (the first one checked).
  std::unordered_map<int, NodeId> firstReturn_;
  /// Float hyperparameters already reported where an integer is needed.
  std::unordered_set<uint64_t> floatHypersReported_;  ///< (callable, name) of each
  uint64_t floatHyperKey(const ParamInfo* p) const {
    return (static_cast<uint64_t>(static_cast<uint32_t>(ctx_.callable)) << 32) | p->name.index;
  }
  /// `if` conditions already reported (not a bool, or not constant around a
  /// sub-module): one error per `if`, not one per sub-module under it.
  std::unordered_set<uint32_t> conditionsReported_;
  /// (callable << 32 | name) of the names a sub-module's argument used as a
  /// hyperparameter that is none, with "did you mean" a hyperparameter the
  /// layer declares but never uses (a renamed one): their other uses as
  /// hyperparameters are not reported again.
  std::unordered_set<uint64_t> misnamedHypers_;
  /// The hyperparameter of the current layer that `name` most likely
  /// misspells: the closest of those its header and body never use, else "".
  std::string_view unusedHyperLike(IdentifierId name) const;
  /// Whether `callee` is PyTorch's (or Keras') Sequential, spelled with or
  /// without its module, and the file declares no such name.
  bool isSequential(NodeId callee) const;
  /// The user layer or fn named like a builtin (`layer Linear`, `fn relu`)
  /// that the call being checked calls (invalid otherwise): while its
  /// arguments are bound and checked, every error notes that its declaration
  /// hides the builtin (`Linear(784, 10)` meant torch's).
  NodeId shadowingCallable_;
  class HiddenBuiltinNote {
   public:
    /// Takes shadowingCallable_ (the arguments' own calls see none) and, once
    /// the arguments are gathered, start() adds the note to the errors that
    /// follow while it lives (a note joins a diagnostic when its builder is
    /// destroyed: a builder made in its life must end there too).
    explicit HiddenBuiltinNote(Checker& checker)
        : checker_(checker), hider_(std::exchange(checker.shadowingCallable_, NodeId{})) {}
    void start();

   private:
    Checker& checker_;
    NodeId hider_;
    ContextGuard pushed_;
  };
  /// "Did you mean" for an undeclared name: closestMatch, except that the same
  /// name but for '_' comes first, and between equally close names one the
  /// current layer or fn never uses comes before one it uses.
  std::string_view preferredMatch(std::string_view word,
                                  const std::vector<std::string_view>& candidates) const;
  std::unordered_set<uint32_t> constantFailed_;  ///< constants whose initializer is an error
  /// Value-less `let`s (symbols) assigned a sub-module, reported there
  /// (SubModuleAssigned): their other such assignments and their reads
  /// before a value are the same mistake, not errors of their own.
  std::unordered_set<uint32_t> subModuleAssigned_;
  /// Whether the current binding of `name` was declared in the innermost scope.
  bool declaredInThisScope(IdentifierId name) const {
    for (size_t i = scopeMarks_.empty() ? 0 : scopeMarks_.back(); i < undo_.size(); ++i) {
      if (undo_[i].identifier == name.index) return true;
    }
    return false;
  }
  Context ctx_;
  TypeId int32_, float32_, bool_, str_;
  const ImportContext* imports_ = nullptr;
  CheckOptions options_;
  /// Per ImportContext::imports entry: the symbol of its alias, if it has one.
  std::unordered_map<uint32_t, uint32_t> importOfItem_;  ///< Import node -> imports index
  /// `alias.CONSTANT`: (import, global) -> the symbol standing for it.
  std::unordered_map<uint64_t, uint32_t> qualifiedConstants_;
  /// Arguments checked early (to tell application from instantiation), so
  /// that gatherArgs does not check them, and report their errors, twice.
  std::unordered_map<uint32_t, ExprInfo> preChecked_;
  /// Applications whose hyperparameters were passed positionally, in the
  /// header's order (declarationOrderArgs), by call node: the `let` name.
  std::unordered_map<uint32_t, IdentifierId> declarationOrderCalls_;
  /// The call whose callee checkMember is about to check (`x.view(...)`), for
  /// the note that rewrites a tensor method; invalid otherwise.
  NodeId memberCall_;
  /// The first link of a comparison chain being checked (isFirstChainLink).
  NodeId chainedComparison_;
  /// Pairs of size variables (smaller index first) already reported as
  /// probably one misspelled name.
  std::set<std::pair<uint32_t, uint32_t>> warnedSizePairs_;
  /// Element-wise operands whose sizes in one dimension are two different
  /// expressions of the layer's hyperparameters (`out + x` of [?, out_ch]
  /// and [?, in_ch]): they broadcast only if equal or one is 1, which
  /// checkCreatedArguments decides where the layer is created with values.
  struct BroadcastCheck {
    int owner;  ///< callables index of the layer
    NodeId node;
    std::string op;
    std::vector<DimId> a, b;  ///< the shapes shown
    size_t dim;               ///< the dimension of the result
    DimId da, db;
  };
  std::vector<BroadcastCheck> broadcastChecks_;
  /// A reshape that keeps some input dimensions (`reshape(x, [b, t, h, d / h])` with
  /// `b = x.shape[0]`) whose other sizes are hyperparameters: the element counts are
  /// compared where the layer is created with values.
  struct ReshapeCheck {
    int owner;  ///< callables index of the layer
    NodeId node;
    std::vector<DimId> x, target;  ///< the shapes shown
    DimId restX, restTarget;  ///< the elements of the input's, the new shape's other sizes
    bool inferred;            ///< the new shape has a -1
    std::string kept;         ///< the first kept size, as written
  };
  std::vector<ReshapeCheck> reshapeChecks_;
 public:
  /// A string option given a str hyperparameter of the layer (`method=m`):
  /// its value is known where the layer is created, and checked there.
  enum class StrOption : uint8_t {
    QuantizeMethod,  ///< ternary_quantize(x, method=m)
    LayerOption,     ///< a built-in layer's string argument (TernaryLinear(..., method=m))
  };
  /// InvalidOption: `value` is not one of `allowed`, the `what` (with a note
  /// where it is one in another case).
  DiagnosticBuilder reportInvalidOption(NodeId node, std::string_view value, std::string_view what,
                                        std::span<const std::string_view> allowed);
  /// Records `value` given to a string option when it is a str parameter of the
  /// layer (a hyperparameter) or fn being checked. `what` and `callee` name the
  /// option for LayerOption (the argument and the layer: static strings),
  /// `allowed` the values.
  void recordStrOptionUse(const ExprInfo& value, StrOption option,
                          std::span<const std::string_view> allowed,
                          std::string_view what = {}, std::string_view callee = {});

 private:
  struct StrOptionUse {
    int owner;  ///< callables index of the layer
    IdentifierId param;
    NodeId node;
    StrOption option;
    std::span<const std::string_view> allowed;
    std::string_view what, callee;
  };
  std::vector<StrOptionUse> strOptionUses_;
  /// Names already warned UndeclaredSize, per callable (-1: main).
  std::set<std::pair<int, uint32_t>> undeclaredSizes_;
  /// assignedInFile's names, sorted; gathered at its first call.
  mutable std::optional<std::vector<std::string_view>> assignedNames_;
  /// The error for `value`, which `use`'s option does not take.
  DiagnosticBuilder reportStrOption(const StrOptionUse& use, const std::string& value);
  size_t errorsBefore_ = 0;  ///< the engine's errors when the check began
  /// The str hyperparameters' values of a created layer, by name.
  using StrBindings = std::unordered_map<uint32_t, std::string>;
  /// The string options of `owner`'s body given a str hyperparameter whose
  /// value the walk's innermost creation makes invalid.
  void checkStrOptions(CreationWalk& walk, size_t owner);
  /// The same for the string literals (and str defaults) that calls of fns and
  /// layer applications pass (`quant(x, "foo")`, `Q(w, x, method="foo")`).
  void checkStrOptionsOfCalls();
  /// Application sites (call, callee) to validate once all bodies are known.
  std::vector<std::pair<NodeId, int>> applications_;
  /// Calls of fns and layer applications that run whenever their caller's
  /// body runs (outside any if, loop, guard clause, && / || operand, and before
  /// any return): a cycle of them never ends (InfiniteRecursion).
  struct AlwaysCall {
    int caller;
    int callee;
    NodeId site;
  };
  std::vector<AlwaysCall> alwaysCalls_;
  /// Records a call of `callee` at `call` in alwaysCalls_ when it always runs.
  void noteAlwaysCall(int callee, NodeId call);
  /// Per callable: whether its body has been checked (run() goes in source
  /// order, checkInferredCalleesFirst ahead of it).
  enum class BodyState : uint8_t { Unchecked, InProgress, Done };
  std::vector<BodyState> bodyState_;
  uint32_t forwardInstance_ = 0;  ///< the instance applyCallable forwards to
  bool noRuntimeChecks_ = false;  ///< checking a whole-variable reassignment
  /// Sub-modules created in the list literal being checked (null outside one).
  uint32_t* listInstances_ = nullptr;
  /// The weight's default being checked (valid only meanwhile), and the
  /// weight's type: a creation builtin in it may leave out the shape
  /// (LANGUAGE.md §5), `randn() * 0.02` included.
  NodeId weightDefault_;
  TypeId weightDefaultType_;
  /// The tensor input whose default is being checked (invalid otherwise): a
  /// creation there cannot take its shape from the declared type, which has
  /// '?' (the declaration made it an input).
  IdentifierId tensorInputDefault_;
  std::unordered_set<uint32_t> constantDefined_;  ///< top-level constants checked so far
};

/// Types a call of builtin `fn` with arguments bound to its parameters.
ExprInfo checkBuiltinCall(Checker& checker, BuiltinFn fn, NodeId call,
                          std::vector<BoundArg>& args);
/// Checks the constant arguments of an instantiation of builtin `layer` that
/// its torch.nn constructor would reject (Dropout(2.0), a `groups` that does
/// not divide the channels, ...). False after a diagnostic.
/// `widths`: the instance's sizes given per dimension (InstanceInfo::widths).
bool checkBuiltinLayerArgs(Checker& checker, BuiltinLayer layer, NodeId call,
                           std::vector<BoundArg>& args, std::span<const DimId> widths);
/// A constructor argument of builtin `layer` that torch.nn would reject:
/// the parameter, what it must be, and its value as written.
struct LayerArgProblem {
  size_t param;
  std::string expected;
  std::string value;
};
/// The first problem with the integer arguments `values` (one per
/// constructor parameter, nullopt when not a known integer), if any; then
/// with `widths` (the same, with the widths of sizes given per dimension).
std::optional<LayerArgProblem> builtinLayerArgProblem(
    BuiltinLayer layer, std::span<const std::optional<int64_t>> values,
    std::span<const std::optional<int64_t>> widths = {});
/// A weight too large to build: past int64 elements (WeightTooLarge), or more
/// than kHugeWeightElements (HugeWeight: 256 GiB of float32 latent weights,
/// more than any one machine holds; the largest weights of real models are
/// about 2^32 elements).
inline constexpr int64_t kHugeWeightElements = int64_t{1} << 36;

/// ternary_quantize's methods (LANGUAGE.md §5) and nn.Conv2d's padding modes.
inline constexpr std::string_view kQuantizeMethods[] = {"absmean", "threshold", "stochastic"};
inline constexpr std::string_view kPaddingModes[] = {"zeros", "reflect", "replicate",
                                                     "circular"};
struct HugeWeightProblem {
  Diag kind;
  std::string elements;  ///< "65536 x 65536 x 64 = 274877906944", or the sizes alone
  std::string bytes;     ///< "1.0 TiB" (HugeWeight)
};
std::optional<HugeWeightProblem> hugeWeight(std::span<const int64_t> sizes);
/// Types `instance(x)` for an instance of a builtin layer.
ExprInfo checkBuiltinForward(Checker& checker, const InstanceInfo& instance, NodeId call,
                             std::vector<ExprInfo>& inputs);

}  // namespace tritonc::sema

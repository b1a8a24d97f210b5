//===- Sema.cpp - the ternary type checker --------------------------------===//
//
// Three passes over a file:
//  1. declare: builtins, then every top-level layer, fn and constant, so that
//     items may use each other in any order;
//  2. signatures: resolve parameter types, classify layer parameters into
//     hyperparameters, weights and inputs (LANGUAGE.md §4), find implicit
//     size-variable hyperparameters;
//  3. bodies: statements and expressions, in source order.
//
// Undecidable facts are accepted: a `?` or two different size variables are
// compared at run time (recorded in CheckedModule::runtimeChecks), and the
// Unknown type flows through without diagnostics. Error types silence every
// later check of the same value, so one mistake gives one diagnostic.
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <cctype>
#include <cmath>
#include <deque>
#include <map>
#include <set>

#include "Habits.h"
#include "SemaImpl.h"
#include "tritonc/base/PythonLimits.h"
#include "tritonc/base/PythonMath.h"
#include "tritonc/base/PythonNames.h"
#include "tritonc/base/Text.h"
#include "tritonc/sema/Sema.h"

namespace tritonc {
namespace sema {

namespace {
constexpr uint32_t kNoSymbol = UINT32_MAX;

/// `x op y` of two integer constants as the generated Python computes it
/// (`/` floors, `%` takes the divisor's sign); nullopt when it is no int64
/// (overflow, division by zero) or `op` is not + - * / %: such a value is
/// left to run time, unbounded as Python's int.
std::optional<int64_t> foldIntegers(TokenKind op, int64_t x, int64_t y) {
  int64_t out = 0;
  switch (op) {
    case TokenKind::Plus:
      if (__builtin_add_overflow(x, y, &out)) return std::nullopt;
      return out;
    case TokenKind::Minus:
      if (__builtin_sub_overflow(x, y, &out)) return std::nullopt;
      return out;
    case TokenKind::Star:
      if (__builtin_mul_overflow(x, y, &out)) return std::nullopt;
      return out;
    case TokenKind::Slash:
      if (y == 0 || (x == INT64_MIN && y == -1)) return std::nullopt;
      return x / y - ((x % y != 0) && ((x < 0) != (y < 0)) ? 1 : 0);
    case TokenKind::Percent: {
      if (y == 0 || (x == INT64_MIN && y == -1)) return std::nullopt;
      int64_t r = x % y;
      return r != 0 && ((r < 0) != (y < 0)) ? r + y : r;
    }
    case TokenKind::StarStar: {
      if (y < 0) return std::nullopt;  // a float
      if (x == 0 || x == 1) return y == 0 ? 1 : x;
      if (x == -1) return y % 2 == 0 ? 1 : -1;
      if (y >= 64) return std::nullopt;  // past int64
      out = 1;
      for (int64_t k = 0; k < y; ++k) {
        if (__builtin_mul_overflow(out, x, &out)) return std::nullopt;
      }
      return out;
    }
    default: return std::nullopt;
  }
}

/// "the value of '3 ** 40'" for a constant whose value is past every integer
/// type; "the value" when the text is long or spans lines.
std::string valueOfText(std::string_view text) {
  return text.size() <= 40 && text.find('\n') == std::string_view::npos
             ? fmt::format("the value of '{}'", text)
             : std::string("the value");
}

std::string_view operatorSpelling(const TokenizedBuffer& tokens, TokenId token) {
  return tokens.spelling(token);
}

bool isArithmetic(TokenKind kind) {
  switch (kind) {
    case TokenKind::Plus:
    case TokenKind::Minus:
    case TokenKind::Star:
    case TokenKind::Slash:
    case TokenKind::Percent:
    case TokenKind::StarStar: return true;
    default: return false;
  }
}
bool isComparison(TokenKind kind) {
  switch (kind) {
    case TokenKind::EqualEqual:
    case TokenKind::BangEqual:
    case TokenKind::Less:
    case TokenKind::LessEqual:
    case TokenKind::Greater:
    case TokenKind::GreaterEqual: return true;
    default: return false;
  }
}
// 1: ==, != ; 2: < <= > >= ; 0: not a comparison. Operators of one class chain.
int comparisonClass(TokenKind kind) {
  if (kind == TokenKind::EqualEqual || kind == TokenKind::BangEqual) return 1;
  return isComparison(kind) ? 2 : 0;
}
}  // namespace

std::optional<int64_t> foldIntegerBuiltin(BuiltinFn fn,
                                          std::span<const std::optional<int64_t>> args) {
  bool minMax = fn == BuiltinFn::Max || fn == BuiltinFn::Min;
  if ((!minMax && fn != BuiltinFn::Abs) || args.size() != (minMax ? 2u : 1u) ||
      !std::all_of(args.begin(), args.end(), [](auto value) { return value.has_value(); })) {
    return std::nullopt;
  }
  if (fn == BuiltinFn::Abs) {
    if (*args[0] == INT64_MIN) return std::nullopt;  // no int64: left to run time
    return *args[0] < 0 ? -*args[0] : *args[0];
  }
  return fn == BuiltinFn::Max ? std::max(*args[0], *args[1]) : std::min(*args[0], *args[1]);
}

Checker::Checker(const Tree& tree, const Interner& interner, DiagnosticEngine& diags,
                 const ImportContext* imports, const CheckOptions& options)
    : tree_(tree), interner_(interner), diags_(&diags), imports_(imports), options_(options) {
  if (imports != nullptr) {
    // The imported files' types keep their ids: their IR is already built.
    module_.types = imports->types;
    module_.dims = imports->dims;
    module_.callables = imports->callables;
    module_.firstLocal = static_cast<uint32_t>(module_.callables.size());
  }
  module_.tree = &tree;
  module_.interner = &interner;
  module_.nodeType.assign(tree.size(), TypeId{});
  module_.nodeSymbol.assign(tree.size(), kNoSymbol);
  module_.callKind.assign(tree.size(), CallKind::None);
  module_.callOf.assign(tree.size(), UINT32_MAX);
  current_.assign(interner.size(), 0);
  // One symbol per declaring node (and the builtins, and loop bodies checked
  // again), reserved at once: growing by doubling copies the (large) value
  // records into fresh pages each time, which dominated checking big files.
  size_t declarations = 0;
  for (uint32_t i = 0; i < tree.size(); ++i) {
    switch (tree.kind(NodeId{i})) {
      case NodeKind::Param:
      case NodeKind::Let:
      case NodeKind::For:
      case NodeKind::Layer:
      case NodeKind::Fn:
      case NodeKind::Import: ++declarations; break;
      default: break;
    }
  }
  size_t expected = module_.symbols.size() + declarations + declarations / 8 + 512;
  module_.symbols.reserve(expected);
  symbolValue_.reserve(expected);
  int32_ = module_.types.scalar(DType::Int32);
  float32_ = module_.types.scalar(DType::Float32);
  bool_ = module_.types.scalar(DType::Bool);
  str_ = module_.types.scalar(DType::Str);
}

// ---- scopes -------------------------------------------------------------------

void Checker::popScope() {
  size_t mark = scopeMarks_.back();
  scopeMarks_.pop_back();
  while (undo_.size() > mark) {
    current_[undo_.back().identifier] = undo_.back().previous;
    undo_.pop_back();
  }
}

uint32_t Checker::declare(Symbol symbol, NodeId nameNode) {
  auto id = static_cast<uint32_t>(module_.symbols.size());
  IdentifierId name = symbol.name;
  module_.symbols.push_back(symbol);
  symbolValue_.push_back(make(symbol.type, symbol.decl));
  if (nameNode.isValid()) {
    module_.nodeSymbol[nameNode.index] = id;
  }
  if (name.isValid() && name.index < current_.size()) {
    undo_.push_back(Binding{name.index, current_[name.index]});
    current_[name.index] = id + 1;
  }
  return id;
}

std::optional<uint32_t> Checker::lookup(IdentifierId name) const {
  if (!name.isValid() || name.index >= current_.size() || current_[name.index] == 0) {
    return std::nullopt;
  }
  return current_[name.index] - 1;
}

int64_t Checker::endedDeclaration(IdentifierId name) const {
  for (uint32_t i = static_cast<uint32_t>(module_.symbols.size()); i-- > ctx_.firstSymbol;) {
    const Symbol& s = module_.symbols[i];
    if (s.name == name && (s.kind == SymbolKind::Local || s.kind == SymbolKind::LoopVar) &&
        s.decl.isValid() && tree_.kind(s.decl) != NodeKind::Name) {
      return i;
    }
  }
  return -1;
}

void Checker::reportUndefined(NodeId node, IdentifierId name) {
  if (ctx_.callable >= 0 && !ctx_.undeclaredReported.insert(name.index).second) {
    return;  // this body's earlier use was reported
  }
  std::string text(spelling(name));
  // Python's spellings of the keyword constants (not again in the arguments of a PyTorch
  // call, `nn.ReLU(inplace=True)`, whose rewrite already spells them).
  if (std::optional<std::string_view> fix = pythonConstantFix(text)) {
    if (foreignArgs_ > 0) return;
    diags_->report(Diag::UndefinedName, source(), rangeOf(node), text).note(Note::DidYouMean, source(), rangeOf(node), *fix);
    return;
  }
  if (text == "None") {
    diags_->report(Diag::UndefinedName, source(), rangeOf(node), text)
        .note(Note::NoNone, source(), rangeOf(node),
              "leave an optional argument out, or give the layer a 'bool' hyperparameter and "
              "test it with 'if'");
    return;
  }
  if (text == "self") {
    report(Diag::SelfReference, node);
    return;
  }
  // A named option's value without quotes (`method=absmean`,
  // `padding=same`): the options are strings.
  TokenId at = tree_.token(node);
  auto kindBefore = [&](uint32_t back) {
    return at.index >= back ? tokens().kind(TokenId{at.index - back}) : TokenKind::EndOfFile;
  };
  bool namedArgument = kindBefore(1) == TokenKind::Equal && kindBefore(2) == TokenKind::Identifier &&
                       (kindBefore(3) == TokenKind::LParen || kindBefore(3) == TokenKind::Comma);
  if (namedArgument && (text == "absmean" || text == "threshold" || text == "stochastic" ||
                        text == "same" || text == "valid")) {
    diags_->report(Diag::UndefinedName, source(), rangeOf(node), text)
        .note(Note::WriteInstead, source(), rangeOf(node), fmt::format("\"{}\"", text));
    return;
  }
  // `softmax(x, dim==1)`: a named argument written as a comparison.
  auto kindAfter = [&](uint32_t ahead) {
    return at.index + ahead < tokens().size() ? tokens().kind(TokenId{at.index + ahead})
                                              : TokenKind::EndOfFile;
  };
  // (Only for a name some builtin's parameter has: `f(n == 1)` with `n` misspelled is a
  // comparison.)
  auto builtinParameter = [&] {
    static constexpr BuiltinFn kAll[] = {
#define BUILTIN_FN(Id, Name, Rule, Params) BuiltinFn::Id,
#include "tritonc/sema/Builtins.def"
    };
    for (BuiltinFn fn : kAll) {
      for (const BuiltinParam& p : builtinFnParams(fn)) {
        if (p.name == text) return true;
      }
    }
    return false;
  };
  // The value compared: a literal, a name or a negative number (`dim==-1`).
  auto comparedValue = [&]() -> std::string {
    auto simple = [](TokenKind k) {
      return k == TokenKind::IntLiteral || k == TokenKind::FloatLiteral ||
             k == TokenKind::Identifier || k == TokenKind::StringLiteral ||
             k == TokenKind::KwTrue || k == TokenKind::KwFalse;
    };
    if (simple(kindAfter(2))) return std::string(tokens().spelling(TokenId{at.index + 2}));
    if (kindAfter(2) == TokenKind::Minus &&
        (kindAfter(3) == TokenKind::IntLiteral || kindAfter(3) == TokenKind::FloatLiteral)) {
      return "-" + std::string(tokens().spelling(TokenId{at.index + 3}));
    }
    return "";
  };
  if ((kindBefore(1) == TokenKind::LParen || kindBefore(1) == TokenKind::Comma) &&
      kindAfter(1) == TokenKind::EqualEqual && builtinParameter()) {
    if (std::string value = comparedValue(); !value.empty()) {
      diags_->report(Diag::UndefinedName, source(), rangeOf(node), text)
          .note(Note::WriteInstead, source(), rangeOf(node), fmt::format("{}={}", text, value));
      return;
    }
  }
  // A torch.nn module (a capitalized name) that is a function here, created as
  // a module (`let act = ReLU()`, `let sm = Softmax(dim=1)`): `relu()` would be the next error
  // (its input missing). The function is applied where the module would be,
  // with the creation's arguments after the input.
  auto createdAsModule = [&](DiagnosticBuilder& builder, std::string_view dsl) {
    if (!std::isupper(static_cast<unsigned char>(text[0])) || findBuiltinLayer(dsl) ||
        !takesTensorFirst(dsl)) {
      return false;
    }
    std::optional<AppliedInstead> applied = appliedInstead(at, dsl);
    if (!applied) return false;
    builder.note(Note::ModuleIsFunction, source(), rangeOf(node), text, dsl, applied->module,
                 applied->call);
    return true;
  };
  // torch's names of functions used bare (`cat([a, b], dim=1)`, `clamp`).
  if (std::optional<std::string_view> dsl = bareTorchFunction(text)) {
    auto builder = diags_->report(Diag::UndefinedName, source(), rangeOf(node), text);
    if (!createdAsModule(builder, *dsl)) {
      builder.note(Note::DidYouMean, source(), rangeOf(node), *dsl);
    }
    return;
  }
  if (std::optional<std::string_view> hint = missingFunctionHint(text)) {
    diags_->report(Diag::UndefinedName, source(), rangeOf(node), text)
        .note(Note::NoSuchFunction, text, *hint);
    return;
  }
  if (text == "pass") {
    // Python's empty statement: a block may be empty, `{ }`.
    diags_->report(Diag::UndefinedName, source(), rangeOf(node), text)
        .note(Note::PythonPass, source(), rangeOf(node));
    return;
  }
  if (std::optional<std::string_view> dsl = dslNameForForeign(text);
      dsl && *dsl != text && std::isupper(static_cast<unsigned char>(text[0]))) {
    // torch.nn's module spellings of functions (`ReLU(x)` is `relu(x)`).
    auto builder = diags_->report(Diag::UndefinedName, source(), rangeOf(node), text);
    if (!createdAsModule(builder, *dsl)) {
      builder.note(Note::DidYouMean, source(), rangeOf(node), *dsl);
    }
    return;
  }
  // A layer, fn or constant of a file imported `as` an alias is named through
  // it (`import "blocks.tri" as o` then `o.ResMLP(4)`).
  if (imports_ != nullptr) {
    for (uint32_t i = 0; i < module_.symbols.size(); ++i) {
      const Symbol& s = module_.symbols[i];
      if (s.kind != SymbolKind::ImportAlias || s.ref >= imports_->imports.size() ||
          lookup(s.name) != i) {
        continue;
      }
      const ImportContext::Import& imported = imports_->imports[s.ref];
      bool member = std::any_of(imported.exports.begin(), imported.exports.end(),
                                [&](uint32_t c) { return imports_->callables[c].name == name; }) ||
                    std::any_of(imported.constants.begin(), imported.constants.end(),
                                [&](const auto& k) { return k.name == name; });
      if (member) {
        diags_->report(Diag::UndefinedName, source(), rangeOf(node), text)
            .note(Note::DidYouMean, source(), rangeOf(node),
                  fmt::format("{}.{}", spelling(s.name), text));
        return;
      }
    }
  }
  // `long(y)`, `half(x)`: PyTorch's dtype names used as casts (not `log`, the closest
  // name), unless a name of the user's is meant (an imported one, a `let` in a block).
  if (std::optional<std::string_view> dtype = dslDTypeForForeign(text);
      dtype && *dtype != text && endedDeclaration(name) < 0) {
    diags_->report(Diag::UndefinedName, source(), rangeOf(node), text)
        .note(Note::DidYouMean, source(), rangeOf(node), *dtype);
    return;
  }
  auto builder = diags_->report(Diag::UndefinedName, source(), rangeOf(node), text);
  // `if c { let down = ... }` then `down(x)` after the block, as Python
  // allows: the body's last such `let` (checked in order, so declared above).
  if (int64_t i = endedDeclaration(name); i >= 0) {
    const Symbol& s = module_.symbols[static_cast<size_t>(i)];
    // A sub-module cannot be declared before the block and created in it: its
    // `let` creates it (a constructor's attribute).
    TypeKind k = module_.types.kind(s.type);
    bool subModule = k == TypeKind::Instance || k == TypeKind::BuiltinInstance;
    builder.note(subModule ? Note::SubModuleInEndedBlock : Note::DeclaredInEndedBlock, source(),
                 tokens().range(tree_.token(s.decl)), text);
    return;
  }
  if (!diags_->takeSpellCheck()) {
    return;
  }
  // Declared further down the same body (`let h = fc(x)` above `let fc =
  // TernaryLinear(...)`): a name is usable after its `let`.
  if (ctx_.callable >= 0 && static_cast<uint32_t>(ctx_.callable) >= module_.firstLocal) {
    SourceRange body = rangeOf(module_.callables[ctx_.callable].node);
    uint32_t use = rangeOf(node).begin;
    for (uint32_t i = 0; i < tree_.size(); ++i) {
      NodeId let{i};
      if (tree_.kind(let) != NodeKind::Let || tokens().identifier(tree_.token(let)) != name) continue;
      SourceRange declared = tokens().range(tree_.token(let));
      if (declared.begin > use && declared.end <= body.end && declared.begin >= body.begin) {
        builder.note(Note::DeclaredLater, source(), declared, text);
        return;
      }
    }
  }
  // Every visible name is a candidate for "did you mean"; for a name not
  // called (`h + bais`), only values: a function or layer there is no fix
  // (`abs` for `bais`).
  bool called = kindAfter(1) == TokenKind::LParen;
  std::vector<std::string_view> candidates;
  for (uint32_t i = 0; i < current_.size(); ++i) {
    if (current_[i] == 0) continue;
    SymbolKind kind = module_.symbols[current_[i] - 1].kind;
    // Type names are values only as casts: they make poor suggestions.
    bool callable = kind == SymbolKind::Fn || kind == SymbolKind::Layer ||
                    kind == SymbolKind::Builtin || kind == SymbolKind::BuiltinLayer;
    if (kind != SymbolKind::TypeName && (called || !callable)) {
      candidates.push_back(interner_.spelling(IdentifierId{i}));
    }
  }
  // Builtins are bound only when the file mentions them, so the ones it
  // misspells come from the table.
  static constexpr std::string_view kBuiltinNames[] = {
#define BUILTIN_FN(Id, Name, Rule, Params) Name,
#define BUILTIN_LAYER(Id, Name, Rule, Params) Name,
#include "tritonc/sema/Builtins.def"
  };
  if (called) {
    candidates.insert(candidates.end(), std::begin(kBuiltinNames), std::end(kBuiltinNames));
  }
  std::string_view match = preferredMatch(text, candidates);
  if (!match.empty()) {
    builder.note(Note::DidYouMean, source(), rangeOf(node), match);
  }
}

std::string_view Checker::preferredMatch(std::string_view word,
                                         const std::vector<std::string_view>& candidates) const {
  // The same name but for '_' (`bn1` for `bn_1`) is the likeliest.
  auto letters = [](std::string_view w) {
    std::string out;
    for (char ch : w) {
      if (ch != '_') out += ch;
    }
    return out;
  };
  std::string bare = letters(word);
  for (std::string_view candidate : candidates) {
    if (candidate != word && !bare.empty() && letters(candidate) == bare) return candidate;
  }
  std::string_view match = closestMatch(word, candidates);
  if (match.empty() || ctx_.callable < static_cast<int>(module_.firstLocal)) return match;
  // Equally close: a name the layer or fn declares but never uses (the one the
  // writer meant) before one used elsewhere (`bn1` with `bn_1` unused and
  // `bn2` used: 'bn_1').
  SourceRange range = rangeOf(module_.callables[static_cast<size_t>(ctx_.callable)].node);
  std::unordered_set<std::string_view> used;
  for (uint32_t i = 0; i < tree_.size(); ++i) {
    NodeId n{i};
    if (tree_.kind(n) != NodeKind::Name) continue;
    SourceRange at = rangeOf(n);
    if (at.begin >= range.begin && at.end <= range.end) used.insert(tokens().spelling(tree_.token(n)));
  }
  if (!used.count(match)) return match;
  std::vector<std::string_view> unused;
  for (std::string_view candidate : candidates) {
    if (!used.count(candidate)) unused.push_back(candidate);
  }
  std::string_view other = closestMatch(word, unused);
  unsigned limit = static_cast<unsigned>(word.size() + 1);
  if (!other.empty() && editDistance(word, other, limit) <= editDistance(word, match, limit)) {
    return other;
  }
  return match;
}

// ---- declarations ---------------------------------------------------------------

void Checker::declareBuiltins() {
  pushScope();  // the builtin scope, below the file's own names
  auto bind = [&](std::string_view name, SymbolKind kind, TypeId type, uint32_t ref) {
    IdentifierId id = interner_.lookup(name);
    if (id.isValid()) {  // a name the file never mentions needs no binding
      declare(Symbol{kind, id, NodeId{}, type, ref}, NodeId{});
    }
  };
#define BUILTIN_FN(Id, Name, Rule, Params)                                              \
  bind(Name, SymbolKind::Builtin, module_.types.make(TypeKind::Builtin,                  \
                                                     static_cast<uint32_t>(BuiltinFn::Id)), \
       static_cast<uint32_t>(BuiltinFn::Id));
#define BUILTIN_LAYER(Id, Name, Rule, Params)                                        \
  bind(Name, SymbolKind::BuiltinLayer,                                               \
       module_.types.make(TypeKind::BuiltinLayer, static_cast<uint32_t>(BuiltinLayer::Id)), \
       static_cast<uint32_t>(BuiltinLayer::Id));
#include "tritonc/sema/Builtins.def"
  for (std::string_view name : {"bool", "trit", "int8", "int16", "int32", "int64", "int",
                                "float16", "bfloat16", "float32", "float", "str"}) {
    DType dtype = *dtypeFromName(name);
    bind(name, SymbolKind::TypeName, module_.types.make(TypeKind::DTypeValue,
                                                        static_cast<uint32_t>(dtype)),
         static_cast<uint32_t>(dtype));
  }
}

void Checker::declareImports() {
  pushScope();  // what unnamed imports bring in, below the file's own names
  if (imports_ == nullptr) {
    return;
  }
  // Which import brought each name in, to report a name two files define.
  std::unordered_map<uint32_t, size_t> broughtBy;
  // True when `name` may be declared for import `i`; reports a clash with an
  // earlier import of another file (the same file imported twice is fine).
  auto claim = [&](IdentifierId name, size_t i) {
    auto [it, inserted] = broughtBy.emplace(name.index, i);
    if (inserted) return true;
    const ImportContext::Import& first = imports_->imports[it->second];
    const ImportContext::Import& second = imports_->imports[i];
    if (first.path != second.path) {
      diags_->report(Diag::ImportConflict, source(), rangeOf(second.item), spelling(name),
                     first.path, second.path)
          .note(Note::ImportedHere, source(), rangeOf(first.item), spelling(name))
          .note(Note::ImportAliasHint, tokens().stringValue(tree_.token(second.item)),
                second.stem);
    }
    return false;
  };
  for (size_t i = 0; i < imports_->imports.size(); ++i) {
    const ImportContext::Import& import = imports_->imports[i];
    importOfItem_[import.item.index] = static_cast<uint32_t>(i);
    if (tree_.childB(import.item).isValid()) {
      continue;  // `import "f.tri" as f`: its names are reached as f.NAME
    }
    for (uint32_t index : import.exports) {
      const CallableInfo& callable = module_.callables[index];
      if (!claim(callable.name, i)) continue;
      TypeId type = module_.types.make(callable.isFn ? TypeKind::Function : TypeKind::Layer, index);
      declare(Symbol{callable.isFn ? SymbolKind::Fn : SymbolKind::Layer, callable.name,
                     import.item, type, index},
              NodeId{});
    }
    for (const ImportContext::Import::Constant& constant : import.constants) {
      if (claim(constant.name, i)) {
        declareImportedConstant(constant, import.item, /*inScope=*/true);
      }
    }
  }
}

void Checker::declareItems() {
  declareImports();
  pushScope();  // the file scope
  std::unordered_map<uint32_t, NodeId> defined;
  NodeId firstMain;
  // Where an item defines its name: an import's is its alias (`as lib`), not
  // the path string its token is.
  auto nameRange = [&](NodeId node) {
    if (tree_.kind(node) == NodeKind::Import && tree_.childB(node).isValid()) {
      return tokens().range(TokenId{tree_.childB(node).index});
    }
    return tokens().range(tree_.token(node));
  };
  auto checkUnique = [&](IdentifierId name, NodeId node) {
    auto [it, inserted] = defined.emplace(name.index, node);
    if (!inserted) {
      diags_->report(Diag::Redefinition, source(), tokens().range(tree_.token(node)), spelling(name))
          .note(Note::PreviousDefinition, source(), nameRange(it->second));
      return false;
    }
    return true;
  };
  for (NodeId item : tree_.list(tree_.listA(tree_.root()))) {
    switch (tree_.kind(item)) {
      case NodeKind::Layer:
      case NodeKind::Fn: {
        bool isFn = tree_.kind(item) == NodeKind::Fn;
        IdentifierId name = tokens().identifier(tree_.token(item));
        auto index = static_cast<uint32_t>(module_.callables.size());
        CallableInfo info;
        info.name = name;
        info.node = item;
        info.isFn = isFn;
        info.returnType = module_.types.voidType();
        module_.callables.push_back(info);
        if (checkUnique(name, item)) {
          if (!isFn) warnIfRenamedClass(name, item);
          TypeId type = module_.types.make(isFn ? TypeKind::Function : TypeKind::Layer, index);
          declare(Symbol{isFn ? SymbolKind::Fn : SymbolKind::Layer, name, item, type, index},
                  item);
        }
        break;
      }
      case NodeKind::Let: {
        IdentifierId name = tokens().identifier(tree_.token(item));
        if (checkUnique(name, item)) {
          // The value is filled in when the let is checked, in source order.
          declare(Symbol{SymbolKind::Constant, name, item, module_.types.unknown(), 0}, item);
        }
        break;
      }
      case NodeKind::Import: {
        auto it = importOfItem_.find(item.index);
        if (tree_.childB(item).isValid() && it != importOfItem_.end()) {
          TokenId alias{tree_.childB(item).index};
          IdentifierId name = tokens().identifier(alias);
          auto [seen, inserted] = defined.emplace(name.index, item);
          if (!inserted) {
            diags_->report(Diag::Redefinition, source(), tokens().range(alias), spelling(name))
                .note(Note::PreviousDefinition, source(), nameRange(seen->second));
            break;
          }
          declare(Symbol{SymbolKind::ImportAlias, name, item,
                         module_.types.make(TypeKind::Module, it->second), it->second},
                  NodeId{});
        }
        break;
      }
      case NodeKind::Main: {
        // One `main` per file: a second would silently replace the first.
        if (firstMain.isValid()) {
          diags_->report(Diag::Redefinition, source(), tokens().range(tree_.token(item)), "main")
              .note(Note::PreviousDefinition, source(), tokens().range(tree_.token(firstMain)));
        } else {
          firstMain = item;
        }
        break;
      }
      default: break;
    }
  }
}

// Types of parameters and results. Size variables are dimension variables;
// a top-level integer constant used as a dimension stands for its value.
DimId Checker::resolveDim(NodeId dim, int callable, bool whole) {
  switch (tree_.kind(dim)) {
    case NodeKind::DimUnknown: return dims().unknown();
    case NodeKind::IntLit: {
      uint64_t value = tokens().intValue(tree_.token(dim));
      if (value > static_cast<uint64_t>(INT64_MAX)) {
        report(Diag::LiteralDoesNotFit, dim, fmt::format("the value {}", value), "int64");
        return dims().unknown();
      }
      return dims().constant(static_cast<int64_t>(value));
    }
    case NodeKind::Name: {
      IdentifierId name = tokens().identifier(tree_.token(dim));
      if (tokens().spelling(tree_.token(dim)) == "None") {
        // Python's spelling of an unknown size (a Keras or ONNX habit): as a
        // size variable it would make the tensor a weight.
        report(Diag::NoneDimension, dim);
        return dims().unknown();
      }
      // A parameter of the callable shadows a module-level constant.
      bool parameter = false;
      if (callable >= static_cast<int>(module_.firstLocal)) {
        for (NodeId param : tree_.list(tree_.listA(module_.callables[callable].node))) {
          if (tree_.kind(param) != NodeKind::Param ||
              tokens().identifier(tree_.token(param)) != name) {
            continue;
          }
          parameter = true;
          // A size is an integer: `image_size: float32` in a shape would make
          // torch.zeros((224.0 // 16, ...)) raise when the module is created.
          NodeId type = tree_.childA(param);
          std::string_view t = type.isValid() && tree_.kind(type) == NodeKind::TypeName
                                   ? tokens().spelling(tree_.token(type))
                                   : std::string_view();
          std::optional<DType> declared = dtypeFromName(t);
          bool notInteger = declared && (isFloating(*declared) || *declared == DType::Str ||
                                         *declared == DType::Bool);
          // Once per parameter (its first use in a shape); the size stays a
          // size variable, so nothing else changes meaning.
          uint64_t key = (uint64_t{static_cast<uint32_t>(callable)} << 32) | name.index;
          // A tensor parameter's name as a size (`w: Tensor<float32, [x, 4]>` beside an
          // input `x`) names no integer: the constructor's `torch.empty((x, 4))` would
          // raise NameError (audit 59).
          bool tensor = t == "Tensor" || t == "TernaryTensor" || t == "tensor";
          if ((notInteger || tensor) && nonIntegerSizes_.insert(key).second) {
            report(Diag::BadTypeArguments, dim,
                   tensor ? fmt::format("'{}' is a tensor parameter, but a size is an integer: "
                                        "give the size a name of its own (an 'int' "
                                        "hyperparameter)",
                                        spelling(name))
                          : fmt::format("'{}' is a {} hyperparameter, but a size is an "
                                        "integer: declare it 'int'",
                                        spelling(name), t));
          }
        }
      }
      std::optional<uint32_t> symbol = parameter ? std::nullopt : lookup(name);
      if (symbol) {
        const Symbol& s = module_.symbols[*symbol];
        if (s.kind == SymbolKind::Constant && symbolValue_[*symbol].intValue) {
          return dims().constant(*symbolValue_[*symbol].intValue);
        }
        if (s.kind == SymbolKind::Constant) {
          // Not a size variable (checkSignature makes it no hidden
          // hyperparameter the callers must pass): an error once the constant
          // is checked, unless its own initializer already is one.
          constantDims_.emplace_back(dim, *symbol);
        }
      }
      return dims().var(name);
    }
    case NodeKind::Paren: return resolveDim(tree_.childA(dim), callable, whole);
    case NodeKind::Binary: {
      DimId lhs = resolveDim(tree_.childA(dim), callable, false);
      DimId rhs = resolveDim(tree_.childB(dim), callable, false);
      TokenKind op = tokens().kind(tree_.token(dim));
      if (op == TokenKind::Slash && dims().constValue(rhs) == 0) {
        report(Diag::BadTypeArguments, dim, "division by zero in a dimension");
        return dims().unknown();
      }
      DimId result = op == TokenKind::Plus    ? dims().binary(DimKind::Add, lhs, rhs)
                     : op == TokenKind::Minus ? dims().binary(DimKind::Sub, lhs, rhs)
                     : op == TokenKind::Star  ? dims().binary(DimKind::Mul, lhs, rhs)
                                              : dims().binary(DimKind::Div, lhs, rhs);
      std::optional<int64_t> value = dims().constValue(result);
      if (!value && dims().constValue(lhs) && dims().constValue(rhs)) {
        reportPastInt64(dim);  // `[9223372036854775807 + 1]`: it became `?` silently
        return dims().unknown();
      }
      if (whole && value && *value < 0) {
        report(Diag::BadTypeArguments, dim,
               fmt::format("a dimension cannot be negative, and this one is {}", *value));
        return dims().unknown();
      }
      return result;
    }
    default: return dims().unknown();
  }
}

TypeId Checker::resolveType(NodeId type, int callable) {
  if (!type.isValid() || tree_.kind(type) != NodeKind::TypeName) {
    return module_.types.error();
  }
  TokenId nameToken = tree_.token(type);
  std::string name(tokens().spelling(nameToken));
  std::span<const NodeId> args = tree_.list(tree_.listA(type));
  if (name == "Tensor" || name == "tensor" || name == "TernaryTensor") {
    bool ternary = name == "TernaryTensor";
    if (args.size() == 1 && tree_.kind(args[0]) == NodeKind::Shape) {
      // The element type left out: `TernaryTensor<[256, 128]>`. Say what to
      // write with the user's shape, and read it so (no errors downstream).
      const char* element = ternary ? "trit" : "float32";
      report(Diag::BadTypeArguments, type,
             fmt::format("'{0}' takes the element type before the shape: write '{0}<{1}, {2}>'",
                         name, element, textOf(args[0])));
      std::vector<DimId> shape;
      for (NodeId dim : tree_.list(tree_.listA(args[0]))) {
        shape.push_back(resolveDim(dim, callable));
      }
      return module_.types.tensor(ternary ? DType::Trit : DType::Float32, shape, ternary);
    }
    if (args.size() > 2 || (!args.empty() && tree_.kind(args[0]) != NodeKind::TypeName) ||
        (args.size() == 2 && tree_.kind(args[1]) != NodeKind::Shape)) {
      report(Diag::BadTypeArguments, type,
             fmt::format("'{}' takes an element type and an optional shape: "
                         "'{}<float32, [?, 128]>'",
                         name, name));
      return module_.types.error();
    }
    DType dtype = ternary ? DType::Trit : DType::Float32;
    if (!args.empty()) {
      TypeId element = resolveType(args[0], callable);
      if (module_.types.kind(element) == TypeKind::Error) {
        return element;
      }
      if (!module_.types.isScalar(element) || module_.types.node(element).dtype == DType::Str) {
        report(Diag::BadTypeArguments, args[0],
               fmt::format("the element type of '{}' must be a numeric scalar type, not '{}'",
                           name, fmt(element)));
        return module_.types.error();
      }
      dtype = module_.types.node(element).dtype;
      if (ternary && dtype != DType::Trit) {
        report(Diag::TernaryElementType, args[0], dtypeName(dtype));
        // Read as the TernaryTensor<trit> it must be: the parameter stays a
        // weight (or input), with no second error where it is passed.
        dtype = DType::Trit;
      }
    }
    if (args.size() < 2) {
      return module_.types.tensorAnyRank(dtype, ternary);
    }
    std::vector<DimId> shape;
    for (NodeId dim : tree_.list(tree_.listA(args[1]))) {
      shape.push_back(resolveDim(dim, callable));
    }
    return module_.types.tensor(dtype, shape, ternary);
  }
  if (std::optional<DType> dtype = dtypeFromName(name)) {
    if (!args.empty()) {
      report(Diag::BadTypeArguments, type,
             fmt::format("the scalar type '{}' takes no type arguments", name));
      return module_.types.error();
    }
    return module_.types.scalar(*dtype);
  }
  // The commoner first: of equally close names the first is suggested.
  std::vector<std::string_view> known = {"Tensor", "TernaryTensor", "tensor", "bool", "trit",
                                         "int", "float", "float32", "int32", "int64", "int8",
                                         "int16", "float16", "bfloat16", "str"};
  // `let fc: TernaryLinear = TernaryLinear(784, 10)`, Python's annotation of
  // a module: a layer is no type.
  std::optional<uint32_t> symbol = lookup(tokens().identifier(nameToken));
  if (findBuiltinLayer(name) ||
      (symbol && module_.symbols[*symbol].kind == SymbolKind::Layer)) {
    report(Diag::LayerAsType, type, name);
    return module_.types.error();
  }
  auto builder = diags_->report(Diag::UnknownType, source(), tokens().range(nameToken), name);
  // PyTorch's dtype names (`long`, `half`, `double`): the type that is meant.
  std::optional<std::string_view> torchName = dslDTypeForForeign(name);
  std::string_view match = torchName ? *torchName : closestMatch(name, known);
  if (name == "None") {
    // `fn log(x: ...) -> None {`: Python's annotation of no result.
    builder.note(Note::NoNone, source(), tokens().range(nameToken),
                 "a layer or fn that returns nothing leaves out '-> type'");
  } else if (name == "List" || name == "list" || name == "Tuple" || name == "tuple" ||
      name == "Sequence") {
    // `-> List<Tensor<...>>` (not 'int'): several results are a list, untyped.
    builder.note(Note::NoSuchFunction, name,
                 "a layer or fn that returns several tensors leaves out its result type and "
                 "returns a list, 'return [a, b]'");
  } else if (!match.empty()) {
    builder.note(Note::DidYouMean, source(), tokens().range(nameToken), match);
  }
  return module_.types.error();
}

void Checker::checkSignature(int index) {
  CallableInfo& info = module_.callables[index];
  NodeId node = info.node;
  std::unordered_map<uint32_t, NodeId> seen;
  std::vector<IdentifierId> declared;
  for (NodeId param : tree_.list(tree_.listA(node))) {
    if (tree_.kind(param) != NodeKind::Param) {
      continue;
    }
    IdentifierId name = tokens().identifier(tree_.token(param));
    auto [it, inserted] = seen.emplace(name.index, param);
    if (!inserted) {
      diags_->report(Diag::DuplicateParam, source(), tokens().range(tree_.token(param)),
                    spelling(name))
          .note(Note::PreviousDefinition, source(), tokens().range(tree_.token(it->second)));
      continue;
    }
    declared.push_back(name);
    ParamInfo p;
    p.name = name;
    p.node = param;
    p.type = resolveType(tree_.childA(param), index);
    setType(param, p.type);
    const TypeStore::Node& t = module_.types.node(p.type);
    if (t.kind == TypeKind::Tensor) {
      bool fullyKnown = t.rankKnown;
      for (DimId d : module_.types.shape(p.type)) {
        fullyKnown = fullyKnown && !dims().containsUnknown(d);
      }
      // A fn has no weights: all its tensor parameters are inputs.
      p.cls = fullyKnown && !info.isFn ? ParamClass::Weight : ParamClass::Input;
    } else if (t.kind == TypeKind::Error) {
      // A type that did not resolve keeps its parameter in the signature, in
      // the class its spelling suggests (`in_ch: intx` is a hyperparameter),
      // so that calls are not errors too.
      NodeId typeNode = tree_.childA(param);
      bool generic = typeNode.isValid() && tree_.kind(typeNode) == NodeKind::TypeName &&
                     tree_.listA(typeNode).isValid() && !tree_.list(tree_.listA(typeNode)).empty();
      p.cls = generic || info.isFn ? ParamClass::Input : ParamClass::Hyper;
    } else {
      p.cls = info.isFn ? ParamClass::Input : ParamClass::Hyper;
    }
    if (p.cls == ParamClass::Weight) warnIfRenamedInStateDict("weight", name, param);
    if (p.cls == ParamClass::Weight && t.kind == TypeKind::Tensor && !t.ternary &&
        t.dtype == DType::Trit) {
      // `w: Tensor<trit, [o, i]>` where `TernaryTensor` was meant: a frozen
      // integer parameter (its initializer's values forever) that looks right.
      std::string shape = "[";
      for (DimId d : module_.types.shape(p.type)) {
        shape += (shape.size() > 1 ? ", " : "") + dims().format(d, interner_);
      }
      report(Diag::IntegerTritWeight, tree_.childA(param), spelling(name), shape + "]");
    }
    if (p.cls == ParamClass::Weight) {
      // Sizes of literals and constants: too many elements to build? (Sizes of
      // hyperparameters are checked where the layer is created with values.)
      std::vector<int64_t> sizes;
      for (DimId d : module_.types.shape(p.type)) {
        if (std::optional<int64_t> v = dims().constValue(d)) sizes.push_back(*v);
      }
      std::optional<HugeWeightProblem> huge =
          sizes.size() == module_.types.shape(p.type).size() ? hugeWeight(sizes) : std::nullopt;
      if (huge) {
        report(huge->kind, tree_.childA(param), "", spelling(name), spelling(info.name),
               huge->elements, huge->bytes);
      }
    }
    info.params.push_back(p);
  }
  // Size variables in weight shapes that are not parameters become implicit
  // keyword-only int hyperparameters (LANGUAGE.md §4).
  if (!info.isFn) {
    std::vector<IdentifierId> vars;
    for (const ParamInfo& p : info.params) {
      if (p.cls == ParamClass::Weight) {
        for (DimId d : module_.types.shape(p.type)) {
          dims().collectVars(d, vars);
        }
      }
    }
    for (IdentifierId var : vars) {
      std::optional<uint32_t> symbol = lookup(var);
      if (symbol && module_.symbols[*symbol].kind == SymbolKind::Constant &&
          std::find(declared.begin(), declared.end(), var) == declared.end()) {
        continue;  // a constant without an integer value (ConstantSizeNotInteger)
      }
      if (std::find(declared.begin(), declared.end(), var) == declared.end()) {
        warnImplicitSizeLikeDeclared(info, var);
        ParamInfo p;
        p.name = var;
        p.cls = ParamClass::Hyper;
        p.type = int32_;
        p.implicit = true;
        info.params.push_back(p);
      }
    }
  }
  // Size variables of input shapes that are neither parameters nor implicit
  // hyperparameters are ints in the body, read from the input's shape.
  for (size_t i = 0; i < info.params.size(); ++i) {
    const ParamInfo& p = info.params[i];
    if (p.cls != ParamClass::Input || !module_.types.isTensor(p.type)) {
      continue;
    }
    std::span<const DimId> shape = module_.types.shape(p.type);
    for (size_t d = 0; d < shape.size(); ++d) {
      const DimStore::Node& n = dims().node(shape[d]);
      if (n.kind != DimKind::Var) {
        continue;  // only a dimension that is exactly the variable tells its value
      }
      bool known = std::any_of(info.params.begin(), info.params.end(),
                               [&](const ParamInfo& q) { return q.name == n.var; }) ||
                   std::any_of(info.shapeVars.begin(), info.shapeVars.end(),
                               [&](const ShapeVarInfo& v) { return v.name == n.var; });
      if (!known) {
        info.shapeVars.push_back(
            ShapeVarInfo{n.var, static_cast<uint32_t>(i), static_cast<uint32_t>(d)});
      }
    }
  }
  if (tree_.childB(node).isValid()) {
    info.returnType = resolveType(tree_.childB(node), index);
    info.declaredReturn = true;
    // A size variable only the return type names has nothing to take its
    // value from (`-> Tensor<float32, [?, n_hidden]>` with no n_hidden among
    // the parameters' shapes): it says nothing, and is often a typo.
    if (module_.types.isTensor(info.returnType) &&
        module_.types.node(info.returnType).rankKnown) {
      auto bound = [&](IdentifierId var) {
        for (const ParamInfo& p : info.params) {
          if (p.name == var) return true;
          if (!module_.types.isTensor(p.type) || !module_.types.node(p.type).rankKnown) continue;
          for (DimId d : module_.types.shape(p.type)) {
            if (dims().mentions(d, var)) return true;
          }
        }
        return false;
      };
      std::span<const DimId> shape = module_.types.shape(info.returnType);
      for (size_t i = 0; i < shape.size(); ++i) {
        const DimStore::Node& n = dims().node(shape[i]);
        if (n.kind != DimKind::Var) continue;
        // Each variable once: at its first mention.
        bool first = std::none_of(shape.begin(), shape.begin() + static_cast<ptrdiff_t>(i),
                                  [&](DimId d) { return dims().mentions(d, n.var); });
        if (first && !bound(n.var)) {
          // At the dimension that names it (`[?, m]`), else the whole type.
          NodeId at = tree_.childB(node);
          if (tree_.kind(at) == NodeKind::TypeName && tree_.listA(at).isValid()) {
            for (NodeId arg : tree_.list(tree_.listA(at))) {
              if (tree_.kind(arg) != NodeKind::Shape) continue;
              auto dimsOf = tree_.list(tree_.listA(arg));
              if (i < dimsOf.size()) at = dimsOf[i];
            }
          }
          // `-> [?, HIDDEN]` with `[784, HIDEN]` among the parameters: a typo.
          std::vector<IdentifierId> vars;
          for (const ParamInfo& p : info.params) {
            if (module_.types.kind(p.type) == TypeKind::Scalar) {
              vars.push_back(p.name);  // an int hyperparameter names a size too
            } else if (module_.types.isTensor(p.type) && module_.types.node(p.type).rankKnown) {
              for (DimId d : module_.types.shape(p.type)) dims().collectVars(d, vars);
            }
          }
          std::vector<std::string_view> candidates;
          for (IdentifierId v : vars) candidates.push_back(spelling(v));
          std::string_view match = closestMatch(spelling(n.var), candidates);
          auto warning =
              diags_->report(Diag::UnboundSizeVariable, source(), rangeOf(at), spelling(n.var));
          if (!match.empty()) warning.note(Note::DidYouMean, source(), rangeOf(at), match);
        }
      }
    }
  }
  // What callers need to know of the defaults (callers in importing files
  // never see this file's tree).
  for (ParamInfo& p : info.params) {
    NodeId init = p.node.isValid() ? tree_.childB(p.node) : NodeId{};
    p.hasDefault = init.isValid();
    if (init.isValid() && p.cls == ParamClass::Hyper) {
      p.defaultValue = constantValue(init);
    }
  }
}

// A weight or sub-module is a state_dict key under its Python attribute name
// (base/PythonNames.h): say so where that is not the source name.
void Checker::warnIfRenamedInStateDict(const char* what, IdentifierId name, NodeId where) {
  std::string given(spelling(name));
  std::string python = pyMember(given);
  if (python == given) return;
  report(Diag::RenamedInStateDict, where, what, given, python,
         given.front() == '_' ? "names that begin with '_' are the generated code's"
                              : "Python or nn.Module already uses the name");
}

// A layer is the class of its Python name (base/PythonNames.h): TOOLCHAIN.md
// names the class as the layer, so say so where the two differ (`layer F`,
// whose name is the module's torch.nn.functional; `layer None`).
void Checker::warnIfRenamedClass(IdentifierId name, NodeId layer) {
  std::string given(spelling(name));
  std::string python = pyIdent(given);
  if (python == given) return;
  diags_->report(Diag::RenamedClass, source(), tokens().range(tree_.token(layer)), given, python,
                 given.front() == '_' ? "names that begin with '_' are the generated code's"
                                      : "Python or the generated module already uses the name");
}

std::optional<std::vector<DimId>> Checker::weightShapeFor(NodeId call) const {
  if (!call.isValid() || !weightDefault_.isValid() || !module_.types.isTensor(weightDefaultType_) ||
      !module_.types.node(weightDefaultType_).rankKnown) {
    return std::nullopt;
  }
  std::span<const DimId> shape = module_.types.shape(weightDefaultType_);
  return std::vector<DimId>(shape.begin(), shape.end());
}

DType Checker::createdFloatDType() const {
  if (!weightDefault_.isValid() || !module_.types.isTensor(weightDefaultType_) ||
      module_.types.isTernary(weightDefaultType_)) {
    return DType::Float32;
  }
  DType dtype = module_.types.node(weightDefaultType_).dtype;
  return dtype == DType::Float16 || dtype == DType::BFloat16 ? dtype : DType::Float32;
}

void Checker::noteCreationOf(DiagnosticBuilder& builder, NodeId node) const {
  if (!node.isValid() || tree_.kind(node) != NodeKind::Call || node.index >= module_.callOf.size()) {
    return;
  }
  uint32_t call = module_.callOf[node.index];
  if (call >= module_.calls.size() || module_.calls[call].kind != CallKind::Forward) return;
  const InstanceInfo& instance = module_.instances[module_.calls[call].callee];
  if (instance.site.isValid() && instance.name.isValid()) {
    builder.note(Note::DefinedHere, source(), rangeOf(instance.site), spelling(instance.name));
  }
}

bool Checker::assignedInFile(std::string_view name) const {
  if (!assignedNames_) {
    assignedNames_.emplace();
    for (uint32_t n = 0; n < tree_.size(); ++n) {
      NodeId node{n};
      if (tree_.kind(node) == NodeKind::Assign) {
        assignedNames_->push_back(tree_.text(tree_.childA(node)));
      }
    }
    std::sort(assignedNames_->begin(), assignedNames_->end());
  }
  return std::binary_search(assignedNames_->begin(), assignedNames_->end(), name);
}

void Checker::noteOperandCreations(DiagnosticBuilder& builder, NodeId node) const {
  if (tree_.kind(node) != NodeKind::Binary) return;
  for (NodeId side : {tree_.childA(node), tree_.childB(node)}) {
    while (side.isValid() && tree_.kind(side) == NodeKind::Paren) side = tree_.childA(side);
    noteCreationOf(builder, side);
  }
}

// Whether `node` calls a builtin that creates fresh values (`zeros()`,
// `randn()`, `kaiming_uniform()`, ...): an initializer whose dtype is the
// weight's to choose.
bool Checker::createsValues(NodeId node) const {
  if (tree_.kind(node) != NodeKind::Call || module_.callKind[node.index] != CallKind::Builtin ||
      module_.callOf[node.index] == UINT32_MAX) {  // a call with errors records no binding
    return false;
  }
  return tritonc::createsValues(
      static_cast<BuiltinFn>(module_.calls[module_.callOf[node.index]].callee));
}

// Whether `node` calls `zeros()` or `ones()`: values that are ternary as made.
bool Checker::makesTernaryValues(NodeId node) const {
  if (!createsValues(node)) return false;
  auto fn = static_cast<BuiltinFn>(module_.calls[module_.callOf[node.index]].callee);
  return fn == BuiltinFn::Zeros || fn == BuiltinFn::Ones;
}

// ---- bodies ---------------------------------------------------------------------

// Every identifier assigned anywhere in a body: a let that is never assigned
// keeps what is known of its value (constant, dimension).
void Checker::collectAssigned(NodeId node) {
  tree_.forEachAssignedName(node, [this](NodeId name) {
    ctx_.assigned.insert(tokens().identifier(tree_.token(name)).index);
  });
}

void Checker::checkInferredCalleesFirst(NodeId item) {
  // Depth first with an explicit stack (a chain of forward calls may be as
  // long as the file); called between bodies, so lookup() sees file scope.
  auto calleesToCheck = [&](NodeId root) {
    std::vector<int> callees;
    tree_.forEachNode(root, [&](NodeId node) {
      if (tree_.kind(node) != NodeKind::Name) {
        return;
      }
      std::optional<uint32_t> symbol = lookup(tokens().identifier(tree_.token(node)));
      if (!symbol) {
        return;
      }
      const Symbol& s = module_.symbols[*symbol];
      if ((s.kind != SymbolKind::Layer && s.kind != SymbolKind::Fn) ||
          s.ref < module_.firstLocal || module_.callables[s.ref].declaredReturn ||
          bodyState_[s.ref] != BodyState::Unchecked) {
        return;
      }
      callees.push_back(static_cast<int>(s.ref));
    });
    return callees;
  };
  struct Frame {
    int callable;  ///< -1 for `item` itself
    std::vector<int> callees;
    size_t next = 0;
  };
  std::vector<Frame> stack;
  stack.push_back(Frame{-1, calleesToCheck(item)});
  while (!stack.empty()) {
    Frame& frame = stack.back();
    if (frame.next < frame.callees.size()) {
      int callee = frame.callees[frame.next++];
      if (bodyState_[callee] == BodyState::Unchecked) {
        bodyState_[callee] = BodyState::InProgress;
        std::vector<int> callees = calleesToCheck(module_.callables[callee].node);
        stack.push_back(Frame{callee, std::move(callees)});
      }
      continue;
    }
    if (frame.callable >= 0) {
      checkCallableBody(frame.callable);
      bodyState_[frame.callable] = BodyState::Done;
    }
    stack.pop_back();
  }
}

void Checker::checkCallableBody(int index) {
  CallableInfo& info = module_.callables[index];
  resetContext();
  ctx_.callable = index;
  ctx_.isFn = info.isFn;
  pushScope();
  for (size_t i = 0; i < info.params.size(); ++i) {
    const ParamInfo& p = info.params[i];
    uint32_t symbol = declare(Symbol{SymbolKind::Param, p.name, p.node, p.type,
                                     static_cast<uint32_t>(i)},
                              p.node);
    info.paramSymbols.push_back(symbol);
    ExprInfo& value = symbolValue_[symbol];
    if (p.cls == ParamClass::Hyper) {
      value.hyperConst = true;
      if (module_.types.isScalar(p.type) && isIntegral(module_.types.node(p.type).dtype)) {
        value.dim = dims().var(p.name);
      }
    }
    if (p.cls == ParamClass::Weight) {
      ctx_.attributes.emplace(p.name.index, p.node);
    }
  }
  for (size_t i = 0; i < info.shapeVars.size(); ++i) {
    uint32_t symbol = declare(Symbol{SymbolKind::ShapeVar, info.shapeVars[i].name, NodeId{},
                                     int32_, static_cast<uint32_t>(i)},
                              NodeId{});
    info.shapeVarSymbols.push_back(symbol);
    symbolValue_[symbol].dim = dims().var(info.shapeVars[i].name);
  }
  // Defaults: initializers of weights, values of hyperparameters and inputs.
  struct Edge {
    size_t from, to;  ///< the default of `from` reads the hyperparameter `to`
    NodeId at;
  };
  std::vector<Edge> hyperDefaultEdges;
  for (size_t i = 0; i < info.params.size(); ++i) {
    const ParamInfo& p = info.params[i];
    NodeId init = p.node.isValid() ? tree_.childB(p.node) : NodeId{};
    if (!init.isValid()) {
      continue;
    }
    if (p.cls == ParamClass::Weight) {
      weightDefault_ = init;
      weightDefaultType_ = p.type;
    }
    if (p.cls == ParamClass::Input && !info.isFn && module_.types.isTensor(p.type)) {
      tensorInputDefault_ = p.name;
    }
    ExprInfo value = checkExpr(init);
    weightDefault_ = NodeId{};
    tensorInputDefault_ = IdentifierId{};
    // Inputs are bound per call, after the module's hyperparameters and
    // weights exist: an input's default may read those, not another input (a
    // fn's scalars are inputs: `fn f(a: int, b: int = a)`), nor may a weight's
    // initializer. Hyperparameter defaults may read each other in any order,
    // but not in a cycle (checked below); DefaultNotConstant covers the rest.
    std::unordered_set<uint32_t> reported;
    tree_.forEachNode(init, [&](NodeId n) {
      uint32_t symbol = tree_.kind(n) == NodeKind::Name ? module_.nodeSymbol[n.index] : kNoSymbol;
      if (symbol == kNoSymbol || module_.symbols[symbol].kind != SymbolKind::Param) {
        return;
      }
      uint32_t used = module_.symbols[symbol].ref;
      if (p.cls == ParamClass::Hyper) {
        if (info.params[used].cls == ParamClass::Hyper) {
          hyperDefaultEdges.push_back({i, used, n});
        }
        return;
      }
      if (info.params[used].cls == ParamClass::Input && reported.insert(symbol).second) {
        report(Diag::DefaultUsesParameter, n, spelling(p.name),
               spelling(module_.symbols[symbol].name), used == i ? "itself" : "an input");
      }
    });
    if (p.cls == ParamClass::Weight && createsValues(init) && module_.types.isTensor(value.type) &&
        module_.types.isTensor(p.type) && !module_.types.isTernary(p.type)) {
      // `h: Tensor<float16, [3]> = ones()`: a created initializer makes its
      // values in the weight's dtype (the module converts them).
      value.type = module_.types.withDType(value.type, module_.types.node(p.type).dtype);
      if (!elementsFit(value, module_.types.node(p.type).dtype)) continue;
    }
    if (p.cls == ParamClass::Weight && module_.types.isTernary(p.type) &&
        module_.types.isTensor(value.type) && !module_.types.isTernary(value.type) &&
        makesTernaryValues(init)) {
      // `w: TernaryTensor<trit, [4, 4]> = zeros()` (or `ones()`), initializers §4 lists for
      // weights: every element 0, or +1 at scale 1, is a ternary value already.
      value.type = module_.types.withDType(value.type, module_.types.node(p.type).dtype, true);
    }
    checkAssignable(value, p.type, init);
    if (p.cls == ParamClass::Hyper && !value.hyperConst && !module_.types.isLenient(value.type)) {
      report(Diag::DefaultNotConstant, init, spelling(p.name));
    }
    if (p.cls == ParamClass::Hyper && module_.types.isScalar(p.type) &&
        isFloating(module_.types.node(p.type).dtype)) {
      info.params[i].defaultFloat = value.number();
    }
    if (module_.types.isScalar(p.type) && module_.types.node(p.type).dtype == DType::Str &&
        value.strValue) {
      info.params[i].defaultStr = std::string(*value.strValue);
    }
    if (p.cls == ParamClass::Hyper && value.dim.isValid() && !dims().isUnknown(value.dim) &&
        !dims().constValue(value.dim)) {
      info.params[i].defaultDim = value.dim;
    }
  }
  // A hyperparameter default that reaches itself through others has no value.
  for (const Edge& edge : hyperDefaultEdges) {
    std::vector<size_t> stack{edge.to};
    std::unordered_set<size_t> seen;
    bool cycle = false;
    while (!stack.empty() && !cycle) {
      size_t at = stack.back();
      stack.pop_back();
      cycle = at == edge.from;
      if (!seen.insert(at).second) continue;
      for (const Edge& next : hyperDefaultEdges) {
        if (next.from == at) stack.push_back(next.to);
      }
    }
    if (cycle) {
      report(Diag::DefaultUsesParameter, edge.at, spelling(info.params[edge.from].name),
             spelling(info.params[edge.to].name),
             edge.from == edge.to ? "itself" : "whose default uses it in turn");
      break;  // one report per cycle is enough
    }
  }
  NodeId body = tree_.childC(info.node);
  collectAssigned(body);
  bool returns = checkBlock(body);
  checkDefiniteAssignment(body);
  checkPackedScaleNames(info);
  if (!returns && module_.types.kind(info.returnType) != TypeKind::Void &&
      !module_.types.isLenient(info.returnType)) {
    // Control falls off the end at the closing '}'.
    SourceRange end = tree_.kind(body) == NodeKind::Block
                          ? tokens().range(tree_.tokenC(body))
                          : tokens().range(tree_.token(info.node));
    auto builder = diags_->report(Diag::MissingReturn, source(), end, callableName(index));
    if (tree_.childB(info.node).isValid()) {
      builder.note(Note::ReturnTypeDeclared, source(), rangeOf(tree_.childB(info.node)));
    }
    // `relu(x)` as the body's last statement (a language where the last expression is the
    // result, or a forgotten `return`): its value is discarded.
    std::span<const NodeId> statements =
        tree_.kind(body) == NodeKind::Block ? tree_.list(tree_.listA(body)) : std::span<const NodeId>();
    if (!statements.empty() && tree_.kind(statements.back()) == NodeKind::ExprStmt) {
      NodeId last = tree_.childA(statements.back());
      std::string_view text = textOf(last);
      TypeId type = last.isValid() && last.index < module_.nodeType.size()
                        ? module_.nodeType[last.index]
                        : TypeId{};
      ExprInfo value;
      value.type = type;
      value.node = last;
      if (type.isValid() && module_.types.kind(type) != TypeKind::Void &&
          module_.types.kind(type) != TypeKind::Error &&
          checkAssignable(value, info.returnType, last, /*quiet=*/true) && text.size() <= 60 &&
          text.find('\n') == std::string_view::npos) {
        builder.note(Note::WriteInstead, source(), rangeOf(last), fmt::format("return {}", text));
      }
    }
  }
  popScope();
}

// Packing a ternary weight `w` adds the attribute (and state_dict key)
// `w_scale` to its module (TOOLCHAIN.md): a parameter or sub-module of that
// name would be overwritten or collide.
void Checker::checkPackedScaleNames(const CallableInfo& info) {
  if (info.isFn) return;
  // By attribute name (pyMember): a weight `training` is `training_`, whose
  // scale `training__scale` a weight of that spelling would take (audit 45F).
  std::unordered_map<std::string, NodeId> names;  // attribute -> where it is defined
  for (const ParamInfo& p : info.params) {  // inputs are forward's locals, not attributes
    if (p.node.isValid() && p.cls != ParamClass::Input) {
      names.emplace(pyMember(spelling(p.name)), p.node);
    }
  }
  for (const auto& [name, node] : ctx_.attributes) {
    names.emplace(pyMember(spelling(IdentifierId{name})), node);
  }
  for (const ParamInfo& p : info.params) {
    if (p.cls != ParamClass::Weight || !module_.types.isTernary(p.type)) continue;
    std::string scale = pyMember(spelling(p.name)) + "_scale";
    auto it = names.find(scale);
    if (it == names.end() || !it->second.isValid()) continue;
    report(Diag::PackedScaleNameTaken, it->second, scale, spelling(p.name));
  }
}

void Checker::checkMain(NodeId mainNode) {
  resetContext();
  ctx_.isMain = true;
  pushScope();
  collectAssigned(tree_.childC(mainNode));
  checkBlock(tree_.childC(mainNode));
  checkDefiniteAssignment(tree_.childC(mainNode));
  popScope();
}

void Checker::checkTopLevelLet(NodeId let) {
  resetContext();
  uint32_t symbol = module_.nodeSymbol[let.index];
  TypeId declared = tree_.childA(let).isValid() ? resolveType(tree_.childA(let), -1)
                                                : TypeId{};
  ExprInfo value;
  if (NodeId init = tree_.childB(let); init.isValid()) {
    // A call learns the name it is bound to (an instantiation's message uses it).
    value = tree_.kind(init) == NodeKind::Call
                ? requireValue(checkCall(init, tokens().identifier(tree_.token(let))), init)
                : checkExpr(init);
    if (declared.isValid()) {
      checkAssignable(value, declared, tree_.childB(let));
      value = literalToContext(value, declared);
    }
    // `let PROJ = randn([64, 64])`: drawn anew by every import.
    if (symbol != kNoSymbol && !module_.types.isLenient(value.type)) {
      bool warned = false;  // once per constant
      tree_.forEachNodeWhile(init, [&](NodeId node) {
        if (warned) return false;
        if (tree_.kind(node) != NodeKind::Call || node.index >= module_.callOf.size() ||
            module_.callOf[node.index] >= module_.calls.size()) {
          return true;
        }
        const CallInfo& call = module_.calls[module_.callOf[node.index]];
        auto fn = static_cast<BuiltinFn>(call.callee);
        if (call.kind != CallKind::Builtin ||
            (fn != BuiltinFn::Randn && fn != BuiltinFn::Rand && fn != BuiltinFn::KaimingUniform &&
             fn != BuiltinFn::TernaryWeights)) {
          return true;
        }
        report(Diag::RandomConstant, node, spelling(module_.symbols[symbol].name));
        warned = true;
        return false;
      });
    }
  } else {
    // A module-level constant is its value: without one there is nothing to emit.
    if (symbol != kNoSymbol) {
      report(Diag::ConstantWithoutValue, let, spelling(module_.symbols[symbol].name));
    }
    value = make(module_.types.error(), let);
    declared = TypeId{};
  }
  TypeId type = declared.isValid() ? declared : value.type;
  setType(let, type);
  if (symbol != kNoSymbol) {
    constantDefined_.insert(symbol);
    if (module_.types.isLenient(value.type)) constantFailed_.insert(symbol);
    module_.symbols[symbol].type = type;
    value.type = type;
    value.hyperConst = value.hyperConst || value.intValue.has_value() ||
                       value.floatValue.has_value();
    symbolValue_[symbol] = value;
    if (tree_.childB(let).isValid()) {
      module_.constants.push_back(ConstantInfo{symbol, let, value.intValue, value.floatValue});
    }
  }
}

uint32_t Checker::declareImportedConstant(const ImportContext::Import::Constant& constant,
                                          NodeId item, bool inScope) {
  Symbol symbol{SymbolKind::Constant, inScope ? constant.name : IdentifierId{}, item,
                constant.type, constant.global};
  uint32_t id = declare(symbol, NodeId{});
  module_.symbols[id].name = constant.name;
  ExprInfo& value = symbolValue_[id];
  value.intValue = constant.intValue;
  value.floatValue = constant.floatValue;
  if (constant.intValue) value.dim = dims().constant(*constant.intValue);
  value.hyperConst = constant.intValue.has_value() || constant.floatValue.has_value();
  constantDefined_.insert(id);
  return id;
}

bool Checker::checkBlock(NodeId block) {
  if (!block.isValid() || tree_.kind(block) != NodeKind::Block) {
    return false;
  }
  pushScope();
  bool returns = false;
  int guards = 0;
  for (NodeId statement : tree_.list(tree_.listA(block))) {
    returns = checkStatement(statement) || returns;
    // What follows a `return` anywhere before it may not run.
    if (tree_.kind(statement) == NodeKind::Return) ctx_.returnsSeen = true;
    // After a guard clause the rest of the block is in its other branch:
    // sub-modules created there are conditional (a layer may create itself
    // after `if depth == 0 { return x }`) and exclude those of the branch
    // that returned.
    if (std::optional<std::pair<uint32_t, uint8_t>> guard = std::exchange(ctx_.guard, {})) {
      ctx_.branches.push_back(*guard);
      ++ctx_.guardDepth;
      ++guards;
    }
  }
  ctx_.branches.resize(ctx_.branches.size() - static_cast<size_t>(guards));
  ctx_.guardDepth -= guards;
  popScope();
  return returns;
}

void Checker::checkCondition(NodeId cond, const ExprInfo& info, bool branch) {
  if (module_.types.isLenient(info.type)) {
    return;
  }
  if (!module_.types.isScalar(info.type) || module_.types.node(info.type).dtype != DType::Bool) {
    conditionsReported_.insert(cond.index);
    auto builder = diags_->report(Diag::ConditionNotBool, source(), rangeOf(cond), fmt(info.type));
    // `if mean(x) > 0.0`: a branch on tensor values would make forward
    // data-dependent (docs/language.md); a mask computes both sides.
    if (branch && module_.types.isTensor(info.type) &&
        module_.types.node(info.type).dtype == DType::Bool) {
      builder.note(Note::MaskInsteadOfBranch, source(), rangeOf(cond), textOf(cond));
    }
  }
}

// The 21st loop of a nest: CPython rejects the module at import ("too many
// statically nested blocks"). Reported once per nest, at the loop keyword.
void Checker::checkLoopNesting(NodeId loop) {
  if (ctx_.loopDepth != kMaxPythonLoops) return;
  // A `for` node's token is its variable, the keyword the one before it.
  TokenId token = tree_.token(loop);
  if (tree_.kind(loop) == NodeKind::For) token.index -= 1;
  SourceRange keyword = tokens().range(token);
  diags_->report(Diag::LoopsTooDeepForPython, source(), keyword, kMaxPythonLoops + 1,
                 kMaxPythonLoops);
}

bool Checker::checkStatement(NodeId statement) {
  switch (tree_.kind(statement)) {
    case NodeKind::Let: checkLet(statement); return false;
    case NodeKind::Assign: checkAssign(statement); return false;
    case NodeKind::ExprStmt: checkExprAnyResult(tree_.childA(statement)); return false;
    case NodeKind::Return: {
      NodeId value = tree_.childA(statement);
      if (ctx_.callable < 0) {
        // `main` may return early; statements exist nowhere else outside
        // layers and fns (the grammar has no top-level `return`).
        if (value.isValid()) {
          checkExpr(value);
        }
        return true;
      }
      CallableInfo& info = module_.callables[ctx_.callable];
      if (!value.isValid()) {
        NodeId declared = tree_.childB(info.node);
        if (declared.isValid() && module_.types.kind(info.returnType) != TypeKind::Void &&
            !module_.types.isLenient(info.returnType)) {
          auto builder = diags_->report(Diag::ReturnWithoutValue, source(), rangeOf(statement),
                                        callableName(ctx_.callable), fmt(info.returnType));
          TokenId next{tree_.token(statement).index + 1};
          if (next.index < tokens().size() && tokens().hasNewlineBefore(next) &&
              tokens().kind(next) != TokenKind::RBrace &&
              tokens().kind(next) != TokenKind::EndOfFile) {
            builder.note(Note::ReturnValueOnNextLine, source(), tokens().range(next));
          }
          builder.note(Note::ReturnTypeDeclared, source(), rangeOf(declared));
        }
        return true;
      }
      ExprInfo result = checkExpr(value);
      if (module_.types.kind(info.returnType) == TypeKind::Void) {
        // No declared type: the first return decides it.
        info.returnType = result.type;
        if (!tree_.childB(info.node).isValid()) firstReturn_[ctx_.callable] = value;
        return true;
      }
      // A known integer past the declared type (`return 10 ** 10` from an
      // `int` function) is that, not a mismatch of 'int32' with 'int32'.
      const TypeStore::Node& resultType = module_.types.node(result.type);
      const TypeStore::Node& returnType = module_.types.node(info.returnType);
      // So is a constant past int64 (`return 2 ** 64`), and a float one past
      // the declared float type (`return 1e39` from a `float32` one).
      bool scalars = resultType.kind == TypeKind::Scalar && returnType.kind == TypeKind::Scalar;
      bool integers = scalars && isIntegral(resultType.dtype) && isIntegral(returnType.dtype) &&
                      returnType.dtype != DType::Bool;
      std::string pastType;
      if (integers && result.intValue && !fitsInteger(returnType.dtype, *result.intValue)) {
        pastType = fmt::format("the value {}", *result.intValue);
      } else if (integers && result.pastInt64) {
        pastType = valueOfText(textOf(value));
      } else if (scalars && result.floatValue && isFloating(returnType.dtype) &&
                 !fitsFloat(returnType.dtype, *result.floatValue)) {
        pastType = fmt::format("the value {}", formatFloat(*result.floatValue));
      }
      if (!pastType.empty()) {
        auto builder = diags_->report(Diag::LiteralDoesNotFit, source(), rangeOf(value),
                                      pastType, dtypeName(returnType.dtype));
        if (tree_.childB(info.node).isValid()) {
          builder.note(Note::ReturnTypeDeclared, source(), rangeOf(tree_.childB(info.node)));
        }
        return true;
      }
      auto inferred = firstReturn_.find(ctx_.callable);
      if (inferred != firstReturn_.end() && !tree_.childB(info.node).isValid() &&
          !checkAssignable(result, info.returnType, value, /*quiet=*/true)) {
        // Without a declared type there is none to name: the returns differ.
        const TypeStore::Node& a = module_.types.node(result.type);
        const TypeStore::Node& b = module_.types.node(info.returnType);
        std::string both = fmt(result.type);
        if (a.kind == TypeKind::Scalar && b.kind == TypeKind::Scalar && a.dtype != DType::Str &&
            b.dtype != DType::Str) {
          both = std::string(dtypeName(promote(a.dtype, b.dtype)));
        }
        diags_->report(Diag::ReturnTypeDiffers, source(), rangeOf(value),
                       callableName(ctx_.callable), fmt(result.type), fmt(info.returnType))
            .note(Note::FirstReturnHere, source(), rangeOf(inferred->second), both);
        return true;
      }
      if (!checkAssignable(result, info.returnType, value, /*quiet=*/true)) {
        auto builder = diags_->report(Diag::ReturnTypeMismatch, source(), rangeOf(value),
                                      callableName(ctx_.callable), fmt(result.type),
                                      fmt(info.returnType));
        if (tree_.childB(info.node).isValid()) {
          builder.note(Note::ReturnTypeDeclared, source(), rangeOf(tree_.childB(info.node)));
        }
        // A numeric tensor where a ternary one is declared: as for a `let`
        // (`a + b` of two ternary values is an int8 one).
        const TypeStore::Node& got = module_.types.node(result.type);
        const TypeStore::Node& want = module_.types.node(info.returnType);
        // `fn loss(...) -> float32 { return cross_entropy(...) }`: a reduction is a 0-d
        // tensor (it carries gradients), which the declared type should say.
        if (got.kind == TypeKind::Tensor && got.rankKnown && module_.types.shape(result.type).empty() &&
            want.kind == TypeKind::Scalar && isNumeric(want.dtype) && tree_.childB(info.node).isValid() &&
            checkAssignable(result, module_.types.tensor(want.dtype, std::vector<DimId>{}), value,
                            /*quiet=*/true)) {
          builder.note(Note::WriteInstead, source(), rangeOf(tree_.childB(info.node)),
                       fmt::format("Tensor<{}, []>", dtypeName(want.dtype)));
        }
        if (got.kind == TypeKind::Tensor && want.kind == TypeKind::Tensor && want.ternary &&
            !got.ternary && got.dtype != DType::Bool && got.dtype != DType::Str) {
          std::string_view text = tokens().source().text().substr(
              rangeOf(value).begin, rangeOf(value).end - rangeOf(value).begin);
          builder.note(Note::SuggestQuantize, source(), rangeOf(value),
                       text.size() <= 60 ? std::string(text) : std::string("..."));
        }
        // `return global_avgpool(x)` of [?, 8, 1, 1] declared [?, 8]: flatten each item.
        if (got.kind == TypeKind::Tensor && want.kind == TypeKind::Tensor && got.rankKnown &&
            want.rankKnown && module_.types.shape(result.type).size() > 2 &&
            module_.types.shape(info.returnType).size() == 2 && got.dtype == want.dtype) {
          std::span<const DimId> g = module_.types.shape(result.type);
          std::span<const DimId> w = module_.types.shape(info.returnType);
          std::optional<int64_t> items = 1;
          for (size_t i = 1; i < g.size() && items; ++i) {
            std::optional<int64_t> v = dims().constValue(g[i]);
            items = v ? std::optional<int64_t>(*items * *v) : std::nullopt;
          }
          std::string_view text = textOf(value);
          if (items && dims().constValue(w[1]) == items &&
              dims().equal(g[0], w[0]) != Decision::No && text.size() <= 60 &&
              text.find('\n') == std::string_view::npos) {
            builder.note(Note::FlattenEachItem, text, *items);
          }
        }
        // A narrower dtype, as for a `let`: an explicit cast.
        bool sameKind = got.kind == want.kind &&
                        (got.kind == TypeKind::Scalar || got.kind == TypeKind::Tensor);
        // (A scaled ternary value is a float32: checkAssignableImpl's rule.)
        bool scaledTernary = result.scaled && want.dtype != DType::Float32;
        if (scaledTernary && !got.ternary && sameKind && !want.ternary) {
          builder.note(Note::ScaledTernaryValues, dtypeName(want.dtype),
                       fmt(module_.types.withDType(info.returnType, DType::Float32)));
        } else if (sameKind && !want.ternary && got.dtype != DType::Str &&
                   want.dtype != DType::Str && got.dtype != want.dtype &&
                   (promote(got.dtype, want.dtype) != want.dtype || scaledTernary)) {
          builder.note(Note::SuggestCast, dtypeName(want.dtype));
        }
        noteOtherAxis(builder, result, info.returnType);
        // Callers checked from here on trust neither the declared sizes
        // that did not fit nor the computed ones: the mistake is reported
        // once, here, not again where a caller uses the result.
        info.returnType = unprovenShape(info.returnType, result.type);
      }
      return true;
    }
    case NodeKind::If: {
      NodeId cond = tree_.childA(statement);
      ExprInfo c = checkExpr(cond);
      checkCondition(cond, c, /*branch=*/true);
      // (A condition that is already an error counts as hyperparameters:
      // the sub-modules under it are not errors too.)
      bool dynamic = !c.hyperConst && !module_.types.isLenient(c.type);
      if (dynamic && ctx_.dynamicIfDepth == 0) ctx_.dynamicIfCondition = cond;
      ctx_.dynamicIfDepth += dynamic ? 1 : 0;
      ++ctx_.ifDepth;
      // Only a test of hyperparameters decides which sub-modules exist (the
      // constructor creates those under any other `if` unconditionally).
      if (!dynamic) ctx_.branches.emplace_back(statement.index, 0);
      bool thenReturns = checkBlock(tree_.childB(statement));
      bool elseReturns = false;
      NodeId otherwise = tree_.childC(statement);
      if (!dynamic) ctx_.branches.back().second = 1;
      if (otherwise.isValid()) {
        elseReturns = tree_.kind(otherwise) == NodeKind::If ? checkStatement(otherwise)
                                                            : checkBlock(otherwise);
      }
      if (!dynamic) ctx_.branches.pop_back();
      ctx_.dynamicIfDepth -= dynamic ? 1 : 0;
      --ctx_.ifDepth;
      ctx_.guard.reset();  // an `else if` is not a guard of the enclosing block
      if (!dynamic && thenReturns != elseReturns) {
        ctx_.guard.emplace(statement.index, thenReturns ? 1 : 0);
      }
      return thenReturns && elseReturns;
    }
    case NodeKind::For: {
      ExprInfo iterated = checkExpr(tree_.childA(statement));
      TypeId varType = int32_;
      const TypeStore::Node& t = module_.types.node(iterated.type);
      if (t.kind != TypeKind::Range && !module_.types.isLenient(iterated.type)) {
        report(Diag::NotIterable, tree_.childA(statement), fmt(iterated.type));
      } else if (module_.types.kind(iterated.type) == TypeKind::Error) {
        // Over a list of sub-modules (reported), say: the variable is no int
        // (`fc(h)` in the body is not a second error).
        varType = module_.types.error();
      }
      pushScope();
      IdentifierId var = tokens().identifier(tree_.token(statement));
      declare(Symbol{SymbolKind::LoopVar, var, statement, varType, 0}, statement);
      checkLoopNesting(statement);
      checkLoopBody(tree_.childB(statement));
      popScope();
      return false;
    }
    case NodeKind::While: {
      checkLoopNesting(statement);
      checkLoopBody(tree_.childB(statement), /*condition=*/tree_.childA(statement));
      return false;
    }
    case NodeKind::Break:
    case NodeKind::Continue:
      if (ctx_.loopDepth == 0) {
        report(Diag::LoopControlOutsideLoop, statement,
               tree_.kind(statement) == NodeKind::Break ? "break" : "continue");
      }
      return false;
    default: return false;
  }
}

// A loop body runs with the sizes its variables have on entry and, from the
// second iteration on, with those the body gave them. When it resizes a
// variable declared before the loop (`f = concat([f, g], dim=1)`), checking
// it once with the entry sizes would take them as proven for every
// iteration: a declared type or a size the body compares could hold on the
// first iteration only, and -O0's run-time checks would reject the second.
// So the body is checked with its reports held back; if it resized such a
// variable (which widens the sizes that changed to `?`), what that check
// recorded is rolled back and the body is checked again from the widened
// sizes, until nothing widens more. The records are the last check's; the
// reports are the first check's (the first iteration runs with the entry
// sizes, so what is wrong there is wrong) and any the later ones add.
void Checker::checkLoopBody(NodeId body, NodeId condition) {
  // What checking a body appends to or changes outside its own nodes
  // (whose types, symbols and calls a later check overwrites in place).
  struct Marks {
    size_t symbols, checks, calls, instances, applications;
    std::unordered_map<uint32_t, NodeId> attributes;
    decltype(ctx_.attributeBranches) attributeBranches;
    std::set<std::pair<uint32_t, uint32_t>> warnedSizePairs;
    TypeId returnType;  ///< a return type the first `return` decides
  };
  Marks marks{module_.symbols.size(),
              module_.runtimeChecks.size(),
              module_.calls.size(),
              module_.instances.size(),
              applications_.size(),
              ctx_.attributes,
              ctx_.attributeBranches,
              warnedSizePairs_,
              ctx_.callable >= 0 ? module_.callables[ctx_.callable].returnType : TypeId{}};
  // Loops nested deeper than this are checked once (each level may check
  // its body several times); a resizing body then drops its run-time checks.
  constexpr int kRecheckedLoopDepth = 3;
  constexpr int kMaxChecks = 4;
  bool resized = false;
  std::vector<Diagnostic> first;
  std::vector<Diagnostic> last;
  for (int round = 0; round < kMaxChecks; ++round) {
    if (round > 0) {
      module_.symbols.resize(marks.symbols);
      symbolValue_.resize(marks.symbols);
      module_.runtimeChecks.resize(marks.checks);
      module_.calls.resize(marks.calls);
      module_.instances.resize(marks.instances);
      applications_.resize(marks.applications);
      ctx_.attributes = marks.attributes;
      ctx_.attributeBranches = marks.attributeBranches;
      warnedSizePairs_ = marks.warnedSizePairs;
      if (ctx_.callable >= 0) module_.callables[ctx_.callable].returnType = marks.returnType;
    }
    CollectingDiagnosticConsumer held;
    DiagnosticEngine holding = diags_->holding(held);
    DiagnosticEngine* reports = diags_;
    diags_ = &holding;
    // A `while` condition runs before every iteration: checked with each
    // check's sizes, as the body is.
    if (condition.isValid()) checkCondition(condition, checkExpr(condition), /*branch=*/false);
    loops_.push_back(LoopMark{static_cast<uint32_t>(marks.symbols), false});
    ++ctx_.loopDepth;
    checkBlock(body);
    --ctx_.loopDepth;
    resized = loops_.back().resizesOuter;
    loops_.pop_back();
    diags_ = reports;
    diags_->settleHeld(holding);
    (round == 0 ? first : last) = std::move(held.diagnostics);
    if (!resized || round + 1 == kMaxChecks || ctx_.loopDepth >= kRecheckedLoopDepth) break;
  }
  auto same = [](const Diagnostic& a, const Diagnostic& b) {
    return a.kind == b.kind && a.range.begin == b.range.begin && a.range.end == b.range.end &&
           a.message == b.message;
  };
  for (Diagnostic& d : last) {
    if (std::none_of(first.begin(), first.end(), [&](const Diagnostic& f) { return same(f, d); })) {
      first.push_back(std::move(d));
    }
  }
  for (Diagnostic& d : first) diags_->replay(std::move(d));
  // Still widening after the last check (or not checked again, nested too
  // deep): its run-time checks compared with sizes a later iteration may not
  // have, and could reject a valid program; torch still checks each op.
  if (resized) module_.runtimeChecks.resize(marks.checks);
}

void Checker::warnFlooredDivision(const ExprInfo& value) {
  NodeId node = value.node;
  while (node.isValid() && tree_.kind(node) == NodeKind::Paren) node = tree_.childA(node);
  if (!node.isValid() || tree_.kind(node) != NodeKind::Binary ||
      tokens().kind(tree_.token(node)) != TokenKind::Slash ||
      !module_.types.isScalar(value.type) || !isIntegral(module_.types.node(value.type).dtype)) {
    return;
  }
  std::optional<int64_t> x = constantValue(tree_.childA(node));
  std::optional<int64_t> y = constantValue(tree_.childB(node));
  // Sizes and hyperparameters (`1 / head_dim`, an attention scale): unknown values, but a
  // float taking their floored quotient is almost never meant (0 for `1 / hd`).
  if ((y && (*y == 0 || *y == 1 || *y == -1)) || (x && y && *x % *y == 0)) return;
  bool known = x && y && value.intValue;
  NodeId left = tree_.childA(node);
  std::string fix = tree_.kind(left) == NodeKind::IntLit
                        ? fmt::format("{}.0{}", textOf(left),
                                      textOf(node).substr(textOf(left).size()))
                        : fmt::format("float({}){}", textOf(left),
                                      textOf(node).substr(textOf(left).size()));
  diags_->report(Diag::FlooredDivision, source(), rangeOf(node), textOf(node),
                 known ? std::to_string(*value.intValue) : std::string("a whole number"),
                 known ? formatFloat(static_cast<double>(*x) / static_cast<double>(*y))
                       : std::string("the quotient"))
      .note(Note::WriteInstead, fix);
}

std::vector<NodeId> Checker::sizeNamesIn(NodeId type) const {
  std::vector<NodeId> names;
  auto walk = [&](auto& self, NodeId n) -> void {
    if (!n.isValid()) return;
    switch (tree_.kind(n)) {
      case NodeKind::TypeName:
      case NodeKind::Shape:
        for (NodeId child : tree_.list(tree_.listA(n))) self(self, child);
        break;
      case NodeKind::Binary:
        self(self, tree_.childA(n));
        self(self, tree_.childB(n));
        break;
      case NodeKind::Paren: self(self, tree_.childA(n)); break;
      case NodeKind::Name: names.push_back(n); break;
      default: break;
    }
  };
  walk(walk, type);
  return names;
}

void Checker::warnImplicitSizeLikeDeclared(const CallableInfo& info, IdentifierId var) {
  // `w: TernaryTensor<trit, [d_out, d_inn]>` beside `d_in: int`: a typo makes a new
  // required hyperparameter, and `Dense()` fails with a TypeError when it is created.
  std::vector<std::string_view> names;
  std::vector<IdentifierId> sizes;
  for (const ParamInfo& p : info.params) {
    names.push_back(spelling(p.name));
    if (p.cls == ParamClass::Input && module_.types.kind(p.type) == TypeKind::Tensor &&
        module_.types.node(p.type).rankKnown) {
      for (DimId d : module_.types.shape(p.type)) dims().collectVars(d, sizes);
    }
  }
  for (IdentifierId size : sizes) names.push_back(spelling(size));
  // One letter off only (`d_inn`, `n_in` for `n_inp`): `out_features` beside `in_features`
  // is the usual implicit output size, not a typo.
  std::string_view word = spelling(var), match;
  for (std::string_view name : names) {
    if (word.size() >= 3 && name != word && editDistance(word, name, 1) <= 1) {
      match = name;
      break;
    }
  }
  if (match.empty()) return;
  for (const ParamInfo& p : info.params) {
    if (p.cls != ParamClass::Weight || !p.node.isValid()) continue;
    for (NodeId n : sizeNamesIn(tree_.childA(p.node))) {
      if (tokens().identifier(tree_.token(n)) != var) continue;
      diags_->report(Diag::ImplicitSizeLikeDeclared, source(), rangeOf(n), spelling(var),
                     spelling(p.name), spelling(info.name))
          .note(Note::DidYouMean, source(), rangeOf(n), match);
      return;
    }
  }
}

void Checker::warnUndeclaredSizes(NodeId type) {
  std::vector<NodeId> names = sizeNamesIn(type);
  if (names.empty()) return;
  // The sizes the header declares: its parameters and the size variables of
  // their types (in expressions too: `[?, 2 * n]`; `shapeVars` holds only
  // whole dimensions) and of the declared return type.
  std::vector<IdentifierId> declared;
  auto sizesOf = [&](TypeId t) {
    if (!t.isValid() || module_.types.kind(t) != TypeKind::Tensor ||
        !module_.types.node(t).rankKnown) {
      return;
    }
    for (DimId d : module_.types.shape(t)) module_.dims.collectVars(d, declared);
  };
  int callable = ctx_.callable;
  if (callable >= static_cast<int>(module_.firstLocal)) {
    const CallableInfo& info = module_.callables[static_cast<size_t>(callable)];
    for (const ParamInfo& p : info.params) {
      declared.push_back(p.name);
      sizesOf(p.type);
    }
    if (info.declaredReturn) sizesOf(info.returnType);
  }
  for (NodeId n : names) {
    IdentifierId name = tokens().identifier(tree_.token(n));
    if (tokens().spelling(tree_.token(n)) == "None" ||
        std::find(declared.begin(), declared.end(), name) != declared.end() || lookup(name) ||
        !undeclaredSizes_.emplace(callable, name.index).second) {
      continue;
    }
    std::string where = callable >= static_cast<int>(module_.firstLocal)
                            ? fmt::format("'{}'", callableName(callable))
                            : std::string("'main'");
    auto builder =
        diags_->report(Diag::UndeclaredSize, source(), rangeOf(n), spelling(name), where);
    if (callable >= static_cast<int>(module_.firstLocal)) {
      builder.note(Note::DeclareSize, spelling(name));  // (`main` has no header)
    }
  }
}

void Checker::checkLet(NodeId let) {
  IdentifierId name = tokens().identifier(tree_.token(let));
  TypeId declared = tree_.childA(let).isValid() ? resolveType(tree_.childA(let), ctx_.callable)
                                                : TypeId{};
  if (declared.isValid() && !module_.types.isLenient(declared)) {
    warnUndeclaredSizes(tree_.childA(let));
  }
  ExprInfo value;
  NodeId init = tree_.childB(let);
  if (init.isValid()) {
    value = tree_.kind(init) == NodeKind::Call ? requireValue(checkCall(init, name), init)
                                               : checkExpr(init);
    // `let t: float = 1 / 2` is 0.0.
    if (declared.isValid() && module_.types.isScalar(declared) &&
        isFloating(module_.types.node(declared).dtype)) {
      warnFlooredDivision(value);
    }
    if (declared.isValid()) {
      // A literal takes its context's type. One that did not fit was
      // reported here: the variable holds no known value, so its uses are
      // not reported again (`return t` after `let t: trit = 2`).
      if (checkAssignable(value, declared, init)) {
        value = literalToContext(value, declared);
      } else {
        // Sizes of a tensor that did not fit are trusted neither as declared
        // nor as computed: its uses are not reported again (`let h: [?, 128]
        // = f(x)` of [?, 256], then `g(h)` taking [?, 256]).
        declared = unprovenShape(declared, value.type);
        value = make(declared, let);
      }
    }
  } else {
    value = make(declared.isValid() ? declared : module_.types.unknown(), let);
  }
  TypeId type = declared.isValid() ? declared : value.type;
  // A literal's type is fixed when a variable holds it.
  if (!declared.isValid() && value.literal && module_.types.isScalar(type)) {
    value.literal = false;
  }
  setType(let, type);
  uint32_t symbol = declare(Symbol{SymbolKind::Local, name, let, type, 0}, let);
  value.type = type;
  value.node = let;
  if (ctx_.assigned.count(name.index) != 0) {
    ExprInfo plain = make(type, let);
    symbolValue_[symbol] = plain;
  } else {
    symbolValue_[symbol] = value;
  }
}

TypeId Checker::unprovenShape(TypeId declared, TypeId value) {
  TypeStore& ts = module_.types;
  if (!ts.isTensor(declared) || !ts.isTensor(value)) return declared;
  const TypeStore::Node& d = ts.node(declared);
  const TypeStore::Node& v = ts.node(value);
  if (!d.rankKnown) return declared;
  if (!v.rankKnown || ts.shape(declared).size() != ts.shape(value).size()) {
    return ts.tensorAnyRank(d.dtype, d.ternary);
  }
  std::span<const DimId> declaredShape = ts.shape(declared);
  std::vector<DimId> shape(declaredShape.begin(), declaredShape.end());
  std::span<const DimId> computed = ts.shape(value);
  for (size_t i = 0; i < shape.size(); ++i) {
    if (dims().equal(shape[i], computed[i]) != Decision::Yes) shape[i] = dims().unknown();
  }
  return ts.tensor(d.dtype, shape, d.ternary);
}

void Checker::checkAssign(NodeId assign) {
  NodeId target = tree_.childA(assign);
  NodeId valueNode = tree_.childB(assign);
  TokenKind op = tokens().kind(tree_.token(assign));
  // What kind of place is assigned?
  NodeId base = target;
  while (tree_.kind(base) == NodeKind::Index || tree_.kind(base) == NodeKind::Member) {
    base = tree_.childA(base);
  }
  if (tree_.kind(base) == NodeKind::Name) {
    IdentifierId name = tokens().identifier(tree_.token(base));
    if (std::optional<uint32_t> symbol = lookup(name)) {
      // A copy: checking a value below may add symbols (and move the vector).
      const Symbol s = module_.symbols[*symbol];
      const char* what = nullptr;
      switch (s.kind) {
        case SymbolKind::Layer: what = "the layer"; break;
        case SymbolKind::Fn: what = "the function"; break;
        case SymbolKind::Builtin:
        case SymbolKind::BuiltinLayer:
        case SymbolKind::TypeName: what = "the builtin"; break;
        case SymbolKind::Constant:
          if (ctx_.callable >= 0 || ctx_.isMain) {
            what = "the module-level constant";
          }
          break;
        case SymbolKind::Local: {
          // `fc = Linear(4, 4)` after `let fc = Linear(4, 4)`: a sub-module
          // is created once, by its `let` (a constructor's attribute).
          TypeKind k = module_.types.kind(s.type);
          if ((k == TypeKind::Instance || k == TypeKind::BuiltinInstance) &&
              subModuleAssigned_.count(*symbol) != 0 && target == base &&
              op == TokenKind::Equal && tree_.kind(valueNode) == NodeKind::Call) {
            // `let out` then `out = A(...)` in one branch and `out = B(...)`
            // in the other: SubModuleAssigned was reported at the first, and
            // this one is the same mistake (the fix writes a `let` here too).
            ExprInfo value = requireValue(checkCall(valueNode, name), valueNode);
            TypeKind v = module_.types.kind(value.type);
            if (v == TypeKind::Instance || v == TypeKind::BuiltinInstance ||
                v == TypeKind::Error) {
              module_.nodeSymbol[target.index] = *symbol;
              setType(target, s.type);
              return;
            }
          }
          if (k == TypeKind::Instance || k == TypeKind::BuiltinInstance) {
            auto builder = diags_->report(Diag::CannotAssign, source(), rangeOf(target),
                                          "the sub-module", spelling(name));
            if (s.decl.isValid()) {
              builder.note(Note::DefinedHere, source(), rangeOf(s.decl), spelling(name));
            }
            NodeId value = valueNode;
            while (value.isValid() && tree_.kind(value) == NodeKind::Paren) {
              value = tree_.childA(value);
            }
            if (value.isValid() && tree_.kind(value) == NodeKind::Name) {
              builder.note(Note::CallTheChosenSubModule, spelling(name));  // `f = b`: an alias
            } else {
              builder.note(Note::SubModuleCreatedOnce);
            }
            return;
          }
          break;
        }
        case SymbolKind::Param:
          if (ctx_.callable >= 0) {
            ParamClass cls = module_.callables[ctx_.callable].params[s.ref].cls;
            if (cls == ParamClass::Hyper) {
              what = "the hyperparameter";
            } else if (cls == ParamClass::Weight) {
              what = "the weight";
            }
          }
          break;
        default: break;
      }
      // `mean = sum(x, dim=0)` without 'let': a `let` may take a builtin
      // function's name (the local hides it), so the note writes it, and the
      // name is that local from here on, its uses not errors too.
      if (what != nullptr && s.kind == SymbolKind::Builtin && target == base &&
          op == TokenKind::Equal && (ctx_.callable >= 0 || ctx_.isMain)) {
        auto builder = diags_->report(Diag::CannotAssign, source(), rangeOf(target), what,
                                      spelling(name));
        builder.note(Note::DeclareWithLet, source(), rangeOf(target), spelling(name));
        ExprInfo value = checkExpr(valueNode);
        declare(Symbol{SymbolKind::Local, name, assign, value.type, 0}, target);
        return;
      }
      if (what != nullptr) {
        report(Diag::CannotAssign, target, what, spelling(name));
        checkExpr(valueNode);
        return;
      }
    }
  }
  // `hidden = relu(fc1(x))` without 'let': Python declares by assigning.
  // The name is declared from here on, so its uses are not errors too.
  if (tree_.kind(target) == NodeKind::Name && op == TokenKind::Equal &&
      !lookup(tokens().identifier(tree_.token(target)))) {
    IdentifierId name = tokens().identifier(tree_.token(target));
    std::string text(spelling(name));
    if (text != "self" && text != "None" && !pythonConstantFix(text)) {
      auto builder = diags_->report(Diag::UndefinedName, source(), rangeOf(target), text);
      // `let y` in one branch, `y = ...` in the other: the `let` is the mistake.
      if (int64_t i = endedDeclaration(name); i >= 0) {
        const Symbol& s = module_.symbols[static_cast<size_t>(i)];
        builder.note(Note::DeclaredInEndedBlock, source(), tokens().range(tree_.token(s.decl)),
                     text);
      } else {
        builder.note(Note::DeclareWithLet, source(), rangeOf(target), text);
      }
      ctx_.undeclaredReported.insert(name.index);
      // `fc = Linear(4, 4)`: the sub-module is named by the assignment, as
      // by the `let` the note writes (not a second error, unnamed).
      ExprInfo value = tree_.kind(valueNode) == NodeKind::Call
                           ? requireValue(checkCall(valueNode, name), valueNode)
                           : checkExpr(valueNode);
      declare(Symbol{SymbolKind::Local, name, assign, value.type, 0}, target);
      return;
    }
  }
  // `self.fc = TernaryLinear(784, 10)`, PyTorch's __init__: one error that
  // writes the `let`; the name is declared from here on (as that `let`), so
  // the instance is named and `self.fc(x)` later is "write 'fc'".
  if (tree_.kind(target) == NodeKind::Member && op == TokenKind::Equal &&
      tree_.kind(tree_.childA(target)) == NodeKind::Name &&
      tokens().spelling(tree_.token(tree_.childA(target))) == "self" &&
      !lookup(tokens().identifier(tree_.token(tree_.childA(target))))) {
    IdentifierId name = tokens().identifier(tree_.token(target));
    std::string_view value = textOf(valueNode);
    auto builder = diags_->report(Diag::SelfReference, source(), rangeOf(tree_.childA(target)));
    if (value.size() <= 60 && value.find('\n') == std::string_view::npos) {
      builder.note(Note::WriteInstead, source(), rangeOf(assign),
                   fmt::format("let {} = {}", spelling(name), value));
    }
    ExprInfo checked = tree_.kind(valueNode) == NodeKind::Call
                           ? requireValue(checkCall(valueNode, name), valueNode)
                           : checkExpr(valueNode);
    if (!lookup(name)) declare(Symbol{SymbolKind::Local, name, assign, checked.type, 0}, target);
    return;
  }
  // `m.w = v`, and `y.T[0] = v` or `y.shape[0] = n` (a part of a member:
  // value semantics would write a copy of `y.T` that nothing reads).
  for (NodeId part = target; tree_.kind(part) == NodeKind::Index ||
                             tree_.kind(part) == NodeKind::Member;
       part = tree_.childA(part)) {
    if (tree_.kind(part) == NodeKind::Member) {
      report(Diag::CannotAssign, part, "the member",
             std::string(tokens().spelling(tree_.token(part))));
      checkExpr(valueNode);
      return;
    }
  }
  // `let x` (no type, no value): the first assignment gives the variable its
  // type, as if it had been its initializer (`let x` then `x = n` is `let x = n`).
  if (tree_.kind(target) == NodeKind::Name && op == TokenKind::Equal) {
    IdentifierId name = tokens().identifier(tree_.token(target));
    std::optional<uint32_t> symbol = lookup(name);
    if (symbol && module_.symbols[*symbol].kind == SymbolKind::Local &&
        module_.types.kind(module_.symbols[*symbol].type) == TypeKind::Unknown) {
      NodeId decl = module_.symbols[*symbol].decl;
      if (tree_.kind(decl) == NodeKind::Let && !tree_.childA(decl).isValid() &&
          !tree_.childB(decl).isValid()) {
        checkExpr(target);  // records the use
        // A creation is named by the variable (its attribute name), so it is
        // not also InstantiationNotNamed.
        bool call = tree_.kind(valueNode) == NodeKind::Call;
        ExprInfo value = call ? requireValue(checkCall(valueNode, name), valueNode)
                              : checkExpr(valueNode);
        TypeKind v = module_.types.kind(value.type);
        if (call && (v == TypeKind::Instance || v == TypeKind::BuiltinInstance)) {
          // `let out` then `out = Linear(...)` (in an `if`'s branches): a
          // sub-module cannot be declared before it is created; its `let`
          // creates it. One error; the variable holds the sub-module from
          // here on, so its calls are checked and not errors too. Where no
          // sub-module may be created (a fn, a loop, top level), the
          // creation's own error says where it goes: not this one too.
          subModuleAssigned_.insert(*symbol);
          if (!ctx_.isFn && ctx_.loopDepth == 0 && (ctx_.callable >= 0 || ctx_.isMain)) {
            std::string text(spelling(name));
            std::string_view callee = textOf(tree_.childA(valueNode));
            std::string_view where =
                declaredInThisScope(name)
                    ? "after it"
                    : "inside this block, where it is visible (when each branch creates its "
                      "own, call it in each branch)";
            diags_->report(Diag::SubModuleAssigned, source(), rangeOf(target), text,
                           callee.size() > 40 ? std::string_view("Layer") : callee, where)
                .note(Note::RemoveValuelessLet, source(), tokens().range(tree_.token(decl)),
                      text);
          }
        }
        if (v != TypeKind::Error) {
          module_.symbols[*symbol].type = value.type;
          setType(decl, value.type);
          symbolValue_[*symbol] = make(value.type, decl);
        }
        return;
      }
    }
  }
  ExprInfo targetInfo = checkExpr(target);
  ExprInfo value = checkExpr(valueNode);
  // A value that failed (reported) leaves an untyped local without a known type
  // from here on, as clang's invalid declarations: what reads it later is not a
  // second error about its old type. (A local declared with a type keeps it:
  // later values are still checked against it.)
  if (tree_.kind(target) == NodeKind::Name && module_.types.kind(value.type) == TypeKind::Error) {
    if (std::optional<uint32_t> symbol = untypedLocal(target)) {
      module_.symbols[*symbol].type = value.type;
      symbolValue_[*symbol] = make(value.type, module_.symbols[*symbol].decl);
    }
    return;
  }
  if (op != TokenKind::Equal) {
    std::string_view spellingText = tokens().spelling(tree_.token(assign));
    std::string_view binaryOp = spellingText.substr(0, 1);
    if (op == TokenKind::AtEqual) {
      value = matmul(targetInfo, value, assign, "@=");
    } else {
      TokenKind kind = op == TokenKind::PlusEqual    ? TokenKind::Plus
                       : op == TokenKind::MinusEqual ? TokenKind::Minus
                       : op == TokenKind::StarEqual  ? TokenKind::Star
                                                     : TokenKind::Slash;
      value = checkArithmetic(binaryOp, kind, targetInfo, value, assign);
    }
    value.node = valueNode;
  }
  // `x[i] = 1.0` and `x[i, j] += v` write scalars into tensor elements.
  if (tree_.kind(target) == NodeKind::Index && module_.types.isTensor(targetInfo.type) &&
      module_.types.isScalar(value.type) && isNumeric(module_.types.node(value.type).dtype)) {
    // An element of a ternary tensor stays in {-1, 0, 1}: a trit, or a
    // constant with one of those values.
    const TypeStore::Node& t = module_.types.node(targetInfo.type);
    if (t.ternary || t.dtype == DType::Trit) {
      std::optional<double> v = value.number();
      bool trit = module_.types.node(value.type).dtype == DType::Trit ||
                  (v && (*v == -1.0 || *v == 0.0 || *v == 1.0));
      if (!trit) {
        report(Diag::NotTernary, valueNode, fmt(value.type), fmt(targetInfo.type));
      }
    } else if (op == TokenKind::Equal) {
      // An element takes the tensor's dtype: implicit widening only (a float
      // into an int tensor narrows; 1000 does not fit an int8 element).
      checkAssignable(value, module_.types.scalar(t.dtype), valueNode);
    }
    return;
  }
  // Reassigning a whole variable may change a size the checker cannot
  // decide (`shortcut = down(x)` under `if in_ch != out_ch`): the variable
  // takes the new value; only a decided mismatch is an error, never a
  // run-time check that would reject a valid program.
  bool wholeVariable = tree_.kind(target) == NodeKind::Name;
  // A `let` without a declared type takes a tensor of other sizes (same
  // dtype; same rank under a loop or `if`), as Python's variables do:
  // `outs = concat([outs, y], dim=1)` in a loop that collects outputs.
  if (wholeVariable && resizable(target, value.type)) {
    retypeAfterReassignment(target, value.type);
    return;
  }
  if (wholeVariable && rankChangeInBranch(target, value, valueNode)) return;
  if (wholeVariable && resizedInput(target, value, valueNode)) return;
  if (wholeVariable && floatIntoTernaryLocal(target, value, valueNode)) return;
  bool saved = noRuntimeChecks_;
  noRuntimeChecks_ = noRuntimeChecks_ || wholeVariable;
  bool assignable = checkAssignable(value, targetInfo.type, valueNode);
  noRuntimeChecks_ = saved;
  if (assignable && wholeVariable) retypeAfterReassignment(target, value.type);
}

// The symbol of the local `target` names when it was declared without a
// type (`let h = x`: a reassignment may change its sizes).
std::optional<uint32_t> Checker::untypedLocal(NodeId target) const {
  uint32_t symbol = module_.nodeSymbol[target.index];
  if (symbol == kNoSymbol || module_.symbols[symbol].kind != SymbolKind::Local) {
    return std::nullopt;
  }
  // Declared by a `let` without a type, or by an assignment that forgot the
  // `let` (reported; taken as `let h = ...`).
  NodeId decl = module_.symbols[symbol].decl;
  if (tree_.kind(decl) != NodeKind::Assign && tree_.childA(decl).isValid()) return std::nullopt;
  return symbol;
}

// Whether `target` names a local without a declared type holding a tensor of
// the same dtype and ternary-ness as `assigned`, only sizes differing, or the
// rank too in straight-line code (`y = reshape(y, [b, t, h, d])`).
bool Checker::resizable(NodeId target, TypeId assigned) const {
  std::optional<uint32_t> symbol = untypedLocal(target);
  if (!symbol) return false;
  const TypeStore& ts = module_.types;
  TypeId held = module_.symbols[*symbol].type;
  if (held == assigned || ts.kind(held) != TypeKind::Tensor ||
      ts.kind(assigned) != TypeKind::Tensor) {
    return false;
  }
  const TypeStore::Node& h = ts.node(held);
  const TypeStore::Node& a = ts.node(assigned);
  bool straightLine = ctx_.loopDepth == 0 && ctx_.ifDepth == 0;
  return h.rankKnown && a.rankKnown && h.dtype == a.dtype && h.ternary == a.ternary &&
         (ts.shape(held).size() == ts.shape(assigned).size() || straightLine);
}

// `let h = ste_quantize(x)` then `h = relu(h) * 2.0` (audit 59: QAT code): the local is
// ternary from its `let`, and "quantize it" is rarely what is meant. The note shows the
// `let` declared with the float type, which takes both values.
bool Checker::floatIntoTernaryLocal(NodeId target, const ExprInfo& value, NodeId valueNode) {
  std::optional<uint32_t> symbol = untypedLocal(target);
  if (!symbol) return false;
  const TypeStore& ts = module_.types;
  TypeId held = module_.symbols[*symbol].type;
  if (!ts.isTensor(held) || !ts.node(held).ternary || !ts.isTensor(value.type) ||
      ts.node(value.type).ternary || !isFloating(ts.node(value.type).dtype) ||
      value.tritValued) {
    return false;
  }
  NodeId decl = module_.symbols[*symbol].decl;
  if (!decl.isValid() || tree_.kind(decl) != NodeKind::Let || !tree_.childB(decl).isValid()) {
    return false;
  }
  std::string name(spelling(module_.symbols[*symbol].name));
  // The float type: the held shape, the value's dtype.
  TypeId floatType = module_.types.withDType(held, ts.node(value.type).dtype);
  std::string_view init = textOf(tree_.childB(decl));
  std::string declared =
      init.size() <= 50 && init.find('\n') == std::string_view::npos
          ? fmt::format("let {}: {} = {}", name, fmt(floatType), init)
          : fmt::format("let {}: {} = ...", name, fmt(floatType));
  diags_->report(Diag::NotTernary, source(), rangeOf(valueNode), fmt(value.type), fmt(held))
      .note(Note::TernaryFromLet, source(), tokens().range(tree_.token(decl)), name, declared);
  return true;
}

// `x = relu(fc1(x))` on an input `x` (PyTorch's `x = self.fc1(x)`) where the value has
// other sizes: an input keeps its declared type, so the mismatch is reported with the
// declaration and the `let` that holds the new value; in straight-line code the input
// then holds the new value's type, so that its later uses are not reported again.
// Reported here; false when the value fits or this is not that case.
bool Checker::resizedInput(NodeId target, const ExprInfo& value, NodeId valueNode) {
  uint32_t symbol = module_.nodeSymbol[target.index];
  if (symbol == kNoSymbol || module_.symbols[symbol].kind != SymbolKind::Param) return false;
  const TypeStore& ts = module_.types;
  TypeId held = module_.symbols[symbol].type;
  if (ts.kind(held) != TypeKind::Tensor || ts.kind(value.type) != TypeKind::Tensor) return false;
  const TypeStore::Node& h = ts.node(held);
  const TypeStore::Node& a = ts.node(value.type);
  if (!h.rankKnown || !a.rankKnown || h.dtype != a.dtype || h.ternary != a.ternary ||
      checkAssignable(value, held, valueNode, /*quiet=*/true)) {
    return false;
  }
  std::string name(spelling(module_.symbols[symbol].name));
  auto builder =
      diags_->report(Diag::InputKeepsItsType, source(), rangeOf(valueNode), fmt(value.type), name,
                     fmt(held));
  NodeId decl = module_.symbols[symbol].decl;
  if (decl.isValid()) {
    builder.note(Note::InputDeclaredHere, source(), tokens().range(tree_.token(decl)), name);
  }
  std::string_view text = textOf(valueNode);
  if (text.size() <= 60 && text.find('\n') == std::string_view::npos) {
    builder.note(Note::NewVariableForValue, fmt::format("let {} = {}", name, text));
  }
  if (ctx_.loopDepth == 0 && ctx_.ifDepth == 0) module_.symbols[symbol].type = value.type;
  return true;
}

void Checker::noteOtherAxis(DiagnosticBuilder& builder, const ExprInfo& value, TypeId want) {
  // `x.T` of a [?, 4, 8] reverses every dimension (torch's Tensor.T), and
  // `concat([a, b])` joins along dimension 0: where the dimensions PyTorch
  // users mean (`x.mT`, the feature dimension) give the wanted type, say how.
  NodeId node = value.node;
  while (node.isValid() && tree_.kind(node) == NodeKind::Paren) node = tree_.childA(node);
  if (!node.isValid()) return;
  TypeStore& ts = module_.types;
  if (!ts.isTensor(value.type) || !ts.node(value.type).rankKnown) return;
  const TypeStore::Node t = ts.node(value.type);
  auto fits = [&](std::vector<DimId> shape) {
    ExprInfo other = value;
    other.type = ts.tensor(t.dtype, shape, t.ternary);
    return checkAssignable(other, want, node, /*quiet=*/true);
  };
  auto shown = [&](std::string text) {
    if (text.size() <= 60 && text.find('\n') == std::string::npos) {
      builder.note(Note::WriteInstead, source(), rangeOf(node), text);
    }
  };
  if (tree_.kind(node) == NodeKind::Member && tokens().spelling(tree_.token(node)) == "T") {
    NodeId base = tree_.childA(node);
    TypeId baseType = module_.nodeType[base.index];
    if (!baseType.isValid() || !ts.isTensor(baseType) || !ts.node(baseType).rankKnown) return;
    std::vector<DimId> shape(ts.shape(baseType).begin(), ts.shape(baseType).end());
    if (shape.size() < 3) return;
    std::swap(shape[shape.size() - 2], shape[shape.size() - 1]);
    if (fits(shape)) shown(fmt::format("transpose({}, -2, -1)", textOf(base)));
    return;
  }
  if (tree_.kind(node) != NodeKind::Call || module_.callOf[node.index] >= module_.calls.size()) {
    return;
  }
  const CallInfo& call = module_.calls[module_.callOf[node.index]];
  bool concat = call.callee == static_cast<uint32_t>(BuiltinFn::Concat);
  if (call.kind != CallKind::Builtin || call.args.size() != 1 ||
      (!concat && call.callee != static_cast<uint32_t>(BuiltinFn::Stack))) {
    return;  // (only where `dim` was left out)
  }
  NodeId list = call.args[0].second;
  if (tree_.kind(list) != NodeKind::List) return;
  std::vector<std::span<const DimId>> items;
  for (NodeId element : tree_.list(tree_.listA(list))) {
    TypeId type = module_.nodeType[element.index];
    if (!type.isValid() || !ts.isTensor(type) || !ts.node(type).rankKnown) return;
    items.push_back(ts.shape(type));
    if (items.back().size() != items.front().size()) return;
  }
  if (items.empty()) return;
  size_t rank = items.front().size() + (concat ? 0 : 1);
  std::optional<size_t> found;
  for (size_t d = 1; d < rank; ++d) {
    std::vector<DimId> shape;
    for (size_t k = 0, from = 0; k < rank; ++k) {
      if (k != d) {
        shape.push_back(items.front()[from++]);
      } else if (!concat) {
        shape.push_back(dims().constant(static_cast<int64_t>(items.size())));
      } else {
        DimId sum = items.front()[from];
        for (size_t i = 1; i < items.size(); ++i) {
          sum = dims().binary(DimKind::Add, sum, items[i][from]);
        }
        shape.push_back(sum);
        ++from;
      }
    }
    if (fits(shape)) {
      if (found) return;  // (two would do: no single fix)
      found = d;
    }
  }
  if (found) {
    shown(fmt::format("{}({}, dim={})", textOf(tree_.childA(node)), textOf(list), *found));
  }
}

// `y = reshape(y, [b, t, 2, 4])` of a 3-D `y` under an `if` or a loop: the
// mismatch, and why straight-line code would have taken it. Reported here.
bool Checker::rankChangeInBranch(NodeId target, const ExprInfo& value, NodeId valueNode) {
  std::optional<uint32_t> symbol = untypedLocal(target);
  if (!symbol) return false;
  const TypeStore& ts = module_.types;
  TypeId held = module_.symbols[*symbol].type;
  if (ts.kind(held) != TypeKind::Tensor || ts.kind(value.type) != TypeKind::Tensor) return false;
  const TypeStore::Node& h = ts.node(held);
  const TypeStore::Node& a = ts.node(value.type);
  if (!h.rankKnown || !a.rankKnown || h.dtype != a.dtype || h.ternary != a.ternary ||
      ts.shape(held).size() == ts.shape(value.type).size()) {
    return false;
  }
  diags_->report(Diag::TypeMismatch, source(), rangeOf(valueNode), fmt(value.type), fmt(held))
      .note(Note::RankKeptInBranch, source(), rangeOf(target), spelling(module_.symbols[*symbol].name),
            ts.shape(held).size(), ts.shape(value.type).size());
  return true;
}

// After a whole variable is reassigned, in straight-line code (no enclosing
// loop or `if`) it holds exactly the new value; elsewhere it may hold either,
// so sizes that differ are joined to `?`.
void Checker::retypeAfterReassignment(NodeId target, TypeId assigned) {
  uint32_t symbol = module_.nodeSymbol[target.index];
  if (ctx_.loopDepth == 0 && ctx_.ifDepth == 0 && resizable(target, assigned)) {
    module_.symbols[symbol].type = assigned;
    return;
  }
  widenAfterReassignment(target, assigned);
}

// After `h = concat([x, x], dim=1)` where `h` held a [?, n] tensor, `h` may
// no longer be [?, n]: the sizes the checker could not prove equal become
// `?` for the rest of the body, so that what uses `h` later (a return with a
// declared type, an argument) is checked at run time at -O0 instead of being
// taken as proven. A variable with a declared type keeps it.
void Checker::widenAfterReassignment(NodeId target, TypeId assigned) {
  std::optional<uint32_t> local = untypedLocal(target);
  if (!local) return;
  uint32_t symbol = *local;
  TypeStore& ts = module_.types;
  TypeId held = module_.symbols[symbol].type;
  const TypeStore::Node& h = ts.node(held);
  const TypeStore::Node& a = ts.node(assigned);
  if (h.kind != TypeKind::Tensor || a.kind != TypeKind::Tensor || !h.rankKnown ||
      !a.rankKnown || h.dtype != a.dtype || h.ternary != a.ternary) {
    return;
  }
  std::span<const DimId> hs = ts.shape(held);
  std::span<const DimId> as = ts.shape(assigned);
  if (hs.size() != as.size()) return;
  std::vector<DimId> joined(hs.begin(), hs.end());
  bool changed = false;
  for (size_t i = 0; i < hs.size(); ++i) {
    if (dims().equal(hs[i], as[i]) != Decision::Yes && !dims().isUnknown(hs[i])) {
      joined[i] = dims().unknown();
      changed = true;
    }
  }
  if (changed) {
    module_.symbols[symbol].type = ts.tensor(h.dtype, joined, h.ternary);
    for (LoopMark& loop : loops_) {
      if (symbol < loop.firstSymbol) loop.resizesOuter = true;  // declared before the loop
    }
  }
}

// A constant expression whose value is past int64: a dimension, or a power
// past any float (`10 ** 10 ** 10`, which Python would compute as a big
// integer for minutes where the module imports or runs).
void Checker::reportPastInt64(NodeId node, DType dtype) {
  report(Diag::LiteralDoesNotFit, node, valueOfText(textOf(node)), dtypeName(dtype));
}

bool Checker::negativeIntegerPower(const ExprInfo& base, const ExprInfo& exponent, NodeId node,
                                   NodeId baseNode) {
  const TypeStore& ts = module_.types;
  if (ts.isLenient(base.type) || ts.isLenient(exponent.type)) return false;
  const TypeStore::Node& tb = ts.node(base.type);
  if (tb.kind != TypeKind::Tensor || tb.ternary || tb.dtype == DType::Trit || !isIntegral(tb.dtype) ||
      !isIntegral(ts.node(exponent.type).dtype) || !exponent.intValue || *exponent.intValue >= 0 ||
      ctx_.shortCircuitDepth != 0) {
    return false;
  }
  // torch rejects integer tensors to negative integer powers.
  bool atImport = ctx_.callable < 0 && !ctx_.isMain;
  diags_->report(atImport ? Diag::NegativeIntegerPower : Diag::NegativeIntegerPowerWhenRun,
                 source(), rangeOf(node), *exponent.intValue)
      .note(Note::FloatPower, source(), rangeOf(baseNode), *exponent.intValue);
  return true;
}

bool Checker::powOutsideDomain(const ExprInfo& base, const ExprInfo& exponent, NodeId node) {
  std::optional<double> x = base.number();
  std::optional<double> y = exponent.number();
  if (!x || !y || guarded()) return false;
  bool integralResult = base.intValue && exponent.intValue && *exponent.intValue >= 0;
  if (integralResult || !mathPowRaises(*x, *y)) return false;
  bool domain = mathPowDomainError(*x, *y);
  report(atImport() ? Diag::MathDomainError : Diag::MathDomainErrorWhenRun, node, "pow",
         formatFloat(*x) + ", " + formatFloat(*y),
         domain ? "ValueError (math domain error)" : "OverflowError (the result is too large)");
  return atImport();
}

// ---- expressions --------------------------------------------------------------------

ExprInfo Checker::checkExpr(NodeId node) { return requireValue(checkExprAnyResult(node), node); }

ExprInfo Checker::requireValue(ExprInfo info, NodeId node) {
  if (module_.types.kind(info.type) != TypeKind::Void) {
    return info;
  }
  // Only calls have no value (a variable never holds one: `let` checks here).
  NodeId call = node;
  while (tree_.kind(call) == NodeKind::Paren) {
    call = tree_.childA(call);
  }
  NodeId callee = tree_.kind(call) == NodeKind::Call ? tree_.childA(call) : call;
  report(Diag::NoValue, node, tokens().spelling(tree_.token(callee)));
  info.type = module_.types.error();
  setType(node, info.type);
  return info;
}

ExprInfo Checker::checkExprAnyResult(NodeId node) {
  ExprInfo info;
  switch (tree_.kind(node)) {
    case NodeKind::Name: info = checkName(node); break;
    case NodeKind::IntLit:
    case NodeKind::FloatLit:
    case NodeKind::StringLit:
    case NodeKind::BoolLit: info = checkLiteral(node); break;
    case NodeKind::Paren: info = checkExprAnyResult(tree_.childA(node)); break;
    case NodeKind::Unary: info = checkUnary(node); break;
    case NodeKind::Binary: info = checkBinary(node); break;
    case NodeKind::Call: info = checkCall(node); break;
    case NodeKind::Index: info = checkIndex(node); break;
    case NodeKind::Member: info = checkMember(node); break;
    case NodeKind::List: info = checkList(node); break;
    case NodeKind::Range: {
      ExprInfo a = checkExpr(tree_.childA(node));
      ExprInfo b = checkExpr(tree_.childB(node));
      for (const ExprInfo* bound : {&a, &b}) {
        if (!module_.types.isLenient(bound->type) &&
            !(module_.types.isScalar(bound->type) &&
              isIntegral(module_.types.node(bound->type).dtype))) {
          report(Diag::TypeMismatch, bound->node, fmt(bound->type), "int32");
        }
      }
      info = make(module_.types.make(TypeKind::Range), node);
      break;
    }
    case NodeKind::NamedArg: info = checkExpr(tree_.childA(node)); break;
    default: info = make(module_.types.error(), node); break;
  }
  info.node = node;
  setType(node, info.type);
  return info;
}

ExprInfo Checker::checkName(NodeId node) {
  IdentifierId name = tokens().identifier(tree_.token(node));
  std::optional<uint32_t> symbol = lookup(name);
  if (!symbol) {
    reportUndefined(node, name);
    return make(module_.types.error(), node);
  }
  module_.nodeSymbol[node.index] = *symbol;
  // Functions and layers are called, never passed around as values.
  const char* what = nullptr;
  switch (module_.symbols[*symbol].kind) {
    case SymbolKind::Builtin: what = "a builtin function"; break;
    case SymbolKind::BuiltinLayer: what = "a built-in layer"; break;
    case SymbolKind::Layer: what = "a layer"; break;
    case SymbolKind::Fn: what = "a function"; break;
    default: break;
  }
  if (what != nullptr) {
    report(Diag::NotAValue, node, spelling(name), what);
    return make(module_.types.error(), node);
  }
  const Symbol& s = module_.symbols[*symbol];
  if (s.kind == SymbolKind::ImportAlias) {
    report(Diag::ImportNotAValue, node, spelling(name));
    return make(module_.types.error(), node);
  }
  if (s.kind == SymbolKind::Constant && ctx_.callable < 0 && !ctx_.isMain &&
      !constantDefined_.count(*symbol)) {
    // A top-level initializer runs in order: a later constant has no value yet.
    diags_->report(Diag::UsedBeforeDefinition, source(), rangeOf(node), spelling(name))
        .note(Note::DefinedHere, source(), tokens().range(tree_.token(s.decl)), spelling(name));
    return make(module_.types.error(), node);
  }
  ExprInfo info = symbolValue_[*symbol];
  info.type = s.type;
  info.node = node;
  // A ternary weight is read quantized: `s * q` with s = mean |w|.
  if (s.kind == SymbolKind::Param && ctx_.callable >= 0 &&
      s.ref < module_.callables[ctx_.callable].params.size() &&
      module_.callables[ctx_.callable].params[s.ref].cls == ParamClass::Weight &&
      module_.types.isTernary(s.type)) {
    info.scaled = true;
  }
  return info;
}

ExprInfo Checker::checkLiteral(NodeId node) {
  TokenId token = tree_.token(node);
  ExprInfo info;
  info.node = node;
  info.literal = true;
  info.hyperConst = true;
  switch (tree_.kind(node)) {
    case NodeKind::IntLit: {
      uint64_t value = tokens().intValue(token);
      if (value > static_cast<uint64_t>(INT64_MAX)) {
        report(Diag::LiteralDoesNotFit, node, fmt::format("the value {}", value), "int64");
        info.type = module_.types.error();
        info.literal = false;
        break;
      }
      info.type = value > INT32_MAX ? module_.types.scalar(DType::Int64) : int32_;
      info.intValue = static_cast<int64_t>(value);
      info.dim = dims().constant(static_cast<int64_t>(value));
      break;
    }
    case NodeKind::FloatLit:
      info.type = float32_;
      info.floatValue = tokens().floatValue(token);
      break;
    case NodeKind::StringLit:
      info.type = str_;
      info.strValue = tokens().stringValue(token);
      break;
    default:
      info.type = bool_;
      info.intValue = tokens().kind(token) == TokenKind::KwTrue ? 1 : 0;
      info.literal = false;
      break;
  }
  return info;
}

ExprInfo Checker::checkUnary(NodeId node) {
  TokenKind op = tokens().kind(tree_.token(node));
  NodeId child = tree_.childA(node);
  if (tree_.isInt64Minimum(node)) {
    ExprInfo result = make(module_.types.scalar(DType::Int64), node);
    result.literal = true;
    result.hyperConst = true;
    result.intValue = INT64_MIN;
    result.dim = dims().constant(INT64_MIN);
    setType(child, result.type);
    return result;
  }
  ExprInfo operand = checkExpr(child);
  std::string_view spellingText = tokens().spelling(tree_.token(node));
  if (module_.types.isLenient(operand.type)) {
    return make(operand.type, node);
  }
  const TypeStore::Node& t = module_.types.node(operand.type);
  ExprInfo result = make(operand.type, node);
  if (op == TokenKind::Bang) {
    if (t.kind == TypeKind::Scalar && t.dtype == DType::Bool) {
      result.hyperConst = operand.hyperConst;
      if (operand.intValue) {
        result.intValue = *operand.intValue == 0 ? 1 : 0;
      }
      return result;
    }
    if (t.kind == TypeKind::Tensor && t.dtype == DType::Bool) {
      return result;
    }
    report(Diag::InvalidOperand, node, spellingText, fmt(operand.type));
    return make(module_.types.error(), node);
  }
  bool numeric = (t.kind == TypeKind::Scalar || t.kind == TypeKind::Tensor) &&
                 isNumeric(t.dtype) && t.dtype != DType::Bool;
  if (!numeric) {
    report(Diag::InvalidOperand, node, spellingText, fmt(operand.type));
    return make(module_.types.error(), node);
  }
  // -TernaryTensor is ternary (LANGUAGE.md §3); constants fold.
  result.literal = operand.literal;
  result.hyperConst = operand.hyperConst;
  result.scaled = operand.scaled;  // -(s * q): the same scale
  if (op == TokenKind::Minus) {
    if (operand.intValue && *operand.intValue != INT64_MIN) {
      result.intValue = -*operand.intValue;
      result.dim = dims().constant(-*operand.intValue);
    } else if (operand.intValue) {
      result.dim = dims().unknown();  // 2^63: beyond int64
    } else if (operand.dim.isValid()) {
      result.dim = dims().binary(DimKind::Sub, dims().constant(0), operand.dim);
    }
    if (operand.floatValue) {
      result.floatValue = -*operand.floatValue;
    }
  } else {
    result.intValue = operand.intValue;
    result.floatValue = operand.floatValue;
    result.dim = operand.dim;
  }
  return result;
}

// `a < b < c` parses as `(a < b) < c`, as in C, where Python would test both.
// The checker, not the parser, says so: with the operand types known it is a
// warning where the comparison is valid (`a == b == flag`), and one error
// instead of two where it is not (a bool has no order, and `a == b == 3`
// compares a bool with an int). One chain is one mistake: only its first link
// (whose left operand is not itself a link) is reported.
bool Checker::isFirstChainLink(NodeId node) const {
  int cls = comparisonClass(tokens().kind(tree_.token(node)));
  NodeId left = tree_.childA(node);
  if (cls == 0 || tree_.kind(left) != NodeKind::Binary ||
      comparisonClass(tokens().kind(tree_.token(left))) != cls) {
    return false;
  }
  NodeId leftLeft = tree_.childA(left);
  return tree_.kind(leftLeft) != NodeKind::Binary ||
         comparisonClass(tokens().kind(tree_.token(leftLeft))) != cls;
}

void Checker::reportChainedComparison(NodeId node, std::optional<TypeId> mismatch) {
  NodeId inner = tree_.childA(node);
  std::string op(tokens().spelling(tree_.token(node)));
  std::string rhs(textOf(tree_.childB(node)));
  std::string whole = fmt::format("{} {} {}", textOf(inner), op, rhs);
  std::string fixed =
      fmt::format("{} && {} {} {}", textOf(inner), textOf(tree_.childB(inner)), op, rhs);
  auto builder = mismatch ? diags_->report(Diag::ChainedComparisonMismatch, source(),
                                           rangeOf(node), whole, fmt(*mismatch))
                          : diags_->report(Diag::ChainedComparison, source(), rangeOf(node),
                                           whole);
  builder.note(Note::ChainedComparisonHint, fixed);
}

ExprInfo Checker::checkBinary(NodeId node) {
  if (!isFirstChainLink(node)) {
    return checkOperator(node);
  }
  NodeId outer = chainedComparison_;
  chainedComparison_ = node;  // its InvalidOperands is the chain's error
  ExprInfo info = checkOperator(node);
  chainedComparison_ = outer;
  if (module_.types.kind(info.type) != TypeKind::Error) {
    reportChainedComparison(node, std::nullopt);
  }
  return info;
}

ExprInfo Checker::checkOperator(NodeId node) {
  TokenId opToken = tree_.token(node);
  TokenKind op = tokens().kind(opToken);
  std::string_view opText = operatorSpelling(tokens(), opToken);
  ExprInfo a = checkExpr(tree_.childA(node));
  bool shortCircuit = op == TokenKind::AmpAmp || op == TokenKind::PipePipe;
  // b may never be evaluated, so what would raise there is not reported as
  // certain: unless a is a tensor (torch's element-wise & and | evaluate
  // both sides) or a constant that lets b run (`true && b`, `false || b`).
  if (shortCircuit && module_.types.kind(a.type) == TypeKind::Tensor) shortCircuit = false;
  if (shortCircuit && a.intValue && (*a.intValue != 0) == (op == TokenKind::AmpAmp)) {
    shortCircuit = false;
  }
  ctx_.shortCircuitDepth += shortCircuit ? 1 : 0;
  ExprInfo b = checkExpr(tree_.childB(node));
  ctx_.shortCircuitDepth -= shortCircuit ? 1 : 0;
  if (module_.types.kind(a.type) == TypeKind::Error ||
      module_.types.kind(b.type) == TypeKind::Error) {
    return make(module_.types.error(), node);
  }
  // Ternary values combined (`a + b` int8-valued, `a @ b` int32-valued, `a * b`
  // ternary): `s1 * q1 + s2 * q2` where a scale is known not to be 1 is a float32,
  // which an integer or float16 tensor would truncate (audit 59: `-> Tensor<int8, [4]>`
  // of two weights' sum returned 1.875). checkAssignable's NarrowingConversion reads this.
  auto carryScale = [&](ExprInfo result) {
    const TypeStore& ts = module_.types;
    if ((a.scaled || b.scaled) && ts.isTensor(result.type) && ts.isTensor(a.type) &&
        ts.isTensor(b.type) && ts.node(a.type).ternary && ts.node(b.type).ternary &&
        (op == TokenKind::Plus || op == TokenKind::Minus || op == TokenKind::Star ||
         op == TokenKind::At)) {
      result.scaled = true;
    }
    return result;
  };
  if (op == TokenKind::At) {
    return carryScale(matmul(a, b, node, opText));
  }
  if (op == TokenKind::Plus || op == TokenKind::Minus || op == TokenKind::Star ||
      op == TokenKind::Slash || op == TokenKind::Percent || op == TokenKind::StarStar) {
    // `x * (1 / 8)`: a Python 3 user's 0.125 is 0 here.
    auto floating = [&](const ExprInfo& e) {
      const TypeStore::Node& t = module_.types.node(e.type);
      return (t.kind == TypeKind::Scalar || t.kind == TypeKind::Tensor) && !t.ternary &&
             isFloating(t.dtype);
    };
    if (floating(b)) warnFlooredDivision(a);
    if (floating(a)) warnFlooredDivision(b);
  }
  if (op == TokenKind::AmpAmp || op == TokenKind::PipePipe) {
    // Bool scalars, short-circuiting; with a bool tensor on either side,
    // element-wise (torch's & and |: both sides are evaluated), broadcast.
    TypeStore& ts = module_.types;
    bool anyTensor = false, rankKnown = true;
    for (const ExprInfo* side : {&a, &b}) {
      const TypeStore::Node& t = ts.node(side->type);
      bool ok = ts.isLenient(side->type) ||
                ((t.kind == TypeKind::Scalar || t.kind == TypeKind::Tensor) &&
                 t.dtype == DType::Bool && !t.ternary);
      if (!ok) {
        report(Diag::InvalidOperands, node, opText, fmt(a.type), fmt(b.type));
        return make(ts.error(), node);
      }
      anyTensor = anyTensor || t.kind == TypeKind::Tensor;
      rankKnown = rankKnown && (t.kind != TypeKind::Tensor || t.rankKnown);
    }
    if (anyTensor) {
      if (ts.isLenient(a.type) || ts.isLenient(b.type) || !rankKnown) {
        return make(ts.isLenient(a.type) || ts.isLenient(b.type) ? ts.unknown()
                                                                 : ts.tensorAnyRank(DType::Bool),
                    node);
      }
      auto shapeOf = [&](const ExprInfo& e) {
        return ts.isTensor(e.type) ? ts.shape(e.type) : std::span<const DimId>{};
      };
      std::vector<size_t> assumed;
      std::optional<std::vector<DimId>> shape =
          broadcast(shapeOf(a), shapeOf(b), node, opText, {}, {}, &assumed);
      if (!shape) return make(ts.error(), node);
      checkAssumedSizes(node, *shape, assumed);
      return make(ts.tensor(DType::Bool, *shape), node);
    }
    ExprInfo result = make(bool_, node);
    result.hyperConst = a.hyperConst && b.hyperConst;
    return result;
  }
  if ((op == TokenKind::EqualEqual || op == TokenKind::BangEqual) &&
      module_.types.isScalar(a.type) && module_.types.isScalar(b.type) &&
      module_.types.node(a.type).dtype == DType::Str &&
      module_.types.node(b.type).dtype == DType::Str) {
    // `if act == "relu"`: named options compare as Python strings.
    ExprInfo result = make(bool_, node);
    result.hyperConst = a.hyperConst && b.hyperConst;
    return result;
  }
  if (isComparison(op)) {
    ExprInfo arith = checkArithmetic(opText, op, a, b, node);
    if (module_.types.isLenient(arith.type)) {
      return arith;
    }
    ExprInfo result = make(module_.types.isTensor(arith.type)
                               ? module_.types.withDType(arith.type, DType::Bool)
                               : bool_,
                           node);
    result.hyperConst = a.hyperConst && b.hyperConst;
    if (a.intValue && b.intValue) {
      int64_t x = *a.intValue;
      int64_t y = *b.intValue;
      bool value = op == TokenKind::EqualEqual  ? x == y
                   : op == TokenKind::BangEqual ? x != y
                   : op == TokenKind::Less      ? x < y
                   : op == TokenKind::LessEqual ? x <= y
                   : op == TokenKind::Greater   ? x > y
                                                : x >= y;
      result.intValue = value ? 1 : 0;
    }
    return result;
  }
  return carryScale(checkArithmetic(opText, op, a, b, node));
}

// Arithmetic and comparison operands: dtypes, the ternary rules, broadcasting.
ExprInfo Checker::checkArithmetic(std::string_view op, TokenKind kind, const ExprInfo& a,
                                  const ExprInfo& b, NodeId node) {
  TypeStore& ts = module_.types;
  if (ts.isLenient(a.type) || ts.isLenient(b.type)) {
    bool error = ts.kind(a.type) == TypeKind::Error || ts.kind(b.type) == TypeKind::Error;
    return make(error ? ts.error() : ts.unknown(), node);
  }
  const TypeStore::Node& ta = ts.node(a.type);
  const TypeStore::Node& tb = ts.node(b.type);
  bool aValue = ta.kind == TypeKind::Scalar || ta.kind == TypeKind::Tensor;
  bool bValue = tb.kind == TypeKind::Scalar || tb.kind == TypeKind::Tensor;
  bool comparison = isComparison(kind);
  // A bool widens like any number next to another dtype (LANGUAGE.md
  // section 3: `x * mask` is float32, `flag + 1` an int). Two bools only
  // compare for equality (`&&` and `||` are the arithmetic of bools), and a
  // comparison chain never compares its first result with a number.
  bool bools = ta.dtype == DType::Bool || tb.dtype == DType::Bool;
  bool bothBools = ta.dtype == DType::Bool && tb.dtype == DType::Bool;
  if (!aValue || !bValue || ta.dtype == DType::Str || tb.dtype == DType::Str ||
      (bothBools &&
       !(comparison && (kind == TokenKind::EqualEqual || kind == TokenKind::BangEqual))) ||
      (bools && !bothBools && node == chainedComparison_)) {
    if (ta.kind == TypeKind::List && tb.kind == TypeKind::List && kind == TokenKind::EqualEqual) {
      return make(bool_, node);
    }
    if (node == chainedComparison_) {
      reportChainedComparison(node, b.type);
    } else {
      report(Diag::InvalidOperands, node, op, fmt(a.type), fmt(b.type));
    }
    return make(ts.error(), node);
  }
  (void)isArithmetic;
  // Operations that raise when they run: an error in a top-level constant,
  // which runs when the module is imported (LANGUAGE.md: an accepted program
  // never fails at import); a warning in a body, which may never run it; and
  // nothing in the right operand of && or ||, which guards it (`n != 0 && k
  // / n > 1`).
  bool integers = isIntegral(ta.dtype) && isIntegral(tb.dtype);
  bool atImport = ctx_.callable < 0 && !ctx_.isMain;
  bool raises = false;
  bool zeroDivisor = b.intValue == 0 || b.floatValue == 0.0;
  if ((kind == TokenKind::Slash || kind == TokenKind::Percent) && !bools &&
      ta.kind == TypeKind::Scalar && tb.kind == TypeKind::Scalar && zeroDivisor &&
      ctx_.shortCircuitDepth == 0) {
    // Scalars are Python numbers: `/` and `%` by zero raise ZeroDivisionError
    // for floats too (tensors give inf or nan).
    report(atImport ? Diag::DivisionByZero : Diag::DivisionByZeroWhenRun, node,
           fmt::format("{} {}", integers ? "integer" : "float",
                       kind == TokenKind::Slash ? "division" : "modulo"));
    raises = true;
  }
  if (kind == TokenKind::Percent && !bools && integers && ta.kind == TypeKind::Tensor &&
      !ta.ternary && b.intValue == 0 && ctx_.shortCircuitDepth == 0) {
    // torch's integer remainder raises "ZeroDivisionError" (`/` gives inf).
    report(atImport ? Diag::DivisionByZero : Diag::DivisionByZeroWhenRun, node,
           "integer tensor modulo");
    raises = true;
  }
  if (kind == TokenKind::StarStar && negativeIntegerPower(a, b, node, tree_.childA(node))) {
    raises = true;
  }
  if (kind == TokenKind::StarStar && ta.kind == TypeKind::Scalar && tb.kind == TypeKind::Scalar &&
      powOutsideDomain(a, b, node)) {
    raises = true;
  }
  if (raises && atImport) {
    return make(ts.error(), node);
  }
  // Scalars with scalars: promotion; constants and dimensions fold.
  if (ta.kind == TypeKind::Scalar && tb.kind == TypeKind::Scalar) {
    DType dtype;
    if (a.literal && !b.literal && literalAdapts(a, ta.dtype, tb.dtype)) {
      dtype = tb.dtype;
    } else if (b.literal && !a.literal && literalAdapts(b, tb.dtype, ta.dtype)) {
      dtype = ta.dtype;
    } else {
      dtype = promote(ta.dtype, tb.dtype);
    }
    if (dtype == DType::Trit) {
      dtype = DType::Int8;  // arithmetic on trits leaves {-1, 0, 1}
    }
    if (kind == TokenKind::StarStar && isIntegral(dtype) && b.intValue && *b.intValue < 0) {
      dtype = DType::Float32;  // as Python: 2 ** -1 is 0.5
    }
    ExprInfo result = make(ts.scalar(dtype), node);
    result.literal = a.literal && b.literal;
    result.hyperConst = a.hyperConst && b.hyperConst;
    if (a.intValue && b.intValue && isIntegral(dtype)) {
      result.intValue = foldIntegers(kind, *a.intValue, *b.intValue);
      // (Only + - * ** overflow: `/` and `%` by zero are no value at all.)
      result.pastInt64 = !result.intValue &&
                         (kind == TokenKind::Plus || kind == TokenKind::Minus ||
                          kind == TokenKind::Star || kind == TokenKind::StarStar);
      // A power past any float (`10 ** 10 ** 10`, 2 ** 1025 and more):
      // Python would compute it as a big integer for minutes when the module
      // is imported or run. Smaller values past int64 stay Python ints, as
      // any value computed past its type's range (docs/language.md).
      bool beyond = kind == TokenKind::StarStar && *b.intValue > 0 && *a.intValue != 0 &&
                    std::log2(std::fabs(static_cast<double>(*a.intValue))) *
                            static_cast<double>(*b.intValue) > 1024.0;
      if (!result.intValue && beyond) {
        reportPastInt64(node);
        return make(ts.error(), node);
      }
    }
    // An exponent of literals that folded past int64 (`10 ** 10 ** 30`).
    if (kind == TokenKind::StarStar && a.intValue && (*a.intValue > 1 || *a.intValue < -1) &&
        b.literal && !b.intValue && isIntegral(tb.dtype) && tb.kind == TypeKind::Scalar) {
      reportPastInt64(node);
      return make(ts.error(), node);
    }
    if (isFloating(dtype) && a.number() && b.number()) {
      double x = *a.number();
      double y = *b.number();
      switch (kind) {
        case TokenKind::Plus: result.floatValue = x + y; break;
        case TokenKind::Minus: result.floatValue = x - y; break;
        case TokenKind::Star: result.floatValue = x * y; break;
        case TokenKind::Slash:
          if (y != 0) {
            result.floatValue = x / y;
          }
          break;
        default: break;
      }
    }
    if (a.dim.isValid() && b.dim.isValid() && isIntegral(dtype)) {
      switch (kind) {
        case TokenKind::Plus: result.dim = dims().binary(DimKind::Add, a.dim, b.dim); break;
        case TokenKind::Minus: result.dim = dims().binary(DimKind::Sub, a.dim, b.dim); break;
        case TokenKind::Star: result.dim = dims().binary(DimKind::Mul, a.dim, b.dim); break;
        case TokenKind::Slash: result.dim = dims().binary(DimKind::Div, a.dim, b.dim); break;
        default: break;
      }
    }
    if (result.intValue) {
      result.dim = dims().constant(*result.intValue);
    }
    return result;
  }
  // At least one tensor: the ternary rules of LANGUAGE.md §3.
  DType dtype;
  bool ternary = false;
  bool aT = ta.kind == TypeKind::Tensor && ta.ternary;
  bool bT = tb.kind == TypeKind::Tensor && tb.ternary;
  if (aT && bT && !comparison) {
    if (kind == TokenKind::Star) {
      dtype = DType::Trit;
      ternary = true;  // TernaryTensor * TernaryTensor stays ternary
    } else if (kind == TokenKind::Plus || kind == TokenKind::Minus) {
      dtype = DType::Int8;  // the sum of two ternaries is int8-valued
    } else {
      dtype = DType::Float32;
    }
  } else if (aT || bT) {
    const TypeStore::Node& other = aT ? tb : ta;
    dtype = other.kind == TypeKind::Tensor && isFloating(other.dtype) ? other.dtype
                                                                      : DType::Float32;
  } else if (ta.kind == TypeKind::Tensor && tb.kind == TypeKind::Tensor) {
    dtype = promote(ta.dtype, tb.dtype);
  } else {
    // Tensor with scalar: a literal takes the tensor's dtype when its value
    // fits (`x * 2` keeps x's dtype); anything else promotes as two tensors
    // do (LANGUAGE.md section 3): an int8 tensor with an `int` is int32, and
    // so is one with the literal 300.
    bool aTensor = ta.kind == TypeKind::Tensor;
    const ExprInfo& scalarInfo = aTensor ? b : a;
    DType tensorDType = aTensor ? ta.dtype : tb.dtype;
    DType scalarDType = aTensor ? tb.dtype : ta.dtype;
    dtype = scalarInfo.literal && literalAdapts(scalarInfo, scalarDType, tensorDType)
                ? tensorDType
                : promote(tensorDType, scalarDType);
  }
  // torch computes a tensor with a Python number, or with a 0-d tensor of the
  // same category, in the dimensioned tensor's dtype: an operand narrower
  // than the promoted dtype is converted so that the module computes what
  // the checker typed (`x_int8 < n` compares in int32, not with n wrapped to
  // int8; `a_f16 - mean(x_f32)` subtracts in float32).
  // Arithmetic on trits is int8 (they add up past 1): decided before the
  // conversions, so that a bool tensor with a trit becomes int8 (torch would
  // make `mask + t` int64).
  if (dtype == DType::Trit && !ternary) {
    dtype = DType::Int8;
  }
  if (!ternary && !aT && !bT) {
    convertOperands(a, b, dtype);
  }
  // torch has no `-` for bools ("Subtraction ... with a bool tensor is not
  // supported"): a bool operand, tensor or number, becomes the result's dtype.
  if (kind == TokenKind::Minus && dtype != DType::Bool) {
    for (const ExprInfo* operand : {&a, &b}) {
      TypeStore::Node t = ts.node(operand->type);  // a copy: types are made below
      if (t.dtype != DType::Bool || t.ternary || !operand->node.isValid()) continue;
      DType to = ternary || aT || bT ? DType::Float32 : dtype;
      module_.conversions[operand->node.index] =
          t.kind == TypeKind::Tensor ? ts.withDType(operand->type, to)
                                     : ts.scalar(isFloating(to) ? DType::Float32 : DType::Int32);
    }
  }
  if (kind == TokenKind::Slash && isIntegral(dtype) && !ternary) {
    dtype = DType::Float32;  // true division of tensors, as torch
  }
  // Two float tensors of different dtypes where one is ternary (a float32
  // value when it runs): the narrower operand is converted, as above.
  if (!comparison && isFloating(dtype) && ta.kind == TypeKind::Tensor &&
      tb.kind == TypeKind::Tensor && tree_.kind(node) == NodeKind::Binary && (aT || bT)) {
    DType da = ta.ternary ? DType::Float32 : ta.dtype;
    DType db = tb.ternary ? DType::Float32 : tb.dtype;
    if (da != db && isFloating(da) && isFloating(db)) {
      convertToFloat(a, dtype);
      convertToFloat(b, dtype);
    }
  }
  // Shapes.
  bool rankKnown = (ta.kind != TypeKind::Tensor || ta.rankKnown) &&
                   (tb.kind != TypeKind::Tensor || tb.rankKnown);
  if (!rankKnown) {
    return make(ts.tensorAnyRank(dtype, ternary), node);
  }
  std::span<const DimId> sa = ta.kind == TypeKind::Tensor ? ts.shape(a.type) : std::span<const DimId>{};
  std::span<const DimId> sb = tb.kind == TypeKind::Tensor ? ts.shape(b.type) : std::span<const DimId>{};
  std::vector<size_t> assumed;
  std::optional<std::vector<DimId>> shape = broadcast(
      sa, sb, node, op, {}, {}, &assumed, [&](DiagnosticBuilder& builder) {
        if (op == "*") noteMatmulInsteadOfProduct(builder, node, sa, sb);
      });
  if (!shape) {
    return make(ts.error(), node);
  }
  checkAssumedSizes(node, *shape, assumed);
  return make(ts.tensor(dtype, *shape, ternary), node);
}

// `x * w` of [?, 784] and [784, 10]: NumPy's habit for a matrix product,
// which `@` writes (a's last size is b's first of two; 1-D and 2-D operands).
void Checker::noteMatmulInsteadOfProduct(DiagnosticBuilder& builder, NodeId node,
                                         std::span<const DimId> a,
                                         std::span<const DimId> b) {
  if (a.empty() || b.empty() || a.size() > 2 || b.size() > 2 ||
      (a.size() != 2 && b.size() != 2) ||
      dims().equal(a.back(), b.size() >= 2 ? b[b.size() - 2] : b.back()) != Decision::Yes) {
    return;
  }
  std::string_view left = textOf(tree_.childA(node));
  std::string_view right = textOf(tree_.childB(node));
  bool simple = left.size() + right.size() <= 60 && left.find('\n') == std::string_view::npos &&
                right.find('\n') == std::string_view::npos;
  builder.note(Note::MatmulInsteadOfProduct,
               simple ? fmt::format("{} @ {}", left, right) : std::string("a @ b"));
}

// `shownA` and `shownB`, when given, are the shapes the error names (the
// whole operands of `@`, whose batch dimensions `a` and `b` are);
// `mismatchNotes` adds the caller's notes to a mismatch of a binary operator.
std::optional<std::vector<DimId>> Checker::broadcast(
    std::span<const DimId> a, std::span<const DimId> b, NodeId node, std::string_view op,
    std::span<const DimId> shownA, std::span<const DimId> shownB, std::vector<size_t>* assumed,
    const std::function<void(DiagnosticBuilder&)>& mismatchNotes) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<DimId> out(rank);
  DimId one = dims().constant(1);
  for (size_t i = 0; i < rank; ++i) {
    bool hasA = i < a.size();
    bool hasB = i < b.size();
    DimId da = hasA ? a[a.size() - 1 - i] : one;
    DimId db = hasB ? b[b.size() - 1 - i] : one;
    DimId& result = out[rank - 1 - i];
    if (da == one) {
      result = db;
      continue;
    }
    if (db == one) {
      result = da;
      continue;
    }
    Decision same = dims().equal(da, db);
    // Sizes that differ still broadcast when one of them may be 1 (`d` and
    // `2 * d + 1` do at d = 1; two constants other than 1 never do).
    if (same == Decision::No &&
        (dims().equal(da, one) != Decision::No || dims().equal(db, one) != Decision::No)) {
      same = Decision::Unknown;
    }
    switch (same) {
      case Decision::Yes: result = da; break;
      case Decision::No: {
        auto builder = diags_->report(Diag::ShapeMismatch, source(), rangeOf(node), op,
                                      fmtShape(shownA.empty() ? a : shownA),
                                      fmtShape(shownB.empty() ? b : shownB));
        if (tree_.kind(node) == NodeKind::Binary) {
          builder.caretAt(tokens().range(tree_.token(node)).begin);
          if (mismatchNotes) mismatchNotes(builder);
          noteBroadcastAlong(builder, node, a, b);
        }
        noteOperandCreations(builder, node);
        return std::nullopt;
      }
      case Decision::Unknown:
        // One of them may be 1 at run time. Against `?` the known one is the
        // better guess; of two different sizes (`n` and `m`, `d` and `2 * d`)
        // either may be the result, so it is unknown: a declared `[?, n]`
        // then checks it at -O0 rather than taking it as proven. (torch
        // rejects sizes that do not broadcast, so no check is recorded.)
        result = dims().isUnknown(da) ? db : dims().isUnknown(db) ? da : dims().unknown();
        if (!dims().isUnknown(da) && !dims().isUnknown(db)) {
          warnSimilarSizeVariables(node, db, da, /*minLength=*/4);  // `dx` and 1 broadcast
        }
        // The guess is wrong when the known size is 1 and the `?` is not
        // (`[?, n] + [?, ?]` at n = 1 is `[?, ?]`): the caller checks it.
        if (assumed != nullptr && !dims().isUnknown(result) &&
            dims().equal(result, one) != Decision::No) {
          assumed->push_back(i);
        }
        if (!dims().isUnknown(da) && !dims().isUnknown(db) && alwaysInLayer()) {
          broadcastChecks_.push_back(BroadcastCheck{
              ctx_.callable, node, std::string(op),
              std::vector<DimId>(shownA.empty() ? a.begin() : shownA.begin(),
                                 shownA.empty() ? a.end() : shownA.end()),
              std::vector<DimId>(shownB.empty() ? b.begin() : shownB.begin(),
                                 shownB.empty() ? b.end() : shownB.end()),
              rank - 1 - i, da, db});
        }
        break;
    }
  }
  return out;
}

void Checker::checkAssumedSizes(NodeId node, std::span<const DimId> shape,
                                std::span<const size_t> assumed, size_t tail) {
  // Each dimension once (clip(x, lo, hi) broadcasts twice).
  std::vector<size_t> once(assumed.begin(), assumed.end());
  std::sort(once.begin(), once.end());
  once.erase(std::unique(once.begin(), once.end()), once.end());
  for (size_t fromLast : once) {
    if (fromLast + tail >= shape.size()) continue;
    size_t dim = shape.size() - 1 - tail - fromLast;
    // (A later operand of clip can make it `?`: nothing to check then.)
    if (dims().isUnknown(shape[dim])) continue;
    recordRuntimeCheck(node, node, dim, shape[dim], dims().unknown());
  }
}

ExprInfo Checker::matmul(const ExprInfo& a, const ExprInfo& b, NodeId node, std::string_view op) {
  TypeStore& ts = module_.types;
  if (ts.isLenient(a.type) || ts.isLenient(b.type)) {
    bool error = ts.kind(a.type) == TypeKind::Error || ts.kind(b.type) == TypeKind::Error;
    return make(error ? ts.error() : ts.unknown(), node);
  }
  // A bool side is promoted to the other's dtype (converted: torch.matmul
  // has no bools); two bools have no product.
  if (!ts.isTensor(a.type) || !ts.isTensor(b.type) ||
      (ts.node(a.type).dtype == DType::Bool && ts.node(b.type).dtype == DType::Bool)) {
    report(Diag::InvalidOperands, node, op, fmt(a.type), fmt(b.type));
    return make(ts.error(), node);
  }
  const TypeStore::Node& ta = ts.node(a.type);
  const TypeStore::Node& tb = ts.node(b.type);
  DType dtype = productDType(ta, tb);
  // torch.matmul does not promote: an integer side meets a float one, an
  // int8 side an int32 one.
  convertToProduct(a, dtype);
  convertToProduct(b, dtype);
  if (!ta.rankKnown || !tb.rankKnown) {
    return make(ts.tensorAnyRank(dtype), node);
  }
  std::vector<DimId> sa(ts.shape(a.type).begin(), ts.shape(a.type).end());
  std::vector<DimId> sb(ts.shape(b.type).begin(), ts.shape(b.type).end());
  if (sa.empty() || sb.empty()) {
    report(Diag::InvalidOperands, node, op, fmt(a.type), fmt(b.type));
    return make(ts.error(), node);
  }
  // torch.matmul: 1-D operands are promoted to matrices and the added
  // dimension is removed from the result.
  bool vecA = sa.size() == 1;
  bool vecB = sb.size() == 1;
  if (vecA) {
    sa.insert(sa.begin(), dims().constant(1));
  }
  if (vecB) {
    sb.push_back(dims().constant(1));
  }
  DimId k1 = sa.back();
  DimId k2 = sb[sb.size() - 2];
  switch (dims().equal(k1, k2)) {
    case Decision::No: {
      auto builder = diags_->report(Diag::MatmulMismatch, source(), rangeOf(node), op,
                                    fmt(a.type), fmt(b.type), dims().format(k1, interner_),
                                    dims().format(k2, interner_));
      if (tree_.kind(node) == NodeKind::Binary) {
        builder.caretAt(tokens().range(tree_.token(node)).begin);
      }
      // The usual mistake: a weight in PyTorch's [out, in] layout used with
      // '@' as if it were [in, out] (its last dimension is the one that fits).
      std::string_view left = textOf(a.node), right = textOf(b.node);
      if (sb.size() == 2 && !vecB) flattenHint(builder, a, sb[0]);
      if (sb.size() == 2 && !vecB && dims().equal(k1, sb.back()) == Decision::Yes &&
          left.size() <= 40 && right.size() <= 40 && left.find('\n') == std::string_view::npos &&
          right.find('\n') == std::string_view::npos) {
        builder.note(Note::TransposedWeight, right, left);
      }
      // Attention's `q @ k` of two [..., t, d] tensors: the scores are q @ k^T over the
      // last two dimensions.
      if (sb.size() > 2 && !vecA && dims().equal(k1, sb.back()) == Decision::Yes &&
          left.size() <= 40 && right.size() <= 40 && left.find('\n') == std::string_view::npos &&
          right.find('\n') == std::string_view::npos) {
        builder.note(Note::WriteInstead, source(), rangeOf(node),
                     fmt::format("{} @ transpose({})", left, right));
      }
      return make(ts.error(), node);
    }
    case Decision::Unknown:
      // The side whose size is known is what the other must have.
      if (!dims().isUnknown(k2)) {
        recordRuntimeCheck(node, a.node, vecA ? 0 : sa.size() - 1, k2, k1);
      } else {
        recordRuntimeCheck(node, b.node, vecB ? 0 : sb.size() - 2, k1, k2, a.node,
                           vecA ? 0 : sa.size() - 1);
      }
      break;
    case Decision::Yes: break;
  }
  std::span<const DimId> batchA(sa.data(), sa.size() - 2);
  std::span<const DimId> batchB(sb.data(), sb.size() - 2);
  std::vector<size_t> assumed;
  std::optional<std::vector<DimId>> batch =
      broadcast(batchA, batchB, node, op, ts.shape(a.type), ts.shape(b.type), &assumed);
  if (!batch) {
    return make(ts.error(), node);
  }
  std::vector<DimId> shape = *batch;
  if (!vecA) {
    shape.push_back(sa[sa.size() - 2]);
  }
  if (!vecB) {
    shape.push_back(sb.back());
  }
  checkAssumedSizes(node, shape, assumed, shape.size() - batch->size());
  return make(ts.tensor(dtype, shape), node);
}

ExprInfo Checker::checkList(NodeId node) {
  std::vector<ExprInfo> elements;
  // Sub-modules created in the list (nn.ModuleList) are one error, and the
  // list an error value (its uses, `layers[i](h)`, are not reported again).
  uint32_t instances = 0;
  uint32_t* outer = std::exchange(listInstances_, &instances);
  for (NodeId element : tree_.list(tree_.listA(node))) {
    elements.push_back(checkExpr(element));
  }
  listInstances_ = outer;
  if (instances != 0) {
    if (outer != nullptr) *outer += instances;
    return make(module_.types.error(), node);
  }
  for (const ExprInfo& e : elements) {
    if (module_.types.kind(e.type) == TypeKind::Error) {
      return make(module_.types.error(), node);  // reported where it came from
    }
  }
  ExprInfo result;
  result.node = node;
  result.hyperConst = true;
  result.allTrits = true;
  result.tritValued = true;
  TypeId elementType = elements.empty() ? int32_ : elements.front().type;
  bool ints = true;
  for (const ExprInfo& e : elements) {
    result.hyperConst = result.hyperConst && e.hyperConst;
    const TypeStore::Node& t = module_.types.node(e.type);
    bool isInt = t.kind == TypeKind::Scalar && isIntegral(t.dtype) && t.dtype != DType::Bool;
    ints = ints && isInt;
    if (t.kind == TypeKind::List) {
      result.allTrits = result.allTrits && e.allTrits;
      result.tritValued = result.tritValued && e.tritValued;
    } else {
      result.allTrits = result.allTrits && e.intValue && *e.intValue >= -1 && *e.intValue <= 1 &&
                        isInt;
      std::optional<double> n = e.number();
      result.tritValued = result.tritValued && t.kind == TypeKind::Scalar && t.dtype != DType::Bool &&
                          n && (*n == -1.0 || *n == 0.0 || *n == 1.0);
    }
    if (e.type != elementType) {
      // Mixed int and float literals make a float list.
      const TypeStore::Node& et = module_.types.node(elementType);
      if (t.kind == TypeKind::Scalar && et.kind == TypeKind::Scalar) {
        elementType = module_.types.scalar(promote(t.dtype, et.dtype));
      } else if (!module_.types.isLenient(e.type)) {
        elementType = module_.types.unknown();
      }
    }
    result.listDims.push_back(isInt ? (e.dim.isValid() ? e.dim : dims().unknown())
                                    : dims().unknown());
    result.elementTypes.push_back(e.type);
    auto extend = [&](const std::optional<ExprInfo::Element>& low,
                      const std::optional<ExprInfo::Element>& high) {
      if (low && (!result.lowest || low->value < result.lowest->value)) result.lowest = low;
      if (high && (!result.highest || high->value > result.highest->value)) result.highest = high;
    };
    if (t.kind == TypeKind::List) {
      extend(e.lowest, e.highest);
    } else if (std::optional<double> n = e.number()) {
      ExprInfo::Element element{*n, e.intValue, e.node};
      extend(element, element);
    }
    std::optional<std::pair<DType, NodeId>> variable = e.widestVariable;
    if (t.kind == TypeKind::Scalar && !e.number()) variable.emplace(t.dtype, e.node);
    if (variable && (!result.widestVariable ||
                     promote(variable->first, result.widestVariable->first) != result.widestVariable->first)) {
      result.widestVariable = variable;
    }
  }
  if (!ints && module_.types.isScalar(elementType) &&
      isIntegral(module_.types.node(elementType).dtype) &&
      module_.types.node(elementType).dtype != DType::Bool) {
    // Bools among integers (`[flag, 4]`) are integers: widened, converted with int().
    ints = std::all_of(elements.begin(), elements.end(), [&](const ExprInfo& e) {
      return module_.types.isScalar(e.type) && isIntegral(module_.types.node(e.type).dtype);
    });
    if (ints) {
      for (size_t i = 0; i < elements.size(); ++i) {
        if (module_.types.node(elements[i].type).dtype != DType::Bool) continue;
        convertBoolToInt(elements[i]);
        if (elements[i].intValue) result.listDims[i] = dims().constant(*elements[i].intValue);
      }
    }
  }
  if (!ints) {
    result.listDims.clear();
  }
  // The shape of a nested list literal: [len, inner shape...]; rows of
  // different lengths make a ragged list, which no tensor can hold.
  result.listShape.push_back(dims().constant(static_cast<int64_t>(elements.size())));
  if (!elements.empty() && !elements.front().listShape.empty()) {
    for (const ExprInfo& e : elements) {
      if (e.listShape != elements.front().listShape || e.ragged) {
        result.ragged = true;
      }
    }
    for (DimId d : elements.front().listShape) {
      result.listShape.push_back(d);
    }
  }
  // Reported once: at the list that, with the lists inside it, first passes the limit.
  if (result.listShape.size() == kMaxTensorLiteralRank + 1) {
    report(Diag::ListTooDeep, node, result.listShape.size(), kMaxTensorLiteralRank);
  }
  result.type = module_.types.list(elementType, static_cast<uint32_t>(elements.size()));
  return result;
}

std::optional<size_t> Checker::normalizeDim(int64_t dim, size_t rank, NodeId node) {
  auto r = static_cast<int64_t>(rank);
  if (dim < -r || dim >= r) {
    report(Diag::DimOutOfRange, node, dim, rank);
    return std::nullopt;
  }
  return static_cast<size_t>(dim < 0 ? dim + r : dim);
}

// `max(x, dim=-1)[0]`: torch.max with a dim gives (values, indices), so
// PyTorch code indexes it; Triton DSL's gives the values, and `[0]` silently
// takes batch element 0 (a scale shared by the whole batch).
void Checker::warnIfReductionIndexedAsTuple(NodeId call, const std::vector<ExprInfo>& indices,
                                            const std::vector<bool>& isSlice) {
  if (indices.size() != 1 || isSlice[0] || !indices[0].intValue ||
      (*indices[0].intValue != 0 && *indices[0].intValue != 1) ||
      tree_.kind(call) != NodeKind::Call || call.index >= module_.callKind.size() ||
      module_.callKind[call.index] != CallKind::Builtin ||
      module_.callOf[call.index] == UINT32_MAX) {
    return;
  }
  auto fn = static_cast<BuiltinFn>(module_.calls[module_.callOf[call.index]].callee);
  if (fn != BuiltinFn::Max && fn != BuiltinFn::Min) return;
  for (NodeId arg : tree_.list(tree_.listB(call))) {
    if (tree_.kind(arg) != NodeKind::NamedArg) continue;
    std::string_view named = tokens().spelling(tree_.token(arg));
    if (named != "dim" && named != "axis") continue;
    NodeId index = indices[0].node;
    int64_t which = *indices[0].intValue;
    auto builder = diags_->report(Diag::ReductionIndexedAsTuple, source(), rangeOf(index),
                                  fn == BuiltinFn::Max ? "max" : "min", named, which);
    if (which == 0) {
      builder.note(Note::DropTupleIndex);
    } else {  // no argmin: the largest of the negated values
      builder.note(Note::UseArgmax, fn == BuiltinFn::Max ? "argmax(...)" : "argmax(-(...))");
    }
    return;
  }
}

ExprInfo Checker::checkIndex(NodeId node) {
  ExprInfo base = checkExpr(tree_.childA(node));
  std::vector<ExprInfo> indices;
  std::vector<bool> isSlice;
  for (NodeId index : tree_.list(tree_.listB(node))) {
    if (tree_.kind(index) == NodeKind::Slice) {
      for (NodeId part : {tree_.childA(index), tree_.childB(index), tree_.childC(index)}) {
        if (part.isValid()) {
          ExprInfo p = checkExpr(part);
          convertBoolToInt(p);
          if (!module_.types.isLenient(p.type) &&
              !(module_.types.isScalar(p.type) && isIntegral(module_.types.node(p.type).dtype))) {
            report(Diag::TypeMismatch, part, fmt(p.type), "int32");
          } else if (part == tree_.childC(index) && p.intValue && *p.intValue <= 0) {
            // Python refuses a zero step; torch also a negative one.
            bool tensor = module_.types.isTensor(base.type);
            if (*p.intValue == 0 || tensor) {
              report(Diag::InvalidSliceStep, part,
                     tensor ? "positive (torch slices forwards only)" : "non-zero", *p.intValue);
            }
          }
        }
      }
      indices.push_back(make(module_.types.unknown(), index));
      isSlice.push_back(true);
    } else if (tree_.kind(index) == NodeKind::Name && tokens().spelling(tree_.token(index)) == "None" &&
               !lookup(tokens().identifier(tree_.token(index)))) {
      // NumPy's `x[:, None]` inserts an axis. With only full slices before
      // it, the axis is the None's position.
      bool allFull = true;
      for (size_t i = 0; i < isSlice.size(); ++i) {
        NodeId slice = indices[i].node;
        allFull = allFull && isSlice[i] && !tree_.childA(slice).isValid() &&
                  !tree_.childB(slice).isValid() && !tree_.childC(slice).isValid();
      }
      std::string fix = allFull ? fmt::format("insert the axis with 'unsqueeze({}, {})'",
                                              textOf(tree_.childA(node)), isSlice.size())
                                : std::string("insert an axis with 'unsqueeze(x, dim)'");
      diags_->report(Diag::UndefinedName, source(), rangeOf(index), "None").note(Note::NoNone, source(), rangeOf(index), fix);
      indices.push_back(make(module_.types.error(), index));
      isSlice.push_back(false);
    } else {
      indices.push_back(checkExpr(index));
      convertBoolToInt(indices.back());
      isSlice.push_back(false);
    }
  }
  TypeStore& ts = module_.types;
  warnIfReductionIndexedAsTuple(tree_.childA(node), indices, isSlice);
  if (ts.isLenient(base.type)) {
    return make(base.type, node);
  }
  for (const ExprInfo& index : indices) {
    if (ts.kind(index.type) == TypeKind::Error) {
      return make(ts.error(), node);  // reported where it came from
    }
  }
  const TypeStore::Node& t = ts.node(base.type);
  if (t.kind == TypeKind::List) {
    if (indices.size() == 1 && isSlice[0]) {
      return make(ts.list(TypeId{t.ref}, UINT32_MAX), node);  // a list, of unknown length
    }
    // Python indexes a list with integers only (a float raises TypeError).
    for (size_t i = 0; i < indices.size(); ++i) {
      const TypeStore::Node& k = ts.node(indices[i].type);
      if (!isSlice[i] && k.kind == TypeKind::Scalar && !isIntegral(k.dtype)) {
        report(Diag::TypeMismatch, indices[i].node, fmt(indices[i].type), "int32");
        return make(ts.error(), node);
      }
    }
    ExprInfo result = make(TypeId{t.ref}, node);
    // A constant index into a list of known length: Python raises IndexError.
    if (indices.size() == 1 && !isSlice[0] && indices[0].intValue && t.count != UINT32_MAX) {
      auto size = static_cast<int64_t>(t.count);
      if (*indices[0].intValue >= size || *indices[0].intValue < -size) {
        report(Diag::ListIndexOutOfRange, indices[0].node, *indices[0].intValue, size);
        return make(ts.error(), node);
      }
    }
    if (indices.size() == 1 && !isSlice[0] && indices[0].intValue && !base.listDims.empty()) {
      std::optional<size_t> i = normalizeDim(*indices[0].intValue, base.listDims.size(),
                                             indices[0].node);
      if (!i) {
        return make(ts.error(), node);
      }
      result.dim = base.listDims[*i];
      if (std::optional<int64_t> value = dims().constValue(result.dim)) {
        result.intValue = value;
      }
    }
    return result;
  }
  if (t.kind != TypeKind::Tensor) {
    report(Diag::NotIndexable, tree_.childA(node), fmt(base.type));
    return make(ts.error(), node);
  }
  if (!t.rankKnown) {
    return make(ts.tensorAnyRank(t.dtype, t.ternary), node);
  }
  std::span<const DimId> shape = ts.shape(base.type);
  if (indices.size() > shape.size()) {
    report(Diag::TooManyIndices, node, static_cast<int64_t>(indices.size()), shape.size());
    return make(ts.error(), node);
  }
  std::vector<DimId> result;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i >= indices.size()) {
      result.push_back(shape[i]);
      continue;
    }
    if (isSlice[i]) {
      NodeId slice = indices[i].node;
      bool full = !tree_.childA(slice).isValid() && !tree_.childB(slice).isValid() &&
                  !tree_.childC(slice).isValid();
      result.push_back(full ? shape[i] : dims().unknown());
      continue;
    }
    const ExprInfo& index = indices[i];
    const TypeStore::Node& it = ts.node(index.type);
    if (ts.isLenient(index.type)) {
      continue;
    }
    if (it.kind == TypeKind::Tensor) {
      return make(ts.tensorAnyRank(t.dtype, t.ternary), node);  // advanced indexing
    }
    if (it.kind != TypeKind::Scalar || !isIntegral(it.dtype)) {
      report(Diag::TypeMismatch, index.node, fmt(index.type), "int32");
      return make(ts.error(), node);
    }
    if (index.intValue) {
      if (std::optional<int64_t> size = dims().constValue(shape[i])) {
        if (*index.intValue >= *size || *index.intValue < -*size) {
          report(Diag::IndexOutOfRange, index.node, *index.intValue, *size);
          return make(ts.error(), node);
        }
      }
    }
  }
  return make(ts.tensor(t.dtype, result, t.ternary), node);
}

// The parameters and buffers of built-in layers, with torch.nn's names and
// shapes (state_dict keys): weight [out, in] or [out, in/groups, kh, kw], bias
// [out], running_mean/var [n]; TernaryLinear/TernaryConv2d weights are ternary.
std::optional<TypeId> Checker::builtinMemberType(const InstanceInfo& instance,
                                                 const std::string& member) {
  auto layer = static_cast<BuiltinLayer>(instance.decl);
  auto arg = [&](size_t i) {
    return i < instance.args.size() ? instance.args[i] : dims().unknown();
  };
  TypeStore& ts = module_.types;
  auto tensor = [&](std::vector<DimId> shape, bool ternary = false) {
    return ts.tensor(ternary ? DType::Trit : DType::Float32, shape, ternary);
  };
  auto isFalse = [&](DimId flag) { return dims().constValue(flag) == std::optional<int64_t>(0); };
  switch (layer) {
    case BuiltinLayer::Linear:
    case BuiltinLayer::TernaryLinear:
      if (member == "weight") return tensor({arg(1), arg(0)}, layer == BuiltinLayer::TernaryLinear);
      if (member == "bias" && !isFalse(arg(2))) return tensor({arg(1)});
      break;
    case BuiltinLayer::Conv2d:
    case BuiltinLayer::TernaryConv2d: {
      DimId groups = dims().isUnknown(arg(5)) ? dims().constant(1) : arg(5);
      DimId kh = arg(2);
      DimId kw = instance.args.size() > 2 ? instance.width(2) : kh;
      if (member == "weight") {
        return tensor({arg(1), dims().binary(DimKind::Div, arg(0), groups), kh, kw},
                      layer == BuiltinLayer::TernaryConv2d);
      }
      if (member == "bias" && !isFalse(arg(6))) return tensor({arg(1)});
      break;
    }
    case BuiltinLayer::BatchNorm1d:
    case BuiltinLayer::BatchNorm2d:
      // affine=false has no weight and bias, track_running_stats=false no statistics.
      if ((member == "weight" || member == "bias") && !isFalse(arg(3))) return tensor({arg(0)});
      if ((member == "running_mean" || member == "running_var") && !isFalse(arg(4))) {
        return tensor({arg(0)});
      }
      break;
    case BuiltinLayer::LayerNorm:
      if ((member == "weight" || member == "bias") && !isFalse(arg(2))) return tensor({arg(0)});
      break;
    case BuiltinLayer::Embedding:
      if (member == "weight") return tensor({arg(0), arg(1)});
      break;
    default: break;
  }
  return std::nullopt;
}

// The flag parameter (by index) that a built-in layer's member needs true:
// bias=, affine=, elementwise_affine=, track_running_stats=; nullopt for
// members no flag turns off.
static std::optional<size_t> memberFlag(BuiltinLayer layer, std::string_view member) {
  bool affine = member == "weight" || member == "bias";
  switch (layer) {
    case BuiltinLayer::Linear:
    case BuiltinLayer::TernaryLinear:
      return member == "bias" ? std::optional<size_t>(2) : std::nullopt;
    case BuiltinLayer::Conv2d:
    case BuiltinLayer::TernaryConv2d:
      return member == "bias" ? std::optional<size_t>(6) : std::nullopt;
    case BuiltinLayer::BatchNorm1d:
    case BuiltinLayer::BatchNorm2d:
      if (affine) return 3;
      if (member == "running_mean" || member == "running_var") return 4;
      return std::nullopt;
    case BuiltinLayer::LayerNorm: return affine ? std::optional<size_t>(2) : std::nullopt;
    default: return std::nullopt;
  }
}

void Checker::noteMemberTurnedOff(DiagnosticBuilder& builder, const InstanceInfo& instance,
                                  std::string_view member) {
  auto layer = static_cast<BuiltinLayer>(instance.decl);
  std::optional<size_t> flag = memberFlag(layer, member);
  if (!flag || *flag >= instance.args.size() ||
      dims().constValue(instance.args[*flag]) != std::optional<int64_t>(0) ||
      !instance.site.isValid()) {
    return;
  }
  std::string_view flagName = builtinLayerParams(layer)[*flag].name;
  // Given, or left to the default (TernaryConv2d's bias=false)?
  size_t positional = 0;
  bool given = false;
  for (NodeId arg : tree_.list(tree_.listB(instance.site))) {
    if (tree_.kind(arg) != NodeKind::NamedArg) {
      given = given || positional++ == *flag;
    } else {
      given = given || tokens().spelling(tree_.token(arg)) == flagName;
    }
  }
  builder.note(Note::MemberTurnedOff, source(), rangeOf(instance.site), spelling(instance.name),
               flagName, given ? "" : " (its default)", member);
}

std::optional<uint32_t> Checker::importedCallable(NodeId callee, uint32_t aliasSymbol) {
  const Symbol& alias = module_.symbols[aliasSymbol];
  const ImportContext::Import& import = imports_->imports[alias.ref];
  std::string member(tokens().spelling(tree_.token(callee)));
  std::vector<std::string_view> names;
  for (uint32_t index : import.exports) {
    std::string_view name = interner_.spelling(module_.callables[index].name);
    if (name == member) {
      return index;
    }
    names.push_back(name);
  }
  for (const ImportContext::Import::Constant& constant : import.constants) {
    names.push_back(interner_.spelling(constant.name));
  }
  SourceRange at = tokens().range(tree_.token(callee));
  auto builder = diags_->report(Diag::NoImportedMember, source(), at, spelling(alias.name),
                                import.path, member);
  if (!diags_->takeSpellCheck()) {
    return std::nullopt;
  }
  if (std::string_view match = closestMatch(member, names); !match.empty()) {
    builder.note(Note::DidYouMean, source(), at, match);
  }
  return std::nullopt;
}

bool Checker::reportForeignMember(NodeId node, NodeId call) {
  // The outermost member of a chain is checked first: `torch.nn.functional.relu`
  // is one report.
  NodeId root = tree_.childA(node);
  NodeId first = node;  // the member right after the root
  while (tree_.kind(root) == NodeKind::Member) {
    first = root;
    root = tree_.childA(root);
  }
  if (tree_.kind(root) != NodeKind::Name || lookup(tokens().identifier(tree_.token(root)))) {
    return false;
  }
  std::string_view rootName = tokens().spelling(tree_.token(root));
  std::string_view firstMember = tokens().spelling(tree_.token(first));
  if (rootName == "self") {
    auto builder = diags_->report(Diag::SelfReference, source(), rangeOf(first));
    std::optional<uint32_t> symbol = lookup(tokens().identifier(tree_.token(first)));
    if (symbol && module_.symbols[*symbol].kind != SymbolKind::Builtin &&
        module_.symbols[*symbol].kind != SymbolKind::BuiltinLayer) {
      builder.note(Note::WriteInstead, source(), rangeOf(first), firstMember);
    }
    return true;
  }
  const char* library = foreignLibrary(rootName);
  if (library == nullptr) {
    return false;
  }
  if (call.isValid()) foreignCalls_.insert(call.index);  // its arguments' True/False: below
  std::string_view member = tokens().spelling(tree_.token(node));
  auto builder = diags_->report(Diag::ForeignName, source(), rangeOf(node), textOf(node), library);
  if (std::optional<std::string_view> name = dslNameForForeign(member)) {
    // `nn.Linear(784, 10)` is `Linear(784, 10)`; `nn.ReLU()` is not `relu()`.
    // The arguments in the language's spelling: torch's `inplace` dropped (there are no
    // in-place ops), `keepdims=True` as `keepdim=true`.
    auto [positional, named] = call.isValid()
                                   ? argumentTexts(call)
                                   : std::pair<std::vector<std::string>, std::vector<std::string>>();
    // The target's parameters: a named argument it does not take is dropped
    // when it only places the tensor (`device=`, `pin_memory=`); any other
    // (`approximate="tanh"`) makes the rewrite `name(...)`, since dropping
    // it would change what the call computes (audit 45E: the note suggested
    // code the checker rejects). A torch dtype value is the language's.
    const std::vector<BuiltinParam>* params = nullptr;
    if (std::optional<BuiltinFn> fn = findBuiltinFn(*name)) params = &builtinFnParams(*fn);
    else if (std::optional<BuiltinLayer> layer = findBuiltinLayer(*name)) {
      params = &builtinLayerParams(*layer);
    }
    bool untranslatable = false;
    std::vector<std::string> kept;
    for (const std::string& arg : named) {
      size_t equal = arg.find('=');
      std::string_view key = std::string_view(arg).substr(0, equal);
      while (!key.empty() && key.back() == ' ') key.remove_suffix(1);
      if (key == "inplace") continue;
      std::optional<std::string_view> ours = torchArgumentName(key);
      std::string_view value =
          equal == std::string::npos ? std::string_view() : std::string_view(arg).substr(equal + 1);
      while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
      std::string_view effective = ours ? *ours : key;
      if (params != nullptr && equal != std::string::npos &&
          std::none_of(params->begin(), params->end(), [&](const BuiltinParam& p) {
            return p.name == effective || p.alias == effective;
          })) {
        for (std::string_view placement :
             {"device", "pin_memory", "layout", "memory_format", "non_blocking", "requires_grad"}) {
          if (key == placement) effective = {};
        }
        if (!effective.empty()) untranslatable = true;
        continue;
      }
      std::string shown(value);
      for (std::string_view prefix : {"torch.", "th."}) {
        if (value.substr(0, prefix.size()) != prefix) continue;
        std::string_view rest = value.substr(prefix.size());
        if (std::optional<std::string_view> dtype = dslDTypeForForeign(rest)) {
          shown = std::string(*dtype);
        }
      }
      kept.push_back(equal != std::string::npos ? fmt::format("{}={}", effective, shown) : arg);
    }
    bool callable = call.isValid() && !untranslatable &&
                    (findBuiltinLayer(*name) || !positional.empty() || !kept.empty());
    if (callable) {
      std::vector<std::string> all = positional;
      all.insert(all.end(), kept.begin(), kept.end());
      std::string rewrite = fmt::format("{}({})", *name, fmt::join(all, ", "));
      // `torch.zeros(b, t, 8)` takes the sizes one by one: `zeros([b, t, 8])`.
      if (std::optional<std::string> sizes = sizesAsListRewrite(*name, positional, kept)) {
        rewrite = *sizes;
      }
      builder.note(Note::WriteInstead, source(), rangeOf(call), pythonBoolsAsDsl(rewrite));
    } else if (call.isValid() && (findBuiltinFn(*name) || untranslatable)) {
      // `let act = nn.ReLU()` then `act(h)`: the function is applied directly.
      builder.note(Note::WriteInstead, source(), rangeOf(call), fmt::format("{}(...)", *name));
    } else {
      builder.note(Note::WriteInstead, source(), rangeOf(node), *name);
    }
    if (std::optional<std::string_view> ternary = ternaryCounterpart(*name)) {
      builder.note(Note::TernaryCounterpart, *ternary);
    }
  } else if (std::optional<std::string_view> hint = missingFunctionHint(member)) {
    builder.note(Note::NoSuchFunction, member, *hint);  // `torch.tril(...)`
  }
  return true;
}

ExprInfo Checker::checkMember(NodeId node) {
  NodeId call = std::exchange(memberCall_, NodeId{});
  if (reportForeignMember(node, call)) {
    return make(module_.types.error(), node);
  }
  NodeId baseNode = tree_.childA(node);
  if (tree_.kind(baseNode) == NodeKind::Name) {
    std::optional<uint32_t> symbol = lookup(tokens().identifier(tree_.token(baseNode)));
    if (symbol && module_.symbols[*symbol].kind == SymbolKind::ImportAlias) {
      module_.nodeSymbol[baseNode.index] = *symbol;
      // `alias.CONSTANT`: a value.
      const ImportContext::Import& import = imports_->imports[module_.symbols[*symbol].ref];
      std::string_view member = tokens().spelling(tree_.token(node));
      for (const ImportContext::Import::Constant& constant : import.constants) {
        if (interner_.spelling(constant.name) == member) {
          uint64_t key = (uint64_t{module_.symbols[*symbol].ref} << 32) | constant.global;
          auto [it, inserted] = qualifiedConstants_.emplace(key, 0);
          if (inserted) {
            it->second = declareImportedConstant(constant, import.item, /*inScope=*/false);
          }
          module_.nodeSymbol[node.index] = it->second;
          ExprInfo info = symbolValue_[it->second];
          info.type = constant.type;
          info.node = node;
          return info;
        }
      }
      if (std::optional<uint32_t> callable = importedCallable(node, *symbol)) {
        std::string text(tokens().source().text().substr(
            rangeOf(node).begin, rangeOf(node).end - rangeOf(node).begin));
        report(Diag::NotAValue, node, text,
               module_.callables[*callable].isFn ? "a function" : "a layer");
      }
      return make(module_.types.error(), node);
    }
  }
  ExprInfo base = checkExpr(baseNode);
  std::string member(tokens().spelling(tree_.token(node)));
  TypeStore& ts = module_.types;
  if (ts.isLenient(base.type)) {
    return make(ts.kind(base.type) == TypeKind::Error ? ts.error() : ts.unknown(), node);
  }
  const TypeStore::Node& t = ts.node(base.type);
  if (t.kind == TypeKind::Tensor) {
    if (member == "shape") {
      ExprInfo result;
      result.node = node;
      if (t.rankKnown) {
        std::span<const DimId> shape = ts.shape(base.type);
        result.listDims.assign(shape.begin(), shape.end());
        result.type = ts.list(int32_, static_cast<uint32_t>(shape.size()));
      } else {
        result.type = ts.list(int32_, UINT32_MAX);
      }
      return result;
    }
    if (member == "T") {
      if (!t.rankKnown) {
        return make(base.type, node);
      }
      std::vector<DimId> shape(ts.shape(base.type).rbegin(), ts.shape(base.type).rend());
      return make(ts.tensor(t.dtype, shape, t.ternary), node);
    }
  }
  if (t.kind == TypeKind::Instance) {
    const InstanceInfo& instance = module_.instances[t.ref];
    if (!instance.builtin) {
      const CallableInfo& layer = module_.callables[instance.decl];
      std::unordered_map<uint32_t, DimId> bindings;
      size_t h = 0;
      for (const ParamInfo& p : layer.params) {
        if (p.cls == ParamClass::Hyper) {
          if (h < instance.args.size() && instance.args[h].isValid()) {
            bindings[p.name.index] = instance.args[h];
          }
          ++h;
        }
      }
      for (const ParamInfo& p : layer.params) {
        if (p.cls == ParamClass::Weight && spelling(p.name) == member) {
          return make(substituteType(p.type, bindings), node);
        }
      }
    }
  }
  if (t.kind == TypeKind::BuiltinInstance) {
    if (std::optional<TypeId> type = builtinMemberType(module_.instances[t.ref], member)) {
      return make(*type, node);
    }
  }
  // In the arguments of a tensor method already reported (`x.view(x.size(0), -1)`, whose
  // note writes `reshape(x, [x.shape[0], -1])`), one is not a second error: the same habit.
  if (t.kind == TypeKind::Tensor && foreignArgs_ > 0) return make(ts.error(), node);
  auto builder = diags_->report(Diag::NoMember, source(), rangeOf(node), fmt(base.type), member);
  if (t.kind == TypeKind::BuiltinInstance) {
    noteMemberTurnedOff(builder, module_.instances[t.ref], member);
  }
  if ((t.kind == TypeKind::Instance || t.kind == TypeKind::BuiltinInstance) &&
      member == "forward" && call.isValid()) {
    // PyTorch's `fc.forward(x)`: an instance is called.
    std::string_view text = textOf(call);
    builder.note(Note::WriteInstead, source(), rangeOf(call),
                 fmt::format("{}{}", textOf(baseNode), text.substr(textOf(node).size())));
  }
  if (t.kind == TypeKind::Tensor) {
    // `x.view(-1, 784)`, `x.mean(dim=1)`, `x.size(0)`: PyTorch's methods.
    std::string_view args;
    int positional = 0;
    if (call.isValid()) {
      auto list = tree_.list(tree_.listB(call));
      if (!list.empty()) {
        uint32_t begin = rangeOf(list.front()).begin;
        uint32_t end = rangeOf(list.back()).end;
        args = source().text().substr(begin, end - begin);
      }
      for (NodeId arg : list) {
        positional += tree_.kind(arg) == NodeKind::NamedArg ? 0 : 1;
      }
    }
    if (std::optional<std::string> rewrite = tensorMethodRewrite(
            textOf(baseNode), member, args, positional, call.isValid())) {
      builder.note(Note::NoTensorMethods, source(),
                   call.isValid() ? rangeOf(call) : rangeOf(node), *rewrite);
      if (call.isValid()) foreignCalls_.insert(call.index);
    } else if (std::optional<std::string_view> hint = missingFunctionHint(member)) {
      builder.note(Note::NoSuchFunction, member, *hint);  // `scores.masked_fill(mask, v)`
    }
  }
  return make(ts.error(), node);
}

// ---- assignability ---------------------------------------------------------------------

ExprInfo Checker::literalToContext(const ExprInfo& value, TypeId target) {
  ExprInfo result = value;
  if (value.literal && module_.types.isScalar(value.type) && module_.types.isScalar(target)) {
    result.type = target;
    result.literal = false;
  }
  return result;
}

bool Checker::checkAssignable(const ExprInfo& value, TypeId target, NodeId where, bool quiet) {
  if (!quiet) {
    bool ok = checkAssignableImpl(value, target, where);
    if (ok) {
      noteConversion(value, target, where);
    }
    return ok;
  }
  // The same rules with their reports discarded.
  CollectingDiagnosticConsumer sink;
  DiagnosticEngine silent(sink);
  DiagnosticEngine* saved = diags_;
  diags_ = &silent;
  bool ok = checkAssignableImpl(value, target, where);
  diags_ = saved;
  if (ok) {
    noteConversion(value, target, where);
  }
  return ok;
}

bool Checker::literalAdapts(const ExprInfo& literal, DType literalDType, DType context) const {
  if (isFloating(literalDType) && !isFloating(context)) {
    return false;  // `n * 0.5` is a float
  }
  if (context == DType::Bool) {
    return false;  // `flag + 1` is an int, `mask * 2` an int32 tensor
  }
  if (literal.intValue && isIntegral(literalDType)) {
    return fitsInteger(context == DType::Trit ? DType::Int8 : context, *literal.intValue);
  }
  return !literal.floatValue || fitsFloat(context, *literal.floatValue);
}

DType Checker::elementwiseDType(const ExprInfo& a, const ExprInfo& b) const {
  const TypeStore& ts = module_.types;
  const TypeStore::Node& ta = ts.node(a.type);
  const TypeStore::Node& tb = ts.node(b.type);
  DType da = ta.ternary ? DType::Float32 : ta.dtype;
  DType db = tb.ternary ? DType::Float32 : tb.dtype;
  DType dtype = promote(da, db);
  if (ta.kind != tb.kind) {
    bool aTensor = ta.kind == TypeKind::Tensor;
    const ExprInfo& number = aTensor ? b : a;
    DType tensorDType = aTensor ? da : db;
    if (number.literal && literalAdapts(number, aTensor ? db : da, tensorDType)) {
      dtype = tensorDType;
    }
  }
  return dtype == DType::Trit ? DType::Int8 : dtype;
}

void Checker::convertOperand(const ExprInfo& value, const ExprInfo& other, DType dtype) {
  TypeStore& ts = module_.types;
  if (!ts.isTensor(value.type) || dtype == DType::Bool || dtype == DType::Trit) return;
  DType own = ts.node(value.type).dtype;
  if (own == dtype) return;
  if (own == DType::Trit) {
    // Trit tensors are held as float32 (docs/pytorch.md). A ternary value's
    // integer results (`a + b`) are scaled floats too; a plain trit tensor's
    // -1, 0 and 1 are exact in any dtype, and converted so that torch's
    // result has the checker's dtype (an int8 one, a float16 one).
    if (dtype == DType::Float32 || (ts.node(value.type).ternary && !isFloating(dtype))) return;
    convertTo(value, dtype);
    return;
  }
  if (isIntegral(own) && isFloating(dtype)) {
    // An integer tensor with a float: torch takes the float tensor's dtype,
    // or float32 for a Python float; only a float16 or bfloat16 number needs
    // the conversion.
    bool otherScalar = ts.kind(other.type) == TypeKind::Scalar;
    if (!otherScalar || dtype == DType::Float32) return;
  }
  convertTo(value, dtype);
}

// The dtype of a product of `a` and `b` (`@`, linear) by operand kinds
// (LANGUAGE.md §3): ternary @ ternary is int32, ternary with another the other's
// float dtype (float32 for an integer one), else the promotion, where sums of
// products of trits are int32 too.
DType Checker::productDType(const TypeStore::Node& a, const TypeStore::Node& b) {
  if (a.ternary && b.ternary) return DType::Int32;
  if (a.ternary || b.ternary) {
    const TypeStore::Node& other = a.ternary ? b : a;
    return isFloating(other.dtype) ? other.dtype : DType::Float32;
  }
  DType dtype = promote(a.dtype, b.dtype);
  return dtype == DType::Trit ? DType::Int32 : dtype;
}

void Checker::convertToProduct(const ExprInfo& value, DType dtype) {
  // Ternary values are scaled floats (docs/pytorch.md): never converted to
  // an integer; a plain trit tensor's -1, 0 and 1 are exact in any dtype.
  const TypeStore::Node& t = module_.types.node(value.type);
  if (isFloating(dtype) || !t.ternary) convertTo(value, dtype);
}

void Checker::convertToFloat(const ExprInfo& value, DType dtype) {
  if (isFloating(dtype)) convertTo(value, dtype);
}

void Checker::convertTo(const ExprInfo& value, DType dtype) {
  TypeStore& ts = module_.types;
  if (!value.node.isValid() || !ts.isTensor(value.type)) return;
  const TypeStore::Node& t = ts.node(value.type);
  // What the value holds at run time: trit tensors are float32.
  if ((t.ternary || t.dtype == DType::Trit ? DType::Float32 : t.dtype) == dtype) return;
  module_.conversions[value.node.index] = ts.withDType(value.type, dtype);
}

void Checker::noteConversion(const ExprInfo& value, TypeId target, NodeId node) {
  TypeStore& ts = module_.types;
  if (ts.isLenient(value.type) || ts.isLenient(target) || value.type == target ||
      !node.isValid()) {
    return;
  }
  const TypeStore::Node& v = ts.node(value.type);
  const TypeStore::Node& t = ts.node(target);
  if (v.kind == TypeKind::Scalar && t.kind == TypeKind::Scalar) {
    // A literal number, maybe negated, is written in the target type (`7.0`).
    std::vector<NodeId> chain{node};
    while (tree_.kind(chain.back()) == NodeKind::Paren ||
           (tree_.kind(chain.back()) == NodeKind::Unary &&
            tokens().kind(tree_.token(chain.back())) != TokenKind::Bang)) {
      chain.push_back(tree_.childA(chain.back()));
    }
    NodeKind leaf = tree_.kind(chain.back());
    if (value.literal && (leaf == NodeKind::IntLit || leaf == NodeKind::FloatLit)) {
      for (NodeId n : chain) {
        setType(n, target);
      }
      return;
    }
    // Other expressions keep their own arithmetic (`7 / 2` is floor division
    // of integers) and convert their value where that changes it: to a float,
    // or from or to bool. Integers of any width are one Python int.
    bool toFloat = isFloating(t.dtype) && !isFloating(v.dtype);
    bool boolChange = (v.dtype == DType::Bool) != (t.dtype == DType::Bool);
    if (toFloat || boolChange) {
      module_.conversions[node.index] = target;
    }
    return;
  }
  if (v.kind == TypeKind::List && t.kind == TypeKind::Tensor) {
    // A list literal bound to a tensor type becomes that tensor (`tensor(...)`).
    module_.conversions[node.index] = target;
    return;
  }
  if (v.kind == TypeKind::Tensor && t.kind == TypeKind::Tensor && !t.ternary &&
      v.dtype != t.dtype) {
    // An int8 (or ternary) tensor bound to a float32 one is cast to it, as
    // torch would not: `x @ w` of an int8 x and a float w is an error there.
    module_.conversions[node.index] = ts.withDType(value.type, t.dtype);
  }
}

bool Checker::elementsFit(const ExprInfo& value, DType dtype) {
  // An element known only when it runs must widen to the dtype, as a `let`
  // of it must (`tensor([n, 2], dtype=int8)` of an `int` n would overflow).
  if (const auto& v = value.widestVariable;
      v && v->first != DType::Str && promote(v->first, dtype) != dtype) {
    diags_->report(Diag::NarrowingConversion, source(), rangeOf(v->second),
                   fmt(module_.types.scalar(v->first)), dtypeName(dtype))
        .note(Note::SuggestCast, dtypeName(dtype));
    return false;
  }
  for (const std::optional<ExprInfo::Element>& e : {value.lowest, value.highest}) {
    if (!e) continue;
    // Integers are checked as integers (int64's largest is no double), and
    // a float element in an integer tensor is a TypeMismatch already.
    bool fits = e->integer ? fitsInteger(dtype, *e->integer)
                           : isIntegral(dtype) || fitsFloat(dtype, e->value);
    if (!fits) {
      report(Diag::LiteralDoesNotFit, e->node,
             fmt::format("the value {}",
                         e->integer ? std::to_string(*e->integer) : formatFloat(e->value)),
             dtypeName(dtype));
      return false;
    }
  }
  return true;
}

// The element of a list literal (or `tensor(...)` of one) that keeps it from
// being ternary, when it is a known number past -1 or 1: a note points at it.
namespace {
// The float hyperparameter the name `node` reads, if it is one.
const ParamInfo* floatHyperName(const CheckedModule& module, const Tree& tree, int callable,
                                NodeId node) {
  if (callable < 0 || !node.isValid() || tree.kind(node) != NodeKind::Name) return nullptr;
  uint32_t symbol = module.nodeSymbol[node.index];
  if (symbol == kNoSymbol || module.symbols[symbol].kind != SymbolKind::Param) return nullptr;
  const std::vector<ParamInfo>& params = module.callables[static_cast<size_t>(callable)].params;
  uint32_t ref = module.symbols[symbol].ref;
  if (ref >= params.size() || params[ref].cls != ParamClass::Hyper || params[ref].implicit) {
    return nullptr;
  }
  const ParamInfo& p = params[ref];
  if (!module.types.isScalar(p.type) || !isFloating(module.types.node(p.type).dtype)) return nullptr;
  // A fractional default (`scale: float32 = 0.5`) says a float is meant.
  if (p.defaultFloat && std::trunc(*p.defaultFloat) != *p.defaultFloat) return nullptr;
  return &p;
}

// The first float hyperparameter expression `node` reads (`width`, `2 * width`).
const ParamInfo* floatHyperOf(const CheckedModule& module, const Tree& tree, int callable,
                              NodeId node) {
  const ParamInfo* found = nullptr;
  if (callable < 0 || !node.isValid()) return nullptr;
  tree.forEachNodeWhile(node, [&](NodeId n) {
    found = floatHyperName(module, tree, callable, n);
    return found == nullptr;
  });
  return found;
}
}  // namespace

bool Checker::floatHyperAgain(NodeId node) {
  const ParamInfo* p = floatHyperOf(module_, tree_, ctx_.callable, node);
  return p != nullptr && floatHypersReported_.count(floatHyperKey(p)) != 0;
}

void Checker::noteFloatHyper(DiagnosticBuilder& builder, NodeId node) {
  const ParamInfo* p = floatHyperOf(module_, tree_, ctx_.callable, node);
  if (p == nullptr || !floatHypersReported_.insert(floatHyperKey(p)).second) return;
  if (p->node.isValid()) {
    builder.note(Note::FloatHyperDeclared, source(), rangeOf(p->node), spelling(p->name),
                 fmt(p->type));
  }
}

void Checker::noteNotATrit(DiagnosticBuilder& builder, const ExprInfo& value) {
  const std::optional<ExprInfo::Element>& e =
      value.highest && value.highest->value > 1.0 ? value.highest
      : value.lowest && value.lowest->value < -1.0 ? value.lowest
                                                    : std::optional<ExprInfo::Element>();
  if (e && e->node.isValid()) builder.note(Note::NotATrit, source(), rangeOf(e->node), textOf(e->node));
}

bool Checker::checkAssignableImpl(const ExprInfo& value, TypeId target, NodeId where) {
  TypeStore& ts = module_.types;
  // Constants past int64 fit no integer type (`let z: int = 3 ** 40`).
  if (value.pastInt64 && !ts.isLenient(target) && ts.isScalar(target) &&
      isIntegral(ts.node(target).dtype) && ts.node(target).dtype != DType::Bool) {
    reportPastInt64(where, ts.node(target).dtype);
    return false;
  }
  // A known integer is checked against the type it goes to even when its
  // own type is that one (`let x: int = 2147483647 + 1`), as against a
  // narrower one (`let y: int16 = 32767 + 1`).
  if (value.type == target && value.intValue && ts.isScalar(target) &&
      isIntegral(ts.node(target).dtype) && ts.node(target).dtype != DType::Bool &&
      !fitsInteger(ts.node(target).dtype, *value.intValue)) {
    report(Diag::LiteralDoesNotFit, where, fmt::format("the value {}", *value.intValue),
           dtypeName(ts.node(target).dtype));
    return false;
  }
  // A float constant past the largest float32 is inf in a tensor, as
  // 70000.0 is in a float16 one (`let k: float32 = 1e39`).
  if (value.floatValue && !ts.isLenient(target) && ts.kind(target) == TypeKind::Scalar &&
      isFloating(ts.node(target).dtype) && !fitsFloat(ts.node(target).dtype, *value.floatValue)) {
    report(Diag::LiteralDoesNotFit, where,
           fmt::format("the value {}", formatFloat(*value.floatValue)),
           dtypeName(ts.node(target).dtype));
    return false;
  }
  // A sum or product of ternary values with a scale (`a + b` of two weights: an int8
  // type, a float32 value) goes on to the NarrowingConversion below even into its own type.
  bool scaledIntoOwnType = value.type == target && value.scaled && !ts.isLenient(target) &&
                           !ts.node(target).ternary && ts.node(target).dtype != DType::Float32;
  if (ts.isLenient(value.type) || ts.isLenient(target) ||
      (value.type == target && !scaledIntoOwnType)) {
    // An integer scalar computed past its type's range stays a Python int
    // when it runs (docs/language.md), so it is not an error here.
    return true;
  }
  const TypeStore::Node& v = ts.node(value.type);
  const TypeStore::Node& t = ts.node(target);
  if (t.kind == TypeKind::Scalar && v.kind == TypeKind::Scalar) {
    if (value.literal) {
      // Literals take the type their context asks for when the value fits.
      if (value.intValue && isIntegral(v.dtype) && t.dtype != DType::Str) {
        if (!fitsInteger(t.dtype, *value.intValue)) {
          report(Diag::LiteralDoesNotFit, where, fmt::format("the value {}", *value.intValue),
                 dtypeName(t.dtype));
          return false;
        }
        return true;
      }
      if (value.floatValue && isFloating(t.dtype)) {
        return true;  // one that does not fit was reported above
      }
    }
    if (v.dtype == DType::Str || t.dtype == DType::Str) {
      report(Diag::TypeMismatch, where, fmt(value.type), fmt(target));
      return false;
    }
    if (promote(v.dtype, t.dtype) == t.dtype && !(v.dtype != DType::Bool && t.dtype == DType::Bool)) {
      return true;  // implicit widening
    }
    if (isIntegral(t.dtype) && floatHyperAgain(where)) return false;  // reported once
    auto builder = diags_->report(Diag::NarrowingConversion, source(), rangeOf(where),
                                  fmt(value.type), fmt(target));
    if (isIntegral(t.dtype)) noteFloatHyper(builder, where);
    // `let scale: int = 0.5`: the cast would make it 0; the type is the mistake.
    NodeId literal = where;
    while (literal.isValid() && tree_.kind(literal) == NodeKind::Paren) {
      literal = tree_.childA(literal);
    }
    if (value.floatValue && isIntegral(t.dtype) && t.dtype != DType::Bool &&
        std::trunc(*value.floatValue) != *value.floatValue) {
      builder.note(Note::FractionDropped, formatFloat(*value.floatValue), dtypeName(t.dtype));
    } else if (value.floatValue && isIntegral(t.dtype) && t.dtype != DType::Bool &&
               literal.isValid() && tree_.kind(literal) == NodeKind::FloatLit &&
               std::fabs(*value.floatValue) < 9.0e15) {
      // `Block(32.0)` for an int: the literal without its fraction.
      builder.note(Note::WriteInstead, fmt::format("{}", static_cast<int64_t>(*value.floatValue)));
    } else {
      builder.note(Note::SuggestCast, dtypeName(t.dtype));
    }
    return false;
  }
  if (t.kind == TypeKind::Tensor && v.kind == TypeKind::Tensor) {
    if (t.ternary && !v.ternary && !value.tritValued) {
      std::string text(tokens().source().text().substr(rangeOf(where).begin,
                                                      rangeOf(where).end - rangeOf(where).begin));
      auto builder = diags_->report(Diag::NotTernary, source(), rangeOf(where), fmt(value.type),
                                   fmt(target));
      noteNotATrit(builder, value);  // `tensor([1, 2])`
      // LANGUAGE.md section 3: the error suggests ternary_quantize(...), which
      // takes integer tensors too (`w + w` is an int8-valued tensor).
      if (v.dtype != DType::Bool && v.dtype != DType::Str) {
        builder.note(Note::SuggestQuantize, text.size() <= 60 ? text : std::string("..."));
      }
      return false;
    }
    // A ternary value is `s * q`, a float32 (docs/language.md): where its scale
    // is known not to be 1 only a float32 tensor takes it implicitly (int8
    // would truncate or wrap the scaled values, float16 overflow them). Others
    // widen as §3's trit < int8 says.
    bool narrowed = v.ternary || value.scaled
                        ? !t.ternary && t.dtype != DType::Float32 && value.scaled
                        : !t.ternary && v.dtype != t.dtype && promote(v.dtype, t.dtype) != t.dtype;
    if (narrowed) {
      auto builder = diags_->report(Diag::NarrowingConversion, source(), rangeOf(where),
                                    fmt(value.type), fmt(target));
      // act_quant_int8 is a fake quantization: float values on the int8 grid,
      // which an int8() cast would truncate. The declared type is the mistake.
      NodeId operand = value.node;
      while (operand.isValid() && tree_.kind(operand) == NodeKind::Paren) {
        operand = tree_.childA(operand);
      }
      uint32_t call = operand.isValid() && operand.index < module_.callOf.size()
                          ? module_.callOf[operand.index] : UINT32_MAX;
      if (call < module_.calls.size() && module_.calls[call].kind == CallKind::Builtin &&
          module_.calls[call].callee == static_cast<uint32_t>(BuiltinFn::ActQuantInt8)) {
        builder.note(Note::WriteInstead, fmt(ts.withDType(target, v.dtype)));
      } else if (!v.ternary && value.scaled) {
        builder.note(Note::ScaledTernaryValues, dtypeName(t.dtype),
                     fmt(ts.withDType(target, DType::Float32)));
      } else {
        builder.note(Note::SuggestCast, dtypeName(t.dtype));
      }
      return false;
    }
    if (t.rankKnown && v.rankKnown) {
      std::span<const DimId> ts1 = ts.shape(target);
      std::span<const DimId> vs = ts.shape(value.type);
      if (ts1.size() != vs.size()) {
        auto builder = diags_->report(Diag::TypeMismatch, source(), rangeOf(where),
                                      fmt(value.type), fmt(target));
        if (ts1.size() == 2) flattenHint(builder, value, ts1[1]);
        return false;
      }
      for (size_t i = 0; i < ts1.size(); ++i) {
        switch (dims().equal(ts1[i], vs[i])) {
          case Decision::No:
            diags_->report(Diag::TypeMismatch, source(), rangeOf(where), fmt(value.type), fmt(target))
                .note(Note::DimensionDetail, i, dims().format(vs[i], interner_),
                      dims().format(ts1[i], interner_));
            return false;
          case Decision::Unknown:
            recordRuntimeCheck(where, where, i, ts1[i], vs[i]);  // `?` declared: nothing
            break;
          case Decision::Yes: break;
        }
      }
    } else if (t.rankKnown) {
      // A value of unknown rank (`squeeze` of a `?` dimension, a `Tensor<float32>`
      // input): its rank and every size the declared type fixes, at run time.
      std::span<const DimId> ts1 = ts.shape(target);
      recordRuntimeCheck(where, where, RuntimeShapeCheck::kRank,
                         dims().constant(static_cast<int64_t>(ts1.size())), dims().unknown());
      for (size_t i = 0; i < ts1.size(); ++i) {
        recordRuntimeCheck(where, where, i, ts1[i], dims().unknown());
      }
    }
    return true;
  }
  if (t.kind == TypeKind::Tensor && v.kind == TypeKind::List) {
    // A list literal is a tensor constant (LANGUAGE.md §3): its nesting is the
    // shape, and all of -1/0/1 makes it ternary.
    TypeId element{v.ref};
    while (ts.kind(element) == TypeKind::List) {
      element = TypeId{ts.node(element).ref};
    }
    if (value.ragged) {
      report(Diag::RaggedList, where);
      return false;
    }
    if (t.ternary && !value.tritValued) {  // all -1/0/1 (allTrits: as integers)
      std::string_view text = textOf(where);
      auto builder = diags_->report(Diag::NotTernary, source(), rangeOf(where), fmt(value.type),
                                    fmt(target));
      noteNotATrit(builder, value);
      builder.note(Note::SuggestQuantize, text.size() <= 52 && text.find('\n') == text.npos
                                              ? fmt::format("tensor({})", text)
                                              : std::string("tensor(...)"));
      return false;
    }
    if (ts.isScalar(element) && !t.ternary) {
      DType e = ts.node(element).dtype;
      if (e == DType::Str || (isFloating(e) && isIntegral(t.dtype))) {
        report(Diag::TypeMismatch, where, fmt(value.type), fmt(target));
        return false;
      }
      if (!elementsFit(value, t.dtype)) return false;
    }
    if (value.listShape.empty() && !ts.isLenient(TypeId{v.ref})) {
      // A list value (`x.shape`, `split(x, 2)`), not a literal: a list of numbers is a
      // 1-D tensor of its length (audit 59: `return x.shape` for `[?, 4]` compiled).
      TypeId inner{v.ref};
      bool numbers = ts.isScalar(inner);
      bool mismatch = ts.isTensor(inner);  // a list of tensors: stack(...)
      if (numbers && t.rankKnown) {
        std::span<const DimId> want = ts.shape(target);
        mismatch = want.size() != 1 ||
                   (v.count != UINT32_MAX &&
                    dims().equal(want[0], dims().constant(static_cast<int64_t>(v.count))) ==
                        Decision::No);
      }
      if (mismatch) {
        report(Diag::TypeMismatch, where, fmt(value.type), fmt(target));
        return false;
      }
    }
    if (t.rankKnown && !value.listShape.empty()) {
      std::span<const DimId> want = ts.shape(target);
      if (want.size() != value.listShape.size()) {
        report(Diag::TypeMismatch, where, fmt(value.type), fmt(target));
        return false;
      }
      for (size_t i = 0; i < want.size(); ++i) {
        if (dims().equal(want[i], value.listShape[i]) == Decision::No) {
          diags_->report(Diag::TypeMismatch, source(), rangeOf(where), fmt(value.type), fmt(target))
              .note(Note::DimensionDetail, i, dims().format(value.listShape[i], interner_),
                    dims().format(want[i], interner_));
          return false;
        }
      }
    }
    return true;
  }
  if (t.kind == v.kind && t.kind != TypeKind::Scalar && t.kind != TypeKind::Tensor) {
    return true;  // lists, instances, ranges: structural checks come with their uses
  }
  report(Diag::TypeMismatch, where, fmt(value.type), fmt(target));
  return false;
}

// Whether two names differ by a whole word rather than by a typo:
// `in_features` and `out_features`, `h` and `w`, `d_q` and `d_k` name two
// sizes on purpose; `n_inp` and `n_in`, `hidden` and `hiden` look like one.
// The names are split at '_' and digits; the differing part, the first word
// that is not the same, is a typo when one word starts the other or they
// share a letter at the same place.
static bool differentWords(std::string_view a, std::string_view b) {
  // Words: split at '_', digits, and a lower-case letter followed by an upper-case
  // one (`inChannels` is `in`, `Channels`).
  auto words = [](std::string_view name) {
    std::vector<std::string_view> out;
    size_t start = 0;
    for (size_t i = 0; i <= name.size(); ++i) {
      if (i == name.size() || name[i] == '_' || std::isdigit(static_cast<unsigned char>(name[i]))) {
        if (i > start) out.push_back(name.substr(start, i - start));
        start = i + 1;
      } else if (i > start && std::islower(static_cast<unsigned char>(name[i - 1])) &&
                 std::isupper(static_cast<unsigned char>(name[i]))) {
        out.push_back(name.substr(start, i - start));
        start = i;
      }
    }
    return out;
  };
  // Numbered sizes (`c1`, `c2`; `dim1`, `dim2`) are numbered on purpose.
  auto letters = [](std::string_view name) {
    std::string out;
    for (char ch : name) {
      if (!std::isdigit(static_cast<unsigned char>(ch))) out += ch;
    }
    return out;
  };
  if (letters(a) == letters(b)) return true;
  std::vector<std::string_view> x = words(a), y = words(b);
  if (x.size() != y.size()) return false;
  size_t differing = 0;
  std::string_view p, q;
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i] != y[i]) {
      ++differing;
      p = x[i];
      q = y[i];
    }
  }
  if (differing != 1) return false;
  if (p.starts_with(q) || q.starts_with(p)) return false;
  for (size_t i = 0; i < std::min(p.size(), q.size()); ++i) {
    if (p[i] == q[i]) return false;
  }
  return true;
}

bool Checker::testedEqual(IdentifierId a, IdentifierId b) const {
  // `x == y` (or `y == x`) as a conjunct of `cond`, or `x != y` as a
  // disjunct when `negated` (the else-branch of its if).
  auto names = [&](NodeId x, NodeId y) {
    if (tree_.kind(x) != NodeKind::Name || tree_.kind(y) != NodeKind::Name) return false;
    IdentifierId p = tokens().identifier(tree_.token(x));
    IdentifierId q = tokens().identifier(tree_.token(y));
    return (p == a && q == b) || (p == b && q == a);
  };
  auto implies = [&](auto& self, NodeId cond, bool negated) -> bool {
    while (tree_.kind(cond) == NodeKind::Paren) cond = tree_.childA(cond);
    if (tree_.kind(cond) != NodeKind::Binary) return false;
    TokenKind op = tokens().kind(tree_.token(cond));
    if (op == (negated ? TokenKind::PipePipe : TokenKind::AmpAmp)) {
      return self(self, tree_.childA(cond), negated) || self(self, tree_.childB(cond), negated);
    }
    return op == (negated ? TokenKind::BangEqual : TokenKind::EqualEqual) &&
           names(tree_.childA(cond), tree_.childB(cond));
  };
  for (auto [ifNode, branch] : ctx_.branches) {
    if (implies(implies, tree_.childA(NodeId{ifNode}), branch != 0)) return true;
  }
  return false;
}

void Checker::recordRuntimeCheck(NodeId node, NodeId value, size_t dim, DimId expected,
                                 DimId actual, NodeId other, size_t otherDim) {
  if (!value.isValid() || noRuntimeChecks_) {
    return;
  }
  if (dims().isUnknown(expected)) {
    // `?` against `?`: the two values' sizes are compared when they run
    // (not a variable's with its own: `concat([f, f], dim=1)`).
    bool itself = other.isValid() && tree_.kind(value) == NodeKind::Name &&
                  tree_.kind(other) == NodeKind::Name &&
                  dim == otherDim && module_.nodeSymbol[value.index] != kNoSymbol &&
                  module_.nodeSymbol[value.index] == module_.nodeSymbol[other.index];
    if (other.isValid() && dims().isUnknown(actual) && !itself) {
      module_.runtimeChecks.push_back(RuntimeShapeCheck{node, value, static_cast<uint32_t>(dim),
                                                        expected, actual, other,
                                                        static_cast<uint32_t>(otherDim)});
      placeRuntimeCheck(module_.runtimeChecks.back());
    }
    return;
  }
  warnSimilarSizeVariables(node, actual, expected);
  module_.runtimeChecks.push_back(
      RuntimeShapeCheck{node, value, static_cast<uint32_t>(dim), expected, actual});
  placeRuntimeCheck(module_.runtimeChecks.back());
}

void Checker::warnSimilarSizeVariables(NodeId node, DimId actual, DimId expected,
                                       size_t minLength) {
  // `x: [?, n_inp]` against a weight's `[n_in, ...]`, or `[?, hiddden] + [?,
  // hidden]`: two size variables spelled nearly alike are most likely one
  // size with a typo, which would otherwise fail only when the model runs
  // (or, in a weight's shape, leave the constructor an extra argument).
  const DimStore::Node& e = dims().node(expected);
  const DimStore::Node& a = dims().node(actual);
  if (e.kind == DimKind::Var && a.kind == DimKind::Var && e.var != a.var) {
    std::string_view have = interner_.spelling(a.var);
    std::string_view want = interner_.spelling(e.var);
    // Closer than a "did you mean" needs: `rows` and `cols` (two letters) are two
    // sizes; one edit, or two in long names, is a typo.
    unsigned limit = std::min(have.size(), want.size()) >= 8 ? 2 : 1;
    if (std::min(have.size(), want.size()) >= minLength && !closestMatch(have, std::vector<std::string_view>{want}).empty() &&
        editDistance(have, want, limit) <= limit && !differentWords(have, want) &&
        !testedEqual(a.var, e.var) &&
        warnedSizePairs_.emplace(std::min(a.var.index, e.var.index),
                                 std::max(a.var.index, e.var.index))
            .second) {
      report(Diag::SimilarSizeVariables, node, have, want);
    }
  }
}

void Checker::placeRuntimeCheck(RuntimeShapeCheck& check) const {
  check.owner = ctx_.isFn || ctx_.isMain ? -1 : ctx_.callable;
  check.conditional = !alwaysInLayer();
}

void Checker::flattenHint(DiagnosticBuilder& builder, const ExprInfo& value, DimId features) {
  if (flattens(value, features)) {
    builder.note(Note::FlattenHint, source(), rangeOf(value.node), fmtDim(features),
                 textOf(value.node));
  }
}

// `x - mean` of a [?, 3, 32, 32] image and a [3] mean (or an SE block's [?, c] scales
// against [?, c, h, w]): the smaller operand's sizes are a run of the larger's after its
// first dimension, but broadcasting aligns the last ones. The note writes the reshape
// that puts them along that run.
void Checker::noteBroadcastAlong(DiagnosticBuilder& builder, NodeId node,
                                 std::span<const DimId> a, std::span<const DimId> b) {
  bool leftSmaller = a.size() < b.size();
  std::span<const DimId> small = leftSmaller ? a : b;
  std::span<const DimId> large = leftSmaller ? b : a;
  NodeId operand = leftSmaller ? tree_.childA(node) : tree_.childB(node);
  if (small.empty() || small.size() >= large.size() || !operand.isValid()) return;
  std::string_view text = textOf(operand);
  if (text.empty() || text.size() > 40 || text.find('\n') != std::string_view::npos) return;
  // A batch first on both sides (`[?, c]` against `[?, c, h, w]`) stays where it is.
  bool batched = dims().isUnknown(small[0]) && dims().isUnknown(large[0]);
  size_t first = batched ? 1 : 0;
  if (small.size() == first) return;
  for (size_t at = 1; at + (small.size() - first) <= large.size(); ++at) {
    bool fits = true;
    for (size_t i = first; i < small.size() && fits; ++i) {
      fits = !dims().isUnknown(small[i]) &&
             dims().equal(small[i], large[at + i - first]) == Decision::Yes;
    }
    if (!fits || at + (small.size() - first) == large.size()) continue;  // the last: aligned
    std::string shape = "[";
    for (size_t i = 0; i < large.size(); ++i) {
      bool inRun = i >= at && i < at + (small.size() - first);
      std::string size = i == 0 && batched ? "-1" : inRun ? fmtDim(small[i - at + first]) : "1";
      shape += (i ? ", " : "") + size;
    }
    builder.note(Note::WriteInstead, source(), rangeOf(operand),
                 fmt::format("reshape({}, {}])", text, shape));
    return;
  }
}

bool Checker::channelsLastHint(DiagnosticBuilder& builder, const ExprInfo& value,
                               DimId channels) {
  const TypeStore& ts = module_.types;
  if (!value.node.isValid() || !ts.isTensor(value.type) || !ts.node(value.type).rankKnown) {
    return false;
  }
  std::span<const DimId> shape = ts.shape(value.type);
  std::string_view text = textOf(value.node);
  if (shape.size() == 4 && dims().equal(shape[3], channels) == Decision::Yes &&
      dims().equal(shape[1], channels) != Decision::Yes && !text.empty() && text.size() <= 60 &&
      text.find('\n') == std::string_view::npos) {
    builder.note(Note::ChannelsLast, source(), rangeOf(value.node), text, fmtDim(channels));
    return true;
  }
  return false;
}

bool Checker::flattens(const ExprInfo& value, DimId features) {
  const TypeStore& ts = module_.types;
  if (dims().isUnknown(features) || !ts.isTensor(value.type) || !ts.node(value.type).rankKnown) {
    return false;
  }
  std::span<const DimId> shape = ts.shape(value.type);
  // The sizes after the batch multiply to `features`: constants
  // ([?, 16, 4, 4] for 256) or sizes over hyperparameters ([?, 4 * width, 1,
  // 1] for 4 * width).
  DimId product = dims().constant(1);
  for (size_t i = 1; i < shape.size(); ++i) {
    if (dims().isUnknown(shape[i])) return false;
    std::optional<int64_t> v = dims().constValue(shape[i]);
    if (v && (*v <= 0 || *v > (int64_t{1} << 40))) return false;
    product = dims().binary(DimKind::Mul, product, shape[i]);
  }
  std::string_view text = value.node.isValid() ? textOf(value.node) : std::string_view();
  return shape.size() > 2 && dims().equal(product, features) == Decision::Yes && !text.empty() &&
         text.size() <= 60 && text.find('\n') == std::string_view::npos;
}

std::string Checker::fmtShape(std::span<const DimId> shape) const {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    out += i ? ", " : "";
    out += module_.dims.format(shape[i], interner_);
  }
  return out + "]";
}

std::optional<int64_t> Checker::constantValue(NodeId expr) const {
  switch (tree_.kind(expr)) {
    case NodeKind::IntLit: {
      uint64_t value = tokens().intValue(tree_.token(expr));
      if (value > static_cast<uint64_t>(INT64_MAX)) {
        return std::nullopt;
      }
      return static_cast<int64_t>(value);
    }
    case NodeKind::Paren: return constantValue(tree_.childA(expr));
    case NodeKind::Unary: {
      std::optional<int64_t> v = constantValue(tree_.childA(expr));
      if (!v) return std::nullopt;
      switch (tokens().kind(tree_.token(expr))) {
        case TokenKind::Minus:
          if (*v == INT64_MIN) return std::nullopt;
          return -*v;
        case TokenKind::Plus: return v;
        default: return std::nullopt;
      }
    }
    case NodeKind::Binary: {
      std::optional<int64_t> a = constantValue(tree_.childA(expr));
      std::optional<int64_t> b = constantValue(tree_.childB(expr));
      if (!a || !b) return std::nullopt;
      return foldIntegers(tokens().kind(tree_.token(expr)), *a, *b);
    }
    case NodeKind::Name: {
      std::optional<uint32_t> symbol = lookup(tokens().identifier(tree_.token(expr)));
      if (symbol && module_.symbols[*symbol].kind == SymbolKind::Constant) {
        return symbolValue_[*symbol].intValue;
      }
      return std::nullopt;
    }
    case NodeKind::Member: {  // `alias.WIDTH`: an imported file's integer constant
      NodeId base = tree_.childA(expr);
      if (tree_.kind(base) != NodeKind::Name) return std::nullopt;
      std::optional<uint32_t> symbol = lookup(tokens().identifier(tree_.token(base)));
      if (!symbol || module_.symbols[*symbol].kind != SymbolKind::ImportAlias) return std::nullopt;
      std::string_view member = tokens().spelling(tree_.token(expr));
      for (const auto& constant : imports_->imports[module_.symbols[*symbol].ref].constants) {
        if (interner_.spelling(constant.name) == member) return constant.intValue;
      }
      return std::nullopt;
    }
    case NodeKind::Call: return constantCallValue(expr);
    default: return std::nullopt;
  }
}

// A call of `max`, `min` or `abs` on integer constants (a size such as
// `let HIDDEN = max(64, 4 * D)`), before the bodies are checked. A named
// argument, or a callee that shadows the builtin, is not a constant.
std::optional<int64_t> Checker::constantCallValue(NodeId call) const {
  NodeId callee = tree_.childA(call);
  if (tree_.kind(callee) != NodeKind::Name || !tree_.listB(call).isValid()) {
    return std::nullopt;
  }
  std::optional<uint32_t> symbol = lookup(tokens().identifier(tree_.token(callee)));
  if (!symbol || module_.symbols[*symbol].kind != SymbolKind::Builtin) return std::nullopt;
  std::vector<std::optional<int64_t>> values;
  for (NodeId arg : tree_.list(tree_.listB(call))) {
    values.push_back(constantValue(arg));  // a NamedArg has no value
  }
  return foldIntegerBuiltin(static_cast<BuiltinFn>(module_.symbols[*symbol].ref), values);
}

// ---- the pipeline ------------------------------------------------------------------

CheckedModule Checker::run() {
  errorsBefore_ = diags_->errorCount();
  declareBuiltins();
  declareItems();
  // Integer constants first: shapes in signatures may use them (`[HIDDEN, 10]`).
  for (NodeId item : tree_.list(tree_.listA(tree_.root()))) {
    if (tree_.kind(item) == NodeKind::Let && tree_.childB(item).isValid() &&
        module_.nodeSymbol[item.index] != kNoSymbol) {
      if (std::optional<int64_t> value = constantValue(tree_.childB(item))) {
        ExprInfo& info = symbolValue_[module_.nodeSymbol[item.index]];
        info.intValue = value;
        info.dim = dims().constant(*value);
        info.hyperConst = true;
      }
    }
  }
  for (size_t i = module_.firstLocal; i < module_.callables.size(); ++i) {
    checkSignature(static_cast<int>(i));
  }
  // Bodies and top-level statements in source order, except that the bodies
  // of inferred-return callees go ahead of their first use.
  bodyState_.assign(module_.callables.size(), BodyState::Unchecked);
  int callableIndex = static_cast<int>(module_.firstLocal);
  for (NodeId item : tree_.list(tree_.listA(tree_.root()))) {
    switch (tree_.kind(item)) {
      case NodeKind::Layer:
      case NodeKind::Fn: {
        int index = callableIndex++;
        if (bodyState_[index] == BodyState::Unchecked) {
          bodyState_[index] = BodyState::InProgress;
          checkInferredCalleesFirst(item);
          checkCallableBody(index);
          bodyState_[index] = BodyState::Done;
        }
        break;
      }
      case NodeKind::Let:
        checkInferredCalleesFirst(item);
        checkTopLevelLet(item);
        break;
      case NodeKind::Main:
        checkInferredCalleesFirst(item);
        checkMain(item);
        break;
      default: break;
    }
  }
  // A layer that creates sub-modules has state: applying it as a pure
  // function would leave its sub-modules' weights nowhere. Known only once
  // every body is checked, so application sites are validated last.
  for (const InstanceInfo& instance : module_.instances) {
    if (instance.owner >= 0) {
      module_.callables[instance.owner].stateful = true;
    }
  }
  for (const auto& [call, callee] : applications_) {
    if (module_.callables[callee].stateful) {
      // `Block(16, x)`: the hyperparameters first, as declared, of a layer
      // that creates sub-modules: Keras's create-and-apply habit.
      NodeId input;
      if (auto it = declarationOrderCalls_.find(call.index); it != declarationOrderCalls_.end()) {
        for (NodeId arg : tree_.list(tree_.listB(call))) {
          TypeId type = module_.nodeType[arg.index];
          if (tree_.kind(arg) != NodeKind::NamedArg && type.isValid() &&
              module_.types.isTensor(type)) {
            reportCreateAndApply(false, static_cast<uint32_t>(callee), call, it->second, arg,
                                 true);
            input = arg;
            break;
          }
        }
      }
      if (!input.isValid()) report(Diag::ApplyStatefulLayer, call, callableName(callee));
    }
  }
  checkRecursiveInstantiation();
  checkInfiniteRecursion();
  checkConstantsReadThroughCalls();
  checkStrOptionsOfCalls();
  checkCreatedArguments();
  warnLayersWithoutInputs();
  warnTernaryInputs();
  warnEntryByOrder();
  for (auto [dim, symbol] : constantDims_) {
    if (!constantFailed_.count(symbol)) {
      report(Diag::ConstantSizeNotInteger, dim, spelling(module_.symbols[symbol].name));
    }
  }
  warnUnusedState();  // (last: after every error)
  for (int i = static_cast<int>(module_.callables.size()) - 1;
       i >= static_cast<int>(module_.firstLocal); --i) {
    if (!module_.callables[i].isFn) {
      module_.entryLayer = i;
      break;
    }
  }
  return std::move(module_);
}

std::vector<bool> Checker::createdOrApplied(bool byCallablesOnly) const {
  std::vector<bool> used(module_.callables.size(), false);
  for (const InstanceInfo& instance : module_.instances) {
    if (!instance.builtin && (!byCallablesOnly || instance.owner >= 0)) {
      used[instance.decl] = true;
    }
  }
  // An application's caller: the callable whose text holds it (the file's
  // callables are in source order); `main` and top-level constants are none.
  std::vector<uint32_t> begins;
  if (byCallablesOnly) {
    for (size_t i = module_.firstLocal; i < module_.callables.size(); ++i) {
      begins.push_back(rangeOf(module_.callables[i].node).begin);
    }
  }
  for (const auto& [call, callee] : applications_) {
    if (byCallablesOnly) {
      uint32_t at = rangeOf(call).begin;
      auto it = std::upper_bound(begins.begin(), begins.end(), at);
      if (it == begins.begin()) continue;
      size_t caller = module_.firstLocal + static_cast<size_t>(it - begins.begin() - 1);
      if (at >= rangeOf(module_.callables[caller].node).end) continue;
    }
    used[static_cast<size_t>(callee)] = true;
  }
  return used;
}

void Checker::warnEntryByOrder() {
  // The last layer is the entry (LANGUAGE.md §4) unless `--entry` says
  // otherwise. A model written first with its blocks after it makes the last
  // block the entry, and `compile_model` returns that block: warned when the
  // last layer is a part of another layer (created or applied by a layer or
  // fn: not `main`, which runs the model) and some layer is used by none,
  // which is then most likely the model.
  if (!options_.entryByOrder) return;
  int last = -1;
  for (int i = static_cast<int>(module_.callables.size()) - 1;
       i >= static_cast<int>(module_.firstLocal); --i) {
    const CallableInfo& info = module_.callables[i];
    if (info.isFn) continue;
    if (options_.lastLayer.empty() || spelling(info.name) == options_.lastLayer) {
      last = i;
      break;
    }
  }
  if (last < 0) return;
  std::vector<bool> used = createdOrApplied(/*byCallablesOnly=*/true);
  if (!used[static_cast<size_t>(last)]) return;
  for (int i = last - 1; i >= static_cast<int>(module_.firstLocal); --i) {
    const CallableInfo& info = module_.callables[i];
    if (info.isFn || used[static_cast<size_t>(i)]) continue;
    const CallableInfo& entry = module_.callables[static_cast<size_t>(last)];
    diags_->report(Diag::EntryIsPart, source(), tokens().range(tree_.token(entry.node)),
                   spelling(entry.name), spelling(info.name));
    return;
  }
}

void Checker::warnUnusedState() {
  // A layer's sub-module or weight that its body never reads is still a
  // parameter: trained by nothing, and DDP's "parameters that were not used
  // in producing loss" error. Only the file's own layers (the standard
  // library's `bias` of bias=false is not read, on purpose). Not in a file
  // with errors: a use that did not check (a name out of its scope, a call
  // with a mistake) would make its sub-module look unused.
  if (diags_->errorCount() > errorsBefore_) return;
  std::vector<bool> read(module_.symbols.size(), false);
  for (size_t n = 0; n < module_.nodeSymbol.size(); ++n) {
    uint32_t symbol = module_.nodeSymbol[n];
    if (symbol < read.size() && tree_.kind(NodeId{static_cast<uint32_t>(n)}) == NodeKind::Name) {
      read[symbol] = true;
    }
  }
  const TypeStore& ts = module_.types;
  // Whether an instance holds parameters: pools and dropout hold none; a user
  // layer holds its weights and those of what it creates.
  std::vector<int8_t> holds(module_.callables.size(), -1);  // -1: not known yet
  auto holdsParameters = [&](auto&& self, const InstanceInfo& instance) -> bool {
    if (instance.builtin) {
      switch (static_cast<BuiltinLayer>(instance.decl)) {
        case BuiltinLayer::Dropout:
        case BuiltinLayer::MaxPool2d:
        case BuiltinLayer::AvgPool2d:
        case BuiltinLayer::AdaptiveAvgPool2d: return false;
        default: return true;
      }
    }
    int8_t& known = holds[instance.decl];
    if (known >= 0) return known != 0;
    known = 0;  // (a cycle holds nothing more)
    const CallableInfo& info = module_.callables[instance.decl];
    bool any = std::any_of(info.params.begin(), info.params.end(),
                           [](const ParamInfo& p) { return p.cls == ParamClass::Weight; });
    for (const InstanceInfo& inner : module_.instances) {
      if (!any && inner.owner == static_cast<int>(instance.decl)) any = self(self, inner);
    }
    known = any ? 1 : 0;
    return any;
  };
  for (size_t s = 0; s < module_.symbols.size(); ++s) {
    const Symbol& symbol = module_.symbols[s];
    if (read[s] || !symbol.decl.isValid()) continue;
    if (symbol.kind == SymbolKind::Local && symbol.type.isValid() &&
        (ts.kind(symbol.type) == TypeKind::Instance ||
         ts.kind(symbol.type) == TypeKind::BuiltinInstance)) {
      const InstanceInfo& instance = module_.instances[ts.node(symbol.type).ref];
      if (instance.owner < static_cast<int>(module_.firstLocal) ||
          !holdsParameters(holdsParameters, instance)) {
        continue;  // (`main`'s, or a pool)
      }
      diags_->report(Diag::UnusedSubModule, source(), rangeOf(symbol.decl), spelling(symbol.name),
                     callableName(instance.owner));
    } else if (symbol.kind == SymbolKind::Param) {
      for (size_t c = module_.firstLocal; c < module_.callables.size(); ++c) {
        const CallableInfo& info = module_.callables[c];
        if (info.isFn || symbol.ref >= info.params.size() ||
            info.params[symbol.ref].node != symbol.decl ||
            info.params[symbol.ref].cls != ParamClass::Weight) {
          continue;
        }
        diags_->report(Diag::UnusedWeight, source(), rangeOf(symbol.decl), spelling(symbol.name),
                       spelling(info.name));
        break;
      }
    }
  }
}

void Checker::warnTernaryInputs() {
  // `layer L(w: TernaryTensor, x: ...)`: a bare TernaryTensor parameter has
  // no shape, so it is an input (LANGUAGE.md §4), which forward() takes from
  // its caller; the user meant a weight. (`[?, 256]` is a batch of ternary
  // activations: meant.) Not warned in a layer the file creates or applies:
  // its caller gives it the ternary tensor on purpose.
  std::vector<bool> created = createdOrApplied();
  for (size_t layer = module_.firstLocal; layer < module_.callables.size(); ++layer) {
    const CallableInfo& info = module_.callables[layer];
    if (info.isFn || created[layer]) continue;
    for (const ParamInfo& p : info.params) {
      if (p.cls != ParamClass::Input || !p.node.isValid() || !module_.types.isTernary(p.type) ||
          module_.types.node(p.type).rankKnown) {
        continue;
      }
      diags_->report(Diag::TernaryInput, source(), rangeOf(p.node), spelling(info.name),
                     spelling(p.name));
    }
  }
}

void Checker::warnLayersWithoutInputs() {
  // `x: Tensor<float32, [B, 784]>` in a layer without inputs: the batch
  // named by a size variable makes the input a weight (LANGUAGE.md §4), and
  // forward() takes nothing. Warned where a batch's name (`B`, `batch`) or
  // an input's (`x`, `images`) leads such a shape (`N` may count queries of
  // a learned table, `features` a codebook: not warned). A layer created or
  // applied in the file is not warned either: its caller gives that size.
  std::vector<bool> created = createdOrApplied();  // applied: `Score(w, x)`
  for (size_t layer = module_.firstLocal; layer < module_.callables.size(); ++layer) {
    const CallableInfo& info = module_.callables[layer];
    if (info.isFn || created[layer] ||
        std::any_of(info.params.begin(), info.params.end(),
                    [](const ParamInfo& p) { return p.cls == ParamClass::Input; })) {
      continue;
    }
    static constexpr std::string_view kBatchNames[] = {"B", "batch", "batch_size", "bs", "bsz",
                                                       "n_batch", "nbatch"};
    static constexpr std::string_view kInputNames[] = {"x", "input", "inputs", "img", "imgs",
                                                       "image", "images", "input_ids", "pixels"};
    for (const ParamInfo& p : info.params) {
      if (p.cls != ParamClass::Weight || !p.node.isValid() || !module_.types.isTensor(p.type)) {
        continue;
      }
      std::span<const DimId> shape = module_.types.shape(p.type);
      auto among = [](std::string_view word, std::span<const std::string_view> names) {
        return std::find(names.begin(), names.end(), word) != names.end();
      };
      if (shape.size() < 2) continue;
      std::optional<int64_t> fixed = dims().constValue(shape[0]);
      if (fixed) {
        // An export-style signature, `x: Tensor<float32, [1, 784]>` or the
        // training script's `[32, 1, 28, 28]`: a fixed batch makes the input
        // a weight too. Only for a weight named as an input is and given no
        // initializer (`x: ... = zeros()` is meant).
        if (p.hasDefault || !among(spelling(p.name), kInputNames)) continue;
      } else if (dims().node(shape[0]).kind != DimKind::Var) {
        continue;
      }
      std::string because =
          fixed ? fmt::format("its first size is fixed at {}", *fixed)
                : fmt::format("its first size '{}' becomes a constructor argument",
                              spelling(dims().node(shape[0]).var));
      IdentifierId batch = fixed ? IdentifierId{} : dims().node(shape[0]).var;
      bool implicit = std::any_of(info.params.begin(), info.params.end(), [&](const ParamInfo& q) {
        return q.implicit && q.name == batch;
      });
      if (!fixed && (!implicit ||
          (!among(spelling(batch), kBatchNames) && !among(spelling(p.name), kInputNames)))) {
        continue;
      }
      std::vector<DimId> withBatch(shape.begin(), shape.end());
      withBatch[0] = dims().unknown();
      const TypeStore::Node& t = module_.types.node(p.type);
      diags_->report(Diag::LayerWithoutInputs, source(), rangeOf(p.node), spelling(info.name),
                     spelling(p.name), because)
          .note(Note::BatchIsUnknown, fmt(module_.types.tensor(t.dtype, withBatch, t.ternary)));
      break;
    }
  }
}

void Checker::checkConstantsReadThroughCalls() {
  // A top-level initializer runs when the module is imported, in order: one
  // that calls a fn or layer must not reach, through its body and what that
  // calls, a constant defined at or after itself (Python raises NameError).
  std::unordered_map<uint32_t, size_t> position;  // constant symbol -> order
  std::vector<NodeId> lets;
  for (NodeId item : tree_.list(tree_.listA(tree_.root()))) {
    if (tree_.kind(item) == NodeKind::Let && module_.nodeSymbol[item.index] != kNoSymbol) {
      position.emplace(module_.nodeSymbol[item.index], lets.size());
      lets.push_back(item);
    }
  }
  auto localCallable = [&](NodeId node) -> std::optional<size_t> {
    if (tree_.kind(node) != NodeKind::Name) return std::nullopt;
    uint32_t symbol = module_.nodeSymbol[node.index];
    if (symbol == kNoSymbol) return std::nullopt;
    const Symbol& s = module_.symbols[symbol];
    if ((s.kind != SymbolKind::Fn && s.kind != SymbolKind::Layer) || s.ref < module_.firstLocal) {
      return std::nullopt;
    }
    return s.ref;
  };
  // Most files' constants call nothing: then no body is walked.
  bool anyCall = false;
  for (NodeId let : lets) {
    if (!tree_.childB(let).isValid()) continue;
    tree_.forEachNodeWhile(tree_.childB(let), [&](NodeId node) {
      anyCall = anyCall || localCallable(node).has_value();
      return !anyCall;
    });
    if (anyCall) break;
  }
  if (!anyCall) return;
  // What each local callable reads and calls directly, computed when reached.
  struct Reach {
    bool done = false;
    std::vector<std::pair<uint32_t, NodeId>> constants;  // symbol, where read
    std::vector<size_t> callees;
  };
  std::vector<Reach> reach(module_.callables.size());
  auto reachOf = [&](size_t callable) -> const Reach& {
    Reach& r = reach[callable];
    if (!r.done) {
      r.done = true;
      tree_.forEachNode(module_.callables[callable].node, [&](NodeId node) {
        if (tree_.kind(node) != NodeKind::Name) return;
        uint32_t symbol = module_.nodeSymbol[node.index];
        if (symbol != kNoSymbol && position.count(symbol) != 0) {
          r.constants.emplace_back(symbol, node);
        } else if (std::optional<size_t> callee = localCallable(node)) {
          r.callees.push_back(*callee);
        }
      });
    }
    return r;
  };
  // The latest constant position each callable reaches (-1: none), so that
  // only an initializer with a problem is searched for its witness:
  // relaxed over the call graph in post-order until nothing changes (one
  // pass without recursion; a few more for cycles).
  const size_t n = module_.callables.size();
  std::vector<int64_t> latest(n, -1);
  std::vector<size_t> order;
  {
    std::vector<uint8_t> state(n, 0);  // 0 new, 1 on the stack, 2 done
    for (size_t root = module_.firstLocal; root < n; ++root) {
      if (state[root] != 0) continue;
      std::vector<std::pair<size_t, size_t>> stack{{root, 0}};  // callable, next callee
      state[root] = 1;
      while (!stack.empty()) {
        auto& [callable, next] = stack.back();
        const Reach& r = reachOf(callable);
        if (next < r.callees.size()) {
          size_t callee = r.callees[next++];
          if (state[callee] == 0) {
            state[callee] = 1;
            stack.emplace_back(callee, 0);
          }
          continue;
        }
        for (const auto& [symbol, where] : r.constants) {
          latest[callable] = std::max(latest[callable], static_cast<int64_t>(position.at(symbol)));
        }
        state[callable] = 2;
        order.push_back(callable);
        stack.pop_back();
      }
    }
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t callable : order) {
        for (size_t callee : reachOf(callable).callees) {
          if (latest[callee] > latest[callable]) {
            latest[callable] = latest[callee];
            changed = true;
          }
        }
      }
    }
  }
  for (size_t at = 0; at < lets.size(); ++at) {
    NodeId init = tree_.childB(lets[at]);
    if (!init.isValid()) continue;
    bool reported = false;
    tree_.forEachNodeWhile(init, [&](NodeId call) {
      std::optional<size_t> first = localCallable(call);
      if (!first || latest[*first] < static_cast<int64_t>(at)) return true;
      std::vector<bool> seen(module_.callables.size(), false);
      std::vector<size_t> stack{*first};
      seen[*first] = true;
      while (!stack.empty() && !reported) {
        size_t callable = stack.back();
        stack.pop_back();
        const Reach& r = reachOf(callable);
        for (const auto& [symbol, where] : r.constants) {
          if (position.at(symbol) < at) continue;
          std::string_view read = spelling(module_.symbols[symbol].name);
          std::string_view self = spelling(module_.symbols[module_.nodeSymbol[lets[at].index]].name);
          auto builder = position.at(symbol) == at
                             ? diags_->report(Diag::ConstantReadsItself, source(), rangeOf(call),
                                              tokens().spelling(tree_.token(call)), read)
                             : diags_->report(Diag::ReadBeforeDefinition, source(), rangeOf(call),
                                              tokens().spelling(tree_.token(call)), read, self);
          builder.note(Note::ReadThroughCall, source(), rangeOf(where),
                       spelling(module_.callables[callable].name), read);
          reported = true;
          break;
        }
        for (size_t callee : r.callees) {
          if (!seen[callee]) {
            seen[callee] = true;
            stack.push_back(callee);
          }
        }
      }
      return !reported;
    });
  }
}

namespace {

// Each cycle of a call or creation graph once: a depth-first search from every
// node of [first, n) over `edges` (node -> its edges; `from(e)` and `to(e)` the
// nodes an edge joins) calls `report(cycle)` with the edges of each cycle it
// closes, once per set of nodes (a model creating a block six times closes the
// same cycle six times), starting at the edge of the largest `key(e)` (the
// callable defined last: files define blocks before the models that use them,
// so its edge is the line to change).
template <typename Edge, typename From, typename To, typename Key, typename Report>
void forEachCycleOnce(size_t first, const std::vector<std::vector<const Edge*>>& edges,
                      From from, To to, Key key, Report report) {
  enum class Mark : uint8_t { New, Active, Done };
  std::vector<Mark> mark(edges.size(), Mark::New);
  std::vector<const Edge*> path;  // the edges from the search's root
  std::set<std::vector<size_t>> reported;  // each cycle's nodes, sorted
  auto visit = [&](auto& self, size_t node) -> void {
    mark[node] = Mark::Active;
    for (const Edge* edge : edges[node]) {
      size_t next = to(*edge);
      path.push_back(edge);
      if (mark[next] == Mark::Active) {
        size_t at = path.size() - 1;
        while (at > 0 && from(*path[at]) != next) --at;
        std::vector<const Edge*> cycle(path.begin() + static_cast<std::ptrdiff_t>(at),
                                       path.end());
        std::vector<size_t> nodes;
        for (const Edge* e : cycle) nodes.push_back(from(*e));
        std::sort(nodes.begin(), nodes.end());
        if (reported.insert(nodes).second) {
          size_t start = 0;
          for (size_t i = 1; i < cycle.size(); ++i) {
            if (key(*cycle[i]) > key(*cycle[start])) start = i;
          }
          std::rotate(cycle.begin(), cycle.begin() + static_cast<std::ptrdiff_t>(start),
                      cycle.end());
          report(cycle);
        }
      } else if (mark[next] == Mark::New) {
        self(self, next);
      }
      path.pop_back();
    }
    mark[node] = Mark::Done;
  };
  for (size_t node = first; node < edges.size(); ++node) {
    if (mark[node] == Mark::New) visit(visit, node);
  }
}

}  // namespace

void Checker::checkRecursiveInstantiation() {
  // Edges: owner -> created layer, for unconditional instantiations; each
  // cycle is reported once, at the creation of the layer defined last.
  std::vector<std::vector<const InstanceInfo*>> edges(module_.callables.size());
  for (const InstanceInfo& instance : module_.instances) {
    if (!instance.builtin && !instance.conditional && instance.owner >= 0) {
      edges[static_cast<size_t>(instance.owner)].push_back(&instance);
    }
  }
  auto from = [](const InstanceInfo& i) { return static_cast<size_t>(i.owner); };
  auto to = [](const InstanceInfo& i) { return static_cast<size_t>(i.decl); };
  forEachCycleOnce(module_.firstLocal, edges, from, to, /*key=*/to,
                   [&](const std::vector<const InstanceInfo*>& cycle) {
    std::string name = callableName(static_cast<int>(cycle[0]->decl));
    std::string chain = name;
    for (size_t i = 1; i < cycle.size(); ++i) {
      chain += " -> " + callableName(static_cast<int>(cycle[i]->decl));
    }
    chain += " -> " + name;
    auto builder = diags_->report(Diag::RecursiveInstantiation, source(),
                                  rangeOf(cycle[0]->site), name, chain);
    for (size_t i = 1; i < cycle.size(); ++i) {
      builder.note(Note::CreatesHere, source(), rangeOf(cycle[i]->site),
                   callableName(cycle[i]->owner), callableName(static_cast<int>(cycle[i]->decl)));
    }
    builder.note(Note::EndRecursion);
  });
}

void Checker::checkInfiniteRecursion() {
  // Edges: caller -> callee, for the calls that run on every run of the
  // caller's body (alwaysCalls_); a cycle of them recurses until Python's
  // stack runs out, as clang's -Winfinite-recursion says of C. Each cycle is
  // reported once, at the call in the callable defined last.
  std::vector<std::vector<const AlwaysCall*>> edges(module_.callables.size());
  for (const AlwaysCall& c : alwaysCalls_) {
    if (c.caller >= static_cast<int>(module_.firstLocal) &&
        c.callee >= static_cast<int>(module_.firstLocal)) {
      edges[static_cast<size_t>(c.caller)].push_back(&c);
    }
  }
  auto from = [](const AlwaysCall& c) { return static_cast<size_t>(c.caller); };
  auto to = [](const AlwaysCall& c) { return static_cast<size_t>(c.callee); };
  forEachCycleOnce(module_.firstLocal, edges, from, to, /*key=*/from,
                   [&](const std::vector<const AlwaysCall*>& cycle) {
    std::string name = callableName(cycle[0]->caller);
    std::string chain = name;
    for (const AlwaysCall* c : cycle) chain += " -> " + callableName(c->callee);
    auto builder = diags_->report(Diag::InfiniteRecursion, source(), rangeOf(cycle[0]->site),
                                  name, chain);
    for (size_t i = 1; i < cycle.size(); ++i) {
      builder.note(Note::CallsHere, source(), rangeOf(cycle[i]->site),
                   callableName(cycle[i]->caller), callableName(cycle[i]->callee));
    }
    builder.note(Note::EndCallRecursion);
  });
}

}  // namespace sema

CheckedModule check(const Tree& tree, const Interner& interner, DiagnosticEngine& diags,
                    const ImportContext* imports, const CheckOptions& options) {
  return sema::Checker(tree, interner, diags, imports, options).run();
}

}  // namespace tritonc

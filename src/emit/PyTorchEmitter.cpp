//===- PyTorchEmitter.cpp - IR to a PyTorch module ------------------------===//
//
// One nn.Module class per layer. Hyperparameters are constructor arguments
// (implicit size variables keyword-only; defaults that depend on other
// hyperparameters are resolved in the constructor). Ternary weights are
// latent float nn.Parameters named as in the source and read through
// tritonrt.weight() (straight-through quantization, or the packed codes
// after tritonrt.pack()). Sub-module creations are hoisted into __init__
// with the hyperparameter conditions around them. A layer without
// sub-modules also gets a module-level function `_<Layer>_apply` that
// `apply` calls and its forward delegates to. Control flow follows the IR's
// structured regions: an op's results are Python variables that its regions
// assign. Identifiers from the source are Python identifiers already; the
// ones that collide with Python keywords or the module's own names get a
// trailing underscore, and strings are written with escapes, so nothing from
// the source can inject code.
//
//===----------------------------------------------------------------------===//
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <functional>
#include <limits>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tritonc/base/Check.h"
#include "tritonc/base/PythonNames.h"
#include "tritonc/base/Text.h"
#include "tritonc/base/Version.h"
#include "tritonc/emit/Emit.h"
#include "tritonc/sema/CheckedModule.h"

#include "KernelUse.h"
#include "LineWrap.h"

namespace tritonc {

namespace {

using namespace ir;

// A Python string literal: quoteForDump's escapes (\n \t \r \\ \" \xHH \uXXXX)
// are Python's too. It escapes characters that print as nothing or move the
// text around (bidirectional controls, zero-width characters, C1 controls,
// line and paragraph separators) as \uXXXX: Python reads them either way,
// but raw they hide what the code says from its reader (Trojan Source).
std::string pyString(std::string_view text) { return quoteForDump(text); }

// The statement registering the CUDA library with the runtime: the emitter
// writes it with the placeholder, stampPyTorch finds it by this text.
std::string useKernels(std::string_view library) {
  return fmt::format("tritonrt.use_kernels(__file__, {})", pyString(library));
}

std::string pyFloat(double value) {
  std::string text = formatFloat(value);
  if (text == "inf") return "float(\"inf\")";
  if (text == "-inf") return "float(\"-inf\")";
  if (text == "nan" || text == "-nan") return "float(\"nan\")";
  return text;
}

// Whether a built-in layer holds float state (weights, running statistics)
// that torch.nn requires its input's dtype to match.
bool hasFloatState(BuiltinLayer layer) {
  switch (layer) {
    case BuiltinLayer::Linear:
    case BuiltinLayer::Conv2d:
    case BuiltinLayer::LayerNorm:
    case BuiltinLayer::BatchNorm1d:
    case BuiltinLayer::BatchNorm2d:
    case BuiltinLayer::TernaryLinear:
    case BuiltinLayer::TernaryConv2d: return true;
    default: return false;
  }
}

// A trit tensor is held as floats, its numeric value s * q (as ternary
// weights and ternary_quantize's results are), so it mixes with float tensors
// in every torch op (docs/pytorch.md).
std::string torchDType(DType dtype) {
  switch (dtype) {
    case DType::Bool: return "torch.bool";
    case DType::Int8: return "torch.int8";
    case DType::Int16: return "torch.int16";
    case DType::Int32: return "torch.int32";
    case DType::Int64: return "torch.int64";
    case DType::Float16: return "torch.float16";
    case DType::BFloat16: return "torch.bfloat16";
    default: return "torch.float32";
  }
}

// Element-wise arithmetic, logic and casts: pure, cheap, written as one expression.
bool isArithmetic(OpKind k) { return isElementwise(k) || k == OpKind::Cast; }

constexpr const char* kActivations[] = {"none", "relu", "gelu", "silu", "relu6"};

enum class Context { Forward, Apply, Init, Fn, Main, Global };

// The modules `code` uses: a prefix counts where it starts a name (not
// after a letter, digit, '_', '.' or '"'). `math` needs the emitter's word
// too (it emitted a math. call).
uint8_t importsOf(std::string_view code, bool usesMath) {
  auto uses = [&](std::string_view prefix) {
    for (size_t at = code.find(prefix); at != std::string_view::npos;
         at = code.find(prefix, at + 1)) {
      char before = at == 0 ? ' ' : code[at - 1];
      if (!std::isalnum(static_cast<unsigned char>(before)) && before != '_' && before != '.' &&
          before != '"') {
        return true;
      }
    }
    return false;
  };
  uint8_t imports = 0;
  if (usesMath && uses("math.")) imports |= PyTorchPieces::kMath;
  if (uses("torch.")) imports |= PyTorchPieces::kTorch;
  if (uses("nn.")) imports |= PyTorchPieces::kNN;
  if (uses("F.")) imports |= PyTorchPieces::kF;
  if (uses("tritonrt.")) imports |= PyTorchPieces::kTritonrt;
  return imports;
}

// A name, an attribute (`self.fc`) or a number: nothing to evaluate.
bool isAtom(const std::string& text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
  });
}

// `text` in parentheses, unless it is a name or one pair already encloses all
// of it.
std::string parenthesized(const std::string& text) {
  if (isAtom(text)) {
    return text;
  }
  if (!text.empty() && text.front() == '(' && text.back() == ')') {
    int depth = 0;
    size_t i = 0;
    for (; i < text.size(); ++i) {
      if (text[i] == '(') ++depth;
      if (text[i] == ')' && --depth == 0) break;
    }
    if (i + 1 == text.size()) return text;
  }
  return "(" + text + ")";
}

// `text` cut into pieces of at most `width` bytes (at least one character
// each), never inside a UTF-8 sequence; with `atSpaces`, a piece ends after
// a space where one lies in its second half.
std::vector<std::string_view> literalPieces(std::string_view text, size_t width, bool atSpaces) {
  std::vector<std::string_view> pieces;
  for (size_t i = 0; i < text.size();) {
    size_t end = std::min(text.size(), i + width);
    if (end < text.size()) {
      // Only the piece's second half is searched: rfind over the whole text
      // made a 1 MB literal without spaces quadratic (2.4 s).
      size_t half = i + width / 2;
      size_t space = atSpaces ? text.substr(half, end - half).rfind(' ') : std::string_view::npos;
      if (space != std::string_view::npos) end = half + space + 1;
      while (end > i + 1 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
    }
    pieces.push_back(text.substr(i, end - i));
    i = end;
  }
  return pieces;
}

// A Python string literal that `Emitter::line` can wrap: a long one becomes
// adjacent literals in parentheses, `("... " "...")` (Python joins them).
std::string pyStringLines(std::string_view text) {
  constexpr size_t kPiece = 60;  // source bytes per literal
  if (text.size() <= kPiece) return pyString(text);
  std::string out = "(";
  for (std::string_view piece : literalPieces(text, kPiece, /*atSpaces=*/true)) {
    if (out.size() > 1) out += ' ';
    out += pyString(piece);
  }
  return out + ")";
}

// `text` without parentheses around the whole of it, where they are
// redundant: as a statement's whole right-hand side, an `if` condition or a
// returned value (`(a + b)` -> `a + b`; `(a, b)` keeps them). Kept when the
// line (`room` columns for the text) would be too long without them: a long
// line is wrapped inside its last parentheses.
std::string unparenthesized(const std::string& text, size_t room) {
  if (text.size() < 2 || text.size() - 2 > room || text.front() != '(' || text.back() != ')') {
    return text;
  }
  bool whole = true;  // `(a) + (b)` and a tuple `(a, b)` are not one parenthesized part
  walkBrackets(text, text.size(), [&](size_t i, int depth) {
    char c = text[i];
    bool closer = c == ')' || c == ']' || c == '}';
    whole = !(closer && depth == 0 && i + 1 != text.size()) && !(c == ',' && depth == 1);
    return whole;
  });
  return whole ? text.substr(1, text.size() - 2) : text;
}

/// Whether a ternary_quantize op depends on the training flag: only the
/// stochastic method does, so a method that is not a constant "absmean" or
/// "threshold" counts.
bool quantizeUsesTraining(const Module& m, OpId id) {
  std::span<const ValueId> operands = m.operands(id);
  std::span<const int64_t> params = m.ints(id);
  for (size_t i = 0; i < operands.size(); ++i) {
    if (params[i] != 1) continue;  // 1: method
    OpId def = m.values[operands[i].index].def;
    if (!def.isValid()) return true;
    const Op& c = m.op(def);
    if (c.kind != OpKind::Constant || c.constKind != ConstKind::String) return true;
    const std::string& method = m.strings[c.strAttr];
    return method != "absmean" && method != "threshold";
  }
  return false;  // absmean
}

/// Marks, transitively, the callers (`callers[f]`: the fns that call f) of
/// the functions in `work`, which are marked already.
void markCallers(std::vector<bool>& marked, const std::vector<std::vector<size_t>>& callers,
                 std::vector<size_t> work) {
  while (!work.empty()) {
    size_t f = work.back();
    work.pop_back();
    for (size_t caller : callers[f]) {
      if (!marked[caller]) {
        marked[caller] = true;
        work.push_back(caller);
      }
    }
  }
}

/// Per function, whether it is a fn whose result depends on the module's
/// training flag: it quantizes stochastically, or calls a fn that does. Such
/// fns take `_training` from their caller, so a fn computes at -O0 what its
/// inlined body computes at -O2 (docs/pytorch.md).
std::vector<bool> fnsUsingTraining(const Module& m) {
  std::vector<bool> uses(m.functions.size(), false);
  // callers[f]: the fns that call fn f.
  std::vector<std::vector<size_t>> callers(m.functions.size());
  std::vector<size_t> work;
  for (size_t f = 0; f < m.functions.size(); ++f) {
    if (m.functions[f].kind != Function::Kind::Fn) continue;
    m.forEachOp(m.functions[f].body, [&](OpId id) {
      const Op& o = m.op(id);
      if (o.kind == OpKind::CallFn) {
        callers[static_cast<size_t>(o.intAttr)].push_back(f);
      } else if ((o.kind == OpKind::Builtin || o.kind == OpKind::BuiltinStateful) &&
                 static_cast<BuiltinFn>(o.intAttr) == BuiltinFn::TernaryQuantize &&
                 quantizeUsesTraining(m, id) && !uses[f]) {
        uses[f] = true;
        work.push_back(f);
      }
    });
  }
  markCallers(uses, callers, std::move(work));
  return uses;
}

/// Whether fn `f` has a tensor input its caller must give: the tensor whose
/// device the tensors it creates use (Emitter::emitInputDefaults).
bool hasDeviceAnchor(const Module& m, const Function& f) {
  return std::any_of(f.inputs.begin(), f.inputs.end(), [&](const auto& input) {
    return !input.defaultValue.isValid() && m.types.isTensor(input.type);
  });
}

/// Whether the builtin op `o` creates a tensor from sizes or values (`zeros`, `arange`,
/// `tensor(...)`, ...), rather than computing it from tensors it is given.
bool isCreation(const Op& o) {
  switch (static_cast<BuiltinFn>(o.intAttr)) {
    case BuiltinFn::Zeros: case BuiltinFn::Ones: case BuiltinFn::Randn:
    case BuiltinFn::Rand: case BuiltinFn::Full: case BuiltinFn::Arange:
    case BuiltinFn::Eye: case BuiltinFn::TensorFn: return true;
    default: return false;
  }
}

/// Per function, whether it is a fn that creates tensors (`ones([n])`, a
/// tensor constant, a list bound to a tensor type, or a call of such a fn)
/// with no tensor input to take their device from. Such fns take
/// `_device` from their caller, so a model on a GPU gets its tensors there.
std::vector<bool> fnsTakingDevice(const Module& m) {
  std::vector<bool> takes(m.functions.size(), false);
  std::vector<std::vector<size_t>> callers(m.functions.size());
  std::vector<size_t> work;
  for (size_t f = 0; f < m.functions.size(); ++f) {
    if (m.functions[f].kind != Function::Kind::Fn || hasDeviceAnchor(m, m.functions[f])) continue;
    m.forEachOp(m.functions[f].body, [&](OpId id) {
      const Op& o = m.op(id);
      bool creates = false;
      if (o.kind == OpKind::CallFn) {
        callers[static_cast<size_t>(o.intAttr)].push_back(f);
      } else if (o.kind == OpKind::Builtin || o.kind == OpKind::BuiltinStateful) {
        creates = isCreation(o);
      } else if (o.kind == OpKind::Global || o.kind == OpKind::Cast) {
        creates = o.resultsCount > 0 && m.types.isTensor(m.typeOf(m.result(id))) &&
                  (o.kind == OpKind::Global ||
                   m.types.kind(m.typeOf(m.operands(id)[0])) == TypeKind::List);
      }
      if (creates && !takes[f]) {
        takes[f] = true;
        work.push_back(f);
      }
    });
  }
  markCallers(takes, callers, std::move(work));
  return takes;
}

/// Per function, whether it is a fn that takes `_dtype` from its caller: one that takes
/// `_device` (fnsTakingDevice), or one with tensor inputs none of which is a float32 (or
/// ternary) tensor to follow, that makes float32 tensors (a creation, a conversion to
/// float32: `float32(ids == k)`) or calls such a fn. Its float32 tensors take the caller's
/// float dtype, as the same code inlined (-O2) does in a model converted with `.double()`
/// (audit 59: a one-hot fn over ids made float32 tensors, and `.double()` models failed at
/// -O0 and worked at -O2).
std::vector<bool> fnsTakingDType(const Module& m, const std::vector<bool>& takingDevice) {
  std::vector<bool> takes = takingDevice;
  std::vector<std::vector<size_t>> callers(m.functions.size());
  std::vector<size_t> work;  // their callers without a float input take it too
  for (size_t f = 0; f < takes.size(); ++f) {
    if (takes[f]) work.push_back(f);
  }
  auto floatLike = [&](TypeId type) {
    return m.types.isTensor(type) &&
           (m.types.isTernary(type) || m.types.node(type).dtype == DType::Float32 ||
            m.types.node(type).dtype == DType::Trit);
  };
  for (size_t f = 0; f < m.functions.size(); ++f) {
    const Function& fn = m.functions[f];
    if (fn.kind != Function::Kind::Fn || takingDevice[f]) continue;
    if (std::any_of(fn.inputs.begin(), fn.inputs.end(), [&](const auto& input) {
          return !input.defaultValue.isValid() && floatLike(input.type);
        })) {
      continue;  // its dtype anchor
    }
    m.forEachOp(fn.body, [&](OpId id) {
      const Op& o = m.op(id);
      if (o.kind == OpKind::CallFn) {
        callers[static_cast<size_t>(o.intAttr)].push_back(f);
        return;
      }
      bool builtin = o.kind == OpKind::Builtin || o.kind == OpKind::BuiltinStateful;
      bool makes =
          (o.kind == OpKind::Cast || o.kind == OpKind::Global || (builtin && isCreation(o))) &&
          o.resultsCount > 0 && floatLike(m.typeOf(m.result(id)));
      if (makes && !takes[f]) {
        takes[f] = true;
        work.push_back(f);
      }
    });
  }
  markCallers(takes, callers, std::move(work));
  return takes;
}

// The module-level function of a stateless layer's body: `_<Layer>_apply`.
// Of a class whose name begins with '_' (an escaped source name) that would
// begin with two underscores and be mangled where a method calls it
// (`__Cell__apply` read as `_Net___Cell__apply`): `_<Layer>_apply__` then,
// which ends with two (no user name's escape ends with "y__").
std::string applyName(std::string_view className) {
  std::string name = fmt::format("_{}_apply", className);
  if (!className.empty() && className[0] == '_') name += "__";
  return name;
}

class Emitter {
 public:
  Emitter(const Module& m, const EmitOptions& options, const std::vector<bool>& fnsUsingTraining,
          const std::vector<bool>& fnsTakingDevice, const std::vector<bool>& fnsTakingDType)
      : m_(m), options_(options), fnsUsingTraining_(fnsUsingTraining),
        fnsTakingDevice_(fnsTakingDevice), fnsTakingDType_(fnsTakingDType) {}

  /// Emits into `pieces` (sized to the module) the functions whose index it
  /// takes from `next` until none is left, and for job 0 the constants and
  /// ENTRY first.
  void run(PyTorchPieces& pieces, size_t job, std::atomic<size_t>& next);
  int maxDepth() const { return maxDepth_; }
  /// The source offset of the first `if`, `for` or `while` whose body goes
  /// past kMaxPythonIndent (UINT32_MAX when none, or it has no location).
  uint32_t tooDeepAt() const { return tooDeepAt_; }

 private:
  // ---- names and expressions ----------------------------------------------------
  std::string name(IdentifierId id) const { return pyIdent(m_.interner->spelling(id)); }
  /// A weight's, sub-module's or hyperparameter's attribute (see pyMember).
  std::string member(IdentifierId id) const { return pyMember(m_.interner->spelling(id)); }
  /// The Python names of functions and constants: their own, except where an
  /// imported file's clashes with one taken before it (`<stem>_<name>`).
  void nameDeclarations();
  const std::string& fnName(size_t index) const { return functionNames_[index]; }
  const std::string& globalName(size_t index) const { return globalNames_[index]; }
  /// A local's name: `base`, else `base_2`, ... A local never takes the name
  /// of a module-level declaration the function reads (Python would make that
  /// name local in the whole function); a parameter keeps its name (callers
  /// pass it by keyword). A compiler temporary (`t`) never takes a name the
  /// source gives a local of the function: the user's `t` stays `t`.
  std::string fresh(std::string base, bool parameter = false, bool temporary = false) {
    auto taken = [&](const std::string& candidate) {
      return (!parameter && reserved_.count(candidate) != 0) || used_.names.count(candidate) != 0 ||
             (temporary && sourceNames_.count(candidate) != 0);
    };
    if (!taken(base)) {
      used_.names.insert(base);
      return base;
    }
    // Suffixes found taken stay taken (names are only added), so each base
    // resumes where it stopped: N locals named alike cost O(N), not O(N^2).
    int start = 2;
    int* next = parameter ? &start : &used_.next.try_emplace(base, 2).first->second;
    std::string candidate;
    do {
      candidate = fmt::format("{}_{}", base, (*next)++);
    } while (taken(candidate));
    used_.names.insert(candidate);
    return candidate;
  }
  /// Fills reserved_ with the Python names of the declarations `f` refers to,
  /// and sourceNames_ with those of its named values.
  void reserveReferences(const Function& f);
  std::string local(ValueId v) {
    if (auto preset = presetNames_.find(v.index); preset != presetNames_.end()) {
      std::string n = std::move(preset->second);
      presetNames_.erase(preset);
      expr_[v.index] = n;
      bound_.insert(v.index);
      return n;
    }
    const Value& value = m_.values[v.index];
    std::string base = value.name.isValid() ? name(value.name) : "t";
    // A constant's initializer runs at module level: its temporaries are
    // module attributes, private to it (`_G_t`), so they overwrite no constant.
    if (ctx_ == Context::Global) base = globalTemps_ + base;
    std::string n = fresh(base, /*parameter=*/false, /*temporary=*/!value.name.isValid());
    expr_[v.index] = n;
    bound_.insert(v.index);
    return n;
  }
  std::string e(ValueId v) const {
    auto it = expr_.find(v.index);
    return it == expr_.end() ? "None" : it->second;
  }
  bool isScalar(ValueId v) const { return m_.types.isScalar(m_.typeOf(v)); }
  /// A tensor held in an integer dtype at run time (not a trit tensor, held
  /// as float32 -1/0/1, nor a ternary one, held as scaled float32).
  bool integerTensor(ValueId v) const {
    TypeId t = m_.typeOf(v);
    DType dt = m_.types.node(t).dtype;
    return m_.types.isTensor(t) && !m_.types.isTernary(t) && isIntegral(dt) &&
           dt != DType::Trit && dt != DType::Bool;
  }
  bool isTensor(ValueId v) const { return m_.types.isTensor(m_.typeOf(v)); }
  /// A tensor, a list of them, or a value whose type is only known at run time.
  bool holdsTensors(TypeId type) const {
    switch (m_.types.kind(type)) {
      case TypeKind::Tensor:
      case TypeKind::Unknown: return true;
      case TypeKind::List: return holdsTensors(TypeId{m_.types.node(type).ref});
      default: return false;
    }
  }
  bool intScalar(ValueId v) const {
    return isScalar(v) && isIntegral(m_.types.node(m_.typeOf(v)).dtype);
  }
  /// A dimension's arithmetic as Python, its leaves (variables, unknown sizes)
  /// written by `leaf`; nullopt when `leaf` cannot write one of them.
  std::optional<std::string> dimWith(
      DimId d, const std::function<std::optional<std::string>(const DimStore::Node&)>& leaf) const;
  std::string dim(DimId d) const;
  /// A dimension known when the module is constructed, as the code being written reads it:
  /// constants and the integer hyperparameters of the function written (`self.c` in
  /// forward), in arithmetic; nullopt for one that mentions anything else.
  std::optional<std::string> constructionDim(DimId d) const;
  std::string shapeOf(TypeId type) const;
  /// Whether the code being emitted has a training flag in scope (else
  /// training() is "False").
  bool hasTrainingFlag() const { return training() != "False"; }
  std::string training() const {
    switch (ctx_) {
      case Context::Forward: return "self.training";
      case Context::Apply: return "_training";
      case Context::Fn:
        return fnsUsingTraining_[static_cast<size_t>(fn_ - m_.functions.data())] ? "_training"
                                                                                   : "False";
      default: return "False";
    }
  }
  /// `, device=<anchor>.device` for a tensor created in a body, which lives
  /// where the body's inputs live ("" in the constructor, at module level and
  /// in main, where the default device is right).
  std::string deviceArg() const {
    std::string device = deviceOf();
    return device.empty() ? std::string() : ", device=" + device;
  }
  /// The torch dtype of a tensor of `dt` created in a body: float32 follows
  /// the dtype anchor.
  std::string createdDType(DType dt) const {
    bool body = ctx_ != Context::Init && ctx_ != Context::Global && ctx_ != Context::Main;
    // A trit tensor is held as floats too: it follows a converted model
    // (`.double()`, `.half()`) as a float one does.
    if (body && (dt == DType::Float32 || dt == DType::Trit) && !dtypeAnchor_.empty()) {
      return dtypeAnchor_ + ".dtype";
    }
    if (body && (dt == DType::Float32 || dt == DType::Trit) && takesDType()) return "_dtype";
    // A forward whose inputs are ids and whose float state is its
    // sub-modules' (an embedding): their dtype.
    if (body && (dt == DType::Float32 || dt == DType::Trit) && ctx_ == Context::Forward &&
        dtypeAnchor_.empty() && fn_ != nullptr && !fn_->instances.empty()) {
      return "tritonrt.float_dtype(self)";
    }
    return torchDType(dt);
  }
  /// `, dtype=<anchor>.dtype` for a float32 tensor created in a body ("" when
  /// it is plain float32).
  std::string dtypeArg(TypeId type) const {
    if (!type.isValid() || !m_.types.isTensor(type)) return "";
    std::string dtype = createdDType(m_.types.node(type).dtype);
    return dtype == "torch.float32" ? std::string() : ", dtype=" + dtype;
  }
  /// Whether the fn being written takes `_dtype` from its caller: one that
  /// takes `_device` (it creates tensors and has no tensor input) and has
  /// no float32 input to follow. Its float32 tensors take the caller's
  /// float dtype, as the same code inlined (-O2) does in a model converted
  /// with `.bfloat16()`.
  bool takesDType() const {
    return ctx_ == Context::Fn && dtypeAnchor_.empty() &&
           fnsTakingDType_[static_cast<size_t>(fn_ - m_.functions.data())];
  }
  /// The device expression deviceArg() uses ("" for the default device): a
  /// fn without tensor inputs uses the `_device` its caller passes.
  std::string deviceOf() const {
    if (ctx_ == Context::Init || ctx_ == Context::Global || ctx_ == Context::Main) return "";
    if (!deviceAnchor_.empty()) return deviceAnchor_ + ".device";
    bool takes = ctx_ == Context::Fn &&
                 fnsTakingDevice_[static_cast<size_t>(fn_ - m_.functions.data())];
    return takes ? "_device" : "";
  }
  /// Writes one statement at `depth`, wrapped within 100 columns.
  void line(int depth, const std::string& text);
  /// The columns left on a line at `depth` after `used` characters.
  static size_t room(int depth, size_t used) {
    size_t taken = static_cast<size_t>(depth) * 4 + used;
    return taken >= 100 ? 0 : 100 - taken;
  }
  /// `targets[i] = values[i]` for every i, with Python's parallel semantics:
  /// one tuple assignment when a value reads a target assigned before it.
  void assignAll(int depth, const std::vector<std::string>& targets,
                 const std::vector<std::string>& values);
  void releaseDeadTensors(BlockId block, int depth, const std::vector<size_t>& ends);

  // ---- program structure -----------------------------------------------------------
  void emitGlobal(size_t index);
  /// Whether a constant's initializer is made of Python numbers, strings and
  /// lists of them, other constants, and operators that raise nothing there.
  bool initializerCannotRaise(BlockId init) const;
  /// The constants emitted so far (emitGlobal, in module order) that may be,
  /// or hold, an unavailable value, which raises when used: those computed
  /// inside `try`, and copies and lists of them.
  std::vector<bool> guardedGlobals_;
  /// Whether a value of a constant's initializer may be or hold one.
  bool mayHoldUnavailable(ValueId v) const;
  void emitFn(size_t index);
  void emitLayer(size_t index);
  void emitMain(size_t index);
  bool stateful(const Function& f) const;
  /// Per hyperparameter: whether the body, a default or a weight's initializer reads it.
  std::vector<bool> hypersRead(const Function& f) const;
  std::string hyperSignature(const Function& f, bool applyStyle);
  std::string literalDefault(const HyperDecl& h);
  void resolveHyperDefaults(const Function& f, int depth, bool applyStyle);
  std::string regionExpr(BlockId region, int depth);
  void emitInstances(BlockId block, int depth, std::vector<std::string>& conditions);
  /// The scalar values emitInstances computes: the arguments of the
  /// sub-modules created under `block` and the conditions of its `if`s, with
  /// the hyperparameter arithmetic they are computed from (ctorNeeded_). Not
  /// every scalar op: the text of each intermediate of a long chain
  /// (`1 + 1 + ... + 1`) is quadratic in it.
  void collectCtorNeeded(BlockId block);
  std::vector<bool> statisticsOnly(const Function& f);
  /// Per weight and input of function `index`: 0 unread, 1 read only as
  /// batch_norm's running statistics (directly, or passed to a layer or fn
  /// that reads its parameter so), 2 read otherwise. Memoized; a recursive
  /// cycle counts as unread, the other uses decide.
  struct StatisticsUse {
    bool done = false, inProgress = false;
    std::vector<int> weights, inputs;
  };
  const StatisticsUse& statisticsUse(size_t index);
  void summarizeStatistics(size_t index);
  std::vector<StatisticsUse> statisticsUses_;
  std::unordered_set<uint32_t> ctorNeeded_;
  /// Writes the sub-modules held back under one condition (emitInstances).
  void flushInstances(int depth);
  bool alwaysReturns(BlockId block) const;
  /// Whether an op's value (expression `value`) goes into the next statement
  /// instead of a local (EmitOptions::inlineSingleUse).
  bool inlineIntoNext(OpId id, const std::string& value) const;
  /// -O0, which gives every value a local: whether op `id` is the condition of
  /// an `if` that is all an else block holds, written into its `elif` (an
  /// else-if chain written nested ran out of Python's 100 indentation levels
  /// at 98 arms).
  bool elifCondition(OpId id, int depth) const;
  /// How many ops under `block` (its regions' included) use `value`.
  size_t usesUnder(BlockId block, ValueId value) const;
  /// Whether `id`'s one result is never read (-O1 and up): the op is kept for
  /// its effect (a sub-module's call that updates batch-norm statistics, a
  /// random draw) and is written as an expression statement, not bound to a
  /// name nobody reads.
  bool unusedResult(OpId id) const;
  /// Counts the uses of every value under `block` into useCounts_ and
  /// records where they end in lastUse_ (-Os); `used` gets the values used
  /// (-Os: once each, and only those defined outside `block`, whose nesting
  /// depth below the body counted is `depth`).
  void countUses(BlockId block, std::vector<uint32_t>& used, int depth = 0);
  /// countUses' nesting depth of each block it entered (-Os).
  std::unordered_map<uint32_t, int> blockDepth_;
  void emitInputDefaults(const Function& f, int depth);
  bool isScalarBuiltin(OpId id) const;

  // ---- statements ------------------------------------------------------------------
  void emitBlock(BlockId block, int depth);
  /// The nesting depth of a statement written at `depth`, counting the `else`
  /// blocks being written as `elif`s.
  int nesting(int depth) const { return depth - static_cast<int>(elseFrames_.size()); }
  void noteDepth(int nesting);
  void noteHeader(int nesting, uint32_t loc);
  /// Ends the `else` block written from `elseAt` (the `else:` line at
  /// `depth`): an `elif` when it holds one `if` statement and nothing else.
  void closeElse(size_t elseAt, int depth);
  /// Pops the innermost else frame, noting its statements `shift` levels
  /// deeper than they were counted.
  void finishElseFrame(int shift);
  void findDeadOps(BlockId body, bool instancesHoisted);
  void emitOp(OpId id, int depth);
  std::string opExpr(OpId id);
  std::string builtinExpr(OpId id);
  /// `base ** exponent`. Two numbers with a float result: math.pow, which
  /// raises where Python's `**` would give a complex number ((-8.0) ** 0.5),
  /// as the checker's MathDomainError says. A negative literal base is
  /// parenthesized: `-3.0 ** 2` is -(3.0 ** 2) in Python.
  std::string power(const std::string& base, const std::string& exponent, bool floatNumbers) {
    if (floatNumbers) {
      usesMath_ = true;
      return fmt::format("math.pow({}, {})", unparenthesized(base, std::string::npos),
                         unparenthesized(exponent, std::string::npos));
    }
    if (base.starts_with('-')) return fmt::format("(({}) ** {})", base, exponent);
    return fmt::format("({} ** {})", base, exponent);
  }
  /// Whether `v` is a ternary weight whose product or convolution the CUDA
  /// target has a kernel for (KernelPlan plans one per such use).
  bool kernelWeight(ValueId v) const {
    if (options_.cudaLibrary.empty() || !v.isValid()) return false;
    OpId def = m_.values[v.index].def;
    if (!def.isValid()) return false;
    if (m_.op(def).kind == OpKind::Index) return stackItem(def);
    return m_.op(def).kind == OpKind::Weight && m_.types.isTernary(m_.typeOf(v));
  }
  /// Whether `w @ y` runs the left kernel: the CUDA target writes
  /// `tritonrt.left_matmul(w, y)` (kernel_use::leftProduct; KernelPlan plans it).
  bool leftKernelProduct(ValueId w, ValueId y) const {
    return !options_.cudaLibrary.empty() && fn_ != nullptr &&
           kernel_use::leftProduct(m_, *fn_, w, y);
  }
  /// Whether `index` reads one item `st[i]` of a stacked ternary weight, which
  /// the CUDA target writes `tritonrt.stack_item(st, i)` so that a product of
  /// it finds its kernel and the item's codes (x @ st[i] in a loop over layers
  /// or experts; kernel_use::stackOfItem, which KernelPlan asks too).
  bool stackItem(OpId index) const {
    return !options_.cudaLibrary.empty() && fn_ != nullptr &&
           kernel_use::stackOfItem(m_, *fn_, index).isValid();
  }
  std::string instanceExpr(uint32_t index) const;
  /// In `main`: the Python name of each instance (taken before any local).
  std::vector<std::string> mainInstanceNames_;
  /// Whether `v` is a new tensor (made by a creation builtin or arithmetic),
  /// not a module constant or a view of one.
  bool freshTensor(ValueId v) const {
    OpId def = m_.values[v.index].def;
    if (!def.isValid()) return false;
    const Op& o = m_.op(def);
    if (makesNewValue(o.kind)) return true;
    if (o.kind != OpKind::Builtin && o.kind != OpKind::BuiltinStateful) return false;
    // (Not ternary_quantize: of a ternary value it is that value.)
    auto fn = static_cast<BuiltinFn>(o.intAttr);
    return createsValues(fn) || fn == BuiltinFn::Arange || fn == BuiltinFn::TensorFn ||
           fn == BuiltinFn::TernaryWeights;
  }
  /// Whether instance `index` of fn_ is a Dropout that may run in place
  /// (`inplace=` given, not false).
  bool inPlaceDropout(uint32_t index);
  void findInPlaceDropouts(BlockId block);
  std::string indexList(OpId id, size_t from) const;

  struct Loop {
    std::vector<std::string> results;
  };
  /// A loop-carried `acc = concat([acc, x], dim=d)` written as a list the loop
  /// appends to and one `torch.cat` after it (findAccumulations, startAccumulations,
  /// endAccumulations).
  struct Accumulation {
    size_t result;    ///< which of the loop's results
    OpId list;        ///< `list %acc, %x`: becomes `parts.append(x)`
    OpId concat;      ///< `concat(list, dim)`: its value is the loop's target
    ValueId dim;      ///< the dim operand, or invalid for the default 0
  };
  /// The accumulations of the `for` or `while` op `id` (-O2 and up; see the For
  /// case).
  std::vector<Accumulation> findAccumulations(OpId id) const;
  /// Writes `<acc>_parts = [init]` for each accumulation of the loop `id` (its
  /// targets and inits; the init becomes the target, so it is not assigned) and
  /// returns the parts' names.
  std::vector<std::string> startAccumulations(const std::vector<Accumulation>& accumulations,
                                              OpId id, int depth,
                                              const std::vector<std::string>& targets,
                                              std::vector<std::string>& inits);
  /// After the loop: `<target> = torch.cat(<parts>, dim=d)` and `del <parts>`.
  void endAccumulations(const std::vector<Accumulation>& accumulations,
                        const std::vector<std::string>& parts, int depth,
                        const std::vector<std::string>& targets);

  const Module& m_;
  EmitOptions options_;
  const std::vector<bool>& fnsUsingTraining_;  ///< see fnsUsingTraining()
  const std::vector<bool>& fnsTakingDevice_;   ///< see fnsTakingDevice()
  const std::vector<bool>& fnsTakingDType_;    ///< see fnsTakingDType()
  std::string out_;
  const Function* fn_ = nullptr;
  const Function* inPlaceFn_ = nullptr;  ///< the function inPlace_ describes
  std::vector<bool> inPlace_;            ///< inPlaceDropout per instance
  Context ctx_ = Context::Global;
  std::unordered_map<uint32_t, std::string> expr_;
  std::vector<std::string> functionNames_, globalNames_;
  std::unordered_set<uint32_t> bound_;  ///< values held by a Python local of their own
  /// The local names taken in the function being emitted, and per base name
  /// the next suffix fresh() tries.
  struct UsedNames {
    std::unordered_set<std::string> names;
    std::unordered_map<std::string, int> next;
    void clear() {
      names.clear();
      next.clear();
    }
    void insert(std::string name) { names.insert(std::move(name)); }
  } used_;
  std::unordered_set<std::string> reserved_;  ///< see fresh()
  std::unordered_set<std::string> sourceNames_;  ///< see fresh()
  std::string globalTemps_;  ///< the prefix of a constant's temporaries
  std::vector<std::vector<std::string>> yieldTargets_;  ///< what a yield assigns
  std::vector<Loop> loops_;
  bool usesMath_ = false;
  /// A tensor in scope whose device tensors created in a body take ("" in the
  /// constructor and at module level, where the default device is right).
  std::string deviceAnchor_;
  /// A float32 tensor in scope whose dtype float32 tensors created in a body
  /// take, so that a model converted with `.half()` or `.double()` computes
  /// in that dtype throughout, as a hand-written module's buffers would (""
  /// where there is none: float32 it is).
  std::string dtypeAnchor_;
  int maxDepth_ = 0;
  uint32_t tooDeepAt_ = UINT32_MAX;
  /// An `else` block being written, which becomes `elif` if all it holds is
  /// one `if` statement: its statements are counted one level shallower than
  /// written, and corrected when it stays an `else` (closeElse).
  struct ElseFrame {
    /// (Counted levels may be negative in an `elif` chain, written at the
    /// outer depth: no floor of 0 that each level would shift up.)
    int maxDepth = std::numeric_limits<int>::min();
    std::vector<std::pair<int, uint32_t>> headers;  ///< (depth, source offset)
  };
  std::vector<ElseFrame> elseFrames_;
  /// An `else` block being written whose first statement, when it is an
  /// `if`, is written as an `elif` at the outer `if`'s depth straight away
  /// (`if ... else if ...` chains in linear time: written nested and
  /// rewritten, each level copied the rest of the chain once more).
  struct PendingElif {
    size_t elseAt;     ///< where the `else:` line starts
    int depth;         ///< the outer `if`'s
    size_t bodyStart;  ///< after the `else:` line
    bool taken = false;
    size_t innerEnd = 0;  ///< where the `elif` statement ends
  };
  std::vector<PendingElif> pendingElifs_;
  /// Names given to values before they are defined: the results of an `if`
  /// that an `else` block yields take the outer `if`'s (an `elif`).
  std::unordered_map<uint32_t, std::string> presetNames_;
  /// List ops written as `<parts>.append(x)`, by op index: the parts' name.
  std::unordered_map<uint32_t, std::string> appendTo_;
  /// Concat ops not written (their value is the loop's target), by op index.
  std::unordered_map<uint32_t, std::string> accumulated_;
  std::unordered_set<uint32_t> dead_;  ///< pure ops whose results nothing emitted reads
  std::string shapeHint_;  ///< a weight's declared shape, for creation calls without one
  std::unordered_map<uint32_t, uint32_t> useCounts_;  ///< per value, in the function emitted
  /// Per ShapeOf or split value, its uses that read one element (`s[0]`, `parts[i]`): when
  /// they are all its uses, it is written as torch gives it, `x.shape` or the tuple of
  /// `torch.split`, not `list(...)` (torch.fx makes no list of a Proxy: its length is not
  /// known to a trace). (A whole tuple given to torch.cat is no better under torch.fx, a
  /// Proxy where cat wants a sequence, so concat and stack keep the list.)
  std::unordered_map<uint32_t, uint32_t> elementUses_;
  /// Whether every use of `v` reads one element (see elementUses_).
  bool onlyElementsRead(ValueId v) const {
    auto uses = useCounts_.find(v.index);
    auto elements = elementUses_.find(v.index);
    return uses != useCounts_.end() && elements != elementUses_.end() &&
           elements->second == uses->second;
  }
  /// (block << 32 | value) -> position in the block of the last op using the
  /// value there (a use inside an op's regions counts at that op).
  std::unordered_map<uint64_t, uint32_t> lastUse_;
  /// Per value, the ops that use it, anywhere in the function body being
  /// written (releaseDeadTensors: the uses in a block's nested regions without
  /// walking them again at every level of nesting).
  std::unordered_map<uint32_t, std::vector<OpId>> users_;
  void collectUsers(BlockId block);
  static uint64_t useKey(BlockId block, ValueId v) {
    return (static_cast<uint64_t>(block.index) << 32) | v.index;
  }
  OpId nextOp_;  ///< the op emitted after the current one in its block (invalid: none)
  BlockId opBlock_;         ///< the block of the op being emitted
  size_t opPosition_ = 0;  ///< and its position there
  std::string pendingCondition_;  ///< of pendingInstances_
  std::vector<std::pair<std::string, std::string>> pendingInstances_;  ///< (member, constructor)
  /// The sub-modules of the layer's __init__ created under a condition so far.
  std::unordered_set<std::string> conditionalMembers_;
};

// Whether `name` occurs as an identifier in the Python expression `expr`
// (not as an attribute after '.', not inside a string literal).
bool mentionsName(std::string_view expr, std::string_view name) {
  for (size_t i = 0; i < expr.size(); ++i) {
    char c = expr[i];
    if (isQuote(c)) {
      i = stringEnd(expr, i);
      continue;
    }
    auto identChar = [](char ch) {
      return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
    };
    if (!identChar(c) || (i > 0 && (identChar(expr[i - 1]) || expr[i - 1] == '.'))) continue;
    size_t end = i;
    while (end < expr.size() && identChar(expr[end])) ++end;
    if (expr.substr(i, end - i) == name) return true;
    i = end - 1;
  }
  return false;
}

void Emitter::assignAll(int depth, const std::vector<std::string>& targets,
                        const std::vector<std::string>& values) {
  std::vector<size_t> needed;
  for (size_t i = 0; i < targets.size() && i < values.size(); ++i) {
    if (targets[i] != values[i]) needed.push_back(i);
  }
  bool conflict = false;
  for (size_t a = 0; a < needed.size() && !conflict; ++a) {
    for (size_t b = a + 1; b < needed.size() && !conflict; ++b) {
      conflict = mentionsName(values[needed[b]], targets[needed[a]]);
    }
  }
  if (!conflict) {
    for (size_t i : needed) {
      std::string value = unparenthesized(values[i], room(depth, targets[i].size() + 3));
      line(depth, fmt::format("{} = {}", targets[i], value));
    }
    return;
  }
  std::string lhs;
  std::string rhs;
  for (size_t i : needed) {
    lhs += (lhs.empty() ? "" : ", ") + targets[i];
    rhs += (rhs.empty() ? "" : ", ") + values[i];
  }
  line(depth, fmt::format("{} = ({})", lhs, rhs));
}

// Writes one statement, wrapped within 100 columns as black would
// (LineWrap.h). Its continuation lines are inside brackets, where Python
// counts no indentation, so only the statement's own depth is noted.
void Emitter::line(int depth, const std::string& text) {
  noteDepth(nesting(depth));
  writeWrapped(out_, depth, text);
}

namespace {
// Dimension arithmetic as Python writes it, with the parentheses precedence needs
// and no more: a chain `n + n + ... + n` of 200 terms, each step in parentheses,
// nested past the 200 parentheses CPython's parser takes ("too many nested
// parentheses", a module that does not import).
struct DimText {
  std::string text;
  int precedence = 3;  // 1: + -, 2: * //, 3: a number or a name
  DimKind kind = DimKind::Const;
};
}  // namespace

std::optional<std::string> Emitter::dimWith(
    DimId d, const std::function<std::optional<std::string>(const DimStore::Node&)>& leaf) const {
  std::function<std::optional<DimText>(DimId)> render =
      [&](DimId id) -> std::optional<DimText> {
    const DimStore::Node& n = m_.dims.node(id);
    switch (n.kind) {
      case DimKind::Const: return DimText{std::to_string(n.value), 3, n.kind};
      case DimKind::Var:
      case DimKind::Unknown: {
        std::optional<std::string> text = leaf(n);
        if (!text) return std::nullopt;
        return DimText{*text, 3, n.kind};
      }
      case DimKind::Add:
      case DimKind::Sub:
      case DimKind::Mul:
      case DimKind::Div: {
        std::optional<DimText> lhs = render(n.lhs);
        std::optional<DimText> rhs = lhs ? render(n.rhs) : std::nullopt;
        if (!rhs) return std::nullopt;
        bool additive = n.kind == DimKind::Add || n.kind == DimKind::Sub;
        int precedence = additive ? 1 : 2;
        // Left-associative: the left operand at the same precedence needs none; the right
        // one needs them unless both are + or both * (associative over integers).
        bool associative = (n.kind == DimKind::Add || n.kind == DimKind::Mul) &&
                           rhs->kind == n.kind;
        auto wrap = [](const DimText& t, bool needed) {
          return needed ? "(" + t.text + ")" : t.text;
        };
        const char* op = n.kind == DimKind::Add   ? " + "
                         : n.kind == DimKind::Sub ? " - "
                         : n.kind == DimKind::Mul ? " * "
                                                  : " // ";
        return DimText{wrap(*lhs, lhs->precedence < precedence) + op +
                           wrap(*rhs, rhs->precedence < precedence ||
                                          (rhs->precedence == precedence && !associative)),
                       precedence, n.kind};
      }
    }
    return std::nullopt;
  };
  std::optional<DimText> text = render(d);
  if (!text) return std::nullopt;
  // A sum or product in parentheses as a whole, as the code it is written into expects.
  return text->precedence < 3 ? "(" + text->text + ")" : text->text;
}

std::string Emitter::dim(DimId d) const {
  return dimWith(d, [&](const DimStore::Node& n) -> std::optional<std::string> {
           return n.kind == DimKind::Var ? name(n.var) : "None";
         }).value_or("None");
}

std::optional<std::string> Emitter::constructionDim(DimId d) const {
  return dimWith(d, [&](const DimStore::Node& n) -> std::optional<std::string> {
    if (n.kind != DimKind::Var || fn_ == nullptr) return std::nullopt;
    for (const HyperDecl& h : fn_->hypers) {
      if (h.name != n.var || !m_.types.isScalar(h.type) ||
          !isIntegral(m_.types.node(h.type).dtype)) {
        continue;
      }
      // As a hyperparameter read is written (OpKind::Hyper).
      return ctx_ == Context::Forward ? "self." + member(h.name) : name(h.name);
    }
    return std::nullopt;
  });
}

std::string Emitter::shapeOf(TypeId type) const {
  std::string out = "(";
  for (DimId d : m_.types.shape(type)) {
    out += unparenthesized(dim(d), std::string::npos) + ", ";  // `(d, 2 * d)`
  }
  if (out.size() > 1) out.resize(out.size() - 2);
  if (m_.types.shape(type).size() == 1) out += ",";
  return out + ")";
}

std::vector<bool> Emitter::hypersRead(const Function& f) const {
  std::vector<bool> read(f.hypers.size(), false);
  auto scan = [&](BlockId block, size_t except) {
    if (!block.isValid()) return;
    m_.forEachOp(block, [&](OpId id) {
      const Op& o = m_.op(id);
      auto h = static_cast<size_t>(o.intAttr);
      if (o.kind == OpKind::Hyper && h < read.size() && h != except) read[h] = true;
    });
  };
  constexpr size_t kNone = SIZE_MAX;
  scan(f.body, kNone);
  for (size_t i = 0; i < f.hypers.size(); ++i) scan(f.hypers[i].defaultValue, i);
  for (const InputDecl& in : f.inputs) scan(in.defaultValue, kNone);
  for (const WeightDecl& w : f.weights) scan(w.init, kNone);
  return read;
}

bool Emitter::stateful(const Function& f) const {
  if (!f.instances.empty()) return true;
  std::vector<BlockId> stack{f.body};
  while (!stack.empty()) {
    BlockId b = stack.back();
    stack.pop_back();
    for (OpId id : m_.blocks[b.index].ops) {
      OpKind k = m_.op(id).kind;
      if (k == OpKind::Forward || k == OpKind::FusedConv || k == OpKind::FusedLinear ||
          k == OpKind::Instantiate ||
          k == OpKind::InstanceMember) {
        return true;
      }
      for (BlockId r : m_.op(id).regions) {
        if (r.isValid()) stack.push_back(r);
      }
    }
  }
  return false;
}

// The value a declaration region yields, as one expression (its ops are
// emitted before it as statements when needed).
std::string Emitter::regionExpr(BlockId region, int depth) {
  const Block& b = m_.blocks[region.index];
  // The region's own uses, for -O1's rules (an unused result is an expression
  // statement; a single use is inlined into the next op): the body's
  // emitBlock counts the body's only, so a default computed from another
  // hyperparameter (`scale: float32 = 1.0 / float32(d)`) lost its value.
  std::vector<uint32_t> used;
  countUses(region, used);
  for (size_t i = 0; i + 1 < b.ops.size(); ++i) {
    nextOp_ = b.ops[i + 1];
    opBlock_ = region;
    opPosition_ = i;
    emitOp(b.ops[i], depth);
  }
  nextOp_ = OpId{};
  return e(m_.operands(b.ops.back())[0]);
}

void Emitter::nameDeclarations() {
  std::unordered_set<std::string> taken;
  functionNames_.assign(m_.functions.size(), "");
  globalNames_.assign(m_.globals.size(), "");
  // The compiled file's own names first: they never change.
  for (int pass = 0; pass < 2; ++pass) {
    auto assign = [&](std::string& out, IdentifierId id, uint32_t origin) {
      if ((origin != 0) != (pass == 1)) return;
      std::string n = name(id);
      if (origin != 0 && taken.count(n) != 0) {
        std::string base = m_.origins[origin] + "_" + n;
        n = base;
        for (int i = 2; taken.count(n) != 0; ++i) n = base + "_" + std::to_string(i);
      }
      taken.insert(n);
      out = n;
    };
    for (size_t i = 0; i < m_.globals.size(); ++i) {
      assign(globalNames_[i], m_.globals[i].name, m_.globals[i].origin);
    }
    for (size_t i = 0; i < m_.functions.size(); ++i) {
      if (m_.functions[i].kind != Function::Kind::Main) {
        assign(functionNames_[i], m_.functions[i].name, m_.functions[i].origin);
      }
    }
  }
}

void Emitter::run(PyTorchPieces& pieces, size_t job, std::atomic<size_t>& next) {
  nameDeclarations();
  // Each piece on its own: nothing of one declaration's emission leaks into
  // the next one's (the incremental compile reuses pieces one by one, and
  // jobs emit different pieces).
  auto wanted = [&](IdentifierId id, uint32_t origin) {
    const std::vector<std::string>* only = options_.onlyDeclarations;
    if (only == nullptr || origin != 0) return true;
    std::string_view name = id.isValid() ? m_.interner->spelling(id) : std::string_view("main");
    return std::find(only->begin(), only->end(), name) != only->end();
  };
  auto piece = [&](IdentifierId id, std::string pyName, auto&& emit) {
    out_.clear();
    usesMath_ = false;
    emit();
    PyTorchPieces::Piece p;
    p.sourceName = id.isValid() ? std::string(m_.interner->spelling(id)) : std::string("main");
    p.name = std::move(pyName);
    p.code = std::move(out_);
    p.imports = importsOf(p.code, usesMath_);
    out_.clear();
    return p;
  };
  if (job == 0) {
    std::vector<bool> late(m_.globals.size(), false);
    for (size_t i = 0; i < m_.globals.size(); ++i) {
      // (Whether it is late is computed for every constant: others read it.)
      if (wanted(m_.globals[i].name, m_.globals[i].origin)) {
        pieces.globals[i] = piece(m_.globals[i].name, globalName(i), [&] { emitGlobal(i); });
      }
      pieces.globals[i].origin = m_.globals[i].origin;
      // Constants are in dependency order: one that reads a late one is late.
      std::vector<BlockId> blocks{m_.globals[i].init};
      while (!blocks.empty() && !late[i]) {
        BlockId b = blocks.back();
        blocks.pop_back();
        if (!b.isValid()) continue;
        for (OpId id : m_.blocks[b.index].ops) {
          const Op& o = m_.op(id);
          late[i] = late[i] || o.kind == OpKind::CallFn || o.kind == OpKind::Apply ||
                    o.kind == OpKind::Instantiate ||
                    (o.kind == OpKind::Global && late[static_cast<size_t>(o.intAttr)]);
          blocks.push_back(o.regions[0]);
          blocks.push_back(o.regions[1]);
        }
      }
      pieces.globals[i].late = late[i];
    }
  }
  for (size_t i = next.fetch_add(1); i < m_.functions.size(); i = next.fetch_add(1)) {
    const Function& f = m_.functions[i];
    if (!wanted(f.kind == Function::Kind::Main ? IdentifierId{} : f.name, f.origin)) continue;
    switch (f.kind) {
      case Function::Kind::Fn:
        pieces.functions[i] = piece(f.name, fnName(i), [&] { emitFn(i); });
        break;
      case Function::Kind::Layer:
        pieces.functions[i] = piece(f.name, fnName(i), [&] { emitLayer(i); });
        break;
      case Function::Kind::Main:
        pieces.functions[i] = piece(IdentifierId{}, "main", [&] { emitMain(i); });
        pieces.functions[i].isMain = true;
        break;
    }
    pieces.functions[i].origin = f.origin;
  }
  if (job == 0 && m_.entry >= 0) {
    pieces.entry = fnName(static_cast<size_t>(m_.entry));
  }
}

void Emitter::emitGlobal(size_t index) {
  fn_ = nullptr;
  ctx_ = Context::Global;
  expr_.clear();
  used_.clear();
  // (A function's names do not carry over, whatever order the jobs take.)
  reserved_.clear();
  sourceNames_.clear();
  globalTemps_ = "_" + globalName(index) + "_";
  const std::string& name = globalName(index);
  // LANGUAGE.md section 6: an accepted program never fails at import. The
  // checker rejects what it can prove would raise here; an initializer that
  // may still raise (tensors, calls, division, powers) runs inside `try`, and
  // a failure binds the constant to a value that raises when it is used.
  guardedGlobals_.resize(m_.globals.size(), false);
  if (initializerCannotRaise(m_.globals[index].init)) {
    // A copy or a list of an unavailable value is bound as it is.
    for (OpId id : m_.blocks[m_.globals[index].init.index].ops) {
      if (m_.op(id).kind != OpKind::Yield) continue;
      for (ValueId v : m_.operands(id)) {
        guardedGlobals_[index] = guardedGlobals_[index] || mayHoldUnavailable(v);
      }
    }
    std::string value = regionExpr(m_.globals[index].init, 0);
    line(0, fmt::format("{} = {}", name, value));
    return;
  }
  guardedGlobals_[index] = true;
  line(0, "try:");
  std::string value = regionExpr(m_.globals[index].init, 1);
  line(1, fmt::format("{} = {}", name, value));
  line(0, "except Exception as _error:");
  line(1, fmt::format("{} = tritonrt.unavailable({}, _error)", name, pyString(name)));
}

bool Emitter::mayHoldUnavailable(ValueId v) const {
  OpId def = m_.values[v.index].def;
  if (!def.isValid()) return false;
  const Op& o = m_.op(def);
  if (o.kind == OpKind::Global) {
    auto global = static_cast<size_t>(o.intAttr);
    return global < guardedGlobals_.size() && guardedGlobals_[global];
  }
  if (o.kind == OpKind::List) {
    for (ValueId element : m_.operands(def)) {
      if (mayHoldUnavailable(element)) return true;
    }
  }
  return false;
}

bool Emitter::initializerCannotRaise(BlockId init) const {
  // Python numbers, strings and lists of them, and other constants (bound,
  // maybe to an unavailable value, but never raising when read): +, -, *,
  // comparisons and logic on numbers raise nothing, unless one of them is or
  // holds a constant that may be unavailable (its every use raises; list
  // equality compares the elements).
  for (OpId id : m_.blocks[init.index].ops) {
    const Op& o = m_.op(id);
    if (o.regions[0].isValid() || o.regions[1].isValid()) return false;
    switch (o.kind) {
      case OpKind::Constant:
      case OpKind::Global:
      case OpKind::Yield: continue;
      case OpKind::List:
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
      case OpKind::Or: {
        bool numbers = true, floats = false;
        for (ValueId v : m_.operands(id)) {
          numbers = numbers && !holdsTensors(m_.typeOf(v));
          floats = floats || (isScalar(v) && isFloating(m_.types.node(m_.typeOf(v)).dtype));
        }
        for (ValueId v : m_.results(id)) numbers = numbers && !holdsTensors(m_.typeOf(v));
        if (!numbers) return false;
        if (o.kind != OpKind::List) {
          for (ValueId v : m_.operands(id)) {
            if (mayHoldUnavailable(v)) return false;
          }
        }
        // An int meeting a float is converted, which raises past 1e308: only
        // a literal int (at most int64) is known to fit.
        bool arithmetic = o.kind == OpKind::Add || o.kind == OpKind::Sub || o.kind == OpKind::Mul;
        for (ValueId v : m_.operands(id)) {
          if (arithmetic && floats && intScalar(v) &&
              (!m_.values[v.index].def.isValid() ||
               m_.op(m_.values[v.index].def).kind != OpKind::Constant)) {
            return false;
          }
        }
        continue;
      }
      default: return false;
    }
  }
  return true;
}

// Parameters of a constructor or apply function: hyperparameters in order,
// keyword-only from the first one after a default; implicit ones keyword-only.
std::string Emitter::hyperSignature(const Function& f, bool applyStyle) {
  std::string sig;
  bool keywordOnly = applyStyle;
  bool sawDefault = false;
  auto add = [&](const std::string& text) { sig += ", " + text; };
  if (applyStyle) sig += ", *";
  for (const HyperDecl& h : f.hypers) {
    if (h.implicit) continue;
    bool hasDefault = h.defaultValue.isValid();
    if (!keywordOnly && sawDefault && !hasDefault) {
      add("*");
      keywordOnly = true;
    }
    sawDefault = sawDefault || hasDefault;
    std::string literal = applyStyle ? std::string() : literalDefault(h);
    if (!literal.empty()) {
      add(name(h.name) + "=" + literal);
    } else {
      add(applyStyle || hasDefault ? name(h.name) + "=None" : name(h.name));
    }
  }
  bool implicit = std::any_of(f.hypers.begin(), f.hypers.end(), [](const HyperDecl& h) { return h.implicit; });
  if (implicit && !keywordOnly) {
    add("*");
    keywordOnly = true;
  }
  for (const HyperDecl& h : f.hypers) {
    if (h.implicit) add(name(h.name) + (applyStyle ? "=None" : ""));
  }
  return sig;
}

// The default of a hyperparameter as a Python literal when it is a constant,
// or a negated number before the optimizer folds it (`stride=1`, `t=-1` in a
// constructor's signature, as in torch.nn), else "".
std::string Emitter::literalDefault(const HyperDecl& h) {
  if (!h.defaultValue.isValid()) return {};
  const Block& region = m_.blocks[h.defaultValue.index];
  if (region.ops.size() != 2 && region.ops.size() != 3) return {};
  bool negated = region.ops.size() == 3;
  OpId constant = region.ops[0];
  const Op& c = m_.op(constant);
  OpId last = negated ? region.ops[1] : constant;
  if (negated && (m_.op(last).kind != OpKind::Neg || m_.op(last).resultsCount != 1)) return {};
  const Op& y = m_.op(region.ops.back());
  std::span<const ValueId> yielded = m_.operands(region.ops.back());
  if (c.kind != OpKind::Constant || c.constKind == ConstKind::None || y.kind != OpKind::Yield ||
      yielded.size() != 1 || yielded[0] != m_.result(last)) {
    return {};
  }
  if (!negated) return opExpr(constant);
  std::span<const ValueId> negatedOperands = m_.operands(last);
  if (negatedOperands.size() != 1 || negatedOperands[0] != m_.result(constant) ||
      (c.constKind != ConstKind::Int && c.constKind != ConstKind::Float)) {
    return {};
  }
  std::string literal = opExpr(constant);
  return literal.empty() || literal[0] == '-' ? std::string() : "-" + literal;
}

// `if h is None: h = <default>` for hyperparameters whose default needs
// computing, in an order where each default's inputs come first (a
// constructor has the literal ones in its signature).
void Emitter::resolveHyperDefaults(const Function& f, int depth, bool applyStyle) {
  std::vector<bool> done(f.hypers.size(), false);
  auto ready = [&](BlockId region) {
    std::vector<BlockId> stack{region};
    while (!stack.empty()) {
      BlockId b = stack.back();
      stack.pop_back();
      for (OpId id : m_.blocks[b.index].ops) {
        const Op& o = m_.op(id);
        if (o.kind == OpKind::Hyper && !done[static_cast<size_t>(o.intAttr)]) return false;
        for (BlockId r : o.regions) {
          if (r.isValid()) stack.push_back(r);
        }
      }
    }
    return true;
  };
  for (size_t h = 0; h < f.hypers.size(); ++h) {
    done[h] = !f.hypers[h].defaultValue.isValid() ||
              (!applyStyle && !literalDefault(f.hypers[h]).empty());
  }
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t h = 0; h < f.hypers.size(); ++h) {
      if (done[h] || !ready(f.hypers[h].defaultValue)) continue;
      line(depth, fmt::format("if {} is None:", name(f.hypers[h].name)));
      std::string target = name(f.hypers[h].name);
      std::string value = regionExpr(f.hypers[h].defaultValue, depth + 1);
      line(depth + 1, fmt::format("{} = {}", target,
                                  unparenthesized(value, room(depth + 1, target.size() + 3))));
      done[h] = true;
      progress = true;
    }
  }
}

void Emitter::reserveReferences(const Function& f) {
  reserved_.clear();
  sourceNames_.clear();
  auto named = [&](ValueId v) {
    if (m_.values[v.index].name.isValid()) sourceNames_.insert(name(m_.values[v.index].name));
  };
  auto walk = [&](auto&& self, BlockId block) -> void {
    if (!block.isValid()) return;
    for (ValueId arg : m_.blocks[block.index].args) named(arg);
    for (OpId id : m_.blocks[block.index].ops) {
      const Op& o = m_.op(id);
      // (A sub-module is an attribute, `self.t`, not a local.)
      if (o.kind != OpKind::Instantiate) {
        for (ValueId result : m_.results(id)) named(result);
      }
      auto index = static_cast<size_t>(o.intAttr);
      if (o.kind == OpKind::Global) {
        reserved_.insert(globalName(index));
      } else if (o.kind == OpKind::Apply || o.kind == OpKind::CallFn) {
        reserved_.insert(fnName(index));
        reserved_.insert(applyName(fnName(index)));
      } else if (o.kind == OpKind::Instantiate && !f.instances[index].builtin) {
        reserved_.insert(fnName(f.instances[index].decl));
      }
      for (BlockId region : m_.regionsOf(id)) self(self, region);
    }
  };
  for (const HyperDecl& h : f.hypers) walk(walk, h.defaultValue);
  for (const WeightDecl& w : f.weights) walk(walk, w.init);
  for (const InputDecl& in : f.inputs) walk(walk, in.defaultValue);
  walk(walk, f.body);
}

void Emitter::emitFn(size_t index) {
  const Function& f = m_.functions[index];
  if (f.sameAs >= 0) {  // -Os: the code of an earlier fn (merge-functions)
    line(0, fmt::format("{} = {}", fnName(index), fnName(static_cast<size_t>(f.sameAs))));
    return;
  }
  fn_ = &f;
  reserveReferences(f);
  ctx_ = Context::Fn;
  expr_.clear();
  used_.clear();
  const Block& body = m_.blocks[f.body.index];
  std::string params;
  for (size_t i = 0; i < f.inputs.size(); ++i) {
    std::string n = fresh(name(f.inputs[i].name), /*parameter=*/true);
    expr_[body.args[i].index] = n;
    params += (i ? ", " : "") + n + (f.inputs[i].defaultValue.isValid() ? "=None" : "");
  }
  std::string keywords;
  if (fnsUsingTraining_[index]) keywords += ", _training=False";
  if (fnsTakingDevice_[index]) keywords += ", _device=None";
  if (fnsTakingDType_[index]) keywords += ", _dtype=None";
  if (!keywords.empty()) params += std::string(params.empty() ? "" : ", ") + "*" + keywords;
  line(0, fmt::format("def {}({}):", fnName(index), params));
  emitInputDefaults(f, 1);
  if (takesDType()) {
    line(1, "if _dtype is None:");
    line(2, "_dtype = torch.float32");
  }
  findDeadOps(f.body, /*instancesHoisted=*/false);
  emitBlock(f.body, 1);
  dead_.clear();
}

// Fills in the inputs that have defaults, and chooses the tensor whose device
// the body's zeros(), arange(), ... use: the first tensor input the caller must
// give, else a weight (a model moved to CUDA then creates its tensors there).
void Emitter::emitInputDefaults(const Function& f, int depth) {
  const Block& body = m_.blocks[f.body.index];
  // The first required input, else (in a layer) the first weight, that `wanted` accepts.
  auto anchor = [&](auto wanted) -> std::string {
    for (size_t i = 0; i < f.inputs.size(); ++i) {
      if (!f.inputs[i].defaultValue.isValid() && wanted(f.inputs[i].type)) return e(body.args[i]);
    }
    for (size_t i = 0; i < f.weights.size() && ctx_ != Context::Fn; ++i) {
      if (wanted(f.weights[i].type)) {
        return ctx_ == Context::Forward ? "self." + member(f.weights[i].name)
                                        : name(f.weights[i].name);
      }
    }
    return "";
  };
  deviceAnchor_ = anchor([&](TypeId type) { return m_.types.isTensor(type); });
  // A ternary weight's value (`s * q`) anchors the dtype where it is one (a layer's apply
  // function takes it from tritonrt.weight: the latent's dtype, or the packed scale's), not
  // in forward, where `self.w` is the latent parameter or, packed, its uint8 codes (audit 59:
  // an all-ternary layer over ids created float32 tensors after `.double()`).
  dtypeAnchor_ = anchor([&](TypeId type) {
    return m_.types.isTensor(type) &&
           (!m_.types.isTernary(type) ? m_.types.node(type).dtype == DType::Float32
                                      : ctx_ != Context::Forward);
  });
  for (size_t i = 0; i < f.inputs.size(); ++i) {
    if (f.inputs[i].defaultValue.isValid()) {
      line(depth, fmt::format("if {} is None:", e(body.args[i])));
      std::string target = e(body.args[i]);
      std::string value = regionExpr(f.inputs[i].defaultValue, depth + 1);
      line(depth + 1, fmt::format("{} = {}", target,
                                  unparenthesized(value, room(depth + 1, target.size() + 3))));
    }
  }
}

// max(1, ch / 4): a builtin over numbers, as cheap and pure as arithmetic.
bool Emitter::isScalarBuiltin(OpId id) const {
  const Op& o = m_.op(id);
  if (o.kind != OpKind::Builtin || o.resultsCount != 1 || !isScalar(m_.result(id))) return false;
  for (ValueId v : m_.operands(id)) {
    if (!isScalar(v)) return false;
  }
  return true;
}

std::string Emitter::instanceExpr(uint32_t index) const {
  if (ctx_ == Context::Main && index < mainInstanceNames_.size()) {
    return mainInstanceNames_[index];
  }
  return ctx_ == Context::Forward ? "self." + member(fn_->instances[index].name)
                                  : name(fn_->instances[index].name);
}

bool Emitter::inPlaceDropout(uint32_t index) {
  if (inPlaceFn_ != fn_) {
    inPlaceFn_ = fn_;
    inPlace_.assign(fn_->instances.size(), false);
    if (fn_->body.isValid()) findInPlaceDropouts(fn_->body);
  }
  return inPlace_[index];
}

void Emitter::findInPlaceDropouts(BlockId block) {
  for (OpId id : m_.blocks[block.index].ops) {
    const Op& o = m_.op(id);
    for (BlockId region : o.regions) {
      if (region.isValid()) findInPlaceDropouts(region);
    }
    if (o.kind != OpKind::Instantiate) continue;
    const InstanceDecl& inst = fn_->instances[static_cast<size_t>(o.intAttr)];
    if (!inst.builtin || static_cast<BuiltinLayer>(inst.decl) != BuiltinLayer::Dropout) continue;
    std::span<const ValueId> operands = m_.operands(id);
    std::span<const int64_t> params = m_.ints(id);
    for (size_t i = 0; i < operands.size(); ++i) {
      if (params[i] != 1) continue;  // Dropout(p, inplace)
      OpId def = m_.values[operands[i].index].def;
      bool isFalse = def.isValid() && m_.op(def).kind == OpKind::Constant &&
                     m_.op(def).constKind == ConstKind::Bool && m_.op(def).intAttr == 0;
      if (!isFalse) inPlace_[static_cast<size_t>(o.intAttr)] = true;
    }
  }
}

// Creates the sub-modules in __init__, under the conditions the forward body
// puts around them (conditions on hyperparameters only, as the checker
// guarantees); an instance not created is None.
void Emitter::emitInstances(BlockId block, int depth, std::vector<std::string>& conditions) {
  size_t guards = 0;  // conditions added by guard clauses, for the rest of the block
  for (OpId id : m_.blocks[block.index].ops) {
    const Op& o = m_.op(id);
    if (o.kind == OpKind::Instantiate) {
      const InstanceDecl& inst = fn_->instances[static_cast<size_t>(o.intAttr)];
      std::string cond;
      for (const std::string& c : conditions) {
        if (conditions.size() == 1) cond = c;
        else cond += (cond.empty() ? "" : " and ") + parenthesized(c);
      }
      std::string ctor = opExpr(id);
      if (cond.empty()) {
        flushInstances(depth);
        line(depth, fmt::format("self.{} = {}", member(inst.name), ctor));
      } else {
        // Consecutive sub-modules under one condition share its if/else.
        if (cond != pendingCondition_) flushInstances(depth);
        pendingCondition_ = cond;
        pendingInstances_.emplace_back(member(inst.name), std::move(ctor));
      }
    } else if (o.kind == OpKind::If) {
      std::string c = e(m_.operands(id)[0]);
      bool known = c != "None";
      if (!known) {
        // A condition on a value the constructor does not have: create
        // unconditionally (the forward body decides whether to use it).
        c = "True";
      }
      conditions.push_back(c);
      emitInstances(o.regions[0], depth, conditions);
      conditions.back() = "not " + parenthesized(c);
      emitInstances(o.regions[1], depth, conditions);
      conditions.pop_back();
      // A guard clause (`if depth == 0 { return x }`): what follows in this
      // block runs only in the branch that does not return, so the
      // sub-modules it creates (maybe this layer itself) exist only then.
      bool thenReturns = alwaysReturns(o.regions[0]);
      if (known && thenReturns != alwaysReturns(o.regions[1])) {
        conditions.push_back(thenReturns ? "not " + parenthesized(c) : c);
        ++guards;
      }
    } else if (o.kind == OpKind::For || o.kind == OpKind::While) {
      // The checker rejects sub-modules in loops.
    } else if (o.resultsCount == 1 && ctorNeeded_.count(m_.result(id).index) != 0 &&
               ((isScalar(m_.result(id)) &&
                 (o.kind == OpKind::Constant || o.kind == OpKind::Hyper ||
                  o.kind == OpKind::Global || isArithmetic(o.kind) || isScalarBuiltin(id))) ||
                o.kind == OpKind::List)) {
      // Hyperparameter arithmetic, and sizes given per dimension
      // (`kernel_size=[1, k]`): the constructor computes them too.
      expr_[m_.result(id).index] = opExpr(id);
    }
  }
  conditions.resize(conditions.size() - guards);
}

// Per weight of `f`: whether it is read, and only as batch_norm's running_mean or
// running_var (which F.batch_norm updates in place and never differentiates),
// directly or through the layers and fns it is passed to: the same answer at
// every level, whether or not they are inlined (audit 45B).
std::vector<bool> Emitter::statisticsOnly(const Function& f) {
  const StatisticsUse& use = statisticsUse(static_cast<size_t>(&f - m_.functions.data()));
  std::vector<bool> out(use.weights.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = use.weights[i] == 1;
  return out;
}

const Emitter::StatisticsUse& Emitter::statisticsUse(size_t index) {
  if (statisticsUses_.size() != m_.functions.size()) statisticsUses_.resize(m_.functions.size());
  if (statisticsUses_[index].done) return statisticsUses_[index];
  // Callees first, depth first with an explicit stack (a chain of calls may
  // be as long as the file); a callee in progress is a recursive cycle.
  auto callsOf = [&](size_t f) {
    std::vector<size_t> callees;
    if (m_.functions[f].body.isValid()) {
      m_.forEachOp(m_.functions[f].body, [&](OpId id) {
        const Op& o = m_.op(id);
        if ((o.kind == OpKind::Apply || o.kind == OpKind::CallFn) && o.intAttr >= 0 &&
            static_cast<size_t>(o.intAttr) < m_.functions.size()) {
          callees.push_back(static_cast<size_t>(o.intAttr));
        }
      });
    }
    return callees;
  };
  struct Frame {
    size_t function;
    std::vector<size_t> callees;
    size_t next = 0;
  };
  std::vector<Frame> stack;
  statisticsUses_[index].inProgress = true;
  stack.push_back(Frame{index, callsOf(index)});
  while (!stack.empty()) {
    Frame& top = stack.back();
    if (top.next < top.callees.size()) {
      size_t callee = top.callees[top.next++];
      StatisticsUse& cs = statisticsUses_[callee];
      if (!cs.done && !cs.inProgress) {
        cs.inProgress = true;
        stack.push_back(Frame{callee, callsOf(callee)});  // (invalidates `top`)
      }
      continue;
    }
    summarizeStatistics(top.function);
    stack.pop_back();
  }
  return statisticsUses_[index];
}

void Emitter::summarizeStatistics(size_t index) {
  const Function& f = m_.functions[index];
  std::vector<int> weights(f.weights.size(), 0), inputs(f.inputs.size(), 0);
  // Values that are a weight (its reads) or an input (the body's arguments).
  std::unordered_map<uint32_t, std::pair<bool, size_t>> tracked;
  std::vector<OpId> ops;
  if (f.body.isValid()) {
    const Block& body = m_.blocks[f.body.index];
    for (size_t i = 0; i < body.args.size() && i < f.inputs.size(); ++i) {
      tracked[body.args[i].index] = {false, i};
    }
    m_.forEachOp(f.body, [&](OpId id) {
      const Op& o = m_.op(id);
      if (o.kind == OpKind::Weight && o.resultsCount == 1 && o.intAttr >= 0 &&
          static_cast<size_t>(o.intAttr) < weights.size()) {
        tracked[m_.result(id).index] = {true, static_cast<size_t>(o.intAttr)};
      }
      ops.push_back(id);
    });
  }
  for (OpId id : ops) {
    const Op& o = m_.op(id);
    if (o.kind == OpKind::CheckDim) continue;  // -O0's checks of a shape read no values
    std::span<const ValueId> operands = m_.operands(id);
    std::span<const int64_t> params = m_.ints(id);
    bool batchNorm = (o.kind == OpKind::Builtin || o.kind == OpKind::BuiltinStateful) &&
                     static_cast<BuiltinFn>(o.intAttr) == BuiltinFn::BatchNormFn &&
                     params.size() == operands.size();
    bool call = (o.kind == OpKind::Apply || o.kind == OpKind::CallFn) && o.intAttr >= 0 &&
                static_cast<size_t>(o.intAttr) < m_.functions.size() &&
                params.size() == operands.size();
    for (size_t j = 0; j < operands.size(); ++j) {
      auto it = tracked.find(operands[j].index);
      if (it == tracked.end()) continue;
      int use = 2;
      if (batchNorm) {
        use = params[j] == 3 || params[j] == 4 ? 1 : 2;
      } else if (call) {
        // What the callee does with that parameter (nothing known yet of a
        // callee in a recursive cycle: no use).
        const Function& g = m_.functions[static_cast<size_t>(o.intAttr)];
        const StatisticsUse& gs = statisticsUses_[static_cast<size_t>(o.intAttr)];
        const ParamRef& p = g.params[static_cast<size_t>(params[j])];
        use = p.kind == ParamRef::Kind::Weight && p.index < gs.weights.size() ? gs.weights[p.index]
              : p.kind == ParamRef::Kind::Input && p.index < gs.inputs.size() ? gs.inputs[p.index]
              : gs.done                                                          ? 2
                                                                                 : 0;
      }
      int& slot = it->second.first ? weights[it->second.second] : inputs[it->second.second];
      slot = use == 0 ? slot : slot == 0 || slot == use ? use : 2;
    }
  }
  StatisticsUse& s = statisticsUses_[index];
  s.weights = std::move(weights);
  s.inputs = std::move(inputs);
  s.inProgress = false;
  s.done = true;
}

void Emitter::collectCtorNeeded(BlockId body) {
  ctorNeeded_.clear();
  std::vector<ValueId> work;
  std::vector<BlockId> blocks{body};
  while (!blocks.empty()) {  // the blocks emitInstances walks: the body and its ifs'
    BlockId b = blocks.back();
    blocks.pop_back();
    for (OpId id : m_.blocks[b.index].ops) {
      const Op& o = m_.op(id);
      if (o.kind == OpKind::Instantiate) {
        for (ValueId v : m_.operands(id)) work.push_back(v);
      } else if (o.kind == OpKind::If) {
        work.push_back(m_.operands(id)[0]);
        for (BlockId r : o.regions) {
          if (r.isValid()) blocks.push_back(r);
        }
      }
    }
  }
  while (!work.empty()) {
    ValueId v = work.back();
    work.pop_back();
    if (!ctorNeeded_.insert(v.index).second) continue;
    OpId def = m_.values[v.index].def;
    if (def.isValid()) {
      for (ValueId operand : m_.operands(def)) work.push_back(operand);
    }
  }
}

// Whether every path through `block` ends in a `return`.
bool Emitter::alwaysReturns(BlockId block) const {
  const std::vector<OpId>& ops = m_.blocks[block.index].ops;
  if (ops.empty()) return false;
  const Op& last = m_.op(ops.back());
  if (last.kind == OpKind::Return) return true;
  return last.kind == OpKind::If && alwaysReturns(last.regions[0]) &&
         alwaysReturns(last.regions[1]);
}

void Emitter::flushInstances(int depth) {
  if (pendingInstances_.empty()) return;
  // (`a and b` in parentheses where the line is too long: they break there.)
  line(depth, fmt::format("if {}:", unparenthesized(parenthesized(pendingCondition_),
                                                    room(depth, 4))));
  for (const auto& [member, ctor] : pendingInstances_) {
    line(depth + 1, fmt::format("self.{} = {}", member, ctor));
  }
  // Not created: None, unless an earlier branch that excludes this one
  // (`if gated: ... else: ...` creating one name both ways) set it already.
  std::vector<std::string_view> unset;
  for (const auto& [member, ctor] : pendingInstances_) {
    if (conditionalMembers_.insert(member).second) unset.push_back(member);
  }
  if (!unset.empty()) {
    line(depth, "else:");
    for (std::string_view member : unset) line(depth + 1, fmt::format("self.{} = None", member));
  }
  pendingInstances_.clear();
  pendingCondition_.clear();
}

void Emitter::emitLayer(size_t index) {
  const Function& f = m_.functions[index];
  if (f.sameAs >= 0) {  // -Os: the code of an earlier layer (merge-functions)
    std::string base = fnName(static_cast<size_t>(f.sameAs));
    line(0, fmt::format("class {}({}):", fnName(index), base));
    line(1, fmt::format("\"\"\"The code of {}, under a name of its own.\"\"\"", base));
    return;
  }
  fn_ = &f;
  reserveReferences(f);
  bool hasState = stateful(f);
  std::string className = fnName(index);
  const Block& body = m_.blocks[f.body.index];

  // The apply function of a stateless layer: hyperparameters (inferred from
  // shapes or defaults when not given), weights and inputs as arguments.
  if (!hasState) {
    ctx_ = Context::Apply;
    expr_.clear();
    used_.clear();
    std::string params;
    for (const WeightDecl& w : f.weights) {
      params += ", " + fresh(name(w.name), /*parameter=*/true) + "=None";
    }
    for (size_t i = 0; i < f.inputs.size(); ++i) {
      std::string n = fresh(name(f.inputs[i].name), /*parameter=*/true);
      expr_[body.args[i].index] = n;
      params += ", " + n + "=None";
    }
    for (const HyperDecl& h : f.hypers) used_.insert(name(h.name));
    std::string sig = hyperSignature(f, true);
    std::string all = params + sig + (sig.empty() ? ", *" : "") + ", _training=False";
    line(0, fmt::format("def {}({}):", applyName(className), all.substr(2)));
    // Size variables not given: read from the shapes that declare them.
    std::vector<bool> read = hypersRead(f);
    for (const HyperDecl& h : f.hypers) {
      std::string source;
      auto search = [&](TypeId type, const std::string& value) {
        if (!source.empty() || !m_.types.isTensor(type) || !m_.types.node(type).rankKnown) return;
        std::span<const DimId> shape = m_.types.shape(type);
        for (size_t d = 0; d < shape.size(); ++d) {
          const DimStore::Node& n = m_.dims.node(shape[d]);
          if (n.kind == DimKind::Var && n.var == h.name) {
            source = fmt::format("{}.shape[{}]", value, d);
            return;
          }
        }
      };
      for (const WeightDecl& w : f.weights) search(w.type, name(w.name));
      for (size_t i = 0; i < f.inputs.size(); ++i) search(f.inputs[i].type, e(body.args[i]));
      // Only a size the body (or another hyperparameter's default) reads: `n_in = w.shape[0]`
      // for nothing was dead code in every tutorial-style layer's function.
      if (!source.empty() && read[static_cast<size_t>(&h - f.hypers.data())]) {
        line(1, fmt::format("if {} is None:", name(h.name)));
        line(2, fmt::format("{} = {}", name(h.name), source));
      }
    }
    resolveHyperDefaults(f, 1, true);
    emitInputDefaults(f, 1);
    findDeadOps(f.body, /*instancesHoisted=*/false);
    emitBlock(f.body, 1);
    dead_.clear();
    out_ += "\n\n";
  }

  // The class.
  line(0, fmt::format("class {}(nn.Module):", className));
  // The ternary weights, and those whose packed runs are not the rows of the
  // tensor as stored: by columns (the right operand of `@`: reduced over the
  // second-to-last dimension) or along the last dimension (a batched weight
  // on the left of `@`); irgen/PackLayout.h.
  std::vector<std::string> ternary, byColumns, byLastDim;
  for (const WeightDecl& w : f.weights) {
    if (m_.types.isTernary(w.type)) ternary.push_back(pyString(member(w.name)));
    if (w.packRuns == PackRuns::Columns) byColumns.push_back(pyString(member(w.name)));
    if (w.packRuns == PackRuns::LastDim) byLastDim.push_back(pyString(member(w.name)));
  }
  auto tupleOf = [](const std::vector<std::string>& items) {
    std::string tuple;
    for (const std::string& t : items) tuple += (tuple.empty() ? "" : ", ") + t;
    return items.size() == 1 ? tuple + "," : tuple;
  };
  if (!ternary.empty()) {
    line(1, fmt::format("_ternary_weights = ({})", tupleOf(ternary)));
    if (!byColumns.empty()) {
      line(1, fmt::format("_ternary_packed_by_columns = ({})", tupleOf(byColumns)));
    }
    if (!byLastDim.empty()) {
      line(1, fmt::format("_ternary_packed_by_last_dim = ({})", tupleOf(byLastDim)));
    }
    out_ += "\n";
  }
  // __init__
  ctx_ = Context::Init;
  expr_.clear();
  used_.clear();
  std::string sig = hyperSignature(f, false);
  // The hyperparameters are locals of __init__: no temporary may take one's
  // name (`t = torch.zeros((t,))` replaced a hyperparameter `t`, audit 45E).
  for (const HyperDecl& h : f.hypers) used_.names.insert(name(h.name));
  line(1, fmt::format("def __init__(self{}):", sig));
  line(2, "super().__init__()");
  resolveHyperDefaults(f, 2, false);
  for (const HyperDecl& h : f.hypers) {
    line(2, fmt::format("self.{} = {}", member(h.name), name(h.name)));
  }
  std::vector<bool> statistics = statisticsOnly(f);
  for (size_t wi = 0; wi < f.weights.size(); ++wi) {
    const WeightDecl& w = f.weights[wi];
    std::string n = member(w.name);
    // A weight has its declared dtype (a ternary one is a latent float32).
    // Integer and bool weights cannot require gradients: they are
    // Parameters with requires_grad=False, which optimizers skip; so are
    // batch_norm's running statistics (no gradient ever reaches them: a
    // trainable Parameter without one fails DistributedDataParallel's second
    // step and autograd.grad over parameters()).
    bool ternaryWeight = m_.types.isTernary(w.type);
    DType dtype = ternaryWeight ? DType::Float32 : m_.types.node(w.type).dtype;
    bool learned = isFloating(dtype) && !statistics[wi];
    std::string dt = torchDType(dtype);
    std::string frozen = learned ? "" : ", requires_grad=False";
    if (w.init.isValid()) {
      shapeHint_ = shapeOf(w.type);
      const Block& region = m_.blocks[w.init.index];
      ValueId yielded = m_.operands(region.ops.back())[0];
      std::string init = regionExpr(w.init, 2);
      shapeHint_.clear();
      // The initializer's values in the weight's dtype (ternary values are
      // float32 tensors in the runtime).
      TypeId given = m_.typeOf(yielded);
      bool same = m_.types.isTensor(given) &&
                  (m_.types.isTernary(given) ? dtype == DType::Float32
                                             : m_.types.node(given).dtype == dtype);
      std::string convert = same ? "" : dtype == DType::Float32 ? ".float()" : ".to(" + dt + ")";
      // A Parameter shares its tensor's storage: one of a module constant
      // (`w: ... = G`) or a view of one would change with training, for
      // every instance made after (`.float()` of a float tensor is itself).
      if (!freshTensor(yielded) && (same || dtype == DType::Float32)) convert += ".clone()";
      line(2, fmt::format("self.{} = nn.Parameter({}{}{})", n, init, convert, frozen));
    } else if (ternaryWeight) {
      line(2, fmt::format("self.{} = nn.Parameter(tritonrt.ternary_weights({}))", n, shapeOf(w.type)));
    } else if (learned && m_.types.node(w.type).rankKnown && m_.types.shape(w.type).size() >= 2) {
      // As nn.Linear and nn.Conv2d initialize their weights.
      usesMath_ = true;
      std::string of = dtype == DType::Float32 ? "" : ", dtype=" + dt;
      line(2, fmt::format("self.{} = nn.Parameter(torch.empty({}{}))", n, shapeOf(w.type), of));
      line(2, fmt::format("nn.init.kaiming_uniform_(self.{}, a=math.sqrt(5))", n));
    } else {
      std::string of = dtype == DType::Float32 ? "" : ", dtype=" + dt;
      line(2, fmt::format("self.{} = nn.Parameter(torch.zeros({}{}){})", n, shapeOf(w.type), of,
                          frozen));
    }
  }
  std::vector<std::string> conditions;
  conditionalMembers_.clear();
  collectCtorNeeded(f.body);
  emitInstances(f.body, 2, conditions);
  flushInstances(2);
  out_ += "\n";
  // print(model) shows the hyperparameters, as torch.nn's layers show theirs
  // (`Block(d=128, n_heads=4)`), under their source names.
  if (!f.hypers.empty()) {
    std::string labels, values;
    for (const HyperDecl& h : f.hypers) {
      labels += fmt::format("{}{}={{!r}}", labels.empty() ? "" : ", ",
                            m_.interner->spelling(h.name));
      values += fmt::format("{}self.{}", values.empty() ? "" : ", ", member(h.name));
    }
    line(1, "def extra_repr(self):");
    line(2, fmt::format("return {}.format({})", pyString(labels), values));
    out_ += "\n";
  }
  // forward
  ctx_ = Context::Forward;
  expr_.clear();
  used_.clear();
  std::string params;
  for (size_t i = 0; i < f.inputs.size(); ++i) {
    std::string n = fresh(name(f.inputs[i].name), /*parameter=*/true);
    expr_[body.args[i].index] = n;
    params += ", " + n + (f.inputs[i].defaultValue.isValid() ? "=None" : "");
  }
  line(1, fmt::format("def forward(self{}):", params));
  if (!hasState) {
    std::string args;
    for (const WeightDecl& w : f.weights) {
      std::string read = m_.types.isTernary(w.type)
                             ? fmt::format("tritonrt.weight(self, {})", pyString(member(w.name)))
                             : "self." + member(w.name);
      args += fmt::format("{}={}, ", name(w.name), read);
    }
    for (size_t i = 0; i < f.inputs.size(); ++i) {
      args += fmt::format("{}={}, ", name(f.inputs[i].name), e(body.args[i]));
    }
    for (const HyperDecl& h : f.hypers) {
      args += fmt::format("{}=self.{}, ", name(h.name), member(h.name));
    }
    line(2, fmt::format("return {}({}_training=self.training)", applyName(className), args));
    return;
  }
  emitInputDefaults(f, 2);
  findDeadOps(f.body, /*instancesHoisted=*/true);
  emitBlock(f.body, 2);
  dead_.clear();
}

void Emitter::emitMain(size_t index) {
  const Function& f = m_.functions[index];
  fn_ = &f;
  reserveReferences(f);
  ctx_ = Context::Main;
  expr_.clear();
  used_.clear();
  // The instances' names are taken first: a temporary (`t`) never
  // overwrites `let t = Id(4)`.
  mainInstanceNames_.clear();
  for (const InstanceDecl& inst : f.instances) mainInstanceNames_.push_back(fresh(name(inst.name)));
  out_ += "def main():\n";
  emitBlock(f.body, 1);
}

// Pure ops whose results only feed hoisted instantiations (or nothing): the
// IR keeps them for the constructor, the forward body need not compute them.
void Emitter::findDeadOps(BlockId body, bool instancesHoisted) {
  dead_.clear();
  std::vector<OpId> all;
  std::vector<BlockId> stack{body};
  while (!stack.empty()) {
    BlockId b = stack.back();
    stack.pop_back();
    for (OpId id : m_.blocks[b.index].ops) {
      all.push_back(id);
      for (BlockId r : m_.op(id).regions) {
        if (r.isValid()) stack.push_back(r);
      }
    }
  }
  std::unordered_map<uint32_t, int> uses;
  auto countOperands = [&](OpId id, int delta) {
    for (ValueId v : m_.operands(id)) uses[v.index] += delta;
  };
  for (OpId id : all) {
    if (!(instancesHoisted && m_.op(id).kind == OpKind::Instantiate)) countOperands(id, 1);
  }
  auto removable = [this](OpId id) {
    OpKind k = m_.op(id).kind;
    return isArithmetic(k) || k == OpKind::List || k == OpKind::ShapeOf ||
           k == OpKind::ShapeDim || k == OpKind::Weight || isScalarBuiltin(id);
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (auto it = all.rbegin(); it != all.rend(); ++it) {
      OpId id = *it;
      if (dead_.count(id.index) != 0 || !removable(id)) continue;
      bool unused = true;
      for (ValueId r : m_.results(id)) unused = unused && uses[r.index] == 0;
      if (!unused) continue;
      dead_.insert(id.index);
      countOperands(id, -1);
      changed = true;
    }
  }
}

void Emitter::emitBlock(BlockId block, int depth) {
  size_t before = out_.size();
  const Block& b = m_.blocks[block.index];
  // A body may release its dead tensors (a function's, and the bodies of its
  // `if`s and loops): remember where each op's code ends.
  bool release = options_.releaseDeadTensors &&
                 (ctx_ == Context::Forward || ctx_ == Context::Apply || ctx_ == Context::Fn);
  // (A body written while another is, such as a default value's, keeps its own.)
  std::unordered_map<uint32_t, std::vector<OpId>> outerUsers;
  if (release && !b.parent.isValid()) {
    outerUsers = std::exchange(users_, {});
    collectUsers(block);
  }
  if ((options_.inlineSingleUse || options_.returnDirectly) && !b.parent.isValid()) {
    blockDepth_.clear();
    useCounts_.clear();
    elementUses_.clear();
    lastUse_.clear();
    std::vector<uint32_t> used;
    countUses(block, used);
  }
  std::vector<size_t> ends(b.ops.size(), std::string::npos);
  for (size_t i = 0; i < b.ops.size(); ++i) {
    OpId id = b.ops[i];
    if (dead_.count(id.index) != 0) continue;
    nextOp_ = OpId{};
    opBlock_ = block;
    opPosition_ = i;
    for (size_t j = i + 1; j < b.ops.size(); ++j) {
      if (dead_.count(b.ops[j].index) == 0) {
        nextOp_ = b.ops[j];
        break;
      }
    }
    emitOp(id, depth);
    ends[i] = out_.size();
  }
  if (out_.size() == before) {
    line(depth, "pass");
  } else if (release) {
    releaseDeadTensors(block, depth, ends);
  }
  if (release && !b.parent.isValid()) users_ = std::move(outerUsers);
}

std::vector<std::string> Emitter::startAccumulations(
    const std::vector<Accumulation>& accumulations, OpId id, int depth,
    const std::vector<std::string>& targets, std::vector<std::string>& inits) {
  std::vector<std::string> parts;
  for (const Accumulation& a : accumulations) {
    const Value& named = m_.values[m_.results(id)[a.result].index];
    std::string base = (named.name.isValid() ? name(named.name) : "t") + "_parts";
    if (ctx_ == Context::Global) base = globalTemps_ + base;  // as local() does
    parts.push_back(fresh(base));
    line(depth, fmt::format("{} = [{}]", parts.back(),
                            unparenthesized(inits[a.result], std::string::npos)));
    inits[a.result] = targets[a.result];  // not assigned: the list holds it
    appendTo_[a.list.index] = parts.back();
    accumulated_[a.concat.index] = targets[a.result];
  }
  return parts;
}

void Emitter::endAccumulations(const std::vector<Accumulation>& accumulations,
                               const std::vector<std::string>& parts, int depth,
                               const std::vector<std::string>& targets) {
  for (size_t k = 0; k < accumulations.size(); ++k) {
    const Accumulation& a = accumulations[k];
    std::string dimText = a.dim.isValid() ? unparenthesized(e(a.dim), std::string::npos) : "0";
    line(depth,
         fmt::format("{} = torch.cat({}, dim={})", targets[a.result], parts[k], dimText));
    line(depth, "del " + parts[k]);
    appendTo_.erase(a.list.index);
    accumulated_.erase(a.concat.index);
  }
}

// A result of the `for` or `while` op `id` that its body computes, at its top
// level, as `concat(list(acc, x...), dim)` of its own carried value `acc`, where
// `acc`, the list and the concat have no other use (no `break` or `continue` in
// the body, which would carry another value out; a `while` condition that does
// not read it) and `dim` is a constant or comes from outside the loop.
std::vector<Emitter::Accumulation> Emitter::findAccumulations(OpId id) const {
  const Op& loop = m_.op(id);
  bool isWhile = loop.kind == OpKind::While;
  BlockId bodyId = loop.regions[isWhile ? 1 : 0];
  const Block& body = m_.blocks[bodyId.index];
  size_t first = isWhile ? 0 : 1;  // a `for` body's first argument is its index
  if (body.ops.empty() || m_.op(body.ops.back()).kind != OpKind::Yield) return {};
  std::unordered_map<uint32_t, uint32_t> uses;
  bool exits = false;
  std::function<void(BlockId)> count = [&](BlockId block) {
    for (OpId inner : m_.blocks[block.index].ops) {
      const Op& op = m_.op(inner);
      exits = exits || op.kind == OpKind::Break || op.kind == OpKind::Continue;
      for (ValueId v : m_.operands(inner)) ++uses[v.index];
      for (BlockId r : m_.regionsOf(inner)) {
        if (r.isValid()) count(r);
      }
    }
  };
  count(bodyId);
  if (isWhile) count(loop.regions[0]);
  if (exits) return {};
  auto unused = [&](ValueId v) { return uses[v.index] == 0; };
  auto usedOnce = [&](ValueId v) { return uses[v.index] == 1; };
  auto inBody = [&](ValueId v) {
    const Value& value = m_.values[v.index];
    BlockId block = value.def.isValid() ? m_.op(value.def).parent : value.block;
    while (block.isValid()) {
      if (block == bodyId) return true;
      OpId owner = m_.blocks[block.index].parent;
      if (!owner.isValid()) return false;
      block = m_.op(owner).parent;
    }
    return false;
  };
  std::span<const ValueId> yielded = m_.operands(body.ops.back());
  std::vector<Accumulation> found;
  for (size_t i = 0; i < m_.results(id).size() && i < yielded.size(); ++i) {
    ValueId acc = body.args[first + i];
    if (isWhile && !unused(m_.blocks[loop.regions[0].index].args[i])) continue;
    OpId concat = m_.values[yielded[i].index].def;
    if (!concat.isValid() || m_.op(concat).kind != OpKind::Builtin ||
        static_cast<BuiltinFn>(m_.op(concat).intAttr) != BuiltinFn::Concat ||
        m_.op(concat).parent != bodyId || !usedOnce(yielded[i])) {
      continue;
    }
    std::span<const ValueId> args = m_.operands(concat);
    std::span<const int64_t> params = m_.ints(concat);
    ValueId list, dim;
    for (size_t k = 0; k < args.size(); ++k) (params[k] == 0 ? list : dim) = args[k];
    if (!list.isValid() || !usedOnce(list)) continue;
    OpId listOp = m_.values[list.index].def;
    if (!listOp.isValid() || m_.op(listOp).kind != OpKind::List || m_.op(listOp).parent != bodyId ||
        m_.operands(listOp).size() < 2 || m_.operands(listOp)[0] != acc || !usedOnce(acc)) {
      continue;
    }
    if (dim.isValid()) {
      OpId dimDef = m_.values[dim.index].def;
      bool constant = dimDef.isValid() && m_.op(dimDef).kind == OpKind::Constant;
      if (!constant && inBody(dim)) continue;
    }
    bool tensors = holdsTensors(m_.typeOf(acc));
    for (ValueId item : m_.operands(listOp).subspan(1)) {
      tensors = tensors && holdsTensors(m_.typeOf(item));
    }
    if (!tensors) continue;
    found.push_back(Accumulation{i, listOp, concat, dim});
  }
  return found;
}

void Emitter::collectUsers(BlockId block) {
  for (OpId id : m_.blocks[block.index].ops) {
    for (ValueId v : m_.operands(id)) users_[v.index].push_back(id);
    for (BlockId r : m_.regionsOf(id)) {
      if (r.isValid()) collectUsers(r);
    }
  }
}

// After the statement of its last use, `del` each tensor the body holds in a
// local of its own. A use inside an op's regions counts at that op; a value
// whose expression is inlined where it is used (not a local) extends the uses
// of its operands to its own last use. Nothing is released by the statement
// that returns or yields. In the body of an `if` or a loop only the tensors
// computed there are released (what comes from outside is still needed after
// it, or by the next iteration).
void Emitter::releaseDeadTensors(BlockId block, int depth, const std::vector<size_t>& ends) {
  const Block& b = m_.blocks[block.index];
  // Per value defined here, the position of the last op of this block that
  // uses it, itself or in its regions (ops not written do not count).
  std::unordered_map<uint32_t, size_t> position;  // op -> its position here
  for (size_t i = 0; i < b.ops.size(); ++i) position[b.ops[i].index] = i;
  std::unordered_map<uint32_t, size_t> last;  // value -> position of its last use
  auto noteUses = [&](ValueId v) {
    auto users = users_.find(v.index);
    if (users == users_.end()) return;
    for (OpId user : users->second) {
      // Up from the user to the op of this block that holds it.
      OpId at = user;
      while (at.isValid() && m_.op(at).parent != block) {
        BlockId up = m_.op(at).parent;
        at = up.isValid() ? m_.blocks[up.index].parent : OpId{};
      }
      if (!at.isValid()) continue;
      size_t i = position.at(at.index);
      if (ends[i] == std::string::npos) continue;
      size_t& slot = last[v.index];
      slot = std::max(slot, i);
    }
  };
  if (!b.parent.isValid()) {
    for (ValueId arg : b.args) noteUses(arg);
  }
  for (OpId id : b.ops) {
    for (ValueId r : m_.results(id)) noteUses(r);
  }
  for (size_t i = b.ops.size(); i-- > 0;) {
    if (ends[i] == std::string::npos) continue;
    OpId id = b.ops[i];
    size_t extend = 0;
    for (ValueId r : m_.results(id)) {
      auto it = last.find(r.index);
      if (it != last.end() && bound_.count(r.index) == 0) extend = std::max(extend, it->second);
    }
    if (extend == 0) continue;
    for (ValueId v : m_.operands(id)) {
      size_t& slot = last[v.index];
      slot = std::max(slot, extend);
    }
  }
  // Candidates: the body's arguments and the results of its ops, tensors in a local.
  std::vector<std::vector<std::string>> dels(b.ops.size());
  auto consider = [&](ValueId v) {
    auto it = last.find(v.index);
    if (it == last.end() || bound_.count(v.index) == 0 || !holdsTensors(m_.typeOf(v))) return;
    size_t at = it->second;
    if (at >= b.ops.size() || ends[at] == std::string::npos || isTerminator(m_.op(b.ops[at]).kind)) {
      return;
    }
    dels[at].push_back(e(v));
  };
  if (!b.parent.isValid()) {
    for (ValueId arg : b.args) consider(arg);
  }
  for (OpId id : b.ops) {
    if (dead_.count(id.index) != 0) continue;
    for (ValueId r : m_.results(id)) consider(r);
  }
  // Splice the `del` lines in at their offsets in one pass over the text
  // after the first (inserting them one by one moved that text each time:
  // quadratic in the length of a long block).
  std::vector<std::pair<size_t, size_t>> at;  // (offset, op), in text order
  for (size_t i = 0; i < b.ops.size(); ++i) {
    if (!dels[i].empty()) at.emplace_back(ends[i], i);
  }
  if (at.empty()) return;
  std::stable_sort(at.begin(), at.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::string tail = out_.substr(at.front().first);
  out_.resize(at.front().first);
  size_t copied = at.front().first;  // offsets in the text before the splice
  for (const auto& [offset, i] : at) {
    out_.append(tail, copied - at.front().first, offset - copied);
    copied = offset;
    std::string del = "del ";
    for (size_t j = 0; j < dels[i].size(); ++j) del += (j ? ", " : "") + dels[i][j];
    writeWrapped(out_, depth, del);  // `del (` one name a line `)` when long
  }
  out_.append(tail, copied - at.front().first, std::string::npos);
}

void Emitter::noteDepth(int nesting) {
  if (elseFrames_.empty()) {
    maxDepth_ = std::max(maxDepth_, nesting);
  } else {
    elseFrames_.back().maxDepth = std::max(elseFrames_.back().maxDepth, nesting);
  }
}

// The `if`, `for` or `while` at `nesting` has its body one level deeper.
void Emitter::noteHeader(int nesting, uint32_t loc) {
  if (!elseFrames_.empty()) {
    elseFrames_.back().headers.emplace_back(nesting, loc);
  } else if (nesting + 1 > kMaxPythonIndent && tooDeepAt_ == UINT32_MAX) {
    tooDeepAt_ = loc;
  }
}

void Emitter::finishElseFrame(int shift) {
  ElseFrame frame = std::move(elseFrames_.back());
  elseFrames_.pop_back();
  for (const auto& [nesting, loc] : frame.headers) noteHeader(nesting + shift, loc);
  if (frame.maxDepth != std::numeric_limits<int>::min()) noteDepth(frame.maxDepth + shift);
}

void Emitter::closeElse(size_t elseAt, int depth) {
  std::string indent(static_cast<size_t>(depth) * 4, ' ');
  std::string inner = indent + "    ";
  std::string_view text = std::string_view(out_).substr(elseAt);
  size_t body = text.find('\n') + 1;  // after "else:"
  if (text.substr(body) == inner + "pass\n") {
    elseFrames_.pop_back();
    out_.resize(elseAt);  // an empty else branch
    return;
  }
  if (!text.substr(body).starts_with(inner + "if ")) {  // not one `if`: found at once
    finishElseFrame(1);
    return;
  }
  // The lines of the block (each ends with '\n').
  std::vector<std::string_view> lines;
  for (size_t at = body; at < text.size();) {
    size_t end = std::min(text.find('\n', at), text.size() - 1) + 1;
    lines.push_back(text.substr(at, end - at));
    at = end;
  }
  // One `if` statement: every later line at the block's indentation is its
  // `elif`/`else:`, or closes a bracket of its wrapped condition (`):`, `]`).
  bool oneIf = !lines.empty() && lines[0].starts_with(inner + "if ");
  for (size_t i = 1; oneIf && i < lines.size(); ++i) {
    std::string_view rest = lines[i];
    if (!rest.starts_with(inner)) {
      oneIf = false;
    } else if (rest.size() > inner.size() && rest[inner.size()] != ' ') {
      rest.remove_prefix(inner.size());
      oneIf = rest.starts_with("elif ") || rest.starts_with("else:") || rest.starts_with(")") ||
              rest.starts_with("]") || rest.starts_with("}");
    }
  }
  finishElseFrame(oneIf ? 0 : 1);  // an `else:` keeps its block one level deeper
  if (!oneIf) return;
  std::string chain = indent + "el";
  chain.append(lines[0].substr(inner.size()));
  for (size_t i = 1; i < lines.size(); ++i) chain.append(lines[i].substr(4));
  out_.replace(elseAt, std::string::npos, chain);
}

void Emitter::emitOp(OpId id, int depth) {
  const Op& o = m_.op(id);
  std::span<const ValueId> operands = m_.operands(id);
  std::span<const ValueId> results = m_.results(id);
  // An `if` that is the first statement of an else block being written is
  // that block's `if`'s `elif` (PendingElif), written at its depth.
  bool asElif = false;
  if (o.kind == OpKind::If && !pendingElifs_.empty()) {
    PendingElif& p = pendingElifs_.back();
    if (!p.taken && p.depth + 1 == depth && out_.size() == p.bodyStart) {
      p.taken = true;
      asElif = true;
      out_.resize(p.elseAt);
      depth = p.depth;
    }
  }
  // (Offsets are in the compiled file; an imported file's code has none here.)
  if ((fn_ == nullptr || fn_->origin == 0) &&
      (o.kind == OpKind::If || o.kind == OpKind::For || o.kind == OpKind::While)) {
    noteHeader(nesting(depth), o.loc);
  }
  if (auto append = appendTo_.find(id.index); append != appendTo_.end()) {
    if (operands.size() == 2) {
      line(depth, fmt::format("{}.append({})", append->second,
                              unparenthesized(e(operands[1]), std::string::npos)));
    } else {
      std::string items;
      for (ValueId v : operands.subspan(1)) {
        items += (items.empty() ? "" : ", ") + unparenthesized(e(v), std::string::npos);
      }
      line(depth, fmt::format("{} += [{}]", append->second, items));
    }
    return;
  }
  if (auto target = accumulated_.find(id.index); target != accumulated_.end()) {
    expr_[results[0].index] = target->second;  // the yield assigns nothing
    return;
  }
  switch (o.kind) {
    case OpKind::Constant:
    case OpKind::Hyper:
    case OpKind::Global:
      expr_[results[0].index] = opExpr(id);
      return;
    case OpKind::Weight:
      // A plain argument (an apply function's), or a float weight's attribute
      // `self.w`, read where it is used as the source reads it. A ternary
      // weight's read (tritonrt.weight: quantized, cached) runs once, into a
      // local.
      if (ctx_ != Context::Forward ||
          !m_.types.isTernary(fn_->weights[static_cast<size_t>(o.intAttr)].type)) {
        expr_[results[0].index] = opExpr(id);
        return;
      }
      break;
    case OpKind::Instantiate:
      if (ctx_ == Context::Main) {
        std::string ctor = opExpr(id);
        line(depth, fmt::format("{} = {}", instanceExpr(static_cast<uint32_t>(o.intAttr)), ctor));
      }
      // In a layer it is created in __init__; either way, members read it.
      if (!results.empty()) {
        expr_[results[0].index] = instanceExpr(static_cast<uint32_t>(o.intAttr));
      }
      return;
    case OpKind::If: {
      std::vector<std::string> targets;
      for (ValueId r : results) targets.push_back(local(r));
      line(depth, fmt::format("{} {}:", asElif ? "elif" : "if",
                              unparenthesized(e(operands[0]), room(depth, asElif ? 6 : 4))));
      yieldTargets_.push_back(targets);
      emitBlock(o.regions[0], depth + 1);
      size_t elseAt = out_.size();
      line(depth, "else:");
      // An `if` whose results the else block yields, in order, assigns ours
      // itself, so that the block can be an `elif`.
      const Block& otherwise = m_.blocks[o.regions[1].index];
      if (!targets.empty() && !otherwise.ops.empty() &&
          m_.op(otherwise.ops.back()).kind == OpKind::Yield) {
        std::span<const ValueId> yielded = m_.operands(otherwise.ops.back());
        OpId inner = yielded.size() == targets.size() ? m_.values[yielded[0].index].def : OpId{};
        if (inner.isValid() && m_.op(inner).kind == OpKind::If &&
            std::ranges::equal(yielded, m_.results(inner))) {
          for (size_t i = 0; i < yielded.size(); ++i) presetNames_[yielded[i].index] = targets[i];
        }
      }
      elseFrames_.emplace_back();
      pendingElifs_.push_back(PendingElif{elseAt, depth, out_.size()});
      emitBlock(o.regions[1], depth + 1);
      PendingElif pending = pendingElifs_.back();
      pendingElifs_.pop_back();
      if (!pending.taken) {
        closeElse(elseAt, depth);
      } else if (out_.size() == pending.innerEnd) {
        // The elif's statements were counted one level shallower than they are.
        finishElseFrame(1);
      } else {
        // The block wrote more after its `if` (a `del`): an `else:` after all,
        // its block one level deeper. (Rare: what the block defines is inlined
        // into the condition, or it would have written it before the `if`.)
        std::string indent(static_cast<size_t>(depth) * 4, ' ');
        std::string chain = indent + "else:\n" + indent + "    ";
        std::string_view text = std::string_view(out_).substr(elseAt + indent.size() + 2);
        for (size_t at = 0; at < text.size();) {
          size_t end = std::min(text.find('\n', at), text.size() - 1) + 1;
          if (at > 0 && elseAt + indent.size() + 2 + at < pending.innerEnd &&
              end - at > 1) {
            chain += "    ";
          }
          chain.append(text.substr(at, end - at));
          at = end;
        }
        out_.replace(elseAt, std::string::npos, chain);
        finishElseFrame(2);
      }
      yieldTargets_.pop_back();
      if (asElif) pendingElifs_.back().innerEnd = out_.size();
      return;
    }
    case OpKind::For: {
      const Block& body = m_.blocks[o.regions[0].index];
      std::vector<std::string> targets;
      std::vector<std::string> inits;
      for (size_t i = 0; i < results.size(); ++i) inits.push_back(e(operands[3 + i]));
      for (size_t i = 0; i < results.size(); ++i) {
        std::string t = local(results[i]);
        expr_[body.args[1 + i].index] = t;
        targets.push_back(t);
      }
      // `acc = concat([acc, x], dim=d)` carried by the loop copies all of `acc` at every
      // step (quadratic in the steps): append the parts to a list instead, and
      // concatenate them once after the loop (the same values: cat is associative).
      std::vector<Accumulation> accumulations =
          options_.accumulateConcat ? findAccumulations(id) : std::vector<Accumulation>{};
      std::vector<std::string> parts =
          startAccumulations(accumulations, id, depth, targets, inits);
      assignAll(depth, targets, inits);
      std::string iv = local(body.args[0]);
      line(depth, fmt::format("for {} in range({}, {}, {}):", iv, e(operands[0]), e(operands[1]),
                              e(operands[2])));
      yieldTargets_.push_back(targets);
      loops_.push_back(Loop{targets});
      emitBlock(o.regions[0], depth + 1);
      loops_.pop_back();
      yieldTargets_.pop_back();
      endAccumulations(accumulations, parts, depth, targets);
      return;
    }
    case OpKind::While: {
      const Block& cond = m_.blocks[o.regions[0].index];
      const Block& body = m_.blocks[o.regions[1].index];
      std::vector<std::string> targets;
      std::vector<std::string> inits;
      for (size_t i = 0; i < results.size(); ++i) inits.push_back(e(operands[i]));
      for (size_t i = 0; i < results.size(); ++i) {
        std::string t = local(results[i]);
        expr_[cond.args[i].index] = t;
        expr_[body.args[i].index] = t;
        targets.push_back(t);
      }
      std::vector<Accumulation> accumulations =
          options_.accumulateConcat ? findAccumulations(id) : std::vector<Accumulation>{};
      std::vector<std::string> parts =
          startAccumulations(accumulations, id, depth, targets, inits);
      assignAll(depth, targets, inits);
      line(depth, "while True:");
      yieldTargets_.push_back({"<while-condition>"});
      emitBlock(o.regions[0], depth + 1);
      yieldTargets_.back() = targets;
      loops_.push_back(Loop{targets});
      emitBlock(o.regions[1], depth + 1);
      loops_.pop_back();
      yieldTargets_.pop_back();
      endAccumulations(accumulations, parts, depth, targets);
      return;
    }
    case OpKind::Yield: {
      const std::vector<std::string>& targets = yieldTargets_.back();
      if (!targets.empty() && targets[0] == "<while-condition>") {
        line(depth, fmt::format("if not {}:", parenthesized(e(operands[0]))));
        line(depth + 1, "break");
        return;
      }
      std::vector<std::string> values;
      for (ValueId v : operands) values.push_back(e(v));
      assignAll(depth, targets, values);
      return;
    }
    case OpKind::Break:
    case OpKind::Continue: {
      const Loop& loop = loops_.back();
      std::vector<std::string> values;
      for (ValueId v : operands) values.push_back(e(v));
      assignAll(depth, loop.results, values);
      line(depth, o.kind == OpKind::Break ? "break" : "continue");
      return;
    }
    case OpKind::Return:
      line(depth, operands.empty() ? "return"
                                   : "return " + unparenthesized(e(operands[0]), room(depth, 7)));
      return;
    case OpKind::IndexAssign: {
      // Value semantics: the new value is a copy with the part replaced (a
      // list's elements are values too, so a shallow copy is enough).
      std::string t = local(results[0]);
      std::string index = indexList(id, 1);
      bool list = m_.types.kind(m_.typeOf(operands[0])) == TypeKind::List;
      line(depth, list ? fmt::format("{} = list({})", t, e(operands[0]))
                       : fmt::format("{} = {}.clone()", t, e(operands[0])));
      line(depth, fmt::format("{}[{}] = {}", t, index, e(operands.back())));
      return;
    }
    case OpKind::CheckDim: {
      // Dimension -1 is the rank (an input checked against its declared type).
      const std::string measured = o.intAttr < 0
                                       ? fmt::format("{}.dim()", e(operands[0]))
                                       : fmt::format("{}.shape[{}]", e(operands[0]), o.intAttr);
      // Against another tensor's dimension (`?` against `?`) or a size.
      const std::string wanted = m_.ints(id).empty()
                                     ? e(operands[1])
                                     : fmt::format("{}.shape[{}]", e(operands[1]), m_.ints(id)[0]);
      std::string comparison = fmt::format("({} != {})", measured, wanted);
      line(depth, fmt::format("if {}:", unparenthesized(comparison, room(depth, 4))));
      // raise ValueError("<text>" + str(actual) + "<text>" + str(expected)
      // ...), the message cut into literals that fit the line (and a literal
      // whose escapes make it longer cut again: writeWrapped). These lines
      // are inside the call's parentheses.
      const std::string& message = m_.strings[o.strAttr];
      int room = 100 - (depth + 2) * 4 - 4;
      size_t width = room < 20 ? 20 : static_cast<size_t>(room);
      auto argument = [&](const std::string& text) {
        writeWrapped(out_, depth + 2, text, /*bracketed=*/true);
      };
      auto pieces = [&](const std::string& text, const char* lead) {
        for (std::string_view piece : literalPieces(text, width, /*atSpaces=*/false)) {
          argument((piece.data() == text.data() ? lead : "") + pyString(piece));
        }
      };
      line(depth + 1, "raise ValueError(");
      const std::string actual = fmt::format("str({})", measured);
      const std::string expected = fmt::format("str({})", wanted);
      // The compiled file's name (`{source}`) is text of the message; the
      // sizes are expressions. Placeholders are found in the IR's message
      // only, never in the name put in.
      std::string text;
      auto flushText = [&](bool& first) {
        if (text.empty()) return;
        pieces(text, first ? "" : "+ ");
        first = false;
        text.clear();
      };
      bool first = true;
      for (size_t i = 0; i < message.size();) {
        size_t a = message.find("{actual}", i);
        size_t x = message.find("{expected}", i);
        size_t src = message.find(ir::kCheckSourcePlaceholder, i);
        size_t brace = message.find("{{", i);
        size_t at = std::min({a, x, src, brace});
        text += message.substr(i, std::min(at, message.size()) - i);
        if (at == std::string::npos) break;
        if (at == brace) {
          text += '{';
          i = at + 2;
          continue;
        }
        if (at == src) {
          text += options_.checkSource.empty() ? std::string("<input>") : options_.checkSource;
          i = at + ir::kCheckSourcePlaceholder.size();
          continue;
        }
        flushText(first);
        if (first) argument("\"\"");
        argument("+ " + (at == a ? actual : expected));
        first = false;
        i = at + (at == a ? 8 : 10);
      }
      flushText(first);
      line(depth + 1, ")");
      return;
    }
    default: break;
  }
  std::string value = opExpr(id);
  if (results.empty() || unusedResult(id)) {
    line(depth, value);
    return;
  }
  if (inlineIntoNext(id, value) || elifCondition(id, depth)) {
    expr_[results[0].index] = value;
    return;
  }
  std::string target = local(results[0]);
  std::string rhs = unparenthesized(value, room(depth, target.size() + 3));
  line(depth, fmt::format("{} = {}", target, rhs));
}

bool Emitter::unusedResult(OpId id) const {
  // The uses are counted from -O1 (emitBlock), where dead ops are gone: an op
  // still here whose value nothing reads is kept for its effect.
  if (!(options_.inlineSingleUse || options_.returnDirectly) || m_.op(id).resultsCount != 1 ||
      (ctx_ != Context::Forward && ctx_ != Context::Apply && ctx_ != Context::Fn &&
       ctx_ != Context::Main)) {
    return false;
  }
  return useCounts_.count(m_.result(id).index) == 0;
}

bool Emitter::inlineIntoNext(OpId id, const std::string& value) const {
  constexpr size_t kMaxInlined = 60;  // keeps the statement that uses it readable
  const Op& o = m_.op(id);
  if (o.resultsCount != 1 || !nextOp_.isValid() ||
      (ctx_ != Context::Forward && ctx_ != Context::Apply && ctx_ != Context::Fn)) {
    return false;
  }
  const Op& user = m_.op(nextOp_);
  std::span<const ValueId> operands = m_.operands(nextOp_);
  // The value is the whole right-hand side of a return or yield, or the whole
  // condition of an `if`: no line to keep readable.
  bool condition = user.kind == OpKind::If && operands[0] == m_.result(id);
  bool whole = options_.returnDirectly &&
               (user.kind == OpKind::Return || user.kind == OpKind::Yield || condition);
  if (!whole && (!options_.inlineSingleUse || value.size() > kMaxInlined)) return false;
  // An op with an effect (a sub-module's call, batch-norm statistics) only
  // where nothing with an effect of its own moves across it: the statement's
  // other operands are names or literals (`self.fc(x=self.body(x=h))`).
  if (!isPure(o.kind) && !(whole && !operands.empty() && operands[0] == m_.result(id))) {
    for (ValueId v : operands) {
      if (v == m_.result(id)) continue;
      if (!isAtom(e(v))) return false;
    }
    if (user.kind == OpKind::If || user.kind == OpKind::For || user.kind == OpKind::While) {
      return false;  // conditions and bounds: kept in locals of their own
    }
  }
  // A sub-module's call runs long: written into the next statement, its
  // inputs would live until that statement ends, where a tensor it used last
  // was released right after it (-O2 and up). Not for a return or yield.
  if (!isPure(o.kind) && user.kind != OpKind::Return && user.kind != OpKind::Yield) {
    BlockId block = opBlock_;
    for (ValueId v : m_.operands(id)) {
      const Value& def = m_.values[v.index];
      if (!holdsTensors(m_.typeOf(v)) || !def.def.isValid() || m_.op(def.def).parent != block) {
        continue;
      }
      auto last = lastUse_.find(useKey(block, v));
      if (last != lastUse_.end() && last->second <= opPosition_) return false;
    }
  }
  // Used once in the whole body: an operand of an `if` or a loop itself (not
  // of its regions) is evaluated once, before them.
  auto it = useCounts_.find(m_.result(id).index);
  if (it == useCounts_.end() || it->second != 1) return false;
  return std::find(operands.begin(), operands.end(), m_.result(id)) != operands.end();
}

bool Emitter::elifCondition(OpId id, int depth) const {
  if (options_.returnDirectly || options_.inlineSingleUse || pendingElifs_.empty() ||
      !nextOp_.isValid() || m_.op(nextOp_).kind != OpKind::If) {
    return false;  // from -O1 on, inlineIntoNext writes every condition used once
  }
  const PendingElif& p = pendingElifs_.back();
  const Op& o = m_.op(id);
  if (p.taken || p.depth + 1 != depth || out_.size() != p.bodyStart || !isPure(o.kind) ||
      o.resultsCount != 1 || m_.operands(nextOp_)[0] != m_.result(id)) {
    return false;
  }
  // A temporary (a named value keeps its local, as -O0 writes it), read by
  // the condition alone.
  ValueId value = m_.result(id);
  return !m_.values[value.index].name.isValid() && usesUnder(opBlock_, value) == 1;
}

size_t Emitter::usesUnder(BlockId block, ValueId value) const {
  size_t uses = 0;
  for (OpId op : m_.blocks[block.index].ops) {
    for (ValueId v : m_.operands(op)) uses += v == value ? 1 : 0;
    for (BlockId region : m_.regionsOf(op)) {
      if (region.isValid()) uses += usesUnder(region, value);
    }
  }
  return uses;
}

void Emitter::countUses(BlockId block, std::vector<uint32_t>& used, int depth) {
  const Block& b = m_.blocks[block.index];
  if (options_.inlineSingleUse) blockDepth_[block.index] = depth;
  for (size_t i = 0; i < b.ops.size(); ++i) {
    size_t from = used.size();
    std::span<const ValueId> operands = m_.operands(b.ops[i]);
    for (size_t j = 0; j < operands.size(); ++j) {
      ValueId v = operands[j];
      ++useCounts_[v.index];
      used.push_back(v.index);
      OpId def = m_.values[v.index].def;
      if (j == 0 && def.isValid() &&
          (m_.op(def).kind == OpKind::ShapeOf ||
           (m_.op(def).kind == OpKind::Builtin &&
            static_cast<BuiltinFn>(m_.op(def).intAttr) == BuiltinFn::Split)) &&
          m_.op(b.ops[i]).kind == OpKind::Index && m_.ints(b.ops[i]).size() == 1 &&
          m_.ints(b.ops[i])[0] == -1) {
        ++elementUses_[v.index];
      }
    }
    for (BlockId region : m_.regionsOf(b.ops[i])) {
      if (region.isValid()) countUses(region, used, depth + 1);
    }
    // Only -Os asks where a use ends (inlineIntoNext, for sub-module calls),
    // and only of a value defined in this block.
    if (!options_.inlineSingleUse) continue;
    for (size_t k = from; k < used.size(); ++k) {
      OpId def = m_.values[used[k]].def;
      if (def.isValid() && m_.op(def).parent == block) {
        lastUse_[useKey(block, ValueId{used[k]})] = static_cast<uint32_t>(i);
      }
    }
    // The blocks around this one ask only of their own values: the rest go,
    // and each value stays once (a use deep in an else-if chain was looked at
    // again at every level of it: quadratic in the nesting).
    std::unordered_set<uint32_t> kept;
    size_t end = from;
    for (size_t k = from; k < used.size(); ++k) {
      OpId def = m_.values[used[k]].def;
      if (!def.isValid()) continue;
      auto defined = blockDepth_.find(m_.op(def).parent.index);
      if ((defined == blockDepth_.end() || defined->second < depth) &&
          kept.insert(used[k]).second) {
        used[end++] = used[k];
      }
    }
    used.resize(end);
  }
}


// The subscript of an index op: codes from its ints, operands from `from`.
std::string Emitter::indexList(OpId id, size_t from) const {
  std::span<const ValueId> operands = m_.operands(id);
  std::string out;
  size_t next = from;
  for (int64_t code : m_.ints(id)) {
    if (!out.empty()) out += ", ";
    if (code == -1) {
      out += e(operands[next++]);
    } else if (code == -2) {
      out += ":";
    } else {
      std::string parts[3];
      for (int b = 0; b < 3; ++b) {
        if ((code >> b) & 1) parts[b] = e(operands[next++]);
      }
      out += parts[0] + ":" + parts[1];
      if (!parts[2].empty()) out += ":" + parts[2];
    }
  }
  return out.empty() ? "()" : out;
}

std::string Emitter::opExpr(OpId id) {
  const Op& o = m_.op(id);
  std::span<const ValueId> operands = m_.operands(id);
  auto a = [&](size_t i) { return e(operands[i]); };
  // As an argument of a call: no parentheses around the whole of it.
  auto arg = [&](size_t i) { return unparenthesized(e(operands[i]), std::string::npos); };
  // A chain of one precedence written as Python reads it: `a + b - c`, not `((a + b) - c)`
  // (the left operand of the same precedence needs no parentheses). Each step in its own
  // pair nested a 200-term chain past the 200 parentheses CPython's parser takes.
  auto precedence = [](OpKind k) {
    return k == OpKind::Add || k == OpKind::Sub                       ? 1
           : k == OpKind::Mul || k == OpKind::Div || k == OpKind::Mod ? 2
                                                                      : 0;
  };
  auto binary = [&](const char* op) {
    std::string lhs = a(0);
    OpId def = m_.values[operands[0].index].def;
    if (precedence(o.kind) != 0 && def.isValid() &&
        precedence(m_.op(def).kind) == precedence(o.kind)) {
      lhs = unparenthesized(lhs, std::string::npos);
    }
    return fmt::format("({} {} {})", lhs, op, a(1));
  };
  TypeId resultType = o.resultsCount > 0 ? m_.typeOf(m_.result(id)) : TypeId{};
  switch (o.kind) {
    case OpKind::Constant:
      switch (o.constKind) {
        case ConstKind::Int: return std::to_string(o.intAttr);
        case ConstKind::Float: return pyFloat(o.floatAttr);
        case ConstKind::Bool: return o.intAttr != 0 ? "True" : "False";
        case ConstKind::String: {
          const std::string& text = m_.strings[o.strAttr];
          if (m_.types.kind(resultType) == TypeKind::DTypeValue) {
            if (std::optional<DType> dt = dtypeFromName(text)) return torchDType(*dt);
          }
          return pyStringLines(text);
        }
        case ConstKind::None: return "None";
      }
      return "None";
    case OpKind::Hyper: {
      IdentifierId hyper = fn_->hypers[static_cast<size_t>(o.intAttr)].name;
      return ctx_ == Context::Forward ? "self." + member(hyper) : name(hyper);
    }
    case OpKind::Global: {
      // A tensor constant is made on the default device when the module is
      // imported; a body uses it where its inputs live (`.to` returns the
      // tensor itself when it is there already). The runtime's constant_to
      // is that `.to`, as one torch.fx node: `K.to(device=x.device)` hands
      // Proxies to a real tensor's method under symbolic_trace, which raises.
      std::string global = globalName(static_cast<size_t>(o.intAttr));
      std::string device = deviceOf();
      if (!m_.types.isTensor(resultType) || device.empty()) return global;
      return fmt::format("tritonrt.constant_to({}, {}{})", global, device, dtypeArg(resultType));
    }
    case OpKind::Weight: {
      const WeightDecl& w = fn_->weights[static_cast<size_t>(o.intAttr)];
      if (ctx_ != Context::Forward) return name(w.name);
      return m_.types.isTernary(w.type)
                 ? fmt::format("tritonrt.weight(self, {})", pyString(member(w.name)))
                 : "self." + member(w.name);
    }
    case OpKind::ShapeDim: return fmt::format("{}.shape[{}]", a(0), o.intAttr);
    case OpKind::List: {
      // An element needs no parentheses of its own (`[0, k // 2]`).
      std::string out = "[";
      for (size_t i = 0; i < operands.size(); ++i) {
        out += (i ? ", " : "") + unparenthesized(a(i), std::string::npos);
      }
      return out + "]";
    }
    case OpKind::ShapeOf: {
      // Only its sizes read (`t[0]`, `t[1]`): the torch.Size itself, as hand-written code
      // reads `x.shape[0]` (and torch.fx can trace it).
      return onlyElementsRead(m_.result(id)) ? a(0) + ".shape"
                                             : fmt::format("list({}.shape)", a(0));
    }
    case OpKind::TransposeAll: {
      TypeId t = m_.typeOf(operands[0]);
      if (m_.types.node(t).rankKnown && m_.types.shape(t).size() <= 2) {
        return m_.types.shape(t).size() == 2 ? a(0) + ".t()" : a(0);
      }
      return fmt::format("{0}.permute(*range({0}.dim() - 1, -1, -1))", a(0));
    }
    case OpKind::InstanceMember: {
      // A sub-module's ternary weight (`enc.weight` in a tied decoder) is its
      // value s * q, or its packed codes unpacked, as the sub-module reads it.
      const std::string& member = m_.strings[o.strAttr];
      if (m_.types.isTernary(resultType)) {
        return fmt::format("tritonrt.weight({}, {})", a(0), pyString(pyMember(member)));
      }
      return a(0) + "." + pyMember(member);
    }
    // `{inplace}` (the inplace pass): the sum may be written into the left operand.
    case OpKind::Add:
      return o.inplace ? fmt::format("tritonrt.add_into({}, {})", arg(0), arg(1)) : binary("+");
    case OpKind::Sub:
      return o.inplace ? fmt::format("tritonrt.sub_into({}, {})", arg(0), arg(1)) : binary("-");
    case OpKind::Mul: return binary("*");
    case OpKind::Div:
      if (m_.types.isScalar(resultType) && isIntegral(m_.types.node(resultType).dtype)) {
        return binary("//");
      }
      return binary("/");  // of tensors true division, floating (the verifier checks it)
    case OpKind::Mod: return binary("%");
    case OpKind::Pow: {
      bool numbers = isScalar(operands[0]) && isScalar(operands[1]) &&
                     m_.types.isScalar(resultType);
      std::string p =
          power(a(0), a(1), numbers && isFloating(m_.types.node(resultType).dtype));
      // Python's int ** int is a float for a negative exponent (2 ** -1 is
      // 0.5); the checker typed it an integer, which it stays (truncated),
      // unless the exponent is a constant that is not negative.
      if (numbers && isIntegral(m_.types.node(resultType).dtype) &&
          m_.types.node(resultType).dtype != DType::Bool) {
        OpId def = m_.values[operands[1].index].def;
        bool nonNegative = def.isValid() && m_.op(def).kind == OpKind::Constant &&
                           m_.op(def).constKind == ConstKind::Int && m_.op(def).intAttr >= 0;
        if (!nonNegative) return "int" + p;
      }
      return p;
    }
    // torch.matmul does not promote; the checker converted an integer side
    // that meets a float one (Checker::matmul).
    case OpKind::MatMul:
      // With the CUDA target, `x @ w` of a ternary weight goes through
      // fused_matmul, which runs the kernel planned for it (KernelPlan) when
      // w is packed and on a GPU, and is `torch.matmul` everywhere else.
      if (kernelWeight(operands[1])) return fmt::format("tritonrt.fused_matmul({}, {})", a(0), a(1));
      if (leftKernelProduct(operands[0], operands[1])) {
        return fmt::format("tritonrt.left_matmul({}, {})", a(0), a(1));
      }
      // An integer product (int8 @ int8, trit @ trit) is `@` on the CPU, but
      // CUDA has no integer matmul: tritonrt.int_matmul computes it there.
      // (A ternary operand is a scaled float32 tensor: `ternary @ ternary` is
      // a float product.)
      if (integerTensor(operands[0]) && integerTensor(operands[1])) {
        return fmt::format("tritonrt.int_matmul({}, {})", a(0), a(1));
      }
      return binary("@");
    case OpKind::Neg: return fmt::format("(-{})", a(0));
    case OpKind::Not: return isScalar(operands[0]) ? fmt::format("(not {})", a(0))
                                                   : fmt::format("(~{})", a(0));
    case OpKind::Eq: return binary("==");
    case OpKind::Ne: return binary("!=");
    case OpKind::Lt: return binary("<");
    case OpKind::Le: return binary("<=");
    case OpKind::Gt: return binary(">");
    case OpKind::Ge: return binary(">=");
    case OpKind::And: return isScalar(operands[0]) && isScalar(operands[1]) ? binary("and") : binary("&");
    case OpKind::Or: return isScalar(operands[0]) && isScalar(operands[1]) ? binary("or") : binary("|");
    case OpKind::Cast: {
      DType dt = m_.types.node(resultType).dtype;
      if (m_.types.isScalar(resultType)) {
        if (dt == DType::Bool) return fmt::format("bool({})", a(0));
        if (dt == DType::Str) return fmt::format("str({})", a(0));
        // trit(x) rounds (half to even, as the constant folder) and clamps.
        if (dt == DType::Trit) return fmt::format("max(-1, min(1, round({})))", arg(0));
        return fmt::format("{}({})", isIntegral(dt) ? "int" : "float", a(0));
      }
      if (m_.types.kind(m_.typeOf(operands[0])) == TypeKind::List) {
        // A list literal bound to a tensor type.
        return fmt::format("torch.tensor({}, dtype={}{})", arg(0), createdDType(dt), deviceArg());
      }
      if (dt == DType::Trit) {
        // Rounds (half to even) and clamps to {-1, 0, 1}, held as float32.
        DType from = m_.types.node(m_.typeOf(operands[0])).dtype;
        if (from == DType::Bool) return fmt::format("{}.to({})", a(0), torchDType(dt));
        bool floats = isFloating(from) || from == DType::Trit;
        std::string clamped = fmt::format("torch.clamp({}, -1, 1)",
                                          floats ? "torch.round(" + arg(0) + ")" : arg(0));
        if (from == DType::Float32 || from == DType::Trit) return clamped;
        return fmt::format("{}.to({})", clamped, torchDType(dt));
      }
      // To float32, the model's float dtype: the dtype anchor's in a body (an
      // integer tensor added to a half model's activations stays half, and
      // `ternary + ternary`, scaled floats of the weights' dtype, meets `x`).
      return fmt::format("{}.to({})", a(0), createdDType(dt));
    }
    case OpKind::Index:
      if (stackItem(id)) return fmt::format("tritonrt.stack_item({}, {})", a(0), a(1));
      return fmt::format("{}[{}]", a(0), indexList(id, 1));
    case OpKind::Builtin:
    case OpKind::BuiltinStateful:
    case OpKind::BuiltinEffect: return builtinExpr(id);
    case OpKind::Apply:
    case OpKind::CallFn: {
      const Function& g = m_.functions[static_cast<size_t>(o.intAttr)];
      std::span<const int64_t> params = m_.ints(id);
      std::string args;
      for (size_t i = 0; i < operands.size(); ++i) {
        const ParamRef& p = g.params[static_cast<size_t>(params[i])];
        IdentifierId n = p.kind == ParamRef::Kind::Hyper    ? g.hypers[p.index].name
                         : p.kind == ParamRef::Kind::Weight ? g.weights[p.index].name
                                                            : g.inputs[p.index].name;
        args += fmt::format("{}{}={}", i ? ", " : "", name(n), arg(i));
      }
      const std::string& callee = fnName(static_cast<size_t>(o.intAttr));
      if (o.kind == OpKind::CallFn) {
        auto add = [&](std::string_view keyword, const std::string& value) {
          args += fmt::format("{}{}={}", args.empty() ? "" : ", ", keyword, value);
        };
        if (fnsUsingTraining_[static_cast<size_t>(o.intAttr)] && hasTrainingFlag()) {
          add("_training", training());
        }
        if (fnsTakingDevice_[static_cast<size_t>(o.intAttr)] && !deviceOf().empty()) {
          add("_device", deviceOf());
        }
        if (fnsTakingDType_[static_cast<size_t>(o.intAttr)] &&
            createdDType(DType::Float32) != "torch.float32") {
          add("_dtype", createdDType(DType::Float32));
        }
        return fmt::format("{}({})", callee, args);
      }
      return fmt::format("{}({}{}_training={})", applyName(callee), args, args.empty() ? "" : ", ",
                         training());
    }
    case OpKind::Instantiate: {
      const InstanceDecl& inst = fn_->instances[static_cast<size_t>(o.intAttr)];
      std::span<const int64_t> params = m_.ints(id);
      std::string args;
      // `main` runs what it calls in eval mode (docs/pytorch.md), its instances too: a
      // module starts in training mode in torch, where dropout would be active and
      // batch norm would need more than one value per channel.
      std::string_view mode = ctx_ == Context::Main ? ".eval()" : "";
      if (inst.builtin) {
        auto layer = static_cast<BuiltinLayer>(inst.decl);
        std::vector<std::string_view> names = builtinLayerParamNames(layer);
        for (size_t i = 0; i < operands.size(); ++i) {
          args += fmt::format("{}{}={}", i ? ", " : "", names[static_cast<size_t>(params[i])],
                              arg(i));
        }
        std::string_view cls = builtinLayerName(layer);
        bool ternary = layer == BuiltinLayer::TernaryLinear || layer == BuiltinLayer::TernaryConv2d;
        return fmt::format("{}.{}({}){}", ternary ? "tritonrt" : "nn", cls, args, mode);
      }
      // A user layer's instantiation binds its hyperparameters by their index
      // among the hyperparameters (implicit size variables included).
      const Function& g = m_.functions[inst.decl];
      for (size_t i = 0; i < operands.size(); ++i) {
        const HyperDecl& h = g.hypers[static_cast<size_t>(params[i])];
        args += fmt::format("{}{}={}", i ? ", " : "", name(h.name), arg(i));
      }
      return fmt::format("{}({}){}", fnName(inst.decl), args, mode);
    }
    case OpKind::Forward: {
      const InstanceDecl& inst = fn_->instances[static_cast<size_t>(o.intAttr)];
      std::string args;
      // Values are never changed by a call (docs/language.md): an in-place
      // Dropout overwrites its input only where the inplace pass found that
      // nothing else reads it; elsewhere it is given a copy in training (in
      // eval it returns its input untouched). Still a call of the module, so
      // hooks and a replaced sub-module work as in PyTorch.
      if (inst.builtin && !o.inplace && static_cast<BuiltinLayer>(inst.decl) == BuiltinLayer::Dropout &&
          inPlaceDropout(static_cast<uint32_t>(o.intAttr))) {
        std::string self = instanceExpr(static_cast<uint32_t>(o.intAttr));
        std::string x = arg(0);
        return fmt::format("{}({}.clone() if {}.training else {})", self,
                           parenthesized(x), self, x);
      }
      if (inst.builtin) {
        for (size_t i = 0; i < operands.size(); ++i) args += (i ? ", " : "") + arg(i);
        // A float16/bfloat16 input to a layer with float state (float32 in the
        // source: the model's dtype) runs in the layer's dtype and comes back
        // in its own, as the checker types it; torch.nn would raise on the mix.
        if (operands.size() == 1 && hasFloatState(static_cast<BuiltinLayer>(inst.decl)) &&
            isTensor(operands[0])) {
          DType dtype = m_.types.node(m_.typeOf(operands[0])).dtype;
          if (dtype == DType::Float16 || dtype == DType::BFloat16) {
            return fmt::format("tritonrt.run_layer({}, {})",
                               instanceExpr(static_cast<uint32_t>(o.intAttr)), args);
          }
        }
      } else {
        // Positional, as a hand-written module's call: forward hooks and
        // pre-hooks see the inputs (torch gives them only the positional
        // ones) and a replacement (nn.Identity()) takes them. By name from the
        // first input not in its place on (an input left to its default).
        const Function& g = m_.functions[inst.decl];
        std::span<const int64_t> params = m_.ints(id);
        bool inPlace = true;
        for (size_t i = 0; i < operands.size(); ++i) {
          const ParamRef& p = g.params[static_cast<size_t>(params[i])];
          inPlace = inPlace && p.index == i;
          args += i ? ", " : "";
          args += inPlace ? arg(i) : fmt::format("{}={}", name(g.inputs[p.index].name), arg(i));
        }
      }
      return fmt::format("{}({})", instanceExpr(static_cast<uint32_t>(o.intAttr)), args);
    }
    case OpKind::FusedMatMul: {
      std::span<const int64_t> ints = m_.ints(id);
      std::string out = fmt::format("tritonrt.fused_matmul({}, {}", arg(0), arg(1));
      size_t next = 2;
      if (ints[1] != 0) out += ", bias=" + arg(next++);
      if (ints[2] != 0) out += ", scale=" + arg(next++);
      if (o.intAttr != 0) out += fmt::format(", act=\"{}\"", kActivations[o.intAttr]);
      if (ints[0] == 1) out += ", layout=\"linear\"";
      return out + ")";
    }
    case OpKind::FusedConv2d: {
      std::span<const int64_t> given = m_.ints(id);
      std::vector<std::string_view> names = builtinFnParamNames(BuiltinFn::Conv2dFn);
      std::string out = fmt::format("tritonrt.fused_conv2d({}, {}", arg(0), arg(1));
      for (size_t i = 2; i < given.size(); ++i) {
        out += fmt::format(", {}={}", names[static_cast<size_t>(given[i])], arg(i));
      }
      if (m_.operands(id).size() > given.size()) out += ", scale=" + arg(given.size());
      if (o.intAttr != 0) out += fmt::format(", act=\"{}\"", kActivations[o.intAttr]);
      return out + ")";
    }
    case OpKind::FusedLinear:
    case OpKind::FusedConv: {
      std::span<const int64_t> ints = m_.ints(id);
      std::string layers = instanceExpr(static_cast<uint32_t>(ints[0]));
      if (o.kind == OpKind::FusedConv) {
        layers += ", " + (ints[1] < 0 ? "None" : instanceExpr(static_cast<uint32_t>(ints[1])));
      }
      // A float16/bfloat16 input runs in the layers' dtype, as run_layer
      // (above) runs each unfused call; any other mix raises torch's error.
      DType dtype = m_.types.node(m_.typeOf(operands[0])).dtype;
      bool mixed = dtype == DType::Float16 || dtype == DType::BFloat16;
      // A second operand: the residual added before the activation.
      return fmt::format("tritonrt.{}({}, {}, act=\"{}\"{}{})",
                         o.kind == OpKind::FusedConv ? "conv_bn_act" : "linear_act", layers,
                         arg(0), kActivations[o.intAttr], mixed ? ", mixed_dtype=True" : "",
                         operands.size() > 1 ? ", residual=" + arg(1) : "");
    }
    default: break;
  }
  TRITONC_UNREACHABLE("emit: an op without an expression form");
}

std::string Emitter::builtinExpr(OpId id) {
  const Op& o = m_.op(id);
  auto fn = static_cast<BuiltinFn>(o.intAttr);
  std::span<const ValueId> operands = m_.operands(id);
  std::span<const int64_t> params = m_.ints(id);
  std::vector<std::string_view> names = builtinFnParamNames(fn);
  // `arg` as call arguments (`F.relu(a + b)`), `raw` where an operator or an
  // attribute applies to it (`(a + b).reshape(...)`).
  std::vector<std::string> arg(names.size());
  std::vector<std::string> raw(names.size());
  std::vector<ValueId> val(names.size());
  for (size_t i = 0; i < operands.size(); ++i) {
    auto p = static_cast<size_t>(params[i]);
    raw[p] = e(operands[i]);
    arg[p] = unparenthesized(raw[p], std::string::npos);
    val[p] = operands[i];
  }
  auto has = [&](size_t i) { return !arg[i].empty(); };
  // ", name=value" for a given optional argument.
  auto kw = [&](size_t i, std::string_view pyName) {
    return has(i) ? fmt::format(", {}={}", pyName, arg[i]) : std::string();
  };
  auto scalarArg = [&](size_t i) { return has(i) && isScalar(val[i]); };
  auto floatScalarArg = [&](size_t i) {
    return scalarArg(i) && isFloating(m_.types.node(m_.typeOf(val[i])).dtype);
  };
  auto boolArg = [&](size_t i) {
    return has(i) && m_.types.node(m_.typeOf(val[i])).dtype == DType::Bool;
  };
  // Every dimension of argument i, as a `dim=` value: `(0, 1)` when its rank
  // is known, else computed.
  auto allDims = [&](size_t i) {
    TypeId type = m_.typeOf(val[i]);
    if (!m_.types.node(type).rankKnown) return fmt::format("tuple(range({}.dim()))", raw[i]);
    size_t rank = m_.types.shape(type).size();
    std::string dims = "(";
    for (size_t d = 0; d < rank; ++d) dims += fmt::format("{}{}", d ? ", " : "", d);
    return dims + (rank == 1 ? ",)" : ")");
  };
  TypeId resultType = o.resultsCount > 0 ? m_.typeOf(m_.result(id)) : TypeId{};
  // A builtin of Python numbers gives the operand Python picks (max(3, 2.5)
  // is 3, sign(2.5) is 1): converted to the result's type where an operand
  // is of another kind (bool, int, float).
  auto asResultNumber = [&](std::string expr, std::initializer_list<size_t> from) {
    if (!resultType.isValid() || !m_.types.isScalar(resultType)) return expr;
    DType r = m_.types.node(resultType).dtype;
    auto kind = [](DType d) { return d == DType::Bool ? 0 : isFloating(d) ? 2 : 1; };
    bool differs = false;
    for (size_t i : from) {
      differs = differs || (scalarArg(i) && kind(m_.types.node(m_.typeOf(val[i])).dtype) != kind(r));
    }
    if (!differs) return expr;
    return fmt::format("{}({})", r == DType::Bool ? "bool" : isFloating(r) ? "float" : "int",
                       unparenthesized(expr, std::string::npos));
  };
  std::string resultDType = resultType.isValid() && m_.types.isTensor(resultType)
                                ? createdDType(m_.types.node(resultType).dtype)
                                : "torch.float32";
  std::string shape = has(0) ? arg[0] : shapeHint_;
  auto math = [&](const char* name) {
    usesMath_ = true;
    return fmt::format("math.{}({})", name, arg[0]);
  };
  std::string device = deviceArg();
  std::string created = dtypeArg(resultType) + device;  // for float32 creations
  // In a body whose inputs anchor the device: `x.new_zeros(shape)` (the dtype given when
  // it is not x's), as hand-written code creates beside an input; torch.fx traces it with
  // sizes read from inputs, where it cannot trace torch.zeros.
  // `args`: what precedes the dtype (the shape; the shape and the value; the data).
  auto beside = [&](const char* method, const std::string& args) -> std::optional<std::string> {
    if (deviceAnchor_.empty() || device != ", device=" + deviceAnchor_ + ".device" ||
        !resultType.isValid() || !m_.types.isTensor(resultType)) {
      return std::nullopt;
    }
    std::string dtype = resultDType == deviceAnchor_ + ".dtype" ? "" : ", dtype=" + resultDType;
    return fmt::format("{}.{}({}{})", deviceAnchor_, method, args, dtype);
  };
  switch (fn) {
    case BuiltinFn::Zeros:
      if (auto out = beside("new_zeros", shape)) return *out;
      return fmt::format("torch.zeros({}{})", shape, created);
    case BuiltinFn::Ones:
      if (auto out = beside("new_ones", shape)) return *out;
      return fmt::format("torch.ones({}{})", shape, created);
    case BuiltinFn::Randn: return fmt::format("torch.randn({}{})", shape, created);
    case BuiltinFn::Rand: return fmt::format("torch.rand({}{})", shape, created);
    case BuiltinFn::KaimingUniform:
      usesMath_ = true;
      return fmt::format("nn.init.kaiming_uniform_(torch.empty({}{}), a=math.sqrt(5))", shape,
                         created);
    case BuiltinFn::Full:
      if (auto out = beside("new_full", shape + ", " + arg[1])) return *out;
      return fmt::format("torch.full({}, {}, dtype={}{})", shape, arg[1], resultDType, device);
    case BuiltinFn::Arange:
      return fmt::format("torch.arange({}{}{}, dtype={}{})", arg[0], has(1) ? ", " + arg[1] : "",
                         has(2) ? ", " + arg[2] : "", resultDType, device);
    case BuiltinFn::Eye: {  // without n: in a weight's default, eye(n, m) of its shape
      std::string sizes = has(0) ? arg[0] : shape.substr(1, shape.size() - 2);
      // torch 1.13 has no bfloat16 eye on CPU: made in float32 and converted, for a
      // bfloat16 tensor and for one whose dtype is known at run time only (a model
      // converted with .bfloat16()).
      std::string dtype = dtypeArg(resultType);
      if (dtype == ", dtype=torch.bfloat16" ||
          (!dtype.empty() && !dtype.starts_with(", dtype=torch."))) {
        return fmt::format("torch.eye({}{}).to({})", sizes, device,
                           std::string_view(dtype).substr(8));
      }
      return fmt::format("torch.eye({}{})", sizes, created);
    }
    case BuiltinFn::TensorFn:
      if (auto out = beside("new_tensor", arg[0])) return *out;
      return fmt::format("torch.tensor({}, dtype={}{})", arg[0], resultDType, device);
    case BuiltinFn::Range:
      return fmt::format("list(range({}{}{}))", arg[0], has(1) ? ", " + arg[1] : "",
                         has(2) ? ", " + arg[2] : "");
    case BuiltinFn::Reshape: return fmt::format("{}.reshape({})", raw[0], arg[1]);
    case BuiltinFn::Flatten:
      return fmt::format("torch.flatten({}, {}, {})", arg[0], has(1) ? arg[1] : "1",
                         has(2) ? arg[2] : "-1");
    case BuiltinFn::Transpose:
      return fmt::format("torch.transpose({}, {}, {})", arg[0], has(1) ? arg[1] : "-2",
                         has(2) ? arg[2] : "-1");
    case BuiltinFn::Permute: return fmt::format("{}.permute({})", raw[0], arg[1]);
    case BuiltinFn::Squeeze:
      return has(1) ? fmt::format("torch.squeeze({}, {})", arg[0], arg[1])
                    : fmt::format("torch.squeeze({})", arg[0]);
    case BuiltinFn::Unsqueeze: return fmt::format("torch.unsqueeze({}, {})", arg[0], arg[1]);
    case BuiltinFn::Concat: return fmt::format("torch.cat({}, dim={})", arg[0], has(1) ? arg[1] : "0");
    case BuiltinFn::Stack: return fmt::format("torch.stack({}, dim={})", arg[0], has(1) ? arg[1] : "0");
    case BuiltinFn::Split: {
      // A list is a value the source may use whole (return or print it, replace a
      // piece); read one element at a time only, the tuple torch gives holds the same
      // pieces, and torch.fx can trace it (no list of a Proxy).
      std::string pieces =
          fmt::format("torch.split({}, {}, dim={})", arg[0], arg[1], has(2) ? arg[2] : "0");
      return onlyElementsRead(m_.result(id)) ? pieces : "list(" + pieces + ")";
    }
    // Of a bool, abs, sign, floor, ceil and round are the identity (torch
    // has no bool kernels for most of them; Python's give ints).
    case BuiltinFn::Abs:
      if (boolArg(0)) return raw[0];
      return scalarArg(0) ? fmt::format("abs({})", arg[0]) : "torch.abs(" + arg[0] + ")";
    case BuiltinFn::Sign:
      if (boolArg(0)) return raw[0];
      if (!scalarArg(0)) return "torch.sign(" + arg[0] + ")";
      // Of a float, a float (and nan stays nan), as torch.sign.
      if (floatScalarArg(0)) {
        return fmt::format("(float(({0} > 0) - ({0} < 0)) if {0} == {0} else {0})", raw[0]);
      }
      return fmt::format("(({0} > 0) - ({0} < 0))", raw[0]);
    case BuiltinFn::Floor:
    case BuiltinFn::Ceil: {
      const char* name = fn == BuiltinFn::Floor ? "floor" : "ceil";
      if (boolArg(0)) return raw[0];
      if (!scalarArg(0)) return fmt::format("torch.{}({})", name, arg[0]);
      if (!floatScalarArg(0)) return math(name);
      // A float stays a float, as torch's (math.floor gives an int and
      // raises on inf and nan).
      usesMath_ = true;
      return fmt::format("(float(math.{0}({1})) if math.isfinite({1}) else {1})", name, arg[0]);
    }
    case BuiltinFn::Round:
      // round(x, 0) of a float is a float (round(x) an int); halves to even, as torch.round.
      if (boolArg(0)) return raw[0];
      if (!scalarArg(0)) return "torch.round(" + arg[0] + ")";
      return floatScalarArg(0) ? "round(" + arg[0] + ", 0)" : "round(" + arg[0] + ")";
    case BuiltinFn::Exp: return scalarArg(0) ? math("exp") : "torch.exp(" + arg[0] + ")";
    case BuiltinFn::Log: return scalarArg(0) ? math("log") : "torch.log(" + arg[0] + ")";
    case BuiltinFn::Sqrt: return scalarArg(0) ? math("sqrt") : "torch.sqrt(" + arg[0] + ")";
    case BuiltinFn::Sin: return scalarArg(0) ? math("sin") : "torch.sin(" + arg[0] + ")";
    case BuiltinFn::Cos: return scalarArg(0) ? math("cos") : "torch.cos(" + arg[0] + ")";
    case BuiltinFn::Tanh: return scalarArg(0) ? math("tanh") : "torch.tanh(" + arg[0] + ")";
    case BuiltinFn::Sigmoid:
      if (scalarArg(0)) {
        usesMath_ = true;
        // exp(min(x, 0)) / (1 + exp(-|x|)): 1 / (1 + e^-x) for x >= 0 and
        // e^x / (1 + e^x) below, so math.exp never overflows (torch.sigmoid
        // of -1000 is 0, and so is this).
        return fmt::format("(math.exp(min({0}, 0.0)) / (1.0 + math.exp(-abs({0}))))", arg[0]);
      }
      return "torch.sigmoid(" + arg[0] + ")";
    case BuiltinFn::Pow:
      if (!scalarArg(0)) return fmt::format("torch.pow({}, {})", arg[0], arg[1]);
      return asResultNumber(
          power(raw[0], raw[1], scalarArg(1) && m_.types.isScalar(resultType) &&
                                    isFloating(m_.types.node(resultType).dtype)),
          {0, 1});
    case BuiltinFn::Clip:
      if (scalarArg(0)) {
        return asResultNumber(fmt::format("min(max({}, {}), {})", arg[0], arg[1], arg[2]),
                              {0, 1, 2});
      }
      // torch.clamp takes two numbers or two tensors as bounds, not one of each.
      if (isScalar(val[1]) != isScalar(val[2])) {
        return fmt::format("torch.clamp(torch.clamp({}, min={}), max={})", arg[0], arg[1],
                           arg[2]);
      }
      return fmt::format("torch.clamp({}, {}, {})", arg[0], arg[1], arg[2]);
    case BuiltinFn::Sum:
    case BuiltinFn::Mean:
    case BuiltinFn::Std:
    case BuiltinFn::Argmax: {
      const char* f = fn == BuiltinFn::Sum ? "sum" : fn == BuiltinFn::Mean ? "mean"
                      : fn == BuiltinFn::Std ? "std" : "argmax";
      // torch has no argmax of bools: as bytes, the first True (else 0).
      if (fn == BuiltinFn::Argmax && boolArg(0)) arg[0] = raw[0] + ".to(torch.uint8)";
      if (!has(1) && has(2) && arg[2] != "False") {
        // `sum(x, keepdim=true)`: every dimension reduced to 1, as the
        // checker types it (torch drops keepdim without a dim); a keepdim
        // known only when it runs is passed on.
        if (fn == BuiltinFn::Argmax) {
          return fmt::format("torch.argmax({}, keepdim={})", arg[0], arg[2]);
        }
        return fmt::format("torch.{}({}, dim={}, keepdim={})", f, arg[0], allDims(0), arg[2]);
      }
      if (!has(1)) return fmt::format("torch.{}({})", f, arg[0]);
      return fmt::format("torch.{}({}, dim={}{})", f, arg[0], arg[1], kw(2, "keepdim"));
    }
    case BuiltinFn::Max:
    case BuiltinFn::Min: {
      bool isMax = fn == BuiltinFn::Max;
      // max(a, b) element-wise when the second argument is not a dimension.
      bool elementwise = has(1) && (!intScalar(val[1]) || scalarArg(0));
      if (elementwise) {
        if (scalarArg(0) && isScalar(val[1])) {
          std::string call = asResultNumber(
              fmt::format("{}({}, {})", isMax ? "max" : "min", arg[0], arg[1]), {0, 1});
          // NaN wins, as in torch.minimum: Python's min(1.0, nan) is 1.0
          // (min(nan, 1.0) is already nan).
          if (!floatScalarArg(1)) return call;
          return fmt::format("({0} if {1} == {1} else {2})", call, raw[1], arg[1]);
        }
        if (scalarArg(0) || isScalar(val[1])) {
          const std::string& t = scalarArg(0) ? arg[1] : arg[0];
          const std::string& s = scalarArg(0) ? arg[0] : arg[1];
          return fmt::format("torch.clamp({}, {}={})", t, isMax ? "min" : "max", s);
        }
        return fmt::format("torch.{}({}, {})", isMax ? "maximum" : "minimum", arg[0], arg[1]);
      }
      if (!has(1) && has(2) && arg[2] != "False") {
        return fmt::format("torch.{}({}, dim={}, keepdim={})", isMax ? "amax" : "amin", arg[0],
                           allDims(0), arg[2]);
      }
      if (!has(1)) return fmt::format("torch.{}({})", isMax ? "max" : "min", arg[0]);
      return fmt::format("torch.{}({}, dim={}{})", isMax ? "amax" : "amin", arg[0], arg[1],
                         kw(2, "keepdim"));
    }
    // With the CUDA target, a ternary weight's product or convolution goes
    // through tritonrt.fused_* (the kernel when packed on a GPU; else these).
    case BuiltinFn::Matmul:
      if (kernelWeight(val[1])) return fmt::format("tritonrt.fused_matmul({}, {})", arg[0], arg[1]);
      if (leftKernelProduct(val[0], val[1])) {
        return fmt::format("tritonrt.left_matmul({}, {})", arg[0], arg[1]);
      }
      if (integerTensor(val[0]) && integerTensor(val[1])) {
        return fmt::format("tritonrt.int_matmul({}, {})", arg[0], arg[1]);
      }
      return fmt::format("torch.matmul({}, {})", arg[0], arg[1]);
    case BuiltinFn::LinearFn:
      if (kernelWeight(val[1])) {
        return fmt::format("tritonrt.fused_matmul({}, {}{}, layout=\"linear\")", arg[0], arg[1],
                           kw(2, "bias"));
      }
      return fmt::format("{}({}, {}{})",
                         integerTensor(val[0]) && integerTensor(val[1]) ? "tritonrt.int_linear"
                                                                        : "F.linear",
                         arg[0], arg[1], has(2) ? ", " + arg[2] : "");
    case BuiltinFn::Conv2dFn:
      return fmt::format("{}({}, {}{}{}{}{}{})",
                         kernelWeight(val[1]) ? "tritonrt.fused_conv2d" : "F.conv2d", arg[0],
                         arg[1], kw(2, "bias"), kw(3, "stride"), kw(4, "padding"),
                         kw(5, "dilation"), kw(6, "groups"));
    case BuiltinFn::DepthwiseConv2d: {
      // groups = the input's channels: the count its type gives when that is known at
      // construction (`groups=self.c`), as hand-written code has it, and an int that
      // torch.fx can trace; else read from the input (a Proxy under torch.fx, which
      // F.conv2d rejects).
      std::string groups = raw[0] + ".shape[-3]";
      TypeId xt = m_.typeOf(val[0]);
      if (m_.types.isTensor(xt) && m_.types.node(xt).rankKnown &&
          m_.types.shape(xt).size() >= 3) {
        std::span<const DimId> xs = m_.types.shape(xt);
        if (auto known = constructionDim(xs[xs.size() - 3])) groups = *known;
      }
      return fmt::format("F.conv2d({0}, {1}{2}{3}, groups={4})", arg[0], arg[1], kw(2, "stride"),
                         kw(3, "padding"), unparenthesized(groups, std::string::npos));
    }
    case BuiltinFn::MaxPool2dFn:
    case BuiltinFn::AvgPool2dFn:
      return fmt::format("F.{}({}, {}{}{})", fn == BuiltinFn::MaxPool2dFn ? "max_pool2d" : "avg_pool2d",
                         arg[0], arg[1], kw(2, "stride"), kw(3, "padding"));
    case BuiltinFn::AdaptiveAvgPool2dFn:
      return fmt::format("F.adaptive_avg_pool2d({}, {})", arg[0], arg[1]);
    case BuiltinFn::GlobalAvgPool: return fmt::format("F.adaptive_avg_pool2d({}, 1)", arg[0]);
    case BuiltinFn::BatchNormFn: {
      // x, weight, bias, running_mean, running_var, training, momentum, eps.
      // Running statistics are updated in place and never differentiated:
      // a layer's weight passed as one is a Parameter, so it is detached
      // (the same storage, so the update still lands in it).
      // Values never change once computed, and the caller's tensors are not
      // written: statistics that are not module state (a local) are updated
      // in a copy. A parameter of a layer or fn is whatever its caller passed:
      // in place when that is a weight (a Parameter), as -O2's inlining makes
      // it, else a copy; the same at every level (audit 45B).
      std::string train = has(5) ? arg[5] : has(3) ? training() : "True";
      auto statistic = [&](size_t i) -> std::string {
        if (!has(i)) return "None";
        OpId def = m_.values[val[i].index].def;
        if (!def.isValid()) {
          return fmt::format("({0}.detach() if isinstance({0}, nn.Parameter) else "
                             "{0}.detach().clone())", raw[i]);
        }
        bool state = m_.op(def).kind == OpKind::Weight ||
                     m_.op(def).kind == OpKind::InstanceMember;
        return raw[i] + (state ? ".detach()" : ".detach().clone()");
      };
      return fmt::format("F.batch_norm({}, {}, {}, {}, {}, training={}{}{})", arg[0],
                         statistic(3), statistic(4), arg[1], arg[2], train, kw(6, "momentum"),
                         kw(7, "eps"));
    }
    case BuiltinFn::LayerNormFn: {
      std::string normalized = scalarArg(1) ? "[" + arg[1] + "]" : arg[1];
      return fmt::format("F.layer_norm({}, {}{}{}{})", arg[0], normalized, kw(2, "weight"),
                         kw(3, "bias"), kw(4, "eps"));
    }
    case BuiltinFn::DropoutFn:
      return fmt::format("F.dropout({}, p={}, training={})", arg[0], has(1) ? arg[1] : "0.5", training());
    case BuiltinFn::EmbeddingFn: return fmt::format("F.embedding({}, {})", arg[0], arg[1]);
    case BuiltinFn::Attention: {
      // Written out (torch 1.13 has no F.scaled_dot_product_attention).
      usesMath_ = true;
      std::string scores = fmt::format("torch.matmul({}, {}.transpose(-2, -1)) / math.sqrt({}.shape[-1])",
                                       arg[0], raw[1], raw[0]);
      if (has(3)) {
        bool boolMask = m_.types.node(m_.typeOf(val[3])).dtype == DType::Bool;
        scores = boolMask ? fmt::format("({}).masked_fill(~{}, float(\"-inf\"))", scores, raw[3])
                          : fmt::format("({} + {})", scores, raw[3]);
      } else if (has(4) && [&] {
                   OpId def = m_.values[val[4].index].def;
                   return def.isValid() && m_.op(def).kind == OpKind::Constant &&
                          m_.op(def).constKind == ConstKind::Bool && m_.op(def).intAttr != 0;
                 }()) {
        // is_causal=true: torch's mask, the lower triangle of [L, S].
        scores = fmt::format("tritonrt.mask_causal({})", scores);
      }
      return fmt::format("torch.matmul(torch.softmax({}, dim=-1), {})", scores, arg[2]);
    }
    // `{inplace}` (the inplace pass): nothing else reads the input.
    case BuiltinFn::Relu: return "F.relu(" + arg[0] + (o.inplace ? ", inplace=True)" : ")");
    case BuiltinFn::Relu6: return "F.relu6(" + arg[0] + (o.inplace ? ", inplace=True)" : ")");
    // tritonrt.gelu: F.gelu itself on torch 2; on torch 1.13 it passes gelu's backward a
    // contiguous gradient, which that version's CPU kernel needs (docs/pytorch.md).
    case BuiltinFn::Gelu: return "tritonrt.gelu(" + arg[0] + ")";
    case BuiltinFn::Silu: return "F.silu(" + arg[0] + (o.inplace ? ", inplace=True)" : ")");
    case BuiltinFn::Hardswish:
      return "F.hardswish(" + arg[0] + (o.inplace ? ", inplace=True)" : ")");
    case BuiltinFn::Softmax:
      return fmt::format("torch.softmax({}, dim={})", arg[0], has(1) ? arg[1] : "-1");
    case BuiltinFn::LogSoftmax:
      return fmt::format("torch.log_softmax({}, dim={})", arg[0], has(1) ? arg[1] : "-1");
    case BuiltinFn::CrossEntropy: return fmt::format("F.cross_entropy({}, {})", arg[0], arg[1]);
    case BuiltinFn::MseLoss: return fmt::format("F.mse_loss({}, {})", arg[0], arg[1]);
    case BuiltinFn::TernaryQuantize:
      // A value that is already ternary is returned unchanged, scale included
      // (docs/language.md); -O2's simplifier removes the op, so every level
      // computes the same value.
      if (m_.types.isTernary(m_.typeOf(val[0]))) return raw[0];
      return fmt::format("tritonrt.ternary_quantize({}{}{}, training={})", arg[0], kw(1, "method"),
                         kw(2, "threshold"), training());
    case BuiltinFn::TernaryDequantize: return "tritonrt.ternary_dequantize(" + arg[0] + ")";
    case BuiltinFn::TernaryWeights:
      return fmt::format("tritonrt.ternary_weights({}{})", shape, kw(1, "sparsity"));
    case BuiltinFn::SteQuantize:
      // ste_quantize(x) is x + stop_gradient(ternary_quantize(x) - x): of a
      // ternary value, which ternary_quantize returns unchanged, that value.
      if (m_.types.isTernary(m_.typeOf(val[0]))) return raw[0];
      return "tritonrt.ste_quantize(" + arg[0] + ")";
    case BuiltinFn::StopGradient: return "tritonrt.stop_gradient(" + arg[0] + ")";
    case BuiltinFn::ActQuantInt8: return "tritonrt.act_quant_int8(" + arg[0] + ")";
    case BuiltinFn::Print: return "print(" + arg[0] + ")";
    case BuiltinFn::Assert:
      // A bool tensor holds when every element does (Python's truth value of
      // a tensor of several elements raises).
      return fmt::format("assert {}{}, {}", arg[0], isTensor(val[0]) ? ".all()" : "",
                         has(1) ? arg[1] : "\"assertion failed\"");
  }
  TRITONC_UNREACHABLE("emit: an unknown builtin");
}

}  // namespace

Expected<PyTorchPieces> emitPyTorchPieces(const ir::Module& module, const EmitOptions& options,
                                          unsigned jobs) {
  PyTorchPieces pieces;
  pieces.globals.resize(module.globals.size());
  pieces.functions.resize(module.functions.size());
  // Threads only pay off for big modules (starting one costs tens of
  // microseconds; the emitter takes about half a microsecond per op).
  constexpr size_t kOpsPerJob = 2000;
  size_t useful = std::max<size_t>(1, module.ops.size() / kOpsPerJob);
  jobs = static_cast<unsigned>(std::min<size_t>({jobs == 0 ? 1 : jobs, useful,
                                                 std::max<size_t>(1, module.functions.size())}));
  std::vector<int> depth(jobs, 0);
  std::vector<uint32_t> tooDeepAt(jobs, UINT32_MAX);
  std::atomic<size_t> next{0};
  const std::vector<bool> usingTraining = fnsUsingTraining(module);
  const std::vector<bool> takingDevice = fnsTakingDevice(module);
  const std::vector<bool> takingDType = fnsTakingDType(module, takingDevice);
  auto work = [&](size_t job) {
    Emitter emitter(module, options, usingTraining, takingDevice, takingDType);
    emitter.run(pieces, job, next);
    depth[job] = emitter.maxDepth();
    tooDeepAt[job] = emitter.tooDeepAt();
  };
  std::vector<std::thread> threads;
  for (size_t job = 1; job < jobs; ++job) {
    try {
      threads.emplace_back(work, job);
    } catch (const std::system_error&) {
      break;  // no more threads to be had: the started ones take the rest
    }
  }
  work(0);
  for (std::thread& thread : threads) thread.join();
  size_t deepestJob = static_cast<size_t>(std::max_element(depth.begin(), depth.end()) -
                                          depth.begin());
  if (depth[deepestJob] > kMaxPythonIndent) {
    // The earliest place in the source, whichever job emitted it.
    uint32_t at = *std::min_element(tooDeepAt.begin(), tooDeepAt.end());
    return Error{std::to_string(depth[deepestJob]), at};
  }
  return pieces;
}

std::string assemblePyTorch(std::span<const PieceRef> globals, std::span<const PieceRef> functions,
                            std::string_view entry, const EmitOptions& options) {
  size_t size = 512;
  uint8_t imports = 0;
  bool hasMain = false;
  for (const PieceRef& p : globals) size += p.code.size(), imports |= p.imports;
  for (const PieceRef& p : functions) {
    size += p.code.size() + 2;
    imports |= p.imports;
    hasMain |= p.isMain;
  }
  if (!options.cudaLibrary.empty()) imports |= PyTorchPieces::kTritonrt;
  std::string out;
  out.reserve(size);
  out += fmt::format("# Generated by tritonc {} from {}{}. Do not edit.\n", kVersion,
                     options.sourceName, options.flags.empty() ? "" : " with " + options.flags);
  // Only the imports the code uses (the contract: no unused imports).
  // Grouped as isort does (standard library, torch, the runtime), one blank
  // line between the groups present.
  std::string groups[3];
  if (imports & PyTorchPieces::kMath) groups[0] += "import math\n";
  if (imports & PyTorchPieces::kTorch) groups[1] += "import torch\n";
  if (imports & PyTorchPieces::kNN) groups[1] += "import torch.nn as nn\n";
  if (imports & PyTorchPieces::kF) groups[1] += "import torch.nn.functional as F\n";
  if (imports & PyTorchPieces::kTritonrt) groups[2] += "import tritonrt\n";
  bool firstGroup = true;
  for (const std::string& group : groups) {
    if (group.empty()) continue;
    if (!firstGroup) out += "\n";
    out += group;
    firstGroup = false;
  }
  if (!options.cudaLibrary.empty()) {
    // The CUDA target's kernels, used for packed weights on CUDA devices.
    out += "\n" + useKernels(options.cudaLibrary) + "\n";
  }
  bool anyEarly = false, anyLate = false;
  for (const PieceRef& p : globals) (p.late ? anyLate : anyEarly) = true;
  if (anyEarly) {
    out += "\n";
    for (const PieceRef& p : globals) {
      if (!p.late) out += p.code;
    }
  }
  for (const PieceRef& p : functions) {
    if (p.isMain && anyLate) continue;
    out += "\n\n";
    out += p.code;
  }
  if (anyLate) {
    // After the defs their initializers call, before main, which reads them.
    out += "\n\n";
    for (const PieceRef& p : globals) {
      if (p.late) out += p.code;
    }
    for (const PieceRef& p : functions) {
      if (!p.isMain) continue;
      out += "\n\n";
      out += p.code;
    }
  }
  if (!entry.empty()) {
    out += fmt::format("\n\nENTRY = {}\n", pyString(entry));
  }
  if (hasMain) {
    out += "\n\nif __name__ == \"__main__\":\n    main()\n";
  }
  return out;
}

Expected<std::string> emitPyTorch(const ir::Module& module, const EmitOptions& options,
                                  unsigned jobs) {
  Expected<PyTorchPieces> pieces = emitPyTorchPieces(module, options, jobs);
  if (!pieces) {
    return pieces.error();
  }
  std::vector<PieceRef> globals, functions;
  for (const auto& p : pieces->globals) globals.push_back({p.code, p.imports, p.isMain, p.late});
  for (const auto& p : pieces->functions) functions.push_back({p.code, p.imports, p.isMain});
  return assemblePyTorch(globals, functions, pieces->entry, options);
}

namespace {

// A file name in a one-line comment: control characters (a newline would end
// the comment and start code) and bytes that are not UTF-8 (Python reads the
// file as UTF-8) become '?'.
std::string commentSafe(std::string_view name) {
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    auto byte = static_cast<unsigned char>(name[i]);
    if (byte < 0x20 || byte == 0x7f) {
      out += '?';
    } else if (byte < 0x80) {
      out += name[i];
    } else if (size_t escaped = appendInvisibleEscape(out, name, i); escaped > 0) {
      // A bidi control, zero-width character, C1 control or line separator prints as
      // nothing or reorders the line (Trojan Source): its escape, as in the code's
      // strings.
      i += escaped - 1;
    } else if (size_t n = appendUtf8Char(out, name, i); n > 0) {
      i += n - 1;
    } else {
      out += '?';
    }
  }
  return out;
}

void replaceFirst(std::string& code, std::string_view placeholder, std::string_view value) {
  size_t at = code.find(placeholder);
  if (at != std::string::npos) code.replace(at, placeholder.size(), value);
}

// The header comment (the first line of `code`) reflowed within kMaxColumns
// at the spaces between its words, as a comment is by hand. The input's name
// (`name`, as it appears in the line) is one word however it is spelled: its
// spaces are kept, and a name longer than a line stays whole.
void wrapHeader(std::string& code, std::string_view name) {
  size_t end = code.find('\n');
  if (end == std::string::npos || end <= kMaxColumns || !code.starts_with("# ")) return;
  std::string_view line = std::string_view(code).substr(2, end - 2);
  size_t at = name.empty() ? std::string_view::npos : line.find(name);
  std::vector<std::string_view> words;
  auto split = [&](std::string_view text) {
    while (!text.empty()) {
      size_t space = text.find(' ');
      if (space != 0) words.push_back(text.substr(0, space));
      text = space == std::string_view::npos ? std::string_view() : text.substr(space + 1);
    }
  };
  if (at == std::string_view::npos) {
    split(line);
  } else {
    split(line.substr(0, at));
    // The name with what follows it up to the next space (`m.tri.`).
    size_t after = line.find(' ', at + name.size());
    words.push_back(line.substr(at, after == std::string_view::npos ? std::string_view::npos
                                                                      : after - at));
    if (after != std::string_view::npos) split(line.substr(after + 1));
  }
  std::string out, current = "#";
  for (std::string_view word : words) {
    if (current.size() > 1 && current.size() + 1 + word.size() > kMaxColumns) {
      out += current + "\n";
      current = "#";
    }
    current += ' ';
    current += word;
  }
  out += current;
  code.replace(0, end, out);
}

}  // namespace

std::string stampPyTorch(std::string code, std::string_view sourceName,
                         std::string_view cudaLibrary) {
  std::string name = commentSafe(sourceName);
  replaceFirst(code, kSourceNamePlaceholder, name);
  wrapHeader(code, name);
  if (!cudaLibrary.empty()) {
    // The statement registering the library, wrapped as any other once the
    // name is known: `tritonrt.use_kernels(\n    __file__, "..."\n)`.
    std::string placeholder = useKernels(kCudaLibraryPlaceholder) + "\n";
    size_t at = code.find(placeholder);
    if (at != std::string::npos) {
      std::string wrapped;
      writeWrapped(wrapped, 0, useKernels(cudaLibrary));
      code.replace(at, placeholder.size(), wrapped);
    }
  }
  return code;
}

std::string stampCuda(std::string code, std::string_view sourceName, std::string_view stem) {
  replaceFirst(code, kSourceNamePlaceholder, commentSafe(sourceName));
  // The stem in the build command (the header's, before anything from the
  // source): quoted for a POSIX shell unless it is plain.
  std::string text = commentSafe(stem);
  bool plain = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ||
           c == '/' || c == '+' || c == ',';
  });
  if (!plain) {
    std::string quoted = "'";
    for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    text = quoted + "'";
  }
  // ('my model'_kernels.cu: the shell joins the quoted stem and the suffix.)
  replaceFirst(code, kCudaStemPlaceholder, text);
  replaceFirst(code, kCudaStemPlaceholder, text);
  return code;
}

}  // namespace tritonc

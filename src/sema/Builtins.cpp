//===- Builtins.cpp - typing rules of the builtin functions and layers ----===//
//
// One rule per family of builtins (Builtins.def): it checks the kinds of the
// bound arguments and computes the result type and shape with PyTorch's
// semantics (conv/pool output sizes by the formulas of torch.nn.Conv2d and
// MaxPool2d, broadcasting, reductions).
//
//===----------------------------------------------------------------------===//
#include <array>
#include <algorithm>
#include <numeric>
#include <mutex>

#include "Habits.h"
#include "SemaImpl.h"
#include "tritonc/base/PythonMath.h"
#include "tritonc/base/Text.h"

namespace tritonc {

namespace {
// The typing rules; several builtins share one.
enum class R : uint8_t {
  Creation, TernaryWeights, Full, Arange, Range, Eye, TensorLiteral, Reshape, Flatten, Transpose,
  Permute, Squeeze, Unsqueeze, Concat, Stack, Split, SameType, FloatMath, Pow, Clip, Reduce,
  MinMax, ArgReduce, Matmul, Linear, Conv2d, DepthwiseConv2d, Pool2d, AdaptivePool2d, GlobalPool,
  SameShapeFloat, SameShapeFloatDim, Embedding, Attention, Loss, TernaryQuantize,
  TernaryDequantize, Print, Assert, SameShape,
};
constexpr R kFnRules[] = {
#define BUILTIN_FN(Id, Name, Rule, Params) R::Rule,
#include "tritonc/sema/Builtins.def"
};
constexpr R kLayerRules[] = {
#define BUILTIN_LAYER(Id, Name, Rule, Params) R::Rule,
#include "tritonc/sema/Builtins.def"
};
constexpr std::string_view kFnNames[] = {
#define BUILTIN_FN(Id, Name, R, Params) Name,
#include "tritonc/sema/Builtins.def"
};
constexpr std::string_view kLayerNames[] = {
#define BUILTIN_LAYER(Id, Name, R, Params) Name,
#include "tritonc/sema/Builtins.def"
};
constexpr std::string_view kFnParams[] = {
#define BUILTIN_FN(Id, Name, R, Params) Params,
#include "tritonc/sema/Builtins.def"
};
constexpr std::string_view kLayerParams[] = {
#define BUILTIN_LAYER(Id, Name, R, Params) Params,
#include "tritonc/sema/Builtins.def"
};

std::vector<sema::BuiltinParam> parseParams(std::string_view text) {
  std::vector<sema::BuiltinParam> out;
  size_t pos = 0;
  while (pos < text.size()) {
    // Split at commas outside string literals.
    size_t end = pos;
    bool inString = false;
    while (end < text.size() && (inString || text[end] != ',')) {
      if (text[end] == '"') {
        inString = !inString;
      }
      ++end;
    }
    std::string_view part = text.substr(pos, end - pos);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
    sema::BuiltinParam p;
    size_t eq = part.find('=');
    std::string_view name = part.substr(0, eq);
    if (eq != std::string_view::npos) {
      p.optional = true;
      p.defaultText = part.substr(eq + 1);
    }
    size_t bar = name.find('|');
    p.name = name.substr(0, bar);
    if (bar != std::string_view::npos) {
      p.alias = name.substr(bar + 1);
    }
    if (!p.name.empty()) {
      out.push_back(p);
    }
    pos = end + 1;
  }
  return out;
}
}  // namespace

std::string_view builtinFnName(BuiltinFn fn) { return kFnNames[static_cast<size_t>(fn)]; }
std::string_view builtinLayerName(BuiltinLayer layer) {
  return kLayerNames[static_cast<size_t>(layer)];
}

std::vector<std::string_view> builtinFnParamNames(BuiltinFn fn) {
  std::vector<std::string_view> out;
  for (const sema::BuiltinParam& p : sema::builtinFnParams(fn)) {
    out.push_back(p.name);
  }
  return out;
}

bool createsValues(BuiltinFn fn) {
  switch (fn) {
    case BuiltinFn::Zeros:
    case BuiltinFn::Ones:
    case BuiltinFn::Randn:
    case BuiltinFn::Rand:
    case BuiltinFn::KaimingUniform:
    case BuiltinFn::Full:
    case BuiltinFn::Eye: return true;
    default: return false;
  }
}

std::vector<std::string_view> builtinLayerParamNames(BuiltinLayer layer) {
  std::vector<std::string_view> out;
  for (const sema::BuiltinParam& p : sema::builtinLayerParams(layer)) {
    out.push_back(p.name);
  }
  return out;
}

namespace sema {

const std::vector<BuiltinParam>& builtinFnParams(BuiltinFn fn) {
  static const std::vector<std::vector<BuiltinParam>> table = [] {
    std::vector<std::vector<BuiltinParam>> out;
    for (std::string_view params : kFnParams) {
      out.push_back(parseParams(params));
    }
    return out;
  }();
  return table[static_cast<size_t>(fn)];
}

const std::vector<BuiltinParam>& builtinLayerParams(BuiltinLayer layer) {
  static const std::vector<std::vector<BuiltinParam>> table = [] {
    std::vector<std::vector<BuiltinParam>> out;
    for (std::string_view params : kLayerParams) {
      out.push_back(parseParams(params));
    }
    return out;
  }();
  return table[static_cast<size_t>(layer)];
}

std::optional<BuiltinFn> findBuiltinFn(std::string_view name) {
  for (size_t i = 0; i < std::size(kFnNames); ++i) {
    if (kFnNames[i] == name) {
      return static_cast<BuiltinFn>(i);
    }
  }
  return std::nullopt;
}

std::optional<BuiltinLayer> findBuiltinLayer(std::string_view name) {
  for (size_t i = 0; i < std::size(kLayerNames); ++i) {
    if (kLayerNames[i] == name) {
      return static_cast<BuiltinLayer>(i);
    }
  }
  return std::nullopt;
}

namespace {

// Helpers over one call's bound arguments.
class Call {
 public:
  Call(Checker& c, std::string_view name, NodeId call, std::vector<BoundArg>& args,
       const std::vector<BuiltinParam>& params)
      : c_(c), name_(name), call_(call), args_(args), params_(params) {}

  TypeStore& ts() { return c_.types(); }
  DimStore& ds() { return c_.dims(); }
  bool has(size_t i) const { return i < args_.size() && args_[i].present; }
  const ExprInfo& arg(size_t i) const { return args_[i].info; }
  ExprInfo result(TypeId type) { return c_.make(type, call_); }
  ExprInfo error() { return result(ts().error()); }
  ExprInfo unknown() { return result(ts().unknown()); }
  bool lenient(size_t i) { return has(i) && ts().isLenient(arg(i).type); }

  // Parameter i as the call spells it: the alias when it was given by its
  // alias (`max(a=x, b=1)`'s `b`, not `dim`), else the parameter's name.
  std::string_view spelledName(size_t i) const {
    const Tree& tree = c_.tree();
    if (!params_[i].alias.empty() && tree.kind(call_) == NodeKind::Call) {
      for (NodeId a : tree.list(tree.listB(call_))) {
        if (tree.kind(a) == NodeKind::NamedArg && tree.childA(a) == arg(i).node) {
          return tree.tokens().spelling(tree.token(a));
        }
      }
    }
    return params_[i].name;
  }
  // Reports that argument i must be `what`.
  ExprInfo wrong(size_t i, std::string_view what) {
    if (what == "an integer") {  // a float hyperparameter's uses: reported once
      c_.reportIntegerNeeded(Diag::ArgumentType, arg(i).node, spelledName(i), name_, what,
                             c_.fmt(arg(i).type));
    } else {
      c_.report(Diag::ArgumentType, arg(i).node, spelledName(i), name_, what,
                c_.fmt(arg(i).type));
    }
    return error();
  }
  // Reports that argument i's value, shown as `value`, must be `what`.
  void wrongValue(size_t i, std::string_view what, std::string_view value) {
    auto builder = c_.diags().report(Diag::InvalidArgumentValue, c_.source(),
                                     c_.rangeOf(arg(i).node), spelledName(i), name_, what, value);
    // `padding="SAME"`, `method='AbsMean'`: the options are lower-case.
    if (std::optional<std::string> option = optionInOtherCase(value, what)) {
      builder.note(Note::OptionCase, *option);
    } else if (std::optional<std::string> near = misspelledOption(value, what)) {
      builder.note(Note::DidYouMean, *near);
    }
    failed_ = true;
  }
  /// Argument i as a tensor (nullptr after a diagnostic or when lenient).
  const TypeStore::Node* tensor(size_t i) {
    if (!has(i) || lenient(i)) {
      return nullptr;
    }
    const TypeStore::Node& t = ts().node(arg(i).type);
    if (t.kind != TypeKind::Tensor) {
      wrong(i, "a tensor");
      failed_ = true;
      return nullptr;
    }
    return &t;
  }
  std::vector<DimId> shape(size_t i) {
    std::span<const DimId> s = ts().shape(arg(i).type);
    return {s.begin(), s.end()};
  }
  /// A constant integer argument (or its default when absent).
  std::optional<int64_t> intArg(size_t i, std::optional<int64_t> fallback = std::nullopt) {
    if (!has(i)) {
      return fallback;
    }
    if (lenient(i)) {
      return std::nullopt;
    }
    const TypeStore::Node& t = ts().node(arg(i).type);
    if (t.kind != TypeKind::Scalar || !isIntegral(t.dtype)) {
      wrong(i, "an integer");
      failed_ = true;
      return std::nullopt;
    }
    c_.convertBoolToInt(arg(i));
    return arg(i).intValue;
  }
  /// A size per spatial dimension (kernel_size, stride, padding, dilation of
  /// the functional convolutions and pools): one integer for both, or a list
  /// of one or two integers [h, w], as torch's tuples (nullopt after a report).
  std::optional<std::array<DimId, 2>> pairArg(size_t i, int64_t fallback) {
    if (!has(i)) return std::array<DimId, 2>{ds().constant(fallback), ds().constant(fallback)};
    if (lenient(i)) return std::array<DimId, 2>{ds().unknown(), ds().unknown()};
    const TypeStore::Node& t = ts().node(arg(i).type);
    const char* wanted = "an integer, or a list of two integers [h, w]";
    if (t.kind == TypeKind::List) {
      TypeId element{t.ref};
      bool integers = ts().isScalar(element) && isIntegral(ts().node(element).dtype) &&
                      ts().node(element).dtype != DType::Bool;
      if (!integers || (t.count != 1 && t.count != 2 && t.count != UINT32_MAX)) {
        wrong(i, wanted);
        failed_ = true;
        return std::nullopt;
      }
      // A list whose length is known when it runs (`x.shape[2:]`): torch checks it.
      if (t.count == UINT32_MAX) return std::array<DimId, 2>{ds().unknown(), ds().unknown()};
      const std::vector<DimId>& sizes = arg(i).listDims;
      if (sizes.size() != t.count) return std::array<DimId, 2>{ds().unknown(), ds().unknown()};
      return std::array<DimId, 2>{sizes.front(), sizes.back()};
    }
    if (t.kind != TypeKind::Scalar || !isIntegral(t.dtype)) {
      wrong(i, wanted);
      failed_ = true;
      return std::nullopt;
    }
    c_.convertBoolToInt(arg(i));
    DimId d = arg(i).dim.isValid() ? arg(i).dim : ds().unknown();
    return std::array<DimId, 2>{d, d};
  }
  /// A dtype argument (`dtype=int64`): the type named, nullopt when absent,
  /// lenient or reported (then failed()).
  std::optional<DType> dtypeArg(size_t i, std::string_view example) {
    if (!has(i) || lenient(i)) return std::nullopt;
    const TypeStore::Node& d = ts().node(arg(i).type);
    if (d.kind != TypeKind::DTypeValue) {
      wrong(i, fmt::format("a type name such as {}", example));
      failed_ = true;
      return std::nullopt;
    }
    return static_cast<DType>(d.ref);
  }
  /// An integer argument as a dimension (constant, size variable or unknown).
  DimId dimArg(size_t i, int64_t fallback) {
    if (!has(i)) {
      return ds().constant(fallback);
    }
    if (lenient(i)) {
      return ds().unknown();
    }
    const TypeStore::Node& t = ts().node(arg(i).type);
    if (t.kind != TypeKind::Scalar || !isIntegral(t.dtype)) {
      wrong(i, "an integer");
      failed_ = true;
      return ds().unknown();
    }
    c_.convertBoolToInt(arg(i));
    return arg(i).dim.isValid() ? arg(i).dim : ds().unknown();
  }
  /// A shape argument: a list of integers or `x.shape`.
  std::optional<std::vector<DimId>> shapeArg(size_t i) {
    if (!has(i) || lenient(i)) {
      return std::nullopt;
    }
    const TypeStore::Node& t = ts().node(arg(i).type);
    if (t.kind == TypeKind::Scalar && isIntegral(t.dtype)) {
      c_.convertBoolToInt(arg(i));
      return std::vector<DimId>{arg(i).dim.isValid() ? arg(i).dim : ds().unknown()};
    }
    if (t.kind != TypeKind::List || (t.count != UINT32_MAX && arg(i).listDims.size() != t.count)) {
      wrong(i, "a shape (a list of integers)");
      failed_ = true;
      return std::nullopt;
    }
    if (t.count == UINT32_MAX) {
      return std::nullopt;
    }
    return arg(i).listDims;
  }
  std::optional<size_t> dimIndex(size_t i, size_t rank, int64_t fallback) {
    std::optional<int64_t> d = intArg(i, fallback);
    if (!d) {
      return std::nullopt;
    }
    std::optional<size_t> index = c_.normalizeDim(*d, rank, has(i) ? arg(i).node : call_);
    if (!index) {
      failed_ = true;
    }
    return index;
  }
  DType floatOf(const TypeStore::Node& t) const {
    return isFloating(t.dtype) ? t.dtype : DType::Float32;
  }
  /// Argument i, when an integer tensor, is converted to `dtype` (a float).
  void toFloat(size_t i, DType dtype) {
    if (has(i) && !lenient(i)) c_.convertToFloat(arg(i), dtype);
  }
  /// Argument i of a product (`linear`), converted to the result's `dtype`.
  void toProductDType(size_t i, DType dtype) {
    if (has(i) && !lenient(i)) c_.convertToProduct(arg(i), dtype);
  }
  bool failed() const { return failed_; }
  Checker& checker() { return c_; }
  NodeId node() const { return call_; }
  std::string_view name() const { return name_; }
  std::string_view paramName(size_t i) const { return params_[i].name; }

 private:
  Checker& c_;
  std::string_view name_;
  NodeId call_;
  std::vector<BoundArg>& args_;
  const std::vector<BuiltinParam>& params_;
  bool failed_ = false;
};

// Whether the known constant elements of argument i (a tensor literal's
// smallest and largest) lie in [0, n) (or equal `allowed`); reports the one
// that does not with `what` (formatted with n twice) otherwise.
bool idsInRange(Call& c, size_t i, std::optional<int64_t> n, const char* what,
                std::optional<int64_t> allowed = std::nullopt) {
  if (!n) return true;
  for (const auto& element : {c.arg(i).lowest, c.arg(i).highest}) {
    if (!element || !element->integer) continue;
    int64_t v = *element->integer;
    if ((v < 0 || v >= *n) && v != allowed) {
      // At the element when it is written in the call, else at the argument.
      SourceRange call = c.checker().rangeOf(c.node());
      SourceRange at = c.checker().rangeOf(element->node);
      bool inside = at.begin >= call.begin && at.end <= call.end;
      c.checker().report(Diag::InvalidArgumentValue, inside ? element->node : c.arg(i).node,
                         c.paramName(i), c.name(), fmt::format(fmt::runtime(what), *n, *n),
                         std::to_string(v));
      return false;
    }
  }
  return true;
}

// Output size of a convolution or pooling window (torch.nn.Conv2d docs).
DimId windowOutput(DimStore& ds, DimId in, DimId kernel, DimId stride, DimId padding,
                   DimId dilation) {
  DimId one = ds.constant(1);
  DimId two = ds.constant(2);
  DimId span = ds.binary(DimKind::Mul, dilation, ds.binary(DimKind::Sub, kernel, one));
  DimId padded = ds.binary(DimKind::Add, in, ds.binary(DimKind::Mul, two, padding));
  DimId numerator = ds.binary(DimKind::Sub, ds.binary(DimKind::Sub, padded, span), one);
  return ds.binary(DimKind::Add, ds.binary(DimKind::Div, numerator, stride), one);
}

// The output size of a pooling window with ceil_mode=True, as torch computes
// it: rounded up, less one when the last window would start in the right
// padding. Unknown unless every input is a constant (and unknown ceil_mode).
DimId ceilWindowOutput(DimStore& ds, DimId in, DimId kernel, DimId stride, DimId padding,
                       DimId dilation) {
  std::optional<int64_t> n = ds.constValue(in), k = ds.constValue(kernel),
                         s = ds.constValue(stride), p = ds.constValue(padding),
                         d = ds.constValue(dilation);
  if (!n || !k || !s || !p || !d || *s <= 0) {
    return ds.unknown();
  }
  int64_t span = *n + 2 * *p - *d * (*k - 1) - 1;
  if (span < 0) {
    return ds.constant(span / *s + 1);  // empty: reported as floor mode would
  }
  int64_t out = (span + *s - 1) / *s + 1;
  if ((out - 1) * *s >= *n + *p) {
    --out;
  }
  return ds.constant(out);
}

// Sizes in a created tensor's shape must not be negative.
// Whether argument i, when given as a tensor of known rank, can have the
// shape `want`; a provable mismatch (another rank, or a dimension that
// differs) is reported at the argument as §3 asks ("an error naming both
// shapes") and gives false.
// Whether argument i, given, is a tensor (a bias, a norm's weight): torch
// takes no number there (`conv2d(x, w, 2)` meant stride 2, and bound bias).
// Reported at the argument otherwise.
bool tensorOrAbsent(Call& c, size_t i, std::string_view what) {
  if (!c.has(i) || c.lenient(i) || c.ts().isTensor(c.arg(i).type)) return true;
  c.wrong(i, what);
  return false;
}

// Argument i has the shape `want`; sizes not decided here are compared at
// -O0: against a known size, or (`?` against a `?` of `want`) against
// dimension wantDims[k] of argument `from`, when given.
bool fitsShape(Call& c, size_t i, std::span<const DimId> want,
               std::optional<size_t> from = std::nullopt,
               std::span<const size_t> wantDims = {}) {
  if (!c.has(i) || c.lenient(i) || !c.ts().isTensor(c.arg(i).type) ||
      !c.ts().node(c.arg(i).type).rankKnown) {
    return true;
  }
  std::span<const DimId> got = c.ts().shape(c.arg(i).type);
  bool mismatch = got.size() != want.size();
  for (size_t k = 0; k < got.size() && !mismatch; ++k) {
    mismatch = c.ds().equal(got[k], want[k]) == Decision::No;
  }
  if (mismatch) {
    c.checker().report(Diag::ShapeMismatch, c.arg(i).node, c.name(), c.checker().fmtShape(got),
                       c.checker().fmtShape(want));
    return false;
  }
  for (size_t k = 0; k < got.size(); ++k) {
    if (c.ds().equal(got[k], want[k]) != Decision::Unknown) continue;
    bool source = from && k < wantDims.size() && c.has(*from) && !c.lenient(*from);
    if (!c.ds().isUnknown(want[k])) {
      c.checker().recordRuntimeCheck(c.node(), c.arg(i).node, k, want[k], got[k]);
    } else if (source && c.ds().isUnknown(got[k])) {
      c.checker().recordRuntimeCheck(c.node(), c.arg(i).node, k, want[k], got[k],
                                     c.arg(*from).node, wantDims[k]);
    } else if (source) {
      c.checker().recordRuntimeCheck(c.node(), c.arg(*from).node, wantDims[k], got[k], want[k]);
    }
  }
  return true;
}

bool nonNegative(Call& c, const std::optional<std::vector<DimId>>& shape, size_t argIndex) {
  if (!shape) {
    return true;
  }
  for (DimId d : *shape) {
    std::optional<int64_t> v = c.ds().constValue(d);
    if (v && *v < 0) {
      c.wrongValue(argIndex, "a shape of non-negative sizes", c.checker().fmtShape(*shape));
      return false;
    }
  }
  return true;
}

// A stride (or kernel size) must be a positive integer.
bool positive(Call& c, size_t i, DimId d) {
  std::optional<int64_t> v = c.ds().constValue(d);
  if (c.has(i) && v && *v <= 0) {
    c.wrongValue(i, "a positive integer", std::to_string(*v));
    return false;
  }
  return true;
}

// A dropout probability must be in [0, 1], as torch's Dropout checks.
bool probability(Call& c, size_t i) {
  if (!c.has(i) || c.lenient(i)) return true;
  std::optional<double> p = c.arg(i).floatValue;
  if (!p && c.arg(i).intValue) p = static_cast<double>(*c.arg(i).intValue);
  if (p && !(*p >= 0.0 && *p <= 1.0)) {
    c.wrongValue(i, "a probability between 0 and 1", formatFloat(*p));
    return false;
  }
  return true;
}

// `conv2d(w, x)`, `linear(w, x)`: a weight (ternary, or every size known)
// given as the input and an input (a `?` size, not ternary) as the weight,
// in a call that fails as written and fits swapped. Reported as ArgumentOrder with the call
// written out, before the shapes make no sense ("an empty output: [32, ?,
// -26, -26]").
bool inputAndWeightSwapped(Call& c, NodeId call, bool fails, bool fitsSwapped) {
  if (!fails || !fitsSwapped) return false;
  const TypeStore& ts = c.ts();
  const DimStore& ds = c.ds();
  auto known = [&](size_t i) {
    return c.has(i) && !c.lenient(i) && ts.isTensor(c.arg(i).type) &&
           ts.node(c.arg(i).type).rankKnown;
  };
  if (!known(0) || !known(1)) return false;
  auto anyUnknown = [&](size_t i) {
    std::span<const DimId> shape = ts.shape(c.arg(i).type);
    return std::any_of(shape.begin(), shape.end(), [&](DimId d) { return ds.isUnknown(d); });
  };
  bool weightFirst = ts.node(c.arg(0).type).ternary || !anyUnknown(0);
  bool inputSecond = !ts.node(c.arg(1).type).ternary && anyUnknown(1);
  if (!weightFirst || !inputSecond) return false;
  Checker& checker = c.checker();
  auto builder = checker.diags().report(Diag::ArgumentOrder, checker.source(),
                                        checker.rangeOf(c.arg(0).node), c.name(),
                                        checker.textOf(c.arg(0).node), c.paramName(1),
                                        c.paramName(0));
  if (std::optional<std::string> fixed = checker.swappedCall(call, c.arg(0).node, c.arg(1).node)) {
    builder.note(Note::WriteInstead, *fixed);
  }
  return true;
}

// Reports an output window size that is provably empty.
bool nonEmpty(Checker& checker, std::string_view name, NodeId call, std::span<const DimId> input,
              std::span<const DimId> output) {
  for (DimId d : output) {
    std::optional<int64_t> v = checker.dims().constValue(d);
    if (v && *v <= 0) {
      checker.report(Diag::EmptyOutput, call, name, checker.fmtShape(input),
                     checker.fmtShape(output));
      return false;
    }
  }
  return true;
}

ExprInfo elementwise(Call& c, bool toFloat, bool keepTernary) {
  if (c.lenient(0)) {
    return c.result(c.arg(0).type);
  }
  const TypeStore::Node& t = c.ts().node(c.arg(0).type);
  if (t.kind == TypeKind::Scalar && isNumeric(t.dtype)) {
    return c.result(toFloat ? c.ts().scalar(c.floatOf(t)) : c.arg(0).type);
  }
  if (t.kind != TypeKind::Tensor) {
    return c.wrong(0, "a tensor or a number");
  }
  if (keepTernary && !toFloat) {
    return c.result(c.arg(0).type);
  }
  DType dtype = toFloat || t.ternary ? c.floatOf(t) : t.dtype;
  return c.result(c.ts().withDType(c.arg(0).type, dtype));
}

ExprInfo reduce(Call& c, R rule, BuiltinFn fn) {
  const TypeStore::Node* t = c.tensor(0);
  if (t == nullptr) {
    return c.failed() ? c.error() : c.unknown();
  }
  DType dtype = t->dtype;
  if (rule == R::ArgReduce) {
    dtype = DType::Int64;
  } else if (fn == BuiltinFn::Sum) {
    dtype = t->ternary ? DType::Float32 : isIntegral(dtype) ? DType::Int64 : dtype;
    // A plain trit tensor is held as float32: summed as the int64 it is typed.
    if (!t->ternary && t->dtype == DType::Trit) c.checker().convertTo(c.arg(0), DType::Int64);
  } else if (fn == BuiltinFn::Mean || fn == BuiltinFn::Std) {
    dtype = c.floatOf(*t);
    c.toFloat(0, dtype);
  } else if (t->ternary) {
    dtype = DType::Float32;
  }
  bool keepdim = c.has(2) && c.arg(2).intValue && *c.arg(2).intValue != 0;
  // A keepdim known only when it runs (a bool input or hyperparameter)
  // decides the rank: unknown here, so that a declared type is checked at
  // run time rather than taken as proven.
  bool keepdimUnknown = c.has(2) && !c.lenient(2) && !c.arg(2).intValue;
  if (!t->rankKnown || keepdimUnknown) {
    return c.result(c.ts().tensorAnyRank(dtype));
  }
  std::vector<DimId> shape = c.shape(0);
  // max, min, argmax and argmin of no elements raise in torch (sum and mean
  // give 0 and nan): a reduced dimension known to be empty is an error.
  bool needsElements = rule == R::MinMax || rule == R::ArgReduce;
  auto empty = [&](DimId d) { return c.ds().constValue(d) == std::optional<int64_t>(0); };
  if (needsElements && !c.has(1) && std::any_of(shape.begin(), shape.end(), empty)) {
    c.wrongValue(0, "a tensor with elements", c.checker().fmtShape(shape));
    return c.error();
  }
  if (!c.has(1)) {
    std::vector<DimId> out;
    if (keepdim) {
      out.assign(shape.size(), c.ds().constant(1));
    }
    return c.result(c.ts().tensor(dtype, out));
  }
  // sum, mean and std over several dimensions at once (`dim=[2, 3]`), as torch.
  if ((fn == BuiltinFn::Sum || fn == BuiltinFn::Mean || fn == BuiltinFn::Std) && !c.lenient(1) &&
      c.ts().kind(c.arg(1).type) == TypeKind::List) {
    std::vector<bool> reduced(shape.size(), false);
    const std::vector<DimId>& dims = c.arg(1).listDims;
    bool valid = !dims.empty();
    for (size_t i = 0; i < dims.size() && valid; ++i) {
      std::optional<int64_t> v = c.ds().constValue(dims[i]);
      auto rank = static_cast<int64_t>(shape.size());
      valid = v && *v >= -rank && *v < rank && !reduced[static_cast<size_t>((*v + rank) % rank)];
      if (valid) reduced[static_cast<size_t>((*v + rank) % rank)] = true;
    }
    if (!valid) {
      c.wrongValue(1, fmt::format("a non-empty list of distinct constant dimensions of a {}-D "
                                  "tensor", shape.size()),
                   c.checker().fmtShape(dims));
      return c.error();
    }
    std::vector<DimId> out;
    for (size_t i = 0; i < shape.size(); ++i) {
      if (!reduced[i]) out.push_back(shape[i]);
      else if (keepdim) out.push_back(c.ds().constant(1));
    }
    return c.result(c.ts().tensor(dtype, out));
  }
  std::optional<size_t> d = c.dimIndex(1, shape.size(), 0);
  if (!d) {
    return c.failed() ? c.error() : c.result(c.ts().tensorAnyRank(dtype));
  }
  if (needsElements && empty(shape[*d])) {
    c.wrongValue(0, fmt::format("a tensor whose dimension {} is not empty", *d),
                 c.checker().fmtShape(shape));
    return c.error();
  }
  if (keepdim) {
    shape[*d] = c.ds().constant(1);
  } else {
    shape.erase(shape.begin() + static_cast<long>(*d));
  }
  return c.result(c.ts().tensor(dtype, shape));
}

ExprInfo conv(Call& c, const TypeStore::Node* x, size_t xi, DimId outChannels, DimId inPerGroup,
              DimId kh, DimId kw, std::array<DimId, 2> stride, std::optional<std::array<DimId, 2>> padding,
              std::array<DimId, 2> dilation, DimId groups) {
  std::vector<DimId> shape = c.shape(xi);
  if (shape.size() != 4 && shape.size() != 3) {
    return c.wrong(xi, "a 4-D tensor [N, C, H, W]");
  }
  size_t base = shape.size() - 3;  // unbatched [C, H, W] is accepted too
  DimId channels = shape[base];
  DimId expected = c.ds().binary(DimKind::Mul, inPerGroup, groups);
  switch (c.ds().equal(channels, expected)) {
    case Decision::No: {
      // Both shapes, as every shape mismatch, and which sizes disagree.
      Checker& k = c.checker();
      std::optional<int64_t> g = c.ds().constValue(groups);
      std::string perGroup =
          g && *g == 1 ? std::string(" (its dimension 1)")
                       : fmt::format(" ({} per group, its dimension 1, times {} groups)",
                                     k.fmtDim(inPerGroup), k.fmtDim(groups));
      auto diag = k.diags().report(Diag::ShapeMismatch, k.source(), k.rangeOf(c.node()), c.name(),
                                   k.fmtShape(shape), k.fmtShape(c.shape(xi + 1)));
      diag.note(Note::ConvChannels, k.fmtDim(channels), base, k.fmtDim(expected), perGroup);
      k.channelsLastHint(diag, c.arg(xi), expected);
      return c.error();
    }
    case Decision::Unknown:
      // `x: [?, ?, H, W]` against a weight of 3 input channels: -O0 says so
      // with the location, not torch's message from inside conv2d.
      c.checker().recordRuntimeCheck(c.node(), c.arg(xi).node, base, expected, channels);
      break;
    case Decision::Yes: break;
  }
  std::vector<DimId> out;
  if (base == 1) {
    out.push_back(shape[0]);
  }
  out.push_back(outChannels);
  // padding="same" (nullopt): the output has the input's size (stride 1).
  out.push_back(padding ? windowOutput(c.ds(), shape[base + 1], kh, stride[0], (*padding)[0], dilation[0])
                        : shape[base + 1]);
  out.push_back(padding ? windowOutput(c.ds(), shape[base + 2], kw, stride[1], (*padding)[1], dilation[1])
                        : shape[base + 2]);
  if (!nonEmpty(c.checker(), c.name(), c.node(), shape, out)) {
    return c.error();
  }
  DType dtype = x->ternary ? DType::Float32 : x->dtype;
  return c.result(c.ts().tensor(dtype, out));
}

// What an operand of `fn` must be when torch has no kernel for bools and
// every operand is one.
std::string boolsNeedConverting(std::string_view fn) {
  return fmt::format("a tensor of numbers (torch has no {} of bools: convert with int32(...) or "
                     "float32(...))",
                     fn);
}

// concat or stack of a list literal [a, b, ...]: every element is checked
// against the first, as torch.cat and torch.stack do (same rank; sizes equal
// except, for concat, along `dim`, where they add up).
ExprInfo joinTensors(Call& c, bool stack) {
  TypeStore& ts = c.ts();
  DimStore& ds = c.ds();
  const std::vector<TypeId>& elements = c.arg(0).elementTypes;
  // Ternary values joined are not one TernaryTensor (LANGUAGE.md §3 does not
  // list concat among its sources): each has its own scale, so the result
  // holds s1 * q1 and s2 * q2, a float tensor (ternary_quantize of it
  // quantizes again with one scale).
  DType dtype = DType::Bool;
  for (TypeId e : elements) {
    if (ts.isLenient(e)) return c.unknown();
    if (!ts.isTensor(e)) return c.wrong(0, "a list of tensors");
    const TypeStore::Node& t = ts.node(e);
    dtype = t.ternary ? promote(dtype, DType::Float32) : promote(dtype, t.dtype);
  }
  // The elements' nodes, for conversions and -O0's run-time checks of sizes
  // that cannot be decided here (a list literal's elements; none for a list variable).
  std::vector<NodeId> nodes;
  const Tree& tree = c.checker().tree();
  NodeId listNode = c.arg(0).node;
  while (listNode.isValid() && tree.kind(listNode) == NodeKind::Paren) listNode = tree.childA(listNode);
  if (listNode.isValid() && tree.kind(listNode) == NodeKind::List) {
    for (NodeId element : tree.list(tree.listA(listNode))) nodes.push_back(element);
  }
  if (nodes.size() == elements.size()) {
    // torch.cat computes float16 with bfloat16 in float32: the elements are
    // converted to the dtype the checker gives.
    for (size_t k = 0; k < nodes.size(); ++k) {
      ExprInfo element;
      element.type = elements[k];
      element.node = nodes[k];
      ExprInfo other;
      other.type = elements[k == 0 && elements.size() > 1 ? 1 : 0];
      c.checker().convertOperand(element, other, dtype);
    }
  }
  for (TypeId e : elements) {
    if (!ts.node(e).rankKnown) return c.result(ts.tensorAnyRank(dtype));
  }
  std::vector<DimId> shape(ts.shape(elements[0]).begin(), ts.shape(elements[0]).end());
  std::optional<size_t> d = c.dimIndex(1, stack ? shape.size() + 1 : shape.size(), 0);
  if (c.failed()) return c.error();
  if (!d) return c.result(ts.tensorAnyRank(dtype));
  for (size_t k = 1; k < elements.size(); ++k) {
    std::span<const DimId> other = ts.shape(elements[k]);
    bool mismatch = other.size() != shape.size();
    std::optional<size_t> differs;  // the dimension whose sizes disagree
    std::string differsText;
    for (size_t i = 0; i < shape.size() && !mismatch; ++i) {
      if (!stack && i == *d) {
        shape[i] = ds.binary(DimKind::Add, shape[i], other[i]);
        continue;
      }
      switch (ds.equal(shape[i], other[i])) {
        case Decision::No:
          mismatch = true;
          differs = i;
          differsText = fmt::format("{} vs {}", c.checker().fmtDim(shape[i]),
                                    c.checker().fmtDim(other[i]));
          break;
        case Decision::Unknown:
          if (ds.isUnknown(shape[i])) {
            // Every element before had `?` there: this one is compared with
            // the first when they run, or, when its size is known, the first
            // with it (the ones between are compared with the first).
            if (k < nodes.size()) {
              if (ds.isUnknown(other[i])) {
                c.checker().recordRuntimeCheck(c.node(), nodes[k], i, shape[i], other[i],
                                               nodes[0], i);
              } else {
                c.checker().recordRuntimeCheck(c.node(), nodes[0], i, other[i], shape[i]);
              }
            }
            shape[i] = other[i];
          } else if (k < nodes.size()) {
            c.checker().recordRuntimeCheck(c.node(), nodes[k], i, shape[i], other[i]);
          }
          break;
        case Decision::Yes: break;
      }
    }
    if (mismatch) {
      Checker& chk = c.checker();
      auto diag = chk.diags().report(Diag::ShapeMismatch, chk.source(), chk.rangeOf(c.node()),
                                     c.name(), chk.fmtShape(ts.shape(elements[0])),
                                     chk.fmtShape(other));
      if (differs) {
        diag.note(Note::JoinDimension, *differs, differsText,
                  stack ? std::string("stack needs equal shapes")
                        : fmt::format("only dimension {} (dim={}) may differ", *d, *d));
      }
      // `concat([x, y])` of [?, 3, 4, 4] and [?, 5, 4, 4], without `dim`: the
      // one dimension in which the shapes differ is most likely the one meant.
      std::optional<size_t> joined;
      bool one = !stack && !c.has(1) && !c.lenient(0);
      for (size_t i = 0; one && i < shape.size(); ++i) {
        for (TypeId e : elements) {
          std::span<const DimId> sizes = ts.shape(e);
          if (sizes.size() != shape.size()) one = false;
          if (!one || ds.equal(ts.shape(elements[0])[i], sizes[i]) != Decision::No) continue;
          if (joined && *joined != i) one = false;
          joined = i;
        }
      }
      if (one && joined && *joined != *d) {
        std::string fixed = fmt::format("{}({}, dim={})", chk.textOf(chk.tree().childA(c.node())),
                                        chk.textOf(c.arg(0).node), *joined);
        if (fixed.size() <= 60 && fixed.find('\n') == std::string::npos) {
          diag.note(Note::WriteInstead, chk.source(), chk.rangeOf(c.node()), fixed);
        }
      }
      return c.error();
    }
  }
  if (stack) {
    shape.insert(shape.begin() + static_cast<long>(*d),
                 ds.constant(static_cast<int64_t>(elements.size())));
  }
  return c.result(ts.tensor(dtype, shape));
}

// split(x, [a, b, ...], dim=0): pieces of the given sizes along `dim`, as
// torch.split, which raises unless they add up to x's size there. The pieces
// are one list element type: a size they do not all share is `?`.
ExprInfo splitWithSizes(Call& c, const TypeStore::Node* x) {
  TypeStore& ts = c.ts();
  DimStore& ds = c.ds();
  std::optional<std::vector<DimId>> sizes = c.shapeArg(1);
  if (c.failed()) return c.error();
  if (sizes) {
    for (DimId size : *sizes) {
      if (std::optional<int64_t> v = ds.constValue(size); v && *v < 0) {
        c.wrongValue(1, "a list of sizes that are not negative", c.checker().fmtShape(*sizes));
        return c.error();
      }
    }
  }
  uint32_t count = sizes ? static_cast<uint32_t>(sizes->size()) : UINT32_MAX;
  if (x == nullptr || !x->rankKnown) return c.result(ts.list(ts.unknown(), count));
  std::vector<DimId> shape = c.shape(0);
  std::optional<size_t> d = c.dimIndex(2, shape.size(), 0);
  if (c.failed()) return c.error();
  if (d && sizes && !sizes->empty()) {
    DimId total = (*sizes)[0];
    for (size_t k = 1; k < sizes->size(); ++k) total = ds.binary(DimKind::Add, total, (*sizes)[k]);
    if (ds.equal(total, shape[*d]) == Decision::No) {
      c.wrongValue(1,
                   fmt::format("sizes that add up to {}, the size of dimension {} of the tensor {}",
                               c.checker().fmtDim(shape[*d]), *d, c.checker().fmtShape(shape)),
                   fmt::format("{} (adding up to {})", c.checker().fmtShape(*sizes),
                               c.checker().fmtDim(total)));
      return c.error();
    }
    DimId piece = (*sizes)[0];
    for (DimId size : *sizes) {
      if (ds.equal(size, piece) != Decision::Yes) piece = ds.unknown();
    }
    shape[*d] = piece;
  } else if (d) {
    shape[*d] = ds.unknown();
  } else {
    std::fill(shape.begin(), shape.end(), ds.unknown());  // along a dimension known when it runs
  }
  return c.result(ts.list(ts.tensor(x->dtype, shape, x->ternary), count));
}

}  // namespace

std::optional<LayerArgProblem> builtinLayerArgProblem(
    BuiltinLayer layer, std::span<const std::optional<int64_t>> values,
    std::span<const std::optional<int64_t>> widths) {
  if (!widths.empty()) {
    if (std::optional<LayerArgProblem> problem = builtinLayerArgProblem(layer, values)) {
      return problem;
    }
    std::optional<LayerArgProblem> problem = builtinLayerArgProblem(layer, widths);
    if (problem) {
      if (size_t at = problem->expected.find("kernel size"); at != std::string::npos) {
        problem->expected.replace(at, 11, "kernel width");  // MaxPool2d([3, 1], padding=1)
      }
    }
    return problem;
  }
  auto value = [&](size_t i) { return i < values.size() ? values[i] : std::nullopt; };
  auto problem = [&](size_t i, std::string expected, std::optional<LayerArgProblem>& out) {
    out = LayerArgProblem{i, std::move(expected), std::to_string(*value(i))};
  };
  std::optional<LayerArgProblem> out;
  // Sizes and padding must not be negative; kernels, strides and groups must
  // be positive (torch.nn's constructors check the same).
  auto nonNegative = [&](std::initializer_list<size_t> params) {
    for (size_t i : params) {
      if (!out && value(i) && *value(i) < 0) problem(i, "a non-negative integer", out);
    }
  };
  auto positive = [&](std::initializer_list<size_t> params) {
    for (size_t i : params) {
      if (!out && value(i) && *value(i) <= 0) problem(i, "a positive integer", out);
    }
  };
  switch (layer) {
    case BuiltinLayer::Dropout: break;  // a float: checked where it is written
    case BuiltinLayer::BatchNorm1d:
    case BuiltinLayer::BatchNorm2d:
    case BuiltinLayer::LayerNorm: nonNegative({0}); break;
    case BuiltinLayer::Embedding: {
      nonNegative({0, 1});
      // torch.nn.Embedding asserts padding_idx is within num_embeddings.
      std::optional<int64_t> n = value(0), index = value(2);
      if (!out && n && index && (*index >= *n || *index < -*n)) {
        problem(2, fmt::format("an index into the {} embeddings", *n), out);
      }
      break;
    }
    case BuiltinLayer::Linear:
    case BuiltinLayer::TernaryLinear: nonNegative({0, 1}); break;
    case BuiltinLayer::Conv2d:
    case BuiltinLayer::TernaryConv2d: {
      // in, out, kernel, stride, padding, groups, bias, dilation
      nonNegative({0, 1});
      positive({2, 3});
      nonNegative({4});
      positive({5, 7});
      std::optional<int64_t> groups = value(5);
      for (size_t i = 0; i < 2 && !out && groups && *groups > 0; ++i) {
        std::optional<int64_t> channels = value(i);
        if (channels && *channels % *groups != 0) {
          problem(5, fmt::format("a divisor of the {} channels ({})", i == 0 ? "input" : "output",
                                 *channels), out);
        }
      }
      break;
    }
    case BuiltinLayer::MaxPool2d:
    case BuiltinLayer::AvgPool2d: {
      // kernel, stride, padding: torch wants padding at most half the kernel.
      positive({0, 1});
      nonNegative({2});
      if (layer == BuiltinLayer::MaxPool2d) positive({3});       // dilation
      if (layer == BuiltinLayer::AvgPool2d) positive({5});       // divisor_override
      std::optional<int64_t> kernel = value(0);
      std::optional<int64_t> padding = value(2);
      if (!out && kernel && padding && *padding * 2 > *kernel) {
        problem(2,
                fmt::format("between 0 and {} (half the kernel size {})", *kernel / 2, *kernel),
                out);
      }
      break;
    }
    case BuiltinLayer::AdaptiveAvgPool2d: positive({0}); break;
  }
  return out;
}

bool checkBuiltinLayerArgs(Checker& checker, BuiltinLayer layer, NodeId call,
                           std::vector<BoundArg>& args, std::span<const DimId> widths) {
  Call c(checker, builtinLayerName(layer), call, args, builtinLayerParams(layer));
  if (layer == BuiltinLayer::Dropout) return probability(c, 0);
  std::vector<std::optional<int64_t>> values(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    if (!c.has(i) || c.lenient(i)) continue;
    values[i] = c.arg(i).intValue;
    if (!values[i] && c.arg(i).dim.isValid()) values[i] = c.ds().constValue(c.arg(i).dim);
  }
  std::vector<std::optional<int64_t>> widthValues;
  if (!widths.empty()) {
    widthValues = values;
    for (size_t i = 0; i < widths.size() && i < widthValues.size(); ++i) {
      if (widths[i].isValid()) widthValues[i] = c.ds().constValue(widths[i]);
    }
  }
  std::optional<LayerArgProblem> problem = builtinLayerArgProblem(layer, values, widthValues);
  if (problem) {
    c.wrongValue(problem->param, problem->expected, problem->value);
    return false;
  }
  size_t method = layer == BuiltinLayer::TernaryLinear   ? 3
                  : layer == BuiltinLayer::TernaryConv2d ? 8
                                                         : SIZE_MAX;
  // String options: checked here when written, and where the layer is created
  // when given a str hyperparameter (`method=m`).
  auto option = [&](size_t i, std::span<const std::string_view> allowed) {
    if (!c.has(i) || c.lenient(i)) return true;
    if (!c.arg(i).strValue) {
      checker.recordStrOptionUse(c.arg(i), Checker::StrOption::LayerOption, allowed,
                                 builtinLayerParams(layer)[i].name, builtinLayerName(layer));
      return true;
    }
    std::string_view value = *c.arg(i).strValue;
    if (std::find(allowed.begin(), allowed.end(), value) != allowed.end()) return true;
    c.wrongValue(i, optionList(allowed, "'", " or "), fmt::format("'{}'", value));
    return false;
  };
  if (method != SIZE_MAX && !option(method, kQuantizeMethods)) return false;
  if (layer == BuiltinLayer::Conv2d && !option(8, kPaddingModes)) return false;
  return true;
}

/// Whether `text` is a bare name (letters, digits, `_`): a note's rewrite
/// uses it as it is, anything else in parentheses or by a stand-in.
bool isPlainName(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
  });
}

/// The elements of a list literal (none for anything else).
std::vector<NodeId> listElements(const Checker& checker, NodeId list) {
  const Tree& tree = checker.tree();
  if (!list.isValid() || tree.kind(list) != NodeKind::List) return {};
  std::span<const NodeId> elements = tree.list(tree.listA(list));
  return {elements.begin(), elements.end()};
}

/// For each of the `size` sizes of reshape's new shape, the dimension of the reshaped
/// `x` it keeps when it is written `x.shape[k]` (`x` a name, `k` a constant, negative
/// counting from the end as in Python): that size is the input's own.
std::vector<std::optional<size_t>> keptDimensions(const Checker& checker, NodeId x,
                                                  std::optional<size_t> rank, NodeId list,
                                                  size_t size) {
  std::vector<std::optional<size_t>> kept(size);
  const Tree& tree = checker.tree();
  std::vector<NodeId> elements = listElements(checker, list);
  if (!x.isValid() || tree.kind(x) != NodeKind::Name || elements.size() != size) return kept;
  // A local that holds `x.shape[k]` (`let b = x.shape[0]`, the usual way to
  // split heads) is that size too, when neither it nor `x` is assigned
  // anywhere in the file (a loop's later assignment would change either).
  const CheckedModule& m = checker.module();
  for (size_t i = 0; i < size; ++i) {
    NodeId e = elements[i];
    if (tree.kind(e) == NodeKind::Name && e.index < m.nodeSymbol.size() &&
        m.nodeSymbol[e.index] < m.symbols.size()) {
      const Symbol& local = m.symbols[m.nodeSymbol[e.index]];
      if (local.kind != SymbolKind::Local || !local.decl.isValid() ||
          tree.kind(local.decl) != NodeKind::Let || !tree.childB(local.decl).isValid() ||
          checker.assignedInFile(tree.text(e)) || checker.assignedInFile(tree.text(x))) {
        continue;
      }
      e = tree.childB(local.decl);
      while (tree.kind(e) == NodeKind::Paren) e = tree.childA(e);
      // (Of this `x`, not of another one it shadows or that shadows it.)
      if (tree.kind(e) != NodeKind::Index || tree.kind(tree.childA(e)) != NodeKind::Member ||
          tree.kind(tree.childA(tree.childA(e))) != NodeKind::Name ||
          m.nodeSymbol[tree.childA(tree.childA(e)).index] != m.nodeSymbol[x.index]) {
        continue;
      }
    }
    if (tree.kind(e) != NodeKind::Index) continue;
    NodeId base = tree.childA(e);
    std::span<const NodeId> index = tree.list(tree.listB(e));
    if (tree.kind(base) != NodeKind::Member || tree.tokens().spelling(tree.token(base)) != "shape" ||
        tree.kind(tree.childA(base)) != NodeKind::Name ||
        tree.text(tree.childA(base)) != tree.text(x) || index.size() != 1) {
      continue;
    }
    // A literal index, or a negative one.
    NodeId literal = index[0];
    bool negative = tree.kind(literal) == NodeKind::Unary &&
                    tree.tokens().kind(tree.token(literal)) == TokenKind::Minus;
    if (negative) literal = tree.childA(literal);
    if (!rank || tree.kind(literal) != NodeKind::IntLit ||
        tree.tokens().intValue(tree.token(literal)) > *rank) {
      continue;
    }
    auto value = static_cast<int64_t>(tree.tokens().intValue(tree.token(literal)));
    std::optional<int64_t> k = negative ? -value : value;
    int64_t at = *k < 0 ? *k + static_cast<int64_t>(*rank) : *k;
    if (at >= 0 && at < static_cast<int64_t>(*rank)) kept[i] = static_cast<size_t>(at);
  }
  return kept;
}

/// The largest `threshold` of ternary_quantize (a multiple of mean(|x|)).
constexpr double kMaxQuantizeThreshold = 10.0;

ExprInfo checkBuiltinCall(Checker& checker, BuiltinFn fn, NodeId call,
                          std::vector<BoundArg>& args) {
  R rule = kFnRules[static_cast<size_t>(fn)];
  Call c(checker, builtinFnName(fn), call, args, builtinFnParams(fn));
  TypeStore& ts = c.ts();
  DimStore& ds = c.ds();

  // The shape argument, or the weight's declared shape in its default.
  auto createdShape = [&]() -> std::optional<std::vector<DimId>> {
    return c.has(0) ? c.shapeArg(0) : checker.weightShapeFor(call);
  };
  if (rule == R::Creation) {
    std::optional<std::vector<DimId>> shape = createdShape();
    if (c.failed() || !nonNegative(c, shape, 0)) return c.error();
    std::optional<DType> given = c.dtypeArg(1, "int64");  // torch's dtype=
    if (c.failed()) return c.error();
    DType dtype = given.value_or(checker.createdFloatDType());
    // torch draws random numbers as floats only ("not implemented for 'Long'").
    if ((fn == BuiltinFn::Randn || fn == BuiltinFn::Rand) && !isFloating(dtype)) {
      c.wrongValue(1, "a float type (random numbers are floats)", dtypeName(dtype));
      return c.error();
    }
    return c.result(shape ? ts.tensor(dtype, *shape) : ts.tensorAnyRank(dtype));
  }
  if (rule == R::TernaryWeights) {
    std::optional<std::vector<DimId>> shape = createdShape();
    if (c.failed() || !nonNegative(c, shape, 0)) return c.error();
    if (c.has(1) && !c.lenient(1)) {
      std::optional<double> s = c.arg(1).floatValue;
      if (!s && c.arg(1).intValue) s = static_cast<double>(*c.arg(1).intValue);
      // A hyperparameter (`sparsity=sp`) is checked when the weight is made;
      // only a constant informs the zero-skipping kernels (zero-skip pass).
      const TypeStore::Node& v = ts.node(c.arg(1).type);
      bool number = v.kind == TypeKind::Scalar && v.dtype != DType::Str && v.dtype != DType::Bool;
      if (!s && !number) return c.wrong(1, "a number in [0, 1)");
      if (s && (*s < 0.0 || *s >= 1.0)) {
        c.wrongValue(1, "in [0, 1)", formatFloat(*s));
        return c.error();
      }
    }
    return c.result(shape ? ts.tensor(DType::Trit, *shape, true)
                          : ts.tensorAnyRank(DType::Trit, true));
  }
  if (rule == R::Full) {
    std::optional<std::vector<DimId>> shape = createdShape();
    if (c.failed() || !nonNegative(c, shape, 0)) return c.error();
    DType dtype = DType::Float32;
    if (!c.lenient(1)) {
      const TypeStore::Node& v = ts.node(c.arg(1).type);
      if (v.kind != TypeKind::Scalar || v.dtype == DType::Str) return c.wrong(1, "a number");
      dtype = v.dtype == DType::Bool      ? DType::Bool
              : isFloating(v.dtype) ? checker.createdFloatDType()
                                    : DType::Int64;
    }
    // `full(shape, v, dtype=int8)`: the value must fit the dtype.
    std::optional<DType> given = c.dtypeArg(2, "int64");
    if (c.failed()) return c.error();
    if (given) dtype = *given;
    // The value must fit the dtype, the one given or the value's own:
    // torch.full([2], 1e39) raises "value cannot be converted to type float".
    if (!c.lenient(1) && (given || isFloating(dtype)) &&
        !c.checker().checkAssignable(c.arg(1), ts.scalar(dtype), c.arg(1).node)) {
      return c.error();
    }
    ExprInfo full = c.result(shape ? ts.tensor(dtype, *shape) : ts.tensorAnyRank(dtype));
    // The fill value, checked against the dtype the tensor takes (a weight's).
    if (!c.lenient(1)) {
      if (std::optional<double> n = c.arg(1).number()) {
        full.lowest = full.highest = ExprInfo::Element{*n, c.arg(1).intValue, c.arg(1).node};
      }
    }
    return full;
  }
  if (rule == R::Arange || rule == R::Range) {
    bool floats = false;
    for (size_t i = 0; i < 3; ++i) {
      if (!c.has(i) || c.lenient(i)) continue;
      const TypeStore::Node& t = ts.node(c.arg(i).type);
      if (t.kind != TypeKind::Scalar || !isNumeric(t.dtype) || t.dtype == DType::Bool) {
        return c.wrong(i, "a number");
      }
      if (isFloating(t.dtype)) {
        if (rule == R::Range) return c.wrong(i, "an integer");
        floats = true;
      }
    }
    // A zero step never ends: torch.arange and range() both refuse it.
    if (c.has(2) && !c.lenient(2) &&
        ((c.arg(2).intValue && *c.arg(2).intValue == 0) ||
         (c.arg(2).floatValue && *c.arg(2).floatValue == 0.0))) {
      c.wrongValue(2, "non-zero", "0");
      return c.error();
    }
    // torch.arange raises on an infinite or NaN bound or step ("unsupported
    // range"): a constant one is a mistake found here.
    for (size_t i = 0; i < 3; ++i) {
      if (c.has(i) && !c.lenient(i) && c.arg(i).floatValue && !std::isfinite(*c.arg(i).floatValue)) {
        c.wrongValue(i, "a finite number", formatFloat(*c.arg(i).floatValue));
        return c.error();
      }
    }
    if (rule == R::Range) {
      return c.result(ts.make(TypeKind::Range));
    }
    // torch.arange raises when the end lies before the start in the step's
    // direction (range() is empty then; arange(5, 5) is empty too).
    bool given = !c.lenient(0) && (!c.has(1) || !c.lenient(1)) && (!c.has(2) || !c.lenient(2));
    if (given) {
      std::optional<double> first = c.arg(0).number();
      std::optional<double> start = c.has(1) ? first : std::optional(0.0);
      std::optional<double> end = c.has(1) ? c.arg(1).number() : first;
      std::optional<double> step = c.has(2) ? c.arg(2).number() : std::optional(1.0);
      if (start && end && step && (*step > 0.0 ? *end < *start : *end > *start)) {
        auto show = [&](double v) {
          return floats ? formatFloat(v) : std::to_string(static_cast<int64_t>(v));
        };
        c.wrongValue(c.has(1) ? 1 : 0,
                     fmt::format("{} the start {} (the step is {})",
                                 *step > 0.0 ? "at least" : "at most", show(*start), show(*step)),
                     show(*end));
        return c.error();
      }
    }
    DimId length = ds.unknown();
    // arange(end) or arange(start, end[, step]): the length when all are constants.
    bool known = !floats && c.has(0) && c.arg(0).intValue.has_value() &&
                 (!c.has(1) || c.arg(1).intValue.has_value()) &&
                 (!c.has(2) || c.arg(2).intValue.has_value());
    if (known) {
      int64_t first = c.arg(0).intValue.value_or(0);
      int64_t start = c.has(1) ? first : 0;
      int64_t stop = c.has(1) ? c.arg(1).intValue.value_or(0) : first;
      int64_t step = c.has(2) ? c.arg(2).intValue.value_or(1) : 1;
      if (step != 0) {
        int64_t n = (stop - start + step - (step > 0 ? 1 : -1)) / step;
        length = ds.constant(std::max<int64_t>(n, 0));
      }
    }
    std::optional<DType> named = c.dtypeArg(3, "int64");
    if (c.failed()) return c.error();
    DType dtype = named.value_or(floats ? DType::Float32 : DType::Int64);
    return c.result(ts.tensor(dtype, std::vector<DimId>{length}));
  }
  if (rule == R::Eye) {
    if (!c.has(0)) {  // in a weight's default: eye(n, m) of its [n, m]
      std::optional<std::vector<DimId>> shape = checker.weightShapeFor(call);
      if (shape && shape->size() != 2) {  // no n to take from it
        checker.report(Diag::MissingArgument, call, "n", "eye");
        return c.error();
      }
      DType dtype = checker.createdFloatDType();
      return c.result(shape ? ts.tensor(dtype, *shape) : ts.tensorAnyRank(dtype));
    }
    DimId n = c.dimArg(0, 0);
    if (c.failed()) return c.error();
    if (std::optional<int64_t> v = ds.constValue(n); v && *v < 0) {
      c.wrongValue(0, "a non-negative size", std::to_string(*v));  // torch raises
      return c.error();
    }
    return c.result(ts.tensor(checker.createdFloatDType(), std::vector<DimId>{n, n}));
  }
  if (rule == R::TensorLiteral) {
    if (c.lenient(0)) return c.unknown();
    const TypeStore::Node& t = ts.node(c.arg(0).type);
    if (t.kind != TypeKind::List) return c.wrong(0, "a list");
    if (c.arg(0).ragged) {
      c.checker().report(Diag::RaggedList, c.arg(0).node);
      return c.error();
    }
    // A list value, not a literal (`x.shape`, `split(...)`): its length is its shape.
    std::vector<DimId> shape = c.arg(0).listShape;
    bool rankKnown = true;
    if (shape.empty()) {
      TypeId inner{t.ref};
      if (ts.isTensor(inner)) {  // torch.tensor of tensors raises unless each has one element
        return c.wrong(0, "a list of numbers (tensors are joined by 'stack(...)')");
      }
      if (ts.isScalar(inner)) {
        shape.push_back(t.count == UINT32_MAX ? ds.unknown()
                                              : ds.constant(static_cast<int64_t>(t.count)));
      } else {
        rankKnown = false;  // a list of lists known only when it runs
      }
    }
    std::optional<DType> named = c.dtypeArg(1, "float32");
    if (c.failed()) return c.error();
    bool explicitDtype = named.has_value();
    DType dtype = named.value_or(DType::Float32);
    // Float elements in an integer, trit or bool tensor would be truncated
    // (1.5 becomes 1, 0.3 a "trit"): narrowing needs a cast (LANGUAGE.md §3).
    TypeId element = c.arg(0).type;
    while (ts.kind(element) == TypeKind::List) element = TypeId{ts.node(element).ref};
    if (explicitDtype && !isFloating(dtype) && ts.isScalar(element) &&
        isFloating(ts.node(element).dtype)) {
      c.checker().report(Diag::NarrowingConversion, c.arg(0).node,
                         c.checker().fmt(ts.scalar(ts.node(element).dtype)), dtypeName(dtype));
      return c.error();
    }
    // Elements all -1, 0, 1 make a ternary tensor (LANGUAGE.md §3).
    bool ternary = c.arg(0).allTrits && (!explicitDtype || dtype == DType::Trit);
    if (!ternary && !c.checker().elementsFit(c.arg(0), dtype)) return c.error();
    ExprInfo out = c.result(rankKnown ? ts.tensor(ternary ? DType::Trit : dtype, shape, ternary)
                                      : ts.tensorAnyRank(ternary ? DType::Trit : dtype, ternary));
    // Its smallest and largest elements, for the checks of ids and classes.
    out.lowest = c.arg(0).lowest;
    out.highest = c.arg(0).highest;
    // `tensor([1.0, -1.0])` is ternary where a TernaryTensor is declared.
    out.tritValued = !ternary && c.arg(0).tritValued && isFloating(dtype);
    return out;
  }
  if (rule == R::Reshape) {
    const TypeStore::Node* x = c.tensor(0);
    std::optional<std::vector<DimId>> target = c.shapeArg(1);
    if (c.failed()) return c.error();
    if (x == nullptr || !target) return c.result(x ? ts.tensorAnyRank(x->dtype, x->ternary) : ts.unknown());
    // One -1 is inferred when every other size is a constant.
    // Element counts, when every size is a constant (and the product fits).
    auto multiply = [](std::optional<int64_t> acc, std::optional<int64_t> v) {
      int64_t out = 0;
      if (!acc || !v || __builtin_mul_overflow(*acc, *v, &out)) {
        return std::optional<int64_t>();
      }
      return std::optional<int64_t>(out);
    };
    std::optional<int64_t> total = 1;
    if (x->rankKnown) {
      for (DimId d : c.shape(0)) {
        total = multiply(total, ds.constValue(d));
      }
    } else {
      total = std::nullopt;
    }
    // `x.shape[k]` written in the new shape of `x` itself keeps dimension k: the two cancel
    // when elements are counted, so `reshape(x, [x.shape[0], 784])` of `[?, 16, 8, 8]` is a
    // mismatch found now (1024 elements per item against 784), and the -1 of
    // `[x.shape[0], -1]` is 1024.
    std::vector<std::optional<size_t>> kept = keptDimensions(
        checker, c.arg(0).node,
        x->rankKnown ? std::optional<size_t>(c.shape(0).size()) : std::nullopt, c.arg(1).node,
        target->size());
    std::vector<bool> cancelled(x->rankKnown ? c.shape(0).size() : 0, false);
    for (size_t i = 0; i < kept.size(); ++i) {
      if (kept[i] && *kept[i] < cancelled.size() && !cancelled[*kept[i]]) {
        cancelled[*kept[i]] = true;
        (*target)[i] = c.shape(0)[*kept[i]];
      } else {
        kept[i].reset();
      }
    }
    std::optional<int64_t> known = 1;
    std::optional<int64_t> restOfX = x->rankKnown ? std::optional<int64_t>(1) : std::nullopt;
    std::optional<int64_t> restOfTarget = 1;
    bool anyKept = std::any_of(kept.begin(), kept.end(), [](auto k) { return k.has_value(); });
    for (size_t i = 0; i < cancelled.size(); ++i) {
      if (!cancelled[i]) restOfX = multiply(restOfX, ds.constValue(c.shape(0)[i]));
    }
    int inferred = -1;
    for (size_t i = 0; i < target->size(); ++i) {
      std::optional<int64_t> v = ds.constValue((*target)[i]);
      if (kept[i]) {
        known = multiply(known, v);
        continue;
      }
      if (v != -1) restOfTarget = multiply(restOfTarget, v);
      if (v == -1) {
        if (inferred >= 0) {
          c.wrongValue(1, "a shape with at most one -1", c.checker().fmtShape(*target));
          return c.error();
        }
        inferred = static_cast<int>(i);
      } else if (v && *v < 0) {
        c.wrongValue(1, "a shape of non-negative sizes (and one -1 at most)",
                     c.checker().fmtShape(*target));
        return c.error();
      } else {
        known = multiply(known, v);
      }
    }
    if (inferred >= 0 && known && *known == 0) {
      // torch raises whatever the input: "the unspecified dimension size -1
      // can be any value and is ambiguous" (0 elements), else no shape fits.
      c.wrongValue(1, "a shape without a 0 beside its -1 (the -1 could be any size)",
                   c.checker().fmtShape(*target));
      return c.error();
    }
    if (inferred >= 0 && total && known && *total % *known != 0) {
      // torch cannot infer the -1: the other sizes do not divide the elements.
      c.wrongValue(1,
                   fmt::format("a shape whose other sizes divide the {} elements of {}", *total,
                               c.checker().fmtShape(c.shape(0))),
                   c.checker().fmtShape(*target));
      return c.error();
    }
    if (inferred >= 0 && !total && known && *known > 0 && x->rankKnown &&
        c.shape(0).size() >= 2) {
      // `reshape(x, [-1, 400])` of `[?, 16, 4, 4]`: each item's 256 elements neither fill
      // whole rows of 400 nor are a whole number of such rows, so the -1 exists only for
      // some batch sizes (25, 50, ...), and then rows cut across items: the classic wrong
      // flatten size of a classifier head. Only for a batch first (one `?`, dimension 0,
      // the rest known): `?` elsewhere is often a length that a reshape frames, and rows
      // of whole items (`[?, 64]` to `[-1, 128, 64]`) group them.
      std::vector<DimId> shape = c.shape(0);
      std::optional<int64_t> perItem = 1;
      bool batchFirst = ds.isUnknown(shape[0]);
      for (size_t i = 1; i < shape.size(); ++i) {
        batchFirst = batchFirst && !ds.isUnknown(shape[i]);
        perItem = multiply(perItem, ds.constValue(shape[i]));
      }
      if (batchFirst && perItem && *perItem > 0 && *perItem % *known != 0 &&
          *known % *perItem != 0) {
        int64_t items = *known / std::gcd(*perItem, *known);
        auto builder = checker.diags().report(
            Diag::ReshapeMixesItems, checker.source(), checker.rangeOf(call),
            checker.fmtShape(c.shape(0)), checker.fmtShape(*target), *perItem, *known, items);
        if (target->size() == 2) {
          builder.note(Note::ReshapeItemSize, *perItem, fmt::format("[-1, {}]", *perItem));
        }
      }
    }
    if (anyKept && !total && restOfX && restOfTarget &&
        (inferred >= 0 ? *restOfTarget == 0 || *restOfX % *restOfTarget != 0
                       : *restOfX != *restOfTarget)) {
      size_t first = static_cast<size_t>(
          std::find_if(kept.begin(), kept.end(), [](auto k) { return k.has_value(); }) -
          kept.begin());
      std::vector<NodeId> elements = listElements(checker, c.arg(1).node);
      auto builder = checker.diags().report(
          Diag::ReshapeKeptMismatch, checker.source(), checker.rangeOf(call),
          checker.fmtShape(c.shape(0)), checker.fmtShape(*target),
          checker.textOf(elements[first]), *restOfX,
          inferred >= 0 ? fmt::format(", which the new shape's other sizes do not divide ({})",
                                      *restOfTarget)
                        : fmt::format(" and the new shape's {}", *restOfTarget));
      if (target->size() == 2 && first == 0 && *kept[0] == 0 && c.shape(0).size() > 2) {
        builder.note(Note::FlattenEachItem, checker.textOf(c.arg(0).node), *restOfX);
      }
      return c.error();
    }
    if (anyKept && !total && (!restOfX || !restOfTarget)) {
      // Sizes of hyperparameters (`d` against `n_heads * (d / n_heads)`): compared where the
      // layer is created with values (SemaCreations).
      DimId restX = ds.constant(1), restT = ds.constant(1);
      bool unknown = false;
      for (size_t i = 0; i < cancelled.size(); ++i) {
        if (cancelled[i]) continue;
        unknown = unknown || ds.containsUnknown(c.shape(0)[i]);
        restX = ds.binary(DimKind::Mul, restX, c.shape(0)[i]);
      }
      for (size_t i = 0; i < target->size(); ++i) {
        if (kept[i] || static_cast<int>(i) == inferred) continue;
        unknown = unknown || ds.containsUnknown((*target)[i]);
        restT = ds.binary(DimKind::Mul, restT, (*target)[i]);
      }
      if (!unknown) {
        size_t first = static_cast<size_t>(
            std::find_if(kept.begin(), kept.end(), [](auto k) { return k.has_value(); }) -
            kept.begin());
        std::vector<NodeId> elements = listElements(checker, c.arg(1).node);
        checker.recordReshape(call, c.shape(0), *target, restX, restT, inferred >= 0,
                              first < elements.size() ? checker.textOf(elements[first]) : "");
      }
    }
    if (inferred >= 0 && anyKept && !total && restOfX && restOfTarget && *restOfTarget != 0) {
      (*target)[static_cast<size_t>(inferred)] = ds.constant(*restOfX / *restOfTarget);
    } else if (inferred >= 0) {
      (*target)[static_cast<size_t>(inferred)] =
          total && known && *known != 0 && *total % *known == 0 ? ds.constant(*total / *known)
                                                                 : ds.unknown();
    } else if (total && known && *total != *known) {
      c.checker().report(Diag::ReshapeMismatch, call, c.checker().fmtShape(c.shape(0)), *total,
                         c.checker().fmtShape(*target), *known);
      return c.error();
    }
    return c.result(ts.tensor(x->dtype, *target, x->ternary));
  }
  if (rule == R::Flatten || rule == R::Transpose || rule == R::Squeeze || rule == R::Unsqueeze ||
      rule == R::Permute) {
    const TypeStore::Node* x = c.tensor(0);
    if (x == nullptr) return c.failed() ? c.error() : c.unknown();
    if (!x->rankKnown) return c.result(ts.tensorAnyRank(x->dtype, x->ternary));
    std::vector<DimId> shape = c.shape(0);
    if (rule == R::Flatten) {
      // torch flattens a 0-d tensor as one of rank 1: its dimensions are
      // -1 and 0, so the default start_dim=1 raises there.
      for (auto [i, fallback] : {std::pair<size_t, int64_t>{1, 1}, {2, -1}}) {
        std::optional<int64_t> d = shape.empty() ? c.intArg(i, fallback) : std::nullopt;
        if (d && (*d < -1 || *d > 0)) {
          c.checker().report(Diag::DimOutOfRange, c.has(i) ? c.arg(i).node : c.node(), *d, 0);
          return c.error();
        }
      }
      std::optional<size_t> start = c.dimIndex(1, std::max<size_t>(shape.size(), 1), 1);
      std::optional<size_t> end = c.dimIndex(2, std::max<size_t>(shape.size(), 1), -1);
      if (c.failed()) return c.error();
      if (start && end && *start > *end) {
        // torch raises "start_dim cannot come after end_dim" (end_dim is
        // written: its default, the last, is never before start_dim).
        c.wrongValue(2, fmt::format("a dimension at or after start_dim ({})",
                                    c.intArg(1, 1).value_or(1)),
                     std::to_string(c.intArg(2, -1).value_or(-1)));
        return c.error();
      }
      if (shape.empty()) return c.result(ts.tensor(x->dtype, std::vector<DimId>{ds.constant(1)}, x->ternary));
      if (!start || !end) return c.result(ts.tensorAnyRank(x->dtype, x->ternary));
      std::vector<DimId> out(shape.begin(), shape.begin() + static_cast<long>(*start));
      DimId product = ds.constant(1);
      for (size_t i = *start; i <= *end && i < shape.size(); ++i) {
        product = ds.binary(DimKind::Mul, product, shape[i]);
      }
      out.push_back(product);
      out.insert(out.end(), shape.begin() + static_cast<long>(std::max(*end + 1, *start)), shape.end());
      return c.result(ts.tensor(x->dtype, out, x->ternary));
    }
    if (rule == R::Transpose) {
      std::optional<size_t> d0 = c.dimIndex(1, shape.size(), -2);
      std::optional<size_t> d1 = c.dimIndex(2, shape.size(), -1);
      if (c.failed()) return c.error();
      if (!d0 || !d1) return c.result(ts.tensorAnyRank(x->dtype, x->ternary));
      std::swap(shape[*d0], shape[*d1]);
      return c.result(ts.tensor(x->dtype, shape, x->ternary));
    }
    if (rule == R::Permute) {
      std::optional<std::vector<DimId>> order = c.shapeArg(1);
      if (c.failed()) return c.error();
      if (!order) return c.result(ts.tensorAnyRank(x->dtype, x->ternary));
      if (order->size() != shape.size()) {
        return c.wrong(1, fmt::format("a permutation of the {} dimensions", shape.size()));
      }
      std::vector<DimId> out;
      std::vector<bool> used(shape.size(), false);
      for (DimId d : *order) {
        std::optional<int64_t> v = ds.constValue(d);
        if (!v) return c.result(ts.tensorAnyRank(x->dtype, x->ternary));
        std::optional<size_t> i = c.checker().normalizeDim(*v, shape.size(), c.arg(1).node);
        if (!i) return c.error();
        if (used[*i]) {
          return c.wrong(1, fmt::format("a permutation of the {} dimensions", shape.size()));
        }
        used[*i] = true;
        out.push_back(shape[*i]);
      }
      return c.result(ts.tensor(x->dtype, out, x->ternary));
    }
    if (rule == R::Unsqueeze) {
      std::optional<int64_t> d = c.intArg(1);
      if (c.failed()) return c.error();
      if (!d) return c.result(ts.tensorAnyRank(x->dtype, x->ternary));
      std::optional<size_t> i = c.checker().normalizeDim(*d, shape.size() + 1, c.arg(1).node);
      if (!i) return c.error();
      shape.insert(shape.begin() + static_cast<long>(*i), ds.constant(1));
      return c.result(ts.tensor(x->dtype, shape, x->ternary));
    }
    // Squeeze: drops size-1 dimensions (only the given one with `dim`).
    DimId one = ds.constant(1);
    if (c.has(1)) {
      std::optional<size_t> i = c.dimIndex(1, shape.size(), 0);
      if (c.failed()) return c.error();
      if (!i) return c.result(ts.tensorAnyRank(x->dtype, x->ternary));
      if (shape[*i] == one) {
        shape.erase(shape.begin() + static_cast<long>(*i));
      } else if (!ds.constValue(shape[*i])) {
        return c.result(ts.tensorAnyRank(x->dtype, x->ternary));
      }
      return c.result(ts.tensor(x->dtype, shape, x->ternary));
    }
    std::vector<DimId> out;
    for (DimId d : shape) {
      if (!ds.constValue(d)) return c.result(ts.tensorAnyRank(x->dtype, x->ternary));
      if (d != one) out.push_back(d);
    }
    return c.result(ts.tensor(x->dtype, out, x->ternary));
  }
  if (rule == R::Concat || rule == R::Stack || rule == R::Split) {
    if (rule == R::Split) {
      const TypeStore::Node* x = c.tensor(0);
      if (c.failed()) return c.error();
      // `split(x, [3, 5], dim=1)`: the sizes of the pieces, as torch.split.
      if (c.has(1) && !c.lenient(1) && ts.kind(c.arg(1).type) == TypeKind::List) {
        return splitWithSizes(c, x);
      }
      DimId size = c.dimArg(1, 1);
      if (std::optional<int64_t> v = ds.constValue(size); v && *v <= 0 && !c.failed()) {
        c.wrongValue(1, "a positive size", std::to_string(*v));  // torch raises
        return c.error();
      }
      if (x == nullptr || !x->rankKnown) return c.result(ts.list(ts.unknown(), UINT32_MAX));
      std::vector<DimId> shape = c.shape(0);
      std::optional<size_t> d = c.dimIndex(2, shape.size(), 0);
      if (c.failed()) return c.error();
      // A constant size of a constant dimension: ceil(n / size) pieces (torch.split), so
      // that a constant index past the last is an error here, not an IndexError when it
      // runs; all of `size` when it divides n. Along a dimension known only when it runs,
      // any size may change.
      uint32_t count = UINT32_MAX;
      if (d) {
        std::optional<int64_t> n = ds.constValue(shape[*d]);
        std::optional<int64_t> each = ds.constValue(size);
        DimId piece = ds.unknown();
        if (n && each && *n >= 1 && *each >= 1) {
          int64_t pieces = (*n + *each - 1) / *each;
          if (pieces <= INT32_MAX) count = static_cast<uint32_t>(pieces);
          if (*n % *each == 0) piece = size;
          else if (pieces == 1) piece = shape[*d];
        }
        shape[*d] = piece;
      } else {
        std::fill(shape.begin(), shape.end(), ds.unknown());
      }
      return c.result(ts.list(ts.tensor(x->dtype, shape, x->ternary), count));
    }
    if (c.lenient(0)) return c.unknown();
    const TypeStore::Node& list = ts.node(c.arg(0).type);
    if (list.kind != TypeKind::List) return c.wrong(0, "a list of tensors");
    if (!c.arg(0).elementTypes.empty()) return joinTensors(c, rule == R::Stack);
    TypeId element{list.ref};
    if (ts.isLenient(element)) return c.unknown();
    if (!ts.isTensor(element)) return c.wrong(0, "a list of tensors");
    const TypeStore::Node& e = ts.node(element);
    if (!e.rankKnown) return c.result(ts.tensorAnyRank(e.dtype, e.ternary));
    std::vector<DimId> shape(ts.shape(element).begin(), ts.shape(element).end());
    size_t rank = rule == R::Stack ? shape.size() + 1 : shape.size();
    std::optional<size_t> d = c.dimIndex(1, rank, 0);
    if (c.failed()) return c.error();
    if (!d) return c.result(ts.tensorAnyRank(e.dtype, e.ternary));
    DimId count = list.count == UINT32_MAX ? ds.unknown() : ds.constant(list.count);
    if (rule == R::Stack) {
      shape.insert(shape.begin() + static_cast<long>(*d), count);
    } else {
      shape[*d] = ds.binary(DimKind::Mul, shape[*d], count);
    }
    return c.result(ts.tensor(e.dtype, shape, e.ternary));
  }
  if (rule == R::SameType) return elementwise(c, false, true);
  if (rule == R::FloatMath) {
    // A number is computed with Python's math module, which raises outside
    // the domain (math.sqrt(-1.0), math.log(0.0)); tensors give nan or -inf.
    // math.exp raises OverflowError past e^709.78 (torch.exp gives inf).
    if ((fn == BuiltinFn::Sqrt || fn == BuiltinFn::Log || fn == BuiltinFn::Exp) &&
        !c.lenient(0) && ts.isScalar(c.arg(0).type) && !c.checker().guarded()) {
      std::optional<double> v = c.arg(0).number();
      bool raises = v && (fn == BuiltinFn::Sqrt  ? *v < 0.0
                          : fn == BuiltinFn::Log ? *v <= 0.0
                                                 : mathExpRaises(*v));
      if (raises) {
        bool atImport = c.checker().atImport();
        c.checker().report(atImport ? Diag::MathDomainError : Diag::MathDomainErrorWhenRun, call,
                           c.name(), formatFloat(*v),
                           fn == BuiltinFn::Exp ? "OverflowError (the result is too large)"
                                                : "ValueError (math domain error)");
        if (atImport) return c.error();
      }
    }
    return elementwise(c, true, false);
  }
  if (rule == R::SameShapeFloat || rule == R::SameShapeFloatDim) {
    const TypeStore::Node* x = c.tensor(0);
    if (fn == BuiltinFn::DropoutFn && !probability(c, 1)) return c.error();
    if (fn == BuiltinFn::BatchNormFn && c.has(5) && c.arg(5).intValue == 0 &&
        (!c.has(3) || !c.has(4))) {
      // F.batch_norm(training=False) normalizes with the running statistics:
      // without them every call raises.
      c.wrongValue(5, "true when running_mean and running_var are not given", "false");
      return c.error();
    }
    if (x == nullptr) return c.failed() ? c.error() : c.unknown();
    if (rule == R::SameShapeFloatDim && x->rankKnown) {
      c.dimIndex(1, c.shape(0).size(), -1);
      if (c.failed()) return c.error();
    }
    if (fn == BuiltinFn::LayerNormFn && x->rankKnown) {
      // `shape` names the trailing dimensions of x, as F.layer_norm's
      // normalized_shape.
      std::optional<std::vector<DimId>> normalized = c.shapeArg(1);
      if (c.failed()) return c.error();
      std::vector<DimId> xs = c.shape(0);
      if (normalized) {
        bool mismatch = normalized->size() > xs.size();
        for (size_t i = 0; i < normalized->size() && !mismatch; ++i) {
          DimId trailing = xs[xs.size() - normalized->size() + i];
          mismatch = ds.equal(trailing, (*normalized)[i]) == Decision::No;
        }
        if (mismatch) {
          c.checker().report(Diag::ShapeMismatch, call, c.name(), c.checker().fmtShape(xs),
                             c.checker().fmtShape(*normalized));
          return c.error();
        }
        // Sizes not decided here are compared at -O0, with the location.
        for (size_t i = 0; i < normalized->size(); ++i) {
          size_t dim = xs.size() - normalized->size() + i;
          if (ds.equal(xs[dim], (*normalized)[i]) == Decision::Unknown) {
            c.checker().recordRuntimeCheck(call, c.arg(0).node, dim, (*normalized)[i], xs[dim]);
          }
        }
        // The weight and bias have the normalized shape.
        if (!fitsShape(c, 2, *normalized) || !fitsShape(c, 3, *normalized)) return c.error();
      }
    }
    if (fn == BuiltinFn::BatchNormFn || fn == BuiltinFn::LayerNormFn) {
      // weight, bias (and running statistics) are tensors, or not given.
      bool layerNorm = fn == BuiltinFn::LayerNormFn;
      for (size_t i = layerNorm ? 2 : 1; i <= (layerNorm ? 3u : 4u); ++i) {
        if (!tensorOrAbsent(c, i, layerNorm ? "a tensor of the normalized shape"
                                            : "a tensor of one value per channel")) {
          return c.error();
        }
      }
    }
    if (fn == BuiltinFn::BatchNormFn && x->rankKnown && c.shape(0).size() >= 2) {
      // weight, bias, running_mean, running_var: one value per channel.
      std::vector<DimId> channels{c.shape(0)[1]};
      for (size_t i = 1; i <= 4; ++i) {
        if (!fitsShape(c, i, channels)) return c.error();
      }
      // Batch statistics of one value per channel: torch raises ("Expected
      // more than 1 value per channel when training"). A top-level constant
      // computes them when the module is imported.
      bool training = !c.has(5) || c.arg(5).intValue != 0;
      std::optional<int64_t> perChannel = 1;
      std::vector<DimId> xs = c.shape(0);
      for (size_t i = 0; i < xs.size() && perChannel; ++i) {
        if (i == 1) continue;
        std::optional<int64_t> v = ds.constValue(xs[i]);
        perChannel = v ? std::optional<int64_t>(*perChannel * std::min<int64_t>(*v, 2)) : v;
      }
      if (training && perChannel == 1 && c.checker().atImport()) {
        c.wrongValue(0, "more than one value per channel for batch statistics (training=true)",
                     c.checker().fmtShape(xs));
        return c.error();
      }
    }
    c.toFloat(0, c.floatOf(*x));
    if (fn == BuiltinFn::LayerNormFn) {
      // F.layer_norm takes its weight and bias in the input's dtype.
      c.toFloat(2, c.floatOf(*x));
      c.toFloat(3, c.floatOf(*x));
    }
    return c.result(ts.withDType(c.arg(0).type, c.floatOf(*x)));
  }
  if (rule == R::Pow || rule == R::Clip) {
    ExprInfo base = elementwise(c, false, false);
    if (ts.kind(base.type) == TypeKind::Error) return base;
    bool tensorOperands = false;  // a tensor exponent or bound
    std::vector<size_t> assumed;  // sizes broadcast() guessed, checked at -O0
    for (size_t i = 1; i < (rule == R::Pow ? 2u : 3u); ++i) {
      if (c.lenient(i)) continue;
      const TypeStore::Node t = ts.node(c.arg(i).type);  // a copy: types are made below
      if ((t.kind != TypeKind::Scalar && t.kind != TypeKind::Tensor) || !isNumeric(t.dtype)) {
        return c.wrong(i, "a number");
      }
      if (t.kind == TypeKind::Scalar && isFloating(t.dtype) && ts.isTensor(base.type) &&
          !isFloating(ts.node(base.type).dtype)) {
        base.type = ts.withDType(base.type, DType::Float32);
      }
      // A bool tensor with an integer number: torch computes in int64
      // (`clip(mask, 0, 1)` is no longer a mask).
      if (t.kind == TypeKind::Scalar && isIntegral(t.dtype) && t.dtype != DType::Bool &&
          ts.isTensor(base.type) && ts.node(base.type).dtype == DType::Bool) {
        base.type = ts.withDType(base.type, DType::Int64);
      }
      // An integer tensor with an integer bound that does not fit its dtype
      // (`clip(x_int8, 0, 200)`, or an `int` hyperparameter): torch.clamp
      // raises ("value cannot be converted to type int8_t without
      // overflow"), so x is widened first, as `x_int8 * 300` is int32.
      if (rule == R::Clip && t.kind == TypeKind::Scalar && isIntegral(t.dtype) &&
          t.dtype != DType::Bool && ts.isTensor(base.type)) {
        DType xd = ts.node(base.type).dtype;
        const ExprInfo& bound = c.arg(i);
        bool fits = bound.intValue ? fitsInteger(xd, *bound.intValue)
                                   : promote(xd, t.dtype) == xd;
        if (isIntegral(xd) && xd != DType::Bool && xd != DType::Trit && !fits) {
          base.type = ts.withDType(base.type, promote(xd, t.dtype == DType::Trit ? DType::Int8
                                                                                : t.dtype));
          c.checker().convertTo(c.arg(0), ts.node(base.type).dtype);
        }
      }
      if (rule == R::Clip && t.kind == TypeKind::Scalar && ts.isScalar(base.type)) {
        // Numbers: min(max(x, lo), hi) is any of them, typed as they promote.
        base.type = ts.scalar(promote(ts.node(base.type).dtype, t.dtype));
      }
      if (rule == R::Pow && t.kind == TypeKind::Scalar && ts.isScalar(base.type)) {
        // Two numbers: a float unless both are integers and the exponent is
        // not negative (2 ** -1 is 0.5), as Python's `**` (of a bool, an int).
        if (ts.node(base.type).dtype == DType::Bool) base.type = ts.scalar(DType::Int32);
        DType bd = ts.node(base.type).dtype;
        if (isIntegral(bd) &&
            (isFloating(t.dtype) || (c.arg(i).intValue && *c.arg(i).intValue < 0))) {
          base.type = ts.scalar(DType::Float32);
        }
        if (!c.lenient(0) && c.checker().powOutsideDomain(c.arg(0), c.arg(i), c.node())) {
          return c.error();
        }
      }
      if (rule == R::Pow && !c.lenient(0)) {
        c.checker().negativeIntegerPower(c.arg(0), c.arg(i), c.node(), c.arg(0).node);
      }
      if (t.kind != TypeKind::Tensor) continue;
      if (rule == R::Clip && !ts.isTensor(base.type)) {
        return c.wrong(0, "a tensor when a bound is a tensor");
      }
      // A tensor exponent: the result has both shapes broadcast (2.0 ** x is a tensor).
      const TypeStore::Node b = ts.node(base.type);
      ExprInfo current = c.arg(0);
      current.type = base.type;
      DType dtype = c.checker().elementwiseDType(current, c.arg(i));
      tensorOperands = true;
      if (!b.rankKnown && b.kind == TypeKind::Tensor) {
        base.type = ts.tensorAnyRank(dtype);
      } else if (!t.rankKnown) {
        base.type = ts.tensorAnyRank(dtype);
      } else if (b.kind == TypeKind::Scalar) {
        base.type = ts.tensor(dtype, ts.shape(c.arg(i).type));
      } else {
        std::vector<DimId> bs(ts.shape(base.type).begin(), ts.shape(base.type).end());
        std::optional<std::vector<DimId>> shape = c.checker().broadcast(
            bs, ts.shape(c.arg(i).type), c.node(), c.name(), {}, {}, &assumed);
        if (!shape) return c.error();
        base.type = ts.tensor(dtype, *shape);
      }
    }
    if (ts.isTensor(base.type) && ts.node(base.type).dtype == DType::Bool) {
      // Every operand a bool: torch has no pow or clamp of bools.
      return c.wrong(0, boolsNeedConverting(c.name()));
    }
    if (tensorOperands && ts.isTensor(base.type)) {
      // As for max(a, b): torch.pow and torch.clamp would compute float16
      // with bfloat16 in float32, or ignore a 0-d operand's wider dtype.
      DType dtype = ts.node(base.type).dtype;
      for (size_t i = 1; i < (rule == R::Pow ? 2u : 3u); ++i) {
        if (c.lenient(i) || !ts.isTensor(c.arg(i).type)) continue;
        c.checker().convertOperands(c.arg(0), c.arg(i), dtype);
      }
      c.checker().checkAssumedSizes(c.node(), ts.shape(base.type), assumed);
    }
    return c.result(base.type);
  }
  if (rule == R::MinMax) {
    // min(a, b) with a second tensor or a float is element-wise; with an
    // integer it reduces along that dimension, as torch.max. The names
    // decide where written: `max(a=x, b=2)` is element-wise (LANGUAGE.md §5
    // names them a and b), `max(x, dim=y)` reduces, so y must be an integer.
    std::string_view secondName;
    for (NodeId arg : checker.tree().list(checker.tree().listB(call))) {
      if (checker.tree().kind(arg) != NodeKind::NamedArg) continue;
      std::string_view name = checker.tokens().spelling(checker.tree().token(arg));
      if (name == "b" || name == "dim" || name == "axis") secondName = name;
    }
    if (c.has(1) && !c.lenient(1)) {
      const TypeStore::Node& second = ts.node(c.arg(1).type);
      // Two numbers are always the element-wise form: max(1, ch / 4) is Python's max.
      bool firstIsScalar = !c.lenient(0) && ts.isScalar(c.arg(0).type);
      bool elementwiseForm = secondName == "b" || second.kind == TypeKind::Tensor ||
                             (second.kind == TypeKind::Scalar &&
                              (isFloating(second.dtype) || firstIsScalar));
      // `max(x, 0)` as a ReLU reads as the element-wise maximum to a NumPy or Python
      // user, but torch (and this language) reduce along dimension 0 (audit 59).
      if (!elementwiseForm && secondName.empty() && c.arg(1).literal && c.arg(1).intValue == 0 &&
          !c.lenient(0) && ts.isTensor(c.arg(0).type) && !c.has(2)) {
        const TypeStore::Node& first = ts.node(c.arg(0).type);
        if (first.ternary || isFloating(first.dtype)) {
          std::string_view x = checker.textOf(c.arg(0).node);
          bool isMax = c.name() == "max";
          std::string fix = x.size() <= 40 && x.find('\n') == std::string_view::npos
                                ? (isMax ? fmt::format("relu({})", x)
                                         : fmt::format("min({}, 0.0)", x))
                                : fmt::format("{}(x, 0.0)", c.name());
          std::string_view written = checker.textOf(call);
          std::string shown = written.size() <= 40 && written.find('\n') == std::string_view::npos
                                  ? std::string(written)
                                  : fmt::format("{}(..., 0)", c.name());
          checker.report(Diag::ReductionByZero, call, shown, c.name(), fix,
                         isMax ? "maximum" : "minimum");
        }
      }
      if (elementwiseForm && (secondName == "dim" || secondName == "axis")) {
        return c.wrong(1, "an integer dimension (for the element-wise form, name it 'b' or "
                          "pass it second)");
      }
      // `max(a=x, b=1)`: an integer `b` of a tensor is the element-wise
      // bound, which the emitter tells from a dimension by its type.
      if (secondName == "b" && second.kind == TypeKind::Scalar && !isFloating(second.dtype) &&
          !firstIsScalar && !c.lenient(0)) {
        const TypeStore::Node& first = ts.node(c.arg(0).type);
        if (first.kind == TypeKind::Tensor && !first.ternary && first.dtype != DType::Trit &&
            !isFloating(first.dtype)) {
          return c.wrong(1, "a float or a tensor (the element-wise bound of an integer tensor "
                            "is written 'clip(x, lo, hi)')");
        }
        checker.convertNumberToFloat(c.arg(1));
      }
      if (elementwiseForm) {
        if (c.has(2)) {
          // Python's max(a, b, c) takes the largest of three; this form
          // compares two values and has no keepdim.
          auto builder = checker.diags().report(Diag::TooManyArguments, checker.source(),
                                                checker.rangeOf(c.arg(2).node), c.name(),
                                                "2 values", 3);
          std::span<const NodeId> written = checker.tree().list(checker.tree().listB(call));
          if (written.size() == 3 && checker.tree().kind(written[2]) != NodeKind::NamedArg) {
            builder.note(Note::WriteInstead, checker.source(), checker.rangeOf(call),
                         fmt::format("{0}({1}, {0}({2}, {3}))", c.name(),
                                     checker.textOf(written[0]), checker.textOf(written[1]),
                                     checker.textOf(written[2])));
          }
          return c.error();
        }
        if (c.lenient(0)) return c.unknown();
        const TypeStore::Node& first = ts.node(c.arg(0).type);
        if (first.kind == TypeKind::Scalar && second.kind == TypeKind::Scalar) {
          return c.result(ts.scalar(promote(first.dtype, second.dtype)));
        }
        if (first.kind != TypeKind::Tensor && first.kind != TypeKind::Scalar) {
          return c.wrong(0, "a tensor or a number");
        }
        std::span<const DimId> sa = first.kind == TypeKind::Tensor ? ts.shape(c.arg(0).type) : std::span<const DimId>{};
        std::span<const DimId> sb = second.kind == TypeKind::Tensor ? ts.shape(c.arg(1).type) : std::span<const DimId>{};
        if ((first.kind == TypeKind::Tensor && !first.rankKnown) ||
            (second.kind == TypeKind::Tensor && !second.rankKnown)) {
          return c.result(ts.tensorAnyRank(promote(first.dtype, second.dtype)));
        }
        std::vector<size_t> assumed;
        std::optional<std::vector<DimId>> shape =
            c.checker().broadcast(sa, sb, call, c.name(), {}, {}, &assumed);
        if (!shape) return c.error();
        c.checker().checkAssumedSizes(call, *shape, assumed);
        // torch.maximum computes float16 with bfloat16 in float32, and a
        // tensor with a 0-d one of its category in its own dtype: the
        // operands are converted to the dtype the checker gives.
        DType dtype = c.checker().elementwiseDType(c.arg(0), c.arg(1));
        c.checker().convertOperands(c.arg(0), c.arg(1), dtype);
        return c.result(ts.tensor(dtype, *shape));
      }
    }
    if (!c.lenient(0) && ts.isScalar(c.arg(0).type)) {
      return c.wrong(0, "a tensor (or give two values)");
    }
    return reduce(c, rule, fn);
  }
  if (rule == R::Reduce || rule == R::ArgReduce) return reduce(c, rule, fn);
  if (rule == R::Matmul) return c.checker().matmul(c.arg(0), c.arg(1), call, "matmul");
  if (rule == R::Linear) {
    // linear(x, w, b) = x @ w^T + b, with w laid out [out, in] as in PyTorch.
    const TypeStore::Node* x = c.tensor(0);
    const TypeStore::Node* w = c.tensor(1);
    if (c.failed()) return c.error();
    if (!tensorOrAbsent(c, 2, "a tensor of one value per output feature")) return c.error();
    if (x == nullptr || w == nullptr) return c.unknown();
    if (!w->rankKnown || !x->rankKnown) return c.result(ts.tensorAnyRank(c.floatOf(*x)));
    if (inputAndWeightSwapped(
            c, call,
            c.shape(1).size() != 2 || c.shape(0).empty() ||
                ds.equal(c.shape(0).back(), c.shape(1)[1]) == Decision::No,
            c.shape(0).size() == 2 && !c.shape(1).empty() &&
                ds.equal(c.shape(1).back(), c.shape(0)[1]) != Decision::No)) {
      return c.error();
    }
    std::vector<DimId> ws = c.shape(1);
    if (ws.size() != 2) return c.wrong(1, "a 2-D weight [out, in]");
    std::vector<DimId> xs = c.shape(0);
    if (xs.empty()) return c.wrong(0, "a tensor [..., in]");
    switch (ds.equal(xs.back(), ws[1])) {
      case Decision::No: {
        auto builder = checker.diags().report(
            Diag::MatmulMismatch, checker.source(), checker.rangeOf(call), "linear",
            checker.fmt(c.arg(0).type), checker.fmt(c.arg(1).type),
            ds.format(xs.back(), checker.interner()), ds.format(ws[1], checker.interner()));
        // The weight laid out [in, out] (`x @ w`'s layout): its first size
        // is the input's features.
        std::string_view wText = checker.textOf(c.arg(1).node);
        std::string_view xText = checker.textOf(c.arg(0).node);
        if (ds.equal(xs.back(), ws[0]) == Decision::Yes && !wText.empty() && wText.size() <= 40 &&
            !xText.empty() && xText.size() <= 40) {
          builder.note(Note::LinearWeightLayout, wText, checker.fmtShape(ws), xText);
        }
        return c.error();
      }
      case Decision::Unknown:
        if (!ds.isUnknown(ws[1])) {
          c.checker().recordRuntimeCheck(call, c.arg(0).node, xs.size() - 1, ws[1], xs.back());
        } else {
          c.checker().recordRuntimeCheck(call, c.arg(1).node, 1, xs.back(), ws[1], c.arg(0).node,
                                         xs.size() - 1);
        }
        break;
      case Decision::Yes: break;
    }
    xs.back() = ws[0];
    DType dtype = Checker::productDType(*x, *w);
    // A float bias makes the product of integers a float, as `x @ w + b`
    // (it was converted to the integers' dtype, truncating it), the int32-valued
    // product of two ternary values included (audit 59: `linear(ternary_quantize(x), w, b)`
    // emitted `b.to(torch.int32)`, and F.linear raised).
    if (c.has(2) && !c.lenient(2) && ts.isTensor(c.arg(2).type)) {
      const TypeStore::Node& b = ts.node(c.arg(2).type);
      DType bd = b.ternary ? DType::Float32 : b.dtype;
      if (isFloating(bd) && !isFloating(dtype)) dtype = bd;
    }
    if (dtype == DType::Bool) return c.wrong(0, boolsNeedConverting("linear"));
    c.toProductDType(0, dtype);
    c.toProductDType(1, dtype);
    c.toProductDType(2, dtype);
    if (c.has(2) && !c.lenient(2) && ts.isTensor(c.arg(2).type) && ts.node(c.arg(2).type).rankKnown) {
      if (!c.checker().broadcast(xs, ts.shape(c.arg(2).type), call, "linear")) return c.error();
    }
    return c.result(ts.tensor(dtype, xs));
  }
  if (rule == R::Conv2d || rule == R::DepthwiseConv2d) {
    const TypeStore::Node* x = c.tensor(0);
    const TypeStore::Node* w = c.tensor(1);
    if (c.failed()) return c.error();
    if (x == nullptr || w == nullptr) return c.unknown();
    if (!x->rankKnown || !w->rankKnown) return c.result(ts.tensorAnyRank(DType::Float32));
    if (inputAndWeightSwapped(c, call, c.shape(1).size() != 4,
                              c.shape(0).size() == 4 && c.shape(1).size() >= 3)) {
      return c.error();
    }
    std::vector<DimId> ws = c.shape(1);
    if (ws.size() != 4) return c.wrong(1, "a 4-D weight [out, in / groups, kh, kw]");
    bool depthwise = rule == R::DepthwiseConv2d;
    size_t strideArg = depthwise ? 2 : 3, paddingArg = depthwise ? 3 : 4;
    std::optional<std::array<DimId, 2>> stride = c.pairArg(strideArg, 1);
    std::optional<std::array<DimId, 2>> dilation =
        depthwise ? std::array<DimId, 2>{ds.constant(1), ds.constant(1)} : c.pairArg(5, 1);
    // padding: sizes, or as torch's F.conv2d "valid" (none) or "same" (the
    // output keeps the input's size; torch allows it with stride 1 only).
    std::optional<std::array<DimId, 2>> padding;
    bool same = false;
    if (c.has(paddingArg) && !c.lenient(paddingArg) &&
        ts.isScalar(c.arg(paddingArg).type) && ts.node(c.arg(paddingArg).type).dtype == DType::Str) {
      std::optional<std::string_view> text = c.arg(paddingArg).strValue;
      if (!text || (*text != "same" && *text != "valid")) {
        c.wrongValue(paddingArg, "an integer, a list [h, w], \"same\" or \"valid\"",
                     text ? fmt::format("\"{}\"", *text) : std::string("a string"));
        return c.error();
      }
      same = *text == "same";
      if (!same) padding = std::array<DimId, 2>{ds.constant(0), ds.constant(0)};
      for (size_t k = 0; same && stride && k < 2; ++k) {
        if (std::optional<int64_t> v = ds.constValue((*stride)[k]); v && *v != 1) {
          c.wrongValue(strideArg, "1 with padding=\"same\" (torch supports no strided \"same\")",
                       std::to_string(*v));
          return c.error();
        }
      }
    } else {
      padding = c.pairArg(paddingArg, 0);
      for (size_t k = 0; padding && k < 2; ++k) {
        if (std::optional<int64_t> v = ds.constValue((*padding)[k]); v && *v < 0) {
          c.wrongValue(paddingArg, "a non-negative integer", std::to_string(*v));  // torch raises
          return c.error();
        }
      }
    }
    if (c.failed() || !stride || !dilation || (!same && !padding)) return c.error();
    // depthwise_conv2d is F.conv2d with groups = x's channels, so the weight
    // is [channels * multiplier, 1, kh, kw] (a channel multiplier, as torch
    // allows); with `?` channels, a multiplier of 1 is what can be checked.
    DimId groups = depthwise ? ws[0] : c.dimArg(6, 1);
    if (depthwise && x->rankKnown && (c.shape(0).size() == 4 || c.shape(0).size() == 3)) {
      DimId channels = c.shape(0)[c.shape(0).size() - 3];
      std::optional<int64_t> out = ds.constValue(ws[0]);
      std::optional<int64_t> in = ds.constValue(channels);
      if (!ds.isUnknown(channels) &&
          (!out || !in || (*in > 0 && *out % *in == 0) || ds.equal(ws[0], channels) == Decision::Yes)) {
        groups = channels;
      }
    }
    if (c.failed() || !positive(c, strideArg, (*stride)[0]) || !positive(c, strideArg, (*stride)[1]) ||
        (!depthwise && (!positive(c, 5, (*dilation)[0]) || !positive(c, 5, (*dilation)[1]) ||
                        !positive(c, 6, groups)))) {
      return c.error();
    }
    // torch splits the output channels into the groups too ("expected weight
    // to be divisible by 2 at dimension 0", at every call).
    if (!depthwise) {
      std::optional<int64_t> g = ds.constValue(groups);
      std::optional<int64_t> outChannels = ds.constValue(ws[0]);
      if (g && outChannels && *g > 0 && *outChannels % *g != 0) {
        c.wrongValue(6, fmt::format("a divisor of the weight's {} output channels (its dimension 0)",
                                    *outChannels),
                     std::to_string(*g));
        return c.error();
      }
    }
    // The bias has one value per output channel.
    if (!depthwise && c.has(2) && !c.lenient(2) && !ts.isTensor(c.arg(2).type)) {
      std::optional<int64_t> v = c.arg(2).intValue;
      return c.wrong(2, fmt::format("a tensor of one value per output channel (stride and "
                                    "padding go by name: 'stride={}')",
                                    v ? std::to_string(*v) : std::string("...")));
    }
    // As written, a kernel larger than the padded input or other input
    // channels than the weight's: were the input and weight swapped?
    bool fails = false;
    std::vector<DimId> xs = c.shape(0);
    if (xs.size() >= 3) {
      fails = ds.equal(xs[xs.size() - 3], ds.binary(DimKind::Mul, ws[1], groups)) == Decision::No;
      for (size_t k = 0; k < 2 && padding; ++k) {
        std::optional<int64_t> in = ds.constValue(xs[xs.size() - 2 + k]);
        std::optional<int64_t> kernel = ds.constValue(ws[2 + k]);
        std::optional<int64_t> pad = ds.constValue((*padding)[k]);
        std::optional<int64_t> dil = ds.constValue((*dilation)[k]);
        fails = fails || (in && kernel && pad && dil && *dil * (*kernel - 1) + 1 > *in + 2 * *pad);
      }
    }
    std::vector<DimId> asInput = c.shape(1);
    // (depthwise: a weight [C * m, 1, kh, kw] takes any input channels.)
    bool fitsSwapped = asInput.size() >= 3 && xs.size() == 4 &&
                       (depthwise ? ds.equal(xs[1], ds.constant(1)) != Decision::No
                                  : ds.equal(asInput[asInput.size() - 3],
                                             ds.binary(DimKind::Mul, xs[1], groups)) != Decision::No);
    if (inputAndWeightSwapped(c, call, fails, fitsSwapped)) return c.error();
    if (!depthwise && !fitsShape(c, 2, std::vector<DimId>{ws[0]})) return c.error();
    ExprInfo result = conv(c, x, 0, ws[0], ws[1], ws[2], ws[3], *stride, padding, *dilation, groups);
    // F.conv2d takes one float dtype: the input's, or the weight's wider one.
    DType dtype = x->ternary ? c.floatOf(*w) : w->ternary ? c.floatOf(*x)
                                             : promote(c.floatOf(*x), c.floatOf(*w));
    if (ts.kind(result.type) != TypeKind::Tensor) return result;
    c.toFloat(0, dtype);
    c.toFloat(1, dtype);
    if (!depthwise) c.toFloat(2, dtype);
    return c.result(ts.withDType(result.type, dtype));
  }
  if (rule == R::Pool2d || rule == R::AdaptivePool2d || rule == R::GlobalPool) {
    const TypeStore::Node* x = c.tensor(0);
    if (c.failed()) return c.error();
    if (x == nullptr) return c.unknown();
    // Pools compute in floats (torch has no integer or bool pooling; an
    // average is a float): an integer tensor is converted.
    c.toFloat(0, c.floatOf(*x));
    if (!x->rankKnown) return c.result(ts.tensorAnyRank(c.floatOf(*x)));
    std::vector<DimId> shape = c.shape(0);
    if (shape.size() != 4 && shape.size() != 3) return c.wrong(0, "a 4-D tensor [N, C, H, W]");
    size_t h = shape.size() - 2;
    if (rule == R::GlobalPool) {
      shape[h] = shape[h + 1] = ds.constant(1);
    } else if (rule == R::AdaptivePool2d) {
      // The output size: one for both sides, or [h, w] as torch's tuple.
      if (c.has(1) && !c.lenient(1) && ts.kind(c.arg(1).type) == TypeKind::List) {
        std::optional<std::vector<DimId>> sizes = c.shapeArg(1);
        if (c.failed()) return c.error();
        if (sizes && sizes->size() != 2) {
          c.wrongValue(1, "one size or a list of two, [height, width]",
                       c.checker().fmtShape(*sizes));
          return c.error();
        }
        shape[h] = sizes ? (*sizes)[0] : ds.unknown();
        shape[h + 1] = sizes ? (*sizes)[1] : ds.unknown();
      } else {
        DimId size = c.dimArg(1, 1);
        if (c.failed()) return c.error();
        shape[h] = shape[h + 1] = size;
      }
      for (size_t d : {h, h + 1}) {
        if (std::optional<int64_t> v = ds.constValue(shape[d]); v && *v < 0) {  // torch raises
          c.wrongValue(1, "sizes that are not negative",
                       c.checker().fmtShape(std::span(shape).subspan(h)));
          return c.error();
        }
      }
    } else {
      // Each of kernel_size, stride, padding: one integer or [h, w].
      std::optional<std::array<DimId, 2>> kernel = c.pairArg(1, 1);
      std::optional<std::array<DimId, 2>> stride = c.has(2) ? c.pairArg(2, 1) : kernel;
      std::optional<std::array<DimId, 2>> padding = c.pairArg(3, 0);
      if (c.failed() || !kernel || !stride || !padding) return c.error();
      for (size_t k = 0; k < 2; ++k) {
        if (!positive(c, 1, (*kernel)[k]) || !positive(c, 2, (*stride)[k])) return c.error();
      }
      for (size_t d = 0; d < 2; ++d) {
        std::optional<int64_t> k = ds.constValue((*kernel)[d]);
        std::optional<int64_t> pad = ds.constValue((*padding)[d]);
        if (pad && (*pad < 0 || (k && *pad * 2 > *k))) {
          // torch: "pad should be at most half of effective kernel size"
          c.wrongValue(3, k ? fmt::format("between 0 and {} (half the kernel size {})", *k / 2, *k)
                            : std::string("a non-negative integer"),
                       std::to_string(*pad));
          return c.error();
        }
      }
      DimId one = ds.constant(1);
      std::vector<DimId> input = shape;
      shape[h] = windowOutput(ds, shape[h], (*kernel)[0], (*stride)[0], (*padding)[0], one);
      shape[h + 1] = windowOutput(ds, shape[h + 1], (*kernel)[1], (*stride)[1], (*padding)[1], one);
      if (!nonEmpty(c.checker(), c.name(), call, input, shape)) return c.error();
    }
    return c.result(ts.tensor(c.floatOf(*x), shape));
  }
  if (rule == R::Embedding) {
    const TypeStore::Node* ids = c.tensor(0);
    const TypeStore::Node* table = c.tensor(1);
    if (c.failed()) return c.error();
    if (ids == nullptr || table == nullptr) return c.unknown();
    if (!isIntegral(ids->dtype) || ids->ternary) return c.wrong(0, "an integer tensor of ids");
    // torch.embedding takes int32 or int64 ids; the rows are typed as floats.
    if (ids->dtype != DType::Int32 && ids->dtype != DType::Int64) {
      c.checker().convertTo(c.arg(0), DType::Int64);
    }
    c.toFloat(1, c.floatOf(*table));
    if (!ids->rankKnown || !table->rankKnown) return c.result(ts.tensorAnyRank(c.floatOf(*table)));
    std::vector<DimId> ts2 = c.shape(1);
    if (ts2.size() != 2) return c.wrong(1, "a 2-D table [n, d]");
    // Known ids past the table raise IndexError in torch, wherever they run.
    if (!idsInRange(c, 0, ds.constValue(ts2[0]), "an id in [0, {}) for a table of {} rows")) {
      return c.error();
    }
    std::vector<DimId> out = c.shape(0);
    out.push_back(ts2[1]);
    return c.result(ts.tensor(c.floatOf(*table), out));
  }
  if (rule == R::Attention) {
    const TypeStore::Node* q = c.tensor(0);
    const TypeStore::Node* k = c.tensor(1);
    const TypeStore::Node* v = c.tensor(2);
    if (c.failed()) return c.error();
    if (q == nullptr || k == nullptr || v == nullptr) return c.unknown();
    // Queries, keys and values share one float dtype in torch: the promoted one.
    DType dtype = promote(c.floatOf(*q), promote(c.floatOf(*k), c.floatOf(*v)));
    for (size_t i = 0; i < 3; ++i) c.toFloat(i, dtype);
    // An additive mask is added to the scores in their dtype (torch 2's
    // F.scaled_dot_product_attention wants it so): a float32 mask with
    // bfloat16 queries promoted the scores, and `softmax(...) @ v` raised.
    // A bool mask stays one.
    if (c.has(3) && !c.lenient(3) && ts.isTensor(c.arg(3).type) &&
        ts.node(c.arg(3).type).dtype != DType::Bool) {
      // An integer mask is most likely a keep-mask (1: attend, Hugging Face's
      // attention_mask): added, it masks nothing.
      if (DType m = ts.node(c.arg(3).type).dtype; isIntegral(m) && !ts.node(c.arg(3).type).ternary) {
        auto builder = c.checker().diags().report(Diag::IntegerAttentionMask, c.checker().source(),
                                                  c.checker().rangeOf(c.arg(3).node), dtypeName(m));
        std::string_view text = c.checker().textOf(c.arg(3).node);
        if (text.size() <= 40 && text.find('\n') == std::string_view::npos) {
          builder.note(Note::WriteInstead, c.checker().source(), c.checker().rangeOf(c.arg(3).node),
                       isPlainName(text) ? fmt::format("{} != 0", text)
                                         : fmt::format("({}) != 0", text));
        }
      }
      c.toFloat(3, dtype);
    }
    if (!q->rankKnown || !k->rankKnown || !v->rankKnown) return c.result(ts.tensorAnyRank(dtype));
    std::vector<DimId> qs = c.shape(0);
    std::vector<DimId> ks = c.shape(1);
    std::vector<DimId> vs = c.shape(2);
    if (qs.size() < 2 || ks.size() < 2 || vs.size() < 2) return c.wrong(0, "a tensor [..., L, E]");
    if (ds.equal(qs.back(), ks.back()) == Decision::No) {
      c.checker().report(Diag::MatmulMismatch, call, c.name(), c.checker().fmt(c.arg(0).type),
                         c.checker().fmt(c.arg(1).type), ds.format(qs.back(), c.checker().interner()),
                         ds.format(ks.back(), c.checker().interner()));
      return c.error();
    }
    // The values come one per key: v [..., S, Ev] with k [..., S, E].
    if (ds.equal(ks[ks.size() - 2], vs[vs.size() - 2]) == Decision::No) {
      c.checker().report(Diag::ShapeMismatch, c.arg(2).node, c.name(),
                         c.checker().fmtShape(ks), c.checker().fmtShape(vs));
      return c.error();
    }
    // is_causal (torch's): a constant, since it decides the code written, and
    // not with a mask too (torch raises).
    if (c.has(4) && !c.lenient(4)) {
      const TypeStore::Node& causal = ts.node(c.arg(4).type);
      if (causal.kind != TypeKind::Scalar || causal.dtype != DType::Bool) return c.wrong(4, "a bool");
      // Written as `true` or `false` in the call: the emitter reads the
      // literal (a constant name or `!false` would be known here only).
      NodeId written = c.arg(4).node;
      const Tree& tree = c.checker().tree();
      while (written.isValid() && tree.kind(written) == NodeKind::Paren) written = tree.childA(written);
      if (!written.isValid() || tree.kind(written) != NodeKind::BoolLit || !c.arg(4).intValue) {
        c.wrongValue(4, "true or false written in the call", c.checker().textOf(c.arg(4).node));
        return c.error();
      }
      if (*c.arg(4).intValue != 0 && c.has(3)) {
        c.wrongValue(4, "false when a mask is given (torch takes one or the other)", "true");
        return c.error();
      }
    }
    // The mask broadcasts to the scores [..., L, S].
    if (c.has(3) && !c.lenient(3) && ts.isTensor(c.arg(3).type) &&
        ts.node(c.arg(3).type).rankKnown) {
      std::vector<DimId> scores = qs;
      scores.back() = ks[ks.size() - 2];
      std::vector<DimId> mask = c.shape(3);
      std::optional<std::vector<DimId>> joined = c.checker().broadcast(scores, mask, call, c.name());
      if (!joined) return c.error();
      if (joined->size() != scores.size()) {  // a mask of higher rank than the scores
        c.checker().report(Diag::ShapeMismatch, c.arg(3).node, c.name(),
                           c.checker().fmtShape(scores), c.checker().fmtShape(mask));
        return c.error();
      }
      // A [batch, keys] padding mask (Hugging Face's attention_mask) given to
      // [batch, (heads,) queries, keys] scores: broadcast as [(1,) 1, batch,
      // keys], its batch meets the queries (torch raises, or masks the wrong rows
      // when the sizes agree). A causal [queries, keys] mask is not that.
      DimId first = mask.empty() ? DimId{} : mask[0];
      DimId queries = scores[scores.size() - 2];
      bool batchFirst = first.isValid() && ds.equal(first, queries) != Decision::Yes &&
                        (ds.equal(first, scores[0]) == Decision::Yes ||
                         (ds.isUnknown(first) && !ds.isUnknown(queries)));
      if (mask.size() == 2 && scores.size() >= 3 && batchFirst) {
        std::string_view text = c.checker().textOf(c.arg(3).node);
        auto builder = c.checker().diags().report(
            Diag::PaddingMaskBroadcast, c.checker().source(), c.checker().rangeOf(c.arg(3).node),
            c.checker().fmtShape(mask), c.checker().fmtShape(scores),
            ds.format(queries, c.checker().interner()));
        // [batch, 1, keys] for [batch, queries, keys] scores, [batch, 1, 1, keys] for heads.
        std::string fix(text.size() <= 40 && isPlainName(text) ? text : "mask");
        for (size_t i = 2; i < scores.size(); ++i) fix = fmt::format("unsqueeze({}, 1)", fix);
        builder.note(Note::WriteInstead, c.checker().source(), c.checker().rangeOf(c.arg(3).node),
                     fix);
      }
    }
    qs.back() = vs.back();
    return c.result(ts.tensor(dtype, qs));
  }
  if (rule == R::Loss) {
    c.tensor(0);
    c.tensor(1);
    if (c.failed()) return c.error();
    // `cross_entropy(labels, logits)`: integer class indices first and float
    // logits of one more dimension second fail in torch on every call.
    if (fn == BuiltinFn::CrossEntropy && !c.lenient(0) && !c.lenient(1)) {
      const TypeStore::Node& first = ts.node(c.arg(0).type);
      const TypeStore::Node& second = ts.node(c.arg(1).type);
      bool labelsFirst = isIntegral(first.dtype) && first.dtype != DType::Bool && !first.ternary;
      bool logitsSecond = isFloating(second.dtype) || second.ternary;
      if (labelsFirst && logitsSecond && first.rankKnown && second.rankKnown &&
          ts.shape(c.arg(1).type).size() == ts.shape(c.arg(0).type).size() + 1) {
        auto builder = c.checker().diags().report(
            Diag::ArgumentOrder, c.checker().source(), c.checker().rangeOf(c.arg(0).node),
            c.name(), c.checker().textOf(c.arg(0).node), c.paramName(1), c.paramName(0));
        if (std::optional<std::string> fixed =
                c.checker().swappedCall(call, c.arg(0).node, c.arg(1).node)) {
          builder.note(Note::WriteInstead, *fixed);
        }
        return c.error();
      }
    }
    // The logits (and both sides of mse_loss) are floats; cross_entropy's
    // target keeps its integer class indices.
    c.toFloat(0, DType::Float32);
    if (fn == BuiltinFn::MseLoss) c.toFloat(1, DType::Float32);
    bool ranks = !c.lenient(0) && !c.lenient(1) && ts.node(c.arg(0).type).rankKnown &&
                 ts.node(c.arg(1).type).rankKnown;
    if (fn == BuiltinFn::MseLoss && ranks &&
        !c.checker().broadcast(c.shape(0), c.shape(1), call, c.name())) {
      return c.error();
    }
    // Shapes that broadcast but differ (`[?, 10]` and `[?, 1]`, `[?, 1]` and
    // `[?]`): every prediction is compared with every target, a silent bug
    // torch warns about when it runs.
    if (fn == BuiltinFn::MseLoss && ranks) {
      std::vector<DimId> a = c.shape(0), b = c.shape(1);
      bool differ = a.size() != b.size();
      for (size_t k = 0; k < a.size() && k < b.size() && !differ; ++k) {
        differ = ds.equal(a[a.size() - 1 - k], b[b.size() - 1 - k]) == Decision::No;
      }
      if (differ) {
        c.checker().diags().report(Diag::LossBroadcasts, c.checker().source(),
                                   c.checker().rangeOf(call), c.name(),
                                   c.checker().fmt(c.arg(0).type), c.checker().fmt(c.arg(1).type));
      }
    }
    if (fn == BuiltinFn::CrossEntropy && !c.lenient(0) && !c.lenient(1)) {
      // The target is class indices (torch wants int64: an int32 target is
      // converted) or float probabilities shaped like the logits.
      const TypeStore::Node& target = ts.node(c.arg(1).type);
      if (isIntegral(target.dtype) && target.dtype != DType::Bool && !target.ternary) {
        c.checker().convertTo(c.arg(1), DType::Int64);
        // Known class indices past the classes raise in torch (-100, its
        // ignore_index, is allowed).
        if (ranks && !c.shape(0).empty()) {
          DimId classes = c.shape(0)[c.shape(0).size() >= 2 ? 1 : 0];
          if (!idsInRange(c, 1, ds.constValue(classes), "a class index in [0, {}) for {} classes",
                          -100)) {
            return c.error();
          }
        }
        // Class indices: the logits' shape without its class dimension,
        // [N, C, d...] -> [N, d...] ([C] -> []).
        if (ranks && !c.shape(0).empty()) {
          std::vector<DimId> want = c.shape(0);
          size_t classDim = want.size() >= 2 ? 1 : 0;
          want.erase(want.begin() + static_cast<std::ptrdiff_t>(classDim));
          std::vector<size_t> wantDims;
          for (size_t k = 0; k < want.size(); ++k) wantDims.push_back(k < classDim ? k : k + 1);
          if (!fitsShape(c, 1, want, 0, wantDims)) return c.error();
        }
      } else if (target.dtype != DType::Bool && !target.ternary && ranks &&
                 ts.shape(c.arg(1).type).size() == ts.shape(c.arg(0).type).size()) {
        // Probabilities: shaped like the logits.
        std::vector<size_t> wantDims(c.shape(0).size());
        for (size_t k = 0; k < wantDims.size(); ++k) wantDims[k] = k;
        if (!fitsShape(c, 1, c.shape(0), 0, wantDims)) return c.error();
      } else if (target.dtype == DType::Bool || target.ternary || ranks) {
        // A float target of another rank than the logits: neither class
        // indices (integers) nor probabilities (shaped like the logits).
        auto builder = c.checker().diags().report(
            Diag::ArgumentType, c.checker().source(), c.checker().rangeOf(c.arg(1).node), "target",
            "cross_entropy", "integer class indices, or float probabilities shaped like the logits",
            c.checker().fmt(c.arg(1).type));
        // Class indices stored as floats (or bools): one dimension fewer.
        if (!ranks || ts.shape(c.arg(1).type).size() + 1 == ts.shape(c.arg(0).type).size()) {
          builder.note(Note::SuggestCast, "int64");
        }
        return c.error();
      }
    }
    return c.result(ts.tensor(DType::Float32, std::vector<DimId>{}));
  }
  if (rule == R::TernaryQuantize) {
    const TypeStore::Node* x = c.tensor(0);
    if (c.failed()) return c.error();
    if (c.has(1) && !c.lenient(1)) {
      const std::optional<std::string_view>& method = c.arg(1).strValue;
      if (!ts.isScalar(c.arg(1).type) || ts.node(c.arg(1).type).dtype != DType::Str) {
        return c.wrong(1, "a string");
      }
      if (!method) {
        c.checker().recordStrOptionUse(c.arg(1), Checker::StrOption::QuantizeMethod,
                                       kQuantizeMethods);
      }
      if (method && std::find(std::begin(kQuantizeMethods), std::end(kQuantizeMethods),
                              *method) == std::end(kQuantizeMethods)) {
        c.checker().reportInvalidOption(c.arg(1).node, *method, "quantization method",
                                        kQuantizeMethods);
        return c.error();
      }
    }
    if (c.has(2) && !c.lenient(2)) {
      const TypeStore::Node& t = ts.node(c.arg(2).type);
      if (t.kind != TypeKind::Scalar || !isNumeric(t.dtype) || t.dtype == DType::Bool) {
        return c.wrong(2, "a number");
      }
      // d = threshold * mean(|x|) (LANGUAGE.md §5, TWN's 0.7): a negative one
      // keeps every element (it is 0), and a threshold t keeps at most 1/t of
      // them (Markov), so past 10 the weight is mostly zeros: a fraction or a
      // percentage meant as something else (`threshold=70`). A hyperparameter
      // is not checked.
      if (std::optional<double> v = c.arg(2).number();
          v && !(*v >= 0.0 && *v <= kMaxQuantizeThreshold)) {
        c.wrongValue(2,
                     "a multiple of mean(|x|) from 0 to 10 (t keeps at most 1/t of the "
                     "elements; TWN uses 0.7)",
                     c.arg(2).intValue ? std::to_string(*c.arg(2).intValue) : formatFloat(*v));
        return c.error();
      }
      // Only method="threshold" reads it: with absmean (the default) or
      // stochastic it is silently ignored.
      std::string_view method =
          c.has(1) ? c.arg(1).strValue.value_or("threshold") : std::string_view("absmean");
      if (method != "threshold") {
        c.checker().report(Diag::QuantizeThresholdUnused, c.arg(2).node, method);
      }
    }
    if (x == nullptr) return c.result(ts.tensorAnyRank(DType::Trit, true));
    // Quantizing a ternary value returns it (docs/language.md): a method other
    // than its own would be silently ignored, so say so. (A ternary weight is
    // quantized with absmean when it is read.)
    if (x->ternary && c.has(1) && c.arg(1).strValue && *c.arg(1).strValue != "absmean") {
      NodeId operand = c.arg(0).node;
      while (c.checker().tree().kind(operand) == NodeKind::Paren) {
        operand = c.checker().tree().childA(operand);
      }
      std::string what = c.checker().tree().kind(operand) == NodeKind::Name
                             ? fmt::format("'{}'", c.checker().tokens().spelling(
                                                         c.checker().tree().token(operand)))
                             : std::string("the value");
      c.checker().report(Diag::QuantizeTernaryValue, c.arg(1).node, what, *c.arg(1).strValue);
    }
    // A ternary value is float32 (s * q, one float32 scale): a float16 or
    // bfloat16 input is quantized as float32, as the runtime would give it back
    // in the input's dtype.
    if (!x->ternary && isFloating(x->dtype)) c.toFloat(0, DType::Float32);
    ExprInfo out = c.result(ts.withDType(c.arg(0).type, DType::Trit, true));
    out.scaled = !x->ternary || c.arg(0).scaled;  // (a ternary value is returned as it is)
    return out;
  }
  if (rule == R::TernaryDequantize) {
    const TypeStore::Node* t = c.tensor(0);
    if (c.failed()) return c.error();
    if (t == nullptr) return c.unknown();
    if (!t->ternary) return c.wrong(0, "a TernaryTensor");
    return c.result(ts.withDType(c.arg(0).type, DType::Float32));
  }
  if (rule == R::Print) {
    return c.result(ts.voidType());
  }
  if (rule == R::Assert) {
    if (!c.lenient(0)) {
      const TypeStore::Node& t = ts.node(c.arg(0).type);
      if (t.dtype != DType::Bool || (t.kind != TypeKind::Scalar && t.kind != TypeKind::Tensor)) {
        c.checker().report(Diag::ConditionNotBool, c.arg(0).node, c.checker().fmt(c.arg(0).type));
        return c.error();
      }
    }
    if (c.has(1) && !c.lenient(1) &&
        !(ts.isScalar(c.arg(1).type) && ts.node(c.arg(1).type).dtype == DType::Str)) {
      return c.wrong(1, "a string");
    }
    return c.result(ts.voidType());
  }
  return c.unknown();
}

ExprInfo checkBuiltinForward(Checker& checker, const InstanceInfo& instance, NodeId call,
                             std::vector<ExprInfo>& inputs) {
  auto layer = static_cast<BuiltinLayer>(instance.decl);
  R rule = kLayerRules[instance.decl];
  std::string_view name = builtinLayerName(layer);
  TypeStore& ts = checker.types();
  DimStore& ds = checker.dims();
  size_t expected = 1;
  if (inputs.size() != expected) {
    if (inputs.size() > expected) {
      auto builder = checker.diags().report(Diag::TooManyArguments, checker.source(),
                                            checker.rangeOf(inputs[expected].node), name,
                                            "1 input", inputs.size());
      // `fc(64, 10, x)`: the hyperparameters again, besides the input.
      std::vector<std::string_view> tensors;
      bool scalars = false;
      for (const ExprInfo& input : inputs) {
        if (ts.isTensor(input.type)) {
          tensors.push_back(checker.textOf(input.node));
        } else if (ts.isScalar(input.type)) {
          scalars = true;
        }
      }
      if (scalars && tensors.size() == 1) {
        std::string_view callee = checker.textOf(checker.tree().childA(call));
        builder.note(Note::CallWithInputs, checker.source(), checker.rangeOf(call), callee,
                     tensors.front());
      }
    } else {
      checker.report(Diag::MissingArgument, call, "x", name);
    }
    return checker.make(ts.error(), call);
  }
  const ExprInfo& x = inputs[0];
  if (ts.isLenient(x.type)) {
    return checker.make(x.type, call);
  }
  if (!ts.isTensor(x.type)) {
    checker.report(Diag::ArgumentType, x.node, "x", name, "a tensor", checker.fmt(x.type));
    return checker.make(ts.error(), call);
  }
  const TypeStore::Node t = ts.node(x.type);  // a copy: converting x adds types
  DType dtype = isFloating(t.dtype) ? t.dtype : DType::Float32;
  // Every layer but Embedding (whose input is ids) computes in floats: an
  // integer or bool tensor is converted, as the result's dtype says.
  if (rule != R::Embedding) checker.convertToFloat(x, dtype);
  const std::vector<sema::BuiltinParam>& params = sema::builtinLayerParams(layer);
  // The creation's argument for parameter `i`, when it gives one.
  auto argumentNode = [&](size_t i) {
    return i < params.size()
               ? checker.argumentAt(instance.site, i, params[i].name, params[i].alias)
               : NodeId{};
  };
  auto given = [&](size_t i) { return argumentNode(i).isValid(); };
  auto arg = [&](size_t i, int64_t fallback) {
    if (i < instance.args.size() && !ds.isUnknown(instance.args[i])) {
      return instance.args[i];
    }
    // (A value given but rejected, `padding=1.5`, is not known: never the
    // default, whose sizes would be reported again as a wrong result.)
    if (i < params.size() && params[i].optional && params[i].defaultText != "None" &&
        (!instance.site.isValid() || !given(i))) {
      return ds.constant(fallback);
    }
    return ds.unknown();
  };
  // The width of a size given per dimension (`kernel_size=[1, 7]`), else arg(i).
  auto argW = [&](size_t i, int64_t fallback) {
    if (i < instance.widths.size() && instance.widths[i].isValid()) return instance.widths[i];
    return arg(i, fallback);
  };
  if (!t.rankKnown) {
    return checker.make(ts.tensorAnyRank(dtype), call);
  }
  std::vector<DimId> shape(ts.shape(x.type).begin(), ts.shape(x.type).end());
  // What the layer wants, in its terms: features in the last dimension, or
  // channels in dimension 1 (NCHW). Reported, and the checking goes on with
  // the layer's result (the size it makes, which the fix may change, not
  // known), so that the mistakes after it are reported by the same run and
  // none that follows from it is.
  auto mismatch = [&](size_t dim, DimId want) {
    bool features =
        rule == R::Linear || (rule == R::SameShape && layer == BuiltinLayer::LayerNorm);
    std::string size = ds.format(want, checker.interner());
    std::string what =
        features ? fmt::format("{} features in its last dimension", size)
        : rule == R::Conv2d || layer == BuiltinLayer::BatchNorm2d
            ? fmt::format("{} channels in dimension {} (NCHW)", size, dim)
        : rule == R::SameShape ? fmt::format("{} channels in dimension {}", size, dim)
            : fmt::format("{} in dimension {}", size, dim);
    auto builder = checker.diags().report(Diag::LayerInputMismatch, checker.source(),
                                          checker.rangeOf(call), name, what,
                                          checker.fmtShape(shape));
    if (dim == 1 && (rule == R::Conv2d || layer == BuiltinLayer::BatchNorm2d) &&
        checker.channelsLastHint(builder, x, want)) {
      return;
    }
    // `BatchNorm1d(64)` of a [N, L, 64]: features last, as a transformer's
    // tokens are. BatchNorm1d normalizes dimension 1 of [N, C, L], so the fix
    // is not BatchNorm1d(L) but the input transposed to it and back.
    if (layer == BuiltinLayer::BatchNorm1d && dim == 1 && shape.size() == 3 &&
        ds.equal(shape[2], want) == Decision::Yes) {
      std::string_view callee = checker.textOf(checker.tree().childA(call));
      std::string_view input = checker.textOf(x.node);
      std::string fixed = fmt::format("transpose({}(transpose({}, 1, 2)), 1, 2)", callee, input);
      if (fixed.size() <= 60 && fixed.find('\n') == std::string::npos) {
        builder.note(Note::WriteInstead, checker.source(), checker.rangeOf(call), fixed);
        return;
      }
    }
    // The creation to write, when the input's size is known: its sizes
    // swapped (`TernaryLinear(10, 784)` of 784 features, which it makes), or
    // the input's size in place of the one it was given.
    DimId have = shape[dim];
    if (ds.isUnknown(have) || ds.isUnknown(want)) return;
    std::optional<int64_t> one = ds.constValue(have);
    std::string_view unit = one && *one == 1 ? (features ? "feature" : "channel")
                                             : (features ? "features" : "channels");
    NodeId wanted = argumentNode(0);
    if ((rule == R::Linear || rule == R::Conv2d) && params.size() > 1 &&
        ds.equal(have, arg(1, 0)) == Decision::Yes && ds.equal(want, have) == Decision::No) {
      NodeId made = argumentNode(1);
      if (wanted.isValid() && made.isValid()) {
        // (swappedCall takes them in source order: `out_ch=3, in_ch=16` is named too.)
        bool inOrder = checker.textOf(wanted).data() < checker.textOf(made).data();
        if (auto fixed = checker.swappedCall(instance.site, inOrder ? wanted : made,
                                             inOrder ? made : wanted)) {
          builder.note(Note::LayerSizesSwapped, checker.fmtDim(have), unit,
                       checker.textOf(instance.site), *fixed);
          return;
        }
      }
    }
    if (auto fixed = checker.withArgumentText(instance.site, wanted, checker.fmtDim(have))) {
      builder.note(Note::LayerSizeOfInput, checker.fmtDim(have), unit, *fixed);
    }
  };
  auto requireDim = [&](size_t dim, DimId want) -> bool {
    switch (ds.equal(shape[dim], want)) {
      case Decision::No: return false;
      case Decision::Unknown:
        checker.recordRuntimeCheck(call, x.node, dim, want, shape[dim]);
        return true;
      case Decision::Yes: return true;
    }
    return true;
  };
  if (rule == R::SameShape) {
    if (layer == BuiltinLayer::BatchNorm2d || layer == BuiltinLayer::BatchNorm1d) {
      size_t want = layer == BuiltinLayer::BatchNorm2d ? 4 : 2;
      if (shape.size() != want && !(layer == BuiltinLayer::BatchNorm1d && shape.size() == 3)) {
        auto builder = checker.diags().report(
            Diag::ArgumentType, checker.source(), checker.rangeOf(x.node), "x", name,
            want == 4 ? "a 4-D tensor [N, C, H, W]" : "a tensor [N, C] or [N, C, L]",
            checker.fmt(x.type));
        // `BatchNorm2d(256)` after a Linear: the other batch norm, created
        // with the same arguments.
        bool other = want == 4 ? shape.size() == 2 || shape.size() == 3 : shape.size() == 4;
        std::string_view site =
            instance.site.isValid() ? checker.textOf(instance.site) : std::string_view();
        std::string_view callee =
            instance.site.isValid() ? checker.textOf(checker.tree().childA(instance.site))
                                    : std::string_view();
        if (other && callee == name && site.size() <= 60 &&
            site.find('\n') == std::string_view::npos) {
          builder.note(Note::OtherBatchNorm, shape.size(),
                       fmt::format("{}{}", want == 4 ? "BatchNorm1d" : "BatchNorm2d",
                                   site.substr(callee.size())));
        }
        return checker.make(ts.error(), call);
      }
      if (!requireDim(1, arg(0, 0))) mismatch(1, arg(0, 0));
    } else if (layer == BuiltinLayer::LayerNorm && !shape.empty()) {
      DimId want = arg(0, 0);
      // ConvNeXt's mistake: `LayerNorm(c)` of NCHW `[?, c, ?, ?]` normalizes the width (an
      // error when it runs, or, where the width happens to be c, wrong values), not c.
      if (shape.size() == 4 && !ds.isUnknown(want) &&
          ds.equal(shape[3], want) == Decision::Unknown &&
          ds.equal(shape[1], want) == Decision::Yes) {
        std::string_view callee = checker.textOf(checker.tree().childA(call));
        std::string_view input = checker.textOf(x.node);
        auto builder = checker.diags().report(Diag::LayerNormOfChannels, checker.source(),
                                              checker.rangeOf(call), callee,
                                              checker.fmtShape(shape), checker.fmtDim(want));
        if (!input.empty() && input.size() <= 40 && input.find('\n') == std::string_view::npos) {
          builder.note(Note::LayerNormChannelsFirst,
                       fmt::format("permute({}(permute({}, [0, 2, 3, 1])), [0, 3, 1, 2])",
                                   callee, input));
        }
      }
      if (!requireDim(shape.size() - 1, want)) mismatch(shape.size() - 1, want);
    }
    return checker.make(ts.withDType(x.type, dtype), call);
  }
  if (rule == R::Linear) {
    if (shape.empty()) {
      checker.report(Diag::ArgumentType, x.node, "x", name, "a tensor [..., in]", checker.fmt(x.type));
      return checker.make(ts.error(), call);
    }
    if (!requireDim(shape.size() - 1, arg(0, 0))) {
      // A feature map given to the classifier: [N, C, H, W] whose C * H * W
      // is what the layer wants.
      if (checker.flattens(x, arg(0, 0))) {
        auto builder = checker.diags().report(
            Diag::LayerInputMismatch, checker.source(), checker.rangeOf(call), name,
            fmt::format("{} features in its last dimension", checker.fmtDim(arg(0, 0))),
            checker.fmtShape(shape));
        checker.flattenHint(builder, x, arg(0, 0));
        // (What the fix, flatten, gives.)
        std::vector<DimId> flat = {shape[0], arg(1, 0)};
        return checker.make(ts.tensor(dtype, flat), call);
      }
      // Checking goes on with the size the layer makes not known: the fix may
      // change it (sizes swapped).
      mismatch(shape.size() - 1, arg(0, 0));
      shape.back() = ds.unknown();
      return checker.make(ts.tensor(dtype, shape), call);
    }
    shape.back() = arg(1, 0);
    return checker.make(ts.tensor(dtype, shape), call);
  }
  if (rule == R::Conv2d) {
    if (shape.size() != 4 && shape.size() != 3) {
      checker.report(Diag::ArgumentType, x.node, "x", name, "a 4-D tensor [N, C, H, W]",
                     checker.fmt(x.type));
      return checker.make(ts.error(), call);
    }
    size_t c = shape.size() - 3;
    if (!requireDim(c, arg(0, 0))) {
      // Checking goes on with the channels, height and width not known: the
      // fix may change each (sizes swapped; an NHWC input permuted).
      mismatch(c, arg(0, 0));
      for (size_t i = c; i < shape.size(); ++i) shape[i] = ds.unknown();
      return checker.make(ts.tensor(dtype, shape), call);
    }
    std::vector<DimId> input = shape;
    shape[c] = arg(1, 0);
    if (!instance.samePadding) {  // padding="same" keeps the sizes (stride 1)
      shape[c + 1] = windowOutput(ds, shape[c + 1], arg(2, 1), arg(3, 1), arg(4, 0), arg(7, 1));
      shape[c + 2] =
          windowOutput(ds, shape[c + 2], argW(2, 1), argW(3, 1), argW(4, 0), argW(7, 1));
    }
    if (!nonEmpty(checker, name, call, input, shape)) {
      return checker.make(ts.error(), call);
    }
    return checker.make(ts.tensor(dtype, shape), call);
  }
  if (rule == R::Pool2d || rule == R::AdaptivePool2d) {
    if (shape.size() != 4 && shape.size() != 3) {
      checker.report(Diag::ArgumentType, x.node, "x", name, "a 4-D tensor [N, C, H, W]",
                     checker.fmt(x.type));
      return checker.make(ts.error(), call);
    }
    size_t h = shape.size() - 2;
    if (rule == R::AdaptivePool2d) {
      shape[h] = arg(0, 1);
      shape[h + 1] = argW(0, 1);
    } else {
      bool maxPool = layer == BuiltinLayer::MaxPool2d;
      std::optional<int64_t> ceil = ds.constValue(arg(maxPool ? 4 : 3, 0));
      std::vector<DimId> input = shape;
      for (size_t d : {h, h + 1}) {
        auto size = [&](size_t i, int64_t fallback) {
          return d == h ? arg(i, fallback) : argW(i, fallback);
        };
        DimId kernel = size(0, 1);
        // The stride defaults to the kernel size (`stride=None`).
        DimId stride = instance.args.size() > 1 && !ds.isUnknown(instance.args[1]) ? size(1, 1)
                                                                                    : kernel;
        DimId padding = size(2, 0);
        DimId dilation = maxPool ? size(3, 1) : ds.constant(1);
        shape[d] = !ceil   ? ds.unknown()  // ceil_mode from a bool hyperparameter
                   : *ceil ? ceilWindowOutput(ds, shape[d], kernel, stride, padding, dilation)
                           : windowOutput(ds, shape[d], kernel, stride, padding, dilation);
      }
      if (!nonEmpty(checker, name, call, input, shape)) {
        return checker.make(ts.error(), call);
      }
    }
    return checker.make(ts.tensor(dtype, shape), call);
  }
  if (rule == R::Embedding) {
    if (!isIntegral(t.dtype) || t.ternary) {
      checker.report(Diag::ArgumentType, x.node, "ids", name, "an integer tensor of ids",
                     checker.fmt(x.type));
      return checker.make(ts.error(), call);
    }
    if (t.dtype != DType::Int32 && t.dtype != DType::Int64) checker.convertTo(x, DType::Int64);
    shape.push_back(arg(1, 0));
    return checker.make(ts.tensor(DType::Float32, shape), call);
  }
  return checker.make(ts.unknown(), call);
}

}  // namespace sema
}  // namespace tritonc

//===- SemaCalls.cpp - calls: builtins, casts, layers, instances, fns -----===//
//
// A call of a user layer is an application when any argument is a tensor
// (the weights and inputs are passed: a pure function call) and an
// instantiation otherwise (hyperparameters only: a sub-module, LANGUAGE.md
// §4). Positional arguments of an application fill the weights and inputs in
// declaration order; those of an instantiation fill the hyperparameters.
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <cmath>

#include "Habits.h"
#include "SemaImpl.h"
#include "tritonc/base/Text.h"

namespace tritonc::sema {

namespace {

// Whether the integer `dtype` holds `value` truncated toward zero, as a cast
// converts it (an int64 holds [-2^63, 2^63); NaN and the infinities nothing).
bool truncatedFits(DType dtype, double value) {
  double whole = std::trunc(value);
  return std::isfinite(whole) && whole >= -9223372036854775808.0 &&
         whole < 9223372036854775808.0 && fitsInteger(dtype, static_cast<int64_t>(whole));
}

}  // namespace

// Whether two places, given by the branches enclosing them, can never both
// run: at some `if` that encloses both, one is in its then-block and the
// other in its else-part.
static bool excludeEachOther(const std::vector<std::pair<uint32_t, uint8_t>>& a,
                      const std::vector<std::pair<uint32_t, uint8_t>>& b) {
  for (size_t i = 0; i < a.size() && i < b.size() && a[i].first == b[i].first; ++i) {
    if (a[i].second != b[i].second) return true;
  }
  return false;
}

// The source text of a call's arguments: the positional ones, and the named
// ones as written, `name=value` (for notes that rewrite the call).
std::pair<std::vector<std::string>, std::vector<std::string>> Checker::argumentTexts(
    NodeId call) const {
  std::vector<std::string> positional, named;
  for (NodeId arg : tree_.list(tree_.listB(call))) {
    (tree_.kind(arg) == NodeKind::NamedArg ? named : positional).emplace_back(textOf(arg));
  }
  return {std::move(positional), std::move(named)};
}

Checker::CallArgs Checker::gatherArgs(NodeId call) {
  CallArgs args;
  for (NodeId arg : tree_.list(tree_.listB(call))) {
    if (tree_.kind(arg) == NodeKind::NamedArg) {
      ExprInfo value = checkExpr(tree_.childA(arg));
      setType(arg, value.type);
      args.named.emplace_back(tree_.token(arg), value);
    } else if (auto it = preChecked_.find(arg.index); it != preChecked_.end()) {
      args.positional.push_back(it->second);
      preChecked_.erase(it);
    } else {
      args.positional.push_back(checkExpr(arg));
    }
  }
  return args;
}

std::optional<std::vector<BoundArg>> Checker::bindBuiltinArgs(
    const std::vector<BuiltinParam>& params, const std::vector<int>& positional, CallArgs& args,
    NodeId call, std::string_view calleeName) {
  // `torch.cat(a, b)` habit: concat and stack take one list of tensors,
  // `concat(x, y, dim=1)` is `concat([x, y], dim=1)` (`y` would be the dim).
  if ((calleeName == "concat" || calleeName == "stack") && args.positional.size() >= 2 &&
      module_.types.isTensor(args.positional[0].type) &&
      module_.types.isTensor(args.positional[1].type)) {
    auto [tensors, named] = argumentTexts(call);
    std::string rest;
    for (const std::string& n : named) rest += ", " + n;
    diags_->report(Diag::ArgumentType, source(), rangeOf(args.positional[0].node), params[0].name,
                   calleeName, "a list of tensors", fmt(args.positional[0].type))
        .note(Note::WriteInstead, source(), rangeOf(call),
              fmt::format("{}([{}]{})", calleeName, fmt::join(tensors, ", "), rest));
    return std::nullopt;
  }
  // PyTorch's sizes one by one (`randn(2, 784)`, `reshape(x, -1, 48)`): these
  // take one list (`randn`'s second would bind to `dtype`). Integers only, so
  // that another mistake gets no such note.
  if (std::optional<size_t> first = firstSizeArgument(calleeName);
      first && args.positional.size() >= *first + 2 &&
      std::all_of(args.positional.begin() + static_cast<ptrdiff_t>(*first), args.positional.end(),
                  [&](const ExprInfo& a) {
                    const TypeStore::Node& t = module_.types.node(a.type);
                    return t.kind == TypeKind::Scalar && isIntegral(t.dtype) &&
                           t.dtype != DType::Bool;
                  })) {
    auto [texts, named] = argumentTexts(call);
    size_t takes = *first + 1;
    auto builder = diags_->report(
        Diag::TooManyArguments, source(), rangeOf(args.positional[takes].node), calleeName,
        takes == 1 ? std::string("1 positional argument")
                   : fmt::format("{} positional arguments", takes),
        args.positional.size());
    if (std::optional<std::string> sizes = sizesAsListRewrite(calleeName, texts, named)) {
      builder.note(Note::WriteInstead, source(), rangeOf(call), *sizes);
    }
    return std::nullopt;
  }
  std::vector<std::string_view> names;
  for (const BuiltinParam& p : params) {
    names.push_back(p.name);
  }
  // A parameter's other spellings (`dim|axis`, `k|kernel_size`, max's
  // `dim|axis|b`) bind as extra names, folded into its parameter below.
  auto isAlias = [](std::string_view aliases, std::string_view name) {
    while (!aliases.empty()) {
      size_t bar = aliases.find('|');
      if (aliases.substr(0, bar) == name) return true;
      aliases = bar == std::string_view::npos ? std::string_view() : aliases.substr(bar + 1);
    }
    return false;
  };
  for (auto& [token, value] : args.named) {
    std::string_view name = tokens().spelling(token);
    for (const BuiltinParam& p : params) {
      if (isAlias(p.alias, name)) {
        names.push_back(name);
      }
    }
  }
  std::optional<std::vector<BoundArg>> bound = bindArgs(names, positional, args, call, calleeName);
  if (!bound) {
    return std::nullopt;
  }
  for (size_t i = params.size(); i < names.size(); ++i) {
    if (!(*bound)[i].present) {
      continue;
    }
    for (size_t j = 0; j < params.size(); ++j) {
      if (isAlias(params[j].alias, names[i])) {
        if ((*bound)[j].present) {
          for (auto& [token, value] : args.named) {
            if (tokens().spelling(token) == names[i]) {
              diags_->report(Diag::DuplicateArgument, source(), tokens().range(token),
                             params[j].name);
            }
          }
          return std::nullopt;
        }
        (*bound)[j] = (*bound)[i];
      }
    }
  }
  bound->resize(params.size());
  return bound;
}

std::optional<std::vector<BoundArg>> Checker::bindArgs(const std::vector<std::string_view>& names,
                                                       const std::vector<int>& positionalTargets,
                                                       CallArgs& args, NodeId call,
                                                       std::string_view calleeName,
                                                       const std::vector<bool>* inputsOnly) {
  std::vector<BoundArg> bound(names.size());
  bool ok = true;
  if (args.positional.size() > positionalTargets.size()) {
    NodeId extra = args.positional[positionalTargets.size()].node;
    auto builder = diags_->report(
        Diag::TooManyArguments, source(), rangeOf(extra), calleeName,
        positionalTargets.size() == 1
            ? std::string("1 positional argument")
            : fmt::format("{} positional arguments", positionalTargets.size()),
        args.positional.size());
    // Keyword-only parameters (a layer's implicit size variables, those after
    // a default) are passed by name.
    std::string byName, example;
    for (size_t i = 0; i < names.size(); ++i) {
      if (std::find(positionalTargets.begin(), positionalTargets.end(), static_cast<int>(i)) ==
              positionalTargets.end() &&
          (inputsOnly == nullptr || (*inputsOnly)[i])) {
        byName += fmt::format("{}'{}'", byName.empty() ? "" : ", ", names[i]);
        example += fmt::format("{}{}=...", example.empty() ? "" : ", ", names[i]);
      }
    }
    if (!byName.empty()) builder.note(Note::KeywordOnly, byName, calleeName, example);
    ok = false;
  }
  for (size_t i = 0; i < args.positional.size() && i < positionalTargets.size(); ++i) {
    bound[positionalTargets[i]] = BoundArg{args.positional[i], true};
  }
  for (auto& [nameToken, value] : args.named) {
    std::string_view name = tokens().spelling(nameToken);
    auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end()) {
      const std::vector<std::string_view>& candidates = names;
      auto builder = diags_->report(Diag::UnknownNamedArgument, source(), tokens().range(nameToken),
                                   calleeName, name);
      std::string_view match = closestMatch(name, candidates);
      // A part of the name (`causal=` for `is_causal=`, `affine=` for
      // `elementwise_affine=`): the one parameter that ends or starts with it.
      if (match.empty() && name.size() >= 3) {
        for (std::string_view c : candidates) {
          bool part = (c.size() > name.size() + 1 && c.ends_with(name) &&
                       c[c.size() - name.size() - 1] == '_') ||
                      (c.size() > name.size() + 1 && c.starts_with(name) && c[name.size()] == '_');
          if (part && !match.empty()) {
            match = {};
            break;
          }
          if (part) match = c;
        }
      }
      // Keras/TensorFlow spellings (`kernel=3`, `use_bias=false`) are far from
      // PyTorch's by edit distance: suggest the one this callee takes.
      if (std::optional<std::string_view> torchName = torchArgumentName(name);
          match.empty() && torchName &&
          std::find(candidates.begin(), candidates.end(), *torchName) != candidates.end()) {
        match = *torchName;
      }
      if (!match.empty()) {
        builder.note(Note::DidYouMean, source(), tokens().range(nameToken), match);
      } else if (!candidates.empty() && candidates.size() <= 8) {
        // Nothing close: the names it does take.
        std::string list;
        for (std::string_view c : candidates) {
          list += fmt::format("{}'{}'", list.empty() ? "" : ", ", c);
        }
        builder.note(Note::LayerParameters, calleeName, list);
      }
      ok = false;
      continue;
    }
    auto index = static_cast<size_t>(it - names.begin());
    if (bound[index].present) {
      diags_->report(Diag::DuplicateArgument, source(), tokens().range(nameToken), name);
      ok = false;
      continue;
    }
    bound[index] = BoundArg{value, true};
  }
  if (!ok) {
    return std::nullopt;
  }
  return bound;
}

void Checker::recordCall(NodeId call, CallKind kind, uint32_t callee,
                         const std::vector<BoundArg>& bound) {
  CallInfo info;
  info.kind = kind;
  info.callee = callee;
  for (size_t i = 0; i < bound.size(); ++i) {
    if (bound[i].present) {
      info.args.emplace_back(static_cast<uint32_t>(i), bound[i].info.node);
    }
  }
  // In source order, so that arguments are evaluated as written.
  std::sort(info.args.begin(), info.args.end(), [this](const auto& a, const auto& b) {
    return rangeOf(a.second).begin < rangeOf(b.second).begin;
  });
  module_.callOf[call.index] = static_cast<uint32_t>(module_.calls.size());
  module_.calls.push_back(std::move(info));
}

ExprInfo Checker::checkCall(NodeId call, IdentifierId letName) {
  NodeId callee = tree_.childA(call);
  ExprInfo result;
  // Only a call of a layer or fn named like a builtin sets it, for itself (a
  // call among its arguments, checked first, gets none); the caller's comes back.
  struct Restore {
    NodeId& slot;
    NodeId saved;
    ~Restore() { slot = saved; }
  } restoreHider{shadowingCallable_, std::exchange(shadowingCallable_, NodeId{})};
  // `nn.Sequential(TernaryLinear(784, 256), nn.ReLU(), ...)`, `Sequential(...)`:
  // one error that says what to write. Its arguments are checked silently
  // (each unnamed sub-module, each PyTorch name would be an error of its own).
  if (isSequential(callee)) {
    diags_->report(Diag::NoSequential, source(), rangeOf(callee), textOf(callee));
    CollectingDiagnosticConsumer sink;
    DiagnosticEngine silent(sink);
    DiagnosticEngine* saved = std::exchange(diags_, &silent);
    gatherArgs(call);
    diags_ = saved;
    result = make(module_.types.error(), call);
    setType(call, result.type);
    return result;
  }
  // `alias.NAME(...)`: a layer or fn of an imported file.
  if (tree_.kind(callee) == NodeKind::Member &&
      tree_.kind(tree_.childA(callee)) == NodeKind::Name) {
    NodeId base = tree_.childA(callee);
    std::optional<uint32_t> symbol = lookup(tokens().identifier(tree_.token(base)));
    if (symbol && module_.symbols[*symbol].kind == SymbolKind::ImportAlias) {
      module_.nodeSymbol[base.index] = *symbol;
      std::optional<uint32_t> callable = importedCallable(callee, *symbol);
      if (!callable) {
        gatherArgs(call);
        result = make(module_.types.error(), call);
      } else if (module_.callables[*callable].isFn) {
        result = checkFnCall(static_cast<int>(*callable), call);
        module_.callKind[call.index] = CallKind::FnCall;
      } else {
        result = checkLayerCall(static_cast<int>(*callable), call, letName);
      }
      result.node = call;
      setType(call, result.type);
      return result;
    }
  }
  if (tree_.kind(callee) == NodeKind::Name) {
    IdentifierId name = tokens().identifier(tree_.token(callee));
    std::optional<uint32_t> symbol = lookup(name);
    // Python's `len(x)` is the first dimension's size.
    if (!symbol && interner_.spelling(name) == "len") {
      auto args = tree_.list(tree_.listB(call));
      if (args.size() == 1 && tree_.kind(args[0]) != NodeKind::NamedArg) {
        CallArgs values = gatherArgs(call);
        auto builder = diags_->report(Diag::UndefinedName, source(), rangeOf(callee), "len");
        const TypeStore::Node& t = module_.types.node(values.positional[0].type);
        if (t.kind == TypeKind::Tensor) {
          builder.note(Note::WriteInstead, source(), rangeOf(call),
                       fmt::format("{}.shape[0]", textOf(args[0])));
        } else if (t.kind == TypeKind::List && t.count != UINT32_MAX) {
          builder.note(Note::WriteInstead, source(), rangeOf(call), std::to_string(t.count));
        }
        result = make(module_.types.error(), call);
        setType(call, result.type);
        return result;
      }
    }
    if (symbol) {
      const Symbol& s = module_.symbols[*symbol];
      module_.nodeSymbol[callee.index] = *symbol;
      switch (s.kind) {
        case SymbolKind::Builtin:
          result = checkBuiltinFnCall(static_cast<BuiltinFn>(s.ref), call);
          module_.callKind[call.index] = CallKind::Builtin;
          break;
        case SymbolKind::BuiltinLayer:
          result = checkInstantiation(true, s.ref, call, letName);
          break;
        case SymbolKind::TypeName:
          result = checkCast(static_cast<DType>(s.ref), call);
          module_.callKind[call.index] = CallKind::Cast;
          break;
        case SymbolKind::Layer:
        case SymbolKind::Fn: {
          // A layer or fn named like a builtin (`layer Linear(w, x)`) hides
          // it: an argument error notes so (`Linear(784, 10)` meant torch's).
          if (builtinKindNamed(spelling(name)) != nullptr) {
            shadowingCallable_ = module_.callables[s.ref].node;
          }
          if (s.kind == SymbolKind::Layer) {
            result = checkLayerCall(static_cast<int>(s.ref), call, letName);
          } else {
            result = checkFnCall(static_cast<int>(s.ref), call);
            module_.callKind[call.index] = CallKind::FnCall;
          }
          break;
        }
        default: {
          ExprInfo value = checkName(callee);
          setType(callee, value.type);
          const TypeStore::Node& t = module_.types.node(value.type);
          if (t.kind == TypeKind::Instance || t.kind == TypeKind::BuiltinInstance) {
            result = checkForward(t.ref, call);
            module_.callKind[call.index] = CallKind::Forward;
          } else if (module_.types.isLenient(value.type) ||
                     (s.kind == SymbolKind::Local && s.decl.isValid() &&
                      tree_.kind(s.decl) == NodeKind::Assign)) {
            // Reported where the error came from; a `let f` with no value is
            // UsedBeforeAssigned's (definite assignment), one error; a name
            // an assignment without 'let' declared (reported there: `max = 3`
            // then `max(x, 1)`) is not a second one.
            gatherArgs(call);
            result = make(module_.types.error(), call);
          } else {
            // A variable is never callable: only layers, instances, fns and
            // builtins are.
            auto builder = diags_->report(Diag::NotCallable, source(), rangeOf(callee),
                                          spelling(name), fmt(value.type));
            // `relu: bool` then `relu(x)`: the declaration hides the builtin.
            const char* hidden = s.decl.isValid() ? builtinKindNamed(spelling(name)) : nullptr;
            if (hidden != nullptr) {
              builder.note(Note::HidesBuiltin, source(), tokens().range(tree_.token(s.decl)),
                           spelling(name), hidden);
            }
            CallArgs args = gatherArgs(call);
            // `w(x)` with a weight matrix: PyTorch's modules are called, a
            // weight is multiplied (`[in, out]`: x @ w; `[out, in]`: linear).
            // Not when the name is a builtin's: that one was meant.
            if (hidden == nullptr && t.kind == TypeKind::Tensor && args.positional.size() == 1 &&
                args.named.empty() &&
                module_.types.isTensor(args.positional[0].type)) {
              std::string_view x = textOf(args.positional[0].node);
              std::string fix = fmt::format("{} @ {}", x, spelling(name));
              const TypeStore::Node& xt = module_.types.node(args.positional[0].type);
              if (t.rankKnown && xt.rankKnown && module_.types.shape(value.type).size() == 2 &&
                  !module_.types.shape(args.positional[0].type).empty()) {
                DimId in = module_.types.shape(args.positional[0].type).back();
                std::span<const DimId> w = module_.types.shape(value.type);
                if (dims().equal(w[0], in) != Decision::Yes && dims().equal(w[1], in) == Decision::Yes) {
                  fix = fmt::format("linear({}, {})", x, spelling(name));
                }
              }
              builder.note(Note::WriteInstead, source(), rangeOf(call), fix);
            }
            result = make(module_.types.error(), call);
          }
          break;
        }
      }
      result.node = call;
      setType(call, result.type);
      return result;
    }
  }
  // Any other callee: an instance reached through a member, or an import.
  if (tree_.kind(callee) == NodeKind::Member) {
    memberCall_ = call;  // for the note on a tensor method
  }
  ExprInfo value = checkExpr(callee);
  memberCall_ = NodeId{};
  const TypeStore::Node& t = module_.types.node(value.type);
  if (t.kind == TypeKind::Instance || t.kind == TypeKind::BuiltinInstance) {
    result = checkForward(t.ref, call);
    module_.callKind[call.index] = CallKind::Forward;
  } else if (module_.types.kind(value.type) == TypeKind::Error) {
    bool foreign = foreignCalls_.count(call.index) != 0;
    foreignArgs_ += foreign ? 1 : 0;
    gatherArgs(call);
    foreignArgs_ -= foreign ? 1 : 0;
    result = make(value.type, call);
  } else {
    std::string text(tokens().source().text().substr(rangeOf(callee).begin,
                                                    rangeOf(callee).end - rangeOf(callee).begin));
    auto builder = diags_->report(Diag::NotCallable, source(), rangeOf(callee), text,
                                  fmt(value.type));
    // `x.shape(0)`: the shape is a list, indexed.
    auto args = tree_.list(tree_.listB(call));
    if (tree_.kind(callee) == NodeKind::Member && tokens().spelling(tree_.token(callee)) == "shape" &&
        args.size() == 1) {
      builder.note(Note::WriteInstead, source(), rangeOf(call),
                   fmt::format("{}[{}]", text, textOf(args[0])));
    }
    gatherArgs(call);
    result = make(module_.types.error(), call);
  }
  result.node = call;
  setType(call, result.type);
  return result;
}

ExprInfo Checker::checkCast(DType dtype, NodeId call) {
  CallArgs args = gatherArgs(call);
  std::string name(dtypeName(dtype));
  std::optional<std::vector<BoundArg>> bound = bindArgs({"x"}, {0}, args, call, name);
  if (!bound) {
    return make(module_.types.error(), call);
  }
  if (!(*bound)[0].present) {
    report(Diag::MissingArgument, call, "x", name);
    return make(module_.types.error(), call);
  }
  recordCall(call, CallKind::Cast, static_cast<uint32_t>(dtype), *bound);
  const ExprInfo& x = (*bound)[0].info;
  TypeStore& ts = module_.types;
  if (ts.isLenient(x.type)) {
    return make(x.type, call);
  }
  // `trit(w)` of a float weight: round() has no gradient, and the scale is 1.
  if (dtype == DType::Trit && ts.isTensor(x.type) && !ts.node(x.type).ternary &&
      isFloating(ts.node(x.type).dtype) && ctx_.callable >= 0) {
    NodeId operand = x.node;
    while (operand.isValid() && tree_.kind(operand) == NodeKind::Paren) operand = tree_.childA(operand);
    uint32_t symbol = operand.isValid() && tree_.kind(operand) == NodeKind::Name
                          ? module_.nodeSymbol[operand.index] : UINT32_MAX;
    if (symbol != UINT32_MAX && module_.symbols[symbol].kind == SymbolKind::Param &&
        module_.callables[ctx_.callable].params[module_.symbols[symbol].ref].cls ==
            ParamClass::Weight) {
      report(Diag::TritOfWeight, call, spelling(module_.symbols[symbol].name));
    }
  }
  const TypeStore::Node& t = ts.node(x.type);
  if (t.kind == TypeKind::Scalar && t.dtype != DType::Str && dtype != DType::Str) {
    ExprInfo result = make(ts.scalar(dtype), call);
    result.hyperConst = x.hyperConst;
    // An int64 holds [-2^63, 2^63): truncated floats outside it do not fit.
    if (x.floatValue && isIntegral(dtype) && dtype != DType::Bool && dtype != DType::Trit &&
        !truncatedFits(dtype, *x.floatValue)) {
      report(Diag::LiteralDoesNotFit, x.node, fmt::format("the value {}", formatFloat(*x.floatValue)),
             dtypeName(dtype));
      return make(ts.error(), call);
    }
    // trit(x) of a constant rounds (half to even) to -1, 0 or 1 or is a
    // mistake; NaN and the infinities round to no integer at all.
    if (x.floatValue && dtype == DType::Trit &&
        (!std::isfinite(*x.floatValue) || std::abs(std::nearbyint(*x.floatValue)) > 1.0)) {
      report(Diag::LiteralDoesNotFit, x.node, fmt::format("the value {}", formatFloat(*x.floatValue)),
             dtypeName(dtype));
      return make(ts.error(), call);
    }
    // float16(x) of a constant past its largest value (65504, to which
    // values below 65520 round) would be inf,
    // as `let v: float16 = 70000.0` is an error; so would float32(1e39).
    if (isFloating(dtype) && (x.floatValue || x.intValue) &&
        !fitsFloat(dtype, x.floatValue.value_or(static_cast<double>(x.intValue.value_or(0))))) {
      report(Diag::LiteralDoesNotFit, x.node,
             fmt::format("the value {}", x.intValue ? std::to_string(*x.intValue)
                                                    : formatFloat(*x.floatValue)),
             dtypeName(dtype));
      return make(ts.error(), call);
    }
    if (x.pastInt64 && isIntegral(dtype) && dtype != DType::Bool) {
      reportPastInt64(x.node, dtype);  // `int8(2 ** 64)`
      return make(ts.error(), call);
    }
    if (x.intValue) {
      // A constant that the cast would wrap or clamp is surely a mistake.
      if (isIntegral(dtype) && !fitsInteger(dtype, *x.intValue)) {
        report(Diag::LiteralDoesNotFit, x.node, fmt::format("the value {}", *x.intValue),
               dtypeName(dtype));
        return make(ts.error(), call);
      }
      if (isIntegral(dtype)) {
        result.intValue = x.intValue;
        result.dim = dims().constant(*x.intValue);
      } else {
        result.floatValue = static_cast<double>(*x.intValue);
      }
    } else if (x.floatValue) {
      if (isFloating(dtype)) {
        result.floatValue = x.floatValue;
      }
    } else if (isIntegral(dtype) && x.dim.isValid()) {
      result.dim = x.dim;
    }
    return result;
  }
  if (t.kind == TypeKind::Tensor && dtype != DType::Str) {
    // A known element the cast would wrap (`int8(tensor([300.0]))` is 44) is
    // the mistake `int8(300)` is; floats truncate toward zero first.
    if (isIntegral(dtype) && dtype != DType::Bool && dtype != DType::Trit) {
      for (const std::optional<ExprInfo::Element>& e : {x.lowest, x.highest}) {
        if (!e) continue;
        if (e->integer ? fitsInteger(dtype, *e->integer) : truncatedFits(dtype, e->value)) {
          continue;
        }
        report(Diag::LiteralDoesNotFit, e->node.isValid() ? e->node : x.node,
               fmt::format("the value {}", e->integer ? std::to_string(*e->integer)
                                                      : formatFloat(e->value)),
               dtypeName(dtype));
        return make(ts.error(), call);
      }
    }
    // trit(x) on a tensor rounds and clamps: a ternary tensor with scale 1.
    return make(ts.withDType(x.type, dtype, dtype == DType::Trit), call);
  }
  report(Diag::ArgumentType, x.node, "x", name, "a number or a tensor", fmt(x.type));
  return make(ts.error(), call);
}

ExprInfo Checker::checkBuiltinFnCall(BuiltinFn fn, NodeId call) {
  CallArgs args = gatherArgs(call);
  // Python's `print("x is", x)`: one value per call here.
  if (fn == BuiltinFn::Print && args.positional.size() > 1 && args.named.empty()) {
    std::vector<std::string> calls;
    for (const ExprInfo& arg : args.positional) calls.push_back(fmt::format("print({})", textOf(arg.node)));
    diags_->report(Diag::TooManyArguments, source(), rangeOf(args.positional[1].node), "print",
                   "1 positional argument", args.positional.size())
        .note(Note::WriteInstead, source(), rangeOf(call), fmt::format("{}", fmt::join(calls, "; ")));
    return make(module_.types.error(), call);
  }
  const std::vector<BuiltinParam>& params = builtinFnParams(fn);
  std::vector<int> positional;
  for (size_t i = 0; i < params.size(); ++i) {
    positional.push_back(static_cast<int>(i));
  }
  std::string calleeName(builtinFnName(fn));
  std::optional<std::vector<BoundArg>> bound =
      bindBuiltinArgs(params, positional, args, call, calleeName);
  if (!bound) {
    return make(module_.types.error(), call);
  }
  // Inside a weight's default a creation builtin may leave out its shape
  // (LANGUAGE.md §5): the weight's declared one is used. `full(0.25)` there
  // is the value.
  bool shapeFromWeight = weightDefault_.isValid() &&
                         (tritonc::createsValues(fn) || fn == BuiltinFn::TernaryWeights);
  if (shapeFromWeight && fn == BuiltinFn::Full && (*bound)[0].present && !(*bound)[1].present) {
    (*bound)[1] = (*bound)[0];
    (*bound)[0] = BoundArg{};
  }
  for (size_t i = 0; i < params.size(); ++i) {
    if (!(*bound)[i].present && !params[i].optional && !(i == 0 && shapeFromWeight)) {
      if (i == 0 && tensorInputDefault_.isValid() &&
          (tritonc::createsValues(fn) || fn == BuiltinFn::TernaryWeights)) {
        // `x: Tensor<float32, [?, 784]> = zeros()`: only a weight's shape is known.
        report(Diag::InputDefaultWithoutShape, call, calleeName,
               spelling(tensorInputDefault_));
        return make(module_.types.error(), call);
      }
      auto builder = diags_->report(Diag::MissingArgument, source(), rangeOf(call),
                                    params[i].name, calleeName);
      // `let act = relu()` (torch's `nn.ReLU()`): the function is applied where
      // the module would be, with the arguments given here after the input.
      if (i == 0 && takesTensorFirst(calleeName)) {
        if (auto applied = appliedInstead(tree_.token(tree_.childA(call)), calleeName)) {
          builder.note(Note::FunctionNotModule, calleeName, applied->module, applied->call);
        }
      }
      return make(module_.types.error(), call);
    }
  }
  for (const BoundArg& arg : *bound) {
    if (arg.present && module_.types.kind(arg.info.type) == TypeKind::Error) {
      return make(module_.types.error(), call);
    }
  }
  recordCall(call, CallKind::Builtin, static_cast<uint32_t>(fn), *bound);
  // dropout reads the training flag. batch_norm does with running statistics
  // and no `training=` (and updates them with `training=true`); without
  // running statistics, or with `training=false`, it is a function of its
  // arguments.
  bool impure = fn == BuiltinFn::DropoutFn;
  if (fn == BuiltinFn::BatchNormFn) {
    const BoundArg& training = (*bound)[5];
    bool stats = (*bound)[3].present || (*bound)[4].present;
    bool trainingFalse = training.present && training.info.intValue == std::optional<int64_t>(0) &&
                         module_.types.isScalar(training.info.type) &&
                         module_.types.node(training.info.type).dtype == DType::Bool;
    impure = stats && !trainingFalse;
  }
  if (ctx_.isFn && impure) {
    std::string what =
        fn == BuiltinFn::DropoutFn
            ? fmt::format("call '{}', which depends on whether the model is training (make it "
                          "a 'layer': applied like a fn, a layer follows the model's training "
                          "mode)",
                          calleeName)
        : (*bound)[5].present
            ? fmt::format("call '{}' with running statistics and training, which updates them "
                          "(pass training=false, or leave the statistics out)", calleeName)
            : fmt::format("call '{}' with running statistics, which depends on whether the model "
                          "is training (pass training=false, or leave the statistics out)",
                          calleeName);
    report(Diag::ImpureFn, call, what);
  }
  ExprInfo result = checkBuiltinCall(*this, fn, call, *bound);
  // A scalar computed from constants (max(1, ch / 4)) is itself a constant
  // expression, usable as a sub-module argument.
  if (module_.types.isScalar(result.type)) {
    result.hyperConst = std::all_of(bound->begin(), bound->end(), [](const BoundArg& arg) {
      return !arg.present || arg.info.hyperConst;
    });
    // ... and of integer constants a known value, usable as a size
    // (`let HIDDEN = max(64, 4 * D)`), as Python computes it.
    std::vector<std::optional<int64_t>> values;
    for (const BoundArg& arg : *bound) {
      if (!arg.present) break;
      values.push_back(arg.info.intValue);
    }
    bool trailing = std::any_of(bound->begin() + static_cast<ptrdiff_t>(values.size()),
                                bound->end(), [](const BoundArg& arg) { return arg.present; });
    if (std::optional<int64_t> value = trailing ? std::nullopt : foldIntegerBuiltin(fn, values)) {
      result.intValue = value;
      result.dim = dims().constant(*value);
    }
  }
  return result;
}

// A built-in layer's size given as a list, as torch takes a tuple: a pair
// written out (`kernel_size=[1, 7]`, `[k, k]`) is the height, which `value`
// becomes, and the width, `width`; `LayerNorm([d])` is its one size. Any other
// list is an error (normalizing over several dimensions is not supported),
// reported here. Returns false after reporting.
bool Checker::sizeFromList(BuiltinLayer layer, std::string_view param, std::string_view callee,
                           ExprInfo& value, DimId& width) {
  bool pairs = (layer == BuiltinLayer::Conv2d || layer == BuiltinLayer::TernaryConv2d ||
                layer == BuiltinLayer::MaxPool2d || layer == BuiltinLayer::AvgPool2d ||
                layer == BuiltinLayer::AdaptiveAvgPool2d) &&
               (param == "kernel_size" || param == "k" || param == "stride" ||
                param == "padding" || param == "dilation" || param == "output_size");
  bool single = layer == BuiltinLayer::LayerNorm && param == "normalized_shape";
  const std::vector<DimId>& sizes = value.listDims;
  bool integers = !value.elementTypes.empty() &&
                  std::all_of(value.elementTypes.begin(), value.elementTypes.end(),
                              [&](TypeId t) {
                                const TypeStore::Node& n = module_.types.node(t);
                                return n.kind == TypeKind::Scalar && isIntegral(n.dtype) &&
                                       n.dtype != DType::Bool;
                              });
  // Written out (`[1, 7]`), so that the generated code passes the sizes.
  NodeId literal = value.node;
  while (literal.isValid() && tree_.kind(literal) == NodeKind::Paren) literal = tree_.childA(literal);
  bool written = literal.isValid() && tree_.kind(literal) == NodeKind::List;
  bool fits = written && integers && sizes.size() == value.elementTypes.size() &&
              ((pairs && sizes.size() == 2) || (single && sizes.size() == 1));
  if (!fits) {
    const char* wanted = (pairs || single) && !written
                             ? "an integer, or a list written out in the call, such as [3, 3]"
                         : pairs  ? "an integer, or a list of two integers [height, width]"
                         : single ? "an integer, or a list of one size such as [d] "
                                    "(normalizing over several dimensions is not supported)"
                                  : "an integer";
    report(Diag::ArgumentType, value.node, param, callee, wanted, fmt(value.type));
    return false;
  }
  DimId size = sizes[0];
  width = sizes.size() == 2 && dims().equal(sizes[0], sizes[1]) != Decision::Yes ? sizes[1]
                                                                                : DimId{};
  value.type = int32_;
  value.dim = size;
  value.intValue = dims().constValue(size);
  value.listDims.clear();
  value.elementTypes.clear();
  return true;
}

// The layer's explicit parameters in declaration order when `call` passes
// more positional arguments than the layer has weights and inputs it does not
// name (`Heads(2, w, x)`, `Heads(2, w, x=x)`), each a tensor (or list) where a
// weight or input is declared and a scalar where a hyperparameter is, and a
// tensor among them unless the call is an application already (`applies`: a
// weight or input named); else empty (weights and inputs positional,
// hyperparameters by name). Checks the positional arguments.
std::vector<int> Checker::declarationOrderArgs(const CallableInfo& info, NodeId call,
                                               bool applies) {
  std::vector<NodeId> positional;
  std::unordered_set<std::string_view> named;
  for (NodeId arg : tree_.list(tree_.listB(call))) {
    if (tree_.kind(arg) != NodeKind::NamedArg) {
      positional.push_back(arg);
    } else {
      named.insert(tokens().spelling(tree_.token(arg)));
    }
  }
  std::vector<int> explicitParams;
  size_t tensors = 0;  // weights and inputs not given by name
  for (size_t i = 0; i < info.params.size(); ++i) {
    const ParamInfo& p = info.params[i];
    if (p.cls != ParamClass::Hyper && !named.count(spelling(p.name))) ++tensors;
    if (p.cls != ParamClass::Hyper || !p.implicit) explicitParams.push_back(static_cast<int>(i));
  }
  if (positional.size() <= tensors || positional.size() > explicitParams.size()) return {};
  bool anyTensor = false;
  for (size_t i = 0; i < positional.size(); ++i) {
    NodeId n = positional[i];
    ExprInfo value;
    if (auto it = preChecked_.find(n.index); it != preChecked_.end()) {
      value = it->second;
    } else {
      value = checkExpr(n);
      preChecked_[n.index] = value;
    }
    bool tensor = module_.types.isTensor(value.type) ||
                  module_.types.kind(value.type) == TypeKind::List;
    bool hyper = info.params[static_cast<size_t>(explicitParams[i])].cls == ParamClass::Hyper;
    if (module_.types.isLenient(value.type)) continue;  // an error already reported
    if (tensor == hyper) return {};
    anyTensor = anyTensor || tensor;
  }
  if (!anyTensor && !applies) return {};
  explicitParams.resize(positional.size());
  return explicitParams;
}

ExprInfo Checker::checkLayerCall(int layer, NodeId call, IdentifierId letName) {
  // An application passes tensors (weights and inputs); an instantiation
  // passes hyperparameters only.
  bool apply = false;
  const CallableInfo& info = module_.callables[layer];
  for (NodeId arg : tree_.list(tree_.listB(call))) {
    if (tree_.kind(arg) == NodeKind::NamedArg) {
      std::string_view name = tokens().spelling(tree_.token(arg));
      for (const ParamInfo& p : info.params) {
        if (spelling(p.name) == name && p.cls != ParamClass::Hyper) {
          apply = true;
        }
      }
    }
  }
  if (!apply) {
    // Look at the positional arguments' types without reporting twice: the
    // arguments are checked once, by whichever path takes the call.
    for (NodeId arg : tree_.list(tree_.listB(call))) {
      if (tree_.kind(arg) != NodeKind::NamedArg) {
        NodeId n = arg;
        // A quick syntactic guess is not enough (a name may be a tensor), so
        // check the expression; the result is cached in nodeType.
        ExprInfo value = checkExpr(n);
        preChecked_[n.index] = value;
        // A list literal given for a weight (`F([[1, 0], [-1, 1]], x)`) is a
        // tensor constant, as where a `let` declares the type (hyperparameters
        // are scalars: a list is a weight's or an input's).
        bool takesTensors = std::any_of(info.params.begin(), info.params.end(),
                                        [](const ParamInfo& p) { return p.cls != ParamClass::Hyper; });
        if (module_.types.isTensor(value.type) ||
            (module_.types.kind(value.type) == TypeKind::List && takesTensors)) {
          apply = true;
        }
        break;  // the first positional argument decides
      }
    }
  }
  // More positional arguments than weights and inputs, each of the kind of the
  // header's parameter at its place (`Heads(2, w, x)` of `Heads(n_heads: int,
  // w, x)`, `Scale(w, x, 3)`): the header's parameters in declaration order, as
  // Python binds them.
  std::vector<int> declared = declarationOrderArgs(info, call, apply);
  if (!apply && declared.empty()) {
    return checkInstantiation(false, static_cast<uint32_t>(layer), call, letName);
  }
  module_.callKind[call.index] = CallKind::Apply;
  applications_.emplace_back(call, layer);
  noteAlwaysCall(layer, call);
  if (!apply) declarationOrderCalls_.emplace(call.index, letName);
  std::vector<int> positional = std::move(declared);
  if (positional.empty()) {
    for (size_t i = 0; i < info.params.size(); ++i) {
      if (info.params[i].cls != ParamClass::Hyper) {
        positional.push_back(static_cast<int>(i));
      }
    }
  }
  return applyCallable(layer, call, positional, nullptr, callableName(layer));
}

void Checker::noteAlwaysCall(int callee, NodeId call) {
  if (ctx_.callable >= 0 && !ctx_.isMain && ctx_.loopDepth == 0 && ctx_.ifDepth == 0 &&
      ctx_.guardDepth == 0 && ctx_.shortCircuitDepth == 0 && !ctx_.returnsSeen) {
    alwaysCalls_.push_back(AlwaysCall{ctx_.callable, callee, call});
  }
}

ExprInfo Checker::checkFnCall(int fn, NodeId call) {
  noteAlwaysCall(fn, call);
  const CallableInfo& info = module_.callables[fn];
  std::vector<int> positional;
  for (size_t i = 0; i < info.params.size(); ++i) {
    positional.push_back(static_cast<int>(i));
  }
  return applyCallable(fn, call, positional, nullptr, callableName(fn));
}

bool Checker::unifyShape(TypeId declared, const ExprInfo& actual,
                         std::unordered_map<uint32_t, DimId>& bindings, NodeId where,
                         std::string_view what) {
  TypeStore& ts = module_.types;
  if (!ts.isTensor(declared) || !ts.isTensor(actual.type)) {
    return true;
  }
  const TypeStore::Node& d = ts.node(declared);
  const TypeStore::Node& a = ts.node(actual.type);
  if (!d.rankKnown || !a.rankKnown || ts.shape(declared).size() != ts.shape(actual.type).size()) {
    return true;  // checkAssignable reports rank mismatches
  }
  std::span<const DimId> ds = ts.shape(declared);
  std::span<const DimId> as = ts.shape(actual.type);
  for (size_t i = 0; i < ds.size(); ++i) {
    const DimStore::Node& n = dims().node(ds[i]);
    if (n.kind != DimKind::Var || dims().isUnknown(as[i])) {
      continue;
    }
    auto it = bindings.find(n.var.index);
    if (it == bindings.end()) {
      bindings.emplace(n.var.index, as[i]);
      if (where.isValid()) bindingSites_[n.var.index] = where;
      continue;
    }
    if (dims().equal(it->second, as[i]) == Decision::No) {
      std::string bound = dims().format(it->second, interner_);
      // Bound to the caller's size of the same name (`d` of the callee is
      // the caller's `d`): "d", not the tautological "d = d".
      bool sameName = bound == spelling(n.var);
      auto builder = diags_->report(Diag::ShapeMismatch, source(), rangeOf(where), what,
                                    fmtShape(ds), fmtShape(as));
      builder.note(Note::DimensionDetail, i,
                   sameName ? bound : fmt::format("{} = {}", spelling(n.var), bound),
                   dims().format(as[i], interner_));
      // Which argument set the size: often the one to change (a weight
      // written [out, in] where [in, out] was declared).
      if (auto site = bindingSites_.find(n.var.index);
          site != bindingSites_.end() && !(site->second == where)) {
        if (sameName) {
          builder.note(Note::SizeTakenHere, source(), rangeOf(site->second), spelling(n.var));
        } else {
          builder.note(Note::SizeBoundHere, source(), rangeOf(site->second), spelling(n.var),
                       bound);
        }
      }
      return false;
    }
  }
  return true;
}

TypeId Checker::substituteType(TypeId type, const std::unordered_map<uint32_t, DimId>& bindings) {
  TypeStore& ts = module_.types;
  const TypeStore::Node& t = ts.node(type);
  if (t.kind != TypeKind::Tensor || !t.rankKnown || bindings.empty()) {
    return type;
  }
  std::vector<DimId> shape;
  for (DimId d : ts.shape(type)) {
    shape.push_back(dims().substitute(d, bindings));
  }
  return ts.tensor(t.dtype, shape, t.ternary);
}

ExprInfo Checker::applyCallable(int callable, NodeId call, std::vector<int> positionalParams,
                                const std::unordered_map<uint32_t, DimId>* hyperBindings,
                                std::string_view calleeName) {
  // Read before the arguments are checked: a nested forward call sets it too.
  uint32_t forwardInstance = forwardInstance_;
  HiddenBuiltinNote hidden(*this);
  CallArgs args = gatherArgs(call);
  hidden.start();
  const CallableInfo& info = module_.callables[callable];
  std::vector<std::string_view> names;
  for (const ParamInfo& p : info.params) {
    names.push_back(spelling(p.name));
  }
  // `m(x)` on a layer without inputs: its tensor parameters all have full
  // shapes (`x: Tensor<float32, [B, 784]>`), so they are weights.
  if (hyperBindings != nullptr && positionalParams.empty() && !args.positional.empty() &&
      !info.isFn) {
    const ParamInfo* weight = nullptr;
    for (const ParamInfo& p : info.params) {
      if (p.cls == ParamClass::Weight && p.node.isValid()) weight = &p;
    }
    if (weight != nullptr) {
      diags_->report(Diag::TooManyArguments, source(), rangeOf(args.positional.front().node),
                     calleeName, "no inputs", args.positional.size())
          .note(Note::WeightNotInput, source(), rangeOf(weight->node), spelling(weight->name),
                calleeName);
      return make(module_.types.error(), call);
    }
  }
  std::vector<bool> inputs;
  if (hyperBindings != nullptr) {
    for (const ParamInfo& p : info.params) inputs.push_back(p.cls == ParamClass::Input);
  }
  std::optional<std::vector<BoundArg>> bound =
      bindArgs(names, positionalParams, args, call, calleeName,
               hyperBindings != nullptr ? &inputs : nullptr);
  if (!bound) {
    return make(module_.types.error(), call);
  }
  if (hyperBindings == nullptr) {
    recordCall(call, info.isFn ? CallKind::FnCall : CallKind::Apply,
               static_cast<uint32_t>(callable), *bound);
  } else {
    recordCall(call, CallKind::Forward, forwardInstance, *bound);
  }
  for (const BoundArg& arg : *bound) {
    if (arg.present && module_.types.kind(arg.info.type) == TypeKind::Error) {
      return make(module_.types.error(), call);
    }
  }
  // An argument left out, or given in another order (`TernaryFC(x)`,
  // `TernaryFC(x, w1, b1)` for `(weights, bias, x)`): reported as missing
  // before the others are checked against the wrong parameters, and with
  // the order the positional arguments take.
  auto isMissing = [&](int i) {
    const ParamInfo& p = info.params[static_cast<size_t>(i)];
    return !(*bound)[static_cast<size_t>(i)].present && !p.hasDefault &&
           p.cls != ParamClass::Hyper && (hyperBindings == nullptr || p.cls == ParamClass::Input);
  };
  // Whether argument `a` has the kind of parameter type `t`: a tensor of
  // the same ternary-ness and rank, or a scalar.
  auto sameKind = [&](const ExprInfo& a, TypeId t) {
    const TypeStore& ts = module_.types;
    if (ts.isLenient(a.type) || ts.isLenient(t)) return true;
    if (ts.isTensor(a.type) != ts.isTensor(t)) return false;
    if (!ts.isTensor(t)) return true;
    const TypeStore::Node& x = ts.node(a.type);
    const TypeStore::Node& y = ts.node(t);
    // A ternary value is accepted as a float one, and a literal of -1/0/1 as
    // a ternary one.
    return (x.ternary || a.tritValued || !y.ternary) &&
           (!x.rankKnown || !y.rankKnown || ts.shape(a.type).size() == ts.shape(t).size());
  };
  bool permuted = false;
  for (int i : positionalParams) {
    const BoundArg& arg = (*bound)[static_cast<size_t>(i)];
    if (!arg.present || sameKind(arg.info, info.params[static_cast<size_t>(i)].type)) continue;
    for (int j : positionalParams) {
      if (j != i && sameKind(arg.info, info.params[static_cast<size_t>(j)].type)) permuted = true;
    }
  }
  bool missing = std::any_of(positionalParams.begin(), positionalParams.end(), isMissing);
  std::string order;
  if (positionalParams.size() >= 2 && !args.positional.empty() && (permuted || missing)) {
    for (int i : positionalParams) {
      order += fmt::format("{}'{}'", order.empty() ? "" : ", ", names[static_cast<size_t>(i)]);
    }
  }
  // Positional arguments only, each where its position put it: the ones a
  // reordering (`TernaryFC(x, w1, b1)` for `(w, b, x)`) or a gap (`MLP(w1,
  // b1, w2, x)` without `b2`) would fit.
  size_t given = args.positional.size();
  bool plain = given >= 1 && given <= std::min<size_t>(positionalParams.size(), 8) &&
               (permuted || missing);
  for (size_t k = 0; plain && k < given; ++k) {
    const BoundArg& arg = (*bound)[static_cast<size_t>(positionalParams[k])];
    plain = arg.present && arg.info.node == args.positional[k].node;
  }
  auto fits = [&](size_t k, size_t param) {
    return sameKind(args.positional[k],
                    info.params[static_cast<size_t>(positionalParams[param])].type);
  };
  if (plain && permuted && !missing && given == positionalParams.size()) {
    // The assignment of arguments to parameters that fits every one and
    // moves the fewest.
    std::vector<size_t> current(given), best;
    std::vector<bool> used(given, false);
    size_t bestMoved = given + 1;
    auto search = [&](auto& self, size_t k, size_t moved) -> void {
      if (moved >= bestMoved) return;
      if (k == given) {
        best = current;
        bestMoved = moved;
        return;
      }
      for (size_t param = 0; param < given; ++param) {
        if (used[param] || !fits(k, param)) continue;
        used[param] = true;
        current[k] = param;
        self(self, k + 1, moved + (param != k ? 1 : 0));
        used[param] = false;
      }
    };
    search(search, 0, 0);
    if (!best.empty() && bestMoved > 0) {
      size_t first = 0;
      while (best[first] == first) ++first;
      std::vector<std::string> texts(given);
      for (size_t k = 0; k < given; ++k) texts[best[k]] = std::string(textOf(args.positional[k].node));
      std::string fixed;
      for (const std::string& t : texts) fixed += (fixed.empty() ? "" : ", ") + t;
      for (const auto& [token, named] : args.named) {
        fixed += fmt::format(", {}={}", tokens().spelling(token), textOf(named.node));
      }
      fixed = fmt::format("{}({})", textOf(tree_.childA(call)), fixed);
      const ParamInfo& wanted = info.params[static_cast<size_t>(positionalParams[best[first]])];
      const ParamInfo& taken = info.params[static_cast<size_t>(positionalParams[first])];
      auto builder = diags_->report(Diag::ArgumentOrder, source(),
                                    rangeOf(args.positional[first].node), calleeName,
                                    textOf(args.positional[first].node), spelling(wanted.name),
                                    spelling(taken.name));
      builder.note(Note::PositionalOrder, calleeName, order);
      if (fixed.size() <= 100 && fixed.find('\n') == std::string::npos) {
        builder.note(Note::WriteInstead, fixed);
      }
      return make(module_.types.error(), call);
    }
  }
  // One argument left out: the parameter whose gap lets every argument fit
  // its own (not the last, which an argument filled in its place).
  // Arguments that are plain names equal to parameter names (`wq, wk, wv, a`
  // for `(wq, wk, wv, wo, x)`) place the gap first: among several weights of
  // one shape, the one whose name is absent is the missing one.
  std::optional<size_t> gap;
  bool gapByName = false;
  if (plain && missing && given + 1 == positionalParams.size()) {
    auto paramIndexOf = [&](size_t k) -> std::optional<size_t> {
      if (tree_.kind(args.positional[k].node) != NodeKind::Name) return std::nullopt;
      std::string_view text = textOf(args.positional[k].node);
      for (size_t q = 0; q < positionalParams.size(); ++q) {
        if (names[static_cast<size_t>(positionalParams[q])] == text) return q;
      }
      return std::nullopt;
    };
    for (int byName = 1; byName >= 0 && !gap; --byName) {
      for (size_t skip = 0; skip < positionalParams.size() && !gap; ++skip) {
        const ParamInfo& p = info.params[static_cast<size_t>(positionalParams[skip])];
        bool all = !p.hasDefault && p.cls != ParamClass::Hyper;
        size_t named = 0;
        for (size_t k = 0; k < given && all; ++k) {
          size_t param = k < skip ? k : k + 1;
          all = fits(k, param);
          if (byName == 1 && all) {
            std::optional<size_t> q = paramIndexOf(k);
            if (q) {
              all = *q == param;
              ++named;
            }
          }
        }
        if (all && (byName == 0 || named > 0)) {
          gap = skip;
          gapByName = byName == 1;
        }
      }
    }
  }
  for (int i : positionalParams) {
    if (isMissing(i)) {
      const ParamInfo& p = gap ? info.params[static_cast<size_t>(positionalParams[*gap])]
                               : info.params[static_cast<size_t>(i)];
      auto builder = diags_->report(Diag::MissingArgument, source(), rangeOf(call),
                                    spelling(p.name), calleeName);
      if (!order.empty()) builder.note(Note::PositionalOrder, calleeName, order);
      if (gapByName) {
        // The arguments after the gap whose names are not parameters': the
        // position took them for the next parameter (`a` as `x`).
        for (size_t k = *gap; k < given; ++k) {
          std::string_view param = names[static_cast<size_t>(positionalParams[k + 1])];
          std::string_view text = textOf(args.positional[k].node);
          if (tree_.kind(args.positional[k].node) == NodeKind::Name && text != param) {
            builder.note(Note::TakenAs, text, param);
          }
        }
      }
      return make(module_.types.error(), call);
    }
  }
  ContextGuard popOrder;
  if (!order.empty()) {
    diags_->pushAddedContext(source(), [&] {
      return std::vector<DiagnosticNote>{
          DiagnosticNote{nullptr, {}, fmt::format(fmt::runtime(noteFormat(Note::PositionalOrder)),
                                                  calleeName, order)}};
    });
    popOrder.arm(*diags_);
  }
  // `b3(b2(x))` whose sizes do not fit: the mismatch names the parameters
  // (`in_ch = 32`), which the creation decided: it is shown too.
  bool createdHere = hyperBindings != nullptr && forwardInstance < module_.instances.size() &&
                     !module_.instances[forwardInstance].builtin &&
                     module_.instances[forwardInstance].site.isValid() &&
                     module_.instances[forwardInstance].name.isValid();
  ContextGuard popCreation;
  if (createdHere) {
    const InstanceInfo& instance = module_.instances[forwardInstance];
    NodeId site = instance.site;
    std::string instanceName(spelling(instance.name));
    diags_->pushAddedContext(source(), [this, site, instanceName] {
      return std::vector<DiagnosticNote>{
          makeNote(Note::DefinedHere, source(), rangeOf(site), instanceName)};
    });
    popCreation.arm(*diags_);
  }
  std::unordered_map<uint32_t, DimId> bindings;
  if (hyperBindings != nullptr) {
    bindings = *hyperBindings;
  }
  // Hyperparameters given as integers bind their size variables.
  bindingSites_.clear();  // (the arguments' own calls, checked above, used it too)
  for (size_t i = 0; i < info.params.size(); ++i) {
    const ParamInfo& p = info.params[i];
    if ((*bound)[i].present && p.cls == ParamClass::Hyper && (*bound)[i].info.dim.isValid()) {
      bindings[p.name.index] = (*bound)[i].info.dim;
      if ((*bound)[i].info.node.isValid()) bindingSites_[p.name.index] = (*bound)[i].info.node;
    }
  }
  bool ok = true;
  for (size_t i = 0; i < info.params.size() && ok; ++i) {
    if ((*bound)[i].present) {
      ok = unifyShape(info.params[i].type, (*bound)[i].info, bindings, (*bound)[i].info.node,
                      calleeName);
    }
  }
  if (!ok) {
    return make(module_.types.error(), call);
  }
  for (size_t i = 0; i < info.params.size(); ++i) {
    const ParamInfo& p = info.params[i];
    if ((*bound)[i].present) {
      if (!checkAssignable((*bound)[i].info, substituteType(p.type, bindings),
                           (*bound)[i].info.node)) {
        return make(module_.types.error(), call);
      }
      continue;
    }
    bool hasDefault = p.hasDefault;
    bool inferred = p.cls == ParamClass::Hyper && bindings.count(p.name.index) != 0;
    bool fromInstance = hyperBindings != nullptr && p.cls != ParamClass::Input;
    if (!hasDefault && !inferred && !fromInstance) {
      auto builder = diags_->report(Diag::MissingArgument, source(), rangeOf(call),
                                    spelling(p.name), calleeName);
      // A size variable of a weight or input (`o` of `w: [o, i]`, declared
      // `o: int` or not) that an argument gives as `?` (a slice, a run-time
      // reshape).
      auto sizesATensor = [&] {
        for (const ParamInfo& q : info.params) {
          if (q.cls == ParamClass::Hyper || !module_.types.isTensor(q.type) ||
              !module_.types.node(q.type).rankKnown) {
            continue;
          }
          std::vector<IdentifierId> vars;
          for (DimId d : module_.types.shape(q.type)) dims().collectVars(d, vars);
          if (std::find(vars.begin(), vars.end(), p.name) != vars.end()) return true;
        }
        return false;
      };
      if (p.cls == ParamClass::Hyper && (p.implicit || sizesATensor())) {
        builder.note(Note::HyperNotInferred, spelling(p.name));
      }
      return make(module_.types.error(), call);
    }
  }
  TypeId result = info.returnType;
  if (module_.types.kind(result) == TypeKind::Void && !info.declaredReturn &&
      callable >= static_cast<int>(module_.firstLocal) &&
      bodyState_[callable] != BodyState::Done) {
    // Inferred from a body not checked to the end yet: only a recursive call
    // gets here (checkInferredCalleesFirst checks every other callee first).
    // Before any return typed it, its type is unknown, and the arithmetic on it
    // would be emitted untyped (`halve(n - 1) / 2` as true division): Scala's rule,
    // a recursive function states its result type (audit 59).
    if (recursiveUntyped_.insert(static_cast<uint32_t>(callable)).second) {
      report(Diag::RecursiveCallBeforeReturnType, call, callableName(callable));
    }
    result = module_.types.error();
  }
  bindRemainingToUnknown(result, bindings);
  return make(substituteType(result, bindings), call);
}

void Checker::bindRemainingToUnknown(TypeId type, std::unordered_map<uint32_t, DimId>& bindings) {
  if (!module_.types.isTensor(type) || !module_.types.node(type).rankKnown) {
    return;
  }
  std::vector<IdentifierId> vars;
  for (DimId d : module_.types.shape(type)) {
    dims().collectVars(d, vars);
  }
  for (IdentifierId var : vars) {
    bindings.emplace(var.index, dims().unknown());
  }
}

void Checker::noteSizeOfUnknownDimension(DiagnosticBuilder& builder, NodeId call,
                                         std::string_view layer, NodeId arg,
                                         size_t position) {
  // `x.shape[k]` (k a constant, maybe negative) of an `x` whose dimension k is '?'.
  if (tree_.kind(arg) != NodeKind::Index) return;
  NodeId member = tree_.childA(arg);
  auto indices = tree_.list(tree_.listB(arg));
  if (tree_.kind(member) != NodeKind::Member || tokens().spelling(tree_.token(member)) != "shape" ||
      indices.size() != 1) {
    return;
  }
  NodeId base = tree_.childA(member);
  std::optional<int64_t> index = constantValue(indices[0]);
  if (!index) return;
  int64_t k = *index;
  TypeId type = module_.nodeType[base.index];
  if (!type.isValid() || !module_.types.isTensor(type) || !module_.types.node(type).rankKnown) {
    return;
  }
  std::span<const DimId> shape = module_.types.shape(type);
  int64_t rank = static_cast<int64_t>(shape.size());
  if (k < 0) k += rank;
  if (k < 0 || k >= rank || !dims().isUnknown(shape[static_cast<size_t>(k)])) return;
  // The hyperparameter's name: the argument's (`in_features=x.shape[1]`), or
  // the parameter it is given to, else `n`.
  std::string hyper = "n";
  NodeId named;
  for (NodeId a : tree_.list(tree_.listB(call))) {
    if (tree_.kind(a) == NodeKind::NamedArg && tree_.childA(a) == arg) named = a;
  }
  if (named.isValid()) {
    hyper = std::string(tokens().spelling(tree_.token(named)));
  } else if (std::optional<BuiltinLayer> builtin = findBuiltinLayer(layer)) {
    const std::vector<BuiltinParam>& params = builtinLayerParams(*builtin);
    if (position < params.size()) hyper = std::string(params[position].name);
  }
  for (const ParamInfo& p : module_.callables[ctx_.callable].params) {
    if (spelling(p.name) == hyper) return;  // (another mistake)
  }
  std::string typeText = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    typeText += i ? ", " : "";
    typeText += i == static_cast<size_t>(k) ? hyper : dims().format(shape[i], interner_);
  }
  typeText += "]";
  std::string_view text = tokens().source().text();
  SourceRange whole = rangeOf(call), part = rangeOf(arg);
  std::string fixed = std::string(text.substr(whole.begin, part.begin - whole.begin)) + hyper +
                      std::string(text.substr(part.end, whole.end - part.end));
  if (fixed.size() > 60 || fixed.find('\n') != std::string::npos || textOf(base).size() > 30) {
    return;
  }
  builder.note(Note::SizeOfUnknownDimension, source(), part, k, textOf(base), hyper, typeText,
               fixed);
}

void Checker::noteInstantiationRules(NodeId call, std::string_view name, IdentifierId letName,
                                     const std::vector<ExprInfo>& args) {
  if (ctx_.callable < 0 && !ctx_.isMain) {
    // Named by the `let` that would hold it: `let FC = Linear(4, 4)`.
    report(Diag::InstantiationAtTopLevel, call,
           letName.isValid() ? fmt::format("'{}' (a '{}')", spelling(letName), name)
                             : fmt::format("'{}'", name));
  } else if (!letName.isValid() && listInstances_ != nullptr) {
    // `[TernaryLinear(64, 64), TernaryLinear(64, 64)]`, nn.ModuleList: one
    // error for the list, which then holds nothing to call.
    if ((*listInstances_)++ == 0) {
      diags_->report(Diag::InstantiationNotNamed, source(), rangeOf(call), name)
          .note(Note::NoModuleList, name);
    }
  } else if (!letName.isValid()) {
    report(Diag::InstantiationNotNamed, call, name);
  } else if (ctx_.isFn) {
    // One per fn: a layer declared `fn` by mistake creates all its
    // sub-modules in it, and the first error says what to change.
    if (!ctx_.instantiationInFnReported) {
      ctx_.instantiationInFnReported = true;
      auto builder = diags_->report(Diag::InstantiationInFn, source(), rangeOf(call),
                                    spelling(letName));
      if (ctx_.callable >= 0) {
        builder.note(Note::DeclareAsLayer, callableName(ctx_.callable));
      }
    }
  } else if (ctx_.loopDepth > 0) {
    diags_->report(Diag::InstantiationInLoop, source(), rangeOf(call), spelling(letName))
        .note(Note::MoveBeforeLoop, spelling(letName))
        .note(Note::OnePerIteration, spelling(letName));
  } else if (ctx_.callable >= 0 && ctx_.dynamicIfDepth > 0) {
    if (!conditionsReported_.insert(ctx_.dynamicIfCondition.index).second) return;
    // Point at what the condition tests that is not a hyperparameter: an
    // input or weight (`x.shape[0] > 1`) or a size of one, else a local or
    // loop variable. A misnamed hyperparameter reported before is not
    // reported again.
    NodeId culprit;
    NodeId local;
    bool misnamed = false;
    tree_.forEachNode(ctx_.dynamicIfCondition, [&](NodeId n) {
      if (tree_.kind(n) != NodeKind::Name || module_.nodeSymbol[n.index] == UINT32_MAX) return;
      const Symbol& s = module_.symbols[module_.nodeSymbol[n.index]];
      misnamed = misnamed || misnamedHypers_.count(
                                 (uint64_t{static_cast<uint32_t>(ctx_.callable)} << 32) |
                                 s.name.index) > 0;
      bool input = (s.kind == SymbolKind::Param &&
                    module_.callables[ctx_.callable].params[s.ref].cls != ParamClass::Hyper) ||
                   s.kind == SymbolKind::ShapeVar;
      bool variable = s.kind == SymbolKind::Local || s.kind == SymbolKind::LoopVar;
      auto earlier = [&](NodeId other) {
        return !other.isValid() || rangeOf(n).begin < rangeOf(other).begin;
      };
      if (input && earlier(culprit)) culprit = n;
      if (variable && earlier(local)) local = n;
    });
    if (misnamed) return;
    if (!culprit.isValid()) culprit = local;
    auto builder = diags_->report(Diag::InstanceConditionNotConstant, source(), rangeOf(call));
    if (culprit.isValid()) {
      builder.note(Note::NotConstantHere, source(), rangeOf(culprit),
                   tokens().spelling(tree_.token(culprit)));
    }
  } else if (ctx_.callable >= 0) {
    for (const ExprInfo& arg : args) {
      if (!arg.hyperConst && !module_.types.isLenient(arg.type)) {
        NodeId n = arg.node;
        // A hyperparameter renamed in the header but not in the body (`in_c:
        // int` and `TernaryConv2d(in_ch, ...)`, where in_ch is still a size
        // of the input): "did you mean" the unused one, once per name.
        std::string_view like;
        if (tree_.kind(n) == NodeKind::Name) {
          IdentifierId used = tokens().identifier(tree_.token(n));
          uint64_t key = (uint64_t{static_cast<uint32_t>(ctx_.callable)} << 32) | used.index;
          if (misnamedHypers_.count(key)) break;
          like = unusedHyperLike(used);
          if (!like.empty()) misnamedHypers_.insert(key);
        }
        auto builder = diags_->report(Diag::InstanceArgNotConstant, source(), rangeOf(arg.node));
        if (tree_.kind(n) == NodeKind::Name) {
          builder.note(Note::NotConstantHere, source(), rangeOf(n), tokens().spelling(tree_.token(n)));
        }
        if (!like.empty()) builder.note(Note::DidYouMean, source(), rangeOf(n), like);
        // `LayerNorm(x.shape[-1])` of a `[?, 16, 64]` x: the size is 64 by x's declared
        // type, a constant to write; of a `[?, 16, d]` x, `d`: a hyperparameter to write,
        // or one to declare. The same for a local that holds such a size (`let k =
        // x.shape[1]`, then `BatchNorm2d(k)`).
        if (like.empty() && arg.dim.isValid()) {
          std::string value;
          bool declare = false;
          if (std::optional<int64_t> size = dims().constValue(arg.dim)) {
            value = std::to_string(*size);
          } else if (const DimStore::Node& d = dims().node(arg.dim); d.kind == DimKind::Var) {
            value = std::string(spelling(d.var));
            declare = true;
            for (const ParamInfo& p : module_.callables[ctx_.callable].params) {
              if (p.cls == ParamClass::Hyper && p.name == d.var) declare = false;
            }
          }
          // (`LayerNorm(d)` itself, of an input's size variable d: the call as written,
          // once d is declared.)
          bool sameName = tree_.kind(n) == NodeKind::Name &&
                          tokens().spelling(tree_.token(n)) == value;
          SourceRange whole = rangeOf(call), part = rangeOf(n);
          std::string_view text = tokens().source().text();
          std::string fixed = std::string(text.substr(whole.begin, part.begin - whole.begin)) +
                              value + std::string(text.substr(part.end, whole.end - part.end));
          bool shown = sameName || (fixed.size() <= 60 && fixed.find('\n') == std::string::npos);
          if (!value.empty() && shown && (declare || !sameName)) {
            if (declare) {
              builder.note(Note::DeclareSizeHyperparameter, source(), part, value, fixed);
            } else {
              builder.note(Note::WriteInstead, source(), part, fixed);
            }
          } else if (value.empty()) {
            noteSizeOfUnknownDimension(builder, call, name, n,
                                       static_cast<size_t>(&arg - args.data()));
          }
        }
        break;
      }
    }
  }
}

void Checker::HiddenBuiltinNote::start() {
  if (!hider_.isValid() || pushed_.armed()) return;
  // Errors only: a warning on a call that type-checks is not about the builtin.
  checker_.diags_->pushAddedContext(
      checker_.source(),
      [this] {
        const TokenizedBuffer& tokens = checker_.tokens();
        TokenId token = checker_.tree_.token(hider_);
        std::string_view name = tokens.spelling(token);
        return std::vector<DiagnosticNote>{
            makeNote(Note::HidesBuiltin, checker_.source(), tokens.range(token), name,
                     builtinKindNamed(name))};
      },
      DiagnosticEngine::ContextScope::ErrorsOnly);
  pushed_.arm(*checker_.diags_);
}

bool Checker::isSequential(NodeId callee) const {
  NodeId root = callee;
  while (tree_.kind(root) == NodeKind::Member) root = tree_.childA(root);
  if (tree_.kind(root) != NodeKind::Name || tokens().spelling(tree_.token(callee)) != "Sequential" ||
      lookup(tokens().identifier(tree_.token(root)))) {
    return false;  // a layer of the file (or an import) named so is one
  }
  // `Sequential`, `nn.Sequential`, `torch.nn.Sequential`, `keras.Sequential`.
  return root == callee || foreignLibrary(tokens().spelling(tree_.token(root))) != nullptr;
}

std::string_view Checker::unusedHyperLike(IdentifierId name) const {
  if (ctx_.callable < static_cast<int>(module_.firstLocal)) return {};
  const CallableInfo& info = module_.callables[static_cast<size_t>(ctx_.callable)];
  SourceRange range = rangeOf(info.node);
  std::vector<std::string_view> candidates;
  for (const ParamInfo& p : info.params) {
    if (p.cls != ParamClass::Hyper || p.implicit || p.name == name) continue;
    // Used: named anywhere in the layer, header types included.
    bool used = false;
    for (uint32_t i = 0; i < tree_.size() && !used; ++i) {
      NodeId node{i};
      if (tree_.kind(node) != NodeKind::Name ||
          tokens().identifier(tree_.token(node)) != p.name) {
        continue;
      }
      SourceRange at = rangeOf(node);
      used = at.begin >= range.begin && at.end <= range.end;
    }
    if (!used) candidates.push_back(spelling(p.name));
  }
  return closestMatch(spelling(name), candidates);
}

IdentifierId Checker::passedParameter(NodeId node, bool fnInputs) const {
  while (node.isValid() && tree_.kind(node) == NodeKind::Paren) node = tree_.childA(node);
  uint32_t symbol = node.isValid() ? module_.nodeSymbol[node.index] : UINT32_MAX;
  if (symbol == UINT32_MAX || module_.symbols[symbol].kind != SymbolKind::Param ||
      ctx_.callable < 0) {
    return IdentifierId{};
  }
  bool hyper = module_.callables[static_cast<size_t>(ctx_.callable)]
                   .params[module_.symbols[symbol].ref]
                   .cls == ParamClass::Hyper;
  return hyper || (fnInputs && ctx_.isFn) ? module_.symbols[symbol].name : IdentifierId{};
}

InstanceInfo::StrArg Checker::strArg(const ExprInfo& value) const {
  InstanceInfo::StrArg result;
  if (value.strValue) {
    result.value = std::string(*value.strValue);
  } else {
    // (A layer's str parameters are hyperparameters; an fn's are its inputs.)
    result.param = passedParameter(value.node, /*fnInputs=*/true);
  }
  return result;
}

DiagnosticBuilder Checker::reportInvalidOption(NodeId node, std::string_view value,
                                               std::string_view what,
                                               std::span<const std::string_view> allowed) {
  std::string options = optionList(allowed, "\"", ", ");
  auto builder = diags_->report(Diag::InvalidOption, source(), rangeOf(node), value, what, options);
  if (std::optional<std::string> option = optionInOtherCase(value, options)) {
    builder.note(Note::OptionCase, *option);
  } else if (std::optional<std::string> near = misspelledOption(value, options)) {
    builder.note(Note::DidYouMean, *near);
  }
  return builder;
}

void Checker::recordStrOptionUse(const ExprInfo& value, StrOption option,
                                 std::span<const std::string_view> allowed, std::string_view what,
                                 std::string_view callee) {
  if (value.strValue || ctx_.callable < static_cast<int>(module_.firstLocal)) return;
  InstanceInfo::StrArg arg = strArg(value);
  if (!arg.param.isValid()) return;
  strOptionUses_.push_back(
      StrOptionUse{ctx_.callable, arg.param, value.node, option, allowed, what, callee});
}

InstanceInfo::FloatArg Checker::floatArg(const ExprInfo& value) const {
  InstanceInfo::FloatArg result;
  if (value.floatValue) {
    result.value = value.floatValue;
    return result;
  }
  result.param = passedParameter(value.node, /*fnInputs=*/false);
  if (!result.param.isValid()) {
    result.expr = value.node;
    while (result.expr.isValid() && tree_.kind(result.expr) == NodeKind::Paren) {
      result.expr = tree_.childA(result.expr);
    }
  }
  return result;
}

// `L(2, w, x)` written as an application of a user layer that takes weights:
// the same call with the tensors positional (its weights and inputs, in
// order) and the other arguments named as its hyperparameters, when every
// weight and input is given; else nullopt.
std::optional<std::string> Checker::applicationForm(uint32_t decl, bool builtin, NodeId call) {
  if (builtin) return std::nullopt;
  const CallableInfo& info = module_.callables[decl];
  std::vector<std::string_view> hyperNames;
  size_t tensorsWanted = 0;
  bool weights = false;
  for (const ParamInfo& p : info.params) {
    if (p.cls == ParamClass::Hyper) {
      if (!p.implicit) hyperNames.push_back(spelling(p.name));
    } else {
      ++tensorsWanted;
      weights = weights || p.cls == ParamClass::Weight;
    }
  }
  std::vector<std::string> tensors, named;
  size_t hyper = 0;
  for (NodeId arg : tree_.list(tree_.listB(call))) {
    if (tree_.kind(arg) == NodeKind::NamedArg) {
      named.emplace_back(textOf(arg));
      continue;
    }
    TypeId type = module_.nodeType[arg.index];
    if (type.isValid() && module_.types.isTensor(type)) {
      tensors.emplace_back(textOf(arg));
    } else if (hyper < hyperNames.size()) {
      named.push_back(fmt::format("{}={}", hyperNames[hyper++], textOf(arg)));
    } else {
      return std::nullopt;
    }
  }
  if (!weights || tensors.size() != tensorsWanted) return std::nullopt;
  std::vector<std::string> all = tensors;
  all.insert(all.end(), named.begin(), named.end());
  return fmt::format("{}({})", callableName(static_cast<int>(decl)), fmt::join(all, ", "));
}

// Keras's create-and-apply in one call (`TernaryLinear(784, 10, x)`,
// `Block(16, x)`): CreateAndApply at `firstInput`, with the form to write
// instead (create then apply where the layer is known to make sub-modules).
void Checker::reportCreateAndApply(bool builtin, uint32_t decl, NodeId call, IdentifierId letName,
                                   NodeId firstInput, bool makesSubModules) {
  std::string name = builtin ? std::string(builtinLayerName(static_cast<BuiltinLayer>(decl)))
                             : callableName(static_cast<int>(decl));
  auto isInput = [&](NodeId arg) {
    TypeId type = module_.nodeType[arg.index];
    return tree_.kind(arg) != NodeKind::NamedArg && type.isValid() && module_.types.isTensor(type);
  };
  std::vector<std::string> hypers;
  std::vector<std::string_view> inputs;
  NodeId input;
  size_t positionalHypers = 0;
  for (NodeId arg : tree_.list(tree_.listB(call))) {
    if (isInput(arg)) {
      inputs.push_back(textOf(arg));
      if (!input.isValid()) input = arg;
    } else {
      hypers.emplace_back(textOf(arg));
      positionalHypers += tree_.kind(arg) != NodeKind::NamedArg;
    }
  }
  // `BatchNorm2d(conv(x))`, `TernaryLinear(x, 10)`: the size the layer takes first is the
  // input's (its channels, its features), left out because the input was there; the
  // created form gets it from the input's type (else a placeholder), so that it compiles.
  if (builtin && input.isValid()) {
    auto layer = static_cast<BuiltinLayer>(decl);
    size_t required = 0;
    bool channels = false;
    switch (layer) {
      case BuiltinLayer::BatchNorm1d:
      case BuiltinLayer::BatchNorm2d: required = 1; channels = true; break;
      case BuiltinLayer::LayerNorm: required = 1; break;
      case BuiltinLayer::Linear:
      case BuiltinLayer::TernaryLinear: required = 2; break;
      case BuiltinLayer::Conv2d:
      case BuiltinLayer::TernaryConv2d: required = 3; channels = true; break;
      default: break;
    }
    if (required != 0 && positionalHypers + 1 == required) {
      TypeId type = module_.nodeType[input.index];
      std::string size = channels ? "<channels>" : "<features>";
      if (module_.types.node(type).rankKnown) {
        std::span<const DimId> shape = module_.types.shape(type);
        size_t at = channels ? 1 : shape.size() - 1;
        if (!shape.empty() && at < shape.size() && !dims().isUnknown(shape[at])) {
          size = fmtDim(shape[at]);
        }
      }
      hypers.insert(hypers.begin(), size);
    }
  }
  std::string instance(letName.isValid() ? spelling(letName) : "m");
  auto builder = diags_->report(Diag::CreateAndApply, source(), rangeOf(firstInput), name,
                                textOf(firstInput));
  // `Linear(w, x)`: weights passed, no hyperparameters. The layer would
  // make its own weights; the function takes them.
  std::optional<BuiltinFn> function;
  if (builtin && hypers.empty() && inputs.size() >= 2) {
    switch (static_cast<BuiltinLayer>(decl)) {
      case BuiltinLayer::Linear:
      case BuiltinLayer::TernaryLinear: function = BuiltinFn::LinearFn; break;
      case BuiltinLayer::Conv2d:
      case BuiltinLayer::TernaryConv2d: function = BuiltinFn::Conv2dFn; break;
      case BuiltinLayer::Embedding: function = BuiltinFn::EmbeddingFn; break;
      case BuiltinLayer::LayerNorm: function = BuiltinFn::LayerNormFn; break;
      case BuiltinLayer::BatchNorm1d:
      case BuiltinLayer::BatchNorm2d: function = BuiltinFn::BatchNormFn; break;
      default: break;
    }
  }
  if (function) {
    std::vector<std::string> params;
    for (const BuiltinParam& p : builtinFnParams(*function)) {
      params.push_back(p.defaultText.empty() ? std::string(p.name)
                                             : fmt::format("{}={}", p.name, p.defaultText));
    }
    builder.note(Note::CallTheFunction, source(), rangeOf(call), builtinFnName(*function),
                 fmt::format("{}", fmt::join(params, ", ")));
  } else if (std::optional<std::string> application =
                 makesSubModules ? std::nullopt : applicationForm(decl, builtin, call)) {
    // `Heads(2, w, x)` of a layer that takes its weights: the tensors are
    // its weights and inputs, the numbers its hyperparameters by name (not
    // where the layer is known to create sub-modules: no application then).
    builder.note(Note::WriteInstead, source(), rangeOf(call), *application);
  } else {
    builder.note(Note::CreateThenApply, source(), rangeOf(call),
                 fmt::format("let {} = {}({})", instance, name, fmt::join(hypers, ", ")),
                 fmt::format("{}({})", instance, fmt::join(inputs, ", ")));
  }
}

ExprInfo Checker::checkInstantiation(bool builtin, uint32_t decl, NodeId call,
                                     IdentifierId letName) {
  module_.callKind[call.index] = CallKind::Instantiate;
  HiddenBuiltinNote hidden(*this);
  CallArgs args = gatherArgs(call);
  std::string name = builtin ? std::string(builtinLayerName(static_cast<BuiltinLayer>(decl)))
                             : callableName(static_cast<int>(decl));
  // Keras's `Dense(10)(x)` habit as one call: `TernaryLinear(784, 10, x)`.
  // Hyperparameters are scalars, so a tensor among the arguments is an input.
  auto isInput = [&](NodeId arg) {
    TypeId type = module_.nodeType[arg.index];
    return tree_.kind(arg) != NodeKind::NamedArg && type.isValid() && module_.types.isTensor(type);
  };
  auto argList = tree_.list(tree_.listB(call));
  auto first = std::find_if(argList.begin(), argList.end(), isInput);
  if (first != argList.end()) {
    reportCreateAndApply(builtin, decl, call, letName, *first, false);
    module_.callKind[call.index] = CallKind::None;
    return make(module_.types.error(), call);
  }
  std::vector<ExprInfo> all = args.positional;
  for (auto& [token, value] : args.named) {
    all.push_back(value);
  }
  noteInstantiationRules(call, name, letName, all);
  hidden.start();  // (the rules above are not about the builtin)
  // The constructor parameters.
  std::vector<std::string_view> names;
  std::vector<bool> optional;
  std::vector<bool> floating;  ///< builtin parameters that take floats (p, eps, momentum)
  std::vector<TypeId> paramTypes;
  std::vector<DimId> defaultDims;  ///< the value of an absent argument, as a dimension
  std::vector<std::optional<double>> defaultFloats;  ///< user layers: a float default's value
  std::vector<const std::optional<std::string>*> defaultStrs;  ///< user layers: a str default
  std::vector<int> positional;
  if (builtin) {
    for (const BuiltinParam& p : builtinLayerParams(static_cast<BuiltinLayer>(decl))) {
      names.push_back(p.name);
      optional.push_back(p.optional);
      floating.push_back(p.defaultText.find_first_of(".e") != std::string::npos ||
                         p.name == "max_norm");
      paramTypes.push_back(module_.types.unknown());
      bool isInt = !p.defaultText.empty() &&
                   std::all_of(p.defaultText.begin(), p.defaultText.end(),
                               [](char ch) { return ch >= '0' && ch <= '9'; });
      std::optional<int64_t> value;
      if (isInt) value = std::stoll(std::string(p.defaultText));
      if (p.defaultText == "true" || p.defaultText == "false") value = p.defaultText == "true";
      defaultDims.push_back(value ? dims().constant(*value) : dims().unknown());
    }
  } else {
    const CallableInfo& info = module_.callables[decl];
    for (const ParamInfo& p : info.params) {
      if (p.cls == ParamClass::Hyper) {
        defaultFloats.push_back(p.defaultFloat);
        defaultStrs.push_back(&p.defaultStr);
        names.push_back(spelling(p.name));
        optional.push_back(p.hasDefault);
        floating.push_back(false);
        paramTypes.push_back(p.type);
        defaultDims.push_back(p.defaultValue ? dims().constant(*p.defaultValue)
                                             : dims().unknown());
      }
    }
  }
  for (size_t i = 0; i < names.size(); ++i) {
    bool keywordOnly = !builtin && [&] {
      for (const ParamInfo& p : module_.callables[decl].params) {
        if (spelling(p.name) == names[i]) {
          return p.implicit;
        }
      }
      return false;
    }();
    if (!keywordOnly) {
      positional.push_back(static_cast<int>(i));
    }
  }
  std::optional<std::vector<BoundArg>> bound =
      builtin ? bindBuiltinArgs(builtinLayerParams(static_cast<BuiltinLayer>(decl)), positional,
                                args, call, name)
              : bindArgs(names, positional, args, call, name);
  InstanceInfo instance;
  instance.owner = ctx_.callable;
  instance.builtin = builtin;
  instance.decl = decl;
  instance.site = call;
  instance.conditional = ctx_.ifDepth > 0 || ctx_.guardDepth > 0;
  instance.name = letName;
  if (bound) {
    for (size_t i = 0; i < names.size(); ++i) {
      BoundArg& arg = (*bound)[i];
      if (!arg.present) {
        if (!optional[i]) {
          auto builder = diags_->report(Diag::MissingArgument, source(), rangeOf(call), names[i],
                                        name);
          // A parameter with a default before this one took a positional
          // argument (`B(16)` for `(stride: int = 1, in_ch: int)`).
          for (size_t q = 0; q < positional.size(); ++q) {
            auto j = static_cast<size_t>(positional[q]);
            if (j >= i) break;
            if (!optional[j] || !(*bound)[j].present || q >= args.positional.size() ||
                (*bound)[j].info.node != args.positional[q].node) {
              continue;
            }
            static constexpr const char* kOrdinals[] = {"first", "second", "third", "fourth"};
            std::string ordinal = q < 4 ? std::string(kOrdinals[q]) + " parameter"
                                        : fmt::format("parameter {}", q + 1);
            builder.note(Note::BoundBeforeDefault, textOf(args.positional[q].node), names[j],
                         ordinal, names[i]);
            break;
          }
          bound.reset();
          break;
        }
        instance.args.push_back(defaultDims[i]);
        if (!builtin) {
          instance.defaulted.resize(instance.args.size() - 1);
          instance.defaulted.push_back(true);
        }
        // A float default is passed on as given (`p: float32 = 20.0` reaches
        // its `Dropout(p)`).
        if (i < defaultFloats.size() && defaultFloats[i]) {
          instance.floats.resize(instance.args.size() - 1);
          instance.floats.push_back(
              InstanceInfo::FloatArg{defaultFloats[i], IdentifierId{}, NodeId{}});
        }
        if (i < defaultStrs.size() && defaultStrs[i]->has_value()) {
          instance.strs.resize(instance.args.size() - 1);
          instance.strs.push_back(InstanceInfo::StrArg{**defaultStrs[i], IdentifierId{}});
        }
        continue;
      }
      const TypeStore::Node& argType = module_.types.node(arg.info.type);
      bool conv = builtin && (static_cast<BuiltinLayer>(decl) == BuiltinLayer::Conv2d ||
                              static_cast<BuiltinLayer>(decl) == BuiltinLayer::TernaryConv2d);
      if (!builtin) {
        checkAssignable(arg.info, paramTypes[i], arg.info.node);
      } else if (conv && names[i] == "padding" && argType.kind == TypeKind::Scalar &&
                 argType.dtype == DType::Str) {
        // nn.Conv2d's padding="valid" (0) or "same" (the input's size, with
        // stride 1 only: torch raises at construction otherwise).
        std::optional<std::string_view> text = arg.info.strValue;
        // (A stride given per dimension is other than 1 where either is.)
        std::optional<int64_t> stride;
        if (instance.args.size() > 3) {
          std::optional<int64_t> h = dims().constValue(instance.args[3]);
          std::optional<int64_t> w = dims().constValue(instance.width(3));
          stride = h != 1 ? h : w;
        }
        if (!text || (*text != "same" && *text != "valid")) {
          constexpr std::string_view kPaddings = "an integer, a list [k, k], \"same\" or \"valid\"";
          auto builder = diags_->report(Diag::InvalidArgumentValue, source(),
                                        rangeOf(arg.info.node), names[i], name, kPaddings,
                                        text ? fmt::format("\"{}\"", *text) : std::string("a string"));
          if (std::optional<std::string> option = text ? optionInOtherCase(*text, kPaddings)
                                                       : std::nullopt) {
            builder.note(Note::OptionCase, *option);
          } else if (std::optional<std::string> near =
                         text ? misspelledOption(*text, kPaddings) : std::nullopt) {
            builder.note(Note::DidYouMean, *near);
          }
          bound.reset();
          break;
        }
        if (*text == "same" && stride && *stride != 1) {
          report(Diag::InvalidArgumentValue, arg.info.node, names[i], name,
                 "an integer with a stride other than 1 (torch supports no strided \"same\")",
                 "\"same\"");
          bound.reset();
          break;
        }
        instance.samePadding = *text == "same";
        if (*text == "valid") arg.info.dim = dims().constant(0);
      } else if (module_.types.kind(arg.info.type) == TypeKind::List) {
        DimId width;
        if (!sizeFromList(static_cast<BuiltinLayer>(decl), names[i], name, arg.info, width)) {
          bound.reset();
          break;
        }
        if (width.isValid()) {
          instance.widths.resize(i);
          instance.widths.push_back(width);
        }
      } else {
        const TypeStore::Node& t = module_.types.node(arg.info.type);
        bool lenient = module_.types.isLenient(arg.info.type);
        bool number = t.kind == TypeKind::Scalar && isNumeric(t.dtype);
        bool integer = number && isIntegral(t.dtype) && t.dtype != DType::Bool;
        std::string_view spelled =
            builtinLayerParams(static_cast<BuiltinLayer>(decl))[i].defaultText;
        bool boolParam = spelled == "true" || spelled == "false";
        bool strParam = !spelled.empty() && spelled.front() == '"';
        // What the parameter takes, from its default's spelling (Builtins.def).
        const char* wanted = nullptr;
        if (boolParam) {
          wanted = number && t.dtype == DType::Bool ? nullptr : "a bool";
        } else if (strParam) {
          wanted = t.kind == TypeKind::Scalar && t.dtype == DType::Str ? nullptr : "a string";
        } else if (floating[i]) {
          wanted = number ? nullptr : "a number";
        } else {
          wanted = integer ? nullptr : "an integer";
        }
        if (!lenient && wanted != nullptr && std::string_view(wanted) == "an integer") {
          reportIntegerNeeded(Diag::ArgumentType, arg.info.node, names[i], name, wanted,
                              fmt(arg.info.type));
        } else if (!lenient && wanted != nullptr) {
          report(Diag::ArgumentType, arg.info.node, names[i], name, wanted, fmt(arg.info.type));
        }
      }
      // Integers (and bools: affine=false) as dimensions, for shapes and members.
      instance.args.push_back(arg.info.dim.isValid() ? arg.info.dim
                              : arg.info.intValue    ? dims().constant(*arg.info.intValue)
                                                     : dims().unknown());
      // Only floats are recorded (most creations have none: no allocation).
      const TypeStore::Node& t = module_.types.node(arg.info.type);
      if (t.kind == TypeKind::Scalar && isFloating(t.dtype)) {
        instance.floats.resize(instance.args.size() - 1);
        instance.floats.push_back(floatArg(arg.info));
      }
      if (!builtin && t.kind == TypeKind::Scalar && t.dtype == DType::Str) {
        instance.strs.resize(instance.args.size() - 1);
        instance.strs.push_back(strArg(arg.info));
      }
    }
  }
  if (bound && builtin &&
      !checkBuiltinLayerArgs(*this, static_cast<BuiltinLayer>(decl), call, *bound,
                             instance.widths)) {
    bound.reset();
  }
  if (letName.isValid() && ctx_.callable >= 0) {
    auto [it, inserted] = ctx_.attributes.emplace(letName.index, call);
    // One name may be created in branches that exclude each other (`if
    // gated { let proj = TernaryLinear(d, d) } else { let proj = Linear(d,
    // d) }`), as a PyTorch module assigns one attribute either way.
    std::vector<std::vector<std::pair<uint32_t, uint8_t>>>& places =
        ctx_.attributeBranches[letName.index];
    bool exclusive = !inserted && !places.empty() &&
                     std::all_of(places.begin(), places.end(), [&](const auto& place) {
                       return excludeEachOther(place, ctx_.branches);
                     });
    if (inserted) warnIfRenamedInStateDict("sub-module", letName, call);
    if (inserted || exclusive) places.push_back(ctx_.branches);
    if (!inserted && !exclusive) {
      auto builder = diags_->report(Diag::Redefinition, source(), rangeOf(call), spelling(letName));
      if (it->second.isValid()) {
        builder.note(Note::PreviousDefinition, source(), rangeOf(it->second));
      }
    }
  }
  if (!bound) {
    return make(module_.types.error(), call);
  }
  auto index = static_cast<uint32_t>(module_.instances.size());
  module_.instances.push_back(instance);
  recordCall(call, CallKind::Instantiate, index, *bound);
  return make(module_.types.make(builtin ? TypeKind::BuiltinInstance : TypeKind::Instance, index),
              call);
}

// The creation call `site` (`Blk(8)`) with `name=value` added: `Blk(8, stride=2)`;
// `Layer(..., name=value)` when the call is not one line of source.
std::string Checker::withArgument(NodeId site, std::string_view layer, std::string_view name,
                                  std::string_view value) const {
  std::string_view text = site.isValid() ? textOf(site) : std::string_view();
  if (text.size() < 2 || text.back() != ')' || text.find('\n') != std::string_view::npos ||
      text.find(fmt::format("{}=", name)) != std::string_view::npos) {
    return fmt::format("{}(..., {}={})", layer, name, value);
  }
  bool noArguments = text.ends_with("()");
  return fmt::format("{}{}{}={})", text.substr(0, text.size() - 1), noArguments ? "" : ", ",
                     name, value);
}

std::optional<Checker::AppliedInstead> Checker::appliedInstead(TokenId callee,
                                                               std::string_view fn) const {
  auto kindAt = [&](int64_t offset) {
    int64_t i = static_cast<int64_t>(callee.index) + offset;
    return i >= 0 && i < static_cast<int64_t>(tokens().size())
               ? tokens().kind(TokenId{static_cast<uint32_t>(i)})
               : TokenKind::EndOfFile;
  };
  if (kindAt(-1) != TokenKind::Equal || kindAt(-2) != TokenKind::Identifier ||
      kindAt(-3) != TokenKind::KwLet || kindAt(1) != TokenKind::LParen) {
    return std::nullopt;
  }
  int depth = 0;
  uint32_t close = callee.index + 1;
  for (; close < tokens().size(); ++close) {
    TokenKind k = tokens().kind(TokenId{close});
    if (k == TokenKind::LParen || k == TokenKind::LBracket) ++depth;
    if ((k == TokenKind::RParen || k == TokenKind::RBracket) && --depth == 0) break;
    if (k == TokenKind::EndOfFile) return std::nullopt;
  }
  if (close >= tokens().size() || tokens().kind(TokenId{close}) != TokenKind::RParen) {
    return std::nullopt;
  }
  uint32_t from = tokens().range(TokenId{callee.index + 1}).end;
  std::string_view args = source().text().substr(from, tokens().range(TokenId{close}).begin - from);
  if (args.find('\n') != std::string_view::npos || args.size() > 60) return std::nullopt;
  return AppliedInstead{tokens().spelling(TokenId{callee.index - 2}),
                        args.find_first_not_of(' ') == std::string_view::npos
                            ? fmt::format("{}(x)", fn)
                            : fmt::format("{}(x, {})", fn, args)};
}

NodeId Checker::argumentAt(NodeId site, size_t position, std::string_view name,
                           std::string_view alias) const {
  if (!site.isValid() || tree_.kind(site) != NodeKind::Call) return NodeId{};
  size_t index = 0;
  for (NodeId arg : tree_.list(tree_.listB(site))) {
    if (tree_.kind(arg) == NodeKind::NamedArg) {
      std::string_view given = tokens().spelling(tree_.token(arg));
      if (given == name || (!alias.empty() && given == alias)) return tree_.childA(arg);
    } else if (index++ == position) {
      return arg;
    }
  }
  return NodeId{};
}

std::optional<std::string> Checker::withArgumentText(NodeId site, NodeId arg,
                                                     std::string_view value) const {
  std::string_view text = textOf(site), old = arg.isValid() ? textOf(arg) : std::string_view();
  if (text.find('\n') != std::string_view::npos || text.size() > 100 || old.empty() ||
      old.data() < text.data() || old.data() + old.size() > text.data() + text.size()) {
    return std::nullopt;
  }
  size_t at = static_cast<size_t>(old.data() - text.data());
  return fmt::format("{}{}{}", text.substr(0, at), value, text.substr(at + old.size()));
}

std::optional<std::string> Checker::swappedCall(NodeId call, NodeId a, NodeId b) const {
  std::string_view text = textOf(call), x = textOf(a), y = textOf(b);
  if (text.find('\n') != std::string_view::npos || text.size() > 100 || x.empty() || y.empty() ||
      x.data() < text.data() || y.data() + y.size() > text.data() + text.size() ||
      x.data() + x.size() > y.data()) {
    return std::nullopt;
  }
  size_t xAt = static_cast<size_t>(x.data() - text.data());
  size_t yAt = static_cast<size_t>(y.data() - text.data());
  return fmt::format("{}{}{}{}{}", text.substr(0, xAt), y, text.substr(xAt + x.size(), yAt - xAt - x.size()),
                     x, text.substr(yAt + y.size()));
}

ExprInfo Checker::checkForward(uint32_t instanceIndex, NodeId call) {
  // Checking the arguments may create instances (and move this one): read it
  // again after them.
  if (module_.instances[instanceIndex].builtin) {
    CallArgs args = gatherArgs(call);
    const InstanceInfo& instance = module_.instances[instanceIndex];
    for (const ExprInfo& arg : args.positional) {
      if (module_.types.kind(arg.type) == TypeKind::Error) {
        return make(module_.types.error(), call);
      }
    }
    if (!args.named.empty()) {
      // At the name (`fc(input=x)`): the inputs of a built-in layer have no
      // names; the call written with them positional is the fix.
      TokenId nameToken = args.named.front().first;
      auto builder = diags_->report(Diag::UnknownNamedArgument, source(),
                                    tokens().range(nameToken),
                                    builtinLayerName(static_cast<BuiltinLayer>(instance.decl)),
                                    tokens().spelling(nameToken));
      // `drop(x, training=true)` (F.dropout's flag): a sub-module follows the module's
      // mode, which is set from Python; the call without the flag is the fix.
      bool modeFlag = std::any_of(args.named.begin(), args.named.end(), [&](const auto& named) {
        return tokens().spelling(named.first) == "training";
      });
      std::string fixed;
      for (const ExprInfo& arg : args.positional) {
        fixed += (fixed.empty() ? "" : ", ") + std::string(textOf(arg.node));
      }
      for (const auto& [token, named] : args.named) {
        if (modeFlag && tokens().spelling(token) == "training") continue;
        fixed += (fixed.empty() ? "" : ", ") + std::string(textOf(named.node));
      }
      if (modeFlag) {
        fixed = fmt::format("{}({})", textOf(tree_.childA(call)), fixed);
        builder.note(Note::NoSuchFunction,
                     fmt::format("{}(..., training=...)", textOf(tree_.childA(call))),
                     fmt::format("a sub-module follows the model's mode, set from Python with "
                                 "model.train() and model.eval(); write '{}'",
                                 fixed.size() <= 60 && fixed.find('\n') == std::string::npos
                                     ? fixed
                                     : std::string(textOf(tree_.childA(call))) + "(...)"));
        return make(module_.types.error(), call);
      }
      fixed = fmt::format("{}({})", textOf(tree_.childA(call)), fixed);
      if (fixed.size() <= 100 && fixed.find('\n') == std::string::npos) {
        builder.note(Note::InputsArePositional, fixed);
      }
      return make(module_.types.error(), call);
    }
    std::vector<BoundArg> inputs;
    for (const ExprInfo& arg : args.positional) {
      inputs.push_back(BoundArg{arg, true});
    }
    recordCall(call, CallKind::Forward, instanceIndex, inputs);
    // A mismatch with what the sub-module was created for (`BatchNorm2d(256)`
    // on 512 channels) notes the creation: often the line to change.
    // (Built-in layers take one input: other counts are reported on their own.)
    bool created = instance.site.isValid() && instance.name.isValid() &&
                   args.positional.size() == 1;
    ContextGuard popCreation;
    if (created) {
      NodeId site = instance.site;
      std::string instanceName(spelling(instance.name));
      diags_->pushAddedContext(source(), [this, site, instanceName] {
        return std::vector<DiagnosticNote>{
            makeNote(Note::DefinedHere, source(), rangeOf(site), instanceName)};
      });
      popCreation.arm(*diags_);
    }
    return checkBuiltinForward(*this, instance, call, args.positional);
  }
  const InstanceInfo& instance = module_.instances[instanceIndex];
  const CallableInfo& info = module_.callables[instance.decl];
  // A named argument that is no input (`b(x, stride=2)` of `let b = Blk(8)`):
  // hyperparameters are set where the instance is created, weights are its
  // own. (It bound as an input and wrote `self.b(x=x, Blk=2)`.)
  for (NodeId arg : tree_.list(tree_.listB(call))) {
    if (tree_.kind(arg) != NodeKind::NamedArg) continue;
    TokenId nameToken = tree_.token(arg);
    std::string_view name = tokens().spelling(nameToken);
    for (const ParamInfo& p : info.params) {
      if (p.cls == ParamClass::Input || spelling(p.name) != name) continue;
      // (Unnamed when created by an assignment to an undeclared name.)
      std::string instanceName = instance.name.isValid() ? std::string(spelling(instance.name))
                                                         : std::string(textOf(tree_.childA(call)));
      std::string layer(callableName(static_cast<int>(instance.decl)));
      bool hyper = p.cls == ParamClass::Hyper;
      auto builder = diags_->report(
          Diag::NotAnInputArgument, source(), tokens().range(nameToken), name,
          hyper ? "a hyperparameter" : "a weight", layer,
          hyper ? fmt::format("set it where '{}' is created: '{}'", instanceName,
                              withArgument(instance.site, layer, name,
                                           textOf(tree_.childA(arg))))
                : fmt::format("'{}' has its own '{}'", instanceName, name));
      if (instance.site.isValid()) {
        builder.note(Note::DefinedHere, source(), rangeOf(instance.site), instanceName);
      }
      gatherArgs(call);  // the arguments' own mistakes are reported too
      return make(module_.types.error(), call);
    }
  }
  std::unordered_map<uint32_t, DimId> bindings;
  size_t h = 0;
  std::vector<int> positional;
  for (size_t i = 0; i < info.params.size(); ++i) {
    const ParamInfo& p = info.params[i];
    if (p.cls == ParamClass::Hyper) {
      // Every hyperparameter is bound, to `?` when its value is not known:
      // the layer's variable names must not leak into the caller's types.
      bindings[p.name.index] = h < instance.args.size() ? instance.args[h] : dims().unknown();
      ++h;
    } else if (p.cls == ParamClass::Input) {
      positional.push_back(static_cast<int>(i));
    }
  }
  forwardInstance_ = instanceIndex;
  return applyCallable(static_cast<int>(instance.decl), call, positional, &bindings,
                       callableName(static_cast<int>(instance.decl)));
}

}  // namespace tritonc::sema

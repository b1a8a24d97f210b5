//===- SemaCreations.cpp - hyperparameter values along creation chains ----===//
//
// A built-in layer created from hyperparameters (`Conv2d(c, c, 3,
// groups=g)`) is checked where it is written only as far as its constant
// arguments go, and two different size variables compared in a body
// (`out + x` of [?, out_ch, ...] and [?, in_ch, ...]) are left to a run-time
// check. Their values are known where the layer is created with constants
// (`let b = Block(64, 128)`), maybe several creations up: each chain of
// unconditional creations is followed from every layer and from `main`,
// binding each created layer's hyperparameters to what its creation passes.
// A built-in layer whose arguments become invalid, a weight whose size
// becomes negative, or a comparison made on every run of the body whose sizes
// become two different numbers, is reported once per site, with the first
// creation chain that shows it (a note per creation, like clang's "in
// instantiation of ... requested here") and the number of others.
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <cassert>
#include <cmath>
#include <deque>
#include <map>
#include <set>
#include <tuple>

#include "Habits.h"
#include "SemaImpl.h"
#include "tritonc/base/Text.h"

namespace tritonc::sema {

/// Where the walk is (the chain of user-layer creations from its start, with
/// the values each binds) and the problems it found.
struct Checker::CreationWalk {
  /// One problem per site: the diagnostic for the first creation chain that
  /// shows it, reported after the walk with the count of the others.
  struct Problem {
    uint32_t at;  ///< the site's offset: problems are reported in source order
    DiagnosticBuilder diagnostic;
    std::string layer;                ///< the created layer whose body has the site
    std::set<std::string> creations;  ///< the innermost creations showing it (site, values)
  };
  std::vector<Problem> problems;
  std::map<std::pair<uint32_t, uint32_t>, size_t> problemAt;  ///< (site, dim) -> problems index
  std::set<std::pair<uint32_t, std::string>> passedOnReported;  ///< site, problem

  std::vector<const InstanceInfo*> chain;  ///< the user-layer creations, outermost first
  std::vector<const DimBindings*> bindingsOf;         ///< per chain entry
  std::vector<const FloatBindings*> floatBindingsOf;  ///< per chain entry
  std::vector<const StrBindings*> strBindingsOf;      ///< per chain entry
  /// Per chain entry: its creation site and the values it binds ("site:v1,v2").
  /// A creation visited with values it had before is not walked again: it
  /// shows the same problems (the walk is bounded by the distinct creations,
  /// not by the paths to them).
  std::vector<std::string> creationOf;
  std::unordered_set<std::string> walked;
  size_t budget = 20000;  ///< creations visited: chains can fan out exponentially

  /// Per callables index, then [n] main and [n + 1] the layers created nowhere
  /// in the file (created with their defaults: how the entry layer usually is).
  std::vector<std::vector<const InstanceInfo*>> created;
  std::deque<InstanceInfo> byDefaults;  ///< the creations of [n + 1]
  /// Per layer: the comparisons made on every run of its body whose sizes are
  /// all its hyperparameters (not sizes of its inputs).
  std::vector<std::vector<const RuntimeShapeCheck*>> checksOf;
  std::vector<std::vector<const BroadcastCheck*>> broadcastsOf;
  std::vector<std::vector<const ReshapeCheck*>> reshapesOf;

  /// Whether the site was reported before; if so, counts this chain's
  /// innermost creation as another that shows it.
  bool seen(std::pair<uint32_t, uint32_t> key) {
    auto it = problemAt.find(key);
    if (it == problemAt.end()) return false;
    problems[it->second].creations.insert(creationOf.back());
    return true;
  }
};

void Checker::checkCreatedArguments() {
  size_t n = module_.callables.size();
  CreationWalk walk;
  walk.created.resize(n + 2);
  for (const InstanceInfo& instance : module_.instances) {
    if (!instance.conditional) {
      walk.created[instance.owner >= 0 ? static_cast<size_t>(instance.owner) : n].push_back(
          &instance);
    }
  }
  std::vector<bool> createdSomewhere = createdOrApplied();
  for (size_t layer = module_.firstLocal; layer < n; ++layer) {
    const CallableInfo& info = module_.callables[layer];
    if (info.isFn || createdSomewhere[layer]) continue;
    InstanceInfo instance;
    instance.decl = static_cast<uint32_t>(layer);
    instance.site = info.node;
    bool allDefaults = true;
    for (const ParamInfo& p : info.params) {
      if (p.cls != ParamClass::Hyper) continue;
      allDefaults = allDefaults && p.hasDefault;
      instance.defaulted.push_back(true);
      instance.args.push_back(p.defaultValue ? dims().constant(*p.defaultValue) : dims().unknown());
      if (p.defaultFloat) {
        instance.floats.resize(instance.args.size() - 1);
        instance.floats.push_back(InstanceInfo::FloatArg{p.defaultFloat, IdentifierId{}, NodeId{}});
      }
      if (p.defaultStr) {
        instance.strs.resize(instance.args.size() - 1);
        instance.strs.push_back(InstanceInfo::StrArg{p.defaultStr, IdentifierId{}});
      }
    }
    if (allDefaults && !instance.args.empty()) {
      walk.created[n + 1].push_back(&walk.byDefaults.emplace_back(std::move(instance)));
    }
  }
  walk.checksOf.resize(n);
  for (const RuntimeShapeCheck& check : module_.runtimeChecks) {
    if (check.owner >= static_cast<int>(module_.firstLocal) && !check.conditional &&
        check.dim != RuntimeShapeCheck::kRank && !check.other.isValid() &&
        ofHyperparameters(check.owner, check.expected, check.actual)) {
      walk.checksOf[static_cast<size_t>(check.owner)].push_back(&check);
    }
  }
  walk.broadcastsOf.resize(n);
  for (const BroadcastCheck& check : broadcastChecks_) {
    if (ofHyperparameters(check.owner, check.da, check.db)) {
      walk.broadcastsOf[static_cast<size_t>(check.owner)].push_back(&check);
    }
  }
  walk.reshapesOf.resize(n);
  for (const ReshapeCheck& check : reshapeChecks_) {
    if (check.owner >= static_cast<int>(module_.firstLocal) &&
        ofHyperparameters(check.owner, check.restX, check.restTarget)) {
      walk.reshapesOf[static_cast<size_t>(check.owner)].push_back(&check);
    }
  }

  DimBindings none;
  for (size_t owner = module_.firstLocal; owner <= n + 1; ++owner) {
    walkCreations(walk, owner, none, FloatBindings{});
  }

  std::vector<size_t> order(walk.problems.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    return walk.problems[x].at < walk.problems[y].at;
  });
  for (size_t i : order) {
    CreationWalk::Problem& problem = walk.problems[i];
    DiagnosticBuilder builder = std::move(problem.diagnostic);  // reported here, in order
    size_t creations = problem.creations.size();
    if (size_t more = creations - 1; creations > 0 && more > 0) {
      builder.note(Note::MoreCreations, more, more == 1 ? "" : "s", problem.layer);
    }
  }
}

bool Checker::ofHyperparameters(int owner, DimId a, DimId b) const {
  std::vector<IdentifierId> vars;
  module_.dims.collectVars(a, vars);
  module_.dims.collectVars(b, vars);
  const std::vector<ParamInfo>& params = module_.callables[static_cast<size_t>(owner)].params;
  return !vars.empty() && std::all_of(vars.begin(), vars.end(), [&](IdentifierId v) {
    return std::any_of(params.begin(), params.end(), [&](const ParamInfo& p) {
      return p.cls == ParamClass::Hyper && p.name == v;
    });
  });
}

void Checker::walkCreations(CreationWalk& walk, size_t owner, const DimBindings& bindings,
                            const FloatBindings& floatBindings) {
  size_t n = module_.callables.size();
  if (!walk.chain.empty() && owner < n) {
    checkComparisonsWithValues(walk, owner, bindings);
    checkWeightSizes(walk, owner, bindings);
    checkStrOptions(walk, owner);
  }
  for (const InstanceInfo* instance : walk.created[owner]) {
    if (walk.budget == 0) return;
    --walk.budget;
    std::vector<DimId> args;
    bool anyConstant = false;
    for (DimId arg : instance->args) {
      DimId value = bindings.empty() ? arg : dims().substitute(arg, bindings);
      anyConstant = anyConstant || dims().constValue(value).has_value();
      args.push_back(value);
    }
    if (instance->builtin) {
      if (!walk.chain.empty()) {
        checkBuiltinCreation(walk, *instance, args, bindings, floatBindings);
      }
      continue;
    }
    auto layer = static_cast<size_t>(instance->decl);
    // Float and str hyperparameters that get a known value.
    FloatBindings innerFloats;
    StrBindings innerStrs;
    const StrBindings* outerStrs = walk.strBindingsOf.empty() ? nullptr : walk.strBindingsOf.back();
    if (layer >= module_.firstLocal) {
      size_t h = 0;
      for (const ParamInfo& p : module_.callables[layer].params) {
        if (p.cls != ParamClass::Hyper) continue;
        const TypeStore::Node& t = module_.types.node(p.type);
        // A hyperparameter the creation leaves out takes its default, known
        // now that every body is checked (a layer created above its
        // declaration was created before its default was read).
        bool defaulted = h < instance->defaulted.size() && instance->defaulted[h];
        if (t.kind == TypeKind::Scalar && isFloating(t.dtype)) {
          std::optional<double> value =
              defaulted ? p.defaultFloat : floatArgument(*instance, h, bindings, floatBindings);
          if (value) {
            innerFloats[p.name.index] = *value;
            anyConstant = true;
          }
        }
        if (t.kind == TypeKind::Scalar && t.dtype == DType::Str &&
            (defaulted || h < instance->strs.size())) {
          const std::string* value = nullptr;
          if (defaulted) {
            value = p.defaultStr ? &*p.defaultStr : nullptr;
          } else {
            const InstanceInfo::StrArg& arg = instance->strs[h];
            value = arg.value ? &*arg.value : nullptr;
            if (arg.param.isValid() && outerStrs != nullptr) {
              auto it = outerStrs->find(arg.param.index);
              if (it != outerStrs->end()) value = &it->second;
            }
          }
          if (value != nullptr) {
            innerStrs.emplace(p.name.index, *value);
            anyConstant = true;
          }
        }
        ++h;
      }
    }
    if (!anyConstant || layer < module_.firstLocal || walk.chain.size() >= 64 ||
        std::any_of(walk.chain.begin(), walk.chain.end(),
                    [&](const InstanceInfo* c) { return c->decl == instance->decl; })) {
      continue;
    }
    DimBindings inner;
    size_t h = 0;
    for (const ParamInfo& p : module_.callables[layer].params) {
      if (p.cls == ParamClass::Hyper) {
        inner[p.name.index] = h < args.size() ? args[h] : dims().unknown();
        ++h;
      }
    }
    // Defaults computed from other hyperparameters (`half: int = d / 2`),
    // with this creation's values; a chain of them, a few steps deep.
    for (int round = 0; round < 4; ++round) {
      bool more = false;
      h = 0;
      for (const ParamInfo& p : module_.callables[layer].params) {
        if (p.cls != ParamClass::Hyper) continue;
        bool defaulted = h < instance->defaulted.size() && instance->defaulted[h];
        ++h;
        DimId& value = inner[p.name.index];
        if (!defaulted || !p.defaultDim.isValid() || dims().constValue(value)) continue;
        DimId computed = dims().substitute(p.defaultDim, inner);
        if (dims().constValue(computed)) {
          value = computed;
          more = true;
        }
      }
      if (!more) break;
    }
    std::string creation = fmt::format("{}:", instance->site.index);
    for (const ParamInfo& p : module_.callables[layer].params) {
      if (p.cls != ParamClass::Hyper) continue;
      auto f = innerFloats.find(p.name.index);
      auto str = innerStrs.find(p.name.index);
      creation += f != innerFloats.end()     ? fmt::format("f{},", f->second)
                  : str != innerStrs.end() ? fmt::format("s{}:{},", str->second.size(), str->second)
                                           : fmt::format("{},", inner[p.name.index].index);
    }
    if (!walk.walked.insert(creation).second) continue;
    walk.creationOf.push_back(std::move(creation));
    walk.chain.push_back(instance);
    walk.bindingsOf.push_back(&inner);
    walk.floatBindingsOf.push_back(&innerFloats);
    walk.strBindingsOf.push_back(&innerStrs);
    walkCreations(walk, layer, inner, innerFloats);
    walk.strBindingsOf.pop_back();
    walk.floatBindingsOf.pop_back();
    walk.bindingsOf.pop_back();
    walk.chain.pop_back();
    walk.creationOf.pop_back();
  }
}

void Checker::addCreationProblem(CreationWalk& walk, std::pair<uint32_t, uint32_t> key,
                                 NodeId site, DiagnosticBuilder builder, bool atInnermost) {
  // "in the 'Block' created here with c = 64", per creation on the chain,
  // innermost first. `atInnermost`: the diagnostic is at an argument of the
  // innermost creation, which needs no note of its own.
  for (size_t i = walk.chain.size() - (atInnermost ? 1 : 0); i-- > 0;) {
    const InstanceInfo& outer = *walk.chain[i];
    std::string with;
    for (const ParamInfo& p : module_.callables[outer.decl].params) {
      if (p.cls != ParamClass::Hyper) continue;
      std::optional<int64_t> v = dims().constValue(walk.bindingsOf[i]->at(p.name.index));
      auto f = walk.floatBindingsOf[i]->find(p.name.index);
      auto str = walk.strBindingsOf[i]->find(p.name.index);
      if (v) {
        with += fmt::format("{}{} = {}", with.empty() ? "" : ", ", spelling(p.name), *v);
      } else if (f != walk.floatBindingsOf[i]->end()) {
        with += fmt::format("{}{} = {}", with.empty() ? "" : ", ", spelling(p.name),
                            formatFloat(f->second));
      } else if (str != walk.strBindingsOf[i]->end()) {
        with += fmt::format("{}{} = \"{}\"", with.empty() ? "" : ", ", spelling(p.name),
                            str->second);
      }
    }
    if (tree_.kind(outer.site) != NodeKind::Call) {  // a creation by defaults: no call
      const CallableInfo& info = module_.callables[outer.decl];
      builder.note(Note::CreatedWithDefaults, source(), tokens().range(tree_.token(info.node)),
                   callableName(static_cast<int>(outer.decl)), with);
    } else {
      builder.note(Note::CreatedWith, source(), rangeOf(outer.site),
                   callableName(static_cast<int>(outer.decl)), with);
    }
  }
  walk.problemAt.emplace(key, walk.problems.size());
  walk.problems.push_back(CreationWalk::Problem{
      rangeOf(site).begin, std::move(builder),
      callableName(static_cast<int>(walk.chain.back()->decl)), {walk.creationOf.back()}});
}

void Checker::checkStrOptions(CreationWalk& walk, size_t owner) {
  const StrBindings& values = *walk.strBindingsOf.back();
  for (const StrOptionUse& use : strOptionUses_) {
    if (static_cast<size_t>(use.owner) != owner) continue;
    auto it = values.find(use.param.index);
    if (it == values.end() ||
        std::find(use.allowed.begin(), use.allowed.end(), it->second) != use.allowed.end()) {
      continue;
    }
    std::pair<uint32_t, uint32_t> key{use.node.index, 0x40000000u};
    if (walk.seen(key)) continue;
    addCreationProblem(walk, key, use.node, reportStrOption(use, it->second));
  }
}

DiagnosticBuilder Checker::reportStrOption(const StrOptionUse& use, const std::string& value) {
  if (use.option == StrOption::QuantizeMethod) {
    return reportInvalidOption(use.node, value, "quantization method", use.allowed);
  }
  std::string expected = optionList(use.allowed, "'", " or ");
  auto builder = diags_->report(Diag::InvalidArgumentValue, source(), rangeOf(use.node), use.what,
                                use.callee, expected, fmt::format("'{}'", value));
  if (std::optional<std::string> option = optionInOtherCase(value, expected)) {
    builder.note(Note::OptionCase, *option);
  } else if (std::optional<std::string> near = misspelledOption(value, expected)) {
    builder.note(Note::DidYouMean, *near);
  }
  return builder;
}

void Checker::checkStrOptionsOfCalls() {
  if (strOptionUses_.empty()) return;
  std::set<std::pair<uint32_t, std::string>> reported;  // (use, value)
  std::map<uint32_t, std::vector<const StrOptionUse*>> usesOf;  // by callable
  for (const StrOptionUse& use : strOptionUses_) {
    usesOf[static_cast<uint32_t>(use.owner)].push_back(&use);
  }
  for (size_t node = 0; node < module_.callOf.size(); ++node) {
    uint32_t index = module_.callOf[node];
    if (index >= module_.calls.size()) continue;
    const CallInfo& call = module_.calls[index];
    if (call.kind != CallKind::FnCall && call.kind != CallKind::Apply) continue;
    auto uses = usesOf.find(call.callee);
    if (uses == usesOf.end()) continue;
    const CallableInfo& callee = module_.callables[call.callee];
    for (const StrOptionUse* usePtr : uses->second) {
      const StrOptionUse& use = *usePtr;
      size_t param = 0;
      while (param < callee.params.size() && callee.params[param].name != use.param) ++param;
      if (param == callee.params.size()) continue;
      NodeId given;
      for (const auto& [p, arg] : call.args) {
        if (p == param) given = arg;
      }
      std::optional<std::string> value;
      if (given.isValid()) {
        NodeId literal = given;
        while (tree_.kind(literal) == NodeKind::Paren) literal = tree_.childA(literal);
        if (tree_.kind(literal) == NodeKind::StringLit) {
          value = std::string(tokens().stringValue(tree_.token(literal)));
        }
      } else {
        value = callee.params[param].defaultStr;
      }
      if (!value ||
          std::find(use.allowed.begin(), use.allowed.end(), *value) != use.allowed.end() ||
          !reported.emplace(use.node.index, *value).second) {
        continue;
      }
      DiagnosticBuilder builder = reportStrOption(use, *value);
      std::string shown = fmt::format("\"{}\"", *value);
      if (given.isValid()) {
        builder.note(Note::SizeBoundHere, source(), rangeOf(given), spelling(use.param), shown);
      } else {
        builder.note(Note::DefinedHere, source(), rangeOf(callee.params[param].node),
                     spelling(use.param));
      }
    }
  }
}

bool Checker::mayBeOne(DimId d, const DimBindings& bindings, bool part) {
  const DimStore::Node& node = dims().node(d);
  // (A literal inside a formula, the `+ 1` of a conv or pool output size, is
  // no size taken from a broadcast.)
  if (part && node.kind == DimKind::Const) return false;
  if (dims().constValue(dims().substitute(d, bindings)) == 1) return true;
  if (node.kind == DimKind::Const || node.kind == DimKind::Var || node.kind == DimKind::Unknown) {
    return false;
  }
  return mayBeOne(node.lhs, bindings, true) || mayBeOne(node.rhs, bindings, true);
}

void Checker::checkComparisonsWithValues(CreationWalk& walk, size_t owner,
                                         const DimBindings& bindings) {
  // A size the checker took from the other operand of a broadcast with `?`
  // (`x * gamma` of [?, ?] and [1, g] is taken as [?, g]) is wrong exactly
  // when it is 1 (the `?` side may be larger): comparisons where a size, or
  // any part of one (`g` in `g * 4` after a flatten, `c - 3` in `2 * (c - 3)`),
  // is 1 are not decided.
  auto guessMayFail = [&](DimId a, DimId b) {
    return mayBeOne(a, bindings) || mayBeOne(b, bindings);
  };
  // A size with the value a creation gives it: "out_ch = 128", or "128" when written so.
  auto sized = [&](DimId d, int64_t value) {
    return dims().constValue(d) ? std::to_string(value) : fmt::format("{} = {}", fmtDim(d), value);
  };
  // A sub-module's or fn's input that does not fit is the mistake; an
  // operation on its result (`x + token_mix(norm1(x))`) is not a second
  // error: the argument checks go first, and a broadcast whose operands
  // hold a failed one is skipped (one wrong size, one error).
  std::vector<SourceRange> failed;
  auto contains = [&](SourceRange outer) {
    return std::any_of(failed.begin(), failed.end(), [&](SourceRange r) {
      return outer.begin <= r.begin && r.end <= outer.end;
    });
  };
  // The broadcasts that fail with these values: a comparison of a value
  // that holds one (`return s + x + b` after `s + x` failed) follows from it.
  auto broadcastFails = [&](const BroadcastCheck& check) {
    std::optional<int64_t> x = dims().constValue(dims().substitute(check.da, bindings));
    std::optional<int64_t> y = dims().constValue(dims().substitute(check.db, bindings));
    return x && y && *x != *y && !guessMayFail(check.da, check.db);
  };
  std::vector<SourceRange> failingBroadcasts;
  for (const BroadcastCheck* check : walk.broadcastsOf[owner]) {
    if (broadcastFails(*check)) failingBroadcasts.push_back(rangeOf(check->node));
  }
  auto holdsFailingBroadcast = [&](NodeId value) {
    if (!value.isValid()) return false;
    SourceRange outer = rangeOf(value);
    return std::any_of(failingBroadcasts.begin(), failingBroadcasts.end(), [&](SourceRange r) {
      return outer.begin <= r.begin && r.end <= outer.end;
    });
  };
  // The height and width of one conv's output, wrong alike: one error.
  std::set<std::tuple<uint32_t, uint32_t, uint32_t>> sameSizes;  // node, expected, actual
  for (const RuntimeShapeCheck* check : walk.checksOf[owner]) {
    std::optional<int64_t> want = dims().constValue(dims().substitute(check->expected, bindings));
    std::optional<int64_t> have = dims().constValue(dims().substitute(check->actual, bindings));
    std::pair<uint32_t, uint32_t> key{check->node.index, check->dim};
    if (!want || !have || *want == *have || guessMayFail(check->expected, check->actual) ||
        holdsFailingBroadcast(check->value)) {
      continue;
    }
    failed.push_back(rangeOf(check->node));  // (reported here or by another chain)
    if (!sameSizes.emplace(check->node.index, check->expected.index, check->actual.index).second ||
        walk.seen(key)) {
      continue;
    }
    std::string what = check->value.isValid() && !textOf(check->value).empty() &&
                               textOf(check->value).size() <= 60 &&
                               textOf(check->value).find('\n') == std::string_view::npos
                           ? fmt::format("'{}'", textOf(check->value))
                           : std::string("its operand");
    auto builder = diags_->report(Diag::CreatedShapeMismatch, source(), rangeOf(check->node),
                                  check->dim, what, sized(check->actual, *have),
                                  sized(check->expected, *want));
    // A sub-module's input (`bn2(conv2(out))`): where it is created is
    // what says the size it expects (`BatchNorm2d(in_ch)`).
    noteCreationOf(builder, check->node);
    uint32_t callIndex = check->node.index < module_.callOf.size()
                             ? module_.callOf[check->node.index] : UINT32_MAX;
    // `linear(x, w)` whose w was declared [in, out] (x @ w's layout).
    if (callIndex < module_.calls.size() &&
        module_.calls[callIndex].kind == CallKind::Builtin &&
        module_.calls[callIndex].callee == static_cast<uint32_t>(BuiltinFn::LinearFn)) {
      for (const auto& [param, node] : module_.calls[callIndex].args) {
        if (param <= 1 && node == check->value) {  // x's features against w's (no bias)
          builder.note(Note::LinearTakesOutIn);
          break;
        }
      }
    }
    addCreationProblem(walk, key, check->node, std::move(builder));
  }
  for (const BroadcastCheck* check : walk.broadcastsOf[owner]) {
    // (Keyed apart from the run-time checks of the same node and dimension.)
    std::pair<uint32_t, uint32_t> key{check->node.index,
                                      static_cast<uint32_t>(check->dim) | 0x80000000u};
    if (!broadcastFails(*check) || contains(rangeOf(check->node)) || walk.seen(key)) continue;
    int64_t x = *dims().constValue(dims().substitute(check->da, bindings));
    int64_t y = *dims().constValue(dims().substitute(check->db, bindings));
    std::vector<DimId> a, b;
    for (DimId d : check->a) a.push_back(dims().substitute(d, bindings));
    for (DimId d : check->b) b.push_back(dims().substitute(d, bindings));
    auto builder = diags_->report(Diag::ShapeMismatch, source(), rangeOf(check->node), check->op,
                                  fmtShape(a), fmtShape(b));
    builder.note(Note::DimensionDetail, check->dim, sized(check->da, x), sized(check->db, y));
    noteOperandCreations(builder, check->node);
    addCreationProblem(walk, key, check->node, std::move(builder));
  }
  // `reshape(x, [b, t, heads, d / heads])` with d = 30, heads = 4: 30 elements against 28.
  for (const ReshapeCheck* check : walk.reshapesOf[owner]) {
    std::pair<uint32_t, uint32_t> key{check->node.index, 0x40000000u};
    std::optional<int64_t> x = dims().constValue(dims().substitute(check->restX, bindings));
    std::optional<int64_t> t = dims().constValue(dims().substitute(check->restTarget, bindings));
    if (!x || !t || (check->inferred ? *t != 0 && *x % *t == 0 : *x == *t) ||
        contains(rangeOf(check->node)) || walk.seen(key)) {
      continue;
    }
    std::vector<DimId> a, b;
    for (DimId d : check->x) a.push_back(dims().substitute(d, bindings));
    for (DimId d : check->target) b.push_back(dims().substitute(d, bindings));
    auto builder = diags_->report(
        Diag::ReshapeKeptMismatch, source(), rangeOf(check->node), fmtShape(a), fmtShape(b),
        check->kept, *x,
        check->inferred
            ? fmt::format(", which the new shape's other sizes do not divide ({})", *t)
            : fmt::format(" and the new shape's {}", *t));
    addCreationProblem(walk, key, check->node, std::move(builder));
  }
}

std::optional<double> Checker::floatArgument(const InstanceInfo& instance, size_t i,
                                             const DimBindings& bindings,
                                             const FloatBindings& floatBindings) const {
  if (i >= instance.floats.size()) return std::nullopt;
  const InstanceInfo::FloatArg& arg = instance.floats[i];
  if (arg.value) return arg.value;
  if (arg.expr.isValid()) {
    std::optional<Number> v = evaluateWithValues(arg.expr, bindings, floatBindings, 0);
    return v ? std::optional<double>(v->value) : std::nullopt;
  }
  auto it = arg.param.isValid() ? floatBindings.find(arg.param.index) : floatBindings.end();
  return it != floatBindings.end() ? std::optional<double>(it->second) : std::nullopt;
}

std::optional<Checker::Number> Checker::evaluateWithValues(NodeId node, const DimBindings& ints,
                                                           const FloatBindings& floats,
                                                           int depth) const {
  if (!node.isValid() || depth > 64) return std::nullopt;
  TokenId token = tree_.token(node);
  switch (tree_.kind(node)) {
    case NodeKind::Paren: return evaluateWithValues(tree_.childA(node), ints, floats, depth + 1);
    case NodeKind::FloatLit: return Number{tokens().floatValue(token), false};
    case NodeKind::IntLit: {
      uint64_t v = tokens().intValue(token);
      if (v > (uint64_t{1} << 53)) return std::nullopt;
      return Number{static_cast<double>(v), true};
    }
    case NodeKind::Name: {
      uint32_t symbol = module_.nodeSymbol[node.index];
      if (symbol == UINT32_MAX) return std::nullopt;
      const Symbol& sym = module_.symbols[symbol];
      if (sym.kind == SymbolKind::Param) {
        if (auto f = floats.find(sym.name.index); f != floats.end()) return Number{f->second};
        auto i = ints.find(sym.name.index);
        std::optional<int64_t> v =
            i != ints.end() ? module_.dims.constValue(i->second) : std::optional<int64_t>();
        if (!v || *v > (int64_t{1} << 53) || *v < -(int64_t{1} << 53)) return std::nullopt;
        return Number{static_cast<double>(*v), true};
      }
      if (sym.kind == SymbolKind::Constant && symbol < symbolValue_.size()) {
        const ExprInfo& c = symbolValue_[symbol];  // local and imported constants alike
        if (c.floatValue) return Number{*c.floatValue, false};
        if (c.intValue && *c.intValue <= (int64_t{1} << 53) &&
            *c.intValue >= -(int64_t{1} << 53)) {
          return Number{static_cast<double>(*c.intValue), true};
        }
      }
      return std::nullopt;
    }
    case NodeKind::Unary: {
      std::optional<Number> v = evaluateWithValues(tree_.childA(node), ints, floats, depth + 1);
      if (!v) return std::nullopt;
      if (tokens().kind(token) == TokenKind::Minus) v->value = -v->value;
      else if (tokens().kind(token) != TokenKind::Plus) return std::nullopt;
      return v;
    }
    case NodeKind::Binary: {
      std::optional<Number> a = evaluateWithValues(tree_.childA(node), ints, floats, depth + 1);
      std::optional<Number> b =
          a ? evaluateWithValues(tree_.childB(node), ints, floats, depth + 1) : std::nullopt;
      if (!b) return std::nullopt;
      bool integer = a->integer && b->integer;
      switch (tokens().kind(token)) {
        case TokenKind::Plus: return Number{a->value + b->value, integer};
        case TokenKind::Minus: return Number{a->value - b->value, integer};
        case TokenKind::Star: return Number{a->value * b->value, integer};
        case TokenKind::Slash:
          if (b->value == 0) return std::nullopt;
          return integer ? Number{std::floor(a->value / b->value), true}
                         : Number{a->value / b->value, false};
        default: return std::nullopt;
      }
    }
    case NodeKind::Call: {
      // float(x) (float32) and int(x) (int8 ... int64, truncating): a cast
      // of one number.
      NodeId callee = tree_.childA(node);
      std::span<const NodeId> args = tree_.list(tree_.listB(node));
      if (module_.callKind[node.index] != CallKind::Cast || !callee.isValid() ||
          module_.nodeSymbol[callee.index] == UINT32_MAX || args.size() != 1 ||
          tree_.kind(args[0]) == NodeKind::NamedArg) {
        return std::nullopt;
      }
      const Symbol& cast = module_.symbols[module_.nodeSymbol[callee.index]];
      auto dtype = static_cast<DType>(cast.ref);
      if (cast.kind != SymbolKind::TypeName ||
          (dtype != DType::Float32 && dtype != DType::Int8 && dtype != DType::Int16 &&
           dtype != DType::Int32 && dtype != DType::Int64)) {
        return std::nullopt;
      }
      std::optional<Number> v = evaluateWithValues(args[0], ints, floats, depth + 1);
      if (!v) return std::nullopt;
      if (dtype == DType::Float32) return Number{v->value, false};
      return Number{std::trunc(v->value), true};
    }
    default: return std::nullopt;
  }
}

void Checker::checkBuiltinCreation(CreationWalk& walk, const InstanceInfo& instance,
                                   std::span<const DimId> args, const DimBindings& bindings,
                                   const FloatBindings& floatBindings) {
  std::vector<std::optional<int64_t>> values, widths;
  for (DimId arg : args) values.push_back(dims().constValue(arg));
  if (!instance.widths.empty()) {
    for (size_t i = 0; i < args.size(); ++i) {
      DimId width = instance.width(i);
      widths.push_back(
          dims().constValue(bindings.empty() ? width : dims().substitute(width, bindings)));
    }
  }
  auto layer = static_cast<BuiltinLayer>(instance.decl);
  std::optional<LayerArgProblem> problem = builtinLayerArgProblem(layer, values, widths);
  // Dropout's p passed down from a float hyperparameter.
  if (std::optional<double> p = layer == BuiltinLayer::Dropout && !problem
                                    ? floatArgument(instance, 0, bindings, floatBindings)
                                    : std::nullopt;
      p && !(*p >= 0.0 && *p <= 1.0)) {
    problem = LayerArgProblem{0, "a probability between 0 and 1", formatFloat(*p)};
  }
  if (!problem) return;
  NodeId at = instance.site;
  uint32_t call = module_.callOf[instance.site.index];
  if (call != UINT32_MAX) {
    for (const auto& [param, node] : module_.calls[call].args) {
      if (param == problem->param) at = node;
    }
  }
  // A hyperparameter passed on unchanged (`Dropout(p)`) is wrong where it is
  // given: each wrong value is reported. An expression (`groups=c * e + 1`)
  // is wrong where it is written: once.
  std::pair<uint32_t, uint32_t> key{instance.site.index, UINT32_MAX};
  if (at != instance.site && tree_.kind(at) == NodeKind::Name) {
    if (!walk.passedOnReported.emplace(instance.site.index, problem->expected + problem->value)
             .second) {
      return;
    }
    key.second = UINT32_MAX - static_cast<uint32_t>(walk.passedOnReported.size());
  } else if (walk.seen(key)) {
    return;
  }
  auto builder = diags_->report(Diag::InvalidArgumentValue, source(), rangeOf(at),
                                builtinLayerParams(layer)[problem->param].name,
                                builtinLayerName(layer), problem->expected, problem->value);
  addCreationProblem(walk, key, at, std::move(builder));
}

namespace {

/// A user layer's weight sizes with a creation's values, as written in the
/// weight's type: `hyper` numbers the layer's hyperparameters by name.
class WeightSizes {
 public:
  WeightSizes(const Tree& tree, const DimStore& dims,
              const std::unordered_map<uint32_t, size_t>& hyper,
              const std::unordered_map<uint32_t, DimId>& bindings)
      : tree_(tree), dims_(dims), hyper_(hyper), bindings_(bindings) {}

  /// The value of a size as written, or nullopt (unknown, or a division by
  /// zero, which sets divisionByZero() to the first one).
  std::optional<int64_t> value(NodeId dim, int depth = 0) {
    if (!dim.isValid() || depth > 64) return std::nullopt;
    const TokenizedBuffer& tokens = tree_.tokens();
    switch (tree_.kind(dim)) {
      case NodeKind::IntLit: {
        uint64_t v = tokens.intValue(tree_.token(dim));
        if (v > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
        return static_cast<int64_t>(v);
      }
      case NodeKind::Name: {
        IdentifierId name = tokens.identifier(tree_.token(dim));
        if (!hyper_.count(name.index)) return std::nullopt;
        auto it = bindings_.find(name.index);
        return it == bindings_.end() ? std::nullopt : dims_.constValue(it->second);
      }
      case NodeKind::Paren: return value(tree_.childA(dim), depth + 1);
      case NodeKind::Binary: {
        std::optional<int64_t> a = value(tree_.childA(dim), depth + 1);
        std::optional<int64_t> b = value(tree_.childB(dim), depth + 1);
        if (!a || !b) return std::nullopt;
        int64_t out = 0;
        switch (tokens.kind(tree_.token(dim))) {
          case TokenKind::Plus:
            return __builtin_add_overflow(*a, *b, &out) ? std::nullopt : std::optional(out);
          case TokenKind::Minus:
            return __builtin_sub_overflow(*a, *b, &out) ? std::nullopt : std::optional(out);
          case TokenKind::Star:
            return __builtin_mul_overflow(*a, *b, &out) ? std::nullopt : std::optional(out);
          case TokenKind::Slash:
            if (*b == 0) {
              if (!divisionByZero_.isValid()) divisionByZero_ = dim;
              return std::nullopt;
            }
            if (*a == INT64_MIN && *b == -1) return std::nullopt;
            return *a / *b - ((*a % *b != 0) && ((*a < 0) != (*b < 0)) ? 1 : 0);
          default: return std::nullopt;
        }
      }
      default: return std::nullopt;
    }
  }
  NodeId divisionByZero() const { return divisionByZero_; }
  void reset() { divisionByZero_ = NodeId{}; }

  /// Appends the hyperparameters `node` names, in order of appearance, once each.
  void namesIn(NodeId node, std::vector<IdentifierId>& out) const {
    if (!node.isValid()) return;
    switch (tree_.kind(node)) {
      case NodeKind::Name: {
        IdentifierId name = tree_.tokens().identifier(tree_.token(node));
        if (hyper_.count(name.index) && std::find(out.begin(), out.end(), name) == out.end()) {
          out.push_back(name);
        }
        return;
      }
      case NodeKind::Paren: namesIn(tree_.childA(node), out); return;
      case NodeKind::Binary:
        namesIn(tree_.childA(node), out);
        namesIn(tree_.childB(node), out);
        return;
      default: return;
    }
  }

 private:
  const Tree& tree_;
  const DimStore& dims_;
  const std::unordered_map<uint32_t, size_t>& hyper_;
  const std::unordered_map<uint32_t, DimId>& bindings_;
  NodeId divisionByZero_;
};

}  // namespace

void Checker::checkWeightSizes(CreationWalk& walk, size_t owner, const DimBindings& bindings) {
  // A weight's shape with the values the chain's innermost creation gives
  // (`w: ...[64, 64 / groups]` of `G(groups=0)`): a size that divides by
  // zero or is negative makes the PyTorch module fail when it is built
  // (torch.empty raises), so it is an error at the argument that gives the
  // value, or at the default it takes, with a note at the weight's shape.
  // Zero is a size (an empty weight), as in a type written with literals. So
  // are sizes whose product PyTorch cannot count, or that no machine holds
  // (hugeWeight).
  const CallableInfo& info = module_.callables[owner];
  if (info.isFn) return;
  std::unordered_map<uint32_t, size_t> hyperIndex;  // by name
  for (const ParamInfo& p : info.params) {
    if (p.cls == ParamClass::Hyper) hyperIndex.emplace(p.name.index, hyperIndex.size());
  }
  WeightSizes sizes(tree_, module_.dims, hyperIndex, bindings);
  assert(!walk.chain.empty() && "walkCreations checks a body only inside a creation");
  const InstanceInfo& creation = *walk.chain.back();
  auto defaultOf = [&](IdentifierId name) {
    for (const ParamInfo& q : info.params) {
      if (q.name == name && q.node.isValid()) return tree_.childB(q.node);
    }
    return NodeId{};
  };
  auto defaulted = [&](IdentifierId name) {
    size_t i = hyperIndex.at(name.index);
    return i < creation.defaulted.size() && creation.defaulted[i];
  };
  // The hyperparameters behind `names` (a default computed from others,
  // `extra: int = n - 8`, has its value from theirs: they go first), shown
  // with their values, and where the first of them that the creation gives
  // gets its value (its argument), or else the first one's default.
  auto blame = [&](std::vector<IdentifierId> names) -> std::pair<std::string, NodeId> {
    for (size_t round = 0; round < 4; ++round) {
      std::vector<IdentifierId> expanded;
      for (IdentifierId name : names) {
        if (defaulted(name)) sizes.namesIn(defaultOf(name), expanded);
      }
      for (IdentifierId name : names) {
        if (std::find(expanded.begin(), expanded.end(), name) == expanded.end()) {
          expanded.push_back(name);
        }
      }
      bool more = expanded.size() > names.size();
      names = std::move(expanded);
      if (!more) break;
    }
    std::string with;
    for (IdentifierId name : names) {
      auto it = bindings.find(name.index);
      std::optional<int64_t> v =
          it != bindings.end() ? dims().constValue(it->second) : std::nullopt;
      with += fmt::format("{}{} = {}", with.empty() ? "" : ", ", spelling(name),
                          v ? std::to_string(*v) : std::string("?"));
    }
    NodeId at;
    uint32_t call = creation.site.index < module_.callOf.size()
                        ? module_.callOf[creation.site.index] : UINT32_MAX;
    if (tree_.kind(creation.site) == NodeKind::Call && call < module_.calls.size()) {
      for (IdentifierId name : names) {
        size_t h = hyperIndex.at(name.index);
        for (const auto& [param, node] : module_.calls[call].args) {
          if (param == h && !at.isValid()) at = node;
        }
      }
    }
    if (!at.isValid()) at = defaultOf(names[0]);
    if (!at.isValid()) at = creation.site;
    return {std::move(with), at};
  };
  // The diagnostic at `at` with the creation notes (none for the innermost
  // creation when `at` is one of its arguments).
  auto add = [&](std::pair<uint32_t, uint32_t> key, NodeId at, DiagnosticBuilder builder) {
    SourceRange site = rangeOf(creation.site);
    bool inCall = tree_.kind(creation.site) == NodeKind::Call &&
                  site.begin <= rangeOf(at).begin && rangeOf(at).end <= site.end;
    addCreationProblem(walk, key, at, std::move(builder), inCall);
  };
  for (const ParamInfo& p : info.params) {
    if (p.cls != ParamClass::Weight || !p.node.isValid()) continue;
    NodeId type = tree_.childA(p.node);
    if (!type.isValid() || tree_.kind(type) != NodeKind::TypeName) continue;
    NodeId shape;
    for (NodeId arg : tree_.list(tree_.listA(type))) {
      if (tree_.kind(arg) == NodeKind::Shape) shape = arg;
    }
    if (!shape.isValid()) continue;
    std::span<const NodeId> dimNodes = tree_.list(tree_.listA(shape));
    std::vector<int64_t> known;  // every size, while all are known and valid
    std::vector<IdentifierId> shapeNames;
    for (size_t d = 0; d < dimNodes.size(); ++d) {
      sizes.reset();
      std::optional<int64_t> size = sizes.value(dimNodes[d]);
      NodeId divisionByZero = sizes.divisionByZero();
      sizes.namesIn(dimNodes[d], shapeNames);
      if (!divisionByZero.isValid() && (!size || *size >= 0)) {
        if (size && known.size() == d) known.push_back(*size);
        continue;
      }
      // The hyperparameters that make it so: the divisor's, or the size's.
      std::vector<IdentifierId> names;
      sizes.namesIn(divisionByZero.isValid() ? tree_.childB(divisionByZero) : dimNodes[d], names);
      if (names.empty()) continue;  // written with literals: reported where declared
      auto [with, at] = blame(std::move(names));
      std::pair<uint32_t, uint32_t> key{at.index, 0xC0000000u};
      if (walk.seen(key)) return;
      std::string problem = divisionByZero.isValid()
                                ? std::string("divides by zero")
                                : fmt::format("is {}, and a size cannot be negative", *size);
      auto builder = diags_->report(Diag::InvalidWeightSize, source(), rangeOf(at), with, d,
                                    spelling(p.name), callableName(static_cast<int>(owner)),
                                    problem);
      builder.note(Note::WeightShapeHere, source(),
                   rangeOf(divisionByZero.isValid() ? divisionByZero : dimNodes[d]),
                   spelling(p.name));
      add(key, at, std::move(builder));
      return;  // one error per creation: the rest follows from the same values
    }
    // Every size valid: too many elements to build? (A shape of literals and
    // constants only is reported where it is declared.)
    if (known.size() != dimNodes.size() || shapeNames.empty()) continue;
    std::optional<HugeWeightProblem> huge = hugeWeight(known);
    if (!huge) continue;
    auto [with, at] = blame(std::move(shapeNames));
    std::pair<uint32_t, uint32_t> key{at.index, 0xC0000001u};
    if (walk.seen(key)) return;
    auto builder = diags_->report(huge->kind, source(), rangeOf(at), "with " + with + ", ",
                                  spelling(p.name), callableName(static_cast<int>(owner)),
                                  huge->elements, huge->bytes);
    builder.note(Note::WeightShapeHere, source(), rangeOf(shape), spelling(p.name));
    add(key, at, std::move(builder));
    return;
  }
}

std::optional<HugeWeightProblem> hugeWeight(std::span<const int64_t> sizes) {
  if (std::find(sizes.begin(), sizes.end(), 0) != sizes.end()) return std::nullopt;  // empty
  int64_t elements = 1;
  bool overflow = false;
  for (int64_t size : sizes) {
    overflow = overflow || __builtin_mul_overflow(elements, size, &elements);
  }
  if (!overflow && elements <= kHugeWeightElements) return std::nullopt;
  std::string product;
  for (int64_t size : sizes) product += fmt::format("{}{}", product.empty() ? "" : " x ", size);
  if (overflow) return HugeWeightProblem{Diag::WeightTooLarge, product, ""};
  double bytes = static_cast<double>(elements) * 4;
  const char* units[] = {"GiB", "TiB", "PiB", "EiB"};
  size_t unit = 0;
  bytes /= 1024.0 * 1024 * 1024;
  while (bytes >= 1024 && unit + 1 < std::size(units)) {
    bytes /= 1024;
    ++unit;
  }
  if (sizes.size() > 1) product += fmt::format(" = {}", elements);
  return HugeWeightProblem{Diag::HugeWeight, product, fmt::format("{:.1f} {}", bytes, units[unit])};
}

}  // namespace tritonc::sema

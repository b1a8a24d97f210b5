//===- CheckedModule.cpp - formatting and --dump-types --------------------===//
#include "tritonc/sema/CheckedModule.h"

#include <fmt/format.h>

namespace tritonc {

namespace {
const char* className(ParamClass cls) {
  switch (cls) {
    case ParamClass::Hyper: return "hyper";
    case ParamClass::Weight: return "weight";
    case ParamClass::Input: return "input";
  }
  return "?";
}

const char* callKindName(CallKind kind) {
  switch (kind) {
    case CallKind::None: return nullptr;
    case CallKind::Builtin: return "builtin";
    case CallKind::Cast: return "cast";
    case CallKind::Apply: return "apply";
    case CallKind::Instantiate: return "instantiate";
    case CallKind::Forward: return "forward";
    case CallKind::FnCall: return "fn";
  }
  return nullptr;
}
}  // namespace

std::string CheckedModule::formatType(TypeId type) const {
  if (!type.isValid()) {
    return "<none>";
  }
  return types.format(type, dims, *interner, [this](TypeKind kind, uint32_t ref) -> std::string {
    switch (kind) {
      case TypeKind::Layer: return "layer " + std::string(interner->spelling(callables[ref].name));
      case TypeKind::Function: return "fn " + std::string(interner->spelling(callables[ref].name));
      case TypeKind::Instance:
        return std::string(interner->spelling(callables[instances[ref].decl].name)) + " instance";
      case TypeKind::BuiltinInstance:
        return std::string(builtinLayerName(static_cast<BuiltinLayer>(instances[ref].decl))) +
               " instance";
      case TypeKind::Builtin:
        return "builtin " + std::string(builtinFnName(static_cast<BuiltinFn>(ref)));
      case TypeKind::BuiltinLayer:
        return "layer " + std::string(builtinLayerName(static_cast<BuiltinLayer>(ref)));
      case TypeKind::Module: return "module";
      default: return "?";
    }
  });
}

std::string CheckedModule::dump() const {
  std::string out;
  for (size_t i = firstLocal; i < callables.size(); ++i) {
    const CallableInfo& c = callables[i];
    out += fmt::format("{} {} -> {}{}\n", c.isFn ? "fn" : "layer", interner->spelling(c.name),
                       formatType(c.returnType),
                       static_cast<int>(i) == entryLayer ? " (entry)" : "");
    for (const ParamInfo& p : c.params) {
      out += fmt::format("  {} {}: {}{}\n", className(p.cls), interner->spelling(p.name),
                         formatType(p.type), p.implicit ? " (implicit size variable)" : "");
    }
    for (const ShapeVarInfo& v : c.shapeVars) {
      out += fmt::format("  shape {} = {}.shape[{}]\n", interner->spelling(v.name),
                         interner->spelling(c.params[v.param].name), v.dim);
    }
    for (const InstanceInfo& instance : instances) {
      if (instance.owner != static_cast<int>(i)) {
        continue;
      }
      std::string args;
      for (DimId d : instance.args) {
        args += args.empty() ? "" : ", ";
        args += dims.format(d, *interner);
      }
      std::string_view kind = instance.builtin
                                  ? builtinLayerName(static_cast<BuiltinLayer>(instance.decl))
                                  : interner->spelling(callables[instance.decl].name);
      out += fmt::format("  instance {} = {}({})\n",
                         instance.name.isValid() ? interner->spelling(instance.name) : "<unnamed>",
                         kind, args);
    }
  }
  if (!runtimeChecks.empty()) {
    out += fmt::format("run-time shape checks: {}\n", runtimeChecks.size());
  }
  out += tree->dump([this](NodeId node) -> std::string {
    std::string note;
    TypeId type = nodeType[node.index];
    NodeKind kind = tree->kind(node);
    bool expression = kind != NodeKind::Param && kind != NodeKind::Let &&
                      kind != NodeKind::Block && kind != NodeKind::TypeName &&
                      kind != NodeKind::Shape;
    if (type.isValid() && (expression || kind == NodeKind::Let)) {
      note += " : " + formatType(type);
    }
    if (const char* call = callKindName(callKind[node.index])) {
      note += fmt::format(" [{}]", call);
    }
    return note;
  });
  return out;
}

}  // namespace tritonc

//===- IR.cpp - IR storage, editing and the --dump-ir printer -------------===//
#include "tritonc/ir/IR.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

#include "tritonc/base/Check.h"
#include "tritonc/base/Text.h"

namespace tritonc::ir {

namespace {
enum Flag : unsigned { None = 0, Pure = 1, Terminator = 2, Stateful = 4 };
constexpr std::string_view kNames[] = {
#define OP(Name, Spelling, Flags) Spelling,
#include "tritonc/ir/Ops.def"
};
constexpr unsigned kFlags[] = {
#define OP(Name, Spelling, Flags) Flags,
#include "tritonc/ir/Ops.def"
};
}  // namespace

std::string_view opName(OpKind kind) { return kNames[static_cast<size_t>(kind)]; }
bool isPure(OpKind kind) { return (kFlags[static_cast<size_t>(kind)] & Pure) != 0; }
bool isTerminator(OpKind kind) { return (kFlags[static_cast<size_t>(kind)] & Terminator) != 0; }

bool isElementwise(OpKind kind) {
  switch (kind) {
    case OpKind::Add:
    case OpKind::Sub:
    case OpKind::Mul:
    case OpKind::Div:
    case OpKind::Mod:
    case OpKind::Pow:
    case OpKind::Neg:
    case OpKind::Not:
    case OpKind::Eq:
    case OpKind::Ne:
    case OpKind::Lt:
    case OpKind::Le:
    case OpKind::Gt:
    case OpKind::Ge:
    case OpKind::And:
    case OpKind::Or: return true;
    default: return false;
  }
}

bool makesNewValue(OpKind kind) {
  // (Builtins and indexing may return a view.)
  return isElementwise(kind) || kind == OpKind::MatMul || kind == OpKind::FusedMatMul ||
         kind == OpKind::FusedConv2d;
}

BlockId Module::createBlock(OpId parent) {
  blocks.push_back(Block{{}, {}, parent});
  return BlockId{static_cast<uint32_t>(blocks.size() - 1)};
}

ValueId Module::addArg(BlockId block, TypeId type, IdentifierId name) {
  values.push_back(Value{type, OpId{}, block, name});
  ValueId id{static_cast<uint32_t>(values.size() - 1)};
  blocks[block.index].args.push_back(id);
  return id;
}

OpId Module::createOp(BlockId block, OpKind kind, std::span<const ValueId> operands,
                      std::span<const TypeId> resultTypes) {
  OpId id{static_cast<uint32_t>(ops.size())};
  Op o;
  o.kind = kind;
  o.parent = block;
  o.operandsBegin = static_cast<uint32_t>(operandPool.size());
  o.operandsCount = static_cast<uint32_t>(operands.size());
  operandPool.insert(operandPool.end(), operands.begin(), operands.end());
  o.resultsBegin = static_cast<uint32_t>(resultPool.size());
  o.resultsCount = static_cast<uint32_t>(resultTypes.size());
  for (TypeId type : resultTypes) {
    values.push_back(Value{type, id, BlockId{}, IdentifierId{}});
    resultPool.push_back(ValueId{static_cast<uint32_t>(values.size() - 1)});
  }
  ops.push_back(o);
  if (block.isValid()) {
    blocks[block.index].ops.push_back(id);
  }
  return id;
}

void Module::setInts(OpId op, std::span<const int64_t> list) {
  Op& o = ops[op.index];
  o.intsBegin = static_cast<uint32_t>(intPool.size());
  o.intsCount = static_cast<uint32_t>(list.size());
  intPool.insert(intPool.end(), list.begin(), list.end());
}

uint32_t Module::internString(std::string text) {
  std::hash<std::string_view> hash;
  if (indexedStrings_ > strings.size()) {  // strings were replaced: index anew
    stringIndex_.clear();
    indexedStrings_ = 0;
  }
  for (; indexedStrings_ < strings.size(); ++indexedStrings_) {
    stringIndex_.emplace(hash(strings[indexedStrings_]), static_cast<uint32_t>(indexedStrings_));
  }
  size_t h = hash(text);
  auto [begin, end] = stringIndex_.equal_range(h);
  uint32_t found = UINT32_MAX;
  for (auto it = begin; it != end; ++it) {
    // The first of equal strings, as a search from the front finds it.
    if (strings[it->second] == text) found = std::min(found, it->second);
  }
  if (found != UINT32_MAX) return found;
  strings.push_back(std::move(text));
  auto index = static_cast<uint32_t>(strings.size() - 1);
  stringIndex_.emplace(h, index);
  indexedStrings_ = strings.size();
  return index;
}

void Module::replaceAllUses(ValueId from, ValueId to) {
  for (ValueId& operand : operandPool) {
    if (operand == from) {
      operand = to;
    }
  }
}

void Module::erase(OpId id) {
  Op& o = ops[id.index];
  if (o.erased) {
    return;
  }
  o.erased = true;
  if (o.parent.isValid()) {
    if (deferErasure_) {
      erasedFrom_.push_back(o.parent.index);
    } else {
      std::erase(blocks[o.parent.index].ops, id);
    }
  }
  for (BlockId region : o.regions) {
    if (region.isValid()) {
      std::vector<OpId> inner = blocks[region.index].ops;
      for (OpId child : inner) {
        erase(child);
      }
    }
  }
}

void Module::flushErasure() {
  deferErasure_ = false;
  std::sort(erasedFrom_.begin(), erasedFrom_.end());
  erasedFrom_.erase(std::unique(erasedFrom_.begin(), erasedFrom_.end()), erasedFrom_.end());
  for (uint32_t block : erasedFrom_) {
    std::erase_if(blocks[block].ops, [&](OpId id) { return ops[id.index].erased; });
  }
  erasedFrom_.clear();
}

std::string Module::formatType(TypeId type) const {
  return types.format(type, dims, *interner, [](TypeKind kind, uint32_t ref) {
    switch (kind) {
      case TypeKind::Instance:
      case TypeKind::BuiltinInstance: return std::string("instance");
      default: return fmt::format("decl#{}", ref);
    }
  });
}

// ---- printer ------------------------------------------------------------------

namespace {

constexpr const char* kActivations[] = {"none", "relu", "gelu", "silu", "relu6"};

class Printer {
 public:
  explicit Printer(const Module& m) : m_(m) {}

  std::string run() {
    for (const Global& g : m_.globals) {
      numbers_.clear();
      next_ = 0;
      out_ += fmt::format("global @{}{} : {}", name(g.name), from(g.origin),
                          m_.formatType(g.type));
      printRegion(g.init, 0, " = ");
      out_ += "\n";
    }
    for (size_t i = 0; i < m_.functions.size(); ++i) {
      printFunction(m_.functions[i], static_cast<int>(i) == m_.entry);
    }
    return std::move(out_);
  }

 private:
  std::string name(IdentifierId id) const { return std::string(m_.interner->spelling(id)); }
  /// ` from blocks` for what an imported file defines.
  std::string from(uint32_t origin) const {
    return origin == 0 || origin >= m_.origins.size() ? std::string()
                                                      : " from " + m_.origins[origin];
  }
  std::string value(ValueId v) {
    auto it = numbers_.find(v.index);
    if (it == numbers_.end()) {
      return fmt::format("%<undefined {}>", v.index);  // the verifier reports it
    }
    return it->second;
  }
  /// `, residual=%r` of a fused_conv/fused_linear with a second operand.
  std::string residual(std::span<const ValueId> operands) {
    return operands.size() > 1 ? ", residual=" + value(operands[1]) : std::string();
  }
  void define(ValueId v) {
    const Value& value = m_.values[v.index];
    if (!value.def.isValid() && value.name.isValid() && blockIsBody_) {
      numbers_[v.index] = "%" + name(value.name);
      return;
    }
    numbers_[v.index] = fmt::format("%{}", next_++);
  }
  void indent(int depth) { out_.append(static_cast<size_t>(depth) * 2, ' '); }

  void printFunction(const Function& f, bool entry) {
    numbers_.clear();
    next_ = 0;
    function_ = &f;
    const char* kind = f.kind == Function::Kind::Layer ? "layer"
                       : f.kind == Function::Kind::Fn  ? "fn"
                                                       : "main";
    if (f.kind == Function::Kind::Main) {
      out_ += "main {\n";
    } else {
      std::string same;
      if (f.sameAs >= 0) {
        const Function& first = m_.functions[static_cast<size_t>(f.sameAs)];
        same = fmt::format(" (same as @{})", name(first.name));
      }
      out_ += fmt::format("{} @{}{}{}{} {{\n", kind, name(f.name), from(f.origin),
                          entry ? " (entry)" : "", same);
    }
    for (const HyperDecl& h : f.hypers) {
      out_ += fmt::format("  hyper @{} : {}{}", name(h.name), m_.formatType(h.type),
                          h.implicit ? " (implicit)" : "");
      printRegion(h.defaultValue, 1, " = ");
      out_ += "\n";
    }
    for (const WeightDecl& w : f.weights) {
      out_ += fmt::format("  weight @{} : {}", name(w.name), m_.formatType(w.type));
      if (w.sparsity > 0.0) {
        out_ += fmt::format(" (sparsity {})", formatFloat(w.sparsity));
      }
      if (w.packRuns == PackRuns::Columns) {
        out_ += " (packed by columns)";
      } else if (w.packRuns == PackRuns::LastDim) {
        out_ += " (packed along its last dimension)";
      }
      printRegion(w.init, 1, " = ");
      out_ += "\n";
    }
    for (const InstanceDecl& inst : f.instances) {
      out_ += fmt::format("  instance @{} : {}\n", name(inst.name),
                          inst.builtin ? std::string(builtinLayerName(
                                             static_cast<BuiltinLayer>(inst.decl)))
                                       : name(m_.functions[inst.decl].name));
    }
    const Block& body = m_.blocks[f.body.index];
    blockIsBody_ = true;
    for (ValueId arg : body.args) {
      define(arg);
    }
    blockIsBody_ = false;
    out_ += "  forward(";
    for (size_t i = 0; i < body.args.size(); ++i) {
      out_ += fmt::format("{}{} : {}", i ? ", " : "", value(body.args[i]),
                          m_.formatType(m_.typeOf(body.args[i])));
    }
    out_ += fmt::format(") -> {} {{\n", m_.formatType(f.returnType));
    printOps(f.body, 2);
    out_ += "  }\n}\n";
  }

  // ` = {` ops `}` for an optional region (defaults, initializers).
  void printRegion(BlockId block, int depth, const char* lead) {
    if (!block.isValid()) {
      return;
    }
    out_ += lead;
    out_ += "{\n";
    printOps(block, depth + 1);
    indent(depth);
    out_ += "}";
  }

  void printOps(BlockId block, int depth) {
    for (OpId id : m_.blocks[block.index].ops) {
      printOp(id, depth);
    }
  }

  std::string operandList(OpId id, size_t from = 0) {
    std::string text;
    std::span<const ValueId> operands = m_.operands(id);
    for (size_t i = from; i < operands.size(); ++i) {
      text += (i > from ? ", " : "") + value(operands[i]);
    }
    return text;
  }

  void printOp(OpId id, int depth) {
    const Op& o = m_.op(id);
    std::span<const ValueId> results = m_.results(id);
    std::span<const ValueId> operands = m_.operands(id);
    indent(depth);
    // Results are numbered after the regions' values would be, so number
    // them first: a result is used only after its op.
    std::string lhs;
    for (size_t i = 0; i < results.size(); ++i) {
      define(results[i]);
      lhs += (i ? ", " : "") + value(results[i]);
    }
    if (!lhs.empty()) {
      out_ += lhs + " = ";
    }
    out_ += opName(o.kind);
    switch (o.kind) {
      case OpKind::Constant:
        switch (o.constKind) {
          case ConstKind::Int: out_ += fmt::format(" {}", o.intAttr); break;
          case ConstKind::Float: out_ += " " + formatFloat(o.floatAttr); break;
          case ConstKind::Bool: out_ += o.intAttr != 0 ? " true" : " false"; break;
          case ConstKind::String: out_ += " " + quoteForDump(m_.strings[o.strAttr]); break;
          case ConstKind::None: break;
        }
        break;
      case OpKind::Hyper:
        out_ += " @" + name(function_->hypers[static_cast<size_t>(o.intAttr)].name);
        break;
      case OpKind::Weight:
        out_ += " @" + name(function_->weights[static_cast<size_t>(o.intAttr)].name);
        break;
      case OpKind::ShapeDim: out_ += fmt::format(" {}, {}", operandList(id), o.intAttr); break;
      case OpKind::Global:
        out_ += " @" + name(m_.globals[static_cast<size_t>(o.intAttr)].name);
        break;
      case OpKind::InstanceMember:
        out_ += fmt::format(" {}.{}", operandList(id), m_.strings[o.strAttr]);
        break;
      case OpKind::CheckDim:  // dimension -1: the rank; ints [d]: the other's dimension d
        out_ += fmt::format(" {}{} == {}{} {}", value(operands[0]),
                            o.intAttr < 0 ? std::string(".rank") : fmt::format("[{}]", o.intAttr),
                            value(operands[1]),
                            m_.ints(id).empty() ? std::string()
                                                : fmt::format("[{}]", m_.ints(id)[0]),
                            quoteForDump(m_.strings[o.strAttr]));
        break;
      case OpKind::Builtin:
      case OpKind::BuiltinStateful:
      case OpKind::BuiltinEffect: {
        auto fn = static_cast<BuiltinFn>(o.intAttr);
        std::vector<std::string_view> names = builtinFnParamNames(fn);
        std::span<const int64_t> given = m_.ints(id);
        out_ += fmt::format(" @{}(", builtinFnName(fn));
        for (size_t i = 0; i < operands.size(); ++i) {
          auto param = static_cast<size_t>(given[i]);
          out_ += i ? ", " : "";
          if (param != 0 && param < names.size()) {
            out_ += fmt::format("{}=", names[param]);
          }
          out_ += value(operands[i]);
        }
        out_ += ")";
        break;
      }
      case OpKind::FusedConv: {
        std::span<const int64_t> refs = m_.ints(id);
        out_ += fmt::format(" @{}", name(function_->instances[static_cast<size_t>(refs[0])].name));
        if (refs[1] >= 0) {
          out_ += " + @" + name(function_->instances[static_cast<size_t>(refs[1])].name);
        }
        out_ += fmt::format("({}{}) {{act={}}}", value(operands[0]), residual(operands),
                            kActivations[o.intAttr]);
        break;
      }
      case OpKind::FusedLinear:
        out_ += fmt::format(" @{}({}{}) {{act={}}}",
                            name(function_->instances[static_cast<size_t>(m_.ints(id)[0])].name),
                            value(operands[0]), residual(operands), kActivations[o.intAttr]);
        break;
      case OpKind::FusedConv2d: {
        std::span<const int64_t> given = m_.ints(id);
        std::vector<std::string_view> names = builtinFnParamNames(BuiltinFn::Conv2dFn);
        out_ += " @conv2d(";
        for (size_t i = 0; i < given.size(); ++i) {
          auto param = static_cast<size_t>(given[i]);
          out_ += i ? ", " : "";
          if (param != 0 && param < names.size()) out_ += fmt::format("{}=", names[param]);
          out_ += value(operands[i]);
        }
        out_ += ")";
        if (operands.size() > given.size()) out_ += ", scale=" + value(operands.back());
        out_ += fmt::format(" {{act={}}}", kActivations[o.intAttr]);
        break;
      }
      case OpKind::FusedMatMul: {
        std::span<const int64_t> flags = m_.ints(id);
        out_ += fmt::format(" {}, {}", value(operands[0]), value(operands[1]));
        size_t next = 2;
        if (flags[1] != 0) out_ += ", bias=" + value(operands[next++]);
        if (flags[2] != 0) out_ += ", scale=" + value(operands[next++]);
        out_ += fmt::format(" {{layout={}, act={}}}", flags[0] != 0 ? "linear" : "matmul",
                            kActivations[o.intAttr]);
        break;
      }
      case OpKind::Apply:
      case OpKind::CallFn:
        out_ += fmt::format(" @{}({})", name(m_.functions[static_cast<size_t>(o.intAttr)].name),
                            operandList(id));
        break;
      case OpKind::Instantiate:
      case OpKind::Forward:
        out_ += fmt::format(" @{}({})",
                            name(function_->instances[static_cast<size_t>(o.intAttr)].name),
                            operandList(id));
        break;
      case OpKind::Index: {
        out_ += " " + value(operands[0]) + "[";
        size_t next = 1;
        std::span<const int64_t> codes = m_.ints(id);
        for (size_t i = 0; i < codes.size(); ++i) {
          out_ += i ? ", " : "";
          int64_t code = codes[i];
          if (code == -1) {
            out_ += value(operands[next++]);
          } else if (code == -2) {
            out_ += ":";
          } else {
            std::string parts[3];
            for (int b = 0; b < 3; ++b) {
              if ((code >> b) & 1) {
                parts[b] = value(operands[next++]);
              }
            }
            out_ += parts[0] + ":" + parts[1];
            if (code & 4) {
              out_ += ":" + parts[2];
            }
          }
        }
        out_ += "]";
        break;
      }
      case OpKind::If: {
        out_ += " " + value(operands[0]) + " {\n";
        printOps(o.regions[0], depth + 1);
        indent(depth);
        out_ += "} else {\n";
        printOps(o.regions[1], depth + 1);
        indent(depth);
        out_ += "}";
        break;
      }
      case OpKind::For: {
        const Block& body = m_.blocks[o.regions[0].index];
        for (ValueId arg : body.args) {
          define(arg);
        }
        out_ += fmt::format(" {} = {} to {} step {}", value(body.args[0]), value(operands[0]),
                            value(operands[1]), value(operands[2]));
        printCarried(body, operands, 3);
        out_ += " {\n";
        printOps(o.regions[0], depth + 1);
        indent(depth);
        out_ += "}";
        break;
      }
      case OpKind::While: {
        const Block& cond = m_.blocks[o.regions[0].index];
        const Block& body = m_.blocks[o.regions[1].index];
        for (ValueId arg : cond.args) {
          define(arg);
        }
        printCarried(cond, operands, 0);
        out_ += " {\n";
        printOps(o.regions[0], depth + 1);
        indent(depth);
        out_ += "} do";
        // The body's arguments are the same carried values, numbered anew.
        for (ValueId arg : body.args) {
          define(arg);
        }
        std::string args;
        for (size_t i = 0; i < body.args.size(); ++i) {
          args += (i ? ", " : "") + value(body.args[i]);
        }
        out_ += args.empty() ? " {\n" : " (" + args + ") {\n";
        printOps(o.regions[1], depth + 1);
        indent(depth);
        out_ += "}";
        break;
      }
      default:
        if (!operands.empty()) {
          out_ += " " + operandList(id);
        }
        break;
    }
    if (o.inplace) {
      out_ += " {inplace}";
    }
    if (!results.empty()) {
      out_ += " : ";
      for (size_t i = 0; i < results.size(); ++i) {
        out_ += (i ? ", " : "") + m_.formatType(m_.typeOf(results[i]));
      }
    }
    out_ += "\n";
  }

  // ` iter(%a = %init, ...)` for the carried values of a loop region.
  void printCarried(const Block& region, std::span<const ValueId> operands, size_t first) {
    size_t argBase = region.args.size() - (operands.size() - first);
    if (operands.size() == first) {
      return;
    }
    out_ += " iter(";
    for (size_t i = first; i < operands.size(); ++i) {
      out_ += fmt::format("{}{} = {}", i > first ? ", " : "",
                          value(region.args[argBase + (i - first)]), value(operands[i]));
    }
    out_ += ")";
  }

  const Module& m_;
  const Function* function_ = nullptr;
  std::unordered_map<uint32_t, std::string> numbers_;
  int next_ = 0;
  bool blockIsBody_ = false;
  std::string out_;
};

}  // namespace

std::string Module::print() const { return Printer(*this).run(); }

}  // namespace tritonc::ir

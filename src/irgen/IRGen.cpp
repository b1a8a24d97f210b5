//===- IRGen.cpp - checked AST to IR --------------------------------------===//
//
// Walks each layer/fn body once, keeping the current SSA value of every
// variable. Assignments go through a log so that a structured `if` can
// generate its branches from the same starting state and join them: the
// variables a branch reassigns become the `if`'s results, yielded by each
// branch. Loops carry the variables their body assigns as block arguments.
// Everything about names, types and call bindings comes from CheckedModule.
//
//===----------------------------------------------------------------------===//
#include "tritonc/irgen/IRGen.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "PackLayout.h"
#include "tritonc/base/Check.h"

namespace tritonc {

namespace {

using namespace ir;

class IRGen {
 public:
  IRGen(const CheckedModule& checked, Module& program, const IRGenOptions& options)
      : cm_(checked), tree_(*checked.tree), tokens_(checked.tree->tokens()), options_(options),
        m_(program) {
    TRITONC_CHECK(program.functions.size() == checked.firstLocal,
                  "the program holds exactly the imported files' functions");
    // The checked module's stores extend the program's (ImportContext).
    m_.types = checked.types;
    m_.dims = checked.dims;
    m_.interner = checked.interner;
    env_.assign(checked.symbols.size(), ValueId{});
    globalOf_.assign(checked.symbols.size(), UINT32_MAX);
    if (options.runtimeShapeChecks) {
      checksOf_.assign(tree_.size(), {});
      for (size_t i = 0; i < checked.runtimeChecks.size(); ++i) {
        const RuntimeShapeCheck& check = checked.runtimeChecks[i];
        checksOf_[check.value.index].push_back(static_cast<uint32_t>(i));
        if (check.other.isValid()) valueOf_.emplace(check.other.index, ValueId{});
      }
    }
  }

  void run();

 private:
  // ---- variables -------------------------------------------------------------
  void assign(uint32_t symbol, ValueId value) {
    log_.push_back({symbol, env_[symbol]});
    env_[symbol] = value;
  }
  /// Undoes assignments back to `mark`; returns the symbols that were
  /// defined before the mark and reassigned since, with their latest values.
  std::vector<std::pair<uint32_t, ValueId>> rewind(size_t mark) {
    std::vector<std::pair<uint32_t, ValueId>> changed;
    std::unordered_set<uint32_t> seen;
    for (size_t i = mark; i < log_.size(); ++i) {
      uint32_t symbol = log_[i].symbol;
      // The oldest entry tells whether the symbol existed before the mark;
      // env_ still holds its latest value.
      if (seen.insert(symbol).second && log_[i].previous.isValid()) {
        changed.emplace_back(symbol, env_[symbol]);
      }
    }
    for (size_t i = log_.size(); i-- > mark;) {
      env_[log_[i].symbol] = log_[i].previous;
    }
    log_.resize(mark);
    std::sort(changed.begin(), changed.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    return changed;
  }

  // ---- ops ------------------------------------------------------------------
  OpId emit(OpKind kind, std::span<const ValueId> operands, std::span<const TypeId> types,
            NodeId at = NodeId{}) {
    OpId op = m_.createOp(block_, kind, operands, types);
    if (at.isValid()) {
      if (begins_.empty()) begins_ = tree_.beginOffsets();
      m_.op(op).loc = begins_[at.index];
    }
    return op;
  }
  ValueId emit1(OpKind kind, std::span<const ValueId> operands, TypeId type, NodeId at = NodeId{}) {
    TypeId types[] = {type};
    return m_.result(emit(kind, operands, types, at));
  }
  TypeId typeOf(NodeId node) const {
    TypeId type = cm_.nodeType[node.index];
    return type.isValid() ? type : m_.types.unknown();
  }
  ValueId constantInt(int64_t value, TypeId type) {
    OpId op = emit(OpKind::Constant, {}, std::span<const TypeId>(&type, 1));
    m_.op(op).constKind = ConstKind::Int;
    m_.op(op).intAttr = value;
    return m_.result(op);
  }

  // ---- functions --------------------------------------------------------------
  void genFunction(int index);
  void genMain(NodeId mainNode, size_t functionIndex);
  void genGlobal(NodeId let);
  BlockId genRegion(NodeId expr);  ///< a block that yields expr (defaults, inits)
  ValueId paramValue(uint32_t param);

  // ---- statements -----------------------------------------------------------------
  void genBlock(NodeId block);
  void genStatement(NodeId statement);
  void genIf(NodeId statement);
  void genFor(NodeId statement);
  void genWhile(NodeId statement);
  /// Symbols declared before `loop` and assigned in its body (its carried values).
  std::vector<uint32_t> carriedBy(NodeId body);
  void genLoopBody(BlockId body, NodeId statements, const std::vector<uint32_t>& carried);
  void bindLoopResults(OpId loop, const std::vector<uint32_t>& carried);

  // ---- expressions -------------------------------------------------------------------
  ValueId gen(NodeId node);  ///< genValue, then the node's -O0 shape checks
  ValueId genValue(NodeId node);
  ValueId dimValue(DimId dim);
  void emitCheck(const RuntimeShapeCheck& check, ValueId value);
  void emitPairCheck(const RuntimeShapeCheck& check, ValueId value);
  std::string valueText(NodeId node, std::string_view otherwise) const;
  void emitInputChecks(const CallableInfo& info);
  /// The file a check message names: `{source}` for the compiled file, which
  /// the emitter fills in (so that the checked IR does not depend on the
  /// input's name: one L2 entry for identical sources anywhere), an imported
  /// file by its name.
  std::string checkSourceName() const {
    if (options_.origin == 0) return std::string(ir::kCheckSourcePlaceholder);
    std::string name;  // its braces doubled: `{actual}` in a name is text
    for (char c : tokens_.source().name()) name += c == '{' ? std::string("{{") : std::string(1, c);
    return name;
  }
  ValueId genName(NodeId node);
  ValueId genLiteral(NodeId node);
  ValueId genInt64Min(NodeId node);
  ValueId genCall(NodeId node);
  NodeId builtinLayerSize(const CallInfo& call, int64_t param, NodeId arg) const;
  bool isStateful(BuiltinFn fn, const CallInfo& call) const;
  /// The index operands and codes of an Index node (after its base operand).
  void genIndices(NodeId node, std::vector<ValueId>& operands, std::vector<int64_t>& codes);
  void assignTo(NodeId target, ValueId value, NodeId at);
  bool mayRaiseOrAct(NodeId expr) const;
  ValueId genShortCircuit(NodeId node, bool isAnd);

  struct LogEntry {
    uint32_t symbol;
    ValueId previous;
  };
  struct Loop {
    std::vector<uint32_t> carried;
  };

  const CheckedModule& cm_;
  const Tree& tree_;
  std::vector<uint32_t> begins_;  ///< Tree::beginOffsets, computed at the first op placed
  const TokenizedBuffer& tokens_;
  IRGenOptions options_;
  std::vector<std::vector<uint32_t>> checksOf_;  ///< per node: runtimeChecks indices
  /// The latest value of each node another value is checked against (`?`
  /// against `?`: RuntimeShapeCheck::other).
  std::unordered_map<uint32_t, ValueId> valueOf_;
  Module& m_;
  std::vector<ValueId> env_;           ///< per symbol: its current value
  std::vector<uint32_t> globalOf_;     ///< per Constant symbol: its global
  std::vector<LogEntry> log_;
  std::vector<Loop> loops_;
  std::vector<ValueId> params_;        ///< per parameter of the current function
  std::vector<uint32_t> hyperIndex_;   ///< per parameter: index among hypers/weights/inputs
  std::vector<ValueId> shapeVars_;
  std::vector<uint32_t> instanceLocal_;  ///< per checked instance: index in its function
  int callable_ = -1;
  Function* function_ = nullptr;
  BlockId block_;
  bool terminated_ = false;
  bool inBody_ = false;  ///< generating a forward body (else a default/init region)
};

void IRGen::run() {
  instanceLocal_.assign(cm_.instances.size(), UINT32_MAX);
  m_.functions.resize(cm_.callables.size());
  size_t firstGlobal = m_.globals.size();
  // Globals first: bodies refer to them.
  for (NodeId item : tree_.list(tree_.listA(tree_.root()))) {
    if (tree_.kind(item) == NodeKind::Let) {
      genGlobal(item);
    }
  }
  for (size_t i = cm_.firstLocal; i < cm_.callables.size(); ++i) {
    genFunction(static_cast<int>(i));
    m_.functions[i].origin = options_.origin;
  }
  for (size_t i = firstGlobal; i < m_.globals.size(); ++i) {
    m_.globals[i].origin = options_.origin;
  }
  annotatePackLayouts(m_);
  if (options_.origin != 0) {
    return;  // an imported file's `main` is not part of the program
  }
  for (NodeId item : tree_.list(tree_.listA(tree_.root()))) {
    if (tree_.kind(item) == NodeKind::Main) {
      m_.functions.emplace_back();
      genMain(item, m_.functions.size() - 1);
    }
  }
  m_.entry = cm_.entryLayer;
}

void IRGen::genGlobal(NodeId let) {
  uint32_t symbol = cm_.nodeSymbol[let.index];
  if (symbol == UINT32_MAX || !tree_.childB(let).isValid()) {
    return;
  }
  Global g;
  g.name = cm_.symbols[symbol].name;
  g.type = cm_.symbols[symbol].type;
  function_ = nullptr;
  inBody_ = false;
  g.init = genRegion(tree_.childB(let));
  globalOf_[symbol] = static_cast<uint32_t>(m_.globals.size());
  m_.globals.push_back(g);
}

BlockId IRGen::genRegion(NodeId expr) {
  BlockId saved = block_;
  block_ = m_.createBlock();
  BlockId region = block_;
  ValueId value = gen(expr);
  emit(OpKind::Yield, std::span<const ValueId>(&value, 1), {});
  block_ = saved;
  return region;
}

ValueId IRGen::paramValue(uint32_t param) {
  if (inBody_) {
    return params_[param];
  }
  // In a default or initializer region: read the hyperparameter there.
  const ParamInfo& p = cm_.callables[callable_].params[param];
  OpId op = emit(p.cls == ParamClass::Weight ? OpKind::Weight : OpKind::Hyper, {},
                 std::span<const TypeId>(&p.type, 1));
  m_.op(op).intAttr = hyperIndex_[param];
  return m_.result(op);
}

void IRGen::genFunction(int index) {
  const CallableInfo& info = cm_.callables[index];
  callable_ = index;
  Function& f = m_.functions[static_cast<size_t>(index)];
  function_ = &f;
  f.kind = info.isFn ? Function::Kind::Fn : Function::Kind::Layer;
  f.name = info.name;
  f.returnType = info.returnType;
  f.body = m_.createBlock();
  params_.assign(info.params.size(), ValueId{});
  hyperIndex_.assign(info.params.size(), 0);
  // Declarations (defaults and initializers are regions of their own).
  inBody_ = false;
  for (size_t i = 0; i < info.params.size(); ++i) {
    const ParamInfo& p = info.params[i];
    NodeId init = p.node.isValid() ? tree_.childB(p.node) : NodeId{};
    switch (p.cls) {
      case ParamClass::Hyper:
        hyperIndex_[i] = static_cast<uint32_t>(f.hypers.size());
        f.hypers.push_back(HyperDecl{p.name, p.type, p.implicit, BlockId{}});
        f.params.push_back(ParamRef{ParamRef::Kind::Hyper, hyperIndex_[i]});
        break;
      case ParamClass::Weight:
        hyperIndex_[i] = static_cast<uint32_t>(f.weights.size());
        f.weights.push_back(WeightDecl{p.name, p.type, BlockId{}});
        f.params.push_back(ParamRef{ParamRef::Kind::Weight, hyperIndex_[i]});
        break;
      case ParamClass::Input:
        hyperIndex_[i] = static_cast<uint32_t>(f.inputs.size());
        f.inputs.push_back(InputDecl{p.name, p.type, BlockId{}});
        f.params.push_back(ParamRef{ParamRef::Kind::Input, hyperIndex_[i]});
        break;
    }
    (void)init;
  }
  for (size_t i = 0; i < info.params.size(); ++i) {
    const ParamInfo& p = info.params[i];
    NodeId init = p.node.isValid() ? tree_.childB(p.node) : NodeId{};
    if (!init.isValid()) {
      continue;
    }
    BlockId region = genRegion(init);
    switch (p.cls) {
      case ParamClass::Hyper: f.hypers[hyperIndex_[i]].defaultValue = region; break;
      case ParamClass::Weight: f.weights[hyperIndex_[i]].init = region; break;
      case ParamClass::Input: f.inputs[hyperIndex_[i]].defaultValue = region; break;
    }
  }
  // The body: inputs are block arguments; hyperparameters and weights are
  // read once at entry (unused reads are dead code for -O1).
  block_ = f.body;
  inBody_ = true;
  terminated_ = false;
  for (size_t i = 0; i < info.params.size(); ++i) {
    const ParamInfo& p = info.params[i];
    if (p.cls == ParamClass::Input) {
      params_[i] = m_.addArg(f.body, p.type, p.name);
    }
  }
  for (size_t i = 0; i < info.params.size(); ++i) {
    const ParamInfo& p = info.params[i];
    if (p.cls != ParamClass::Input) {
      OpId op = emit(p.cls == ParamClass::Hyper ? OpKind::Hyper : OpKind::Weight, {},
                     std::span<const TypeId>(&p.type, 1));
      m_.op(op).intAttr = hyperIndex_[i];
      params_[i] = m_.result(op);
    }
  }
  // Inputs may be reassigned like any variable: their symbols start with
  // the parameters' values.
  for (size_t i = 0; i < info.paramSymbols.size(); ++i) {
    env_[info.paramSymbols[i]] = params_[i];
  }
  shapeVars_.clear();
  for (const ShapeVarInfo& v : info.shapeVars) {
    ValueId input = params_[v.param];
    TypeId int32 = m_.types.scalar(DType::Int32);
    OpId dim = emit(OpKind::ShapeDim, std::span<const ValueId>(&input, 1),
                    std::span<const TypeId>(&int32, 1));
    m_.op(dim).intAttr = v.dim;
    shapeVars_.push_back(m_.result(dim));
  }
  for (size_t i = 0; i < info.shapeVarSymbols.size(); ++i) {
    env_[info.shapeVarSymbols[i]] = shapeVars_[i];
  }
  if (options_.runtimeShapeChecks) {
    emitInputChecks(info);
  }
  genBlock(tree_.childC(info.node));
  if (!terminated_) {
    emit(OpKind::Return, {}, {});
  }
  function_ = nullptr;
}

void IRGen::genMain(NodeId mainNode, size_t functionIndex) {
  Function& f = m_.functions[functionIndex];
  function_ = &f;
  callable_ = -1;
  f.kind = Function::Kind::Main;
  f.name = IdentifierId{};
  f.returnType = m_.types.voidType();
  f.body = m_.createBlock();
  block_ = f.body;
  inBody_ = true;
  terminated_ = false;
  genBlock(tree_.childC(mainNode));
  if (!terminated_) {
    emit(OpKind::Return, {}, {});
  }
  function_ = nullptr;
}

// ---- statements -------------------------------------------------------------------

void IRGen::genBlock(NodeId block) {
  if (!block.isValid()) {
    return;
  }
  for (NodeId statement : tree_.list(tree_.listA(block))) {
    if (terminated_) {
      break;  // after return, break or continue: unreachable
    }
    genStatement(statement);
  }
}

void IRGen::genStatement(NodeId statement) {
  switch (tree_.kind(statement)) {
    case NodeKind::Let: {
      uint32_t symbol = cm_.nodeSymbol[statement.index];
      NodeId init = tree_.childB(statement);
      ValueId value;
      if (init.isValid()) {
        value = gen(init);
      } else {
        // `let x: T` without a value: undefined until assigned.
        TypeId type = cm_.symbols[symbol].type;
        value = m_.result(emit(OpKind::Constant, {}, std::span<const TypeId>(&type, 1)));
      }
      if (!m_.values[value.index].name.isValid()) {
        m_.values[value.index].name = cm_.symbols[symbol].name;
      }
      assign(symbol, value);
      break;
    }
    case NodeKind::Assign: {
      NodeId target = tree_.childA(statement);
      TokenKind op = tokens_.kind(tree_.token(statement));
      ValueId rhs = gen(tree_.childB(statement));
      ValueId value = rhs;
      if (op != TokenKind::Equal) {
        OpKind kind = op == TokenKind::PlusEqual    ? OpKind::Add
                      : op == TokenKind::MinusEqual ? OpKind::Sub
                      : op == TokenKind::StarEqual  ? OpKind::Mul
                      : op == TokenKind::SlashEqual ? OpKind::Div
                                                    : OpKind::MatMul;
        ValueId operands[] = {gen(target), rhs};
        value = emit1(kind, operands, typeOf(target), statement);
      }
      assignTo(target, value, statement);
      break;
    }
    case NodeKind::ExprStmt: gen(tree_.childA(statement)); break;
    case NodeKind::Return: {
      NodeId value = tree_.childA(statement);
      if (value.isValid()) {
        ValueId v = gen(value);
        emit(OpKind::Return, std::span<const ValueId>(&v, 1), {}, statement);
      } else {
        emit(OpKind::Return, {}, {}, statement);
      }
      terminated_ = true;
      break;
    }
    case NodeKind::If: genIf(statement); break;
    case NodeKind::For: genFor(statement); break;
    case NodeKind::While: genWhile(statement); break;
    case NodeKind::Break:
    case NodeKind::Continue: {
      std::vector<ValueId> carried;
      for (uint32_t symbol : loops_.back().carried) {
        carried.push_back(env_[symbol]);
      }
      emit(tree_.kind(statement) == NodeKind::Break ? OpKind::Break : OpKind::Continue, carried,
           {}, statement);
      terminated_ = true;
      break;
    }
    default: break;
  }
}

// Whether evaluating `expr` could raise or have an effect (a call, division,
// modulo or indexing): then `a && expr` must not evaluate it when a is false.
bool IRGen::mayRaiseOrAct(NodeId expr) const {
  std::vector<NodeId> stack{expr};
  while (!stack.empty()) {
    NodeId n = stack.back();
    stack.pop_back();
    if (!n.isValid()) continue;
    switch (tree_.kind(n)) {
      case NodeKind::Call:
      case NodeKind::Index: return true;
      case NodeKind::Binary: {
        TokenKind k = tokens_.kind(tree_.token(n));
        if (k == TokenKind::Slash || k == TokenKind::Percent || k == TokenKind::StarStar) {
          return true;
        }
        stack.push_back(tree_.childA(n));
        stack.push_back(tree_.childB(n));
        break;
      }
      case NodeKind::Unary:
      case NodeKind::Paren: stack.push_back(tree_.childA(n)); break;
      default: break;
    }
  }
  return false;
}

// `a && b` as `if a { b } else { false }`, `a || b` as `if a { true } else { b }`.
ValueId IRGen::genShortCircuit(NodeId node, bool isAnd) {
  ValueId lhs = gen(tree_.childA(node));
  TypeId boolType = m_.types.scalar(DType::Bool);
  BlockId outer = block_;
  BlockId evaluate = m_.createBlock();
  BlockId shortcut = m_.createBlock();
  block_ = evaluate;
  ValueId rhs = gen(tree_.childB(node));
  emit(OpKind::Yield, std::span<const ValueId>(&rhs, 1), {});
  block_ = shortcut;
  OpId constant = emit(OpKind::Constant, {}, std::span<const TypeId>(&boolType, 1));
  m_.op(constant).constKind = ConstKind::Bool;
  m_.op(constant).intAttr = isAnd ? 0 : 1;
  ValueId known = m_.result(constant);
  emit(OpKind::Yield, std::span<const ValueId>(&known, 1), {});
  block_ = outer;
  OpId op = emit(OpKind::If, std::span<const ValueId>(&lhs, 1),
                 std::span<const TypeId>(&boolType, 1), node);
  m_.op(op).regions[0] = isAnd ? evaluate : shortcut;
  m_.op(op).regions[1] = isAnd ? shortcut : evaluate;
  m_.blocks[evaluate.index].parent = op;
  m_.blocks[shortcut.index].parent = op;
  return m_.result(op);
}

// `x = v` rebinds x; `x[i] = v` rebinds x to a copy with the part replaced;
// `x[i][j] = v` replaces part j of x[i] and then part i of x, recursively.
void IRGen::assignTo(NodeId target, ValueId value, NodeId at) {
  if (tree_.kind(target) == NodeKind::Name) {
    assign(cm_.nodeSymbol[target.index], value);
    return;
  }
  NodeId base = tree_.childA(target);
  std::vector<ValueId> operands{gen(base)};
  std::vector<int64_t> codes;
  genIndices(target, operands, codes);
  operands.push_back(value);
  TypeId type = m_.typeOf(operands.front());
  OpId update = emit(OpKind::IndexAssign, operands, std::span<const TypeId>(&type, 1), at);
  m_.setInts(update, codes);
  assignTo(base, m_.result(update), at);
}

void IRGen::genIf(NodeId statement) {
  ValueId cond = gen(tree_.childA(statement));
  BlockId outer = block_;
  size_t mark = log_.size();
  // Then branch.
  BlockId thenBlock = m_.createBlock();
  block_ = thenBlock;
  terminated_ = false;
  genBlock(tree_.childB(statement));
  bool thenEnds = terminated_;
  std::vector<std::pair<uint32_t, ValueId>> thenChanged = rewind(mark);
  // Else branch (an else-if is an if inside it).
  BlockId elseBlock = m_.createBlock();
  block_ = elseBlock;
  terminated_ = false;
  NodeId otherwise = tree_.childC(statement);
  if (otherwise.isValid()) {
    if (tree_.kind(otherwise) == NodeKind::If) {
      genIf(otherwise);
    } else {
      genBlock(otherwise);
    }
  }
  bool elseEnds = terminated_;
  std::vector<std::pair<uint32_t, ValueId>> elseChanged = rewind(mark);
  // The join: every variable either branch reassigned.
  std::vector<uint32_t> joined;
  for (const auto& [symbol, v] : thenChanged) {
    if (!thenEnds) joined.push_back(symbol);
  }
  for (const auto& [symbol, v] : elseChanged) {
    if (!elseEnds) joined.push_back(symbol);
  }
  std::sort(joined.begin(), joined.end());
  joined.erase(std::unique(joined.begin(), joined.end()), joined.end());
  auto valueIn = [&](const std::vector<std::pair<uint32_t, ValueId>>& changed, uint32_t symbol) {
    for (const auto& [s, v] : changed) {
      if (s == symbol) return v;
    }
    return env_[symbol];
  };
  std::vector<TypeId> types;
  std::vector<ValueId> thenValues;
  std::vector<ValueId> elseValues;
  for (uint32_t symbol : joined) {
    types.push_back(cm_.symbols[symbol].type);
    thenValues.push_back(valueIn(thenChanged, symbol));
    elseValues.push_back(valueIn(elseChanged, symbol));
  }
  if (!thenEnds) {
    block_ = thenBlock;
    emit(OpKind::Yield, thenValues, {});
  }
  if (!elseEnds) {
    block_ = elseBlock;
    emit(OpKind::Yield, elseValues, {});
  }
  block_ = outer;
  OpId op = emit(OpKind::If, std::span<const ValueId>(&cond, 1), types, statement);
  m_.op(op).regions[0] = thenBlock;
  m_.op(op).regions[1] = elseBlock;
  m_.blocks[thenBlock.index].parent = op;
  m_.blocks[elseBlock.index].parent = op;
  std::span<const ValueId> results = m_.results(op);
  for (size_t i = 0; i < joined.size(); ++i) {
    m_.values[results[i].index].name = cm_.symbols[joined[i]].name;
    assign(joined[i], results[i]);
  }
  terminated_ = thenEnds && elseEnds;
}

std::vector<uint32_t> IRGen::carriedBy(NodeId body) {
  std::vector<uint32_t> carried;
  tree_.forEachAssignedName(body, [&](NodeId name) {
    uint32_t symbol = cm_.nodeSymbol[name.index];
    if (symbol != UINT32_MAX && env_[symbol].isValid()) {
      carried.push_back(symbol);  // defined before the loop
    }
  });
  std::sort(carried.begin(), carried.end());
  carried.erase(std::unique(carried.begin(), carried.end()), carried.end());
  return carried;
}

// Generates a loop body into `body`, ending each iteration with the carried
// values (unless the body always leaves).
void IRGen::genLoopBody(BlockId body, NodeId statements, const std::vector<uint32_t>& carried) {
  block_ = body;
  terminated_ = false;
  loops_.push_back(Loop{carried});
  genBlock(statements);
  if (!terminated_) {
    std::vector<ValueId> next;
    for (uint32_t symbol : carried) next.push_back(env_[symbol]);
    emit(OpKind::Yield, next, {});
  }
  loops_.pop_back();
}

// After a loop: its results are the carried variables' new values.
void IRGen::bindLoopResults(OpId loop, const std::vector<uint32_t>& carried) {
  std::span<const ValueId> results = m_.results(loop);
  for (size_t i = 0; i < carried.size(); ++i) {
    m_.values[results[i].index].name = cm_.symbols[carried[i]].name;
    assign(carried[i], results[i]);
  }
  terminated_ = false;
}

void IRGen::genFor(NodeId statement) {
  NodeId iterated = tree_.childA(statement);
  TypeId int32 = m_.types.scalar(DType::Int32);
  ValueId start;
  ValueId stop;
  ValueId step;
  if (tree_.kind(iterated) == NodeKind::Range) {
    start = gen(tree_.childA(iterated));
    stop = gen(tree_.childB(iterated));
    step = constantInt(1, int32);
  } else {
    // range(n), range(a, b), range(a, b, step), as bound by the checker.
    const CallInfo& call = cm_.calls[cm_.callOf[iterated.index]];
    ValueId given[3];
    for (const auto& [param, arg] : call.args) {
      given[param] = gen(arg);
    }
    if (given[1].isValid()) {
      start = given[0];
      stop = given[1];
    } else {
      start = constantInt(0, int32);
      stop = given[0];
    }
    step = given[2].isValid() ? given[2] : constantInt(1, int32);
  }
  std::vector<uint32_t> carried = carriedBy(tree_.childB(statement));
  std::vector<ValueId> operands{start, stop, step};
  std::vector<TypeId> types;
  for (uint32_t symbol : carried) {
    operands.push_back(env_[symbol]);
    types.push_back(cm_.symbols[symbol].type);
  }
  BlockId outer = block_;
  size_t mark = log_.size();
  BlockId body = m_.createBlock();
  uint32_t var = cm_.nodeSymbol[statement.index];
  ValueId iv = m_.addArg(body, cm_.symbols[var].type, cm_.symbols[var].name);
  assign(var, iv);
  for (uint32_t symbol : carried) {
    ValueId arg = m_.addArg(body, cm_.symbols[symbol].type, cm_.symbols[symbol].name);
    assign(symbol, arg);
  }
  genLoopBody(body, tree_.childB(statement), carried);
  rewind(mark);
  block_ = outer;
  OpId op = emit(OpKind::For, operands, types, statement);
  m_.op(op).regions[0] = body;
  m_.blocks[body.index].parent = op;
  bindLoopResults(op, carried);
}

void IRGen::genWhile(NodeId statement) {
  std::vector<uint32_t> carried = carriedBy(tree_.childB(statement));
  std::vector<ValueId> operands;
  std::vector<TypeId> types;
  for (uint32_t symbol : carried) {
    operands.push_back(env_[symbol]);
    types.push_back(cm_.symbols[symbol].type);
  }
  BlockId outer = block_;
  size_t mark = log_.size();
  // The condition sees the carried values of the current iteration.
  BlockId cond = m_.createBlock();
  for (uint32_t symbol : carried) {
    assign(symbol, m_.addArg(cond, cm_.symbols[symbol].type, cm_.symbols[symbol].name));
  }
  block_ = cond;
  ValueId test = gen(tree_.childA(statement));
  emit(OpKind::Yield, std::span<const ValueId>(&test, 1), {});
  rewind(mark);
  BlockId body = m_.createBlock();
  for (uint32_t symbol : carried) {
    assign(symbol, m_.addArg(body, cm_.symbols[symbol].type, cm_.symbols[symbol].name));
  }
  genLoopBody(body, tree_.childB(statement), carried);
  rewind(mark);
  block_ = outer;
  OpId op = emit(OpKind::While, operands, types, statement);
  m_.op(op).regions[0] = cond;
  m_.op(op).regions[1] = body;
  m_.blocks[cond.index].parent = op;
  m_.blocks[body.index].parent = op;
  bindLoopResults(op, carried);
}

// ---- expressions ---------------------------------------------------------------------

ValueId IRGen::gen(NodeId node) {
  ValueId value = genValue(node);
  if (!valueOf_.empty() && value.isValid()) {
    if (auto it = valueOf_.find(node.index); it != valueOf_.end()) it->second = value;
  }
  if (!checksOf_.empty() && value.isValid()) {
    for (uint32_t check : checksOf_[node.index]) {
      emitCheck(cm_.runtimeChecks[check], value);
    }
  }
  if (auto it = cm_.conversions.find(node.index); it != cm_.conversions.end() && value.isValid()) {
    value = emit1(OpKind::Cast, std::span<const ValueId>(&value, 1), it->second, node);
  }
  return value;
}

// The value of a dimension in the current function: a constant, a
// hyperparameter, a size variable, or arithmetic of those.
ValueId IRGen::dimValue(DimId dim) {
  TypeId int32 = m_.types.scalar(DType::Int32);
  const DimStore::Node& n = m_.dims.node(dim);
  switch (n.kind) {
    case DimKind::Const: return constantInt(n.value, int32);
    case DimKind::Var: {
      if (callable_ < 0) return ValueId{};
      const CallableInfo& info = cm_.callables[callable_];
      for (size_t i = 0; i < info.params.size(); ++i) {
        const ParamInfo& p = info.params[i];
        if (p.name != n.var) continue;
        if (p.cls == ParamClass::Hyper) return paramValue(static_cast<uint32_t>(i));
        // A fn's integer input (`fn f(n: int, x: Tensor<float32, [n]>)`), as
        // it was passed: the types speak of the entry value.
        if (p.cls == ParamClass::Input && inBody_ && m_.types.isScalar(p.type) &&
            isIntegral(m_.types.node(p.type).dtype)) {
          return params_[i];
        }
      }
      for (size_t i = 0; i < info.shapeVars.size(); ++i) {
        if (info.shapeVars[i].name == n.var) return shapeVars_[i];
      }
      return ValueId{};
    }
    case DimKind::Unknown: return ValueId{};
    default: {
      ValueId lhs = dimValue(n.lhs);
      ValueId rhs = dimValue(n.rhs);
      if (!lhs.isValid() || !rhs.isValid()) return ValueId{};
      ValueId operands[] = {lhs, rhs};
      OpKind kind = n.kind == DimKind::Add   ? OpKind::Add
                    : n.kind == DimKind::Sub ? OpKind::Sub
                    : n.kind == DimKind::Mul ? OpKind::Mul
                                             : OpKind::Div;  // floor division on ints
      return emit1(kind, operands, int32);
    }
  }
}

void IRGen::emitCheck(const RuntimeShapeCheck& check, ValueId value) {
  if (!inBody_ || !m_.types.isTensor(m_.typeOf(value))) return;
  if (check.other.isValid()) {
    emitPairCheck(check, value);
    return;
  }
  ValueId expected = dimValue(check.expected);
  if (!expected.isValid()) return;
  LineCol lc = tokens_.source().lineCol(tree_.range(check.node).begin);
  // A size that is not a constant is named and its value given: "but
  // n_in = 784 was expected".
  bool constant = m_.dims.constValue(check.expected).has_value();
  bool rank = check.dim == RuntimeShapeCheck::kRank;
  std::string message =
      rank ? fmt::format("{}:{}:{}: shape mismatch: {} has {{actual}} dimensions, but {} "
                         "{} expected",
                         checkSourceName(), lc.line, lc.column, valueText(check.value, "the value"),
                         m_.dims.format(check.expected, *m_.interner),
                         m_.dims.constValue(check.expected) == 1 ? "was" : "were")
           : fmt::format("{}:{}:{}: shape mismatch: dimension {} {}is {{actual}}, but {}{} was "
                         "expected",
                         checkSourceName(), lc.line, lc.column, check.dim,
                         check.value.isValid() && valueText(check.value, "").size() > 0
                             ? "of " + valueText(check.value, "") + " "
                             : std::string(),
                         m_.dims.format(check.expected, *m_.interner),
                         constant ? "" : " = {expected}");
  ValueId operands[] = {value, expected};
  OpId op = emit(OpKind::CheckDim, operands, {}, check.node);
  m_.op(op).intAttr = rank ? -1 : static_cast<int64_t>(check.dim);
  m_.op(op).strAttr = m_.internString(std::move(message));
}

// A checked value by its text when short ("dimension 1 of 'x' is 3"), else
// as `otherwise`.
std::string IRGen::valueText(NodeId node, std::string_view otherwise) const {
  std::string_view text = node.isValid() ? tree_.text(node) : std::string_view();
  return !text.empty() && text.size() <= 60 && text.find('\n') == std::string_view::npos &&
                 text.find('{') == std::string_view::npos && text.find('}') == std::string_view::npos
             ? fmt::format("'{}'", text)
             : std::string(otherwise);
}

// `?` against `?`: `value`'s size against the other value's, which was
// computed before it (`check_dim %y[0] == %x[1]`, the dimension of the other
// in the op's ints).
void IRGen::emitPairCheck(const RuntimeShapeCheck& check, ValueId value) {
  auto it = valueOf_.find(check.other.index);
  if (it == valueOf_.end() || !it->second.isValid() ||
      !m_.types.isTensor(m_.typeOf(it->second))) {
    return;
  }
  LineCol lc = tokens_.source().lineCol(tree_.range(check.node).begin);
  auto named = [&](NodeId node, std::string_view otherwise) { return valueText(node, otherwise); };
  std::string message = fmt::format(
      "{}:{}:{}: shape mismatch: dimension {} of {} is {{actual}}, but dimension {} of {} is "
      "{{expected}}",
      checkSourceName(), lc.line, lc.column, check.dim, named(check.value, "one operand"),
      check.otherDim, named(check.other, "the other"));
  ValueId operands[] = {value, it->second};
  OpId op = emit(OpKind::CheckDim, operands, {}, check.node);
  m_.op(op).intAttr = static_cast<int64_t>(check.dim);
  int64_t otherDim = check.otherDim;
  m_.setInts(op, std::span<const int64_t>(&otherDim, 1));
  m_.op(op).strAttr = m_.internString(std::move(message));
}

// -O0: each tensor input is checked against its declared type at entry (its
// rank, and every size that is not `?`: constants, hyperparameters, and size
// variables another input binds), so a wrong input fails at the layer or fn
// that declares it, with that parameter's location, rather than inside torch.
void IRGen::emitInputChecks(const CallableInfo& info) {
  for (size_t i = 0; i < info.params.size(); ++i) {
    const ParamInfo& p = info.params[i];
    if (p.cls != ParamClass::Input || !p.node.isValid() || !m_.types.isTensor(p.type)) continue;
    const TypeStore::Node& t = m_.types.node(p.type);
    if (!t.rankKnown) continue;
    std::span<const DimId> shape = m_.types.shape(p.type);
    LineCol lc = tokens_.source().lineCol(tree_.range(p.node).begin);
    std::string where = fmt::format("{}:{}:{}: ", checkSourceName(), lc.line, lc.column);
    std::string_view name = m_.interner->spelling(p.name);
    auto check = [&](int64_t dim, ValueId expected, std::string message) {
      ValueId operands[] = {params_[i], expected};
      OpId op = emit(OpKind::CheckDim, operands, {}, p.node);
      m_.op(op).intAttr = dim;
      m_.op(op).strAttr = m_.internString(std::move(message));
    };
    TypeId int32 = m_.types.scalar(DType::Int32);
    check(-1, constantInt(static_cast<int64_t>(shape.size()), int32),
          fmt::format("{}shape mismatch: '{}' has {{actual}} dimensions, but {} {} expected",
                      where, name, shape.size(), shape.size() == 1 ? "was" : "were"));
    for (size_t d = 0; d < shape.size(); ++d) {
      const DimStore::Node& n = m_.dims.node(shape[d]);
      bool boundHere = false;  // the size variable this dimension defines
      for (const ShapeVarInfo& v : info.shapeVars) {
        boundHere = boundHere || (n.kind == DimKind::Var && v.name == n.var && v.param == i &&
                                  v.dim == d);
      }
      if (boundHere || m_.dims.isUnknown(shape[d])) continue;
      ValueId expected = dimValue(shape[d]);
      if (!expected.isValid()) continue;
      bool constant = m_.dims.constValue(shape[d]).has_value();
      check(static_cast<int64_t>(d), expected,
            fmt::format("{}shape mismatch: dimension {} of '{}' is {{actual}}, but {}{} was "
                        "expected",
                        where, d, name, m_.dims.format(shape[d], *m_.interner),
                        constant ? "" : " = {expected}"));
    }
  }
}

ValueId IRGen::genValue(NodeId node) {
  switch (tree_.kind(node)) {
    case NodeKind::Name: return genName(node);
    case NodeKind::IntLit:
    case NodeKind::FloatLit:
    case NodeKind::StringLit:
    case NodeKind::BoolLit: return genLiteral(node);
    case NodeKind::Paren: return gen(tree_.childA(node));
    case NodeKind::Unary: {
      if (tree_.isInt64Minimum(node)) {
        return genInt64Min(node);  // 2^63 itself is no int64
      }
      ValueId operand = gen(tree_.childA(node));
      TokenKind op = tokens_.kind(tree_.token(node));
      if (op == TokenKind::Plus) {
        return operand;
      }
      return emit1(op == TokenKind::Minus ? OpKind::Neg : OpKind::Not,
                   std::span<const ValueId>(&operand, 1), typeOf(node), node);
    }
    case NodeKind::Binary: {
      TokenKind opKind = tokens_.kind(tree_.token(node));
      if ((opKind == TokenKind::AmpAmp || opKind == TokenKind::PipePipe) &&
          m_.types.isScalar(typeOf(node)) && mayRaiseOrAct(tree_.childB(node))) {
        return genShortCircuit(node, opKind == TokenKind::AmpAmp);
      }
      ValueId operands[] = {gen(tree_.childA(node)), gen(tree_.childB(node))};
      OpKind kind;
      switch (tokens_.kind(tree_.token(node))) {
        case TokenKind::Plus: kind = OpKind::Add; break;
        case TokenKind::Minus: kind = OpKind::Sub; break;
        case TokenKind::Star: kind = OpKind::Mul; break;
        case TokenKind::Slash: kind = OpKind::Div; break;
        case TokenKind::Percent: kind = OpKind::Mod; break;
        case TokenKind::StarStar: kind = OpKind::Pow; break;
        case TokenKind::At: kind = OpKind::MatMul; break;
        case TokenKind::EqualEqual: kind = OpKind::Eq; break;
        case TokenKind::BangEqual: kind = OpKind::Ne; break;
        case TokenKind::Less: kind = OpKind::Lt; break;
        case TokenKind::LessEqual: kind = OpKind::Le; break;
        case TokenKind::Greater: kind = OpKind::Gt; break;
        case TokenKind::GreaterEqual: kind = OpKind::Ge; break;
        case TokenKind::AmpAmp: kind = OpKind::And; break;
        default: kind = OpKind::Or; break;
      }
      return emit1(kind, operands, typeOf(node), node);
    }
    case NodeKind::Call: return genCall(node);
    case NodeKind::Index: {
      std::vector<ValueId> operands{gen(tree_.childA(node))};
      std::vector<int64_t> codes;
      genIndices(node, operands, codes);
      OpId op = emit(OpKind::Index, operands,
                     std::span<const TypeId>(&cm_.nodeType[node.index], 1), node);
      m_.setInts(op, codes);
      return m_.result(op);
    }
    case NodeKind::Member: {
      if (cm_.nodeSymbol[node.index] != UINT32_MAX) {
        return genName(node);  // `alias.CONSTANT`
      }
      ValueId base = gen(tree_.childA(node));
      std::string_view member = tokens_.spelling(tree_.token(node));
      TypeKind baseKind = m_.types.kind(m_.typeOf(base));
      if (baseKind == TypeKind::Instance || baseKind == TypeKind::BuiltinInstance) {
        OpId op = emit(OpKind::InstanceMember, std::span<const ValueId>(&base, 1),
                       std::span<const TypeId>(&cm_.nodeType[node.index], 1), node);
        m_.op(op).strAttr = m_.internString(std::string(member));
        return m_.result(op);
      }
      return emit1(member == "shape" ? OpKind::ShapeOf : OpKind::TransposeAll,
                   std::span<const ValueId>(&base, 1), typeOf(node), node);
    }
    case NodeKind::List: {
      std::vector<ValueId> elements;
      for (NodeId element : tree_.list(tree_.listA(node))) {
        elements.push_back(gen(element));
      }
      return emit1(OpKind::List, elements, typeOf(node), node);
    }
    default: {
      TypeId type = typeOf(node);
      return m_.result(emit(OpKind::Constant, {}, std::span<const TypeId>(&type, 1), node));
    }
  }
}

ValueId IRGen::genName(NodeId node) {
  uint32_t symbol = cm_.nodeSymbol[node.index];
  TRITONC_CHECK(symbol != UINT32_MAX, "irgen: an unresolved name in a checked program");
  const Symbol& s = cm_.symbols[symbol];
  switch (s.kind) {
    case SymbolKind::Param:
      // In a default or initializer region: read it there. In the body: its
      // current value (inputs can be reassigned).
      if (!inBody_) return paramValue(s.ref);
      break;
    case SymbolKind::Constant: {
      OpId op = emit(OpKind::Global, {}, std::span<const TypeId>(&s.type, 1), node);
      // An imported constant names the program's global itself.
      bool imported = s.decl.isValid() && tree_.kind(s.decl) == NodeKind::Import;
      m_.op(op).intAttr = imported ? s.ref : globalOf_[symbol];
      return m_.result(op);
    }
    case SymbolKind::TypeName: {
      // A dtype as a value (`dtype=float32`).
      TypeId type = typeOf(node);
      OpId op = emit(OpKind::Constant, {}, std::span<const TypeId>(&type, 1), node);
      m_.op(op).constKind = ConstKind::String;
      m_.op(op).strAttr = m_.internString(std::string(dtypeName(static_cast<DType>(s.ref))));
      return m_.result(op);
    }
    default: break;
  }
  ValueId value = env_[symbol];
  TRITONC_CHECK(value.isValid(), "irgen: a variable used before its definition");
  return value;
}

// `-9223372036854775808`: one constant, in the type its context gave it.
ValueId IRGen::genInt64Min(NodeId node) {
  TypeId type = typeOf(node);
  if (!isFloating(m_.types.node(type).dtype)) return constantInt(INT64_MIN, type);
  OpId op = emit(OpKind::Constant, {}, std::span<const TypeId>(&type, 1), node);
  m_.op(op).constKind = ConstKind::Float;
  m_.op(op).floatAttr = -9223372036854775808.0;
  return m_.result(op);
}

ValueId IRGen::genLiteral(NodeId node) {
  TypeId type = typeOf(node);
  OpId op = emit(OpKind::Constant, {}, std::span<const TypeId>(&type, 1), node);
  Op& o = m_.op(op);
  TokenId token = tree_.token(node);
  switch (tree_.kind(node)) {
    case NodeKind::IntLit:
      if (isFloating(m_.types.node(type).dtype)) {
        o.constKind = ConstKind::Float;
        o.floatAttr = static_cast<double>(tokens_.intValue(token));
      } else if (m_.types.kind(type) == TypeKind::Scalar &&
                 m_.types.node(type).dtype == DType::Bool) {
        // `let v: bool = 1` holds True, as `let f: float = 1` holds 1.0.
        o.constKind = ConstKind::Bool;
        o.intAttr = tokens_.intValue(token) != 0 ? 1 : 0;
      } else {
        o.constKind = ConstKind::Int;
        o.intAttr = static_cast<int64_t>(tokens_.intValue(token));
      }
      break;
    case NodeKind::FloatLit:
      o.constKind = ConstKind::Float;
      o.floatAttr = tokens_.floatValue(token);
      break;
    case NodeKind::StringLit:
      o.constKind = ConstKind::String;
      o.strAttr = m_.internString(tokens_.stringValue(token));
      break;
    default:
      o.constKind = ConstKind::Bool;
      o.intAttr = tokens_.kind(token) == TokenKind::KwTrue ? 1 : 0;
      break;
  }
  return m_.result(op);
}

void IRGen::genIndices(NodeId node, std::vector<ValueId>& operands,
                       std::vector<int64_t>& codes) {
  for (NodeId index : tree_.list(tree_.listB(node))) {
    if (tree_.kind(index) != NodeKind::Slice) {
      codes.push_back(-1);
      operands.push_back(gen(index));
      continue;
    }
    int64_t code = 0;
    NodeId parts[3] = {tree_.childA(index), tree_.childB(index), tree_.childC(index)};
    for (int b = 0; b < 3; ++b) {
      if (parts[b].isValid()) {
        code |= int64_t{1} << b;
        operands.push_back(gen(parts[b]));
      }
    }
    codes.push_back(code == 0 ? -2 : code);
  }
}

// Builtins whose value is not a function of their operands: random draws
// (two `randn` calls are two different tensors) and the training-mode ones
// (dropout, batch-norm statistics, stochastic quantization). They are never
// merged, moved or removed.
bool IRGen::isStateful(BuiltinFn fn, const CallInfo& call) const {
  switch (fn) {
    case BuiltinFn::Randn:
    case BuiltinFn::Rand:
    case BuiltinFn::KaimingUniform:
    case BuiltinFn::TernaryWeights:
    case BuiltinFn::DropoutFn:
    case BuiltinFn::BatchNormFn: return true;
    case BuiltinFn::TernaryQuantize:
      for (const auto& [param, arg] : call.args) {
        if (param == 1) {
          // method: only a constant other than "stochastic" is deterministic.
          return tree_.kind(arg) != NodeKind::StringLit ||
                 tokens_.stringValue(tree_.token(arg)) == "stochastic";
        }
      }
      return false;
    default: return false;
  }
}

// A built-in layer's size written as a list: one size (`kernel_size=[3, 3]`,
// `LayerNorm([d])`) is its first element, which the checker took it for; a
// pair (`[1, 7]`) stays a list, as torch takes it.
NodeId IRGen::builtinLayerSize(const CallInfo& call, int64_t param, NodeId arg) const {
  if (call.kind != CallKind::Instantiate) return arg;
  const InstanceInfo& instance = cm_.instances[call.callee];
  if (!instance.builtin) return arg;
  auto index = static_cast<size_t>(param);
  if (index < instance.widths.size() && instance.widths[index].isValid()) return arg;
  NodeId literal = arg;
  while (tree_.kind(literal) == NodeKind::Paren) literal = tree_.childA(literal);
  if (tree_.kind(literal) != NodeKind::List) return arg;
  return tree_.list(tree_.listA(literal)).front();
}

ValueId IRGen::genCall(NodeId node) {
  uint32_t callIndex = cm_.callOf[node.index];
  TRITONC_CHECK(callIndex != UINT32_MAX, "irgen: a call the checker did not bind");
  const CallInfo& call = cm_.calls[callIndex];
  std::vector<ValueId> operands;
  std::vector<int64_t> params;
  for (const auto& [param, arg] : call.args) {
    params.push_back(param);
    operands.push_back(gen(builtinLayerSize(call, param, arg)));
  }
  TypeId type = typeOf(node);
  std::vector<TypeId> types;
  if (m_.types.kind(type) != TypeKind::Void) {
    types.push_back(type);
  }
  OpKind kind;
  uint32_t attr = call.callee;
  switch (call.kind) {
    case CallKind::Builtin: {
      auto fn = static_cast<BuiltinFn>(call.callee);
      kind = fn == BuiltinFn::Print || fn == BuiltinFn::Assert ? OpKind::BuiltinEffect
             : isStateful(fn, call)                             ? OpKind::BuiltinStateful
                                                                : OpKind::Builtin;
      break;
    }
    case CallKind::Cast: kind = OpKind::Cast; break;
    case CallKind::Apply: kind = OpKind::Apply; break;
    case CallKind::FnCall: kind = OpKind::CallFn; break;
    case CallKind::Instantiate: {
      const InstanceInfo& instance = cm_.instances[call.callee];
      attr = static_cast<uint32_t>(function_->instances.size());
      instanceLocal_[call.callee] = attr;
      function_->instances.push_back(
          InstanceDecl{instance.name, instance.builtin, instance.decl});
      kind = OpKind::Instantiate;
      break;
    }
    case CallKind::Forward:
      attr = instanceLocal_[call.callee];
      TRITONC_CHECK(attr != UINT32_MAX, "irgen: an instance called before it is created");
      kind = OpKind::Forward;
      break;
    default: TRITONC_UNREACHABLE("irgen: a call without a kind");
  }
  OpId op = emit(kind, operands, types, node);
  m_.op(op).intAttr = attr;
  m_.setInts(op, params);
  return types.empty() ? ValueId{} : m_.result(op);
}

}  // namespace

ir::Module generateIR(const CheckedModule& checked, const IRGenOptions& options) {
  ir::Module module;
  IRGen(checked, module, options).run();
  return module;
}

void generateIRInto(const CheckedModule& checked, ir::Module& program,
                    const IRGenOptions& options) {
  IRGen(checked, program, options).run();
}

}  // namespace tritonc

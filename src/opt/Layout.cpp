//===- Layout.cpp - zero-skip hints and in-place activations --------------===//
//
// zero-skip: a ternary weight initialized by ternary_weights(sparsity=s)
// starts with a fraction s of zero trits; the declaration records it so the
// CUDA kernels can choose a zero-skipping variant (TOOLCHAIN.md: the kernels
// skip zero trits) and the PyTorch runtime a sparse layout. And a product
// with a small constant ternary matrix (a tensor literal) loses its zero
// terms: each output column becomes a sum and difference of input columns.
//
// inplace: an activation (relu, relu6, silu, hardswish), or a Dropout
// sub-module created with inplace=true, may overwrite its input when nothing
// else reads that input, the input was made in the same
// block (not before a loop the activation is in), and the op that made it
// returns a fresh tensor whose value autograd does not keep: matmul, add,
// sub, mul, linear, conv, fused_matmul without activation. sigmoid, tanh,
// exp, softmax and fused activations keep their output (an in-place op after
// them would corrupt the gradient); layer forwards may return their input.
// Function inputs and weights are never overwritten (the caller owns them).
// The same holds for a sum of two float tensors (a - b: its left operand):
// the sum may be written into an operand that nothing else reads, made by
// such an op in the same block, when at run time it has the sum's shape and
// dtype (tritonrt.add_into checks; a broadcast or a promotion makes a new
// tensor). A right operand that may be overwritten becomes the left one.
//
//===----------------------------------------------------------------------===//
#include "PassRegistry.h"

namespace tritonc::opt {

namespace {

using namespace ir;

// Ops that return a new tensor (never their input or a view of it) and whose
// output autograd does not keep: an in-place op after them is safe. Layer
// forwards are not listed: a layer may return its input (an identity block,
// Dropout in eval mode). Fused ops with an activation keep their output.
bool freshAndUnsaved(const Module& m, ValueId v) {
  OpId def = m.values[v.index].def;
  if (!def.isValid()) return false;  // a block argument: the caller's tensor
  const Op& o = m.op(def);
  switch (o.kind) {
    case OpKind::MatMul:
    case OpKind::Add:
    case OpKind::Sub:
    case OpKind::Mul: return true;
    case OpKind::FusedMatMul:
    case OpKind::FusedConv2d: return o.intAttr == 0;  // no activation
    case OpKind::Builtin:
      switch (static_cast<BuiltinFn>(o.intAttr)) {
        case BuiltinFn::LinearFn:
        case BuiltinFn::Conv2dFn:
        case BuiltinFn::DepthwiseConv2d: return true;
        default: return false;  // views (flatten, reshape) share their input's storage
      }
    default: return false;
  }
}

bool inplaceCapable(const Function& f, const Op& o) {
  // A Dropout sub-module (it runs in place when created with inplace=true).
  if (o.kind == OpKind::Forward) {
    const InstanceDecl& inst = f.instances[static_cast<size_t>(o.intAttr)];
    return inst.builtin && static_cast<BuiltinLayer>(inst.decl) == BuiltinLayer::Dropout &&
           o.operandsCount == 1;
  }
  if (o.kind != OpKind::Builtin || o.operandsCount != 1) return false;
  switch (static_cast<BuiltinFn>(o.intAttr)) {
    case BuiltinFn::Relu:
    case BuiltinFn::Relu6:
    case BuiltinFn::Silu:
    case BuiltinFn::Hardswish: return true;
    default: return false;
  }
}

// Whether `input`, an operand of an op of `block`, may be overwritten by it.
// The producer must be in the same block: an op inside a loop overwriting a
// value made before it would overwrite it at every iteration.
bool overwritable(const Module& m, BlockId block, const std::vector<uint32_t>& uses,
                  ValueId input) {
  OpId def = m.values[input.index].def;
  bool sameBlock = def.isValid() && m.op(def).parent == block;
  return uses[input.index] == 1 && sameBlock && freshAndUnsaved(m, input);
}

bool floatTensor(const Module& m, ValueId v) {
  TypeId t = m.typeOf(v);
  return m.types.isTensor(t) && !m.types.isTernary(t) && isFloating(m.types.node(t).dtype);
}

// a + b or a - b of float tensors, the sum a float tensor: whether it may be
// written into an operand (swapping a sum's operands when the right one is
// the one to overwrite: floating-point addition commutes).
bool markSum(Module& m, BlockId block, const std::vector<uint32_t>& uses, OpId id) {
  std::span<ValueId> in = m.mutableOperands(id);
  if ((m.op(id).kind != OpKind::Add && m.op(id).kind != OpKind::Sub) || in.size() != 2 ||
      in[0] == in[1] || !floatTensor(m, in[0]) || !floatTensor(m, in[1]) ||
      !floatTensor(m, m.result(id))) {
    return false;
  }
  if (overwritable(m, block, uses, in[0])) return true;
  if (m.op(id).kind == OpKind::Add && overwritable(m, block, uses, in[1])) {
    std::swap(in[0], in[1]);
    return true;
  }
  return false;
}

void markInplace(Module& m, const Function& f, BlockId block, const std::vector<uint32_t>& uses,
                 bool& changed) {
  for (OpId id : m.blocks[block.index].ops) {
    Op& o = m.op(id);
    for (BlockId region : o.regions) {
      if (region.isValid()) markInplace(m, f, region, uses, changed);
    }
    if (o.inplace) continue;
    if (inplaceCapable(f, o) ? overwritable(m, block, uses, m.operands(id)[0])
                             : markSum(m, block, uses, id)) {
      m.op(id).inplace = true;
      changed = true;
    }
  }
}

// ---- zero terms of constant ternary matrices -------------------------------------
//
// x @ C with C a small constant ternary matrix (a tensor literal of -1/0/1,
// K x N): each output column is a sum and difference of x's columns, the
// zero trits dropped: stack([x[..., 0] - x[..., 2], x[..., 1], ...], dim=-1).

constexpr size_t kMaxConstantTrits = 256;

// The K x N trits of a tensor(...) literal, or nothing.
std::optional<std::vector<std::vector<int>>> constantTrits(const Module& m, ValueId v) {
  OpId def = m.values[v.index].def;
  if (!def.isValid()) return std::nullopt;
  const Op& t = m.op(def);
  TypeId type = m.typeOf(v);
  if (t.kind != OpKind::Builtin || static_cast<BuiltinFn>(t.intAttr) != BuiltinFn::TensorFn ||
      t.operandsCount != 1 || !m.types.isTernary(type) || !m.types.node(type).rankKnown ||
      m.types.shape(type).size() != 2) {
    return std::nullopt;
  }
  auto listOf = [&](ValueId list) -> std::optional<std::span<const ValueId>> {
    OpId d = m.values[list.index].def;
    if (!d.isValid() || m.op(d).kind != OpKind::List) return std::nullopt;
    return m.operands(d);
  };
  std::optional<std::span<const ValueId>> rows = listOf(m.operands(def)[0]);
  if (!rows || rows->empty()) return std::nullopt;
  std::vector<std::vector<int>> trits;
  for (ValueId row : *rows) {
    std::optional<std::span<const ValueId>> cells = listOf(row);
    if (!cells || cells->empty() || (!trits.empty() && cells->size() != trits[0].size())) {
      return std::nullopt;
    }
    std::vector<int>& out = trits.emplace_back();
    for (ValueId cell : *cells) {
      std::optional<ConstantValue> c = constantOf(m, cell);
      if (!c || c->kind != ConstKind::Int || c->i < -1 || c->i > 1) return std::nullopt;
      out.push_back(static_cast<int>(c->i));
    }
  }
  if (trits.size() * trits[0].size() > kMaxConstantTrits) return std::nullopt;
  return trits;
}

void collectMatMuls(const Module& m, BlockId block, std::vector<OpId>& out) {
  for (OpId id : m.blocks[block.index].ops) {
    if (m.op(id).kind == OpKind::MatMul) out.push_back(id);
    for (BlockId region : m.regionsOf(id)) {
      if (region.isValid()) collectMatMuls(m, region, out);
    }
  }
}

bool dropZeroTerms(Module& m, OpId matmul) {
  std::span<const ValueId> operands = m.operands(matmul);
  ValueId x = operands[0];
  ValueId c = operands[1];
  std::optional<std::vector<std::vector<int>>> trits = constantTrits(m, c);
  TypeId xType = m.typeOf(x);
  TypeId resultType = m.typeOf(m.result(matmul));
  if (!trits || !m.types.isTensor(xType) || !m.types.node(xType).rankKnown ||
      m.types.isTernary(xType) || !isFloating(m.types.node(xType).dtype) ||
      !m.types.isTensor(resultType) || m.types.shape(xType).empty()) {
    return false;
  }
  std::vector<DimId> xShape(m.types.shape(xType).begin(), m.types.shape(xType).end());
  std::optional<int64_t> k = m.dims.constValue(xShape.back());
  if (!k || static_cast<size_t>(*k) != trits->size()) return false;
  size_t rows = trits->size();
  size_t cols = (*trits)[0].size();
  BlockId block = m.op(matmul).parent;
  uint32_t loc = m.op(matmul).loc;
  std::vector<OpId> created;
  auto make = [&](OpKind kind, std::vector<ValueId> in, TypeId type) {
    OpId op = m.createOp(BlockId{}, kind, in, std::span<const TypeId>(&type, 1));
    m.op(op).parent = block;
    m.op(op).loc = loc;
    created.push_back(op);
    return op;
  };
  TypeId int32 = m.types.scalar(DType::Int32);
  auto constant = [&](int64_t value) {
    OpId op = make(OpKind::Constant, {}, int32);
    m.op(op).constKind = ConstKind::Int;
    m.op(op).intAttr = value;
    return m.result(op);
  };
  // x[..., i], made once per row that a column uses.
  DType dtype = m.types.node(xType).dtype;
  std::vector<DimId> sliceShape(xShape.begin(), xShape.end() - 1);
  TypeId sliceType = m.types.tensor(dtype, sliceShape);
  std::vector<int64_t> codes(xShape.size() - 1, -2);
  codes.push_back(-1);
  std::vector<ValueId> slices(rows);
  auto slice = [&](size_t i) {
    if (!slices[i].isValid()) {
      OpId op = make(OpKind::Index, {x, constant(static_cast<int64_t>(i))}, sliceType);
      m.setInts(op, codes);
      slices[i] = m.result(op);
    }
    return slices[i];
  };
  std::vector<ValueId> columns;
  for (size_t j = 0; j < cols; ++j) {
    ValueId sum;
    // The +1 terms first: a column negates only when it has none.
    for (size_t n = 0; n < 2 * rows; ++n) {
      size_t i = n % rows;
      int t = (*trits)[i][j];
      if (t == 0 || (n < rows) != (t > 0)) continue;
      ValueId term = slice(i);
      if (!sum.isValid()) {
        sum = t > 0 ? term : m.result(make(OpKind::Neg, {term}, sliceType));
      } else {
        sum = m.result(make(t > 0 ? OpKind::Add : OpKind::Sub, {sum, term}, sliceType));
      }
    }
    if (!sum.isValid()) {
      // An all-zero column: x[..., 0] * 0.0, the product's values (NaN where x holds a NaN or
      // an infinity, as the matmul's 0 * inf) with an exactly zero gradient. `x - x` would
      // send x the gradient g - g, which rounds to other than zero once x's other uses add
      // theirs in between (a batch norm of the zero channel sends g ~ 1/sqrt(eps)).
      OpId zero = make(OpKind::Constant, {}, m.types.scalar(DType::Float32));
      m.op(zero).constKind = ConstKind::Float;
      m.op(zero).floatAttr = 0.0;
      sum = m.result(make(OpKind::Mul, {slice(0), m.result(zero)}, sliceType));
    }
    columns.push_back(sum);
  }
  ValueId list = m.result(make(OpKind::List, columns,
                               m.types.list(sliceType, static_cast<uint32_t>(cols))));
  OpId stack = make(OpKind::Builtin, {list, constant(-1)}, resultType);
  m.op(stack).intAttr = static_cast<int64_t>(BuiltinFn::Stack);
  int64_t params[] = {0, 1};
  m.setInts(stack, params);
  std::vector<OpId>& ops = m.blocks[block.index].ops;
  ops.insert(std::find(ops.begin(), ops.end(), matmul), created.begin(), created.end());
  m.replaceAllUses(m.result(matmul), m.result(stack));
  m.erase(matmul);
  return true;
}

}  // namespace

bool runZeroSkip(Module& m) {
  bool changed = false;
  std::vector<OpId> matmuls;
  for (const Function& f : m.functions) {
    if (f.body.isValid()) collectMatMuls(m, f.body, matmuls);
  }
  bool rewritten = false;
  for (OpId id : matmuls) rewritten |= dropZeroTerms(m, id);
  if (rewritten) {
    runDCE(m);  // the literals the rewritten products no longer read
    changed = true;
  }
  for (Function& f : m.functions) {
    for (WeightDecl& w : f.weights) {
      if (!w.init.isValid() || !m.types.isTernary(w.type)) continue;
      const Block& init = m.blocks[w.init.index];
      for (OpId id : init.ops) {
        const Op& o = m.op(id);
        if (o.kind != OpKind::BuiltinStateful ||
            static_cast<BuiltinFn>(o.intAttr) != BuiltinFn::TernaryWeights) {
          continue;
        }
        std::span<const ValueId> operands = m.operands(id);
        std::span<const int64_t> params = m.ints(id);
        for (size_t i = 0; i < operands.size(); ++i) {
          if (params[i] != 1) continue;  // sparsity
          OpId def = m.values[operands[i].index].def;
          if (def.isValid() && m.op(def).kind == OpKind::Constant &&
              m.op(def).constKind == ConstKind::Float && m.op(def).floatAttr > 0.0) {
            w.sparsity = m.op(def).floatAttr;
            changed = true;
          }
        }
      }
    }
  }
  return changed;
}

bool runInplace(Module& m) {
  std::vector<uint32_t> uses = countUses(m);
  bool changed = false;
  for (const Function& f : m.functions) {
    if (f.body.isValid()) markInplace(m, f, f.body, uses, changed);
  }
  return changed;
}

}  // namespace tritonc::opt

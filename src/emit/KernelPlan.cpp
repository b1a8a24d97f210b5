//===- KernelPlan.cpp - which ternary kernels a model needs -----*- C++ -*-===//
//
// The CUDA target bakes sizes into its kernels, but layers are written over
// hyperparameters (`TernaryConv2d(in_ch, out_ch, 3)`). The planner walks the
// module tree from the entry layer the way its constructor would run with the
// hyperparameters' defaults: it evaluates the constant arithmetic of
// hyperparameters, follows instantiations into the layers they create and
// `if`s whose condition it knows, and collects every ternary matmul and
// convolution with its sizes and fused activation. What it cannot size (a
// hyperparameter without a default, a shape read at run time) gets no kernel;
// the runtime then takes the reference path for it.
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <climits>
#include <cmath>
#include <set>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "tritonc/emit/Emit.h"

#include "KernelUse.h"

namespace tritonc {
namespace {

using namespace ir;

constexpr const char* kActNames[] = {"none", "relu", "gelu", "silu", "relu6"};
constexpr int kMaxDepth = 64;  // nesting of instances (guards recursive layers)

/// A scalar known at compile time, a size given per dimension (`[1, 7]`: a
/// Pair of integers, the height in `i` and the width in `w`), or None.
struct Num {
  enum class Kind : uint8_t { None, Int, Float, Bool, Pair } kind = Kind::None;
  int64_t i = 0;
  double f = 0.0;
  int64_t w = 0;

  static Num integer(int64_t v) { return {Kind::Int, v, static_cast<double>(v)}; }
  static Num real(double v) { return {Kind::Float, 0, v}; }
  static Num boolean(bool v) { return {Kind::Bool, v ? 1 : 0, v ? 1.0 : 0.0}; }
  static Num pair(int64_t h, int64_t w) { return {Kind::Pair, h, 0.0, w}; }
  bool known() const { return kind != Kind::None; }
  bool isInt() const { return kind == Kind::Int || kind == Kind::Bool; }
  /// An integer size for both dimensions, or the two of a Pair.
  std::optional<std::pair<int64_t, int64_t>> sizes() const {
    if (kind == Kind::Int) return std::pair(i, i);
    if (kind == Kind::Pair) return std::pair(i, w);
    return std::nullopt;
  }
};

// Integer arithmetic of the planner's constants, checked: nullopt where the
// result is not an int64 (overflow, INT64_MIN / -1, division by zero), which
// plans no kernel for what depends on it (the checker and the constant folder
// guard the same cases; a valid program with such a hyperparameter crashed
// `--target cuda` with SIGFPE).
enum class Arith { Add, Sub, Mul, Div, Mod };

std::optional<int64_t> checkedArith(Arith kind, int64_t a, int64_t b) {
  int64_t r = 0;
  switch (kind) {
    case Arith::Add: return __builtin_add_overflow(a, b, &r) ? std::nullopt : std::optional(r);
    case Arith::Sub: return __builtin_sub_overflow(a, b, &r) ? std::nullopt : std::optional(r);
    case Arith::Mul: return __builtin_mul_overflow(a, b, &r) ? std::nullopt : std::optional(r);
    case Arith::Div:
    case Arith::Mod: {
      if (b == 0 || (a == INT64_MIN && b == -1)) return std::nullopt;
      int64_t q = a / b;
      if (a % b != 0 && ((a < 0) != (b < 0))) --q;  // floor division, as Python's //
      return kind == Arith::Div ? q : a - q * b;
    }
  }
  return std::nullopt;
}

class Planner {
 public:
  explicit Planner(const Module& m) : m_(m) {}

  std::vector<TernaryKernel> run() {
    if (m_.entry >= 0) {
      visitLayer(static_cast<uint32_t>(m_.entry), {}, 0);
    }
    return std::move(kernels_);
  }

 private:
  struct Frame {
    const Function* fn = nullptr;
    std::vector<Num> hypers;
    std::unordered_map<uint32_t, Num> values;
    /// Per instance index: its constructor arguments by parameter index, and
    /// which of them the source gives (the others take their defaults).
    struct Args {
      std::vector<Num> values;
      std::vector<bool> given;
    };
    std::unordered_map<uint32_t, Args> instanceArgs;
    /// An applied layer's weights that are the caller's: how the caller's
    /// are packed (the tensor the runtime sees), by weight index.
    std::unordered_map<uint32_t, PackRuns> callerRuns;
  };

  /// How weight `index` of the frame's layer is packed at run time.
  static PackRuns packRunsOf(const Frame& f, uint32_t index) {
    auto it = f.callerRuns.find(index);
    if (it != f.callerRuns.end()) return it->second;
    return index < f.fn->weights.size() ? f.fn->weights[index].packRuns : PackRuns::Rows;
  }

  Num value(const Frame& f, ValueId v) const {
    auto it = f.values.find(v.index);
    return it == f.values.end() ? Num{} : it->second;
  }

  Num hyperByName(const Frame& f, IdentifierId name) const {
    for (size_t i = 0; i < f.fn->hypers.size(); ++i) {
      if (f.fn->hypers[i].name == name) return f.hypers[i];
    }
    return {};
  }

  std::optional<int64_t> dim(const Frame& f, DimId d) const {
    const DimStore::Node& n = m_.dims.node(d);
    switch (n.kind) {
      case DimKind::Const: return n.value;
      case DimKind::Var: {
        Num v = hyperByName(f, n.var);
        if (v.isInt()) return v.i;
        return std::nullopt;
      }
      case DimKind::Unknown: return std::nullopt;
      default: break;
    }
    std::optional<int64_t> a = dim(f, n.lhs);
    std::optional<int64_t> b = dim(f, n.rhs);
    if (!a || !b) return std::nullopt;
    switch (n.kind) {
      case DimKind::Add: return checkedArith(Arith::Add, *a, *b);
      case DimKind::Sub: return checkedArith(Arith::Sub, *a, *b);
      case DimKind::Mul: return checkedArith(Arith::Mul, *a, *b);
      case DimKind::Div: return checkedArith(Arith::Div, *a, *b);
      default: return std::nullopt;
    }
  }

  /// The sizes of a tensor type, when all are known.
  std::optional<std::vector<int64_t>> shape(const Frame& f, TypeId type) const {
    if (!m_.types.isTensor(type) || !m_.types.node(type).rankKnown) return std::nullopt;
    std::vector<int64_t> out;
    for (DimId d : m_.types.shape(type)) {
      std::optional<int64_t> v = dim(f, d);
      if (!v) return std::nullopt;
      out.push_back(*v);
    }
    return out;
  }

  /// The value a region yields (a default or a global's initializer).
  Num regionValue(Frame& f, BlockId region) {
    const Block& b = m_.blocks[region.index];
    for (OpId id : b.ops) {
      const Op& o = m_.op(id);
      if (o.kind == OpKind::Yield) {
        std::span<const ValueId> ops = m_.operands(id);
        return ops.empty() ? Num{} : value(f, ops[0]);
      }
      evalScalar(f, id);
    }
    return {};
  }

  void visitLayer(uint32_t index, std::vector<Num> given, int depth) {
    if (depth > kMaxDepth) return;
    Frame f;
    // A layer merged with an earlier one (-Os) runs that one's code.
    if (m_.functions[index].sameAs >= 0) index = static_cast<uint32_t>(m_.functions[index].sameAs);
    f.fn = &m_.functions[index];
    f.hypers.resize(f.fn->hypers.size());
    for (size_t i = 0; i < f.hypers.size(); ++i) {
      if (i < given.size() && given[i].known()) {
        f.hypers[i] = given[i];
      } else if (f.fn->hypers[i].defaultValue.isValid()) {
        f.hypers[i] = regionValue(f, f.fn->hypers[i].defaultValue);
      }
    }
    walk(f, f.fn->body, depth);
  }

  /// Binds the implicit size variables of an applied layer from the shapes of
  /// the caller's arguments, then walks it.
  void visitApply(Frame& caller, OpId id, int depth) {
    if (depth > kMaxDepth) return;
    const Op& o = m_.op(id);
    const Function& g = m_.functions[static_cast<size_t>(o.intAttr)];
    if (g.kind != Function::Kind::Layer) return;
    Frame f;
    f.fn = &g;
    f.hypers.resize(g.hypers.size());
    std::span<const ValueId> operands = m_.operands(id);
    std::span<const int64_t> params = m_.ints(id);
    for (size_t i = 0; i < operands.size() && i < params.size(); ++i) {
      const ParamRef& p = g.params[static_cast<size_t>(params[i])];
      if (p.kind == ParamRef::Kind::Hyper) {
        f.hypers[p.index] = value(caller, operands[i]);
        continue;
      }
      // The caller's weight, packed as the caller's declaration says.
      OpId def = m_.values[operands[i].index].def;
      if (p.kind == ParamRef::Kind::Weight && def.isValid() &&
          m_.op(def).kind == OpKind::Weight) {
        f.callerRuns[p.index] = packRunsOf(caller, static_cast<uint32_t>(m_.op(def).intAttr));
      }
      TypeId declared = p.kind == ParamRef::Kind::Weight ? g.weights[p.index].type : g.inputs[p.index].type;
      std::optional<std::vector<int64_t>> actual = shape(caller, m_.typeOf(operands[i]));
      if (!actual || !m_.types.isTensor(declared) || !m_.types.node(declared).rankKnown) continue;
      std::span<const DimId> dims = m_.types.shape(declared);
      for (size_t d = 0; d < dims.size() && d < actual->size(); ++d) {
        const DimStore::Node& n = m_.dims.node(dims[d]);
        if (n.kind != DimKind::Var) continue;
        for (size_t h = 0; h < g.hypers.size(); ++h) {
          if (g.hypers[h].name == n.var && !f.hypers[h].known()) f.hypers[h] = Num::integer((*actual)[d]);
        }
      }
    }
    for (size_t i = 0; i < f.hypers.size(); ++i) {
      if (!f.hypers[i].known() && g.hypers[i].defaultValue.isValid()) {
        f.hypers[i] = regionValue(f, g.hypers[i].defaultValue);
      }
    }
    walk(f, g.body, depth + 1);
  }

  void walk(Frame& f, BlockId block, int depth) {
    const Block& b = m_.blocks[block.index];
    for (OpId id : b.ops) {
      const Op& o = m_.op(id);
      switch (o.kind) {
        case OpKind::If: {
          Num c = value(f, m_.operands(id)[0]);
          std::array<BlockId, 2> regions = m_.regionsOf(id);
          if (c.known()) {
            walk(f, regions[c.i != 0 ? 0 : 1], depth);
          } else {
            walk(f, regions[0], depth);
            walk(f, regions[1], depth);
          }
          break;
        }
        case OpKind::For:
        case OpKind::While:
          for (BlockId r : m_.regionsOf(id)) {
            if (r.isValid()) walk(f, r, depth);
          }
          break;
        case OpKind::Instantiate: {
          Frame::Args args;
          std::span<const ValueId> operands = m_.operands(id);
          std::span<const int64_t> params = m_.ints(id);
          for (size_t i = 0; i < operands.size() && i < params.size(); ++i) {
            auto p = static_cast<size_t>(params[i]);
            if (args.values.size() <= p) {
              args.values.resize(p + 1);
              args.given.resize(p + 1);
            }
            args.values[p] = value(f, operands[i]);
            args.given[p] = true;
          }
          const InstanceDecl& inst = f.fn->instances[static_cast<size_t>(o.intAttr)];
          if (!inst.builtin) {
            visitLayer(inst.decl, args.values, depth + 1);
          }
          f.instanceArgs[static_cast<uint32_t>(o.intAttr)] = std::move(args);
          break;
        }
        case OpKind::Forward: instanceKernel(f, static_cast<uint32_t>(o.intAttr), 0); break;
        case OpKind::FusedConv: {
          // tritonrt.conv_bn_act runs the activation in the kernel when it
          // can fold the batch norm; when it cannot (no running statistics),
          // the convolution alone, then the batch norm and the activation.
          auto conv = static_cast<uint32_t>(m_.ints(id)[0]);
          int64_t bn = m_.ints(id)[1];
          std::optional<bool> folds = bn < 0 ? std::optional(true)
                                             : batchNormFolds(f, static_cast<uint32_t>(bn));
          // With a residual (a second operand) its kernel adds it before
          // the activation; unfolded, the convolution runs alone.
          bool residual = m_.operands(id).size() > 1;
          if (folds != std::optional(true)) instanceKernel(f, conv, 0);
          if (folds != std::optional(false)) instanceKernel(f, conv, o.intAttr, residual);
          break;
        }
        case OpKind::FusedLinear:
          instanceKernel(f, static_cast<uint32_t>(m_.ints(id)[0]), o.intAttr,
                         m_.operands(id).size() > 1);
          break;
        case OpKind::FusedMatMul: {
          std::span<const ValueId> operands = m_.operands(id);
          matmulKernel(f, operands[1], m_.ints(id)[0] == 0, o.intAttr);
          break;
        }
        case OpKind::MatMul:
          matmulKernel(f, m_.operands(id)[1], /*kn=*/true, 0);
          leftKernel(f, m_.operands(id)[0], m_.operands(id)[1]);
          break;
        case OpKind::FusedConv2d: convFnKernel(f, id, o.intAttr); break;
        case OpKind::Builtin:
          builtinKernel(f, id);
          evalScalar(f, id);
          break;
        case OpKind::Apply: visitApply(f, id, depth); break;
        default: evalScalar(f, id); break;
      }
    }
  }

  void add(TernaryKernel k) {
    if (!withinKernelLimits(k)) return;  // the reference path runs it
    std::string key = k.symbol("f32", 0);
    if (seen_.insert(key).second) kernels_.push_back(std::move(k));
  }

  /// Whether kernels/cuda's templates take the product's sizes: each is an
  /// `int` template argument, a weight's element offsets are ints, and the
  /// grid has at most 65535 blocks of (at least) 64 output columns in y and
  /// 65535 groups in z (tck_gemm.cuh "grid y/z limits"). nvcc rejects the .cu
  /// otherwise; a larger product is not planned, so it runs the reference path.
  static bool withinKernelLimits(const TernaryKernel& k) {
    constexpr int64_t kIntMax = 2147483647;
    constexpr int64_t kGridY = 65535, kSmallestTileN = 64;
    auto product = [&](std::initializer_list<int64_t> sizes) {
      int64_t total = 1;
      for (int64_t s : sizes) {
        if (s <= 0 || total > kIntMax / s) return kIntMax + 1;
        total *= s;
      }
      return total;
    };
    if (k.kind == TernaryKernel::Kind::Linear) {
      return product({k.n, k.k}) <= kIntMax && k.n <= kGridY * kSmallestTileN;
    }
    for (int64_t size : {k.cin, k.cout, k.kh, k.kw, k.sh, k.sw, k.ph, k.pw, k.dh, k.dw, k.groups}) {
      if (size > kIntMax) return false;
    }
    return k.groups <= kGridY && k.cout / k.groups <= kGridY * kSmallestTileN &&
           product({k.cout, k.cin / k.groups, k.kh, k.kw}) <= kIntMax;
  }

  static std::string actName(int64_t act) {
    return act >= 0 && act < static_cast<int64_t>(std::size(kActNames)) ? kActNames[act] : "none";
  }

  /// A ternary weight read directly (tutorial style): x @ W or F.linear(x, W);
  /// also a 1-D W (one output feature: one packed row) and a stacked W of rank
  /// >= 3 in `x @ W` (one launch per matrix of the stack, tritonrt.cuda).
  void matmulKernel(const Frame& f, ValueId w, bool kn, int64_t act) {
    OpId def = m_.values[w.index].def;
    if (!def.isValid()) return;
    // An item of a stack, st[i] (the emitter's tritonrt.stack_item): the item
    // is a matrix or smaller stack, in the stack's packed rows.
    if (m_.op(def).kind == OpKind::Index) {
      if (ValueId stack = kernel_use::stackOfItem(m_, *f.fn, def); stack.isValid()) {
        matmulKernel(f, stack, kn, act);
      }
      return;
    }
    if (m_.op(def).kind != OpKind::Weight || !m_.types.isTernary(m_.typeOf(w))) return;
    std::optional<std::vector<int64_t>> s = shape(f, m_.typeOf(w));
    if (!s || s->empty()) return;
    // A weight packed by columns (x @ W) is stored as the rows of W^T, [n, k]:
    // the F.linear layout (tritonrt.cuda.packed_linear asks for that kernel).
    const auto weight = static_cast<size_t>(m_.op(def).intAttr);
    bool byColumns = packRunsOf(f, static_cast<uint32_t>(weight)) == PackRuns::Columns;
    TernaryKernel k;
    k.kind = TernaryKernel::Kind::Linear;
    k.act = actName(act);
    if (s->size() == 1) {  // x @ w, w [k]: the product of one output feature
      k.k = (*s)[0];
      k.n = 1;
    } else if (s->size() == 2) {
      if (byColumns && !kn) return;  // no launcher reads it as F.linear's weight
      k.k = kn ? (*s)[0] : (*s)[1];
      k.n = kn ? (*s)[1] : (*s)[0];
      k.kn = kn && !byColumns;
    } else {
      // A stack of [k, n] matrices packed by columns: matrix i is n packed rows
      // from byte i * n * ceil(k / 4), which the kernels read only 16-byte aligned.
      if (!kn || !byColumns) return;
      k.k = (*s)[s->size() - 2];
      k.n = s->back();
      if ((k.n * ((k.k + 3) / 4)) % 16 != 0) return;
    }
    if (k.n > 0 && k.k > 0) add(std::move(k));
  }

  /// A 2-D ternary weight on the left, `w @ y` (w [m, k] packed by its rows):
  /// tritonrt.left_matmul runs the nk kernel of w on y transposed, [.., j, k].
  void leftKernel(const Frame& f, ValueId w, ValueId y) {
    if (!kernel_use::leftProduct(m_, *f.fn, w, y)) return;
    std::optional<std::vector<int64_t>> s = shape(f, m_.typeOf(w));
    if (!s || s->size() != 2 || (*s)[0] <= 0 || (*s)[1] <= 0) return;
    TernaryKernel k;
    k.kind = TernaryKernel::Kind::Linear;
    k.n = (*s)[0];
    k.k = (*s)[1];
    add(std::move(k));
  }

  /// TernaryLinear / TernaryConv2d instances, from their constructor arguments.
  /// A functional convolution with a ternary weight (fused_conv2d): sizes from
  /// the weight's type, stride/padding/dilation/groups from constant operands.
  void convFnKernel(const Frame& f, OpId id, int64_t act) {
    std::span<const ValueId> operands = m_.operands(id);
    std::span<const int64_t> given = m_.ints(id);
    std::optional<ValueId> weight = operandFor(id, 1);
    if (!weight) return;
    ValueId w = *weight;
    OpId def = m_.values[w.index].def;
    if (!def.isValid() || m_.op(def).kind != OpKind::Weight || !m_.types.isTernary(m_.typeOf(w))) return;
    std::optional<std::vector<int64_t>> s = shape(f, m_.typeOf(w));
    if (!s || s->size() != 4) return;
    // conv2d's parameters: x, w, bias, stride, padding, dilation, groups;
    // stride, padding and dilation per dimension (height, width).
    std::pair<int64_t, int64_t> settings[7] = {{0, 0}, {0, 0}, {0, 0}, {1, 1},
                                               {0, 0}, {1, 1}, {1, 1}};
    for (size_t i = 0; i < given.size(); ++i) {
      auto param = static_cast<size_t>(given[i]);
      if (param <= 2 || param >= 7) continue;  // x, w, and the bias: operands of the launcher
      std::optional<std::pair<int64_t, int64_t>> v = value(f, operands[i]).sizes();
      if (!v || (param == 6 && v->first != v->second)) return;  // unknown: no specialized kernel
      settings[param] = *v;
    }
    auto smallest = [&](size_t param) {
      return std::min(settings[param].first, settings[param].second);
    };
    int64_t groups = settings[6].first;
    int64_t cout = (*s)[0], cinPerGroup = (*s)[1];
    if (smallest(3) <= 0 || smallest(4) < 0 || smallest(5) <= 0 || groups <= 0 ||
        cout <= 0 || cinPerGroup <= 0 || cout % groups != 0 || (*s)[2] <= 0 || (*s)[3] <= 0) {
      return;
    }
    TernaryKernel k;
    k.kind = TernaryKernel::Kind::Conv2d;
    k.cin = cinPerGroup * groups;
    k.cout = cout;
    std::tie(k.kh, k.kw) = std::pair((*s)[2], (*s)[3]);
    std::tie(k.sh, k.sw) = settings[3];
    std::tie(k.ph, k.pw) = settings[4];
    std::tie(k.dh, k.dw) = settings[5];
    k.groups = groups;
    k.act = actName(act);
    add(std::move(k));
  }

  /// The operand of a builtin (or fused) call bound to parameter `param`.
  std::optional<ValueId> operandFor(OpId id, int64_t param) const {
    std::span<const ValueId> operands = m_.operands(id);
    std::span<const int64_t> given = m_.ints(id);
    for (size_t i = 0; i < given.size() && i < operands.size(); ++i) {
      if (given[i] == param) return operands[i];
    }
    return std::nullopt;
  }

  /// Functional matmul, linear and conv2d of a ternary weight, unfused: the
  /// emitter calls fused_matmul / fused_conv2d for them with the CUDA target.
  void builtinKernel(const Frame& f, OpId id) {
    auto fn = static_cast<BuiltinFn>(m_.op(id).intAttr);
    std::optional<ValueId> w = operandFor(id, 1);
    if (!w) return;
    if (fn == BuiltinFn::Matmul) {
      matmulKernel(f, *w, /*kn=*/true, 0);
      if (std::optional<ValueId> left = operandFor(id, 0)) leftKernel(f, *left, *w);
    }
    if (fn == BuiltinFn::LinearFn) matmulKernel(f, *w, /*kn=*/false, 0);
    if (fn == BuiltinFn::Conv2dFn) convFnKernel(f, id, 0);
  }

  /// Whether the runtime can fold instance `index` (the batch norm after a
  /// convolution) into it: a BatchNorm2d with running statistics
  /// (track_running_stats, true unless given). Nullopt when not known.
  std::optional<bool> batchNormFolds(const Frame& f, uint32_t index) const {
    const InstanceDecl& inst = f.fn->instances[index];
    if (!inst.builtin || static_cast<BuiltinLayer>(inst.decl) != BuiltinLayer::BatchNorm2d) {
      return false;
    }
    std::optional<int64_t> track = builtinArg(f, index, "track_running_stats", 1);
    if (!track) return std::nullopt;
    return *track != 0;
  }

  /// Builtin instance `index`'s integer (or bool) argument `name`: `fallback`
  /// (the parameter's default) when the source does not give it; nullopt when
  /// it gives a value the planner cannot evaluate, or a float.
  std::optional<int64_t> builtinArg(const Frame& f, uint32_t index, std::string_view name,
                                    std::optional<int64_t> fallback) const {
    Num given = builtinArgValue(f, index, name, fallback ? Num::integer(*fallback) : Num{});
    if (!given.isInt()) return std::nullopt;
    return given.i;
  }

  /// The same for a size that may be given per dimension: (height, width).
  std::optional<std::pair<int64_t, int64_t>> builtinSizes(const Frame& f, uint32_t index,
                                                          std::string_view name,
                                                          std::optional<int64_t> fallback) const {
    return builtinArgValue(f, index, name, fallback ? Num::integer(*fallback) : Num{}).sizes();
  }

  Num builtinArgValue(const Frame& f, uint32_t index, std::string_view name, Num fallback) const {
    auto layer = static_cast<BuiltinLayer>(f.fn->instances[index].decl);
    std::vector<std::string_view> names = builtinLayerParamNames(layer);
    auto it = f.instanceArgs.find(index);
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] != name) continue;
      if (it == f.instanceArgs.end() || i >= it->second.given.size() || !it->second.given[i]) {
        return fallback;
      }
      return it->second.values[i];
    }
    return {};
  }

  void instanceKernel(const Frame& f, uint32_t index, int64_t act, bool residual = false) {
    const InstanceDecl& inst = f.fn->instances[index];
    if (!inst.builtin) return;
    auto layer = static_cast<BuiltinLayer>(inst.decl);
    if (layer != BuiltinLayer::TernaryLinear && layer != BuiltinLayer::TernaryConv2d) return;
    if (!f.instanceArgs.count(index)) return;
    // The stdlib layers' defaults (Builtins.def): stride=1, padding=0, groups=1,
    // dilation=1; the sizes have none.
    auto arg = [&](std::string_view name, std::optional<int64_t> fallback = std::nullopt) {
      return builtinArg(f, index, name, fallback);
    };
    TernaryKernel k;
    k.act = actName(act);
    k.residual = residual;
    if (layer == BuiltinLayer::TernaryLinear) {
      std::optional<int64_t> in = arg("in_features"), out = arg("out_features");
      if (!in || !out || *in <= 0 || *out <= 0) return;
      k.kind = TernaryKernel::Kind::Linear;
      k.k = *in;
      k.n = *out;
      add(std::move(k));
      return;
    }
    auto sizes = [&](std::string_view name, std::optional<int64_t> fallback = std::nullopt) {
      return builtinSizes(f, index, name, fallback);
    };
    std::optional<int64_t> in = arg("in_ch"), out = arg("out_ch"), groups = arg("groups", 1);
    std::optional<std::pair<int64_t, int64_t>> size = sizes("k"), stride = sizes("stride", 1),
                                                padding = sizes("padding", 0),
                                                dilation = sizes("dilation", 1);
    if (!in || !out || !size || !stride || !padding || !dilation || !groups) return;
    // A dilated convolution (TCN, WaveNet) is the same template with DH/DW,
    // as a functional conv2d's is (audit 45E: it ran torch's, unsaid).
    if (*in <= 0 || *out <= 0 || std::min(size->first, size->second) <= 0 ||
        std::min(stride->first, stride->second) <= 0 ||
        std::min(dilation->first, dilation->second) <= 0 ||
        std::min(padding->first, padding->second) < 0 || *groups <= 0 || *in % *groups != 0 ||
        *out % *groups != 0) {
      return;
    }
    k.kind = TernaryKernel::Kind::Conv2d;
    k.cin = *in;
    k.cout = *out;
    std::tie(k.kh, k.kw) = *size;
    std::tie(k.sh, k.sw) = *stride;
    std::tie(k.ph, k.pw) = *padding;
    std::tie(k.dh, k.dw) = *dilation;
    k.groups = *groups;
    add(std::move(k));
  }

  /// Constant arithmetic of hyperparameters, as the constructor computes it.
  void evalScalar(Frame& f, OpId id) {
    const Op& o = m_.op(id);
    if (o.resultsCount != 1) return;
    ValueId r = m_.result(id);
    std::span<const ValueId> ops = m_.operands(id);
    // Sizes per dimension (`kernel_size=[1, 7]`, `stride=[2]`).
    if (o.kind == OpKind::List && (ops.size() == 1 || ops.size() == 2)) {
      Num h = value(f, ops[0]), w = value(f, ops.back());
      if (h.kind == Num::Kind::Int && w.kind == Num::Kind::Int) f.values[r.index] = Num::pair(h.i, w.i);
      return;
    }
    if (!m_.types.isScalar(m_.typeOf(r))) return;
    auto in = [&](size_t i) {
      Num v = i < ops.size() ? value(f, ops[i]) : Num{};
      return v.kind == Num::Kind::Pair ? Num{} : v;  // a size list is no scalar's operand
    };
    DType dtype = m_.types.node(m_.typeOf(r)).dtype;
    Num out;
    switch (o.kind) {
      case OpKind::Constant:
        if (o.constKind == ConstKind::Int) out = Num::integer(o.intAttr);
        if (o.constKind == ConstKind::Bool) out = Num::boolean(o.intAttr != 0);
        if (o.constKind == ConstKind::Float) out = Num::real(o.floatAttr);
        break;
      case OpKind::Hyper:
        if (o.intAttr >= 0 && static_cast<size_t>(o.intAttr) < f.hypers.size()) out = f.hypers[o.intAttr];
        break;
      case OpKind::Global: {
        auto g = static_cast<size_t>(o.intAttr);
        if (g < m_.globals.size()) {
          Frame gf;
          gf.fn = f.fn;
          out = regionValue(gf, m_.globals[g].init);
        }
        break;
      }
      case OpKind::Cast: {
        Num a = in(0);
        if (!a.known()) break;
        if (isIntegral(dtype)) {
          if (a.kind != Num::Kind::Float) {
            out = Num::integer(a.i);
          } else if (std::fabs(a.f) < 9.0e18) {  // false for NaN; else not an int64
            out = Num::integer(static_cast<int64_t>(a.f));
          }
        } else if (isFloating(dtype)) {
          out = Num::real(a.f);
        }
        break;
      }
      case OpKind::Neg: {
        Num a = in(0);
        if (a.kind == Num::Kind::Int && a.i != INT64_MIN) out = Num::integer(-a.i);
        if (a.kind == Num::Kind::Float) out = Num::real(-a.f);
        break;
      }
      case OpKind::Not:
        if (in(0).known()) out = Num::boolean(in(0).i == 0);
        break;
      case OpKind::Add: case OpKind::Sub: case OpKind::Mul: case OpKind::Div: case OpKind::Mod:
      case OpKind::Eq: case OpKind::Ne: case OpKind::Lt: case OpKind::Le: case OpKind::Gt:
      case OpKind::Ge: case OpKind::And: case OpKind::Or:
        out = binary(o.kind, in(0), in(1));
        break;
      case OpKind::Builtin: {
        auto fn = static_cast<BuiltinFn>(o.intAttr);
        Num a = in(0), b = in(1);
        if (!a.known() || ((fn == BuiltinFn::Max || fn == BuiltinFn::Min) && !b.known())) break;
        bool ints = a.kind != Num::Kind::Float && b.kind != Num::Kind::Float;
        if (fn == BuiltinFn::Max) out = ints ? Num::integer(std::max(a.i, b.i)) : Num::real(std::max(a.f, b.f));
        if (fn == BuiltinFn::Min) out = ints ? Num::integer(std::min(a.i, b.i)) : Num::real(std::min(a.f, b.f));
        if (fn == BuiltinFn::Abs && a.kind == Num::Kind::Float) out = Num::real(std::abs(a.f));
        if (fn == BuiltinFn::Abs && a.kind != Num::Kind::Float && a.i != INT64_MIN) {
          out = Num::integer(std::abs(a.i));
        }
        break;
      }
      default: break;
    }
    if (out.known()) f.values[r.index] = out;
  }

  static Num binary(OpKind kind, Num a, Num b) {
    if (!a.known() || !b.known()) return {};
    bool real = a.kind == Num::Kind::Float || b.kind == Num::Kind::Float;
    switch (kind) {
      case OpKind::And: return Num::boolean(a.i != 0 && b.i != 0);
      case OpKind::Or: return Num::boolean(a.i != 0 || b.i != 0);
      case OpKind::Eq: return Num::boolean(real ? a.f == b.f : a.i == b.i);
      case OpKind::Ne: return Num::boolean(real ? a.f != b.f : a.i != b.i);
      case OpKind::Lt: return Num::boolean(real ? a.f < b.f : a.i < b.i);
      case OpKind::Le: return Num::boolean(real ? a.f <= b.f : a.i <= b.i);
      case OpKind::Gt: return Num::boolean(real ? a.f > b.f : a.i > b.i);
      case OpKind::Ge: return Num::boolean(real ? a.f >= b.f : a.i >= b.i);
      default: break;
    }
    if (real) {
      switch (kind) {
        case OpKind::Add: return Num::real(a.f + b.f);
        case OpKind::Sub: return Num::real(a.f - b.f);
        case OpKind::Mul: return Num::real(a.f * b.f);
        case OpKind::Div: return b.f == 0.0 ? Num{} : Num::real(a.f / b.f);
        default: return {};
      }
    }
    Arith arith = Arith::Add;
    switch (kind) {
      case OpKind::Add: arith = Arith::Add; break;
      case OpKind::Sub: arith = Arith::Sub; break;
      case OpKind::Mul: arith = Arith::Mul; break;
      case OpKind::Div: arith = Arith::Div; break;
      case OpKind::Mod: arith = Arith::Mod; break;
      default: return {};
    }
    std::optional<int64_t> r = checkedArith(arith, a.i, b.i);
    return r ? Num::integer(*r) : Num{};
  }

  const Module& m_;
  std::vector<TernaryKernel> kernels_;
  std::set<std::string> seen_;
};

}  // namespace

std::string TernaryKernel::symbol(std::string_view dtype, int variant) const {
  std::string_view res = residual ? "_res" : "";
  if (kind == Kind::Linear) {
    return fmt::format("tck_linear_{}_n{}_k{}_{}_{}{}_v{}", dtype, n, k, kn ? "kn" : "nk", act, res,
                       variant);
  }
  return fmt::format("tck_conv2d_{}_c{}_o{}_k{}x{}_s{}x{}_p{}x{}_d{}x{}_g{}_{}{}_v{}", dtype, cin, cout,
                     kh, kw, sh, sw, ph, pw, dh, dw, groups, act, res, variant);
}

std::vector<TernaryKernel> planTernaryKernels(const ir::Module& module) {
  return Planner(module).run();
}

}  // namespace tritonc

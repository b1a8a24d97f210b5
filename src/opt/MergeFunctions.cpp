//===- MergeFunctions.cpp - one definition for identical declarations -----===//
//
// -Os. Two layers (or two fns) of one file whose code is the same in every
// respect the generated module can observe -- hyperparameters, weights,
// inputs and sub-modules with their names, types and defaults, and a body
// computing the same ops in the same order -- need only one definition: the
// later one is marked `sameAs` the earlier, and the PyTorch emitter writes it
// as `class B(A): pass` or `g = f` (its own name, constructor and state_dict
// keys stay). Applications and calls of the later one are redirected to the
// earlier. Local value names do not count (only the emitted locals differ).
// The comparison is exact: a canonical byte string of each declaration, with
// values numbered in order of definition, callees through the merges found so
// far (repeated until nothing changes, so that layers merged by their
// sub-layers merge in turn). Only declarations of the same file merge (an
// imported file's are emitted apart).
//
//===----------------------------------------------------------------------===//
#include <cstring>
#include <string>
#include <unordered_map>

#include "PassRegistry.h"

namespace tritonc::opt {

namespace {

using namespace ir;

class Fingerprint {
 public:
  Fingerprint(const Module& m, const std::vector<int32_t>& canonical)
      : m_(m), canonical_(canonical) {}

  /// The canonical bytes of function `index`, or "" when it must stay apart.
  std::string of(size_t index) {
    const Function& f = m_.functions[index];
    out_.clear();
    numbers_.clear();
    if (f.kind == Function::Kind::Main || !f.body.isValid()) return {};
    put(static_cast<uint64_t>(f.kind));
    put(f.origin);
    put(f.params.size());
    for (const ParamRef& p : f.params) {
      put(static_cast<uint64_t>(p.kind));
      put(p.index);
    }
    put(f.hypers.size());
    for (const HyperDecl& h : f.hypers) {
      put(h.name.index);
      put(h.type.index);
      put(h.implicit ? 1 : 0);
      region(h.defaultValue);
    }
    put(f.weights.size());
    for (const WeightDecl& w : f.weights) {
      put(w.name.index);
      put(w.type.index);
      uint64_t bits = 0;
      std::memcpy(&bits, &w.sparsity, sizeof bits);
      put(bits);
      region(w.init);
    }
    put(f.inputs.size());
    for (const InputDecl& in : f.inputs) {
      put(in.name.index);
      put(in.type.index);
      region(in.defaultValue);
    }
    put(f.instances.size());
    for (const InstanceDecl& inst : f.instances) {
      put(inst.name.index);
      put(inst.builtin ? 1 : 0);
      put(inst.builtin ? inst.decl : static_cast<uint32_t>(canonical_[inst.decl]));
    }
    put(f.returnType.index);
    region(f.body);
    return failed_ ? std::string() : out_;
  }

 private:
  void put(uint64_t v) { out_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void text(std::string_view s) {
    put(s.size());
    out_.append(s);
  }
  void define(ValueId v) {
    numbers_[v.index] = static_cast<uint32_t>(numbers_.size());
    type(m_.typeOf(v));
  }
  // A sub-module's type names the instance module-wide; which one a value is
  // follows from the op that makes it (its instance in this declaration).
  void type(TypeId t) {
    TypeKind kind = m_.types.kind(t);
    if (kind == TypeKind::Instance || kind == TypeKind::BuiltinInstance) {
      put(UINT64_MAX - static_cast<uint64_t>(kind));
    } else {
      put(t.index);
    }
  }
  void use(ValueId v) {
    auto it = numbers_.find(v.index);
    if (it == numbers_.end()) {
      failed_ = true;  // defined outside the declaration: keep it apart
      return;
    }
    put(it->second);
  }

  void region(BlockId block) {
    if (!block.isValid()) {
      put(UINT64_MAX);
      return;
    }
    const Block& b = m_.blocks[block.index];
    put(b.args.size());
    for (ValueId arg : b.args) define(arg);
    put(b.ops.size());
    for (OpId id : b.ops) {
      const Op& o = m_.op(id);
      put(static_cast<uint64_t>(o.kind));
      put(static_cast<uint64_t>(o.constKind));
      put(o.inplace ? 1 : 0);
      int64_t attr = o.intAttr;
      if ((o.kind == OpKind::Apply || o.kind == OpKind::CallFn) && attr >= 0 &&
          static_cast<size_t>(attr) < canonical_.size()) {
        attr = canonical_[static_cast<size_t>(attr)];
      }
      put(static_cast<uint64_t>(attr));
      uint64_t bits = 0;
      std::memcpy(&bits, &o.floatAttr, sizeof bits);
      put(bits);
      if (o.strAttr == UINT32_MAX) {
        put(UINT64_MAX);
      } else {
        text(m_.strings[o.strAttr]);
      }
      std::span<const int64_t> ints = m_.ints(id);
      put(ints.size());
      for (int64_t i : ints) put(static_cast<uint64_t>(i));
      std::span<const ValueId> operands = m_.operands(id);
      put(operands.size());
      for (ValueId v : operands) use(v);
      for (BlockId r : o.regions) region(r);
      std::span<const ValueId> results = m_.results(id);
      put(results.size());
      for (ValueId r : results) define(r);
    }
  }

  const Module& m_;
  const std::vector<int32_t>& canonical_;
  std::string out_;
  std::unordered_map<uint32_t, uint32_t> numbers_;
  bool failed_ = false;
};

}  // namespace

bool runMergeFunctions(Module& module) {
  size_t n = module.functions.size();
  // canonical[i]: the function that defines i (itself unless merged).
  std::vector<int32_t> canonical(n);
  for (size_t i = 0; i < n; ++i) {
    int32_t same = module.functions[i].sameAs;
    canonical[i] = same >= 0 ? same : static_cast<int32_t>(i);
  }
  bool changed = false;
  for (bool progress = true; progress;) {
    progress = false;
    std::unordered_map<std::string, size_t> first;
    for (size_t i = 0; i < n; ++i) {
      if (canonical[i] != static_cast<int32_t>(i)) continue;
      Fingerprint fingerprint(module, canonical);
      std::string bytes = fingerprint.of(i);
      if (bytes.empty()) continue;
      auto [it, inserted] = first.emplace(std::move(bytes), i);
      if (!inserted) {
        canonical[i] = static_cast<int32_t>(it->second);
        module.functions[i].sameAs = static_cast<int32_t>(it->second);
        progress = changed = true;
      }
    }
  }
  if (!changed) return false;
  // Applications and calls name the definition (`_A_apply`, `f`).
  for (Op& o : module.ops) {
    if (o.erased || (o.kind != OpKind::Apply && o.kind != OpKind::CallFn)) continue;
    if (o.intAttr >= 0 && static_cast<size_t>(o.intAttr) < n) {
      o.intAttr = canonical[static_cast<size_t>(o.intAttr)];
    }
  }
  return true;
}

}  // namespace tritonc::opt

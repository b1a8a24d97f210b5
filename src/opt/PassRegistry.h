//===- PassRegistry.h - the passes' entry points ----------------*- C++ -*-===//
#pragma once

#include "tritonc/ir/IR.h"

namespace tritonc::opt {

/// Each pass transforms the module in place and returns whether it changed it.
#define PASS(Id, Name, Description) bool run##Id(ir::Module& module);
#include "tritonc/opt/Passes.def"

/// Ops reachable from a function's body or a declaration region, in order.
template <typename Fn>
void forEachRegionRoot(const ir::Module& module, Fn&& fn) {
  for (const ir::Global& g : module.globals) {
    if (g.init.isValid()) fn(g.init);
  }
  for (const ir::Function& f : module.functions) {
    for (const ir::HyperDecl& h : f.hypers) {
      if (h.defaultValue.isValid()) fn(h.defaultValue);
    }
    for (const ir::WeightDecl& w : f.weights) {
      if (w.init.isValid()) fn(w.init);
    }
    for (const ir::InputDecl& in : f.inputs) {
      if (in.defaultValue.isValid()) fn(in.defaultValue);
    }
    if (f.body.isValid()) fn(f.body);
  }
}

}  // namespace tritonc::opt

//===- IRGen.h - entry point of the irgen stage -----------------*- C++ -*-===//
#pragma once

#include "tritonc/ir/IR.h"
#include "tritonc/sema/CheckedModule.h"

namespace tritonc {

struct IRGenOptions {
  /// Emit `check_dim` for the shape comparisons the checker could not decide
  /// (-O0 only: optimized code trusts the types).
  bool runtimeShapeChecks = false;
};

/// Lowers a checked program (without errors) to IR: one function per layer
/// and fn (same index as CheckedModule::callables) and one for `main`. The
/// only bridge from the front end to the back end.
ir::Module generateIR(const CheckedModule& checked, const IRGenOptions& options = {});

}  // namespace tritonc

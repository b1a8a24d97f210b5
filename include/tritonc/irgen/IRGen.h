//===- IRGen.h - entry point of the irgen stage -----------------*- C++ -*-===//
#pragma once

#include "tritonc/ir/IR.h"
#include "tritonc/sema/CheckedModule.h"

namespace tritonc {

struct IRGenOptions {
  /// Emit `check_dim` for the shape comparisons the checker could not decide
  /// (-O0 only: optimized code trusts the types).
  bool runtimeShapeChecks = false;
  /// Which file of the program this is (ir::Module::origins): 0 for the file
  /// being compiled, whose `main` and entry layer become the program's; an
  /// imported file's functions and constants are marked with its index.
  uint32_t origin = 0;
};

/// Lowers a checked program (without errors) to IR: one function per layer
/// and fn (same index as CheckedModule::callables) and one for `main`. The
/// only bridge from the front end to the back end.
ir::Module generateIR(const CheckedModule& checked, const IRGenOptions& options = {});

/// The same for one file of a program with imports: `program` holds the IR of
/// the files `checked` imports (its functions numbered as checked.callables
/// [0, firstLocal), its stores those the checker started from), and receives
/// this file's functions and constants.
void generateIRInto(const CheckedModule& checked, ir::Module& program,
                    const IRGenOptions& options);

}  // namespace tritonc

//===- Driver.h - entry point of the driver stage ---------------*- C++ -*-===//
//
// Runs the compilation pipeline for the `compile` and `check` commands:
// reads the inputs, runs the stages up to the one asked for, prints dumps
// and diagnostics, and returns the process exit code.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tritonc/driver/Options.h"

namespace tritonc {

/// `tritonc compile`.
int runCompile(const CompileOptions& options);
/// `tritonc check`: the front end only, no output files.
int runCheck(const CompileOptions& options);
/// A command or flag whose stage is not built yet: one diagnostic, exit 2.
int reportNotImplemented(const CompileOptions& options, const std::string& what,
                         const std::string& issue);

}  // namespace tritonc

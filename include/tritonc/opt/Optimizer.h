//===- Optimizer.h - entry point of the opt stage ---------------*- C++ -*-===//
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "tritonc/base/Timings.h"
#include "tritonc/ir/IR.h"

namespace tritonc {

struct OptimizerOptions {
  char level = '1';          ///< '0'..'3' or 's'
  bool verifyEach = false;   ///< run the verifier after every pass
  Timings* timings = nullptr;
  /// Called after every pass with its name (for --print-after-all).
  std::function<void(std::string_view pass, const ir::Module&)> afterPass;
};

/// The passes of an -O level, in order (Pipeline.cpp is the one place that
/// assembles them).
std::vector<std::string_view> pipelineFor(char level);

/// Runs the pipeline of `options.level` over `module`. Returns the verifier's
/// findings after the first pass that broke an invariant (empty: success).
std::vector<std::string> optimize(ir::Module& module, const OptimizerOptions& options);

}  // namespace tritonc

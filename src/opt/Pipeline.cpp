//===- Pipeline.cpp - pass registry and the pipelines per -O level --------===//
#include <fmt/format.h>

#include "PassRegistry.h"
#include "tritonc/ir/Verifier.h"
#include "tritonc/opt/Optimizer.h"

namespace tritonc {

namespace {
struct PassEntry {
  std::string_view name;
  bool (*run)(ir::Module&);
};
constexpr PassEntry kPasses[] = {
#define PASS(Id, Name, Description) {Name, &opt::run##Id},
#include "tritonc/opt/Passes.def"
};

const PassEntry* findPass(std::string_view name) {
  for (const PassEntry& pass : kPasses) {
    if (pass.name == name) {
      return &pass;
    }
  }
  return nullptr;
}
}  // namespace

std::vector<std::string_view> pipelineFor(char level) {
  switch (level) {
    case '0': return {};
    // Folding exposes equal expressions and dead code; CSE exposes dead code.
    // Every other level starts by dropping the -O0 run-time shape checks of
    // the checked IR (one IR serves every level: L2).
    case '1': return {"strip-checks", "constant-fold", "cse", "dce", "fuse-ternary-basic"};
    // Simplification exposes constants and common subexpressions; LICM runs
    // after CSE so that one copy of an expression leaves the loop. Fusion can
    // make two ops equal (`linear(x, w, b)` and `x @ transpose(w) + b` become
    // one fused_matmul): CSE and DCE run again after it.
    // -O2 inlines applications and small fns first, so that the other passes
    // see across layer boundaries.
    case '2':
      return {"strip-checks", "inline", "constant-fold", "simplify", "constant-fold", "cse",
              "licm", "dce", "fuse-ternary", "cse", "dce", "zero-skip", "inplace"};
    case '3':
      return {"strip-checks", "inline-aggressive", "constant-fold", "simplify", "constant-fold",
              "cse", "licm", "dce", "fuse-ternary", "cse", "dce", "zero-skip", "inplace"};
    // -Os: no inlining (it copies bodies); everything that only removes code;
    // identical declarations defined once, last (after every pass that could
    // still make two of them differ or equal).
    case 's':
    default:
      return {"strip-checks", "constant-fold", "simplify", "constant-fold", "cse", "licm",
              "dce", "fuse-ternary", "cse", "dce", "zero-skip", "inplace", "merge-functions"};
  }
}

std::vector<std::string> optimize(ir::Module& module, const OptimizerOptions& options) {
  for (std::string_view name : pipelineFor(options.level)) {
    const PassEntry* pass = findPass(name);
    {
      ScopedTimer timer(options.timings, [&] { return "pass " + std::string(name); });
      pass->run(module);
    }
    if (options.afterPass) {
      options.afterPass(name, module);
    }
    if (options.verifyEach) {
      std::vector<std::string> problems = ir::verify(module);
      if (!problems.empty()) {
        problems.insert(problems.begin(), fmt::format("the IR is invalid after pass '{}':", name));
        return problems;
      }
    }
  }
  return {};
}

}  // namespace tritonc

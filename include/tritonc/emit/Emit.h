//===- Emit.h - entry point of the emit stage -------------------*- C++ -*-===//
#pragma once

#include <string>

#include "tritonc/base/Expected.h"
#include "tritonc/ir/IR.h"

namespace tritonc {

struct EmitOptions {
  std::string sourceName;   ///< the input file, for the header comment
  std::string flags;        ///< the flags that shaped the code, for the header comment
};

/// The PyTorch module for an optimized IR module (TOOLCHAIN.md "Generated
/// PyTorch module"): one nn.Module per layer, a function per fn, constants,
/// `main()`, and `ENTRY` naming the entry layer. Imports only torch, math and
/// tritonrt.
/// The Python module of `module`, or an error when it cannot be expressed in
/// Python (control flow nested deeper than Python's indentation limit; the
/// error message is the nesting depth).
Expected<std::string> emitPyTorch(const ir::Module& module, const EmitOptions& options);

/// The deepest indentation the emitter writes (Python's parser stops at 100).
inline constexpr int kMaxPythonIndent = 99;

}  // namespace tritonc

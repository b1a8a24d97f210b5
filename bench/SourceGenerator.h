//===- SourceGenerator.h - synthetic Triton DSL sources ---------*- C++ -*-===//
//
// Produces deterministic, realistic Triton DSL programs of a requested number
// of lines for the front-end benchmarks: layers with typed tensor parameters,
// instantiations, `let` statements with calls, matmuls and arithmetic, `if`,
// `for` and `while` blocks, comments, `fn` helpers, top-level constants and a
// `main` block. Lines average 30-40 bytes, like the examples.
//
// Every generated program lexes and parses without a diagnostic (the
// benchmarks check this before measuring).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tritonc::bench {

/// Returns a program of exactly `lines` lines (each ending with '\n').
/// The same (lines, seed) always gives the same text.
std::string generateSource(size_t lines, uint64_t seed = 0x7472'6974'6f6e'6331ull);

}  // namespace tritonc::bench

//===- Parse.h - entry point of the parse stage -----------------*- C++ -*-===//
#pragma once

#include "tritonc/diag/Diagnostics.h"
#include "tritonc/lex/TokenizedBuffer.h"
#include "tritonc/parse/Tree.h"

namespace tritonc {

/// Limits that keep every later (recursive) walk over a tree safe.
struct ParseLimits {
  /// Brackets, blocks, unary operators and type arguments nested in each other.
  static constexpr unsigned kMaxNesting = 256;
  /// Depth of the tree, which left-associative operator chains also grow.
  static constexpr unsigned kMaxTreeDepth = 4096;
};

/// Parses the grammar of LANGUAGE.md §2. Syntax errors are reported to
/// `diags`; the parser recovers at statement and item boundaries, so one run
/// reports every independent error, and the tree holds Error nodes where
/// input could not be parsed. `tokens` must outlive the tree.
Tree parse(const TokenizedBuffer& tokens, DiagnosticEngine& diags);

}  // namespace tritonc

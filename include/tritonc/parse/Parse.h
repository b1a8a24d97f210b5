//===- Parse.h - entry point of the parse stage -----------------*- C++ -*-===//
#pragma once

#include <span>

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

/// A top-level item's tokens: [begin, end), `end` being where the next item
/// (or the end of the file) begins.
struct ItemTokens {
  TokenId begin;
  TokenId end;
};
/// Parses only some top-level items of `tokens` (the incremental compile's
/// changed declarations and what they use), in the order given: the tree's
/// program holds just those, with every token and location as in the whole
/// file. Returns false in `complete` when an item does not end exactly at its
/// `end` (top-level semicolons after it aside) or a diagnostic was reported:
/// the caller then parses the whole file instead.
Tree parseItems(const TokenizedBuffer& tokens, std::span<const ItemTokens> items,
                DiagnosticEngine& diags, bool& complete);

}  // namespace tritonc

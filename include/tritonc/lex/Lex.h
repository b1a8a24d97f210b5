//===- Lex.h - entry point of the lex stage ---------------------*- C++ -*-===//
#pragma once

#include "tritonc/base/Interner.h"
#include "tritonc/diag/Diagnostics.h"
#include "tritonc/lex/TokenizedBuffer.h"
#include "tritonc/source/SourceBuffer.h"

namespace tritonc {

/// Splits `source` into tokens (LANGUAGE.md §1). Lexical errors are reported
/// to `diags` and leave Error tokens or best-effort literals behind, so the
/// parser can go on without cascading errors. `source` and `interner` must
/// outlive the result.
TokenizedBuffer lex(const SourceBuffer& source, Interner& interner, DiagnosticEngine& diags);

}  // namespace tritonc

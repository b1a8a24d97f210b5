//===- Sema.h - entry point of the sema stage -------------------*- C++ -*-===//
#pragma once

#include "tritonc/diag/Diagnostics.h"
#include "tritonc/parse/Tree.h"
#include "tritonc/sema/CheckedModule.h"

namespace tritonc {

/// Checks a parsed file against LANGUAGE.md §3-§5: names, types, the ternary
/// rules, shapes, builtins and layers. Mistakes are reported to `diags`;
/// undecidable facts are accepted (and shape comparisons recorded for run-time
/// checks). `tree` and the interner must outlive the result. A file with
/// `import`s is checked against `imports` (every import item must have an
/// entry); the names an import brings into scope are LANGUAGE.md §2's.
CheckedModule check(const Tree& tree, const Interner& interner, DiagnosticEngine& diags,
                    const ImportContext* imports = nullptr);

}  // namespace tritonc

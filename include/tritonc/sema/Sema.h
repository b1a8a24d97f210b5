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
///
/// `options` say what the checker cannot see in the tree.
struct CheckOptions {
  /// The entry layer is the file's last (no `--entry`): the checker warns when
  /// that layer is a part of another and some other layer is used by none.
  bool entryByOrder = false;
  /// The file's last layer, when the tree holds only some of the file's items
  /// (an incremental or parallel compile); empty: the tree's last layer.
  std::string_view lastLayer;
};
CheckedModule check(const Tree& tree, const Interner& interner, DiagnosticEngine& diags,
                    const ImportContext* imports = nullptr, const CheckOptions& options = {});

}  // namespace tritonc

//===- Incremental.h - recompiling only the declarations that changed -*- C++ -*-===//
//
// `--incremental` (TOOLCHAIN.md): a file's generated module is made of one
// piece per top-level declaration (emit/Emit.h, PyTorchPieces). Each piece
// depends only on its declaration's text, on the declarations it uses
// (transitively: a layer's code inlines the layers it applies) and on the
// flags. A declaration's *unit key* hashes exactly that, so after an edit
// only the units whose key changed are checked, lowered, optimized and
// emitted again, together with what they use (the checker needs their
// signatures, the inliner their bodies); every other piece comes from the
// file's previous compile, kept in the cache. The pieces are assembled as a
// full compile assembles them, so the module is byte-identical.
//
// Only the changed units and what they use are even parsed: the file is
// lexed, split into units at its item keywords, and each unit's key computed
// from its tokens' text. With imports, every key also covers the imported
// files (an edit there recompiles every unit), the imported files are
// checked and lowered again for a compile, and their pieces are kept as one
// group. Anything unusual falls back to the full pipeline, which then
// reports what it finds: lexical diagnostics, a unit that does not parse
// cleanly or does not end where the split said, a declaration checked with
// diagnostics, two declarations with one name, a declaration named like an
// imported one.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <vector>

#include "Imports.h"
#include "tritonc/base/Timings.h"
#include "tritonc/base/Workers.h"
#include "tritonc/cache/Cache.h"
#include "tritonc/driver/Driver.h"
#include "tritonc/lex/TokenizedBuffer.h"
#include "tritonc/parse/Parse.h"

namespace tritonc {

/// One top-level declaration (layer, fn, constant or main) of a file.
struct Unit {
  ItemTokens tokens;            ///< from its keyword to where the next one starts
  TokenKind keyword = TokenKind::KwLayer;
  std::string_view name;        ///< its name in the source ("main" for main)
  std::vector<uint32_t> uses;   ///< the units its text names, directly
  cache::Key key;               ///< what its piece of generated code depends on
};

/// The units of a lexed file, in source order, or why it has none.
struct UnitPlan {
  std::vector<Unit> units;
  std::string unsupported;  ///< non-empty: compile the file in full (and why)
};

/// Splits a file into units at the item keywords outside brackets (the
/// parser checks each split when it parses the unit) and computes their
/// keys. `flags` stands for every output-affecting flag; `positions` adds
/// each unit's line and column (the -O0 run-time checks quote them).
/// `keys` false leaves the keys unset (a compile that stores no pieces).
UnitPlan planUnits(const TokenizedBuffer& tokens, std::string_view flags, bool positions,
                   bool allowImports = false, bool keys = true);

/// The files a compiled file imports, as the driver loaded them (without
/// diagnostics).
struct IncrementalImports {
  const std::vector<ImportEdge>& edges;
  const std::vector<int>& order;
  const ImportLoader& loader;
};

/// What an incremental compile did.
struct IncrementalResult {
  bool compiled = false;  ///< false: compile the file in full (nothing was reported)
  std::string py;         ///< the module, with the emitter's name placeholders
  std::string why;        ///< why it fell back, for --verbose
  size_t units = 0;       ///< declarations in the file
  size_t changed = 0;     ///< ... whose piece was not in the cache
  size_t recompiled = 0;  ///< ... whose piece was made again (the changed ones)
  /// ... read again with them for their signatures and bodies (what the
  /// changed ones use, and the import items), their pieces reused.
  size_t reread = 0;
};

/// Compiles `source` reusing the pieces of its previous compile (stored in
/// `cache` under the file's path and flags), and stores the new pieces.
/// `lexed` is the file's tokens when the driver already lexed it without a
/// diagnostic (else it is lexed here).
/// Only for the PyTorch target; the caller has looked the whole file up in L3
/// first. Reports nothing: a file it cannot compile cleanly is left to the
/// full pipeline.
IncrementalResult compileIncrementally(const CompileOptions& options, const SourceBuffer& source,
                                       cache::Cache& cache, Interner& interner,
                                       const TokenizedBuffer* lexed, Timings* timings,
                                       const IncrementalImports* imports = nullptr);

/// What compiling a file's declarations in parallel groups did.
struct GroupsResult {
  bool compiled = false;  ///< false: compile the file in full (nothing was reported)
  std::string py;         ///< the module (when compiled to the end), with name placeholders
  std::string why;        ///< why it was not, for --verbose
  size_t units = 0;       ///< declarations in the file
  size_t groups = 0;      ///< compiled at once, one per thread
  size_t compiledUnits = 0;  ///< summed over the groups (shared declarations count once per group)
  bool damaged = false;      ///< compileStoredGroups: the stored groups do not decode
};

/// A cold compile of one file (`-j` jobs left over for it) that uses its
/// cores: the declarations that nothing else in the file uses (the models,
/// `main`) are split into groups of about the same size, each
/// compiled with everything it uses on a thread of its own from parsing to
/// the PyTorch pieces, and the pieces are assembled in module order, so the
/// module is byte-identical to a serial compile (each piece depends only on
/// its declaration and what that uses, as the incremental compile relies
/// on). `lastStage` Check stops after type checking (`tritonc check`).
/// Declines (and reports nothing) when the file cannot be split into groups
/// that each hold at most 3/4 of its text, when it imports files, and when
/// any group reports a diagnostic: the full pipeline then reports it in its
/// place. The PyTorch target only, -O0 to -O3.
/// The groups run on `workers` and the calling thread (at most one group
/// each).
/// `checkedIR` (a compile that keeps the checked IR in L2) has appended each
/// group's checked IR before optimization, with the file's units and the
/// groups' members: what compileStoredGroups needs to finish the compile
/// at any optimization level without the front end.
GroupsResult compileInGroups(const CompileOptions& options, Stage lastStage,
                             const TokenizedBuffer& tokens, Workers& workers, Timings* timings,
                             std::string* checkedIR = nullptr);

/// An L2 hit of a file compiled in groups: optimizes and emits each group's
/// stored checked IR (`checkedIR`, from compileInGroups) on `workers` and
/// the calling thread (on the calling thread alone when null), and
/// assembles the module as compileInGroups does, byte-identical to a full
/// compile. Declines (and reports nothing) when the payload does not decode
/// or a group fails; the full pipeline then compiles the file.
/// `sourceBytes` (the file's size) bounds what a group's IR may decompress to.
GroupsResult compileStoredGroups(const CompileOptions& options, std::string_view checkedIR,
                                 const std::string& sourceName, Workers* workers,
                                 Timings* timings, size_t sourceBytes);

}  // namespace tritonc

//===- Imports.h - finding, reading and ordering imported files -*- C++ -*-===//
//
// `import "path.tri" [as name]` (LANGUAGE.md §2) makes the layers and fns of
// another file usable. The driver resolves the path relative to the importing
// file, then in each `-I` directory; reads, lexes and parses every file
// reached, once per process; reports a missing file or an import cycle at the
// import that names it; and hands back the files in dependency order, so that
// each is checked (and lowered) after the files it imports.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tritonc/base/Timings.h"
#include "tritonc/diag/Diagnostics.h"
#include "tritonc/ir/IR.h"
#include "tritonc/irgen/IRGen.h"
#include "tritonc/lex/Lex.h"
#include "tritonc/parse/Parse.h"
#include "tritonc/sema/CheckedModule.h"

namespace tritonc {

/// One `import` of a file: the string token that names the file, and the
/// imported file it resolved to (an index into ImportLoader::files()).
struct ImportEdge {
  TokenId path;
  int target = -1;
};

/// An imported file, parsed.
struct ImportedFile {
  std::string canonical;  ///< realpath: the file's identity
  std::string stem;       ///< a Python identifier made from its name (`blocks`)
  std::unique_ptr<SourceBuffer> source;
  std::unique_ptr<TokenizedBuffer> tokens;
  std::unique_ptr<Tree> tree;
  bool syntaxOk = false;
  std::vector<ImportEdge> imports;  ///< in source order
};

/// Whether a file's text may import anything (a cheap test before any work).
bool mayImport(const SourceBuffer& source);

/// The `import` items of a token buffer, in order: the token of each path.
std::vector<TokenId> importPaths(const TokenizedBuffer& tokens);

class ImportLoader {
 public:
  ImportLoader(Interner& interner, std::vector<std::string> includeDirs)
      : interner_(interner), includeDirs_(std::move(includeDirs)) {}

  /// Resolves every import of `root` (whose tokens are `rootTokens`),
  /// transitively. Diagnostics about files and cycles go to `diags`, as do
  /// the lexical and syntax errors of imported files. Returns the root's
  /// edges and, in `order`, the imported files it needs, each after the
  /// files it imports; nullopt when something failed.
  std::optional<std::vector<ImportEdge>> load(const SourceBuffer& root,
                                              const TokenizedBuffer& rootTokens,
                                              DiagnosticEngine& diags, std::vector<int>& order,
                                              Timings* timings);

  const ImportedFile& file(int index) const { return *files_[static_cast<size_t>(index)]; }
  /// The notes that say how `root` (whose imports resolved to `edges`)
  /// reaches imported file `index`: "'lib.tri' is imported here" at each
  /// import on a shortest chain, innermost first.
  std::vector<DiagnosticNote> importChain(int index, const SourceBuffer& root,
                                          const TokenizedBuffer& rootTokens,
                                          const std::vector<ImportEdge>& edges) const;
  /// How many files were loaded so far (including ones a failed load reached).
  int fileCount() const { return static_cast<int>(files_.size()); }

 private:
  struct Frame {
    const SourceBuffer* source;
    std::string canonical;
    SourceRange importedAt;  ///< the path that imports it, in the frame before
  };
  /// How the file of frame `top` was reached from the root (frame 0).
  static std::vector<DiagnosticNote> chainOf(const std::vector<Frame>& stack, size_t top);
  /// Resolves, loads and visits one import; false when it failed.
  bool visit(const SourceBuffer& from, const TokenizedBuffer& fromTokens, TokenId path,
             std::vector<Frame>& stack, std::vector<int>& order, std::vector<char>& done,
             DiagnosticEngine& diags, Timings* timings, int& target);
  /// Reads and parses a file; -1 with `error` set when it cannot be read.
  int loadFile(const std::string& path, const std::string& canonical, DiagnosticEngine& diags,
               Timings* timings, std::string* error,
               const std::function<std::vector<DiagnosticNote>()>& chain);

  Interner& interner_;
  std::vector<std::string> includeDirs_;
  std::vector<std::unique_ptr<ImportedFile>> files_;
  std::map<std::string, int> byCanonical_;
};

/// The files of a program with imports, checked (and lowered) one after the
/// other, each after the files it imports: what each file sees of the ones
/// before it, and the program IR they are lowered into.
class ProgramBuilder {
 public:
  explicit ProgramBuilder(bool lower) : lower_(lower) { ir_.origins.emplace_back(); }

  /// What `tree` (whose imports resolved to `edges`) sees.
  ImportContext contextFor(const Tree& tree, const std::vector<ImportEdge>& edges,
                           const ImportLoader& loader) const;


  /// Adds an imported file, checked without errors.
  void add(int file, const ImportedFile& imported, const CheckedModule& checked,
           const IRGenOptions& options, Timings* timings);


  ir::Module& program() { return ir_; }

 private:
  bool lower_;
  ir::Module ir_;
  TypeStore types_;
  DimStore dims_;
  std::vector<CallableInfo> callables_;
  std::map<int, std::pair<uint32_t, uint32_t>> ranges_;  ///< file -> its callables
  std::map<int, std::vector<ImportContext::Import::Constant>> constants_;
};

/// The text a program's cache keys hash besides the file's own source: each
/// file it imports (transitively, in dependency order) with the imports each
/// resolved, and the root's own imports (`edges`).
std::string importsKeyText(const std::vector<ImportEdge>& edges, const std::vector<int>& order,
                           const ImportLoader& loader);

}  // namespace tritonc

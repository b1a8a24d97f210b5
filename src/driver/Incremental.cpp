//===- Incremental.cpp - recompiling only the declarations that changed ---===//
//
// See Incremental.h. The previous compile's pieces live in one cache entry
// per file and flags (an L3 entry of its own key space, so stats, limits,
// prune and validate treat it like any other): one read and one write per
// compile, whatever the number of declarations.
//
//===----------------------------------------------------------------------===//
#include "Incremental.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "Log.h"
#include "tritonc/base/Bytes.h"
#include "tritonc/base/Check.h"
#include "tritonc/base/PythonLimits.h"
#include "tritonc/emit/Emit.h"
#include "tritonc/irgen/IRGen.h"
#include "tritonc/lex/Lex.h"
#include "tritonc/opt/Optimizer.h"
#include "tritonc/parse/Parse.h"
#include "tritonc/sema/Sema.h"

namespace tritonc {

namespace {

// ---- the stored pieces ------------------------------------------------------------------
//
// Two entries per file and flags: the *base* (every unit's piece as of some
// compile) and the *delta* (the pieces of the units since added or changed).
// An edit rewrites only the small delta; the base is rewritten when the delta
// has grown to a quarter of it. Stored uncompressed: rewritten by every
// compile, they would cost more to compress than to read.

enum class PieceKind : uint8_t { None = 0, Global = 1, Function = 2, Main = 3, LateGlobal = 4 };

/// The generated code of one unit (`None`: a declaration without any), in
/// a cache entry's payload or a fresh PyTorchPieces, both kept alive for the
/// compile.
struct StoredPiece {
  PieceKind kind = PieceKind::None;
  uint8_t imports = 0;
  std::string_view name;  ///< Python name
  std::string_view code;
};

struct KeyHash {
  size_t operator()(const cache::Key& key) const { return static_cast<size_t>(key.low); }
};
using PieceMap = std::unordered_map<cache::Key, StoredPiece, KeyHash>;

constexpr uint32_t kPiecesFormat = 3;

// u32 format, u32 count; per piece: u64 key high, u64 key low, u8 kind,
// u8 imports, Python name, code (u32 length + bytes each).
std::string encodePieces(const std::vector<std::pair<cache::Key, const StoredPiece*>>& pieces) {
  std::string out;
  size_t estimate = 16;
  for (const auto& [key, stored] : pieces) estimate += 40 + stored->name.size() + stored->code.size();
  ByteWriter w(out, estimate);
  w.put(kPiecesFormat);
  w.put(static_cast<uint32_t>(pieces.size()));
  for (const auto& [key, stored] : pieces) {
    w.put(key.high);
    w.put(key.low);
    w.put(static_cast<uint8_t>(stored->kind));
    w.put(stored->imports);
    w.putString(stored->name);
    w.putString(stored->code);
  }
  w.finish();
  return out;
}

// Adds the pieces of a payload (which must outlive them) to `pieces`; a
// damaged or foreign payload adds nothing (its units are compiled again).
void decodePieces(std::string_view bytes, PieceMap& pieces) {
  ByteReader r(bytes);
  if (r.get<uint32_t>() != kPiecesFormat) return;
  uint32_t count = r.getCount(26);
  std::vector<std::pair<cache::Key, StoredPiece>> decoded;
  decoded.reserve(count);
  for (uint32_t i = 0; i < count && !r.failed(); ++i) {
    cache::Key key;
    key.high = r.get<uint64_t>();
    key.low = r.get<uint64_t>();
    auto kind = r.get<uint8_t>();
    StoredPiece stored;
    stored.kind = static_cast<PieceKind>(kind);
    stored.imports = r.get<uint8_t>();
    stored.name = r.getString();
    stored.code = r.getString();
    if (kind > static_cast<uint8_t>(PieceKind::LateGlobal)) r.fail();
    decoded.emplace_back(key, stored);
  }
  if (r.failed() || !r.atEnd()) return;
  pieces.reserve(pieces.size() + decoded.size());
  for (const auto& [key, stored] : decoded) pieces.insert_or_assign(key, stored);
}

// The entries that hold a file's pieces: its path (absolute, so a compile
// from another directory finds them) and the flags.
cache::Key piecesKey(const SourceBuffer& source, std::string_view flags, std::string_view part) {
  std::string path = source.name();
  if (char* real = ::realpath(source.name().c_str(), nullptr)) {
    path = real;
    std::free(real);
  }
  return cache::KeyBuilder("incremental")
      .add("file", path)
      .add("flags", flags)
      .add("part", part)
      .finish();
}

// The unit of the entry layer: `--entry`'s (`entry`), else the last layer;
// -1 when there is none.
int entryUnit(const std::vector<Unit>& units, std::string_view entry) {
  int found = -1;
  for (size_t u = 0; u < units.size(); ++u) {
    if (units[u].keyword == TokenKind::KwLayer && (entry.empty() || units[u].name == entry)) {
      found = static_cast<int>(u);
    }
  }
  return found;
}

using PiecesByName = std::unordered_map<std::string_view, StoredPiece>;

// The compiled file's own pieces by source name (names are unique:
// planUnits checked them); the imported files' pieces, in order, go to
// `group`.
PiecesByName ownPieces(const PyTorchPieces& emitted, std::vector<StoredPiece>* group) {
  PiecesByName byName;
  for (const auto& p : emitted.globals) {
    StoredPiece stored{p.late ? PieceKind::LateGlobal : PieceKind::Global, p.imports, p.name,
                       p.code};
    if (p.origin != 0) group->push_back(stored);
    else byName.emplace(p.sourceName, stored);
  }
  for (const auto& p : emitted.functions) {
    StoredPiece stored{p.isMain ? PieceKind::Main : PieceKind::Function, p.imports, p.name,
                       p.code};
    if (p.origin != 0) group->push_back(stored);
    else byName.emplace(p.sourceName, stored);
  }
  return byName;
}

// A unit's piece among them (kind None: a declaration without code).
StoredPiece pieceOf(const Unit& unit, const PiecesByName& byName) {
  auto it = byName.find(unit.name);
  if (it != byName.end() &&
      (it->second.kind == PieceKind::Main) == (unit.keyword == TokenKind::KwMain)) {
    return it->second;
  }
  return StoredPiece{};
}

// The module of the pieces, in the order a full compile emits it: the
// imported files' constants and functions, then the file's constants, then
// its layers and fns, then main.
std::string assemblePieces(std::span<const StoredPiece* const> importedGroup,
                           std::span<const StoredPiece* const> current,
                           std::string_view entryName, const CompileOptions& options) {
  std::vector<PieceRef> globals, functions, mains;
  auto isGlobal = [](PieceKind k) { return k == PieceKind::Global || k == PieceKind::LateGlobal; };
  for (const StoredPiece* stored : importedGroup) {
    PieceRef ref{stored->code, stored->imports, false, stored->kind == PieceKind::LateGlobal};
    if (isGlobal(stored->kind)) globals.push_back(ref);
    if (stored->kind == PieceKind::Function) functions.push_back(ref);
  }
  for (const StoredPiece* stored : current) {
    PieceRef ref{stored->code, stored->imports, stored->kind == PieceKind::Main,
                 stored->kind == PieceKind::LateGlobal};
    if (isGlobal(stored->kind)) globals.push_back(ref);
    if (stored->kind == PieceKind::Function) functions.push_back(ref);
    if (stored->kind == PieceKind::Main) mains.push_back(ref);
  }
  functions.insert(functions.end(), mains.begin(), mains.end());
  return assemblePyTorch(globals, functions, entryName, pyTorchEmitOptions(options, ""));
}

// A key's 16 bytes, to hash into another key.
std::string_view asBytes(const cache::Key& key) {
  return std::string_view(reinterpret_cast<const char*>(&key), sizeof key);
}

bool startsItem(TokenKind kind) {
  return kind == TokenKind::KwLayer || kind == TokenKind::KwFn || kind == TokenKind::KwLet ||
         kind == TokenKind::KwMain || kind == TokenKind::KwImport;
}

}  // namespace

// ---- units --------------------------------------------------------------------------

UnitPlan planUnits(const TokenizedBuffer& tokens, std::string_view flags, bool positions,
                   bool allowImports, bool keys) {
  UnitPlan plan;
  const SourceBuffer& source = tokens.source();
  auto count = static_cast<uint32_t>(tokens.size());
  // Split at the item keywords outside brackets; every identifier on the way
  // is noted for the references below.
  constexpr uint32_t kNone = UINT32_MAX;
  std::vector<uint32_t> byName(tokens.interner().size(), kNone);  // identifier -> unit
  bool hasMain = false;
  std::vector<std::pair<uint32_t, uint32_t>> identifiers;  // (unit, identifier)
  int depth = 0;
  for (uint32_t t = 0; t < count; ++t) {
    TokenId token{t};
    TokenKind kind = tokens.kind(token);
    if (plan.units.empty() && kind != TokenKind::EndOfFile && kind != TokenKind::Semicolon &&
        !startsItem(kind)) {
      plan.unsupported = "text before the first declaration";  // the parser reports it
      return plan;
    }
    switch (kind) {
      case TokenKind::LParen:
      case TokenKind::LBracket:
      case TokenKind::LBrace: ++depth; continue;
      case TokenKind::RParen:
      case TokenKind::RBracket:
      case TokenKind::RBrace: --depth; continue;
      case TokenKind::EndOfFile: continue;
      case TokenKind::Identifier:
        identifiers.emplace_back(static_cast<uint32_t>(plan.units.size() - 1),
                                 tokens.identifier(token).index);
        continue;
      default: break;
    }
    if (depth != 0 || !startsItem(kind)) {
      continue;
    }
    if (kind == TokenKind::KwImport && !allowImports) {
      plan.unsupported = "it imports other files";
      return plan;
    }
    if (!plan.units.empty()) plan.units.back().tokens.end = token;
    Unit unit;
    unit.tokens.begin = token;
    unit.keyword = kind;
    if (kind == TokenKind::KwImport) {
      // Names nothing: what it imports is in every unit's key.
    } else if (kind == TokenKind::KwMain) {
      unit.name = "main";
      if (hasMain) {
        plan.unsupported = "two 'main' blocks";
        return plan;
      }
      hasMain = true;
    } else {
      TokenId name{t + 1};
      if (t + 1 >= count || tokens.kind(name) != TokenKind::Identifier) {
        plan.unsupported = "a declaration without a name";
        return plan;
      }
      unit.name = tokens.spelling(name);
      uint32_t& slot = byName[tokens.identifier(name).index];
      if (slot != kNone) {
        plan.unsupported = fmt::format("two declarations are named '{}'", unit.name);
        return plan;
      }
      slot = static_cast<uint32_t>(plan.units.size());
    }
    plan.units.push_back(std::move(unit));
  }
  if (depth != 0) {
    plan.unsupported = "unbalanced brackets";
    return plan;
  }
  if (!plan.units.empty()) plan.units.back().tokens.end = TokenId{count - 1};  // end of file
  // What each unit names: every identifier in its text that is a top-level
  // name (a local that shadows one only adds a dependency).
  for (const auto& [unit, identifier] : identifiers) {
    uint32_t used = byName[identifier];
    if (used == kNone || used == unit) continue;
    std::vector<uint32_t>& uses = plan.units[unit].uses;
    if (std::find(uses.begin(), uses.end(), used) == uses.end()) {
      uses.push_back(used);
    }
  }
  if (!keys) {
    return plan;
  }
  // Each unit's own text (first to last token), then its key over everything
  // it reaches, in source order (the inliner's results depend on the order
  // of what it inlines).
  std::vector<cache::Key> own(plan.units.size());
  for (size_t u = 0; u < plan.units.size(); ++u) {
    const Unit& unit = plan.units[u];
    uint32_t begin = tokens.range(unit.tokens.begin).begin;
    uint32_t end = tokens.range(TokenId{unit.tokens.end.index - 1}).end;
    own[u] = cache::hashOf(source.text().substr(begin, end - begin));
    if (positions) {
      LineCol at = source.lineCol(begin);
      own[u] = cache::KeyBuilder("unit-text")
                   .add("text", asBytes(own[u]))
                   .addInt("line", at.line)
                   .addInt("column", at.column)
                   .finish();
    }
  }
  // An import item changes what every unit's names mean (`as` aliases,
  // what an unnamed import brings into scope): every key covers them all.
  std::string importItems;
  for (size_t u = 0; u < plan.units.size(); ++u) {
    if (plan.units[u].keyword == TokenKind::KwImport) importItems += asBytes(own[u]);
  }
  std::vector<uint32_t> reached(plan.units.size(), UINT32_MAX);  // the unit that reached it last
  std::vector<uint32_t> stack;
  std::vector<uint32_t> closure;
  for (size_t u = 0; u < plan.units.size(); ++u) {
    auto self = static_cast<uint32_t>(u);
    reached[u] = self;
    stack.assign(1, self);
    closure.assign(1, self);
    while (!stack.empty()) {
      uint32_t at = stack.back();
      stack.pop_back();
      for (uint32_t used : plan.units[at].uses) {
        if (reached[used] != self) {
          reached[used] = self;
          closure.push_back(used);
          stack.push_back(used);
        }
      }
    }
    std::sort(closure.begin(), closure.end());
    cache::KeyBuilder key("unit");
    key.add("flags", flags).add("imports", importItems);
    for (uint32_t member : closure) {
      key.add(member == self ? "self" : "uses", asBytes(own[member]));
    }
    plan.units[u].key = key.finish();
  }
  return plan;
}

// ---- the compile ----------------------------------------------------------------------

IncrementalResult compileIncrementally(const CompileOptions& options, const SourceBuffer& source,
                                       cache::Cache& cache, Interner& interner,
                                       const TokenizedBuffer* lexed, Timings* timings,
                                       const IncrementalImports* imports) {
  IncrementalResult result;
  auto fallBack = [&](std::string why) {
    result = IncrementalResult{};
    result.why = std::move(why);
    return result;
  };
  // The whole file is lexed (cheap, and it finds the declarations); only
  // what changed is parsed. A diagnostic sends the file to the full
  // pipeline, which reports it in its place.
  CollectingDiagnosticConsumer collected;
  DiagnosticEngine diags(collected);
  std::optional<TokenizedBuffer> ownTokens;
  const TokenizedBuffer* tokens = lexed;
  if (tokens == nullptr) {
    ScopedTimer timer(timings, "lexer", source.name());
    tokens = &ownTokens.emplace(lex(source, interner, diags));
  }
  if (!collected.diagnostics.empty()) {
    return fallBack("the file has diagnostics");
  }
  // The flags, and what the file imports: an edit to an imported file
  // changes every unit's key. At -O0 the run-time checks quote the imported
  // files' names: one imported from elsewhere (another -I) with the same
  // text is another key.
  std::string importedFiles;
  if (imports) {
    for (int index : imports->order) {
      importedFiles += imports->loader.file(index).source->name() + '\n';
    }
  }
  std::string flags =
      generatedCodeKey(options, "", compilerIdentity(), "none", source.name(), importedFiles)
          .hex();
  // The stored pieces stay under one key while imported files are edited
  // (their units' keys change, not the entries').
  cache::Key baseKey = piecesKey(source, flags, "base");
  cache::Key deltaKey = piecesKey(source, flags, "delta");
  if (imports) {
    flags += cache::hashOf(importsKeyText(imports->edges, imports->order, imports->loader)).hex();
  }
  UnitPlan plan;
  {
    ScopedTimer timer(timings, "incremental: units", source.name());
    plan = planUnits(*tokens, flags, options.optLevel == '0', imports != nullptr);
  }
  if (!plan.unsupported.empty()) {
    return fallBack(plan.unsupported);
  }
  std::vector<Unit>& units = plan.units;
  // The entry layer: --entry's, else the last layer.
  int entry = entryUnit(units, options.entry);
  if (!options.entry.empty() && entry < 0) {
    return fallBack("--entry names no layer of the file");
  }

  // The imported files' pieces, as one group: a count, then each piece.
  cache::Key groupKey = cache::KeyBuilder("imported").add("flags", flags).finish();
  auto groupPieceKey = [&](size_t i) {
    return cache::KeyBuilder("imported-piece").add("group", asBytes(groupKey)).addInt("i",
        static_cast<int64_t>(i)).finish();
  };
  PieceMap previous;  // views into the entries
  std::unordered_set<cache::Key, KeyHash> inBase;
  std::optional<cache::Entry> baseEntry, deltaEntry;
  {
    ScopedTimer timer(timings, "incremental: load", source.name());
    // An entry found corrupt is discarded (and counted) by the cache; said
    // under --verbose as every corrupt entry is.
    auto logCorrupt = [&](const cache::Key& key, const std::string& why) {
      if (!why.empty()) logCorruptEntry("L3", source.name(), key.hex(), why);
    };
    std::string corrupt;
    baseEntry = cache.load(cache::Level::L3, baseKey, {}, &corrupt);
    logCorrupt(baseKey, corrupt);
    if (baseEntry) {
      decodePieces(baseEntry->payload, previous);
      inBase.reserve(previous.size());
      for (const auto& [key, stored] : previous) inBase.insert(key);
    }
    if (!inBase.empty()) {
      corrupt.clear();
      deltaEntry = cache.load(cache::Level::L3, deltaKey, {}, &corrupt);
      logCorrupt(deltaKey, corrupt);
      if (deltaEntry) decodePieces(deltaEntry->payload, previous);
    }
  }
  // The stored group of imported pieces, when complete.
  std::vector<const StoredPiece*> importedGroup;
  bool groupStored = false;
  if (imports) {
    auto header = previous.find(groupKey);
    if (header != previous.end()) {
      size_t count = header->second.code.size();  // one byte per piece
      groupStored = true;
      for (size_t i = 0; i < count && groupStored; ++i) {
        auto it = previous.find(groupPieceKey(i));
        if (it == previous.end()) groupStored = false;
        else importedGroup.push_back(&it->second);
      }
      if (!groupStored) importedGroup.clear();
    }
  }
  // Changed units, and everything they use: the checker needs the used
  // declarations' signatures and the inliner their bodies, so those are read
  // again with them, but only the changed units' pieces are made again (an
  // unchanged key is unchanged code). Without the imported group, everything
  // is compiled again.
  std::vector<bool> inSlice(units.size(), false);
  std::vector<bool> changed(units.size(), false);
  std::vector<uint32_t> stack;
  for (size_t u = 0; u < units.size(); ++u) {
    if (previous.count(units[u].key) == 0 || (imports && !groupStored)) {
      ++result.changed;
      inSlice[u] = changed[u] = true;
      stack.push_back(static_cast<uint32_t>(u));
    }
  }
  while (!stack.empty()) {
    uint32_t at = stack.back();
    stack.pop_back();
    for (uint32_t used : units[at].uses) {
      if (!inSlice[used]) {
        inSlice[used] = true;
        stack.push_back(used);
      }
    }
  }
  bool anyInSlice = std::find(inSlice.begin(), inSlice.end(), true) != inSlice.end();
  std::vector<ItemTokens> slice;
  for (size_t u = 0; u < units.size(); ++u) {
    // The import items go with any compile: they declare the imported names.
    if (anyInSlice && units[u].keyword == TokenKind::KwImport) inSlice[u] = true;
    if (inSlice[u]) slice.push_back(units[u].tokens);
  }
  result.units = units.size();
  result.recompiled = result.changed;
  result.reread = slice.size() - result.changed;

  PieceMap fresh;  // views into `emitted`
  std::optional<PyTorchPieces> emitted;
  std::string groupCount;  // the group header's "code": one byte per imported piece
  if (!slice.empty()) {
    // The parsed items keep every token and location of the whole file:
    // diagnostics, run-time check messages and code are the full compile's.
    bool complete = false;
    std::optional<Tree> tree;
    {
      ScopedTimer timer(timings, "parser", source.name());
      tree.emplace(parseItems(*tokens, slice, diags, complete));
    }
    if (!complete || !collected.diagnostics.empty()) {
      return fallBack("a changed declaration does not parse cleanly");
    }
    IRGenOptions irgen;
    irgen.runtimeShapeChecks = options.optLevel == '0';  // no L2 entry to share
    // The imported files first (as the full pipeline does), each after the
    // files it imports.
    std::optional<ProgramBuilder> program;
    std::optional<ImportContext> context;
    if (imports) {
      program.emplace(/*lower=*/true);
      for (int index : imports->order) {
        const ImportedFile& file = imports->loader.file(index);
        ImportContext forFile = program->contextFor(*file.tree, file.imports, imports->loader);
        std::optional<CheckedModule> imported;
        {
          ScopedTimer timer(timings, "type checker", file.source->name());
          imported.emplace(check(*file.tree, interner, diags, &forFile));
        }
        if (!collected.diagnostics.empty()) {
          return fallBack("an imported file has diagnostics");
        }
        program->add(index, file, *imported, irgen, timings);
      }
      context = program->contextFor(*tree, imports->edges, imports->loader);
    }
    std::optional<CheckedModule> checked;
    {
      ScopedTimer timer(timings, "type checker", source.name());
      // (The slice's last layer may not be the file's: it is named.)
      CheckOptions checkOptions;
      checkOptions.entryByOrder = options.entry.empty();
      if (entry >= 0) checkOptions.lastLayer = units[static_cast<size_t>(entry)].name;
      checked.emplace(check(*tree, interner, diags, context ? &*context : nullptr, checkOptions));
    }
    if (!collected.diagnostics.empty()) {
      return fallBack("a changed declaration has diagnostics");
    }
    std::optional<ir::Module> module;
    {
      ScopedTimer timer(timings, "IR generation", source.name());
      if (program) {
        generateIRInto(*checked, program->program(), irgen);
        module.emplace(std::move(program->program()));
      } else {
        module.emplace(generateIR(*checked, irgen));
      }
    }
    std::vector<std::string> problems;
    {
      ScopedTimer timer(timings, "optimizer", source.name());
      problems = optimize(*module, optimizerOptions(options, timings));
    }
    if (!problems.empty()) {
      return fallBack("the optimizer's verifier objected");  // the full pipeline reports it
    }
    // The changed units' pieces only: the others keep their stored ones.
    std::vector<std::string> changedNames;
    for (size_t u = 0; u < units.size(); ++u) {
      if (changed[u] && !units[u].name.empty()) changedNames.emplace_back(units[u].name);
    }
    Expected<PyTorchPieces> pieces = [&] {
      ScopedTimer timer(timings, "PyTorch emitter", source.name());
      EmitOptions emitOptions = pyTorchEmitOptions(options, source.name());
      emitOptions.onlyDeclarations = &changedNames;
      return emitPyTorchPieces(*module, emitOptions);
    }();
    if (!pieces) {
      return fallBack("the emitter failed");  // the full pipeline reports it
    }
    emitted = std::move(*pieces);
    std::vector<StoredPiece> group;
    PiecesByName byName = ownPieces(*emitted, &group);
    if (imports) {
      // A declaration named like an imported one renames the imported one
      // (`<stem>_<name>`) in pieces that are not recompiled with it.
      std::unordered_set<std::string_view> importedNames;
      for (const auto& p : emitted->globals) if (p.origin != 0) importedNames.insert(p.sourceName);
      for (const auto& p : emitted->functions) if (p.origin != 0) importedNames.insert(p.sourceName);
      for (const Unit& unit : units) {
        if (importedNames.count(unit.name) != 0) {
          return fallBack("a declaration has the name of an imported one");
        }
      }
      fresh.insert_or_assign(groupKey, StoredPiece{PieceKind::None, 0, "",
                                                   std::string_view(groupCount.assign(
                                                       group.size(), 'p'))});
      importedGroup.clear();
      for (size_t i = 0; i < group.size(); ++i) {
        auto [it, inserted] = fresh.insert_or_assign(groupPieceKey(i), group[i]);
        importedGroup.push_back(&it->second);
      }
    }
    for (size_t u = 0; u < units.size(); ++u) {
      if (changed[u]) fresh.insert_or_assign(units[u].key, pieceOf(units[u], byName));
    }
  }

  // The module, in the order a full compile emits it: constants, then
  // layers and fns, then main.
  std::vector<const StoredPiece*> current(units.size());
  for (size_t u = 0; u < units.size(); ++u) {
    auto it = fresh.find(units[u].key);
    current[u] = it != fresh.end() ? &it->second : &previous.at(units[u].key);
  }
  {
    ScopedTimer timer(timings, "incremental: assemble", source.name());
    std::string_view entryName = entry >= 0 ? current[entry]->name : std::string_view();
    result.py = assemblePieces(importedGroup, current, entryName, options);
  }
  if (result.changed != 0) {
    // The delta: the pieces of every unit the base lacks. Once it has grown
    // to a quarter of the base, a new base with every piece instead.
    ScopedTimer timer(timings, "incremental: store", source.name());
    std::vector<std::pair<cache::Key, const StoredPiece*>> all, delta;
    size_t code = 0, deltaBytes = 0;
    std::vector<std::pair<cache::Key, const StoredPiece*>> pieces;
    for (size_t u = 0; u < units.size(); ++u) pieces.emplace_back(units[u].key, current[u]);
    if (imports) {
      auto header = fresh.count(groupKey) != 0 ? fresh.find(groupKey) : previous.find(groupKey);
      pieces.emplace_back(groupKey, &header->second);
      for (size_t i = 0; i < importedGroup.size(); ++i) {
        pieces.emplace_back(groupPieceKey(i), importedGroup[i]);
      }
    }
    for (const auto& [key, stored] : pieces) {
      all.emplace_back(key, stored);
      code += stored->code.size();
      if (inBase.count(key) == 0) {
        delta.emplace_back(key, stored);
        deltaBytes += stored->code.size();
      }
    }
    if (inBase.empty() || deltaBytes * 4 > code) {
      cache.store(cache::Level::L3, baseKey, encodePieces(all), 0, /*compress=*/false);
      if (deltaEntry) {
        cache.store(cache::Level::L3, deltaKey, encodePieces({}), 0, /*compress=*/false);
      }
    } else {
      cache.store(cache::Level::L3, deltaKey, encodePieces(delta), 0, /*compress=*/false);
    }
  }
  result.compiled = true;
  return result;
}

// ---- a cold compile in parallel groups -------------------------------------------------

namespace {

// The second half of a group's compile, from its checked IR: the optimizer
// and the PyTorch pieces. Returns why it failed, or an empty string.
std::string optimizeAndEmit(const CompileOptions& options, ir::Module& module,
                            const std::string& sourceName, Timings* timings,
                            std::optional<PyTorchPieces>& pieces) {
  std::vector<std::string> problems;
  {
    ScopedTimer timer(timings, "optimizer", sourceName);
    problems = optimize(module, optimizerOptions(options, timings));
  }
  if (!problems.empty()) {
    return "the optimizer's verifier objected";  // the full pipeline reports it
  }
  ScopedTimer timer(timings, "PyTorch emitter", sourceName);
  Expected<PyTorchPieces> emitted =
      emitPyTorchPieces(module, pyTorchEmitOptions(options, sourceName));
  if (!emitted) {
    return "the emitter failed";  // the full pipeline reports it
  }
  pieces = std::move(*emitted);
  return {};
}

// Runs task(g) for every group, on `workers` and the calling thread (on the
// calling thread alone when null), timed as "compile declarations" with each
// group's phases (`groupTimings(g)`) on a track of its own.
template <typename Task, typename GroupTimings>
void runGroups(Workers* workers, size_t groupCount, Task&& task, Timings* timings,
               GroupTimings&& groupTimings) {
  ScopedTimer timer(timings, "compile declarations", fmt::format("{} groups", groupCount));
  if (workers) {
    workers->run(groupCount, task);
  } else {
    for (size_t g = 0; g < groupCount; ++g) task(g);
  }
  if (timings) {
    for (size_t g = 0; g < groupCount; ++g) {
      timings->absorb(groupTimings(g), timings->depth(), static_cast<int>(g) + 1);
    }
  }
}

// The module of the groups' pieces: each unit's piece from the first group
// that compiled it (any would do: a piece depends only on its unit and what
// that uses), in the order a full compile emits them.
std::string assembleGroups(const std::vector<Unit>& units,
                           const std::vector<std::vector<uint32_t>>& members,
                           std::span<const PyTorchPieces* const> pieces, int entry,
                           const CompileOptions& options) {
  const size_t n = units.size();
  std::vector<StoredPiece> found(n);
  std::vector<bool> done(n, false);
  for (size_t g = 0; g < members.size(); ++g) {
    std::vector<StoredPiece> imported;
    PiecesByName byName = ownPieces(*pieces[g], &imported);
    for (uint32_t u : members[g]) {
      if (!done[u]) {
        found[u] = pieceOf(units[u], byName);
        done[u] = true;
      }
    }
  }
  std::vector<const StoredPiece*> current(n);
  for (size_t u = 0; u < n; ++u) current[u] = &found[u];
  std::string_view entryName = entry >= 0 ? found[entry].name : std::string_view();
  return assemblePieces({}, current, entryName, options);
}

// The checked IR of a file compiled in groups (an L2 payload's "groups"
// blob): u32 format, u32 units; per unit: u8 keyword (0 layer, 1 fn, 2 let,
// 3 main), name; u32 groups; per group: u32 members, the members' unit
// indices (u32 each, ascending), the group's serialized IR as a zstd frame
// (each group's thread compresses its own; the entry is stored as is).
constexpr uint32_t kGroupsFormat = 1;
// What a group's serialized IR may take per byte of the file (measured: 4.7
// for generated models, 7 for the zoo) and beyond that.
constexpr size_t kIRBytesPerSourceByte = 64;
constexpr size_t kIRBytesSlack = size_t{16} << 20;
constexpr std::array<TokenKind, 4> kUnitKeywords = {TokenKind::KwLayer, TokenKind::KwFn,
                                                    TokenKind::KwLet, TokenKind::KwMain};

// Appends to `out`.
void encodeGroups(const std::vector<Unit>& units,
                  const std::vector<std::vector<uint32_t>>& members,
                  std::span<const std::string> irs, std::string& out) {
  size_t estimate = 16 + 8 * members.size();
  for (const Unit& unit : units) estimate += 8 + unit.name.size();
  for (size_t g = 0; g < members.size(); ++g) estimate += 4 * members[g].size() + irs[g].size();
  ByteWriter w(out, estimate);
  w.put(kGroupsFormat);
  w.put(static_cast<uint32_t>(units.size()));
  for (const Unit& unit : units) {
    auto keyword = std::find(kUnitKeywords.begin(), kUnitKeywords.end(), unit.keyword);
    TRITONC_CHECK(keyword != kUnitKeywords.end(), "a unit of a grouped file is an import");
    w.put(static_cast<uint8_t>(keyword - kUnitKeywords.begin()));
    w.putString(unit.name);
  }
  w.put(static_cast<uint32_t>(members.size()));
  for (size_t g = 0; g < members.size(); ++g) {
    w.put(static_cast<uint32_t>(members[g].size()));
    for (uint32_t u : members[g]) w.put(u);
    w.putString(irs[g]);
  }
  w.finish();
}

struct StoredGroups {
  std::vector<Unit> units;  ///< keyword and name only (views into the payload)
  std::vector<std::vector<uint32_t>> members;
  std::vector<std::string_view> irs;
};

// Decodes encodeGroups' bytes (which must outlive the result); nullopt for a
// damaged or foreign payload.
std::optional<StoredGroups> decodeGroups(std::string_view bytes) {
  ByteReader r(bytes);
  if (r.get<uint32_t>() != kGroupsFormat) return std::nullopt;
  StoredGroups stored;
  uint32_t n = r.getCount(5);
  stored.units.resize(r.failed() ? 0 : n);
  for (Unit& unit : stored.units) {
    auto keyword = r.get<uint8_t>();
    if (keyword >= kUnitKeywords.size()) return std::nullopt;
    unit.keyword = kUnitKeywords[keyword];
    unit.name = r.getString();
  }
  uint32_t groups = r.getCount(8);
  if (r.failed() || groups == 0) return std::nullopt;
  std::vector<bool> covered(n, false);
  for (uint32_t g = 0; g < groups && !r.failed(); ++g) {
    std::vector<uint32_t>& members = stored.members.emplace_back(r.getCount(4));
    for (size_t i = 0; i < members.size(); ++i) {
      uint32_t u = r.get<uint32_t>();
      if (u >= n || (i > 0 && u <= members[i - 1])) return std::nullopt;
      members[i] = u;
      covered[u] = true;
    }
    stored.irs.push_back(r.getString());
  }
  if (r.failed() || !r.atEnd() || std::find(covered.begin(), covered.end(), false) != covered.end()) {
    return std::nullopt;
  }
  return stored;
}

}  // namespace

GroupsResult compileInGroups(const CompileOptions& options, Stage lastStage,
                             const TokenizedBuffer& tokens, Workers& workers, Timings* timings,
                             std::string* checkedIR) {
  GroupsResult result;
  auto decline = [&](std::string why) {
    result = GroupsResult{};
    result.why = std::move(why);
    return result;
  };
  const SourceBuffer& source = tokens.source();
  UnitPlan plan;
  {
    ScopedTimer timer(timings, "groups: plan", source.name());
    plan = planUnits(tokens, "", false, false, /*keys=*/false);
  }
  if (!plan.unsupported.empty()) {
    return decline(plan.unsupported);
  }
  const std::vector<Unit>& units = plan.units;
  const size_t n = units.size();
  result.units = n;
  int entry = entryUnit(units, options.entry);
  if (!options.entry.empty() && entry < 0) {
    return decline("--entry names no layer of the file");
  }

  // What a group costs is the tokens of the units it compiles. The roots
  // (units nothing else uses: the models, main) each take their closure.
  std::vector<uint64_t> cost(n);
  std::vector<bool> usedByOther(n, false);
  uint64_t total = 0;
  for (size_t u = 0; u < n; ++u) {
    cost[u] = units[u].tokens.end.index - units[u].tokens.begin.index;
    total += cost[u];
    for (uint32_t used : units[u].uses) usedByOther[used] = true;
  }
  std::vector<std::vector<uint32_t>> closures;
  std::vector<uint64_t> closureCost;
  {
    std::vector<uint32_t> reached(n, UINT32_MAX);
    std::vector<uint32_t> stack;
    size_t members = 0;
    for (size_t u = 0; u < n; ++u) {
      if (usedByOther[u]) continue;
      auto root = static_cast<uint32_t>(closures.size());
      std::vector<uint32_t>& closure = closures.emplace_back(1, static_cast<uint32_t>(u));
      uint64_t sum = cost[u];
      reached[u] = root;
      stack.assign(1, static_cast<uint32_t>(u));
      while (!stack.empty()) {
        uint32_t at = stack.back();
        stack.pop_back();
        for (uint32_t used : units[at].uses) {
          if (reached[used] != root) {
            reached[used] = root;
            closure.push_back(used);
            sum += cost[used];
            stack.push_back(used);
          }
        }
      }
      closureCost.push_back(sum);
      // Many roots sharing long chains: splitting would cost more than it saves.
      members += closure.size();
      if (members > 4 * n + 100000) {
        return decline("its declarations share too much to be split");
      }
    }
  }
  auto groupCount = std::min<size_t>(workers.count() + 1, closures.size());
  if (groupCount < 2) {
    return decline("one declaration uses all the others");
  }
  // Largest root first, each to the group where it adds the least (what a
  // group already compiles costs nothing again).
  std::vector<size_t> order(closures.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return closureCost[a] > closureCost[b]; });
  std::vector<std::vector<uint8_t>> member(groupCount, std::vector<uint8_t>(n, 0));
  std::vector<uint64_t> load(groupCount, 0);
  for (size_t root : order) {
    size_t best = 0;
    uint64_t bestLoad = UINT64_MAX, bestAdded = 0;
    for (size_t g = 0; g < groupCount; ++g) {
      uint64_t added = 0;
      for (uint32_t u : closures[root]) added += member[g][u] ? 0 : cost[u];
      if (load[g] + added < bestLoad) {
        best = g;
        bestLoad = load[g] + added;
        bestAdded = added;
      }
    }
    for (uint32_t u : closures[root]) member[best][u] = 1;
    load[best] += bestAdded;
  }
  for (size_t u = 0; u < n; ++u) {
    bool covered = false;
    for (size_t g = 0; g < groupCount && !covered; ++g) covered = member[g][u] != 0;
    if (!covered) {
      return decline("declarations use each other in a cycle");  // the checker reports it
    }
  }
  uint64_t largest = *std::max_element(load.begin(), load.end());
  if (largest * 4 > total * 3) {
    return decline("one group would compile most of the file");
  }
  // A group that every root passed by (its roots shared more with another)
  // has nothing to do.
  for (size_t g = groupCount; g-- > 0;) {
    if (load[g] == 0) {
      member.erase(member.begin() + static_cast<long>(g));
      load.erase(load.begin() + static_cast<long>(g));
    }
  }
  groupCount = member.size();

  // Each group on a thread of its own (the calling thread takes the first),
  // from parsing to the PyTorch pieces, with its own diagnostics and phases.
  struct Group {
    std::vector<ItemTokens> items;
    CollectingDiagnosticConsumer collected;
    std::unique_ptr<Timings> timings;
    std::optional<PyTorchPieces> pieces;
    std::string ir;  ///< its checked IR, for L2 (checkedIR), compressed once serialized
    std::string failure;
  };
  std::vector<Group> groups(groupCount);
  for (size_t g = 0; g < groupCount; ++g) {
    for (size_t u = 0; u < n; ++u) {
      if (member[g][u]) groups[g].items.push_back(units[u].tokens);
    }
    result.compiledUnits += groups[g].items.size();
    if (timings) groups[g].timings = std::make_unique<Timings>();
  }
  // A group that fails stops the others at their next stage: the file is
  // then compiled in full anyway.
  std::atomic<bool> failed{false};
  auto fail = [&](Group& group, std::string why) {
    group.failure = std::move(why);
    failed = true;
  };
  auto compileGroup = [&](Group& group) {
    DiagnosticEngine diags(group.collected);
    Timings* t = group.timings.get();
    bool complete = false;
    std::optional<Tree> tree;
    {
      ScopedTimer timer(t, "parser", source.name());
      tree.emplace(parseItems(tokens, group.items, diags, complete));
    }
    if (!complete || !group.collected.diagnostics.empty()) {
      return fail(group, "a declaration does not parse cleanly");
    }
    if (failed) return;
    std::optional<CheckedModule> checked;
    {
      ScopedTimer timer(t, "type checker", source.name());
      // (The group's last layer may not be the file's: it is named.)
      CheckOptions checkOptions;
      checkOptions.entryByOrder = options.entry.empty();
      if (entry >= 0) checkOptions.lastLayer = units[static_cast<size_t>(entry)].name;
      checked.emplace(check(*tree, tokens.interner(), diags, nullptr, checkOptions));
    }
    if (!group.collected.diagnostics.empty()) {
      return fail(group, "a declaration has diagnostics");
    }
    if (lastStage < Stage::Emit && tree->deepestItem() >= kTreeDepthNeedingEmitterCheck) {
      return fail(group, "a declaration nests deep enough for the emitter to check it");
    }
    if (lastStage < Stage::Emit || failed) return;
    IRGenOptions irgen;
    // With L2 (checkedIR), at every level: stripped above -O0 (strip-checks).
    irgen.runtimeShapeChecks = options.optLevel == '0' || checkedIR != nullptr;
    std::optional<ir::Module> module;
    {
      ScopedTimer timer(t, "IR generation", source.name());
      module.emplace(generateIR(*checked, irgen));
    }
    checked.reset();
    tree.reset();
    if (checkedIR) {
      // Compressed at once: the serialized IR (as large as the module) is not
      // held through optimization and emission, the compile's peak memory.
      ScopedTimer timer(t, "cache store (L2)", source.name());
      std::string serialized;
      ir::serializeTo(*module, serialized);
      cache::appendCompressed(serialized, group.ir);
    }
    if (failed) return;
    std::string failure = optimizeAndEmit(options, *module, source.name(), t, group.pieces);
    if (!failure.empty()) return fail(group, std::move(failure));
  };
  runGroups(&workers, groupCount, [&](size_t g) { compileGroup(groups[g]); }, timings,
            [&](size_t g) -> Timings& { return *groups[g].timings; });
  for (const Group& group : groups) {
    if (!group.failure.empty()) {
      return decline(group.failure);
    }
  }
  TRITONC_CHECK(!failed, "a failed group gave no reason");
  result.groups = groupCount;
  if (lastStage < Stage::Emit) {
    result.compiled = true;
    return result;
  }
  std::vector<std::vector<uint32_t>> members(groupCount);
  std::vector<const PyTorchPieces*> pieces(groupCount);
  for (size_t g = 0; g < groupCount; ++g) {
    for (size_t u = 0; u < n; ++u) {
      if (member[g][u]) members[g].push_back(static_cast<uint32_t>(u));
    }
    pieces[g] = &*groups[g].pieces;
  }
  {
    ScopedTimer timer(timings, "groups: assemble", source.name());
    result.py = assembleGroups(units, members, pieces, entry, options);
  }
  if (checkedIR) {
    ScopedTimer timer(timings, "cache store (L2)", source.name());
    std::vector<std::string> irs(groupCount);
    for (size_t g = 0; g < groupCount; ++g) irs[g] = std::move(groups[g].ir);
    encodeGroups(units, members, irs, *checkedIR);
  }
  result.compiled = true;
  return result;
}

GroupsResult compileStoredGroups(const CompileOptions& options, std::string_view checkedIR,
                                 const std::string& sourceName, Workers* workers,
                                 Timings* timings, size_t sourceBytes) {
  GroupsResult result;
  auto decline = [&](std::string why) {
    result = GroupsResult{};
    result.why = std::move(why);
    return result;
  };
  std::optional<StoredGroups> stored;
  {
    ScopedTimer timer(timings, "groups: plan", sourceName);
    stored = decodeGroups(checkedIR);
  }
  if (!stored) {
    decline("its stored groups do not decode");
    result.damaged = true;
    return result;
  }
  int entry = entryUnit(stored->units, options.entry);
  if (!options.entry.empty() && entry < 0) {
    return decline("--entry names no layer of the file");
  }
  const size_t groupCount = stored->members.size();
  struct Group {
    Interner interner;  // each group's own: an interner is not shared between threads
    std::unique_ptr<Timings> timings;
    std::optional<PyTorchPieces> pieces;
    std::string failure;
    bool damaged = false;
  };
  // A group's checked IR is a few times the size of the source it covers; a
  // frame that says it holds far more is damaged (and would take the memory).
  const size_t maxIRBytes = kIRBytesPerSourceByte * sourceBytes + kIRBytesSlack;
  std::vector<Group> groups(groupCount);
  for (size_t g = 0; g < groupCount; ++g) {
    result.compiledUnits += stored->members[g].size();
    if (timings) groups[g].timings = std::make_unique<Timings>();
  }
  auto compileGroup = [&](size_t g) {
    Group& group = groups[g];
    Timings* t = group.timings.get();
    std::optional<Expected<ir::Module>> module;
    {
      ScopedTimer timer(t, "IR deserialization", sourceName);
      Expected<std::string> bytes = cache::decompressFrame(stored->irs[g], maxIRBytes);
      if (bytes) module.emplace(ir::deserialize(*bytes, group.interner));
    }
    if (!module || !*module) {
      group.failure = "its stored groups do not decode";
      group.damaged = true;
      return;
    }
    group.failure = optimizeAndEmit(options, **module, sourceName, t, group.pieces);
  };
  runGroups(workers, groupCount, compileGroup, timings,
            [&](size_t g) -> Timings& { return *groups[g].timings; });
  std::vector<const PyTorchPieces*> pieces(groupCount);
  for (size_t g = 0; g < groupCount; ++g) {
    if (!groups[g].failure.empty()) {
      decline(groups[g].failure);
      result.damaged = groups[g].damaged;
      return result;
    }
    pieces[g] = &*groups[g].pieces;
  }
  {
    ScopedTimer timer(timings, "groups: assemble", sourceName);
    result.py = assembleGroups(stored->units, stored->members, pieces, entry, options);
  }
  result.units = stored->units.size();
  result.groups = groupCount;
  result.compiled = true;
  return result;
}

}  // namespace tritonc

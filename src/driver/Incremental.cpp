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
#include <climits>
#include <cstdlib>
#include <unordered_map>

#include "Log.h"
#include "tritonc/base/Bytes.h"
#include "tritonc/emit/Emit.h"
#include "tritonc/irgen/IRGen.h"
#include "tritonc/lex/Lex.h"
#include "tritonc/opt/Optimizer.h"
#include "tritonc/parse/Parse.h"
#include "tritonc/sema/Sema.h"

namespace tritonc {

namespace {

#ifdef NDEBUG
constexpr bool kDebugBuild = false;
#else
constexpr bool kDebugBuild = true;
#endif

// ---- the stored pieces ------------------------------------------------------------------

enum class PieceKind : uint8_t { None = 0, Global = 1, Function = 2, Main = 3 };

/// The generated code of one unit; `None` for a declaration without any
/// (a constant whose value is missing).
struct StoredPiece {
  PieceKind kind = PieceKind::None;
  PyTorchPieces::Piece piece;
};

struct KeyHash {
  size_t operator()(const cache::Key& key) const { return static_cast<size_t>(key.low); }
};
using PieceMap = std::unordered_map<cache::Key, StoredPiece, KeyHash>;

constexpr uint32_t kPiecesFormat = 1;

// u32 format, u32 count; per piece: u64 key high, u64 key low, u8 kind,
// u8 usesMath, source name, Python name, code (u32 length + bytes each).
std::string encodePieces(const std::vector<std::pair<cache::Key, const StoredPiece*>>& pieces) {
  std::string out;
  size_t estimate = 16;
  for (const auto& [key, stored] : pieces) estimate += 40 + stored->piece.code.size();
  ByteWriter w(out, estimate);
  w.put(kPiecesFormat);
  w.put(static_cast<uint32_t>(pieces.size()));
  for (const auto& [key, stored] : pieces) {
    w.put(key.high);
    w.put(key.low);
    w.put(static_cast<uint8_t>(stored->kind));
    w.put(static_cast<uint8_t>(stored->piece.usesMath ? 1 : 0));
    w.putString(stored->piece.sourceName);
    w.putString(stored->piece.name);
    w.putString(stored->piece.code);
  }
  w.finish();
  return out;
}

// A damaged or foreign payload decodes to nothing (every unit recompiles).
PieceMap decodePieces(std::string_view bytes) {
  PieceMap pieces;
  ByteReader r(bytes);
  if (r.get<uint32_t>() != kPiecesFormat) return {};
  uint32_t count = r.getCount(30);
  pieces.reserve(count);
  for (uint32_t i = 0; i < count && !r.failed(); ++i) {
    cache::Key key;
    key.high = r.get<uint64_t>();
    key.low = r.get<uint64_t>();
    auto kind = r.get<uint8_t>();
    bool usesMath = r.getBool();
    StoredPiece stored;
    stored.kind = static_cast<PieceKind>(kind);
    stored.piece.sourceName = std::string(r.getString());
    stored.piece.name = std::string(r.getString());
    stored.piece.code = std::string(r.getString());
    stored.piece.usesMath = usesMath;
    stored.piece.isMain = stored.kind == PieceKind::Main;
    if (kind > static_cast<uint8_t>(PieceKind::Main)) r.fail();
    pieces.insert_or_assign(key, std::move(stored));
  }
  if (r.failed() || !r.atEnd()) return {};
  return pieces;
}

// The entry that holds a file's pieces: its path (absolute, so a compile
// from another directory finds it) and the flags.
cache::Key piecesKey(const SourceBuffer& source, std::string_view flags) {
  std::string path = source.name();
  if (char* real = ::realpath(source.name().c_str(), nullptr)) {
    path = real;
    std::free(real);
  }
  return cache::KeyBuilder("incremental").add("file", path).add("flags", flags).finish();
}

}  // namespace

// ---- units --------------------------------------------------------------------------

UnitPlan planUnits(const Tree& tree, std::string_view flags, bool positions) {
  UnitPlan plan;
  const TokenizedBuffer& tokens = tree.tokens();
  const SourceBuffer& source = tokens.source();
  std::span<const NodeId> items = tree.list(tree.listA(tree.root()));
  std::vector<SourceRange> ranges;
  ranges.reserve(items.size());
  std::unordered_map<uint32_t, uint32_t> byName;  // identifier -> unit
  for (NodeId item : items) {
    Unit unit;
    unit.item = item;
    unit.kind = tree.kind(item);
    switch (unit.kind) {
      case NodeKind::Layer:
      case NodeKind::Fn:
      case NodeKind::Let: {
        IdentifierId name = tokens.identifier(tree.token(item));
        unit.name = std::string(tokens.spelling(tree.token(item)));
        if (!byName.emplace(name.index, static_cast<uint32_t>(plan.units.size())).second) {
          plan.unsupported = fmt::format("two declarations are named '{}'", unit.name);
          return plan;
        }
        break;
      }
      case NodeKind::Main:
        if (std::any_of(plan.units.begin(), plan.units.end(),
                        [](const Unit& u) { return u.kind == NodeKind::Main; })) {
          plan.unsupported = "two 'main' blocks";
          return plan;
        }
        unit.name = "main";
        break;
      case NodeKind::Import:
        plan.unsupported = "it imports other files";
        return plan;
      default:
        plan.unsupported = fmt::format("a top-level {}", nodeKindName(unit.kind));
        return plan;
    }
    ranges.push_back(tree.range(item));
    plan.units.push_back(std::move(unit));
  }
  // What each unit names: every identifier token in its text that is a
  // top-level name (a local that shadows one only adds a dependency).
  size_t next = 0;
  for (size_t u = 0; u < plan.units.size(); ++u) {
    while (next < tokens.size() && tokens.range(TokenId{static_cast<uint32_t>(next)}).begin <
                                       ranges[u].begin) {
      ++next;
    }
    std::vector<uint32_t>& uses = plan.units[u].uses;
    for (; next < tokens.size(); ++next) {
      TokenId token{static_cast<uint32_t>(next)};
      if (tokens.range(token).begin >= ranges[u].end) break;
      if (tokens.kind(token) != TokenKind::Identifier) continue;
      auto it = byName.find(tokens.identifier(token).index);
      if (it != byName.end() && it->second != u &&
          std::find(uses.begin(), uses.end(), it->second) == uses.end()) {
        uses.push_back(it->second);
      }
    }
  }
  // Each unit's own text, then its key over everything it reaches, in source
  // order (the inliner's results depend on the order of what it inlines).
  std::vector<cache::Key> own(plan.units.size());
  for (size_t u = 0; u < plan.units.size(); ++u) {
    cache::KeyBuilder key("unit-text");
    key.addInt("kind", static_cast<int64_t>(plan.units[u].kind))
        .add("text", source.text().substr(ranges[u].begin, ranges[u].end - ranges[u].begin));
    if (positions) {
      LineCol at = source.lineCol(ranges[u].begin);
      key.addInt("line", at.line).addInt("column", at.column);
    }
    own[u] = key.finish();
  }
  std::vector<uint32_t> reached(plan.units.size(), UINT32_MAX);  // last unit that reached it
  std::vector<uint32_t> stack;
  for (size_t u = 0; u < plan.units.size(); ++u) {
    auto self = static_cast<uint32_t>(u);
    reached[u] = self;
    stack.assign(1, self);
    std::vector<uint32_t> closure{self};
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
    key.add("flags", flags);
    for (uint32_t member : closure) {
      key.add(member == self ? "self" : "uses", own[member].hex());
    }
    plan.units[u].key = key.finish();
  }
  return plan;
}

// ---- the compile ----------------------------------------------------------------------

IncrementalResult compileIncrementally(const CompileOptions& options, const SourceBuffer& source,
                                       cache::Cache& cache, Interner& interner,
                                       const std::string& emitFlags, Timings* timings) {
  IncrementalResult result;
  auto fallBack = [&](std::string why) {
    result = IncrementalResult{};
    result.why = std::move(why);
    return result;
  };
  // The front end of the whole file: cheap next to the rest, and it finds
  // the declarations. A diagnostic sends the file to the full pipeline,
  // which reports it in its place.
  CollectingDiagnosticConsumer collected;
  DiagnosticEngine diags(collected);
  std::optional<TokenizedBuffer> tokens;
  {
    ScopedTimer timer(timings, "lexer", source.name());
    tokens.emplace(lex(source, interner, diags));
  }
  std::optional<Tree> tree;
  {
    ScopedTimer timer(timings, "parser", source.name());
    tree.emplace(parse(*tokens, diags));
  }
  if (!collected.diagnostics.empty()) {
    return fallBack("the file has diagnostics");
  }
  cache::Key flagsKey = generatedCodeKey(options, "", compilerIdentity(), "none", source.name());
  UnitPlan plan;
  {
    ScopedTimer timer(timings, "incremental: units", source.name());
    plan = planUnits(*tree, flagsKey.hex(), options.optLevel == '0');
  }
  if (!plan.unsupported.empty()) {
    return fallBack(plan.unsupported);
  }
  std::vector<Unit>& units = plan.units;
  // The entry layer: --entry's, else the last layer.
  int entry = -1;
  for (size_t u = 0; u < units.size(); ++u) {
    if (units[u].kind == NodeKind::Layer && (options.entry.empty() || units[u].name == options.entry)) {
      entry = static_cast<int>(u);
    }
  }
  if (!options.entry.empty() && entry < 0) {
    return fallBack("--entry names no layer of the file");
  }

  cache::Key storeKey = piecesKey(source, flagsKey.hex());
  PieceMap previous;
  {
    ScopedTimer timer(timings, "incremental: load", source.name());
    if (std::optional<cache::Entry> stored = cache.load(cache::Level::L3, storeKey)) {
      previous = decodePieces(stored->payload);
    }
  }
  // Changed units, and everything they use: the checker needs the used
  // declarations' signatures and the inliner their bodies.
  std::vector<bool> inSlice(units.size(), false);
  std::vector<uint32_t> stack;
  for (size_t u = 0; u < units.size(); ++u) {
    if (previous.count(units[u].key) == 0) {
      ++result.changed;
      if (!inSlice[u]) {
        inSlice[u] = true;
        stack.push_back(static_cast<uint32_t>(u));
      }
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
  std::vector<NodeId> slice;
  for (size_t u = 0; u < units.size(); ++u) {
    if (inSlice[u]) slice.push_back(units[u].item);
  }
  result.units = units.size();
  result.recompiled = slice.size();

  PieceMap fresh;
  if (!slice.empty()) {
    // A restricted copy keeps every node's id and location: diagnostics,
    // run-time check messages and emitted code are those of the whole file.
    std::optional<Tree> restricted;
    if (slice.size() != units.size()) restricted.emplace(tree->restrictedTo(slice));
    const Tree& checkedTree = restricted ? *restricted : *tree;
    std::optional<CheckedModule> checked;
    {
      ScopedTimer timer(timings, "type checker", source.name());
      checked.emplace(check(checkedTree, interner, diags));
    }
    if (!collected.diagnostics.empty()) {
      return fallBack("a changed declaration has diagnostics");
    }
    std::optional<ir::Module> module;
    {
      ScopedTimer timer(timings, "IR generation", source.name());
      IRGenOptions irgen;
      irgen.runtimeShapeChecks = options.optLevel == '0';
      module.emplace(generateIR(*checked, irgen));
    }
    OptimizerOptions opt;
    opt.level = options.optLevel;
    opt.verifyEach = kDebugBuild;
    opt.timings = timings;
    std::vector<std::string> problems;
    {
      ScopedTimer timer(timings, "optimizer", source.name());
      problems = optimize(*module, opt);
    }
    if (!problems.empty()) {
      return fallBack("the optimizer's verifier objected");  // the full pipeline reports it
    }
    Expected<PyTorchPieces> pieces = [&] {
      ScopedTimer timer(timings, "PyTorch emitter", source.name());
      EmitOptions emit{std::string(kSourceNamePlaceholder), emitFlags, ""};
      emit.releaseDeadTensors = options.optLevel == '2' || options.optLevel == '3' ||
                                options.optLevel == 's';
      return emitPyTorchPieces(*module, emit);
    }();
    if (!pieces) {
      return fallBack("the emitter failed");  // the full pipeline reports it
    }
    // Pieces by name (names are unique: planUnits checked).
    std::unordered_map<std::string_view, std::pair<PieceKind, PyTorchPieces::Piece*>> byName;
    for (auto& p : pieces->globals) byName.emplace(p.sourceName, std::pair{PieceKind::Global, &p});
    for (auto& p : pieces->functions) {
      byName.emplace(p.sourceName,
                     std::pair{p.isMain ? PieceKind::Main : PieceKind::Function, &p});
    }
    for (size_t u = 0; u < units.size(); ++u) {
      if (!inSlice[u]) continue;
      StoredPiece stored;
      auto it = byName.find(units[u].name);
      if (it != byName.end() && (it->second.first == PieceKind::Main) ==
                                    (units[u].kind == NodeKind::Main)) {
        stored.kind = it->second.first;
        stored.piece = std::move(*it->second.second);
      }
      fresh.insert_or_assign(units[u].key, std::move(stored));
    }
  }

  // The module, in the order a full compile emits it: constants, then
  // layers and fns, then main.
  PyTorchPieces all;
  std::vector<std::pair<cache::Key, const StoredPiece*>> keep;
  keep.reserve(units.size());
  for (int pass = 0; pass < 3; ++pass) {
    for (size_t u = 0; u < units.size(); ++u) {
      auto it = fresh.find(units[u].key);
      const StoredPiece* stored = it != fresh.end() ? &it->second : &previous.at(units[u].key);
      if (pass == 0) keep.emplace_back(units[u].key, stored);
      PieceKind wanted = pass == 0 ? PieceKind::Global : pass == 1 ? PieceKind::Function
                                                                   : PieceKind::Main;
      if (stored->kind != wanted) continue;
      (pass == 0 ? all.globals : all.functions).push_back(stored->piece);
      if (static_cast<int>(u) == entry) all.entry = stored->piece.name;
    }
  }
  {
    ScopedTimer timer(timings, "incremental: assemble", source.name());
    result.py = assemblePyTorch(all, EmitOptions{std::string(kSourceNamePlaceholder), emitFlags, ""});
  }
  if (result.changed != 0) {
    ScopedTimer timer(timings, "incremental: store", source.name());
    cache.store(cache::Level::L3, storeKey, encodePieces(keep), 0, /*compress=*/false);
  }
  result.compiled = true;
  return result;
}

}  // namespace tritonc

//===- Imports.cpp - finding, reading and ordering imported files --------===//
#include "Imports.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <climits>
#include <cstdlib>
#include <filesystem>

namespace tritonc {

namespace {

// Whether something is at `path`: also a link there that leads nowhere (a
// loop of links), which ImportNotReadable then explains (it was "cannot
// find", with a "did you mean" naming the other link of the loop). A path
// through a folder that cannot be followed or searched is passed over, as a
// missing one is, for the next directory.
bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ||
         (errno == ELOOP && ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode));
}

// Why an existing path cannot be imported, or "" when it can (a regular file;
// reading anything else could block or mislead).
std::string notImportable(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::strerror(errno);
  if (S_ISDIR(st.st_mode)) return "it is a directory";
  if (!S_ISREG(st.st_mode)) return "it is not a regular file";
  return "";
}

// What a file of another language or a data file is, by its extension (''
// for .tri and anything not known): importing one parses it as Triton DSL
// and reports its every line. Only extensions no Triton DSL file would have
// (`blocks.txt` or a file without one is read as Triton DSL).
std::string foreignKind(const std::string& path) {
  std::string name = path.substr(path.find_last_of('/') + 1);
  size_t dot = name.rfind('.');
  if (dot == std::string::npos || dot == 0) return "";
  std::string ext = name.substr(dot + 1);
  for (char& ch : ext) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  static const std::pair<const char*, const char*> kinds[] = {
      {"py", "a Python file"}, {"pyc", "compiled Python"}, {"ipynb", "a Jupyter notebook"},
      {"pt", "a PyTorch checkpoint"}, {"pth", "a PyTorch checkpoint"},
      {"ckpt", "a checkpoint"}, {"safetensors", "a weights file"}, {"onnx", "an ONNX model"},
      {"npy", "a NumPy array"}, {"npz", "a NumPy archive"}, {"json", "a JSON file"},
      {"yaml", "a YAML file"}, {"yml", "a YAML file"}, {"toml", "a TOML file"},
      {"cu", "CUDA source"}, {"cuh", "a CUDA header"}, {"cpp", "C++ source"},
      {"hpp", "a C++ header"}, {"so", "a shared library"}};
  for (const auto& [e, kind] : kinds) {
    if (ext == e) return kind;
  }
  return "";
}

std::string canonicalPath(const std::string& path) {
  char buffer[PATH_MAX];
  return ::realpath(path.c_str(), buffer) != nullptr ? std::string(buffer) : path;
}

std::string directoryOf(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

std::string baseName(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

// `models/res-blocks.tri` -> `res_blocks`: a prefix for the Python names of
// what the file defines when they clash with the importer's.
std::string pythonStem(const std::string& path) {
  std::string name = baseName(path);
  if (size_t dot = name.find('.'); dot != std::string::npos && dot > 0) name.resize(dot);
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) name = "m_" + name;
  return name;
}

}  // namespace

bool mayImport(const SourceBuffer& source) {
  return source.text().find("import") != std::string_view::npos;
}

std::vector<TokenId> importPaths(const TokenizedBuffer& tokens) {
  std::vector<TokenId> paths;
  for (uint32_t i = 0; i + 1 < tokens.size(); ++i) {
    if (tokens.kind(TokenId{i}) == TokenKind::KwImport &&
        tokens.kind(TokenId{i + 1}) == TokenKind::StringLiteral) {
      paths.push_back(TokenId{i + 1});
    }
  }
  return paths;
}

namespace {

/// A chain of more than kChainShown notes keeps its first and last few, with a
/// note for the ones between (as clang elides a long template backtrace): a
/// file 1000 imports deep would otherwise bring 3000 lines to every diagnostic.
std::vector<DiagnosticNote> elideLongChain(std::vector<DiagnosticNote> notes) {
  constexpr size_t kChainShown = 12;
  constexpr size_t kHead = 6;
  constexpr size_t kTail = kChainShown - kHead - 1;
  if (notes.size() <= kChainShown) return notes;
  size_t elided = notes.size() - kHead - kTail;
  DiagnosticNote between{nullptr, {}, fmt::format(fmt::runtime(noteFormat(Note::ImportsElided)),
                                                  elided)};
  notes.erase(notes.begin() + static_cast<std::ptrdiff_t>(kHead),
              notes.end() - static_cast<std::ptrdiff_t>(kTail));
  notes.insert(notes.begin() + static_cast<std::ptrdiff_t>(kHead), std::move(between));
  return notes;
}

}  // namespace

std::vector<DiagnosticNote> ImportLoader::chainOf(const std::vector<Frame>& stack, size_t top) {
  std::vector<DiagnosticNote> notes;
  for (size_t k = top; k > 0 && k < stack.size(); --k) {
    notes.push_back(makeNote(Note::ImportedHere, *stack[k - 1].source, stack[k].importedAt,
                             stack[k].source->name()));
  }
  return notes;
}

std::vector<DiagnosticNote> ImportLoader::importChain(int index, const SourceBuffer& root,
                                                      const TokenizedBuffer& rootTokens,
                                                      const std::vector<ImportEdge>& edges) const {
  // Breadth first from the root: each file's importer on a shortest chain
  // (-1: the root) and the path token there.
  std::vector<std::pair<int, TokenId>> parent(files_.size(), {-2, TokenId{}});
  std::vector<int> queue;
  for (const ImportEdge& edge : edges) {
    if (edge.target >= 0 && parent[static_cast<size_t>(edge.target)].first == -2) {
      parent[static_cast<size_t>(edge.target)] = {-1, edge.path};
      queue.push_back(edge.target);
    }
  }
  for (size_t next = 0; next < queue.size(); ++next) {
    for (const ImportEdge& edge : files_[static_cast<size_t>(queue[next])]->imports) {
      if (edge.target >= 0 && parent[static_cast<size_t>(edge.target)].first == -2) {
        parent[static_cast<size_t>(edge.target)] = {queue[next], edge.path};
        queue.push_back(edge.target);
      }
    }
  }
  std::vector<DiagnosticNote> notes;
  for (int at = index; at >= 0 && parent[static_cast<size_t>(at)].first != -2;) {
    auto [importer, path] = parent[static_cast<size_t>(at)];
    const SourceBuffer& from = importer < 0 ? root : *file(importer).source;
    const TokenizedBuffer& tokens = importer < 0 ? rootTokens : *file(importer).tokens;
    notes.push_back(
        makeNote(Note::ImportedHere, from, tokens.range(path), file(at).source->name()));
    at = importer;
  }
  return elideLongChain(std::move(notes));
}

int ImportLoader::loadFile(const std::string& path, const std::string& canonical,
                           DiagnosticEngine& diags, Timings* timings, std::string* error,
                           const std::function<std::vector<DiagnosticNote>()>& chain) {
  Expected<SourceBuffer> read = SourceBuffer::readFile(path);
  if (!read) {
    *error = read.error().message;
    return -1;
  }
  auto file = std::make_unique<ImportedFile>();
  file->canonical = canonical;
  file->stem = pythonStem(path);
  file->source = std::make_unique<SourceBuffer>(std::move(*read));
  size_t errors = diags.errorCount();
  diags.pushContext(*file->source, chain);
  {
    ScopedTimer timer(timings, "lexer", file->source->name());
    file->tokens = std::make_unique<TokenizedBuffer>(lex(*file->source, interner_, diags));
  }
  {
    ScopedTimer timer(timings, "parser", file->source->name());
    file->tree = std::make_unique<Tree>(parse(*file->tokens, diags));
  }
  diags.popContext();
  file->syntaxOk = diags.errorCount() == errors;
  auto index = static_cast<int>(files_.size());
  files_.push_back(std::move(file));
  byCanonical_.emplace(canonical, index);
  return index;
}

namespace {

/// For an import that names no file: a `.tri` file in a searched directory
/// whose path is a likely typo of the spelling (`lib_okk.tri`, `lib_ok` for
/// `lib_ok.tri`), spelled as the import would write it; empty if none.
/// `searched` holds the spelling joined to each directory, in search order.
std::string nearbyImport(const std::string& spelling, const std::vector<std::string>& searched) {
  if (spelling.empty()) return {};
  size_t slash = spelling.rfind('/');
  std::string folder = slash == std::string::npos ? "" : spelling.substr(0, slash + 1);
  std::vector<std::string> names;
  for (const std::string& path : searched) {
    std::string withExtension = path + ".tri";
    struct stat info {};
    if (::stat(withExtension.c_str(), &info) == 0 && S_ISREG(info.st_mode)) {
      return spelling + ".tri";  // the extension is part of the name
    }
    std::string dir = path.substr(0, path.size() - (spelling.size() - folder.size()));
    std::error_code error;
    std::filesystem::directory_iterator it(dir.empty() ? "." : dir, error);
    for (; !error && it != std::filesystem::directory_iterator(); it.increment(error)) {
      std::string name = it->path().filename().string();
      if (name.size() > 4 && name.compare(name.size() - 4, 4, ".tri") == 0) {
        names.push_back(name.substr(0, name.size() - 4));
      }
      if (names.size() >= 4096) break;  // a directory of generated files: enough
    }
  }
  // The stems are compared: the folder and the extension every candidate
  // shares would let a different name pass for a typo ('model.tri' for
  // 'nope.tri': three edits in eight characters, but in a stem of four).
  std::string stem = spelling.substr(folder.size());
  while (stem.size() > 4 && stem.compare(stem.size() - 4, 4, ".tri") == 0) {
    stem.resize(stem.size() - 4);  // `model.tri.tri`
  }
  if (std::find(names.begin(), names.end(), stem) != names.end()) return folder + stem + ".tri";
  std::sort(names.begin(), names.end());
  std::vector<std::string_view> views(names.begin(), names.end());
  std::string_view near = closestMatch(stem, views);
  return near.empty() ? std::string() : folder + std::string(near) + ".tri";
}

}  // namespace

bool ImportLoader::visit(const SourceBuffer& from, const TokenizedBuffer& fromTokens,
                         TokenId pathToken, std::vector<Frame>& stack, std::vector<int>& order,
                         std::vector<char>& done, DiagnosticEngine& diags, Timings* timings,
                         int& target) {
  const std::string& spelling = fromTokens.stringValue(pathToken);
  SourceRange at = fromTokens.range(pathToken);
  // Relative to the importing file, then each -I directory.
  std::vector<std::string> candidates;
  if (!spelling.empty() && spelling[0] == '/') {
    candidates.push_back(spelling);
  } else if (!spelling.empty()) {
    candidates.push_back(directoryOf(from.name()) + spelling);
    for (const std::string& dir : includeDirs_) {
      candidates.push_back(dir.empty() || dir.back() == '/' ? dir + spelling : dir + "/" + spelling);
    }
  }
  std::string found;
  for (const std::string& candidate : candidates) {
    if (exists(candidate)) {
      found = candidate;
      break;
    }
  }
  if (found.empty()) {
    std::vector<std::string> searched;
    searched.push_back(directoryOf(from.name()).empty() ? "." : directoryOf(from.name()));
    for (const std::string& dir : includeDirs_) searched.push_back(dir);
    auto builder = diags.report(Diag::ImportNotFound, from, at, spelling);
    if (std::string near = nearbyImport(spelling, candidates); !near.empty()) {
      builder.note(Note::DidYouMean, near);
    }
    builder.note(Note::ImportSearched,
                 fmt::format("{}{}", fmt::join(searched, ", "),
                             includeDirs_.empty() ? " (add directories with -I DIR)" : ""));
    return false;
  }
  if (std::string why = notImportable(found); !why.empty()) {
    diags.report(Diag::ImportNotReadable, from, at, spelling, why);
    return false;
  }
  if (std::string kind = foreignKind(found); !kind.empty()) {
    diags.report(Diag::ImportForeignFile, from, at, spelling, kind);
    return false;
  }
  std::string canonical = canonicalPath(found);
  for (size_t i = 0; i < stack.size(); ++i) {
    if (stack[i].canonical != canonical) continue;
    // The chain from the file imported again back to it.
    std::string chain = "'" + stack[i].source->name() + "'";
    for (size_t j = i + 1; j < stack.size(); ++j) {
      chain += (j == i + 1 ? " imports '" : ", which imports '") + stack[j].source->name() + "'";
    }
    chain += stack.size() == i + 1 ? std::string(" imports itself")
                                   : ", which imports '" + stack[i].source->name() + "'";
    diags.report(Diag::ImportCycle, from, at, chain);
    return false;
  }
  auto known = byCanonical_.find(canonical);
  std::string error;
  int index = -1;
  if (known != byCanonical_.end()) {
    index = known->second;
  } else {
    // How the new file is reached: this import, then the importing file's chain.
    index = loadFile(found, canonical, diags, timings, &error, [&] {
      std::vector<DiagnosticNote> chain = chainOf(stack, stack.size() - 1);
      chain.insert(chain.begin(), makeNote(Note::ImportedHere, from, at, found));
      return elideLongChain(std::move(chain));
    });
  }
  if (index < 0) {
    diags.report(Diag::ImportNotReadable, from, at, spelling, error);
    return false;
  }
  target = index;
  if (done.size() <= static_cast<size_t>(index)) done.resize(files_.size(), 0);
  if (done[static_cast<size_t>(index)]) {
    return true;
  }
  ImportedFile& file = *files_[static_cast<size_t>(index)];
  if (!file.syntaxOk) {
    done[static_cast<size_t>(index)] = 1;
    return false;  // its errors are reported; its imports are not followed
  }
  // The walk recurses once per level (a chain of ~14,000 files overflowed
  // the stack); no program nests this deep.
  constexpr size_t kMaxImportDepth = 1000;
  if (stack.size() >= kMaxImportDepth) {
    diags.report(Diag::ImportTooDeep, from, at, kMaxImportDepth);
    return false;
  }
  stack.push_back(Frame{file.source.get(), canonical, at});
  diags.pushContext(*file.source,
                    [&stack, top = stack.size() - 1] { return elideLongChain(chainOf(stack, top)); });
  bool ok = true;
  if (file.imports.empty()) {
    for (TokenId path : importPaths(*file.tokens)) file.imports.push_back(ImportEdge{path, -1});
  }
  for (ImportEdge& edge : file.imports) {
    ok = visit(*file.source, *file.tokens, edge.path, stack, order, done, diags, timings,
               edge.target) && ok;
  }
  diags.popContext();
  stack.pop_back();
  if (done.size() < files_.size()) done.resize(files_.size(), 0);
  done[static_cast<size_t>(index)] = 1;
  if (ok) {
    order.push_back(index);
  }
  return ok;
}

std::optional<std::vector<ImportEdge>> ImportLoader::load(const SourceBuffer& root,
                                                          const TokenizedBuffer& rootTokens,
                                                          DiagnosticEngine& diags,
                                                          std::vector<int>& order,
                                                          Timings* timings) {
  std::vector<ImportEdge> edges;
  for (TokenId path : importPaths(rootTokens)) edges.push_back(ImportEdge{path, -1});
  std::vector<Frame> stack{Frame{&root, canonicalPath(root.name()), SourceRange{}}};
  std::vector<char> done(files_.size(), 0);
  order.clear();
  bool ok = true;
  for (ImportEdge& edge : edges) {
    ok = visit(root, rootTokens, edge.path, stack, order, done, diags, timings, edge.target) && ok;
  }
  if (!ok) {
    return std::nullopt;
  }
  return edges;
}

// ---- the program ---------------------------------------------------------------------

ImportContext ProgramBuilder::contextFor(const Tree& tree, const std::vector<ImportEdge>& edges,
                                          const ImportLoader& loader) const {
  ImportContext context;
  context.types = lower_ ? ir_.types : types_;
  context.dims = lower_ ? ir_.dims : dims_;
  context.callables = callables_;
  for (NodeId item : tree.list(tree.listA(tree.root()))) {
    if (tree.kind(item) != NodeKind::Import) continue;
    for (const ImportEdge& edge : edges) {
      if (edge.path == tree.token(item) && edge.target >= 0) {
        ImportContext::Import import;
        import.item = item;
        import.path = loader.file(edge.target).source->name();
        import.stem = loader.file(edge.target).stem;
        auto [begin, end] = ranges_.at(edge.target);
        for (uint32_t i = begin; i < end; ++i) import.exports.push_back(i);
        import.constants = constants_.at(edge.target);
        context.imports.push_back(std::move(import));
      }
    }
  }
  return context;
}

void ProgramBuilder::add(int file, const ImportedFile& imported, const CheckedModule& checked,
                         const IRGenOptions& options, Timings* timings) {
  ranges_[file] = {checked.firstLocal, static_cast<uint32_t>(checked.callables.size())};
  for (size_t i = checked.firstLocal; i < checked.callables.size(); ++i) {
    CallableInfo c = checked.callables[i];
    c.node = NodeId{};
    for (ParamInfo& p : c.params) p.node = NodeId{};
    c.paramSymbols.clear();
    c.shapeVarSymbols.clear();
    callables_.push_back(std::move(c));
  }
  // Its constants become the program's next globals, in order.
  std::vector<ImportContext::Import::Constant>& constants = constants_[file];
  auto firstGlobal = static_cast<uint32_t>(ir_.globals.size());
  for (const ConstantInfo& k : checked.constants) {
    const Symbol& symbol = checked.symbols[k.symbol];
    constants.push_back({symbol.name, symbol.type, k.intValue, k.floatValue,
                         firstGlobal + static_cast<uint32_t>(constants.size())});
  }
  if (lower_) {
    ScopedTimer timer(timings, "IR generation", imported.source->name());
    IRGenOptions forFile = options;
    forFile.origin = static_cast<uint32_t>(ir_.origins.size());
    ir_.origins.push_back(imported.stem);
    generateIRInto(checked, ir_, forFile);
    TRITONC_CHECK(ir_.globals.size() == firstGlobal + constants.size(),
                  "one global per constant of an imported file");
  } else {
    types_ = checked.types;
    dims_ = checked.dims;
  }
}

std::string importsKeyText(const std::vector<ImportEdge>& edges, const std::vector<int>& order,
                           const ImportLoader& loader) {
  // Files are numbered by their place in `order`, which depends only on the
  // sources (not on what else this process loaded).
  std::map<int, size_t> position;
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
  std::string text;
  auto addEdges = [&](const std::vector<ImportEdge>& list) {
    for (const ImportEdge& e : list) text += fmt::format("\n\x01" "edge {}", position.at(e.target));
  };
  addEdges(edges);
  for (size_t i = 0; i < order.size(); ++i) {
    const ImportedFile& file = loader.file(order[i]);
    text += fmt::format("\n\x01" "file {} {} {}\n", i, file.stem, file.source->text().size());
    text += file.source->text();
    addEdges(file.imports);
  }
  return text;
}

}  // namespace tritonc

//===- Driver.cpp - the compilation pipeline ------------------------------===//
#include "tritonc/driver/Driver.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <utility>

#include "Imports.h"
#include "Incremental.h"
#include "Log.h"
#include "tritonc/base/Check.h"
#include "tritonc/base/FileSystem.h"
#include "tritonc/base/Interner.h"
#include "tritonc/base/PythonLimits.h"
#include "tritonc/base/Timings.h"
#include "tritonc/base/Workers.h"
#include "tritonc/cache/Cache.h"
#include "tritonc/diag/Diagnostics.h"
#include "tritonc/emit/Emit.h"
#include "tritonc/lex/Lex.h"
#include "tritonc/parse/Parse.h"
#include "tritonc/ir/Verifier.h"
#include "tritonc/irgen/IRGen.h"
#include "tritonc/opt/Optimizer.h"
#include "tritonc/sema/Sema.h"
#include "tritonc/source/SourceBuffer.h"


namespace tritonc {

const char* stageName(Stage stage) {
  switch (stage) {
    case Stage::Lex: return "lex";
    case Stage::Parse: return "parse";
    case Stage::Check: return "check";
    case Stage::Ir: return "ir";
    case Stage::Opt: return "opt";
    case Stage::Emit: return "emit";
  }
  return "?";
}

std::optional<Stage> parseStageName(const std::string& name) {
  for (Stage stage : {Stage::Lex, Stage::Parse, Stage::Check, Stage::Ir, Stage::Opt, Stage::Emit}) {
    if (name == stageName(stage)) {
      return stage;
    }
  }
  return std::nullopt;
}

namespace {

#ifdef NDEBUG
constexpr bool kDebugBuild = false;
#else
constexpr bool kDebugBuild = true;
#endif

// A broken IR invariant is the compiler's bug: say so and stop (exit 3).
int reportInvalidIR(const std::vector<std::string>& problems) {
  std::fputs("tritonc: internal compiler error: invalid IR\n", stderr);
  for (const std::string& problem : problems) {
    std::fprintf(stderr, "  %s\n", problem.c_str());
  }
  std::fputs("  please report this, with the input that caused it.\n", stderr);
  return kExitInternalError;
}

bool useColor(ColorMode mode) {
  switch (mode) {
    case ColorMode::Always: return true;
    case ColorMode::Never: return false;
    case ColorMode::Auto: {
      const char* noColor = std::getenv("NO_COLOR");
      const char* term = std::getenv("TERM");
      return ::isatty(STDERR_FILENO) != 0 && (noColor == nullptr || *noColor == '\0') &&
             (term == nullptr || std::strcmp(term, "dumb") != 0);
    }
  }
  return false;
}


// --entry NAME picks the entry layer instead of the file's last one, by the
// name the file itself uses: its own layer, else one an `import "f.tri"`
// brings in, or `alias.NAME` for one of `import "f.tri" as alias`. A layer of
// that name the file cannot see (imported by an import) is the last resort.
void selectEntry(CheckedModule& checked, const std::string& entry, const SourceBuffer& source,
                 const ImportContext* imports, DiagnosticEngine& diags) {
  const Interner& interner = *checked.interner;
  auto isLayer = [&](uint32_t index, std::string_view name) {
    const CallableInfo& c = checked.callables[index];
    return !c.isFn && interner.spelling(c.name) == name;
  };
  std::optional<uint32_t> found;
  std::vector<std::string> visible;  // for the did-you-mean note
  size_t dot = entry.find('.');
  for (const Symbol& symbol : checked.symbols) {
    std::string_view name = interner.spelling(symbol.name);
    if (symbol.kind == SymbolKind::Layer) {
      visible.emplace_back(name);
      // The file's own layer shadows an imported one of the same name.
      if (name == entry && (!found || symbol.ref >= checked.firstLocal)) found = symbol.ref;
    } else if (symbol.kind == SymbolKind::ImportAlias && imports != nullptr &&
               symbol.ref < imports->imports.size()) {
      for (uint32_t index : imports->imports[symbol.ref].exports) {
        if (checked.callables[index].isFn) continue;
        std::string qualified =
            fmt::format("{}.{}", name, interner.spelling(checked.callables[index].name));
        if (qualified == entry) found = index;
        visible.push_back(std::move(qualified));
      }
    }
  }
  if (!found && dot == std::string::npos) {
    for (uint32_t i = 0; i < checked.callables.size() && !found; ++i) {
      if (isLayer(i, entry)) found = i;
    }
  }
  if (found) {
    checked.entryLayer = static_cast<int>(*found);
    return;
  }
  auto builder = diags.reportForPath(Diag::UnknownEntry, "", entry, source.name());
  builder.about(source.name());
  std::vector<std::string_view> names(visible.begin(), visible.end());
  std::string_view match = closestMatch(entry, names);
  if (!match.empty()) {
    builder.note(Note::DidYouMean, match);
    return;
  }
  // A fn of that name: the entry is a layer (a module class); fns are functions.
  for (const Symbol& symbol : checked.symbols) {
    if (symbol.kind == SymbolKind::Fn && interner.spelling(symbol.name) == entry) {
      builder.note(Note::EntryIsFn, entry);
      return;
    }
  }
  // Nothing close (`--entry main`): the layers there are, when few enough to read.
  if (!visible.empty() && visible.size() <= 12) {
    builder.note(Note::EntryLayers, fmt::format("{}", fmt::join(visible, ", ")));
  }
}

// The input `-` (standard input), or the name its buffer has (`<stdin>`).
bool isStandardInput(std::string_view path) {
  return path == "-" || path == SourceBuffer::kStandardInputName;
}

std::string fileStem(const std::string& path) {
  if (isStandardInput(path)) return "stdin";
  std::string stem = path;
  size_t slash = stem.find_last_of('/');
  if (slash != std::string::npos) {
    stem = stem.substr(slash + 1);
  }
  size_t dot = stem.rfind('.');
  if (dot != std::string::npos && dot > 0) {
    stem.resize(dot);
  }
  return stem;
}

// Where the Python module of `input` goes: -o names the file for one input
// and the directory for several; the default is ./<stem>.py. For one input,
// an -o that is a directory (or ends in '/') gets <stem>.py in it, as cp and
// mv do: a directory cannot be the output file. The one input `-` without
// -o writes to standard output, as a filter (`clang -S -` does too).
std::string outputPathFor(const CompileOptions& options, const std::string& input) {
  if (options.inputs.size() == 1 && options.output.empty() && isStandardInput(input)) {
    return "-";
  }
  if (options.inputs.size() == 1 && !options.output.empty()) {
    struct stat st {};
    bool directory = options.output.back() == '/' ||
                     (::stat(options.output.c_str(), &st) == 0 && S_ISDIR(st.st_mode));
    if (!directory) return options.output;
  }
  std::string dir = options.output.empty() ? "." : options.output;
  if (dir.back() != '/') {
    dir += '/';
  }
  return dir + fileStem(input) + ".py";
}

// The directory of a module's companion files (`.cu`, `.so`, the time trace),
// "" for the current one: the module's own, unless the module goes to
// standard output or a device (`-o /dev/null`).
std::string companionDirectory(const std::string& py) {
  struct stat st {};
  if (py == "-" || (::stat(py.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))) {
    return "";
  }
  size_t slash = py.find_last_of('/');
  return slash == std::string::npos || py.compare(0, slash + 1, "./") == 0 ? ""
                                                                           : py.substr(0, slash + 1);
}

// `<stem>_kernels.cu` and `.so` go next to the Python module.
std::string cudaPathFor(const CompileOptions& options, const std::string& input, const char* ext) {
  return companionDirectory(outputPathFor(options, input)) + fileStem(input) + "_kernels" + ext;
}

// Where --time-trace writes: `<stem>.trace.json` (the first input's stem)
// next to the first input's module, as clang puts its trace next to the
// object file, or in the current directory when the module goes to standard
// output or a device (`-o /dev/null`); `--time-trace=DIR` puts it in DIR.
std::string traceName(const CompileOptions& options) {
  std::string name =
      (options.inputs.empty() ? std::string("tritonc") : fileStem(options.inputs.front())) +
      ".trace.json";
  struct stat st {};
  if (options.timeTrace && !options.timeTrace->empty()) {
    const std::string& given = *options.timeTrace;
    bool dir = ::stat(given.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
    return !dir ? given : given.back() == '/' ? given + name : given + "/" + name;
  }
  if (options.inputs.empty()) return name;
  return companionDirectory(outputPathFor(options, options.inputs.front())) + name;
}

// Where -MD writes a module's dependency file: -MF's FILE, else the module's
// path with `.d` for its extension (`out/m.py` -> `out/m.d`, as `cc -MD -o
// m.o` writes m.d), or `<stem>.d` in the current directory when the module
// goes to standard output or a device.
// Whether the module goes to standard output or a device (`-o -`, `-o
// /dev/stdout`): no file a make rule could name.
bool writesNoFile(const std::string& py) {
  struct stat st {};
  return py == "-" || (::stat(py.c_str(), &st) == 0 && !S_ISREG(st.st_mode));
}

std::string depfilePathFor(const CompileOptions& options, const std::string& input) {
  if (!options.depfilePath.empty()) return options.depfilePath;
  std::string py = outputPathFor(options, input);
  std::string dir = companionDirectory(py);
  if (writesNoFile(py)) return dir + fileStem(input) + ".d";
  size_t slash = py.find_last_of('/');
  size_t dot = py.find_last_of('.');
  // A dot that starts the name is no extension (`-o .hidden` writes `.hidden.d`).
  bool extension = dot != std::string::npos && dot > (slash == std::string::npos ? 0 : slash + 1);
  return (extension ? py.substr(0, dot) : py) + ".d";
}

// A path as make reads it in a rule: spaces, '#' and ':' escaped (an
// unescaped ':' in a prerequisite stops GNU make: "multiple target
// patterns"; make and ninja read `\:`), '$' doubled.
std::string makeEscaped(std::string_view path) {
  std::string out;
  for (char c : path) {
    if (c == ' ' || c == '#' || c == ':') out += '\\';
    if (c == '$') out += '$';
    out += c;
  }
  return out;
}

// Why make cannot read `path` as one file name in a rule, whatever the escaping:
// a newline ends the rule (the next line, after a TAB, is a recipe), ';' starts a
// recipe on the rule's line, '=' makes the rule a target-specific variable
// assignment (`m.py: SHELL=...`), '|' starts order-only prerequisites. Empty when
// it can. (An `import "a;touch x;.tri"` is a path of the source's choosing: written
// raw, `make` would run it.)
std::string unrepresentableInMake(std::string_view path) {
  for (char c : path) {
    switch (c) {
      case '\n': return "a newline";
      case '\r': return "a carriage return";
      case ';': return "';', which starts a recipe";
      case '=': return "'=', which makes the rule a variable assignment";
      case '|': return "'|', which starts order-only prerequisites";
      default: break;
    }
  }
  return {};
}

// A make rule: the files a compile of one input writes depend on the input
// and every file it imports (directly or not); -MP adds an empty rule per
// imported file, so that make does not fail once one is deleted. A path make
// cannot read (unrepresentableInMake) sets `error` and gives no rule.
std::string dependencyRule(const std::vector<std::string>& targets, const std::string& input,
                           const std::vector<std::string>& imported, bool phony,
                           std::string* error) {
  std::vector<std::string_view> paths(targets.begin(), targets.end());
  if (!isStandardInput(input)) paths.push_back(input);
  paths.insert(paths.end(), imported.begin(), imported.end());
  for (std::string_view path : paths) {
    if (std::string why = unrepresentableInMake(path); !why.empty()) {
      *error = fmt::format("a make rule cannot name '{}': it holds {}", path, why);
      return {};
    }
  }
  std::string rule;
  for (std::string_view target : targets) {
    if (target.starts_with("./")) target.remove_prefix(2);  // the name make gives `m.py`
    rule += (rule.empty() ? "" : " ") + makeEscaped(target);
  }
  rule += ":";
  if (!isStandardInput(input)) rule += " " + makeEscaped(input);
  for (const std::string& file : imported) rule += " \\\n  " + makeEscaped(file);
  rule += "\n";
  for (const std::string& file : imported) {
    if (phony) rule += "\n" + makeEscaped(file) + ":\n";
  }
  return rule;
}

// The flags that shape the generated code, for its header comment.
std::string codeFlags(const CompileOptions& options) {
  std::string flags = fmt::format("-O{}", options.optLevel);
  if (!options.entry.empty()) {
    flags += " --entry " + options.entry;
  }
  // The CUDA target's module loads its kernels and routes products to them.
  if (options.target != "pytorch") {
    flags += " --target " + options.target;
  }
  return flags;
}

}  // namespace

std::unique_ptr<DiagnosticConsumer> makeConsumer(const CompileOptions& options) {
  if (options.diagnosticsFormat == DiagnosticsFormat::Json) {
    return std::make_unique<JsonDiagnosticConsumer>(stderr);
  }
  return std::make_unique<TextDiagnosticConsumer>(stderr, useColor(options.color));
}

OptimizerOptions optimizerOptions(const CompileOptions& options, Timings* timings) {
  OptimizerOptions opt;
  opt.level = options.optLevel;
  opt.verifyEach = options.verifyEach || kDebugBuild;
  opt.timings = timings;
  return opt;
}

EmitOptions pyTorchEmitOptions(const CompileOptions& options, const std::string& sourceName) {
  // The names are stamped in when the files are written (see Emit.h).
  EmitOptions emit;
  emit.sourceName = kSourceNamePlaceholder;
  emit.flags = codeFlags(options);
  // Only -O0's code names the input (its run-time shape checks): only its
  // L3 key has the name (generatedCodeKey).
  if (options.optLevel == '0') emit.checkSource = sourceName;
  // The memory-layout level: tensors released after their last use.
  emit.releaseDeadTensors = options.optLevel == '2' || options.optLevel == '3' ||
                            options.optLevel == 's';
  emit.accumulateConcat = emit.releaseDeadTensors;
  emit.inlineSingleUse = options.optLevel == 's';
  emit.returnDirectly = options.optLevel != '0';
  return emit;
}

namespace {

// Below this size a file is compiled as one group even with cores to spare:
// threads and the shared declarations would cost what they save.
constexpr size_t kMinBytesForGroups = 16 * 1024;
// Groups of one file at most (each compiles what its models use: more groups
// compile more of it twice).
constexpr unsigned kMaxGroups = 16;

// What one input produced: its generated files (with name placeholders, as
// the cache stores them) and what the L3 cache needs to store them.
struct FileResult {
  const SourceBuffer* source = nullptr;
  std::vector<std::string> imported;  ///< the files it imports (directly or not)
  bool compiled = false;        ///< the pipeline ran to the end without errors
  std::string py;
  std::string cu;
  bool hasCu = false;
  /// The CUDA library (staged with the outputs): built by nvcc, or its L3 entry
  /// (cudaObjectKey), which the generated code's entry does not repeat.
  std::optional<std::string> library;
  std::vector<Diagnostic> diagnostics;  ///< as reported, for the L3 entry
  std::optional<cache::Key> l3Key;      ///< set when the entry should be stored
  uint64_t computeNs = 0;               ///< pipeline time, for "time saved"
};

int64_t monotonicNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string baseName(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

// -O0's run-time shape checks are generated at every level when the checked
// IR goes to L2 (`forL2`): -O1 and up strip them (strip-checks), and the one
// entry serves every level. A compile that stores none skips them.
bool runtimeShapeChecks(const CompileOptions& options, bool forL2) {
  return options.optLevel == '0' || forL2;
}

// IR generation for one checked file.
std::optional<ir::Module> generateModule(const CompileOptions& options,
                                         const CheckedModule& checked, Timings* timings,
                                         bool forL2) {
  ScopedTimer timer(timings, "IR generation");
  IRGenOptions irgen;
  irgen.runtimeShapeChecks = runtimeShapeChecks(options, forL2);
  return generateIR(checked, irgen);
}

// The optimizer and the emitters for one file's IR.
int runMiddleEnd(const CompileOptions& options, Stage lastStage, ir::Module& module,
                 Timings* timings, const std::string& header, const SourceBuffer& source,
                 DiagnosticEngine& diags, FileResult& result, unsigned emitJobs) {
  const std::string& sourceName = source.name();
  OptimizerOptions opt = optimizerOptions(options, timings);
  if (opt.verifyEach) {
    std::vector<std::string> problems = ir::verify(module);
    if (!problems.empty()) {
      problems.insert(problems.begin(), "after IR generation:");
      return reportInvalidIR(problems);
    }
  }
  auto dump = [&](const std::string& title) {
    if (!header.empty()) {
      writeStandardOutput("# file: " + header + "\n");
    }
    if (!title.empty()) {
      writeStandardOutput("// ----- IR after " + title + " ----- //\n");
    }
    writeStandardOutput(module.print());
  };
  if (lastStage == Stage::Ir) {
    if (options.dumpIr) {
      dump("");
    }
    return kExitSuccess;
  }
  if (options.printAfterAll) {
    opt.afterPass = [&](std::string_view pass, const ir::Module&) { dump(std::string(pass)); };
  }
  if (logEnabled(LogLevel::Verbose)) {
    std::string pipeline;
    for (std::string_view pass : pipelineFor(options.optLevel)) {
      pipeline += pipeline.empty() ? "" : ", ";
      pipeline += pass;
    }
    logMessage(LogLevel::Verbose, fmt::format("optimization pipeline (-O{}): {}",
                                              options.optLevel,
                                              pipeline.empty() ? "(none)" : pipeline));
  }
  std::vector<std::string> problems;
  {
    ScopedTimer timer(timings, "optimizer");
    problems = optimize(module, opt);
  }
  if (!problems.empty()) {
    return reportInvalidIR(problems);
  }
  if (options.dumpIr) {
    dump("");
  }
  if (lastStage < Stage::Emit) {
    return kExitSuccess;
  }
  std::string library = options.target != "pytorch" ? fileStem(sourceName) + "_kernels.so" : "";
  {
    ScopedTimer timer(timings, "PyTorch emitter");
    EmitOptions emit = pyTorchEmitOptions(options, sourceName);
    if (options.target != "pytorch") {
      emit.cudaLibrary = std::string(kCudaLibraryPlaceholder);
    }
    Expected<std::string> emitted = emitPyTorch(module, emit, emitJobs);
    if (!emitted) {
      // At the `if`/`for`/`while` whose body crosses the limit.
      uint32_t at = emitted.error().offset;
      if (at < source.text().size()) {
        std::string_view text = source.text();
        uint32_t end = at;  // the keyword
        while (end < text.size() && std::isalpha(static_cast<unsigned char>(text[end]))) ++end;
        diags.report(Diag::TooDeepForPython, source, SourceRange{at, std::max(end, at + 1)},
                     emitted.error().message);
      } else {
        diags.reportForPath(Diag::TooDeepForPython, sourceName, emitted.error().message);
      }
      return kExitSourceError;
    }
    result.py = std::move(*emitted);
  }
  if (options.dumpCode) {
    if (!header.empty()) {
      writeStandardOutput("# file: " + header + "\n");
    }
    writeStandardOutput(stampPyTorch(result.py, baseName(sourceName), library));
  }
  if (options.target != "pytorch") {
    {
      ScopedTimer timer(timings, "CUDA emitter");
      CudaEmitOptions cuda;
      cuda.sourceName = std::string(kSourceNamePlaceholder);
      cuda.flags = codeFlags(options);
      cuda.dtypes = options.cudaDTypes;
      cuda.variants = options.optLevel == '3' ? 3 : 1;  // -O3: variants for the auto-tuner
      cuda.archs = options.cudaArchs;
      std::vector<TernaryKernel> kernels = planTernaryKernels(module);
      logMessage(LogLevel::Verbose, fmt::format("{}: {} ternary kernel(s) for the CUDA target",
                                                sourceName, kernels.size()));
      result.cu = emitCuda(kernels, cuda);
      result.hasCu = true;
    }
    if (options.dumpCode) {
      writeStandardOutput("// file: " + fileStem(sourceName) + "_kernels.cu\n");
      writeStandardOutput(stampCuda(result.cu, baseName(sourceName), fileStem(sourceName)));
    }
  }
  result.compiled = !options.stopAfter.has_value();
  return kExitSuccess;
}

// nvcc: --nvcc, $TRITONC_NVCC, PATH, then /usr/local/cuda/bin. Empty if none.
// `named`: it was named (by the flag or the variable), not searched for.
// A name without a slash (`--nvcc nvcc`, `TRITONC_NVCC=nvcc-12`) is looked up on PATH, as
// execvp and a shell do; a path is taken as it is.
std::string namedProgram(const std::string& name) {
  if (name.find('/') == std::string::npos) return findProgramOnPath(name);
  // A directory is no program (it was run, and failed with exit 3).
  return isExecutableFile(name) ? name : std::string();
}

std::string findNvcc(const CompileOptions& options, std::string* searched, bool* named) {
  *named = true;
  if (!options.nvcc.empty()) {
    *searched = "--nvcc " + options.nvcc;
    return namedProgram(options.nvcc);
  }
  if (const char* env = std::getenv("TRITONC_NVCC"); env != nullptr && *env != '\0') {
    *searched = std::string("TRITONC_NVCC=") + env;
    return namedProgram(env);
  }
  *named = false;
  *searched = "PATH and /usr/local/cuda/bin";
  if (std::string found = findProgramOnPath("nvcc"); !found.empty()) {
    return found;
  }
  const char* fallback = "/usr/local/cuda/bin/nvcc";
  return ::access(fallback, X_OK) == 0 ? std::string(fallback) : std::string();
}

// nvcc compiles host code with gcc and g++ from PATH unless told another
// compiler (NVCC_CCBIN, or -ccbin/--compiler-bindir in NVCC_PREPEND_FLAGS or
// NVCC_APPEND_FLAGS).
// Without them it cannot build anything: the name of the missing one.
std::string missingHostCompiler() {
  for (const char* variable : {"NVCC_CCBIN", "NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS"}) {
    const char* value = std::getenv(variable);
    if (value == nullptr) continue;
    std::string_view text = value;
    if (std::string_view(variable) == "NVCC_CCBIN"
            ? !text.empty()
            : text.find("ccbin") != std::string_view::npos ||
                  text.find("compiler-bindir") != std::string_view::npos) {
      return {};
    }
  }
  for (const char* compiler : {"gcc", "g++"}) {
    if (findProgramOnPath(compiler).empty()) return compiler;
  }
  return {};
}

// What a failed nvcc run did: the exit status and its output's last lines.
struct NvccFailure {
  std::string reason;              ///< "exit status 1"; empty when nvcc succeeded
  std::vector<std::string> lines;  ///< its last lines, for notes
};

// Builds `<stem>_kernels.so` from the CUDA source: `kernels.cu` into
// `kernels.so`, both in `workDir`, a private folder under $TMPDIR. nvcc runs
// its steps through a shell with the file names inside quotes, so a name of
// the user's (`x$(cmd).tri`, or a folder so named) would run commands: it
// sees these names only. It runs in the current directory, so that relative
// paths in NVCC_APPEND_FLAGS (`-ccbin`, `-I`, `--keep`) mean what they did.
NvccFailure runNvcc(const CompileOptions& options, const std::string& nvcc,
                    const std::string& workDir, std::string_view cuName) {
  // The flags the `.cu`'s header shows (kNvccFlags).
  std::vector<std::string> args = {nvcc};
  args.insert(args.end(), kNvccFlags.begin(), kNvccFlags.end());
  for (const std::string& arch : options.cudaArchs) {
    args.push_back("-gencode");
    args.push_back(fmt::format("arch=compute_{0},code=sm_{0}", arch));
  }
  args.insert(args.end(), {"-o", workDir + "/kernels.so", "-x", "cu", workDir + "/kernels.cu"});
  std::string log = workDir + "/nvcc.log";
  removeFileOnSignal(log);
  logMessage(LogLevel::Verbose, fmt::format("running {}", fmt::join(args, " ")));
  // Its intermediate files (tmpxft_*) in the private folder too, which a
  // signal that ends tritonc removes with everything in it: in $TMPDIR they
  // would stay behind when nvcc is killed.
  ProcessResult run = runProcess(args, log, {"TMPDIR=" + workDir});
  std::string output = readWholeFile(log).value_or("");
  ::unlink(log.c_str());
  keepFileOnSignal(log);
  if (run.exitCode == 0) {
    return {};
  }
  // The last lines of nvcc's output say what failed; each becomes a note,
  // as clang shows a failed linker's output before its own error.
  NvccFailure failure;
  failure.reason = run.exitCode < 0 ? run.error : fmt::format("exit status {}", run.exitCode);
  std::vector<std::string_view> lines;
  for (std::string_view rest = output; !rest.empty();) {
    size_t end = rest.find('\n');
    std::string_view line = rest.substr(0, end);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") != std::string_view::npos) lines.push_back(line);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
  }
  constexpr size_t kLines = 30;
  if (lines.size() > kLines) {
    failure.lines.push_back(fmt::format("... ({} earlier lines)", lines.size() - kLines));
    lines.erase(lines.begin(), lines.end() - kLines);
  }
  // Its messages name the file it was given; the user knows the output's name:
  // the path as given first (nvcc's messages name it so), then the name alone.
  constexpr std::string_view kGiven = "kernels.cu";
  const std::string given = workDir + "/" + std::string(kGiven);
  auto word = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '/' ||
           c == '-';
  };
  for (std::string_view line : lines) {
    std::string shown(line.substr(0, 1000));
    for (size_t at = 0; (at = shown.find(given, at)) != std::string::npos;) {
      shown.replace(at, given.size(), cuName);
      at += cuName.size();
    }
    for (size_t at = 0; (at = shown.find(kGiven, at)) != std::string::npos;) {
      size_t end = at + kGiven.size();
      if ((at > 0 && word(shown[at - 1])) || (end < shown.size() && word(shown[end]))) {
        at = end;
        continue;
      }
      shown.replace(at, kGiven.size(), cuName);
      at += cuName.size();
    }
    failure.lines.push_back(std::move(shown));
  }
  return failure;
}

// nvcc as one run found it (looked up once: for the cache key and the build).
struct NvccLookup {
  std::string path;       ///< empty when there is none that can run
  std::string searched;   ///< where it was looked for
  std::string notUsable;  ///< why there is none, for the diagnostic
};

NvccLookup lookUpNvcc(const CompileOptions& options) {
  NvccLookup nvcc;
  // An nvcc named by --nvcc or $TRITONC_NVCC (a wrapper may bring its own
  // host compiler) is run as it is.
  bool named = false;
  nvcc.path = findNvcc(options, &nvcc.searched, &named);
  if (nvcc.path.empty()) {
    nvcc.notUsable = fmt::format("nvcc was not found ({})", nvcc.searched);
  } else if (std::string missing = named ? std::string() : missingHostCompiler();
             !missing.empty()) {
    // Not an nvcc failure: this machine cannot build CUDA code, as one
    // without nvcc cannot.
    nvcc.notUsable = fmt::format("nvcc ({}) has no host compiler ('{}' is not on PATH and "
                                 "NVCC_CCBIN names none)",
                                 nvcc.path, missing);
    nvcc.path.clear();
  }
  return nvcc;
}

// A program's identity for the L3 key: its real path, size and
// modification time (ccache's compiler_check=mtime), "-" when it is absent.
std::string realPathOf(const std::string& path) {
  char* real = ::realpath(path.c_str(), nullptr);
  std::string resolved = real != nullptr ? real : path;
  std::free(real);
  return resolved;
}

std::string fileIdentity(const std::string& path) {
  struct stat st {};
  if (path.empty() || ::stat(path.c_str(), &st) != 0) return "-";
  return fmt::format("{} {} {}.{}", realPathOf(path), st.st_size, st.st_mtim.tv_sec,
                     st.st_mtim.tv_nsec);
}

// nvcc's identity for the L3 key: its path, size and modification time; the
// toolkit programs it runs beside it (a toolkit upgrade may keep the nvcc
// driver); the host compilers it takes from PATH (gcc, g++) when no
// NVCC_CCBIN names one; and the variables nvcc reads its extra flags and
// host compiler from.
std::string nvccIdentity(const NvccLookup& nvcc) {
  std::string identity = fileIdentity(nvcc.path);
  if (identity == "-") return "none";
  std::string bin = realPathOf(nvcc.path);
  bin = bin.substr(0, bin.find_last_of('/') + 1);
  for (const char* tool : {"nvcc.profile", "ptxas", "cudafe++", "fatbinary", "nvlink",
                           "../nvvm/bin/cicc"}) {
    identity += "\x1f" + fileIdentity(bin + tool);
  }
  const char* ccbin = std::getenv("NVCC_CCBIN");
  if (ccbin == nullptr || *ccbin == '\0') {
    for (const char* compiler : {"gcc", "g++"}) {
      identity += "\x1f" + fileIdentity(findProgramOnPath(compiler));
    }
  } else {
    // NVCC_CCBIN names the compiler, or a directory holding gcc and g++.
    std::string named = findProgramOnPath(ccbin);
    if (named.empty()) named = ccbin;
    struct stat dir {};
    if (::stat(named.c_str(), &dir) == 0 && S_ISDIR(dir.st_mode)) {
      identity += "\x1f" + fileIdentity(named + "/gcc") + "\x1f" + fileIdentity(named + "/g++");
    } else {
      identity += "\x1f" + fileIdentity(named);
    }
  }
  // NVCC_APPEND_FLAGS="-gencode arch=compute_75,code=sm_75" changes the
  // library nvcc builds: a key without it returned one built without sm_75.
  for (const char* variable : {"NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "NVCC_CCBIN"}) {
    const char* value = std::getenv(variable);
    identity += fmt::format("\x1f{}={}", variable, value != nullptr ? value : "");
  }
  return identity;
}

// Whether this run may use the cache: it must produce the outputs, and the
// user must not have asked to watch the pipeline itself (dumps, verification).
bool cacheable(const CompileOptions& o, Stage lastStage) {
  return lastStage == Stage::Emit && !o.stopAfter && !o.noCache && !o.dumpTokens && !o.dumpAst &&
         !o.dumpTypes && !o.dumpIr && !o.dumpCode && !o.printAfterAll && !o.verifyEach;
}

// Replays recorded diagnostics of one file; false when they do not decode.
bool replayDiagnostics(std::string_view bytes, const SourceBuffer& source,
                       DiagnosticEngine& diags, std::vector<Diagnostic>* keep) {
  Expected<std::vector<Diagnostic>> decoded = decodeDiagnostics(bytes, source);
  if (!decoded) {
    return false;
  }
  for (Diagnostic& d : *decoded) {
    if (keep != nullptr) keep->push_back(d);
    diags.replay(std::move(d));
  }
  return true;
}

// --verbose's line for an entry found corrupt (by its checksum, or because
// its payload does not decode), discarded and compiled anew.
void logCorrupt(cache::Level level, const SourceBuffer& source, const cache::Key& key,
                std::string_view why) {
  logCorruptEntry(level == cache::Level::L3 ? "L3" : "L2", source.name(), key.hex(), why);
}

// Looks a file's entry up at one level, timed and logged for --verbose.
std::optional<cache::Entry> lookupEntry(
    cache::Cache& cache, cache::Level level, const cache::Key& key, const SourceBuffer& source,
    Timings* timings, const std::function<bool(const cache::Entry&)>& usable = {}) {
  bool l3 = level == cache::Level::L3;
  std::optional<cache::Entry> entry;
  std::string corrupt;
  {
    ScopedTimer timer(timings, l3 ? "cache lookup (L3)" : "cache lookup (L2)", source.name());
    entry = cache.load(level, key, usable, &corrupt);
  }
  if (!corrupt.empty()) {
    logCorrupt(level, source, key, corrupt);
  } else if (logEnabled(LogLevel::Verbose)) {
    // The level that served it, as `cache stats` counts it: an entry this
    // process already read or stored is an L1 hit.
    std::string_view name = l3 ? "L3" : "L2";
    std::string what = entry && entry->fromMemory ? fmt::format("L1 hit ({} entry)", name)
                       : entry                    ? fmt::format("{} hit", name)
                                                  : fmt::format("{} miss", name);
    logMessage(LogLevel::Verbose,
               fmt::format("cache: {} for {} ({})", what, source.name(), key.hex()));
  }
  return entry;
}

// A hit whose payload does not decode (checksummed, so written wrong): a
// miss, counted corrupt and removed, as a damaged file is.
void discardCorrupt(cache::Cache& cache, cache::Level level, const cache::Entry& entry,
                    const SourceBuffer& source, std::string_view why) {
  cache.rejectHit(level, entry, /*corrupt=*/true);
  logCorrupt(level, source, entry.key, why);
}

// Counts what a hit saved: the entry's compute time less the time the hit took.
// The time a hit saved, credited to the level that served it (L1 when the
// entry came from this process's memory).
void addSaved(cache::Cache& cache, cache::Level level, const cache::Entry& entry, int64_t start) {
  if (entry.fromMemory) level = cache::Level::L1;
  auto spent = static_cast<uint64_t>(monotonicNs() - start);
  cache.addSaved(level, entry.computeNs > spent ? entry.computeNs - spent : 0);
}

// An L3 hit: the generated files (and library) of a previous compile. Fills
// `result` and replays the file's diagnostics; false on a miss.
bool loadGeneratedCode(cache::Cache& cache, const cache::Key& key, const SourceBuffer& source,
                       DiagnosticEngine& diags, FileResult& result, Timings* timings) {
  int64_t start = monotonicNs();
  std::optional<cache::Entry> entry = lookupEntry(cache, cache::Level::L3, key, source, timings);
  if (!entry) {
    return false;
  }
  Expected<cache::BlobViews> blobs = cache::unpackBlobs(entry->payload);
  if (!blobs) {
    discardCorrupt(cache, cache::Level::L3, *entry, source, "its payload does not unpack");
    return false;
  }
  std::optional<std::string_view> diagnostics;
  for (const auto& [name, data] : *blobs) {
    if (name == "diagnostics") diagnostics = data;
    else if (name == "py") result.py = data;
    else if (name == "cu") result.cu = data, result.hasCu = true;
  }
  if (!diagnostics || !replayDiagnostics(*diagnostics, source, diags, nullptr)) {
    discardCorrupt(cache, cache::Level::L3, *entry, source, "its diagnostics do not decode");
    return false;
  }
  result.compiled = true;
  addSaved(cache, cache::Level::L3, *entry, start);
  return true;
}

// A CUDA library built before from the same `.cu` (cudaObjectKey); nullopt on
// a miss.
std::optional<std::string> loadCudaObject(cache::Cache& cache, const cache::Key& key,
                                          const SourceBuffer& source, Timings* timings) {
  int64_t start = monotonicNs();
  std::optional<cache::Entry> entry = lookupEntry(cache, cache::Level::L3, key, source, timings);
  if (!entry) {
    return std::nullopt;
  }
  Expected<cache::BlobViews> blobs = cache::unpackBlobs(entry->payload);
  if (!blobs || blobs->size() != 1 || (*blobs)[0].first != "so") {
    discardCorrupt(cache, cache::Level::L3, *entry, source, "it holds no CUDA library");
    return std::nullopt;
  }
  std::string library((*blobs)[0].second);
  addSaved(cache, cache::Level::L3, *entry, start);
  return library;
}

// Builds every `<stem>_kernels.so` (when nvcc exists) from the stamped `.cu`
// into a temporary file next to its destination; a library that came from
// the cache is not rebuilt: with the file's generated code (an L3 hit), or
// built before from the same `.cu` (cudaObjectKey: another -O level, a comment
// edit), which a build stores. Returns false (after reporting) when nvcc fails.
// Without nvcc, `notCompiled` gets each (`.cu`, `.so`) path: the note saying
// so is reported once the outputs are written.
bool buildCudaLibraries(const CompileOptions& options, const NvccLookup& lookup,
                        std::string_view nvccId, cache::Cache& cache,
                        std::vector<FileResult>& results, Timings* timings,
                        DiagnosticEngine& diags,
                        std::vector<std::pair<std::string, std::string>>& notCompiled) {
  const std::string& nvcc = lookup.path;
  for (FileResult& result : results) {
    if (!result.hasCu || result.library) continue;
    const std::string& name = result.source->name();
    std::string cuPath = cudaPathFor(options, name, ".cu");
    std::string so = cudaPathFor(options, name, ".so");
    if (nvcc.empty()) {
      notCompiled.emplace_back(cuPath, so);
      continue;
    }
    std::optional<cache::Key> objectKey;
    if (cache.enabled()) {
      objectKey = cudaObjectKey(options, result.cu, nvccId);
      if (std::optional<std::string> library =
              loadCudaObject(cache, *objectKey, *result.source, timings)) {
        result.library = std::move(library);
        continue;
      }
    }
    int64_t start = monotonicNs();
    ScopedTimer timer(timings, "nvcc", cuPath);
    // nvcc works in a private folder (mkdtemp) under names of ours; the
    // library it builds is read back and staged with the other outputs. An
    // output folder that is missing or read-only is the output's problem,
    // said before nvcc spends minutes (as writing the outputs would say it).
    std::string error;
    NvccFailure failure;
    size_t slash = cuPath.find_last_of('/');
    std::string outDir = slash == std::string::npos ? "." : cuPath.substr(0, slash + 1);
    std::string workDir;
    if (::access(outDir.c_str(), W_OK | X_OK) != 0) {
      error = std::strerror(errno);
    } else {
      const char* tmp = std::getenv("TMPDIR");
      workDir = makePrivateDirectory(
          std::string(tmp != nullptr && tmp[0] == '/' ? tmp : "/tmp") + "/tritonc-nvcc", &error);
    }
    std::string cuTemp = workDir + "/kernels.cu";
    std::string built = workDir + "/kernels.so";
    // All removed if a signal ends tritonc (and nvcc with it) meanwhile.
    if (!workDir.empty()) {
      removeFileOnSignal(workDir);
      removeFileOnSignal(cuTemp);
      removeFileOnSignal(built);
    }
    bool written = !workDir.empty() &&
                   writeFileAtomically(cuTemp, stampCuda(result.cu, baseName(name), fileStem(name)),
                                       &error);
    std::optional<std::string> library;
    if (written) {
      failure = runNvcc(options, nvcc, workDir, baseName(cuPath));
      if (failure.reason.empty() && !(library = readWholeFile(built))) {
        failure.reason = fmt::format("its library could not be read: {}", std::strerror(errno));
      }
    }
    if (!workDir.empty()) {
      for (const std::string& file : {cuTemp, built}) {
        ::unlink(file.c_str());
        keepFileOnSignal(file);
      }
      removePath(workDir);  // ours alone: whatever nvcc may have left in it
      keepFileOnSignal(workDir);
    }
    if (!written || !failure.reason.empty()) {
      // (A folder for nvcc that could not be made, in a full or read-only
      // $TMPDIR, is an environment error too.)
      if (!written) diags.reportForPath(Diag::CannotWriteFile, "", cuPath, error).about(cuPath);
      else {
        auto builder = diags.reportForPath(Diag::NvccFailed, "", cuPath, nvcc, failure.reason);
        builder.about(cuPath);
        for (const std::string& line : failure.lines) builder.note(Note::ToolOutput, "nvcc", line);
        builder.note(Note::DumpCudaSource);
      }
      for (FileResult& other : results) other.library.reset();
      return false;
    }
    auto spent = static_cast<uint64_t>(monotonicNs() - start);
    if (objectKey) {
      ScopedTimer store(timings, "cache store (L3)", cuPath);
      cache.store(cache::Level::L3, *objectKey, cache::packBlobs({{"so", *library}}), spent);
    }
    result.library = std::move(library);
  }
  return true;
}

// An L2 entry's checked IR: the whole file's ("ir"), or that of the groups
// it was compiled in ("groups", compileInGroups); an empty view when the
// payload is neither.
struct CheckedIRBlob {
  std::string_view form;
  std::string_view diagnostics;
  std::string_view bytes;
};
CheckedIRBlob checkedIRBlob(const cache::Entry& entry) {
  Expected<cache::BlobViews> blobs = cache::unpackBlobs(entry.payload);
  if (!blobs || blobs->size() != 2 || (*blobs)[0].first != "diagnostics" ||
      ((*blobs)[1].first != "ir" && (*blobs)[1].first != "groups")) {
    return {};
  }
  return {(*blobs)[1].first, (*blobs)[0].second, (*blobs)[1].second};
}

// An L2 hit: the checked IR of a previous compile (with its own interner).
// An entry of a file compiled in groups goes to `groups` when the compile
// can finish from it (`groupsUsable`), and is a miss otherwise.
std::optional<ir::Module> loadCheckedIR(cache::Cache& cache, const cache::Key& key,
                                        const SourceBuffer& source, DiagnosticEngine& diags,
                                        std::unique_ptr<Interner>& interner,
                                        std::vector<Diagnostic>& recorded, Timings* timings,
                                        bool groupsUsable,
                                        std::optional<cache::Entry>& groups) {
  int64_t start = monotonicNs();
  std::optional<cache::Entry> entry =
      lookupEntry(cache, cache::Level::L2, key, source, timings, [&](const cache::Entry& e) {
        return groupsUsable || checkedIRBlob(e).form != "groups";
      });
  if (!entry) {
    return std::nullopt;
  }
  // A payload that does not decode (checksummed, so written wrong) is
  // counted corrupt and removed, as a damaged file is.
  auto damaged = [&] {
    discardCorrupt(cache, cache::Level::L2, *entry, source, "its checked IR does not decode");
    return std::nullopt;
  };
  CheckedIRBlob blob = checkedIRBlob(*entry);
  if (blob.form == "groups") {
    // Compiled in groups only when nothing was reported: its diagnostics are
    // none. What the hit saved is counted once the groups are finished.
    Expected<std::vector<Diagnostic>> none = decodeDiagnostics(blob.diagnostics, source);
    if (!none || !none->empty()) {
      return damaged();
    }
    groups = std::move(entry);
    return std::nullopt;
  }
  ScopedTimer timer(timings, "IR deserialization", source.name());
  if (blob.form != "ir") {
    return damaged();
  }
  auto fresh = std::make_unique<Interner>();
  Expected<ir::Module> module = ir::deserialize(blob.bytes, *fresh);
  if (!module) {
    return damaged();
  }
  std::vector<Diagnostic> replayed;
  if (!replayDiagnostics(blob.diagnostics, source, diags, &replayed)) {
    return damaged();
  }
  recorded = std::move(replayed);
  interner = std::move(fresh);
  addSaved(cache, cache::Level::L2, *entry, start);
  return std::move(*module);
}

// The cache's lookups of this run for --timing: "cache: l3 1 hit(s), 0
// miss(es); hit rate 100.0%", and the same as JSON.
Timings::Section cacheSection(const cache::Cache& cache) {
  std::string text = "cache:";
  std::string json = "{";
  uint64_t hits = 0, lookups = 0;
  for (cache::Level level : cache::kLevels) {
    const cache::LevelCounters& c = cache.sessionCounters().levels[static_cast<int>(level)];
    json += fmt::format("{}\"{}\":{{\"hits\":{},\"misses\":{},\"corrupt\":{},\"stores\":{}}}",
                        json.size() > 1 ? "," : "", levelName(level), c.hits, c.misses,
                        c.corrupt, c.stores);
    if (c.hits + c.misses == 0) continue;
    text += fmt::format(" {} {} hit(s), {} miss(es){};", levelName(level), c.hits, c.misses,
                        c.corrupt ? fmt::format(", {} corrupt", c.corrupt) : "");
    // Each lookup once, as `cache stats` totals them: an L1 miss goes on to
    // disk, where L2 or L3 counts it.
    hits += c.hits;
    lookups += c.hits + (level == cache::Level::L1 ? 0 : c.misses);
  }
  double rate = lookups ? static_cast<double>(hits) / static_cast<double>(lookups) : 0.0;
  text = lookups == 0 ? "cache: no lookups" : text + fmt::format(" hit rate {:.1f}%", 100.0 * rate);
  json += lookups == 0 ? ",\"hit_rate\":null}" : fmt::format(",\"hit_rate\":{:.4f}}}", rate);
  return {"cache", text, json};
}

// The pipeline's phases this compile asks for (by --stop-after and --target)
// that did not run because the cache had their results, for --timing:
// "not run (their results came from the cache): lexer, parser, ...". A report
// that silently lacked them would read as a compiler without a lexer.
std::optional<Timings::Section> skippedSection(const Timings& timings,
                                               const CompileOptions& options) {
  Stage last = options.stopAfter.value_or(Stage::Emit);
  std::vector<std::pair<Stage, const char*>> phases = {
      {Stage::Lex, "lexer"},           {Stage::Parse, "parser"},
      {Stage::Check, "type checker"},  {Stage::Ir, "IR generation"},
      {Stage::Opt, "optimizer"},       {Stage::Emit, "PyTorch emitter"}};
  if (options.target != "pytorch") phases.push_back({Stage::Emit, "CUDA emitter"});
  std::vector<std::string> skipped;
  for (const auto& phase : phases) {
    if (phase.first > last) continue;
    std::string_view label = phase.second;
    bool ran = std::any_of(timings.events().begin(), timings.events().end(),
                           [label](const Timings::Event& e) { return e.label == label; });
    if (!ran) skipped.push_back(std::string(label));
  }
  if (skipped.empty()) return std::nullopt;
  std::string text = "not run (their results came from the cache):";
  std::string json = "[";
  for (size_t i = 0; i < skipped.size(); ++i) {
    text += fmt::format("{} {}", i ? "," : "", skipped[i]);
    json += fmt::format("{}\"{}\"", i ? "," : "", skipped[i]);
  }
  return Timings::Section{"skipped_phases", text, json + "]"};
}

// Runs the pipeline on every input up to `lastStage`; returns the exit code.
// `shared` is a cache kept open across runs (`watch`), else one is opened.
// A path as the file system resolves it: the real path of its directory and
// its name (the file itself may not exist yet). `dirs` remembers the
// directories resolved so far (the inputs and outputs of a compile mostly
// share one or two).
std::string resolvedPath(const std::string& path,
                         std::unordered_map<std::string, std::string>& dirs) {
  size_t slash = path.find_last_of('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  auto [it, inserted] = dirs.try_emplace(dir);
  if (inserted) {
    char buffer[PATH_MAX];
    if (::realpath(dir.c_str(), buffer) != nullptr) it->second = buffer;
  }
  return it->second.empty() ? path : it->second + "/" + name;
}

// The file an output path writes: a symlink there is written through (the
// file it names, a dangling one's too); the path itself when its links cannot
// be followed (writing it then fails and says why).
std::string writtenFile(const std::string& path) {
  Expected<std::string> target = followSymlinks(path);
  return target ? std::move(*target) : path;
}

// A file's identity: device and inode, so that another name of a file (a
// hard link, a symlink) is known as that file. nullopt when it does not
// exist.
std::optional<std::pair<dev_t, ino_t>> deviceAndInode(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return std::pair(st.st_dev, st.st_ino);
}

// A file a compile writes when it succeeds, and what writes it.
struct PlannedOutput {
  std::string path;
  std::string what;    ///< "the module of 'm.tri'", for diagnostics
  bool trace = false;  ///< the --time-trace file
};

// Every file a compile writes when it succeeds: each input's module (and with
// the CUDA target its .cu and .so), the time trace.
std::vector<PlannedOutput> outputsOf(const CompileOptions& options) {
  std::vector<PlannedOutput> outputs;
  bool cuda = options.target != "pytorch";
  for (const std::string& input : options.inputs) {
    std::string quoted = "'" + input + "'";
    outputs.push_back({outputPathFor(options, input), "the module of " + quoted});
    if (cuda) {
      outputs.push_back({cudaPathFor(options, input, ".cu"), "the CUDA source of " + quoted});
      outputs.push_back({cudaPathFor(options, input, ".so"), "the CUDA library of " + quoted});
    }
  }
  if (options.timeTrace) {
    outputs.push_back({traceName(options),
                       "the time trace", true});
  }
  if (options.depfile) {
    for (const std::string& input : options.inputs) {
      outputs.push_back({depfilePathFor(options, input),
                         "the dependency file of '" + input + "'"});
    }
  }
  return outputs;
}

// Whether an output would replace one of `sources` (the inputs, or the
// files they import); reports it. An output is the same file as a source
// when its path resolves to the source's (`-o ./m.tri`, through a symlinked
// directory, or a symlink at the output path, which is written through) or
// when it is another name of the source's file (a hard link, or an input
// that is a symlink to the output path), as gcc compares them.
bool outputOverwritesSource(const std::vector<PlannedOutput>& outputs,
                            const std::vector<std::string>& sources, std::string_view kind,
                            DiagnosticEngine& diags) {
  std::unordered_map<std::string, std::string> dirs;  // for resolvedPath
  std::unordered_map<std::string, const std::string*> byPath;  // resolved path -> as given
  std::map<std::pair<dev_t, ino_t>, const std::string*> byIdentity;
  for (const std::string& source : sources) {
    if (isStandardInput(source)) continue;  // not a file an output can replace
    byPath.emplace(resolvedPath(source, dirs), &source);
    if (auto id = deviceAndInode(source)) byIdentity.emplace(*id, &source);
  }
  for (const auto& [path, what, trace] : outputs) {
    if (path == "-") continue;  // standard output
    std::string written = writtenFile(path);
    auto input = byPath.find(resolvedPath(written, dirs));
    const std::string* source = input != byPath.end() ? input->second : nullptr;
    if (source == nullptr) {
      auto id = deviceAndInode(written);
      auto same = id ? byIdentity.find(*id) : byIdentity.end();
      if (same != byIdentity.end()) source = same->second;
    }
    if (source != nullptr) {
      diags.reportForPath(Diag::OutputOverwritesInput, "", path,
                          fmt::format("the {} '{}'", kind, *source))
          .about(path);
      return true;
    }
  }
  return false;
}

// The flags that print a stage's dump to standard output, with the stage that
// makes it: one table for the check that --stop-after reaches the stage and for
// the check that the module does not share standard output with a dump.
struct DumpFlag {
  bool CompileOptions::*on;
  const char* flag;
  Stage stage;
  const char* what;  // the work that makes the dump, for DumpNotReached
};
constexpr DumpFlag kDumpFlags[] = {
    {&CompileOptions::dumpTokens, "--dump-tokens", Stage::Lex, "lexing"},
    {&CompileOptions::dumpAst, "--dump-ast", Stage::Parse, "parsing"},
    {&CompileOptions::dumpTypes, "--dump-types", Stage::Check, "type checking"},
    {&CompileOptions::dumpIr, "--dump-ir", Stage::Ir, "IR generation"},
    {&CompileOptions::printAfterAll, "--print-after-all", Stage::Opt, "optimization"},
    {&CompileOptions::dumpCode, "--dump-code", Stage::Emit, "code generation"},
};

// Before any work: no output may overwrite an input (`-o model.tri`), and no
// two outputs may be one file (inputs with the same stem, a .py named like
// the .cu, the trace named like either). False after a diagnostic.
bool outputsAreDistinct(const CompileOptions& options, DiagnosticEngine& diags) {
  if (options.inputs.size() > 1 && !options.depfilePath.empty()) {
    diags.reportForPath(Diag::CommandLine, "",
                        "-MF names one dependency file; with several inputs write -MD, which "
                        "writes one next to each module");
    return false;
  }
  // Several inputs write into the -o directory: a file there is a usage error
  // found now, not a write that fails after the compile.
  if (options.inputs.size() > 1 && options.output == "-") {
    diags.reportForPath(Diag::CommandLine, "",
                        "-o - writes one module to standard output; with several inputs -o "
                        "names the directory their modules go to");
    return false;
  }
  // The module on standard output (`-o -`, or `compile -` as a filter) and a dump there
  // too would be one stream that is neither: a usage error, not a module with an IR dump
  // in it (exit 0 before).
  if (options.inputs.size() == 1 && !options.stopAfter &&
      (options.output == "-" || (options.output.empty() && isStandardInput(options.inputs[0])))) {
    for (const DumpFlag& dump : kDumpFlags) {
      if (!(options.*dump.on)) continue;
      diags.reportForPath(
          Diag::CommandLine, "",
          fmt::format("{} prints to standard output, where the module goes ({}); write the "
                      "module to a file with -o FILE, or add --stop-after=emit to print only "
                      "the dump",
                      dump.flag, options.output == "-" ? "-o -" : "the input is standard input"));
      return false;
    }
  }
  struct stat st {};
  if (options.inputs.size() > 1 && !options.output.empty() &&
      ::stat(options.output.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) {
    diags.reportForPath(Diag::CommandLine, "",
                        fmt::format("-o '{}' is a file, but with several inputs -o names the "
                                    "directory their modules go to",
                                    options.output));
    return false;
  }
  // `-o out.py` of several inputs that does not exist yet: a directory named
  // like a module (TOOLCHAIN.md), which is probably not what was meant.
  if (options.inputs.size() > 1 && options.output.size() > 3 &&
      options.output.compare(options.output.size() - 3, 3, ".py") == 0 &&
      ::stat(options.output.c_str(), &st) != 0) {
    diags.reportForPath(Diag::OutputDirectoryNamedLikeFile, "", options.output);
  }
  std::vector<PlannedOutput> outputs = outputsOf(options);
  if (outputOverwritesSource(outputs, options.inputs, "input", diags)) return false;
  std::unordered_map<std::string, std::string> dirs;  // for resolvedPath
  std::unordered_map<std::string, const std::string*> claimed;  // resolved path -> what
  for (const auto& [path, what, trace] : outputs) {
    // Two names of one file through a link (`t.json -> m.py`) are one output.
    auto [it, inserted] = claimed.emplace(resolvedPath(writtenFile(path), dirs), &what);
    if (!inserted) {
      diags.reportForPath(Diag::OutputsCollide, "", path, *it->second, what).about(path);
      return false;
    }
  }
  return true;
}

// Whether `path` holds what a compile writes: a module or CUDA source with
// tritonc's header, or a shared library. Only those are removed when a
// compile fails.
bool looksGenerated(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char head[128] = {};
  ssize_t n = ::read(fd, head, sizeof head - 1);
  ::close(fd);
  std::string_view text(head, n > 0 ? static_cast<size_t>(n) : 0);
  static_assert(Timings::kChromeTraceHead.size() < sizeof head);
  return text.starts_with("# Generated by tritonc") ||
         text.starts_with("// Generated by tritonc") || text.starts_with("\x7f" "ELF") ||
         text.starts_with(Timings::kChromeTraceHead);
}

// A compile that fails (exit 1 or 3) leaves no output of an earlier compile
// at the paths it would have written, as clang removes its output file: a
// module, or a time trace a CI job uploads, found there after a failure
// would look like this compile's. Only files tritonc generated are removed.
void removeStaleOutputs(const CompileOptions& options) {
  for (const PlannedOutput& output : outputsOf(options)) {
    if (output.path == "-") continue;
    // What a link named by -o points to: the file the compile wrote through it.
    std::string target = writtenFile(output.path);
    if (looksGenerated(target)) ::unlink(target.c_str());
  }
}

int runFrontEnd(const CompileOptions& options, Stage lastStage, cache::Cache* shared,
                std::vector<std::string>* dependencies = nullptr) {
  setLogLevel(options.debug ? LogLevel::Debug : options.verbose ? LogLevel::Verbose : LogLevel::Off,
              options.diagnosticsFormat == DiagnosticsFormat::Json);
  std::unique_ptr<DiagnosticConsumer> printer = makeConsumer(options);
  SortingDiagnosticConsumer sorter(*printer);
  DiagnosticEngine diags(sorter, DiagnosticOptions{options.warningsAsErrors, options.quiet,
                                                   options.errorLimit});
  std::unique_ptr<Timings> timings;
  if (options.timing || options.timeTrace) {
    timings = std::make_unique<Timings>();
  }

  if (logEnabled(LogLevel::Verbose)) {
    std::string pipeline;
    for (Stage stage = Stage::Lex;; stage = static_cast<Stage>(static_cast<int>(stage) + 1)) {
      pipeline += pipeline.empty() ? "" : " -> ";
      pipeline += stageName(stage);
      if (stage == lastStage) {
        break;
      }
    }
    logMessage(LogLevel::Verbose, "pipeline: " + pipeline);
  }

  // A dump of a stage that --stop-after never reaches would print nothing:
  // said once, as clang's "argument unused during compilation" (a warning
  // of the command line, which -Werror leaves alone).
  {
    for (const DumpFlag& dump : kDumpFlags) {
      if (options.*dump.on && lastStage < dump.stage) {
        DiagnosticEngine(*printer, DiagnosticOptions{false, options.quiet, 0})
            .reportForPath(Diag::DumpNotReached, "", dump.flag, stageName(lastStage), dump.what);
      }
    }
    // -O0's pipeline is empty (not even strip-checks: -O0 keeps the run-time
    // shape checks), so there is no "after" to print.
    if (options.printAfterAll && lastStage >= Stage::Opt &&
        pipelineFor(options.optLevel).empty()) {
      DiagnosticEngine(*printer, DiagnosticOptions{false, options.quiet, 0})
          .reportForPath(Diag::NoPassesToPrint, "", std::string(1, options.optLevel));
    }
  }

  // Read every input first: a missing file (or a directory) is a usage error,
  // reported before any work is done; a file that is there but cannot be
  // read (permissions, an I/O error) is the environment's.
  std::vector<SourceBuffer> sources;
  sources.reserve(options.inputs.size());
  {
    ScopedTimer timer(timings.get(), "read inputs");
    int failed = kExitSuccess;
    if (std::count(options.inputs.begin(), options.inputs.end(), "-") > 1) {
      diags.reportForPath(Diag::CommandLine, "",
                          "'-' (standard input) is given more than once; it can be read once");
      sorter.flush();
      return kExitUsageError;
    }
    for (const std::string& path : options.inputs) {
      Expected<SourceBuffer> source =
          path == "-" ? SourceBuffer::readStandardInput() : SourceBuffer::readFile(path);
      if (!source) {
        diags.reportForPath(Diag::CannotReadFile, "", source.error().message).about(path);
        struct stat info {};
        // (Standard input that cannot be read, closed by the caller, is the
        // environment's: exit 3, not a missing file named "-".)
        bool usage = path != "-" && (::stat(path.c_str(), &info) == 0
                                         ? S_ISDIR(info.st_mode)
                                         : errno == ENOENT || errno == ENOTDIR);
        failed = std::max<int>(failed, usage ? kExitUsageError : kExitInternalError);
        continue;
      }
      sources.push_back(std::move(*source));
    }
    if (failed != kExitSuccess) {
      sorter.flush();
      return failed;
    }
  }
  if (lastStage == Stage::Emit && !options.stopAfter && !outputsAreDistinct(options, diags)) {
    sorter.flush();
    return kExitUsageError;
  }

  // The cache: an unusable one that the user named (--cache-dir,
  // $TRITONC_CACHE_DIR, cache.dir) is an environment error, exit 3
  // (TOOLCHAIN.md: "cache unusable"); the default location unusable (a
  // read-only home) is a warning, never promoted by -Werror, and the compile
  // goes on without it.
  cache::Cache own;
  std::string cacheChosenBy;
  bool useShared = shared != nullptr && cacheable(options, lastStage);
  cache::Cache& cache = useShared ? *shared : own;
  if (!useShared && cacheable(options, lastStage)) {
    ScopedTimer timer(timings.get(), "cache open");
    cache::Settings settings = cache::resolveSettings(options.cacheDir, options.noCache);
    DiagnosticEngine environment(*printer, DiagnosticOptions{false, options.quiet, 0});
    if (!settings.configWarning.empty()) {
      environment.reportForPath(Diag::ConfigIgnored, "", settings.configWarning)
          .about(cache::configPath());
    }
    own = cache::Cache::open(settings);
    cacheChosenBy = settings.chosenBy;
    if (!cache.warning().empty() && !cacheChosenBy.empty()) {
      diags.reportForPath(Diag::CacheDirUnusable, "", cache.warning(), cacheChosenBy);
      sorter.flush();
      return kExitInternalError;
    }
    if (!cache.warning().empty()) {
      environment.reportForPath(Diag::CacheUnavailable, "", cache.warning());
    }
    if (sources.size() > 1) {
      cache.enableMemoryLevel();
    }
    logMessage(LogLevel::Verbose, cache.enabled() ? "cache: " + cache.dir()
                                  : settings.disabledBy.empty()
                                      ? std::string("cache: off")
                                      : "cache: off (" + settings.disabledBy + ")");
  }
  bool cacheWorked = cache.enabled();
  NvccLookup nvccFound;
  std::string nvcc;  // identity, for the L3 keys of the CUDA target
  if (options.target != "pytorch") {
    nvccFound = lookUpNvcc(options);
    nvcc = nvccIdentity(nvccFound);
  }

  Interner interner;
  // Each input loads its imports with a loader of its own, as each -j worker
  // does: a loader shared by the inputs of one command listed every file it
  // had loaded as the next input's imports (its -MD rule), named a file one
  // input imported as another had spelled it (-O0's messages), and reported
  // an imported file's errors only for the first input importing it (audit
  // 46E). Kept to the end: diagnostics point into the files they hold.
  std::vector<std::unique_ptr<ImportLoader>> loaders;
  std::vector<FileResult> results;
  results.reserve(sources.size());
  bool multipleFiles = sources.size() > 1;
  results.resize(sources.size());
  // One file's compile: everything it touches comes in `file` (a worker of -j
  // has its own diagnostics, identifiers, imports and timings).
  struct FileContext {
    DiagnosticEngine& diags;
    Interner& interner;
    ImportLoader& loader;
    Timings* timings;
    std::function<void()> flush;  ///< prints what was reported so far
  };
  // -j's threads: one file per job; the jobs left over when there are fewer
  // files than that help emit each file's layers.
  unsigned requestedJobs = options.jobs != 0 ? options.jobs
                                             : std::max(1u, std::thread::hardware_concurrency());
  unsigned emitJobs = std::max(1u, requestedJobs / static_cast<unsigned>(sources.size()));
  bool dumps = options.dumpTokens || options.dumpAst || options.dumpTypes || options.dumpIr ||
               options.dumpCode || options.printAfterAll;
  auto compileFile = [&](const SourceBuffer& source, FileResult& result, FileContext& job) -> int {
    DiagnosticEngine& fdiags = job.diags;
    Interner& finterner = job.interner;
    ImportLoader& floader = job.loader;
    Timings* ftimings = job.timings;
    auto flushDiagnostics = [&] { job.flush(); };
    logMessage(LogLevel::Verbose, "processing " + source.name());
    result.source = &source;
    int64_t fileStart = monotonicNs();
    size_t fileErrorsStart = fdiags.errorCount();
    std::vector<Diagnostic> recorded;
    // The recorder points into this iteration's `recorded`: never past it.
    struct RecorderReset {
      DiagnosticEngine& engine;
      ~RecorderReset() { engine.setRecorder(nullptr); }
    } recorderReset{fdiags};
    // Imports are found first: every imported file is part of the keys.
    std::optional<std::vector<ImportEdge>> imports;
    std::vector<int> importOrder;
    bool importsFailed = false;
    bool importsClean = true;  // loading them reported nothing
    std::optional<TokenizedBuffer> earlyTokens;
    CollectingDiagnosticConsumer heldLexerDiagnostics;
    if (lastStage >= Stage::Check && mayImport(source)) {
      // Lexed once: its diagnostics are held back until the pipeline would
      // have reported them (an L3 hit replays its own).
      {
        ScopedTimer timer(ftimings, "lexer", source.name());
        DiagnosticEngine held(heldLexerDiagnostics);
        earlyTokens.emplace(lex(source, finterner, held));
      }
      if (!importPaths(*earlyTokens).empty()) {
        ScopedTimer timer(ftimings, "imports", source.name());
        size_t reported = fdiags.errorCount() + fdiags.warningCount();
        imports = floader.load(source, *earlyTokens, fdiags, importOrder, ftimings);
        importsFailed = !imports;
        importsClean = fdiags.errorCount() + fdiags.warningCount() == reported;
        for (int i = 0; i < floader.fileCount(); ++i) {
          result.imported.push_back(floader.file(i).source->name());
        }
        if (dependencies != nullptr) {
          dependencies->insert(dependencies->end(), result.imported.begin(),
                               result.imported.end());
        }
      }
    }
    std::string keyText = imports ? std::string(source.text()) +
                                          importsKeyText(*imports, importOrder, floader)
                                  : std::string();
    std::string_view keySource = imports ? std::string_view(keyText) : source.text();
    std::optional<cache::Key> l2Key;
    if (cache.enabled() && !importsFailed) {
      // The imported files' run-time checks name them (the checked IR and
      // -O0's code have them).
      std::string importedNames;
      if (imports) {
        for (int index : importOrder) importedNames += floader.file(index).source->name() + '\n';
      }
      cache::Key l3 = generatedCodeKey(options, keySource, compilerIdentity(), nvcc,
                                       source.name(), importedNames);
      if (loadGeneratedCode(cache, l3, source, fdiags, result, ftimings)) {
        flushDiagnostics();
        return kExitSuccess;
      }
      std::vector<std::string> importedFiles = std::move(result.imported);
      result = FileResult{};
      result.source = &source;
      result.imported = std::move(importedFiles);
      result.l3Key = l3;
      // --incremental: only the declarations that changed since the file's
      // last compile go through the pipeline.
      if (options.incremental && lastStage == Stage::Emit) {
        IncrementalResult incremental;
        if (options.target != "pytorch") {
          incremental.why = "the CUDA target is compiled in full";
        } else if (options.optLevel == 's') {
          // merge-functions compares every declaration with every other.
          incremental.why = "-Os defines identical declarations by one another";
        } else if (imports && !importsClean) {
          incremental.why = "an imported file has diagnostics";
        } else {
          std::optional<IncrementalImports> imported;
          if (imports) imported.emplace(IncrementalImports{*imports, importOrder, floader});
          // Tokens the import scan already made are reused (clean ones only:
          // lexical diagnostics send the file to the full pipeline anyway).
          bool lexedClean = earlyTokens && heldLexerDiagnostics.diagnostics.empty();
          incremental = compileIncrementally(options, source, cache, finterner,
                                             lexedClean ? &*earlyTokens : nullptr, ftimings,
                                             imported ? &*imported : nullptr);
        }
        if (incremental.compiled) {
          logMessage(LogLevel::Verbose,
                     fmt::format("incremental: {}: {} of {} declaration(s) changed, {} "
                                 "recompiled, {} reused{}",
                                 source.name(), incremental.changed, incremental.units,
                                 incremental.recompiled, incremental.units - incremental.recompiled,
                                 incremental.reread == 0
                                     ? std::string()
                                     : fmt::format(" ({} read again for the changed ones' "
                                                   "signatures and inlining)",
                                                   incremental.reread)));
          result.py = std::move(incremental.py);
          result.compiled = true;
          // The pieces serve the next compile: an L3 entry of the whole
          // module as well would only cost its compression.
          result.l3Key.reset();
          result.computeNs = static_cast<uint64_t>(monotonicNs() - fileStart);
          flushDiagnostics();
          return kExitSuccess;
        }
        logMessage(LogLevel::Verbose, fmt::format("incremental: {}: compiled in full ({})",
                                                  source.name(), incremental.why));
      }
      l2Key = checkedIRKey(options, keySource, compilerIdentity(), importedNames);
      fdiags.setRecorder(&recorded);
    }
    std::unique_ptr<Interner> cachedInterner;
    std::optional<ir::Module> module;
    Stage fileLast = lastStage;  // later than lastStage for a deep file's `check`
    // Another worker checking the same program is waited for: its IR is
    // then an L1 hit instead of a second compile.
    std::optional<cache::Cache::Claim> l2Claim;
    // A big file may be compiled in parallel groups of its models (below),
    // or finished from such groups' checked IR in L2: with jobs left over to
    // it, their threads start now, while the file is read or lexed.
    bool groupable = !imports && !importsFailed && options.target == "pytorch" &&
                     options.optLevel != 's' && !dumps &&
                     (lastStage == Stage::Emit || lastStage == Stage::Check) &&
                     source.text().size() >= kMinBytesForGroups;
    std::optional<Workers> groupWorkers;
    if (groupable && emitJobs >= 2 && !options.lowMemory) {
      groupWorkers.emplace(std::min(emitJobs, kMaxGroups) - 1);
    }
    if (l2Key) {
      l2Claim.emplace(cache.claim(cache::Level::L2, *l2Key));
      int64_t l2Start = monotonicNs();
      std::optional<cache::Entry> groupsEntry;
      module = loadCheckedIR(cache, *l2Key, source, fdiags, cachedInterner, recorded, ftimings,
                             groupable && lastStage == Stage::Emit, groupsEntry);
      if (groupsEntry) {
        GroupsResult groups = compileStoredGroups(
            options, checkedIRBlob(*groupsEntry).bytes, source.name(),
            groupWorkers ? &*groupWorkers : nullptr, ftimings, source.text().size());
        if (groups.compiled) {
          // The entry's time less the hit's (which optimized and emitted again).
          addSaved(cache, cache::Level::L2, *groupsEntry, l2Start);
          logMessage(LogLevel::Verbose,
                     fmt::format("{}: {} declaration(s) compiled from L2 in {} parallel groups "
                                 "({} compiled in all)",
                                 source.name(), groups.units, groups.groups,
                                 groups.compiledUnits));
          result.py = std::move(groups.py);
          result.compiled = true;
          result.computeNs = static_cast<uint64_t>(monotonicNs() - fileStart);
          flushDiagnostics();
          return kExitSuccess;
        }
        logMessage(LogLevel::Verbose, fmt::format("{}: not finished from L2 ({})", source.name(),
                                                  groups.why));
        cache.rejectHit(cache::Level::L2, *groupsEntry, groups.damaged);
        // A group that failed at this level fails the same in a fresh split:
        // the pipeline below compiles the file whole and reports it.
        if (!groups.damaged) groupWorkers.reset();
      }
      if (module) l2Claim.reset();
    }
    if (!module) {
      size_t reportedBeforeLexing = fdiags.errorCount() + fdiags.warningCount();
      std::optional<TokenizedBuffer> tokens;
      if (earlyTokens) {
        for (Diagnostic& d : heldLexerDiagnostics.diagnostics) fdiags.replay(std::move(d));
        tokens = std::move(earlyTokens);
      } else {
        ScopedTimer timer(ftimings, "lexer", source.name());
        tokens.emplace(lex(source, finterner, fdiags));
      }
      if (options.dumpTokens) {
        if (multipleFiles) {
          writeStandardOutput("# file: " + source.name() + "\n");
        }
        writeStandardOutput(tokens->dump());
      }
      if (lastStage == Stage::Lex) {
        flushDiagnostics();
        return kExitSuccess;
      }
      // The file's models compiled in parallel groups, when the file splits
      // cleanly (nothing is reported then; anything else falls through to
      // the pipeline below).
      if (groupWorkers &&
          fdiags.errorCount() + fdiags.warningCount() == reportedBeforeLexing) {
        // With the cache, the groups' checked IR goes to L2 for a later
        // compile at another level (written straight into the payload).
        std::string payload;
        std::optional<cache::BlobWriter> blobs;
        if (l2Key) {
          blobs.emplace(payload);
          blobs->add("diagnostics", encodeDiagnostics(recorded));
        }
        GroupsResult groups = compileInGroups(options, lastStage, *tokens, *groupWorkers,
                                              ftimings, blobs ? &blobs->begin("groups") : nullptr);
        if (groups.compiled) {
          logMessage(LogLevel::Verbose,
                     fmt::format("{}: {} declaration(s) compiled in {} parallel groups ({} "
                                 "compiled in all)",
                                 source.name(), groups.units, groups.groups,
                                 groups.compiledUnits));
          if (blobs) {
            ScopedTimer timer(ftimings, "cache store (L2)", source.name());
            blobs->end();
            blobs->finish();
            // Compressed by the groups' threads already.
            cache.store(cache::Level::L2, *l2Key, payload,
                        static_cast<uint64_t>(monotonicNs() - fileStart), /*compress=*/false);
            l2Claim.reset();
          }
          result.py = std::move(groups.py);
          result.compiled = true;
          result.computeNs = static_cast<uint64_t>(monotonicNs() - fileStart);
          flushDiagnostics();
          return kExitSuccess;
        }
        logMessage(LogLevel::Verbose, fmt::format("{}: compiled as one group ({})",
                                                  source.name(), groups.why));
      }
      std::optional<Tree> tree;
      {
        ScopedTimer timer(ftimings, "parser", source.name());
        tree.emplace(parse(*tokens, fdiags));
      }
      if (options.dumpAst) {
        if (multipleFiles) {
          writeStandardOutput("# file: " + source.name() + "\n");
        }
        writeStandardOutput(tree->dump());
      }
      // `check` stops after type checking, but only the emitter knows whether
      // control flow nests deeper than Python allows: a tree that deep (rare)
      // goes on through it, writing nothing, so that `check` rejects what
      // `compile` at the default level would.
      if (lastStage == Stage::Check &&
          tree->deepestItem() >= kTreeDepthNeedingEmitterCheck) {
        fileLast = Stage::Emit;
      }
      logMessage(LogLevel::Debug, fmt::format("{}: {} tokens, {} nodes", source.name(),
                                              tokens->size(), tree->size()));
      // A file with syntax errors is not type-checked: its tree has holes that
      // would only produce follow-on errors.
      if (lastStage >= Stage::Check && fdiags.errorCount() == fileErrorsStart &&
          !importsFailed) {
        // The imported files first, each after the ones it imports; the
        // first one with errors stops the program there.
        IRGenOptions irgenOptions;
        irgenOptions.runtimeShapeChecks = runtimeShapeChecks(options, l2Key.has_value());
        std::optional<ProgramBuilder> program;
        std::optional<ImportContext> context;
        if (imports) {
          program.emplace(fileLast >= Stage::Ir);
          for (int index : importOrder) {
            const ImportedFile& file = floader.file(index);
            ImportContext forFile = program->contextFor(*file.tree, file.imports, floader);
            size_t before = fdiags.errorCount();
            std::optional<CheckedModule> imported;
            {
              ScopedTimer timer(ftimings, "type checker", file.source->name());
              fdiags.pushContext(*file.source, [&, index] {
                return floader.importChain(index, source, *tokens, *imports);
              });
              imported.emplace(check(*file.tree, finterner, fdiags, &forFile));
              fdiags.popContext();
            }
            if (fdiags.errorCount() != before) break;
            program->add(index, file, *imported, irgenOptions, ftimings);
          }
          if (fdiags.errorCount() == fileErrorsStart) {
            context = program->contextFor(*tree, *imports, floader);
          }
        }
        if (fdiags.errorCount() != fileErrorsStart) {
          flushDiagnostics();
          return kExitSuccess;
        }
        std::optional<CheckedModule> checked;
        {
          ScopedTimer timer(ftimings, "type checker", source.name());
          CheckOptions checkOptions;
          checkOptions.entryByOrder = options.entry.empty();
          checked.emplace(
              check(*tree, finterner, fdiags, context ? &*context : nullptr, checkOptions));
        }
        if (!options.entry.empty()) {
          selectEntry(*checked, options.entry, source, context ? &*context : nullptr, fdiags);
        }
        if (options.dumpTypes) {
          if (multipleFiles) {
            writeStandardOutput("# file: " + source.name() + "\n");
          }
          writeStandardOutput(checked->dump());
        }
        if (fileLast >= Stage::Ir && fdiags.errorCount() == fileErrorsStart) {
          flushDiagnostics();
          if (program) {
            ScopedTimer timer(ftimings, "IR generation", source.name());
            generateIRInto(*checked, program->program(), irgenOptions);
            module = std::move(program->program());
          } else {
            module = generateModule(options, *checked, ftimings, l2Key.has_value());
          }
          // Recorded diagnostics are replayed against this file: one about an
          // imported file (a warning there) keeps the program out of the cache.
          bool replayable = std::all_of(recorded.begin(), recorded.end(),
                                        [&](const Diagnostic& d) {
                                          return d.source == nullptr || d.source == &source;
                                        });
          if (!replayable) {
            l2Key.reset();
            result.l3Key.reset();
          }
          if (l2Key) {
            ScopedTimer timer(ftimings, "cache store (L2)", source.name());
            // Serialized straight into the payload; a large one is compressed
            // and written while the optimizer runs.
            std::string payload;
            cache::BlobWriter blobs(payload);
            blobs.add("diagnostics", encodeDiagnostics(recorded));
            ir::serializeTo(*module, blobs.begin("ir"));
            blobs.end();
            blobs.finish();
            cache.storeInBackground(cache::Level::L2, *l2Key, std::move(payload),
                                    static_cast<uint64_t>(monotonicNs() - fileStart));
          }
          l2Claim.reset();  // stored, or never will be
        }
      }
    }
    if (module) {
      int status = runMiddleEnd(options, fileLast, *module, ftimings,
                                multipleFiles ? source.name() : std::string(), source,
                                fdiags, result, emitJobs);
      if (status != kExitSuccess) {
        flushDiagnostics();
        return status;
      }
    }
    fdiags.setRecorder(nullptr);
    result.compiled = result.compiled && fdiags.errorCount() == fileErrorsStart;
    result.diagnostics = std::move(recorded);
    result.computeNs = static_cast<uint64_t>(monotonicNs() - fileStart);
    flushDiagnostics();  // one file's diagnostics, in source order
    return kExitSuccess;
  };

  // Several files in parallel (-j), unless dumps ask for one stream of output.
  unsigned jobs = requestedJobs;
  jobs = std::min<unsigned>(jobs, static_cast<unsigned>(sources.size()));
  if (jobs <= 1 || dumps) {
    for (size_t i = 0; i < sources.size(); ++i) {
      loaders.push_back(std::make_unique<ImportLoader>(interner, options.includeDirs));
      FileContext file{diags, interner, *loaders.back(), timings.get(), [&] { sorter.flush(); }};
      if (int status = compileFile(sources[i], results[i], file); status != kExitSuccess) {
        sorter.flush();
        return status;
      }
    }
  } else {
    ScopedTimer parallelTimer(timings.get(), "compile files", fmt::format("-j {}", jobs));
    // Each file's diagnostics are collected as reported (before -Werror and
    // -q, which the replay applies) and printed per file in input order.
    struct Worker {
      CollectingDiagnosticConsumer collected;
      std::unique_ptr<DiagnosticEngine> diags;
      Interner interner;
      std::unique_ptr<ImportLoader> loader;
      std::unique_ptr<Timings> timings;
      int status = kExitSuccess;
      int track = 0;
    };
    std::vector<std::unique_ptr<Worker>> perFile(sources.size());
    std::atomic<size_t> next{0};
    size_t done = 0;  // files finished, under progressMutex
    // Not between JSON diagnostics: each line of stderr stays one object; not
    // on a terminal that cannot move the cursor back (TERM=dumb), as ninja.
    const char* term = std::getenv("TERM");
    bool progress = ::isatty(STDERR_FILENO) != 0 && !options.quiet &&
                    options.diagnosticsFormat != DiagnosticsFormat::Json &&
                    !(term != nullptr && std::string_view(term) == "dumb");
    // One row of the terminal: a longer line wraps, and `\r` then redraws
    // only its last row (the rows before pile up).
    size_t columns = 80;
    if (struct winsize size {}; progress && ::ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 &&
                                size.ws_col > 1) {
      columns = size.ws_col;
    }
    std::mutex progressMutex;
    auto work = [&](int track) {
      for (size_t i; (i = next.fetch_add(1)) < sources.size();) {
        auto w = std::make_unique<Worker>();
        w->diags = std::make_unique<DiagnosticEngine>(w->collected);
        w->loader = std::make_unique<ImportLoader>(w->interner, options.includeDirs);
        if (timings) w->timings = std::make_unique<Timings>();
        w->track = track;
        FileContext file{*w->diags, w->interner, *w->loader, w->timings.get(), [] {}};
        w->status = compileFile(sources[i], results[i], file);
        perFile[i] = std::move(w);
        if (progress) {
          // Counted under the lock that orders the redraws, so [6/16] never
          // follows [16/16].
          std::lock_guard<std::mutex> guard(progressMutex);
          size_t finished = ++done;
          std::string count = fmt::format("[{}/{}] ", finished, sources.size());
          std::string_view name = sources[i].name();
          size_t room = columns - 1 > count.size() + 3 ? columns - 1 - count.size() : 3;
          std::string shown(name);
          if (name.size() > room) {
            size_t from = name.size() - (room - 3);
            // Not inside a UTF-8 sequence: from its first byte on.
            while (from < name.size() && (static_cast<unsigned char>(name[from]) & 0xC0) == 0x80) {
              ++from;
            }
            shown = "..." + std::string(name.substr(from));
          }
          std::string line = "\r" + count + shown;
          line.resize(std::max<size_t>(line.size(), columns), ' ');  // \r + columns - 1
          std::fwrite(line.data(), 1, line.size(), stderr);
          std::fflush(stderr);
        }
      }
    };
    std::vector<std::thread> threads;
    for (unsigned t = 1; t < jobs; ++t) {
      try {
        threads.emplace_back(work, static_cast<int>(t) + 1);
      } catch (const std::system_error&) {
        // No more threads (a memory or process limit against -j 64): the
        // started ones take the remaining files; an uncaught throw here
        // destroyed joinable threads (std::terminate).
        break;
      }
    }
    work(1);
    for (std::thread& thread : threads) thread.join();
    if (progress) {
      std::fwrite("\r\033[K", 1, 4, stderr);  // the progress line is erased when done
    }
    int status = kExitSuccess;
    for (size_t i = 0; i < sources.size(); ++i) {
      for (Diagnostic& d : perFile[i]->collected.diagnostics) diags.replay(std::move(d));
      sorter.flush();
      if (status == kExitSuccess) status = perFile[i]->status;
      if (timings && perFile[i]->timings) {
        timings->absorb(*perFile[i]->timings, 1, perFile[i]->track);
      }
    }
    if (status != kExitSuccess) {
      return status;
    }
    // The workers' sources (imported files) must outlive their diagnostics,
    // which are printed by now.
  }
  // The dumps are complete, or the environment failed (a full disk).
  if (int error = flushStandardOutput(); error != 0) {
    diags.reportForPath(Diag::CannotWriteFile, "", "standard output", std::strerror(error));
    sorter.flush();
    return kExitInternalError;
  }

  // Errors about the command line alone (`--entry` naming no layer of a
  // valid file) are a usage error.
  int exitCode = !diags.hasErrors()          ? kExitSuccess
                 : diags.onlyUsageErrors() ? kExitUsageError
                                           : kExitSourceError;
  // `check` and --stop-after write nothing; a compile writes only when every
  // input compiled cleanly.
  bool writeOutputs = exitCode == kExitSuccess && lastStage == Stage::Emit && !options.stopAfter;
  std::vector<std::pair<std::string, std::string>> notCompiled;  // (.cu, .so) without nvcc
  // The -o directory of several inputs (or of one, `-o DIR/`) that does not
  // exist yet is made once every input compiled, with its parents, as
  // `mkdir -p`, tsc's --outDir and CMake do; a compile that fails after that
  // removes what it made (when still empty).
  struct MadeDirectories {
    std::vector<std::string> paths;
    bool keep = false;
    ~MadeDirectories() {
      if (keep) return;
      for (auto it = paths.rbegin(); it != paths.rend(); ++it) ::rmdir(it->c_str());
    }
  } madeDirectories;
  if (writeOutputs) {
    std::string dir = options.output == "-" ? std::string()
                      : options.inputs.size() > 1 ? options.output
                      : !options.output.empty() && options.output.back() == '/'
                          ? options.output
                          : std::string();
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    if (std::string error; !makeDirectories(dir, &error, &madeDirectories.paths)) {
      diags.reportForPath(Diag::CannotWriteFile, "", dir, error).about(dir);
      sorter.flush();
      return kExitInternalError;
    }
  }
  if (writeOutputs) {
    // The imports are known only now: no output may replace one either.
    std::vector<std::string> imported;
    for (const FileResult& result : results) {
      imported.insert(imported.end(), result.imported.begin(), result.imported.end());
    }
    if (!imported.empty() &&
        outputOverwritesSource(outputsOf(options), imported, "imported file", diags)) {
      sorter.flush();
      return kExitUsageError;
    }
    bool built = buildCudaLibraries(options, nvccFound, nvcc, cache, results, timings.get(),
                                    diags, notCompiled);
    sorter.flush();
    if (!built) {
      return kExitInternalError;
    }
  }
  cache.wait();  // the L2 stores still running
  // Generated code goes into the cache before the outputs are written (a
  // later failure to write an output does not make the code wrong).
  if (writeOutputs && cache.enabled()) {
    for (FileResult& result : results) {
      if (!result.compiled || !result.l3Key) continue;
      ScopedTimer timer(timings.get(), "cache store (L3)", result.source->name());
      cache::Blobs blobs = {{"diagnostics", encodeDiagnostics(result.diagnostics)},
                            {"py", result.py}};
      if (result.hasCu) blobs.emplace_back("cu", result.cu);
      cache.store(cache::Level::L3, *result.l3Key, cache::packBlobs(blobs), result.computeNs);
    }
  }
  // A store that failed (unwritable folder, disk full) turned the cache off:
  // a cache the user named is then an environment error and nothing is
  // written; the default location's is said once, and the compile goes on.
  if (cacheWorked && !cache.warning().empty() && !cacheChosenBy.empty()) {
    diags.reportForPath(Diag::CacheDirUnusable, "", cache.warning(), cacheChosenBy);
    sorter.flush();
    return kExitInternalError;
  }
  if (cacheWorked && !cache.warning().empty()) {
    DiagnosticEngine environment(*printer, DiagnosticOptions{false, options.quiet, 0});
    environment.reportForPath(Diag::CacheUnavailable, "", cache.warning());
  }
  // Every output (libraries, modules, CUDA sources, the time trace) is
  // staged in a temporary file first and put in place only when all of them
  // could be written: a failure leaves every path as it was (TOOLCHAIN.md).
  FileTransaction outputs;
  auto fail = [&](const std::string& path, const std::string& error) {
    std::string shown = path == "-" ? "standard output" : path;
    diags.reportForPath(Diag::CannotWriteFile, "", shown, error).about(shown);
    sorter.flush();
    return kExitInternalError;
  };
  if (writeOutputs) {
    ScopedTimer timer(timings.get(), "write outputs");
    // Libraries first: a module never finds a stale library next to it. A
    // CUDA source that was not compiled (no nvcc) removes the library of an
    // earlier compile: its module runs the reference path until the library
    // is built from the new source (the command is in its header).
    for (FileResult& result : results) {
      std::string so = cudaPathFor(options, result.source->name(), ".so");
      std::string error;
      if (result.library) {
        // As nvcc makes it: executable (0755 under the usual umask).
        if (!outputs.stage(so, *result.library, &error, /*executable=*/true)) {
          return fail(so, error);
        }
      } else if (result.hasCu) {
        outputs.stageRemoval(so);
      }
    }
    for (const FileResult& result : results) {
      TRITONC_CHECK(result.compiled, "writing the outputs of a file that did not compile");
      const std::string& name = result.source->name();
      std::string library = result.hasCu ? fileStem(name) + "_kernels.so" : "";
      std::string error;
      std::string py = outputPathFor(options, name);
      if (!outputs.stage(py, stampPyTorch(result.py, baseName(name), library), &error)) {
        return fail(py, error);
      }
      // A module sent to standard output or a device (`-o -`, `-o /dev/stdout`)
      // is named in the rule by its default name, `<stem>.py` (`tritonc compile
      // m.tri -o - > m.py` in a recipe), as `gcc -E -MD -o -` names `a.o`; never
      // `-` or the device, which make cannot build (gcc -c and clang write `-`).
      std::vector<std::string> written = {writesNoFile(py) ? fileStem(name) + ".py" : py};
      if (result.hasCu) {
        std::string cu = cudaPathFor(options, name, ".cu");
        if (!outputs.stage(cu, stampCuda(result.cu, baseName(name), fileStem(name)), &error)) {
          return fail(cu, error);
        }
        written.push_back(cu);
        if (result.library) {
          written.push_back(cudaPathFor(options, name, ".so"));
        }
      }
      if (options.depfile) {
        std::string d = depfilePathFor(options, name);
        std::string rule =
            dependencyRule(written, name, result.imported, options.depfilePhony, &error);
        if (!error.empty() || !outputs.stage(d, rule, &error)) {
          return fail(d, error);
        }
      }
    }
  }

  if (timings) {
    if (cacheWorked) {
      timings->addSection(cacheSection(cache));
      if (exitCode == kExitSuccess) {
        if (auto skipped = skippedSection(*timings, options)) timings->addSection(*skipped);
      }
    } else {
      timings->addSection({"cache", "cache: not used", "null"});
    }
    if (options.timing) {
      std::string report = options.timingJson ? timings->formatJson() : timings->formatTable();
      std::fwrite(report.data(), 1, report.size(), stderr);
    }
    // The trace of a compile that ran (also with --stop-after, which asks
    // for the front end's times); a failed compile writes none and removes
    // the trace of an earlier one (removeStaleOutputs).
    if (options.timeTrace && exitCode == kExitSuccess) {
      std::string path = traceName(options);
      std::string error;
      if (!outputs.stage(path, timings->formatChromeTrace(), &error)) {
        return fail(path, error);
      }
    }
  }
  std::string failedPath, error;
  if (!outputs.commit(&failedPath, &error)) {
    return fail(failedPath, error);
  }
  madeDirectories.keep = true;
  // Said only of a `.cu` that was written (when writing failed, that error
  // is the whole story).
  for (const auto& [cu, so] : notCompiled) {
    diags.reportForPath(Diag::CudaNotCompiled, "", nvccFound.notUsable, cu, so).about(cu);
  }
  sorter.flush();
  return exitCode;
}

}  // namespace

int runCompile(const CompileOptions& options) {
  int status = runFrontEnd(options, options.stopAfter.value_or(Stage::Emit), nullptr);
  // Exit 1 and 3 come after the check that no output is an input (exit 2).
  if ((status == kExitSourceError || status == kExitInternalError) && !options.stopAfter) {
    removeStaleOutputs(options);
  }
  return status;
}

int runCompileWith(const CompileOptions& options, cache::Cache& cache,
                   std::vector<std::string>* dependencies) {
  return runFrontEnd(options, options.stopAfter.value_or(Stage::Emit), &cache, dependencies);
}

int runCheck(const CompileOptions& options) {
  return runFrontEnd(options, Stage::Check, nullptr);
}

}  // namespace tritonc

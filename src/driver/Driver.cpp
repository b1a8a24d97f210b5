//===- Driver.cpp - the compilation pipeline ------------------------------===//
#include "tritonc/driver/Driver.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "Log.h"
#include "tritonc/base/Interner.h"
#include "tritonc/base/Timings.h"
#include "tritonc/diag/Diagnostics.h"
#include "tritonc/emit/Emit.h"
#include "tritonc/lex/Lex.h"
#include "tritonc/parse/Parse.h"
#include "tritonc/ir/Verifier.h"
#include "tritonc/irgen/IRGen.h"
#include "tritonc/opt/Optimizer.h"
#include "tritonc/sema/Sema.h"
#include "tritonc/source/SourceBuffer.h"

#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Program.h>

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

// The last stage this build of tritonc implements.
constexpr Stage kLastImplementedStage = Stage::Emit;

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

std::unique_ptr<DiagnosticConsumer> makeConsumer(const CompileOptions& options) {
  if (options.diagnosticsFormat == DiagnosticsFormat::Json) {
    return std::make_unique<JsonDiagnosticConsumer>(stderr);
  }
  return std::make_unique<TextDiagnosticConsumer>(stderr, useColor(options.color));
}

void writeStdout(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
}

// Writes `contents` to `path` through a temporary file and a rename, so that
// readers never see a partial file.
bool writeFileAtomically(const std::string& path, std::string_view contents, std::string* error) {
  std::string temp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    *error = std::strerror(errno);
    return false;
  }
  const char* data = contents.data();
  size_t left = contents.size();
  while (left > 0) {
    ssize_t n = ::write(fd, data, left);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      *error = std::strerror(errno);
      ::close(fd);
      ::unlink(temp.c_str());
      return false;
    }
    data += n;
    left -= static_cast<size_t>(n);
  }
  if (::close(fd) != 0 || ::rename(temp.c_str(), path.c_str()) != 0) {
    *error = std::strerror(errno);
    ::unlink(temp.c_str());
    return false;
  }
  return true;
}


// --entry NAME picks the entry layer instead of the file's last one.
void selectEntry(CheckedModule& checked, const std::string& entry, const SourceBuffer& source,
                 DiagnosticEngine& diags) {
  std::vector<std::string_view> layers;
  for (size_t i = 0; i < checked.callables.size(); ++i) {
    const CallableInfo& c = checked.callables[i];
    if (c.isFn) {
      continue;
    }
    std::string_view name = checked.interner->spelling(c.name);
    if (name == entry) {
      checked.entryLayer = static_cast<int>(i);
      return;
    }
    layers.push_back(name);
  }
  auto builder = diags.reportForPath(Diag::UnknownEntry, "", entry, source.name());
  std::string_view match = closestMatch(entry, layers);
  if (!match.empty()) {
    builder.note(Note::DidYouMean, match);
  }
}

// A generated file waiting for every input to compile cleanly.
struct PendingOutput {
  std::string path;
  std::string contents;
  /// A `<stem>_kernels.cu`: nvcc builds `<stem>_kernels.so` from it before
  /// anything is written.
  bool cudaSource = false;
};

std::string fileStem(const std::string& path) {
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

std::string defaultTraceName(const CompileOptions& options) {
  return fileStem(options.inputs.empty() ? "tritonc" : options.inputs.front()) + ".trace.json";
}

// Where the Python module of `input` goes: -o names the file for one input
// and the directory for several; the default is ./<stem>.py.
std::string outputPathFor(const CompileOptions& options, const std::string& input) {
  if (options.inputs.size() == 1 && !options.output.empty()) {
    return options.output;
  }
  std::string dir = options.output.empty() ? "." : options.output;
  if (dir.back() != '/') {
    dir += '/';
  }
  return dir + fileStem(input) + ".py";
}

// `<stem>_kernels.cu` and `.so` go next to the Python module.
std::string cudaPathFor(const CompileOptions& options, const std::string& input, const char* ext) {
  std::string py = outputPathFor(options, input);
  size_t slash = py.find_last_of('/');
  std::string dir = slash == std::string::npos ? "" : py.substr(0, slash + 1);
  return dir + fileStem(input) + "_kernels" + ext;
}

// The flags that shape the generated code, for its header comment.
std::string codeFlags(const CompileOptions& options) {
  std::string flags = fmt::format("-O{}", options.optLevel);
  if (!options.entry.empty()) {
    flags += " --entry " + options.entry;
  }
  return flags;
}

// IR generation, the optimizer and the emitter for one checked file.
int runMiddleEnd(const CompileOptions& options, Stage lastStage, const CheckedModule& checked,
                 Timings* timings, const std::string& header, const std::string& sourceName,
                 DiagnosticEngine& diags, std::vector<PendingOutput>& outputs) {
  std::optional<ir::Module> module;
  {
    ScopedTimer timer(timings, "IR generation");
    IRGenOptions irgen;
    irgen.runtimeShapeChecks = options.optLevel == '0';  // -O0 checks undecidable shapes
    module.emplace(generateIR(checked, irgen));
  }
  bool verifyEach = options.verifyEach || kDebugBuild;
  if (verifyEach) {
    std::vector<std::string> problems = ir::verify(*module);
    if (!problems.empty()) {
      problems.insert(problems.begin(), "after IR generation:");
      return reportInvalidIR(problems);
    }
  }
  auto dump = [&](const std::string& title) {
    if (!header.empty()) {
      writeStdout("# file: " + header + "\n");
    }
    if (!title.empty()) {
      writeStdout("// ----- IR after " + title + " ----- //\n");
    }
    writeStdout(module->print());
  };
  if (lastStage == Stage::Ir) {
    if (options.dumpIr) {
      dump("");
    }
    return kExitSuccess;
  }
  OptimizerOptions opt;
  opt.level = options.optLevel;
  opt.verifyEach = verifyEach;
  opt.timings = timings;
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
  std::vector<std::string> problems = optimize(*module, opt);
  if (!problems.empty()) {
    return reportInvalidIR(problems);
  }
  if (options.dumpIr) {
    dump("");
  }
  if (lastStage < Stage::Emit) {
    return kExitSuccess;
  }
  std::string code;
  {
    ScopedTimer timer(timings, "PyTorch emitter");
    EmitOptions emit{sourceName.substr(sourceName.find_last_of('/') + 1), codeFlags(options), ""};
    if (options.target != "pytorch") {
      emit.cudaLibrary = fileStem(sourceName) + "_kernels.so";
    }
    Expected<std::string> emitted = emitPyTorch(*module, emit);
    if (!emitted) {
      diags.reportForPath(Diag::TooDeepForPython, "", sourceName, emitted.error().message);
      return kExitSourceError;
    }
    code = std::move(*emitted);
  }
  if (options.dumpCode) {
    if (!header.empty()) {
      writeStdout("# file: " + header + "\n");
    }
    writeStdout(code);
  }
  if (!options.stopAfter) {
    outputs.push_back(PendingOutput{outputPathFor(options, sourceName), std::move(code)});
  }
  if (options.target != "pytorch") {
    std::string cu;
    {
      ScopedTimer timer(timings, "CUDA emitter");
      CudaEmitOptions cuda;
      cuda.sourceName = sourceName.substr(sourceName.find_last_of('/') + 1);
      cuda.flags = codeFlags(options) + " --target " + options.target;
      cuda.dtypes = options.cudaDTypes;
      cuda.variants = options.optLevel == '3' ? 3 : 1;  // -O3: variants for the auto-tuner
      std::vector<TernaryKernel> kernels = planTernaryKernels(*module);
      logMessage(LogLevel::Verbose, fmt::format("{}: {} ternary kernel(s) for the CUDA target",
                                                sourceName, kernels.size()));
      cu = emitCuda(kernels, cuda);
    }
    if (options.dumpCode) {
      writeStdout("// file: " + fileStem(sourceName) + "_kernels.cu\n");
      writeStdout(cu);
    }
    if (!options.stopAfter) {
      outputs.push_back(PendingOutput{cudaPathFor(options, sourceName, ".cu"), std::move(cu), true});
    }
  }
  return kExitSuccess;
}

// nvcc: --nvcc, $TRITONC_NVCC, PATH, then /usr/local/cuda/bin. Empty if none.
std::string findNvcc(const CompileOptions& options, std::string* searched) {
  if (!options.nvcc.empty()) {
    *searched = "--nvcc " + options.nvcc;
    return ::access(options.nvcc.c_str(), X_OK) == 0 ? options.nvcc : std::string();
  }
  if (const char* env = std::getenv("TRITONC_NVCC"); env != nullptr && *env != '\0') {
    *searched = std::string("TRITONC_NVCC=") + env;
    return ::access(env, X_OK) == 0 ? std::string(env) : std::string();
  }
  *searched = "PATH and /usr/local/cuda/bin";
  if (llvm::ErrorOr<std::string> found = llvm::sys::findProgramByName("nvcc")) {
    return *found;
  }
  const char* fallback = "/usr/local/cuda/bin/nvcc";
  return ::access(fallback, X_OK) == 0 ? std::string(fallback) : std::string();
}

// Builds `<stem>_kernels.so` from the CUDA source into `soTemp`. Returns an
// empty string on success, else what went wrong (nvcc's last lines).
std::string runNvcc(const CompileOptions& options, const std::string& nvcc, const std::string& cuTemp,
                    const std::string& soTemp) {
  std::vector<std::string> args = {nvcc, "-O3", "-std=c++17", "-shared", "-Xcompiler", "-fPIC",
                                   "-w"};
  for (const std::string& arch : options.cudaArchs) {
    args.push_back("-gencode");
    args.push_back(fmt::format("arch=compute_{0},code=sm_{0}", arch));
  }
  args.insert(args.end(), {"-o", soTemp, "-x", "cu", cuTemp});
  std::vector<llvm::StringRef> refs(args.begin(), args.end());
  std::string log = soTemp + ".log";
  llvm::Optional<llvm::StringRef> redirects[] = {llvm::None, llvm::StringRef(log), llvm::StringRef(log)};
  std::string error;
  logMessage(LogLevel::Verbose, "running " + fmt::format("{}", fmt::join(args, " ")));
  int rc = llvm::sys::ExecuteAndWait(nvcc, refs, llvm::None, redirects, 0, 0, &error);
  std::string output;
  if (llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer = llvm::MemoryBuffer::getFile(log)) {
    output = (*buffer)->getBuffer().str();
  }
  ::unlink(log.c_str());
  if (rc == 0) {
    return {};
  }
  // The last lines of nvcc's output say what failed.
  size_t keep = output.size() > 4000 ? output.size() - 4000 : 0;
  std::string reason = rc < 0 ? (error.empty() ? "it could not be run" : error)
                              : fmt::format("exit status {}", rc);
  return reason + (output.empty() ? "" : ":\n" + output.substr(keep));
}

// Compiles every pending `.cu` (when nvcc exists) into a temporary `.so` next
// to its destination. Returns false (after reporting) when nvcc fails; the
// built libraries are added to `built` as (temporary, final) path pairs.
bool buildCudaLibraries(const CompileOptions& options, const std::vector<PendingOutput>& outputs,
                        Timings* timings, DiagnosticEngine& diags,
                        std::vector<std::pair<std::string, std::string>>& built) {
  std::string searched;
  std::string nvcc;
  bool looked = false;
  for (const PendingOutput& out : outputs) {
    if (!out.cudaSource) continue;
    if (!looked) {
      nvcc = findNvcc(options, &searched);
      looked = true;
    }
    std::string so = out.path.substr(0, out.path.size() - 3) + ".so";
    if (nvcc.empty()) {
      diags.reportForPath(Diag::CudaNotCompiled, "", searched, out.path, so);
      continue;
    }
    ScopedTimer timer(timings, "nvcc", out.path);
    std::string tag = ".tmp." + std::to_string(::getpid());
    std::string cuTemp = out.path + tag + ".cu";
    std::string soTemp = so + tag;
    std::string error;
    std::string failure;
    if (!writeFileAtomically(cuTemp, out.contents, &error)) {
      failure = "cannot write " + cuTemp + ": " + error;
    } else {
      failure = runNvcc(options, nvcc, cuTemp, soTemp);
      ::unlink(cuTemp.c_str());
    }
    if (!failure.empty()) {
      ::unlink(soTemp.c_str());
      diags.reportForPath(Diag::NvccFailed, "", out.path, nvcc, ": " + failure);
      for (const auto& [temp, final] : built) ::unlink(temp.c_str());
      built.clear();
      return false;
    }
    built.emplace_back(soTemp, so);
  }
  return true;
}

// Runs lex and parse on every input up to `lastStage`; returns the exit code.
int runFrontEnd(const CompileOptions& options, Stage lastStage) {
  setLogLevel(options.debug ? LogLevel::Debug : options.verbose ? LogLevel::Verbose : LogLevel::Off);
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

  // Read every input first: a missing file is a usage error, reported before
  // any work is done.
  std::vector<SourceBuffer> sources;
  sources.reserve(options.inputs.size());
  {
    ScopedTimer timer(timings.get(), "read inputs");
    bool missing = false;
    for (const std::string& path : options.inputs) {
      Expected<SourceBuffer> source = SourceBuffer::readFile(path);
      if (!source) {
        diags.reportForPath(Diag::CannotReadFile, "", source.error().message);
        missing = true;
        continue;
      }
      sources.push_back(std::move(*source));
    }
    if (missing) {
      sorter.flush();
      return kExitUsageError;
    }
  }

  Interner interner;
  std::vector<PendingOutput> outputs;
  bool multipleFiles = sources.size() > 1;
  for (const SourceBuffer& source : sources) {
    logMessage(LogLevel::Verbose, "processing " + source.name());
    size_t fileErrorsStart = diags.errorCount();
    std::optional<TokenizedBuffer> tokens;
    {
      ScopedTimer timer(timings.get(), "lexer", source.name());
      tokens.emplace(lex(source, interner, diags));
    }
    if (options.dumpTokens) {
      if (multipleFiles) {
        writeStdout("# file: " + source.name() + "\n");
      }
      writeStdout(tokens->dump());
    }
    if (lastStage == Stage::Lex) {
      sorter.flush();
      continue;
    }
    std::optional<Tree> tree;
    {
      ScopedTimer timer(timings.get(), "parser", source.name());
      tree.emplace(parse(*tokens, diags));
    }
    if (options.dumpAst) {
      if (multipleFiles) {
        writeStdout("# file: " + source.name() + "\n");
      }
      writeStdout(tree->dump());
    }
    logMessage(LogLevel::Debug, fmt::format("{}: {} tokens, {} nodes", source.name(),
                                            tokens->size(), tree->size()));
    // A file with syntax errors is not type-checked: its tree has holes that
    // would only produce follow-on errors.
    size_t errorsBefore = fileErrorsStart;
    if (lastStage >= Stage::Check && diags.errorCount() == errorsBefore) {
      std::optional<CheckedModule> checked;
      {
        ScopedTimer timer(timings.get(), "type checker", source.name());
        checked.emplace(check(*tree, interner, diags));
      }
      if (!options.entry.empty()) {
        selectEntry(*checked, options.entry, source, diags);
      }
      if (options.dumpTypes) {
        if (multipleFiles) {
          writeStdout("# file: " + source.name() + "\n");
        }
        writeStdout(checked->dump());
      }
      if (lastStage >= Stage::Ir && diags.errorCount() == errorsBefore) {
        sorter.flush();
        if (checked->hasImports) {
          return reportNotImplemented(options, "compiling a file with 'import' past 'check'",
                                      "issue #8");
        }
        int status = runMiddleEnd(options, lastStage, *checked, timings.get(),
                                  multipleFiles ? source.name() : std::string(), source.name(),
                                  diags, outputs);
        if (status != kExitSuccess) {
          sorter.flush();
          return status;
        }
      }
    }
    sorter.flush();  // one file's diagnostics, in source order
  }
  std::fflush(stdout);

  int exitCode = diags.hasErrors() ? kExitSourceError : kExitSuccess;
  // Outputs are written only when every input compiled cleanly.
  std::vector<std::pair<std::string, std::string>> libraries;  // (temporary, final)
  if (exitCode == kExitSuccess) {
    bool built = buildCudaLibraries(options, outputs, timings.get(), diags, libraries);
    sorter.flush();
    if (!built) {
      return kExitInternalError;
    }
  }
  if (exitCode == kExitSuccess) {
    ScopedTimer timer(timings.get(), "write outputs");
    for (const auto& [temp, final] : libraries) {
      if (::rename(temp.c_str(), final.c_str()) != 0) {
        diags.reportForPath(Diag::CannotWriteFile, "", final, std::strerror(errno));
        sorter.flush();
        return kExitInternalError;
      }
    }
    for (const PendingOutput& out : outputs) {
      std::string error;
      if (!writeFileAtomically(out.path, out.contents, &error)) {
        diags.reportForPath(Diag::CannotWriteFile, "", out.path, error);
        sorter.flush();
        return kExitInternalError;
      }
    }
  }

  if (timings) {
    if (options.timing) {
      std::string table = timings->formatTable();
      std::fwrite(table.data(), 1, table.size(), stderr);
    }
    if (options.timeTrace) {
      std::string path = options.timeTrace->empty() ? defaultTraceName(options) : *options.timeTrace;
      std::string error;
      if (!writeFileAtomically(path, timings->formatChromeTrace(), &error)) {
        diags.reportForPath(Diag::CannotWriteFile, "", path, error);
        sorter.flush();
        return kExitInternalError;
      }
    }
  }
  return exitCode;
}

}  // namespace

int reportNotImplemented(const CompileOptions& options, const std::string& what,
                         const std::string& issue) {
  std::unique_ptr<DiagnosticConsumer> consumer = makeConsumer(options);
  DiagnosticEngine diags(*consumer);
  diags.reportForPath(Diag::NotImplemented, "", what, issue);
  return kExitUsageError;
}

int runCompile(const CompileOptions& options) {
  // Flags whose stage does not exist yet are refused, never ignored.
  struct Pending {
    bool requested;
    const char* flag;
    const char* issue;
  };
  const Pending pending[] = {
      {options.incremental, "'--incremental'", "issue #8"},
  };
  for (const Pending& p : pending) {
    if (p.requested) {
      return reportNotImplemented(options, p.flag, p.issue);
    }
  }
  Stage last = options.stopAfter.value_or(Stage::Emit);
  if (last > kLastImplementedStage && options.stopAfter) {
    return reportNotImplemented(options, std::string("'--stop-after=") + stageName(last) + "'",
                                "issue #5");
  }
  return runFrontEnd(options, last);
}

int runCheck(const CompileOptions& options) {
  return runFrontEnd(options, Stage::Check);
}

}  // namespace tritonc

//===- Options.h - what the user asked tritonc to do ------------*- C++ -*-===//
//
// The parsed command line, independent of CLI11: tools/tritonc parses argv
// into these structs and the driver runs them.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace tritonc {

/// Process exit codes (TOOLCHAIN.md "Exit status").
enum ExitCode : int {
  kExitSuccess = 0,
  kExitSourceError = 1,
  kExitUsageError = 2,
  kExitInternalError = 3,
};

/// Pipeline stages in order; `--stop-after` names one.
enum class Stage { Lex, Parse, Check, Ir, Opt, Emit };
/// "lex", "parse", ... as spelled on the command line.
const char* stageName(Stage stage);
std::optional<Stage> parseStageName(const std::string& name);

enum class DiagnosticsFormat { Text, Json };
enum class ColorMode { Auto, Always, Never };

/// Options of `tritonc compile` (and of `check`, which uses a subset).
struct CompileOptions {
  std::vector<std::string> inputs;
  std::string output;                 ///< -o; empty = default
  char optLevel = '1';                ///< '0'..'3' or 's'
  std::string target = "pytorch";     ///< pytorch | cuda | all
  /// --cuda-arch: compute capabilities nvcc builds for (default sm_80 and sm_90).
  std::vector<std::string> cudaArchs = {"80", "90"};
  /// --cuda-dtypes: activation types of the launchers (f32, f16, bf16).
  std::vector<std::string> cudaDTypes = {"f32", "f16", "bf16"};
  std::string nvcc;                   ///< --nvcc; empty = $TRITONC_NVCC, PATH, /usr/local/cuda/bin
  std::string entry;                  ///< --entry
  std::vector<std::string> includeDirs;  ///< -I DIR: where imports are looked for
  std::optional<Stage> stopAfter;     ///< --stop-after
  bool dumpTokens = false;
  bool dumpAst = false;
  bool dumpTypes = false;  ///< the checked program: classified signatures and typed AST
  bool dumpIr = false;
  bool dumpCode = false;
  bool printAfterAll = false;
  bool verifyEach = false;  ///< run the IR verifier after IR generation and every pass
  bool timing = false;
  bool timingJson = false;  ///< --timing=json
  std::optional<std::string> timeTrace;  ///< --time-trace[=FILE]; "" = default name
  /// -MD: a make dependency file per module (`<module stem>.d` beside it,
  /// or `depfilePath`); -MP adds a phony target per imported file.
  bool depfile = false;
  std::string depfilePath;  ///< -MF FILE (one input)
  bool depfilePhony = false;
  bool verbose = false;
  bool debug = false;
  bool quiet = false;
  bool incremental = false;
  unsigned jobs = 0;  ///< 0 = number of cores
  bool noCache = false;
  std::string cacheDir;
  bool lowMemory = false;
  DiagnosticsFormat diagnosticsFormat = DiagnosticsFormat::Text;
  ColorMode color = ColorMode::Auto;
  bool warningsAsErrors = false;
  unsigned errorLimit = 20;  ///< --error-limit; 0 = no limit (clang's default is 20 too)
};

}  // namespace tritonc

//===- main.cpp - the tritonc command line --------------------------------===//
//
// Parses argv with CLI11 into driver options and maps outcomes to exit codes:
// 0 success, 1 errors in the source, 2 usage errors, 3 internal errors.
// Library exceptions are caught here and nowhere else.
//
//===----------------------------------------------------------------------===//
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <malloc.h>
#include <pthread.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <regex>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "tritonc/base/FileSystem.h"
#include "tritonc/base/Version.h"
#include "tritonc/diag/Diagnostics.h"
#include "tritonc/driver/Driver.h"

namespace {

using namespace tritonc;

std::string versionText() {
  return std::string("tritonc version ") + kVersion + " (build " + kBuildId +
         ")\nTriton DSL language v1\n";
}

// The same text for CLI11's version flags, which end it with a newline.
std::string versionFlagText() {
  std::string text = versionText();
  text.pop_back();
  return text;
}

// Option values kept as text until CLI11 has validated them.
struct ReportingChoices {
  std::string format = "text";
  std::string color = "auto";
  std::string cudaArchs;   ///< --cuda-arch, comma-separated; empty = the default
  std::string cudaDTypes;  ///< --cuda-dtypes
  std::string timing;      ///< --timing[=text|json]; empty when not given
};

std::vector<std::string> splitList(const std::string& list) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!item.empty()) items.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return items;
}

// CLI11 names a flag that takes an optional `=VALUE` "--timing{text}" in the
// help; users type "--timing" or "--timing=json", which the option text shows.
class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_option_name(const CLI::Option* opt, bool positional) const override {
    std::string name = CLI::Formatter::make_option_name(opt, positional);
    for (size_t open = name.find('{'); open != std::string::npos; open = name.find('{')) {
      size_t close = name.find('}', open);
      if (close == std::string::npos) break;
      name.erase(open, close - open + 1);
    }
    return name;
  }
  // `-O` takes its level attached (`-O2`: `-O 2` reads 2 as an input file),
  // so its levels follow the name without CLI11's space.
  std::string make_option_opts(const CLI::Option* opt) const override {
    if (opt->get_name() == "-O") return opt->get_option_text();
    return CLI::Formatter::make_option_opts(opt);
  }
};

// Flags shared by compile, check and watch: how diagnostics and reports look.
void addReportingFlags(CLI::App* cmd, CompileOptions& o, ReportingChoices& choices) {
  cmd->add_option("--diagnostics-format", choices.format, "How diagnostics are printed on stderr")
      ->check(CLI::IsMember({"text", "json"}))
      ->option_text("text|json");
  cmd->add_option("--color", choices.color, "Colour diagnostics (auto: when stderr is a terminal)")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->option_text("auto|always|never");
  // Spelled -Werror by users; see normalizeArgs().
  cmd->add_flag("--Werror", o.warningsAsErrors, "Treat warnings as errors (spelled -Werror)");
  cmd->add_flag("-q,--quiet", o.quiet, "Print errors only");
  cmd->add_flag("--dump-types", o.dumpTypes,
                "Print the checked program (classified layer parameters, typed syntax tree)");
  cmd->add_option("--error-limit", o.errorLimit, "Stop reporting after N errors (0: no limit)")
      ->capture_default_str();
  cmd->add_flag("--timing{text}", choices.timing,
                "Print a per-phase time and memory report to stderr (json: one JSON object)")
      ->check(CLI::IsMember({"text", "json"}))
      ->option_text("[=text|json]");
  cmd->add_flag("--verbose", o.verbose, "Describe what the compiler does");
  cmd->add_flag("--debug", o.debug, "Print debugging information about the compiler itself");
}

void applyReportingChoices(const ReportingChoices& choices, CompileOptions& o) {
  if (!choices.timing.empty()) {
    o.timing = true;
    o.timingJson = choices.timing == "json";
  }
  // Each architecture and type once, in the order given (`80,sm_80` is one
  // nvcc target, and one cache key).
  auto addOnce = [](std::vector<std::string>& list, std::string item) {
    if (std::find(list.begin(), list.end(), item) == list.end()) list.push_back(std::move(item));
  };
  if (!choices.cudaArchs.empty()) {
    o.cudaArchs.clear();
    for (const std::string& arch : splitList(choices.cudaArchs)) {
      addOnce(o.cudaArchs, arch.rfind("sm_", 0) == 0 ? arch.substr(3) : arch);
    }
  }
  if (!choices.cudaDTypes.empty()) {
    o.cudaDTypes.clear();
    for (const std::string& t : splitList(choices.cudaDTypes)) addOnce(o.cudaDTypes, t);
  }
  // `--target all` is `--target cuda` (both write the module and the
  // kernels, docs/cuda.md): one spelling for the cache keys and the headers,
  // so switching between them never runs nvcc again for the same library.
  if (o.target == "all") o.target = "cuda";
  if (choices.format == "json") {
    o.diagnosticsFormat = DiagnosticsFormat::Json;
    // stderr then holds JSON lines only, for tools that read it line by
    // line: the timing report is the one-line JSON object too.
    o.timingJson = o.timing;
  }
  if (choices.color == "always") {
    o.color = ColorMode::Always;
  } else if (choices.color == "never") {
    o.color = ColorMode::Never;
  }
}

// `-o ""` or `--entry ""` is a mistake in a script (an unset variable), not
// a request for the default.
CLI::Validator nonEmpty(const char* what) {
  return CLI::Validator(
      [what](std::string& value) {
        return value.empty() ? fmt::format("an empty {} was given", what) : std::string();
      },
      "");
}

// A count written in decimal digits, as `--days` and the config's numbers
// (CLI11 alone would also take `-j 0x10`).
CLI::Validator decimalCount() {
  return CLI::Validator(
      [](std::string& value) {
        return !value.empty() && value.find_first_not_of("0123456789") == std::string::npos
                   ? std::string()
                   : fmt::format("'{}' is not a number from 0 to 1024", value);
      },
      "");
}

// `--cuda-arch 80,sm_90,90a`: compute capabilities, with or without `sm_`. Only
// those NVIDIA has made (`0` or `1000` would reach nvcc and fail there as an
// environment error, exit 3, where a bad flag is exit 2); the architecture-specific
// (`a`) and family (`f`) variants of Hopper and later are accepted as nvcc spells them.
CLI::Validator cudaArchList() {
  return CLI::Validator(
      [](std::string& list) {
        if (splitList(list).empty()) {
          return std::string("an empty list; give compute capabilities (such as 80,90) or "
                             "leave the option out for the default");
        }
        static constexpr std::string_view kKnown[] = {
            "35", "37", "50", "52", "53", "60", "61", "62", "70", "72", "75", "80", "86",
            "87", "88", "89", "90", "100", "101", "103", "110", "120", "121"};
        for (const std::string& arch : splitList(list)) {
          std::string name = arch.rfind("sm_", 0) == 0 ? arch.substr(3) : arch;
          std::string digits = name;
          char suffix = 0;
          if (!digits.empty() && (digits.back() == 'a' || digits.back() == 'f')) {
            suffix = digits.back();
            digits.pop_back();
          }
          bool known = std::find(std::begin(kKnown), std::end(kKnown), digits) != std::end(kKnown);
          // (`a` since Hopper, `f` since Blackwell.)
          if (!known || (suffix != 0 && std::stoi(digits) < (suffix == 'a' ? 90 : 100))) {
            return "'" + arch + "' is not a CUDA compute capability (such as 80, 86, 89, 90, "
                   "90a, 100 or sm_90)";
          }
        }
        return std::string();
      },
      "");
}

// `--cuda-dtypes f16,bf16`.
CLI::Validator cudaDTypeList() {
  return CLI::Validator(
      [](std::string& list) {
        if (splitList(list).empty()) {
          return std::string("an empty list; give activation types (such as f32,bf16) or "
                             "leave the option out for the default");
        }
        for (const std::string& t : splitList(list)) {
          if (t != "f32" && t != "f16" && t != "bf16") {
            return "'" + t + "' is not one of f32, f16, bf16";
          }
        }
        return std::string();
      },
      "");
}

// Flags of compile and watch.
void addCompileFlags(CLI::App* cmd, CompileOptions& o, ReportingChoices& choices,
                     std::string& stopAfter, std::string& optLevel, CLI::Option** timeTraceOpt,
                     std::string& timeTrace) {
  cmd->add_option("-o", o.output, "Output file (one input) or directory (several inputs)")
      ->check(nonEmpty("path"));
  cmd->add_option("-O", optLevel, "Optimization level (default 1)")
      ->check(CLI::IsMember({"0", "1", "2", "3", "s"}))
      ->option_text("0|-O1|-O2|-O3|-Os");
  cmd->add_option("--target", o.target, "What to generate (default pytorch)")
      ->check(CLI::IsMember({"pytorch", "cuda", "all"}))
      ->option_text("pytorch|cuda|all");
  cmd->add_option("--cuda-arch", choices.cudaArchs,
                  "CUDA compute capabilities to build kernels for (default 80,90)")
      ->check(cudaArchList())
      ->option_text("ARCH,...");
  cmd->add_option("--cuda-dtypes", choices.cudaDTypes,
                  "Activation types of the CUDA launchers (default f32,f16,bf16)")
      ->check(cudaDTypeList())
      ->option_text("f32|f16|bf16,...");
  cmd->add_option("--nvcc", o.nvcc, "The nvcc to use (default: $TRITONC_NVCC, PATH, /usr/local/cuda/bin)")
      ->option_text("PATH")
      ->check(nonEmpty("path"));
  cmd->add_option("--entry", o.entry, "The layer that is the model's entry point")
      ->check(nonEmpty("layer name"))
      ->option_text("LAYER");
  cmd->add_option("-I", o.includeDirs, "Also look for imported files in DIR (repeatable)")
      ->option_text("DIR")
      ->take_all()
      ->allow_extra_args(false);
  cmd->add_option("--stop-after", stopAfter, "Run the pipeline up to this stage; write no files")
      ->check(CLI::IsMember({"lex", "parse", "check", "ir", "opt", "emit"}))
      ->option_text("lex|parse|check|ir|opt|emit");
  cmd->add_flag("--dump-tokens", o.dumpTokens, "Print the tokens to stdout");
  cmd->add_flag("--dump-ast", o.dumpAst, "Print the syntax tree to stdout");
  cmd->add_flag("--dump-ir", o.dumpIr, "Print the IR (after optimization) to stdout");
  cmd->add_flag("--dump-code", o.dumpCode, "Print the generated code to stdout");
  cmd->add_flag("--print-after-all", o.printAfterAll, "Print the IR after every pass");
  cmd->add_flag("--verify-each", o.verifyEach,
                "Verify the IR after IR generation and after every pass");
  // Spelled -MD, -MF FILE and -MP as gcc and clang spell them (normalizeArgs).
  cmd->add_flag("--MD", o.depfile,
                "Write a make dependency file <stem>.d next to each module (spelled -MD)");
  cmd->add_option("--MF", o.depfilePath, "Write the dependency file to FILE (spelled -MF)")
      ->option_text("FILE")
      ->check(nonEmpty("path"));
  cmd->add_flag("--MP", o.depfilePhony,
                "Add a phony target for each imported file (spelled -MP)");
  *timeTraceOpt = cmd->add_flag("--time-trace{}", timeTrace,
                                "Write a Chrome trace JSON (default <stem>.trace.json)");
  (*timeTraceOpt)->option_text("[=FILE.json]");
  cmd->add_flag("--incremental", o.incremental, "Recompile only the layers that changed");
  cmd->add_option("-j,--jobs", o.jobs, "Files compiled in parallel, up to 1024 (0 or default: cores)")
      ->check(decimalCount())
      ->check(CLI::Range(0u, 1024u))
      ->option_text("N");
  cmd->add_flag("--no-cache", o.noCache, "Do not use the compile cache");
  cmd->add_option("--cache-dir", o.cacheDir, "Cache directory")
      ->option_text("DIR")
      ->check(nonEmpty("directory"));
  cmd->add_flag("--low-memory", o.lowMemory, "Trade speed for a smaller memory footprint");
  addReportingFlags(cmd, o, choices);
}

// The compile flags kept as text until CLI11 has validated them (compile, watch).
void applyCompileChoices(const std::string& optLevel, const std::string& stopAfter,
                         const CLI::Option* timeTraceOpt, const std::string& timeTrace,
                         CompileOptions& o) {
  if (!optLevel.empty()) {
    o.optLevel = optLevel[0];
  }
  if (!stopAfter.empty()) {
    o.stopAfter = parseStageName(stopAfter);
  }
  if (timeTraceOpt->count() > 0) {
    o.timeTrace = timeTrace;
  }
  if (!o.depfilePath.empty()) o.depfile = true;  // -MF implies -MD, as in gcc
}

// The CLI11 name of a gcc-style flag (`-MD` and `-MMD`: `--MD`, there being
// no system imports), or empty for any other argument.
std::string_view cliNameOf(std::string_view flag) {
  if (flag == "-MD" || flag == "-MMD") return "--MD";
  if (flag == "-MP") return "--MP";
  if (flag == "-MF") return "--MF";
  if (flag == "-Werror") return "--Werror";
  return {};
}

// The spelling users type (and --help shows) of a flag normalizeArgs renamed:
// `-MF`, not CLI11's `--MF`.
std::string gccSpelling(const std::string& flag) {
  bool renamed = flag.starts_with("--") && cliNameOf(flag.substr(1)) == flag;
  return renamed ? flag.substr(1) : flag;
}

// CLI11 only knows single-letter short options; the gcc-style `-Werror`,
// `-MD` (and `-MMD`), `-MF` and `-MP` are rewritten to their long spellings
// before parsing. A bare `-O` is `-O1`, as in
// gcc and clang, and `--color` not followed by auto, always or never is
// `--color=always`, as in GNU tools (CLI11 would take the next argument as
// their value).
std::vector<std::string> normalizeArgs(int argc, char** argv) {
  std::vector<std::string> args;
  args.reserve(static_cast<size_t>(argc));
  for (int i = argc - 1; i >= 1; --i) {  // CLI11 takes arguments in reverse order
    std::string arg = argv[i];
    if (std::string_view cli = cliNameOf(arg); !cli.empty()) arg = cli;
    else if (arg.starts_with("-MF")) arg = "--MF=" + arg.substr(3);  // gcc's -MFfile
    else if (arg == "-O") arg = "-O1";
    else if (arg == "--color" && (i + 1 == argc || (std::strcmp(argv[i + 1], "auto") != 0 &&
                                                    std::strcmp(argv[i + 1], "always") != 0 &&
                                                    std::strcmp(argv[i + 1], "never") != 0))) {
      arg = "--color=always";
    }
    args.push_back(arg);
  }
  return args;
}

int run(int argc, char** argv) {
  // `--version` answers before anything else is set up (start-up budget: 1 ms).
  if (argc == 2 && std::strcmp(argv[1], "--version") == 0) {
    std::string text = versionText();
    writeStandardOutput(text);
    return kExitSuccess;
  }

  CLI::App app{"tritonc: ahead-of-time compiler for Triton DSL, ternary neural networks",
               "tritonc"};
  app.set_version_flag("--version", versionFlagText());
  app.formatter(std::make_shared<HelpFormatter>());
  app.require_subcommand(1);
  app.fallthrough(false);
  // As with gcc and clang, a repeated option takes its last value (-O2 ... -O3).
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.failure_message([](const CLI::App* failed, const CLI::Error& e) {
    return std::string("tritonc: error: ") + e.what() + "\nRun 'tritonc " +
           (failed->get_parent() != nullptr ? failed->get_name() + " " : std::string()) +
           "--help' for usage.\n";
  });
  ReportingChoices choices;

  CompileOptions options;
  std::string stopAfter;
  std::string optLevel;
  std::string timeTrace;
  CLI::Option* timeTraceOpt = nullptr;

  // Building a command's options is most of CLI11's cost (~40 us each for
  // compile and watch): only the command that argv names gets them, all of
  // them when argv names none (`tritonc --help`, `tritonc help compile`).
  // Every command is still declared, for the messages below.
  std::string_view first = argc > 1 ? std::string_view(argv[1]) : std::string_view();
  bool anyNamed = first == "compile" || first == "check" || first == "watch" ||
                  first == "cache" || first == "config";
  auto wanted = [&](std::string_view command) { return !anyNamed || first == command; };

  CLI::App* compile = app.add_subcommand("compile", "Compile .tri files to PyTorch (and CUDA)");
  if (wanted("compile")) {
    compile->add_option("FILE", options.inputs, "Input files (.tri)")
        ->required()
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    addCompileFlags(compile, options, choices, stopAfter, optLevel, &timeTraceOpt, timeTrace);
  }

  struct {
    std::string optLevel, target, cudaArch, cudaDTypes, nvcc, cacheDir, depfilePath;
    bool noCache = false, lowMemory = false, incremental = false, depfile = false,
         depfilePhony = false;
  } ignored;
  CLI::App* check = app.add_subcommand("check", "Parse and type-check; write no output files");
  if (wanted("check")) {
    check->add_option("FILE", options.inputs, "Input files (.tri)")
        ->required()
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    addReportingFlags(check, options, choices);
    // The dumps of the stages a check runs (as clang -fsyntax-only -Xclang -ast-dump).
    check->add_flag("--dump-tokens", options.dumpTokens, "Print the tokens to stdout");
    check->add_flag("--dump-ast", options.dumpAst, "Print the syntax tree to stdout");
    check->add_option("--entry", options.entry, "The layer that is the model's entry point")
        ->check(nonEmpty("layer name"))
        ->option_text("LAYER");
    check->add_option("-I", options.includeDirs, "Also look for imported files in DIR (repeatable)")
        ->option_text("DIR")
        ->take_all()
        ->allow_extra_args(false);
    check->add_option("-j,--jobs", options.jobs, "Files checked in parallel, up to 1024 (0 or default: cores)")
        ->check(decimalCount())
      ->check(CLI::Range(0u, 1024u))
        ->option_text("N");
    // The flags of a compile, so that a script passes one set of flags to
    // both (as clang -fsyntax-only takes -O2): their values are checked, and
    // nothing is generated or cached, so they change nothing.
    const char* compileOnly = "Compile flags (accepted; a check generates nothing)";
    check->add_option("-O", ignored.optLevel, "Optimization level")
        ->check(CLI::IsMember({"0", "1", "2", "3", "s"}))
        ->option_text("0|-O1|-O2|-O3|-Os")
        ->group(compileOnly);
    check->add_option("--target", ignored.target, "What a compile generates")
        ->check(CLI::IsMember({"pytorch", "cuda", "all"}))
        ->option_text("pytorch|cuda|all")
        ->group(compileOnly);
    check->add_option("--cuda-arch", ignored.cudaArch, "CUDA compute capabilities")
        ->check(cudaArchList())
        ->option_text("ARCH,...")
        ->group(compileOnly);
    check->add_option("--cuda-dtypes", ignored.cudaDTypes, "Activation types of CUDA launchers")
        ->check(cudaDTypeList())
        ->option_text("f32|f16|bf16,...")
        ->group(compileOnly);
    check->add_option("--nvcc", ignored.nvcc, "The nvcc to use")->option_text("PATH")->group(compileOnly);
    check->add_flag("--no-cache", ignored.noCache, "Do not use the compile cache")->group(compileOnly);
    check->add_option("--cache-dir", ignored.cacheDir, "Cache directory")->option_text("DIR")->group(compileOnly);
    check->add_flag("--low-memory", ignored.lowMemory, "Smaller memory footprint")->group(compileOnly);
    check->add_flag("--incremental", ignored.incremental, "Recompile changed layers")->group(compileOnly);
    check->add_flag("--MD", ignored.depfile, "Write a make dependency file (spelled -MD)")
        ->group(compileOnly);
    check->add_option("--MF", ignored.depfilePath, "The dependency file (spelled -MF)")
        ->option_text("FILE")
        ->check(nonEmpty("path"))
        ->group(compileOnly);
    check->add_flag("--MP", ignored.depfilePhony, "Phony targets for imports (spelled -MP)")
        ->group(compileOnly);
  }

  CompileOptions watchOptions;
  std::string watchStop;
  std::string watchOpt;
  std::string watchTrace;
  CLI::Option* watchTraceOpt = nullptr;
  CLI::App* watch = app.add_subcommand("watch", "Recompile a file on every save");
  std::string watchFile;  // one file: a second is an unexpected argument (exit 2)
  if (wanted("watch")) {
    watch->add_option("FILE", watchFile, "Input file (.tri)")->required();
    addCompileFlags(watch, watchOptions, choices, watchStop, watchOpt, &watchTraceOpt, watchTrace);
  }
  // `tritonc compile --version`, as `clang -c --version`.
  for (CLI::App* command : {compile, check, watch}) {
    if (wanted(command->get_name())) command->set_version_flag("--version", versionFlagText());
  }

  CLI::App* cache = app.add_subcommand("cache", "Inspect and maintain the compile cache");
  cache->require_subcommand(1);
  CacheCommand cacheCommand;
  uint64_t pruneDays = 0;
  CLI::Option* daysOption = nullptr;
  CLI::Option* maxSizeOption = nullptr;
  if (wanted("cache")) {
    CLI::App* cacheStats = cache->add_subcommand("stats", "Entries, sizes and hit rates per level");
    cacheStats->add_flag("--json", cacheCommand.json, "Print JSON");
    CLI::App* cacheClear = cache->add_subcommand("clear", "Remove cache entries");
    cacheClear->add_option("--level", cacheCommand.levels, "Only this level (repeat or l2,l3)")
        ->delimiter(',')
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
        ->transform(CLI::IsMember({"l1", "l2", "l3"}, CLI::ignore_case))
        ->option_text("l1|l2|l3");
    CLI::App* cachePrune = cache->add_subcommand("prune", "Evict old or excess entries (LRU)");
    daysOption =
        cachePrune->add_option("--days", pruneDays, "Remove entries unused for N days")
            ->check(CLI::Validator(
                [](std::string& days) {
                  if (days.empty() || days.size() > 6 ||
                      days.find_first_not_of("0123456789") != std::string::npos) {
                    return "'" + days + "' is not a number of days (0 to 999999)";
                  }
                  return std::string();
                },
                ""))
            ->option_text("N");
    maxSizeOption =
        cachePrune->add_option("--max-size", cacheCommand.maxSize,
                               "Shrink the cache to SIZE (e.g. 500M, 2G), least recently used first")
            ->option_text("SIZE");
    CLI::App* cacheValidate =
        cache->add_subcommand("validate", "Check every entry; remove and report corrupt ones");
    for (CLI::App* sub : {cacheStats, cacheClear, cachePrune, cacheValidate}) {
      sub->add_option("--cache-dir", cacheCommand.cacheDir, "Cache directory")
          ->option_text("DIR")
          ->check(nonEmpty("directory"));
    }
  }

  CLI::App* config = app.add_subcommand("config", "Read or change configuration");
  config->require_subcommand(1);
  if (wanted("config")) {
    CLI::App* configGet = config->add_subcommand("get", "Print the value of KEY");
    configGet->add_option("key", cacheCommand.key, "e.g. cache.enabled")->required();
    CLI::App* configSet = config->add_subcommand("set", "Set KEY to VALUE");
    configSet->add_option("key", cacheCommand.key, "e.g. cache.l3_code.max_size_mb")->required();
    configSet->add_option("value", cacheCommand.value, "New value")->required();
  }

  // With --diagnostics-format=json, a bad command line is a JSON diagnostic
  // too (code CommandLine), so that scripts parse every line of stderr.
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--") break;  // file names from here on, as CLI11 reads them
    json = arg == "--diagnostics-format=json" ||
           (arg == "--diagnostics-format" && i + 1 < argc &&
            std::string_view(argv[i + 1]) == "json") ||
           (json && !arg.starts_with("--diagnostics-format"));
  }
  // The command the arguments name (`compile`, `cache stats`), for "Run
  // 'tritonc compile --help'" and for the suggestions below.
  std::string commandPath = "tritonc";
  auto usageError = [&](const std::string& message) {
    if (json) {
      JsonDiagnosticConsumer printer(stderr);
      DiagnosticEngine diags(printer);
      diags.reportForPath(Diag::CommandLine, "", message);
    } else {
      std::fprintf(stderr, "tritonc: error: %s\nRun '%s --help' for usage.\n", message.c_str(),
                   commandPath.c_str());
    }
    return kExitUsageError;
  };
  // `--cache-dir=` (an unset variable in a script): CLI11 would take the next
  // argument as the value (`--cache-dir= --verbose` made a cache named
  // "--verbose"); getopt and clang never do. An empty value is a usage error.
  // Reported once the command is known (its `--help` is the one to run).
  std::string_view emptyValue;
  for (int i = 1; i < argc && std::strcmp(argv[i], "--") != 0 && emptyValue.empty(); ++i) {
    std::string_view arg = argv[i];
    if (arg.size() > 3 && arg.starts_with("--") && arg.find('=') == arg.size() - 1) {
      emptyValue = arg;
    }
  }
  // `tritonc help [COMMAND...]` is `tritonc [COMMAND...] --help`, as git's.
  std::vector<std::string> args = normalizeArgs(argc, argv);
  if (!args.empty() && args.back() == "help") {  // CLI11 takes the arguments reversed
    args.pop_back();
    args.insert(args.begin(), "--help");
  }
  // The commands under `command`, for the messages below.
  auto commandNames = [](CLI::App* command) {
    std::vector<std::string> names;
    for (CLI::App* sub : command->get_subcommands({})) names.push_back(sub->get_name());
    return names;
  };
  if (args.empty()) {
    return usageError(fmt::format("no command given; the commands are: {}",
                                  fmt::join(commandNames(&app), ", ")));
  }
  // A word that names no command (at the top, or under `cache`/`config`):
  // say which it is and suggest the closest (CLI11 would only say that a
  // subcommand is required).
  CLI::App* level = &app;
  for (auto word = args.rbegin(); word != args.rend() && !level->get_subcommands({}).empty();
       ++word) {
    if (word->starts_with("-")) break;
    std::vector<CLI::App*> subs = level->get_subcommands({});
    auto named = std::find_if(subs.begin(), subs.end(),
                              [&](CLI::App* sub) { return sub->get_name() == *word; });
    CLI::App* found = named == subs.end() ? nullptr : *named;
    if (found == nullptr) {
      std::vector<std::string> names = commandNames(level);
      std::string_view hint =
          closestMatch(*word, std::vector<std::string_view>(names.begin(), names.end()));
      return usageError(fmt::format("unknown command '{}{}'{}; the {}commands are: {}",
                                    level == &app ? "" : level->get_name() + " ", *word,
                                    hint.empty() ? "" : fmt::format(" (did you mean '{}'?)", hint),
                                    level == &app ? "" : level->get_name() + " ",
                                    fmt::join(names, ", ")));
    }
    level = found;
    commandPath += " " + found->get_name();
  }
  if (!emptyValue.empty()) {
    return usageError(fmt::format("'{}' has an empty value; give one ('{}VALUE') or leave "
                                  "the option out", emptyValue, emptyValue));
  }
  // `-O 2`: a bare -O is -O1 (gcc, clang), so the level became an input file
  // named `2`; unless there is such a file, the level was meant.
  for (int i = 1; i + 1 < argc && std::strcmp(argv[i], "--") != 0; ++i) {
    std::string_view spaced = argv[i + 1];
    struct stat st {};
    if (std::strcmp(argv[i], "-O") == 0 && spaced.size() == 1 &&
        std::string_view("0123s").find(spaced[0]) != std::string_view::npos &&
        ::stat(argv[i + 1], &st) != 0) {
      return usageError(fmt::format("'-O {0}' is '-O' (level 1) and an input file '{0}': write "
                                    "the level in the flag, '-O{0}'", spaced));
    }
  }
  // Only options before any command (`tritonc --bogus`): CLI11 would say
  // that a subcommand is required.
  if (level == &app && !args.back().empty() && args.back()[0] == '-' &&
      std::none_of(args.begin(), args.end(), [](const std::string& a) {
        return a == "--help" || a == "-h" || a == "--version";
      })) {
    std::string_view word = std::string_view(args.back()).substr(0, args.back().find('='));
    std::string_view hint = closestMatch(word.substr(word.find_first_not_of('-')),
                                         {"version", "help"});
    return usageError(fmt::format("unknown option '{}'{}; the commands are: {}", word,
                                  hint.empty() ? "" : fmt::format(" (did you mean '--{}'?)", hint),
                                  fmt::join(commandNames(&app), ", ")));
  }
  if (level != &app && level->get_require_subcommand_min() > 0 &&
      std::none_of(args.begin(), args.end(), [](const std::string& a) {
        return a == "--help" || a == "-h";
      })) {
    return usageError(fmt::format("'{}' needs a command: {}", commandPath.substr(8),
                                  fmt::join(commandNames(level), ", ")));
  }
  const std::vector<std::string> given = args;  // app.parse consumes what it reads
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e) == 0 ? kExitSuccess : kExitUsageError;
    std::string message = e.what();
    // An unknown flag: the closest flag of the command, if one is close. Also
    // when it left the command without its file (`compile -m.tri`): the flag
    // is what is wrong, not the missing FILE.
    if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr ||
        dynamic_cast<const CLI::RequiredError*>(&e) != nullptr) {
      std::vector<std::string> flags;
      for (const CLI::Option* option : level->get_options()) {
        for (const std::string& name : option->get_lnames()) flags.push_back("--" + name);
        for (const std::string& name : option->get_snames()) flags.push_back("-" + name);
      }
      // Compared without their dashes, which every flag shares (`--bogus`
      // is not close to `--jobs`).
      std::vector<std::string_view> candidates;
      for (const std::string& flag : flags) {
        candidates.push_back(std::string_view(flag).substr(flag.find_first_not_of('-')));
      }
      for (auto word = given.rbegin(); word != given.rend(); ++word) {  // (reversed: in order)
        if (*word == "--") break;  // files from here on
        if (word->size() < 2 || (*word)[0] != '-') continue;
        std::string_view name = std::string_view(*word).substr(0, word->find('='));
        if (std::find(flags.begin(), flags.end(), name) != flags.end()) continue;
        // A short option with its value attached (`-j4`, `-O2`) is known.
        if (!word->starts_with("--") &&
            std::find(flags.begin(), flags.end(), word->substr(0, 2)) != flags.end()) {
          continue;
        }
        // A gcc-style flag given a value (`-MD=x`): it takes none.
        std::string_view cli = cliNameOf(name);
        if (word->find('=') != std::string::npos && !cli.empty() && cli != "--MF" &&
            std::find(flags.begin(), flags.end(), cli) != flags.end()) {
          message = fmt::format("{} takes no value", name);
          break;
        }
        std::string_view hint = closestMatch(name.substr(name.find_first_not_of('-')), candidates);
        std::string dashed;
        if (!hint.empty()) {
          // The flag the hint is the tail of, as the documentation spells it.
          size_t i = static_cast<size_t>(std::find(candidates.begin(), candidates.end(), hint) -
                                         candidates.begin());
          dashed = gccSpelling(flags[i]);
        }
        // Named as typed: `check -MD` reads `--MD` (normalizeArgs), not written so.
        std::string typed(name);
        for (int i = 1; i < argc; ++i) {
          std::string_view raw = argv[i];
          if (raw.size() + 1 == name.size() && name.substr(1) == raw) typed = raw;
          if (name == "--MD" && raw == "-MMD") typed = raw;
        }
        message = fmt::format("unknown option '{}'{}", typed,
                              dashed.empty() ? "" : fmt::format(" (did you mean '{}'?)", dashed));
        // A file whose name starts with '-', as clang and coreutils say (a
        // command's file, not a value of `config set`).
        if (struct stat st {}; dashed.empty() && level->get_name() != "set" &&
                               ::stat(word->c_str(), &st) == 0) {
          message += fmt::format("; for the file '{0}' write './{0}' or put it after '--'",
                                 *word);
        }
        break;
      }
    }
    // Words after what a command takes (`cache stats bogus`): named with what it takes.
    static const std::regex extras(
        R"(^The following arguments? (?:was|were) not expected: (.*)$)");
    std::smatch extra;
    if (std::regex_match(message, extra, extras)) {
      size_t positionals = 0;
      for (const CLI::Option* option : level->get_options()) {
        if (option->get_positional()) positionals += 1;
      }
      // (CLI11 lists them last first: it takes the arguments reversed.)
      std::vector<std::string> listed;
      std::string all = extra[1].str();
      for (size_t at = 0; at <= all.size();) {
        size_t space = all.find(' ', at);
        if (space == std::string::npos) space = all.size();
        listed.insert(listed.begin(), all.substr(at, space - at));
        at = space + 1;
      }
      std::string words = fmt::format("{}", fmt::join(listed, " "));
      message = positionals == 0
                    ? fmt::format("'{}' takes no arguments, only options; '{}' was given",
                                  commandPath.substr(8), words)
                    : fmt::format("too many arguments for '{}': '{}' was not expected",
                                  commandPath.substr(8), words);
    }
    // CLI11's wording of a missing or out-of-range value, in ours.
    static const std::regex missing(R"(^(\S+): \d+ required .* missing$)");
    static const std::regex range(R"(^(\S+): Value (.*) not in range (\S+) to (\S+)$)");
    std::smatch match;
    static const std::regex convert(R"(^Could not convert: (\S+) = (.*)$)");
    if (std::regex_match(message, match, missing)) {
      message = fmt::format("{} needs a value", gccSpelling(match[1].str()));
    } else if (std::regex_match(message, match, range)) {
      message = fmt::format("{}: '{}' is not a number from {} to {}", match[1].str(),
                            match[2].str(), match[3].str(), match[4].str());
    } else if (std::regex_match(message, match, convert)) {
      // A flag given a value (`--no-cache=maybe`), or a count that is not one.
      const CLI::Option* option = level->get_option_no_throw(match[1].str());
      if (option != nullptr && option->get_expected_max() == 0) {
        message = fmt::format("{} takes no value", gccSpelling(match[1].str()));
      } else {
        message = fmt::format("{}: '{}' is not a non-negative whole number", match[1].str(),
                              match[2].str());
      }
    }
    // A validator's message names the flag as CLI11 knows it (`--MF: an empty path was
    // given`): the spelling the user typed, `-MF`.
    static const std::regex named(R"(^(--[A-Za-z]+): )");
    if (std::regex_search(message, match, named)) {
      std::string flag = match[1].str();
      message.replace(0, flag.size(), gccSpelling(flag));
    }
    return usageError(message);
  }
  applyReportingChoices(choices, options);
  applyReportingChoices(choices, watchOptions);

  if (*compile) {
    applyCompileChoices(optLevel, stopAfter, timeTraceOpt, timeTrace, options);
    return runCompile(options);
  }
  if (*check) {
    return runCheck(options);
  }
  if (*watch) {
    if (watchFile == "-") {
      return usageError("watch rereads a file when it changes; '-' (standard input) cannot be "
                        "watched");
    }
    watchOptions.inputs = {watchFile};
    applyCompileChoices(watchOpt, watchStop, watchTraceOpt, watchTrace, watchOptions);
    return runWatch(watchOptions);
  }
  if (*cache) {
    for (CLI::App* sub : cache->get_subcommands()) cacheCommand.action = sub->get_name();
    if (daysOption->count() > 0) cacheCommand.days = pruneDays;
    cacheCommand.maxSizeGiven = maxSizeOption->count() > 0;
    return runCacheCommand(cacheCommand);
  }
  if (*config) {
    for (CLI::App* sub : config->get_subcommands()) cacheCommand.action = sub->get_name();
    return runConfigCommand(cacheCommand);
  }
  return kExitUsageError;
}

}  // namespace

// Dumps, `--version`, `cache stats` and `config get` write to stdout; a
// write that failed (a full disk, a closed descriptor) is an environment
// error, not a success with a truncated dump (coreutils and clang do the same).
int finishStandardOutput(int status) {
  int error = flushStandardOutput();
  // A failed run has reported what went wrong already (`-o -` its write).
  if (error == 0 || status != kExitSuccess) return status;
  std::fprintf(stderr, "tritonc: error: cannot write 'standard output': %s [CannotWriteFile]\n",
               std::strerror(error));
  return kExitInternalError;
}

// The checker, IR generation and the emitters recurse on the expression
// tree, up to ParseLimits::kMaxTreeDepth levels (a chain of 4096 operators)
// at a few KiB a level: more than the 8 MiB a main thread gets by default
// (a chain of 3,200 '+' overflowed it). So the compiler runs on a thread of
// its own with this stack, the default of every thread it starts too (-j,
// the emitters): address space, touched only as deep as a program goes.
namespace {

constexpr size_t kStackBytes = size_t{64} << 20;

struct MainCall {
  int argc;
  char** argv;
  int status = kExitInternalError;
};

int runGuarded(int argc, char** argv) {
  try {
    return finishStandardOutput(run(argc, argv));
  } catch (const std::bad_alloc&) {
    std::fputs("tritonc: error: out of memory\n", stderr);
    return kExitInternalError;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tritonc: internal compiler error: %s\n", e.what());
    return kExitInternalError;
  }
}

void* mainThread(void* data) {
  auto* call = static_cast<MainCall*>(data);
  call->status = runGuarded(call->argc, call->argv);
  return nullptr;
}

// Runs the compiler on a thread with kStackBytes of stack; on the calling
// thread where one cannot be started (the stack stays the process's).
int runWithStack(int argc, char** argv) {
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0) {
    return runGuarded(argc, argv);
  }
  bool sized = pthread_attr_setstacksize(&attr, kStackBytes) == 0;
  if (sized) {
    pthread_setattr_default_np(&attr);  // std::threads started later
  }
  MainCall call{argc, argv};
  pthread_t thread;
  bool started = sized && pthread_create(&thread, &attr, mainThread, &call) == 0;
  pthread_attr_destroy(&attr);
  if (!started) {
    // Threads started later get the system's default stack again (a 64 MiB
    // one could not be had).
    pthread_attr_t plain;
    if (sized && pthread_attr_init(&plain) == 0) {
      pthread_setattr_default_np(&plain);
      pthread_attr_destroy(&plain);
    }
    return runGuarded(argc, argv);
  }
  // Signals sent to the process (Ctrl-C, a kill) go to a thread that does
  // not block them: this one would take them from the compiler's, which
  // installs the handlers that remove temporary files and, in `watch`,
  // blocks SIGINT and SIGTERM to read them from a signalfd and exit 0 (a
  // SIGINT taken here ended the process with it).
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  pthread_join(thread, nullptr);
  return call.status;
}

}  // namespace

int main(int argc, char** argv) {
  tritonc::holdClosedStandardStreams();
  // Past `ulimit -f` a write fails with EFBIG, reported as a full disk is
  // (exit 3, nothing partial left), instead of SIGXFSZ killing the process
  // with its temporary files in place.
  struct sigaction xfsz {};
  if (::sigaction(SIGXFSZ, nullptr, &xfsz) == 0 && xfsz.sa_handler == SIG_DFL) {
    ::signal(SIGXFSZ, SIG_IGN);
  }
  // A heap grows 1 MiB at a time instead of 128 KiB: the threads of -j each
  // allocate in an arena of their own, and growing it by mprotect calls of
  // 128 KiB made a second thread emitting code run at half speed.
  mallopt(M_TOP_PAD, 1 << 20);
  // Growing vectors and strings of a big file (the checker's tables, IR,
  // the generated module, cache payloads) reach megabytes: above glibc's
  // 128 KiB threshold each one was a fresh mmap, its pages faulted in on
  // first touch and unmapped when it grew again or was freed, a fifth of a
  // 10k-line compile's CPU time. Served from the heap and kept there until
  // exit (a compile is short; `watch` reuses it), freed pages are reused.
  // `--low-memory` asks for the smaller peak instead (a 40k-line file, -j 1:
  // 45.9 MB with these settings, 41.5 MB without).
  bool lowMemory = false;
  for (int i = 1; i < argc && std::strcmp(argv[i], "--") != 0; ++i) {
    lowMemory = lowMemory || std::strcmp(argv[i], "--low-memory") == 0;
  }
  if (!lowMemory) {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
  }
  // `--version` recurses on nothing: it answers without starting a thread
  // (its start-up budget is 1 ms; the thread cost ~0.1 ms of it).
  if (argc == 2 && std::strcmp(argv[1], "--version") == 0) {
    return runGuarded(argc, argv);
  }
  return runWithStack(argc, argv);
}

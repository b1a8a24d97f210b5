//===- Driver.h - entry point of the driver stage ---------------*- C++ -*-===//
//
// Runs the compilation pipeline for the `compile` and `check` commands:
// reads the inputs, runs the stages up to the one asked for, prints dumps
// and diagnostics, and returns the process exit code.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tritonc/cache/Cache.h"
#include "tritonc/diag/Diagnostics.h"
#include "tritonc/driver/Options.h"
#include "tritonc/emit/Emit.h"
#include "tritonc/opt/Optimizer.h"

namespace tritonc {

/// `tritonc compile`.
int runCompile(const CompileOptions& options);
/// `tritonc check`: the front end only, no output files.
int runCheck(const CompileOptions& options);
/// One compile with a cache kept open by the caller (its in-memory level
/// survives between compiles: `watch`). `dependencies`, when given, receives
/// the files the inputs import (as opened), so that a watcher can follow them.
int runCompileWith(const CompileOptions& options, cache::Cache& cache,
                   std::vector<std::string>* dependencies = nullptr);
/// The consumer that prints diagnostics on stderr as the options ask
/// (--diagnostics-format, --color).
std::unique_ptr<DiagnosticConsumer> makeConsumer(const CompileOptions& options);
/// `tritonc watch FILE.tri [compile flags]`: compiles, then recompiles on every
/// save (inotify) until interrupted; exit 0 on Ctrl-C.
int runWatch(const CompileOptions& options);
/// `tritonc cache stats|clear|prune|validate` and `tritonc config get|set`.
struct CacheCommand {
  std::string action;          ///< stats, clear, prune, validate, get, set
  bool json = false;           ///< stats --json
  std::vector<std::string> levels;  ///< clear --level (repeated or l2,l3), lower-case
  std::optional<uint64_t> days;
  std::string maxSize;         ///< prune --max-size
  bool maxSizeGiven = false;
  std::string key, value;      ///< config get|set
  std::string cacheDir;        ///< --cache-dir
};
int runCacheCommand(const CacheCommand& command);
int runConfigCommand(const CacheCommand& command);

// ---- how the back end runs for a compile (Driver.cpp) ------------------------------

/// The optimizer's options for a compile: its -O level, and the verifier after
/// every pass under --verify-each and in debug builds.
OptimizerOptions optimizerOptions(const CompileOptions& options, Timings* timings);
/// The PyTorch emitter's options for a compile (--target pytorch): name
/// placeholders, the flags of the header comment, and what the -O level asks
/// of the code (dead tensors released from -O2, single-use values inlined at -Os).
EmitOptions pyTorchEmitOptions(const CompileOptions& options, const std::string& sourceName);

// ---- the compile cache's keys (CacheKeys.cpp) -------------------------------------

/// Identifies this build of the compiler in every key: version, build id, and
/// the executable's size and modification time (a rebuilt compiler misses).
const std::string& compilerIdentity();
/// The key of a file's checked IR (L2): its source and what changes the IR.
/// One IR serves every -O level: it carries -O0's run-time shape checks
/// (stripped above -O0), whose messages name the compiled file by a
/// placeholder the emitter fills in, and an imported file by its name:
/// `importedNames` (empty without imports).
cache::Key checkedIRKey(const CompileOptions& options, std::string_view source,
                        std::string_view identity, std::string_view importedNames);
/// The key of a file's generated code (L3): its source, every flag that
/// changes an output, and for the CUDA target the nvcc that builds the
/// library (`nvcc` names it: path, size and mtime, or "none"). The file's
/// name and directory are not part of it (names are stamped in afterwards),
/// except at -O0, whose run-time shape checks quote the file's name and the
/// imported files' (`importedNames`, as for checkedIRKey).
cache::Key generatedCodeKey(const CompileOptions& options, std::string_view source,
                            std::string_view identity, std::string_view nvcc,
                            std::string_view sourceName, std::string_view importedNames = {});
/// The key of a CUDA library built from `cu` (the emitted, unstamped `.cu`), an L3 entry
/// of its own: content-addressed by what nvcc reads (the `.cu` without its header
/// comment, which names the source and its flags), the nvcc flags and architectures, and
/// nvcc's identity (`nvcc`, as for generatedCodeKey). A `.cu` that comes out byte for byte
/// the same from another source, -O level or comment edit reuses the library.
cache::Key cudaObjectKey(const CompileOptions& options, std::string_view cu,
                         std::string_view nvcc);
/// Diagnostics of one file as bytes (stored with its cache entries) and back;
/// `source` is the buffer located diagnostics point into.
std::string encodeDiagnostics(const std::vector<Diagnostic>& diagnostics);
Expected<std::vector<Diagnostic>> decodeDiagnostics(std::string_view bytes,
                                                    const SourceBuffer& source);

}  // namespace tritonc

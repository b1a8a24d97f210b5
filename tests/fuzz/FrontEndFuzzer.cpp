//===- FrontEndFuzzer.cpp - libFuzzer target for lex + parse + check ------===//
//
// Feeds arbitrary bytes through the front end exactly as the driver does
// (SourceBuffer -> lex -> parse -> check, the last only for inputs without
// syntax errors, as in the driver; well-typed inputs then go through IR
// generation and the -O2/-O3 pipeline with the verifier after every pass)
// and then exercises every output path that
// depends on the input: both diagnostic renderers (text with and without
// colour, JSON) and the token and tree dumps. Any crash, sanitizer report,
// hang or runaway allocation is a bug in the front end.
//
// Built by tests/fuzz/CMakeLists.txt when TRITONC_FUZZ is ON; run it with
// tests/fuzz/run_fuzzer.sh.
//
//===----------------------------------------------------------------------===//
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <string>
#include <vector>

#include "tritonc/base/Interner.h"
#include "tritonc/diag/Diagnostics.h"
#include "tritonc/lex/Lex.h"
#include "tritonc/parse/Parse.h"
#include "tritonc/emit/Emit.h"
#include "tritonc/ir/Verifier.h"
#include "tritonc/irgen/IRGen.h"
#include "tritonc/opt/Optimizer.h"
#include "tritonc/sema/Sema.h"
#include "tritonc/source/SourceBuffer.h"

namespace {
/// Larger inputs only slow the search down; the limits that matter (nesting,
/// tree depth) are reachable well below this.
constexpr size_t kMaxInputSize = 64 * 1024;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > kMaxInputSize) {
    return 0;  // ignored
  }
  using namespace tritonc;
  SourceBuffer source = SourceBuffer::fromString(
      "fuzz.tri", std::string(reinterpret_cast<const char*>(data), size));

  CollectingDiagnosticConsumer consumer;
  DiagnosticEngine diags(consumer);
  Interner interner;
  TokenizedBuffer tokens = lex(source, interner, diags);
  Tree tree = parse(tokens, diags);
  size_t typedDump = 0;
  if (!diags.hasErrors()) {
    CheckedModule checked = check(tree, interner, diags);
    typedDump = checked.dump().size();
    if (!diags.hasErrors()) {
      // The middle end on every well-typed input: IR generation (with the
      // -O0 checks, alternately) and the -O2 or -O3 pipeline, verified after
      // each pass. A broken invariant is a bug: abort so libFuzzer keeps it.
      IRGenOptions irgen;
      irgen.runtimeShapeChecks = (size & 2) != 0;
      ir::Module module = generateIR(checked, irgen);
      OptimizerOptions options;
      options.level = (size & 4) != 0 ? '3' : '2';
      options.verifyEach = true;
      std::vector<std::string> problems = ir::verify(module);
      if (problems.empty()) {
        problems = optimize(module, options);
      }
      if (!problems.empty()) {
        for (const std::string& problem : problems) {
          std::fprintf(stderr, "%s\n", problem.c_str());
        }
        std::abort();
      }
      typedDump += module.print().size();
      // And the PyTorch emitter on the optimized module (a module nested too
      // deep for Python is a diagnostic, not a bug).
      Expected<std::string> code = emitPyTorch(module, EmitOptions{"fuzz.tri", "-O2"});
      typedDump += code ? code->size() : code.error().message.size();
    }
  }

  // The incremental compile's partial parse: every item split at the item
  // keywords outside brackets. On a file that parses cleanly it must accept
  // the split and give the same tree; on any file it must not crash.
  {
    std::vector<ItemTokens> items;
    int depth = 0;
    for (uint32_t t = 0; t + 1 < tokens.size(); ++t) {
      TokenKind kind = tokens.kind(TokenId{t});
      if (kind == TokenKind::LParen || kind == TokenKind::LBracket || kind == TokenKind::LBrace) {
        ++depth;
      } else if (kind == TokenKind::RParen || kind == TokenKind::RBracket ||
                 kind == TokenKind::RBrace) {
        --depth;
      } else if (depth == 0 && (kind == TokenKind::KwLayer || kind == TokenKind::KwFn ||
                                kind == TokenKind::KwLet || kind == TokenKind::KwMain ||
                                kind == TokenKind::KwImport)) {
        if (!items.empty()) items.back().end = TokenId{t};
        items.push_back(ItemTokens{TokenId{t}, TokenId{}});
      }
    }
    if (!items.empty()) items.back().end = TokenId{static_cast<uint32_t>(tokens.size() - 1)};
    CollectingDiagnosticConsumer partialConsumer;
    DiagnosticEngine partialDiags(partialConsumer);
    bool complete = false;
    Tree partial = parseItems(tokens, items, partialDiags, complete);
    bool startsWithItem = tokens.size() <= 1 || (!items.empty() && items[0].begin.index == 0);
    if (consumer.diagnostics.empty() && startsWithItem && depth == 0) {
      if (!complete || partial.dump() != tree.dump()) {
        std::fprintf(stderr, "parseItems disagrees with parse on a clean file\n");
        std::abort();
      }
    }
  }

  // Rendering dominates the cost of a run (it is per diagnostic, and garbage
  // input has many), so each input renders text in one colour mode only: the
  // length's parity picks it, which covers both modes across the corpus.
  bool color = (size & 1) != 0;
  size_t sink = 0;
  for (const Diagnostic& diagnostic : consumer.diagnostics) {
    sink += TextDiagnosticConsumer::render(diagnostic, color).size();
    sink += JsonDiagnosticConsumer::render(diagnostic).size();
  }
  sink += tokens.dump().size();
  sink += tree.dump().size();
  sink += typedDump;
  // Keep the renderings observable so they cannot be optimized away.
  volatile size_t keep = sink;
  (void)keep;
  return 0;
}

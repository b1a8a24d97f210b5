//===- FrontEndBenchmark.cpp - lexer and parser throughput ----------------===//
//
// Measures the front end on generated programs of 1k to 1M lines:
//
//   BM_Lex        lex only (a fresh Interner per run, as each compilation has);
//   BM_LexParse   what the driver does per file: Interner + DiagnosticEngine,
//                 lex, parse;
//   BM_ParseOnly  parse only, over tokens prepared outside the timed loop.
//
// Each reports `lines/s` (a rate counter) and bytes/s (SetBytesProcessed).
// The inputs are generated once per size and checked to lex and parse
// without a diagnostic before anything is measured. Large buffers are fresh
// mappings in every iteration (see main), as in a one-shot compiler process.
//
//===----------------------------------------------------------------------===//
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>

#include "SourceGenerator.h"
#include "tritonc/base/Interner.h"
#include "tritonc/diag/Diagnostics.h"
#include "tritonc/lex/Lex.h"
#include "tritonc/parse/Parse.h"
#include "tritonc/source/SourceBuffer.h"

namespace {

using namespace tritonc;

/// A generated program, checked once to lex and parse cleanly.
struct Input {
  SourceBuffer source;
  size_t lines;
};

[[noreturn]] void failSetup(const char* what, const CollectingDiagnosticConsumer& consumer,
                            size_t lines) {
  std::fprintf(stderr, "FrontEndBenchmark: the generated %zu-line program %s:\n", lines, what);
  size_t shown = 0;
  for (const Diagnostic& d : consumer.diagnostics) {
    std::string text = TextDiagnosticConsumer::render(d, /*color=*/false);
    std::fwrite(text.data(), 1, text.size(), stderr);
    if (++shown == 10) {
      break;
    }
  }
  std::abort();
}

const Input& input(size_t lines) {
  static std::map<size_t, std::unique_ptr<Input>> cache;
  auto it = cache.find(lines);
  if (it != cache.end()) {
    return *it->second;
  }
  std::string text = bench::generateSource(lines);
  auto generated = std::make_unique<Input>(
      Input{SourceBuffer::fromString("bench_" + std::to_string(lines) + ".tri", std::move(text)),
            lines});
  // The benchmark is meaningless on input the front end rejects.
  CollectingDiagnosticConsumer consumer;
  DiagnosticEngine diags(consumer);
  Interner interner;
  TokenizedBuffer tokens = lex(generated->source, interner, diags);
  if (!consumer.diagnostics.empty() || tokens.hasErrors()) {
    failSetup("does not lex cleanly", consumer, lines);
  }
  Tree tree = parse(tokens, diags);
  if (!consumer.diagnostics.empty() || diags.hasErrors()) {
    failSetup("does not parse cleanly", consumer, lines);
  }
  if (generated->source.lineCount() < lines) {
    std::fprintf(stderr, "FrontEndBenchmark: asked for %zu lines, got %u\n", lines,
                 generated->source.lineCount());
    std::abort();
  }
  return *cache.emplace(lines, std::move(generated)).first->second;
}

void reportThroughput(benchmark::State& state, const Input& in) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(in.source.text().size()));
  state.counters["lines/s"] = benchmark::Counter(
      static_cast<double>(in.lines), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Lex(benchmark::State& state) {
  const Input& in = input(static_cast<size_t>(state.range(0)));
  CollectingDiagnosticConsumer consumer;
  DiagnosticEngine diags(consumer);
  for (auto _ : state) {
    Interner interner;  // a compilation starts with an empty interner
    TokenizedBuffer tokens = lex(in.source, interner, diags);
    benchmark::DoNotOptimize(tokens.size());
    benchmark::ClobberMemory();
  }
  reportThroughput(state, in);
}

void BM_LexParse(benchmark::State& state) {
  const Input& in = input(static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    // What Driver.cpp's runFrontEnd does for one file.
    CollectingDiagnosticConsumer consumer;
    DiagnosticEngine diags(consumer);
    Interner interner;
    TokenizedBuffer tokens = lex(in.source, interner, diags);
    Tree tree = parse(tokens, diags);
    benchmark::DoNotOptimize(tree.size());
    benchmark::ClobberMemory();
  }
  reportThroughput(state, in);
}

void BM_ParseOnly(benchmark::State& state) {
  const Input& in = input(static_cast<size_t>(state.range(0)));
  CollectingDiagnosticConsumer consumer;
  DiagnosticEngine diags(consumer);
  Interner interner;
  TokenizedBuffer tokens = lex(in.source, interner, diags);
  for (auto _ : state) {
    Tree tree = parse(tokens, diags);
    benchmark::DoNotOptimize(tree.size());
    benchmark::ClobberMemory();
  }
  reportThroughput(state, in);
}

void sizes(benchmark::internal::Benchmark* b) {
  b->Arg(1'000)->Arg(10'000)->Arg(100'000)->Arg(1'000'000)->Unit(benchmark::kMillisecond);
}

}  // namespace

BENCHMARK(BM_Lex)->Apply(sizes);
BENCHMARK(BM_LexParse)->Apply(sizes);
BENCHMARK(BM_ParseOnly)->Apply(sizes);

int main(int argc, char** argv) {
  // A compiler is a short-lived process: the large token and node arrays of
  // a file live in memory fresh from the kernel, and their page faults are
  // part of the cost. glibc's allocator raises its mmap threshold after the
  // first large free, so without this later iterations (and later benchmarks)
  // would reuse warm heap pages and the numbers would depend on the order of
  // the runs. A fixed threshold (glibc's default, 128 KiB) keeps every large
  // buffer a fresh mapping in every iteration.
  //
  // To measure with warm memory instead (no page faults after the first
  // iteration), set TRITONC_BENCH_WARM_HEAP=1 together with
  // GLIBC_TUNABLES=glibc.malloc.mmap_threshold=4294967296:glibc.malloc.trim_threshold=4294967296
  const char* warm = std::getenv("TRITONC_BENCH_WARM_HEAP");
  if (warm == nullptr || *warm == '\0' || *warm == '0') {
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
    return 1;
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

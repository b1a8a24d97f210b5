//===- CheckBenchmark.cpp - type-checking throughput ----------------------===//
//
// BM_LexParseCheck and BM_CheckOnly over generated, well-typed models: the
// layer styles of the tutorials and LANGUAGE.md §7 (weights as parameters,
// module style with instances, attention, quantization), renamed per copy.
// Setup aborts unless the source checks without a single diagnostic, so the
// benchmark measures the path users take, not error recovery.
//
//===----------------------------------------------------------------------===//
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "tritonc/lex/Lex.h"
#include "tritonc/parse/Parse.h"
#include "ModelGenerator.h"
#include "tritonc/sema/Sema.h"

namespace {

using namespace tritonc;

void fail(const std::vector<Diagnostic>& diagnostics) {
  for (const Diagnostic& d : diagnostics) {
    std::fputs(TextDiagnosticConsumer::render(d, false).c_str(), stderr);
  }
  std::fputs("CheckBenchmark: generated source is not well-typed\n", stderr);
  std::abort();
}

void BM_LexParseCheck(benchmark::State& state) {
  auto lines = static_cast<size_t>(state.range(0));
  SourceBuffer source = SourceBuffer::fromString("bench.tri", bench::generateModels(lines));
  {
    Interner interner;
    CollectingDiagnosticConsumer consumer;
    DiagnosticEngine diags(consumer);
    TokenizedBuffer tokens = lex(source, interner, diags);
    Tree tree = parse(tokens, diags);
    CheckedModule checked = check(tree, interner, diags);
    if (!consumer.diagnostics.empty()) {
      fail(consumer.diagnostics);
    }
  }
  for (auto _ : state) {
    Interner interner;
    CollectingDiagnosticConsumer consumer;
    DiagnosticEngine diags(consumer);
    TokenizedBuffer tokens = lex(source, interner, diags);
    Tree tree = parse(tokens, diags);
    CheckedModule checked = check(tree, interner, diags);
    benchmark::DoNotOptimize(checked.nodeType.data());
  }
  state.counters["lines/s"] =
      benchmark::Counter(static_cast<double>(lines), benchmark::Counter::kIsIterationInvariantRate);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(source.text().size()));
}

void BM_CheckOnly(benchmark::State& state) {
  auto lines = static_cast<size_t>(state.range(0));
  SourceBuffer source = SourceBuffer::fromString("bench.tri", bench::generateModels(lines));
  Interner interner;
  CollectingDiagnosticConsumer consumer;
  DiagnosticEngine diags(consumer);
  TokenizedBuffer tokens = lex(source, interner, diags);
  Tree tree = parse(tokens, diags);
  for (auto _ : state) {
    CheckedModule checked = check(tree, interner, diags);
    benchmark::DoNotOptimize(checked.nodeType.data());
  }
  if (!consumer.diagnostics.empty()) {
    fail(consumer.diagnostics);
  }
  state.counters["lines/s"] =
      benchmark::Counter(static_cast<double>(lines), benchmark::Counter::kIsIterationInvariantRate);
}

void sizes(benchmark::internal::Benchmark* b) {
  b->Arg(1000)->Arg(10000)->Arg(100000)->Arg(1000000)->Unit(benchmark::kMillisecond);
}

}  // namespace

BENCHMARK(BM_LexParseCheck)->Apply(sizes);
BENCHMARK(BM_CheckOnly)->Apply(sizes);

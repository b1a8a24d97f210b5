//===- OptBenchmark.cpp - IR generation and the -O2 pipeline --------------===//
//
// BM_CompileToOptimizedIR: lex, parse, check, IR generation and -O2 on
// generated well-typed models; BM_OptimizeO2: the -O2 passes alone (each
// iteration optimizes a fresh copy of the generated IR). The ratio of the two
// is the pipeline's share of a compile up to emission (issue #4: <= 30%).
//
//===----------------------------------------------------------------------===//
#include <benchmark/benchmark.h>

#include "ModelGenerator.h"
#include "tritonc/irgen/IRGen.h"
#include "tritonc/lex/Lex.h"
#include "tritonc/opt/Optimizer.h"
#include "tritonc/parse/Parse.h"
#include "tritonc/sema/Sema.h"

namespace {

using namespace tritonc;

void BM_CompileToOptimizedIR(benchmark::State& state) {
  auto lines = static_cast<size_t>(state.range(0));
  SourceBuffer source = SourceBuffer::fromString("bench.tri", bench::generateModels(lines));
  OptimizerOptions options;
  options.level = '2';
  for (auto _ : state) {
    Interner interner;
    CollectingDiagnosticConsumer consumer;
    DiagnosticEngine diags(consumer);
    TokenizedBuffer tokens = lex(source, interner, diags);
    Tree tree = parse(tokens, diags);
    CheckedModule checked = check(tree, interner, diags);
    ir::Module module = generateIR(checked);
    if (!optimize(module, options).empty() || diags.hasErrors()) {
      state.SkipWithError("generated models did not compile");
      return;
    }
    benchmark::DoNotOptimize(module.ops.data());
  }
  state.counters["lines/s"] =
      benchmark::Counter(static_cast<double>(lines), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_OptimizeO2(benchmark::State& state) {
  auto lines = static_cast<size_t>(state.range(0));
  SourceBuffer source = SourceBuffer::fromString("bench.tri", bench::generateModels(lines));
  Interner interner;
  CollectingDiagnosticConsumer consumer;
  DiagnosticEngine diags(consumer);
  TokenizedBuffer tokens = lex(source, interner, diags);
  Tree tree = parse(tokens, diags);
  CheckedModule checked = check(tree, interner, diags);
  ir::Module generated = generateIR(checked);
  OptimizerOptions options;
  options.level = '2';
  for (auto _ : state) {
    state.PauseTiming();
    ir::Module module = generated;
    state.ResumeTiming();
    if (!optimize(module, options).empty()) {
      state.SkipWithError("the pipeline broke the IR");
      return;
    }
    benchmark::DoNotOptimize(module.ops.data());
  }
  state.counters["lines/s"] =
      benchmark::Counter(static_cast<double>(lines), benchmark::Counter::kIsIterationInvariantRate);
}

void sizes(benchmark::internal::Benchmark* b) {
  b->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);
}

}  // namespace

BENCHMARK(BM_CompileToOptimizedIR)->Apply(sizes);
BENCHMARK(BM_OptimizeO2)->Apply(sizes);

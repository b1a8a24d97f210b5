//===- EmitBenchmark.cpp - the emitters and the L2 cache's IR form --------===//
//
// BM_EmitPyTorch: the PyTorch emitter on the -O2 IR of generated models;
// BM_EmitCuda: kernel planning and the .cu for the same; BM_SerializeIR and
// BM_DeserializeIR: the binary IR form the L2 cache stores and reads back.
// Each reports lines/s of the generated source it stands for.
//
//===----------------------------------------------------------------------===//
#include <benchmark/benchmark.h>

#include "ModelGenerator.h"
#include "tritonc/emit/Emit.h"
#include "tritonc/irgen/IRGen.h"
#include "tritonc/lex/Lex.h"
#include "tritonc/opt/Optimizer.h"
#include "tritonc/parse/Parse.h"
#include "tritonc/sema/Sema.h"

namespace {

using namespace tritonc;

// The -O2 IR of `lines` lines of generated models (or unoptimized IR).
struct Compiled {
  Interner interner;
  std::optional<ir::Module> module;
  bool ok = false;

  Compiled(size_t lines, bool optimized) {
    SourceBuffer source = SourceBuffer::fromString("bench.tri", bench::generateModels(lines));
    CollectingDiagnosticConsumer consumer;
    DiagnosticEngine diags(consumer);
    TokenizedBuffer tokens = lex(source, interner, diags);
    Tree tree = parse(tokens, diags);
    CheckedModule checked = check(tree, interner, diags);
    module.emplace(generateIR(checked));
    OptimizerOptions options;
    options.level = '2';
    ok = !diags.hasErrors() && (!optimized || optimize(*module, options).empty());
  }
};

void setRate(benchmark::State& state) {
  state.counters["lines/s"] = benchmark::Counter(static_cast<double>(state.range(0)),
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

void BM_EmitPyTorch(benchmark::State& state) {
  Compiled c(static_cast<size_t>(state.range(0)), true);
  if (!c.ok) return state.SkipWithError("generated models did not compile");
  EmitOptions options{"bench.tri", "-O2", ""};
  for (auto _ : state) {
    Expected<std::string> code = emitPyTorch(*c.module, options);
    if (!code) return state.SkipWithError("the emitter failed");
    benchmark::DoNotOptimize(code->data());
  }
  setRate(state);
}

void BM_EmitCuda(benchmark::State& state) {
  Compiled c(static_cast<size_t>(state.range(0)), true);
  if (!c.ok) return state.SkipWithError("generated models did not compile");
  CudaEmitOptions options;
  if (planTernaryKernels(*c.module).empty()) {
    return state.SkipWithError("the generated models' entry layer plans no ternary kernels");
  }
  for (auto _ : state) {
    std::string cu = emitCuda(planTernaryKernels(*c.module), options);
    benchmark::DoNotOptimize(cu.data());
  }
  setRate(state);
}

void BM_SerializeIR(benchmark::State& state) {
  Compiled c(static_cast<size_t>(state.range(0)), false);
  if (!c.ok) return state.SkipWithError("generated models did not compile");
  size_t bytes = 0;
  for (auto _ : state) {
    std::string out = ir::serialize(*c.module);
    bytes = out.size();
    benchmark::DoNotOptimize(out.data());
  }
  setRate(state);
  state.counters["bytes"] = static_cast<double>(bytes);
}

void BM_DeserializeIR(benchmark::State& state) {
  Compiled c(static_cast<size_t>(state.range(0)), false);
  if (!c.ok) return state.SkipWithError("generated models did not compile");
  std::string bytes = ir::serialize(*c.module);
  for (auto _ : state) {
    Interner interner;
    Expected<ir::Module> module = ir::deserialize(bytes, interner);
    if (!module) return state.SkipWithError("deserialization failed");
    benchmark::DoNotOptimize(module->ops.data());
  }
  setRate(state);
}

void sizes(benchmark::internal::Benchmark* b) {
  b->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);
}

}  // namespace

BENCHMARK(BM_EmitPyTorch)->Apply(sizes);
BENCHMARK(BM_EmitCuda)->Apply(sizes);
BENCHMARK(BM_SerializeIR)->Apply(sizes);
BENCHMARK(BM_DeserializeIR)->Apply(sizes);

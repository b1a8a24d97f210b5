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
#include "tritonc/sema/Sema.h"

namespace {

using namespace tritonc;

// One group of layers; {0} is replaced by the group number. 50 lines.
constexpr const char* kTemplate = R"(# group {0}: tutorial style, weights as parameters
layer TernaryFC{0}(w: TernaryTensor<trit, [n_in, n_out]>, b: Tensor<float32, [n_out]>,
                   x: Tensor<float32, [?, n_in]>) -> Tensor<float32, [?, n_out]> {{
    let h = x @ w + b
    return relu(h)
}}

# module style: instances hoisted into the constructor
layer Block{0}(in_ch: int, out_ch: int, stride: int = 1,
               x: Tensor<float32, [?, in_ch, ?, ?]>) -> Tensor<float32, [?, out_ch, ?, ?]> {{
    let conv1 = TernaryConv2d(in_ch, out_ch, 3, stride=stride, padding=1)
    let bn1 = BatchNorm2d(out_ch)
    let conv2 = TernaryConv2d(out_ch, out_ch, 3, padding=1)
    let bn2 = BatchNorm2d(out_ch)
    let out = relu(bn1(conv1(x)))
    out = bn2(conv2(out))
    let shortcut = x
    if stride != 1 || in_ch != out_ch {{
        let down = TernaryConv2d(in_ch, out_ch, 1, stride=stride)
        let down_bn = BatchNorm2d(out_ch)
        shortcut = down_bn(down(x))
    }}
    return relu(out + shortcut)
}}

# self-attention with ternary projections
layer Attention{0}(wq: TernaryTensor<trit, [d, d]>, wk: TernaryTensor<trit, [d, d]>,
                   wv: TernaryTensor<trit, [d, d]>, wo: TernaryTensor<trit, [d, d]>,
                   x: Tensor<float32, [?, ?, d]>) -> Tensor<float32, [?, ?, d]> {{
    let q = x @ wq
    let k = x @ wk
    let v = x @ wv
    let scores = softmax(q @ transpose(k, 1, 2) / 8.0, dim=-1)
    return scores @ v @ wo
}}

layer Model{0}(w1: TernaryTensor<trit, [784, 256]>, b1: Tensor<float32, [256]>,
               w2: TernaryTensor<trit, [256, 10]>, b2: Tensor<float32, [10]>,
               x: Tensor<float32, [?, 1, 28, 28]>) -> Tensor<float32, [?, 10]> {{
    let flat = flatten(x)
    let h = TernaryFC{0}(w1, b1, flat)
    let q = ternary_quantize(h, method="absmean")
    let mixed = ternary_dequantize(q) * 0.5 + h
    for i in range(2) {{
        mixed = mixed * 0.5
    }}
    return TernaryFC{0}(w2, b2, act_quant_int8(mixed))
}}

)";

std::string generate(size_t lines) {
  std::string out;
  size_t produced = 0;
  for (size_t group = 0; produced < lines; ++group) {
    out += fmt::format(fmt::runtime(kTemplate), group);
    produced += 50;
  }
  return out;
}

void fail(const std::vector<Diagnostic>& diagnostics) {
  for (const Diagnostic& d : diagnostics) {
    std::fputs(TextDiagnosticConsumer::render(d, false).c_str(), stderr);
  }
  std::fputs("CheckBenchmark: generated source is not well-typed\n", stderr);
  std::abort();
}

void BM_LexParseCheck(benchmark::State& state) {
  auto lines = static_cast<size_t>(state.range(0));
  SourceBuffer source = SourceBuffer::fromString("bench.tri", generate(lines));
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
  SourceBuffer source = SourceBuffer::fromString("bench.tri", generate(lines));
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

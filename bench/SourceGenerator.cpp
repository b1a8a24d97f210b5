//===- SourceGenerator.cpp - synthetic Triton DSL sources -----------------===//
#include "SourceGenerator.h"

#include <fmt/format.h>

#include <array>
#include <string_view>
#include <vector>

namespace tritonc::bench {
namespace {

/// splitmix64: tiny, fast and identical on every platform (unlike the
/// distributions of <random>, whose output is implementation-defined).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, n).
  size_t below(size_t n) { return static_cast<size_t>(next() % n); }
  bool chance(unsigned percent) { return below(100) < percent; }
  template <typename T, size_t N>
  const T& pick(const std::array<T, N>& items) {
    return items[below(N)];
  }

 private:
  uint64_t state_;
};

constexpr std::array<std::string_view, 12> kComments = {
    "project onto the ternary weights",
    "residual connection",
    "[?, out_ch, ?, ?]",
    "scale before quantizing",
    "BitNet b1.58: absmean scaling",
    "keep the stem in full precision",
    "halve the resolution",
    "TODO: fuse with the next matmul",
    "straight-through estimator",
    "logits",
    "broadcast over the batch",
    "pre-norm",
};

constexpr std::array<std::string_view, 8> kUnary = {
    "relu", "gelu", "sigmoid", "tanh", "silu", "abs", "sqrt", "exp",
};

constexpr std::array<std::string_view, 6> kDims = {"d", "128", "784", "in_ch", "4 * d", "out_ch"};

constexpr std::array<std::string_view, 4> kFloatTypes = {"float32", "float16", "bfloat16",
                                                         "float32"};

/// Builds one program line by line.
class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) {}

  std::string run(size_t lines) {
    out_.reserve(lines * 40);
    size_t remaining = lines;
    emitHeader(remaining);
    while (remaining > 0) {
      item_.clear();
      itemLines_ = 0;
      localCounter_ = 0;
      generateItem();
      if (itemLines_ <= remaining) {
        out_ += item_;
        remaining -= itemLines_;
      } else {
        // Fill the tail with one-line items so the count is exact.
        while (remaining > 0) {
          item_.clear();
          itemLines_ = 0;
          oneLineItem();
          out_ += item_;
          --remaining;
        }
      }
    }
    return std::move(out_);
  }

 private:
  // --- output helpers -----------------------------------------------------
  void line(unsigned indent, std::string_view text) {
    item_.append(indent * 4, ' ');
    item_ += text;
    item_ += '\n';
    ++itemLines_;
  }
  /// A file-wide unique name (items, constants).
  std::string fresh(std::string_view stem) { return fmt::format("{}{}", stem, ++counter_); }
  /// A local name, numbered per item: like real code, different layers reuse
  /// the same local names, so most identifiers are repeats.
  std::string local(std::string_view stem) { return fmt::format("{}{}", stem, ++localCounter_); }
  /// A name in scope (parameters and earlier lets).
  const std::string& var() { return scope_[rng_.below(scope_.size())]; }
  void define(std::string name) {
    if (scope_.size() < 24) {
      scope_.push_back(std::move(name));
    } else {
      scope_[rng_.below(scope_.size())] = std::move(name);
    }
  }

  void emitHeader(size_t& remaining) {
    const std::array<std::string_view, 3> header = {
        "# Generated ternary network for the front-end benchmarks.\n",
        "import \"lib/blocks.tri\" as blocks\n",
        "\n",
    };
    for (std::string_view text : header) {
      if (remaining == 0) {
        return;
      }
      out_ += text;
      --remaining;
    }
  }

  // --- items --------------------------------------------------------------
  void generateItem() {
    size_t r = rng_.below(100);
    if (r < 40) {
      moduleLayer();
    } else if (r < 70) {
      tutorialLayer();
    } else if (r < 85) {
      helperFn();
    } else if (r < 93 || emittedMain_) {
      constants();
    } else {
      mainBlock();  // once per file, like a real program
      emittedMain_ = true;
    }
    line(0, "");  // blank line between items
  }

  void oneLineItem() {
    switch (rng_.below(3)) {
      case 0:
        line(0, fmt::format("let {} = {} * 4", fresh("DIM_"), rng_.pick(kDims)));
        break;
      case 1: line(0, fmt::format("# {}", rng_.pick(kComments))); break;
      default: line(0, fmt::format("let {} = 1.0e-5", fresh("EPS_"))); break;
    }
  }

  void constants() {
    line(0, "# Model-wide constants.");
    line(0, fmt::format("let {} = 0x100", fresh("HIDDEN_")));
    line(0, fmt::format("let {} = 1_000", fresh("STEPS_")));
    line(0, fmt::format("let {}: float32 = 1.0e-5", fresh("EPS_")));
    if (rng_.chance(50)) {
      line(0, fmt::format("let {} = \"absmean\"", fresh("METHOD_")));
    }
  }

  // Module style: hyperparameters, instantiations, a body.
  void moduleLayer() {
    scope_ = {"x", "in_ch", "out_ch", "stride"};
    std::string name = fresh("Block");
    line(0, fmt::format("# Residual block {}, module style.", counter_));
    line(0, fmt::format("layer {}(in_ch: int, out_ch: int,", name));
    line(1, "stride: int = 1, groups: int = 1,");
    line(1, "x: Tensor<float32, [?, in_ch, ?, ?]>)");
    line(1, "-> Tensor<float32, [?, out_ch, ?, ?]> {");
    unsigned convs = 1 + static_cast<unsigned>(rng_.below(3));
    for (unsigned i = 1; i <= convs; ++i) {
      line(1, fmt::format("let conv{} = TernaryConv2d(in_ch, out_ch, 3,", i));
      line(2, fmt::format("stride={}, padding=1)", i == 1 ? "stride" : "1"));
      line(1, fmt::format("let bn{} = BatchNorm2d(out_ch)", i));
    }
    line(1, "let out = relu(bn1(conv1(x)))");
    scope_.push_back("out");
    body(1, 4 + rng_.below(10), 0);
    line(1, "return relu(out + x)");
    line(0, "}");
  }

  // Tutorial style: the weights are header parameters.
  void tutorialLayer() {
    scope_ = {"x", "w", "b", "scale"};
    std::string name = fresh("TernaryFC");
    std::string_view dt = rng_.pick(kFloatTypes);
    line(0, fmt::format("# {}: x @ w + b with ternary w.", name));
    line(0, fmt::format("layer {}(", name));
    line(1, "w: TernaryTensor<trit, [d, d]>,");
    line(1, fmt::format("b: Tensor<{}, [d]> = zeros(),", dt));
    if (rng_.chance(50)) {
      line(1, "w2: TernaryTensor<trit, [d, 4 * d]>,");
      scope_.push_back("w2");
    }
    line(1, "scale: float32 = 1.0,");
    line(1, fmt::format("x: Tensor<{}, [?, 784]>,", dt));
    line(0, fmt::format(") -> Tensor<{}, [?, d]> {{", dt));
    line(1, "let h = x @ w + b");
    scope_.push_back("h");
    body(1, 3 + rng_.below(12), 0);
    line(1, fmt::format("return {}(h) * scale", rng_.pick(kUnary)));
    line(0, "}");
  }

  void helperFn() {
    scope_ = {"x", "s", "n"};
    std::string name = fresh("scale_");
    line(0, fmt::format("fn {}(x: Tensor<float32, [?, d]>,", name));
    line(1, "s: float32, n: int = 2)");
    line(1, "-> Tensor<float32, [?, d]> {");
    body(1, 2 + rng_.below(5), 1);
    line(1, "return x * s + 0.5");
    line(0, "}");
  }

  void mainBlock() {
    scope_ = {"model", "x", "y"};
    line(0, "main {");
    line(1, "let model = Block1(3, 16, stride=2)");
    line(1, "let x = randn([8, 3, 32, 32])");
    line(1, "let y = model(x)");
    body(1, 2 + rng_.below(4), 1);
    line(1, "print(y.shape)");
    line(0, "}");
  }

  // --- statements ---------------------------------------------------------
  void body(unsigned indent, size_t statements, unsigned depth) {
    // Names defined in a nested block go out of scope at its end.
    std::vector<std::string> outer = depth > 0 ? scope_ : std::vector<std::string>{};
    for (size_t i = 0; i < statements; ++i) {
      statement(indent, depth);
    }
    if (depth > 0) {
      scope_ = std::move(outer);
    }
  }

  void statement(unsigned indent, unsigned depth) {
    size_t r = rng_.below(100);
    if (depth < 2 && r < 6) {
      ifStatement(indent, depth);
      return;
    }
    if (depth < 2 && r < 10) {
      forStatement(indent, depth);
      return;
    }
    if (depth < 2 && r < 12) {
      whileStatement(indent, depth);
      return;
    }
    simpleStatement(indent);
  }

  void ifStatement(unsigned indent, unsigned depth) {
    switch (rng_.below(3)) {
      case 0: line(indent, fmt::format("if stride != 1 || in_ch != out_ch {{")); break;
      case 1: line(indent, fmt::format("if {}.shape[0] > 1 {{", var())); break;
      default: line(indent, "if training && scale >= 0.5 {"); break;
    }
    body(indent + 1, 1 + rng_.below(3), depth + 1);
    if (rng_.chance(50)) {
      line(indent, "} else {");
      body(indent + 1, 1 + rng_.below(2), depth + 1);
    }
    line(indent, "}");
  }

  void forStatement(unsigned indent, unsigned depth) {
    if (rng_.chance(50)) {
      line(indent, fmt::format("for i in range({}) {{", 2 + rng_.below(6)));
    } else {
      line(indent, "for k in 0..n {");
    }
    body(indent + 1, 1 + rng_.below(3), depth + 1);
    line(indent, "}");
  }

  void whileStatement(unsigned indent, unsigned depth) {
    line(indent, "let steps = 0");
    line(indent, "while steps < 8 {");
    body(indent + 1, 1 + rng_.below(2), depth + 1);
    line(indent + 1, "steps += 1");
    if (rng_.chance(30)) {
      line(indent + 1, "if steps > 4 { break }");
    }
    line(indent, "}");
  }

  void simpleStatement(unsigned indent) {
    static constexpr std::array<std::string_view, 6> kStems = {"h", "act", "feat",
                                                               "proj", "t", "hidden"};
    std::string v = local(rng_.pick(kStems));
    std::string text;
    switch (rng_.below(20)) {
      case 0: text = fmt::format("let {} = relu({} @ w + b)", v, var()); break;
      case 1: text = fmt::format("let {} = {} * 0.5 + {}", v, var(), var()); break;
      case 2: text = fmt::format("{} = {} + {}", var(), var(), var()); break;
      case 3: text = fmt::format("{} += 1", var()); break;
      case 4: text = fmt::format("let {} = conv2d({}, w, padding=1)", v, var()); break;
      case 5: text = fmt::format("let {} = ternary_quantize({})", v, var()); break;
      case 6: text = fmt::format("let {} = softmax({}, dim=-1)", v, var()); break;
      case 7: text = fmt::format("let {} = {}[:, 0:16]", v, var()); break;
      case 8: text = fmt::format("let {} = reshape({}, [n, -1])", v, var()); break;
      case 9: text = fmt::format("let {} = {}.shape[0] * 4", v, var()); break;
      case 10:
        text = fmt::format("let {}: Tensor<int8, [4]> = [1, 0, -1, 0x2A]", v);
        break;
      case 11: text = fmt::format("let {} = mean(abs({}), dim=1)", v, var()); break;
      case 12: text = fmt::format("# {}", rng_.pick(kComments)); break;
      case 13: text = fmt::format("let {} = TernaryLinear(128, 64, bias=false)", v); break;
      case 14: text = fmt::format("let {} = {}(x)", v, rng_.pick(kUnary)); break;
      case 15:
        text = fmt::format("let {} = {} @ {}   # {}", v, var(), var(), rng_.pick(kComments));
        break;
      case 16: text = fmt::format("let {} = ({} - {}) / 2.0", v, var(), var()); break;
      case 17:
        text = fmt::format("let {} = {} @ transpose({}) / sqrt(8.0)", v, var(), var());
        break;
      case 18:
        text = fmt::format("let {} = layer_norm({}, [d], eps=1.0e-5)", v, var());
        break;
      default:
        text = fmt::format("let {} = dropout({}, p=0.1)", v, var());
        break;
    }
    if (text.starts_with("let ") && rng_.chance(20)) {
      text += fmt::format("   # {}", rng_.pick(kComments));
    }
    line(indent, text);
    if (text.starts_with("let ")) {
      define(std::move(v));
    }
  }

  Rng rng_;
  std::string out_;
  std::string item_;
  size_t itemLines_ = 0;
  unsigned counter_ = 0;
  unsigned localCounter_ = 0;
  bool emittedMain_ = false;
  std::vector<std::string> scope_;
};

}  // namespace

std::string generateSource(size_t lines, uint64_t seed) {
  return Generator(seed).run(lines);
}

}  // namespace tritonc::bench

//===- Habits.cpp - PyTorch, NumPy and Python spellings, and what to write -*- C++ -*-===//
#include "Habits.h"

#include <fmt/format.h>

#include <cctype>

#include <utility>

#include "SemaImpl.h"

namespace tritonc::sema {

namespace {

/// PyTorch names that Triton DSL spells differently. Names that are the same
/// (Linear, relu, conv2d, softmax, ...) are found in the builtin tables.
constexpr std::pair<std::string_view, std::string_view> kRenamed[] = {
    // torch.nn modules that are plain functions here.
    {"ReLU", "relu"},
    {"ReLU6", "relu6"},
    {"GELU", "gelu"},
    {"SiLU", "silu"},
    {"Hardswish", "hardswish"},
    {"Sigmoid", "sigmoid"},
    {"Tanh", "tanh"},
    {"Softmax", "softmax"},
    {"LogSoftmax", "log_softmax"},
    {"Flatten", "flatten"},
    {"CrossEntropyLoss", "cross_entropy"},
    {"MSELoss", "mse_loss"},
    // torch and torch.nn.functional functions.
    {"cat", "concat"},
    {"concatenate", "concat"},
    {"max_pool2d", "maxpool2d"},
    {"avg_pool2d", "avgpool2d"},
    {"adaptive_avg_pool2d", "adaptive_avgpool2d"},
    {"clamp", "clip"},
    {"view", "reshape"},
    {"mm", "matmul"},
    {"bmm", "matmul"},
    {"silu_", "silu"},
    {"relu_", "relu"},
    // dtypes (torch.float32 is a value in PyTorch; here the dtype's name is).
    {"float", "float32"},
    {"half", "float16"},
    {"long", "int64"},
    {"int", "int32"},
    {"short", "int16"},
    // No float64 or uint8 here: the nearest type that holds their values.
    {"double", "float32"},
    {"float64", "float32"},
    {"uint8", "int16"},
};

constexpr std::string_view kDTypes[] = {"bool",    "int8",     "int16",   "int32",
                                        "int64",   "float16",  "bfloat16", "float32"};

/// What `name` maps to in a table of (spelling, replacement) pairs.
template <size_t N>
std::optional<std::string_view> lookup(
    const std::pair<std::string_view, std::string_view> (&table)[N], std::string_view name) {
  for (const auto& [from, to] : table) {
    if (from == name) return to;
  }
  return std::nullopt;
}

/// `member` with PyTorch's spelling replaced by Triton DSL's, when they differ.
std::string_view renamed(std::string_view member) {
  return lookup(kRenamed, member).value_or(member);
}

bool isDType(std::string_view name) {
  for (std::string_view d : kDTypes) {
    if (d == name) return true;
  }
  return false;
}


}  // namespace

bool takesTensorFirst(std::string_view name) {
  std::optional<BuiltinFn> fn = findBuiltinFn(name);
  if (!fn || createsValues(*fn)) return false;  // zeros(shape), ...
  switch (*fn) {
    case BuiltinFn::Arange:
    case BuiltinFn::TensorFn:
    case BuiltinFn::Range:
    case BuiltinFn::Concat:
    case BuiltinFn::Stack:
    case BuiltinFn::Print:
    case BuiltinFn::Assert:
    case BuiltinFn::TernaryWeights:
      return false;
    default:
      return true;
  }
}

const char* foreignLibrary(std::string_view name) {
  if (name == "torch" || name == "nn" || name == "F" || name == "functional") return "PyTorch";
  if (name == "np" || name == "numpy") return "NumPy";
  if (name == "math") return "Python's math module";
  return nullptr;
}

std::optional<std::string_view> dslNameForForeign(std::string_view member) {
  std::string_view name = renamed(member);
  if (name != member || findBuiltinFn(name) || findBuiltinLayer(name) || isDType(name)) {
    return name;
  }
  return std::nullopt;
}

std::optional<std::string_view> dslDTypeForForeign(std::string_view member) {
  std::string_view name = renamed(member);
  if (isDType(name)) return name;
  return std::nullopt;
}

std::optional<std::string_view> torchArgumentName(std::string_view name) {
  static constexpr std::pair<std::string_view, std::string_view> kNames[] = {
      {"kernel", "kernel_size"}, {"kernel_shape", "kernel_size"}, {"ksize", "kernel_size"},
      {"pad", "padding"},        {"pads", "padding"},             {"strides", "stride"},
      {"use_bias", "bias"},      {"with_bias", "bias"},           {"epsilon", "eps"},
      {"rate", "p"},             {"dropout", "p"},                {"drop_rate", "p"},
      {"keepdims", "keepdim"},   {"dilation_rate", "dilation"},   {"filters", "out_ch"},
      {"units", "out_features"}, {"num_groups", "groups"},        {"momentum_rate", "momentum"},
  };
  return lookup(kNames, name);
}

std::optional<std::string_view> bareTorchFunction(std::string_view name) {
  for (std::string_view fn : {"cat", "concatenate", "clamp", "max_pool2d", "avg_pool2d",
                              "adaptive_avg_pool2d", "mm", "bmm"}) {
    if (fn == name) return renamed(name);
  }
  // Names of the quantizers in BitNet code and papers.
  static constexpr std::pair<std::string_view, std::string_view> kQuantizers[] = {
      {"quantize", "ternary_quantize"},        {"ternarize", "ternary_quantize"},
      {"weight_quant", "ternary_quantize"},    {"act_quant", "act_quant_int8"},
      {"activation_quant", "act_quant_int8"},
  };
  if (std::optional<std::string_view> dsl = lookup(kQuantizers, name)) return dsl;
  // Keras layer names, written by users coming from TensorFlow.
  static constexpr std::pair<std::string_view, std::string_view> kKeras[] = {
      {"Dense", "Linear"},
      {"Conv2D", "Conv2d"},
      {"BatchNormalization", "BatchNorm2d"},
      {"LayerNormalization", "LayerNorm"},
      {"MaxPooling2D", "MaxPool2d"},
      {"AveragePooling2D", "AvgPool2d"},
      {"GlobalAveragePooling2D", "global_avgpool"},
      {"Flatten", "flatten"},
  };
  return lookup(kKeras, name);
}

std::optional<std::string_view> ternaryCounterpart(std::string_view dslName) {
  if (dslName == "Linear") return "TernaryLinear";
  if (dslName == "Conv2d") return "TernaryConv2d";
  return std::nullopt;
}

std::optional<std::string> tensorMethodRewrite(std::string_view base, std::string_view member,
                                               std::string_view args, int positional,
                                               bool call) {
  if (!call) {
    if (member == "size") return fmt::format("{}.shape", base);
    return std::nullopt;
  }
  std::string shapeArgs = sizeCallsAsShape(args);  // x.view(x.size(0), -1)
  args = shapeArgs;
  auto withArgs = [&](std::string_view fn) {
    return args.empty() ? fmt::format("{}({})", fn, base) : fmt::format("{}({}, {})", fn, base, args);
  };
  // `x.view(-1, 784)` takes the sizes one by one; reshape takes one list.
  auto withList = [&](std::string_view fn) -> std::optional<std::string> {
    if (args.empty()) return std::nullopt;
    if (positional > 1) return fmt::format("{}({}, [{}])", fn, base, args);
    return withArgs(fn);
  };
  if (member == "view" || member == "reshape") return withList("reshape");
  if (member == "permute") return withList("permute");
  if (member == "size") {
    return args.empty() ? fmt::format("{}.shape", base) : fmt::format("{}.shape[{}]", base, args);
  }
  if (member == "t") return fmt::format("{}.T", base);
  if (member == "contiguous" || member == "clone") return std::string(base);
  if (member == "detach") return fmt::format("stop_gradient({})", base);
  if (member == "to" && positional == 1) {
    std::string_view dtype = args;
    if (dtype.starts_with("torch.")) dtype.remove_prefix(6);
    if (std::optional<std::string_view> name = dslNameForForeign(dtype); name && isDType(*name)) {
      return fmt::format("{}({})", *name, base);
    }
    return std::nullopt;
  }
  if (args.empty()) {
    if (std::optional<std::string_view> name = dslNameForForeign(member); name && isDType(*name)) {
      return fmt::format("{}({})", *name, base);  // x.float(), x.long(), x.bool()
    }
  }
  if (positional == 1 && args.find('=') == std::string_view::npos) {
    for (auto [method, op] : {std::pair{"add", "+"}, {"sub", "-"}, {"mul", "*"}, {"div", "/"}}) {
      if (member == method) return fmt::format("{} {} {}", base, op, args);
    }
  }
  std::string_view name = renamed(member);
  // An in-place activation (`x.relu_()`) is the function here.
  if (!takesTensorFirst(name) && name.ends_with('_')) name.remove_suffix(1);
  if (takesTensorFirst(name)) return withArgs(name);
  return std::nullopt;
}

std::string pythonBoolsAsDsl(std::string_view text) {
  std::string out;
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t i = 0; i < text.size();) {
    bool start = i == 0 || !word(text[i - 1]);
    std::string_view rest = text.substr(i);
    std::string_view found = rest.starts_with("True") ? "True" : rest.starts_with("False") ? "False" : "";
    if (start && !found.empty() && (rest.size() == found.size() || !word(rest[found.size()]))) {
      out += found == "True" ? "true" : "false";
      i += found.size();
      continue;
    }
    out += text[i++];
  }
  return out;
}

std::string sizeCallsAsShape(std::string_view text) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    size_t at = text.find(".size(", i);
    if (at == std::string_view::npos) break;
    size_t open = at + 6;
    size_t close = text.find(')', open);
    std::string_view inner =
        close == std::string_view::npos ? std::string_view() : text.substr(open, close - open);
    if (close == std::string_view::npos || inner.find('(') != std::string_view::npos) {
      out.append(text.substr(i, open - i));
      i = open;
      continue;
    }
    out.append(text.substr(i, at - i));
    out += inner.empty() ? std::string(".shape") : fmt::format(".shape[{}]", inner);
    i = close + 1;
  }
  out.append(text.substr(i));
  return out;
}

std::optional<size_t> firstSizeArgument(std::string_view fn) {
  if (fn == "zeros" || fn == "ones" || fn == "randn" || fn == "rand") return 0;
  if (fn == "reshape" || fn == "permute") return 1;
  return std::nullopt;
}

std::optional<std::string> sizesAsListRewrite(std::string_view fn,
                                              const std::vector<std::string>& positional,
                                              const std::vector<std::string>& named) {
  std::optional<size_t> firstSize = firstSizeArgument(fn);
  if (!firstSize || positional.size() < *firstSize + 2) return std::nullopt;
  size_t first = *firstSize;
  std::string args;
  for (size_t i = 0; i < first; ++i) args += sizeCallsAsShape(positional[i]) + ", ";
  std::string sizes;
  for (size_t i = first; i < positional.size(); ++i) {
    sizes += fmt::format("{}{}", sizes.empty() ? "" : ", ", sizeCallsAsShape(positional[i]));
  }
  args += fmt::format("[{}]", sizes);
  for (const std::string& n : named) {
    // `dtype=torch.int64` is `dtype=int64`; tensors are made on the module's
    // device, so `device=...` is left out.
    if (n.starts_with("device=")) continue;
    std::string arg = sizeCallsAsShape(n);
    if (arg.starts_with("dtype=torch.")) arg = "dtype=" + arg.substr(12);
    args += ", " + arg;
  }
  return fmt::format("{}({})", fn, args);
}

std::optional<std::string_view> missingFunctionHint(std::string_view name) {
  static constexpr std::string_view kNearest2x =
      "nearest 2x is 'reshape(stack([x, x], dim=4), [b, c, h, 2 * w])', then the same over the "
      "rows (stack at dim=3)";
  static constexpr std::string_view kResizeConvolution =
      "upsample (nearest 2x: stack and reshape), then a convolution, as resize-convolution "
      "decoders do";
  static constexpr std::string_view kRmsNorm =
      "RMS normalization is 'x / sqrt(mean(x * x, dim=-1, keepdim=true) + eps) * g', with "
      "'g: Tensor<float32, [d]> = ones()' a weight of the layer";
  static constexpr std::string_view kConv1d =
      "a 1-D convolution is a [1, k] one over [b, c, 1, t] ('unsqueeze(x, 2)'): "
      "'TernaryConv2d(c, o, [1, k], padding=[0, p], dilation=[1, d])'";
  static constexpr std::string_view kPool1d =
      "a 1-D pool is a [1, k] one over [b, c, 1, t] ('unsqueeze(x, 2)'): "
      "'maxpool2d(x, [1, k])' (or 'avgpool2d')";
  static constexpr std::string_view kGroupNorm =
      "group normalization of [b, c, h, w] is 'let y = reshape(x, [b, g, -1])', then 'y - "
      "mean(y, dim=-1, keepdim=true)' over 'sqrt' of its mean square plus eps, reshaped back to "
      "x's shape and scaled and shifted per channel ('reshape(gamma, [1, c, 1, 1])')";
  static constexpr std::string_view kRecurrent =
      "v1 has no recurrent layer: unroll the steps in a loop, 'for t in range(steps) { h = "
      "tanh(x[:, t, :] @ w_x + h @ w_h + b) }' with the weights as layer parameters (a GRU's "
      "or LSTM's gates are sigmoid and tanh of such products)";
  static constexpr std::string_view kDevice =
      "tensors are where the generated module's caller puts them: move the model and its "
      "inputs in Python ('model.to(\"cuda\")', 'x.to(\"cuda\")')";
  static constexpr std::pair<std::string_view, std::string_view> kHints[] = {
      // Device placement (`x.to("cuda")`, `x.cuda()`; `x.to(torch.float16)` is a cast).
      {"to", kDevice},
      {"cuda", kDevice},
      {"cpu", kDevice},
      {"device", kDevice},
      // 1-D signals (audio, TCNs): held as [b, c, 1, t] (audit 45E).
      {"conv1d", kConv1d},
      {"Conv1d", kConv1d},
      {"TernaryConv1d", kConv1d},
      {"max_pool1d", kPool1d},
      {"avg_pool1d", kPool1d},
      {"MaxPool1d", kPool1d},
      {"AvgPool1d", kPool1d},
      {"inf", "a mask's minus infinity is a large finite value, '-1e9' (or a bool mask "
              "passed to scaled_dot_product_attention)"},
      {"chunk", "'chunk(x, n, dim)' is 'split(x, size, dim)' with size = the dimension / n"},
      {"tril", "a causal mask is a comparison of positions: 'let i = arange(0, t)' then "
               "'unsqueeze(i, 1) >= unsqueeze(i, 0)'"},
      {"triu", "a causal mask is a comparison of positions: 'let i = arange(0, t)' then "
               "'unsqueeze(i, 1) < unsqueeze(i, 0)'"},
      {"where", "blend with a mask: 'float32(c) * a + (1.0 - float32(c)) * b'"},
      {"masked_fill", "add the mask: 'x + float32(mask) * -1e9', or pass a bool mask to "
                      "scaled_dot_product_attention"},
      {"einsum", "write the product with '@', transpose and permute"},
      {"linspace", "use 'arange(a, b, step)'"},
      {"cumsum", "there is no scan in v1; write a loop over the positions"},
      {"topk", "use 'argmax' for the largest"},
      {"dropout2d", "use 'dropout(x, p)'"},
      {"roll", "'roll(x, k, dims=1)' is two slices: 'concat([x[:, -k:], x[:, :-k]], dim=1)'"},
      {"gather", "rows of a table by index are 'embedding(ids, table)'"},
      {"rsqrt", "'rsqrt(x)' is '1.0 / sqrt(x)'"},
      {"outer", "'outer(a, b)' is 'unsqueeze(a, 1) * unsqueeze(b, 0)'"},
      // Stop 54's architecture review: names PyTorch code calls that v1 writes otherwise.
      {"pad", "zeros on one side are a concat, 'concat([zeros([b, "
              "c, h, p]), x], dim=3)' (b, c, h read from x.shape), or use a convolution's "
              "padding="},
      {"expand", "broadcasting expands: add zeros of the wanted shape, 'x + zeros([b, t, d])', "
                 "or use x as it is in the element-wise operation"},
      {"repeat", "repeating along a dimension is a concat: 'concat([x, x], dim=1)'"},
      {"repeat_interleave", "'repeat_interleave(x, r, dim=1)' of [b, c, d] is "
                            "'reshape(unsqueeze(x, 2) * ones([1, 1, r, 1]), [b, c * r, d])'"},
      {"pixel_shuffle", "'pixel_shuffle(x, r)' of [b, c * r * r, h, w] is 'reshape(permute("
                        "reshape(x, [b, c, r, r, h, w]), [0, 1, 4, 2, 5, 3]), [b, c, h * r, "
                        "w * r])'"},
      {"var", "'var(x, dim)' (unbiased, as torch.var) is 'std(x, dim) ** 2'"},
      {"norm", "the 2-norm 'norm(x, dim)' is 'sqrt(sum(x * x, dim=d))'"},
      {"erf", "GELU is the builtin 'gelu(x)', the exact erf form"},
      {"group_norm", kGroupNorm},
      {"GroupNorm", kGroupNorm},
      {"maxpool1d", kPool1d},
      {"avgpool1d", kPool1d},
      // BitNet b1.58 models (LLaMA-style): what their PyTorch code calls.
      {"RMSNorm", kRmsNorm},
      {"rms_norm", kRmsNorm},
      {"BitLinear", "BitNet's BitLinear is 'linear(act_quant_int8(norm(x)), w)' with a weight "
                    "'w: TernaryTensor<trit, [out, in]>' (examples/bitnet_mlp.tri), or the "
                    "standard library's 'TernaryLinear(in, out)' after 'act_quant_int8'"},
      // Upsampling (v1 has none): nearest-neighbour 2x of [b, c, h, w], exact.
      {"interpolate", kNearest2x},
      {"upsample", kNearest2x},
      {"Upsample", kNearest2x},
      {"ConvTranspose2d", kResizeConvolution},
      // Recurrent layers (audit 59: the only PyTorch layers a user tried without a hint).
      {"LSTM", kRecurrent},
      {"GRU", kRecurrent},
      {"RNN", kRecurrent},
      {"LSTMCell", kRecurrent},
      {"GRUCell", kRecurrent},
      {"RNNCell", kRecurrent},
      {"conv_transpose2d", kResizeConvolution},
  };
  return lookup(kHints, name);
}

std::optional<std::string_view> pythonConstantFix(std::string_view name) {
  if (name == "True" || name == "TRUE") return "true";
  if (name == "False" || name == "FALSE") return "false";
  return std::nullopt;
}

std::string optionList(std::span<const std::string_view> options, std::string_view quote,
                       std::string_view last) {
  std::string text;
  for (size_t i = 0; i < options.size(); ++i) {
    if (i > 0) text += i + 1 == options.size() ? last : std::string_view(", ");
    text.append(quote).append(options[i]).append(quote);
  }
  return text;
}

namespace {

std::string_view unquoted(std::string_view value) {
  if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
      value.back() == value.front()) {
    return value.substr(1, value.size() - 2);
  }
  return value;
}

/// The quoted options of `expected` ("'absmean', 'threshold' or 'stochastic'"), in order.
std::vector<std::string_view> quotedOptions(std::string_view expected) {
  std::vector<std::string_view> options;
  for (size_t i = 0; i < expected.size(); ++i) {
    char quote = expected[i];
    if (quote != '"' && quote != '\'') continue;
    size_t end = expected.find(quote, i + 1);
    if (end == std::string_view::npos) break;
    options.push_back(expected.substr(i + 1, end - i - 1));
    i = end;
  }
  return options;
}

}  // namespace

std::optional<std::string> misspelledOption(std::string_view value, std::string_view expected) {
  value = unquoted(value);
  if (value.size() < 3) return std::nullopt;
  unsigned limit = value.size() < 6 ? 1 : 2;
  std::optional<std::string> found;
  for (std::string_view option : quotedOptions(expected)) {
    if (option != value && editDistance(value, option, limit) <= limit) {
      if (found) return std::nullopt;  // two as close: no guess
      found = std::string(option);
    }
  }
  return found;
}

std::optional<std::string> optionInOtherCase(std::string_view value, std::string_view expected) {
  value = unquoted(value);
  auto lower = [](std::string_view text) {
    std::string out(text);
    for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return out;
  };
  std::string wanted = lower(value);
  for (std::string_view option : quotedOptions(expected)) {
    if (option != value && lower(option) == wanted) return std::string(option);
  }
  return std::nullopt;
}

}  // namespace tritonc::sema

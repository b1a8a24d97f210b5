//===- ModelGenerator.cpp - well-typed generated models -------------------===//
#include "ModelGenerator.h"

#include <fmt/format.h>

namespace tritonc::bench {

namespace {
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

}  // namespace

std::string generateModels(size_t lines) {
  std::string out;
  size_t produced = 0;
  for (size_t group = 0; produced < lines; ++group) {
    out += fmt::format(fmt::runtime(kTemplate), group);
    produced += 50;
  }
  return out;
}


}  // namespace tritonc::bench

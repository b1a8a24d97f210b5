//===- PackLayout.h - which ternary weights pack by columns -----*- C++ -*-===//
//
// TOOLCHAIN.md packs a ternary weight row by row along its reduction
// dimension. For `F.linear`-style weights `[out, in]` and convolutions that
// is the last dimension, the rows of the tensor as stored. A tutorial-style
// weight used as the right operand of `@` (`x @ w`, w `[in, out]`) reduces
// over its first dimension, so it is packed by columns (the rows of w^T).
//
//===----------------------------------------------------------------------===//
#ifndef TRITONC_IRGEN_PACKLAYOUT_H
#define TRITONC_IRGEN_PACKLAYOUT_H

#include "tritonc/ir/IR.h"

namespace tritonc {

/// Sets WeightDecl::packByColumns for every 2-D ternary weight whose every use,
/// followed through applications of other layers and fn calls, is as the right
/// operand of a matmul. Computed on the IR before optimization, so every
/// optimization level packs a model's weights alike.
void annotatePackLayouts(ir::Module& module);

}  // namespace tritonc

#endif

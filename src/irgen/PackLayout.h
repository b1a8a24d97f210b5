//===- PackLayout.h - how ternary weights pack along reductions -*- C++ -*-===//
//
// TOOLCHAIN.md packs a ternary weight row by row along its reduction
// dimension. For `F.linear`-style weights `[out, in]` and convolutions that
// is the last dimension, the rows of the tensor as stored. A tutorial-style
// weight used as the right operand of `@` (`x @ w`, w `[in, out]`, or
// `[..., in, out]` in a batched product) reduces over its second-to-last
// dimension, so it is packed by columns (the rows of w with its last two
// dimensions swapped). A weight of rank >= 3 used as the left operand of a
// batched `@` reduces over its last dimension: its runs are the last
// dimension's, not the rows of its first.
//
//===----------------------------------------------------------------------===//
#ifndef TRITONC_IRGEN_PACKLAYOUT_H
#define TRITONC_IRGEN_PACKLAYOUT_H

#include "tritonc/ir/IR.h"

namespace tritonc {

/// Sets WeightDecl::packRuns for every ternary weight of rank >= 2 whose every
/// use, followed through applications of other layers and fn calls, is as the
/// right operand of a matmul (Columns), or of rank >= 3 as the left operand
/// (LastDim). Computed on the IR before optimization, so every
/// optimization level packs a model's weights alike.
void annotatePackLayouts(ir::Module& module);

}  // namespace tritonc

#endif

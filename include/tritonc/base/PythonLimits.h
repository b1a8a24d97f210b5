//===- PythonLimits.h - limits of CPython's compiler that generated code meets -===//
//
// A program the compiler accepts never fails at import (LANGUAGE.md §6), so
// the checker, the inliner and the emitter keep generated code within what
// CPython compiles.
//
//===----------------------------------------------------------------------===//
#pragma once

namespace tritonc {

/// The deepest indentation the emitter writes (Python's parser stops at 100).
inline constexpr int kMaxPythonIndent = 99;

/// Loops nested in one function body: CPython's limit of 20 statically
/// nested blocks (CO_MAXBLOCKS; "too many statically nested blocks").
inline constexpr int kMaxPythonLoops = 20;

/// The deepest nested list torch.tensor() turns into a tensor ("too many
/// dimensions" past it).
inline constexpr size_t kMaxTensorLiteralRank = 128;

/// A syntax tree at least this deep may nest far enough to reach
/// kMaxPythonIndent once emitted (every level of indentation is at least one
/// level of the tree, plus the item, its body and the statement). Shallower
/// trees never do, so `check` runs the emitter only on deeper ones.
inline constexpr unsigned kTreeDepthNeedingEmitterCheck = 64;

}  // namespace tritonc

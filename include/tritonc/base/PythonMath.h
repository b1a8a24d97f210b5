//===- PythonMath.h - where Python's math functions raise -------*- C++ -*-===//
//
// Numbers in a generated module are Python numbers; the checker (which
// diagnoses an operation that raises) and the constant folder (which must not
// fold one into a value) agree on where that happens through these.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cmath>

namespace tritonc {

/// Whether math.pow(x, y) raises: ValueError for a negative base with a
/// fractional exponent (Python's `**` would give a complex number) or zero
/// to a negative power; OverflowError when finite operands give a result
/// past the largest float (`10.0 ** 400`).
inline bool mathPowDomainError(double x, double y) {
  return (x < 0.0 && std::floor(y) != y) || (x == 0.0 && y < 0.0);
}
inline bool mathPowRaises(double x, double y) {
  return mathPowDomainError(x, y) ||
         (std::isfinite(x) && std::isfinite(y) && std::isinf(std::pow(x, y)));
}

/// Whether math.exp(x) raises OverflowError (a result past the largest float).
inline bool mathExpRaises(double x) { return std::isinf(std::exp(x)) && std::isfinite(x); }

}  // namespace tritonc

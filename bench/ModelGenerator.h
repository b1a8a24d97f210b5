//===- ModelGenerator.h - well-typed generated models -----------*- C++ -*-===//
//
// Source made of the layer styles users write (tutorial layers with weights
// as parameters, module-style blocks with instances, attention, quantization),
// renamed per copy, that type-checks without a diagnostic. Used by the check
// benchmark and by tritonc_bench_gen for whole-process measurements.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <string>

namespace tritonc::bench {

/// At least `lines` lines of well-typed Triton DSL (groups of 50 lines).
std::string generateModels(size_t lines);

}  // namespace tritonc::bench

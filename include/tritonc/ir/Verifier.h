//===- Verifier.h - IR invariants -------------------------------*- C++ -*-===//
#pragma once

#include <string>
#include <vector>

#include "tritonc/ir/IR.h"

namespace tritonc::ir {

/// Checks the structural invariants every pass must keep: ops belong to the
/// block that lists them, a block ends with its only terminator, every
/// operand is defined before its use in the same or an enclosing block
/// (dominance), regions yield as many values as their op has results, and
/// every value has a type. Returns one line per problem (empty: valid).
std::vector<std::string> verify(const Module& module);

}  // namespace tritonc::ir

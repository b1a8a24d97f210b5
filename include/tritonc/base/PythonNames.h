//===- PythonNames.h - the Python names of source identifiers ---*- C++ -*-===//
//
// The generated PyTorch module names things as the source does, except where
// Python, the module's own code or nn.Module already use a name. The emitter
// writes these names; the checker warns where a name in a state_dict changes.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <string_view>

namespace tritonc {

/// A source identifier's Python name: itself, with a '_' appended to Python's
/// keywords, to the names the generated code uses (`torch`, `self`, `str`,
/// ...) and to every name that begins with '_' (the generated names all do,
/// and none of them ends with '_'). A name that is such a name followed by
/// underscores gets one more (`lambda_` is `lambda__`), so two source names
/// never get one Python name.
std::string pyIdent(std::string_view name);

/// The Python name of a weight, sub-module or hyperparameter as an attribute
/// of its module, so its state_dict key: itself, with a '_' appended (by the
/// same rule) to Python's keywords, to names that begin with '_' (nn.Module's
/// and tritonrt's own attributes do) and to nn.Module's attribute names
/// (`training`, `parameters`, `to`, ...). The names of the generated code
/// (`torch`, `tritonrt`, `F`) are free as attributes. As a constructor
/// argument or a parameter of `_<L>_apply` it keeps pyIdent's.
std::string pyMember(std::string_view name);

}  // namespace tritonc

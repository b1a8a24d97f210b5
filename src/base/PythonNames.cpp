//===- PythonNames.cpp - the Python names of source identifiers -----------===//
#include "tritonc/base/PythonNames.h"

#include <unordered_set>

namespace tritonc {

namespace {

// Python's keywords: no name, not even an attribute (`self.class`).
const std::unordered_set<std::string_view>& keywords() {
  static const std::unordered_set<std::string_view> names = {
      "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
      "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global",
      "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return",
      "try", "while", "with", "yield"};
  return names;
}

// What the generated code names: modules, builtins, its own globals. Taken
// as variable names, free as attributes (`self.tritonrt` is a weight).
const std::unordered_set<std::string_view>& generatedNames() {
  static const std::unordered_set<std::string_view> names = {
      "torch", "nn", "F", "math", "tritonrt", "self", "super", "ENTRY", "range", "list", "int",
      "float", "bool", "len", "isinstance", "max", "min", "round", "abs", "str", "print",
      "tuple", "ValueError", "Exception"};
  return names;
}

// nn.Module's attributes (torch 1.13 and 2.x): weights, sub-modules and
// hyperparameters are attributes of a generated module, and one named
// `training`, `parameters` or `to` would replace torch's.
const std::unordered_set<std::string_view>& moduleAttributes() {
  static const std::unordered_set<std::string_view> names = {
      "T_destination", "add_module", "apply", "bfloat16", "buffers", "call_super_init",
      "children", "compile", "cpu", "cuda", "double", "dump_patches", "eval", "extra_repr",
      "float", "forward", "get_buffer", "get_extra_state", "get_parameter", "get_submodule", "half",
      "ipu", "load_state_dict", "modules", "mtia", "named_buffers", "named_children",
      "named_modules", "named_parameters", "parameters", "register_backward_hook",
      "register_buffer", "register_forward_hook", "register_forward_pre_hook",
      "register_full_backward_hook", "register_full_backward_pre_hook",
      "register_load_state_dict_post_hook", "register_load_state_dict_pre_hook",
      "register_module", "register_parameter", "register_state_dict_post_hook",
      "register_state_dict_pre_hook", "requires_grad_", "set_extra_state", "set_submodule",
      "share_memory", "state_dict", "to", "to_empty", "train", "training", "type", "xpu",
      "zero_grad"};
  return names;
}

// A name without its trailing underscores (`lambda__` -> `lambda`).
std::string_view stemOf(std::string_view name) {
  size_t last = name.find_last_not_of('_');
  return last == std::string_view::npos ? name : name.substr(0, last + 1);
}

// `name` escaped: a trailing '_'. A name that begins with two underscores
// and does not end with two would be mangled by Python inside a class body
// (`self.__w` is `self._Net__w`, a fn `__f` called in a method is looked up
// as `_Net__f`): it gets "_u__" instead, which ends with two underscores
// (no mangling) and makes no special name of Python's. The two forms never
// meet: one ends with "u__", the other ('_' after a name ending "__") with
// "___" or begins with a single '_'.
std::string escaped(std::string_view name) {
  bool mangled = name.size() >= 2 && name[0] == '_' && name[1] == '_' &&
                 !(name.size() >= 4 && name.substr(name.size() - 2) == "__");
  return std::string(name) + (mangled ? "_u__" : "_");
}

}  // namespace

std::string pyIdent(std::string_view name) {
  std::string_view stem = stemOf(name);
  if ((!name.empty() && name[0] == '_') || keywords().count(stem) != 0 ||
      generatedNames().count(stem) != 0) {
    return escaped(name);
  }
  return std::string(name);
}

std::string pyMember(std::string_view name) {
  std::string_view stem = stemOf(name);
  if ((!name.empty() && name[0] == '_') || keywords().count(stem) != 0 ||
      moduleAttributes().count(stem) != 0) {
    return escaped(name);
  }
  return std::string(name);
}

}  // namespace tritonc

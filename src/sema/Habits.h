//===- Habits.h - PyTorch, NumPy and Python spellings, and what to write -*- C++ -*-===//
//
// The users of Triton DSL write PyTorch every day, so `nn.Linear(...)`,
// `torch.cat(...)`, `self.conv1`, `x.view(-1, 784)` and `False` are the
// mistakes they make most. These tables turn such a spelling into the Triton
// DSL that means the same, for the checker's notes. They only suggest: the
// checker reports the error either way.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tritonc::sema {

/// Builtin functions whose first parameter is the tensor they work on, so
/// that `x.name(args)` is `name(x, args)`.
bool takesTensorFirst(std::string_view name);

/// The library a foreign namespace names, for the message ("PyTorch"), or
/// null when `name` is none of torch, nn, F, functional, np, numpy, math.
const char* foreignLibrary(std::string_view name);

/// The Triton DSL name for member `member` of a foreign namespace (`Linear`
/// for nn.Linear, `concat` for torch.cat, `relu` for nn.ReLU and F.relu,
/// `float32` for torch.float32), or nullopt when there is none.
std::optional<std::string_view> dslNameForForeign(std::string_view member);
/// The Triton DSL dtype of a torch dtype's name (`long` -> `int64`, `half` ->
/// `float16`, `float32`), or nullopt when `member` names no dtype.
std::optional<std::string_view> dslDTypeForForeign(std::string_view member);
/// The Triton DSL name of a torch function written bare (`cat` -> `concat`,
/// `clamp` -> `clip`): the functions of the renaming table only, not its
/// module and dtype spellings (`half` may well be a variable); and of a
/// Keras layer (`Dense` -> `Linear`, `BatchNormalization` -> `BatchNorm2d`).
std::optional<std::string_view> bareTorchFunction(std::string_view name);

/// The PyTorch spelling of a Keras, TensorFlow or JAX argument name (`kernel`
/// -> `kernel_size`, `use_bias` -> `bias`, `epsilon` -> `eps`, `rate` -> `p`),
/// or nullopt. The caller suggests it only where the callee takes that name.
std::optional<std::string_view> torchArgumentName(std::string_view name);

/// An option value written in another case (`"SAME"`, `'AbsMean'`): the option
/// of `expected` (a text that lists the options in quotes, "'absmean',
/// 'threshold' or 'stochastic'") that `value` (quoted or not) equals ignoring
/// case (without quotes); else nullopt.
std::optional<std::string> optionInOtherCase(std::string_view value, std::string_view expected);
/// An option value misspelled (`"absmaen"`, `"stochastc"`): the option of `expected` (as
/// for optionInOtherCase) one or two edits away (one for words under six letters), when only
/// one is; else nullopt.
std::optional<std::string> misspelledOption(std::string_view value, std::string_view expected);

/// The options quoted and listed: `"a", "b", "c"` with `quote` `"` and `last`
/// ", ", or `'a', 'b' or 'c'` with `'` and " or ".
std::string optionList(std::span<const std::string_view> options, std::string_view quote,
                       std::string_view last);

/// For a PyTorch layer with a ternary counterpart (Linear, Conv2d), that
/// counterpart's name.
std::optional<std::string_view> ternaryCounterpart(std::string_view dslName);

/// The Triton DSL for the tensor method call `base.member(args)` (`args` is
/// the source text between the parentheses, `positional` how many of them are
/// positional), e.g. `reshape(x, [-1, 784])` for `x.view(-1, 784)`, or
/// nullopt when the method has no counterpart. `call` is false for a member
/// that is not called (`x.ndim`).
std::optional<std::string> tensorMethodRewrite(std::string_view base, std::string_view member,
                                               std::string_view args, int positional, bool call);

/// PyTorch's sizes one by one where Triton DSL takes one list: `zeros(2, 784)`
/// is `zeros([2, 784])`, `reshape(x, -1, 784)` is `reshape(x, [-1, 784])`
/// (`fn` is the Triton DSL name; `positional` the texts of the positional
/// arguments, `named` those of the named ones, `name=value`). nullopt when
/// the call has no such form.
/// For a builtin whose sizes PyTorch takes one by one, the position of the
/// first size (`zeros`: 0, `reshape`: 1); else nullopt.
std::optional<size_t> firstSizeArgument(std::string_view fn);

std::optional<std::string> sizesAsListRewrite(std::string_view fn,
                                              const std::vector<std::string>& positional,
                                              const std::vector<std::string>& named);

/// `text` with Python's `True`/`False` (whole words) written `true`/`false`.
std::string pythonBoolsAsDsl(std::string_view text);

/// `text` with PyTorch's `x.size(i)` written as `x.shape[i]`.
std::string sizeCallsAsShape(std::string_view text);

/// For a PyTorch function that Triton DSL lacks (`tril`, `where`,
/// `masked_fill`, ...), how to write it with the builtins; else nullopt.
std::optional<std::string_view> missingFunctionHint(std::string_view name);

/// For a Python spelling of a keyword constant (True, False, None, ...), what
/// to write instead, or nullopt.
std::optional<std::string_view> pythonConstantFix(std::string_view name);

}  // namespace tritonc::sema

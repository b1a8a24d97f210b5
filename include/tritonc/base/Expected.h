//===- Expected.h - results of operations that touch the environment -*- C++ -*-===//
//
// `Expected<T>` holds either a value or an `Error` (a message about the
// environment: a file that cannot be read, a cache that cannot be written).
// User mistakes in a source file are never Errors; they are diagnostics.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <utility>
#include <variant>

#include "tritonc/base/Check.h"

namespace tritonc {

/// An environment failure with a human-readable message.
struct Error {
  std::string message;
  uint32_t offset = UINT32_MAX;  ///< the source byte offset it is about, when known
};

/// A value or an Error. Check with `if (!result)` before dereferencing.
template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : storage_(std::move(value)) {}          // NOLINT: implicit by design
  Expected(Error error) : storage_(std::move(error)) {}      // NOLINT: implicit by design

  explicit operator bool() const { return storage_.index() == 0; }
  T& operator*() {
    TRITONC_CHECK(*this, "dereferencing an Expected that holds an error");
    return std::get<0>(storage_);
  }
  const T& operator*() const {
    TRITONC_CHECK(*this, "dereferencing an Expected that holds an error");
    return std::get<0>(storage_);
  }
  T* operator->() { return &**this; }
  const T* operator->() const { return &**this; }
  const Error& error() const {
    TRITONC_CHECK(!*this, "asking a successful Expected for its error");
    return std::get<1>(storage_);
  }
  Error takeError() { return std::move(std::get<1>(storage_)); }

 private:
  std::variant<T, Error> storage_;
};

}  // namespace tritonc

/// Evaluates `expr` (an Expected); on error returns the error from the caller.
#define TRITONC_TRY(var, expr)                  \
  auto var##OrErr = (expr);                     \
  if (!var##OrErr) {                            \
    return var##OrErr.takeError();              \
  }                                             \
  auto& var = *var##OrErr

//===- Check.h - invariant checks ------------------------------*- C++ -*-===//
//
// The third error channel of the project (see docs/ARCHITECTURE.md): user
// mistakes become diagnostics, environment failures become Expected<T>, and a
// broken invariant of the compiler itself aborts here with a message. Checks
// stay enabled in release builds: a wrong answer is worse than a crash report.
//
//===----------------------------------------------------------------------===//
#pragma once

namespace tritonc::detail {
[[noreturn]] void checkFailed(const char* cond, const char* file, int line, const char* msg);
}  // namespace tritonc::detail

/// Aborts with a "please report" message when `cond` is false.
#define TRITONC_CHECK(cond, msg)                                                 \
  do {                                                                           \
    if (!(cond)) [[unlikely]] {                                                  \
      ::tritonc::detail::checkFailed(#cond, __FILE__, __LINE__, msg);            \
    }                                                                            \
  } while (false)

/// Marks code that no input can reach.
#define TRITONC_UNREACHABLE(msg) ::tritonc::detail::checkFailed("unreachable", __FILE__, __LINE__, msg)

//===- Check.cpp - invariant checks ---------------------------------------===//
#include "tritonc/base/Check.h"

#include <cstdio>
#include <cstdlib>

namespace tritonc::detail {

void checkFailed(const char* cond, const char* file, int line, const char* msg) {
  std::fprintf(stderr,
               "tritonc: internal compiler error: %s\n  check '%s' failed at %s:%d\n"
               "  please report this, with the input that caused it.\n",
               msg, cond, file, line);
  std::fflush(stderr);
  std::abort();
}

}  // namespace tritonc::detail

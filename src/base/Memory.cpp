//===- Memory.cpp ---------------------------------------------------------===//
#include "tritonc/base/Memory.h"

#include <sys/mman.h>

#include <cstdint>

namespace tritonc {

void adviseHugePages(void* data, size_t bytes) {
  constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
  if (data == nullptr || bytes < 2 * kHugePage) {
    return;
  }
#ifdef MADV_HUGEPAGE
  auto begin = (reinterpret_cast<uintptr_t>(data) + kHugePage - 1) & ~(kHugePage - 1);
  auto end = (reinterpret_cast<uintptr_t>(data) + bytes) & ~(kHugePage - 1);
  if (end > begin) {
    (void)::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
  }
#endif
}

}  // namespace tritonc

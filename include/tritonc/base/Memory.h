//===- Memory.h - memory hints for large compiler arrays --------*- C++ -*-===//
#pragma once

#include <cstddef>

namespace tritonc {

/// Asks the kernel to back the pages of [data, data + bytes) with huge pages
/// when the region is large (a token or node array of a big file). A fresh
/// 4 KiB page costs a fault on first touch; for arrays of hundreds of MiB the
/// faults are a third of the lexer's and parser's time. Only a hint: does
/// nothing for small regions or where transparent huge pages are off.
void adviseHugePages(void* data, size_t bytes);

}  // namespace tritonc

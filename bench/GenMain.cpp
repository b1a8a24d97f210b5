//===- GenMain.cpp - tritonc_bench_gen: print generated models ------------===//
//
//   tritonc_bench_gen LINES > models.tri
//
//===----------------------------------------------------------------------===//
#include <cstdio>
#include <cstdlib>

#include "ModelGenerator.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fputs("usage: tritonc_bench_gen LINES\n", stderr);
    return 2;
  }
  std::string text = tritonc::bench::generateModels(std::strtoull(argv[1], nullptr, 10));
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

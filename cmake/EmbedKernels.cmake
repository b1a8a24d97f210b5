# Embeds the CUDA kernel templates into tritonc, so that every generated
# <stem>_kernels.cu compiles on its own. Run as a script:
#   cmake -DUMBRELLA=kernels/cuda/tritonc_kernels.cuh -DOUTPUT=CudaKernelSource.cpp -P EmbedKernels.cmake
# Every *.cuh next to the umbrella is concatenated in name order (kernels/cuda
# names its headers in dependency order), the umbrella last; local includes and
# `#pragma once` are dropped (system includes such as <cuda_fp16.h> stay).
cmake_minimum_required(VERSION 3.20)

get_filename_component(_dir "${UMBRELLA}" DIRECTORY)
file(GLOB _files LIST_DIRECTORIES false "${_dir}/*.cuh")
list(SORT _files)
list(REMOVE_ITEM _files "${UMBRELLA}")
list(APPEND _files "${UMBRELLA}")

set(_text "")
foreach(_file IN LISTS _files)
  file(READ "${_file}" _raw)
  string(REGEX REPLACE "#[ \t]*include[ \t]+\"[^\"\n]+\"" "" _raw "${_raw}")
  string(REGEX REPLACE "#[ \t]*pragma[ \t]+once" "" _raw "${_raw}")
  get_filename_component(_name "${_file}" NAME)
  string(APPEND _text "// ---- kernels/cuda/${_name} ----\n${_raw}\n")
endforeach()
string(FIND "${_text}" ")tck\"" _clash)
if(NOT _clash EQUAL -1)
  message(FATAL_ERROR "EmbedKernels: the kernel sources contain the raw-string delimiter )tck\"")
endif()
file(WRITE "${OUTPUT}.tmp" "// Generated from kernels/cuda by cmake/EmbedKernels.cmake; do not edit.\n"
  "namespace tritonc {\nextern const char* const kCudaKernelSource;\n"
  "const char* const kCudaKernelSource = R\"tck(${_text})tck\";\n}  // namespace tritonc\n")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")

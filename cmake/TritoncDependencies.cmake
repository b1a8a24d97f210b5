# Every third-party dependency comes from Debian's packages through find_package.
# LLVM is not linked: its Support library served one function (finding nvcc
# on PATH, now base/FileSystem's findProgramOnPath) and brought libtinfo, its
# signal handlers and its static constructors into every start of tritonc.

find_package(CLI11 REQUIRED CONFIG)
find_package(fmt REQUIRED CONFIG)
find_package(Threads REQUIRED)
find_package(spdlog REQUIRED CONFIG)
# spdlog's header-only target links the shared libfmt (for SPDLOG_FMT_EXTERNAL);
# we use fmt header-only, so its headers and definitions are taken without the
# library: tritonc links statically (tools/tritonc/CMakeLists.txt).
add_library(tritonc_spdlog INTERFACE)
get_target_property(_spdlog_includes spdlog::spdlog_header_only INTERFACE_INCLUDE_DIRECTORIES)
if(_spdlog_includes)
  target_include_directories(tritonc_spdlog SYSTEM INTERFACE ${_spdlog_includes})
endif()
target_compile_definitions(tritonc_spdlog INTERFACE SPDLOG_FMT_EXTERNAL)
target_link_libraries(tritonc_spdlog INTERFACE fmt::fmt-header-only Threads::Threads)
find_package(zstd REQUIRED CONFIG)
# Static libraries where Debian ships them: every shared library costs start-up time.
if(TARGET zstd::libzstd_static)
  add_library(tritonc_zstd ALIAS zstd::libzstd_static)
else()
  add_library(tritonc_zstd ALIAS zstd::libzstd_shared)
endif()
find_package(xxHash REQUIRED MODULE)
find_package(yaml-cpp REQUIRED CONFIG)
# yaml-cpp's CMake package names only the shared library; Debian ships the
# static one next to it.
get_target_property(_yaml_includes yaml-cpp INTERFACE_INCLUDE_DIRECTORIES)
find_library(TRITONC_YAML_CPP_STATIC NAMES libyaml-cpp.a)
add_library(tritonc_yaml INTERFACE)
if(TRITONC_YAML_CPP_STATIC)
  target_link_libraries(tritonc_yaml INTERFACE ${TRITONC_YAML_CPP_STATIC})
  if(_yaml_includes)
    target_include_directories(tritonc_yaml SYSTEM INTERFACE ${_yaml_includes})
  endif()
else()
  target_link_libraries(tritonc_yaml INTERFACE yaml-cpp)
endif()
if(TRITONC_BUILD_TESTS)
  find_package(GTest REQUIRED CONFIG)
endif()
if(TRITONC_BUILD_BENCH)
  find_package(benchmark REQUIRED CONFIG)
endif()

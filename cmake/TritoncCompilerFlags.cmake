# Warnings, sanitizers and link options shared by every target of the project.
add_library(tritonc_options INTERFACE)
target_compile_options(tritonc_options INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wimplicit-fallthrough
  -Wno-unused-parameter)
if(TRITONC_WERROR)
  target_compile_options(tritonc_options INTERFACE -Werror)
endif()
if(TRITONC_SANITIZE)
  target_compile_options(tritonc_options INTERFACE -fsanitize=address,undefined
    -fno-omit-frame-pointer -fno-sanitize-recover=all)
  target_link_options(tritonc_options INTERFACE -fsanitize=address,undefined)
endif()
# Only link the shared libraries whose symbols are used (with
# -DTRITONC_STATIC_RUNTIME=OFF: each one loaded costs every start-up).
target_link_options(tritonc_options INTERFACE -Wl,--as-needed)

find_program(CCACHE_PROGRAM ccache)
if(CCACHE_PROGRAM AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(CMAKE_CXX_COMPILER_LAUNCHER "${CCACHE_PROGRAM}")
endif()

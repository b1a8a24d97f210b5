# The build id identifies the exact compiler build (it is part of every cache key):
# the git commit when building from a checkout, plus a dirty marker.
set(TRITONC_BUILD_ID "unknown")
find_package(Git QUIET)
if(GIT_FOUND AND EXISTS "${CMAKE_SOURCE_DIR}/.git")
  execute_process(COMMAND "${GIT_EXECUTABLE}" rev-parse --short=12 HEAD
    WORKING_DIRECTORY "${CMAKE_SOURCE_DIR}" OUTPUT_VARIABLE _rev
    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _rc)
  if(_rc EQUAL 0 AND _rev)
    set(TRITONC_BUILD_ID "${_rev}")
  endif()
endif()
configure_file("${CMAKE_SOURCE_DIR}/cmake/Version.h.in"
  "${CMAKE_BINARY_DIR}/generated/tritonc/base/Version.h" @ONLY)

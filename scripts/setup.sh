#!/usr/bin/env bash
# Installs what tritonc needs from Debian's packages (only what is missing),
# then configures and builds it in ./build. Safe to run again.
#   TRITONC_BUILD_DIR   build directory (default: build)
#   TRITONC_CMAKE_ARGS  extra CMake arguments (CI passes -DTRITONC_WERROR=ON)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  cmake ninja-build make g++ ccache python3
  llvm-14-tools clang clang-14 libclang-rt-14-dev
  libcli11-dev libfmt-dev libspdlog-dev libzstd-dev libxxhash-dev libyaml-cpp-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3-torch
)
missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

build_dir="${TRITONC_BUILD_DIR:-build}"
# shellcheck disable=SC2086
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo ${TRITONC_CMAKE_ARGS:-} \
  >/dev/null
cmake --build "$build_dir"
echo "setup: built $build_dir/tools/tritonc/tritonc"

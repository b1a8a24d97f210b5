#!/usr/bin/env bash
# Builds and runs the host-side check of kernels/cuda's packing and index arithmetic.
set -uo pipefail
cd "$(dirname "$0")/../.."
out="$(mktemp -d)"
if ! g++ -std=c++17 -Wall -Wextra -Werror -I kernels/cuda tests/cuda/host_check.cpp -o "$out/host_check"; then
  echo "FAIL host_check does not build"; echo "0 passed, 1 failed"; rm -rf "$out"; exit 1
fi
"$out/host_check"; status=$?
rm -rf "$out"
exit $status

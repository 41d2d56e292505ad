#!/usr/bin/env bash
# Builds syncsim and its tests with AddressSanitizer and UndefinedBehaviorSanitizer into
# build-asan/ (RelWithDebInfo, CUDA off) and runs the whole suite there. Any sanitizer report
# fails its test. In that build only, the tests run SimGrid's actors as threads
# (SYNCSIM_SIMGRID_CFG=--cfg=contexts/factory:thread) and read tests/lsan.supp.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSYNCSIM_SANITIZE=ON >/dev/null
cmake --build build-asan -j "$(nproc)"
cd build-asan && ctest --output-on-failure --schedule-random -j "$(nproc)"

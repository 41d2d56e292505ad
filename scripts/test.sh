#!/usr/bin/env bash
# Installs the dependencies, builds, and runs every test suite through ctest (in random order:
# no test may depend on another), then the same suite under AddressSanitizer and
# UndefinedBehaviorSanitizer (scripts/test-asan.sh, build-asan/), then a short smoke run of
# every fuzz target (scripts/fuzz.sh smoke, build-fuzz/; skipped without clang).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh
(cd build && ctest --output-on-failure --schedule-random -j "$(nproc)")
# each CUnit test alone as well (about 1.5 min more): SYNCSIM_TEST_EACH=1 ./scripts/test.sh
if [ "${SYNCSIM_TEST_EACH:-0}" = 1 ]; then ./scripts/test-each.sh build; fi
./scripts/test-asan.sh
./scripts/fuzz.sh smoke

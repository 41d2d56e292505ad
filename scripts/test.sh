#!/usr/bin/env bash
# Installs the dependencies, builds, and runs every test suite through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh
cd build && ctest --output-on-failure -j "$(nproc)"

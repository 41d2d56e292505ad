#!/usr/bin/env bash
# Installs the dependencies, builds, and runs the main job: `syncsim compare` with its embedded
# defaults (Fashion-MNIST, mlp, 8 workers; bsp, ssp, fedavg, selsync; 5 Gbps and 100 Gbps).
# Extra arguments go to `syncsim compare`.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh
exec ./build/syncsim compare --out out/compare "$@"

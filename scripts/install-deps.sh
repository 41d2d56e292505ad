#!/usr/bin/env bash
# Installs the Debian packages syncsim needs to build, test and run. Idempotent; run as root
# (or with sudo available). CUDA is not installed here: it is optional and used when present.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libsimgrid-dev       # SimGrid: simulated time, network model, actors (also smpicc/smpirun)
  libgsl-dev           # statistics for the analysis (linked to OpenBLAS's CBLAS)
  libopenblas-dev      # CPU backend GEMM/BLAS
  libcunit1-dev        # test suites
  zlib1g-dev           # gzip-compressed IDX data sets
  libcjson-dev         # summary.json and other JSON outputs; torch.profiler traces read by profile import
  libinih-dev          # INI files: config.ini, sweep files
  gnuplot-nox          # figures
  libopenmpi-dev openmpi-bin # sweeps spread over mpirun ranks (optional at build time)
  dataset-fashion-mnist # the default real data set (/usr/share/datasets/fashion-mnist)
  sword-text-web       # web-bible, the language models' corpus (World English Bible, public domain)
  libxml2-dev          # platform files checked (well-formedness, line numbers) before SimGrid reads them
  clang libclang-rt-14-dev # libFuzzer targets (scripts/fuzz.sh; CI runs a short smoke of each)
  iproute2             # ip and tc: the network testbed (scripts/testbed.sh)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: run as root (apt-get needs it)" >&2; exit 1; }
  SUDO=sudo
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"

#!/usr/bin/env bash
# Builds the libFuzzer targets with clang into build-fuzz/ and runs each of them:
#     scripts/fuzz.sh smoke          20,000 inputs each (what CI runs)
#     scripts/fuzz.sh 3600 [NAME]    an hour each (or only fuzz_NAME), in the background if you
#                                    like: a crash stops the target and leaves crash-* in its
#                                    directory build-fuzz/runs/NAME/, which the log names; on a
#                                    shared machine run it as `nice -n 19 scripts/fuzz.sh ...`
# Targets: trace, profile, csv, chakra, torch_trace (traces/fuzz/), platform, config, sweep, nccl_log
# (tests/fuzz/). Each starts
# from its seed corpus in the repository and keeps what it finds in build-fuzz/runs/NAME/corpus.
# Without clang it says so and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-smoke}"
only="${2:-}"
if ! command -v clang >/dev/null; then
  echo "fuzz: clang not found (scripts/install-deps.sh installs it): fuzz targets skipped"
  exit 0
fi
targets=(trace profile csv chakra torch_trace platform config sweep nccl_log)
cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSYNCSIM_FUZZ=ON >/dev/null
cmake --build build-fuzz -j "$(nproc)" --target "${targets[@]/#/fuzz_}"
if [ "$mode" = smoke ]; then limit=(-runs=20000); else limit=(-max_total_time="$mode"); fi
root="$PWD"
for t in "${targets[@]}"; do
  [ -n "$only" ] && [ "$only" != "$t" ] && continue
  case "$t" in
    trace | profile | csv | chakra | torch_trace) bin="$root/build-fuzz/traces/fuzz_$t" seeds="$root/traces/fuzz/corpus_$t" ;;
    *) bin="$root/build-fuzz/tests/fuzz/fuzz_$t" seeds="$root/tests/fuzz/corpus_$t" ;;
  esac
  dir="$root/build-fuzz/runs/$t"
  mkdir -p "$dir/corpus"
  start=$(date +%s)
  if ! (cd "$dir" && "$bin" "${limit[@]}" -print_final_stats=1 corpus "$seeds" >log 2>&1); then
    tail -n 40 "$dir/log"
    echo "fuzz: fuzz_$t FAILED (input and log in $dir)" >&2
    exit 1
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$dir/log")
  echo "fuzz: fuzz_$t ${runs:-?} inputs in $(($(date +%s) - start)) s (${rate:-?}/s), no crash"
done

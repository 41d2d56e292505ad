#!/usr/bin/env bash
# Runs every CUnit test of every program alone (SS_TEST='=name'), in its own process: a test
# that passes only after another one fails here. Usage: scripts/test-each.sh [BUILD_DIR]
# (default build/, built by scripts/build.sh). Prints one line per failing test and a count.
set -uo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
failed=0 total=0
for prog in "$build"/tests/test_*; do
  [ -x "$prog" ] || continue
  names=$(cd "$build/tests" && SS_TEST_LIST=1 "./$(basename "$prog")" 2>/dev/null)
  if [ $? -eq 77 ]; then
    echo "skipped: $(basename "$prog") (cannot run here: $names)"
    continue
  fi
  while IFS= read -r name; do
    [ -n "$name" ] || continue
    total=$((total + 1))
    if ! (cd "$build/tests" && SS_TEST="=$name" "./$(basename "$prog")" >/dev/null 2>&1); then
      echo "FAILED alone: $(basename "$prog"): $name"
      failed=$((failed + 1))
    fi
  done <<<"$names"
done
echo "test-each: $total tests run alone, $failed failed"
[ "$failed" -eq 0 ]

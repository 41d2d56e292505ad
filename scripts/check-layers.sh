#!/usr/bin/env bash
# The dependency rules of sim/README.md, checked: what each part of sim/ may include, internal
# headers kept in their folder, the policy library free of SimGrid and MPI, and no two source
# files that call each other (read from the objects of the built libraries).
#   scripts/check-layers.sh [BUILD_DIR]     (default build/; run by ctest as layer_rules)
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
fail=0
bad() { printf 'check-layers: %s\n' "$*" >&2; fail=1; }

# 1. includes, by folder: file:line and the rule it breaks
includes() { grep -Hn '^#include' "$@" 2>/dev/null; }
while IFS=: read -r f n inc; do
  case "$inc" in
    *'<simgrid/'*|*'<xbt/'*|*'<libxml/'*) bad "$f:$n: $inc (SimGrid and libxml2 belong to sim/net/)" ;;
    *'<mpi.h>'*|*'common/mpi_api.h'*) bad "$f:$n: $inc (MPI belongs to sim/exchange/exchange_mpi*)" ;;
    *'"kernels/'*|*'"emu/'*|*'"traces/'*|*'"analysis/'*|*'"cli/'*)
      bad "$f:$n: $inc (sim/ uses nothing above it)" ;;
  esac
done < <(includes $(git ls-files 'sim/*.c' 'sim/*.h' 'sim/*.cpp' | grep -v '^sim/net/' |
                    grep -v '^sim/exchange/exchange_mpi') | grep -v 'common/mpi_api.h' ;
         includes $(git ls-files 'sim/exchange/exchange_mpi*') | grep -E '<simgrid/|<xbt/|<libxml/')
while IFS=: read -r f n inc; do
  case "$inc" in
    *'"sim/policy/'*|*'"sim/exchange/exchange.h"'*|*'"sim/compute/'*|*'"sim/net/coll/coll_opts.h"'*|*'"common/'*|*'<'*) ;;
    *) bad "$f:$n: $inc (sim/policy/ uses the exchange seam, the compute model, the collectives' options and common/ only)" ;;
  esac
done < <(includes $(git ls-files 'sim/policy/*.c' 'sim/policy/*.h'))
while IFS=: read -r f n inc; do
  case "$inc" in *'"sim/policy/'*|*'"sim/exchange/'*|*'"emu/'*|*'"traces/'*)
    bad "$f:$n: $inc (sim/net/ and sim/compute/ use nothing above them)" ;; esac
done < <(includes $(git ls-files 'sim/net/*' 'sim/compute/*' | grep -E '\.(c|h|cpp)$'))

# 2. internal headers (*internal.h) only from their own folder or below it (and tests/)
while IFS=: read -r f n inc; do
  hdr=$(sed -n 's/.*"\(.*internal\.h\)".*/\1/p' <<<"$inc")
  [ -n "$hdr" ] || continue
  case "$(dirname "$f")/" in "$(dirname "$hdr")/"*) ;; *) bad "$f:$n: $inc (internal to $(dirname "$hdr")/)" ;; esac
done < <(includes $(git ls-files '*.c' '*.h' '*.cpp' '*.cu' | grep -v '^tests/'))

# 3. the policy library links neither SimGrid nor MPI nor the kernels
lib=$(find "$build" -name libss_policy.a 2>/dev/null | head -n 1)
if [ -z "$lib" ]; then
  bad "no libss_policy.a under $build: build first"
else
  leaks=$(nm -u "$lib" | awk '{print $2}' | grep -E '^(sg_|simgrid_|xbt_|MPI_|mpi_api|cblas_|device_|model_|layer_)' | sort -u)
  [ -z "$leaks" ] || bad "libss_policy.a needs $(tr '\n' ' ' <<<"$leaks")"
fi

# 4. no two files call each other: each object's undefined symbols against the others' definitions
defs=$(mktemp) uses=$(mktemp)
trap 'rm -f "$defs" "$uses"' EXIT
for a in $(find "$build" -name 'libss_*.a' -not -path '*fuzz*'); do
  nm -A --defined-only "$a" 2>/dev/null | awk '$(NF-1) ~ /^[TDBR]$/ {split($1, p, ":"); print $NF, p[2]}'
done | sort -u >"$defs"
for a in $(find "$build" -name 'libss_*.a' -not -path '*fuzz*'); do
  nm -A -u "$a" 2>/dev/null | awk '{split($1, p, ":"); print $NF, p[2]}'
done | sort -u >"$uses"
pairs=$(join "$uses" "$defs" | awk '$2 != $3 {print $2, $3}' | sort -u)
while read -r a b; do
  [ -n "$a" ] || continue
  [[ "$a" < "$b" ]] && grep -qx "$b $a" <<<"$pairs" && bad "${a%.o} and ${b%.o} call each other"
done <<<"$pairs"

[ "$fail" = 0 ] && echo "check-layers: sim/ parts, internal headers, libss_policy.a and calls between files as sim/README.md says"
exit "$fail"

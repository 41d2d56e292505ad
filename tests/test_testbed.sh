#!/usr/bin/env bash
# shellcheck disable=SC2016 # the bash -c snippets expand their own arguments
# Checks scripts/testbed.sh end to end on this machine:
#   tests/test_testbed.sh SCRIPT [MPI_PROBE [SYNCSIM]]
# up 2 namespaces at 100mbit, its state, hostfile, agent and qdiscs, idempotent up, refusals of a
# different shape and bad arguments, a 25 MB all-reduce of MPI_PROBE across the namespaces (its
# time against the closed form, the ranks in distinct namespaces), a `syncsim real` run stopped
# through `run` (SIGTERM to run: the ranks stop and write their outputs), down (nothing left, unrelated
# namespaces and links untouched), down again, non-root and missing-tc messages, and a failure and
# a Ctrl-C half way through up (both roll back everything).
# Exits 77 (ctest: skipped) when it cannot create a namespace (not root, no ip/tc, refused) and,
# after every other check, when there is no MPI_PROBE (MPI not found at build time).
set -uo pipefail

SCRIPT=${1:?usage: test_testbed.sh SCRIPT [MPI_PROBE [SYNCSIM]]}
PROBE=${2:-}
SYNCSIM=${3:-}
export SYNCSIM_TESTBED_NAME=ctest-$$
STATE_DIR=/run/syncsim-testbed/$SYNCSIM_TESTBED_NAME
FAILS=0
OWN_NS="" OWN_LINK="" TMP=""

skip() {
  echo "SKIPPED: $*"
  exit 77
}
fail() {
  echo "FAIL: $*"
  FAILS=$((FAILS + 1))
}
pass() { echo "ok: $*"; }
check() { # DESCRIPTION COMMAND...
  local what=$1
  shift
  if "$@"; then pass "$what"; else fail "$what"; fi
}

cleanup() {
  "$SCRIPT" down >/dev/null 2>&1
  [ -z "$OWN_NS" ] || ip netns del "$OWN_NS" 2>/dev/null
  [ -z "$OWN_LINK" ] || ip link del "$OWN_LINK" 2>/dev/null
  [ -z "$TMP" ] || rm -rf "$TMP"
}

# ---- can this machine run it at all? ----
[ "$(id -u)" -eq 0 ] || skip "not root: network namespaces need root (run the suite as root)"
command -v ip >/dev/null || skip "no 'ip' (iproute2)"
command -v tc >/dev/null || skip "no 'tc' (iproute2)"
probe_ns=sstbprobe$$
ip netns add "$probe_ns" 2>/dev/null || skip "'ip netns add' refused (no CAP_SYS_ADMIN/CAP_NET_ADMIN here)"
if ! ip -n "$probe_ns" link set lo up 2>/dev/null ||
  ! tc -n "$probe_ns" qdisc add dev lo root handle 1: tbf rate 1gbit burst 70000 limit 100000 2>/dev/null; then
  ip netns del "$probe_ns"
  skip "the kernel refuses a tbf qdisc (CONFIG_NET_SCH_TBF, module sch_tbf)"
fi
have_netem=0 # DELAY needs it; some kernels (e.g. minimal VM kernels) are built without it
tc -n "$probe_ns" qdisc replace dev lo root handle 1: netem delay 1ms 2>/dev/null && have_netem=1
ip netns del "$probe_ns"
trap cleanup EXIT
TMP=$(mktemp -d)

# ---- unrelated things that must survive: a namespace named like a testbed's, a link, and an
# address in the first candidate subnet when it is free (up must pick another) ----
OWN_NS=sstb$(printf '%04x' $((RANDOM % 65536)))-1
ip netns add "$OWN_NS" || fail "could not create the unrelated namespace $OWN_NS"
OWN_LINK=sstbu$(($$ % 1000000))a # a veth pair (some kernels have no dummy links)
ip link add "$OWN_LINK" type veth peer name "${OWN_LINK%a}b" || fail "could not create the unrelated link $OWN_LINK"
blocked=""
if ! ip -o -4 addr show | grep -q ' 10\.213\.0\.' && ! ip -4 route show table all | grep -q '10\.213\.0\.'; then
  ip addr add 10.213.0.254/24 dev "$OWN_LINK" && blocked=10.213.0.0/24
fi
routes_before=$(ip -4 route show table all)

# ---- up ----
out=$("$SCRIPT" up 2 100mbit 2>&1)
check "up 2 100mbit succeeds ($out)" [ $? -eq 0 ]
state=$STATE_DIR/state
check "state file $state exists" [ -f "$state" ]
get() { sed -n "s/^$1=//p" "$state" | head -1; }
check "state: status=up, n=2, rate 100 Mbit/s, delay 0" \
  [ "$(get status)/$(get n)/$(get rate_bps)/$(get delay_us)" = up/2/100000000/0 ]
subnet=$(get subnet)
base=${subnet%.0/24}
check "subnet $subnet is not $blocked (taken before up)" [ "$subnet" != "$blocked" ]
check "subnet $subnet collides with no route present before up" \
  bash -c '! grep -q "$1" <<<"$2"' _ "${base//./\\.}\." "$routes_before"
mapfile -t nss < <(sed -n 's/^ns=//p' "$state")
mapfile -t links < <(sed -n 's/^link=//p;s/^bridge=//p' "$state")
check "2 namespaces recorded (${nss[*]})" [ ${#nss[@]} -eq 2 ]
check "namespaces prefixed sstb, not the unrelated $OWN_NS" \
  bash -c '[[ $1 == sstb* && $2 == sstb* && $1 != "$3" && $2 != "$3" ]]' _ "${nss[0]}" "${nss[1]}" "$OWN_NS"
for ns in "${nss[@]}"; do
  check "namespace $ns exists" [ -e "/run/netns/$ns" ]
  check "lo is up in $ns" bash -c 'ip -n "$1" link show lo | grep -q "UP"' _ "$ns"
done
hostfile=$("$SCRIPT" hostfile)
check "hostfile lists .2 and .3 with one slot each" \
  [ "$(cat "$hostfile")" = "$base.2 slots=1"$'\n'"$base.3 slots=1" ]
agent=$("$SCRIPT" agent)
check "agent $agent is executable" [ -x "$agent" ]
check "agent runs a command in the namespace owning .3 (ssh-style options skipped)" \
  [ "$("$agent" -x -o BatchMode=yes "$base.3" ip netns identify)" = "${nss[1]}" ]
check "agent refuses an address of no namespace" bash -c '! "$1" 192.0.2.77 true 2>/dev/null' _ "$agent"
check "mpirun-args name the hostfile, agent and subnet" \
  bash -c '[[ $("$1" mpirun-args) == *"--hostfile $2"*"plm_rsh_agent $3"*"btl_tcp_if_include $4"* ]]' \
  _ "$SCRIPT" "$hostfile" "$agent" "$subnet"
id=$(get id)
for i in 1 2; do
  check "tbf 100Mbit on the egress of ${nss[i - 1]}" \
    bash -c 'tc -n "$1" qdisc show dev "$2" | grep -q "tbf.*rate 100Mbit"' _ "${nss[i - 1]}" "sstb${id}n$i"
  check "tbf 100Mbit on the bridge port into ${nss[i - 1]}" \
    bash -c 'tc qdisc show dev "$1" | grep -q "tbf.*rate 100Mbit"' _ "sstb${id}h$i"
done
check "status shows the subnet and the qdiscs" bash -c '"$1" status | grep -q "$2" && "$1" status | grep -q tbf' _ "$SCRIPT" "$subnet"

# ---- idempotence and refusals ----
out=$("$SCRIPT" up 2 100mbit 2>&1)
check "up again with the same shape succeeds and says so ($out)" bash -c '[ $1 -eq 0 ] && [[ $2 == *"already up"* ]]' _ $? "$out"
out=$("$SCRIPT" up 2 1gbit 2>&1)
check "up with another rate is refused, exit 1 ($out)" bash -c '[ $1 -eq 1 ] && [[ $2 == *"run "*down* ]]' _ $? "$out"
out=$("$SCRIPT" up 2 100mbps 2>&1)
check "rate 100mbps: exit 2 naming the valid forms ($out)" bash -c '[ $1 -eq 2 ] && [[ $2 == *"100mbps"*gbit* ]]' _ $? "$out"
out=$("$SCRIPT" up 0 1gbit 2>&1)
check "N=0: exit 2 ($out)" [ $? -eq 2 ]
out=$("$SCRIPT" up 2 1gbit 2sec 2>&1)
check "delay 2sec: exit 2 naming the valid forms ($out)" bash -c '[ $1 -eq 2 ] && [[ $2 == *"2sec"*ms* ]]' _ $? "$out"

# ---- ranks across the namespaces: a 25 MB all-reduce over 100mbit ----
if [ -n "$PROBE" ]; then
  bytes=25000000
  # Recursive doubling: for 2 ranks both send the whole buffer at once, so the time is the
  # links' (OpenMPI's default for 2 ranks, a ring, overlaps the two directions less: about 1.6x
  # the closed form on an idle machine, against 1.1x; both are bounded by it from below).
  out=$(timeout 90 "$SCRIPT" run --mca coll_tuned_use_dynamic_rules 1 \
    --mca coll_tuned_allreduce_algorithm 3 -- "$PROBE" "$bytes" 2>&1)
  rc=$?
  grep -v 'setpgid' <<<"$out" | sed 's/^/  probe: /'
  check "the probe ran through 'run' (exit $rc)" [ "$rc" -eq 0 ]
  t=$(sed -n 's/^allreduce_s=\([0-9.]*\) .*/\1/p' <<<"$out")
  # bandwidth-optimal all-reduce: each rank sends 2(N-1)/N of the buffer through its link
  closed=$(awk -v n=2 -v b="$bytes" -v r=100000000 'BEGIN { printf "%.6f", 2 * (n - 1) / n * b * 8 / r }')
  check "all-reduce ${t:-?} s >= 0.9 x the closed form $closed s (the links are shaped)" \
    awk -v t="${t:-0}" -v c="$closed" 'BEGIN { exit !(t >= 0.9 * c) }'
  check "all-reduce ${t:-?} s < 4 x the closed form $closed s" \
    awk -v t="${t:-1e9}" -v c="$closed" 'BEGIN { exit !(t < 4 * c) }'
  check "the all-reduce sum is right" grep -q 'sum_ok=1' <<<"$out"
  mapfile -t ranks < <(grep '^rank ' <<<"$out")
  check "2 ranks reported" [ ${#ranks[@]} -eq 2 ]
  read -r _ _ _ ns0 _ ino0 _ addr0 <<<"${ranks[0]:-}"
  read -r _ _ _ ns1 _ ino1 _ addr1 <<<"${ranks[1]:-}"
  check "ranks in distinct testbed namespaces ($ns0, $ns1)" \
    bash -c '[ "$1" != "$2" ] && [[ " $3 " == *" $1 "* && " $3 " == *" $2 "* ]]' _ "${ns0:-a}" "${ns1:-a}" "${nss[*]}"
  check "ranks' network namespaces differ from each other and from this one" \
    bash -c '[ "$1" != "$2" ] && [ "$1" != "$3" ] && [ "$2" != "$3" ]' _ "${ino0:-a}" "${ino1:-a}" "$(readlink /proc/self/ns/net)"
  check "ranks' addresses are the hostfile's ($addr0, $addr1)" \
    bash -c '[ "$1" != "$2" ] && grep -q "^$1 " "$3" && grep -q "^$2 " "$3"' _ "${addr0:-a}" "${addr1:-a}" "$hostfile"
fi

# ---- a real run stopped through run: SIGTERM (or Ctrl-C) to run reaches the ranks ----
if [ -n "$PROBE" ] && [ -n "$SYNCSIM" ]; then
  real_dir=$(mktemp -d /tmp/test_testbed_real.XXXXXX)
  # (a background job of a script ignores SIGINT, so the test sends run's other signal, TERM;
  # --foreground: timeout passes it to run alone, not to run's process group as well)
  timeout --foreground 120 "$SCRIPT" run -np 2 -- "$SYNCSIM" real --policy bsp --workers 2 --epochs 50 \
    --progress yes --device cpu --out "$real_dir/out" >"$real_dir/log" 2>&1 &
  run_pid=$!
  # the signal once rank 0's progress shows a few steps taken (polled for up to 100 s)
  for _ in $(seq 1 1000); do
    grep -Eq 'step ([3-9]|[1-9][0-9]+)/' "$real_dir/log" 2>/dev/null && break
    kill -0 "$run_pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -TERM "$run_pid" 2>/dev/null
  wait "$run_pid"
  rc=$?
  grep -v setpgid "$real_dir/log" | tail -4 | sed 's/^/  real: /'
  check "SIGTERM to run: the ranks stop at a step, exit 130 (got $rc)" [ "$rc" -eq 130 ]
  check "their outputs are written, status interrupted" \
    grep -q '"status":.*"interrupted"' "$real_dir/out/summary.json"
  check "metrics.csv complete (no temporary file left)" \
    bash -c '[ -f "$1/out/metrics.csv" ] && ! ls "$1"/out/*.tmp* >/dev/null 2>&1' _ "$real_dir"
  rm -rf "$real_dir"
fi

# ---- down: nothing of the testbed left, the unrelated namespace and link untouched ----
out=$("$SCRIPT" down 2>&1)
check "down succeeds ($out)" [ $? -eq 0 ]
for ns in "${nss[@]}"; do check "namespace $ns removed" [ ! -e "/run/netns/$ns" ]; done
for l in "${links[@]}"; do check "link $l removed" bash -c '! ip link show dev "$1" >/dev/null 2>&1' _ "$l"; done
check "no link named sstb$id* left" bash -c '! ip -o link show | grep -q "sstb$1"' _ "$id"
check "state directory $STATE_DIR removed" [ ! -e "$STATE_DIR" ]
check "unrelated namespace $OWN_NS untouched" [ -e "/run/netns/$OWN_NS" ]
check "unrelated link $OWN_LINK untouched" bash -c 'ip link show dev "$1" >/dev/null' _ "$OWN_LINK"
out=$("$SCRIPT" down 2>&1)
check "down again: exit 0, says nothing is up ($out)" bash -c '[ $1 -eq 0 ] && [[ $2 == *"nothing to do"* ]]' _ $? "$out"
check "status says down" [ "$("$SCRIPT" status)" = down ]

# ---- DELAY: netem under tbf on both sides, or a clear refusal where the kernel has no netem ----
out=$("$SCRIPT" up 2 100mbit 1ms 2>&1)
rc=$?
if [ "$have_netem" = 1 ]; then
  check "up 2 100mbit 1ms succeeds ($out)" [ "$rc" -eq 0 ]
  did=$(sed -n 's/^id=//p' "$STATE_DIR/state")
  check "netem 1ms with tbf 100Mbit under it on both sides of link 1" \
    bash -c 'for q in "$(tc -n "sstb$1-1" qdisc show dev "sstb$1n1")" "$(tc qdisc show dev "sstb$1h1")"; do
      [[ $q == *"netem 1: root"*"delay 1ms"* && $q == *"tbf 10: parent 1:1"*"rate 100Mbit"* ]] || exit 1; done' _ "$did"
  "$SCRIPT" down >/dev/null
else
  echo "SKIPPED part: this kernel has no netem qdisc; checking that a DELAY is refused cleanly"
  check "up with a delay and no netem: exit 1 naming netem ($out)" \
    bash -c '[ $1 -eq 1 ] && [[ $2 == *netem* ]]' _ "$rc" "$out"
fi
check "no state left after the delay case" [ ! -e "$STATE_DIR" ]

# ---- messages: not root (exit 2), no tc (exit 1) ----
if command -v setpriv >/dev/null; then
  out=$(setpriv --reuid=65534 --regid=65534 --clear-groups bash "$SCRIPT" status 2>&1)
  check "non-root: exit 2 with a message naming root ($out)" bash -c '[ $1 -eq 2 ] && [[ $2 == *root* ]]' _ $? "$out"
else
  echo "SKIPPED part: no setpriv for the non-root check"
fi
mkdir "$TMP/no-tc"
ln -s "$(command -v ip)" "$TMP/no-tc/ip"
out=$(PATH=$TMP/no-tc "$BASH" "$SCRIPT" status 2>&1)
check "PATH without tc: exit 1 naming tc ($out)" bash -c '[ $1 -eq 1 ] && [[ $2 == *tc?\ not\ found* ]]' _ $? "$out"

# ---- a failure and a Ctrl-C half way through up roll everything back ----
# A tc in front of the real one: its third call (the second namespace's first qdisc, after
# both namespaces, both veth pairs and the bridge exist) fails, or waits to be interrupted.
mkdir "$TMP/fake"
cat >"$TMP/fake/tc" <<FAKE
#!/bin/bash
echo "\$*" >>"$TMP/tc.log"
n=\$(wc -l <"$TMP/tc.log")
if [ "\$n" -eq 3 ]; then
  case "\$TB_FAKE_MODE" in
  fail) echo "fake tc: injected failure" >&2; exit 1 ;;
  hang) touch "$TMP/hanging"; sleep 30; exit 1 ;;
  esac
fi
exec $(command -v tc) "\$@"
FAKE
chmod +x "$TMP/fake/tc"
rolled_back() { # MODE: the id the fake tc saw, then nothing of it left
  local fid
  fid=$(grep -o 'sstb[0-9a-f]\{4\}[nh]' "$TMP/tc.log" | head -1 | cut -c5-8)
  check "$1: up reached the qdiscs (id ${fid:-none})" [ -n "$fid" ]
  check "$1: no namespace sstb$fid-* left" bash -c '! ip netns list | grep -q "^sstb$1-"' _ "${fid:-none}"
  check "$1: no link sstb$fid* left" bash -c '! ip -o link show | grep -q "sstb$1"' _ "${fid:-none}"
  check "$1: no state left" [ ! -e "$STATE_DIR" ]
}
rm -f "$TMP/tc.log"
out=$(TB_FAKE_MODE=fail PATH=$TMP/fake:$PATH "$SCRIPT" up 2 100mbit 2>&1)
check "injected tc failure: up exits 1 and says it rolls back ($out)" \
  bash -c '[ $1 -eq 1 ] && [[ $2 == *removing* ]]' _ $? "$out"
rolled_back "failure"
rm -f "$TMP/tc.log"
set -m # the background up gets its own process group and keeps SIGINT, as from a terminal
TB_FAKE_MODE=hang PATH=$TMP/fake:$PATH "$SCRIPT" up 2 100mbit >"$TMP/int.out" 2>&1 &
pid=$!
set +m
for _ in $(seq 1 100); do [ -e "$TMP/hanging" ] && break; sleep 0.1; done
check "up reached the waiting tc" [ -e "$TMP/hanging" ]
kill -INT -- "-$pid" # Ctrl-C: the whole foreground group
wait "$pid"
rc=$?
check "Ctrl-C: up exits 130 and says it rolls back ($(cat "$TMP/int.out"))" \
  bash -c '[ $1 -eq 130 ] && grep -q removing "$2"' _ "$rc" "$TMP/int.out"
rolled_back "Ctrl-C"

if [ "$FAILS" -gt 0 ]; then
  echo "test_testbed: $FAILS check(s) failed"
  exit 1
fi
[ -n "$PROBE" ] || skip "every check passed but the MPI part: no MPI probe (MPI not found at build time)"
echo "test_testbed: all checks passed"

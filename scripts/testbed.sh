#!/usr/bin/env bash
# A local network testbed for running MPI ranks over a real, shaped network on one machine:
# N network namespaces joined by a Linux bridge, every link shaped with tc (tbf for the rate,
# netem for the delay) in both directions. Each namespace is one MPI "host"; OpenMPI reaches it
# through a generated rsh agent that runs the launch command with `ip netns exec`.
#
#   scripts/testbed.sh up N RATE [DELAY]   N namespaces, RATE (e.g. 1gbit) and DELAY (e.g. 0.1ms)
#   scripts/testbed.sh down                removes what `up` created (idempotent)
#   scripts/testbed.sh status              the testbed (namespaces, addresses, qdiscs) or "down"
#   scripts/testbed.sh hostfile|agent      the path of the hostfile / of the rsh agent script
#   scripts/testbed.sh mpirun-args         the mpirun arguments that place ranks in the testbed
#   scripts/testbed.sh run [-np K] [MPIRUN_OPTION...] -- CMD [ARG...]
#
# Root only (exit 2 otherwise); exit 1 when `ip` or `tc` is missing or a step fails (a failed or
# interrupted `up` removes everything it had created). SYNCSIM_TESTBED_NAME (default "default")
# names the instance, so that several testbeds (e.g. a test's) can coexist; its state (what was
# created, subnet, rate, delay), hostfile and agent live in /run/syncsim-testbed/<name>/.
set -Eeuo pipefail

readonly TB_ROOT=/run/syncsim-testbed
readonly TB_NAME=${SYNCSIM_TESTBED_NAME:-default}
readonly TB_DIR=$TB_ROOT/$TB_NAME
readonly TB_STATE=$TB_DIR/state
readonly TB_PREFIX=sstb # every namespace and link name starts with it (then a 4-hex-digit id)
readonly RATE_VALID="a positive number followed by bit, kbit, mbit, gbit or tbit (e.g. 100mbit, 1gbit, 2.5gbit, 25gbit), from 1mbit to 400gbit"
readonly DELAY_VALID="0 or a number followed by us, ms or s (e.g. 0.1ms, 2ms, 500us), at most 10s"

usage() { # EXIT_STATUS
  sed -n '7,13p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit "$1"
}
die_usage() {
  echo "testbed: $*" >&2
  exit 2
}
die() {
  echo "testbed: $*" >&2
  exit 1
}
say() { echo "testbed: $*"; }

check_environment() {
  if [ "${EUID:-$(id -u)}" -ne 0 ]; then
    die_usage "must run as root (it creates network namespaces, links and qdiscs); try: sudo $0 ${*:-status}"
  fi
  command -v ip >/dev/null 2>&1 || die "'ip' not found in PATH: install iproute2 (scripts/install-deps.sh)"
  command -v tc >/dev/null 2>&1 || die "'tc' not found in PATH: install iproute2 (scripts/install-deps.sh)"
  IP=$(command -v ip)
  case "$TB_NAME" in
  *[!a-z0-9_-]* | '' | [_-]*) die_usage "SYNCSIM_TESTBED_NAME='$TB_NAME': use 1-32 of a-z 0-9 _ - (starting with a letter or digit)" ;;
  esac
  [ ${#TB_NAME} -le 32 ] || die_usage "SYNCSIM_TESTBED_NAME='$TB_NAME' is longer than 32 characters"
}

# ---- argument checks (numbers are computed with awk: bash has integers only) ----

# RATE -> RATE_BPS (bits per second, an integer).
parse_rate() {
  local r=${1,,}
  [[ $r =~ ^([0-9]+(\.[0-9]+)?)(bit|kbit|mbit|gbit|tbit)$ ]] || die_usage "rate '$1': expected $RATE_VALID"
  local mult
  case "${BASH_REMATCH[3]}" in
  bit) mult=1 ;; kbit) mult=1e3 ;; mbit) mult=1e6 ;; gbit) mult=1e9 ;; tbit) mult=1e12 ;;
  esac
  RATE_BPS=$(awk -v v="${BASH_REMATCH[1]}" -v m="$mult" 'BEGIN { printf "%.0f", v * m }')
  if [ "$RATE_BPS" -lt 1000000 ] || [ "$RATE_BPS" -gt 400000000000 ]; then
    die_usage "rate '$1' is out of range: expected $RATE_VALID"
  fi
  RATE=$r
}

# DELAY -> DELAY_US (microseconds, an integer).
parse_delay() {
  local d=${1,,}
  if [[ $d =~ ^0+(\.0+)?$ ]]; then
    DELAY=0 DELAY_US=0
    return
  fi
  [[ $d =~ ^([0-9]+(\.[0-9]+)?)(us|ms|s)$ ]] || die_usage "delay '$1': expected $DELAY_VALID"
  local mult
  case "${BASH_REMATCH[3]}" in us) mult=1 ;; ms) mult=1e3 ;; s) mult=1e6 ;; esac
  DELAY_US=$(awk -v v="${BASH_REMATCH[1]}" -v m="$mult" 'BEGIN { printf "%.0f", v * m }')
  [ "$DELAY_US" -le 10000000 ] || die_usage "delay '$1' is out of range: expected $DELAY_VALID"
  DELAY=$d
}

parse_size() {
  if ! [[ $1 =~ ^[0-9]+$ ]] || [ "$1" -lt 1 ] || [ "$1" -gt 253 ]; then
    die_usage "N '$1': expected a number of namespaces from 1 to 253 (one /24 holds them and the bridge)"
  fi
  N=$1
}

# ---- state file: "key=value" lines; ns=, link= and bridge= lines list what was created ----

state_get() { # KEY -> the first value, or nothing
  [ -f "$TB_STATE" ] || return 0
  local k v
  while IFS='=' read -r k v; do
    if [ "$k" = "$1" ]; then
      printf '%s\n' "$v"
      return 0
    fi
  done <"$TB_STATE"
}
state_list() { # KEY -> every value, one a line
  [ -f "$TB_STATE" ] || return 0
  local k v
  while IFS='=' read -r k v; do [ "$k" = "$1" ] && printf '%s\n' "$v"; done <"$TB_STATE"
  return 0
}
state_add() { printf '%s=%s\n' "$1" "$2" >>"$TB_STATE"; }
state_set_status() { # rewritten under a temporary name, then renamed
  sed "s/^status=.*/status=$1/" "$TB_STATE" >"$TB_STATE.tmp"
  mv -f "$TB_STATE.tmp" "$TB_STATE"
}

# One up/down at a time on this machine: subnet and name choices must see each other's.
take_lock() {
  mkdir -p "$TB_ROOT"
  exec 9>"$TB_ROOT/.lock"
  command -v flock >/dev/null 2>&1 && flock 9
  return 0
}

# ---- choices that collide with nothing on the machine ----

ip_to_int() {
  local a b c d
  IFS=. read -r a b c d <<<"$1"
  echo $(((a << 24) | (b << 16) | (c << 8) | d))
}

# Every IPv4 network the root namespace has an address in or a route to, as "address/len".
used_networks() {
  "$IP" -o -4 addr show | awk '{ print $4 }'
  "$IP" -4 route show table all | awk '
    $1 ~ /^(local|broadcast|unicast|multicast|anycast|blackhole|unreachable|prohibit|throw|nat)$/ { print $2; next }
    $1 != "default" { print $1 }'
}

# SUBNET_BASE (a.b.c) of the first free /24 among the candidates.
choose_subnet() {
  local used=() net addr len cand ok m
  mapfile -t used < <(used_networks)
  for cand in 10.213.{0..255} 172.30.{0..255} 192.168.{213..254}; do
    ok=1
    for net in "${used[@]}"; do
      addr=${net%/*}
      [[ $net == */* ]] && len=${net#*/} || len=32
      [[ $addr =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$ ]] || continue
      m=$((len < 24 ? len : 24))
      if [ "$m" -eq 0 ] || [ $(($(ip_to_int "$addr") >> (32 - m))) -eq $(($(ip_to_int "$cand.0") >> (32 - m))) ]; then
        ok=0
        break
      fi
    done
    if [ "$ok" = 1 ]; then
      SUBNET_BASE=$cand
      return 0
    fi
  done
  die "no free /24 among 10.213.0-255.0, 172.30.0-255.0 and 192.168.213-254.0 (see ip -o addr, ip route)"
}

# ID: 4 hex digits such that no namespace and no link name starts with sstb<ID>.
choose_id() {
  local _ existing
  existing=$({
    "$IP" netns list | awk '{ print $1 }'
    "$IP" -o link show | awk -F': ' '{ sub(/@.*/, "", $2); print $2 }'
  })
  for _ in $(seq 1 64); do
    ID=$(od -An -N2 -tx2 /dev/urandom | tr -d ' \n')
    grep -q "^$TB_PREFIX$ID" <<<"$existing" || return 0
  done
  die "could not find an unused name sstb<4 hex digits> in 64 tries"
}

# ---- shaping ----
# tbf: burst = max(1 ms of traffic at RATE, 68 KiB). 68 KiB holds one 64 KiB GSO/TSO packet with
# its headers, so tbf never has to split one, and 1 ms of tokens absorbs the qdisc watchdog's
# timer slack on a loaded host (a smaller bucket would run below RATE). The bucket lets at most
# `burst` bytes pass at line speed, e.g. 0.5% of a 25 MB transfer at 1gbit.
# limit (bytes queued) = burst + max(20 ms at RATE, 1 MiB): room for a TCP sender's whole
# TCP-small-queues allowance (tcp_limit_output_bytes, 1 MiB by default) so the local qdisc does
# not drop; a real switch port would drop earlier, but a bulk transfer then still runs at RATE.
# netem: the delay, root qdisc with tbf as its child (the order the tc-netem manual gives); its
# packet limit holds the bandwidth-delay product in MTU-size packets, twice, plus 1000.
# A kernel built without CONFIG_NET_SCH_NETEM cannot delay: say so before shaping any link.
check_netem() {
  if ! tc qdisc add dev "$BR" root handle 1: netem delay 1us 2>/dev/null; then
    die "this kernel has no netem qdisc (CONFIG_NET_SCH_NETEM, module sch_netem), which DELAY needs: use DELAY 0 here or load sch_netem"
  fi
  tc qdisc del dev "$BR" root
}

shape_link() { # NETNS-or-"" DEV
  local nsopt=() burst limit nlimit
  [ -n "$1" ] && nsopt=(-n "$1")
  burst=$(awk -v r="$RATE_BPS" 'BEGIN { b = r / 8 / 1000; if (b < 69632) b = 69632; printf "%.0f", b }')
  limit=$(awk -v r="$RATE_BPS" -v b="$burst" 'BEGIN { q = r / 8 * 0.02; if (q < 1048576) q = 1048576; printf "%.0f", b + q }')
  if [ "$DELAY_US" -eq 0 ]; then
    tc "${nsopt[@]}" qdisc add dev "$2" root handle 1: tbf rate "$RATE_BPS"bit burst "$burst" limit "$limit"
  else
    nlimit=$(awk -v r="$RATE_BPS" -v d="$DELAY_US" 'BEGIN { printf "%.0f", 2 * r / 8 * d / 1e6 / 1500 + 1000 }')
    tc "${nsopt[@]}" qdisc add dev "$2" root handle 1: netem delay "$DELAY_US"us limit "$nlimit"
    tc "${nsopt[@]}" qdisc add dev "$2" parent 1:1 handle 10: tbf rate "$RATE_BPS"bit burst "$burst" limit "$limit"
  fi
}

# ---- teardown: only what the state file lists, and only what still exists ----

teardown() {
  local x pids left=0
  for x in $(state_list link) $(state_list bridge); do
    if "$IP" link show dev "$x" >/dev/null 2>&1; then
      "$IP" link del dev "$x" || left=1 # a veth goes with its peer inside the namespace
    fi
  done
  for x in $(state_list ns); do
    [ -e "/run/netns/$x" ] || continue
    pids=$("$IP" netns pids "$x" 2>/dev/null | tr '\n' ' ')
    [ -z "$pids" ] || echo "testbed: processes still run in namespace $x (pids $pids); it disappears when they exit" >&2
    "$IP" netns del "$x" || left=1
  done
  rm -f "$TB_DIR/hostfile" "$TB_DIR/agent" "$TB_DIR/hostfile.tmp" "$TB_DIR/agent.tmp" "$TB_STATE.tmp"
  rm -rf "$TB_DIR/ompi"
  [ "$left" = 0 ] && rm -f "$TB_STATE" && rmdir "$TB_DIR" 2>/dev/null
  return "$left"
}

# EXIT trap of `up` until it has finished: an error (set -e), a die, Ctrl-C or TERM lands here.
up_rollback() {
  local rc=$?
  trap - EXIT INT TERM
  set +e
  [ "$rc" = 0 ] && rc=1
  echo "testbed: up failed or was interrupted; removing what it had created" >&2
  teardown || echo "testbed: some of it could not be removed; see $TB_STATE and run down" >&2
  exit "$rc"
}

# ---- up ----

# A testbed with this name is recorded already: identical and intact -> say so; else refuse.
up_existing() {
  local status n rate_bps delay_us x
  status=$(state_get status) n=$(state_get n) rate_bps=$(state_get rate_bps) delay_us=$(state_get delay_us)
  [ "$status" = up ] || die "an earlier up of testbed '$TB_NAME' did not finish ($TB_STATE says status=$status): run '$0 down' to remove what it created"
  if [ "$n" != "$N" ] || [ "$rate_bps" != "$RATE_BPS" ] || [ "$delay_us" != "$DELAY_US" ]; then
    die "testbed '$TB_NAME' is up with a different shape (N=$n, rate $(state_get rate), delay $(state_get delay)); run '$0 down' first (up never replaces a testbed: ranks may be running on it)"
  fi
  for x in $(state_list ns); do
    [ -e "/run/netns/$x" ] || die "testbed '$TB_NAME' is recorded but namespace $x is gone: run '$0 down', then up again"
  done
  for x in $(state_list link) $(state_list bridge); do
    "$IP" link show dev "$x" >/dev/null 2>&1 || die "testbed '$TB_NAME' is recorded but link $x is gone: run '$0 down', then up again"
  done
  say "already up with N=$N, rate $RATE, delay $DELAY (subnet $(state_get subnet)); nothing to do"
}

write_state_header() {
  mkdir -p "$TB_DIR"
  {
    echo "name=$TB_NAME"
    echo "status=creating"
    echo "id=$ID"
    echo "n=$N"
    echo "rate=$RATE"
    echo "rate_bps=$RATE_BPS"
    echo "delay=$DELAY"
    echo "delay_us=$DELAY_US"
    echo "subnet=$SUBNET_BASE.0/24"
    echo "bridge_addr=$SUBNET_BASE.1"
    echo "created=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  } >"$TB_STATE"
}

# Namespace I (1..N): veth <prefix>n<I> inside with address .(I+1), peer <prefix>h<I> on the bridge.
# Each name is recorded before it is created, so a rollback or `down` finds it.
create_node() { # I
  local ns=$TB_PREFIX$ID-$1 host=${TB_PREFIX}${ID}h$1 peer=${TB_PREFIX}${ID}n$1
  state_add ns "$ns"
  "$IP" netns add "$ns"
  "$IP" -n "$ns" link set lo up
  state_add link "$host"
  "$IP" link add "$host" type veth peer name "$peer" netns "$ns"
  "$IP" -n "$ns" addr add "$SUBNET_BASE.$(($1 + 1))/24" dev "$peer"
  "$IP" -n "$ns" link set "$peer" up
  "$IP" link set "$host" master "$BR"
  "$IP" link set "$host" up
  shape_link "$ns" "$peer" # egress of the namespace: namespace -> bridge
  shape_link "" "$host"    # egress of the bridge port: bridge -> namespace
  state_add addr "$SUBNET_BASE.$(($1 + 1)) $ns"
}

# The hostfile (one address a line, one slot each) and the rsh agent: OpenMPI calls it like ssh
# (options, the host, then the command as words for a shell); it runs the command in the
# namespace that owns the address.
# shellcheck disable=SC2016 # the agent's own $-expressions are written literally
write_mpi_files() {
  local a ns
  while read -r a ns; do echo "$a slots=1"; done < <(state_list addr) >"$TB_DIR/hostfile.tmp"
  {
    echo '#!/bin/sh'
    echo "# rsh agent of syncsim testbed '$TB_NAME' (written by scripts/testbed.sh up): runs an"
    echo '# ssh-style command line in the network namespace that owns the host address.'
    echo 'while [ $# -gt 0 ]; do'
    echo '  case "$1" in'
    echo '  -[bcDEeFIiJLlmOopQRSWw]) shift 2 ;; # ssh options that take a value'
    echo '  -*) shift ;;'
    echo '  *) break ;;'
    echo '  esac'
    echo 'done'
    echo '[ $# -ge 1 ] || { echo "testbed agent: no host given" >&2; exit 255; }'
    echo 'host=$1'
    echo 'shift'
    echo 'case "$host" in'
    while read -r a ns; do echo "$a) ns=$ns ;;"; done < <(state_list addr)
    echo "*) echo \"testbed agent: no namespace of testbed '$TB_NAME' owns host '\$host'\" >&2; exit 255 ;;"
    echo 'esac'
    # every namespace-host has its own OpenMPI session directory: the daemons all carry this
    # machine's hostname, and in one /tmp their directories could collide (orte_init failed
    # with "mkdir ... File exists" after an interrupted run)
    echo "mkdir -p \"$TB_DIR/ompi/\$ns\" || exit 255"
    echo "exec $IP netns exec \"\$ns\" env OMPI_MCA_orte_tmpdir_base=\"$TB_DIR/ompi/\$ns\" /bin/sh -c \"\$*\""
  } >"$TB_DIR/agent.tmp"
  chmod 755 "$TB_DIR/agent.tmp"
  mv -f "$TB_DIR/hostfile.tmp" "$TB_DIR/hostfile"
  mv -f "$TB_DIR/agent.tmp" "$TB_DIR/agent"
}

cmd_up() {
  if [ $# -lt 2 ] || [ $# -gt 3 ]; then die_usage "up: expected N RATE [DELAY], e.g. up 2 1gbit 0.1ms"; fi
  parse_size "$1"
  parse_rate "$2"
  parse_delay "${3:-0}"
  take_lock
  if [ -f "$TB_STATE" ]; then
    up_existing
    return 0
  fi
  choose_id
  choose_subnet
  BR=${TB_PREFIX}${ID}br
  trap up_rollback EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  write_state_header
  state_add bridge "$BR"
  "$IP" link add "$BR" type bridge forward_delay 0
  "$IP" addr add "$SUBNET_BASE.1/24" dev "$BR"
  "$IP" link set "$BR" up
  [ "$DELAY_US" -eq 0 ] || check_netem
  local i
  for i in $(seq 1 "$N"); do create_node "$i"; done
  write_mpi_files
  state_set_status up
  trap - EXIT INT TERM
  say "up: $N namespaces $TB_PREFIX$ID-1..$N on bridge $BR ($SUBNET_BASE.1), subnet $SUBNET_BASE.0/24, rate $RATE and delay $DELAY per link direction"
}

# ---- down, status, paths ----

cmd_down() {
  [ $# -eq 0 ] || die_usage "down takes no argument"
  take_lock
  if [ ! -f "$TB_STATE" ]; then
    say "testbed '$TB_NAME' is down; nothing to do"
    return 0
  fi
  teardown || die "some of testbed '$TB_NAME' could not be removed; $TB_STATE still lists it"
  say "down: testbed '$TB_NAME' removed"
}

require_up() {
  [ "$(state_get status)" = up ] || die "testbed '$TB_NAME' is not up: run '$0 up N RATE [DELAY]' first"
}

cmd_status() {
  if [ ! -f "$TB_STATE" ]; then
    echo "down"
    return 0
  fi
  local a ns i=0 peer host
  echo "testbed '$TB_NAME': $(state_get status) since $(state_get created)"
  echo "  size $(state_get n), rate $(state_get rate) ($(state_get rate_bps) bit/s) and delay $(state_get delay) per link direction"
  echo "  subnet $(state_get subnet), bridge $(state_get bridge) at $(state_get bridge_addr)"
  while read -r a ns; do
    i=$((i + 1))
    peer=$TB_PREFIX$(state_get id)n$i host=$TB_PREFIX$(state_get id)h$i
    echo "  host $i: namespace $ns, address $a, link $peer <-> $host"
    tc -n "$ns" qdisc show dev "$peer" 2>&1 | sed "s/^/    $peer (out of $ns): /"
    tc qdisc show dev "$host" 2>&1 | sed "s/^/    $host (into $ns): /"
  done < <(state_list addr)
  [ "$(state_get status)" = up ] && echo "  hostfile $TB_DIR/hostfile, agent $TB_DIR/agent"
  return 0
}

# MPIRUN_ARGS: each namespace is a host reached through the agent; out-of-band and MPI traffic
# stay on the testbed's subnet (TCP BTL over the shaped links; ob1, not UCX, which would pick its
# own transports); no tree spawn (each launch goes through the agent from the root namespace).
# rtc ^hwloc: OpenMPI 4.1's daemons otherwise map the hwloc topology into shared memory at an
# address they guess is free; here about 1 daemon in 10 crashed there (SIGSEGV in
# hwloc_shmem_topology_write) and mpirun then waited forever. That component only serves
# binding, which the testbed turns off (--bind-to none: ranks share the machine's cores).
# --leave-session-attached: a daemon that fails is reported and ends mpirun, instead of dying
# unseen after it detached.
mpirun_args() {
  local subnet
  subnet=$(state_get subnet)
  MPIRUN_ARGS=(--hostfile "$TB_DIR/hostfile" --mca plm rsh --mca plm_rsh_agent "$TB_DIR/agent"
    --mca plm_rsh_no_tree_spawn 1 --mca oob_tcp_if_include "$subnet"
    --mca btl_tcp_if_include "$subnet" --mca btl "tcp,self" --mca pml ob1 --mca rtc ^hwloc
    --leave-session-attached --allow-run-as-root --oversubscribe --bind-to none)
}

# Ctrl-C (SIGINT) or SIGTERM during `run`: the first one sends SIGTERM to the ranks themselves
# (the processes of PROG in the testbed's namespaces), which syncsim real answers by stopping at
# the next step and writing its outputs; mpirun, in a session of its own, does not see the
# terminal's Ctrl-C (on one, it would SIGKILL the ranks a second after its SIGTERM). A second one,
# a second or more later, stops mpirun (`timeout`, for one, signals both its child and the child's
# process group: the same signal twice at once).
RUN_STOPS=0 RUN_STOP_US=0 RUN_PENDING=0
stop_ranks() { # MPIRUN_PID PROG
  local now=${EPOCHREALTIME/./}
  if [ "$RUN_STOPS" -gt 0 ] && [ $((now - RUN_STOP_US)) -lt 1000000 ]; then return 0; fi
  RUN_STOPS=$((RUN_STOPS + 1))
  RUN_STOP_US=$now
  if [ "$RUN_STOPS" -gt 1 ]; then
    echo "testbed: stopping mpirun" >&2
    kill -TERM "$1" 2>/dev/null || true
    return 0
  fi
  echo "testbed: asking the ranks to stop (SIGTERM to $2); again to stop mpirun" >&2
  signal_ranks "$2" || RUN_PENDING=1 # none started yet: run's loop tries again
  RUN_STOP_US=${EPOCHREALTIME/./}    # a signal that came while this ran is the same one
  return 0
}

# SIGTERM to the processes of PROG in the testbed's namespaces; 1 if there was none.
signal_ranks() { # PROG
  local a ns pid found=1
  while read -r a ns; do
    for pid in $("$IP" netns pids "$ns" 2>/dev/null); do
      if [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$1" ]; then
        kill -TERM "$pid" 2>/dev/null
        found=0
      fi
    done
  done < <(state_list addr)
  return "$found"
}

# run [-np K] [MPIRUN_OPTION...] -- CMD [ARG...]: CMD by absolute path; the ranks start in the
# caller's directory with its PATH and LD_LIBRARY_PATH.
cmd_run() {
  local np extra=() prog
  np=$(state_get n)
  while [ $# -gt 0 ] && [ "$1" != -- ]; do
    case "$1" in
    -np | -n | --np | -c)
      if [ $# -lt 2 ] || ! [[ $2 =~ ^[1-9][0-9]*$ ]]; then die_usage "run: $1 expects a positive number of ranks"; fi
      np=$2
      shift 2
      ;;
    *) extra+=("$1") && shift ;;
    esac
  done
  [ $# -ge 2 ] || die_usage "run: expected [-np K] [MPIRUN_OPTION...] -- CMD [ARG...]"
  shift
  command -v mpirun >/dev/null 2>&1 || die "'mpirun' not found in PATH: install openmpi-bin (scripts/install-deps.sh)"
  prog=$(command -v -- "$1") || die "run: program '$1' not found"
  [[ $prog == /* ]] || prog=$(readlink -f -- "$prog")
  [ -x "$prog" ] || die "run: '$prog' is not an executable file"
  shift
  mpirun_args
  local fwd=(-x PATH)
  [ -z "${LD_LIBRARY_PATH:-}" ] || fwd+=(-x LD_LIBRARY_PATH)
  setsid mpirun "${MPIRUN_ARGS[@]}" "${fwd[@]}" --wdir "$PWD" -np "$np" "${extra[@]}" "$prog" "$@" &
  local mp=$! rc=0
  prog=$(readlink -f -- "$prog")
  trap 'stop_ranks "$mp" "$prog"' INT TERM
  while :; do
    rc=0
    wait "$mp" || rc=$?
    kill -0 "$mp" 2>/dev/null || break # wait returned for a signal, not for mpirun's end
    # asked to stop before the ranks had started: again until they have
    while [ "$RUN_PENDING" -eq 1 ] && kill -0 "$mp" 2>/dev/null; do
      sleep 0.5
      ! signal_ranks "$prog" || RUN_PENDING=0
    done
  done
  exit "$rc"
}

main() {
  [ $# -ge 1 ] || usage 2
  case "$1" in -h | --help | help) usage 0 ;; esac
  check_environment "$@"
  local cmd=$1
  shift
  case "$cmd" in
  up) cmd_up "$@" ;;
  down) cmd_down "$@" ;;
  status) cmd_status ;;
  hostfile) require_up && echo "$TB_DIR/hostfile" ;;
  agent) require_up && echo "$TB_DIR/agent" ;;
  mpirun-args) require_up && mpirun_args && echo "${MPIRUN_ARGS[*]}" ;;
  run) require_up && cmd_run "$@" ;;
  *) die_usage "unknown command '$cmd': expected up, down, status, hostfile, agent, mpirun-args or run" ;;
  esac
}

main "$@"

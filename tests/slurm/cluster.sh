#!/usr/bin/env bash
# A throw-away Slurm cluster for the tests: munged with its own key and socket, slurmctld, and
# NODES slurmd processes acting as nodes on this host, each claiming 2 sockets x 8 cores and 8
# GPUs (fake /dev/nvidia* files, SlurmdParameters=config_overrides, TaskPlugin=task/none so Slurm
# itself binds nothing). Everything lives in DIR; only the processes started here are stopped,
# by the PIDs recorded at start.
#
#   cluster.sh start DIR [PLUGIN.so [PLUGSTACK ARGS...]]   -> writes DIR/env.sh (SLURM_CONF)
#   cluster.sh stop DIR
#   SLURMD_WRAP="CMD ARGS --" starts each slurmd under that command (which must exec slurmd),
#   e.g. tests/slurm/seccomp_deny.py to refuse a system call to slurmd, slurmstepd and the tasks.
#   TASK_PLUGIN (default task/none), e.g. task/affinity or task/cgroup,task/affinity: Slurm's own
#   binding as production sites run it. SOCKETS, CORES (per socket) and GPUS shape each node
#   (default 2 x 8, 8 GPUs, split evenly over the sockets); a shape of this machine's real CPU
#   count (SOCKETS=2 CORES=1 on two CPUs) lets task/affinity really bind. NODE_EXTRA is added to
#   every NodeName line (CoreSpecCount=1), CONF_EXTRA to slurm.conf, CGROUP_CONF is written as
#   cgroup.conf beside it (for task/cgroup).
set -u
cmd=${1:?start|stop}
D=${2:?directory}
NODES=${NODES:-2}
TASK_PLUGIN=${TASK_PLUGIN:-task/none}
SOCKETS=${SOCKETS:-2}
CORES=${CORES:-8}
GPUS=${GPUS:-8}
[ -n "${PORT:-}" ] && PORT_PINNED=1
PORT=${PORT:-17817}

log() { echo "cluster: $*" >&2; }
. "$(dirname "$0")/slurm_conf.sh"

stop() {
  [ -f "$D/env.sh" ] && . "$D/env.sh" && scancel --quiet --user "$(id -un)" 2>/dev/null
  for f in "$D"/pids/slurmd-*.pid "$D"/pids/slurmctld.pid "$D"/pids/munged.pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    exe=$(cat "${f%.pid}.exe" 2>/dev/null)
    # Only our own daemon: the PID must still run the binary we started.
    if [ -n "$exe" ] && [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$exe" ]; then
      kill -TERM "$pid" 2>/dev/null
      for _ in $(seq 100); do
        [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$exe" ] || break
        grep -q '^[0-9]* ([^)]*) Z' "/proc/$pid/stat" 2>/dev/null && break
        sleep 0.05
      done
      kill -KILL "$pid" 2>/dev/null
    fi
    rm -f "$f"
  done
}

listening() {  # listening PORT: a TCP socket in LISTEN state on that port
  local hex
  hex=$(printf '%04X' "$1")
  awk -v p=":$hex" '$2 ~ p"$" && $4 == "0A" {found=1} END {exit !found}' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

wait_for() {  # wait_for SECONDS COMMAND...
  local end=$((SECONDS + $1)); shift
  until "$@"; do [ $SECONDS -ge $end ] && return 1; sleep 0.05; done
}

start() {
  local plugin=${3:-} host
  shift 3 2>/dev/null || shift $#
  local plugargs="$*"
  host=$(hostname -s)
  mkdir -p "$D"/{etc,state,log,pids,munge}
  chmod 755 "$D" "$D/munge"
  # A port range nobody listens on (slurmctld at PORT, the nodes above it), so two clusters (two
  # test runs on one machine) never collide; PORT pins it.
  if [ -z "${PORT_PINNED:-}" ]; then
    local tries=0 i busy
    while :; do
      busy=0
      for i in $(seq 0 $((NODES + 1))); do listening $((PORT + i)) && busy=1; done
      [ $busy = 0 ] && break
      tries=$((tries + 1))
      [ $tries -ge 50 ] && { log "no free port range found near $PORT"; return 1; }
      PORT=$((20000 + (RANDOM % 2000) * 20))
    done
  fi
  listening $PORT && { log "port $PORT is busy"; return 1; }
  local nodes="" gres_lines="" node_lines=""
  for i in $(seq 1 "$NODES"); do
    local n="n$i"
    nodes="$nodes${nodes:+,}$n"
    mkdir -p "$D/spool/$n" "$D/dev/$n"
    for g in $(seq 0 $((GPUS - 1))); do
      mknod "$D/dev/$n/nvidia$g" c 195 "$g" 2>/dev/null || : > "$D/dev/$n/nvidia$g"
      # GPUs split evenly over the sockets, each near its socket's cores (the default: GPUs 0-3
      # on socket 0, cores 0-7; 4-7 on socket 1, cores 8-15).
      local s=$(( g * SOCKETS / GPUS ))
      local first=$(( s * CORES )) last=$(( s * CORES + CORES - 1 ))
      gres_lines="${gres_lines}NodeName=$n Name=gpu File=$D/dev/$n/nvidia$g Cores=$first$([ $last -gt $first ] && echo "-$last")
"
    done
    node_lines="${node_lines}NodeName=$n NodeHostname=$host NodeAddr=127.0.0.1 Port=$((PORT + i)) CPUs=$((SOCKETS * CORES)) Boards=1 SocketsPerBoard=$SOCKETS CoresPerSocket=$CORES ThreadsPerCore=1 RealMemory=2000 Gres=gpu:$GPUS ${NODE_EXTRA:+$NODE_EXTRA }State=UNKNOWN
"
  done
  printf '%s' "$gres_lines" > "$D/etc/gres.conf"
  # GRES_FROM: a command that writes gres.conf lines for one node (`gpubind slurm gres-conf
  # --topology ...`); its /dev/nvidiaN files are mapped to this cluster's fake ones, and the
  # node's slurm.conf Gres= is the one it prints ("# slurm.conf: NodeName=nI Gres=...").
  if [ -n "${GRES_FROM:-}" ]; then
    : > "$D/etc/gres.conf"
    for i in $(seq 1 "$NODES"); do
      $GRES_FROM --node-name "n$i" | sed "s#File=/dev/#File=$D/dev/n$i/#" > "$D/etc/gres-n$i.conf" || return 1
      cat "$D/etc/gres-n$i.conf" >> "$D/etc/gres.conf"
      local gres
      gres=$(sed -n "s/^# slurm.conf: NodeName=n$i Gres=//p" "$D/etc/gres-n$i.conf")
      [ -n "$gres" ] || { log "no slurm.conf Gres= line from: $GRES_FROM"; return 1; }
      node_lines=$(printf '%s' "$node_lines" | sed "/^NodeName=n$i /s/ Gres=gpu:$GPUS / Gres=$gres /")
      node_lines="$node_lines
"
    done
  fi
  : > "$D/etc/plugstack.conf"
  [ -n "$plugin" ] && echo "required $plugin $plugargs" > "$D/etc/plugstack.conf"
  { slurm_conf_base gpubindtest "$D" "$PORT" "$host"; cat <<CONF; } > "$D/etc/slurm.conf"
PlugStackConfig=$D/etc/plugstack.conf
TaskPlugin=$TASK_PLUGIN
SlurmdParameters=config_overrides
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
MpiDefault=none
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
KillWait=5
InactiveLimit=0
MinJobAge=60
${CONF_EXTRA:-}
$node_lines
PartitionName=test Nodes=$nodes Default=YES MaxTime=INFINITE State=UP
CONF
  [ -n "${CGROUP_CONF:-}" ] && printf '%s\n' "$CGROUP_CONF" > "$D/etc/cgroup.conf"
  echo "export SLURM_CONF=$D/etc/slurm.conf" > "$D/env.sh"
  export SLURM_CONF=$D/etc/slurm.conf

  mungekey --create --keyfile="$D/munge/munge.key" --bits=1024 >/dev/null 2>&1 || { log "mungekey failed"; return 1; }
  chmod 600 "$D/munge/munge.key"
  launch_daemon munged munged -F --socket="$D/munge/munge.sock" --key-file="$D/munge/munge.key" \
    --pid-file="$D/munge/munged.pid" --seed-file="$D/munge/seed" --log-file="$D/log/munged.log"
  wait_for 10 test -S "$D/munge/munge.sock" || { log "munged did not start"; return 1; }
  launch_daemon slurmctld slurmctld -D -i
  wait_for 20 listening $PORT || { log "slurmctld did not listen: $(tail -3 "$D/log/slurmctld.log")"; return 1; }
  # shellcheck disable=SC2086 # SLURMD_WRAP is a command line
  for i in $(seq 1 "$NODES"); do DAEMON_EXE=slurmd launch_daemon "slurmd-n$i" ${SLURMD_WRAP:-} slurmd -D -N "n$i"; done
  all_idle() { [ "$(sinfo -h -N -o '%T' 2>/dev/null | grep -c '^idle')" = "$NODES" ]; }
  wait_for 30 all_idle || { log "nodes not idle: $(sinfo -h -N -o '%N %T %E' 2>&1)"; return 1; }
}

launch_daemon() {  # launch_daemon NAME COMMAND...: in its own session, PID and binary ($DAEMON_EXE, else COMMAND) recorded
  local name=$1; shift
  setsid "$@" >"$D/log/$name.stderr" 2>&1 < /dev/null &
  local pid=$!
  echo "$pid" > "$D/pids/$name.pid"
  readlink -f "$(command -v "${DAEMON_EXE:-$1}")" > "$D/pids/$name.exe"
}

case $cmd in
  start) start "$@" || { stop; exit 1; } ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac

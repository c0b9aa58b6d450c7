#!/usr/bin/env bash
# One run of a throw-away cluster of a newer Slurm release (Debian's packages in ROOTFS, made by
# scripts/slurm-release.sh): each DIR/nodes/NODE.gres (gres-conf's output for --node-name NODE)
# becomes a node defined by its "# slurm.conf: NodeName=..." line, with its GPUs' device files
# mapped to fake ones; DIR/global, when present, is the SlurmdParameters word every node takes.
# munged, slurmctld and one slurmd per node run chrooted in ROOTFS, in a mount namespace of their
# own (DIR bind-mounted at /mnt/gpubind-test, /proc, /sys and /dev of this host), until every node
# has registered or been refused; then `scontrol show node` goes to DIR/nodes.txt, `slurmd -G`
# of each node to DIR/NODE.G, DIR/steps.sh (when present) runs there with its output in
# DIR/steps.out, and everything started here is stopped. DIR/plugstack.conf, when present, is the
# cluster's PlugStackConfig (paths in it as seen in the root: DIR is /mnt/gpubind-test);
# TASK_PLUGIN (default task/none) its TaskPlugin, GRES_TYPES (default gpu) its GresTypes,
# SELECT_TYPE_PARAMETERS (default CR_Core) its SelectTypeParameters; DIR/cgroup.conf, when
# present, its cgroup.conf; CONFIG_OVERRIDES=0 leaves config_overrides out, REAL_MEMORY (MB, default
# 2000) is each node's RealMemory. PREPARE_ONLY=1 writes the files and DIR/inner.sh (what runs in the
# root) and stops: a caller that runs the root elsewhere (a VM) runs inner.sh there.
#
#   release_cluster.sh ROOTFS DIR PORT
set -eu
ROOTFS=${1:?root}
D=${2:?directory}
PORT=${3:?port}
T=/mnt/gpubind-test
host=$(hostname -s)

mkdir -p "$D"/{etc,state,log,pids,munge,spool,dev}
chmod 755 "$D" "$D/munge"
# config_overrides: slurmd claims the node line's shape (the nodes here stand for other machines);
# CONFIG_OVERRIDES=0 (a VM of the shape itself) leaves slurmd's own count to be judged.
global=config_overrides
[ "${CONFIG_OVERRIDES:-1}" = 1 ] || global=""
[ -f "$D/global" ] && global="$global${global:+,}$(cat "$D/global")"
node_lines="" nodes="" i=0
: > "$D/etc/gres.conf"
for g in "$D"/nodes/*.gres; do
  node=$(basename "$g" .gres)
  i=$((i + 1))
  mkdir -p "$D/spool/$node" "$D/dev/$node"
  # Device files: each File= becomes a device node of the node's own (NVIDIA's major 195, DRM's
  # 226, the name's number as minor, as the kernel numbers them), or an empty file where mknod is
  # refused; one the caller made is kept.
  for f in $(sed -n 's/^NodeName=.* File=\([^ ]*\).*/\1/p' "$g"); do
    name=$(basename "$f") dev="$D/dev/$node/$(basename "$f")"
    [ -e "$dev" ] && continue
    case $name in nvidia*) major=195 ;; *) major=226 ;; esac
    mknod "$dev" c "$major" "${name//[!0-9]/}" 2>/dev/null || : > "$dev"
  done
  sed -n "/^NodeName=/s#File=/dev/\(dri/\)\{0,1\}#File=$T/dev/$node/#p" "$g" >> "$D/etc/gres.conf"
  def=$(sed -n "s/^# slurm.conf: NodeName=$node //p" "$g")
  [ -n "$def" ] || { echo "no node line in $g" >&2; exit 1; }
  sockets=$(printf '%s' "$def" | sed -n 's/.*SocketsPerBoard=\([0-9]*\).*/\1/p')
  cores=$(printf '%s' "$def" | sed -n 's/.*CoresPerSocket=\([0-9]*\).*/\1/p')
  threads=$(printf '%s' "$def" | sed -n 's/.*ThreadsPerCore=\([0-9]*\).*/\1/p')
  node_lines="${node_lines}NodeName=$node NodeHostname=$host NodeAddr=127.0.0.1 Port=$((PORT + i)) CPUs=$((sockets * cores * threads)) RealMemory=${REAL_MEMORY:-2000} $def State=UNKNOWN
"
  nodes="$nodes${nodes:+,}$node"
done
. "$(dirname "$0")/slurm_conf.sh"
{ slurm_conf_base gpubindnew "$T" "$PORT" "$host"; cat <<CONF; } > "$D/etc/slurm.conf"
TaskPlugin=${TASK_PLUGIN:-task/none}
$([ -f "$D/plugstack.conf" ] && echo "PlugStackConfig=$T/plugstack.conf")
${global:+SlurmdParameters=$global}
SelectType=select/cons_tres
SelectTypeParameters=${SELECT_TYPE_PARAMETERS:-CR_Core}
GresTypes=${GRES_TYPES:-gpu}
MpiDefault=none
ReturnToService=0
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
$node_lines
PartitionName=test Nodes=$nodes Default=YES MaxTime=INFINITE State=UP
CONF

[ -f "$D/cgroup.conf" ] && cp "$D/cgroup.conf" "$D/etc/cgroup.conf"

# What runs inside the chroot: the daemons, the wait, the report, the stop.
cat > "$D/inner.sh" <<'INNER'
set -u
T=/mnt/gpubind-test
export SLURM_CONF=$T/etc/slurm.conf
cd "$T"
start() { local name=$1; shift; setsid "$@" >"$T/log/$name.stderr" 2>&1 </dev/null & echo $! > "$T/pids/$name.pid"; }
wait_for() { local end=$((SECONDS + $1)); shift; until "$@"; do [ $SECONDS -ge $end ] && return 1; sleep 0.1; done; }
mungekey --create --keyfile="$T/munge/munge.key" --bits=1024 >/dev/null 2>&1
chmod 600 "$T/munge/munge.key"
start munged munged -F --force --socket="$T/munge/munge.sock" --key-file="$T/munge/munge.key" \
  --pid-file="$T/munge/munged.pid" --seed-file="$T/munge/seed" --log-file="$T/log/munged.log"
wait_for 10 test -S "$T/munge/munge.sock" || echo "munged did not start"
start slurmctld slurmctld -D -i
nodes=$(sed -n 's/^PartitionName=test Nodes=\([^ ]*\).*/\1/p' "$SLURM_CONF" | tr ',' ' ')
for n in $nodes; do start "slurmd-$n" slurmd -D -N "$n"; done
# Registered: no node is still UNKNOWN or NOT_RESPONDING (a refused one is INVAL or DRAIN).
settled() { ! sinfo -h -N -o '%T' 2>/dev/null | grep -q -e '^unknown' -e '\*$' -e '^$' && [ -n "$(sinfo -h -N -o '%T' 2>/dev/null)" ]; }
wait_for 60 settled || echo "nodes did not settle: $(sinfo -h -N -o '%N %T' 2>&1 | tr '\n' ' ')"
scontrol show node > "$T/nodes.txt" 2>&1
for n in $nodes; do slurmd -G -N "$n" > "$T/$n.G" 2>&1; done
[ -f "$T/steps.sh" ] && bash "$T/steps.sh" > "$T/steps.out" 2>&1
for f in "$T"/pids/*.pid; do kill -TERM "$(cat "$f")" 2>/dev/null; done
for f in "$T"/pids/*.pid; do wait_for 10 sh -c "! kill -0 $(cat "$f") 2>/dev/null" || kill -KILL "$(cat "$f")" 2>/dev/null; done
INNER
[ "${PREPARE_ONLY:-}" = 1 ] && exit 0

mkdir -p "$ROOTFS$T"
unshare --mount --propagation private -- sh -ec '
  mount --bind "$2" "$1/mnt/gpubind-test"
  mount -t proc proc "$1/proc"
  mount --rbind /sys "$1/sys"
  mount --rbind /dev "$1/dev"
  chroot "$1" /bin/bash /mnt/gpubind-test/inner.sh
' sh "$ROOTFS" "$D"
[ -s "$D/nodes.txt" ]

#!/usr/bin/env bash
# Slurm of a newer release with cgroup/v2 and no systemd (cgroup.conf IgnoreSystemd=yes, 23.02
# on), TaskPlugin=task/cgroup,task/affinity and gpubind's SPANK plugin built for that release, on
# a real multi-socket, multi-NUMA kernel: the qemu 2s4n VM (tests/qemu/vm.sh; 2 sockets x 2 NUMA
# nodes, 8 CPUs, a stand-in NVIDIA GPU per node). This host mounts cgroup v1, where Slurm's
# cgroup/v2 cannot run; the VM mounts cgroup v2 only. The release's root (scripts/slurm-release.sh)
# goes into the VM as it is and runs there by chroot (tests/slurm/release_cluster.sh writes the
# cluster's files, PREPARE_ONLY). Checks:
#   1. slurmd of the release counts, on the VM's own kernel (no config_overrides), the node
#      gres-conf wrote for it (numa_node_as_socket: 4 sockets of 2 cores), and it registers IDLE.
#   2. Each task of `srun -n4 --gpus-per-task=1 --gpubind=verbose` runs in its step's cgroup v2
#      (.../step_M/user/task_N, under the scope slurmd made without systemd), is bound within that
#      cgroup's cpuset.cpus.effective to CPUs of its GPU's NUMA node, and the plugin says so.
#   3. Job A (no GPU) holds GPU 0's node's cores; job B's one task is given every GPU, GPU 0 first:
#      it is bound inside its own cgroup, never on job A's cores.
#
#   cgroup_v2_test.sh GPUBIND RELEASE PLUGIN_FOR_RELEASE CACHE_DIR
# KEEP_VM_OUT=FILE keeps the VM's whole output (each of the cluster's files under ===NAME).
set -u
GPUBIND=${1:?gpubind binary}
RELEASE=${2:?release, e.g. 26.05}
PLUGIN=${3:?the plugin built for RELEASE}
CACHE=${4:?cache directory for the VM kernel}
HERE=$(cd "$(dirname "$0")" && pwd)
T=/mnt/gpubind-test
. "$HERE/release_lib.sh"
need_release "the cluster's files keep their owners in the VM"
[ -f "$PLUGIN" ] || skip "the plugin for Slurm $RELEASE is not built (make its root, then configure the build again)"

W=$(mktemp -d /tmp/gpubind-cgroup-v2.XXXXXX)
trap 'rm -rf "$W"' EXIT
D=$W/cluster
mkdir -p "$D/nodes"
fixture=$HERE/../data/qemu/2s4n.json
"$GPUBIND" slurm gres-conf --quiet --topology "$fixture" --node-name n1 --slurm-version "$RELEASE" > "$D/nodes/n1.gres" ||
  { fail "gres-conf for the 2s4n VM"; exit 1; }
sed -n 's/^# slurm.conf: SlurmdParameters=//p' "$D/nodes/n1.gres" > "$D/global"  # 24.11: for every node
[ -s "$D/global" ] || rm "$D/global"
cp "$PLUGIN" "$D/gpubind_spank.so"
echo "required $T/gpubind_spank.so" > "$D/plugstack.conf"
printf 'CgroupPlugin=cgroup/v2\nIgnoreSystemd=yes\nConstrainCores=yes\n' > "$D/cgroup.conf"
cat > "$D/steps.sh" <<STEPS
export SLURM_CONF=$T/etc/slurm.conf
probe='c=\$(sed -n "s/^0:://p" /proc/self/cgroup); echo "\$SLURM_LOCALID \$c \$(cat /sys/fs/cgroup\$c/cpuset.cpus.effective) \$(grep Cpus_allowed_list /proc/self/status | cut -f2) \${GPUBIND_CPUS:-unset} \${GPUBIND_GPU:-unset}"'
timeout 60 srun -Q -N1 -n4 --gpus-per-task=1 --gpubind=verbose sh -c "\$probe" > $T/per_task.out 2>&1
timeout 300 srun -Q -N1 -n1 -c2 sleep 300 > $T/holder.out 2>&1 &
for i in \$(seq 100); do [ "\$(squeue -h -t R | wc -l)" -ge 1 ] && break; sleep 0.2; done
scontrol show job -d \$(squeue -h -t R -o %i | head -1) > $T/holder.job 2>&1
timeout 60 srun -Q -N1 -n1 -c2 --gres=gpu:4 --gpubind=verbose sh -c "\$probe" > $T/beside.out 2>&1
scancel --quiet \$(squeue -h -o %i)
STEPS
host=$(hostname -s)
echo "$host" > "$D/hostname"
REAL_MEMORY=1000 CONFIG_OVERRIDES=0 PREPARE_ONLY=1 TASK_PLUGIN=task/cgroup,task/affinity "$HERE/release_cluster.sh" "$ROOTFS" "$D" 22000 > "$W/prepare.log" 2>&1 ||
  { fail "release_cluster.sh could not write the cluster: $(tail -3 "$W/prepare.log")"; exit 1; }

# The root as the VM gets it: what the daemons, srun and the shell need (no documentation,
# headers, package caches).
mkdir -p "$W/root"
tar -C "$ROOTFS" --exclude=./usr/share/doc --exclude=./usr/share/man --exclude=./usr/share/locale --exclude=./usr/include \
  --exclude=./var/cache --exclude=./var/lib/apt --exclude=./usr/lib/x86_64-linux-gnu/libslurm.a --exclude=./usr/lib/x86_64-linux-gnu/perl \
  --exclude=./usr/share/perl -cf - . | tar -C "$W/root" -xf -
# glibc's getaddrinfo (AI_ADDRCONFIG, as Slurm asks) finds no address on a machine whose only
# interface is the loopback: the VM gets a dummy interface, from the kernel's own module.
kernel=$(ls -v /boot/vmlinuz-* 2>/dev/null | tail -1)
dummy=$(readlink -f "$(find "/lib/modules/${kernel#/boot/vmlinuz-}" -name dummy.ko 2>/dev/null | head -1)")
[ -n "$dummy" ] || skip "no uncompressed dummy.ko for ${kernel:-no kernel} (the VM needs a network address for Slurm)"
start=$(date +%s)
VM_TIMEOUT=${VM_TIMEOUT:-300} "$HERE/../qemu/vm.sh" --layout 2s4n --cache "$CACHE" --gpu-id 10de:2330:030200 \
  --tree "$W/root:/slurmroot" --tree "$D:/slurmroot$T" --copy "$HERE/guest_cgroup_v2.sh" --copy "$dummy" -- sh "$HERE/guest_cgroup_v2.sh" "$dummy" > "$W/vm.out" 2>&1
rc=$?
[ -n "${KEEP_VM_OUT:-}" ] && cp "$W/vm.out" "$KEEP_VM_OUT"
echo "VM 2s4n with Slurm $RELEASE: $(($(date +%s) - start)) s (exit $rc)"
[ $rc = 77 ] && { cat "$W/vm.out"; exit 77; }
[ $rc = 0 ] || { fail "the VM did not finish (exit $rc): $(tail -20 "$W/vm.out")"; echo "$failures failure(s)"; exit 1; }
section() { tr -d '\r' < "$W/vm.out" | awk -v s="===$1" '$0 == s {p = 1; next} /^===/ {p = 0} p'; }  # the serial line's CRs

# 1. The node as slurmd counts it on the VM's kernel (no config_overrides: slurmctld refuses a node
#    whose count is below its line) and logs it.
state=$(section nodes.txt | sed -n 's/.* State=\([^ ]*\).*/\1/p')
line=$(sed -n 's/^# slurm.conf: NodeName=n1 .*SocketsPerBoard=\([0-9]*\) CoresPerSocket=\([0-9]*\) ThreadsPerCore=\([0-9]*\).*/Sockets=\1 Cores=\2 Threads=\3/p' "$D/nodes/n1.gres")
counted=$(section slurmd.log | sed -n 's/.* CPUs=[0-9]* Boards=[0-9]* \(Sockets=[0-9]* Cores=[0-9]* Threads=[0-9]*\) .*/\1/p' | head -1)
[ -n "$line" ] && [ "$counted" = "$line" ] && pass "Slurm $RELEASE's slurmd counts $counted on the 2s4n kernel, as gres-conf's node line" ||
  fail "Slurm $RELEASE's slurmd counts '$counted' on the 2s4n kernel, gres-conf's line '$line'"
case $state in
  IDLE*) pass "Slurm $RELEASE on the 2s4n kernel: node n1 IDLE with gres-conf's $(sed -n 's/^# slurm.conf: NodeName=n1 //p' "$D/nodes/n1.gres" | cut -d' ' -f1-5)" ;;
  *) fail "Slurm $RELEASE on the 2s4n kernel: node n1 is $state: $(section nodes.txt | sed -n 's/^ *Reason=//p') $(section slurmd.log | tail -5 | tr '\n' ' ')" ;;
esac

# GPU i's NUMA node CPUs, from the fixture.
gpu_cpus() { /usr/bin/python3 -c 'import json,sys; print([g["cpus"] for g in json.load(open(sys.argv[1]))["gpus"] if g["pci"] == sys.argv[2]][0])' "$fixture" "$1"; }
# Whether CPU list $1 is within CPU list $2 ("0-1,4").
subset() {
  /usr/bin/python3 -c 'import sys
def s(l): return {i for p in l.split(",") if p for i in range(int(p.split("-")[0]), int(p.split("-")[-1]) + 1)}
sys.exit(0 if s(sys.argv[1]) and s(sys.argv[1]) <= s(sys.argv[2]) else 1)' "$1" "$2"
}
# 2. Per task: in its step's cgroup, bound within its cpuset, near its GPU.
judge_task() {  # judge_task WHAT LINE: "LOCALID CGROUP EFFECTIVE ALLOWED GPUBIND_CPUS GPU"
  local what=$1 id cg eff allowed cpus gpu
  read -r id cg eff allowed cpus gpu <<< "$2"
  case $cg in */step_*/*task_*) ;; *) fail "$what: task $id not in a step's task cgroup: '$2'"; return ;; esac
  if [ "$allowed" != "$cpus" ] || [ -z "$eff" ] || ! subset "$allowed" "$eff"; then
    fail "$what: task $id bound to '$allowed' (GPUBIND_CPUS '$cpus') outside its cgroup's cpuset '$eff'"; return
  fi
  echo "$id $cg $eff $allowed $gpu"
}
n=0
while read -r line; do
  got=$(judge_task "--gpus-per-task=1" "$line") || continue
  [ -n "$got" ] || continue
  set -- $got
  near=$(gpu_cpus "$5" 2>/dev/null)
  if [ -n "$near" ] && subset "$4" "$near"; then n=$((n + 1)); else fail "--gpus-per-task=1: task $1 on CPUs $4, its GPU $5's node has '$near'"; fi
done < <(section per_task.out | grep -E '^[0-3] ')
[ "$n" = 4 ] && pass "Slurm $RELEASE cgroup/v2: each of 4 tasks in its step's cgroup, bound to its GPU's NUMA node CPUs" ||
  fail "Slurm $RELEASE cgroup/v2 --gpus-per-task=1: $n of 4 tasks right: $(section per_task.out | tr '\n' ' ')"
section per_task.out | grep -q 'gpubind: .* rank 0 (local 0):' || fail "no verbose line from the plugin: $(section per_task.out | head -3 | tr '\n' ' ')"

# 3. Beside job A: the task stays in its own cgroup's cpuset.
line=$(section beside.out | grep -E '^0 ')
held=$(section holder.job | sed -n 's/.* CPU_IDs=\([^ ]*\) .*/\1/p' | head -1)
if [ -z "$held" ] || [ -z "$line" ]; then
  fail "beside job A: job A's CPUs '$held', the task: '$line' $(section beside.out | head -3 | tr '\n' ' ')"
elif got=$(judge_task "beside job A" "$line") && [ -n "$got" ]; then
  set -- $got
  if /usr/bin/python3 -c 'import sys
def s(l): return {i for p in l.split(",") if p for i in range(int(p.split("-")[0]), int(p.split("-")[-1]) + 1)}
sys.exit(0 if not s(sys.argv[1]) & s(sys.argv[2]) else 1)' "$4" "$held"; then
    pass "Slurm $RELEASE cgroup/v2: job A holds CPUs $held; job B's task, given GPUs $5 (GPU 0's CPUs $(gpu_cpus 0000:21:00.0)), is in $2 (cpuset $3), bound to $4"
  else
    fail "beside job A: the task is bound to $4, which job A holds ($held)"
  fi
fi

echo "$failures failure(s)"
[ "$failures" = 0 ]

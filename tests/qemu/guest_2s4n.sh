#!/bin/sh
# Runs inside the 2s4n VM (busybox sh): gpubind's live path on a real 2-socket, 4-node kernel.
# Prints one section per check ("=== name ===", the output, "rc=N"); tests/qemu/judge.py on the
# host compares them with the plan gpubind makes from the layout's fixture.
# Usage: guest_2s4n.sh GPUBIND FIRST_TOUCH FAKE_CUDART CUDART_FIXTURE
G=$1 TOUCH=$2 CUDART=$3 CUDART_FIXTURE=$4
export GPUBIND_CACHE_DIR=/tmp/gpubind-cache
section() { echo "=== $1 ==="; }
end() { echo "rc=$?"; }
SHOW=$(dirname "$0")/show_rank.sh

section topo_json; $G topo --json --no-gpu-runtime; end
section hwloc; lstopo-no-graphics --whole-io --of xml -; end

# Every rank of a 4-GPU launch: its GPU, CPUs, memory node, the cpuset's nodes, the kernel's policy.
section launch; $G launch -n 4 --quiet -- sh -c 'sh "$0" $LOCAL_RANK' "$SHOW"; end

# exec under Open MPI's mpirun (on one node: the isolated launcher, no ssh; loopback up).
section mpirun
ip link set lo up
hostname qemu-2s4n
OMPI_MCA_plm=isolated orterun --allow-run-as-root --oversubscribe --bind-to none -np 4 $G exec --quiet -- sh -c \
  'sh "$0" $OMPI_COMM_WORLD_LOCAL_RANK' "$SHOW"; end

# exec as srun starts each task (a Slurm daemon in the guest would need munge, slurmctld and a
# slurmd with their state: the live SPANK tests run on the host's throw-away cluster instead).
section srun_env
for r in 0 1 2 3; do
  SLURM_LOCALID=$r SLURM_NODEID=0 SLURM_STEP_TASKS_PER_NODE=4 SLURM_PROCID=$r $G exec --quiet -- sh "$SHOW" $r
done
end

# exec as a torchrun worker of each local rank: where its first-touched pages land.
for mode in bind preferred; do
  section "touch_$mode"
  for r in 0 1 2 3; do
    echo "rank=$r $(LOCAL_RANK=$r LOCAL_WORLD_SIZE=4 $G exec --quiet --mem $mode -- $TOUCH 64)"
  done
  end
done
section touch_interleave
echo "rank=0 $(LOCAL_RANK=0 LOCAL_WORLD_SIZE=2 $G exec --quiet --policy socket --mem interleave -- $TOUCH 64)"; end

# The cache: the first exec writes this machine's topology, a second one reads it (the file is
# not rewritten: writes are atomic renames, so a rewrite is a new inode).
section cache
LOCAL_RANK=0 LOCAL_WORLD_SIZE=4 $G exec --quiet -- true
echo "files=$(ls "$GPUBIND_CACHE_DIR" | wc -l) inode=$(stat -c %i "$GPUBIND_CACHE_DIR"/topology-*.json)"
LOCAL_RANK=3 LOCAL_WORLD_SIZE=4 $G exec --quiet -- true
echo "files=$(ls "$GPUBIND_CACHE_DIR" | wc -l) inode=$(stat -c %i "$GPUBIND_CACHE_DIR"/topology-*.json)"
end

# Restricted CPUs: under taskset without socket 1, every rank is planned on socket 0.
section restricted
taskset -c 0-3 $G launch -n 4 -- sh -c 'echo "rank=$LOCAL_RANK cpus=$(grep Cpus_allowed_list /proc/self/status | cut -f2)"' 2>/tmp/restricted.err
end
sed 's/^/stderr: /' /tmp/restricted.err

# A cgroup v2 cpuset without socket 0 (as Slurm or Kubernetes confine a job): a plan inside it,
# from the machine's cache entry with the cgroup's cpuset as the allowed CPUs.
section cgroup
mkdir -p /sys/fs/cgroup/job
echo +cpuset >/sys/fs/cgroup/cgroup.subtree_control
echo 4-7 >/sys/fs/cgroup/job/cpuset.cpus
echo "cache files before=$(ls "$GPUBIND_CACHE_DIR" | wc -l)"
sh -c 'echo $$ >/sys/fs/cgroup/job/cgroup.procs && exec "$@"' sh $G launch -n 2 --quiet -- \
  sh -c 'echo "rank=$LOCAL_RANK cpus=$(grep Cpus_allowed_list /proc/self/status | cut -f2)"'
end
echo "cache files after=$(ls "$GPUBIND_CACHE_DIR" | wc -l)"

# check: a well-bound rank, one on the wrong socket, one whose memory is remote, one re-pinned.
section check
LOCAL_RANK=0 LOCAL_WORLD_SIZE=4 $G exec --quiet -- sleep 120 & good=$!
GPUBIND_GPU=0000:21:00.0 taskset -c 6 sleep 120 & wrong=$!
LOCAL_RANK=1 LOCAL_WORLD_SIZE=4 $G exec --quiet --mem bind --mem-node 3 -- $TOUCH 64 hold >/dev/null & remote=$!
LOCAL_RANK=2 LOCAL_WORLD_SIZE=4 $G exec --quiet -- sleep 120 & drifted=$!
# Each is its command by now (exec'd: its environment is the one gpubind gave it), and the
# remote one has touched its pages.
ready() {
  [ "$(cat /proc/$good/comm /proc/$wrong/comm /proc/$drifted/comm 2>/dev/null | tr '\n' ' ')" = "sleep sleep sleep " ] &&
    case "$(cat /proc/$remote/comm 2>/dev/null)" in *first_t*) true ;; *) false ;; esac &&
    grep -q ' anon=.*N3=' /proc/$remote/numa_maps 2>/dev/null
}
i=0
while [ $i -lt 300 ] && ! ready; do sleep 0.1; i=$((i + 1)); done
ready && echo "ready" || echo "not ready after 30 s"
taskset -p -c 0-7 $drifted >/dev/null
echo "pids good=$good wrong=$wrong remote=$remote drifted=$drifted"
$G check --pid $good --pid $wrong --pid $remote --pid $drifted --numa-maps --no-gpu-runtime --json; end
kill $good $wrong $remote $drifted 2>/dev/null

# rebind: a job that was never bound, each rank's buffer first-touched on another socket's node
# (rank 0's GPU is on node 0, its pages on node 3; rank 1's on node 1, its pages on node 2),
# moved while its threads step through the buffer. Each thread's allowed CPUs and the anonymous
# pages per node before and after; the steps go on after.
section rebind
LOCAL_RANK=0 LOCAL_WORLD_SIZE=2 $TOUCH 32 work 3 3 >/tmp/rank0.out & r0=$!
LOCAL_RANK=1 LOCAL_WORLD_SIZE=2 $TOUCH 32 work 3 2 >/tmp/rank1.out & r1=$!
steps() { tail -n 1 /tmp/rank$1.out 2>/dev/null | sed -n 's/^steps //p'; }
stepping() { [ "$(steps 0)" -gt 0 ] 2>/dev/null && [ "$(steps 1)" -gt 0 ] 2>/dev/null; }
i=0
while [ $i -lt 300 ] && ! stepping; do sleep 0.1; i=$((i + 1)); done
stepping && echo "stepping" || echo "not stepping after 30 s"
echo "pids r0=$r0 r1=$r1"
state() {  # state PHASE PID: each thread's allowed CPUs, the anonymous pages per node
  for t in /proc/$2/task/*; do echo "$1 pid=$2 tid=${t##*/} cpus=$(grep Cpus_allowed_list $t/status | cut -f2)"; done
  echo "$1 pid=$2 pages $(awk '/ anon=/ && !/ file=/ { for (i = 1; i <= NF; i++) if ($i ~ /^N[0-9]+=/) { split(substr($i, 2), a, "="); n[a[1]] += a[2] } }
    END { for (k in n) printf "N%s=%s ", k, n[k] }' /proc/$2/numa_maps)"
}
state before $r0; state before $r1
s0=$(steps 0) s1=$(steps 1)
$G rebind --match 'first_touch [0-9]+ work' --no-gpu-runtime --json; end
state after $r0; state after $r1
moved_on() { [ "$(steps 0)" -gt $((s0 + 10)) ] 2>/dev/null && [ "$(steps 1)" -gt $((s1 + 10)) ] 2>/dev/null; }
i=0
while [ $i -lt 300 ] && ! moved_on; do sleep 0.1; i=$((i + 1)); done
echo "steps at rebind r0=$s0 r1=$s1, later r0=$(steps 0) r1=$(steps 1)"
kill $r0 $r1 2>/dev/null

# doctor on a real 4-node kernel: its NUMA layout and distances, the kernel's own settings.
section doctor; $G doctor --json; end

# watch: a bound busy rank, and an unbound one that is moved between the sockets while watched
# (its GPU is on node 1; it is moved between nodes 0 and 2).
section watch
LOCAL_RANK=0 LOCAL_WORLD_SIZE=4 $G exec --quiet -- sh -c 'while :; do :; done' & bound=$!
GPUBIND_GPU=0000:41:00.0 sh -c 'while :; do :; done' & loose=$!
# watch samples each rank's last CPU once per 1 s interval. The mover holds each socket for 1.3 s:
# three samples span 2 s, more than one hold, so at least one lands on each socket whatever the
# phase (a fast alternation aliases with the sampling: a 0.5 s period puts every sample on one side).
( while :; do taskset -p -c 0 $loose >/dev/null; sleep 1.3; taskset -p -c 4 $loose >/dev/null; sleep 1.3; done ) & mover=$!
echo "pids bound=$bound loose=$loose"
$G watch --pid $bound --pid $loose --count 3 --interval 1 --json 2>/tmp/watch.err; end
kill $bound $loose $mover 2>/dev/null

# Measured locality: copies from every node's memory to each GPU (the fake CUDA runtime's clock
# follows the node the pages are really on).
section measure
GPUBIND_CUDA_RUNTIME=$CUDART GPUBIND_FAKE_CUDART=$CUDART_FIXTURE $G topo --measure --no-gpu-runtime --json 2>/tmp/measure.err; end
sed 's/^/stderr: /' /tmp/measure.err

# bench on two real sockets: every strategy, then with the GPUs numbered backwards (CUDA
# enumerates them in another order than the CPUs), where GPU-unaware pinning puts every rank on
# a node its GPU is not on. Small steps: TCG's timing is not real; placement is what is judged.
section bench
$G bench -n 4 --threads 1 --steps 20 --rounds 2 --warmup 1 --buffer-mib 1 --compute 1000 --json 2>/tmp/bench.err; end
sed 's/^/stderr: /' /tmp/bench.err
section bench_reversed
CUDA_VISIBLE_DEVICES=3,2,1,0 $G bench -n 4 --threads 1 --steps 20 --rounds 2 --warmup 1 --buffer-mib 1 --compute 1000 \
  --strategies closest,cpu-only --json 2>/tmp/bench.err; end
sed 's/^/stderr: /' /tmp/bench.err
# --gpu: every step also copies each rank's buffer to its GPU through the fake CUDA runtime, whose
# copy rate follows the node the pages are really on.
section bench_gpu
CUDA_VISIBLE_DEVICES=3,2,1,0 GPUBIND_CUDA_RUNTIME=$CUDART GPUBIND_FAKE_CUDART=$CUDART_FIXTURE $G bench -n 4 --gpu --threads 1 \
  --steps 10 --rounds 2 --warmup 1 --buffer-mib 1 --compute 1000 --strategies closest,cpu-only --json 2>/tmp/bench.err; end
sed 's/^/stderr: /' /tmp/bench.err
section bench_gpu_missing
GPUBIND_CUDA_RUNTIME=/nonexistent/libcudart.so $G bench -n 4 --gpu --steps 2 --rounds 1 --strategies closest 2>&1; end

# Kubernetes pods on two real sockets. The device plugin gave each pod GPUs 2 and 3: the NVIDIA
# container toolkit leaves the container their device files only (regular files here: the GPUs are
# fake) beside the driver's /proc entry of every GPU, and sets NVIDIA_VISIBLE_DEVICES. The CPU
# manager gave one pod CPUs 4-7 (socket 1, the GPUs' socket) and the other 0-3 (socket 0).
section pod
mount -t tmpfs pod /proc/driver
minor=0
for d in $(ls /sys/bus/pci/devices); do
  [ "$(cat /sys/bus/pci/devices/$d/vendor)" = 0x10de ] || continue
  mkdir -p /proc/driver/nvidia/gpus/$d
  printf 'Model: \t\t NVIDIA H100\nDevice Minor: \t %s\n' $minor >/proc/driver/nvidia/gpus/$d/information
  minor=$((minor + 1))
done
touch /dev/nvidia2 /dev/nvidia3
for pod in aligned:4-7 crossed:0-3; do
  name=${pod%%:*}
  mkdir -p /sys/fs/cgroup/pod-$name
  echo ${pod#*:} >/sys/fs/cgroup/pod-$name/cpuset.cpus
  echo "pod=$name"
  sh -c 'echo $$ >/sys/fs/cgroup/pod-'$name'/cgroup.procs && exec "$@"' sh \
    env KUBERNETES_SERVICE_HOST=10.96.0.1 NVIDIA_VISIBLE_DEVICES=2,3 $G launch -- sh -c 'sh "$0" $LOCAL_RANK' "$SHOW" 2>&1
done
end
umount /proc/driver
rm -f /dev/nvidia2 /dev/nvidia3

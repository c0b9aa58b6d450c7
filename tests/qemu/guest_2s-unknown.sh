#!/bin/sh
# Runs inside the 2s-unknown VM (busybox sh): GPUs on the root bus, so sysfs gives them no NUMA
# node (numa_node -1), as in cloud VMs; NVML (the test suite's fake) gives each a CPU affinity
# within one node, which names it.
# Sections as in guest_2s4n.sh, judged by tests/qemu/judge.py.
# Usage: guest_2s-unknown.sh GPUBIND FAKE_NVML_DIR NVML_FIXTURE
G=$1 NVML=$2 NVML_FIXTURE=$3
export GPUBIND_CACHE_DIR=/tmp/gpubind-cache
section() { echo "=== $1 ==="; }
end() { echo "rc=$?"; }

# sysfs alone: the GPUs' locality is unknown, and said.
section topo_json; $G topo --json --no-gpu-runtime 2>/tmp/topo.err; end
sed 's/^/stderr: /' /tmp/topo.err
section hwloc; lstopo-no-graphics --whole-io --of xml -; end

# With NVML: the nodes of its CPU affinities are taken, and said.
section topo_runtime
LD_LIBRARY_PATH=$NVML GPUBIND_FAKE_NVML=$NVML_FIXTURE $G topo --gpu-runtime --json 2>/tmp/runtime.err; end
sed 's/^/stderr: /' /tmp/runtime.err

# A rank handed its GPU by UUID (as Kubernetes and Slurm's MIG gres do): bound to that node.
section exec_uuid
for uuid in GPU-1f2e3d4c-5b6a-4798-8a6b-000000000010 GPU-1f2e3d4c-5b6a-4798-8a6b-000000000011; do
  echo "uuid=$uuid $(CUDA_VISIBLE_DEVICES=$uuid LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 LD_LIBRARY_PATH=$NVML GPUBIND_FAKE_NVML=$NVML_FIXTURE \
    $G exec --quiet -- sh -c 'echo "gpu=$GPUBIND_GPU cpus=$(grep Cpus_allowed_list /proc/self/status | cut -f2) mem=$GPUBIND_MEM"')"
done
end

# Without any library: a launch still runs every rank, and says why it cannot place them.
section launch_unknown
$G launch -n 2 -- sh -c 'echo "rank=$LOCAL_RANK cpus=$(grep Cpus_allowed_list /proc/self/status | cut -f2)"' 2>/tmp/launch.err; end
sed 's/^/stderr: /' /tmp/launch.err

# doctor on the real kernel: the GPUs' unknown locality, and NVML knowing it.
section doctor; LD_LIBRARY_PATH=$NVML GPUBIND_FAKE_NVML=$NVML_FIXTURE $G doctor --json; end

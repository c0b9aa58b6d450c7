#!/bin/sh
# Runs inside a layout's VM (busybox sh): live discovery and a launch of one rank per GPU, for
# the layouts whose point is their shape (switches and SMT, NPS4 with a memory-only node).
# Sections as in guest_2s4n.sh, judged by tests/qemu/judge.py.
# Usage: guest_plan.sh GPUBIND RANKS [FIRST_TOUCH MEMORY_NODE]
G=$1 N=$2 TOUCH=${3:-} MEMNODE=${4:-}
export GPUBIND_CACHE_DIR=/tmp/gpubind-cache
section() { echo "=== $1 ==="; }
end() { echo "rc=$?"; }
SHOW=$(dirname "$0")/show_rank.sh

section topo_json; $G topo --json --no-gpu-runtime; end
section hwloc; lstopo-no-graphics --whole-io --of xml -; end
section matrix; $G topo --format matrix --no-gpu-runtime; end
section launch; $G launch -n "$N" --quiet -- sh -c 'sh "$0" $LOCAL_RANK' "$SHOW"; end
if [ -n "$TOUCH" ]; then
  # Memory on a node of the admin's choice (a CPU-less one: HBM, CXL): every page there.
  section touch_memory_node
  for r in $(seq 0 $((N - 1))); do
    echo "rank=$r $(LOCAL_RANK=$r LOCAL_WORLD_SIZE=$N $G exec --quiet --mem bind --mem-node "$MEMNODE" -- $TOUCH 16)"
  done
  end
fi
# doctor on the real kernel: the layout's NUMA nodes (CPU-less ones too), its SLIT, the PCIe
# switches above the GPUs found through sysfs.
section doctor; $G doctor --json --no-gpu-runtime; end

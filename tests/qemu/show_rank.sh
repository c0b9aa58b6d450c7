#!/bin/sh
# Guest helper for the qemu tier: one rank's binding as it was given (GPUBIND_*) and as the kernel
# holds it (/proc/self/status; the memory policy from numa_maps, whose first mapping has no policy
# of its own and so shows the task's, e.g. "prefer:2", "bind:2", "default").
# Usage (from a rank): sh show_rank.sh RANK
policy=$(sed -n '1s/^[0-9a-f]* \([^ ]*\) .*/\1/p' /proc/self/numa_maps)
echo "rank=$1 gpu=$GPUBIND_GPU cpus=$(grep Cpus_allowed_list /proc/self/status | cut -f2) mem=$GPUBIND_MEM" \
  "mems=$(grep Mems_allowed_list /proc/self/status | cut -f2) policy=$policy"

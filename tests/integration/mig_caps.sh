#!/usr/bin/env bash
# A MIG device named in CUDA_VISIBLE_DEVICES where no NVML answers (issue 32). "MIG-<uuid>" does
# not name its parent GPU; a container or device cgroup given one MIG device is given the parent's
# /dev/nvidiaN and its instance's capability files /dev/nvidia-caps/nvidia-cap<M>, which the
# driver lists under /proc/driver/nvidia/capabilities/gpu<minor>/mig/gi<G>[/ci<C>]/access.
#
# In a mount namespace of its own (lib.sh: stand_in_gpus), two stand-in GPUs and the driver's
# capability list for a MIG instance on each; a topology of this machine (gpubind topo --json)
# with the two GPUs; then exec with CUDA_VISIBLE_DEVICES=MIG-... and no NVML:
#   both instances' capability files present (the host): exit 125, one line naming the count;
#   only GPU 1's (the container's): the rank is bound to GPU 1 and says so in --verbose;
#   SLURM_STEP_GPUS still narrows as before.
# Usage: mig_caps.sh GPUBIND
set -u
. "$(dirname "$0")/lib.sh"
private_mounts "$@" || skip "stand-in GPU device files need a mount namespace of their own (root and unshare -m)"
stand_in_gpus 0000:18:00.0 0000:86:00.0 || skip "could not lay stand-in GPU device files over /dev and /proc/driver"
PY=/usr/bin/python3
export GPUBIND_CACHE_DIR=off LD_LIBRARY_PATH=/nonexistent  # no NVML: the library is not installed here
caps=$WORK/driver/nvidia/capabilities
for g in 0 1; do
  mkdir -p "$caps/gpu$g/mig/gi$((g + 1))/ci0"
  printf 'DeviceFileMinor: %d\nDeviceFileMode: 292\n' $((10 + 2 * g)) >"$caps/gpu$g/mig/gi$((g + 1))/access"
  printf 'DeviceFileMinor: %d\nDeviceFileMode: 292\n' $((11 + 2 * g)) >"$caps/gpu$g/mig/gi$((g + 1))/ci0/access"
done
mkdir /dev/nvidia-caps
for m in 10 11 12 13; do : >/dev/nvidia-caps/nvidia-cap$m; done

"$GPUBIND" topo --json >"$WORK/live.json" 2>/dev/null || skip "gpubind topo --json failed on this machine"
$PY - "$WORK/live.json" "$WORK/two.json" <<'PYEOF'
import json, sys
t = json.load(open(sys.argv[1]))
node = t["numa_nodes"][0]
t["gpus"] = [{"index": i, "vendor": "nvidia", "name": "NVIDIA A100-SXM4-80GB", "uuid": "", "pci": pci,
              "vendor_id": "0x10de", "device_id": "0x20b2", "class_id": "0x0302", "os_names": [],
              "numa": [node["os_index"]], "cpus": node["cpus"], "pcie_path": ["hb:" + pci[:7]], "memory_numa": []}
             for i, pci in enumerate(["0000:18:00.0", "0000:86:00.0"])]
json.dump(t, open(sys.argv[2], "w"))
PYEOF
mig=MIG-5c5a4f09-9d1f-5b2f-9b4d-6a1a3bdb1f0e
run() { env CUDA_VISIBLE_DEVICES=$mig LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 "$@" "$GPUBIND" exec --verbose --topology "$WORK/two.json" -- \
          sh -c 'echo "gpu=$GPUBIND_GPU"' >"$WORK/out" 2>"$WORK/err"; }

# The host: both GPUs' instances may be opened, so the id names no parent.
run
rc=$?
if [ $rc = 125 ] && grep -q "belong to 2 GPU(s)" "$WORK/err" && ! grep -q gpu= "$WORK/out"; then
  pass "both GPUs' MIG capability files open: exit 125, the error naming 2 GPUs"
else
  fail "both capability sets: expected exit 125 naming 2 GPUs, rc $rc: $(cat "$WORK/err")"
fi

# The container: only GPU 1's instance (its capability files 12 and 13).
rm /dev/nvidia-caps/nvidia-cap10 /dev/nvidia-caps/nvidia-cap11
run
rc=$?
if [ $rc = 0 ] && grep -qx "gpu=0000:86:00.0" "$WORK/out" && grep -q "GPU 1 (0000:86:00.0)" "$WORK/err"; then
  pass "only GPU 1's MIG capability files: bound to its parent GPU 1 (0000:86:00.0)"
else
  fail "one capability set: expected GPU 0000:86:00.0, rc $rc: $(cat "$WORK/out" "$WORK/err")"
fi

# Slurm's allocation narrows as before (here to GPU 0, whatever the capability files say).
run SLURM_STEP_GPUS=0
rc=$?
if [ $rc = 0 ] && grep -qx "gpu=0000:18:00.0" "$WORK/out"; then
  pass "SLURM_STEP_GPUS=0 narrows to GPU 0"
else
  fail "SLURM_STEP_GPUS=0: rc $rc: $(cat "$WORK/out" "$WORK/err")"
fi
finish

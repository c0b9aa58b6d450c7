#!/usr/bin/env bash
# The GPU libraries this machine really has, through the same dlopen paths the fakes test: NVML,
# ROCm SMI (Debian's librocm-smi64-1 comes with the header package), the CUDA runtime and the HIP
# runtime. With a GPU of that vendor, the live topology is cross-checked and measured and each
# GPU must get a UUID and a copy bandwidth; without one (no driver), the library must fail to
# start with one warning, the rest of the output intact. A library that is not installed is
# skipped with its reason.
# Usage: real_gpu_libraries.sh GPUBIND
set -u
. "$(dirname "$0")/lib.sh"
export GPUBIND_CACHE_DIR="$WORK/cache"
has_lib() { ldconfig -p | grep -q "$1"; }
ran=0
# gpus VENDOR: how many GPUs of that vendor the live topology has.
gpus() { "$GPUBIND" topo --json --no-gpu-runtime 2>/dev/null | /usr/bin/python3 -c "
import json, sys; print(sum(g['vendor'] == sys.argv[1] for g in json.load(sys.stdin)['gpus']))" "$1"; }

# library FILE VENDOR EXAMPLE NAME: the runtime library FILE for GPUs of VENDOR.
library() {
  local file=$1 vendor=$2 example=$3 name=$4 n
  has_lib "$file" || { echo "SKIP $name: $file is not installed"; return; }
  ran=1
  n=$(gpus "$vendor")
  if [ "${n:-0}" -gt 0 ]; then
    "$GPUBIND" topo --gpu-runtime --json >"$WORK/out" 2>"$WORK/err"
    /usr/bin/python3 - "$WORK/out" "$vendor" <<'PY' && pass "$name: every $vendor GPU of this machine has a UUID" || fail "$name live: $(cat "$WORK/err")"
import json, sys
j = json.load(open(sys.argv[1]))
gpus = [g for g in j["gpus"] if g["vendor"] == sys.argv[2]]
sys.exit(0 if gpus and all(g["uuid"].startswith("GPU-") for g in gpus) and j["gpu_runtime"] else 1)
PY
  else
    # No GPU of that vendor here: asked against a file that has some, the library cannot start.
    "$GPUBIND" topo --topology "example:$example" --gpu-runtime >"$WORK/out" 2>"$WORK/err"
    rc=$?
    [ $rc = 0 ] && [ "$(grep -c . "$WORK/err")" = 1 ] && grep -q "^gpubind: warning: no cross-check against the GPU runtime: $name: " "$WORK/err" \
      && grep -q "^Machine " "$WORK/out" && pass "$name without a GPU: one warning ($(cut -c1-100 "$WORK/err")...)" \
      || fail "$name without a GPU: rc $rc, stderr: $(cat "$WORK/err")"
  fi
}
library libnvidia-ml.so.1 nvidia dgx-h100 NVML
library librocm_smi64.so amd frontier-like "ROCm SMI"

# measure FILE VENDOR EXAMPLE NAME: the copy runtime FILE.
measure() {
  local file=$1 vendor=$2 example=$3 name=$4 n
  has_lib "$file" || { echo "SKIP $name: $file is not installed"; return; }
  ran=1
  n=$(gpus "$vendor")
  if [ "${n:-0}" -gt 0 ]; then
    "$GPUBIND" topo --measure --json >"$WORK/out" 2>"$WORK/err"
    /usr/bin/python3 - "$WORK/out" <<'PY' && pass "$name: every GPU measured from a NUMA node" || fail "$name live: $(cat "$WORK/err")"
import json, sys
m = json.load(open(sys.argv[1])).get("measured") or []
sys.exit(0 if m and all(v > 0 for g in m for v in g["bytes_per_second"].values()) and all(g["bytes_per_second"] for g in m) else 1)
PY
  else
    "$GPUBIND" topo --topology "example:$example" --measure --no-gpu-runtime >"$WORK/out" 2>"$WORK/err"
    rc=$?
    [ $rc = 0 ] && [ "$(grep -c . "$WORK/err")" = 1 ] && grep -q "^gpubind: warning: no measurement: $name: " "$WORK/err" \
      && ! grep -q "^Host-to-device" "$WORK/out" && pass "$name without a GPU: one warning ($(cut -c1-100 "$WORK/err")...)" \
      || fail "$name without a GPU: rc $rc, stderr: $(cat "$WORK/err")"
  fi
}
measure libcudart.so nvidia dgx-h100 "CUDA runtime"
measure libamdhip64.so amd frontier-like "HIP runtime"

[ $ran = 1 ] || skip "no GPU library installed (NVML, ROCm SMI, CUDA or HIP runtime)"
finish

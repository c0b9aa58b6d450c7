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

# try FILE VENDOR NAME FLAGS WARNING JUDGE: the library FILE for GPUs of VENDOR, asked by
# `topo FLAGS`. With such GPUs here, JUDGE (Python, given topo's JSON and the vendor) must accept
# the result; without, against an example that has them, the one warning is "WARNING NAME: ...".
try() {
  local file=$1 vendor=$2 name=$3 flags=$4 warning=$5 judge=$6 example=dgx-h100 rc
  has_lib "$file" || { echo "SKIP $name: $file is not installed"; return; }
  ran=1
  [ "$vendor" = amd ] && example=frontier-like
  if [ "$(gpus "$vendor")" -gt 0 ] 2>/dev/null; then
    # shellcheck disable=SC2086 # FLAGS are several flags
    "$GPUBIND" topo $flags --json >"$WORK/out" 2>"$WORK/err"
    /usr/bin/python3 -c "$judge" "$WORK/out" "$vendor" && pass "$name: every $vendor GPU of this machine, live" \
      || fail "$name live: $(cat "$WORK/err")"
  else
    # shellcheck disable=SC2086
    "$GPUBIND" topo --topology "example:$example" $flags >"$WORK/out" 2>"$WORK/err"
    rc=$?
    [ $rc = 0 ] && [ "$(grep -c . "$WORK/err")" = 1 ] && grep -q "^gpubind: warning: $warning$name: " "$WORK/err" \
      && grep -q "^Machine " "$WORK/out" && ! grep -q "^Host-to-device" "$WORK/out" \
      && pass "$name without a GPU: one warning ($(cut -c1-100 "$WORK/err")...)" || fail "$name without a GPU: rc $rc, stderr: $(cat "$WORK/err")"
  fi
}
uuids='
import json, sys
j = json.load(open(sys.argv[1]))
gpus = [g for g in j["gpus"] if g["vendor"] == sys.argv[2]]
sys.exit(0 if gpus and all(g["uuid"].startswith("GPU-") for g in gpus) and j["gpu_runtime"] else 1)'
bandwidths='
import json, sys
m = json.load(open(sys.argv[1])).get("measured") or []
sys.exit(0 if m and all(g["bytes_per_second"] and all(v > 0 for v in g["bytes_per_second"].values()) for g in m) else 1)'
try libnvidia-ml.so.1 nvidia NVML --gpu-runtime "no cross-check against the GPU runtime: " "$uuids"
try librocm_smi64.so amd "ROCm SMI" --gpu-runtime "no cross-check against the GPU runtime: " "$uuids"
try libcudart.so nvidia "CUDA runtime" "--measure --no-gpu-runtime" "no measurement: " "$bandwidths"
try libamdhip64.so amd "HIP runtime" "--measure --no-gpu-runtime" "no measurement: " "$bandwidths"

[ $ran = 1 ] || skip "no GPU library installed (NVML, ROCm SMI, CUDA or HIP runtime)"
finish

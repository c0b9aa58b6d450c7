#!/usr/bin/env bash
# watch with GPU utilization from NVML and ROCm SMI: the repository's fake libnvidia-ml.so.1 and
# librocm_smi64.so.1 (tests/fakes/, answering from tests/data/nvml/*.json) loaded through
# gpubind's real dlopen path. Two ranks (GPUBIND_GPU names their GPU) on the DGX H100-like
# example: GPUs 97 % and 20 % busy are IMBALANCE, exported as gpubind_gpu_utilization_ratio with
# memory and PCIe throughput; the same on the Frontier-like AMD example through ROCm SMI; without
# the library, with nvmlInit failing, or with one GPU's utilization unsupported: one warning at
# most, and watch goes on.
# Usage: watch_gpu.sh GPUBIND FAKE_NVML_DIR FAKE_ROCM_SMI_DIR
set -u
. "$(dirname "$0")/lib.sh"
fake=${2:?usage: $0 GPUBIND FAKE_NVML_DIR FAKE_ROCM_SMI_DIR}
fake_rsmi=${3:?usage: $0 GPUBIND FAKE_NVML_DIR FAKE_ROCM_SMI_DIR}
data=$(cd "$(dirname "$0")/../data/nvml" && pwd)
[ -e "$fake/libnvidia-ml.so.1" ] || skip "the fake NVML was not built ($fake/libnvidia-ml.so.1)"
export GPUBIND_CACHE_DIR="$WORK/cache"
command -v taskset >/dev/null || skip "taskset (util-linux) not found"
[ "$(nproc)" -ge 2 ] || skip "needs 2 CPUs: one per rank (unpinned ranks would OVERLAP)"
GPUBIND_GPU=0000:18:00.0 RANK=0 taskset -c 0 sleep 60 & r0=$!
GPUBIND_GPU=0000:2a:00.0 RANK=1 taskset -c 1 sleep 60 & r1=$!
trap 'kill $r0 $r1 2>/dev/null; rm -rf "$WORK"' EXIT
# value NAME GPU: the sample of family NAME for that GPU ("" for the node's), or nothing.
# A GPU's series carries node, gpu (index), UUID and pci labels; the node's only node.
value() {
  if [ -n "${2:-}" ]; then
    awk -v head="$1{node=\"$(hostname_of)\"," -v pci=",pci=\"$2\"}" 'index($1, head) == 1 && index($1, pci) {print $2}' "$WORK/m.prom"
  else
    awk -v want="$1{node=\"$(hostname_of)\"}" '$1 == want {print $2}' "$WORK/m.prom"
  fi
}
hostname_of() { sed -n 's/^gpubind_watch_intervals_total{node="\([^"]*\)"}.*/\1/p' "$WORK/m.prom"; }
# near VALUE WANT: VALUE is a number within 1e-9 of WANT.
near() { [ -n "$1" ] && awk -v v="$1" -v w="$2" 'BEGIN{d = v - w; exit !(d < 1e-9 && d > -1e-9)}'; }
# watch_with FIXTURE|none: two intervals of the two ranks; JSON lines in $WORK/out, stderr in $WORK/err.
watch_with() {
  local env=(env -u LD_LIBRARY_PATH)
  [ "$1" != none ] && env=(env LD_LIBRARY_PATH="$fake" GPUBIND_FAKE_NVML="$data/$1")
  "${env[@]}" "$GPUBIND" watch --topology example:dgx-h100 --pid $r0 --pid $r1 --count 2 --interval 0.2 --json \
    --textfile "$WORK/m.prom" >"$WORK/out" 2>"$WORK/err"
  rc=$?
}

watch_with two-gpus-uneven.json
/usr/bin/python3 - "$WORK/out" <<'PY' && [ $rc = 3 ] && [ ! -s "$WORK/err" ] \
  && near "$(value gpubind_gpu_utilization_ratio 0000:18:00.0)" 0.97 \
  && near "$(value gpubind_gpu_utilization_ratio 0000:2a:00.0)" 0.20 \
  && [ "$(value gpubind_gpu_memory_used_bytes 0000:2a:00.0)" = 12884901888 ] \
  && [ "$(value gpubind_gpu_pcie_rx_bytes_per_second 0000:18:00.0)" = 16777216 ] \
  && [ -z "$(value gpubind_gpu_pcie_rx_bytes_per_second 0000:2a:00.0)" ] \
  && near "$(value gpubind_node_gpu_imbalance_ratio)" 0.77 \
  && grep -q '^gpubind_gpu_utilization_ratio{node="[^"]*",gpu="0",UUID="GPU-1c8e3a52-0b1d-4c6e-9f2a-000000000018",pci="0000:18:00.0"} ' "$WORK/m.prom" \
  && pass "GPUs at 97 % and 20 %: IMBALANCE on both ranks, utilization, memory and PCIe throughput exported, each GPU with NVML's UUID" \
  || fail "uneven GPUs: rc $rc: $(cat "$WORK/err" "$WORK/out" "$WORK/m.prom")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
iv = [l for l in lines if l["type"] == "interval"][-1]
assert abs(iv["gpu_imbalance"] - 0.77) < 1e-9, iv
assert [g["pci"] for g in iv["gpus"]] == ["0000:18:00.0", "0000:2a:00.0"], iv["gpus"]
for r in iv["ranks"]:
    reasons = [f["reason"] for f in r["findings"] if f["finding"] == "IMBALANCE"]
    assert reasons and "GPUs' utilization differs by 77 points" in reasons[0], r
util = {r["pid"]: r["gpu_utilization"] for r in iv["ranks"]}
assert sorted(util.values()) == [0.2, 0.97], util
PY
if command -v promtool >/dev/null; then
  promtool check metrics <"$WORK/m.prom" >"$WORK/lint" 2>&1 && pass "the GPU families pass promtool check metrics" \
    || fail "promtool: $(cat "$WORK/lint")"
fi

watch_with none
[ $rc = 0 ] && [ "$(wc -l <"$WORK/err")" = 1 ] && grep -qx 'gpubind: warning: GPU utilization unknown: NVML: libnvidia-ml.so.1: cannot open shared object file: No such file or directory' "$WORK/err" \
  && [ "$(grep -c '"type":"interval"' "$WORK/out")" = 2 ] && ! grep -q '^gpubind_gpu_utilization_ratio' "$WORK/m.prom" \
  && pass "no NVML library: one warning, two intervals watched, no GPU samples" \
  || fail "no library: rc $rc: $(cat "$WORK/err" "$WORK/out")"

watch_with init-fails.json
[ $rc = 0 ] && [ "$(cat "$WORK/err")" = "gpubind: warning: GPU utilization unknown: NVML: nvmlInit_v2: Driver Not Loaded (9)" ] \
  && [ "$(grep -c '"type":"interval"' "$WORK/out")" = 2 ] \
  && pass "nvmlInit failing: NVML's own message once, watch goes on" || fail "init fails: rc $rc: $(cat "$WORK/err" "$WORK/out")"

watch_with utilization-unsupported.json
[ $rc = 0 ] && [ ! -s "$WORK/err" ] && near "$(value gpubind_gpu_utilization_ratio 0000:18:00.0)" 0.97 \
  && [ -z "$(value gpubind_gpu_utilization_ratio 0000:2a:00.0)" ] && [ "$(value gpubind_gpu_memory_used_bytes 0000:2a:00.0)" = 1024 ] \
  && [ -z "$(value gpubind_node_gpu_imbalance_ratio)" ] \
  && pass "one GPU's utilization not supported: that GPU has none, no imbalance judged on one" \
  || fail "unsupported: rc $rc: $(cat "$WORK/err" "$WORK/m.prom")"
# AMD: the same two ranks on the Frontier-like example's first two GCDs, through ROCm SMI.
kill $r0 $r1 2>/dev/null
wait $r0 $r1 2>/dev/null
GPUBIND_GPU=0000:c1:00.0 RANK=0 taskset -c 0 sleep 60 & r0=$!
GPUBIND_GPU=0000:c6:00.0 RANK=1 taskset -c 1 sleep 60 & r1=$!
LD_LIBRARY_PATH="$fake_rsmi" GPUBIND_FAKE_ROCM_SMI="$data/rocm-two-gcds.json" "$GPUBIND" watch --topology example:frontier-like \
  --pid $r0 --pid $r1 --count 2 --interval 0.2 --json --textfile "$WORK/m.prom" >"$WORK/out" 2>"$WORK/err"
rc=$?
/usr/bin/python3 - "$WORK/out" <<'PY' && [ $rc = 3 ] && [ ! -s "$WORK/err" ] \
  && near "$(value gpubind_gpu_utilization_ratio 0000:c1:00.0)" 0.95 && [ "$(value gpubind_gpu_memory_used_bytes 0000:c6:00.0)" = 8589934592 ] \
  && near "$(value gpubind_node_gpu_imbalance_ratio)" 0.80 \
  && pass "AMD GCDs at 95 % and 15 % through ROCm SMI: IMBALANCE, utilization and memory exported" \
  || fail "ROCm SMI: rc $rc: $(cat "$WORK/err" "$WORK/out" "$WORK/m.prom")"
import json, sys
iv = [json.loads(l) for l in open(sys.argv[1])][-2]
assert abs(iv["gpu_imbalance"] - 0.80) < 1e-9, iv
for r in iv["ranks"]:
    assert any(f["finding"] == "IMBALANCE" for f in r["findings"]), r
PY
finish

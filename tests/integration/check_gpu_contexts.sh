#!/usr/bin/env bash
# check learns which GPU each process drives from the GPU library's process list (NVML's compute
# processes), through the repository's fake libnvidia-ml.so.1 loaded by gpubind's real dlopen
# path, both as today's NVML (_v3 call) and as an NVML of 2019 (the two-field call). Two sleeps
# pinned to CPUs 0 and 1 on the DGX H100-like example (both on NUMA node 0): the one with a
# context on GPU 0 (node 0) is OK, the one on GPU 4 (node 1) is MISPLACED. Neither holds a GPU device file open:
# without the library (--no-gpu-runtime, or none installed) both are NO_GPU, and the default
# selection (every GPU process) finds them only through the library.
# Usage: check_gpu_contexts.sh GPUBIND FAKE_NVML_DIR FAKE_NVML_OLD_DIR
set -u
. "$(dirname "$0")/lib.sh"
fake=${2:?usage: $0 GPUBIND FAKE_NVML_DIR FAKE_NVML_OLD_DIR}
fake_old=${3:?usage: $0 GPUBIND FAKE_NVML_DIR FAKE_NVML_OLD_DIR}
[ -e "$fake/libnvidia-ml.so.1" ] && [ -e "$fake_old/libnvidia-ml.so.1" ] || skip "the fake NVML was not built beside $GPUBIND"
command -v taskset >/dev/null || skip "taskset (util-linux) not found"
[ "$(nproc)" -ge 2 ] || skip "needs 2 CPUs: one per process (two on one CPU would OVERLAP)"
export GPUBIND_CACHE_DIR="$WORK/cache"
taskset -c 0 sleep 60 & near=$!
taskset -c 1 sleep 60 & far=$!
trap 'kill $near $far 2>/dev/null; rm -rf "$WORK"' EXIT
# The fixture: the DGX H100-like GPUs, with the two sleeps' PIDs as NVML's compute processes.
/usr/bin/python3 - "$(dirname "$0")/../data/nvml/dgx-h100-mig.json" "$WORK/nvml.json" $near $far <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
j["gpus"][0]["processes"] = [{"pid": int(sys.argv[3]), "memory": 2147483648}]
j["gpus"][4]["processes"] = [{"pid": int(sys.argv[4]), "memory": 1073741824}]
json.dump(j, open(sys.argv[2], "w"))
PY
# verdicts FILE: "PID VERDICT GPU_SOURCE GPUS" per process of check's JSON.
verdicts() {
  /usr/bin/python3 -c '
import json, sys
for p in json.load(open(sys.argv[1]))["processes"]:
    print(p["pid"], p["verdict"], p["gpu_source"].replace(" ", "_") or "-", ",".join(p["gpus"]) or "-")' "$1"
}
want="$near OK GPU_contexts 0000:18:00.0
$far MISPLACED GPU_contexts 0000:9a:00.0"

for lib in "$fake" "$fake_old"; do
  LD_LIBRARY_PATH=$lib GPUBIND_FAKE_NVML="$WORK/nvml.json" "$GPUBIND" check --topology example:dgx-h100 --pid $near --pid $far \
    --json >"$WORK/out" 2>"$WORK/err"
  rc=$?
  got=$(verdicts "$WORK/out")
  [ $rc = 3 ] && [ "$got" = "$want" ] && [ ! -s "$WORK/err" ] && pass "${lib##*/}: the GPU each process has a context on decides (OK / MISPLACED)" \
    || fail "${lib##*/}: rc $rc, got '$got', stderr: $(cat "$WORK/err")"
done

# The default selection (every GPU process): found through NVML's list, not through /proc.
LD_LIBRARY_PATH=$fake GPUBIND_FAKE_NVML="$WORK/nvml.json" "$GPUBIND" check --topology example:dgx-h100 --json >"$WORK/out" 2>"$WORK/err"
got=$(verdicts "$WORK/out")
[ "$got" = "$want" ] && pass "check with no selection finds the processes NVML lists" || fail "default selection: '$got' $(cat "$WORK/err")"

# Without the library: by open device files, of which they hold none.
LD_LIBRARY_PATH=$fake GPUBIND_FAKE_NVML="$WORK/nvml.json" "$GPUBIND" check --topology example:dgx-h100 --pid $near --pid $far \
  --no-gpu-runtime --json >"$WORK/out" 2>"$WORK/err"
rc=$?
got=$(verdicts "$WORK/out")
[ $rc = 0 ] && [ "$got" = "$near NO_GPU - -
$far NO_GPU - -" ] && pass "--no-gpu-runtime: NO_GPU, as before" || fail "--no-gpu-runtime: rc $rc, '$got'"
env -u LD_LIBRARY_PATH "$GPUBIND" check --topology example:dgx-h100 --pid $near --json >"$WORK/out" 2>"$WORK/err"
[ "$(grep -c . "$WORK/err")" = 1 ] && grep -q "GPU contexts unknown (judged by open device files): NVML: " "$WORK/err" \
  && pass "no NVML installed: one warning, then the check by open files" || fail "no NVML: $(cat "$WORK/err")"
finish

#!/usr/bin/env bash
# GPU daemons are not ranks. nvidia-persistenced keeps every /dev/nvidiaN open ("holds the NVIDIA
# character device files open"), and so do DCGM's nv-hostengine and dcgm-exporter: with one
# running, a perfectly bound job checked as all OVERLAP (exit 3) and watch saw 100 % imbalance.
#
# In a mount namespace of its own (lib.sh: stand_in_gpus), two stand-in GPUs of the two-socket
# fixture (tests/data/check/two-socket-2cpu.json) as /dev/nvidia0 and /dev/nvidia1; a Slurm job's
# two ranks each hold their GPU's file, pinned to its CPU; stand-ins named nvidia-persistenced
# and nv-hostengine hold both files, unpinned. check (every GPU process, the default) says OK for
# the ranks and GPU_HOLDER for the daemons, exit 0; watch finds no IMBALANCE and exports no daemon.
# Through the fake NVML's process list, a process with no rank variable and no GPU context is a
# holder too; without the library it is judged as before.
# Usage: gpu_holders.sh GPUBIND FAKE_NVML_DIR
set -u
. "$(dirname "$0")/lib.sh"
fake=${2:?usage: $0 GPUBIND FAKE_NVML_DIR}
command -v taskset >/dev/null || skip "taskset (util-linux) not found"
[ "$(nproc)" -ge 2 ] || skip "needs 2 CPUs: one per stand-in package"
private_mounts "$@" || skip "stand-in GPU device files need a mount namespace of their own (root and unshare -m)"
stand_in_gpus 0000:18:00.0 0000:86:00.0 || skip "could not lay stand-in GPU device files over /dev and /proc/driver"
here=$(cd "$(dirname "$0")/../.." && pwd)
topology=$here/tests/data/check/two-socket-2cpu.json
export GPUBIND_CACHE_DIR="$WORK/cache"
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$WORK"' EXIT

env SLURM_JOB_ID=77 SLURM_PROCID=0 SLURM_LOCALID=0 taskset -c 0 sh -c 'while :; do :; done' 3</dev/nvidia0 & r0=$!
env SLURM_JOB_ID=77 SLURM_PROCID=1 SLURM_LOCALID=1 taskset -c 1 sh -c 'while :; do :; done' 3</dev/nvidia1 & r1=$!
pids+=($r0 $r1)
for daemon in nvidia-persistenced nv-hostengine gpu-monitor; do
  cp "$(command -v sleep)" "$WORK/$daemon"
  "$WORK/$daemon" 600 3</dev/nvidia0 4</dev/nvidia1 5</dev/nvidiactl &
  pids+=($!)
  eval "pid_${daemon//-/_}=$!"
done

# verdicts: "PID VERDICT" per process of check's JSON on stdin.
verdicts() { /usr/bin/python3 -c 'import json, sys; [print(p["pid"], p["verdict"]) for p in json.load(sys.stdin)["processes"]]' | sort -n; }
wait_until 10 sh -c "[ \"\$(ls /proc/$pid_gpu_monitor/fd 2>/dev/null | wc -l)\" -ge 6 ]"

# Without the library: the two named daemons are holders; gpu-monitor (no rank variable, no known
# name) is judged like any GPU process: on both GPUs' CPUs, it shares them with both ranks.
"$GPUBIND" check --topology "$topology" --no-gpu-runtime --json >"$WORK/out" 2>"$WORK/err"; rc=$?
got=$(verdicts <"$WORK/out")
want=$(printf '%s\n' "$r0 OVERLAP" "$r1 OVERLAP" "$pid_nvidia_persistenced GPU_HOLDER" "$pid_nv_hostengine GPU_HOLDER" "$pid_gpu_monitor OVERLAP" | sort -n)
[ "$got" = "$want" ] && [ $rc = 3 ] && pass "check without NVML: nvidia-persistenced and nv-hostengine GPU_HOLDER, an unknown holder judged (OVERLAP, exit 3)" \
  || fail "check without the library: rc $rc, got [$got], want [$want]: $(cat "$WORK/err")"
"$GPUBIND" check --topology "$topology" --no-gpu-runtime --pid $r0 --pid $r1 --pid $pid_nvidia_persistenced --pid $pid_nv_hostengine \
  >"$WORK/text" 2>"$WORK/err"; rc=$?
[ $rc = 0 ] && grep -q "^PID $pid_nvidia_persistenced GPU_HOLDER: a GPU daemon (nvidia-persistenced) holding 2 GPU device file(s), not a rank$" "$WORK/text" \
  && grep -q "2 OK, 0 with findings, 0 without GPU, 2 GPU holder(s) not judged" "$WORK/text" \
  && pass "a bound job beside persistenced and DCGM checks clean (exit 0), the daemons listed with why" \
  || fail "check of the bound job: rc $rc: $(cat "$WORK/text" "$WORK/err")"

# The fake NVML lists the ranks' contexts: gpu-monitor, with none, is a holder too.
/usr/bin/python3 - "$WORK/nvml.json" $r0 $r1 <<'PY'
import json, sys
gpu = lambda bus, pid: {"bus_id": bus, "uuid": "GPU-" + bus, "name": "NVIDIA H100 80GB HBM3", "utilization": 90,
                        "memory_used": 1 << 30, "memory_total": 80 << 30, "processes": [{"pid": pid, "memory": 1 << 30}]}
json.dump({"version": "12.535.54", "gpus": [gpu("00000000:18:00.0", int(sys.argv[2])), gpu("00000000:86:00.0", int(sys.argv[3]))]},
          open(sys.argv[1], "w"))
PY
LD_LIBRARY_PATH=$fake GPUBIND_FAKE_NVML=$WORK/nvml.json "$GPUBIND" check --topology "$topology" --json >"$WORK/out" 2>"$WORK/err"; rc=$?
got=$(verdicts <"$WORK/out")
want=$(printf '%s\n' "$r0 OK" "$r1 OK" "$pid_nvidia_persistenced GPU_HOLDER" "$pid_nv_hostengine GPU_HOLDER" "$pid_gpu_monitor GPU_HOLDER" | sort -n)
[ "$got" = "$want" ] && [ $rc = 0 ] \
  && /usr/bin/python3 -c 'import json, sys; h = [p["holder"] for p in json.load(open(sys.argv[1]))["processes"] if p["pid"] == int(sys.argv[2])]; sys.exit(h != ["holds 2 GPU device file(s) but has no GPU context and no rank variable"])' "$WORK/out" $pid_gpu_monitor \
  && pass "with NVML's process list, a holder with no context and no rank variable is a GPU_HOLDER (exit 0)" \
  || fail "check with the fake NVML: rc $rc, got [$got], want [$want]: $(cat "$WORK/err")"

# watch with the fake NVML: every GPU process (the default), two intervals. The daemons are listed
# with no finding and are not exported; the ranks have no finding of their own. Counted as ranks,
# the daemons (no CPU time at all) made the spread of CPU time exactly 1.0 (100 % IMBALANCE)
# whenever the ranks ran; the two ranks alone may differ on a loaded machine, never by all of it.
LD_LIBRARY_PATH=$fake GPUBIND_FAKE_NVML=$WORK/nvml.json "$GPUBIND" watch --topology "$topology" --count 2 --interval 0.5 --mem-every 0 --json --textfile "$WORK/m.prom" >"$WORK/out" 2>"$WORK/err"; rc=$?
/usr/bin/python3 - "$WORK/out" $pid_nvidia_persistenced <<'PY' && { [ $rc = 0 ] || [ $rc = 3 ]; } && ! grep -q "pid=\"$pid_nvidia_persistenced\"" "$WORK/m.prom" \
  && pass "watch: the daemons are listed with no finding and not exported, and take no part in the ranks' CPU-time spread" \
  || fail "watch: rc $rc: $(cat "$WORK/err"; tail -c 1500 "$WORK/out")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
ivs = [l for l in lines if l["type"] == "interval"]
assert ivs, lines
for iv in ivs:
    for r in iv["ranks"]:
        kinds = {f["finding"] for f in r["findings"]}
        assert not (r["holder"] and kinds), r
        assert kinds <= {"IMBALANCE"}, r
    assert iv["imbalance"] is None or iv["imbalance"] < 0.99, iv["imbalance"]
assert any(r["pid"] == int(sys.argv[2]) and r["holder"] for r in ivs[-1]["ranks"]), "the daemon is not listed as a holder"
PY
finish

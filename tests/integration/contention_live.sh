#!/usr/bin/env bash
# OVERSUBSCRIBED, THROTTLED and a library's re-pinning on live processes (issue 55): a torch rank
# whose intra-op pool (6 OpenMP threads) runs on the one CPU it is bound to, beside the same rank
# sized to its CPU; a thread that widens itself as NCCL does under NCCL_IGNORE_CPU_AFFINITY=1; and
# a busy rank in a cgroup this test makes with a CPU quota of a fifth of a CPU. watch judges each
# over intervals and exports the counters; check, from one probe, says the same.
set -u
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
$PY -c 'import torch' 2>/dev/null || skip "python3-torch (Debian package) not installed"
pids=()
cg=""
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  [ -n "$cg" ] && [ -d "$cg" ] && rmdir "$cg" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

cat >"$WORK/pool.py" <<'PYEOF'
import torch
a = torch.randn(2_000_000); b = torch.randn(2_000_000)
while True:
    torch.sigmoid(a * b).sum()
PYEOF
# A rank as gpubind would have bound it: GPUBIND_CPUS says its CPU (check judges it by that).
start_rank() {  # OMP_NUM_THREADS
  env RANK=0 LOCAL_RANK=0 GPUBIND_CPUS=0 OMP_NUM_THREADS="$1" taskset -c 0 $PY "$WORK/pool.py" &
  pids+=($!)
}

# 1. Six OpenMP threads on one CPU.
start_rank 6
wide=${pids[-1]}
wait_until 60 sh -c "[ \$(ls /proc/$wide/task | wc -l) -ge 6 ]" || fail "the pool of 6 threads did not start"
"$GPUBIND" watch --pid "$wide" --interval 0.5 --count 8 --json >"$WORK/wide.json" 2>"$WORK/err"
check_json <(tail -n 1 "$WORK/wide.json") <<'PYEOF' || true
r = j["ranks"][0]
check("OVERSUBSCRIBED" in r["seen"], "watch: 6 OpenMP threads on 1 CPU are OVERSUBSCRIBED", r["seen"])
check(r["run_delay_seconds"] is not None and r["run_delay_seconds"] > 0, "watch counted the threads' waits for a CPU", r["run_delay_seconds"])
PYEOF
grep -h '"OVERSUBSCRIBED"' "$WORK/wide.json" | head -n 1 | grep -q 'OMP_NUM_THREADS=6' \
  && pass "the reason names the pool's setting as the rank's environment has it (OMP_NUM_THREADS=6)" \
  || fail "reason: $(grep -o '"OVERSUBSCRIBED","reason":"[^"]*' "$WORK/wide.json" | head -n 1)"
# check sees one moment: within 20 s, one probe finds more threads runnable than its CPU, waiting.
said_over() { "$GPUBIND" check --pid "$wide" --json >"$WORK/check.json" 2>/dev/null; grep -q '"OVERSUBSCRIBED"' "$WORK/check.json"; }
wait_until 20 said_over && pass "check: OVERSUBSCRIBED from the threads runnable now and their waits" \
  || fail "check never said OVERSUBSCRIBED: $(cat "$WORK/check.json")"
kill "$wide"; wait "$wide" 2>/dev/null

# 2. The same rank with its pool sized to its CPU: no finding in any interval.
start_rank 1
one=${pids[-1]}
# Past torch's import (its library mapped), so the loop is what watch sees.
wait_until 60 grep -q libtorch "/proc/$one/maps" || fail "the rank did not load torch"
"$GPUBIND" watch --pid "$one" --interval 0.5 --count 8 --json >"$WORK/one.json" 2>"$WORK/err"
check_json <(tail -n 1 "$WORK/one.json") <<'PYEOF' || true
r = j["ranks"][0]
check("OVERSUBSCRIBED" not in r["seen"], "watch: a pool of 1 on its 1 CPU is not OVERSUBSCRIBED", r["seen"])
PYEOF
kill "$one"; wait "$one" 2>/dev/null

# 3. A stand-in for NCCL with NCCL_IGNORE_CPU_AFFINITY=1: one of the rank's threads widens itself
# from the rank's CPU 0 to every CPU, as NCCL pins its threads to its GPU's node.
cat >"$WORK/repin.py" <<'PYEOF'
import os, sys, threading, time
def nccl_like():
    while not os.path.exists(sys.argv[1]):  # the test's go, once watch has its first interval
        time.sleep(0.05)
    os.sched_setaffinity(0, range(os.cpu_count()))  # this thread only
    time.sleep(300)
threading.Thread(target=nccl_like, daemon=True).start()
time.sleep(300)
PYEOF
if [ "$(nproc)" -ge 2 ]; then
  env RANK=0 NCCL_IGNORE_CPU_AFFINITY=1 taskset -c 0 $PY "$WORK/repin.py" "$WORK/go" &
  pids+=($!)
  repin=${pids[-1]}
  wait_until 30 sh -c "[ \$(ls /proc/$repin/task | wc -l) -ge 2 ]" || fail "the stand-in's thread did not start"
  "$GPUBIND" watch --pid "$repin" --interval 0.5 --count 10 --no-tty >"$WORK/repin.txt" 2>&1 &
  watcher=$!
  wait_until 60 grep -q '^interval 1 ' "$WORK/repin.txt" && touch "$WORK/go"
  wait "$watcher"
  grep -q "DRIFTED: .*likely NCCL: NCCL_IGNORE_CPU_AFFINITY=1 is set: unset NCCL_IGNORE_CPU_AFFINITY" "$WORK/repin.txt" \
    && pass "watch: the re-pinned thread is DRIFTED, naming NCCL and the variable that stops it" || fail "watch: $(grep -E 'DRIFTED|->' "$WORK/repin.txt" | head -3)"
  kill "$repin"; wait "$repin" 2>/dev/null
else
  echo "SKIP part 3: one CPU, nowhere to widen a thread to"
fi

# 4. A CPU quota of a fifth of a CPU over a busy rank, in a cgroup made here.
[ "$(id -u)" = 0 ] || { finish; }
if [ -e /sys/fs/cgroup/cgroup.controllers ] && grep -qw cpu /sys/fs/cgroup/cgroup.controllers; then
  cg=/sys/fs/cgroup/gpubind-contention-$$
  mkdir "$cg" && echo "20000 100000" >"$cg/cpu.max" || cg=""
  setting="cpu.max 20000 100000"
elif [ -w /sys/fs/cgroup/cpu/cpu.cfs_quota_us ] || [ -d /sys/fs/cgroup/cpu ]; then
  cg=/sys/fs/cgroup/cpu/gpubind-contention-$$
  mkdir "$cg" && echo 100000 >"$cg/cpu.cfs_period_us" && echo 20000 >"$cg/cpu.cfs_quota_us" || cg=""
  setting="cpu.cfs_quota_us 20000 (period 100000)"
fi
if [ -z "$cg" ]; then
  echo "SKIP part 3: no cgroup with a CPU quota can be made here"
  finish
fi
env RANK=0 GPUBIND_CPUS=0 taskset -c 0 sh -c "echo \$\$ >$cg/cgroup.procs && exec $PY -c 'while True: pass'" &
pids+=($!)
busy=${pids[-1]}
wait_until 20 grep -qx "$busy" "$cg/cgroup.procs" || fail "the busy rank did not enter $cg"
"$GPUBIND" watch --pid "$busy" --interval 0.5 --count 4 --json --textfile "$WORK/metrics.prom" >"$WORK/busy.json" 2>"$WORK/err"
grep -h '"THROTTLED"' "$WORK/busy.json" | head -n 1 | grep -qF "$setting" \
  && pass "watch: THROTTLED, naming the quota ($setting)" || fail "watch: $(tail -n 2 "$WORK/busy.json") $(cat "$WORK/err")"
grep -o '"THROTTLED","reason":"[^"]*' "$WORK/busy.json" | head -n 1 | grep -q "under its 1 allowed CPU" \
  && pass "the reason sets the quota against the rank's 1 CPU" || fail "reason: $(grep -o '"THROTTLED","reason":"[^"]*' "$WORK/busy.json" | head -n 1)"
awk '/^gpubind_rank_cfs_throttled_periods_total\{/ { if ($2 > 0) ok = 1 } END { exit !ok }' "$WORK/metrics.prom" \
  && awk '/^gpubind_rank_throttled_seconds_total\{/ { if ($2 > 0) ok = 1 } END { exit !ok }' "$WORK/metrics.prom" \
  && pass "the throttled periods and seconds are exported" || fail "metrics: $(grep -E 'cfs|throttled|quota' "$WORK/metrics.prom")"
"$GPUBIND" check --pid "$busy" >"$WORK/check.txt" 2>&1
grep -q THROTTLED "$WORK/check.txt" && pass "check: THROTTLED from the cgroup's counters" || fail "check: $(cat "$WORK/check.txt")"
finish

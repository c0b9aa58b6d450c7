#!/usr/bin/env bash
# gpubind rebind on a running job of this machine: two multi-threaded ranks started unbound by
# `gpubind launch --no-bind` are moved while they run. Every TID of each rank ends on the CPUs
# `gpubind plan` gives its local rank, including a thread pinned elsewhere by hand; a thread the
# rank starts afterwards inherits them; a dry run changes nothing; the ranks go on running. Then
# watch --enforce puts a re-pinned thread of a bound job back (and --enforce=report only says so),
# and a job of another user, rebound by root without CAP_SYS_NICE: one line per process, exit 5,
# nothing of it changed.
set -u
. "$(dirname "$0")/lib.sh"
[ "$(nproc)" -ge 2 ] || skip "needs at least 2 CPUs"
command -v python3 >/dev/null || skip "python3 not found (the worker is a Python script)"

chmod 1777 "$WORK"  # the second job runs as nobody
cat >"$WORK/worker.py" <<'EOF'
# A rank: four threads that wake every 10 ms, then, once told, one more thread.
import os, threading, time
d, r = os.environ["WORK_DIR"], os.environ["LOCAL_RANK"]
stop = threading.Event()
def tick():
    while not stop.is_set():
        time.sleep(0.01)
for _ in range(4):
    threading.Thread(target=tick, daemon=True).start()
steps = 0
open(f"{d}/ready.{r}.{os.getpid()}", "w").close()
while not os.path.exists(f"{d}/go.{os.getuid()}"):
    time.sleep(0.01)
    steps += 1
late = threading.Thread(target=tick, daemon=True, name="late")
late.start()
with open(f"{d}/late.{r}.{os.getuid()}", "w") as f:
    f.write(str(late.native_id))
while True:
    time.sleep(0.01)
EOF

# ranks_ready UID: both ranks of that user's job wrote their ready file.
ranks_ready() { [ "$(ls "$WORK"/ready.* 2>/dev/null | wc -l)" -ge "$1" ]; }
# cpus_of TID: its allowed CPUs.
cpus_of() { sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "/proc/$1/status" 2>/dev/null; }
rank_pid() { ls "$WORK"/ready."$1".* | head -1 | sed 's/.*\.//'; }

WORK_DIR=$WORK "$GPUBIND" launch --no-bind -n 2 -- python3 "$WORK/worker.py" 2>"$WORK/launch.err" &
launcher=$!
ready_or_gone() { ranks_ready 2 || ! alive $launcher; }
wait_until 60 ready_or_gone && ranks_ready 2 || { fail "ranks did not start: $(cat "$WORK/launch.err")"; finish; }
p0=$(rank_pid 0)
p1=$(rank_pid 1)
want0=$(plan_cpus 2 0)
want1=$(plan_cpus 2 1)
all=$(cpus_of $$)
[ -n "$want0" ] && [ -n "$want1" ] || fail "plan gave no CPUs: '$want0' '$want1'"

# A thread of rank 0 pinned by hand where rank 1 belongs: not within rank 0's CPUs, so it moves.
stray=$(ls /proc/$p0/task | sort -n | tail -1)
taskset -pc "$want1" "$stray" >/dev/null || fail "taskset on thread $stray"

"$GPUBIND" rebind --children-of $launcher --dry-run >"$WORK/dry" 2>&1 || fail "dry run: $(cat "$WORK/dry")"
unchanged=1
for t in /proc/$p0/task/* /proc/$p1/task/*; do
  tid=${t##*/}
  [ "$tid" = "$stray" ] && continue
  [ "$(cpus_of "$tid")" = "$all" ] || unchanged=0
done
[ $unchanged = 1 ] && grep -q "dry run: nothing changed" "$WORK/dry" && pass "a dry run changes no thread" || fail "dry run changed threads"

"$GPUBIND" rebind --children-of $launcher --json >"$WORK/out.json" 2>"$WORK/err"
rc=$?
[ $rc = 0 ] && pass "rebind exit 0" || fail "rebind: rc $rc: $(cat "$WORK/err")"
bad=""
n=0
for pr in "$p0:$want0" "$p1:$want1"; do
  pid=${pr%%:*} want=${pr#*:}
  for t in /proc/$pid/task/*; do
    n=$((n + 1))
    got=$(cpus_of "${t##*/}")
    [ "$got" = "$want" ] || bad="$bad ${t##*/}:$got(want $want)"
  done
done
[ -z "$bad" ] && [ $n -ge 10 ] && pass "all $n threads of both ranks on their planned CPUs ($want0 and $want1)" || fail "threads off their plan:$bad ($n threads)"
moved=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["threads_moved"])' "$WORK/out.json")
[ "$moved" = 10 ] && pass "the report counts 10 threads moved" || fail "threads_moved $moved, expected 10"

# A topology file: another machine's is refused without --dry-run (exit 1, what differs said);
# this machine's own (an admin's copy) is moved by.
"$GPUBIND" rebind --topology example:dgx-h100 --children-of $launcher >"$WORK/out" 2>"$WORK/err"
rc=$?
[ $rc = 1 ] && grep -q "does not describe this machine" "$WORK/err" && pass "another machine's topology file: exit 1, refused" \
  || fail "another machine's topology: rc $rc: $(cat "$WORK/err")"
"$GPUBIND" topo --json >"$WORK/this.json" 2>/dev/null
"$GPUBIND" rebind -q --topology "$WORK/this.json" --children-of $launcher >"$WORK/out" 2>"$WORK/err" \
  && grep -q "0 of 5 moved" "$WORK/out" && pass "this machine's own topology file is planned with (nothing left to move)" \
  || fail "this machine's topology file: $(cat "$WORK/out" "$WORK/err")"

touch "$WORK/go.0"
late_ready() { [ -s "$WORK/late.0.0" ] && [ -s "$WORK/late.1.0" ]; }
wait_until 30 late_ready || fail "ranks did not start their late thread (did they stop running?)"
l0=$(cat "$WORK/late.0.0" 2>/dev/null)
[ "$(cpus_of "$l0")" = "$want0" ] && pass "a thread started after the rebind inherits the rank's CPUs" || fail "late thread $l0: $(cpus_of "$l0")"
alive $p0 && alive $p1 && pass "both ranks still running" || fail "a rank died"

"$GPUBIND" rebind --children-of $launcher >"$WORK/again" 2>&1
grep -q "0 of 6 moved" "$WORK/again" && pass "a second rebind moves nothing" || fail "second rebind: $(cat "$WORK/again")"
kill -TERM $launcher
wait $launcher 2>/dev/null
rm -f "$WORK"/ready.*

# watch --enforce: a bound job whose thread is re-pinned off its CPUs gets it back, logged and
# counted; --enforce=report only says so.
WORK_DIR=$WORK "$GPUBIND" launch -n 2 -- python3 "$WORK/worker.py" 2>"$WORK/launch.err" &
launcher=$!
ready_or_gone() { ranks_ready 2 || ! alive $launcher; }
if wait_until 60 ready_or_gone && ranks_ready 2; then
  p0=$(rank_pid 0)
  want0=$(plan_cpus 2 0)
  victim=$(ls /proc/$p0/task | sort -n | tail -1)
  "$GPUBIND" watch --children-of $launcher --enforce --enforce-gap 0 --interval 0.2 --count 100000 --json \
    --textfile "$WORK/enforce.prom" >"$WORK/enforce.out" 2>"$WORK/enforce.err" &
  watcher=$!
  watching() { [ -s "$WORK/enforce.prom" ]; }
  wait_until 30 watching || fail "watch --enforce did not start: $(cat "$WORK/enforce.err")"
  taskset -pc "0-$(($(nproc) - 1))" "$victim" >/dev/null
  back() { [ "$(cpus_of "$victim")" = "$want0" ]; }
  counted() { grep -q "^gpubind_rank_repins_total{.*pid=\"$p0\".*mode=\"enforce\"} [1-9]" "$WORK/enforce.prom"; }
  wait_until 30 back && pass "watch --enforce put thread $victim back on $want0" || fail "thread $victim still on $(cpus_of "$victim")"
  wait_until 30 counted && pass "gpubind_rank_repins_total counts it" || fail "no repin counted: $(grep repins "$WORK/enforce.prom")"
  grep -q "\"type\":\"repin\".*\"tid\":$victim,.*\"outcome\":\"repinned\"" "$WORK/enforce.out" &&
    pass "the repin is a JSON line" || fail "no repin line: $(grep repin "$WORK/enforce.out" | head -3)"
  kill -TERM $watcher; wait $watcher 2>/dev/null
  "$GPUBIND" watch --children-of $launcher --enforce=report --enforce-gap 0 --interval 0.2 --count 100000 >/dev/null 2>"$WORK/report.err" &
  watcher=$!
  taskset -pc "0-$(($(nproc) - 1))" "$victim" >/dev/null
  reported() { grep -q "thread $victim .*(reported only)" "$WORK/report.err"; }
  wait_until 30 reported && [ "$(cpus_of "$victim")" = "0-$(($(nproc) - 1))" ] && pass "--enforce=report says so and moves nothing" ||
    fail "report mode: $(cat "$WORK/report.err"), thread on $(cpus_of "$victim")"
  kill -TERM $watcher; wait $watcher 2>/dev/null
  # The node's off-switch, flipped during an incident: with `binding = off` an enforcing watch
  # stands back (said once) and moves nothing; turned on again, it enforces again. rebind refuses.
  printf 'binding = off\n' >"$WORK/switch.conf"
  GPUBIND_CONFIG=$WORK/switch.conf "$GPUBIND" watch --children-of $launcher --enforce --enforce-gap 0 --interval 0.2 --count 100000 \
    --json >"$WORK/off.out" 2>"$WORK/off.err" &
  watcher=$!
  intervals() { grep -c '"type":"interval"' "$WORK/off.out"; }
  judged_five() { [ "$(intervals)" -ge 5 ]; }
  wait_until 60 judged_five
  [ "$(cpus_of "$victim")" = "0-$(($(nproc) - 1))" ] && grep -q "binding = off in $WORK/switch.conf: standing back" "$WORK/off.err" \
    && ! grep -q '"type":"repin"' "$WORK/off.out" \
    && pass "binding = off: watch --enforce stands back over $(intervals) intervals and says so" \
    || fail "off-switch enforce: thread on $(cpus_of "$victim"): $(cat "$WORK/off.err"; grep repin "$WORK/off.out" | head -2)"
  GPUBIND_CONFIG=$WORK/switch.conf "$GPUBIND" rebind --children-of $launcher >"$WORK/off.rebind" 2>&1
  rc=$?
  [ $rc = 4 ] && grep -q "binding = off in $WORK/switch.conf: nothing moved" "$WORK/off.rebind" && [ "$(cpus_of "$victim")" = "0-$(($(nproc) - 1))" ] \
    && pass "binding = off: rebind refuses (exit 4), nothing moved" || fail "off-switch rebind: rc $rc $(cat "$WORK/off.rebind")"
  printf 'binding = on\n' >"$WORK/switch.conf"
  wait_until 30 back && grep -q "binding is on again in $WORK/switch.conf: enforcing" "$WORK/off.err" \
    && pass "turned on again: the watch enforces again (thread $victim back on $want0)" \
    || fail "off-switch back on: thread on $(cpus_of "$victim"): $(cat "$WORK/off.err")"
  kill -TERM $watcher; wait $watcher 2>/dev/null
  # One target for rebind, enforce and check: the ranks were bound by launch (GPUBIND_CPUS 0 and
  # 1); rebind moves them both to CPU 0 (--reserve 1) and records it. An enforcing watch moved
  # rank 1 back to its GPUBIND_CPUS within one sample, and check called it DRIFTED from then on.
  p1=$(rank_pid 1)
  "$GPUBIND" rebind -q --children-of $launcher --reserve 1 >"$WORK/rebound" 2>&1 || fail "rebind --reserve 1: $(cat "$WORK/rebound")"
  [ "$(cpus_of "$p1")" = 0 ] || fail "rank 1 not rebound to CPU 0: $(cpus_of "$p1") $(cat "$WORK/rebound")"
  "$GPUBIND" watch --children-of $launcher --enforce --enforce-gap 0 --interval 0.2 --count 5 --json >"$WORK/kept.out" 2>"$WORK/kept.err"
  [ "$(cpus_of "$p1")" = 0 ] && ! grep -q '"type":"repin"' "$WORK/kept.out" \
    && pass "after rebind, watch --enforce keeps rank 1 where rebind put it (CPU 0), not its GPUBIND_CPUS (1)" \
    || fail "enforce undid rebind: rank 1 on $(cpus_of "$p1"): $(grep repin "$WORK/kept.out" | head -2) $(cat "$WORK/kept.err")"
  "$GPUBIND" check --children-of $launcher >"$WORK/kept.check" 2>&1
  rc=$?
  # (both on CPU 0 now: OVERLAP, exit 3; what matters is that neither is DRIFTED)
  [ $rc != 1 ] && [ $rc != 2 ] && ! grep -q DRIFTED "$WORK/kept.check" && pass "check judges the rebound ranks by what rebind applied: not DRIFTED" \
    || fail "check after rebind: exit $rc: $(cat "$WORK/kept.check")"
else
  fail "the bound job did not start: $(cat "$WORK/launch.err")"
fi
kill -TERM $launcher; wait $launcher 2>/dev/null
rm -f "$WORK"/ready.*

# Another user's job, root without CAP_SYS_NICE: the kernel refuses sched_setaffinity.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
  WORK_DIR=$WORK setpriv --reuid=65534 --regid=65534 --clear-groups "$GPUBIND" launch --no-bind -n 2 -- python3 "$WORK/worker.py" \
    2>"$WORK/launch.err" &
  other=$!
  ready_or_gone() { ranks_ready 2 || ! alive $other; }
  if wait_until 60 ready_or_gone && ranks_ready 2; then
    q0=$(rank_pid 0)
    before=$(cpus_of "$q0")
    setpriv --inh-caps=-sys_nice --bounding-set=-sys_nice "$GPUBIND" rebind --children-of $other >"$WORK/out" 2>"$WORK/err"
    rc=$?
    lines=$(grep -c "no permission to move it" "$WORK/err")
    [ $rc = 5 ] && [ "$lines" = 2 ] && pass "another user's ranks: exit 5, one line each" || fail "other user: rc $rc, $lines lines: $(cat "$WORK/err")"
    [ "$(cpus_of "$q0")" = "$before" ] && pass "nothing of them changed" || fail "rank moved: $(cpus_of "$q0")"
    # A third user cannot even read them (environment, open files): not "not a rank" and exit 0,
    # but one "no permission" line per process and exit 5, as docs/cli.md promises.
    setpriv --reuid=65533 --regid=65533 --clear-groups "$GPUBIND" rebind --children-of $other >"$WORK/out" 2>"$WORK/err"
    rc=$?
    lines=$(grep -c "no permission to read it" "$WORK/err")
    [ $rc = 5 ] && [ "$lines" = 2 ] && ! grep -q "not a rank" "$WORK/out" \
      && pass "a user who cannot read another's ranks: exit 5, one 'no permission' line each" \
      || fail "unreadable ranks: rc $rc, $lines lines: $(cat "$WORK/out" "$WORK/err")"
    [ "$(cpus_of "$q0")" = "$before" ] && pass "nothing of them changed by the third user" || fail "rank moved: $(cpus_of "$q0")"
  else
    fail "the other user's ranks did not start: $(cat "$WORK/launch.err")"
  fi
  kill -TERM $other 2>/dev/null
  wait $other 2>/dev/null
else
  echo "SKIP (part): another user's job needs root and setpriv"
fi
finish

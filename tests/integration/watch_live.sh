#!/usr/bin/env bash
# gpubind watch on live processes of this machine: ranks started by `gpubind launch` stay OK over
# several intervals; a rank re-pinned mid-watch is DRIFTED; a busy process moved between CPUs 0
# and 1 every 50 ms by this script shows migrations and MIGRATING; a rank that exits mid-watch is
# reported once and watch goes on.
set -u
. "$(dirname "$0")/lib.sh"
command -v taskset >/dev/null || skip "taskset (util-linux) not found"
[ "$(nproc)" -ge 2 ] || skip "needs at least 2 CPUs"
grep -q nr_migrations /proc/self/sched 2>/dev/null || skip "the kernel has no se.nr_migrations (CONFIG_SCHED_DEBUG)"

have_ranks() { [ "$(ls "$WORK"/pid.* 2>/dev/null | wc -l)" -ge 2 ]; }
"$GPUBIND" launch -n 2 -- sh -c "echo \$\$ > $WORK/pid.\$LOCAL_RANK; exec sleep 60" >/dev/null 2>&1 &
launcher=$!
wait_until 20 have_ranks || fail "ranks did not start"

"$GPUBIND" watch --children-of $launcher --count 3 --interval 0.2 >"$WORK/out" 2>&1
rc=$?
[ $rc = 0 ] && [ "$(grep -c '^interval ' "$WORK/out")" = 3 ] && grep -q "summary: 3 interval(s)" "$WORK/out" \
  && pass "ranks started by launch are OK for 3 intervals" || fail "launch ranks: rc $rc: $(cat "$WORK/out")"

# Re-pin rank 1 while watch runs: DRIFTED from the interval after the change on.
# Enough intervals that a re-pin delayed by a loaded machine still lands inside the watch.
"$GPUBIND" watch --children-of $launcher --count 12 --interval 0.3 --json >"$WORK/drift" 2>"$WORK/err" &
watcher=$!
wait_until 10 test -s "$WORK/drift" || fail "no first interval from watch"
taskset -pc "0-$(($(nproc) - 1))" "$(cat "$WORK/pid.1")" >/dev/null
wait $watcher
rc=$?
pid1=$(cat "$WORK/pid.1")
/usr/bin/python3 - "$WORK/drift" "$pid1" <<'PY' && [ $rc = 3 ] && pass "a rank re-pinned mid-watch is DRIFTED" || fail "drift: rc $rc: $(cat "$WORK/drift" "$WORK/err")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
pid = int(sys.argv[2])
first = lines[0]["ranks"]
assert all(not r["findings"] for r in first), first          # before the re-pin: OK
summary = lines[-1]
assert summary["type"] == "summary", summary
mine = [r for r in summary["ranks"] if r["pid"] == pid]
assert mine and "DRIFTED" in mine[0]["seen"], summary
PY

kill -TERM $launcher 2>/dev/null
wait $launcher 2>/dev/null

# A process that exits mid-watch (named with --pid): reported once as exited, not an error, and
# watch goes on to its last interval.
sleep 60 &
a=$!
sleep 60 &
b=$!
"$GPUBIND" watch --pid $a --pid $b --count 8 --interval 0.3 >"$WORK/exit" 2>&1 &
watcher=$!
wait_until 10 grep -q "^interval 1 " "$WORK/exit" || fail "no first interval from watch"
kill $a
wait $watcher
rc=$?
kill $b 2>/dev/null
[ $rc = 0 ] && [ "$(grep -c "^  $a exited$" "$WORK/exit")" = 1 ] && grep -q "summary: 8 interval(s)" "$WORK/exit" \
  && ! grep -q "error" "$WORK/exit" && pass "a process that exits is reported once and watch goes on" \
  || fail "exit: rc $rc: $(cat "$WORK/exit")"

# A busy process this script moves between CPUs 0 and 1 every 50 ms. Watch first sees it allowed
# both CPUs; the moves start only after watch's first interval, so every later sample sees a mask
# of one CPU (DRIFTED whatever the moves' phase: a mask sampled only every interval may read the
# same CPU each time), and the watch is stopped (SIGINT: its summary) once it has judged three
# intervals that lay wholly inside the moves.
sh -c 'while :; do :; done' &
busy=$!
taskset -pc 0,1 $busy >/dev/null
"$GPUBIND" watch --pid $busy --interval 0.5 --json >"$WORK/mig" 2>"$WORK/err" &
watcher=$!
wait_until 10 test -s "$WORK/mig" || fail "no first interval from watch"
intervals() { grep -c '"type":"interval"' "$WORK/mig"; }
moved() { [ "$(intervals)" -ge 5 ] || ! kill -0 $watcher 2>/dev/null || [ $SECONDS -ge $give_up ]; }
give_up=$((SECONDS + 120))  # a watch that stops printing intervals ends the moves, and fails below
( i=0; until moved; do i=$((i + 1)); taskset -pc $((i % 2)) $busy >/dev/null 2>&1; sleep 0.05; done ) &
mover=$!
wait $mover
kill -INT $watcher 2>/dev/null
wait $watcher
rc=$?
kill $busy 2>/dev/null
wait $busy 2>/dev/null
/usr/bin/python3 - "$WORK/mig" <<'PY' && [ $rc = 3 ] && pass "a process moved between CPUs every 50 ms is MIGRATING" || fail "migrating: rc $rc: $(cat "$WORK/mig" "$WORK/err")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
summary = lines[-1]
assert summary["type"] == "summary", summary
assert summary["intervals"] >= 5, summary
r = summary["ranks"][0]
assert r["migrations"] >= 5, r                 # ~10 moves in each of intervals 3 to 5
assert r["context_switches"] >= 5, r           # each move takes it off its CPU
assert "MIGRATING" in r["seen"], r
assert "DRIFTED" in r["seen"], r               # one CPU now, both when watch first saw it
PY

# Another user's process: what that user may not read (its environment, open files, numa_maps) is
# reported once per process, and the process is still watched. The unprivileged user is created
# for the test and removed after it.
if [ "$(id -u)" != 0 ]; then
  echo "skipped: another user's process (needs root to create a user)"
elif ! command -v useradd >/dev/null || ! command -v runuser >/dev/null; then
  echo "skipped: another user's process (needs useradd and runuser: passwd, util-linux)"
else
  other=gbwatch$$
  if useradd -M -r -s /usr/sbin/nologin "$other"; then
    sleep 60 &
    theirs=$!
    cache=$(mktemp -d) && chown "$other" "$cache"
    runuser -u "$other" -- env GPUBIND_CACHE_DIR="$cache" "$GPUBIND" watch --pid $theirs --count 2 --interval 0.2 --json \
      >"$WORK/perm" 2>"$WORK/perm.err"
    rc=$?
    kill $theirs 2>/dev/null
    wait $theirs 2>/dev/null
    userdel "$other" 2>/dev/null
    rm -rf "$cache"
    env_note="gpubind: warning: PID $theirs (sleep): environment not readable (Permission denied)"
    fd_note="gpubind: warning: PID $theirs (sleep): open files not readable (Permission denied): GPUs unknown"
    maps_note="gpubind: warning: PID $theirs (sleep): numa_maps not readable (Permission denied)"
    /usr/bin/python3 - "$WORK/perm" "$theirs" <<'PY' && [ $rc = 0 ] && [ "$(grep -cxF "$env_note" "$WORK/perm.err")" = 1 ] \
      && [ "$(grep -cxF "$fd_note" "$WORK/perm.err")" = 1 ] && [ "$(grep -cxF "$maps_note" "$WORK/perm.err")" = 1 ] \
      && [ "$(wc -l <"$WORK/perm.err")" = 3 ] \
      && pass "another user's process: environment, open files and numa_maps reported once each, still watched for 2 intervals" \
      || fail "another user's process: rc $rc: $(cat "$WORK/perm.err" "$WORK/perm")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
intervals = [l for l in lines if l["type"] == "interval"]
assert len(intervals) == 2, lines
assert all([r["pid"] for r in l["ranks"]] == [int(sys.argv[2])] for l in intervals), lines
PY
  else
    echo "skipped: another user's process (useradd $other failed)"
  fi
fi

# On a terminal (script(1) gives it one) each interval redraws the screen; --no-tty appends.
if command -v script >/dev/null; then
  script -qfec "$GPUBIND watch --self --count 2 --interval 0.2" /dev/null >"$WORK/tty" 2>&1
  script -qfec "$GPUBIND watch --self --count 2 --interval 0.2 --no-tty" /dev/null >"$WORK/notty" 2>&1
  [ "$(grep -c $'\e\[H\e\[2J' "$WORK/tty")" = 2 ] && ! grep -q $'\e\[2J' "$WORK/notty" && grep -q "summary: 2 interval" "$WORK/notty" \
    && pass "on a terminal the table redraws in place; --no-tty appends" || fail "tty: $(cat -v "$WORK/tty" | head -5)"
else
  echo "skipped: the terminal redraw (script(1) from util-linux not found)"
fi

# As a service (issue 29): SIGTERM or SIGINT ends the watch at its next wait with its summary,
# the last JSON line, and its 0/3 status, not death by the signal (143, no summary). With --listen
# too: the HTTP server's threads must not take the signal either.
for sig in TERM INT; do
  port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "$GPUBIND" watch --self --interval 0.2 --json --listen 127.0.0.1:$port >"$WORK/svc.$sig" 2>"$WORK/svc.$sig.err" &
  svc=$!
  wait_until 10 test -s "$WORK/svc.$sig" || fail "no first interval from watch"
  kill -$sig $svc
  wait $svc
  rc=$?
  last=$(tail -n 1 "$WORK/svc.$sig")
  if { [ $rc = 0 ] || [ $rc = 3 ]; } && [[ $last == *'"type":"summary"'* ]]; then pass "SIG$sig: watch ends with its summary line and status $rc"
  else fail "SIG$sig: exit $rc, last line: $last $(cat "$WORK/svc.$sig.err")"; fi
done

# Nothing to watch: a clear error, not a silent empty table.
"$GPUBIND" watch --match 'no-such-process-[0-9]{9}' --count 1 --interval 0.1 >"$WORK/none" 2>&1
rc=$?
[ $rc = 1 ] && grep -q "no process to watch" "$WORK/none" && pass "nothing to watch is an error" || fail "none: rc $rc: $(cat "$WORK/none")"
finish

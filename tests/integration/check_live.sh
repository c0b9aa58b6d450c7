#!/usr/bin/env bash
# gpubind check on live processes of this machine: ranks started by `gpubind launch` are OK, a
# rank re-pinned after start is DRIFTED, two processes pinned to one CPU are OVERLAP, a process
# moved between CPUs shows each migration.
set -u
. "$(dirname "$0")/lib.sh"
command -v taskset >/dev/null || skip "taskset (util-linux) not found"
[ "$(nproc)" -ge 2 ] || skip "needs at least 2 CPUs"

have_ranks() { [ "$(ls "$WORK"/pid.* 2>/dev/null | wc -l)" -ge 2 ]; }
"$GPUBIND" launch -n 2 -- sh -c "echo \$\$ > $WORK/pid.\$LOCAL_RANK; exec sleep 60" 2>/dev/null &
launcher=$!
wait_until 20 have_ranks || fail "ranks did not start"

"$GPUBIND" check --children-of $launcher >"$WORK/out" 2>&1
rc=$?
[ $rc = 0 ] && grep -q "2 OK" "$WORK/out" && pass "ranks started by launch are OK" || fail "launch ranks: rc $rc: $(cat "$WORK/out")"

# Re-pin rank 1 to every CPU, as a runtime that resets affinity would.
taskset -pc "0-$(($(nproc) - 1))" "$(cat "$WORK/pid.1")" >/dev/null
"$GPUBIND" check --children-of $launcher >"$WORK/out" 2>&1
rc=$?
[ $rc = 3 ] && grep -q "DRIFTED" "$WORK/out" && pass "re-pinned rank is DRIFTED" || fail "re-pinned: rc $rc: $(cat "$WORK/out")"
kill -TERM $launcher
wait $launcher 2>/dev/null

# Two unrelated processes pinned to the same CPU.
taskset -c 1 sleep 60 &
a=$!
taskset -c 1 sleep 60 &
b=$!
# Wait until both have exec'd sleep with their new affinity (taskset itself runs unpinned).
pinned() { grep -q '^Name:.*sleep' "/proc/$1/status" && grep -q '^Cpus_allowed_list:[[:space:]]*1$' "/proc/$1/status"; }
wait_until 10 pinned $a && wait_until 10 pinned $b || fail "sleeps not pinned in time"
"$GPUBIND" check --pid $a --pid $b >"$WORK/out" 2>&1
rc=$?
[ $rc = 3 ] && grep -q "OVERLAP" "$WORK/out" && pass "two processes on one CPU are OVERLAP" || fail "overlap: rc $rc: $(cat "$WORK/out")"

# The migrations check reads (se.nr_migrations, as bench reads them for its ranks): a busy process
# moved between CPUs 0 and 1 ten times by taskset. Each move off the CPU it is on is one migration
# the kernel makes at once, running or queued, however loaded the machine is.
sh -c 'while :; do :; done' &
spin=$!
migrations() { "$GPUBIND" check --pid $spin --json 2>/dev/null | /usr/bin/python3 -c "import json, sys
print(sum(t['migrations'] for t in json.load(sys.stdin)['processes'][0]['threads']))"; }
taskset -pc 0 $spin >/dev/null
m0=$(migrations)
for i in 1 2 3 4 5 6 7 8 9 10; do taskset -pc $((i % 2)) $spin >/dev/null; done
m1=$(migrations)
kill $spin 2>/dev/null
[ -n "$m0" ] && [ -n "$m1" ] && [ $((m1 - m0)) -ge 10 ] && pass "a process moved 10 times between CPUs shows $((m1 - m0)) migrations" \
  || fail "migrations of a process moved 10 times: before '$m0', after '$m1'"

# A PID that does not exist is an error while the others are still checked.
"$GPUBIND" check --pid $a --pid 999999999 >"$WORK/out" 2>"$WORK/err"
rc=$?
[ $rc = 1 ] && grep -q "no such process" "$WORK/err" && grep -q "^$a " "$WORK/out" \
  && pass "missing PID: error line, others checked" || fail "missing pid: rc $rc: $(cat "$WORK/err")"
kill $a $b 2>/dev/null

# --match on a process with a 100 KB command line (issue 12): std::regex's recursion overflowed
# the stack (exit 139) once 'python' matched and '.*' ran over the rest. Any user can start
# such a process next to root's check.
long=$(head -c 100000 /dev/zero | tr '\0' a)
(exec -a python sh -c 'sleep 30; :' train-like "$long") >/dev/null 2>&1 &
l=$!
has_long() { grep -q "train-like" "/proc/$l/cmdline" 2>/dev/null; }
wait_until 10 has_long || fail "long command line process did not start"
"$GPUBIND" check --match 'python.*train' >"$WORK/out" 2>&1
rc=$?
[ $rc != 139 ] && grep -q "^$l " "$WORK/out" && pass "--match 'python.*train' over a 100 KB command line finds it (rc $rc, no crash)" \
  || fail "long cmdline: rc $rc: $(head -c 600 "$WORK/out")"
kill $l 2>/dev/null

# A process name with a terminal escape, a newline and a byte that is not UTF-8 (issue 12): any
# user can name a process so. The table shows it escaped; --json shows it as valid UTF-8 (it
# failed with "internal error" before).
name=$(printf 'ev\033[31mil\nx\377')
cp /bin/sleep "$WORK/$name"
("$WORK/$name" 30 >/dev/null 2>&1 &)
named() { pgrep -n "^ev" >/dev/null; }
wait_until 10 named || fail "the oddly named process did not start"
h=$(pgrep -n "^ev")
"$GPUBIND" check --pid "$h" >"$WORK/out" 2>&1
rc=$?
if [ $rc = 0 ] && grep "^$h " "$WORK/out" | grep -qF ' ev\x1b[31mil\nx\xff ' && ! grep -q "$(printf '\033')" "$WORK/out"; then
  pass "a process name with ESC, newline and 0xff is shown escaped"
else fail "hostile name: rc $rc: $(od -c "$WORK/out" | head -8)"; fi
"$GPUBIND" check --pid "$h" --json >"$WORK/out" 2>"$WORK/err"
rc=$?
if [ $rc = 0 ] && /usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['processes'][0]['comm'].startswith('ev\x1b[31mil')" "$WORK/out"; then
  pass "--json of that process is valid JSON (the byte becomes U+FFFD)"
else fail "hostile name --json: rc $rc: $(cat "$WORK/err")"; fi
kill "$h" 2>/dev/null

# check under process and thread churn (issue 12): processes that start 8 threads and exit, one
# every 10 ms, judged by --match 25 times. None may be shown with 0 threads, and none may end as
# an error: a process that is gone before it is read is skipped, as --match documents.
if [ -x /usr/bin/python3 ]; then
  (for i in $(seq 600); do
     /usr/bin/python3 -c 'import threading, time
ts = [threading.Thread(target=time.sleep, args=(0.001,)) for _ in range(8)]
[t.start() for t in ts]' churn-marker &
     sleep 0.01
   done; wait) >/dev/null 2>&1 &
  churn=$!
  seen=0 bad=0 why=""
  for i in $(seq 25); do
    "$GPUBIND" check --match churn-marker --json >"$WORK/out" 2>"$WORK/err"
    rc=$?
    # processes judged, then each bad one: "PID: 0 threads" or the error's line.
    r=$(/usr/bin/python3 -c "import json, sys
d = json.load(open(sys.argv[1]))
print(len(d['processes']))
for p in d['processes']:
    if not p['threads']: print('PID %d judged with 0 threads' % p['pid'])
for e in d['errors']: print('error: %s' % e)" "$WORK/out" 2>&1) || r="0
stdout is not check's JSON: $(head -c 300 "$WORK/out") ($(echo "$r" | tail -1))"
    seen=$((seen + $(echo "$r" | head -1)))
    n=$(echo "$r" | tail -n +2 | grep -c .)
    [ "$n" -gt 0 ] && why="$why; run $i: $(echo "$r" | tail -n +2 | head -3 | tr '\n' ' ')"
    bad=$((bad + n))
    # A moment with no such process is "no process to check" (exit 0); anything else on stderr is bad.
    if ! { [ $rc = 0 ] && ! grep -qv '^gpubind: no process to check$' "$WORK/err"; }; then
      bad=$((bad + 1)); why="$why; run $i: exit $rc$( [ $rc -gt 128 ] && echo " (signal $((rc - 128)))"), stderr: $(head -3 "$WORK/err" | tr '\n' ' ')"
    fi
  done
  kill $churn 2>/dev/null
  if [ $bad = 0 ] && [ $seen -gt 0 ]; then pass "check under churn: $seen processes judged in 25 runs, none with 0 threads, no error"
  else fail "check under churn: $bad bad of $seen judged${why:-; no process was judged}"; fi
else
  echo "SKIP: churn case: /usr/bin/python3 missing"
fi
wait 2>/dev/null
finish

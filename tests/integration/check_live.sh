#!/usr/bin/env bash
# gpubind check on live processes of this machine: ranks started by `gpubind launch` are OK, a
# rank re-pinned after start is DRIFTED, two processes pinned to one CPU are OVERLAP.
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
(exec -a python sh -c 'sleep 30; :' train-like "$long") &
l=$!
has_long() { grep -q "train-like" "/proc/$l/cmdline" 2>/dev/null; }
wait_until 10 has_long || fail "long command line process did not start"
"$GPUBIND" check --match 'python.*train' >"$WORK/out" 2>&1
rc=$?
[ $rc != 139 ] && grep -q "^$l " "$WORK/out" && pass "--match 'python.*train' over a 100 KB command line finds it (rc $rc, no crash)" \
  || fail "long cmdline: rc $rc: $(head -c 600 "$WORK/out")"
kill $l 2>/dev/null
wait 2>/dev/null
finish

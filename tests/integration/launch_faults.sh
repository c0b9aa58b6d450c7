#!/usr/bin/env bash
# gpubind launch as a supervisor: exit status, fail-fast, signal forwarding, no orphans.
set -u
. "$(dirname "$0")/lib.sh"

# Each rank records its pid, then rank FAILER does ACTION while the others sleep.
rank_cmd() {  # rank_cmd FAILER ACTION
  echo "echo \$\$ > $WORK/pid.\$LOCAL_RANK; if [ \$LOCAL_RANK = $1 ]; then $2; fi; exec sleep 300"
}
pids() { cat "$WORK"/pid.* 2>/dev/null; }
have_pids() { [ "$(ls "$WORK"/pid.* 2>/dev/null | wc -l)" -ge "$1" ]; }

# 1. A rank exiting 3: launch exits 3 and no rank is left.
rm -f "$WORK"/pid.*
"$GPUBIND" launch -n 2 --grace 5 -- sh -c "$(rank_cmd 1 'exit 3')" 2>"$WORK/err"
rc=$?
[ $rc = 3 ] && pass "rank exit 3 -> launch exits 3" || fail "rank exit 3 -> launch exited $rc"
wait_until 10 none_alive $(pids) && pass "no rank left after a failure" || fail "ranks still alive: $(pids)"
grep -q "first failure: local rank 1" "$WORK/err" && pass "summary names the failing rank" || fail "summary: $(cat "$WORK/err")"

# 2. A rank killed with SIGKILL: the others are terminated, status 128+9.
rm -f "$WORK"/pid.*
"$GPUBIND" launch -n 2 --grace 5 -- sh -c "$(rank_cmd 0 'kill -9 $$')" 2>/dev/null
rc=$?
[ $rc = 137 ] && pass "rank SIGKILLed -> launch exits 137" || fail "rank SIGKILLed -> launch exited $rc"
wait_until 10 none_alive $(pids) && pass "others terminated after SIGKILL" || fail "ranks still alive: $(pids)"

# 3. SIGTERM to launch: forwarded to every rank, all exit, launch reports 143.
rm -f "$WORK"/pid.*
"$GPUBIND" launch -n 2 --grace 5 -- sh -c "$(rank_cmd 99 true)" 2>/dev/null &
launcher=$!
wait_until 20 have_pids 2 || fail "ranks did not start"
kill -TERM $launcher
wait $launcher
rc=$?
[ $rc = 143 ] && pass "SIGTERM forwarded, launch exits 143" || fail "SIGTERM -> launch exited $rc"
wait_until 10 none_alive $(pids) && pass "all ranks exited on SIGTERM" || fail "ranks still alive: $(pids)"

# 4. A rank that ignores SIGTERM is killed after the grace period.
rm -f "$WORK"/pid.*
"$GPUBIND" launch -n 2 --grace 1 -- sh -c "trap '' TERM; $(rank_cmd 1 'exit 5')" 2>/dev/null
rc=$?
[ $rc = 5 ] && pass "grace period then SIGKILL, launch exits 5" || fail "grace -> launch exited $rc"
wait_until 10 none_alive $(pids) && pass "SIGTERM-ignoring rank killed" || fail "ranks still alive: $(pids)"

# 5. launch itself SIGKILLed: no rank survives (parent-death signal).
rm -f "$WORK"/pid.*
"$GPUBIND" launch -n 2 -- sh -c "$(rank_cmd 99 true)" 2>/dev/null &
launcher=$!
wait_until 20 have_pids 2 || fail "ranks did not start"
kill -KILL $launcher
wait $launcher 2>/dev/null
wait_until 10 none_alive $(pids) && pass "no orphan after launch is SIGKILLed" || fail "orphans: $(pids)"

# 5b. ... nor anything a rank started (issue 12): PR_SET_PDEATHSIG kills the rank's shell, not
# the sleep it forked; gpubind's reaper kills each rank's whole process group. 20 trials, each
# group empty within 2 s.
in_groups() {  # live (not zombie) processes whose process group is one of the given ids
  local g
  for g in "$@"; do awk -v G="$g" '{ sub(/^.*\) /, ""); if ($3 == G && $1 != "Z") n++ } END { print n + 0 }' /proc/[0-9]*/stat 2>/dev/null; done |
    awk '{ s += $1 } END { print s + 0 }'
}
groups_empty() { [ "$(in_groups "$@")" = 0 ]; }
left=0
for trial in $(seq 20); do
  rm -f "$WORK"/pid.*
  "$GPUBIND" launch -n 4 -q -- sh -c "echo \$\$ > $WORK/pid.\$LOCAL_RANK; sleep 60; :" 2>/dev/null &
  launcher=$!
  wait_until 20 have_pids 4 || fail "trial $trial: ranks did not start"
  groups=$(pids)
  kill -KILL $launcher
  wait $launcher 2>/dev/null
  wait_until 2 groups_empty $groups || left=$((left + $(in_groups $groups)))
done
[ $left = 0 ] && pass "launch SIGKILLed 20 times: no process left in any rank's group within 2 s" \
  || fail "$left process(es) left in rank groups after launch was SIGKILLed"

# 6. The environment contract and tagged output.
out=$("$GPUBIND" launch -n 2 --tag-output -- sh -c 'echo "$RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE $GROUP_RANK $MASTER_ADDR $MASTER_PORT"' 2>/dev/null)
echo "$out" | grep -qE '^\[0\] 0 0 2 2 0 127\.0\.0\.1 [0-9]+$' && echo "$out" | grep -qE '^\[1\] 1 1 2 2 0 127\.0\.0\.1 [0-9]+$' \
  && pass "torchrun environment and --tag-output" || fail "environment: $out"

# 7. Bad input: one error line and the documented status.
"$GPUBIND" launch -n 0 -- true 2>"$WORK/err"; rc=$?
[ $rc = 2 ] && [ "$(wc -l <"$WORK/err")" = 1 ] && pass "-n 0 -> exit 2" || fail "-n 0 -> $rc: $(cat "$WORK/err")"
"$GPUBIND" launch -n 2 2>"$WORK/err"; rc=$?
[ $rc = 2 ] && grep -q "no command" "$WORK/err" && pass "no command -> exit 2" || fail "no command -> $rc"
"$GPUBIND" launch -n 1 --no-python true 2>/dev/null; rc=$?
[ $rc = 0 ] && pass "torchrun form without '--': --no-python true -> 0" || fail "torchrun form -> $rc"
"$GPUBIND" launch -n 1 -- /nonexistent/cmd 2>/dev/null; rc=$?
[ $rc = 127 ] && pass "command not found -> 127" || fail "not found -> $rc"
printf "data\n" >"$WORK/notexec"; chmod 644 "$WORK/notexec"
"$GPUBIND" launch -n 1 -- "$WORK/notexec" 2>/dev/null; rc=$?
[ $rc = 126 ] && pass "not executable -> 126" || fail "not executable -> $rc"

# 8. --tag-output with a grandchild that detaches (setsid) and keeps the output pipe (issue 12):
# launch read until that process closed it, 60 s here. Now it stops reading shortly after the
# rank exits, with the rank's last line (no newline) still printed.
timeout 30 "$GPUBIND" launch -q -n 1 --tag-output -- sh -c "setsid sleep 60 & echo \$! > $WORK/detached; echo first; sleep 0.2; printf last" >"$WORK/out" 2>/dev/null
rc=$?
if [ $rc = 0 ] && grep -q "^\[0\] first$" "$WORK/out" && grep -q "^\[0\] last$" "$WORK/out"; then
  pass "--tag-output returns after the rank exits although a detached grandchild holds the pipe"
else fail "--tag-output with a detached grandchild: exit $rc (124: still waiting after 30 s), output: $(cat "$WORK/out")"; fi
kill "$(cat "$WORK/detached" 2>/dev/null)" 2>/dev/null

# 9. SIGPIPE (issue 29): with --tag-output, a reader that goes away (`| head`) made launch's next
# write kill launch: no summary, no status of its own. Now the write fails, the rank runs to its
# end, and launch reports it. The reader closes its end before it says so, and the rank writes
# again only then: the write after the close is certain. The pipeline's first status is launch's.
rm -f "$WORK/reader-gone"
timeout 60 "$GPUBIND" launch -n 1 --tag-output -- sh -c "echo first; while [ ! -e $WORK/reader-gone ]; do sleep 0.05; done; echo after" \
  2>"$WORK/err" | { head -n 1 >/dev/null; exec 0<&-; touch "$WORK/reader-gone"; }
rc=${PIPESTATUS[0]}
[ $rc = 0 ] && grep -q "1 rank(s) on node 0 of 1, exit 0" "$WORK/err" \
  && pass "--tag-output into a closed pipe: launch exits 0 with its summary" || fail "closed stdout -> launch exited $rc: $(tail -2 "$WORK/err")"
# The group reaper killed: launch's next word to it (a rank's group to forget) found no reader.
# The ranks end only once the reaper is gone.
rm -f "$WORK"/pid.* "$WORK/reaper-gone"
timeout 60 "$GPUBIND" launch -n 2 -- sh -c "echo \$\$ > $WORK/pid.\$LOCAL_RANK; while [ ! -e $WORK/reaper-gone ]; do sleep 0.05; done" \
  2>"$WORK/err" &
launcher=$!
wait_until 20 have_pids 2 || fail "ranks did not start"
gp=$(pgrep -P $launcher -x 'gpubind(-full)?')  # launch, under timeout (gpubind-full behind the static front)
rp=$(pgrep -P "$gp" -x gpubind-reaper) || fail "no group reaper under launch $gp"
kill -KILL $rp
# Dead (its end of the pipe closed) once it is a zombie or reaped.
reaper_dead() { [ ! -e /proc/$rp ] || [ "$(sed 's/.*) //' /proc/$rp/stat 2>/dev/null | cut -c1)" = Z ]; }
wait_until 10 reaper_dead || fail "the group reaper did not end"
touch "$WORK/reaper-gone"
wait $launcher
rc=$?
[ $rc = 0 ] && grep -q "2 rank(s) on node 0 of 1, exit 0" "$WORK/err" \
  && pass "group reaper killed: launch still supervises, exits 0 with its summary" || fail "reaper killed -> launch exited $rc: $(tail -2 "$WORK/err")"

# 10. A full disk under --log-dir (issue 29): every write to the ranks' logs failed with ENOSPC
# and launch said nothing and exited 0. Now each rank whose log refuses output says so once, the
# job runs on, and the summary counts what was lost. A 64 KiB tmpfs in a mount namespace of its own.
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
  cat >"$WORK/full.sh" <<'FULL'
mount -t tmpfs -o size=64k tmpfs "$2" || exit 77
"$1" launch -n 2 --log-dir "$2" --rdzv-id r --redirects 3 -- \
  sh -c 'i=0; while [ $i -lt 3000 ]; do echo "line $i of rank $LOCAL_RANK, padded to fill the disk quickly........"; i=$((i+1)); done'
FULL
  mkdir -p "$WORK/full"
  unshare -m sh "$WORK/full.sh" "$GPUBIND" "$WORK/full" 2>"$WORK/err"
  rc=$?
  if [ $rc = 77 ]; then
    echo "note: cannot mount a tmpfs here; the full-disk case skipped"
  else
    warned=$(grep -c "its stdout log refuses output (No space left on device)" "$WORK/err")
    [ $rc = 0 ] && [ "$warned" -ge 1 ] && [ "$warned" -le 2 ] && grep -q "2 rank(s) on node 0 of 1, exit 0" "$WORK/err" \
      && grep -qE "rank [01] lost [0-9.]+ [KM]?i?B of output its log files refused \(No space left on device\)" "$WORK/err" \
      && pass "full disk under --log-dir: one warning per rank whose log refused ($warned), the loss in the summary, exit 0" \
      || fail "full disk: exit $rc: $(cat "$WORK/err")"
  fi
else
  echo "note: the full-disk case needs root and mount namespaces; skipped"
fi
# 11. --report-bindings (issue 33): one line per rank, from the rank's own process once bound,
# naming the CPUs that process really has; --dry-run prints the plan and each rank's environment
# and starts nothing.
"$GPUBIND" launch -n 2 -q --report-bindings -- sh -c 'echo "have $RANK $(grep Cpus_allowed_list /proc/self/status | cut -f2)"' \
  >"$WORK/out" 2>"$WORK/err"
rc=$?
ok=$rc
for r in 0 1; do
  have=$(sed -n "s/^have $r //p" "$WORK/out")
  said=$(sed -n "s/^\[[^]]*\] gpubind: rank $r (local $r of 2) bound to .*CPUs \([0-9,-]*\), memory.*/\1/p" "$WORK/err")
  [ -n "$have" ] && [ "$have" = "$said" ] || ok=1
done
[ $ok = 0 ] && pass "launch --report-bindings: each rank's line names the CPUs it runs on ($(grep -c '] gpubind: rank' "$WORK/err") lines)" \
  || fail "launch --report-bindings: exit $rc: $(cat "$WORK/out" "$WORK/err")"
"$GPUBIND" launch -n 2 --master-port 29444 --dry-run -- sh -c 'echo ran >"$0"' "$WORK/ran" >"$WORK/out" 2>&1
rc=$?
[ $rc = 0 ] && [ ! -e "$WORK/ran" ] && grep -q "^Plan: 2 rank(s)" "$WORK/out" \
  && [ "$(grep -c "^  env RANK=[01] LOCAL_RANK=[01] .* MASTER_PORT=29444 .*GPUBIND_CPUS=" "$WORK/out")" = 2 ] \
  && pass "launch --dry-run: the plan and both ranks' environment, nothing started" \
  || fail "launch --dry-run: exit $rc: $(cat "$WORK/out")"
finish

#!/usr/bin/env bash
# deploy/slurm/gpubind-prolog.sh as root, where the spool is hostile (issue 52, items 19 and 20),
# run directly as slurmd runs it (SLURM_JOB_ID, SLURMD_NODENAME): the job's watch really starts.
# - a shared 1777 spool where another user made the next job's directory first, with NODE.err a
#   link to a file of root's: refused, the file untouched, no watch; the job directory itself a
#   link: refused; a spool everyone may write without the sticky bit: refused;
# - a requeued job's own directory (root's, 0700) with stale files: used, the files made anew;
# - a full spool (a tmpfs of one page, filled): the pid file cannot be written, so the watch that
#   the epilog could never stop is stopped by the prolog, said in one line, exit 0.
set -u
. "$(dirname "$0")/lib.sh"
PROLOG=$(cd "$(dirname "$0")/../../deploy/slurm" && pwd)/gpubind-prolog.sh
EPILOG=$(dirname "$PROLOG")/gpubind-epilog.sh
[ "$(id -u)" = 0 ] || skip "the prolog runs as root (slurmd's); this user is $(id -un)"
command -v setpriv >/dev/null || skip "no setpriv to act as another user"
chmod 755 "$WORK"

prolog() {  # SPOOL JOB: the prolog's exit status; its stderr in $WORK/prolog.err
  GPUBIND=$GPUBIND GPUBIND_JOB_SPOOL=$1 GPUBIND_JOB_INTERVAL=0.2 SLURM_JOB_ID=$2 SLURMD_NODENAME=n1 sh "$PROLOG" 2>"$WORK/prolog.err"
}
watching() { pgrep -f -- "watch --slurm-node $1 " >/dev/null; }
stop_watch() {  # SPOOL JOB
  GPUBIND_JOB_SPOOL=$1 SLURM_JOB_ID=$2 SLURMD_NODENAME=n1 sh "$EPILOG"
  pkill -f -- "watch --slurm-node $2 " 2>/dev/null
  return 0
}
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }

# A shared spool (1777): another user plants the next job's directory and a link in it.
shared=$WORK/shared
mkdir -m 1777 "$shared"
echo "root's data" >"$WORK/victim"
as_nobody mkdir "$shared/41"
as_nobody ln -s "$WORK/victim" "$shared/41/n1.err"
prolog "$shared" 41
rc=$?
[ $rc = 0 ] && [ "$(cat "$WORK/victim")" = "root's data" ] && grep -q "$shared/41 exists and is not root's" "$WORK/prolog.err" && ! watching 41 \
  && pass "another user's directory for the job: refused, the linked file untouched, no watch ($(cat "$WORK/prolog.err"))" \
  || fail "planted directory: rc $rc, victim '$(cat "$WORK/victim")', $(cat "$WORK/prolog.err")"
stop_watch "$shared" 41
as_nobody ln -s "$WORK" "$shared/42"
prolog "$shared" 42
grep -q "$shared/42 is a symbolic link" "$WORK/prolog.err" && ! watching 42 && [ ! -e "$WORK/n1.err" ] \
  && pass "the job directory a link: refused" || fail "linked job directory: $(cat "$WORK/prolog.err")"
stop_watch "$shared" 42
open=$WORK/open
mkdir -m 0777 "$open"
prolog "$open" 43
grep -q "writable by every user and not sticky" "$WORK/prolog.err" && [ ! -e "$open/43" ] && ! watching 43 \
  && pass "a spool everyone may write without the sticky bit: refused" || fail "open spool: $(cat "$WORK/prolog.err")"
stop_watch "$open" 43

# The same shared spool, a job nobody interfered with: made fresh, 0700, watched; then stopped.
prolog "$shared" 44
rc=$?
started() { [ -s "$shared/44/n1.pid" ] && watching 44; }
wait_until 10 started && [ $rc = 0 ] && [ "$(stat -c '%u %a' "$shared/44")" = "0 700" ] \
  && pass "a fresh job directory in the shared spool: root's, 0700, the watch running" \
  || fail "fresh job: rc $rc, $(ls -la "$shared/44" 2>&1) $(cat "$WORK/prolog.err")"
stop_watch "$shared" 44
# Requeued: the job's own directory again, stale files of the earlier run, one a link root made.
ln -sf "$WORK/victim" "$shared/44/n1.err"
prolog "$shared" 44
wait_until 10 started && [ ! -L "$shared/44/n1.err" ] && [ "$(cat "$WORK/victim")" = "root's data" ] \
  && pass "a requeued job's own directory: used, its files made anew (not through a link)" \
  || fail "requeued job: $(ls -la "$shared/44" 2>&1) $(cat "$WORK/prolog.err")"
stop_watch "$shared" 44

# A full spool: a one-page tmpfs, filled, in a mount namespace of this test's own.
if unshare -m true 2>/dev/null; then
  GPUBIND=$GPUBIND PROLOG=$PROLOG WORK=$WORK unshare -m sh -c '
    mkdir -p "$WORK/full" && mount -t tmpfs -o size=4k,mode=0755 none "$WORK/full" || exit 77
    dd if=/dev/zero of="$WORK/full/fill" bs=4k count=64 2>/dev/null
    GPUBIND=$GPUBIND GPUBIND_JOB_SPOOL=$WORK/full SLURM_JOB_ID=45 SLURMD_NODENAME=n1 sh "$PROLOG" 2>"$WORK/prolog.err"
    echo "rc=$?" >"$WORK/full.rc"
    ls -la "$WORK/full/45" >"$WORK/full.ls" 2>&1'
  urc=$?
  if [ $urc = 77 ]; then
    echo "SKIP (part): no tmpfs mount here: the full spool"
  else
    gone() { ! watching 45; }
    wait_until 10 gone && grep -q "rc=0" "$WORK/full.rc" && grep -q "cannot write $WORK/full/45/n1.pid (.*): its watch stopped: job 45 not watched" "$WORK/prolog.err" \
      && pass "a full spool: the pid file cannot be written, the watch is stopped, one line ($(cat "$WORK/prolog.err"))" \
      || fail "full spool: $(cat "$WORK/full.rc" "$WORK/prolog.err" "$WORK/full.ls" 2>&1); watching: $(pgrep -af -- 'watch --slurm-node 45 ')"
    pkill -f -- "watch --slurm-node 45 " 2>/dev/null
  fi
else
  echo "SKIP (part): unshare -m refused here: the full spool"
fi
finish

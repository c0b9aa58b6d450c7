#!/bin/sh
# Slurm Epilog (slurm.conf: Epilog=/usr/share/gpubind/deploy/slurm/gpubind-epilog.sh, or called
# from the site's own epilog): stops the job's `gpubind watch` that gpubind-prolog.sh started on
# this node, which then writes SPOOL/JOB/NODE.summary: for any finished job, whether every task
# ran where it was bound. Same settings as the prolog; always exits 0.
set -u
SPOOL=${GPUBIND_JOB_SPOOL:-/var/spool/gpubind/jobs}
job=${SLURM_JOB_ID:-}
node=${SLURMD_NODENAME:-$(hostname -s)}
case $job in '' | *[!0-9_]*) exit 0 ;; esac
case $node in '' | */* | .*) exit 0 ;; esac
pidfile="$SPOOL/$job/$node.pid"
[ -f "$pidfile" ] || exit 0
pid=$(cat "$pidfile")
# Running, and still this job's watch (a PID is reused once its process ended).
ours() {
  [ -r "/proc/$pid/cmdline" ] && ! grep -q '^[0-9]* ([^)]*) Z' "/proc/$pid/stat" 2>/dev/null &&
    tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- " watch --slurm-node $job "
}
case $pid in '' | *[!0-9]*) rm -f "$pidfile"; exit 0 ;; esac
if ours; then
  kill -TERM "$pid"
  # watch ends at its next wait, writing its summary; at most 10 s.
  i=0
  while ours && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  ours && { echo "gpubind-epilog: job $job's watch (PID $pid) did not stop in 10 s: killed, no summary" >&2; kill -KILL "$pid"; }
fi
rm -f "$pidfile"
exit 0

#!/bin/sh
# Slurm Prolog (slurm.conf: Prolog=/usr/share/gpubind/deploy/slurm/gpubind-prolog.sh, or called
# from the site's own prolog): starts one `gpubind watch` for the job on this node, detached from
# the prolog, following the job's tasks (--slurm-node: those that start later too) until
# gpubind-epilog.sh stops it. It keeps, in a root-owned spool directory:
#   SPOOL/JOB/NODE.summary  the watch's summary as text, written when it ends: each rank, whether
#                           it stayed where it was bound (DRIFTED, MIGRATING, CROSS_NUMA...)
#   SPOOL/JOB/NODE.err      the watch's own messages
#   SPOOL/JOB/NODE.jsonl    every interval as JSON lines, only with GPUBIND_JOB_LOG=intervals
#                           (about 2 KB per interval for 8 ranks: large for long jobs)
# Settings from the environment: GPUBIND (the binary), GPUBIND_JOB_SPOOL (default
# /var/spool/gpubind/jobs), GPUBIND_JOB_INTERVAL (seconds, default 10), GPUBIND_JOB_LOG.
# A prolog that fails drains the node and requeues the job: every problem here is one line on
# stderr (slurmd's log) and the script still exits 0.
set -u
GPUBIND=${GPUBIND:-/usr/bin/gpubind}
SPOOL=${GPUBIND_JOB_SPOOL:-/var/spool/gpubind/jobs}
INTERVAL=${GPUBIND_JOB_INTERVAL:-10}
job=${SLURM_JOB_ID:-}
node=${SLURMD_NODENAME:-$(hostname -s)}
case $job in '' | *[!0-9_]*) echo "gpubind-prolog: no usable SLURM_JOB_ID ('$job'): nothing watched" >&2; exit 0 ;; esac
case $node in '' | */* | .*) echo "gpubind-prolog: no usable node name ('$node'): nothing watched" >&2; exit 0 ;; esac
[ -x "$GPUBIND" ] || { echo "gpubind-prolog: $GPUBIND is not an executable: job $job not watched" >&2; exit 0; }
umask 077
mkdir -p "$SPOOL/$job" || { echo "gpubind-prolog: cannot create $SPOOL/$job: job $job not watched" >&2; exit 0; }
out=/dev/null
[ "${GPUBIND_JOB_LOG:-}" = intervals ] && out="$SPOOL/$job/$node.jsonl"
setsid "$GPUBIND" watch --slurm-node "$job" --interval "$INTERVAL" --json --no-tty --summary "$SPOOL/$job/$node.summary" \
  >"$out" 2>"$SPOOL/$job/$node.err" </dev/null &
pid=$!
echo "$pid" >"$SPOOL/$job/$node.pid"
# slurmd kills what is left in the prolog's process group when it ends: return only once the
# watch leads a session of its own (field 6 of /proc/PID/stat), at most 5 s.
i=0
while [ $i -lt 50 ] && [ -r "/proc/$pid/stat" ] && [ "$(sed 's/^.*) //' "/proc/$pid/stat" | cut -d' ' -f4)" != "$pid" ]; do
  sleep 0.1
  i=$((i + 1))
done
exit 0

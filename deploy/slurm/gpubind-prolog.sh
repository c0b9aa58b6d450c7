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
# stderr (slurmd's log) and the script still exits 0, with no watch left running.
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
me=$(id -u)
# The job's directory is made fresh and root's alone. Where the spool is not root's alone (a shared
# GPUBIND_JOB_SPOOL, a 1777 directory) another user could make the next job's directory first, with
# NODE.err a link to any file that root would then truncate: an existing directory is used only
# when it is a real directory of ours that nobody else may write (a requeued job's), in a spool
# that nobody else may rename it out of; our files in it are made anew, never through a link.
refuse() { echo "gpubind-prolog: $*: job $job not watched" >&2; exit 0; }
mkdir -p "$SPOOL" || refuse "cannot create $SPOOL"
[ -L "$SPOOL" ] && refuse "$SPOOL is a symbolic link"
# writable by others without the sticky bit: another user may rename what root makes in it
[ -n "$(find "$SPOOL" -maxdepth 0 -perm -002 ! -perm -1000)" ] && refuse "$SPOOL is writable by every user and not sticky (chmod 1777 or 0755)"
dir=$SPOOL/$job
if ! mkdir "$dir" 2>/dev/null; then
  [ -L "$dir" ] && refuse "$dir is a symbolic link (made by another user?)"
  [ -d "$dir" ] || refuse "cannot create $dir"
  [ "$(stat -c %u "$dir")" = "$me" ] || refuse "$dir exists and is not root's (made by user $(stat -c %U "$dir")?)"
  [ -z "$(find "$dir" -maxdepth 0 -perm /022)" ] || refuse "$dir exists and others may write it"
fi
out=/dev/null
[ "${GPUBIND_JOB_LOG:-}" = intervals ] && out="$dir/$node.jsonl"
rm -f "$dir/$node.jsonl" "$dir/$node.summary" "$dir/$node.err" "$dir/$node.pid" || refuse "cannot clear $dir"
set -C  # the files below are created, never opened through something already there
setsid "$GPUBIND" watch --slurm-node "$job" --interval "$INTERVAL" --json --no-tty --summary "$dir/$node.summary" \
  >"$out" 2>"$dir/$node.err" </dev/null &
pid=$!
# Without its pid file the epilog cannot stop the watch, which would run on for ever (a full spool):
# stopped here instead.
if ! err=$( { echo "$pid" >"$dir/$node.pid"; } 2>&1 ); then
  kill -TERM "$pid" 2>/dev/null
  rm -f "$dir/$node.pid"
  refuse "cannot write $dir/$node.pid (${err##*: }): its watch stopped"
fi
# slurmd kills what is left in the prolog's process group when it ends: return only once the
# watch leads a session of its own (field 6 of /proc/PID/stat), at most 5 s.
i=0
while [ $i -lt 50 ] && [ -r "/proc/$pid/stat" ] && [ "$(sed 's/^.*) //' "/proc/$pid/stat" | cut -d' ' -f4)" != "$pid" ]; do
  sleep 0.1
  i=$((i + 1))
done
exit 0

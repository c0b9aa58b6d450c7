#!/bin/bash
# Resident memory of `watch --match` while N short-lived matched processes come and go (issue 29
# item 9, issue 52 item 22): scripts/watch-rss.sh BUILD/src/gpubind [N] [EVERY]. Prints watch's
# VmRSS every EVERY (default 2000) processes. LISTEN=PORT adds `--listen 127.0.0.1:PORT` and
# reads /metrics after every 100 processes, as Prometheus would.
G=$1; N=${2:-10000}; EVERY=${3:-2000}
args=(watch --match gpubind-shortlived --interval 0.02 --json)
[ -n "${LISTEN:-}" ] && args+=(--listen "127.0.0.1:$LISTEN")
$G "${args[@]}" > /dev/null 2>/dev/null &
w=$!
sleep 1
rss() { awk '/VmRSS/{print $2}' /proc/$w/status; }
echo "start $(rss) KiB"
for ((i=1; i<=N; i++)); do
  bash -c 'exec -a gpubind-shortlived sleep 0.05' &
  if (( i % 8 == 0 )); then wait $(jobs -p | grep -v "^$w$") 2>/dev/null; fi
  if [ -n "${LISTEN:-}" ] && (( i % 100 == 0 )); then curl -s "http://127.0.0.1:$LISTEN/metrics" > /dev/null; fi
  if (( i % EVERY == 0 )); then echo "$i $(rss) KiB"; fi
done
kill -INT $w; wait $w

#!/bin/bash
# Resident memory of `watch --match` while N short-lived matched processes come and go (issue 29
# item 9): scripts/watch-rss.sh BUILD/src/gpubind [N]. Prints watch's VmRSS every 2000 processes.
G=$1; N=${2:-10000}
$G watch --match gpubind-shortlived --interval 0.02 --json > /dev/null 2>/dev/null &
w=$!
sleep 1
rss() { awk '/VmRSS/{print $2}' /proc/$w/status; }
echo "start $(rss) KiB"
for ((i=1; i<=N; i++)); do
  bash -c 'exec -a gpubind-shortlived sleep 0.05' &
  if (( i % 8 == 0 )); then wait $(jobs -p | grep -v "^$w$") 2>/dev/null; fi
  if (( i % 2000 == 0 )); then echo "$i $(rss) KiB"; fi
done
kill -INT $w; wait $w

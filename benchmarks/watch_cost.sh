#!/usr/bin/env bash
# What `gpubind watch` costs on a real workload: 8 processes x 100 threads (Python threads, each
# an OS thread, each waking every 50 ms), sampled at 1 Hz for 40 s (numa_maps never read). Prints watch's CPU time per second of
# wall time (% of one core; and over 20 s without scrapes), its own sampling time per thread (gpubind_watch_sample_seconds / 800),
# the raw cost of the same calls to the kernel (benchmarks/proc_read.cpp) in the same run, and /metrics
# latency over 2 x 1000 scrapes with watch's resident memory before, between and after.
# WORKLOAD: `wake` (default), each thread wakes every 50 ms, so that every thread has run and
# migrated at every sample (the worst case for watch); `wait`, each blocks on an event, as an
# idle pool's threads do (a training process's many threads mostly wait).
#   benchmarks/watch_cost.sh [BUILD_DIR] [wake|wait]
set -euo pipefail
build=${1:-build}
workload=${2:-wake}
case $workload in
  wake) body='while True: time.sleep(0.05)' ;;
  wait) body='threading.Event().wait()' ;;
  *) echo "usage: $0 [BUILD_DIR] [wake|wait]" >&2; exit 2 ;;
esac
gpubind=$build/src/gpubind
tmp=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
for r in $(seq 8); do
  /usr/bin/python3 -c "
import threading, time
def idle():
    $body
for _ in range(99): threading.Thread(target=idle, daemon=True).start()
time.sleep(600)" &
  pids+=($!)
done
sleep 2
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
args=(); for p in "${pids[@]}"; do args+=(--pid "$p"); done
/usr/bin/time -f "%U %S %e" -o "$tmp/time" "$gpubind" watch "${args[@]}" --interval 1 --duration 40 --mem-every 0 \
  --textfile "$tmp/m.prom" --listen 127.0.0.1:$port >/dev/null 2>"$tmp/err" &
watcher=$!
sleep 3
threads=$(for p in "${pids[@]}"; do ls /proc/$p/task; done | wc -l)
echo "workload ($workload): ${#pids[@]} processes, $threads threads"
wpid=$(pgrep -P $watcher -x 'gpubind(-full)?' || echo $watcher)
scrapes() {
  /usr/bin/python3 - "$port" <<'PY'
import sys, time, urllib.request
port = int(sys.argv[1])
lat = []
for _ in range(1000):
    t = time.perf_counter()
    urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read()
    lat.append((time.perf_counter() - t) * 1000)
lat.sort()
print(f"/metrics: median {lat[500]:.2f} ms, p99 {lat[990]:.2f} ms over 1000 scrapes")
PY
}
rss() { awk '/VmRSS/{print $2}' /proc/$wpid/status; }
rss0=$(rss); scrapes; rss1=$(rss); scrapes; rss2=$(rss)
echo "watch resident memory: $rss0 kB, after 1000 scrapes $rss1 kB, after 2000 $rss2 kB"
# Sampling alone: watch's CPU ticks (utime+stime, 100 per second) over 20 quiet seconds.
ticks() { awk '{print $14 + $15}' /proc/$wpid/stat; }
# ...and the same to the nanosecond: the CPU time of each of its threads (schedstat's first field).
cpu_ns() { cat /proc/$wpid/task/*/schedstat | awk '{s += $1} END {printf "%d\n", s}'; }
# Meanwhile watch's own time per sample (gpubind_watch_sample_seconds), read once a second.
t0=$(ticks); n0=$(cpu_ns)
for i in $(seq 20); do sleep 1; awk '/^gpubind_watch_sample_seconds/{print $2}' "$tmp/m.prom" >>"$tmp/samples"; done
t1=$(ticks); n1=$(cpu_ns)
echo "watch sampling alone: $((t1 - t0)) ticks in 20 s = $(awk "BEGIN{printf \"%.2f\", ($t1 - $t0) / 20}") % of one core;" \
  "schedstat: $(awk "BEGIN{printf \"%.1f ms = %.3f\", ($n1 - $n0) / 1e6, ($n1 - $n0) / 2e8}") % of one core"
"$build/benchmarks/gpubind_proc_read" 8 "${pids[@]}"
sample=$(sort -g "$tmp/samples" | awk '{v[NR]=$1} END{print v[int((NR+1)/2)]}')
/usr/bin/python3 -c "print(f'watch sample (median of 20): {float(\"$sample\")*1e3:.2f} ms, {float(\"$sample\")*1e6/$threads:.1f} us per thread')"
wait $watcher || true
read -r user sys wall < <(tail -1 "$tmp/time")
/usr/bin/python3 -c "print(f'watch CPU: {($user+$sys):.2f} s over {$wall:.1f} s wall = {100*($user+$sys)/$wall:.2f} % of one core')"

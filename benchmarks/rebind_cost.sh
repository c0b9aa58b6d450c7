#!/usr/bin/env bash
# What `gpubind rebind` costs (issue 35), in two parts, each a printed table for docs/PERFORMANCE.md.
#
# threads: 8 ranks x 100 threads (Python threads blocked on an event, each an OS thread), started
#   with LOCAL_RANK and LOCAL_WORLD_SIZE as a launcher sets them. ROUNDS times: every thread set
#   back to every CPU (taskset -a), then `gpubind rebind` timed (wall and its own CPU time), then
#   a second rebind with nothing to move, and `--dry-run` (probe and plan only).
# pages: 8 ranks, each MIB MiB (default 1024) first-touched on the highest NUMA node with memory
#   and stepped through by one thread (tests/qemu/first_touch.c's work mode: a pass over its pages,
#   10 ms asleep, the passes counted every 100 ms). `gpubind rebind` moves them to the planned
#   nodes; migrate_pages' time per rank comes from its JSON, and what a rank pays is its passes per
#   second in the second before, during and after the move. Needs two NUMA nodes with memory; on
#   one, only the numa_maps reads are measured (rebind reads each rank's before and after).
#   benchmarks/rebind_cost.sh [BUILD_DIR] [ROUNDS] [MIB]
set -euo pipefail
build=${1:-build}
rounds=${2:-5}
mib=${3:-1024}
gpubind=$build/src/gpubind
touch=$build/tests/gpubind_first_touch
[ -x "$touch" ] || { echo "build $touch first (make -C $build gpubind_first_touch)" >&2; exit 2; }
tmp=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
ncpu=$(nproc)
now() { date +%s.%N; }
cpu_of() { awk '{print $14 + $15}' "/proc/$1/stat"; }

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $ncpu CPUs, $(ls -d /sys/devices/system/node/node* | wc -l) NUMA node(s)"

# --- threads
for r in $(seq 0 7); do
  LOCAL_RANK=$r LOCAL_WORLD_SIZE=8 /usr/bin/python3 -c "
import threading, time
for _ in range(99): threading.Thread(target=threading.Event().wait, daemon=True).start()
time.sleep(3600)" rebind-cost-threads &
  pids+=($!)
done
all_started() { local p n=0; for p in "${pids[@]}"; do [ "$(ls /proc/$p/task 2>/dev/null | wc -l)" = 100 ] && n=$((n + 1)); done; [ $n = 8 ]; }
until all_started; do sleep 0.1; done
echo "threads: 8 ranks, $(for p in "${pids[@]}"; do ls /proc/$p/task; done | wc -l) threads"
printf '%-6s %10s %10s %10s %12s\n' round "rebind ms" "its CPU ms" "again ms" "dry-run ms"
for i in $(seq "$rounds"); do
  for p in "${pids[@]}"; do taskset -a -p -c "0-$((ncpu - 1))" "$p" >/dev/null; done
  t0=$(now)
  /usr/bin/time -f "%U %S" -o "$tmp/cpu" "$gpubind" rebind -q --match 'rebind-cost-threads' --no-memory --json >"$tmp/out.json"
  t1=$(now)
  moved=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["threads_moved"])' "$tmp/out.json")
  [ "$moved" = 800 ] || { echo "round $i moved $moved threads, not 800" >&2; exit 1; }
  t2=$(now)
  "$gpubind" rebind -q --match 'rebind-cost-threads' --no-memory >/dev/null
  t3=$(now)
  "$gpubind" rebind -q --match 'rebind-cost-threads' --no-memory --dry-run >/dev/null
  t4=$(now)
  awk -v r="$i" -v a="$t0" -v b="$t1" -v c="$t2" -v d="$t3" -v e="$t4" -v cpu="$(awk '{print $1 + $2}' "$tmp/cpu")" \
    'BEGIN { printf "%-6s %10.1f %10.1f %10.1f %12.1f\n", r, (b - a) * 1000, cpu * 1000, (d - c) * 1000, (e - d) * 1000 }'
done
kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null || true
pids=()

# --- pages
nodes=()
for n in /sys/devices/system/node/node[0-9]*; do
  [ "$(awk '/MemTotal/{print $4}' "$n/meminfo")" -gt $((mib * 1024 * 2)) ] && nodes+=("${n##*node}")
done
last=${nodes[-1]}
echo "pages: 8 ranks x $mib MiB first-touched on node $last, one stepping thread each"
for r in $(seq 0 7); do
  LOCAL_RANK=$r LOCAL_WORLD_SIZE=8 "$touch" "$mib" work 1 "$last" >"$tmp/steps.$r" &
  pids+=($!)
done
stepping() { local r; for r in $(seq 0 7); do grep -q '^steps [1-9]' "$tmp/steps.$r" 2>/dev/null || return 1; done; }
until stepping; do sleep 0.2; done
steps() { local r s=0 v; for r in $(seq 0 7); do v=$(tail -n 1 "$tmp/steps.$r" | sed -n 's/^steps //p'); s=$((s + ${v:-0})); done; echo $s; }
s0=$(steps); sleep 1; s1=$(steps)
t0=$(now)
/usr/bin/time -f "%U %S" -o "$tmp/cpu" "$gpubind" rebind -q --match "gpubind_first_touch $mib work" --json >"$tmp/pages.json"
t1=$(now)
s2=$(steps); sleep 1; s3=$(steps)
/usr/bin/python3 - "$tmp/pages.json" "$s0" "$s1" "$s2" "$s3" "$t0" "$t1" "$(awk '{print $1 + $2}' "$tmp/cpu")" "${#nodes[@]}" <<'PY'
import json, sys
rec = json.load(open(sys.argv[1]))
s0, s1, s2, s3 = map(int, sys.argv[2:6])
t0, t1, cpu = map(float, sys.argv[6:9])
multi = int(sys.argv[9]) > 1
wall = t1 - t0
secs, pages = [], 0
for r in rec["ranks"]:
    for p in r["processes"]:
        m = p["memory"]
        if m["migrated"]:
            secs.append(m["seconds"])
            pages += sum(m["pages_before"].get(str(n), 0) for n in m["from"].split(",") if n)
print(f"rebind wall {wall * 1000:.0f} ms, its CPU {cpu * 1000:.0f} ms; pages moved {rec['pages_moved']}")
if multi and secs:
    gib = pages * 4096 / 2**30
    print(f"migrate_pages per rank: {min(secs) * 1000:.0f}-{max(secs) * 1000:.0f} ms; {gib:.2f} GiB in {sum(secs):.2f} s: {gib / sum(secs):.2f} GiB/s")
else:
    print("one NUMA node with memory: nothing to migrate; the wall time is the probe, the plan and numa_maps read twice per rank")
during = (s2 - s1) / wall if wall > 0 else 0
print(f"passes per second, all ranks: before {s1 - s0}, during the rebind {during:.0f}, after {s3 - s2}")
PY

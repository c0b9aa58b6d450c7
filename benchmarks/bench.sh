#!/usr/bin/env bash
# Benchmarks behind docs/PERFORMANCE.md. Usage: benchmarks/bench.sh [BUILD_DIR] (or make bench)
# Prints medians; hyperfine runs each set of commands in one invocation so ratios are read
# within a run on this noisy shared machine.
set -euo pipefail
build=${1:-build}
gpubind=$build/src/gpubind
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

medians() {  # medians FILE.json: "median_ms  command" per command, and the ratio to the first
  /usr/bin/python3 - "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
base = r[0]["median"]
for x in r:
    print(f"  {x['median']*1000:7.2f} ms  {x['median']/base:5.2f}x  {x['command']}")
PY
}

echo "== in-process: topology loads and planning (Google Benchmark, medians of 5)"
"$build/benchmarks/gpubind_bench" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  --benchmark_min_time=0.5 2>/dev/null | grep -E "median"

echo
echo "== whole process: gpubind topo vs lstopo (hyperfine -N, 200 runs)"
hyperfine -N --style none --warmup 20 --runs 200 --export-json "$tmp/topo.json" \
  "lstopo-no-graphics --of xml" "$gpubind topo --format json" \
  "$gpubind plan --topology example:dgx-h100 --format json" >/dev/null 2>&1
medians "$tmp/topo.json"

echo
echo "== bind + exec: gpubind exec vs numactl and hwloc-bind (hyperfine -N, 300 runs, LOCAL_RANK=0)"
export LOCAL_RANK=0
"$gpubind" exec -- true  # fills the topology cache
hyperfine -N --style none --warmup 30 --runs 300 --export-json "$tmp/exec.json" \
  "numactl --physcpubind=0 --membind=0 true" "$gpubind exec -- true" "$gpubind exec --no-cache -- true" \
  "hwloc-bind core:0 -- true" "true" >/dev/null 2>&1
medians "$tmp/exec.json"

echo
echo "== bind + exec, interleaved round by round (benchmarks/interleave.cpp, 300 rounds, LOCAL_RANK=0)"
"$build/benchmarks/gpubind_interleave" 300 "numactl --physcpubind=0 --membind=0 true" "$gpubind exec -- true" \
  "$gpubind exec --no-cache -- true" "true"

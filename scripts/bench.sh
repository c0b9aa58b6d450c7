#!/usr/bin/env bash
# Benchmarks behind docs/PERFORMANCE.md. Usage: scripts/bench.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
gpubind=$build/src/gpubind
echo "== in-process topology loads (Google Benchmark, median of 5 repetitions)"
"$build/bench/gpubind_bench" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  --benchmark_min_time=0.5 2>/dev/null | grep -E "median|Benchmark|---"
echo
echo "== whole-process: gpubind topo vs lstopo (hyperfine, same run)"
hyperfine -N --warmup 20 --runs 200 --style basic \
  "$gpubind topo --format json" \
  "lstopo-no-graphics --of xml" \
  "$gpubind topo --topology example:dgx-h100 --format json"

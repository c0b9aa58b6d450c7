#!/usr/bin/python3
"""Cost of plan, compare and the SVG drawings as the node grows (issue 34 item 4): the Scale
benchmarks of benchmarks/plan_bench.cpp (synthetic nodes of 1024 to 16384 PUs, SMT siblings numbered
half the machine apart, 2 GPUs per NUMA node up to 128), each run three times in one sitting.
Prints each run's median times at 4096 and 16384 PUs and the growth exponent between them
(time ~ PUs^k: k = log(t16384 / t4096) / log 4).

Usage: benchmarks/scale.py [BUILD_DIR]   (from the repository root)
"""
import json
import math
import subprocess
import sys

build = sys.argv[1] if len(sys.argv) > 1 else "build"
for run in range(3):
    out = subprocess.run([f"{build}/bench/gpubind_bench", "--benchmark_filter=Scale.*/(4096|16384)$",
                          "--benchmark_repetitions=3", "--benchmark_report_aggregates_only=true",
                          "--benchmark_min_time=0.2", "--benchmark_format=json"],
                         check=True, capture_output=True, text=True).stdout
    ms = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("aggregate_name") == "median":
            name, pus = b["run_name"].split("/")
            ms[(name.removeprefix("BM_Scale_"), int(pus))] = b["real_time"]  # milliseconds
    cells = []
    for what in ("Plan", "Compare", "PlanSvg", "CompareSvg"):
        a, b = ms[(what, 4096)], ms[(what, 16384)]
        cells.append(f"{what} {a:.1f} -> {b:.1f} ms (PUs^{math.log(b / a) / math.log(4):.2f})")
    print(f"run {run + 1}: " + "; ".join(cells))

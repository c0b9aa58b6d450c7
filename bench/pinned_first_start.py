#!/usr/bin/python3
"""The first start of a rank a launcher pinned elsewhere (issue 34 item 1): rank 0 starts pinned to
CPU 0 and writes the topology cache; rank 1, pinned to CPU 1, starts for the first time and reads
it. Its start is set against a start that discovers the machine (GPUBIND_CACHE_DIR=off), which
is what rank 1 paid while the cache key held the caller's affinity. Each of the three runs is 30
fresh cache directories; the figures are medians of wall time.

Usage: bench/pinned_first_start.py [BUILD_DIR]   (from the repository root; needs two CPUs)
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

gpubind = os.path.join(sys.argv[1] if len(sys.argv) > 1 else "build", "src", "gpubind")


def start(env, cpu):
    t = time.perf_counter()
    subprocess.run(["taskset", "-c", cpu, gpubind, "exec", "-q", "--", "true"], env=env, check=True)
    return time.perf_counter() - t


for run in range(3):
    hit, miss = [], []
    for _ in range(30):
        env = dict(os.environ, GPUBIND_CACHE_DIR=tempfile.mkdtemp(), LOCAL_RANK="0", LOCAL_WORLD_SIZE="2")
        start(env, "0")
        env["LOCAL_RANK"] = "1"
        hit.append(start(env, "1"))
        miss.append(start(dict(env, GPUBIND_CACHE_DIR="off"), "1"))
    h, m = statistics.median(hit), statistics.median(miss)
    print(f"run {run + 1}: rank 1's first start on CPU 1 {h * 1000:.1f} ms (cache hit), "
          f"discovering {m * 1000:.1f} ms: {m / h:.2f}x")

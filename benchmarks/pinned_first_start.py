#!/usr/bin/python3
"""The first start of a rank a launcher pinned elsewhere, or of a job in a cgroup of its own
(issue 34 item 1). Pinned: rank 0 starts pinned to CPU 0 and writes the topology cache; rank 1,
pinned to CPU 1, starts for the first time and reads it. Cgroups (--cgroups, root and a writable
cpuset hierarchy): job A's rank starts in a cpuset cgroup of CPU 0 and writes the cache; job B's,
in a cgroup of CPU 1, starts for the first time and reads it. The second start is set against a
start that discovers the machine (GPUBIND_CACHE_DIR=off), which is what it paid while the cache
key held the caller's affinity (pinned) or its cgroup (cgroups). Each of the three runs is 30
fresh cache directories; the figures are medians of wall time.

Usage: benchmarks/pinned_first_start.py [--cgroups] [BUILD_DIR]   (from the repository root; two CPUs)
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

args = [a for a in sys.argv[1:] if a != "--cgroups"]
cgroups = "--cgroups" in sys.argv
gpubind = os.path.join(args[0] if args else "build", "src", "gpubind")


def cpuset_parent():
    if os.access("/sys/fs/cgroup/cpuset/cgroup.procs", os.W_OK):
        return "/sys/fs/cgroup/cpuset", "cpuset.mems"
    try:
        if "cpuset" in open("/sys/fs/cgroup/cgroup.subtree_control").read().split():
            return "/sys/fs/cgroup", None
    except OSError:
        pass
    sys.exit("--cgroups needs root and a writable cpuset hierarchy (v1, or v2 with cpuset delegated)")


def make_cgroup(cpu):
    parent, mems = cpuset_parent()
    path = os.path.join(parent, f"gpubind-bench-{os.getpid()}-{cpu}")
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "cpuset.cpus"), "w") as f:
        f.write(cpu)
    if mems:
        with open(os.path.join(parent, mems)) as src, open(os.path.join(path, mems), "w") as f:
            f.write(src.read())
    return path


def start(env, cpu, cgroup_of):
    if cgroups:
        cmd = ["sh", "-c", 'echo $$ >"$1/cgroup.procs" && exec "$2" exec -q -- true', "sh", cgroup_of[cpu], gpubind]
    else:
        cmd = ["taskset", "-c", cpu, gpubind, "exec", "-q", "--", "true"]
    t = time.perf_counter()
    subprocess.run(cmd, env=env, check=True)
    return time.perf_counter() - t


cgroup_of = {cpu: make_cgroup(cpu) for cpu in ("0", "1")} if cgroups else {}
what = "job B's first start in the cgroup of CPU 1" if cgroups else "rank 1's first start on CPU 1"
try:
    for run in range(3):
        hit, miss = [], []
        for _ in range(30):
            env = dict(os.environ, GPUBIND_CACHE_DIR=tempfile.mkdtemp(), LOCAL_RANK="0", LOCAL_WORLD_SIZE="2")
            start(env, "0", cgroup_of)
            env["LOCAL_RANK"] = "1"
            hit.append(start(env, "1", cgroup_of))
            miss.append(start(dict(env, GPUBIND_CACHE_DIR="off"), "1", cgroup_of))
        h, m = statistics.median(hit), statistics.median(miss)
        print(f"run {run + 1}: {what} {h * 1000:.1f} ms (cache hit), discovering {m * 1000:.1f} ms: {m / h:.2f}x")
finally:
    for path in cgroup_of.values():
        os.rmdir(path)

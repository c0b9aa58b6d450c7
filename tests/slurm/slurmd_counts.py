#!/usr/bin/python3
"""Compares what a release's own slurmd counts on a machine with what gpubind's gres-conf wrote.

  slurmd_counts.py GRES_FILE TOPOLOGY_JSON SLURMD_C_OUTPUT

SLURMD_C_OUTPUT is `slurmd -C [--parameters=P] -vvvvvv` run on the machine's hwloc XML
(HWLOC_XMLFILE): its first NodeName= line gives the sockets, cores and threads slurmd counts,
its debug4 "CPU map[ABSTRACT]=>OS" lines the CPUs of each of Slurm's abstract CPU ids (core k is
ids k*T .. k*T+T-1). Checked: the node line of GRES_FILE has the same counts, and each GPU line
whose Cores= are the GPU's own (no "its own cores" comment above it) names, through slurmd's map,
exactly the GPU's CPUs in TOPOLOGY_JSON (gpubind topo --json; GPU lines are in its GPUs' order),
those slurmd maps at all.
Prints one ok/FAIL line per check; exits 1 on a FAIL.
"""
import json
import re
import sys


def cpulist(text):
    out = set()
    for part in filter(None, text.split(",")):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def counts(line):
    return {k: re.search(k + r"=(\d+)", line).group(1) for k in ("SocketsPerBoard", "CoresPerSocket", "ThreadsPerCore")}


gres_file, topo_file, slurmd_file = sys.argv[1:4]
gres = open(gres_file).read().splitlines()
topo = json.load(open(topo_file))
slurmd = open(slurmd_file).read().splitlines()
failed = False


def report(ok, what):
    global failed
    print(("ok: " if ok else "FAIL: ") + what)
    failed |= not ok


ours = next((l for l in gres if l.startswith("# slurm.conf: NodeName=") and "SocketsPerBoard=" in l), None)
theirs = next((l for l in slurmd if l.startswith("NodeName=")), None)
if not ours or not theirs:
    report(False, "no node line to compare (gres-conf: %r, slurmd -C: %r)" % (ours, theirs))
    sys.exit(1)
report(counts(ours) == counts(theirs), "slurmd -C counts %s, gres-conf wrote %s" % (counts(theirs), counts(ours)))
threads = int(counts(theirs)["ThreadsPerCore"])
# slurmd maps only OS CPUs below its CPU count (xcpuinfo.c skips "macid >= actual_cpus"): on a node
# numbered past it (Lassen: 160 CPUs numbered up to 175; captures trimmed of CPUs) those CPUs are in
# no map entry, whatever their core's number, and are said rather than compared.
total = int(re.search(r"CPUs=(\d+)", theirs).group(1))
cpu_of = {}
for l in slurmd:
    m = re.search(r"CPU map\[(\d+)\]=>(\d+)", l)
    if m:
        cpu_of[int(m.group(1))] = int(m.group(2))
if not cpu_of:
    report(False, "slurmd -C printed no CPU map (debug4)")
    sys.exit(1)
gpu = -1
widened = False
checked = 0
for l in gres:
    if l.startswith("#   its own cores"):
        widened = True
    if not re.match(r"(NodeName=\S+ )?Name=gpu ", l):
        continue
    gpu += 1
    m = re.search(r" Cores=(\S+)", l)
    if m and not widened:
        cores = cpulist(m.group(1))
        named = {cpu_of[c * threads + t] for c in cores for t in range(threads) if c * threads + t in cpu_of}
        own = cpulist(topo["gpus"][gpu].get("cpus") or "")
        beyond = {c for c in own if c >= total}
        report(named == own - beyond, "GPU %d: Cores=%s are, by slurmd's own map, CPUs %s; the GPU's are %s%s" %
               (gpu, m.group(1), ",".join(map(str, sorted(named))) if len(named) < 12 else "%d CPUs" % len(named),
                topo["gpus"][gpu].get("cpus"),
                " (%d of them numbered past slurmd's %d CPUs: in no map entry)" % (len(beyond), total) if beyond else ""))
        checked += 1
    widened = False
print("%d GPU core list(s) checked against slurmd's map" % checked)
sys.exit(1 if failed else 0)

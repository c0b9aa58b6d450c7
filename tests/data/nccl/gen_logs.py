#!/usr/bin/env python3
"""Writes the NCCL/RCCL INFO logs `check --nccl-log` is tested on (tests/data/nccl/*.log).

Each log is one node (or two) of a 16-rank job on DGX H100s (data/examples/dgx-h100.json), its
lines made with the format strings NCCL itself prints with, per version, read in NVIDIA/nccl at
the tags named below (src/debug.cc, src/init.cc, src/graph/topo.cc, src/graph/paths.cc,
src/transport/net.cc, src/transport/net_ib.cc, src/proxy.cc) and in ROCm/rccl (rocm-6.2). The
scenarios differ only in how the ranks were bound and which NIC they used, so a golden output
that changes says which rule changed.

Usage: gen_logs.py OUTDIR   (tests/data/nccl is where they are kept; the test nccl_fixtures checks
that they are what this script writes)
"""
import os
import sys

# The plan for one rank per GPU on dgx-h100 (gpubind plan --topology example:dgx-h100).
PLANNED = ["0-13,112-125", "14-27,126-139", "28-41,140-153", "42-55,154-167",
           "56-69,168-181", "70-83,182-195", "84-97,196-209", "98-111,210-223"]
GPU_NODE = ["0-55,112-167"] * 4 + ["56-111,168-223"] * 4
BUS = [0x18000, 0x2a000, 0x3a000, 0x5d000, 0x9a000, 0xab000, 0xba000, 0xdb000]
NICS = [f"mlx5_{i}" for i in range(9)]  # mlx5_8: the node's Ethernet NIC


def cpus(text):
    out = set()
    for part in text.split(","):
        if not part:
            continue
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out


def range_str(s):
    """ncclCpusetToRangeStr (2.28+), as it walks the set: every CPU up to one past the last, a run
    closed at the first CPU not in it, "a-b" for a run of two or more, "a" alone."""
    parts, start = [], None
    for cpu in range(max(s, default=-1) + 2):
        if cpu in s and start is None:
            start = cpu
        elif cpu not in s and start is not None:
            parts.append(str(start) if cpu - 1 == start else f"{start}-{cpu - 1}")
            start = None
    return ",".join(parts)


def hex_str(s):
    """ncclCpusetToStr (through 2.27, RCCL): bytes high to low, leading zero bytes left out, a
    comma every four bytes, of a 1024-bit cpu_set_t."""
    mask = sum(1 << c for c in s)
    out, started = "", False
    for o in range(127, -1, -1):
        byte = (mask >> (8 * o)) & 0xFF
        if not started and byte == 0:
            continue
        started = True
        out += f"{byte:02x}"
        if o and o % 4 == 0:
            out += ","
    return out


# Per version: what its lines look like. init: the Init line (START where it has one);
# localranks: whether it prints "comm ... localRanks"; affinity: "hex" (Setting affinity) or
# "range" (ncclTopoGetCpuAffinity); channel_dev: the peer field of Channel lines ("bus" or "nvml").
VERSIONS = {
    # v2.18.6-1: only Init COMPLETE; channels print busIds.
    "2.18": dict(version="NCCL version 2.18.6+cuda12.2", init="comm {ptr} rank {rank} nranks {nranks} cudaDev {dev} busId {bus:x} commId 0x{cid:x} - Init COMPLETE",
                 localranks=False, affinity="hex", channel_dev="bus", proxy=False),
    # v2.22.3-1: ncclCommInitRank's START, localRanks line, nvmlDev in Channel lines.
    "2.22": dict(version="NCCL version 2.22.3+cuda12.6", init="ncclCommInitRank comm {ptr} rank {rank} nranks {nranks} cudaDev {dev} nvmlDev {dev} busId {bus:x} commId 0x{cid:x} - Init START",
                 localranks=True, affinity="hex", channel_dev="nvml", proxy=False),
    # v2.26.2-1: the calling function's name first.
    "2.26": dict(version="NCCL version 2.26.2+cuda12.8", init="ncclCommInitRankConfig comm {ptr} rank {rank} nranks {nranks} cudaDev {dev} nvmlDev {dev} busId {bus:x} commId 0x{cid:x} - Init START",
                 localranks=True, affinity="hex", channel_dev="nvml", proxy=False),
    # v2.28.3-1: ncclTopoGetCpuAffinity's line, the proxy thread's core.
    "2.28": dict(version="NCCL version 2.28.3+cuda12.9", init="ncclCommInitRankConfig comm {ptr} rank {rank} nranks {nranks} cudaDev {dev} nvmlDev {dev} busId {bus:x} commId 0x{cid:x} - Init START",
                 localranks=True, affinity="range", channel_dev="nvml", proxy=True),
    # v2.30.7-1: "[Rank R]" first; NCCL_DEBUG_TIMESTAMP_LEVELS=INFO's "[%F %T] " before the host.
    "2.30": dict(version="NCCL version 2.30.7+cuda13.0", init="[Rank {rank}] ncclCommInitRankConfig comm {ptr} rank {rank} nranks {nranks} cudaDev {dev} nvmlDev {dev} busId {bus:x} commId 0x{cid:x} - Init START",
                 localranks=True, affinity="range", channel_dev="nvml", proxy=True, timestamp="[2026-11-02 10:41:07] "),
    # ROCm/rccl rocm-6.2: "RCCL version : ", NCCL 2.20's lines otherwise.
    "rccl": dict(version="RCCL version : 2.20.5-HEAD:0cbce2a", init="ncclCommInitRank comm {ptr} rank {rank} nranks {nranks} cudaDev {dev} nvmlDev {dev} busId {bus:x} commId 0x{cid:x} - Init START",
                 localranks=True, affinity="hex", channel_dev="nvml", proxy=False),
}


def rank_lines(v, host, node, local, scenario):
    """One rank's lines, as (tid, message) pairs."""
    rank = node * 8 + local
    pid, tid, init_tid = 41000 + 100 * node + local, 41000 + 100 * node + local, 41500 + 100 * node + local
    ptr = f"0x55d{rank:03x}a0e2c0"
    bus = BUS[local]
    mask = cpus(scenario.get("mask", lambda n, l: PLANNED[l])(node, local))
    gpu = set() if scenario.get("vm") else cpus(GPU_NODE[local])
    nic = scenario.get("nic", lambda n, l: l)(node, local)
    gdr = "" if scenario.get("no_gdr") else "/GDRDMA"
    ignore = scenario.get("ignore", False)
    out = [(tid, v["version"]), (tid, f"Bootstrap : Using eth0:10.0.{node}.{local + 10}<0>"),
           (tid, "NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.")]
    if ignore:
        out.append((tid, "NCCL_IGNORE_CPU_AFFINITY set by environment to 1."))
    ib = " ".join(f"[{i}]{n}:1/{'RoCE' if i == 8 else 'IB'}" for i, n in enumerate(NICS))
    out += [(tid, f"NET/IB : Using {ib} [RO]; OOB eth0:10.0.{node}.{local + 10}<0>"), (tid, "Using network IB")]
    init = v["init"].format(ptr=ptr, rank=rank, nranks=16, dev=local, bus=bus, cid=0x6c41d2b9e0f3a857)
    if "Init START" in init:
        out.append((init_tid, init))
    if v["localranks"]:
        out.append((init_tid, f"comm {ptr} rank {rank} nRanks 16 nNodes 2 localRanks 8 localRank {local} MNNVL 0"))
    final = gpu if ignore else mask & gpu
    if v["affinity"] == "hex":
        if final:
            out.append((init_tid, f"Setting affinity for GPU {local} to {hex_str(final)}"))
    else:
        msg = f"Affinity for GPU {local} is {range_str(final) if final else 'empty, ignoring'}. (GPU affinity = {range_str(gpu)}"
        if not ignore:
            msg += f" ; CPU affinity = {range_str(mask)}"
        out.append((init_tid, f"ncclTopoGetCpuAffinity: {msg})."))
    for n in range(9):
        out.append((init_tid, f"NET/IB : GPU Direct RDMA {'Disabled' if scenario.get('no_gdr') and n < 8 else 'Enabled'} for HCA {n} '{NICS[n]}'"))
    peer = (rank + 8) % 16

    def dev(r):
        return f"{BUS[r % 8]:x}" if v["channel_dev"] == "bus" else str(r % 8)

    for ch in (0, 8):
        out.append((init_tid, f"Channel {ch:02d}/0 : {rank}[{dev(rank)}] -> {peer}[{dev(peer)}] [send] via NET/IB/{nic}{gdr}"))
        out.append((init_tid, f"Channel {ch:02d}/0 : {peer}[{dev(peer)}] -> {rank}[{dev(rank)}] [receive] via NET/IB/{nic}{gdr}"))
    # A PXN connection through the next GPU's NIC, and NVLink within the node: neither is this GPU's NIC.
    out.append((init_tid, f"Channel 01/0 : {rank}[{dev(rank)}] -> {peer}[{dev(peer)}] [send] via NET/IB/{(local + 1) % 8}({node * 8 + (local + 1) % 8}){gdr}"))
    out.append((init_tid, f"Channel 01/0 : {rank}[{dev(rank)}] -> {node * 8 + (local + 1) % 8}[{dev(node * 8 + (local + 1) % 8)}] via P2P/CUMEM/read"))
    if v["proxy"]:
        core = min(final) if final else min(mask)
        out.append((tid + 7, f"[Proxy Progress] Device {local} CPU core {core}"))
    if "Init COMPLETE" in init:
        out.append((init_tid, init))
    else:
        out.append((init_tid, init.replace("Init START", "Init COMPLETE")))
    return pid, out


def write(path, v, host_of, scenario, tag=None):
    lines = []
    for node, host in host_of.items():
        for local in range(8):
            pid, msgs = rank_lines(v, host, node, local, scenario)
            for tid, m in msgs:
                prefix = (tag(host) if tag else "") + v.get("timestamp", "")
                if m.startswith("NCCL version") and v is VERSIONS["2.18"]:
                    lines.append((local, m))  # printf'd to stdout, no prefix, when NCCL_DEBUG_FILE is unset
                    continue
                lines.append((local, f"{prefix}{host}:{pid}:{tid} [{local}] NCCL INFO {m}"))
    # Ranks write in turns, as one stream of every rank's output interleaves them.
    order = sorted(range(len(lines)), key=lambda i: (sum(1 for j in range(i) if lines[j][0] == lines[i][0]), lines[i][0]))
    with open(path, "w") as f:
        for i in order:
            f.write(lines[i][1] + "\n")


SCENARIOS = {
    # Every rank bound as gpubind plans it, on its own GPU's NIC.
    "good": {},
    # Nothing bound the ranks: every rank had the whole machine.
    "unbound": {"mask": lambda n, l: "0-223"},
    # A launcher bound each rank to the other socket's block.
    "off-node": {"mask": lambda n, l: PLANNED[(l + 4) % 8]},
    # NCCL_IGNORE_CPU_AFFINITY=1: NCCL pins its threads to the GPU's whole node.
    "ignore": {"ignore": True},
    # NCCL does not know the GPUs' CPUs (a VM without numa_node).
    "vm": {"vm": True},
    # Rank 0's traffic through the other socket's NIC (NCCL_IB_HCA named it first).
    "remote-nic": {"nic": lambda n, l: 4 if l == 0 else l},
    # No GPU Direct RDMA (nvidia-peermem not loaded).
    "no-gdr": {"no_gdr": True},
}

FILES = [
    ("good", "2.18"), ("good", "2.22"), ("good", "2.26"), ("good", "2.28"), ("good", "2.30"), ("good", "rccl"),
    ("unbound", "2.22"), ("unbound", "2.30"), ("off-node", "2.18"), ("off-node", "2.28"), ("ignore", "2.30"),
    ("vm", "2.28"), ("remote-nic", "2.26"), ("no-gdr", "2.22"),
]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    os.makedirs(out, exist_ok=True)
    for scenario, version in FILES:
        write(os.path.join(out, f"{scenario}-{version}.log"), VERSIONS[version], {0: "node01"}, SCENARIOS[scenario])
    # Two nodes in one stream through pdsh ("node02: " before each line), node02's rank 3 unbound.
    two = {"mask": lambda n, l: "0-223" if (n, l) == (1, 3) else PLANNED[l]}
    write(os.path.join(out, "two-nodes-2.30.log"), VERSIONS["2.30"], {0: "node01", 1: "node02"}, two, tag=lambda h: h + ": ")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes tests/data/svg/64gpu.json: the largest node the drawing must keep legible. 8 packages,
one NUMA node and one L3 each, 32 cores x 2 PUs per package (512 PUs, siblings n and n+256), 8 GPUs
per node behind two PCIe switches of 4 (64 GPUs), a NIC per switch (16), and NVLink among each
node's 8 GPUs. Not a real machine: a shape at the drawing's limits, written from nothing but these
numbers. Run from the repository root."""
import json

PKGS, CORES, GPUS_PER_NODE = 8, 32, 8
half = PKGS * CORES


def cpus(pkg):
    a = pkg * CORES
    return f"{a}-{a + CORES - 1},{half + a}-{half + a + CORES - 1}"


t = {"schema_version": 1, "origin": "tests/data/svg/64gpu.json", "hostname": "gpu64", "cpus": f"0-{2 * half - 1}",
     "allowed_cpus": f"0-{2 * half - 1}", "packages": [], "numa_nodes": [], "distances": [], "l3_domains": [], "cores": [],
     "gpus": [], "nics": [], "links": [], "warnings": []}
for p in range(PKGS):
    t["packages"].append({"os_index": p, "cpus": cpus(p)})
    t["numa_nodes"].append({"os_index": p, "cpus": cpus(p), "memory_bytes": 512 << 30, "package": p, "subtype": ""})
    t["distances"] += [10 if q == p else 32 for q in range(PKGS)]
    t["l3_domains"].append({"cpus": cpus(p), "size_bytes": 256 << 20})
for c in range(half):
    t["cores"].append(f"{c},{half + c}")
for p in range(PKGS):
    node_gpus = []
    for s in range(2):
        bus = 0x10 + p * 0x20 + s * 0x10
        switch = f"0000:{bus:02x}:00.0"
        for g in range(4):
            i = p * GPUS_PER_NODE + s * 4 + g
            pci = f"0000:{bus + 1 + g:02x}:00.0"
            node_gpus.append(pci)
            t["gpus"].append({"index": i, "vendor": "nvidia", "name": "NVIDIA H100 80GB HBM3", "uuid": "", "pci": pci,
                              "vendor_id": "0x10de", "device_id": "0x2330", "class_id": "0x0302", "os_names": [f"cuda{i}"],
                              "numa": [p], "cpus": cpus(p), "pcie_path": [f"hb:0000:{bus:02x}", switch], "memory_numa": []})
        n = p * 2 + s
        t["nics"].append({"name": f"mlx5_{n}", "model": "MT2910 Family [ConnectX-7]", "pci": f"0000:{bus + 5:02x}:00.0",
                          "vendor_id": "0x15b3", "device_id": "0x1021", "class_id": "0x0207", "os_names": [f"ibp{n}s0", f"mlx5_{n}"],
                          "numa": [p], "cpus": cpus(p), "pcie_path": [f"hb:0000:{bus:02x}", switch]})
    for a in range(len(node_gpus)):
        for b in range(a + 1, len(node_gpus)):
            t["links"].append({"a": node_gpus[a], "b": node_gpus[b], "kind": "nvlink", "count": 18})
t["distances"] = [t["distances"][i * PKGS:(i + 1) * PKGS] for i in range(PKGS)]
json.dump(t, open("tests/data/svg/64gpu.json", "w"), indent=1)

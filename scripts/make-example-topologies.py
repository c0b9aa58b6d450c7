#!/usr/bin/env python3
"""Writes gpubind JSON topologies of well-known machine layouts into data/examples/.

Each machine is described here from public facts (vendor documentation, published lstopo and
nvidia-smi outputs) rather than copied from a capture: core counts, PU numbering, NUMA layout,
which NUMA node each GPU and NIC hangs off, PCIe switch sharing and NVLink/xGMI counts.
Bus ids are representative, not those of any one serial number. Run it again after editing;
the JSON files are committed so the build needs no Python.
"""
import json
import os

GiB = 1024 ** 3


def cpulist(ids):
    ids = sorted(set(ids))
    out, i = [], 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        out.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return ",".join(out)


class Machine:
    def __init__(self, name, hostname):
        self.name, self.hostname = name, hostname
        self.packages, self.numa, self.l3, self.cores = [], [], [], []
        self.gpus, self.nics, self.links, self.distances = [], [], [], []
        self.disallowed = set()

    def core(self, pus):
        self.cores.append(sorted(pus))

    def all_pus(self):
        return sorted(p for c in self.cores for p in c)

    def gpu(self, pci, vendor, vendor_id, device_id, class_id, name, numa, cpus, path, os_names=(), uuid="", memory_numa=()):
        self.gpus.append(dict(pci=pci, vendor=vendor, vendor_id=vendor_id, device_id=device_id, class_id=class_id,
                              name=name, numa=numa, cpus=cpus, pcie_path=path, os_names=list(os_names), uuid=uuid,
                              memory_numa=list(memory_numa)))

    def nic(self, pci, os_names, model, vendor_id, device_id, class_id, numa, cpus, path):
        self.nics.append(dict(pci=pci, os_names=sorted(os_names), model=model, vendor_id=vendor_id,
                              device_id=device_id, class_id=class_id, numa=numa, cpus=cpus, pcie_path=path))

    def to_json(self):
        allp = self.all_pus()
        gpus = sorted(self.gpus, key=lambda g: (g["vendor"], g["pci"]))
        per_vendor = {}
        out_gpus = []
        for g in gpus:
            idx = per_vendor.get(g["vendor"], 0)
            per_vendor[g["vendor"]] = idx + 1
            out_gpus.append({
                "index": idx, "vendor": g["vendor"], "name": g["name"], "uuid": g["uuid"], "pci": g["pci"],
                "vendor_id": g["vendor_id"], "device_id": g["device_id"], "class_id": g["class_id"],
                "os_names": g["os_names"], "numa": g["numa"],
                "cpus": None if g["cpus"] is None else cpulist(g["cpus"]),
                "pcie_path": g["pcie_path"], "memory_numa": g["memory_numa"]})
        nics = []
        for n in sorted(self.nics, key=lambda n: n["pci"]):
            nics.append({
                "name": ",".join(n["os_names"]) if n["os_names"] else None, "model": n["model"], "pci": n["pci"],
                "vendor_id": n["vendor_id"], "device_id": n["device_id"], "class_id": n["class_id"],
                "os_names": n["os_names"], "numa": n["numa"],
                "cpus": None if n["cpus"] is None else cpulist(n["cpus"]), "pcie_path": n["pcie_path"]})
        warnings = []
        for g in out_gpus:
            if g["numa"] is None:
                warnings.append(f"GPU {g['index']} ({g['pci']}) locality unknown: the source does not say which NUMA node it is attached to")
        for n in nics:
            if n["numa"] is None:
                warnings.append(f"NIC {n['os_names'][0] if n['os_names'] else n['pci']} locality unknown: the source does not say which NUMA node it is attached to")
        return {
            "schema_version": 1,
            "origin": f"example:{self.name}",
            "hostname": self.hostname,
            "cpus": cpulist(allp),
            "allowed_cpus": cpulist(set(allp) - self.disallowed),
            "packages": [{"os_index": i, "cpus": cpulist(p)} for i, p in enumerate(self.packages)],
            "numa_nodes": [{"os_index": n["os_index"], "cpus": cpulist(n["cpus"]), "memory_bytes": n["memory"],
                            "package": n["package"], "subtype": n.get("subtype", "")} for n in self.numa],
            "distances": self.distances,
            "l3_domains": [{"cpus": cpulist(c), "size_bytes": s} for c, s in self.l3],
            "cores": [cpulist(c) for c in sorted(self.cores)],
            "gpus": out_gpus,
            "nics": nics,
            "links": sorted(self.links, key=lambda l: (l["a"], l["b"])),
            "warnings": warnings,
        }


def two_sockets(m, cores, memory, l3_bytes, remote_distance):
    """Two packages of `cores` cores, one NUMA node and one L3 each; PU n and n + 2*cores are siblings."""
    total = 2 * cores
    for s in range(2):
        pus = [c for k in range(cores) for c in (s * cores + k, s * cores + k + total)]
        m.packages.append(pus)
        m.numa.append({"os_index": s, "cpus": pus, "memory": memory, "package": s})
        m.l3.append((pus, l3_bytes))
        for k in range(cores):
            m.core([s * cores + k, s * cores + k + total])
    m.distances = [[10, remote_distance], [remote_distance, 10]]


def nvswitch_links(m, count):
    pcis = sorted(g["pci"] for g in m.gpus)
    for i, a in enumerate(pcis):
        for b in pcis[i + 1:]:
            m.links.append({"a": a, "b": b, "kind": "nvlink", "count": count})


def dgx_h100():
    # 2x Xeon Platinum 8480C (56 cores, 2 threads), PU n and n+112 are siblings; 2 NUMA nodes.
    # 8 H100 SXM5, each behind its own PCIe switch shared with one ConnectX-7 (PIX); all GPUs
    # on the NVSwitch fabric with 18 links each (NV18).
    m = Machine("dgx-h100", "dgx-h100")
    two_sockets(m, 56, 1024 * GiB, 105 * 1024 * 1024, 21)
    gpus = [("0000:18:00.0", "0000:1a:00.0", "0000:15:00.0", 0), ("0000:2a:00.0", "0000:29:00.0", "0000:26:00.0", 0),
            ("0000:3a:00.0", "0000:3c:00.0", "0000:37:00.0", 0), ("0000:5d:00.0", "0000:5e:00.0", "0000:5a:00.0", 0),
            ("0000:9a:00.0", "0000:9c:00.0", "0000:97:00.0", 1), ("0000:ab:00.0", "0000:aa:00.0", "0000:a7:00.0", 1),
            ("0000:ba:00.0", "0000:bc:00.0", "0000:b7:00.0", 1), ("0000:db:00.0", "0000:dc:00.0", "0000:d8:00.0", 1)]
    for i, (gpu, nic, sw, node) in enumerate(gpus):
        hb = "hb:0000:" + sw[5:7]
        path = [hb, sw]
        m.gpu(gpu, "nvidia", "0x10de", "0x2330", "0x0302", "NVIDIA H100 80GB HBM3", [node], m.packages[node], path,
              [f"cuda{i}", f"nvml{i}"])
        m.nic(nic, [f"ibp{int(nic[5:7], 16)}s0", f"mlx5_{i}"], "MT2910 Family [ConnectX-7]", "0x15b3", "0x1021", "0x0207",
              [node], m.packages[node], path)
    # Storage/management NICs on socket 0 under their own root port.
    m.nic("0000:0b:00.0", ["enp11s0f0np0", "mlx5_8"], "MT2892 Family [ConnectX-6 Dx]", "0x15b3", "0x101d", "0x0200",
          [0], m.packages[0], ["hb:0000:09", "0000:09:01.0"])
    nvswitch_links(m, 18)
    return m


def dgx_a100_nps4():
    # 2x EPYC 7742 (64 cores, 2 threads, siblings n and n+128) in NPS4: 8 NUMA nodes of 16 cores;
    # Rome CCX = 4 cores sharing 16 MiB L3. GPUs sit in pairs on NUMA nodes 3, 1, 7 and 5, each
    # pair behind one PCIe switch with two ConnectX-6 HCAs; NVSwitch fabric with 12 links.
    m = Machine("dgx-a100-nps4", "dgx-a100")
    for s in range(2):
        m.packages.append([c for k in range(64) for c in (s * 64 + k, s * 64 + k + 128)])
    for n in range(8):
        cores = range(n * 16, n * 16 + 16)
        pus = [c for k in cores for c in (k, k + 128)]
        m.numa.append({"os_index": n, "cpus": pus, "memory": 128 * GiB, "package": n // 4})
        for ccx in range(4):
            cc = range(n * 16 + ccx * 4, n * 16 + ccx * 4 + 4)
            m.l3.append(([c for k in cc for c in (k, k + 128)], 16 * 1024 * 1024))
        for k in cores:
            m.core([k, k + 128])
    m.distances = [[10 if a == b else (12 if a // 4 == b // 4 else 32) for b in range(8)] for a in range(8)]
    layout = [(3, "0000:07:00.0", "0000:0f:00.0", "0000:0c:00.0", "0000:0d:00.0", "0000:02:00.0"),
              (1, "0000:47:00.0", "0000:4e:00.0", "0000:4b:00.0", "0000:54:00.0", "0000:42:00.0"),
              (7, "0000:87:00.0", "0000:90:00.0", "0000:8b:00.0", "0000:94:00.0", "0000:82:00.0"),
              (5, "0000:b7:00.0", "0000:bd:00.0", "0000:ba:00.0", "0000:c0:00.0", "0000:b2:00.0")]
    i = 0
    for node, g0, g1, n0, n1, sw in layout:
        cpus = m.numa[node]["cpus"]
        hb = "hb:0000:" + sw[5:7]
        for gpu, nic, leaf in ((g0, n0, "1"), (g1, n1, "2")):
            path = [hb, sw, sw[:8] + f"0{leaf}.0"]
            m.gpu(gpu, "nvidia", "0x10de", "0x20b0", "0x0302", "NVIDIA A100-SXM4-40GB", [node], cpus, path,
                  [f"cuda{i}", f"nvml{i}"])
            m.nic(nic, [f"ib{i}", f"mlx5_{i}"], "MT28908 Family [ConnectX-6]", "0x15b3", "0x101b", "0x0207", [node], cpus,
                  path)
            i += 1
    nvswitch_links(m, 12)
    return m


def frontier_like():
    # 1x EPYC 7A53 (64 cores, 2 threads, siblings n and n+64), NPS4: 4 NUMA nodes of 16 cores, 8
    # L3 domains (CCDs) of 8 cores. Low-noise mode reserves the first core of each L3 for the
    # system (not allowed). 4 MI250X = 8 GCDs, each attached to one L3 domain in the published
    # non-linear order; Slingshot NICs hsn0-3, one per NUMA node; GCDs fully linked by xGMI.
    m = Machine("frontier-like", "frontier-node")
    pus = list(range(128))
    m.packages.append(pus)
    for n in range(4):
        cores = range(n * 16, n * 16 + 16)
        m.numa.append({"os_index": n, "cpus": [c for k in cores for c in (k, k + 64)], "memory": 128 * GiB,
                       "package": 0})
    for l in range(8):
        cores = range(l * 8, l * 8 + 8)
        m.l3.append(([c for k in cores for c in (k, k + 64)], 32 * 1024 * 1024))
        m.disallowed |= {l * 8, l * 8 + 64}
    for k in range(64):
        m.core([k, k + 64])
    m.distances = [[10 if a == b else 12 for b in range(4)] for a in range(4)]
    gcd_l3 = [6, 7, 2, 3, 0, 1, 4, 5]  # GCD i sits on L3 domain gcd_l3[i]
    bus = ["c1", "c6", "c9", "ce", "d1", "d6", "d9", "de"]
    for i, l3 in enumerate(gcd_l3):
        cpus = m.l3[l3][0]
        node = l3 // 2
        root = format(int(bus[i], 16) & ~3, "02x")  # four buses per root complex: c0-c3, c4-c7...
        m.gpu(f"0000:{bus[i]}:00.0", "amd", "0x1002", "0x7408", "0x0380", "AMD Instinct MI250X", [node], cpus,
              ["hb:0000:" + root, f"0000:{root}:07.1"], [f"rsmi{i}"])
    for k, (node, b) in enumerate([(3, "c5"), (1, "cd"), (0, "d5"), (2, "dd")]):
        root = format(int(b, 16) & ~3, "02x")  # shares its root complex with an odd-numbered GCD
        m.nic(f"0000:{b}:00.0", [f"hsn{k}", f"cxi{k}"], "Slingshot 200Gb NIC [Cassini]", "0x17db", "0x0501", "0x0200",
              [node], m.l3[node * 2 + 1][0],
              ["hb:0000:" + root, f"0000:{root}:01.1"])
    pcis = sorted(g["pci"] for g in m.gpus)
    for i, a in enumerate(pcis):
        for b in pcis[i + 1:]:
            m.links.append({"a": a, "b": b, "kind": "xgmi", "count": 1})
    return m


def gh200():
    # Grace Hopper superchip: 72 Arm Neoverse V2 cores (no SMT), LPDDR5X on NUMA node 0; the
    # H100's 96 GB HBM3 is exposed as CPU-less NUMA node 1 (GPU memory); ConnectX-7 on node 0.
    m = Machine("gh200", "gh200")
    pus = list(range(72))
    m.packages.append(pus)
    m.numa.append({"os_index": 0, "cpus": pus, "memory": 480 * 10 ** 9, "package": 0})
    m.numa.append({"os_index": 1, "cpus": [], "memory": 96 * 10 ** 9, "package": None, "subtype": "GPUMemory"})
    m.distances = [[10, 80], [80, 10]]
    m.l3.append((pus, 114 * 1024 * 1024))
    for k in pus:
        m.core([k])
    # hwloc reports locality as a nodeset, which here holds the GPU-memory node as well.
    m.gpu("0009:01:00.0", "nvidia", "0x10de", "0x2342", "0x0302", "NVIDIA GH200 480GB", [0, 1], pus,
          ["hb:0009:00", "0009:00:00.0"], ["cuda0", "nvml0"], memory_numa=[1])
    m.nic("0000:01:00.0", ["ibp1s0", "mlx5_0"], "MT2910 Family [ConnectX-7]", "0x15b3", "0x1021", "0x0207", [0, 1], pus,
          ["hb:0000:00", "0000:00:00.0"])
    return m


def cloud_vm():
    # A cloud VM with 96 vCPUs in 2 virtual sockets/NUMA nodes (siblings n and n+48) and 4 A100
    # passed through: the hypervisor reports numa_node -1 for every PCI device, so GPU and NIC
    # locality is unknown.
    m = Machine("cloud-vm-unknown-locality", "gpu-vm")
    two_sockets(m, 24, 440 * GiB, 32 * 1024 * 1024, 20)
    for i in range(4):
        pci = f"000{i + 1}:00:00.0"
        m.gpu(pci, "nvidia", "0x10de", "0x20b5", "0x0302", "NVIDIA A100 80GB PCIe", None, None, [f"hb:000{i + 1}:00"],
              [f"cuda{i}", f"nvml{i}"])
    m.nic("0101:00:00.0", ["eth1", "mlx5_0"], "MT28800 Family [ConnectX-5 Ex Virtual Function]", "0x15b3", "0x101a",
          "0x0200", None, None, ["hb:0101:00"])
    return m


def workstation():
    # A 2-socket workstation (2x Xeon Gold 6248: 20 cores, 2 threads, siblings n and n+40) whose
    # four RTX A6000 all sit on socket 0, two per PLX switch; the 10 GbE NIC is on socket 1.
    m = Machine("workstation-socket0", "ws")
    two_sockets(m, 20, 192 * GiB, 28835840, 21)  # 27.5 MiB L3
    for i, (pci, sw, leaf) in enumerate([("0000:1b:00.0", "0000:18:00.0", "0000:19:08.0"),
                                         ("0000:1c:00.0", "0000:18:00.0", "0000:19:10.0"),
                                         ("0000:3b:00.0", "0000:38:00.0", "0000:39:08.0"),
                                         ("0000:3c:00.0", "0000:38:00.0", "0000:39:10.0")]):
        m.gpu(pci, "nvidia", "0x10de", "0x2230", "0x0300", "NVIDIA RTX A6000", [0], m.packages[0],
              ["hb:0000:" + sw[5:7], sw, leaf], [f"cuda{i}", f"nvml{i}"])
    m.nic("0000:af:00.0", ["enp175s0f0"], "Ethernet Controller X550", "0x8086", "0x1563", "0x0200", [1], m.packages[1],
          ["hb:0000:ae", "0000:ae:00.0"])
    return m


def slurm_test_node():
    # The node shape the Slurm tests' throw-away cluster claims: 2 sockets x 8 cores, one thread
    # each, GPUs 0-3 on socket 0 and 4-7 on socket 1 (for `gpubind slurm gres-conf` against slurmd).
    m = Machine("slurm-2x8-8gpu", "n1")
    for s in range(2):
        pus = list(range(s * 8, s * 8 + 8))
        m.packages.append(pus)
        m.numa.append({"os_index": s, "cpus": pus, "memory": 16 * GiB, "package": s})
        m.l3.append((pus, 32 * 1024 * 1024))
        for k in pus:
            m.core([k])
    m.distances = [[10, 21], [21, 10]]
    for i in range(8):
        node = i // 4
        bus = f"{0x18 + i * 0x10:02x}"
        m.gpu(f"0000:{bus}:00.0", "nvidia", "0x10de", "0x2330", "0x0302", "NVIDIA H100 80GB HBM3", [node], m.packages[node],
              [f"hb:0000:{bus}"], [f"cuda{i}", f"nvml{i}"])
    return m


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = os.path.join(here, "..", "data", "examples")
    os.makedirs(out, exist_ok=True)
    for make in (dgx_h100, dgx_a100_nps4, frontier_like, gh200, cloud_vm, workstation, slurm_test_node):
        m = make()
        with open(os.path.join(out, m.name + ".json"), "w") as f:
            json.dump(m.to_json(), f, indent=2)
            f.write("\n")
        print("wrote", m.name)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""What the Slurm tests derive from `gpubind topo --json` (read on standard input).

  topology_json.py node-shape [--one-package-if-unknown]
      "Boards=1 SocketsPerBoard=S CoresPerSocket=C ThreadsPerCore=T": the machine's packages as
      slurm.conf's node line gives them; nothing when its packages are unknown (or, with the
      flag, one package) or hold different numbers of cores.
  topology_json.py two-gpus
      the topology again with two stand-in NVIDIA GPUs on its first NUMA node, GPU 0 near CPU 0
      and GPU 1 near CPU 1 (what the task/affinity cases bind to on a two-CPU machine).
"""
import json
import sys


def count(cpulist):
    n = 0
    for part in filter(None, cpulist.split(",")):
        lo, _, hi = part.partition("-")
        n += int(hi or lo) - int(lo) + 1
    return n


t = json.load(sys.stdin)
if sys.argv[1] == "node-shape":
    packages, cores = len(t["packages"]), t["cores"]
    if not packages and "--one-package-if-unknown" in sys.argv[2:]:
        packages = 1
    if packages and cores and len(cores) % packages == 0:
        print("Boards=1 SocketsPerBoard=%d CoresPerSocket=%d ThreadsPerCore=%d" %
              (packages, len(cores) // packages, sum(count(c) for c in cores) // len(cores)))
elif sys.argv[1] == "two-gpus":
    node = t["numa_nodes"][0]["os_index"]
    t["gpus"] = [{"index": i, "vendor": "nvidia", "name": "stand-in GPU", "uuid": "GPU-0000000%d-test" % i,
                  "pci": "0000:%02x:00.0" % (0xe1 + i), "vendor_id": "0x10de", "device_id": "0x2330", "class_id": "0x0302",
                  "os_names": [], "numa": [node], "cpus": str(i), "pcie_path": ["hb:0000:%02x" % (0xe0 + i)], "memory_numa": []}
                 for i in range(2)]
    json.dump(t, sys.stdout)
else:
    sys.exit("topology_json.py: node-shape or two-gpus")

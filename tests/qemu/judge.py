"""Judges what tests/qemu/guest_LAYOUT.sh printed inside the layout's VM against the plan gpubind
makes on the host from the layout's fixture (tests/data/qemu/LAYOUT.json): one "ok:" or "FAIL:"
line per check; exit status 1 when any failed.

Usage: judge.py LAYOUT GPUBIND FIXTURE GUEST_OUTPUT
"""
import json
import os
import re
import xml.etree.ElementTree as ET
import subprocess
import sys

layout, gpubind, fixture, output = sys.argv[1:5]
failures = 0


def check(ok, what, detail=""):
    global failures
    print(("ok: " if ok else "FAIL: ") + what + ("" if ok else f": {detail}"))
    failures += 0 if ok else 1


text = open(output).read()
parts = re.split(r"^=== (\w+) ===\n", text, flags=re.M)
sections = {parts[i]: parts[i + 1] for i in range(1, len(parts), 2)}


def section(name):
    s = sections.get(name)
    if s is None:
        check(False, name, "the guest printed no such section")
        return "", None
    m = re.search(r"^rc=(\d+)$", s, flags=re.M)
    return s, int(m.group(1)) if m else None


def json_of(s):
    return json.loads(s[s.index("{"): s.rindex("}") + 1])


def report_bench(name, record):
    """The bench table and its step-time verdicts against closest, as gpubind renders the guest's
    record on the host (timing in TCG is not real: shown, never judged); saved under
    $QEMU_BENCH_SAVE when set (docs/PERFORMANCE.md)."""
    import os, tempfile
    if not record.get("samples"):
        return
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(record, f)
    out = subprocess.run([gpubind, "bench", "--input", f.name], capture_output=True, text=True).stdout
    os.unlink(f.name)
    for line in out.splitlines():
        if line.startswith("notes:"):
            break
        if line.strip():
            print(f"info: {name} (TCG timing, not judged): {line}")
    if os.environ.get("QEMU_BENCH_SAVE"):
        with open(os.path.join(os.environ["QEMU_BENCH_SAVE"], f"{layout}-{name}.json"), "w") as f:
            json.dump(record, f, indent=1)


def host_plan(rank, n=4, *flags, env=None):
    """GPUBIND_* of local rank `rank` as `gpubind plan` gives it from the fixture, on the host
    (with `env`: these variables too, as a rank would have them)."""
    out = subprocess.run([gpubind, "plan", "--topology", fixture, "-n", str(n), "--format", "env", "--rank", str(rank),
                          "--quiet", *flags], capture_output=True, text=True, check=True,
                         env={**os.environ, **(env or {})}).stdout
    return dict(re.findall(r"^export (\w+)=(.*)$", out, flags=re.M))


want = json.load(open(fixture))

def hwloc_agrees(live):
    """gpubind's live view against hwloc's own in the guest (lstopo --whole-io --of xml): each GPU
    and NIC on the NUMA nodes of the first ancestor of its PCI device that has a nodeset."""
    s, rc = section("hwloc")
    if rc != 0 or "<topology" not in s:
        check(False, "hwloc's lstopo ran in the guest", s[-300:])
        return
    root = ET.fromstring(s[s.index("<?xml"):s.rindex("</topology>") + len("</topology>")])
    parent = {c: p for p in root.iter() for c in p}
    hwloc = {}
    for o in root.iter("object"):
        if o.get("type") != "PCIDev":
            continue
        a = o
        while a is not None and a.get("nodeset") is None:
            a = parent.get(a)
        mask = int(a.get("nodeset").replace(",", "").replace("0x", ""), 16) if a is not None else 0
        nodes = [i for i in range(64) if mask >> i & 1]
        hwloc[o.get("pci_busid")] = nodes if len(nodes) < len(live["numa_nodes"]) else None  # the whole machine: none
    for d in live["gpus"] + live["nics"]:
        check(hwloc.get(d["pci"], "absent") == d["numa"], f"hwloc in the guest puts {d['pci']} on node(s) {d['numa']} too",
              f"hwloc: {hwloc.get(d['pci'], 'absent')}")


def same_machine(live):
    """Live discovery equals the fixture: the same nodes and cores, each GPU and NIC on its node;
    and hwloc in the guest agrees where it was asked."""
    if "hwloc" in sections:
        hwloc_agrees(live)
    key = {"numa": lambda t: [(n["os_index"], n["cpus"], n["package"]) for n in t["numa_nodes"]],
           "gpus": lambda t: [(g["pci"], g["vendor"], g["numa"], g["cpus"]) for g in t["gpus"]],
           "nics": lambda t: [(n["pci"], n["numa"], n["cpus"]) for n in t["nics"]],
           "cores": lambda t: t["cores"]}
    for k, f in key.items():
        check(f(live) == f(want), f"topo --json live: {k} as in the fixture", f"{f(live)} != {f(want)}")


def cpulist(ids):
    """Linux's list format of a set of ids: 0-3,8."""
    runs, ids = [], sorted(ids)
    for i in ids:
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ",".join(f"{a}-{b}" if a != b else str(a) for a, b in runs)


KERNEL_POLICY = {"preferred": "prefer", "bind": "bind", "interleave": "interleave"}


def launch_as_planned(n, name="launch"):
    """launch -n N (or mpirun -np N ... gpubind exec): each rank's GPU, Cpus_allowed_list and
    memory node as the host plans them, the cpuset's memory nodes left whole, and the kernel's
    memory policy of the rank (numa_maps) the planned mode on the planned node."""
    s, rc = section(name)
    pattern = r"^rank=(\d+) gpu=(\S*) cpus=(\S*) mem=(\S*) mems=(\S*) policy=(\S*)$"
    ranks = {int(m.group(1)): m.groups()[1:] for m in re.finditer(pattern, s, flags=re.M)}
    check(rc == 0 and sorted(ranks) == list(range(n)), f"{name} of {n}: {n} ranks ran", s[-300:])
    all_nodes = cpulist(node["os_index"] for node in want["numa_nodes"])
    for r in sorted(ranks):
        p = host_plan(r, n)
        gpu, cpus, mem, mems, policy = ranks[r]
        check((gpu, cpus, mem) == (p["GPUBIND_GPU"], p["GPUBIND_CPUS"], p["GPUBIND_MEM"]),
              f"{name} rank {r}: GPU {gpu}, Cpus_allowed_list {cpus}, memory node {mem} as planned", f"{ranks[r]} != {p}")
        check(mems == all_nodes, f"{name} rank {r}: Mems_allowed_list {mems} (the cpuset's, left whole)", f"want {all_nodes}")
        mode = p.get("GPUBIND_MEM_POLICY", "")
        expected = f"{KERNEL_POLICY[mode]}:{p['GPUBIND_MEM']}" if mode in KERNEL_POLICY and p.get("GPUBIND_MEM") else "default"
        check(policy == expected, f"{name} rank {r}: the kernel's memory policy is {policy}", f"want {expected}")


def judge_doctor():
    """gpubind doctor on the VM's kernel: every check run with a documented exit, the SLIT agreeing
    with the packages; returns the checks by name for the layout's own judgement."""
    s, rc = section("doctor")
    report = json_of(s) if "{" in s else {"checks": []}
    checks = {c["check"]: c for c in report["checks"]}
    print(f"info: doctor in the VM: exit {rc}, " + ", ".join(f"{k} {v['severity']}" for k, v in checks.items()))
    for k in ("irq_affinity", "pcie_acs", "iommu", "cgroup_mems", "numa_layout"):
        print(f"info: doctor {k}: {checks.get(k, {}).get('why')}")
    check(rc in (0, 3, 4) and len(checks) >= 14, "doctor runs every check on the VM's kernel, exit 0, 3 or 4", s[-300:])
    check(checks.get("numa_distances", {}).get("severity") == "OK", "doctor: the VM's SLIT agrees with its packages", str(checks.get("numa_distances")))
    nodes = len(want["numa_nodes"])
    check(f"memory allowed on node(s) {cpulist(range(nodes))} " in checks.get("cgroup_mems", {}).get("why", ""),
          f"doctor: every one of the {nodes} nodes allowed (no cpuset limit in the VM)", str(checks.get("cgroup_mems")))
    return checks


def judge_rebind():
    """rebind on a real 4-node kernel: a never-bound job whose pages were first-touched on another
    socket is moved while it runs: every thread on its planned CPUs, its pages on its GPU's node,
    its steps going on. The before and after are printed (the issue's closing note shows them)."""
    s, rc = section("rebind")
    check("stepping" in s.splitlines(), "rebind: the job's ranks started stepping", s[:300])
    check(rc == 0, "rebind exits 0", f"rc {rc}: {s[-400:]}")
    pids = dict(re.findall(r"(\w+)=(\d+)", re.search(r"^pids (.*)$", s, flags=re.M).group(1))) if "pids" in s else {}
    record = json_of(s) if "{" in s else {"ranks": []}
    by_pid = {str(r["processes"][0]["pid"]): r for r in record["ranks"] if r["processes"]}
    for r in (0, 1):
        pid = pids.get(f"r{r}", "?")
        # A job gpubind did not start sees every GPU: local rank r drives cuda:r, GPU r (exec would
        # have spread 2 ranks over the sockets, and said so to the workers in CUDA_VISIBLE_DEVICES).
        want = host_plan(r, 2, "--no-spread-gpus")
        cpus, node = want["GPUBIND_CPUS"], int(want["GPUBIND_MEM"])
        rank = by_pid.get(pid, {})
        check(rank.get("cpus") == cpus and rank.get("mem_nodes") == [node],
              f"rebind: rank {r} planned on CPUs {cpus}, memory node {node}, as gpubind plan --no-spread-gpus gives it", str(rank)[:300])
        for phase in ("before", "after"):
            threads = re.findall(rf"^{phase} pid={pid} tid=(\d+) cpus=(\S+)$", s, flags=re.M)
            pages = {int(n): int(c) for n, c in re.findall(r"N(\d+)=(\d+)", (re.search(rf"^{phase} pid={pid} pages (.*)$", s, flags=re.M) or [None, ""])[1])}
            total = sum(pages.values())
            print(f"info: rebind rank {r} {phase}: threads {' '.join(f'{t}:{c}' for t, c in threads)}; anonymous pages {pages}")
            if phase == "before":
                check(len(threads) == 4 and all(c == "0-7" for _, c in threads), f"rebind: rank {r}'s 4 threads started unbound", str(threads))
                check(total > 0 and pages.get(node, 0) < 0.1 * total, f"rebind: rank {r}'s pages started off node {node}", str(pages))
            else:
                check(len(threads) == 4 and all(c == cpus for _, c in threads), f"rebind: all 4 threads of rank {r} now on CPUs {cpus}", str(threads))
                check(total > 0 and pages.get(node, 0) >= 0.95 * total, f"rebind: at least 95% of rank {r}'s pages now on node {node}", str(pages))
        for p in rank.get("processes", []):
            m = p["memory"]
            print(f"info: rebind rank {r}: migrate_pages {m['from']} -> {m['to']} in {m['seconds'] * 1e3:.1f} ms (TCG), {m['not_moved']} not moved")
    m = re.search(r"^steps at rebind r0=(\d+) r1=(\d+), later r0=(\d+) r1=(\d+)$", s, flags=re.M)
    check(m is not None and int(m.group(3)) > int(m.group(1)) + 10 and int(m.group(4)) > int(m.group(2)) + 10,
          "rebind: both ranks kept stepping after they were moved", m.group(0) if m else s[-300:])


def judge_2s4n():
    """2 sockets x 2 nodes, a GPU per node: binding, memory, cache, restriction, check, measure."""
    s, rc = section("topo_json")
    if rc == 0:
        same_machine(json_of(s))
    else:
        check(False, "topo --json live", f"rc {rc}: {s[-300:]}")

    launch_as_planned(4)
    launch_as_planned(4, "mpirun")
    launch_as_planned(4, "srun_env")

    # First touch under exec: every page on the rank's GPU node (bind and preferred).
    for mode in ("bind", "preferred"):
        s, rc = section("touch_" + mode)
        for m in re.finditer(r"^rank=(\d+) pages (.*)$", s, flags=re.M):
            r = int(m.group(1))
            pages = {int(n): int(c) for n, c in re.findall(r"N(\d+)=(\d+)", m.group(2))}
            node = int(host_plan(r)["GPUBIND_MEM"])
            total = sum(pages.values())
            check(total > 0 and pages.get(node, 0) == total, f"exec --mem {mode} rank {r}: all {total} pages on node {node}",
                  m.group(2))
    s, rc = section("touch_interleave")
    m = re.search(r"^rank=0 pages (.*)$", s, flags=re.M)
    pages = {int(n): int(c) for n, c in re.findall(r"N(\d+)=(\d+)", m.group(1))} if m else {}
    nodes = [int(n) for n in host_plan(0, 2, "--policy", "socket", "--mem", "interleave")["GPUBIND_MEM"].split(",")]
    spread = [pages.get(n, 0) for n in nodes]
    check(len(nodes) > 1 and sum(spread) == sum(pages.values()) and min(spread) > 0.4 * max(spread),
          f"exec --mem interleave: pages spread over nodes {nodes}", str(pages))

    # The cache: written once, then read (the file is not replaced).
    s, rc = section("cache")
    lines = re.findall(r"^files=(\d+) inode=(\d+)$", s, flags=re.M)
    check(rc == 0 and len(lines) == 2 and lines[0] == lines[1] and lines[0][0] == "1",
          "a second exec reads the cached topology", s[-200:])

    # Restricted CPUs: under taskset -c 0-3 (socket 0), ranks stay inside and apart, with the warning.
    s, rc = section("restricted")
    cpus = dict(re.findall(r"^rank=(\d+) cpus=(\S+)$", s, flags=re.M))
    flat = [c for v in cpus.values() for c in v.split(",")]
    check(rc == 0 and len(cpus) == 4 and all(0 <= int(c) <= 3 for c in flat if c.isdigit()) and len(set(flat)) == 4,
          "under taskset -c 0-3 every rank runs on socket 0, each on its own CPU", str(cpus))
    check("which has no allowed CPUs" in s, "the fallback for ranks whose GPU's node has no allowed CPU is said", s[-400:])

    # A cgroup cpuset of socket 1: ranks inside it, from the machine's cache entry with the
    # cgroup's cpuset applied (issue 34: per-job cgroups no longer start cold).
    s, rc = section("cgroup")
    cpus = dict(re.findall(r"^rank=(\d+) cpus=(\S+)$", s, flags=re.M))
    flat = [c for v in cpus.values() for c in v.split(",")]
    check(rc == 0 and len(cpus) == 2 and flat and all(4 <= int(x) <= 7 for c in flat for x in c.split("-")),
          "in a cgroup with cpuset.cpus 4-7 the ranks are planned inside it", str(cpus))
    counts = dict(re.findall(r"^cache files (before|after)=(\d+)$", s, flags=re.M))
    check(counts and int(counts.get("after", -1)) == int(counts.get("before", -2)),
          "the cgroup's plan reads the machine's cache entry (no new one) with the cgroup's cpuset applied", str(counts))

    # check: OK, MISPLACED, REMOTE_MEMORY, DRIFTED.
    s, rc = section("check")
    check(re.search(r"^ready$", s, flags=re.M) is not None, "check: the four processes started and touched their memory", s[:300])
    pids = dict(re.findall(r"(\w+)=(\d+)", re.search(r"^pids (.*)$", s, flags=re.M).group(1))) if "pids" in s else {}
    verdicts = {str(p["pid"]): p["verdict"] for p in json_of(s)["processes"]} if "{" in s else {}
    for who, want_verdict in (("good", "OK"), ("wrong", "MISPLACED"), ("remote", "REMOTE_MEMORY"), ("drifted", "DRIFTED")):
        got = verdicts.get(pids.get(who, "?"), "missing")
        check(want_verdict in got.split(","), f"check: the {who} rank is {want_verdict}", got)
    check(rc == 3, "check exits 3 on findings", str(rc))

    judge_rebind()

    # doctor on the real kernel: every check run, the 2 sockets x 2 nodes said, the SLIT agreeing.
    checks = judge_doctor()
    check("4 NUMA node(s), 2 per package" in checks.get("numa_layout", {}).get("why", ""), "doctor: the VM's 2 nodes per package are said",
          str(checks.get("numa_layout")))

    # watch: the moved rank migrates and runs off its GPU's node; the bound one stays on its own.
    s, rc = section("watch")
    pids = dict(re.findall(r"(\w+)=(\d+)", re.search(r"^pids (.*)$", s, flags=re.M).group(1))) if "pids" in s else {}
    lines = [json.loads(l) for l in s.splitlines() if l.startswith("{")]
    summary = next((l for l in lines if l.get("type") == "summary"), {"ranks": []})
    ranks = {str(r["pid"]): r for r in summary["ranks"]}
    loose, bound = ranks.get(pids.get("loose"), {}), ranks.get(pids.get("bound"), {})
    check(loose.get("migrations", 0) > 0 and (loose.get("cross_numa_ratio") or 0) > 0.5,
          "watch: the rank moved between sockets migrates and runs off its GPU's node", str(loose))
    socket = [r.get("cross_socket_ratio") for l in lines if l.get("type") == "interval" for r in l["ranks"] if str(r["pid"]) == pids.get("loose")]
    check(any((x or 0) > 0 for x in socket), "watch: ... and part of its CPU time is on the other socket", str(socket))
    check(bound.get("cross_numa_ratio") == 0, "watch: the bound rank runs only on its GPU's node", str(bound))

    # Measured locality through the fake CUDA runtime: every node measured with real mbind.
    s, rc = section("measure")
    measured = {m["gpu"]: m for m in json_of(s).get("measured", [])} if rc == 0 else {}
    for pci, nearest in (("0000:21:00.0", 0), ("0000:41:00.0", 1), ("0000:61:00.0", 2), ("0000:81:00.0", 2)):
        m = measured.get(pci, {})
        check(sorted(m.get("bytes_per_second", {})) == ["0", "1", "2", "3"] and m.get("nearest_node") == nearest,
              f"topo --measure: GPU {pci} measured from all 4 nodes, nearest node {nearest}", str(m))
    check("GPU 0000:81:00.0 (CUDA runtime copies): copies from NUMA node 2 run at 24.5 GB/s, from its own node 3 at 20.0 GB/s" in s,
          "topo --measure: the GPU measured nearer to another node is a finding", s[-400:])

    # bench: closest keeps every rank's work and pages on its GPU's node; with the GPUs numbered
    # backwards, GPU-unaware pinning runs every rank, and puts its pages, on another node.
    for name in ("bench", "bench_reversed"):
        s, rc = section(name)
        record = json_of(s) if rc == 0 and "{" in s else {"samples": [], "results": []}
        check(rc == 0, f"{name}: bench ran its strategies with 4 ranks each", s[-400:])
        report_bench(name, record)
        samples = {x["name"]: x for x in record["samples"]}
        gpus = [r["gpu"] for r in samples.get("closest", {}).get("ranks", [])]
        want_gpus = ["0000:21:00.0", "0000:41:00.0", "0000:61:00.0", "0000:81:00.0"]
        check(gpus == (want_gpus if name == "bench" else want_gpus[::-1]), f"{name}: rank r drives GPU {'r' if name == 'bench' else '3 - r'}", gpus)
        for r in samples.get("closest", {}).get("ranks", []):
            check(r["off_home_s"] == 0 and r["work_s"] > 0 and r["pages"] > 0 and r["remote_pages"] == 0,
                  f"{name}: closest rank {r['rank']} works on its GPU's node {r['home_nodes']} and its pages are there", r)
    s, rc = section("bench_reversed")
    record = json_of(s) if rc == 0 and "{" in s else {"samples": []}
    cpu_only = next((x for x in record["samples"] if x["name"] == "cpu-only"), {"ranks": []})
    check(len(cpu_only["ranks"]) == 4, "bench_reversed: cpu-only ran 4 ranks", cpu_only)
    for r in cpu_only["ranks"]:
        check(r["work_s"] > 0 and r["off_home_s"] / r["work_s"] > 0.99 and r["pages"] > 0 and r["remote_pages"] == r["pages"],
              f"bench_reversed: cpu-only rank {r['rank']} (CPUs {r['cpus']}) works and keeps its pages off its GPU's node {r['home_nodes']}", r)
    result = {x["strategy"]: x for x in record.get("results", [])}
    check((result.get("cpu-only", {}).get("cross_numa") or 0) > 0.99 and (result.get("closest", {}).get("cross_numa") == 0),
          "bench_reversed: the report gives cpu-only a cross-NUMA share of 1 and closest 0",
          {k: v.get("cross_numa") for k, v in result.items()})

    # --gpu: each rank's copies run at the fixture's rate from the node its pages are on.
    s, rc = section("bench_gpu")
    record = json_of(s) if rc == 0 and "{" in s else {"samples": [], "results": []}
    check(rc == 0 and record["config"]["gpu"], "bench --gpu ran with the fake CUDA runtime", s[-400:])
    report_bench("bench_gpu", record)
    rates = {g["bus_id"]: g["gbps"] for g in json.load(open(fixture.replace("2s4n.json", "cudart-2s4n.json")))["gpus"]}
    for strat in record["samples"]:
        for r in strat["ranks"]:
            page_node = r["home_nodes"][0] if r["remote_pages"] == 0 else int(r["mem_nodes"][0])
            want = rates[r["gpu"]][str(page_node)]
            got = r["copy_bytes"] / r["copy_s"] / 1e9 if r["copy_s"] else 0
            check(r["copy_bytes"] > 0 and abs(got - want) < 0.01 * want,
                  f"bench --gpu: {strat['name']} rank {r['rank']} copies to {r['gpu']} at its rate from node {page_node} ({want} GB/s)",
                  f"{got:.2f} GB/s; {r}")
    h2d = {x["strategy"]: x["h2d_bytes_per_s"] for x in record.get("results", [])}
    check((h2d.get("cpu-only") or 1e99) < (h2d.get("closest") or 0), "bench --gpu: cpu-only's copies are slower than closest's", h2d)
    s, rc = section("bench_gpu_missing")
    said = [l for l in s.splitlines() if l.startswith("gpubind: error:")]
    check(rc == 1 and len(said) == 1 and "/nonexistent/libcudart.so" in said[0],
          "bench --gpu without a runtime: one line naming the library, exit 1", s[-400:])

    judge_pods()


def judge_pods():
    """Kubernetes pods given GPUs 2 and 3 (their device files, NVIDIA_VISIBLE_DEVICES) and a cpuset:
    launch plans one rank per pod GPU inside the pod's CPUs, and says when they are on the other
    socket."""
    s, rc = section("pod")
    pods = {}
    for block in re.split(r"^pod=", s, flags=re.M)[1:]:
        name, _, body = block.partition("\n")
        pods[name] = body
    check(rc == 0 and sorted(pods) == ["aligned", "crossed"], "two pods launched", s[-400:])
    pod_gpus = [g["pci"] for g in want["gpus"] if g["numa"] in ([2], [3])]
    for name, cpus in (("aligned", "4-7"), ("crossed", "0-3")):
        body = pods.get(name, "")
        ranks = re.findall(r"^rank=(\d+) gpu=(\S*) cpus=(\S*) mem=(\S*)", body, flags=re.M)
        check(sorted(r[0] for r in ranks) == ["0", "1"], f"pod {name}: one rank per pod GPU (2), none asked for", body[-300:])
        check(sorted(r[1] for r in ranks) == sorted(pod_gpus), f"pod {name}: the ranks drive the pod's GPUs {pod_gpus}", str(ranks))
        allowed = set(range(int(cpus[0]), int(cpus[-1]) + 1))
        check(all(set(int(c) for c in re.findall(r"\d+", r[2])) <= allowed for r in ranks) and bool(ranks),
              f"pod {name}: every rank inside the pod's CPUs {cpus}", str(ranks))
        for r, gpu, got, _ in ranks:
            p = host_plan(int(r), 2, "--allowed", cpus, env={"NVIDIA_VISIBLE_DEVICES": "2,3"})
            check((gpu, got) == (p["GPUBIND_GPU"], p["GPUBIND_CPUS"]), f"pod {name} rank {r}: GPU {gpu}, CPUs {got} as planned",
                  f"{(gpu, got)} != {p}")
        warned = "in a Kubernetes pod" in body
        if name == "aligned":
            check(not warned, "pod aligned: no misalignment warning", body[-400:])
        else:
            check(warned and "the kubelet did not align them" in body, "pod crossed: the warning says the kubelet did not align them",
                  body[-400:])


def judge_2s_unknown():
    """GPUs on the root bus: sysfs gives no node; the node of NVML's CPU affinity is taken, and a UUID rank binds there."""
    s, rc = section("topo_json")
    live = json_of(s) if rc == 0 else {"gpus": []}
    same_machine(live)
    check(len(live["gpus"]) == 2 and all(g["numa"] is None for g in live["gpus"]), "sysfs alone: the GPUs have no NUMA node",
          str(live["gpus"]))
    said = [l for l in s.splitlines() if l.startswith("stderr: ")]
    check(sum("locality unknown" in l for l in said) == 2, "sysfs alone: each GPU's unknown locality is said", str(said))
    nvml = {g["bus_id"][4:].lower(): g for g in json.load(open(fixture.replace(layout + ".json", "nvml-" + layout + ".json")))["gpus"]}
    node_cpus = {n["os_index"]: n["cpus"] for n in want["numa_nodes"]}
    # NVML has no call for the node of a GPU's CPUs: its CPU affinity, within one node, names it.
    for g in nvml.values():
        g["numa"] = next(n for n, c in node_cpus.items() if c == g["cpus"])
    s, rc = section("topo_runtime")
    live = json_of(s) if rc == 0 else {"gpus": []}
    for g in live["gpus"]:
        n = nvml[g["pci"]]["numa"]
        check(g["numa"] == [n] and g["cpus"] == node_cpus[n] and g["uuid"] == nvml[g["pci"]]["uuid"],
              f"with NVML: GPU {g['pci']} on its node {n} (CPUs {node_cpus[n]}) and named by its UUID", str(g))
    said = [l for l in s.splitlines() if l.startswith("stderr: ")]
    check(sum("no NUMA node in the topology (numa_node -1?); the library's node" in l for l in said) == 2,
          "with NVML: taking the library's node is said for each GPU", str(said))
    s, rc = section("exec_uuid")
    for m in re.finditer(r"^uuid=(\S+) gpu=(\S*) cpus=(\S*) mem=(\S*)$", s, flags=re.M):
        uuid, gpu, cpus, mem = m.groups()
        g = next(p for p, x in nvml.items() if x["uuid"] == uuid)
        n = nvml[g]["numa"]
        check((gpu, cpus, mem) == (g, node_cpus[n], str(n)), f"CUDA_VISIBLE_DEVICES={uuid[:13]}...: bound to GPU {g}, node {n}",
              m.group(0))
    check(len(re.findall(r"^uuid=", s, flags=re.M)) == 2 and rc == 0, "exec with a UUID: both ranks ran", s[-300:])
    s, rc = section("launch_unknown")
    check(rc == 0 and len(re.findall(r"^rank=\d ", s, flags=re.M)) == 2, "launch without locality: both ranks ran", s[-300:])
    check("locality" in s, "launch without locality: the warning says why", s[-400:])
    checks = judge_doctor()
    why = checks.get("numa_layout", {}).get("why", "")
    check(checks.get("numa_layout", {}).get("severity") == "WARN" and all(g in why for g in nvml),
          "doctor: the GPUs of numa_node -1 are a warning naming each", why)
    rt = checks.get("gpu_runtime", {})
    check(rt.get("severity") == "WARN" and rt.get("why", "").count("the library's node") == 2,
          "doctor: NVML giving each GPU the node the kernel does not know is a finding per GPU", str(rt))


def judge_shape(classes, ranks, memory_node=None):
    """A layout whose point is its shape: discovered as the fixture, the path classes it must
    show, one rank per GPU as planned, and memory on a node of the admin's choice (--mem-node)."""
    s, rc = section("topo_json")
    same_machine(json_of(s) if rc == 0 else {"numa_nodes": [], "gpus": [], "nics": [], "cores": []})
    s, rc = section("matrix")
    cells = set(re.findall(r"\b(PIX|PXB|PHB|NODE|SYS|NV\d+|XGMI)\b", s.split("Legend:")[0]))
    check(rc == 0 and cells == set(classes), f"topo --format matrix: path classes {sorted(classes)}", str(sorted(cells)))
    launch_as_planned(ranks)
    if memory_node is not None:
        s, rc = section("touch_memory_node")
        for m in re.finditer(r"^rank=(\d+) pages (.*)$", s, flags=re.M):
            pages = {int(k): int(v) for k, v in re.findall(r"N(\d+)=(\d+)", m.group(2))}
            total = sum(pages.values())
            check(total > 0 and pages.get(memory_node, 0) == total,
                  f"exec --mem bind --mem-node {memory_node} rank {m.group(1)}: all {total} pages on node {memory_node}", m.group(2))
        check(rc == 0 and len(re.findall(r"^rank=", s, flags=re.M)) == ranks, "every rank touched its memory", s[-300:])
    checks = judge_doctor()
    cpuless = [n["os_index"] for n in want["numa_nodes"] if not n["cpus"]]
    packages = len({n.get("package") for n in want["numa_nodes"] if n["cpus"]})
    per = len([n for n in want["numa_nodes"] if n["cpus"]]) // max(packages, 1)
    why = checks.get("numa_layout", {}).get("why", "")
    check(why.startswith(f"{len(want['numa_nodes'])} NUMA node(s)") and ((f"{per} per package" in why) == (per > 1))
          and all(f"CPU-less node(s) {n}" in why for n in cpuless[:1]),
          f"doctor: the layout's nodes said ({per} per package, CPU-less {cpuless or 'none'})", why)
    if "PIX" in classes or "PXB" in classes:
        check("switch port(s) above the GPUs and NICs" in checks.get("pcie_acs", {}).get("why", ""),
              "doctor: the PCIe switch ports above the GPUs found through sysfs and their ACS read", str(checks.get("pcie_acs")))


{"2s4n": judge_2s4n, "2s-unknown": judge_2s_unknown,
 "2s2n-smt": lambda: judge_shape({"PIX", "PXB", "NODE", "SYS"}, 8),
 "1s4n-nps4": lambda: judge_shape({"SYS", "PHB"}, 2, memory_node=4),
 "4s8n": lambda: judge_shape({"SYS", "PHB"}, 8, memory_node=5)}[layout]()
print("all passed" if failures == 0 else f"{failures} failure(s)")
sys.exit(1 if failures else 0)

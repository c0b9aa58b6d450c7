#!/usr/bin/env python3
"""Writes the /proc and /sys fixture trees `gpubind check` is tested on (tests/cli/cases.txt).

Each case is a small tree of what Linux shows for a running job: proc/PID/{status,stat,cmdline,
environ,numa_maps}, proc/PID/task/TID/{status,stat,sched}, proc/PID/fd/N symlinks to device
files, proc/driver/nvidia/gpus/BUS/information and sys/class/drm/renderD*/device links. The
layouts follow data/examples/dgx-h100.json (NVIDIA) and frontier-like.json (AMD). Run it again
after editing; the trees are committed.
"""
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))

H100_GPUS = ["0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0", "0000:5d:00.0",
             "0000:9a:00.0", "0000:ab:00.0", "0000:ba:00.0", "0000:db:00.0"]


def h100_cpus(rank):
    s = (rank // 4) * 56 + (rank % 4) * 14
    return f"{s}-{s + 13},{s + 112}-{s + 125}"


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def status(name, pid, ppid, cpus, mems="0-1", vol=10, invol=2):
    return (f"Name:\t{name}\nState:\tS (sleeping)\nTgid:\t{pid}\nPid:\t{pid}\nPPid:\t{ppid}\n"
            f"Cpus_allowed_list:\t{cpus}\nMems_allowed_list:\t{mems}\n"
            f"voluntary_ctxt_switches:\t{vol}\nnonvoluntary_ctxt_switches:\t{invol}\n")


def stat(pid, comm, ppid, cpu, ticks=0):
    fields = ["S", str(ppid)] + ["0"] * 48
    fields[11] = str(ticks)  # utime (field 14), in USER_HZ ticks (100/s)
    fields[36] = str(cpu)
    return f"{pid} ({comm}) " + " ".join(fields) + "\n"


class Tree:
    def __init__(self, name):
        self.root = os.path.join(HERE, name)
        shutil.rmtree(self.root, ignore_errors=True)
        os.makedirs(self.root)

    def nvidia(self, buses):
        for minor, bus in enumerate(buses):
            write(f"{self.root}/proc/driver/nvidia/gpus/{bus}/information",
                  f"Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 0\nGPU UUID: \t GPU-00000000-0000-0000-0000-00000000000{minor}\n"
                  f"Device Minor: \t {minor}\n")

    def drm(self, node, bus):
        d = f"{self.root}/sys/class/drm/{node}"
        os.makedirs(d, exist_ok=True)
        os.symlink(f"../../../devices/pci0000:00/{bus}", f"{d}/device")

    def process(self, pid, comm, cpus, threads, devices, env=None, ppid=1, numa=None, cmd=None):
        """threads: list of (tid, comm, cpus_allowed, last_cpu, migrations[, run_ticks])."""
        d = f"{self.root}/proc/{pid}"
        write(f"{d}/status", status(comm, pid, ppid, cpus))
        write(f"{d}/stat", stat(pid, comm, ppid, threads[0][3]))
        write(f"{d}/cmdline", "\0".join(cmd or [comm]) + "\0")
        write(f"{d}/environ", "".join(f"{k}={v}\0" for k, v in (env or {}).items()) + "PATH=/usr/bin\0")
        os.makedirs(f"{d}/fd")
        for i, dev in enumerate(["/dev/null", "/dev/pts/0"] + devices):
            os.symlink(dev, f"{d}/fd/{i}")
        for tid, tcomm, tcpus, last, mig, *ticks in threads:
            t = f"{d}/task/{tid}"
            write(f"{t}/status", status(tcomm, tid, ppid, tcpus))
            write(f"{t}/stat", stat(tid, tcomm, ppid, last, ticks[0] if ticks else 0))
            write(f"{t}/sched", f"{tcomm} ({tid}, #threads: {len(threads)})\n---\nse.exec_start : 1.0\n"
                                f"se.nr_migrations : {mig}\n")
        if numa:
            write(f"{d}/numa_maps", "".join(
                f"7f00{i:04x}000 default anon={p} dirty={p} N{n}={p} kernelpagesize_kB=4\n" for i, (n, p) in enumerate(numa)))


def gpubind_env(rank, cpus, mem):
    return {"GPUBIND_LOCAL_RANK": str(rank), "GPUBIND_GPU": H100_GPUS[rank], "GPUBIND_CPUS": cpus,
            "GPUBIND_MEM": str(mem), "GPUBIND_MEM_POLICY": "preferred", "GPUBIND_POLICY": "closest",
            "LOCAL_RANK": str(rank)}


def first(cpus):
    return int(cpus.split("-")[0])


def h100_job(name, tweak):
    """An 8-rank job started by `gpubind launch` (PID 1000) on a DGX H100-like node; `tweak`
    changes one rank's state: returns (cpus, env, threads, numa) for a rank or None."""
    t = Tree(name)
    t.nvidia(H100_GPUS)
    t.process(1000, "gpubind", "0-223", [(1000, "gpubind", "0-223", 5, 3)], [], cmd=["gpubind", "launch", "--", "python", "train.py"])
    for r in range(8):
        cpus = h100_cpus(r)
        env = gpubind_env(r, cpus, r // 4)
        threads = [(2000 + 10 * r, "python", cpus, first(cpus) + 1, 4), (2001 + 10 * r, "pt_main_thread", cpus, first(cpus) + 2, 9)]
        numa = [(r // 4, 50000), (1 - r // 4, 1200)]
        changed = tweak(r, cpus, env, threads, numa)
        if changed:
            cpus, env, threads, numa = changed
        t.process(2000 + 10 * r, "python", cpus, threads, [f"/dev/nvidia{r}", "/dev/nvidiactl", "/dev/nvidia-uvm"],
                  env=env, ppid=1000, numa=numa, cmd=["python", "train.py", "--local-rank", str(r)])


def h100_watch(step):
    """`gpubind watch --root` replays these three samples, one second apart, of an 8-rank job
    (gpubind launch, PID 1000): every thread runs 0.5 s per second on its GPU's node, except
    rank 3, whose threads run on socket 1 from the second sample on, migrating 30 times a second;
    rank 5, re-pinned to its whole socket before the third sample; rank 7, gone at the third.
    Every rank's memory is 98 % on its GPU's node."""
    t = Tree(f"watch-h100/{step}")
    t.nvidia(H100_GPUS)
    t.process(1000, "gpubind", "0-223", [(1000, "gpubind", "0-223", 5, 3)], [], cmd=["gpubind", "launch", "--", "python", "train.py"])
    for r in range(8):
        if r == 7 and step == 2:
            continue
        cpus = h100_cpus(r)
        env = gpubind_env(r, cpus, r // 4)
        env["RANK"] = str(8 + r)
        ticks = 50 * step
        last = [first(cpus) + 1, first(cpus) + 2]
        mig = [4, 9]
        if r == 3 and step > 0:
            last = [60, 61]
            mig = [4 + 15 * step, 9 + 15 * step]
        thread_cpus = cpus
        if r == 5 and step == 2:
            thread_cpus = "56-111,168-223"
        threads = [(2000 + 10 * r, "python", thread_cpus, last[0], mig[0], ticks),
                   (2001 + 10 * r, "pt_main_thread", thread_cpus, last[1], mig[1], ticks)]
        t.process(2000 + 10 * r, "python", thread_cpus, threads, [f"/dev/nvidia{r}", "/dev/nvidiactl", "/dev/nvidia-uvm"],
                  env=env, ppid=1000, numa=[(r // 4, 50000), (1 - r // 4, 1200)],
                  cmd=["python", "train.py", "--local-rank", str(r)])


def main():
    h100_job("h100-good", lambda r, c, e, th, n: None)
    shutil.rmtree(os.path.join(HERE, "watch-h100"), ignore_errors=True)
    for step in range(3):
        h100_watch(step)

    # Rank 3 placed by a GPU-unaware launcher on socket 1, far from GPU 3 (socket 0).
    def wrong_socket(r, cpus, env, threads, numa):
        if r != 3:
            return None
        c = "56-69,168-181"
        env = {"LOCAL_RANK": "3"}
        return c, env, [(2030, "python", c, 60, 40), (2031, "pt_main_thread", c, 61, 12)], numa
    h100_job("h100-wrong-socket", wrong_socket)

    # Ranks 0 and 1 given the same block of CPUs (no gpubind).
    def overlap(r, cpus, env, threads, numa):
        if r > 1:
            return None
        c = "0-20,112-132"
        return c, {"LOCAL_RANK": str(r)}, [(2000 + 10 * r, "python", c, 3 + r, 7)], numa
    h100_job("h100-overlap", overlap)

    # Rank 2 never bound: allowed everywhere, a thread last ran on socket 1.
    def unbound(r, cpus, env, threads, numa):
        if r != 2:
            return None
        c = "0-223"
        return c, {"LOCAL_RANK": "2"}, [(2020, "python", c, 30, 55), (2021, "pt_main_thread", c, 100, 81)], numa
    h100_job("h100-unbound", unbound)

    # Rank 0's memory was first touched before binding: most pages on node 1.
    def remote(r, cpus, env, threads, numa):
        if r != 0:
            return None
        return cpus, env, threads, [(0, 9000), (1, 41000)]
    h100_job("h100-remote-memory", remote)

    # Rank 5's affinity reset after start (a runtime widened it to the whole socket).
    def drifted(r, cpus, env, threads, numa):
        if r != 5:
            return None
        c = "56-111,168-223"
        return c, env, [(2050, "python", c, 60, 30), (2051, "omp_worker", c, 90, 12)], numa
    h100_job("h100-drifted", drifted)

    # AMD: two ranks on a Frontier-type node, holding /dev/kfd and their render nodes.
    t = Tree("frontier-amd")
    for node, bus in [("renderD128", "0000:c1:00.0"), ("renderD129", "0000:c6:00.0"), ("card0", "0000:c1:00.0")]:
        t.drm(node, bus)
    t.process(3000, "python", "49-55,113-119", [(3000, "python", "49-55,113-119", 50, 2)],
              ["/dev/kfd", "/dev/dri/renderD128"], env={"LOCAL_RANK": "0"}, cmd=["python", "train.py"])
    t.process(3001, "python", "0-7,64-71", [(3001, "python", "0-7,64-71", 3, 2)],
              ["/dev/kfd", "/dev/dri/renderD129", "/dev/dri/card0"], env={"LOCAL_RANK": "1"}, cmd=["python", "train.py"])
    # Malformed and half-gone processes: a status file with a broken CPU list, a process whose
    # task directory vanished while it was being read.
    t = Tree("broken")
    t.nvidia(H100_GPUS[:1])
    t.process(4000, "python", "0-13,112-125", [(4000, "python", "0-13,112-125", 1, 0)], ["/dev/nvidia0"])
    write(f"{t.root}/proc/4001/status", status("python", 4001, 1, "0-x3"))
    write(f"{t.root}/proc/4002/status", status("python", 4002, 1, "0-3"))
    # An exited rank its launcher has not reaped yet (a zombie) and a kernel thread.
    write(f"{t.root}/proc/4004/status", status("python", 4004, 1, "0-3").replace("S (sleeping)", "Z (zombie)"))
    write(f"{t.root}/proc/2/status", status("kthreadd", 2, 0, "0-223") + "Kthread:\t1\n")
    # Kubernetes: two ranks in two pods of namespace "training" (containerd, the systemd cgroup
    # driver), each holding its GPU, and nvidia-persistenced holding every GPU. The CRI's log links
    # name each container (/var/log/containers/POD_NAMESPACE_CONTAINER-ID.log); watch labels the
    # ranks with them, and the daemon is a GPU holder, not a rank.
    t = Tree("h100-k8s")
    t.nvidia(H100_GPUS)
    pods = [("llama-worker-0", "a3f1c2d4-5b6e-4f70-8a9b-0c1d2e3f4a50", "4e1c" * 16),
            ("llama-worker-1", "b7e2d3c5-6f70-4a81-9bac-1d2e3f4a5b61", "9d0b" * 16)]
    for r, (pod, uid, cid) in enumerate(pods):
        cpus = h100_cpus(r)
        pid = 5000 + 10 * r
        t.process(pid, "python", cpus, [(pid, "python", cpus, first(cpus) + 1, 4), (pid + 1, "pt_nccl_0", cpus, first(cpus) + 2, 2)],
                  [f"/dev/nvidia{r}", "/dev/nvidiactl"], env={"RANK": str(r), "LOCAL_RANK": "0"}, cmd=["python", "train.py"])
        slice_uid = uid.replace("-", "_")
        write(f"{t.root}/proc/{pid}/cgroup",
              f"0::/../../kubepods.slice/kubepods-pod{slice_uid}.slice/cri-containerd-{cid}.scope\n")
        write(f"{t.root}/var/log/containers/{pod}_training_trainer-{cid}.log", "")
    t.process(900, "nvidia-persiste", "0-223", [(900, "nvidia-persiste", "0-223", 7, 1)],
              [f"/dev/nvidia{i}" for i in range(8)] + ["/dev/nvidiactl"], cmd=["/usr/bin/nvidia-persistenced", "--user", "nvidia-persistenced"])
    write(f"{t.root}/proc/900/cgroup", "0::/system.slice/nvidia-persistenced.service\n")
    print("wrote", ", ".join(sorted(d for d in os.listdir(HERE) if os.path.isdir(os.path.join(HERE, d)))))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""A small PyTorch DDP training job (CPU, gloo) for `gpubind launch`.

Each rank trains a two-layer MLP on random data for a few steps and prints one JSON line:
its ranks, the CPUs it is bound to (sched_getaffinity), the NUMA nodes it may allocate on, the
CPU it last ran on, gpubind's record of the binding (GPUBIND_*), and its step times.

    gpubind launch -n 2 -- /usr/bin/python3 examples/ddp_train.py --steps 20
    gpubind launch -n 2 -- /usr/bin/python3 examples/ddp_train.py --seconds 8

With --print-steps, every rank also prints each step's time, one line each ("step 3 12.345 ms"),
after the last step, for `gpubind bench --ab`'s --step-regex:

    gpubind bench --ab closest,none -n 2 --step-regex 'step [0-9]+ (?<ms>[0-9.]+) ms' \
        -- /usr/bin/python3 examples/ddp_train.py --steps 60 --print-steps

With --seconds, every rank steps until rank 0 has trained that long: the ranks agree on each
step (an all-reduce of rank 0's verdict), so none leaves the loop while another still waits in
backward()'s all-reduce.
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn


def status_field(name):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(name + ":"):
                return line.split(":", 1)[1].strip()
    return ""


def last_cpu():
    with open("/proc/self/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[36])


# The --seconds verdict all-reduced every step. One tensor for the whole run, held by this module
# until the interpreter exits: when a tensor made in Python is last released by gloo's worker
# thread, that thread needs the GIL, and torch 1.13 joins it holding the GIL when the DDP model
# and its process group are freed at the end of main(): a deadlock (seen: rank 1 spinning at
# 100 % CPU for 12 minutes after rank 0 had exited).
_GO = torch.ones(1, dtype=torch.int64)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=0, help="step until this many seconds have passed (not --steps)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--print-steps", action="store_true", help="print every step's time, one line each, at the end")
    args = ap.parse_args()

    dist.init_process_group("gloo")  # MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE from the launcher
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(1234 + rank)
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))

    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    steps = []
    start = time.perf_counter()

    def more():
        if args.seconds <= 0:
            return len(steps) < args.steps
        if not steps:
            return True
        _GO.fill_(1 if rank != 0 or time.perf_counter() - start < args.seconds else 0)
        dist.all_reduce(_GO, op=dist.ReduceOp.MIN)
        return bool(_GO.item())

    while more():
        x = torch.randn(args.batch, 256)
        y = torch.randint(0, 10, (args.batch,))
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()  # gradients are all-reduced across ranks here
        opt.step()
        steps.append(time.perf_counter() - t0)
    dist.barrier()

    report = {
        "rank": rank,
        "world_size": world,
        "local_rank": int(os.environ["LOCAL_RANK"]),
        "cpus": sorted(os.sched_getaffinity(0)),
        "cpus_allowed_list": status_field("Cpus_allowed_list"),
        "mems_allowed_list": status_field("Mems_allowed_list"),
        "last_cpu": last_cpu(),
        "gpubind_cpus": os.environ.get("GPUBIND_CPUS"),
        "gpubind_mem": os.environ.get("GPUBIND_MEM"),
        "pool_env": {n: os.environ.get(n) for n in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")},
        "torch_threads": torch.get_num_threads(),
        "loss": round(float(loss), 4),
        "steps": len(steps),
        "step_ms": {"median": round(sorted(steps)[len(steps) // 2] * 1000, 2), "max": round(max(steps) * 1000, 2)},
    }
    # One write per line, so ranks sharing a terminal do not interleave inside a line.
    if args.print_steps:
        sys.stdout.write("".join("step %d %.3f ms\n" % (i, t * 1000) for i, t in enumerate(steps)))
    sys.stdout.write("DDP " + json.dumps(report) + "\n")
    sys.stdout.flush()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

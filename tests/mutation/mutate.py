#!/usr/bin/env python3
"""The mutation check: each deliberate breakage below is applied to the source in turn, the
targets it touches rebuilt in BUILD, and the tests of its labels run; the suite must fail for
every one (the breakage is "killed"). The source is restored after each, whatever happens, and the
targets rebuilt from it at the end. A breakage that no longer applies (its text is not found
exactly once) fails the check too, so the list stays true as the code moves.

Usage: tests/mutation/mutate.py BUILD [NAME...]   (from the repository root; JOBS for the build)
"""
import os
import subprocess
import sys
import time

UNIT = (["gpubind_unit_tests"], "unit")
CLI = (["gpubind"], "cli")

# name, file, text, replacement, (targets, ctest label): one breakage each, named after what it breaks.
MUTATIONS = [
    ("bind: a thread-pool size the user set overridden", "src/bind/apply.cpp",
     "if (plan::is_user_kept_env(k) && before) continue;", "if (plan::is_user_kept_env(k) && before && false) continue;", UNIT),
    ("watch: OVERSUBSCRIBED blind to the rank's children", "src/watch/watch.cpp",
     "pool.cpu += window[j]->cpu;", "pool.cpu += j == i ? window[j]->cpu : 0;", UNIT),
    ("check: THROTTLED at a quarter of the periods", "src/check/contention.cpp",
     "double(throttled) <= share * double(periods)", "double(throttled) < share * double(periods)", UNIT),
    ("check: NCCL's PXN connections counted as the rank's own NIC", "src/check/nccl_log.cpp",
     "    if (tail.starts_with(\"(\")) {", "    if (false) {", UNIT),
    ("check: a silent NCCL through 2.27 taken as bound", "src/check/nccl_check.cpp",
     "if (nccl_version(p.version)) return !says_empty_sets(p);", "if (nccl_version(p.version)) return !says_empty_sets(p) && p.pid < 0;", UNIT),
    ("k8s: a container judged by what it was given, not its cgroup", "src/k8s/judge.cpp",
     "if (const NodeState::CgroupCpus* cg = cgroup_of(c, s)) {", "if (const NodeState::CgroupCpus* cg = c.exclusive ? nullptr : cgroup_of(c, s)) {", UNIT),
    ("k8s: SPLIT_L3 only for CPUs two caches too wide", "src/k8s/judge.cpp",
     "if (touched <= needed) return;", "if (touched <= needed + 1) return;", UNIT),
    ("plan: oversubscribed ranks all on one core", "src/plan/cpu_split.cpp",
     "s.blocks[r] = cores[r % n]->pus & domain;", "s.blocks[r] = cores[0]->pus & domain;", UNIT),
    ("plan: socket policy planned as numa", "src/plan/rank_cpus.cpp",
     "return pkg.empty() ? node : pkg;", "return node;", UNIT),
    ("plan: fewer ranks than GPUs left on the first GPUs", "src/plan/gpu_spread.cpp",
     "if (ranks < 2 || size_t(ranks) * k >= visible.size()) return visible;", "return visible;", UNIT),
    ("plan: a rank alone on its NUMA node kept to its GPU's L3", "src/plan/rank_cpus.cpp",
     "if (req.policy == Policy::closest) widen_lone_ranks(c, gpus_of, targets);", "if (false) widen_lone_ranks(c, gpus_of, targets);", UNIT),
    ("plan: gpubind.conf ignored by plan", "src/cli/cmd_plan.cpp",
     "if (f.no_config) return Ok{};", "return Ok{};", CLI),
    ("bind: interleave applied as preferred", "src/bind/apply.cpp",
     ": rb.mem_policy == MemPolicy::interleave ? sys::MemMode::interleave", ": rb.mem_policy == MemPolicy::interleave ? sys::MemMode::preferred", UNIT),
    ("bind: a memory policy refused by the container stops the job", "src/bind/apply.cpp",
     "if (refusal && refused == MemRefused::warn) {", "if (refusal && refused != MemRefused::warn) {", UNIT),
    ("bind: a launcher inside a one-task Slurm step ignored", "src/topo/launcher_env.cpp",
     "if ((*lr)->size.value_or(1) > 1) return *lr;", "if (false) return *lr;", UNIT),
    ("watch: MIGRATING at the threshold", "src/watch/rules.cpp",
     "r.migrations_per_second <= th.migrations_per_second", "r.migrations_per_second < th.migrations_per_second", UNIT),
    ("watch: DRIFTED threads ignored", "src/watch/rules.cpp",
     "if (!changed.empty()) return", "if (false) return", UNIT),
    ("watch: DRIFTED not held after a change", "src/watch/rules.cpp",
     "*e.since_change <= th.drift_hold", "*e.since_change < 0", UNIT),
    ("check: GPU daemons judged as ranks", "src/check/check.cpp",
     "if (!r.holder.empty()) {", "if (false) {", UNIT),
    ("watch: IMBALANCE of CPU time never judged", "src/watch/rules.cpp",
     "if (cpu && cpu->imbalance > th.imbalance)", "if (cpu && cpu->imbalance > 1.0)", UNIT),
    ("watch: samples drift by their own cost", "src/watch/run.cpp",
     "clock.sleep_for(std::chrono::duration_cast<Ms>(due - at));", "clock.sleep_for(step);", UNIT),
    ("rebind: threads a library pinned within the rank's CPUs moved anyway", "src/rebind/rebind.cpp",
     "if (!all_threads && !before.empty() && before.is_subset_of(target)) return ThreadAction::within;",
     "if (!all_threads && false) return ThreadAction::within;", UNIT),
    ("rebind: a rank moved outside its cgroup's cpuset", "src/rebind/rebind.cpp",
     "rp.cpus = b.cpus & rp.cgroup;", "rp.cpus = b.cpus;", UNIT),
    ("enforce: no rate limit per rank", "src/rebind/enforce.cpp",
     "now - last->second < m_o.gap_seconds", "now - last->second < 0", UNIT),
    ("doctor: an interrupt on another node judged local", "src/doctor/doctor.cpp",
     "if ((*i.cpus & *near).empty())", "if (false)", UNIT),
    ("doctor: Slurm's CpuSpecList read as OS CPU numbers", "src/doctor/doctor.cpp",
     "CpuSet out = cpus_of_slurm_cores(t, plan::slurm_cpu_spec_cores(*ids, threads), cores_beyond);",
     "CpuSet out = *ids;", UNIT),
    ("plan: RestrictedCoresPerGPU given specialized cores", "src/plan/slurm_node.cpp",
     "for (unsigned c : (lines[i].cores - specialized - out.all).ids()) {",
     "for (unsigned c : (lines[i].cores - (specialized - specialized) - out.all).ids()) {", UNIT),
    ("bench: a placement's strategies compared with the other placement's closest", "src/bench/record.cpp",
     'return s.name == "closest" && s.noise == placement;', 'return s.name == "closest";', UNIT),
    ("bench --ab: step times read from every rank's lines", "src/bench/ab.cpp",
     "if (!line.starts_with(tag) || line.size() > kMaxStepLine) continue;", "if (line.size() > kMaxStepLine) continue;", UNIT),
    ("bench: the machine's load judged against the CPUs a Slurm step allowed", "src/bench/record.cpp",
     "if (m.load_before && m.cpus && *m.load_before >= 0.5 * m.cpus)", "if (m.load_before && m.cpus && *m.load_before >= 0.5 * m.allowed_cpus)", UNIT),
    ("enforce: a task its user bound (srun --cpu-bind, --gpubind=none) fought", "src/rebind/enforce.cpp",
     "how != own->env.end() && !own->env.count(topo::binding_env::kCpus) &&", "false && !own->env.count(topo::binding_env::kCpus) &&", UNIT),
    ("rebind: a forged SLURM_JOB_ID joins another user's job", "src/rebind/rebind.cpp",
     "std::map<int, std::string> apart = check::outside_their_job(states);", "std::map<int, std::string> apart = check::outside_their_job({});", UNIT),
    ("bench --ab: a verdict from too few runs", "src/bench/ab.cpp",
     "if (std::min(s.runs, rep.strategies[0].runs) < kMinAbRunsForVerdict)", "if (false)", UNIT),
    ("cli: every error exits 1", "src/cli/common.cpp",
     "return e.kind == ErrorKind::usage ? kExitUsage : kExitFailure;", "return e.kind == ErrorKind::usage ? kExitFailure : kExitFailure;", CLI),
]


def run(cmd, cwd=None):
    return subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    build = sys.argv[1]
    wanted = sys.argv[2:]
    jobs = os.environ.get("JOBS", str(os.cpu_count() or 1))
    chosen = [m for m in MUTATIONS if not wanted or m[0] in wanted]
    bad = 0
    targets_touched = set()
    for name, path, text, replacement, (targets, label) in chosen:
        t0 = time.time()
        original = open(path).read()
        count = original.count(text)
        if count != 1:
            print(f"mutation: {name}: no longer applies ('{text}' found {count} times in {path})")
            bad += 1
            continue
        targets_touched.update(targets)
        try:
            with open(path, "w") as f:
                f.write(original.replace(text, replacement))
            b = run(["cmake", "--build", build, "-j", jobs, "--target", *targets])
            if b.returncode != 0:
                print(f"mutation: {name}: does not build (fix the mutation):\n{b.stdout[-3000:]}")
                bad += 1
                continue
            if label == "unit":
                # The unit tests' own binary: a second, where ctest spends 5-20 starting 470 processes.
                # It stops at the first failure: one failing test kills the breakage.
                t = run([os.path.join(build, "tests", "gpubind_unit_tests"), "--gtest_brief=1", "--gtest_fail_fast"])
                failed = [l.split("]", 1)[1].strip().split(" ")[0] for l in t.stdout.splitlines() if l.startswith("[  FAILED  ]") and "," not in l]
            else:
                t = run(["ctest", "-j", jobs, "-L", label, "--timeout", "120", "--stop-on-failure"], cwd=build)
                failed = [l.split(":", 1)[1].split("...")[0].strip() for l in t.stdout.splitlines()
                          if "***Failed" in l or "***Exception" in l or "***Timeout" in l]
            failed = sorted(set(failed))
            secs = time.time() - t0
            if t.returncode != 0 and failed:
                first = failed[0]
                print(f"mutation: {name}: killed by {label} test {first} ({secs:.0f} s)")
            else:
                print(f"mutation: {name}: SURVIVED: every {label} test passed with it ({secs:.0f} s)")
                bad += 1
        finally:
            with open(path, "w") as f:
                f.write(original)
    if targets_touched:
        r = run(["cmake", "--build", build, "-j", jobs, "--target", *sorted(targets_touched)])
        if r.returncode != 0:
            print("mutation: the restored source does not build:\n" + r.stdout[-3000:])
            bad += 1
    print(f"mutation: {len(chosen) - bad} of {len(chosen)} breakages killed" if not bad else f"mutation: {bad} problem(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

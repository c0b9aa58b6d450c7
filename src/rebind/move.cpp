#include "rebind/move.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "probe/probe.hpp"
#include "sys/cgroup_cpuset.hpp"
#include "sys/rebind_record.hpp"
#include "util/strings.hpp"

namespace gpubind::rebind {

namespace {

std::string proc_dir(int pid) { return "proc/" + std::to_string(pid); }

std::optional<std::map<unsigned, uint64_t>> pages_of(const sys::FsRoot& root, int pid, std::string* policy = nullptr) {
  auto maps = root.read(proc_dir(pid) + "/numa_maps");
  if (!maps) return std::nullopt;
  if (policy) *policy = probe::numa_maps_policy(*maps);
  return probe::sum_numa_maps(*maps);
}

// The nodes holding pages that are not the rank's.
CpuSet nodes_to_leave(const std::optional<std::map<unsigned, uint64_t>>& pages, const CpuSet& to) {
  CpuSet from;
  if (pages)
    for (const auto& [node, n] : *pages)
      if (n > 0 && !to.test(node)) from.set(node);
  return from;
}

CpuSet node_set(const std::vector<unsigned>& nodes) {
  CpuSet s;
  for (unsigned n : nodes) s.set(n);
  return s;
}

// What the plan says, nothing changed.
ProcessMove as_planned(const RankPlan& r, const ProcessPlan& p) {
  ProcessMove m{p.pid, p.comm, {}, {}, "", std::nullopt};
  for (const ThreadPlan& t : p.threads) m.threads.push_back({t.tid, t.comm, t.before, t.before, t.action, false, ""});
  m.memory.before = p.pages;
  m.memory.to = node_set(r.mem_nodes);
  if (!r.mem_nodes.empty()) m.memory.from = nodes_to_leave(p.pages, m.memory.to);
  return m;
}

// Step 1 for one thread; false when the process must stop (m.error set, or m.gone: the process
// held since the start ended, so its thread ids may be another's by now).
bool move_thread(const RankPlan& r, int pid, int tid, const std::string& comm, sys::TaskMover& mover, bool all_threads, ProcessMove& m) {
  if (!mover.held_alive(pid)) {
    m.gone = "ended while its threads were moved: stopped there (its thread ids may be another process's now)";
    return false;
  }
  ThreadMove t{tid, comm, {}, {}, ThreadAction::move, false, ""};
  auto before = mover.affinity(tid);
  if (!before) {
    if (before.error().kind != ErrorKind::not_found) {
      m.error = before.error();
      return false;
    }
    t.note = "ended before it was moved";
    m.threads.push_back(std::move(t));
    return true;
  }
  t.before = t.after = *before;
  t.action = thread_action(*before, r.cpus, all_threads);
  if (t.action == ThreadAction::move) {
    if (Status s = mover.set_affinity(tid, r.cpus); !s) {
      if (s.error().kind != ErrorKind::not_found) {
        t.note = "not moved: " + s.error().message();
        m.threads.push_back(std::move(t));
        m.error = s.error();
        return false;
      }
      t.note = "ended before it was moved";
    } else {
      t.after = r.cpus;
      t.moved = true;
    }
  }
  m.threads.push_back(std::move(t));
  return true;
}

// Step 1 for one process: every thread, listed again until no new one appears.
bool move_threads(const RankPlan& r, const ProcessPlan& p, const sys::FsRoot& root, sys::TaskMover& mover, bool all_threads,
                  ProcessMove& m) {
  std::map<int, std::string> comm;
  for (const ThreadPlan& t : p.threads) comm[t.tid] = t.comm;
  std::set<int> done;
  for (int pass = 0; pass < kPasses; ++pass) {
    auto tids = root.list(proc_dir(p.pid) + "/task");
    if (!tids) {
      m.gone = tids.error().kind == ErrorKind::not_found ? "ended while its threads were moved" : "";
      if (m.gone.empty()) m.error = tids.error();
      return false;
    }
    bool fresh = false;
    for (const std::string& name : *tids) {
      auto tid = parse_uint(name);
      if (!tid || !done.insert(int(*tid)).second) continue;
      fresh = true;
      std::string c = comm[int(*tid)];
      if (c.empty())
        if (auto text = root.read(proc_dir(p.pid) + "/task/" + name + "/comm")) c = std::string(trim(*text));
      if (!move_thread(r, p.pid, int(*tid), c, mover, all_threads, m)) return false;
    }
    if (!fresh) return true;
  }
  return true;
}

// Step 2: the pages on other nodes to the rank's.
void move_memory(const RankPlan& r, const ProcessPlan& p, const sys::FsRoot& root, sys::TaskMover& mover, ProcessMove& m) {
  MemoryMove& mem = m.memory;
  mem.to = node_set(r.mem_nodes);
  if (r.mem_nodes.empty()) {
    mem.note = "no memory node planned: pages stay where they are";
    return;
  }
  std::string policy;
  mem.before = pages_of(root, p.pid, &policy);
  // numactl --membind=1, srun --mem-bind: the process's own policy, which no other process can
  // change, keeps sending new pages off the planned nodes.
  if (CpuSet named = probe::policy_nodes(policy); !named.empty() && !named.is_subset_of(mem.to)) {
    mem.policy = policy;
    mem.policy_nodes = named;
  }
  if (!mem.before) {
    mem.note = "numa_maps not readable: where its pages are is unknown, none moved";
    return;
  }
  mem.from = nodes_to_leave(mem.before, mem.to);
  if (mem.from.empty()) {
    mem.note = "already on node " + mem.to.to_list();
    return;
  }
  uint64_t start = mover.now_ns();
  auto left = mover.migrate_pages(p.pid, mem.from, mem.to);
  mem.ns = mover.now_ns() - start;
  if (!left) {
    if (left.error().kind == ErrorKind::not_found) {
      m.gone = "ended before its pages were moved";
    } else if (left.error().kind == ErrorKind::permission) {
      // A container's seccomp profile may refuse migrate_pages (Debian podman's does): the threads
      // are moved, the pages stay, and the job runs on, as exec's refused memory policy does.
      mem.refused = true;
      mem.note = "not moved: " + left.error().message() + " (a container's seccomp profile, or no CAP_SYS_NICE)";
    } else {
      m.error = left.error();
    }
    return;
  }
  mem.done = true;
  mem.not_moved = *left;
  mem.after = pages_of(root, p.pid);
}

}  // namespace

std::map<int, CpuSet> cgroup_cpus(const sys::FsRoot& root, const std::vector<probe::ProcessState>& states) {
  std::map<int, CpuSet> cgroups;
  for (const probe::ProcessState& s : states)
    if (auto c = sys::cgroup_allowed_cpus(root, std::to_string(s.pid))) cgroups[s.pid] = c->cpus;
  return cgroups;
}

Outcome move(const MovePlan& plan, const sys::FsRoot& root, sys::TaskMover* mover, bool dry_run) {
  Outcome out;
  out.dry_run = dry_run || !mover;
  for (const RankPlan& r : plan.ranks) {
    RankMove rm{r, {}};
    for (const ProcessPlan& p : r.processes) {
      if (out.dry_run) {
        rm.processes.push_back(as_planned(r, p));
        continue;
      }
      ProcessMove m{p.pid, p.comm, {}, {}, "", std::nullopt};
      // Held from here on, and still the process probed: a PID the rank left to another process
      // while rebind was busy with earlier ranks is skipped, never moved as the rank.
      Status held = p.start_time ? mover->hold(p.pid, *p.start_time) : Status(Ok{});
      if (!held) {
        if (held.error().kind == ErrorKind::not_found) m.gone = held.error().why;
        else m.error = held.error();
      } else if (move_threads(r, p, root, *mover, plan.all_threads, m) && !m.error && m.gone.empty() && mover->held_alive(p.pid)) {
        move_memory(r, p, root, *mover, m);
      }
      mover->release(p.pid);
      if (m.error) ++(m.error->kind == ErrorKind::permission ? out.refused : out.failed);
      rm.processes.push_back(std::move(m));
    }
    out.ranks.push_back(std::move(rm));
  }
  return out;
}

std::vector<std::string> keep_records(const Outcome& o) {
  std::vector<std::string> warnings;
  if (o.dry_run) return warnings;
  for (const RankMove& r : o.ranks)
    for (const ProcessMove& m : r.processes) {
      auto planned = std::find_if(r.plan.processes.begin(), r.plan.processes.end(), [&](const ProcessPlan& p) { return p.pid == m.pid; });
      bool moved = std::any_of(m.threads.begin(), m.threads.end(), [](const ThreadMove& t) { return t.moved || t.action != ThreadAction::move; });
      if (planned == r.plan.processes.end() || !planned->start_time || m.error || !m.gone.empty() || !moved) continue;
      CpuSet mems;
      for (unsigned n : r.plan.mem_nodes) mems.set(n);
      if (Status s = sys::write_rebind_record(m.pid, *planned->start_time, r.plan.cpus, mems); !s)
        warnings.push_back("PID " + std::to_string(m.pid) + " (" + m.comm + "): what was applied is not kept (" + s.error().message() +
                           "): watch --enforce and check judge it by GPUBIND_CPUS, if it has one");
    }
  return warnings;
}

void apply_repins(std::vector<Repin>& repins, sys::TaskMover& mover, bool act) {
  std::map<int, std::string> not_held;  // PID -> why it is no longer the process sampled
  std::set<int> held;
  for (Repin& r : repins) {
    if (r.start_time && !held.count(r.pid) && !not_held.count(r.pid)) {
      if (Status h = mover.hold(r.pid, *r.start_time); h) held.insert(r.pid);
      else not_held[r.pid] = h.error().message();
    }
    if (auto it = not_held.find(r.pid); it != not_held.end() || !mover.held_alive(r.pid)) {
      r.outcome = RepinOutcome::gone;
      r.error = it != not_held.end() ? it->second : "PID " + std::to_string(r.pid) + " ended";
      continue;
    }
    auto now = mover.affinity(r.tid);
    if (!now) {
      r.outcome = now.error().kind == ErrorKind::not_found ? RepinOutcome::gone : RepinOutcome::failed;
      r.error = now.error().message();
      continue;
    }
    r.from = *now;
    if (now->is_subset_of(r.to)) {
      r.outcome = RepinOutcome::already;
      continue;
    }
    if (!act) {
      r.outcome = RepinOutcome::reported;
      continue;
    }
    Status s = mover.set_affinity(r.tid, r.to);
    r.outcome = s ? RepinOutcome::repinned : s.error().kind == ErrorKind::not_found ? RepinOutcome::gone : RepinOutcome::failed;
    if (!s) r.error = s.error().message();
  }
  for (int pid : held) mover.release(pid);
}

EnforceRound enforce_round(Enforcer& enforcer, const topo::Topology& t, const sys::FsRoot& root,
                           const std::vector<probe::ProcessState>& states, double now, sys::TaskMover& mover) {
  // The cgroups are read only when the processes changed: the plan is made again then alone.
  std::map<int, CpuSet> cgroups = enforcer.needs_plan(states) ? cgroup_cpus(root, states) : std::map<int, CpuSet>{};
  std::vector<Repin> repins = enforcer.decide(t, states, cgroups, now);
  EnforceRound round;
  round.notes = enforcer.take_notes();
  apply_repins(repins, mover, enforcer.acts());
  enforcer.record(repins);
  for (Repin& r : repins)
    if (r.outcome != RepinOutcome::already && r.outcome != RepinOutcome::gone) round.repins.push_back(std::move(r));
  return round;
}

}  // namespace gpubind::rebind

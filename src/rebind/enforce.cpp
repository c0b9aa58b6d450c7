#include "rebind/enforce.hpp"

#include "check/check.hpp"
#include "topo/binding_env.hpp"

namespace gpubind::rebind {

const char* to_string(RepinOutcome o) {
  switch (o) {
    case RepinOutcome::planned: return "planned";
    case RepinOutcome::repinned: return "repinned";
    case RepinOutcome::reported: return "reported";
    case RepinOutcome::already: return "already";
    case RepinOutcome::gone: return "gone";
    case RepinOutcome::failed: return "failed";
  }
  return "?";
}

void Enforcer::replan(const topo::Topology& t, const std::vector<probe::ProcessState>& states, const std::map<int, CpuSet>& cgroup_cpus) {
  m_target.clear();
  m_planned_for.clear();
  for (const probe::ProcessState& s : states) m_planned_for.insert(s.pid);
  Planned p = make_plan(t, states, cgroup_cpus, m_o.plan);
  for (const Error& e : p.refusals)
    if (m_said.insert(e.message()).second) m_notes.push_back("enforce: the job is left alone: " + e.message());
  if (!p.refusals.empty()) return;
  std::map<int, const probe::ProcessState*> by_pid;
  for (const probe::ProcessState& s : states) by_pid[s.pid] = &s;
  for (const RankPlan& r : p.plan.ranks) {
    Target target{r.cpus, r.pid(), r.local_rank, "plan"};
    // What gpubind applied, where it bound the rank: the binding check's DRIFTED judges by.
    const probe::ProcessState* own = by_pid[r.pid()];
    // A task the SPANK plugin left as its user chose (srun --cpu-bind, --gpubind=none), and that
    // gpubind did not bind later: the user's binding wins here too.
    if (auto how = own->env.find(topo::binding_env::kBinding); how != own->env.end() && !own->env.count(topo::binding_env::kCpus) &&
        !own->rebound_cpus) {
      std::string note = "enforce: rank " + (r.local_rank.empty() ? "?" : r.local_rank) + " (PID " + std::to_string(r.pid()) +
                         ") is left as its user bound it (" + topo::binding_env::kBinding + "=" + how->second + ")";
      if (m_said.insert(note).second) m_notes.push_back(note);
      continue;
    }
    if (own->rebound_cpus && !(*own->rebound_cpus & r.cgroup).empty())  // what gpubind rebind applied since
      target = {*own->rebound_cpus & r.cgroup, r.pid(), r.local_rank, "gpubind rebind"};
    else if (auto it = own->env.find(topo::binding_env::kCpus); it != own->env.end())
      if (auto applied = CpuSet::parse_list(it->second); applied && !(*applied & r.cgroup).empty())
        target = {*applied & r.cgroup, r.pid(), r.local_rank, topo::binding_env::kCpus};
    for (const ProcessPlan& pp : r.processes) m_target[pp.pid] = target;
  }
}

bool Enforcer::needs_plan(const std::vector<probe::ProcessState>& states) const {
  std::set<int> pids;
  for (const probe::ProcessState& s : states) pids.insert(s.pid);
  return pids != m_planned_for;
}

std::vector<Repin> Enforcer::decide(const topo::Topology& t, const std::vector<probe::ProcessState>& states,
                                    const std::map<int, CpuSet>& cgroup_cpus, double now) {
  if (needs_plan(states)) replan(t, states, cgroup_cpus);
  std::map<int, std::vector<Repin>> by_rank;
  std::map<int, CpuSet> drifted;  // thread -> the CPUs it is allowed off its target, this sample
  for (const probe::ProcessState& s : states) {
    auto it = m_target.find(s.pid);
    if (it == m_target.end()) continue;
    const Target& target = it->second;
    for (const probe::ThreadState& th : s.threads) {
      if (th.cpus_allowed.empty() || th.cpus_allowed.is_subset_of(target.cpus)) continue;
      drifted[th.tid] = th.cpus_allowed;
      // Reported only: a thread still off its CPUs as it was reported is the same drift, not a new one.
      if (auto seen = m_reported.find(th.tid); !m_o.act && seen != m_reported.end() && seen->second == th.cpus_allowed) continue;
      by_rank[target.rank_pid].push_back({s.pid, th.tid, th.comm, target.rank_pid, target.local_rank, th.cpus_allowed, target.cpus,
                                          target.source, m_o.act ? RepinOutcome::planned : RepinOutcome::reported, "", s.start_time});
    }
  }
  // A reported thread that came back (or ended) drifts anew when it next leaves.
  std::erase_if(m_reported, [&](const auto& r) { auto d = drifted.find(r.first); return d == drifted.end() || d->second != r.second; });
  std::vector<Repin> out;
  for (auto& [rank, repins] : by_rank) {
    if (auto last = m_last.find(rank); last != m_last.end() && now - last->second < m_o.gap_seconds) continue;
    m_last[rank] = now;
    for (Repin& r : repins) out.push_back(std::move(r));
  }
  return out;
}

void Enforcer::record(const std::vector<Repin>& done) {
  // One event per rank per round, however many of its threads moved: one `taskset -ap` on a rank
  // of four threads is one repin, not four.
  std::set<int> ranks;
  for (const Repin& r : done) {
    if (r.outcome != RepinOutcome::repinned && r.outcome != RepinOutcome::reported) continue;
    ranks.insert(r.rank_pid);
    if (r.outcome == RepinOutcome::reported) m_reported[r.tid] = r.from;
  }
  for (int rank : ranks) ++m_totals[rank];
}

std::vector<std::string> Enforcer::take_notes() {
  std::vector<std::string> n;
  n.swap(m_notes);
  return n;
}

}  // namespace gpubind::rebind

#include "check/check.hpp"

#include <algorithm>
#include <set>
#include <map>

#include "check/contention.hpp"
#include "topo/binding_env.hpp"
#include "topo/launcher_env.hpp"
#include "util/strings.hpp"

namespace gpubind::check {

namespace {
std::string first_env(const probe::ProcessState& p, const auto& names) {
  for (const char* n : names)
    if (auto it = p.env.find(n); it != p.env.end() && !it->second.empty()) return it->second;
  return "";
}
}  // namespace

// What gpubind bound it as, else what its launcher says (the rule `exec` binds by); a value the
// launcher set to nonsense is shown as it is.
std::string local_rank_of(const probe::ProcessState& p) {
  if (auto it = p.env.find(topo::binding_env::kLocalRank); it != p.env.end() && !it->second.empty()) return it->second;
  if (auto lr = topo::detect_local_rank(p.env); lr && *lr) return p.env.at((*lr)->source);
  std::vector<const char*> ranks;
  for (const auto& v : topo::launcher_env::kLocalRank) ranks.push_back(v.rank);
  return first_env(p, ranks);
}
std::string global_rank_of(const probe::ProcessState& p) { return first_env(p, topo::launcher_env::kGlobalRank); }
std::string job_of(const probe::ProcessState& p) { return first_env(p, topo::launcher_env::kJob); }

const char* to_string(Verdict v) {
  switch (v) {
    case Verdict::ok: return "OK";
    case Verdict::unbound: return "UNBOUND";
    case Verdict::misplaced: return "MISPLACED";
    case Verdict::overlap: return "OVERLAP";
    case Verdict::remote_memory: return "REMOTE_MEMORY";
    case Verdict::drifted: return "DRIFTED";
    case Verdict::no_gpu: return "NO_GPU";
    case Verdict::oversubscribed: return "OVERSUBSCRIBED";
    case Verdict::throttled: return "THROTTLED";
    case Verdict::remote_nic: return "REMOTE_NIC";
    case Verdict::no_gdr: return "NO_GDR";
  }
  return "?";
}

bool Report::has_findings() const {
  for (const ProcessReport& p : processes)
    if (!p.findings.empty()) return true;
  return false;
}

namespace {

std::string gpu_name(const topo::Topology& t, const std::string& pci) {
  const topo::Gpu* g = topo::find_gpu(t, pci);
  return g ? "GPU " + std::to_string(g->index) + " (" + pci + ")" : "GPU " + pci;
}

// The GPU(s) to judge against and the CPUs local to them.
void locate(const topo::Topology& t, ProcessReport& r) {
  const probe::ProcessState& s = r.state;
  if (!s.context_gpus.empty()) {  // CUDA opens every visible GPU's device file, but uses its context's
    r.gpus = s.context_gpus;
    r.gpu_source = "GPU contexts";
  } else if (!s.gpus.empty()) {
    r.gpus = s.gpus;
    r.gpu_source = "open device files";
  } else if (auto it = s.env.find(topo::binding_env::kGpu); it != s.env.end() && !it->second.empty()) {
    for (std::string_view p : split(it->second, ',')) r.gpus.emplace_back(trim(p));
    r.gpu_source = topo::binding_env::kGpu;
  }
  if (s.rebound_cpus && !s.rebound_cpus->empty()) r.intended_cpus = *s.rebound_cpus;  // rebind's, over what was bound first
  else if (auto it = s.env.find(topo::binding_env::kCpus); it != s.env.end())
    if (auto c = CpuSet::parse_list(it->second); c && !c->empty()) r.intended_cpus = *c;
  if (r.gpus.empty()) return;
  for (const std::string& pci : r.gpus) {
    const topo::Gpu* g = topo::find_gpu(t, pci);
    if (!g || !g->numa) return;  // not in the topology, or locality unknown: cannot judge placement
    for (unsigned n : topo::nodes_with_cpus(t, *g->numa))
      if (std::find(r.gpu_nodes.begin(), r.gpu_nodes.end(), n) == r.gpu_nodes.end()) r.gpu_nodes.push_back(n);
  }
  CpuSet local = topo::cpus_of_nodes(t, r.gpu_nodes);
  if (!local.empty()) r.gpu_local = local;
}

void judge_one(const topo::Topology& t, ProcessReport& r, const JudgeOptions& options) {
  const probe::ProcessState& s = r.state;
  locate(t, r);
  r.holder = holder_reason(s, options.contexts_known);
  if (!r.holder.empty()) {
    r.judged = false;
    return;
  }
  if (r.gpus.empty() && !r.intended_cpus) {
    r.judged = false;
    return;
  }
  std::string gpus;
  for (const std::string& g : r.gpus) gpus += (gpus.empty() ? "" : ", ") + gpu_name(t, g);
  std::string node_text = "NUMA node " + join_numbers(r.gpu_nodes) + " (CPUs " + (r.gpu_local ? r.gpu_local->to_list() : "?") + ")";

  // DRIFTED: no longer what gpubind applied. Threads may narrow their set (NCCL pins its own
  // threads inside the rank's CPUs); a set that is wider or elsewhere is a reset.
  if (r.intended_cpus) {
    for (const probe::ThreadState& th : s.threads)
      if (!th.cpus_allowed.is_subset_of(*r.intended_cpus)) r.threads_drifted.push_back(th.tid);
    if (s.cpus_allowed != *r.intended_cpus || !r.threads_drifted.empty()) {
      std::string who = s.cpus_allowed != *r.intended_cpus
                            ? "allowed CPUs are " + s.cpus_allowed.to_list()
                            : std::to_string(r.threads_drifted.size()) + " thread(s) allowed outside it";
      r.findings.push_back({Verdict::drifted, who + ", but gpubind applied " + r.intended_cpus->to_list() +
                                                  ": something reset the affinity after start"});
    }
  }

  if (r.gpu_local) {
    // UNBOUND / MISPLACED: allowed CPUs against the GPU's node.
    if (!s.cpus_allowed.is_subset_of(*r.gpu_local)) {
      if (!s.cpus_allowed.intersects(*r.gpu_local))
        r.findings.push_back({Verdict::misplaced, "allowed CPUs " + s.cpus_allowed.to_list() + " are all off " + gpus +
                                                      "'s " + node_text});
      else
        r.findings.push_back({Verdict::unbound, "allowed CPUs " + s.cpus_allowed.to_list() + " span more than " + gpus +
                                                    "'s " + node_text});
    }
    // Where the threads actually ran.
    CpuSet ran_off;
    for (const probe::ThreadState& th : s.threads)
      if (th.last_cpu && !r.gpu_local->test(*th.last_cpu)) {
        r.threads_off_node.push_back(th.tid);
        ran_off.set(*th.last_cpu);
      }
    bool already = std::any_of(r.findings.begin(), r.findings.end(),
                               [](const Finding& f) { return f.verdict == Verdict::misplaced || f.verdict == Verdict::unbound; });
    if (!r.threads_off_node.empty() && !already)
      r.findings.push_back({Verdict::misplaced, std::to_string(r.threads_off_node.size()) + " of " +
                                                    std::to_string(s.threads.size()) + " thread(s) last ran on CPUs " +
                                                    ran_off.to_list() + ", off " + gpus + "'s " + node_text});
  }

  // REMOTE_MEMORY: most resident pages away from the GPU's node (or the intended nodes).
  if (s.pages_per_node) {
    std::vector<unsigned> home = r.gpu_nodes;
    if (home.empty())
      if (auto it = s.env.find(topo::binding_env::kMem); it != s.env.end())
        for (std::string_view n : split(it->second, ','))
          if (auto v = parse_uint(trim(n))) home.push_back(unsigned(*v));
    uint64_t total = 0, local = 0;
    for (const auto& [node, pages] : *s.pages_per_node) {
      total += pages;
      if (std::find(home.begin(), home.end(), node) != home.end()) local += pages;
    }
    if (!home.empty() && total > 0 && local * 2 < total) {
      std::string where;
      for (const auto& [node, pages] : *s.pages_per_node)
        where += (where.empty() ? "" : ", ") + std::string("node ") + std::to_string(node) + ": " +
                 std::to_string(pages * 100 / total) + "%";
      r.findings.push_back({Verdict::remote_memory, std::to_string((total - local) * 100 / total) +
                                                        "% of resident pages are off node " + join_numbers(home) + " (" + where + ")"});
    }
  }
}

// OVERSUBSCRIBED and THROTTLED (check/contention.hpp) of one process, its pool being it and the
// processes checked below it (a DataLoader worker runs on the rank's CPUs).
void judge_contention(ProcessReport& r, const std::vector<ProcessReport>& all, const std::map<int, int>& parent_of) {
  const probe::ProcessState& s = r.state;
  unsigned cpus = unsigned(s.cpus_allowed.count());
  unsigned runnable = 0;
  uint64_t ran = 0, waited = 0;
  std::map<std::pair<std::string, bool>, unsigned> busy;  // (name, is a child process) -> count
  for (const ProcessReport& q : all) {
    if (!descends_from(q.state.pid, s.pid, parent_of)) continue;
    bool child = q.state.pid != s.pid;
    unsigned here = 0;
    for (const probe::ThreadState& th : q.state.threads) {
      if (th.run_ns && th.run_delay_ns) {
        ran += *th.run_ns;
        waited += *th.run_delay_ns;
      }
      if (th.state != 'R') continue;
      ++here;
      if (!child) ++busy[{name_family(th.comm), false}];
    }
    runnable += here;
    if (child && here) ++busy[{name_family(q.state.comm), true}];
  }
  double wait_share = ran + waited ? double(waited) / double(ran + waited) : 0;
  if (wait_share > kWaitShare) {
    std::vector<BusyName> names;
    for (const auto& [key, n] : busy) names.push_back({key.first, n, key.second});
    std::string main = s.threads.empty() ? s.comm : name_family(s.threads.front().comm);
    std::string how = "running or waiting for a CPU now, its threads having waited " + std::to_string(int(wait_share * 100)) +
                      " % of their runnable time since they started";
    if (auto why = oversubscribed(double(runnable), cpus, kOversubscribed, how, thread_pools(names, main, s.env)))
      r.findings.push_back({Verdict::oversubscribed, *why});
  }
  if (s.cpu_quota)
    if (auto why = throttled(*s.cpu_quota, s.cpu_quota->periods, s.cpu_quota->throttled_periods, double(s.cpu_quota->throttled_ns) / 1e9,
                             cpus, kThrottled, "since the cgroup was made"))
      r.findings.push_back({Verdict::throttled, *why});
}

}  // namespace

std::map<int, std::string> outside_their_job(const std::vector<probe::ProcessState>& states) {
  std::map<std::string, std::set<unsigned>> claimant_uids;
  std::set<std::string> placed;  // jobs the node puts some claimant in
  for (const probe::ProcessState& s : states) {
    auto job = s.env.find("SLURM_JOB_ID");
    if (job == s.env.end()) continue;
    if (s.uid) claimant_uids[job->second].insert(*s.uid);
    if (s.slurm_job_seen == job->second) placed.insert(job->second);
  }
  std::map<int, std::string> apart;
  for (const probe::ProcessState& s : states) {
    auto job = s.env.find("SLURM_JOB_ID");
    if (job == s.env.end()) continue;
    const std::string& j = job->second;
    if (!s.slurm_job_seen.empty() && s.slurm_job_seen != j)
      apart[s.pid] = "claims Slurm job " + j + " but runs in job " + s.slurm_job_seen + " (" + s.slurm_evidence + "): not a process of job " + j;
    else if (s.slurm_job_seen.empty() && placed.count(j))
      apart[s.pid] = "claims Slurm job " + j + ", but neither its cgroup nor a slurmstepd of the job is above it, as they are for the job's tasks: "
                     "not a process of job " + j;
    else if (!placed.count(j) && claimant_uids[j].size() > 1)
      apart[s.pid] = "claims Slurm job " + j + ", whose claimants run as " + std::to_string(claimant_uids[j].size()) +
                     " users, and the node does not say which are its (a Slurm job has one user): left alone";
  }
  return apart;
}

std::map<int, std::string> wrappers_of_ranks(const std::vector<probe::ProcessState>& states) {
  std::map<int, const probe::ProcessState*> by_pid;
  for (const probe::ProcessState& s : states) by_pid[s.pid] = &s;
  auto identity = [](const probe::ProcessState& s) -> std::string {
    std::string rank = global_rank_of(s), local = local_rank_of(s);
    return rank.empty() && local.empty() ? "" : job_of(s) + "/" + rank + "/" + local;
  };
  auto holds_gpu = [](const probe::ProcessState& s) { return !s.gpus.empty() || !s.context_gpus.empty(); };
  // Each process that has a same-rank process below it, with one of those: one that holds a GPU
  // where any does.
  std::map<int, const probe::ProcessState*> below;
  for (const probe::ProcessState& s : states) {
    std::string id = identity(s);
    if (id.empty()) continue;
    auto up = by_pid.find(s.ppid);
    for (int hops = 0; hops < 64 && up != by_pid.end() && up->second->pid != s.pid; ++hops, up = by_pid.find(up->second->ppid)) {
      if (identity(*up->second) != id) continue;
      const probe::ProcessState*& b = below[up->second->pid];
      if (!b || (holds_gpu(s) && !holds_gpu(*b))) b = &s;
    }
  }
  std::map<int, std::string> out;
  for (const auto& [pid, child] : below) {
    const probe::ProcessState& s = *by_pid[pid];
    if (holds_gpu(s)) continue;
    bool known = std::any_of(std::begin(kRankWrappers), std::end(kRankWrappers), [&](const char* w) { return s.comm == w; });
    if (!known && !holds_gpu(*child)) continue;
    std::string rank = global_rank_of(s).empty() ? "local rank " + local_rank_of(s) : "rank " + global_rank_of(s);
    out[pid] = "a wrapper (" + s.comm + ") above PID " + std::to_string(child->pid) + " (" + child->comm + ") of the same " + rank +
               (holds_gpu(*child) ? ", which holds the GPU" : "") + ": not a rank of its own";
  }
  return out;
}

std::string holder_reason(const probe::ProcessState& p, bool contexts_known) {
  if (p.gpus.empty()) return "";
  for (const char* v : topo::binding_env::kAll)
    if (p.env.count(v)) return "";
  if (!local_rank_of(p).empty() || !global_rank_of(p).empty()) return "";
  for (std::string_view daemon : kGpuDaemons)
    if (p.comm == daemon.substr(0, 15))  // the kernel keeps 15 bytes of a command's name
      return "a GPU daemon (" + std::string(daemon) + ") holding " + std::to_string(p.gpus.size()) + " GPU device file(s), not a rank";
  if (contexts_known && p.context_gpus.empty())
    return "holds " + std::to_string(p.gpus.size()) + " GPU device file(s) but has no GPU context and no rank variable";
  return "";
}

Report judge(const topo::Topology& t, std::vector<probe::ProcessState> states, std::vector<Error> errors, const JudgeOptions& options) {
  Report rep;
  rep.errors = std::move(errors);
  std::map<int, std::string> apart = outside_their_job(states);
  std::map<int, std::string> wrappers = wrappers_of_ranks(states);
  for (probe::ProcessState& s : states) {
    ProcessReport r;
    r.state = std::move(s);
    if (auto it = apart.find(r.state.pid); it != apart.end()) {
      r.apart = it->second;  // another job's, or no job's: not judged as the job's rank
      r.judged = false;
    } else if (auto w = wrappers.find(r.state.pid); w != wrappers.end()) {
      locate(t, r);
      r.wrapper = w->second;  // the rank is the process below it
      r.judged = false;
    } else {
      judge_one(t, r, options);
    }
    rep.processes.push_back(std::move(r));
  }
  // OVERLAP: checked ranks that share CPUs. Processes of one rank (its children: a shell, a
  // worker pool) share its CPUs by design: a rank is its GPUBIND_LOCAL_RANK, else the oldest
  // ancestor among the checked processes. An UNBOUND process overlaps everything; that is
  // already its finding.
  std::map<int, int> parent_of;
  for (const ProcessReport& r : rep.processes) parent_of[r.state.pid] = r.state.ppid;
  auto rank_key = [&](const ProcessReport& r) -> std::string {
    if (auto it = r.state.env.find(topo::binding_env::kLocalRank); it != r.state.env.end()) return "rank " + it->second;
    int p = r.state.pid;
    for (int hops = 0; hops < 64 && parent_of.count(parent_of[p]); ++hops) p = parent_of[p];
    return "pid " + std::to_string(p);
  };
  // Processes without a GPU take part when they are pinned (narrower than the machine).
  auto bound = [&](const ProcessReport& r) {
    if (!r.holder.empty() || !r.apart.empty() || !r.wrapper.empty()) return false;  // a daemon on the ranks' CPUs is not a rank sharing them
    if (!r.judged) return !t.allowed_cpus.is_subset_of(r.state.cpus_allowed);
    return std::none_of(r.findings.begin(), r.findings.end(), [](const Finding& f) { return f.verdict == Verdict::unbound; });
  };
  for (size_t i = 0; i < rep.processes.size(); ++i)
    for (size_t j = i + 1; j < rep.processes.size(); ++j) {
      ProcessReport &a = rep.processes[i], &b = rep.processes[j];
      if (!bound(a) || !bound(b) || rank_key(a) == rank_key(b)) continue;
      CpuSet shared = a.state.cpus_allowed & b.state.cpus_allowed;
      if (shared.empty()) continue;
      a.findings.push_back({Verdict::overlap, "shares CPUs " + shared.to_list() + " with PID " + std::to_string(b.state.pid)});
      b.findings.push_back({Verdict::overlap, "shares CPUs " + shared.to_list() + " with PID " + std::to_string(a.state.pid)});
      a.judged = b.judged = true;
    }
  for (ProcessReport& r : rep.processes)
    if (r.judged && r.holder.empty() && r.apart.empty() && r.wrapper.empty()) judge_contention(r, rep.processes, parent_of);
  return rep;
}

std::string verdicts_of(const ProcessReport& p) {
  if (!p.holder.empty()) return "GPU_HOLDER";
  if (!p.apart.empty()) return "NOT_IN_JOB";
  if (!p.wrapper.empty()) return "WRAPPER";
  if (!p.judged) return "NO_GPU";
  if (p.findings.empty()) return "OK";
  std::vector<std::string> v;
  for (const Finding& f : p.findings) {
    std::string s = to_string(f.verdict);
    if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
  }
  return join(v, ",");
}

}  // namespace gpubind::check

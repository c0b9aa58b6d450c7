#include "rebind/rebind.hpp"

#include <algorithm>
#include <functional>
#include <set>

#include "check/check.hpp"
#include "rebind/outcome.hpp"
#include "topo/binding_env.hpp"
#include "topo/launcher_env.hpp"
#include "util/strings.hpp"

namespace gpubind::rebind {

const char* to_string(ThreadAction a) {
  switch (a) {
    case ThreadAction::move: return "move";
    case ThreadAction::already: return "already";
    case ThreadAction::within: return "within";
  }
  return "?";
}

const char* why_left(ThreadAction a) {
  switch (a) {
    case ThreadAction::move: return "";
    case ThreadAction::already: return "already allowed exactly the rank's CPUs";
    case ThreadAction::within: return "pinned within the rank's CPUs already (by itself or a library such as NCCL)";
  }
  return "";
}

ThreadAction thread_action(const CpuSet& before, const CpuSet& target, bool all_threads) {
  if (before == target) return ThreadAction::already;
  if (!all_threads && !before.empty() && before.is_subset_of(target)) return ThreadAction::within;
  return ThreadAction::move;
}

namespace {

std::string who(const probe::ProcessState& s) { return "PID " + std::to_string(s.pid) + " (" + s.comm + ")"; }

std::string gpu_list(const std::vector<std::string>& gpus) { return join(gpus, ", "); }

bool has_rank_variable(const probe::ProcessState& s) {
  return !check::local_rank_of(s).empty() || !check::global_rank_of(s).empty();
}

std::vector<std::string> gpubind_gpus(const probe::ProcessState& s) {
  std::vector<std::string> gpus;
  if (auto it = s.env.find(topo::binding_env::kGpu); it != s.env.end())
    for (std::string_view p : split(it->second, ','))
      if (!trim(p).empty()) gpus.emplace_back(trim(p));
  return gpus;
}

bool all_within(const std::vector<std::string>& some, const std::vector<std::string>& of) {
  return std::all_of(some.begin(), some.end(), [&](const std::string& g) { return std::find(of.begin(), of.end(), g) != of.end(); });
}

struct GpuChoice {
  std::vector<std::string> gpus;
  std::string source;
};

// exec's rule: the local rank's GPUs among those its visibility variables leave it (rank r on
// visible GPU r, ranks sharing GPUs when there are more of them).
Result<GpuChoice> gpus_by_local_rank(const topo::Topology& t, const probe::ProcessState& s, const topo::LocalRank& lr,
                                     const plan::Request& base) {
  plan::Request r = base;
  r.env.clear();
  for (const std::string& n : plan::gpu_env_names())
    if (auto it = s.env.find(n); it != s.env.end()) r.env[n] = it->second;
  r.ranks = std::max(lr.size.value_or(lr.rank + 1), lr.rank + 1);
  r.allowed.reset();
  r.rank_gpus.clear();
  r.spread_gpus = false;  // a job gpubind did not start numbers its GPUs as it sees them: rank r on cuda:r
  auto p = plan::make_plan(t, r);
  if (!p) return Error{who(s), "its GPU by its local rank " + std::to_string(lr.rank) + " (" + lr.source + "): " + p.error().message()};
  GpuChoice c;
  for (const plan::GpuRef& g : p->ranks[lr.rank].gpus) c.gpus.push_back(g.pci);
  c.source = c.gpus.empty() ? "no GPU visible: a CPU-only plan by local rank " + std::to_string(lr.rank) + " (" + lr.source + ")"
                            : "local rank " + std::to_string(lr.rank) + " (" + lr.source + ") among its visible GPUs, as exec binds (rank r on visible GPU r)";
  if (!s.gpus.empty() && !c.gpus.empty() && !all_within(c.gpus, s.gpus))
    return Error{who(s), "local rank " + std::to_string(lr.rank) + " (" + lr.source + ") gives GPU " + gpu_list(c.gpus) +
                             " but it holds " + gpu_list(s.gpus) + " open: which GPU it drives cannot be told"};
  return c;
}

Result<GpuChoice> gpus_of(const topo::Topology& t, const probe::ProcessState& s, const plan::Request& base) {
  if (!s.context_gpus.empty()) return GpuChoice{s.context_gpus, "its GPU context"};
  std::vector<std::string> bound = gpubind_gpus(s);
  if (!bound.empty() && (s.gpus.empty() || all_within(bound, s.gpus))) return GpuChoice{bound, "GPUBIND_GPU (gpubind bound it)"};
  if (s.gpus.size() == 1) return GpuChoice{s.gpus, "the GPU device file it holds open"};
  auto lr = topo::detect_local_rank(s.env);
  if (!lr) return Error{who(s), lr.error().message()};
  if (*lr) return gpus_by_local_rank(t, s, **lr, base);
  if (s.gpus.size() > 1)
    return Error{who(s), "holds " + std::to_string(s.gpus.size()) + " GPUs open (" + gpu_list(s.gpus) +
                             "), has no GPU context, no GPUBIND_GPU and no local rank: which one it drives cannot be told"};
  return Error{who(s), "has a rank variable but no local rank and no GPU: where it belongs on this node cannot be told"};
}

// The job a rank belongs to: its launcher's job id, else its Kubernetes pod or container (each pod
// runs its own job, its ranks numbered from 0), else "".
// The Slurm step a process runs in ("" outside Slurm, or outside any step).
std::string step_of(const probe::ProcessState& s) {
  auto it = s.env.find("SLURM_STEP_ID");
  return it == s.env.end() ? "" : it->second;
}

// A Slurm job's process outside its steps (the batch script and what it runs directly, srun
// clients among them) carries the batch step's SLURM_LOCALID=0 but is no task: the job's tasks
// are the processes of its steps, as check --slurm-node selects them.
std::string not_a_task(const probe::ProcessState& s) {
  if (s.comm == "srun") return "an srun client: its tasks run in a step";
  if (s.env.count("SLURM_JOB_ID") && !s.env.count("SLURM_STEP_ID"))
    return "not a task: a process of Slurm job " + s.env.at("SLURM_JOB_ID") + " outside its steps (its batch script, or what that runs directly)";
  return "";
}

std::string job_key(const probe::ProcessState& s) {
  std::string job = check::job_of(s);
  if (!job.empty()) return job;
  if (s.kube) return "pod " + s.kube->namespace_name + "/" + s.kube->pod;
  if (!s.container_id.empty()) return "container " + s.container_id.substr(0, 12);
  return "";
}

std::string job_name(const std::string& job) {
  if (job.empty()) return "the ranks without a job id";
  return job.starts_with("pod ") || job.starts_with("container ") ? job : "job " + job;
}

struct Rank {
  const probe::ProcessState* state = nullptr;
  std::vector<const probe::ProcessState*> members;
  GpuChoice gpus;
  std::optional<unsigned> local;  // the local rank as a number
};

// Sorts the selected processes into ranks (with the processes under them) and skipped ones.
std::vector<Rank> find_ranks(const std::vector<probe::ProcessState>& states, const Options& o, MovePlan& plan, std::vector<Error>& denied) {
  std::map<int, const probe::ProcessState*> by_pid;
  for (const probe::ProcessState& s : states) by_pid[s.pid] = &s;
  std::map<int, std::string> apart = check::outside_their_job(states);
  auto is_candidate = [&](const probe::ProcessState& s) {
    return check::holder_reason(s, o.contexts_known).empty() && not_a_task(s).empty() && !apart.count(s.pid) &&
           (has_rank_variable(s) || !s.gpus.empty() || !s.context_gpus.empty() || !gpubind_gpus(s).empty());
  };
  auto identity = [](const probe::ProcessState& s) { return job_key(s) + "/" + step_of(s) + "/" + check::local_rank_of(s); };
  // The rank a process belongs to: its own pid when it is one, else the nearest candidate above it.
  std::map<int, int> root_of;
  std::function<int(const probe::ProcessState&, int)> root = [&](const probe::ProcessState& s, int depth) -> int {
    if (auto it = root_of.find(s.pid); it != root_of.end()) return it->second;
    int r = 0;
    auto parent = by_pid.find(s.ppid);
    int above = parent != by_pid.end() && depth < 64 && parent->second->pid != s.pid ? root(*parent->second, depth + 1) : 0;
    if (apart.count(s.pid)) r = 0;  // never part of a rank, whatever is above it
    else if (above && (!has_rank_variable(s) || identity(s) == identity(*by_pid[above]))) r = above;
    else if (is_candidate(s)) r = s.pid;
    root_of[s.pid] = r;
    return r;
  };
  std::map<int, Rank> ranks;
  for (const probe::ProcessState& s : states) {
    std::string holder = check::holder_reason(s, o.contexts_known);
    if (holder.empty()) holder = not_a_task(s);
    if (holder.empty() && apart.count(s.pid)) holder = apart.at(s.pid);
    int r = root(s, 0);
    if (r == 0 && holder.empty() && !s.denied.empty()) {
      denied.push_back(Error{"PID " + std::to_string(s.pid) + " (" + s.comm + ")",
                             "no permission to read it (" + s.denied + "): whether it is a rank cannot be told; another user's "
                             "process needs root (or CAP_SYS_PTRACE); nothing of it changed",
                             ErrorKind::permission});
      continue;
    }
    if (r == 0) {
      plan.skipped.push_back({s.pid, s.comm, !holder.empty() ? holder : "not a rank: no rank variable and no GPU"});
      continue;
    }
    ranks[r].members.push_back(&s);
    if (r == s.pid) ranks[r].state = &s;
  }
  std::vector<Rank> out;
  for (auto& [pid, r] : ranks) out.push_back(std::move(r));
  return out;
}

std::vector<ThreadPlan> thread_plans(const probe::ProcessState& s, const CpuSet& cpus, bool all_threads) {
  std::vector<ThreadPlan> threads;
  for (const probe::ThreadState& th : s.threads)
    threads.push_back({th.tid, th.comm, th.cpus_allowed, thread_action(th.cpus_allowed, cpus, all_threads)});
  return threads;
}

// Checks that a job's ranks are told apart: local ranks once each, every one the launcher
// started here selected, GPUs either disjoint or one GPU shared whole.
void check_job(const std::string& job, const std::vector<Rank*>& ranks, std::vector<Error>& refusals) {
  std::string name = job_name(job);
  std::map<std::pair<std::string, unsigned>, const Rank*> seen;  // (Slurm step, local rank): each step numbers its own
  std::optional<unsigned> size;
  for (const Rank* r : ranks) {
    if (auto lr = topo::detect_local_rank(r->state->env); lr && *lr && (*lr)->size) size = std::max(size.value_or(0), *(*lr)->size);
    if (!r->local) continue;
    if (auto [it, fresh] = seen.emplace(std::pair(step_of(*r->state), *r->local), r); !fresh)
      refusals.push_back({who(*r->state), "claims local rank " + std::to_string(*r->local) + " of " + name + " as " +
                                              who(*it->second->state) + " does: which is which cannot be told"});
  }
  // Local rank 3 means local ranks 0 to 2 run here too, whatever the launcher says of the size.
  for (const auto& [key, r] : seen) size = std::max(size.value_or(0), key.second + 1);
  if (size && *size > ranks.size()) {
    std::vector<unsigned> found;
    for (const auto& [key, r] : seen) found.push_back(key.second);
    refusals.push_back({name, "its launcher's variables say " + std::to_string(*size) + " local ranks run on this node, but " +
                                  std::to_string(ranks.size()) + " of them " + (ranks.size() == 1 ? "was" : "were") +
                                  " selected (local rank " + join_numbers(found) +
                                  "): select them all (--children-of its launcher, --match) so the node is planned whole"});
  }
  for (size_t i = 0; i < ranks.size(); ++i)
    for (size_t j = i + 1; j < ranks.size(); ++j) {
      const auto &a = ranks[i]->gpus.gpus, &b = ranks[j]->gpus.gpus;
      bool shared = std::any_of(a.begin(), a.end(), [&](const std::string& g) { return std::find(b.begin(), b.end(), g) != b.end(); });
      if (shared && !(a == b && a.size() == 1))
        refusals.push_back({who(*ranks[i]->state), "its GPUs (" + gpu_list(a) + ") overlap " + who(*ranks[j]->state) + "'s (" +
                                                       gpu_list(b) + "): which GPU each drives cannot be told"});
    }
}

// One job's ranks planned together, as exec plans a node's ranks: its ranks' GPUs given, over the
// CPUs their cgroups allow.
void plan_job(const topo::Topology& t, const std::string& job, std::vector<Rank*> ranks, const std::map<int, CpuSet>& cgroup_cpus,
              const Options& o, Planned& out) {
  std::stable_sort(ranks.begin(), ranks.end(), [](const Rank* a, const Rank* b) {
    return std::pair(a->local.value_or(~0u), a->state->pid) < std::pair(b->local.value_or(~0u), b->state->pid);
  });
  auto cgroup = [&](int pid) {
    auto it = cgroup_cpus.find(pid);
    return it != cgroup_cpus.end() ? it->second : t.allowed_cpus;
  };
  plan::Request req = o.base;
  req.env.clear();
  req.ranks = unsigned(ranks.size());
  req.rank_gpus.clear();
  req.spread_gpus = false;
  CpuSet allowed;
  for (const Rank* r : ranks) allowed |= cgroup(r->state->pid);
  req.allowed = allowed;
  bool any_gpu = std::any_of(ranks.begin(), ranks.end(), [](const Rank* r) { return !r->gpus.gpus.empty(); });
  if (any_gpu) {
    std::vector<std::string> explain, warnings;
    auto visible = plan::visible_gpus(t, req, explain, warnings);
    if (!visible) return out.refusals.push_back(visible.error());
    for (const Rank* r : ranks) {
      std::vector<unsigned> positions;
      for (const std::string& pci : r->gpus.gpus) {
        auto it = std::find_if(visible->gpus.begin(), visible->gpus.end(), [&](const topo::Gpu* g) { return g->pci == pci; });
        if (it == visible->gpus.end()) return out.refusals.push_back({who(*r->state), "its GPU " + pci + " is not in the topology"});
        positions.push_back(unsigned(it - visible->gpus.begin()));
      }
      req.rank_gpus.push_back(positions);
    }
  }
  auto p = plan::make_plan(t, req);
  if (!p) return out.refusals.push_back({job_name(job), p.error().message()});
  for (const std::string& w : p->warnings) out.plan.warnings.push_back(w);
  for (unsigned i = 0; i < ranks.size(); ++i) {
    const Rank& r = *ranks[i];
    const plan::RankBinding& b = p->ranks[i];
    RankPlan rp;
    rp.job = job;
    rp.local_rank = check::local_rank_of(*r.state);
    rp.position = i;
    rp.gpus = r.gpus.gpus;
    rp.gpu_source = r.gpus.source;
    rp.planned = b.cpus;
    rp.cgroup = cgroup(r.state->pid);
    rp.cpus = b.cpus & rp.cgroup;
    if (rp.cpus.empty()) {
      out.refusals.push_back({who(*r.state), "its planned CPUs " + b.cpus.to_list() + " are all outside its cgroup's cpuset " +
                                                 rp.cgroup.to_list() + ": it cannot be moved there"});
      continue;
    }
    if (rp.cpus != rp.planned) rp.notes.push_back("planned CPUs " + rp.planned.to_list() + ", within its cgroup's cpuset " + rp.cpus.to_list());
    if (o.memory && b.mem_policy != plan::MemPolicy::none)
      for (unsigned n : b.mem_nodes)
        if (r.state->mems_allowed.empty() || r.state->mems_allowed.test(n)) rp.mem_nodes.push_back(n);
    if (o.memory && !b.mem_nodes.empty() && rp.mem_nodes.empty())
      rp.notes.push_back("its cpuset.mems (" + r.state->mems_allowed.to_list() + ") allows none of the planned memory node(s) " +
                         join_numbers(b.mem_nodes) + ": pages stay where they are");
    for (const probe::ProcessState* m : r.members)
      rp.processes.push_back({m->pid, m->comm, m->mems_allowed, thread_plans(*m, rp.cpus, o.all_threads), m->pages_per_node, m->start_time});
    std::stable_partition(rp.processes.begin(), rp.processes.end(), [&](const ProcessPlan& pp) { return pp.pid == r.state->pid; });
    out.plan.ranks.push_back(std::move(rp));
  }
}

}  // namespace

Planned make_plan(const topo::Topology& t, const std::vector<probe::ProcessState>& states, const std::map<int, CpuSet>& cgroup_cpus,
                  const Options& o) {
  Planned out;
  out.plan.all_threads = o.all_threads;
  std::vector<Rank> ranks = find_ranks(states, o, out.plan, out.denied);
  std::map<std::string, std::vector<Rank*>> jobs;
  for (Rank& r : ranks) {
    auto g = gpus_of(t, *r.state, o.base);
    if (!g) {
      out.refusals.push_back(g.error());
      continue;
    }
    r.gpus = *g;
    if (auto v = parse_uint(check::local_rank_of(*r.state))) r.local = unsigned(*v);
    jobs[job_key(*r.state)].push_back(&r);
  }
  for (const auto& [job, members] : jobs) check_job(job, members, out.refusals);
  if (!out.refusals.empty()) return out;
  for (const auto& [job, members] : jobs) plan_job(t, job, members, cgroup_cpus, o, out);
  if (!out.refusals.empty()) out.plan.ranks.clear();
  return out;
}

unsigned Outcome::threads_moved() const {
  unsigned n = 0;
  for (const RankMove& r : ranks)
    for (const ProcessMove& p : r.processes)
      n += unsigned(std::count_if(p.threads.begin(), p.threads.end(), [](const ThreadMove& t) { return t.moved; }));
  return n;
}

uint64_t Outcome::pages_moved() const {
  uint64_t n = 0;
  for (const RankMove& r : ranks)
    for (const ProcessMove& p : r.processes) {
      const MemoryMove& m = p.memory;
      if (!m.done || !m.before || !m.after) continue;
      uint64_t before = 0, after = 0;
      for (unsigned node : m.to.ids()) {
        if (auto it = m.before->find(node); it != m.before->end()) before += it->second;
        if (auto it = m.after->find(node); it != m.after->end()) after += it->second;
      }
      if (after > before) n += after - before;
    }
  return n;
}

std::vector<Error> Outcome::errors() const {
  std::vector<Error> out;
  for (const RankMove& r : ranks)
    for (const ProcessMove& p : r.processes) {
      if (!p.error) continue;
      unsigned moved = unsigned(std::count_if(p.threads.begin(), p.threads.end(), [](const ThreadMove& t) { return t.moved; }));
      std::string changed = moved == 0 ? "nothing of it changed"
                                       : std::to_string(moved) + " of its threads had moved (the report lists them), its pages had not";
      std::string why = p.error->kind == ErrorKind::permission
                            ? "no permission to move it (" + p.error->message() + "): another user's process needs root or CAP_SYS_NICE; " + changed
                            : p.error->message() + "; " + changed;
      out.push_back({"PID " + std::to_string(p.pid) + " (" + p.comm + ")", why, p.error->kind});
    }
  return out;
}

std::vector<std::string> Outcome::warnings() const {
  std::vector<std::string> out;
  for (const RankMove& r : ranks)
    for (const ProcessMove& p : r.processes)
    {
      if (p.memory.refused)
        out.push_back("PID " + std::to_string(p.pid) + " (" + p.comm + "): its threads moved, its pages on node " + p.memory.from.to_list() +
                      " did not: " + p.memory.note);
      if (!p.memory.policy.empty())
        out.push_back("PID " + std::to_string(p.pid) + " (" + p.comm + "): its memory policy (numa_maps: " + p.memory.policy +
                      ") sends every page it allocates to node " + p.memory.policy_nodes.to_list() + ", not the planned " +
                      p.memory.to.to_list() + ": its pages " + (p.memory.done ? "moved now will be joined there by new ones" : "stay there") +
                      " (no process can change another's policy): restart it under the planned binding (gpubind exec, or without "
                      "numactl --membind / srun --mem-bind)");
    }
  return out;
}

}  // namespace gpubind::rebind

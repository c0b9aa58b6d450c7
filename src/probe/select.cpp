#include "probe/select.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "probe/probe.hpp"
#include "sys/spawner.hpp"
#include "util/strings.hpp"

namespace gpubind::probe {

namespace {

// A process's or thread's stat after the comm's last ')': state is the first field, ppid the
// second, num_threads the 18th.
struct StatHead {
  char state = '?';
  int ppid = 0;
  uint64_t threads = 1;
};

std::optional<StatHead> stat_head(const sys::FsRoot& root, const std::string& path) {
  auto stat = root.read(path);
  if (!stat) return std::nullopt;
  size_t close = stat->rfind(')');
  if (close == std::string::npos) return std::nullopt;
  auto fields = split(trim(std::string_view(*stat).substr(close + 1)), ' ');
  if (fields.size() < 2 || fields[0].empty()) return std::nullopt;
  StatHead h;
  h.state = fields[0][0];
  h.ppid = int(parse_uint(fields[1]).value_or(0));
  if (fields.size() > 17) h.threads = parse_uint(fields[17]).value_or(1);
  return h;
}

// Every process under the root with its stat, each read once, and who is whose child.
struct ProcessTree {
  std::map<int, StatHead> stats;
  std::multimap<int, int> children;
};

ProcessTree process_tree(const sys::FsRoot& root) {
  ProcessTree t;
  for (int p : list_pids(root))
    if (auto h = stat_head(root, "proc/" + std::to_string(p) + "/stat")) {
      t.stats[p] = *h;
      t.children.emplace(h->ppid, p);
    }
  return t;
}

// The descendants of `pid` in the tree (children, grandchildren...), each once.
std::set<int> subtree(const ProcessTree& t, int pid) {
  std::set<int> out;
  for (std::vector<int> todo{pid}; !todo.empty();) {
    int p = todo.back();
    todo.pop_back();
    auto [a, b] = t.children.equal_range(p);
    for (auto it = a; it != b; ++it)
      if (it->second != pid && out.insert(it->second).second) todo.push_back(it->second);
  }
  return out;
}

}  // namespace

std::vector<int> descendants_of(const sys::FsRoot& root, int pid) {
  std::set<int> d = subtree(process_tree(root), pid);
  return {d.begin(), d.end()};
}

unsigned runnable_threads_outside(const sys::FsRoot& root, int pid) {
  ProcessTree tree = process_tree(root);
  std::set<int> own = subtree(tree, pid);
  own.insert(pid);
  unsigned runnable = 0;
  for (const auto& [p, s] : tree.stats) {
    if (own.count(p)) continue;
    if (s.threads <= 1) {
      runnable += s.state == 'R';
      continue;
    }
    std::string dir = "proc/" + std::to_string(p) + "/task";
    auto tasks = root.list(dir);
    if (!tasks) continue;
    for (const std::string& t : *tasks)
      if (auto ts = stat_head(root, dir + "/" + t + "/stat")) runnable += ts->state == 'R';
  }
  return runnable;
}

std::vector<int> matching(const sys::FsRoot& root, const std::function<bool(const std::string&)>& matches) {
  std::vector<int> out;
  for (int p : list_pids(root)) {
    auto cmd = root.read("proc/" + std::to_string(p) + "/cmdline");
    if (!cmd || cmd->empty()) continue;
    std::string c = *cmd;
    std::replace(c.begin(), c.end(), '\0', ' ');
    if (matches(std::string(trim(c)))) out.push_back(p);
  }
  return out;
}

std::vector<int> slurm_job_tasks(const sys::FsRoot& root, const SlurmTasks& which) {
  static const std::vector<std::string> names = {"SLURM_JOB_ID", "SLURM_STEP_ID", "SLURMD_NODENAME"};
  std::vector<int> out;
  for (int p : list_pids(root)) {
    auto env = environment_of(root, p, names);
    if (!env) continue;
    auto step = env->find("SLURM_STEP_ID");
    if ((*env)["SLURM_JOB_ID"] == which.job && step != env->end() && step->second != which.skip_step &&
        (which.node.empty() || (*env)["SLURMD_NODENAME"] == which.node))
      out.push_back(p);
  }
  return out;
}

std::vector<int> gpu_processes(const sys::FsRoot& root) {
  std::vector<int> out;
  for (int p : list_pids(root)) {
    std::string dir = "proc/" + std::to_string(p) + "/fd";
    auto fds = root.list(dir);
    if (!fds) continue;
    for (const std::string& fd : *fds) {
      auto target = root.read_link(dir + "/" + fd);
      if (target && GpuDeviceMap::is_gpu_device_file(*target)) {
        out.push_back(p);
        break;
      }
    }
  }
  return out;
}

Selected select_processes(const sys::FsRoot& root, const Selection& s) {
  Selected out;
  out.pids = s.pids;
  out.named = s.pids;
  auto add_all = [&](const std::vector<int>& found) {
    for (int p : found)
      if (p != s.exclude) out.pids.push_back(p);
  };
  if (s.children_of) add_all(descendants_of(root, *s.children_of));
  if (s.match) add_all(matching(root, s.match));
  if (s.slurm_job) add_all(slurm_job_tasks(root, *s.slurm_job));
  bool selected = !s.pids.empty() || s.children_of || s.match || s.slurm_job;
  if (s.all_gpu || !selected) {
    add_all(gpu_processes(root));
    add_all(s.gpu_context_pids);
  }
  std::sort(out.pids.begin(), out.pids.end());
  out.pids.erase(std::unique(out.pids.begin(), out.pids.end()), out.pids.end());
  return out;
}

Probed probe_selected(const sys::FsRoot& root, const Selected& selected, const ProbeOptions& given) {
  Probed out;
  // The GPU device map once for every process of this probe.
  const GpuDeviceMap devices(root);
  ProbeOptions options = given;
  if (!options.devices) options.devices = &devices;
  for (int p : selected.pids) {
    auto s = probe_process(root, p, options);
    bool was_named = std::find(selected.named.begin(), selected.named.end(), p) != selected.named.end();
    // launch's helper that kills rank groups if launch is SIGKILLed (sys::GroupReaper) is not a rank.
    if (s && !was_named && s->comm == sys::GroupReaper::kGroupReaperName) continue;
    if (s) out.states.push_back(std::move(*s));
    else if (was_named || !is_not_a_live_process(s.error())) {
      out.errors.push_back(s.error());
      out.error_pids.push_back(p);
    }
  }
  // Processes in containers: their Kubernetes names, where the node keeps the kubelet's log links.
  if (std::any_of(out.states.begin(), out.states.end(), [](const ProcessState& s) { return !s.container_id.empty(); }))
    if (auto names = root.list("var/log/containers")) {
      std::map<std::string, KubeContainer> by_id = kube_containers_of_log_names(*names);
      for (ProcessState& s : out.states)
        if (auto it = by_id.find(s.container_id); it != by_id.end()) s.kube = it->second;
    }
  return out;
}

void add_context_gpus(std::vector<ProcessState>& states, const std::vector<GpuProcess>& contexts) {
  for (ProcessState& s : states)
    for (const GpuProcess& c : contexts)
      if (c.pid == s.pid && std::find(s.context_gpus.begin(), s.context_gpus.end(), c.pci) == s.context_gpus.end())
        s.context_gpus.push_back(c.pci);
}

}  // namespace gpubind::probe

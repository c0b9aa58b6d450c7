#include "bind/slurm_step.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "plan/plan.hpp"
#include "util/strings.hpp"

namespace gpubind::bind {

namespace {

const char* const kCpuBindVars[] = {"SLURM_CPU_BIND", "SLURM_CPU_BIND_TYPE", "SLURM_CPU_BIND_LIST"};

// util's parse_uint, within unsigned.
std::optional<unsigned> number(std::string_view s, int base = 10) {
  auto v = parse_uint(s, base);
  if (!v || *v > std::numeric_limits<unsigned>::max()) return std::nullopt;
  return unsigned(*v);
}

// "0,1,3" or "0-3,6": gres indices in the order given.
std::optional<std::vector<unsigned>> index_list(const std::string& text) {
  std::vector<unsigned> out;
  if (text.empty()) return std::nullopt;
  for (std::string_view view : split(text, ',')) {
    std::string item(view);
    size_t dash = item.find('-');
    auto lo = number(std::string_view(item).substr(0, dash));
    auto hi = dash == std::string::npos ? lo : number(std::string_view(item).substr(dash + 1));
    // A node has at most a few dozen GPUs; a list of more than 65536 is no Slurm's.
    if (!lo || !hi || *hi < *lo || *hi - *lo > 4096 || out.size() + (*hi - *lo) >= 65536) return std::nullopt;
    for (uint64_t i = *lo; i <= *hi; ++i) out.push_back(unsigned(i));  // 64 bits: hi may be the largest unsigned
  }
  return out;
}

// map_gpu/mask_gpu lists: "1,0", "0*2,1*2" (an item repeated), one item per task in turn.
std::optional<std::vector<std::string>> repeated_items(const std::string& text) {
  std::vector<std::string> out;
  for (std::string_view view : split(text, ',')) {
    std::string item(view);
    size_t star = item.find('*');
    auto times = star == std::string::npos ? std::optional<unsigned>(1) : number(std::string_view(item).substr(star + 1));
    if (!times || *times == 0 || *times > 65536 || out.size() + *times > 65536) return std::nullopt;
    out.insert(out.end(), *times, item.substr(0, star));
  }
  if (out.empty()) return std::nullopt;
  return out;
}

// The task's GPUs under --gpu-bind=map_gpu or mask_gpu: the listed gres indices within the step's
// GPUs, or, when none is (Slurm says "does not specify any devices within the allocation"), the
// step's first GPU.
std::optional<std::vector<unsigned>> listed_gpus(const std::string& item, bool mask, const std::vector<unsigned>& step) {
  std::vector<unsigned> ids;
  if (mask) {
    auto bits = number(item, 16);
    if (!bits) return std::nullopt;
    for (unsigned b = 0; b < 32; ++b)
      if (*bits & (1u << b)) ids.push_back(b);
  } else {
    auto id = number(item);
    if (!id) return std::nullopt;
    ids.push_back(*id);
  }
  std::vector<unsigned> rows;
  for (unsigned id : ids) {
    auto it = std::find(step.begin(), step.end(), id);
    if (it != step.end()) rows.push_back(unsigned(it - step.begin()));
  }
  if (rows.empty()) rows.push_back(0);
  return rows;
}

// The GPU part of SLURMD_TRES_BIND without its name and verbose: 22.05 writes "gpu:map_gpu:1,0"
// (parts apart at ';'), 24.11 on "gres/gpu:verbose,map:1,0+gres/nic:closest" (apart at '+', the
// gres named gres/NAME; --gpu-bind's older map_gpu:/mask_gpu: kept, and --tres-bind's map:/mask:).
// Read from Slurm's src/common/tres_bind.c at slurm-24-11-7-1 and from srun's own environment.
std::string gpu_rule(const std::string& tres_bind) {
  std::string gpu;
  for (std::string_view part : split(tres_bind, tres_bind.find('+') != std::string::npos ? '+' : ';')) {
    if (part.substr(0, 5) == "gres/") part.remove_prefix(5);
    if (part.substr(0, 4) == "gpu:") gpu = std::string(part.substr(4));
  }
  if (gpu.rfind("verbose,", 0) == 0) gpu = gpu.substr(8);
  return gpu;
}

// Every task's GPUs by the rule SLURMD_TRES_BIND names, where it names them all.
std::optional<std::vector<std::vector<unsigned>>> rule_rows(const std::string& tres_bind, const std::vector<unsigned>& step,
                                                            unsigned tasks) {
  std::string gpu = gpu_rule(tres_bind);
  std::vector<std::vector<unsigned>> rows(tasks);
  if (gpu.rfind("per_task:", 0) == 0) {
    auto n = number(std::string_view(gpu).substr(9));
    if (!n || *n == 0 || *n > step.size()) return std::nullopt;
    for (unsigned t = 0; t < tasks; ++t)
      for (unsigned k = 0; k < *n; ++k) rows[t].push_back(unsigned((size_t(t) * *n + k) % step.size()));
    return rows;
  }
  size_t list = 0;  // where the list starts
  for (const char* kind : {"mask_gpu:", "map_gpu:", "mask:", "map:"})
    if (gpu.rfind(kind, 0) == 0) list = std::string_view(kind).size();
  if (list == 0) return std::nullopt;
  bool mask = gpu.rfind("mask", 0) == 0;
  auto items = repeated_items(gpu.substr(list));
  if (!items) return std::nullopt;
  for (unsigned t = 0; t < tasks; ++t) {
    auto r = listed_gpus((*items)[t % items->size()], mask, step);
    if (!r) return std::nullopt;
    rows[t] = *r;
  }
  return rows;
}

}  // namespace

std::vector<std::string> slurm_step_env_names() {
  std::vector<std::string> names(std::begin(kCpuBindVars), std::end(kCpuBindVars));
  for (const std::string& n : plan::gpu_env_names()) names.push_back(n);
  return names;
}

std::optional<std::string> user_cpu_binding(const EnvMap& step) {
  auto type = step.find("SLURM_CPU_BIND_TYPE");
  if (type != step.end()) {
    // "mask_cpu:", "none", "cores"...; "" when the user gave only verbose or quiet.
    if (type->second.empty()) return std::nullopt;
    auto list = step.find("SLURM_CPU_BIND_LIST");
    return type->second + (list == step.end() ? "" : list->second);
  }
  // SLURM_CPU_BIND alone (a script's environment): verbosity words are no binding.
  auto bind = step.find("SLURM_CPU_BIND");
  if (bind == step.end()) return std::nullopt;
  std::vector<std::string> kept;
  for (std::string_view w : split(bind->second, ','))
    if (w != "verbose" && w != "quiet" && !w.empty()) kept.emplace_back(w);
  if (kept.empty()) return std::nullopt;
  return join(kept, ",");
}

std::optional<TaskGpus> slurm_task_gpus(const std::string& step_text, const std::string& task_text, const std::string& tres_bind,
                                        unsigned local_tasks, unsigned local_id) {
  auto step = index_list(step_text);
  auto task = index_list(task_text);
  if (!step || !task || local_id >= local_tasks || *step == *task) return std::nullopt;
  std::vector<unsigned> own;
  for (unsigned id : *task) {
    auto it = std::find(step->begin(), step->end(), id);
    if (it == step->end()) return std::nullopt;
    own.push_back(unsigned(it - step->begin()));
  }
  TaskGpus out;
  out.step_gpus = unsigned(step->size());
  if (auto rows = rule_rows(tres_bind, *step, local_tasks); rows && (*rows)[local_id] == own) {
    out.rows = std::move(*rows);
    out.exact = true;
    out.how = "Slurm's " + tres_bind + " over the step's GPUs " + step_text;
    return out;
  }
  // Not said for the other tasks: the default (task t on the step's GPU t, or tasks sharing in
  // turn), this task on its own GPUs, and the task that held them given this task's.
  for (unsigned t = 0; t < local_tasks; ++t)
    out.rows.push_back({unsigned(local_tasks <= step->size() ? t : size_t(t) * step->size() / local_tasks)});
  std::vector<unsigned> mine = out.rows[local_id];
  for (unsigned t = 0; t < local_tasks; ++t)
    if (t != local_id && out.rows[t] == std::vector<unsigned>{own[0]}) out.rows[t] = mine;
  out.rows[local_id] = own;
  out.how = (tres_bind.empty() ? std::string("Slurm") : "Slurm's " + tres_bind) + " gave this task GPU(s) " + task_text + " of the step's " +
            step_text + "; the other tasks' GPUs are not said and are assumed";
  return out;
}

std::optional<TaskGpus> exec_task_gpus(const EnvMap& task, unsigned local_tasks, unsigned local_id, EnvMap& gpu_env) {
  auto value = [&](const char* name) {
    auto it = task.find(name);
    return it == task.end() ? std::string() : it->second;
  };
  auto mine = index_list(value("SLURM_STEP_GPUS"));
  auto job = index_list(value("SLURM_JOB_GPUS"));
  if (!mine || !job || mine->empty() || job->size() != size_t(local_tasks) * mine->size()) return std::nullopt;
  std::string rule = !value("SLURMD_TRES_BIND").empty() ? value("SLURMD_TRES_BIND") : value("SLURM_TRES_BIND");
  if (rule.empty() && !value("SLURM_GPUS_PER_TASK").empty()) rule = "gpu:per_task:" + value("SLURM_GPUS_PER_TASK");
  auto gpus = slurm_task_gpus(value("SLURM_JOB_GPUS"), value("SLURM_STEP_GPUS"), rule, local_tasks, local_id);
  if (!gpus) return std::nullopt;
  for (const char* narrowed : {"CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ZE_AFFINITY_MASK", "NVIDIA_VISIBLE_DEVICES"})
    gpu_env.erase(narrowed);
  gpu_env["SLURM_STEP_GPUS"] = value("SLURM_JOB_GPUS");
  gpus->how += " (the job's GPUs on this node stand for the step's)";
  return gpus;
}

Result<CpuSet> slurm_core_cpus(const topo::Topology& t, const std::string& cores) {
  auto ids = CpuSet::parse_list(cores);
  if (!ids || ids->empty()) return Error{"Slurm's step cores '" + cores + "'", "not a list of core numbers"};
  if (t.cores.empty()) return Error{"Slurm's step cores " + cores, "the topology gives no cores to number"};
  // Slurm's core N is hwloc's logical core N (slurmd numbers cores socket by socket in hwloc's
  // order, whatever counts as a socket): topo::logical_core_ids, as gres.conf's Cores= are.
  std::vector<unsigned> logical = topo::logical_core_ids(t);
  std::vector<const topo::Core*> order(t.cores.size());
  for (size_t i = 0; i < t.cores.size(); ++i) order[logical[i]] = &t.cores[i];
  CpuSet out;
  for (unsigned id : ids->ids()) {
    if (id >= order.size())
      return Error{"Slurm's step cores " + cores, "core " + std::to_string(id) + " is beyond this machine's " + std::to_string(order.size()) +
                                                 " cores (slurm.conf describes another node layout)"};
    out |= order[id]->pus;
  }
  return out;
}

}  // namespace gpubind::bind

#include "check/contention.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "topo/pinning_env.hpp"
#include "util/strings.hpp"

namespace gpubind::check {

bool descends_from(int pid, int ancestor, const std::map<int, int>& parent_of) {
  for (int hops = 0; hops < 64; ++hops) {
    if (pid == ancestor) return true;
    auto it = parent_of.find(pid);
    if (it == parent_of.end()) return false;
    pid = it->second;
  }
  return false;
}

namespace {

// What a name says of the pool it belongs to: thread names the libraries give their own threads
// (torch names its main thread pt_main_thread, and threads started from it keep the name; its
// DataLoader worker processes pt_data_worker and their pin-memory thread pt_data_pin; its autograd
// threads pt_autograd_N; NCCL names its threads "NCCL ..." when NCCL_SET_THREAD_NAME=1).
struct KnownPool {
  const char* prefix;
  const char* what;
  const char* setting;  // "" when nothing sizes it
};
constexpr KnownPool kKnownPools[] = {
    {"pt_data_worker", "DataLoader workers", "num_workers"},
    {"pt_data_pin", "DataLoader's pin-memory thread", "pin_memory"},
    {"pt_autograd", "autograd's device threads", ""},
    {"NCCL", "NCCL's proxy and service threads", "NCCL_NTHREADS and the communicators it opens"},
};

std::string env_value(const std::map<std::string, std::string>& env, const char* name) {
  auto it = env.find(name);
  return it == env.end() ? std::string(name) + " unset" : std::string(name) + "=" + one_line(it->second);
}

}  // namespace

std::string name_family(const std::string& comm) {
  size_t end = comm.size();
  while (end > 0 && (std::isdigit((unsigned char)comm[end - 1]) || std::strchr(" -_/:", comm[end - 1]))) --end;
  return end ? comm.substr(0, end) : "(unnamed)";
}

std::string thread_pools(const std::vector<BusyName>& busy, const std::string& main_name, const std::map<std::string, std::string>& env) {
  std::vector<BusyName> sorted = busy;
  std::stable_sort(sorted.begin(), sorted.end(), [](const BusyName& a, const BusyName& b) { return a.count > b.count; });
  std::vector<std::string> parts;
  for (const BusyName& b : sorted) {
    std::string who = std::to_string(b.count) + (b.process ? " child process(es) '" : " thread(s) '") + one_line(b.name) + "'";
    const KnownPool* known = nullptr;
    for (const KnownPool& k : kKnownPools)
      if (b.name.starts_with(k.prefix)) known = &k;
    if (known) {
      who += std::string(" (") + known->what + (*known->setting ? std::string(": ") + known->setting : "") + ")";
    } else if (!b.process && b.name == main_name && b.count > 1) {
      who = std::to_string(b.count) + " thread(s) named like its main thread '" + one_line(b.name) +
            "' (OpenMP's and torch's intra-op workers keep it: sized by " + env_value(env, "OMP_NUM_THREADS") + ", " +
            env_value(env, "MKL_NUM_THREADS") + " or torch.set_num_threads)";
    }
    parts.push_back(who);
    if (parts.size() == 4) break;
  }
  return join(parts, ", ");
}

std::optional<std::string> oversubscribed(double runnable, unsigned cpus, double ratio, const std::string& how, const std::string& pools) {
  if (cpus == 0 || runnable <= ratio * cpus) return std::nullopt;
  std::string out = fixed(runnable, 1) + " threads " + how + " on " + std::to_string(cpus) + " allowed CPU(s) (" +
                    fixed(runnable / cpus, 1) + " per CPU)";
  if (!pools.empty()) out += ": " + pools;
  return out + "; size its pools to its " + std::to_string(cpus) + " CPU(s)";
}

std::optional<std::string> throttled(const probe::CpuQuota& quota, uint64_t periods, uint64_t throttled, double throttled_seconds,
                                     unsigned cpus, double share, const std::string& when) {
  if (periods == 0 || double(throttled) <= share * double(periods)) return std::nullopt;
  std::string out = "throttled in " + std::to_string(throttled) + " of " + std::to_string(periods) + " periods " + when + " (" +
                    fixed(throttled_seconds, 1) + " s of run queues held back) by " + one_line(quota.cgroup) + "'s " +
                    one_line(quota.setting) + ", " + fixed(quota.cpus, 2) + " CPU(s)' worth";
  if (cpus > 0 && quota.cpus < double(cpus))
    out += ", under its " + std::to_string(cpus) +
           " allowed CPU(s): a pool sized to its CPUs outruns the quota; raise the quota or size the pools to it";
  return out;
}

std::string library_behind(const std::string& thread, const std::map<std::string, std::string>& env) {
  namespace pe = topo::pinning_env;
  bool nccl_named = thread.starts_with("NCCL");
  for (const pe::Knob& k : pe::kKnobs) {
    if (!pe::on(env, k.name) || (nccl_named && std::string_view(k.library) != "NCCL")) continue;
    return std::string(nccl_named ? "" : "likely ") + k.library + ": " + k.name + "=" + one_line(env.at(k.name)) + " is set: " + k.stop;
  }
  return nccl_named ? "NCCL (it keeps its threads within the rank's CPUs unless NCCL_IGNORE_CPU_AFFINITY or NCCL_PROXY_CPUSET is set)" : "";
}

}  // namespace gpubind::check

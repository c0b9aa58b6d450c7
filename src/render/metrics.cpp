#include "render/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>
#include <string_view>

#include "util/strings.hpp"

namespace gpubind::render {

namespace {

// A label value as the exposition format writes it: valid UTF-8 (Prometheus refuses the whole
// scrape for one invalid byte), backslash, double quote and newline escaped.
std::string label_value(const std::string& raw) {
  std::string out, v = valid_utf8(raw);
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

struct Family {
  const char* name;
  const char* type;  // counter or gauge
  const char* help;
};

const Family kFamilies[] = {
    {"gpubind_rank_migrations_total", "counter", "CPU migrations of the rank's threads since watch started"},
    {"gpubind_rank_cpu_seconds_total", "counter", "CPU time of the rank's threads since watch started"},
    {"gpubind_rank_cross_numa_cpu_seconds_total", "counter",
     "CPU time of the rank's threads since watch started whose thread last ran off its GPU's NUMA node(s) at the interval's end"},
    {"gpubind_rank_cross_socket_cpu_seconds_total", "counter",
     "CPU time of the rank's threads since watch started whose thread last ran off its GPU's package(s) at the interval's end"},
    {"gpubind_rank_affinity_changes_total", "counter",
     "Changes of a thread's allowed CPUs seen between two samples, by thread name (digits dropped; 8 names, then \"(other)\")"},
    {"gpubind_rank_cross_numa_ratio", "gauge",
     "Share of the rank's CPU time in the last interval that ran off its GPU's NUMA node(s), 0-1"},
    {"gpubind_rank_cross_socket_ratio", "gauge",
     "Share of the rank's CPU time in the last interval that ran off its GPU's package(s), 0-1"},
    {"gpubind_rank_remote_memory_ratio", "gauge", "Share of the rank's resident pages off its GPU's NUMA node(s), last read, 0-1"},
    {"gpubind_rank_drifted", "gauge",
     "1 while the rank's allowed CPUs differ from GPUBIND_CPUS or from when watch first saw them, or changed in the last drift hold (30 "
     "s)"},
    {"gpubind_rank_overlap", "gauge", "1 when the rank's CPUs overlap another pinned rank's"},
    {"gpubind_rank_allowed_cpus", "gauge", "Number of CPUs the rank may run on; the list is the cpus label"},
    {"gpubind_node_rank_imbalance_ratio", "gauge",
     "Spread of the ranks' CPU time in the last interval, (max - min) / max, 0-1; absent while ranks are idle"},
    {"gpubind_watch_intervals_total", "counter", "Intervals watch has judged"},
    {"gpubind_watch_sample_seconds", "gauge", "Time the last sample took (reading /proc for every target)"},
    {"gpubind_gpu_utilization_ratio", "gauge", "Busy share of the GPU in its runtime library's last sample period, 0-1 (NVML)"},
    {"gpubind_gpu_memory_used_bytes", "gauge", "Memory used on the GPU (NVML)"},
    {"gpubind_node_gpu_imbalance_ratio", "gauge",
     "Spread of the utilization of the GPUs the ranks hold, max - min, 0-1; absent while they are idle or unknown"},
    {"gpubind_gpu_pcie_tx_bytes_per_second", "gauge", "PCIe traffic from the GPU to the host (NVML's last 20 ms)"},
    {"gpubind_gpu_pcie_rx_bytes_per_second", "gauge", "PCIe traffic from the host to the GPU (NVML's last 20 ms)"},
    {"gpubind_rank_repins_total", "counter",
     "Threads of the rank watch --enforce put back on its CPUs (mode=\"report\": drifts it only reported); a rising count is a "
     "library or user fighting the binding"},
    {"gpubind_rank_context_switches_total", "counter",
     "Context switches of the rank's threads, voluntary and involuntary, since watch started"},
    {"gpubind_rank_run_delay_seconds_total", "counter",
     "Time the rank's threads waited, runnable, for a CPU since watch started (schedstat; a running thread's read every 8th sample)"},
    {"gpubind_rank_runnable_threads", "gauge",
     "The rank's own threads running or waiting for a CPU, on average over the last 8 intervals ((CPU time + waits) / seconds)"},
    {"gpubind_rank_cpu_quota_cpus", "gauge",
     "CPUs' worth of time the smallest CPU quota of the rank's cgroups allows (cpu.max, cpu.cfs_quota_us); the cgroup is the cgroup label"},
    {"gpubind_rank_cfs_periods_total", "counter", "Enforcement periods of the rank's CPU quota since watch started (cpu.stat nr_periods)"},
    {"gpubind_rank_cfs_throttled_periods_total", "counter",
     "Enforcement periods in which the rank's CPU quota throttled its cgroup since watch started (cpu.stat nr_throttled)"},
    {"gpubind_rank_throttled_seconds_total", "counter",
     "Run-queue time the rank's CPU quota held back since watch started, summed over CPUs (cpu.stat throttled_usec)"},
};

const Family& family(std::string_view name) {
  for (const Family& f : kFamilies)
    if (name == f.name) return f;
  return kFamilies[0];  // unreachable: every caller names a family of the table
}

void header(std::string& out, const Family& f) {
  out += std::string("# HELP ") + f.name + " " + f.help + "\n# TYPE " + f.name + " " + f.type + "\n";
}

// The labels naming a GPU as dcgm-exporter does (its index and UUID), so that both exporters'
// series join in PromQL on UUID, and its PCI address.
struct GpuLabels {
  std::string index, uuid, pci;
};
GpuLabels gpu_labels(const topo::Topology* t, const std::string& pci) {
  GpuLabels g{"", "", pci};
  if (const topo::Gpu* gpu = t && !pci.empty() ? topo::find_gpu(*t, pci) : nullptr) {
    g.index = std::to_string(gpu->index);
    g.uuid = gpu->uuid;
  }
  return g;
}

}  // namespace

std::string label_set(std::initializer_list<std::pair<const char*, std::string>> pairs) {
  std::string out = "{";
  for (const auto& [name, value] : pairs) out += (out.size() > 1 ? "," : "") + std::string(name) + "=\"" + label_value(value) + "\"";
  return out + "}";
}

const std::vector<std::string>& metric_families() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const Family& f : kFamilies) v.push_back(f.name);
    return v;
  }();
  return names;
}

std::string metrics_text(const MetricsInput& in) {
  // A rank's labels; `extra` (a thread name) goes last.
  auto labels = [&](const auto& r, const char* extra_name = nullptr, const std::string& extra = "") {
    GpuLabels g = gpu_labels(in.topo, r.gpus.empty() ? "" : r.gpus[0]);
    probe::KubeContainer k = r.kube.value_or(probe::KubeContainer{});
    std::string out = label_set({{"node", in.node}, {"pid", std::to_string(r.pid)}, {"rank", r.rank}, {"local_rank", r.local_rank},
                                 {"gpu", g.index}, {"UUID", g.uuid}, {"pci", g.pci}, {"slurm_job_id", r.slurm_job},
                                 {"slurm_step_id", r.slurm_step}, {"torchelastic_run_id", r.run_id}, {"k8s_namespace", k.namespace_name},
                                 {"k8s_pod", k.pod}, {"k8s_container", k.container}});
    if (extra_name) out.insert(out.size() - 1, std::string(",") + extra_name + "=\"" + label_value(extra) + "\"");
    return out;
  };
  std::string out;
  std::set<int> live;  // ranks of the last interval: exited ones (and GPU daemons) are not exported
  if (in.last)
    for (const watch::RankInterval& r : in.last->ranks)
      if (r.holder.empty()) live.insert(r.pid);

  // One family's samples, one per rank that has a value: totals come from the summary (counters,
  // the last remote-memory share), the rest from the last interval.
  auto per_rank = [&](std::string_view name, const auto* ranks, auto value) {
    const Family& f = family(name);
    header(out, f);
    if (!ranks) return;
    for (const auto& r : *ranks)
      if (std::optional<double> v = value(r); v && live.count(r.pid)) out += std::string(f.name) + labels(r) + " " + number(*v) + "\n";
  };
  auto per_node = [&](std::string_view name, std::optional<double> v) {
    const Family& f = family(name);
    header(out, f);
    if (v) out += std::string(f.name) + label_set({{"node", in.node}}) + " " + number(*v) + "\n";
  };
  const std::vector<watch::RankSummary>* totals = in.summary ? &in.summary->ranks : nullptr;
  const std::vector<watch::RankInterval>* last = in.last ? &in.last->ranks : nullptr;
  auto has = [](const watch::RankInterval& r, watch::Finding f) { return std::optional<double>(r.has(f) ? 1.0 : 0.0); };
  using Sum = watch::RankSummary;
  using Now = watch::RankInterval;
  per_rank("gpubind_rank_migrations_total", totals, [](const Sum& r) { return std::optional<double>(double(r.migrations)); });
  per_rank("gpubind_rank_cpu_seconds_total", totals, [](const Sum& r) { return std::optional<double>(r.cpu_seconds); });
  per_rank("gpubind_rank_cross_numa_cpu_seconds_total", totals, [](const Sum& r) { return r.cross_numa_seconds; });
  per_rank("gpubind_rank_cross_socket_cpu_seconds_total", totals, [](const Sum& r) { return r.cross_socket_seconds; });
  {  // by thread name: one sample per name a rank's changes came from
    const Family& f = family("gpubind_rank_affinity_changes_total");
    header(out, f);
    if (totals)
      for (const Sum& r : *totals)
        if (live.count(r.pid))
          for (const auto& [thread, n] : r.changes_by_thread)
            out += std::string(f.name) + labels(r, "thread", thread) + " " + number(double(n)) + "\n";
  }
  per_rank("gpubind_rank_cross_numa_ratio", last, [](const Now& r) { return r.cross_numa; });
  per_rank("gpubind_rank_cross_socket_ratio", last, [](const Now& r) { return r.cross_socket; });
  per_rank("gpubind_rank_remote_memory_ratio", totals, [](const Sum& r) { return r.remote_memory; });
  per_rank("gpubind_rank_drifted", last, [&](const Now& r) { return has(r, watch::Finding::drifted); });
  per_rank("gpubind_rank_overlap", last, [&](const Now& r) { return has(r, watch::Finding::overlap); });
  {  // the CPUs themselves as a label: one sample per rank, its value their number
    const Family& f = family("gpubind_rank_allowed_cpus");
    header(out, f);
    if (last)
      for (const Now& r : *last)
        if (live.count(r.pid)) out += std::string(f.name) + labels(r, "cpus", r.cpus.to_list()) + " " + number(double(r.cpus.count())) + "\n";
  }
  per_node("gpubind_node_rank_imbalance_ratio", in.last ? in.last->imbalance : std::nullopt);
  per_node("gpubind_watch_intervals_total", double(in.summary ? in.summary->intervals : 0));
  per_node("gpubind_watch_sample_seconds", in.sample_seconds);
  // Per GPU, when the runtime library gives it.
  auto per_gpu = [&](std::string_view name, auto value) {
    const Family& f = family(name);
    header(out, f);
    if (!in.last) return;
    for (const probe::GpuUsage& g : in.last->gpus)
      if (std::optional<double> v = value(g)) {
        GpuLabels l = gpu_labels(in.topo, g.pci);
        out += std::string(f.name) + label_set({{"node", in.node}, {"gpu", l.index}, {"UUID", l.uuid}, {"pci", l.pci}}) + " " +
               number(*v) + "\n";
      }
  };
  per_gpu("gpubind_gpu_utilization_ratio", [](const probe::GpuUsage& g) { return g.utilization; });
  per_gpu("gpubind_gpu_memory_used_bytes", [](const probe::GpuUsage& g) {
    return g.memory_used ? std::optional<double>(double(*g.memory_used)) : std::nullopt;
  });
  per_node("gpubind_node_gpu_imbalance_ratio", in.last ? in.last->gpu_imbalance : std::nullopt);
  per_gpu("gpubind_gpu_pcie_tx_bytes_per_second", [](const probe::GpuUsage& g) { return g.pcie_tx; });
  per_gpu("gpubind_gpu_pcie_rx_bytes_per_second", [](const probe::GpuUsage& g) { return g.pcie_rx; });
  per_rank("gpubind_rank_context_switches_total", totals, [](const Sum& r) { return std::optional<double>(double(r.context_switches)); });
  per_rank("gpubind_rank_run_delay_seconds_total", totals, [](const Sum& r) { return r.run_delay_seconds; });
  per_rank("gpubind_rank_runnable_threads", last, [](const Now& r) { return r.runnable; });
  {  // the cgroup as a label, one sample per rank under a quota
    const Family& f = family("gpubind_rank_cpu_quota_cpus");
    header(out, f);
    if (last)
      for (const Now& r : *last)
        if (live.count(r.pid) && r.quota)
          out += std::string(f.name) + labels(r, "cgroup", r.quota->cgroup) + " " + number(r.quota->cpus) + "\n";
  }
  auto quota_total = [](auto value) { return [value](const Sum& r) { return r.quota ? std::optional<double>(value(r)) : std::nullopt; }; };
  per_rank("gpubind_rank_cfs_periods_total", totals, quota_total([](const Sum& r) { return double(r.periods); }));
  per_rank("gpubind_rank_cfs_throttled_periods_total", totals, quota_total([](const Sum& r) { return double(r.throttled_periods); }));
  per_rank("gpubind_rank_throttled_seconds_total", totals, quota_total([](const Sum& r) { return r.throttled_seconds; }));
  {  // with --enforce, every rank watched: 0 until its first repin, so that increase() sees the first
    const Family& f = family("gpubind_rank_repins_total");
    header(out, f);
    if (last && in.repins)
      for (const Now& r : *last)
        if (live.count(r.pid)) {
          auto it = in.repins->find(r.pid);
          out += std::string(f.name) + labels(r, "mode", in.enforce_mode) + " " + number(double(it == in.repins->end() ? 0 : it->second)) + "\n";
        }
  }
  return out;
}

}  // namespace gpubind::render

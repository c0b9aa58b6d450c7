#include "render/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>

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
    {"gpubind_rank_cross_numa_ratio", "gauge",
     "Share of the rank's CPU time in the last interval that ran off its GPU's NUMA node(s), 0-1"},
    {"gpubind_rank_cross_socket_ratio", "gauge",
     "Share of the rank's CPU time in the last interval that ran off its GPU's package(s), 0-1"},
    {"gpubind_rank_remote_memory_ratio", "gauge", "Share of the rank's resident pages off its GPU's NUMA node(s), last read, 0-1"},
    {"gpubind_rank_drifted", "gauge", "1 when the rank's allowed CPUs changed since watch first saw it or differ from GPUBIND_CPUS"},
    {"gpubind_rank_overlap", "gauge", "1 when the rank's CPUs overlap another pinned rank's"},
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
    {"gpubind_rank_context_switches_total", "counter", "Context switches of the rank's threads, voluntary and involuntary, since watch started"},
};

void header(std::string& out, const Family& f) {
  out += std::string("# HELP ") + f.name + " " + f.help + "\n# TYPE " + f.name + " " + f.type + "\n";
}

}  // namespace

const std::vector<std::string>& metric_families() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const Family& f : kFamilies) v.push_back(f.name);
    return v;
  }();
  return names;
}

std::string metrics_text(const MetricsInput& in) {
  auto labels = [&](int pid, const std::string& rank, const std::string& local_rank, const std::vector<std::string>& gpus,
                    const std::string& job) {
    return "{node=\"" + label_value(in.node) + "\",pid=\"" + std::to_string(pid) + "\",rank=\"" + label_value(rank) +
           "\",local_rank=\"" + label_value(local_rank) + "\",gpu=\"" + label_value(gpus.empty() ? "" : gpus[0]) + "\",job=\"" +
           label_value(job) + "\"}";
  };
  std::string out;
  std::set<int> live;  // ranks of the last interval: exited ones are no longer exported
  if (in.last)
    for (const watch::RankInterval& r : in.last->ranks) live.insert(r.pid);

  // One family's samples, one per rank that has a value: totals come from the summary (counters,
  // the last remote-memory share), the rest from the last interval.
  auto per_rank = [&](const Family& f, const auto* ranks, auto value) {
    header(out, f);
    if (!ranks) return;
    for (const auto& r : *ranks)
      if (std::optional<double> v = value(r); v && live.count(r.pid))
        out += std::string(f.name) + labels(r.pid, r.rank, r.local_rank, r.gpus, r.job) + " " + number(*v) + "\n";
  };
  auto per_node = [&](const Family& f, std::optional<double> v) {
    header(out, f);
    if (v) out += std::string(f.name) + "{node=\"" + label_value(in.node) + "\"} " + number(*v) + "\n";
  };
  const std::vector<watch::RankSummary>* totals = in.summary ? &in.summary->ranks : nullptr;
  const std::vector<watch::RankInterval>* last = in.last ? &in.last->ranks : nullptr;
  auto has = [](const watch::RankInterval& r, watch::Finding f) { return std::optional<double>(r.has(f) ? 1.0 : 0.0); };
  per_rank(kFamilies[0], totals, [](const watch::RankSummary& r) { return std::optional<double>(double(r.migrations)); });
  per_rank(kFamilies[1], totals, [](const watch::RankSummary& r) { return std::optional<double>(r.cpu_seconds); });
  per_rank(kFamilies[2], last, [](const watch::RankInterval& r) { return r.cross_numa; });
  per_rank(kFamilies[3], last, [](const watch::RankInterval& r) { return r.cross_socket; });
  per_rank(kFamilies[4], totals, [](const watch::RankSummary& r) { return r.remote_memory; });
  per_rank(kFamilies[5], last, [&](const watch::RankInterval& r) { return has(r, watch::Finding::drifted); });
  per_rank(kFamilies[6], last, [&](const watch::RankInterval& r) { return has(r, watch::Finding::overlap); });
  per_node(kFamilies[7], in.last ? in.last->imbalance : std::nullopt);
  per_node(kFamilies[8], double(in.summary ? in.summary->intervals : 0));
  per_node(kFamilies[9], in.sample_seconds);
  // Per GPU, when the runtime library gives it.
  auto per_gpu = [&](const Family& f, auto value) {
    header(out, f);
    if (!in.last) return;
    for (const probe::GpuUsage& g : in.last->gpus)
      if (std::optional<double> v = value(g))
        out += std::string(f.name) + "{node=\"" + label_value(in.node) + "\",gpu=\"" + label_value(g.pci) + "\"} " + number(*v) + "\n";
  };
  per_gpu(kFamilies[10], [](const probe::GpuUsage& g) { return g.utilization; });
  per_gpu(kFamilies[11], [](const probe::GpuUsage& g) {
    return g.memory_used ? std::optional<double>(double(*g.memory_used)) : std::nullopt;
  });
  per_node(kFamilies[12], in.last ? in.last->gpu_imbalance : std::nullopt);
  per_gpu(kFamilies[13], [](const probe::GpuUsage& g) { return g.pcie_tx; });
  per_gpu(kFamilies[14], [](const probe::GpuUsage& g) { return g.pcie_rx; });
  per_rank(kFamilies[15], totals, [](const watch::RankSummary& r) { return std::optional<double>(double(r.context_switches)); });
  return out;
}

}  // namespace gpubind::render

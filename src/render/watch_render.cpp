#include "render/watch_render.hpp"

#include <cstdio>

#include "render/table.hpp"
#include "util/strings.hpp"

namespace gpubind::render {

namespace {

std::string share(const std::optional<double>& v) {
  return v ? std::to_string(int(*v * 100 + 0.5)) + " %" : std::string("-");  // 0-1: no lround, no libm
}

std::string who(const std::string& rank, const std::string& local_rank) {
  if (!rank.empty()) return rank;
  return local_rank.empty() ? "-" : "local " + local_rank;
}

watch::Finding kind_of(watch::Finding f) { return f; }
watch::Finding kind_of(const watch::RankFinding& f) { return f.kind; }

template <class Findings>
std::string findings_text(const Findings& fs) {
  std::vector<std::string> names;
  for (const auto& f : fs) names.push_back(watch::to_string(kind_of(f)));
  return names.empty() ? "OK" : join(names, ",");
}

// The fields naming a rank, first in every rank object of both kinds of line.
template <class R>
nlohmann::ordered_json rank_object(const R& r) {
  auto text_or_null = [](const std::string& v) { return v.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(v); };
  nlohmann::ordered_json e;
  e["pid"] = r.pid;
  e["comm"] = r.comm;
  e["rank"] = text_or_null(r.rank);
  e["local_rank"] = text_or_null(r.local_rank);
  e["job"] = text_or_null(r.job);
  e["slurm_job_id"] = text_or_null(r.slurm_job);
  e["slurm_step_id"] = text_or_null(r.slurm_step);
  e["k8s"] = r.kube ? nlohmann::ordered_json{{"namespace", r.kube->namespace_name}, {"pod", r.kube->pod}, {"container", r.kube->container}}
                    : nlohmann::ordered_json();
  e["gpus"] = r.gpus;
  return e;
}

nlohmann::ordered_json change_object(const watch::MaskChange& c) {
  return {{"tid", c.tid}, {"thread", c.thread}, {"before", c.before.to_list()}, {"after", c.after.to_list()}};
}

nlohmann::ordered_json quota_object(const std::optional<probe::CpuQuota>& q) {
  if (!q) return nlohmann::ordered_json();
  return {{"cgroup", q->cgroup}, {"setting", q->setting}, {"cpus", q->cpus}};
}

nlohmann::ordered_json optional_number(const std::optional<double>& v) { return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(); }

}  // namespace

std::string interval_text(const watch::Interval& iv) {
  std::string head = "interval " + std::to_string(iv.index) + " (" + fixed(iv.start, 1) + "-" + fixed(iv.end, 1) + " s): " +
                     std::to_string(iv.ranks.size()) + " process(es)";
  if (iv.imbalance) head += ", CPU time imbalance " + share(iv.imbalance);
  if (iv.gpu_imbalance) head += ", GPU utilization spread " + share(iv.gpu_imbalance);
  std::string out = head + "\n";
  if (!iv.ranks.empty()) {
    TextTable t({"PID", "RANK", "COMMAND", "GPU", "CPUS", "GPU-UTIL", "THREADS", "CPU-S", "RUNNABLE", "MIGR/S", "CSW/S", "CROSS-NUMA",
                 "REMOTE-MEM", "FINDINGS"});
    for (const watch::RankInterval& r : iv.ranks)
      t.add({std::to_string(r.pid), who(r.rank, r.local_rank), r.comm, r.gpus.empty() ? "-" : join(r.gpus, ","), r.cpus.to_list(),
             share(r.gpu_utilization), std::to_string(r.threads), r.started ? "new" : fixed(r.cpu_seconds, 2),
             r.pool_runnable ? fixed(*r.pool_runnable, 1) : "-", r.started ? "-" : fixed(r.migrations_per_second, 1),
             r.started ? "-" : fixed(r.context_switches_per_second, 0), share(r.cross_numa), share(r.remote_memory),
             r.holder.empty() ? findings_text(r.findings) : r.holder_verdict});
    out += t.str();
    for (const watch::RankInterval& r : iv.ranks)
      for (const watch::RankFinding& f : r.findings)
        out += "  " + std::to_string(r.pid) + " " + watch::to_string(f.kind) + ": " + one_line(f.reason) + "\n";
    for (const watch::RankInterval& r : iv.ranks)
      for (const watch::MaskChange& c : r.mask_changes)
        out += "  " + std::to_string(r.pid) + " thread " + std::to_string(c.tid) + " '" + one_line(c.thread) + "' allowed CPUs " +
               c.before.to_list() + " -> " + c.after.to_list() + "\n";
  }
  for (int pid : iv.exited) out += "  " + std::to_string(pid) + " exited\n";
  return out;
}

std::string summary_text(const watch::Summary& s) {
  std::string out = "summary: " + std::to_string(s.intervals) + " interval(s) over " + fixed(s.seconds, 1) + " s, " +
                    std::to_string(s.ranks.size()) + " process(es)\n";
  if (s.ranks.empty()) return out;
  TextTable t({"PID", "RANK", "COMMAND", "MIGRATIONS", "CPU-S", "CROSS-NUMA", "REMOTE-MEM", "SEEN", "WORST"});
  for (const watch::RankSummary& r : s.ranks)
    t.add({std::to_string(r.pid), who(r.rank, r.local_rank), r.comm + (r.exited ? " (exited)" : ""),
           std::to_string(r.migrations), fixed(r.cpu_seconds, 2), share(r.cross_numa), share(r.remote_memory), r.holder.empty() ? findings_text(r.seen) : r.holder_verdict,
           r.worst_interval ? std::to_string(*r.worst_interval) : "-"});
  out += t.str();
  if (s.exited_not_listed)
    out += "and " + std::to_string(s.exited_not_listed) + " earlier exited process(es) not listed (" +
           std::to_string(s.exited_not_listed_with_findings) + " with findings)\n";
  return out;
}

nlohmann::ordered_json interval_json(const watch::Interval& iv, const std::string& node, const std::string& time) {
  nlohmann::ordered_json j;
  j["schema_version"] = kWatchSchemaVersion;
  j["type"] = "interval";
  j["node"] = node;
  j["time"] = time;
  j["index"] = iv.index;
  j["start"] = iv.start;
  j["end"] = iv.end;
  j["imbalance"] = optional_number(iv.imbalance);
  j["cpu_cv"] = optional_number(iv.cpu_cv);
  j["gpu_imbalance"] = optional_number(iv.gpu_imbalance);
  j["gpus"] = nlohmann::ordered_json::array();
  for (const probe::GpuUsage& g : iv.gpus) {
    auto bytes = [](const std::optional<uint64_t>& v) { return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(); };
    j["gpus"].push_back({{"pci", g.pci},
                         {"utilization", optional_number(g.utilization)},
                         {"memory_used_bytes", bytes(g.memory_used)},
                         {"memory_total_bytes", bytes(g.memory_total)},
                         {"pcie_tx_bytes_per_second", optional_number(g.pcie_tx)},
                         {"pcie_rx_bytes_per_second", optional_number(g.pcie_rx)}});
  }
  j["ranks"] = nlohmann::ordered_json::array();
  for (const watch::RankInterval& r : iv.ranks) {
    nlohmann::ordered_json e = rank_object(r);
    e["holder"] = r.holder.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(r.holder);
    e["cpus"] = r.cpus.to_list();
    e["threads"] = r.threads;
    e["new"] = r.started;
    e["cpu_seconds"] = r.cpu_seconds;
    e["gpu_utilization"] = optional_number(r.gpu_utilization);
    e["migrations"] = r.migrations;
    e["migrations_per_second"] = r.migrations_per_second;
    e["context_switches"] = r.context_switches;
    e["context_switches_per_second"] = r.context_switches_per_second;
    e["cross_numa_ratio"] = optional_number(r.cross_numa);
    e["cross_socket_ratio"] = optional_number(r.cross_socket);
    e["remote_memory_ratio"] = optional_number(r.remote_memory);
    e["run_delay_seconds"] = optional_number(r.run_delay_seconds);
    e["runnable_threads"] = optional_number(r.runnable);
    e["pool_runnable_threads"] = optional_number(r.pool_runnable);
    e["cpu_quota"] = quota_object(r.quota);
    e["cfs_periods"] = r.quota ? nlohmann::ordered_json(r.periods) : nlohmann::ordered_json();
    e["cfs_throttled_periods"] = r.quota ? nlohmann::ordered_json(r.throttled_periods) : nlohmann::ordered_json();
    e["throttled_seconds"] = r.quota ? nlohmann::ordered_json(r.throttled_seconds) : nlohmann::ordered_json();
    e["mask_changes"] = nlohmann::ordered_json::array();
    for (const watch::MaskChange& c : r.mask_changes) e["mask_changes"].push_back(change_object(c));
    e["findings"] = nlohmann::ordered_json::array();
    for (const watch::RankFinding& f : r.findings) e["findings"].push_back({{"finding", watch::to_string(f.kind)}, {"reason", f.reason}});
    j["ranks"].push_back(e);
  }
  j["exited"] = iv.exited;
  return j;
}

nlohmann::ordered_json summary_json(const watch::Summary& s, const std::string& node, const std::string& time) {
  nlohmann::ordered_json j;
  j["schema_version"] = kWatchSchemaVersion;
  j["type"] = "summary";
  j["node"] = node;
  j["time"] = time;
  j["intervals"] = s.intervals;
  j["seconds"] = s.seconds;
  j["ranks"] = nlohmann::ordered_json::array();
  for (const watch::RankSummary& r : s.ranks) {
    nlohmann::ordered_json e = rank_object(r);
    e["intervals"] = r.intervals;
    e["migrations"] = r.migrations;
    e["context_switches"] = r.context_switches;
    e["cpu_seconds"] = r.cpu_seconds;
    e["cross_numa_ratio"] = optional_number(r.cross_numa);
    e["remote_memory_ratio"] = optional_number(r.remote_memory);
    e["run_delay_seconds"] = optional_number(r.run_delay_seconds);
    e["cfs_periods"] = r.quota ? nlohmann::ordered_json(r.periods) : nlohmann::ordered_json();
    e["cfs_throttled_periods"] = r.quota ? nlohmann::ordered_json(r.throttled_periods) : nlohmann::ordered_json();
    e["throttled_seconds"] = r.quota ? nlohmann::ordered_json(r.throttled_seconds) : nlohmann::ordered_json();
    e["holder"] = r.holder.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(r.holder);
    e["cpus"] = r.cpus.to_list();
    e["mask_changes"] = r.mask_changes();
    e["mask_changes_by_thread"] = r.changes_by_thread;
    e["last_mask_change"] = r.last_change ? change_object(*r.last_change) : nlohmann::ordered_json();
    std::vector<std::string> seen;
    for (watch::Finding f : r.seen) seen.push_back(watch::to_string(f));
    e["seen"] = seen;
    e["worst_interval"] = r.worst_interval ? nlohmann::ordered_json(*r.worst_interval) : nlohmann::ordered_json();
    e["exited"] = r.exited;
    j["ranks"].push_back(e);
  }
  j["exited_not_listed"] = s.exited_not_listed;
  j["exited_not_listed_with_findings"] = s.exited_not_listed_with_findings;
  j["any_finding"] = s.any_finding;
  return j;
}

}  // namespace gpubind::render

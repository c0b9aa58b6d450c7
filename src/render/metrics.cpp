#include "render/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>

namespace gpubind::render {

namespace {

// A label value as the exposition format writes it: backslash, double quote and newline escaped.
std::string label_value(const std::string& v) {
  std::string out;
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
    {"gpubind_rank_migrations_total", "counter", "CPU migrations of the rank's threads (se.nr_migrations) since watch started"},
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

  auto counter = [&](const Family& f, auto value) {
    header(out, f);
    if (!in.summary) return;
    for (const watch::RankSummary& r : in.summary->ranks)
      if (live.count(r.pid)) out += std::string(f.name) + labels(r.pid, r.rank, r.local_rank, r.gpus, r.job) + " " + number(value(r)) + "\n";
  };
  auto gauge = [&](const Family& f, auto value) {
    header(out, f);
    if (!in.last) return;
    for (const watch::RankInterval& r : in.last->ranks)
      if (auto v = value(r)) out += std::string(f.name) + labels(r.pid, r.rank, r.local_rank, r.gpus, r.job) + " " + number(*v) + "\n";
  };
  auto has = [](const watch::RankInterval& r, watch::Finding f) {
    return std::optional<double>(std::find(r.findings.begin(), r.findings.end(), f) != r.findings.end() ? 1.0 : 0.0);
  };
  counter(kFamilies[0], [](const watch::RankSummary& r) { return double(r.migrations); });
  counter(kFamilies[1], [](const watch::RankSummary& r) { return r.cpu_seconds; });
  gauge(kFamilies[2], [](const watch::RankInterval& r) { return r.cross_numa; });
  gauge(kFamilies[3], [](const watch::RankInterval& r) { return r.cross_socket; });
  header(out, kFamilies[4]);
  if (in.summary)
    for (const watch::RankSummary& r : in.summary->ranks)
      if (live.count(r.pid) && r.remote_memory)
        out += std::string(kFamilies[4].name) + labels(r.pid, r.rank, r.local_rank, r.gpus, r.job) + " " + number(*r.remote_memory) + "\n";
  gauge(kFamilies[5], [&](const watch::RankInterval& r) { return has(r, watch::Finding::drifted); });
  gauge(kFamilies[6], [&](const watch::RankInterval& r) { return has(r, watch::Finding::overlap); });
  header(out, kFamilies[7]);
  if (in.last && in.last->imbalance)
    out += std::string(kFamilies[7].name) + "{node=\"" + label_value(in.node) + "\"} " + number(*in.last->imbalance) + "\n";
  header(out, kFamilies[8]);
  out += std::string(kFamilies[8].name) + "{node=\"" + label_value(in.node) + "\"} " +
         std::to_string(in.summary ? in.summary->intervals : 0) + "\n";
  header(out, kFamilies[9]);
  out += std::string(kFamilies[9].name) + "{node=\"" + label_value(in.node) + "\"} " + number(in.sample_seconds) + "\n";
  return out;
}

}  // namespace gpubind::render

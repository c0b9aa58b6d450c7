#include "render/check_render.hpp"

#include <algorithm>
#include <map>
#include <utility>

#include "render/table.hpp"
#include "topo/binding_env.hpp"
#include "util/strings.hpp"

namespace gpubind::render {

using check::ProcessReport;
using check::Verdict;

namespace {

std::string rank_of(const ProcessReport& p) {
  std::string r = check::local_rank_of(p.state);
  return r.empty() ? "-" : r;
}

std::string switches(const probe::ThreadState& t) {
  if (!t.voluntary_switches || !t.involuntary_switches) return "-";
  return std::to_string(*t.voluntary_switches) + "/" + std::to_string(*t.involuntary_switches);
}

}  // namespace

std::string check_text(const check::Report& r, bool verbose) {
  TextTable t({"PID", "RANK", "COMMAND", "GPU", "GPU NODE", "CPUS ALLOWED", "THREADS", "VERDICT"});
  for (const ProcessReport& p : r.processes)
    t.add({std::to_string(p.state.pid), rank_of(p), p.state.comm, p.gpus.empty() ? "-" : join(p.gpus, ","),
           p.gpu_nodes.empty() ? (p.gpus.empty() ? "-" : "unknown") : join_numbers(p.gpu_nodes), p.state.cpus_allowed.to_list(),
           std::to_string(p.state.threads.size()), check::verdicts_of(p)});
  std::string out = t.str();
  bool any = false;
  for (const ProcessReport& p : r.processes) {
    for (const auto& f : p.findings) {
      if (!any) out += "\n";
      any = true;
      out += "PID " + std::to_string(p.state.pid) + " " + check::to_string(f.verdict) + ": " + f.reason + "\n";
    }
  }
  for (const ProcessReport& p : r.processes)
    if (!p.holder.empty()) out += std::string(any ? "" : "\n") + "PID " + std::to_string(p.state.pid) + " GPU_HOLDER: " + p.holder + "\n", any = true;
  for (const ProcessReport& p : r.processes)
    if (!p.apart.empty()) out += std::string(any ? "" : "\n") + "PID " + std::to_string(p.state.pid) + " NOT_IN_JOB: " + p.apart + "\n", any = true;
  for (const ProcessReport& p : r.processes)
    if (!p.wrapper.empty()) out += std::string(any ? "" : "\n") + "PID " + std::to_string(p.state.pid) + " WRAPPER: " + p.wrapper + "\n", any = true;
  if (!verbose)  // verbose lists them under each process
    for (const ProcessReport& p : r.processes)
      for (const std::string& n : p.state.notes)
        out += std::string(any ? "" : "\n") + "PID " + std::to_string(p.state.pid) + " note: " + one_line(n) + "\n", any = true;
  if (verbose) {
    for (const ProcessReport& p : r.processes) {
      out += "\nPID " + std::to_string(p.state.pid) + " (" + one_line(p.state.comm) + ")" +
             (p.gpu_source.empty() ? "" : ", GPU from " + p.gpu_source) +
             (p.intended_cpus ? ", gpubind applied CPUs " + p.intended_cpus->to_list() : "") + ":\n";
      TextTable th({"TID", "NAME", "CPUS ALLOWED", "MEMS", "LAST CPU", "MIGRATIONS", "CTXSW VOL/INVOL", "NOTE"});
      for (const auto& x : p.state.threads) {
        std::string note;
        if (std::find(p.threads_off_node.begin(), p.threads_off_node.end(), x.tid) != p.threads_off_node.end()) note = "off GPU node";
        if (std::find(p.threads_drifted.begin(), p.threads_drifted.end(), x.tid) != p.threads_drifted.end())
          note += std::string(note.empty() ? "" : ", ") + "drifted";
        th.add({std::to_string(x.tid), x.comm, x.cpus_allowed.to_list(), x.mems_allowed.to_list(),
                x.last_cpu ? std::to_string(*x.last_cpu) : "?", x.migrations ? std::to_string(*x.migrations) : "?",
                switches(x), note.empty() ? "-" : note});
      }
      out += th.str("  ");
      if (p.state.pages_per_node) {
        std::string pages;
        for (const auto& [n, c] : *p.state.pages_per_node) pages += (pages.empty() ? "" : ", ") + std::string("node ") + std::to_string(n) + ": " + std::to_string(c);
        out += "  resident pages: " + pages + "\n";
      }
      for (const std::string& n : p.state.notes) out += "  note: " + one_line(n) + "\n";
    }
  }
  size_t ok = 0, found = 0, nogpu = 0, holders = 0, apart = 0, wrappers = 0;
  for (const ProcessReport& p : r.processes)
    (!p.holder.empty() ? holders : !p.apart.empty() ? apart : !p.wrapper.empty() ? wrappers : !p.judged ? nogpu : p.findings.empty() ? ok : found)++;
  out += "\n" + std::to_string(r.processes.size()) + " process(es): " + std::to_string(ok) + " OK, " + std::to_string(found) +
         " with findings, " + std::to_string(nogpu) + " without GPU";
  if (holders) out += ", " + std::to_string(holders) + " GPU holder(s) not judged";
  if (apart) out += ", " + std::to_string(apart) + " not in the Slurm job they claim (listed apart)";
  if (wrappers) out += ", " + std::to_string(wrappers) + " wrapper(s) of a rank not judged";
  if (!r.errors.empty()) out += ", " + std::to_string(r.errors.size()) + " not readable";
  return out + "\n";
}

nlohmann::ordered_json check_json(const check::Report& r, const std::string& node, const std::string& time) {
  using oj = nlohmann::ordered_json;
  oj j;
  j["schema_version"] = kCheckSchemaVersion;
  j["node"] = node;
  j["time"] = time;
  j["processes"] = oj::array();
  for (const ProcessReport& p : r.processes) {
    const probe::ProcessState& s = p.state;
    oj o;
    o["pid"] = s.pid;
    o["ppid"] = s.ppid;
    o["comm"] = s.comm;
    o["cmdline"] = s.cmdline;
    o["verdict"] = check::verdicts_of(p);
    o["holder"] = p.holder.empty() ? oj() : oj(p.holder);
    if (!p.apart.empty()) o["not_in_job"] = p.apart;
    if (!p.wrapper.empty()) o["wrapper"] = p.wrapper;
    for (auto [variable, key] : {std::pair{"SLURM_JOB_ID", "slurm_job_id"}, std::pair{"SLURM_STEP_ID", "slurm_step_id"}}) {
      auto it = s.env.find(variable);
      o[key] = it == s.env.end() ? oj() : oj(it->second);
    }
    o["k8s"] = s.kube ? oj{{"namespace", s.kube->namespace_name}, {"pod", s.kube->pod}, {"container", s.kube->container}} : oj();
    o["findings"] = oj::array();
    for (const auto& f : p.findings) o["findings"].push_back({{"verdict", check::to_string(f.verdict)}, {"reason", f.reason}});
    o["gpus"] = p.gpus;
    o["gpu_source"] = p.gpu_source;
    o["gpu_numa"] = p.gpu_nodes;
    o["gpu_cpus"] = p.gpu_local ? oj(p.gpu_local->to_list()) : oj();
    o["intended_cpus"] = p.intended_cpus ? oj(p.intended_cpus->to_list()) : oj();
    o["cpus_allowed"] = s.cpus_allowed.to_list();
    o["mems_allowed"] = s.mems_allowed.to_list();
    o["threads"] = oj::array();
    for (const auto& t : s.threads)
      o["threads"].push_back({{"tid", t.tid},
                              {"comm", t.comm},
                              {"cpus_allowed", t.cpus_allowed.to_list()},
                              {"mems_allowed", t.mems_allowed.to_list()},
                              {"last_cpu", t.last_cpu ? oj(*t.last_cpu) : oj()},
                              {"migrations", t.migrations ? oj(*t.migrations) : oj()},
                              {"voluntary_switches", t.voluntary_switches ? oj(*t.voluntary_switches) : oj()},
                              {"involuntary_switches", t.involuntary_switches ? oj(*t.involuntary_switches) : oj()}});
    if (s.pages_per_node) {
      oj pages = oj::object();
      for (const auto& [n, c] : *s.pages_per_node) pages[std::to_string(n)] = c;
      o["pages_per_node"] = pages;
    } else {
      o["pages_per_node"] = oj();
    }
    o["env"] = s.env;
    o["notes"] = s.notes;
    j["processes"].push_back(o);
  }
  j["errors"] = oj::array();
  for (const Error& e : r.errors) j["errors"].push_back(e.message());
  return j;
}

std::string job_text(const check::JobReport& r) {
  TextTable t({"NODE", "PID", "RANK", "LOCAL", "GPU", "CPUS ALLOWED", "VERDICT"});
  auto dash = [](const std::string& v) { return v.empty() ? std::string("-") : v; };
  for (const check::JobRow& x : r.rows)
    t.add({x.node, std::to_string(x.pid), dash(x.rank), dash(x.local_rank), dash(x.gpus), x.cpus, x.verdict});
  std::string out = t.str();
  bool any = false;
  std::map<std::string, size_t> counts;
  for (const check::JobRow& x : r.rows) {
    ++counts[x.verdict];
    if (x.reason.empty()) continue;
    if (!any) out += "\n";
    any = true;
    out += one_line(x.node + " PID " + std::to_string(x.pid) + (x.rank.empty() ? "" : " rank " + x.rank) + " " + x.verdict + ": " + x.reason) + "\n";
  }
  std::vector<std::string> tally;
  for (const auto& [v, n] : counts) tally.push_back(std::to_string(n) + " " + v);
  out += "\njob " + one_line(r.job) + ": " + std::to_string(r.rows.size()) + " process(es) on " + std::to_string(r.nodes.size()) + " of " +
         std::to_string(r.nodes_expected) + " node(s)" + (tally.empty() ? "" : ": " + join(tally, ", "));
  if (!r.errors.empty()) out += ", " + std::to_string(r.errors.size()) + " error(s)";
  return out + "\n";
}

nlohmann::ordered_json job_json(const check::JobReport& r) {
  using oj = nlohmann::ordered_json;
  oj j;
  j["schema_version"] = kCheckSchemaVersion;
  j["job"] = r.job;
  j["nodes_expected"] = r.nodes_expected;
  j["nodes"] = r.nodes;
  j["processes"] = oj::array();
  for (const check::JobRow& x : r.rows)
    j["processes"].push_back({{"node", x.node}, {"pid", x.pid}, {"rank", x.rank}, {"local_rank", x.local_rank}, {"gpus", x.gpus},
                              {"cpus_allowed", x.cpus}, {"verdict", x.verdict}, {"reason", x.reason}});
  j["errors"] = r.errors;
  return j;
}

std::string job_watch_text(const check::JobWatchReport& r) {
  TextTable t({"NODE", "PID", "RANK", "LOCAL", "COMMAND", "SEEN", "WORST"});
  auto dash = [](const std::string& v) { return v.empty() ? std::string("-") : v; };
  size_t with = 0;
  for (const check::JobWatchRow& x : r.rows) {
    with += !x.seen.empty();
    t.add({x.node, std::to_string(x.pid), dash(x.rank), dash(x.local_rank), x.comm + (x.exited ? " (exited)" : ""),
           x.seen.empty() ? "OK" : x.seen, x.worst_interval ? std::to_string(*x.worst_interval) : "-"});
  }
  return t.str() + "\njob " + one_line(r.job) + ": " + std::to_string(r.rows.size()) + " process(es) watched on " +
         std::to_string(r.nodes.size()) + " of " + std::to_string(r.nodes_expected) + " node(s), " + std::to_string(with) +
         " with findings" + (r.errors.empty() ? "" : ", " + std::to_string(r.errors.size()) + " error(s)") + "\n";
}

nlohmann::ordered_json job_watch_json(const check::JobWatchReport& r) {
  using oj = nlohmann::ordered_json;
  oj j;
  j["schema_version"] = kCheckSchemaVersion;
  j["type"] = "job_summary";
  j["job"] = r.job;
  j["nodes_expected"] = r.nodes_expected;
  j["nodes"] = r.nodes;
  j["ranks"] = oj::array();
  for (const check::JobWatchRow& x : r.rows)
    j["ranks"].push_back({{"node", x.node}, {"pid", x.pid}, {"rank", x.rank}, {"local_rank", x.local_rank}, {"comm", x.comm},
                          {"seen", x.seen}, {"worst_interval", x.worst_interval ? oj(*x.worst_interval) : oj()}, {"exited", x.exited}});
  j["any_finding"] = r.any_finding;
  j["errors"] = r.errors;
  return j;
}

namespace {

std::string rank_id(const check::NcclRankReport& x) {
  return one_line(x.host) + " PID " + std::to_string(x.pid) + (x.rank ? " rank " + std::to_string(*x.rank) : std::string());
}

std::string set_or_dash(const std::optional<CpuSet>& s, const char* empty) {
  if (!s) return "-";
  return s->empty() ? empty : s->to_list();
}

}  // namespace

std::string nccl_text(const check::NcclReport& r, const std::string& compared) {
  TextTable t(
      {"HOST", "PID", "RANK", "LOCAL", "GPU", "NCCL", "CPUS AT INIT", "NCCL PINNED", "PLANNED", "NIC", "PLANNED NIC", "GDR", "VERDICT"});
  auto opt = [](const std::optional<unsigned>& v) { return v ? std::to_string(*v) : std::string("-"); };
  for (const check::NcclRankReport& x : r.ranks)
    t.add({one_line(x.host), std::to_string(x.pid), opt(x.rank), opt(x.local_rank),
           x.gpu              ? std::to_string(*x.gpu)
           : x.bus_id.empty() ? "-"
                              : x.bus_id,
           x.version.empty() ? "-" : std::string(x.rccl ? "RCCL " : "") + one_line(x.version.substr(0, x.version.find('+'))),
           set_or_dash(x.cpus_at_init, "-"), set_or_dash(x.nccl_cpus, "empty"), set_or_dash(x.planned, "-"),
           x.nics.empty() ? "-" : one_line(join(x.nics, ",")), x.planned_nics.empty() ? "-" : x.planned_nics[0],
           x.gdr ? (*x.gdr ? "yes" : "no") : "-", check::verdicts_of(x)});
  std::string out = t.str();
  bool any = false;
  auto line = [&](const std::string& text) {
    if (!any) out += "\n";
    any = true;
    out += one_line(text) + "\n";
  };
  for (const check::NcclRankReport& x : r.ranks)
    for (const check::Finding& f : x.findings) line(rank_id(x) + " " + check::to_string(f.verdict) + ": " + f.reason);
  for (const check::NcclRankReport& x : r.ranks)
    for (const std::string& n : x.notes) line(rank_id(x) + " note: " + n);
  for (const std::string& n : r.notes) line("note: " + n);
  std::map<std::string, size_t> hosts;
  size_t found = 0;
  for (const check::NcclRankReport& x : r.ranks) ++hosts[x.host], found += !x.findings.empty();
  return out + "\n" + std::to_string(r.ranks.size()) + " rank(s) on " + std::to_string(hosts.size()) +
         " host(s): " + std::to_string(r.ranks.size() - found) + " OK, " + std::to_string(found) + " with findings; compared with " +
         compared + "\n";
}

nlohmann::ordered_json nccl_json(const check::NcclReport& r, const std::string& policy, const std::string& topology) {
  using oj = nlohmann::ordered_json;
  auto set = [](const std::optional<CpuSet>& s) { return s ? oj(s->to_list()) : oj(); };
  auto num = [](const std::optional<unsigned>& v) { return v ? oj(*v) : oj(); };
  oj j;
  j["schema_version"] = kCheckSchemaVersion;
  j["policy"] = policy;
  j["topology"] = topology;
  j["ranks"] = oj::array();
  for (const check::NcclRankReport& x : r.ranks) {
    oj o;
    o["host"] = x.host;
    o["pid"] = x.pid;
    o["file"] = x.file;
    o["library"] = x.rccl ? "RCCL" : "NCCL";
    o["version"] = x.version.empty() ? oj() : oj(x.version);
    o["rank"] = num(x.rank);
    o["nranks"] = num(x.nranks);
    o["local_rank"] = num(x.local_rank);
    o["gpu_pci"] = x.bus_id.empty() ? oj() : oj(x.bus_id);
    o["gpu"] = num(x.gpu);
    o["cpus_at_init"] = set(x.cpus_at_init);
    o["nccl_cpus"] = set(x.nccl_cpus);
    o["gpu_cpus"] = set(x.gpu_cpus);
    o["planned_cpus"] = set(x.planned);
    o["ignore_cpu_affinity"] = x.ignore_cpu_affinity;
    o["nics"] = x.nics;
    o["planned_nics"] = x.planned_nics;
    o["planned_nic_path"] = x.planned_nic_path ? oj(topo::to_string(*x.planned_nic_path)) : oj();
    o["gdr"] = x.gdr ? oj(*x.gdr) : oj();
    o["verdict"] = check::verdicts_of(x);
    o["findings"] = oj::array();
    for (const check::Finding& f : x.findings) o["findings"].push_back({{"verdict", check::to_string(f.verdict)}, {"reason", f.reason}});
    o["notes"] = x.notes;
    j["ranks"].push_back(std::move(o));
  }
  j["notes"] = r.notes;
  return j;
}

}  // namespace gpubind::render

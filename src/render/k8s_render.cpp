#include "render/k8s_render.hpp"

#include <algorithm>

#include "render/table.hpp"
#include "util/strings.hpp"

namespace gpubind::render {

using k8s::ContainerReport;
using k8s::DeviceView;

namespace {

std::string pod_of(const ContainerReport& c) {
  return c.pod.empty() ? one_line(c.pod_uid) + " (name unknown)" : one_line(c.namespace_name) + "/" + one_line(c.pod);
}

// The topology's GPU indices ("0-3"), and the device plugin's id for one that matched none (a
// long one shortened: "GPU-6d1e7f20..009a"; the reasons and JSON give it whole).
std::string device_column(const std::vector<DeviceView>& ds) {
  std::vector<unsigned> indices;
  std::vector<std::string> others;
  for (const DeviceView& d : ds) {
    if (d.index) indices.push_back(*d.index);
    else others.push_back(one_line(d.id.size() > 20 ? d.id.substr(0, 12) + ".." + d.id.substr(d.id.size() - 4) : d.id));
  }
  std::sort(indices.begin(), indices.end());
  if (!indices.empty()) others.insert(others.begin(), join_number_runs(indices));
  return others.empty() ? "-" : join(others, ",");
}

std::string nodes(const std::vector<unsigned>& v) { return v.empty() ? "unknown" : join_numbers(v); }

std::string verdict_column(const ContainerReport& c) {
  std::vector<std::string> v;
  for (k8s::Verdict x : c.verdicts()) v.push_back(k8s::to_string(x));
  return join(v, ",");
}

std::string options(const std::map<std::string, std::string>& m) {
  std::vector<std::string> v;
  for (const auto& [k, x] : m) v.push_back(one_line(k) + "=" + one_line(x));
  return join(v, ", ");
}

nlohmann::ordered_json device_json(const DeviceView& d) {
  nlohmann::ordered_json j;
  j["resource"] = d.resource;
  j["id"] = d.id;
  j["pci"] = d.pci.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(d.pci);
  j["index"] = d.index ? nlohmann::ordered_json(*d.index) : nlohmann::ordered_json();
  j["numa"] = d.numa;
  j["numa_source"] = d.numa_source.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(d.numa_source);
  j["plugin_numa"] = d.plugin_numa ? nlohmann::ordered_json(*d.plugin_numa) : nlohmann::ordered_json();
  j["claim"] = d.claim.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(d.claim);  // DRA: its ResourceClaim
  return j;
}

}  // namespace

std::string k8s_text(const k8s::Report& r) {
  const k8s::NodeState& s = r.state;
  const k8s::KubeletConfig& c = s.config;
  std::string out = "Kubelet: " + one_line(s.config_path) + (c.found ? "" : " (absent: the kubelet's defaults)") + "\n";
  TextTable k({"", ""});
  std::string cpu = c.cpu_manager_policy;
  if (!c.cpu_manager_policy_options.empty()) cpu += " (" + options(c.cpu_manager_policy_options) + ")";
  if (s.cpu && s.cpu->policy != c.cpu_manager_policy) cpu += "; cpu_manager_state: " + one_line(s.cpu->policy);
  k.add({"cpuManagerPolicy", cpu});
  std::string topology = c.topology_manager_policy + ", scope " + c.topology_manager_scope;
  if (!c.topology_manager_policy_options.empty()) topology += " (" + options(c.topology_manager_policy_options) + ")";
  k.add({"topologyManagerPolicy", topology});
  k.add({"memoryManagerPolicy", c.memory_manager_policy});
  k.add({"reservedSystemCPUs", c.reserved_system_cpus ? c.reserved_system_cpus->to_list() : "-"});
  if (s.cpu) k.add({"shared pool", s.cpu->default_cpus.empty() ? "every CPU" : s.cpu->default_cpus.to_list()});
  std::string table = k.str("  ");
  out += table.substr(table.find('\n') + 1);  // no header row
  out += "Topology: " + one_line(r.topology_origin) + "\n";
  out += "Assignments: " + s.assignments_from +
         (s.container_cpus.empty() ? "" : "; CPUs: each container's cgroup where read (" + std::to_string(s.container_cpus.size()) + ")") +
         "\n";
  if (!s.cpu_driver.empty()) out += "CPU DRA driver: dra.cpu (" + one_line(s.cpu_driver) + ")\n";
  out += "\n";

  if (r.containers.empty()) {
    out += "No container on this node has been given a GPU.\n";
  } else {
    TextTable t({"POD", "CONTAINER", "GPU", "GPU NODE", "CPUS", "EXCLUSIVE", "CPU NODE", "MEM NODE", "VERDICT"});
    for (const ContainerReport& x : r.containers)
      t.add({pod_of(x), x.container, device_column(x.gpus), nodes(x.gpu_nodes), x.cpus.to_list(),
             x.exclusive ? (x.cpu_claims.empty() ? "yes" : "dra.cpu") : "no", nodes(x.cpu_nodes),
             x.memory_nodes ? join_numbers(*x.memory_nodes) : "-", verdict_column(x)});
    out += t.str();
    std::vector<std::string> reasons;
    for (const ContainerReport& x : r.containers)
      for (const auto& f : x.findings)
        reasons.push_back(pod_of(x) + " " + one_line(x.container) + " " + k8s::to_string(f.verdict) + ": " + f.reason);
    if (!reasons.empty()) out += "\n" + join(reasons, "\n") + "\n";
  }
  std::vector<std::string> findings;
  for (const k8s::NodeFinding& f : r.findings) findings.push_back(std::string(f.problem ? "problem: " : "advice: ") + f.text);
  out += text_block("Node", findings);
  out += text_block("Notes", s.notes);
  std::map<std::string, unsigned> count;
  size_t pods = 0;
  std::string last;
  for (const ContainerReport& x : r.containers) {
    ++count[k8s::to_string(x.verdicts().front())];
    if (x.pod_uid != last) ++pods;
    last = x.pod_uid;
  }
  std::vector<std::string> counts;
  for (const auto& [v, n] : count) counts.push_back(std::to_string(n) + " " + v);
  out += "\nSummary: " + std::to_string(r.containers.size()) + " GPU container(s) in " + std::to_string(pods) + " pod(s)" +
         (counts.empty() ? "" : ": " + join(counts, ", ")) + "\n";
  return out;
}

nlohmann::ordered_json k8s_json(const k8s::Report& r) {
  const k8s::NodeState& s = r.state;
  nlohmann::ordered_json j;
  j["schema_version"] = kK8sSchemaVersion;
  nlohmann::ordered_json k;
  k["path"] = s.config_path;
  k["found"] = s.config.found;
  k["cpu_manager_policy"] = s.config.cpu_manager_policy;
  k["cpu_manager_policy_options"] = s.config.cpu_manager_policy_options;
  k["topology_manager_policy"] = s.config.topology_manager_policy;
  k["topology_manager_scope"] = s.config.topology_manager_scope;
  k["topology_manager_policy_options"] = s.config.topology_manager_policy_options;
  k["memory_manager_policy"] = s.config.memory_manager_policy;
  k["reserved_system_cpus"] = s.config.reserved_system_cpus ? nlohmann::ordered_json(s.config.reserved_system_cpus->to_list()) : nlohmann::ordered_json();
  j["kubelet"] = k;
  nlohmann::ordered_json state;
  state["cpu_manager_policy"] = s.cpu ? nlohmann::ordered_json(s.cpu->policy) : nlohmann::ordered_json();
  state["shared_pool"] = s.cpu ? nlohmann::ordered_json(s.cpu->default_cpus.to_list()) : nlohmann::ordered_json();
  state["memory_manager_policy"] = s.memory ? nlohmann::ordered_json(s.memory->policy) : nlohmann::ordered_json();
  state["device_checkpoint"] = s.devices.has_value();
  state["pod_resources_socket"] = s.pod_resources_socket;
  state["assignments_from"] = s.assignments_from;
  state["cpu_dra_driver"] = s.cpu_driver.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(s.cpu_driver);
  state["cpu_claims"] = s.cpu_claims.size();
  state["container_cgroups"] = s.container_cpus.size();
  state["resource_slice_devices"] = s.slices.size();
  j["state"] = state;
  j["topology"] = r.topology_origin;
  j["containers"] = nlohmann::ordered_json::array();
  for (const ContainerReport& c : r.containers) {
    nlohmann::ordered_json x;
    x["pod_uid"] = c.pod_uid;
    x["namespace"] = c.namespace_name.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(c.namespace_name);
    x["pod"] = c.pod.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(c.pod);
    x["container"] = c.container;
    std::vector<std::string> verdicts;
    for (k8s::Verdict v : c.verdicts()) verdicts.push_back(k8s::to_string(v));
    x["verdict"] = verdicts.front();
    x["verdicts"] = verdicts;
    x["findings"] = nlohmann::ordered_json::array();
    for (const auto& f : c.findings) x["findings"].push_back({{"verdict", k8s::to_string(f.verdict)}, {"reason", f.reason}});
    x["gpus"] = nlohmann::ordered_json::array();
    for (const DeviceView& d : c.gpus) x["gpus"].push_back(device_json(d));
    x["other_devices"] = nlohmann::ordered_json::array();
    for (const DeviceView& d : c.other_devices) x["other_devices"].push_back(device_json(d));
    x["gpu_numa"] = c.gpu_nodes;
    x["exclusive_cpus"] = c.exclusive;
    x["cpus"] = c.cpus.to_list();
    x["cpus_source"] = c.cpus_source;
    x["given_cpus"] = c.given_cpus ? nlohmann::ordered_json(c.given_cpus->to_list()) : nlohmann::ordered_json();
    x["cpu_claims"] = nlohmann::ordered_json::array();
    for (const k8s::CpuClaimView& claim : c.cpu_claims)
      x["cpu_claims"].push_back(
          {{"claim", claim.claim},
           {"device", claim.device},
           {"cpus", claim.cpus ? nlohmann::ordered_json(claim.cpus->to_list()) : nlohmann::ordered_json()},
           {"cpus_source", claim.cpus_source.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(claim.cpus_source)}});
    x["cpu_numa"] = c.cpu_nodes;
    x["memory_numa"] = c.memory_nodes ? nlohmann::ordered_json(*c.memory_nodes) : nlohmann::ordered_json();
    j["containers"].push_back(x);
  }
  j["findings"] = nlohmann::ordered_json::array();
  for (const k8s::NodeFinding& f : r.findings) j["findings"].push_back({{"problem", f.problem}, {"text", f.text}});
  j["notes"] = s.notes;
  return j;
}

}  // namespace gpubind::render

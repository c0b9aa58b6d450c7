#include "k8s/state.hpp"

#include "topo/topology.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "k8s/json_object.hpp"
#include "util/json_field.hpp"

namespace gpubind::k8s {

namespace {

using nlohmann::json;

// A scalar as the kubelet would read it into a string: YAML types "0" as a number.
std::optional<std::string> scalar_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  return std::nullopt;
}

Result<std::string> string_field(const json& j, const char* key, const std::string& what, std::string fallback) {
  const json* m = json_field::member(j, key);
  if (!m || m->is_null()) return fallback;
  auto s = scalar_text(*m);
  if (!s) return Error{what, std::string(key) + ": not a string"};
  return *s;
}

Result<std::map<std::string, std::string>> string_map(const json& j, const char* key, const std::string& what) {
  std::map<std::string, std::string> out;
  const json* m = json_field::member(j, key);
  if (!m || m->is_null()) return out;
  if (!m->is_object()) return Error{what, std::string(key) + ": not a mapping"};
  for (auto& [k, v] : m->items()) {
    auto s = scalar_text(v);
    if (!s) return Error{what, std::string(key) + "." + k + ": not a string"};
    out[k] = *s;
  }
  return out;
}

Result<CpuSet> cpu_list(const std::string& text, const std::string& what, const std::string& field) {
  auto c = CpuSet::parse_list(text);
  if (!c) return Error{what, field + " \"" + text + "\": " + c.error().why};
  return *c;
}

Result<Ok> one_of(const std::string& value, std::initializer_list<const char*> allowed, const std::string& what, const char* key) {
  std::string list;
  for (const char* a : allowed) {
    if (value == a) return Ok{};
    list += std::string(list.empty() ? "" : ", ") + a;
  }
  return Error{what, std::string(key) + " \"" + value + "\" is not one the kubelet knows (" + list + ")"};
}

// Fields of objects the kubelet (or the API module) wrote, read without trusting their types: a
// string field that is anything else reads as "", a list field as empty, a non-object as empty.
std::string text_of(const json& o, const char* key) { return json_field::get<std::string>(o, key).value_or(""); }

const json& list_of(const json& o, const char* key) {
  static const json empty = json::array();
  const json* m = json_field::member(o, key);
  return m && m->is_array() ? *m : empty;
}

// The state files' "entries": {podUID: {container: value}}, each value given to `take`, which
// returns an Error for one it cannot read. `what` names the file.
template <class Take>
Status for_each_entry(const json& j, const std::string& what, Take take) {
  const json* entries = json_field::member(j, "entries");
  if (!entries || entries->is_null()) return Ok{};
  if (!entries->is_object()) return Error{what, "entries: not an object"};
  for (auto& [pod, containers] : entries->items()) {
    // The CPU manager's checkpoint of kubelets before 1.18 keyed entries by container ID.
    if (containers.is_string())
      return Error{what, "entries keyed by container ID (a kubelet older than 1.18): pods cannot be told apart"};
    if (!containers.is_object()) return Error{what, "entries." + pod + ": not an object"};
    for (auto& [name, value] : containers.items())
      if (Status st = take(pod, name, value, "entries." + pod + "." + name); !st) return st.error();
  }
  return Ok{};
}

}  // namespace

Result<KubeletConfig> parse_kubelet_config(const std::string& text, const std::string& what) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return Error{what, "not a kubelet configuration"};
  KubeletConfig c;
  c.found = true;
  if (j.is_null()) return c;  // an empty file: every default
  if (!j.is_object()) return Error{what, "not a kubelet configuration (a YAML mapping)"};
  if (const json* kind = json_field::member(j, "kind"); kind && *kind != "KubeletConfiguration")
    return Error{what, "kind " + kind->dump() + ", not KubeletConfiguration"};
  auto cpu = string_field(j, "cpuManagerPolicy", what, c.cpu_manager_policy);
  auto topology = string_field(j, "topologyManagerPolicy", what, c.topology_manager_policy);
  auto scope = string_field(j, "topologyManagerScope", what, c.topology_manager_scope);
  auto memory = string_field(j, "memoryManagerPolicy", what, c.memory_manager_policy);
  auto reserved = string_field(j, "reservedSystemCPUs", what, "");
  auto cpu_options = string_map(j, "cpuManagerPolicyOptions", what);
  auto topology_options = string_map(j, "topologyManagerPolicyOptions", what);
  for (const Error* e : {cpu ? nullptr : &cpu.error(), topology ? nullptr : &topology.error(), scope ? nullptr : &scope.error(),
                         memory ? nullptr : &memory.error(), reserved ? nullptr : &reserved.error(),
                         cpu_options ? nullptr : &cpu_options.error(), topology_options ? nullptr : &topology_options.error()})
    if (e) return *e;
  c.cpu_manager_policy = *cpu;
  c.topology_manager_policy = *topology;
  c.topology_manager_scope = *scope;
  c.memory_manager_policy = *memory;
  c.cpu_manager_policy_options = *cpu_options;
  c.topology_manager_policy_options = *topology_options;
  if (auto ok = one_of(c.cpu_manager_policy, {"none", "static"}, what, "cpuManagerPolicy"); !ok) return ok.error();
  if (auto ok = one_of(c.topology_manager_policy, {"none", "best-effort", "restricted", "single-numa-node"}, what,
                       "topologyManagerPolicy");
      !ok)
    return ok.error();
  if (auto ok = one_of(c.topology_manager_scope, {"container", "pod"}, what, "topologyManagerScope"); !ok) return ok.error();
  if (auto ok = one_of(c.memory_manager_policy, {"None", "Static"}, what, "memoryManagerPolicy"); !ok) return ok.error();
  if (!reserved->empty()) {
    auto set = cpu_list(*reserved, what, "reservedSystemCPUs");
    if (!set) return set.error();
    c.reserved_system_cpus = *set;
  }
  return c;
}

Result<CpuManagerState> parse_cpu_manager_state(const std::string& text, const std::string& what) {
  auto j = parse_json_object(text, what);
  if (!j) return j.error();
  CpuManagerState s;
  auto policy = string_field(*j, "policyName", what, "");
  if (!policy) return policy.error();
  if (policy->empty()) return Error{what, "no policyName: not a CPU manager checkpoint"};
  s.policy = *policy;
  auto pool = string_field(*j, "defaultCpuSet", what, "");
  if (!pool) return pool.error();
  auto cpus = cpu_list(*pool, what, "defaultCpuSet");
  if (!cpus) return cpus.error();
  s.default_cpus = *cpus;
  Status st = for_each_entry(*j, what, [&](const std::string& pod, const std::string& name, const json& value, const std::string& where) -> Status {
    if (!value.is_string()) return Error{what, where + ": not a CPU list"};
    auto set = cpu_list(value.get<std::string>(), what, where);
    if (!set) return set.error();
    s.exclusive[pod][name] = *set;
    return Ok{};
  });
  if (!st) return st.error();
  return s;
}

Result<MemoryManagerState> parse_memory_manager_state(const std::string& text, const std::string& what) {
  auto j = parse_json_object(text, what);
  if (!j) return j.error();
  MemoryManagerState s;
  auto policy = string_field(*j, "policyName", what, "");
  if (!policy) return policy.error();
  s.policy = *policy;
  Status st = for_each_entry(*j, what, [&](const std::string& pod, const std::string& name, const json& blocks, const std::string& where) -> Status {
    if (!blocks.is_array()) return Error{what, where + ": not a list of memory blocks"};
    std::vector<unsigned>& nodes = s.memory_nodes[pod][name];
    for (const json& b : blocks) {
      if (!b.is_object() || text_of(b, "type") != "memory") continue;
      const json* affinity = json_field::member(b, "numaAffinity");
      if (!affinity || !affinity->is_array()) return Error{what, where + ": a block without numaAffinity"};
      for (const json& n : *affinity) {
        if (!n.is_number_unsigned() || n.get<uint64_t>() > topo::kMaxNumaNodeId)
          return Error{what, where + ": numaAffinity " + n.dump() + " is not a node"};
        unsigned node = n.get<unsigned>();
        if (std::find(nodes.begin(), nodes.end(), node) == nodes.end()) nodes.push_back(node);
      }
    }
    std::sort(nodes.begin(), nodes.end());
    return Ok{};
  });
  if (!st) return st.error();
  return s;
}

Result<DeviceCheckpoint> parse_device_checkpoint(const std::string& text, const std::string& what) {
  auto j = parse_json_object(text, what);
  if (!j) return j.error();
  const json* data = json_field::member(*j, "Data");
  if (!data || !data->is_object()) return Error{what, "no Data object: not the device manager's checkpoint"};
  DeviceCheckpoint c;
  const json* entries = json_field::member(*data, "PodDeviceEntries");
  if (entries && !entries->is_null()) {
    if (!entries->is_array()) return Error{what, "PodDeviceEntries: not a list"};
    for (const json& e : *entries) {
      if (!e.is_object()) return Error{what, "PodDeviceEntries: an entry that is not an object"};
      DeviceAssignment a;
      a.pod_uid = text_of(e, "PodUID");
      a.container = text_of(e, "ContainerName");
      a.resource = text_of(e, "ResourceName");
      if (a.pod_uid.empty() || a.container.empty() || a.resource.empty())
        return Error{what, "PodDeviceEntries: an entry without PodUID, ContainerName or ResourceName"};
      const json* ids = json_field::member(e, "DeviceIDs");
      if (!ids || ids->is_null()) {
      } else if (ids->is_array()) {  // kubelets before 1.20: a plain list, no NUMA nodes
        for (const json& id : *ids)
          if (id.is_string()) a.devices.push_back({id.get<std::string>(), std::nullopt});
      } else if (ids->is_object()) {
        for (auto& [node, list] : ids->items()) {
          int n = 0;
          try {
            size_t used = 0;
            n = std::stoi(node, &used);
            if (used != node.size() || n > int(topo::kMaxNumaNodeId)) throw std::invalid_argument(node);
          } catch (const std::exception&) {
            return Error{what, "DeviceIDs: \"" + node + "\" is not a NUMA node"};
          }
          if (!list.is_array()) return Error{what, "DeviceIDs." + node + ": not a list"};
          for (const json& id : list)
            if (id.is_string()) a.devices.push_back({id.get<std::string>(), n >= 0 ? std::optional<int>(n) : std::nullopt});
        }
      } else {
        return Error{what, "DeviceIDs: neither a list nor an object"};
      }
      c.assignments.push_back(std::move(a));
    }
  }
  const json* registered = json_field::member(*data, "RegisteredDevices");
  if (registered && registered->is_object())
    for (auto& [resource, ids] : registered->items())
      if (ids.is_array())
        for (const json& id : ids)
          if (id.is_string()) c.registered[resource].push_back(id.get<std::string>());
  return c;
}

Result<PodResources> parse_pod_resources(const std::string& text, const std::string& what) {
  auto j = parse_json_object(text, what);
  if (!j) return j.error();
  auto nodes = [&](const json& a, std::vector<unsigned>& out) -> Status {
    if (!a.is_array()) return Error{what, "a NUMA node list that is not a list"};
    for (const json& n : a) {
      if (!n.is_number_integer() || n.get<long long>() < 0 || n.get<long long>() > topo::kMaxNumaNodeId)
        return Error{what, "NUMA node " + n.dump() + " is not a node"};
      out.push_back(n.get<unsigned>());
    }
    return Ok{};
  };
  PodResources r;
  auto pods = j->find("pods");
  if (pods == j->end() || !pods->is_array()) return Error{what, "no pods list"};
  for (const json& p : *pods) {
    PodResources::Pod pod{text_of(p, "name"), text_of(p, "namespace"), {}};
    for (const json& c : list_of(p, "containers")) {
      PodResources::Container con{text_of(c, "name"), {}, {}, {}, {}};
      for (const json& cpu : list_of(c, "cpu_ids")) {
        if (!cpu.is_number_integer() || cpu.get<long long>() < 0 || cpu.get<long long>() > 1 << 20) return Error{what, "CPU id " + cpu.dump()};
        con.cpus.set(cpu.get<unsigned>());
      }
      for (const json& d : list_of(c, "devices")) {
        PodResources::Devices dev{text_of(d, "resource"), {}, {}};
        for (const json& id : list_of(d, "ids"))
          if (id.is_string()) dev.ids.push_back(id.get<std::string>());
        if (Status st = nodes(list_of(d, "numa"), dev.numa); !st) return st.error();
        con.devices.push_back(std::move(dev));
      }
      for (const json& m : list_of(c, "memory"))
        if (text_of(m, "type") == "memory")
          if (Status st = nodes(list_of(m, "numa"), con.memory_numa); !st) return st.error();
      for (const json& cl : list_of(c, "claims")) {
        Claim claim{text_of(cl, "name"), text_of(cl, "namespace"), {}};
        for (const json& d : list_of(cl, "devices")) {
          ClaimDevice dev{text_of(d, "driver"), text_of(d, "pool"), text_of(d, "device"), {}};
          for (const json& x : list_of(d, "cdi"))
            if (x.is_string()) dev.cdi.push_back(x.get<std::string>());
          claim.devices.push_back(std::move(dev));
        }
        con.claims.push_back(std::move(claim));
      }
      pod.containers.push_back(std::move(con));
    }
    r.pods.push_back(std::move(pod));
  }
  return r;
}

Result<DraCheckpoint> parse_dra_checkpoint(const std::string& text, const std::string& what) {
  auto j = parse_json_object(text, what);
  if (!j) return j.error();
  json body = *j;
  // 1.31+: the entries are a JSON document inside the string "Data".
  if (const json* data = json_field::member(*j, "Data"); data && data->is_string()) {
    auto inner = parse_json_object(data->get<std::string>(), what + " (Data)");
    if (!inner) return inner.error();
    body = *inner;
  }
  if (!body.is_object()) return Error{what, "not a JSON object"};
  const json* entries = nullptr;
  for (const char* k : {"Entries", "entries"})
    if (const json* e = json_field::member(body, k)) entries = e;
  DraCheckpoint out;
  if (!entries || entries->is_null()) return out;
  if (!entries->is_array()) return Error{what, "Entries is not a list"};
  for (const json& e : *entries) {
    if (!e.is_object()) return Error{what, "an entry that is not an object"};
    DraCheckpoint::Entry entry{{text_of(e, "ClaimName"), text_of(e, "Namespace"), {}, text_of(e, "ClaimUID")}, {}};
    if (const json* pods = json_field::member(e, "PodUIDs")) {
      if (pods->is_object())
        for (const auto& [uid, _] : pods->items()) entry.pod_uids.push_back(uid);  // a Go set: {"uid": {}}
      else if (pods->is_array())
        for (const json& uid : *pods)
          if (uid.is_string()) entry.pod_uids.push_back(uid.get<std::string>());
    }
    if (const json* drivers = json_field::member(e, "DriverState"); drivers && drivers->is_object()) {
      for (const auto& [driver, st] : drivers->items())
        for (const json& d : list_of(st, "Devices")) {
          ClaimDevice dev{driver, text_of(d, "PoolName"), text_of(d, "DeviceName"), {}};
          for (const json& x : list_of(d, "CDIDeviceIDs"))
            if (x.is_string()) dev.cdi.push_back(x.get<std::string>());
          entry.claim.devices.push_back(std::move(dev));
        }
    } else if (const json* cdi = json_field::member(e, "CDIDevices"); cdi && cdi->is_object()) {
      for (const auto& [driver, ids] : cdi->items()) {
        ClaimDevice dev{driver, "", "", {}};
        if (ids.is_array())
          for (const json& x : ids)
            if (x.is_string()) dev.cdi.push_back(x.get<std::string>());
        entry.claim.devices.push_back(std::move(dev));
      }
    }
    out.entries.push_back(std::move(entry));
  }
  return out;
}

bool is_gpu_driver(const std::string& driver) { return driver.rfind("gpu.", 0) == 0; }

bool is_gpu_resource(const std::string& resource) {
  auto slash = resource.find('/');
  std::string domain = resource.substr(0, slash == std::string::npos ? 0 : slash);
  std::string name = slash == std::string::npos ? resource : resource.substr(slash + 1);
  if (name == "gpu" || name.rfind("gpu-", 0) == 0) return true;
  if (domain == "nvidia.com" && name.rfind("mig-", 0) == 0) return true;
  return domain.rfind("gpu.", 0) == 0;  // gpu.intel.com/i915, gpu.intel.com/xe
}

std::optional<PodName> parse_pod_log_dir(const std::string& entry) {
  auto first = entry.find('_');
  auto last = entry.rfind('_');
  if (first == std::string::npos || first == last || first == 0 || last + 1 >= entry.size()) return std::nullopt;
  return PodName{entry.substr(last + 1), entry.substr(0, first), entry.substr(first + 1, last - first - 1)};
}

}  // namespace gpubind::k8s

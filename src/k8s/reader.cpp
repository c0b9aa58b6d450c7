#include "k8s/reader.hpp"

#include <algorithm>
#include <set>

#include "probe/probe.hpp"
#include "sys/pod_resources.hpp"
#include "sys/yaml.hpp"
#include "util/strings.hpp"

namespace gpubind::k8s {

namespace {

std::string relative(const std::string& path) {
  size_t i = 0;
  while (i < path.size() && path[i] == '/') ++i;
  return path.substr(i);
}

// The file's text, nullopt when it does not exist; an Error when it cannot be read. Read, not
// first looked for: a directory this user may not search (the kubelet's is root's) is a
// permission error, not an absent file.
// The kubelet's files are KiB to a few MiB (the device checkpoint grows with pods); a larger one
// is refused before it is held whole.
constexpr size_t kMaxKubeletFileBytes = 16 << 20;

Result<std::optional<std::string>> read_optional(const sys::FsRoot& root, const std::string& rel) {
  auto fd = root.open_read(rel);
  auto text = fd ? sys::read_to_end(std::move(*fd), root.path_of(rel), kMaxKubeletFileBytes) : Result<std::string>(fd.error());
  if (!text && text.error().kind == ErrorKind::not_found) return std::optional<std::string>();
  if (!text) {
    Error e = text.error();
    if (e.kind == ErrorKind::permission) e.why += " (the kubelet's files are root's: run k8s check as root)";
    return e;
  }
  return std::optional<std::string>(std::move(*text));
}

// One of the kubelet's state files parsed into `into`; absent, a note saying what that means
// (none when `absent` is "").
template <class T>
Status read_state(const sys::FsRoot& root, const std::string& rel, Result<T> (*parse)(const std::string&, const std::string&),
                  std::optional<T>& into, const std::string& absent, std::vector<std::string>& notes) {
  auto text = read_optional(root, rel);
  if (!text) return text.error();
  if (!*text) {
    if (!absent.empty()) notes.push_back("no " + root.path_of(rel) + ": " + absent);
    return Ok{};
  }
  auto state = parse(**text, root.path_of(rel));
  if (!state) return state.error();
  into = std::move(*state);
  return Ok{};
}

// The CPU DRA driver's CDI specs (dra.k8s.io-cpu_claim-UID.json): each claim's CPUs.
void read_cpu_claims(const sys::FsRoot& root, const std::string& dir, NodeState& s) {
  auto names = root.exists(dir) ? root.list(dir) : Result<std::vector<std::string>>(std::vector<std::string>{});
  if (!names) {
    s.notes.push_back(names.error().message() + ": the CPU DRA driver's claims are judged by their containers' cgroups");
    return;
  }
  for (const std::string& name : *names) {
    if (!name.starts_with("dra.k8s.io-cpu_") || !name.ends_with(".json")) continue;
    std::string rel = dir + "/" + name;
    auto text = read_optional(root, rel);
    auto claims =
        text && *text ? parse_cdi_cpu_spec(**text, root.path_of(rel)) : Result<std::vector<CdiCpuClaim>>(std::vector<CdiCpuClaim>{});
    if (!text) claims = text.error();
    if (!claims) {
      s.notes.push_back(claims.error().message() + ": skipped");
      continue;
    }
    for (const CdiCpuClaim& c : *claims) s.cpu_claims[c.claim_uid] = c.cpus;
  }
}

// Directories under the kubelet's cgroups (kubepods.slice/..., kubepods/...; the cpuset hierarchy's
// under cgroup v1) named for a container id, by id. Only the kubelet's own levels are entered: a
// QoS class, a pod, a container.
void find_container_cgroups(const sys::FsRoot& root, const std::string& dir, int depth, std::map<std::string, std::string>& out) {
  if (depth > 4) return;
  auto names = root.list(dir);
  if (!names) return;
  for (const std::string& name : *names) {
    std::string id = probe::container_id_of_cgroup(name);
    if (!id.empty()) out.emplace(id, dir + "/" + name);
    else if (name.starts_with("kubepods") || name.starts_with("pod") || name == "besteffort" || name == "burstable")
      find_container_cgroups(root, dir + "/" + name, depth + 1, out);
  }
}

// Each container's cpuset, by (pod UID, container): the container log links name the container an
// id is, the kubelet's cgroups hold its cpuset.
void read_container_cpus(const sys::FsRoot& root, const ReaderOptions& o, NodeState& s) {
  std::string logs = relative(o.container_logs), cgroups = relative(o.cgroup_root);
  if (!root.exists(logs) || !root.exists(cgroups)) return;
  auto names = root.list(logs);
  if (!names) {
    s.notes.push_back(names.error().message() + ": containers are judged by the CPUs they were given, not their cgroups");
    return;
  }
  std::map<std::pair<std::string, std::string>, std::string> uid_of;  // (namespace, name) -> UID
  for (const auto& [uid, pod] : s.pods) uid_of[{pod.namespace_name, pod.name}] = uid;
  std::map<std::string, std::string> dirs;
  for (const std::string& top :
       {std::string("kubepods.slice"), std::string("kubepods"), std::string("cpuset/kubepods.slice"), std::string("cpuset/kubepods")})
    if (root.exists(cgroups + "/" + top)) find_container_cgroups(root, cgroups + "/" + top, 0, dirs);
  for (const auto& [id, who] : probe::kube_containers_of_log_names(*names)) {
    auto uid = uid_of.find({who.namespace_name, who.pod});
    auto dir = dirs.find(id);
    if (uid == uid_of.end() || dir == dirs.end()) continue;
    for (const char* file : {"cpuset.cpus.effective", "cpuset.effective_cpus"}) {
      std::string rel = dir->second + "/" + file;
      auto text = read_optional(root, rel);
      if (text && !*text) continue;
      auto cpus = text ? CpuSet::parse_list(std::string(trim(**text))) : Result<CpuSet>(text.error());
      if (cpus && !cpus->empty()) s.container_cpus[{uid->second, who.container}] = NodeState::CgroupCpus{*cpus, root.path_of(rel)};
      else
        s.notes.push_back(root.path_of(rel) + ": " + (cpus ? "empty" : cpus.error().why) + ": container " + who.container + " of pod " +
                          who.namespace_name + "/" + who.pod + " is judged by the CPUs it was given");
      break;
    }
  }
}

// What shows the CPU DRA driver runs here: its kubelet plugin's registration socket (or its plugin
// directory), its claims, its ResourceSlices for this node (a node-local driver's pool is the
// node's name: one of the pools this node's claims name; a cluster's slices name every node).
std::string cpu_driver_evidence(const sys::FsRoot& root, const std::string& dir, const NodeState& s) {
  std::string name = kCpuDriver;
  for (const std::string& rel : {dir + "/plugins_registry/" + name + "-reg.sock", dir + "/plugins/" + name})
    if (root.exists(rel)) return root.path_of(rel);
  std::set<std::string> pools;
  if (s.devices)
    for (const DeviceAssignment& a : s.devices->assignments) {
      if (!a.claim.empty() && is_cpu_driver(a.resource)) return "claim " + a.claim;
      if (!a.claim.empty()) pools.insert(a.pool);
    }
  if (s.dra)
    for (const DraCheckpoint::Entry& e : s.dra->entries)
      for (const ClaimDevice& d : e.claim.devices) {
        if (is_cpu_driver(d.driver)) return "claim " + e.claim.namespace_name + "/" + e.claim.name;
        pools.insert(d.pool);
      }
  if (std::any_of(s.slices.begin(), s.slices.end(), [&](const SliceDevice& d) { return is_cpu_driver(d.driver) && pools.count(d.pool); }))
    return "its ResourceSlices";
  return "";
}

}  // namespace

Result<NodeState> read_node_state(const sys::FsRoot& root, const ReaderOptions& o) {
  NodeState s;
  std::string dir = relative(o.kubelet_dir);
  std::string config = o.config.empty() ? dir + "/config.yaml" : relative(o.config);
  s.config_path = root.path_of(config);
  auto text = read_optional(root, config);
  if (!text) return text.error();
  if (*text) {
    auto json = sys::yaml_to_json(**text, s.config_path);
    if (!json) return json.error();
    auto c = parse_kubelet_config(*json, s.config_path);
    if (!c) return c.error();
    s.config = *c;
  } else {
    s.notes.push_back("no kubelet configuration at " + s.config_path + ": the kubelet's defaults are shown (--kubelet-config names another file)");
  }

  size_t cpu_note = s.notes.size();  // said once the CPU DRA driver is looked for
  if (Status st = read_state(root, dir + "/cpu_manager_state", parse_cpu_manager_state, s.cpu, "", s.notes); !st) return st.error();
  if (Status st = read_state(root, dir + "/memory_manager_state", parse_memory_manager_state, s.memory, "", s.notes); !st)
    return st.error();
  if (Status st = read_state(root, dir + "/device-plugins/kubelet_internal_checkpoint", parse_device_checkpoint, s.devices,
                             "no device plugin has given this node's pods devices", s.notes);
      !st)
    return st.error();

  if (Status st = read_state(root, dir + "/dra_manager_state", parse_dra_checkpoint, s.dra, "", s.notes); !st) return st.error();

  std::string logs = relative(o.pod_logs);
  if (root.exists(logs)) {
    auto entries = root.list(logs);
    if (!entries) return entries.error();
    for (const std::string& e : *entries)
      if (auto pod = parse_pod_log_dir(e)) s.pods[pod->uid] = *pod;
  }

  s.assignments_from = "the checkpoint files";
  std::string socket = o.pod_resources.empty() ? dir + "/pod-resources/kubelet.sock" : relative(o.pod_resources);
  if (o.use_pod_resources && root.exists(socket)) {
    s.pod_resources_socket = true;
    auto answer = sys::pod_resources_list(root.path_of(socket), o.pod_resources_timeout_ms);
    Result<PodResources> api = answer ? parse_pod_resources(*answer, root.path_of(socket)) : Result<PodResources>(answer.error());
    if (api)
      apply_pod_resources(s, *api);
    else
      s.notes.push_back("the kubelet's pod-resources API did not answer (" + api.error().message() +
                        "): the assignments are the checkpoint files'");
  }
  if (!o.resource_slices.empty()) {
    auto file = sys::read_file(o.resource_slices, kMaxKubeletFileBytes);
    auto json = file ? sys::yaml_to_json(*file, o.resource_slices) : Result<std::string>(file.error());
    auto slices = json ? parse_resource_slices(*json, o.resource_slices) : Result<std::vector<SliceDevice>>(json.error());
    if (!slices) return slices.error();
    s.slices = std::move(*slices);
  }
  read_cpu_claims(root, relative(o.cdi_dir), s);
  read_container_cpus(root, o, s);
  s.cpu_driver = cpu_driver_evidence(root, dir, s);
  if (!s.cpu)
    s.notes.insert(s.notes.begin() + std::ptrdiff_t(cpu_note),
                   "no " + root.path_of(dir + "/cpu_manager_state") + ": " +
                       (s.cpu_driver.empty() ? "no container has CPUs of its own"
                                             : "the CPU DRA driver, not the kubelet, gives containers CPUs of their own"));
  return s;
}

}  // namespace gpubind::k8s

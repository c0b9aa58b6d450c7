#include "k8s/reader.hpp"

#include "sys/pod_resources.hpp"
#include "sys/yaml.hpp"

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

  if (Status st = read_state(root, dir + "/cpu_manager_state", parse_cpu_manager_state, s.cpu, "no container has CPUs of its own", s.notes);
      !st)
    return st.error();
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
  return s;
}

}  // namespace gpubind::k8s

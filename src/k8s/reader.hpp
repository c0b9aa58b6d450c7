#pragma once
// Reads a node's kubelet state (src/k8s/state.hpp) through an FsRoot: this node ("/") or a
// captured tree (--root).
#include <string>

#include "k8s/judge.hpp"
#include "sys/fsroot.hpp"

namespace gpubind::k8s {

struct ReaderOptions {
  std::string kubelet_dir = "/var/lib/kubelet";  // the kubelet's --root-dir
  std::string config;                             // config.yaml; "" = KUBELET_DIR/config.yaml
  std::string pod_logs = "/var/log/pods";
  std::string pod_resources;   // the kubelet's pod-resources socket; "" = KUBELET_DIR/pod-resources/kubelet.sock
  bool use_pod_resources = true;
  int pod_resources_timeout_ms = 5000;
  std::string cdi_dir = "/var/run/cdi";                // the CPU DRA driver's CDI specs: its claims' CPUs
  std::string container_logs = "/var/log/containers";  // "POD_NAMESPACE_CONTAINER-ID.log": which container an id is
  std::string cgroup_root = "/sys/fs/cgroup";          // each container's cpuset
  std::string resource_slices;                         // kubectl's ResourceSlices (JSON or YAML), a file on this machine; "" none
};

// A file that is absent is a note and the kubelet's default; one that cannot be read (permission)
// or parsed is an Error naming it (so is a --resource-slices file). The files of single containers
// and claims (a CDI spec, a cgroup's cpuset) that cannot be read or parsed are a note naming each,
// and the check goes on without them. Where the kubelet's pod-resources socket exists its answer
// replaces the checkpoints' assignments (apply_pod_resources); one that does not answer is a note,
// and the checkpoints are read as they are.
Result<NodeState> read_node_state(const sys::FsRoot& root, const ReaderOptions& options);

}  // namespace gpubind::k8s

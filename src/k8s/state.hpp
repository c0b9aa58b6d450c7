#pragma once
// What the kubelet holds on a node about CPUs, devices and memory, parsed from its own files
// (pure: text in, values out; src/k8s/reader reads them). The formats are the kubelet's:
//   config.yaml               KubeletConfiguration (kubelet.config.k8s.io/v1beta1), as JSON here
//                             (read through the YAML module)
//   cpu_manager_state         {"policyName", "defaultCpuSet", "entries": {podUID: {container: cpus}}}
//   memory_manager_state      {"policyName", "entries": {podUID: {container: [{numaAffinity, type, size}]}}}
//   device-plugins/kubelet_internal_checkpoint
//                             {"Data": {"PodDeviceEntries": [{PodUID, ContainerName, ResourceName,
//                             DeviceIDs: {numaNode: [ids]}}], "RegisteredDevices": {...}}}
//   /var/log/pods/NAMESPACE_NAME_UID    which pod a UID is
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "util/cpuset.hpp"
#include "util/result.hpp"

namespace gpubind::k8s {

struct KubeletConfig {
  bool found = false;  // false: no file, the kubelet's defaults below
  std::string cpu_manager_policy = "none";
  std::map<std::string, std::string> cpu_manager_policy_options;
  std::string topology_manager_policy = "none";
  std::string topology_manager_scope = "container";
  std::map<std::string, std::string> topology_manager_policy_options;
  std::string memory_manager_policy = "None";
  std::optional<CpuSet> reserved_system_cpus;
};
// `json` is config.yaml as JSON; `what` names the file in errors.
Result<KubeletConfig> parse_kubelet_config(const std::string& json, const std::string& what);

// Pod UID -> container name -> value.
template <class T>
using PerContainer = std::map<std::string, std::map<std::string, T>>;

struct CpuManagerState {
  std::string policy;
  CpuSet default_cpus;  // the shared pool; empty under "none" (every CPU is shared)
  PerContainer<CpuSet> exclusive;
};
Result<CpuManagerState> parse_cpu_manager_state(const std::string& text, const std::string& what);

struct MemoryManagerState {
  std::string policy;
  PerContainer<std::vector<unsigned>> memory_nodes;  // nodes of the "memory" blocks
};
Result<MemoryManagerState> parse_memory_manager_state(const std::string& text, const std::string& what);

struct Device {
  std::string id;            // as the device plugin names it: "GPU-...", "0000:c1:00.0", "3"
  std::optional<int> numa;   // the node the plugin reported it on; nullopt: none reported
};
struct DeviceAssignment {
  std::string pod_uid;
  std::string container;
  std::string resource;      // "nvidia.com/gpu", "amd.com/gpu"...; a DRA driver, "gpu.nvidia.com"
  std::vector<Device> devices;
  std::string claim;         // "NAMESPACE/NAME" of the DRA ResourceClaim; "" from a device plugin
  std::string pool;          // DRA: the driver's pool the device is in
  std::string claim_uid;     // DRA: the claim's UID, where the source gives it
};
struct DeviceCheckpoint {
  std::vector<DeviceAssignment> assignments;
  std::map<std::string, std::vector<std::string>> registered;  // resource -> device ids
};
Result<DeviceCheckpoint> parse_device_checkpoint(const std::string& text, const std::string& what);

// Whether a device plugin resource is a GPU: "nvidia.com/gpu", "amd.com/gpu",
// "gpu.intel.com/i915", NVIDIA's MIG resources ("nvidia.com/mig-1g.10gb").
bool is_gpu_resource(const std::string& resource);

// A device Dynamic Resource Allocation gave: its driver ("gpu.nvidia.com"), pool and name in the
// driver's pool ("gpu-0"), and its CDI device ids ("k8s.gpu.nvidia.com/device=gpu-0").
struct ClaimDevice {
  std::string driver, pool, device;
  std::vector<std::string> cdi;
};
struct Claim {
  std::string name, namespace_name;
  std::vector<ClaimDevice> devices;
  std::string uid;  // the checkpoint's ClaimUID; the API gives none
};

// The kubelet's DRA checkpoint (dra_manager_state): each prepared ResourceClaim, the pods that
// use it (by UID) and its devices. Both formats: {"Data": "<JSON of {Entries: [...]}>",
// "Checksum"} (1.31+: DriverState {driver: {Devices: [{PoolName, DeviceName, CDIDeviceIDs}]}})
// and {"version": "v1", "entries": [...]} (1.27-1.30: CDIDevices {driver: [ids]}).
struct DraCheckpoint {
  struct Entry {
    Claim claim;
    std::vector<std::string> pod_uids;
  };
  std::vector<Entry> entries;
};
Result<DraCheckpoint> parse_dra_checkpoint(const std::string& text, const std::string& what);

// Whether a DRA driver hands out GPUs: gpu.nvidia.com, gpu.amd.com, gpu.intel.com.
bool is_gpu_driver(const std::string& driver);

// The kubelet's pod-resources API's answer (List), as sys::pod_resources_list gives it in JSON.
struct PodResources {
  struct Devices {
    std::string resource;
    std::vector<std::string> ids;
    std::vector<unsigned> numa;  // the device plugin's topology for them
  };
  struct Container {
    std::string name;
    CpuSet cpus;  // its exclusive CPUs; empty: the shared pool
    std::vector<Devices> devices;
    std::vector<unsigned> memory_numa;  // nodes of its "memory" blocks (the memory manager's)
    std::vector<Claim> claims;          // its DRA claims' devices (dynamic_resources)
  };
  struct Pod {
    std::string name, namespace_name;
    std::vector<Container> containers;
  };
  std::vector<Pod> pods;
};
Result<PodResources> parse_pod_resources(const std::string& json, const std::string& what);

struct PodName {
  std::string uid;
  std::string namespace_name;
  std::string name;
};
// A /var/log/pods entry, "NAMESPACE_NAME_UID"; nullopt for any other name. Namespaces and pod
// names cannot hold '_', so the split is unambiguous.
std::optional<PodName> parse_pod_log_dir(const std::string& entry);

}  // namespace gpubind::k8s

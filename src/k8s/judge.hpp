#pragma once
// k8s check's judgement (pure): each container the kubelet gave GPUs, with the CPUs the CPU
// manager gave it, judged against the node's topology; and the node's configuration judged for
// GPU pods. Rules in docs/cli.md ("gpubind k8s check").
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "k8s/dra_objects.hpp"
#include "k8s/state.hpp"
#include "topo/topology.hpp"

namespace gpubind::k8s {

// Everything read from one node (src/k8s/reader); a state file that is absent is nullopt.
struct NodeState {
  std::string config_path;  // where config.yaml was looked for
  KubeletConfig config;
  std::optional<CpuManagerState> cpu;
  std::optional<MemoryManagerState> memory;
  std::optional<DeviceCheckpoint> devices;
  std::optional<DraCheckpoint> dra;     // dra_manager_state: DRA claims' devices by pod
  std::map<std::string, PodName> pods;  // by UID, from /var/log/pods
  bool pod_resources_socket = false;    // the kubelet's pod-resources socket exists
  std::string assignments_from;         // "the pod-resources API", or "the checkpoint files"
  std::vector<std::string> notes;       // what could not be read, said once
  // The CPU DRA driver (dra.cpu): the CPUs it gave each claim, by claim UID (its CDI specs), and
  // what shows that it runs here ("" where nothing does): its kubelet plugin's registration, its
  // claims, its ResourceSlices.
  std::map<std::string, CpuSet> cpu_claims;
  std::string cpu_driver;
  std::vector<SliceDevice> slices;  // --resource-slices: this node's devices and their attributes
  // The CPUs each container's cgroup allows it (cpuset.cpus.effective, v1 cpuset.effective_cpus),
  // by (pod UID, container name): what it may run on, whoever set it.
  struct CgroupCpus {
    CpuSet cpus;
    std::string file;
  };
  std::map<std::pair<std::string, std::string>, CgroupCpus> container_cpus;
};

// The API's answer in place of the checkpoints' assignments (CPUs, devices, memory, names): it is
// the running kubelet's own view. The CPU manager's policy and shared pool stay the state file's.
void apply_pod_resources(NodeState& s, const PodResources& api);

enum class Verdict { aligned, cross_numa, remote_nic, shared_cpus, split_l3, no_exclusive_cpus, locality_unknown };
const char* to_string(Verdict v);  // "ALIGNED", "CROSS_NUMA"...

struct DeviceView {
  std::string resource;
  std::string id;
  std::string pci;                // the topology's device, "" when the id matched none
  std::optional<unsigned> index;  // its index in the topology (a GPU's vendor index), when matched
  std::vector<unsigned> numa;     // the nodes judged by (those with CPUs); empty: unknown
  std::string numa_source;        // "topology", "device plugin", "" (unknown)
  std::optional<int> plugin_numa; // what the device plugin reported
  std::string claim;              // the DRA ResourceClaim ("NAMESPACE/NAME") it came through; "": a device plugin
  bool nic = false;               // a NIC of the topology (other devices only)
};

// A dra.cpu device a container's claim got, and the CPUs the driver gave the claim.
struct CpuClaimView {
  std::string claim;   // "NAMESPACE/NAME"
  std::string uid;     // the claim's UID, where known
  std::string device;  // "cpudevnuma000", "cpudev017"
  std::optional<CpuDeviceGroup> group;
  CpuSet group_cpus;           // the CPUs of its group (all of the topology's for cpudevmachine); empty: unknown
  std::optional<CpuSet> cpus;  // the claim's CPUs (the driver's CDI spec, else the slices' cpuID); nullopt: unknown
  std::string cpus_source;     // "CDI spec", "ResourceSlice"
};

struct ContainerReport {
  std::string pod_uid, namespace_name, pod, container;
  std::vector<DeviceView> gpus;
  std::vector<DeviceView> other_devices;  // NICs, RDMA, FPGAs: NICs judged against its GPUs' nodes
  std::vector<CpuClaimView> cpu_claims;   // its pod's or its own dra.cpu claims
  bool exclusive = false;                 // CPUs of its own: the CPU manager's, or a dra.cpu claim's
  CpuSet cpus;                            // what it runs on: its cgroup's, else its exclusive CPUs, else the shared pool
  std::string cpus_source;                // "cgroup", "CPU manager", "dra.cpu claim", "shared pool"
  std::optional<CpuSet> given_cpus;       // exclusive CPUs the CPU manager or a claim gave it, where its cgroup differs
  std::vector<unsigned> cpu_nodes;        // NUMA nodes of those CPUs
  std::vector<unsigned> gpu_nodes;        // NUMA nodes of its GPUs (known ones)
  std::optional<std::vector<unsigned>> memory_nodes;  // the memory manager's, when it pinned any
  struct Finding {
    Verdict verdict;
    std::string reason;  // one line, naming the CPUs, nodes and devices
  };
  std::vector<Finding> findings;  // worst first; none: ALIGNED
  // Each finding's verdict once, worst first; {ALIGNED} when there is none.
  std::vector<Verdict> verdicts() const;
};

struct NodeFinding {
  bool problem = false;  // true: wrong (exit 3); false: advice
  std::string text;
};

struct Report {
  NodeState state;
  std::string topology_origin;
  std::vector<ContainerReport> containers;  // by namespace, pod, container
  std::vector<NodeFinding> findings;
};

Report judge(NodeState state, const topo::Topology& t);

// The most NUMA nodes the kubelet's Topology Manager starts on: topologyManagerPolicyOptions
// max-allowable-numa-nodes (beta 1.31, GA 1.35), else 8. A policy other than none on a machine with
// more nodes stops the kubelet at start ("unsupported on machines with more than 8 NUMA Nodes").
// nullopt: the machine is within it, or the policy is none.
std::optional<std::string> topology_manager_refusal(const KubeletConfig& c, const topo::Topology& t);

// Whether the report has anything wrong: a container not ALIGNED, or a node problem.
bool has_problems(const Report& r);

}  // namespace gpubind::k8s

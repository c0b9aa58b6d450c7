#pragma once
// What Dynamic Resource Allocation's drivers, the kubelet and the API server write about devices,
// parsed (pure: text in, values out):
//   ResourceSlices   a node's devices with their attributes, as `kubectl get resourceslices -o json`
//                    (or -o yaml, read through the YAML module) prints them: a List or one object
//   CDI specs        the CPU DRA driver's (kubernetes-sigs/dra-driver-cpu, driver "dra.cpu"):
//                    /var/run/cdi/dra.k8s.io-cpu_claim-<claimUID>.json, whose one device sets
//                    DRA_CPUSET_<claimUID>=<CPU list> in the container; the driver's NRI plugin pins
//                    the container's cgroup to that list
//   device metadata  KEP-5304's files inside a container (Kubernetes 1.36+, drivers that enable it):
//                    /var/run/kubernetes.io/dra-device-attributes/{resourceclaims,resourceclaimtemplates}/
//                    <claim>/<request>/<driver>-metadata.json, a stream of DeviceMetadata objects,
//                    one per schema version the driver writes, newest first
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "util/cpuset.hpp"
#include "util/result.hpp"

namespace gpubind::k8s {

// The CPU DRA driver's name, and its device names: grouped mode "cpudevnumaNNN" (the CPUs of NUMA
// node NNN), "cpudevsocketNNN" (of package NNN), "cpudevmachine" (every allocatable CPU); individual
// mode "cpudevNNN" (one CPU, numbered core by core: not the CPU's id).
inline constexpr const char* kCpuDriver = "dra.cpu";
bool is_cpu_driver(const std::string& driver);

struct CpuDeviceGroup {
  enum class Kind { numa, socket, machine, cpu } kind = Kind::cpu;
  std::optional<unsigned> id;  // the node or package; nullopt for machine and cpu
};
// nullopt for a name the driver does not write.
std::optional<CpuDeviceGroup> cpu_device_group(const std::string& device);

// A device attribute's value, as resource.k8s.io writes it: one of int, bool, string, version, or
// a list (ints, bools, strings, versions; DRAListTypeAttributes). Lists of ints and strings are
// kept; a scalar string is also its own one-element `strings`.
struct Attribute {
  std::optional<long long> number;
  std::optional<bool> flag;
  std::optional<std::string> text;  // string or version
  std::vector<std::string> strings;
  std::vector<long long> numbers;
};
// Attributes by their qualified name: an unqualified one ("uuid") is in its driver's domain
// ("gpu.nvidia.com/uuid"), as the API server reads it.
using Attributes = std::map<std::string, Attribute>;

// The standard attributes (resource.kubernetes.io).
inline constexpr const char* kPciBusIdAttribute = "resource.kubernetes.io/pciBusID";
inline constexpr const char* kPcieRootAttribute = "resource.kubernetes.io/pcieRoot";
inline constexpr const char* kNumaNodeAttribute = "resource.kubernetes.io/numaNode";

struct SliceDevice {
  std::string driver, pool, node, name;
  Attributes attributes;
  const Attribute* find(const std::string& qualified) const;
  std::optional<long long> number(const std::string& qualified) const;
  std::optional<std::string> text(const std::string& qualified) const;
};
// `json` is kubectl's output as JSON; `what` names the file. A slice or device without the fields
// the API server requires (driver, pool name, device name) is an Error naming it.
Result<std::vector<SliceDevice>> parse_resource_slices(const std::string& json, const std::string& what);

// The device `driver`/`pool`/`name` of the slices, nullptr when none. A pool's devices are one
// driver's on one node.
const SliceDevice* find_slice_device(const std::vector<SliceDevice>& slices, const std::string& driver, const std::string& pool,
                                     const std::string& name);

// A device's PCI address as its driver publishes it: resource.kubernetes.io/pciBusID, DraNet's
// dra.net/pciAddress, AMD's GPU driver's pciAddr; nullopt when none.
std::optional<std::string> pci_of(const SliceDevice& d);

// The PCIe root Linux names a device's host bridge by ("pci0000:02", the standard pcieRoot
// attribute's form) from the topology's path ("hb:0000:02"); "" when unknown.
std::string pcie_root_name(const std::vector<std::string>& pcie_path);

// One KEP-5304 metadata file: the claim, and each device of each of its requests (SliceDevice's
// node is "").
struct DeviceMetadata {
  std::string api_version;  // the version read: metadata.resource.k8s.io/v1beta1 or v1alpha1
  std::string claim, namespace_name, uid;
  std::string pod_claim_name;  // a claim made from a ResourceClaimTemplate: the pod's name for it
  struct Device {
    std::string request;
    SliceDevice device;
  };
  std::vector<Device> devices;
};
// The first object of the stream whose apiVersion gpubind reads. An empty file (a driver that
// writes its metadata after preparing the claim, before the pod starts) has no devices; text that
// is not a stream of JSON objects, or holds no version gpubind reads, is an Error naming it.
Result<DeviceMetadata> parse_device_metadata(const std::string& text, const std::string& what);

// The CPU DRA driver's configuration (kubernetes-sigs/dra-driver-cpu internal/driverconfig): its
// command line (/dracpu --cpu-device-mode=..., --group-by, --reserved-cpus, --expose-pcie-roots,
// --config=FILE) over its configuration file (flat YAML: cpuDeviceMode, groupBy, reservedCPUs),
// over the defaults (grouped, numanode, none reserved). A flag given wins over the file.
struct CpuDriverConfig {
  std::string cpu_device_mode = "grouped";  // grouped, individual
  std::string group_by = "numanode";        // numanode, socket, machine (grouped mode)
  std::optional<CpuSet> reserved_cpus;
  bool expose_pcie_roots = false;
  std::string config_file;  // --config's path, "" none
};
// The flags of `args` (argv without the program); the config file's path is config_file, whose
// text (as JSON) `file_json` is when given. A value the driver would refuse (a mode or grouping
// it does not know, a CPU list that is not one) is an Error naming it.
Result<CpuDriverConfig> parse_cpu_driver_config(const std::vector<std::string>& args, const std::string* file_json,
                                                const std::string& what);
// Only the flags, for --config's path before the file is read.
CpuDriverConfig cpu_driver_flags(const std::vector<std::string>& args);

// One CPU claim the driver prepared: its claim's UID and CPUs.
struct CdiCpuClaim {
  std::string claim_uid;
  CpuSet cpus;
};
// The DRA_CPUSET_<claimUID> variables of a CDI spec's devices. A spec with none is an empty list;
// one that is not JSON, or a variable whose value is not a CPU list, an Error naming it.
Result<std::vector<CdiCpuClaim>> parse_cdi_cpu_spec(const std::string& text, const std::string& what);

// The claim UID in a dra.cpu CDI device id ("dra.k8s.io/cpu=claim-<UID>"); "" when it is not one.
std::string cpu_claim_uid_of_cdi(const std::string& cdi_id);

}  // namespace gpubind::k8s

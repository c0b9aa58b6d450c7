#include "bind/pod_metadata.hpp"

#include <algorithm>

#include "k8s/dra_objects.hpp"
#include "k8s/state.hpp"
#include "util/strings.hpp"

namespace gpubind::bind {

namespace {

using k8s::SliceDevice;

std::string cpu_count(long long n) { return std::to_string(n) + (n == 1 ? " CPU" : " CPUs"); }

std::string node_word(const std::vector<unsigned>& nodes) {
  return (nodes.size() == 1 ? "NUMA node " : "NUMA nodes ") + join_numbers(nodes);
}

// A GPU driver's device: the topology's GPU it names (by PCI address, else UUID), and what the
// file says that the topology (sysfs, on this machine) does not.
void gpu_device(const SliceDevice& d, const std::string& file, const topo::Topology& t, plan::Request::PodMetadata& m) {
  const topo::Gpu* g = nullptr;
  std::string by;
  if (auto pci = k8s::pci_of(d)) {
    std::string address = to_lower(*pci);
    g = topo::find_gpu(t, address);
    by = "PCI address " + address;
    if (!g) m.warnings.push_back(file + " names GPU " + d.name + " at " + address + ", which this machine's topology does not have");
  } else if (auto uuid = d.text(d.driver + "/uuid")) {
    g = topo::find_gpu_by_uuid(t, *uuid);
    by = "UUID " + *uuid;
  }
  if (!g) {
    m.explain.push_back(file + ": GPU " + d.name + " of " + d.driver +
                        (by.empty() ? " (no PCI address or UUID in its metadata: the device files decide)" : " (" + by + ": not matched)"));
    return;
  }
  m.gpus.push_back(g->pci);
  m.explain.push_back(file + ": GPU " + d.name + " of " + d.driver + " is GPU " + std::to_string(g->index) + " (" + g->pci + ", by its " +
                      by + ")");
  std::vector<unsigned> sysfs = g->numa ? *g->numa : std::vector<unsigned>{};
  for (const std::string& attribute : {std::string(k8s::kNumaNodeAttribute), d.driver + "/numa"})
    if (auto n = d.number(attribute); n && !sysfs.empty() && std::find(sysfs.begin(), sysfs.end(), unsigned(*n)) == sysfs.end())
      m.warnings.push_back(file + " puts GPU " + g->pci + " on NUMA node " + std::to_string(*n) + " (" + attribute + "), the topology on " +
                           node_word(sysfs));
  std::string root = k8s::pcie_root_name(g->pcie_path);
  if (auto said = d.text(k8s::kPcieRootAttribute); said && !root.empty() && *said != root)
    m.warnings.push_back(file + " puts GPU " + g->pci + " under PCIe root " + *said + ", the topology under " + root);
}

// The CPU DRA driver's devices of one file: where its claim's CPUs are, against the CPUs this
// process may run on.
void cpu_devices(const std::vector<const SliceDevice*>& ds, const std::string& file, const topo::Topology& t, const CpuSet& allowed,
                 plan::Request::PodMetadata& m) {
  CpuSet cpus, group;
  std::optional<long long> allocated;
  std::vector<std::string> names;
  for (const SliceDevice* d : ds) {
    names.push_back(d->name);
    if (auto id = d->number("dra.cpu/cpuID"); id && *id >= 0 && *id < (1 << 20)) cpus.set(unsigned(*id));
    if (auto n = d->number("dra.cpu/allocatedNumCPUs")) allocated = allocated.value_or(0) + *n;
    if (auto n = d->number(k8s::kNumaNodeAttribute); n && *n >= 0)
      if (const topo::NumaNode* node = topo::find_numa(t, unsigned(*n))) group |= node->cpus;
    if (auto s = d->number("dra.cpu/socketID"); s && !d->number(k8s::kNumaNodeAttribute))
      for (const topo::Package& p : t.packages)
        if (static_cast<long long>(p.os_index) == *s) group |= p.cpus;
  }
  std::string what = file + ": CPUs of dra.cpu device(s) " + join(names, ", ");
  std::vector<unsigned> mine = topo::nodes_covering(t, allowed);
  if (!cpus.empty()) {
    m.explain.push_back(what + ": CPUs " + cpus.to_list() + " (dra.cpu/cpuID)");
    if (cpus != allowed)
      m.warnings.push_back(file + " gives the claim CPUs " + cpus.to_list() + ", this process may run on " + allowed.to_list());
    return;
  }
  if (!group.empty()) {
    std::vector<unsigned> nodes = topo::nodes_covering(t, group);
    m.explain.push_back(what + ": taken from " + node_word(nodes) + (allocated ? ", " + cpu_count(*allocated) : ""));
    if (!allowed.is_subset_of(group))
      m.warnings.push_back(file + " takes the claim's CPUs from " + node_word(nodes) + ", this process may run on CPUs " +
                           allowed.to_list() + " (" + node_word(mine) + ")");
  } else {
    m.explain.push_back(what + (allocated ? ": " + cpu_count(*allocated) : ""));
  }
  if (allocated && *allocated > 0 && allowed.count() > size_t(*allocated))
    m.warnings.push_back(file + ": the claim was given " + cpu_count(*allocated) + ", this process may run on " +
                         std::to_string(allowed.count()) + " (" + allowed.to_list() +
                         "): the driver's NRI plugin has not pinned the container");
}

}  // namespace

std::optional<plan::Request::PodMetadata> pod_metadata(const std::map<std::string, std::string>& files,
                                                       const std::vector<std::string>& unreadable, const topo::Topology& t,
                                                       const CpuSet& allowed) {
  if (files.empty() && unreadable.empty()) return std::nullopt;
  plan::Request::PodMetadata m;
  for (const std::string& e : unreadable) m.warnings.push_back("DRA device metadata: " + e + ": not used");
  for (const auto& [path, text] : files) {
    auto md = k8s::parse_device_metadata(text, path);
    if (!md) {
      m.warnings.push_back("DRA device metadata: " + md.error().message() + ": not used");
      continue;
    }
    if (md->devices.empty()) {
      m.explain.push_back(path + ": no device yet (a driver writes it before the pod starts)");
      continue;
    }
    std::vector<const SliceDevice*> cpu;
    for (const auto& [request, d] : md->devices) {
      if (k8s::is_gpu_driver(d.driver)) gpu_device(d, path, t, m);
      else if (k8s::is_cpu_driver(d.driver)) cpu.push_back(&d);
      else m.explain.push_back(path + ": " + d.driver + " device " + d.name + (k8s::pci_of(d) ? " (" + *k8s::pci_of(d) + ")" : ""));
    }
    if (!cpu.empty()) cpu_devices(cpu, path, t, allowed, m);
  }
  return m;
}

}  // namespace gpubind::bind

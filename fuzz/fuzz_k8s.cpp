// The kubelet's files as k8s check reads them (root reads them on every node): the first byte picks
// the parser (config as JSON, cpu_manager_state, memory_manager_state, the device checkpoint, the
// pod-resources API's answer with DRA claims, the DRA checkpoint, ResourceSlices as kubectl prints
// them, the CPU DRA driver's CDI spec), the rest is the file. What parses is judged on the DGX
// H100-like example: every container gets a verdict, every finding a reason. Two more read inside
// a pod or on the node: a KEP-5304 device metadata file (judged by bind::pod_metadata against the
// example's CPUs), and the CPU DRA driver's command line (NUL-separated, as /proc/PID/cmdline).
#include <cstddef>
#include <cstdint>
#include <string>

#include "bind/pod_metadata.hpp"
#include "discover/source.hpp"
#include "fuzz_util.hpp"
#include "k8s/dra_objects.hpp"
#include "k8s/judge.hpp"
#include "util/strings.hpp"

using namespace gpubind;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static const topo::Topology t = *discover::load_topology("example:dgx-h100");
  std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  k8s::NodeState s;
  switch (data[0] % 10) {
    case 0: {
      auto c = k8s::parse_kubelet_config(text, "config");
      if (!c) return 0;
      s.config = *c;
      break;
    }
    case 1: {
      auto c = k8s::parse_cpu_manager_state(text, "cpu");
      if (!c) return 0;
      s.cpu = *c;
      for (const auto& [uid, containers] : c->exclusive)
        for (const auto& [name, cpus] : containers) {
          if (!s.devices) s.devices.emplace();
          s.devices->assignments.push_back({uid, name, "nvidia.com/gpu", {{"0", 0}}, ""});
        }
      break;
    }
    case 2: {
      auto m = k8s::parse_memory_manager_state(text, "memory");
      if (!m) return 0;
      s.memory = *m;
      break;
    }
    case 3: {
      auto d = k8s::parse_device_checkpoint(text, "checkpoint");
      if (!d) return 0;
      s.devices = *d;
      break;
    }
    case 5: {
      auto d = k8s::parse_dra_checkpoint(text, "dra_manager_state");
      if (!d) return 0;
      s.dra = *d;
      s.cpu = k8s::CpuManagerState{"static", {}, {}};
      for (const auto& e : d->entries)
        for (const auto& uid : e.pod_uids) s.cpu->exclusive[uid]["worker"] = CpuSet::of({1, 2});
      break;
    }
    case 6: {  // every slice device given to one container through one claim, the GPU beside it
      auto slices = k8s::parse_resource_slices(text, "slices");
      if (!slices) return 0;
      s.slices = *slices;
      s.devices.emplace();
      s.devices->assignments.push_back({"p", "c", "gpu.nvidia.com", {{"gpu-0", std::nullopt}}, "ns/claim", "node", "u"});
      for (const auto& d : *slices)
        s.devices->assignments.push_back({"p", "c", d.driver, {{d.name, std::nullopt}}, "ns/claim", d.pool, "u"});
      break;
    }
    case 7: {  // each claim of the spec a dra.cpu device of a container with a GPU
      auto claims = k8s::parse_cdi_cpu_spec(text, "cdi");
      if (!claims) return 0;
      s.cpu_driver = "fuzz";
      s.devices.emplace();
      for (const auto& c : *claims) {
        s.cpu_claims[c.claim_uid] = c.cpus;
        s.devices->assignments.push_back({c.claim_uid, "c", "gpu.nvidia.com", {{"gpu-1", std::nullopt}}, "ns/claim", "node", c.claim_uid});
        s.devices->assignments.push_back(
            {c.claim_uid, "c", "dra.cpu", {{"cpudevsocket000", std::nullopt}}, "ns/claim", "node", c.claim_uid});
      }
      break;
    }
    case 8: {
      auto m = bind::pod_metadata({{"metadata.json", text}}, {}, t, t.cpus);
      fuzz::require(m.has_value(), "a file read gives metadata");
      for (const std::string& pci : m->gpus) fuzz::require(topo::find_gpu(t, pci) != nullptr, "a named GPU is the topology's");
      return 0;
    }
    case 9: {
      std::vector<std::string> args;
      for (std::string_view a : split(text, '\0')) args.emplace_back(a);
      auto c = k8s::parse_cpu_driver_config(args, nullptr, "cmdline");
      if (c) fuzz::require(c->group_by == "numanode" || c->group_by == "socket" || c->group_by == "machine", "a known grouping");
      return 0;
    }
    default: {
      auto p = k8s::parse_pod_resources(text, "api");
      if (!p) return 0;
      k8s::apply_pod_resources(s, *p);
    }
  }
  k8s::Report r = k8s::judge(s, t);
  for (const auto& c : r.containers) {
    fuzz::require(!c.verdicts().empty(), "a judged container has a verdict");
    for (const auto& f : c.findings) fuzz::require(!f.reason.empty(), "a finding has a reason");
  }
  for (const auto& f : r.findings) fuzz::require(!f.text.empty(), "a node finding has a text");
  return 0;
}

#pragma once
// Which PCI functions are GPUs/accelerators and which are NICs. Shared by every loader so an
// XML capture, a sysfs tree and an NCCL file agree on what counts.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "topo/topology.hpp"

namespace gpubind::discover {

enum class DeviceRole { none, gpu, nic };

struct PciIdentity {
  uint16_t vendor_id = 0;
  uint16_t device_id = 0;
  uint32_t class_id = 0;             // 16-bit class/subclass (0x0302)
  bool nvidia_driver_bound = false;  // listed in /proc/driver/nvidia/gpus (ids may be stripped)
};

DeviceRole classify(const PciIdentity& id);

// Whether a PCI class (class << 8 | subclass) is one a GPU may have: display controller (VGA
// 0300, 3D 0302, other 0380) or processing accelerator (12xx: MI300X, Gaudi, FPGAs). classify()
// decides by vendor which of them are GPUs; an NCCL file without vendor ids relies on this alone.
bool is_gpu_class(uint32_t class_id);

// Sorts GPUs by vendor then PCI address and numbers each vendor's GPUs from 0 in that order:
// the default CUDA order for identical GPUs, and what HIP/ZE report without a reordering env.
// A GPU whose `index` was already fixed by a vendor library (rsmi) keeps it when every GPU of
// that vendor has one; `has_index` says which.
void assign_gpu_indexes(std::vector<topo::Gpu>& gpus, const std::vector<bool>& has_index);

// GPUs attached to an NVSwitch fabric talk to each other over min(lanes of each) NVLinks, which
// is what nvidia-smi prints as NV#. `fabric` maps a GPU's PCI address to its lanes into the
// switches; adds a link for every pair not linked directly.
void add_fabric_links(topo::Topology& t, const std::map<std::string, unsigned>& fabric);

// Fills topology-level warnings that every loader should report the same way.
void add_locality_warnings(topo::Topology& t);

}  // namespace gpubind::discover

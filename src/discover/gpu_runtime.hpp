#pragma once
// The GPU runtime libraries' view of the GPUs (NVML for NVIDIA, ROCm SMI for AMD): identity
// (UUID, name) matched to the PCI model by bus id, and what changes at run time (utilization,
// memory used, PCIe throughput). Loaded with dlopen only when asked, by the commands that need it;
// a missing library or a failing call is a one-line note and the PCI-only view, never a failure.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "probe/state.hpp"
#include "topo/cross_check.hpp"
#include "util/result.hpp"

namespace gpubind::discover {

class GpuRuntime {
 public:
  virtual ~GpuRuntime() = default;
  // Identity, locality, links and PCIe link state, read once when the library was opened.
  virtual topo::RuntimeView view() const = 0;
  // Each GPU's usage now; a GPU whose calls fail has no values.
  virtual std::vector<probe::GpuUsage> usage() const = 0;
  // The processes with a context on each GPU now; nullopt where the library cannot list them (an
  // entry point missing, a call refused), so that "no context" is told from "cannot tell".
  virtual std::optional<std::vector<probe::GpuProcess>> processes() const = 0;
};

// NVML from libnvidia-ml.so.1 (the dynamic loader's search path). Errors: the library is missing,
// a needed entry point is missing, or nvmlInit fails (NVML's own message).
Result<std::unique_ptr<GpuRuntime>> open_nvml();

// ROCm SMI from librocm_smi64 (Debian's .so.1, ROCm's .so.7/.6/.5, then /opt/rocm/lib).
// Errors as open_nvml's.
Result<std::unique_ptr<GpuRuntime>> open_rocm_smi();

// The runtimes for the GPU vendors a topology has, loaded once: what could not be loaded is a
// note, "WITHOUT: NVML: <why>" (WITHOUT says what the caller goes without), to print once.
struct GpuRuntimes {
  std::vector<std::unique_ptr<GpuRuntime>> loaded;
  std::vector<std::string> notes;
  bool empty() const { return loaded.empty(); }
  std::vector<probe::GpuUsage> usage() const;  // every loaded runtime's GPUs
  // Every loaded runtime's list; nullopt when none is loaded or one could not list its GPUs'.
  std::optional<std::vector<probe::GpuProcess>> processes() const;
  std::vector<topo::RuntimeView> views() const;  // for topo::cross_check
};
GpuRuntimes open_gpu_runtimes(bool nvidia, bool amd, const std::string& without);
// The same for every GPU vendor the topology has.
GpuRuntimes open_gpu_runtimes(const topo::Topology& t, const std::string& without);
// The libraries' view taken into `t` (topo::cross_check: UUIDs, MIG instances, links filled in);
// returns what to print: the libraries' notes, then one line per disagreement.
std::vector<std::string> adopt_runtime_view(topo::Topology& t, const GpuRuntimes& runtimes);

// Where a GPU-selection variable names GPUs by UUID (CUDA_VISIBLE_DEVICES=GPU-8f3a..., MIG-...;
// ROCR_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES=GPU-...) and the topology's GPUs of that vendor
// carry none (a live discovery: Debian's hwloc has no NVML backend), asks the vendor's library
// and fills them in (topo::cross_check). Nothing is loaded otherwise, so exec's fast path stays
// free of the libraries. `env` reads a variable ("" when unset). Returns the notes to print.
// `container_variable`: NVIDIA_VISIBLE_DEVICES counts too (plan and launch; not exec, whose every
// rank in a GPU pod would load NVML: the device plugin sets it there, and the device files tell).
std::vector<std::string> add_runtime_identity(topo::Topology& t, const std::function<std::string(const char*)>& env,
                                              bool container_variable = false);

// NVML's bus id ("00000000:18:00.0", any case) as the topology writes PCI addresses.
std::string normalize_bus_id(const std::string& bus_id);
// ROCm SMI's BDFID (domain << 32 | bus << 8 | device << 3 | function) likewise.
std::string bus_id_of_bdfid(uint64_t bdfid);

}  // namespace gpubind::discover

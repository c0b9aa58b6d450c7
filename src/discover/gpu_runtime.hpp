#pragma once
// The GPU runtime libraries' view of the GPUs (NVML today; ROCm SMI to come): identity (UUID,
// name) matched to the PCI model by bus id, and what changes at run time (utilization, memory
// used). Loaded with dlopen only when asked, by the commands that need it; a missing library or
// a failing call is a one-line note and the PCI-only view, never a failure.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "probe/state.hpp"
#include "util/result.hpp"

namespace gpubind::discover {

struct RuntimeGpu {
  std::string pci;   // "0000:18:00.0", lower case, as the topology names it
  std::string uuid;  // "GPU-..."
  std::string name;
};

class GpuRuntime {
 public:
  virtual ~GpuRuntime() = default;
  virtual std::string describe() const = 0;  // "NVML 12.535.54"
  virtual std::vector<RuntimeGpu> gpus() const = 0;
  // Each GPU's usage now; a GPU whose calls fail has no values.
  virtual std::vector<probe::GpuUsage> usage() const = 0;
};

// NVML from libnvidia-ml.so.1 (the dynamic loader's search path). Errors: the library is missing,
// a needed entry point is missing, or nvmlInit fails (NVML's own message).
Result<std::unique_ptr<GpuRuntime>> open_nvml();

// NVML's bus id ("00000000:18:00.0", any case) as the topology writes PCI addresses.
std::string normalize_bus_id(const std::string& bus_id);

}  // namespace gpubind::discover

// The GPU runtime libraries as one facade: bus ids, the runtimes opened for the vendors a
// topology has (NVML in nvml_runtime.cpp, ROCm SMI in rocm_smi_runtime.cpp), their views adopted.
#include "discover/gpu_runtime.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <set>

#include "util/strings.hpp"

namespace gpubind::discover {

std::string normalize_bus_id(const std::string& bus_id) {
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  if (std::sscanf(bus_id.c_str(), "%x:%x:%x.%x", &domain, &bus, &dev, &fn) != 4) return to_lower(bus_id);
  char out[32];
  std::snprintf(out, sizeof out, "%04x:%02x:%02x.%x", domain & 0xffff, bus, dev, fn);
  return out;
}

std::string bus_id_of_bdfid(uint64_t bdfid) {
  char out[32];
  std::snprintf(out, sizeof out, "%04x:%02x:%02x.%x", unsigned((bdfid >> 32) & 0xffff), unsigned((bdfid >> 8) & 0xff),
                unsigned((bdfid >> 3) & 0x1f), unsigned(bdfid & 0x7));
  return out;
}

std::vector<probe::GpuUsage> GpuRuntimes::usage() const {
  std::vector<probe::GpuUsage> out;
  for (const auto& r : loaded)
    for (probe::GpuUsage& u : r->usage()) out.push_back(std::move(u));
  return out;
}

std::vector<std::string> add_runtime_identity(topo::Topology& t, const std::function<std::string(const char*)>& env,
                                              bool container_variable) {
  // Which vendors' variables name GPUs by UUID, and whose GPUs in the topology carry none.
  auto by_uuid = [&](std::initializer_list<const char*> names) {
    for (const char* n : names) {
      std::string v = to_lower(env(n));
      if (v.find("gpu-") != std::string::npos || v.find("mig-") != std::string::npos) return true;
    }
    return false;
  };
  auto lacking = [&](topo::Vendor v, bool mig) {
    bool any = false;
    for (const topo::Gpu& g : t.gpus)
      if (g.vendor == v) {
        any = true;
        if (!g.uuid.empty() && (!mig || !g.mig_uuids.empty())) return false;
      }
    return any;
  };
  std::string cuda = to_lower(env("CUDA_VISIBLE_DEVICES") + (container_variable ? "," + env("NVIDIA_VISIBLE_DEVICES") : ""));
  bool nvidia = (by_uuid({"CUDA_VISIBLE_DEVICES"}) || (container_variable && by_uuid({"NVIDIA_VISIBLE_DEVICES"}))) &&
                lacking(topo::Vendor::nvidia, cuda.find("mig-") != std::string::npos);
  bool amd = by_uuid({"ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"}) && lacking(topo::Vendor::amd, false);
  if (!nvidia && !amd) return {};
  return adopt_runtime_view(t, open_gpu_runtimes(nvidia, amd, "GPU UUIDs unknown"));
}

std::vector<std::string> adopt_runtime_view(topo::Topology& t, const GpuRuntimes& runtimes) {
  std::vector<std::string> notes = runtimes.notes;
  for (const topo::CrossCheckFinding& f : topo::cross_check(t, runtimes.views())) notes.push_back(topo::to_line(f));
  return notes;
}

GpuRuntimes open_gpu_runtimes(const topo::Topology& t, const std::string& without) {
  return open_gpu_runtimes(topo::has_gpu_of(t, topo::Vendor::nvidia), topo::has_gpu_of(t, topo::Vendor::amd), without);
}

std::optional<std::vector<probe::GpuProcess>> GpuRuntimes::processes() const {
  if (loaded.empty()) return std::nullopt;
  std::vector<probe::GpuProcess> out;
  for (const auto& r : loaded) {
    auto listed = r->processes();
    if (!listed) return std::nullopt;
    for (probe::GpuProcess& p : *listed) out.push_back(std::move(p));
  }
  return out;
}

std::vector<topo::RuntimeView> GpuRuntimes::views() const {
  std::vector<topo::RuntimeView> out;
  for (const auto& r : loaded) out.push_back(r->view());
  return out;
}

GpuRuntimes open_gpu_runtimes(bool nvidia, bool amd, const std::string& without) {
  GpuRuntimes out;
  auto add = [&](Result<std::unique_ptr<GpuRuntime>> r) {
    if (r) out.loaded.push_back(std::move(*r));
    else out.notes.push_back(without + ": " + r.error().message());
  };
  if (nvidia) add(open_nvml());
  if (amd) add(open_rocm_smi());
  return out;
}

}  // namespace gpubind::discover

#include "discover/gpu_runtime.hpp"

#include <cstdio>

#include "discover/nvml_api.hpp"
#include "sys/module.hpp"
#include "util/strings.hpp"

namespace gpubind::discover {

std::string normalize_bus_id(const std::string& bus_id) {
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  if (std::sscanf(bus_id.c_str(), "%x:%x:%x.%x", &domain, &bus, &dev, &fn) != 4) return to_lower(bus_id);
  char out[32];
  std::snprintf(out, sizeof out, "%04x:%02x:%02x.%x", domain & 0xffff, bus, dev, fn);
  return out;
}

namespace {

class Nvml final : public GpuRuntime {
 public:
  static Result<std::unique_ptr<GpuRuntime>> open() {
    auto n = std::make_unique<Nvml>();
    Status loaded = n->resolve();
    if (!loaded) return loaded.error();
    if (nvml::Return r = n->m_init(); r != nvml::kSuccess) return Error{"NVML", "nvmlInit_v2: " + n->text(r)};
    char version[80] = {};
    if (n->m_version(version, sizeof version) == nvml::kSuccess) n->m_describe = std::string("NVML ") + version;
    unsigned count = 0;
    if (nvml::Return r = n->m_count(&count); r != nvml::kSuccess) return Error{"NVML", "nvmlDeviceGetCount_v2: " + n->text(r)};
    for (unsigned i = 0; i < count && i < 4096; ++i) {
      nvml::Device d = nullptr;
      nvml::PciInfo pci{};
      if (n->m_handle(i, &d) != nvml::kSuccess || n->m_pci(d, &pci) != nvml::kSuccess) continue;
      pci.bus_id[sizeof pci.bus_id - 1] = '\0';
      RuntimeGpu g;
      g.pci = normalize_bus_id(pci.bus_id);
      char text[96] = {};
      if (n->m_uuid(d, text, sizeof text) == nvml::kSuccess) g.uuid = text;
      text[0] = '\0';
      if (n->m_name(d, text, sizeof text) == nvml::kSuccess) g.name = text;
      n->m_devices.push_back({d, std::move(g)});
    }
    return std::unique_ptr<GpuRuntime>(std::move(n));
  }
  ~Nvml() override {
    if (m_shutdown) m_shutdown();
  }

  std::string describe() const override { return m_describe; }

  std::vector<RuntimeGpu> gpus() const override {
    std::vector<RuntimeGpu> out;
    for (const auto& [d, g] : m_devices) out.push_back(g);
    return out;
  }

  std::vector<probe::GpuUsage> usage() const override {
    std::vector<probe::GpuUsage> out;
    for (const auto& [d, g] : m_devices) {
      probe::GpuUsage u;
      u.pci = g.pci;
      nvml::Utilization util{};
      if (m_utilization(d, &util) == nvml::kSuccess && util.gpu <= 100) u.utilization = util.gpu / 100.0;
      nvml::Memory mem{};
      if (m_memory(d, &mem) == nvml::kSuccess) {
        u.memory_used = mem.used;
        u.memory_total = mem.total;
      }
      out.push_back(std::move(u));
    }
    return out;
  }

 private:
  template <class Fn>
  Status bind(Fn& fn, const char* name) {
    auto sym = sys::module_symbol(nvml::kLibrary, name);
    if (!sym) return Error{"NVML", sym.error().why};  // the loader's message names the library
    fn = reinterpret_cast<Fn>(*sym);
    return Ok{};
  }
  Status resolve() {
    for (Status s : {bind(m_init, "nvmlInit_v2"), bind(m_shutdown, "nvmlShutdown"), bind(m_error, "nvmlErrorString"),
                     bind(m_version, "nvmlSystemGetNVMLVersion"), bind(m_count, "nvmlDeviceGetCount_v2"),
                     bind(m_handle, "nvmlDeviceGetHandleByIndex_v2"), bind(m_pci, "nvmlDeviceGetPciInfo_v3"),
                     bind(m_uuid, "nvmlDeviceGetUUID"), bind(m_name, "nvmlDeviceGetName"),
                     bind(m_utilization, "nvmlDeviceGetUtilizationRates"), bind(m_memory, "nvmlDeviceGetMemoryInfo")})
      if (!s) {
        m_shutdown = nullptr;  // never initialised
        return s;
      }
    return Ok{};
  }
  std::string text(nvml::Return r) const {
    const char* s = m_error ? m_error(r) : nullptr;
    return (s ? std::string(s) : std::string("error")) + " (" + std::to_string(r) + ")";
  }

  nvml::InitFn m_init = nullptr;
  nvml::ShutdownFn m_shutdown = nullptr;
  nvml::ErrorStringFn m_error = nullptr;
  nvml::VersionFn m_version = nullptr;
  nvml::CountFn m_count = nullptr;
  nvml::HandleFn m_handle = nullptr;
  nvml::PciFn m_pci = nullptr;
  nvml::TextFn m_uuid = nullptr;
  nvml::TextFn m_name = nullptr;
  nvml::UtilizationFn m_utilization = nullptr;
  nvml::MemoryFn m_memory = nullptr;
  std::string m_describe = "NVML";
  std::vector<std::pair<nvml::Device, RuntimeGpu>> m_devices;
};

}  // namespace

Result<std::unique_ptr<GpuRuntime>> open_nvml() { return Nvml::open(); }

}  // namespace gpubind::discover

#include "discover/gpu_runtime.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>

#include <rocm_smi/rocm_smi.h>

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

std::string bus_id_of_bdfid(uint64_t bdfid) {
  char out[32];
  std::snprintf(out, sizeof out, "%04x:%02x:%02x.%x", unsigned((bdfid >> 32) & 0xffff), unsigned((bdfid >> 8) & 0xff),
                unsigned((bdfid >> 3) & 0x1f), unsigned(bdfid & 0x7));
  return out;
}

namespace {

// Binds a library's entry points by name: the first candidate file that loads is used for all.
class Library {
 public:
  Library(const char* label, std::vector<std::string> candidates) : m_label(label), m_candidates(std::move(candidates)) {}
  template <class Fn>
  Status bind(Fn& fn, const char* name) {
    if (m_path.empty()) {
      std::string first_error;
      for (const std::string& c : m_candidates) {
        auto sym = sys::module_symbol(c, name);
        if (sym) {
          m_path = c;
          fn = reinterpret_cast<Fn>(*sym);
          return Ok{};
        }
        if (first_error.empty()) first_error = sym.error().why;  // the loader's message names the library
      }
      return Error{m_label, first_error};
    }
    auto sym = sys::module_symbol(m_path, name);
    if (!sym) return Error{m_label, sym.error().why};
    fn = reinterpret_cast<Fn>(*sym);
    return Ok{};
  }
  // An entry point older libraries lack: nullptr then.
  template <class Fn>
  void bind_optional(Fn& fn, const char* name) {
    if (!bind(fn, name)) fn = nullptr;
  }

 private:
  const char* m_label;
  std::vector<std::string> m_candidates;
  std::string m_path;
};

// What both libraries' runtimes keep: their description and each GPU with its library handle.
template <class Handle>
class RuntimeOf : public GpuRuntime {
 public:
  std::string describe() const override { return m_describe; }
  std::vector<topo::RuntimeGpu> gpus() const override {
    std::vector<topo::RuntimeGpu> out;
    for (const auto& [h, g] : m_devices) out.push_back(g);
    return out;
  }

 protected:
  explicit RuntimeOf(std::string describe) : m_describe(std::move(describe)) {}
  std::string m_describe;
  std::vector<std::pair<Handle, topo::RuntimeGpu>> m_devices;
};

class Nvml final : public RuntimeOf<nvml::Device> {
 public:
  Nvml() : RuntimeOf("NVML") {}
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
      topo::RuntimeGpu g;
      g.pci = normalize_bus_id(pci.bus_id);
      char text[96] = {};
      if (n->m_uuid(d, text, sizeof text) == nvml::kSuccess) g.uuid = text;
      text[0] = '\0';
      if (n->m_name(d, text, sizeof text) == nvml::kSuccess) g.name = text;
      unsigned node = 0;
      if (n->m_numa && n->m_numa(d, &node) == nvml::kSuccess) g.numa = node;
      g.mig_uuids = n->mig_uuids(d);
      unsigned long mask[64] = {};  // 4096 CPUs
      static_assert(sizeof(unsigned long) == sizeof(uint64_t), "NVML's CPU masks are read as 64-bit words");
      if (n->m_affinity && n->m_affinity(d, 64, mask) == nvml::kSuccess) {
        uint64_t words[64];
        for (int w = 0; w < 64; ++w) words[w] = mask[w];
        if (CpuSet cpus = CpuSet::from_words(words, 64); !cpus.empty()) g.cpus = cpus;
      }
      n->m_devices.push_back({d, std::move(g)});
    }
    return std::unique_ptr<GpuRuntime>(std::move(n));
  }
  ~Nvml() override {
    if (m_shutdown) m_shutdown();
  }

  topo::Vendor vendor() const override { return topo::Vendor::nvidia; }

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
      unsigned kb = 0;
      if (m_pcie && m_pcie(d, nvml::kPcieTx, &kb) == nvml::kSuccess) u.pcie_tx = kb * 1024.0;
      if (m_pcie && m_pcie(d, nvml::kPcieRx, &kb) == nvml::kSuccess) u.pcie_rx = kb * 1024.0;
      out.push_back(std::move(u));
    }
    return out;
  }

 private:
  Status resolve() {
    Library lib("NVML", {nvml::kLibrary});
    for (Status s : {lib.bind(m_init, "nvmlInit_v2"), lib.bind(m_shutdown, "nvmlShutdown"), lib.bind(m_error, "nvmlErrorString"),
                     lib.bind(m_version, "nvmlSystemGetNVMLVersion"), lib.bind(m_count, "nvmlDeviceGetCount_v2"),
                     lib.bind(m_handle, "nvmlDeviceGetHandleByIndex_v2"), lib.bind(m_pci, "nvmlDeviceGetPciInfo_v3"),
                     lib.bind(m_uuid, "nvmlDeviceGetUUID"), lib.bind(m_name, "nvmlDeviceGetName"),
                     lib.bind(m_utilization, "nvmlDeviceGetUtilizationRates"), lib.bind(m_memory, "nvmlDeviceGetMemoryInfo")})
      if (!s) {
        m_shutdown = nullptr;  // never initialised
        return s;
      }
    lib.bind_optional(m_pcie, "nvmlDeviceGetPcieThroughput");
    lib.bind_optional(m_affinity, "nvmlDeviceGetCpuAffinity");
    lib.bind_optional(m_mig_mode, "nvmlDeviceGetMigMode");
    lib.bind_optional(m_mig_count, "nvmlDeviceGetMaxMigDeviceCount");
    lib.bind_optional(m_mig_handle, "nvmlDeviceGetMigDeviceHandleByIndex");
    lib.bind_optional(m_numa, "nvmlDeviceGetNumaNodeId");
    return Ok{};
  }
  // The UUIDs of the GPU's MIG instances, when MIG is on (older libraries: none).
  std::vector<std::string> mig_uuids(nvml::Device d) const {
    std::vector<std::string> out;
    unsigned current = 0, pending = 0, count = 0;
    if (!m_mig_mode || !m_mig_count || !m_mig_handle || m_mig_mode(d, &current, &pending) != nvml::kSuccess ||
        current != nvml::kMigEnabled || m_mig_count(d, &count) != nvml::kSuccess)
      return out;
    for (unsigned i = 0; i < count && i < 64; ++i) {
      nvml::Device mig = nullptr;
      char text[96] = {};
      if (m_mig_handle(d, i, &mig) != nvml::kSuccess) continue;  // NOT_FOUND: no instance in that slot
      if (m_uuid(mig, text, sizeof text) == nvml::kSuccess) out.push_back(text);
    }
    return out;
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
  nvml::PcieThroughputFn m_pcie = nullptr;
  nvml::CpuAffinityFn m_affinity = nullptr;
  nvml::NumaNodeFn m_numa = nullptr;
  nvml::MigModeFn m_mig_mode = nullptr;
  nvml::MigCountFn m_mig_count = nullptr;
  nvml::MigHandleFn m_mig_handle = nullptr;
};

// ROCm SMI, its ABI from Debian's librocm-smi-dev header (the functions are declared there, never
// linked: their types are taken with decltype).
class RocmSmi final : public RuntimeOf<uint32_t> {
 public:
  RocmSmi() : RuntimeOf("ROCm SMI") {}
  static Result<std::unique_ptr<GpuRuntime>> open() {
    auto r = std::make_unique<RocmSmi>();
    Library lib("ROCm SMI", {"librocm_smi64.so.1", "librocm_smi64.so.7", "librocm_smi64.so.6", "librocm_smi64.so.5",
                             "librocm_smi64.so", "/opt/rocm/lib/librocm_smi64.so"});
    for (Status s : {lib.bind(r->m_init, "rsmi_init"), lib.bind(r->m_shutdown, "rsmi_shut_down"),
                     lib.bind(r->m_error, "rsmi_status_string"), lib.bind(r->m_count, "rsmi_num_monitor_devices"),
                     lib.bind(r->m_pci, "rsmi_dev_pci_id_get"), lib.bind(r->m_busy, "rsmi_dev_busy_percent_get"),
                     lib.bind(r->m_used, "rsmi_dev_memory_usage_get"), lib.bind(r->m_total, "rsmi_dev_memory_total_get")})
      if (!s) {
        r->m_shutdown = nullptr;
        return s.error();
      }
    lib.bind_optional(r->m_unique_id, "rsmi_dev_unique_id_get");
    lib.bind_optional(r->m_name, "rsmi_dev_name_get");
    lib.bind_optional(r->m_version, "rsmi_version_get");
    lib.bind_optional(r->m_numa, "rsmi_topo_get_numa_node_number");
    if (rsmi_status_t st = r->m_init(0); st != RSMI_STATUS_SUCCESS) {
      r->m_shutdown = nullptr;
      return Error{"ROCm SMI", "rsmi_init: " + r->text(st)};
    }
    rsmi_version_t v{};
    if (r->m_version && r->m_version(&v) == RSMI_STATUS_SUCCESS)
      r->m_describe = "ROCm SMI " + std::to_string(v.major) + "." + std::to_string(v.minor) + "." + std::to_string(v.patch);
    uint32_t count = 0;
    if (rsmi_status_t st = r->m_count(&count); st != RSMI_STATUS_SUCCESS)
      return Error{"ROCm SMI", "rsmi_num_monitor_devices: " + r->text(st)};
    for (uint32_t i = 0; i < count && i < 4096; ++i) {
      uint64_t bdfid = 0;
      if (r->m_pci(i, &bdfid) != RSMI_STATUS_SUCCESS) continue;
      topo::RuntimeGpu g;
      g.pci = bus_id_of_bdfid(bdfid);
      uint64_t id = 0;
      if (r->m_unique_id && r->m_unique_id(i, &id) == RSMI_STATUS_SUCCESS) {
        char text[40];
        std::snprintf(text, sizeof text, "GPU-%016llx", (unsigned long long)id);  // ROCR_VISIBLE_DEVICES' form
        g.uuid = text;
      }
      char name[128] = {};
      if (r->m_name && r->m_name(i, name, sizeof name) == RSMI_STATUS_SUCCESS) g.name = name;
      uint32_t node = 0;
      if (r->m_numa && r->m_numa(i, &node) == RSMI_STATUS_SUCCESS) g.numa = node;
      r->m_devices.push_back({i, std::move(g)});
    }
    return std::unique_ptr<GpuRuntime>(std::move(r));
  }
  ~RocmSmi() override {
    if (m_shutdown) m_shutdown();
  }
  topo::Vendor vendor() const override { return topo::Vendor::amd; }
  // No PCIe throughput: rsmi_dev_pci_throughput_get blocks for a second.
  std::vector<probe::GpuUsage> usage() const override {
    std::vector<probe::GpuUsage> out;
    for (const auto& [i, g] : m_devices) {
      probe::GpuUsage u;
      u.pci = g.pci;
      uint32_t busy = 0;
      if (m_busy(i, &busy) == RSMI_STATUS_SUCCESS && busy <= 100) u.utilization = busy / 100.0;
      uint64_t used = 0, total = 0;
      if (m_used(i, RSMI_MEM_TYPE_VRAM, &used) == RSMI_STATUS_SUCCESS) u.memory_used = used;
      if (m_total(i, RSMI_MEM_TYPE_VRAM, &total) == RSMI_STATUS_SUCCESS) u.memory_total = total;
      out.push_back(std::move(u));
    }
    return out;
  }

 private:
  std::string text(rsmi_status_t st) const {
    const char* s = nullptr;
    if (m_error && m_error(st, &s) == RSMI_STATUS_SUCCESS && s) return std::string(s) + " (" + std::to_string(int(st)) + ")";
    return "error " + std::to_string(int(st));
  }
  decltype(&rsmi_init) m_init = nullptr;
  decltype(&rsmi_shut_down) m_shutdown = nullptr;
  decltype(&rsmi_status_string) m_error = nullptr;
  decltype(&rsmi_num_monitor_devices) m_count = nullptr;
  decltype(&rsmi_dev_pci_id_get) m_pci = nullptr;
  decltype(&rsmi_dev_busy_percent_get) m_busy = nullptr;
  decltype(&rsmi_dev_memory_usage_get) m_used = nullptr;
  decltype(&rsmi_dev_memory_total_get) m_total = nullptr;
  decltype(&rsmi_dev_unique_id_get) m_unique_id = nullptr;
  decltype(&rsmi_dev_name_get) m_name = nullptr;
  decltype(&rsmi_version_get) m_version = nullptr;
  decltype(&rsmi_topo_get_numa_node_number) m_numa = nullptr;
};

}  // namespace

Result<std::unique_ptr<GpuRuntime>> open_nvml() { return Nvml::open(); }
Result<std::unique_ptr<GpuRuntime>> open_rocm_smi() { return RocmSmi::open(); }

std::vector<probe::GpuUsage> GpuRuntimes::usage() const {
  std::vector<probe::GpuUsage> out;
  for (const auto& r : loaded)
    for (probe::GpuUsage& u : r->usage()) out.push_back(std::move(u));
  return out;
}

std::vector<std::string> add_runtime_identity(topo::Topology& t, const std::function<std::string(const char*)>& env) {
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
  std::string cuda = to_lower(env("CUDA_VISIBLE_DEVICES"));
  bool nvidia = by_uuid({"CUDA_VISIBLE_DEVICES"}) && lacking(topo::Vendor::nvidia, cuda.find("mig-") != std::string::npos);
  bool amd = by_uuid({"ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"}) && lacking(topo::Vendor::amd, false);
  if (!nvidia && !amd) return {};
  GpuRuntimes runtimes = open_gpu_runtimes(nvidia, amd, "GPU UUIDs unknown");
  std::vector<std::string> notes = std::move(runtimes.notes);
  for (const topo::CrossCheckFinding& f : topo::cross_check(t, runtimes.views())) notes.push_back(topo::to_line(f));
  return notes;
}

GpuRuntimes open_gpu_runtimes(const topo::Topology& t, const std::string& without) {
  auto has = [&](topo::Vendor v) { return std::any_of(t.gpus.begin(), t.gpus.end(), [&](const topo::Gpu& g) { return g.vendor == v; }); };
  return open_gpu_runtimes(has(topo::Vendor::nvidia), has(topo::Vendor::amd), without);
}

std::vector<topo::RuntimeView> GpuRuntimes::views() const {
  std::vector<topo::RuntimeView> out;
  for (const auto& r : loaded) out.push_back({r->describe(), r->vendor(), r->gpus()});
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

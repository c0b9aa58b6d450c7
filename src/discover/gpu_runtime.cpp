#include "discover/gpu_runtime.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <set>

#include <rocm_smi/rocm_smi.h>

#include "discover/classify.hpp"
#include "discover/nvml_api.hpp"
#include "discover/runtime_library.hpp"
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

// What both libraries' runtimes keep: their view and each GPU's library handle (in view order).
template <class Handle>
class RuntimeOf : public GpuRuntime {
 public:
  topo::RuntimeView view() const override { return m_view; }

 protected:
  RuntimeOf(std::string describe, topo::Vendor vendor) { m_view = {std::move(describe), vendor, {}, std::nullopt}; }
  void add(Handle h, topo::RuntimeGpu g) {
    m_handles.push_back(h);
    m_view.gpus.push_back(std::move(g));
  }
  topo::RuntimeView m_view;
  std::vector<Handle> m_handles;
};

// PCIe generation of a transfer rate in transfers per second (2.5 GT/s is Gen1 ... 64 GT/s Gen6).
unsigned pcie_gen_of_rate(uint64_t rate) {
  const uint64_t gt = 1000000000ull;
  if (rate >= 64 * gt) return 6;
  if (rate >= 32 * gt) return 5;
  if (rate >= 16 * gt) return 4;
  if (rate >= 8 * gt) return 3;
  if (rate >= 5 * gt) return 2;
  return rate ? 1 : 0;
}

class Nvml final : public RuntimeOf<nvml::Device> {
 public:
  Nvml() : RuntimeOf("NVML", topo::Vendor::nvidia) {}
  static Result<std::unique_ptr<GpuRuntime>> open() {
    auto n = std::make_unique<Nvml>();
    Status loaded = n->resolve();
    if (!loaded) return loaded.error();
    if (nvml::Return r = n->m_init(); r != nvml::kSuccess) return Error{"NVML", "nvmlInit_v2: " + n->text(r)};
    char version[80] = {};
    if (n->m_version(version, sizeof version) == nvml::kSuccess) n->m_view.source = std::string("NVML ") + version;
    unsigned count = 0;
    if (nvml::Return r = n->m_count(&count); r != nvml::kSuccess) return Error{"NVML", "nvmlDeviceGetCount_v2: " + n->text(r)};
    for (unsigned i = 0; i < count && i < 4096; ++i) {
      nvml::Device d = nullptr;
      nvml::PciInfo pci{};
      if (n->m_handle(i, &d) != nvml::kSuccess || n->m_pci(d, &pci) != nvml::kSuccess) continue;
      pci.bus_id[sizeof pci.bus_id - 1] = '\0';
      n->add(d, n->read_gpu(d, normalize_bus_id(pci.bus_id)));
    }
    n->m_view.links = n->links();
    n->m_view.direct_links_only = !n->m_link_type;
    return std::unique_ptr<GpuRuntime>(std::move(n));
  }
  ~Nvml() override {
    if (m_shutdown) m_shutdown();
  }

  std::vector<probe::GpuUsage> usage() const override {
    std::vector<probe::GpuUsage> out;
    for (size_t i = 0; i < m_handles.size(); ++i) {
      nvml::Device d = m_handles[i];
      probe::GpuUsage u;
      u.pci = m_view.gpus[i].pci;
      if (auto util = utilization(d)) u.utilization = *util / 100.0;
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

  std::vector<probe::GpuProcess> processes() const override {
    std::vector<probe::GpuProcess> out;
    for (size_t i = 0; i < m_handles.size(); ++i) {
      auto add = [&](unsigned pid, unsigned long long memory) {
        probe::GpuProcess p;
        p.pid = int(pid);
        p.pci = m_view.gpus[i].pci;
        if (memory != nvml::kValueNotAvailable) p.memory_used = memory;
        out.push_back(std::move(p));
      };
      if (m_processes) {
        for (const nvml::ProcessInfo& p : listed(m_processes, m_handles[i])) add(p.pid, p.used_gpu_memory);
      } else if (m_processes_v1) {
        for (const nvml::ProcessInfoV1& p : listed(m_processes_v1, m_handles[i])) add(p.pid, p.used_gpu_memory);
      }
    }
    return out;
  }

 private:
  // A process-list call, asked again with room for the count it needs (processes come and go).
  template <class Info>
  static std::vector<Info> listed(nvml::Return (*call)(nvml::Device, unsigned int*, Info*), nvml::Device d) {
    std::vector<Info> infos(64);
    for (int attempt = 0; attempt < 4; ++attempt) {
      unsigned count = unsigned(infos.size());
      nvml::Return r = call(d, &count, infos.data());
      if (r == nvml::kSuccess) {
        infos.resize(std::min<size_t>(count, infos.size()));
        return infos;
      }
      if (r != nvml::kErrorInsufficientSize || count > 65536) break;
      infos.resize(count + 16);
    }
    return {};
  }

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
    // Newer or optional calls: what a library lacks is left unknown.
    lib.bind_optional(m_pcie, "nvmlDeviceGetPcieThroughput");
    lib.bind_optional(m_affinity, "nvmlDeviceGetCpuAffinity");
    lib.bind_optional(m_mig_mode, "nvmlDeviceGetMigMode");
    lib.bind_optional(m_mig_count, "nvmlDeviceGetMaxMigDeviceCount");
    lib.bind_optional(m_mig_handle, "nvmlDeviceGetMigDeviceHandleByIndex");
    lib.bind_optional(m_gpu_instance, "nvmlDeviceGetGpuInstanceId");
    lib.bind_optional(m_compute_instance, "nvmlDeviceGetComputeInstanceId");
    lib.bind_optional(m_numa, "nvmlDeviceGetNumaNodeId");
    lib.bind_optional(m_serial, "nvmlDeviceGetSerial");
    lib.bind_optional(m_gen, "nvmlDeviceGetCurrPcieLinkGeneration");
    lib.bind_optional(m_max_gen, "nvmlDeviceGetMaxPcieLinkGeneration");
    lib.bind_optional(m_width, "nvmlDeviceGetCurrPcieLinkWidth");
    lib.bind_optional(m_max_width, "nvmlDeviceGetMaxPcieLinkWidth");
    lib.bind_optional(m_link_state, "nvmlDeviceGetNvLinkState");
    lib.bind_optional(m_link_remote, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
    lib.bind_optional(m_link_type, "nvmlDeviceGetNvLinkRemoteDeviceType");
    lib.bind_optional(m_processes, "nvmlDeviceGetComputeRunningProcesses_v3");
    if (!m_processes) lib.bind_optional(m_processes_v1, "nvmlDeviceGetComputeRunningProcesses");
    return Ok{};
  }

  topo::RuntimeGpu read_gpu(nvml::Device d, std::string pci) const {
    topo::RuntimeGpu g;
    g.pci = std::move(pci);
    char buf[96] = {};
    if (nvml::Return r = m_uuid(d, buf, sizeof buf); r == nvml::kSuccess) g.uuid = buf;
    else g.failure = "nvmlDeviceGetUUID: " + text(r);
    if (m_name(d, buf, sizeof buf) == nvml::kSuccess) g.name = buf;
    if (m_serial && m_serial(d, buf, sizeof buf) == nvml::kSuccess) g.serial = buf;
    unsigned node = 0;
    if (m_numa && m_numa(d, &node) == nvml::kSuccess) g.numa = node;
    read_mig(d, g);
    unsigned long mask[64] = {};  // 4096 CPUs
    static_assert(sizeof(unsigned long) == sizeof(uint64_t), "NVML's CPU masks are read as 64-bit words");
    if (m_affinity && m_affinity(d, 64, mask) == nvml::kSuccess) {
      uint64_t words[64];
      for (int w = 0; w < 64; ++w) words[w] = mask[w];
      if (CpuSet cpus = CpuSet::from_words(words, 64); !cpus.empty()) g.cpus = cpus;
    }
    topo::PcieLinkState link;
    if (m_gen && m_max_gen && m_width && m_max_width && m_gen(d, &link.gen) == nvml::kSuccess &&
        m_max_gen(d, &link.max_gen) == nvml::kSuccess && m_width(d, &link.width) == nvml::kSuccess &&
        m_max_width(d, &link.max_width) == nvml::kSuccess)
      g.pcie = link;
    g.utilization = utilization(d);
    return g;
  }

  std::optional<unsigned> utilization(nvml::Device d) const {
    nvml::Utilization util{};
    if (m_utilization(d, &util) == nvml::kSuccess && util.gpu <= 100) return util.gpu;
    return std::nullopt;
  }

  // MIG mode and the GPU's MIG instances: UUIDs, GPU and compute instance (older libraries: unknown).
  void read_mig(nvml::Device d, topo::RuntimeGpu& g) const {
    unsigned current = 0, pending = 0, count = 0;
    if (!m_mig_mode || m_mig_mode(d, &current, &pending) != nvml::kSuccess) return;  // NOT_SUPPORTED: no MIG here
    g.mig_mode = current == nvml::kMigEnabled;
    if (!*g.mig_mode || !m_mig_count || !m_mig_handle || m_mig_count(d, &count) != nvml::kSuccess) return;
    for (unsigned i = 0; i < count && i < 64; ++i) {
      nvml::Device mig = nullptr;
      char text[96] = {};
      if (m_mig_handle(d, i, &mig) != nvml::kSuccess) continue;  // NOT_FOUND: no instance in that slot
      if (m_uuid(mig, text, sizeof text) != nvml::kSuccess) continue;
      g.mig_uuids.push_back(text);
      topo::RuntimeGpu::MigInstance m{text, std::nullopt, std::nullopt};
      unsigned id = 0;
      if (m_gpu_instance && m_gpu_instance(mig, &id) == nvml::kSuccess) m.gpu_instance = id;
      if (m_compute_instance && m_compute_instance(mig, &id) == nvml::kSuccess) m.compute_instance = id;
      g.mig_instances.push_back(std::move(m));
    }
  }

  // The active NVLinks between the GPUs: direct ones counted per GPU pair, and through the NVSwitch
  // fabric each pair gets the fewer of the two GPUs' links into it (as nvidia-smi topo -m shows).
  // Unknown (nullopt) where the library cannot say where a link goes, or a GPU's link calls fail
  // otherwise than for a slot it does not have (a lost GPU): then no link is known for sure.
  std::optional<std::vector<topo::GpuLink>> links() const {
    if (!m_link_state || !m_link_remote) return std::nullopt;
    std::set<std::string> gpus;
    for (const topo::RuntimeGpu& g : m_view.gpus) gpus.insert(g.pci);
    std::map<std::pair<std::string, std::string>, unsigned> direct;
    std::map<std::string, unsigned> fabric;
    for (size_t i = 0; i < m_handles.size(); ++i) {
      const std::string& a = m_view.gpus[i].pci;
      for (unsigned l = 0; l < nvml::kNvLinkMaxLinks; ++l) {
        unsigned active = 0, type = 0;
        nvml::PciInfo remote{};
        nvml::Return r = m_link_state(m_handles[i], l, &active);
        if (r == nvml::kErrorInvalidArgument || r == nvml::kErrorNotSupported) break;  // no such slot: no more links
        if (r != nvml::kSuccess) return std::nullopt;
        if (active != nvml::kNvLinkActive) continue;
        if ((r = m_link_remote(m_handles[i], l, &remote)) != nvml::kSuccess) return std::nullopt;
        remote.bus_id[sizeof remote.bus_id - 1] = '\0';
        std::string b = normalize_bus_id(remote.bus_id);
        // Without the type call (before 2020), a link to one of the GPUs goes to that GPU; any other
        // goes to an NVSwitch or to the CPU (POWER9's NPU), which the library cannot tell apart: not
        // counted, and the view says its links are direct ones only.
        if (!m_link_type) type = gpus.count(b) ? nvml::kNvLinkRemoteGpu : nvml::kNvLinkRemoteUnknown;
        else if (m_link_type(m_handles[i], l, &type) != nvml::kSuccess) return std::nullopt;
        if (type == nvml::kNvLinkRemoteGpu && gpus.count(b) && a < b) ++direct[{a, b}];  // each link once, from its lower end
        else if (type == nvml::kNvLinkRemoteSwitch) ++fabric[a];
      }
    }
    topo::Topology t;
    for (const auto& [pair, count] : direct) t.links.push_back({pair.first, pair.second, topo::GpuLink::Kind::nvlink, count});
    add_fabric_links(t, fabric);
    topo::sort_links(t.links);
    return t.links;
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
  nvml::TextFn m_serial = nullptr;
  nvml::UtilizationFn m_utilization = nullptr;
  nvml::MemoryFn m_memory = nullptr;
  nvml::PcieThroughputFn m_pcie = nullptr;
  nvml::CpuAffinityFn m_affinity = nullptr;
  nvml::NumaNodeFn m_numa = nullptr;
  nvml::MigModeFn m_mig_mode = nullptr;
  nvml::MigCountFn m_mig_count = nullptr;
  nvml::MigHandleFn m_mig_handle = nullptr;
  nvml::MigInstanceIdFn m_gpu_instance = nullptr;
  nvml::MigInstanceIdFn m_compute_instance = nullptr;
  nvml::PcieLinkFn m_gen = nullptr;
  nvml::PcieLinkFn m_max_gen = nullptr;
  nvml::PcieLinkFn m_width = nullptr;
  nvml::PcieLinkFn m_max_width = nullptr;
  nvml::NvLinkStateFn m_link_state = nullptr;
  nvml::NvLinkRemotePciFn m_link_remote = nullptr;
  nvml::NvLinkRemoteTypeFn m_link_type = nullptr;
  nvml::ProcessesFn m_processes = nullptr;
  nvml::ProcessesV1Fn m_processes_v1 = nullptr;
};

// ROCm SMI, its ABI from Debian's librocm-smi-dev header (the functions are declared there, never
// linked: their types are taken with decltype).
class RocmSmi final : public RuntimeOf<uint32_t> {
 public:
  RocmSmi() : RuntimeOf("ROCm SMI", topo::Vendor::amd) {}
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
    lib.bind_optional(r->m_serial, "rsmi_dev_serial_number_get");
    lib.bind_optional(r->m_version, "rsmi_version_get");
    lib.bind_optional(r->m_numa, "rsmi_topo_get_numa_node_number");
    lib.bind_optional(r->m_bandwidth, "rsmi_dev_pci_bandwidth_get");
    lib.bind_optional(r->m_link_type, "rsmi_topo_get_link_type");
    lib.bind_optional(r->m_process_list, "rsmi_compute_process_info_get");
    lib.bind_optional(r->m_process_gpus, "rsmi_compute_process_gpus_get");
    rsmi_status_t started = RSMI_STATUS_SUCCESS;
    std::string said = sys::capture_stderr([&] { started = r->m_init(0); });  // it prints its exceptions
    if (started != RSMI_STATUS_SUCCESS) {
      r->m_shutdown = nullptr;
      return Error{"ROCm SMI", "rsmi_init: " + r->text(started) + (said.empty() ? "" : " (it said: " + said + ")")};
    }
    rsmi_version_t v{};
    if (r->m_version && r->m_version(&v) == RSMI_STATUS_SUCCESS)
      r->m_view.source = "ROCm SMI " + std::to_string(v.major) + "." + std::to_string(v.minor) + "." + std::to_string(v.patch);
    uint32_t count = 0;
    if (rsmi_status_t st = r->m_count(&count); st != RSMI_STATUS_SUCCESS)
      return Error{"ROCm SMI", "rsmi_num_monitor_devices: " + r->text(st)};
    for (uint32_t i = 0; i < count && i < 4096; ++i) {
      uint64_t bdfid = 0;
      if (r->m_pci(i, &bdfid) != RSMI_STATUS_SUCCESS) continue;
      r->add(i, r->read_gpu(i, bus_id_of_bdfid(bdfid)));
    }
    r->m_view.links = r->links();
    return std::unique_ptr<GpuRuntime>(std::move(r));
  }
  ~RocmSmi() override {
    if (m_shutdown) m_shutdown();
  }
  // No PCIe throughput: rsmi_dev_pci_throughput_get blocks for a second.
  std::vector<probe::GpuUsage> usage() const override {
    std::vector<probe::GpuUsage> out;
    for (size_t k = 0; k < m_handles.size(); ++k) {
      uint32_t i = m_handles[k];
      probe::GpuUsage u;
      u.pci = m_view.gpus[k].pci;
      if (auto busy = utilization(i)) u.utilization = *busy / 100.0;
      uint64_t used = 0, total = 0;
      if (m_used(i, RSMI_MEM_TYPE_VRAM, &used) == RSMI_STATUS_SUCCESS) u.memory_used = used;
      if (m_total(i, RSMI_MEM_TYPE_VRAM, &total) == RSMI_STATUS_SUCCESS) u.memory_total = total;
      out.push_back(std::move(u));
    }
    return out;
  }

  // The KFD's compute processes, then the GPUs each uses (no per-GPU memory: the VRAM figure is
  // the process's total).
  std::vector<probe::GpuProcess> processes() const override {
    std::vector<probe::GpuProcess> out;
    if (!m_process_list || !m_process_gpus) return out;
    uint32_t count = 0;
    if (m_process_list(nullptr, &count) != RSMI_STATUS_SUCCESS || count == 0 || count > 65536) return out;
    std::vector<rsmi_process_info_t> procs(count);
    if (rsmi_status_t st = m_process_list(procs.data(), &count); st != RSMI_STATUS_SUCCESS && st != RSMI_STATUS_INSUFFICIENT_SIZE)
      return out;
    procs.resize(std::min<size_t>(count, procs.size()));
    for (const rsmi_process_info_t& proc : procs) {
      std::vector<uint32_t> devices(m_handles.size() + 1);
      uint32_t n = uint32_t(devices.size());
      if (m_process_gpus(proc.process_id, devices.data(), &n) != RSMI_STATUS_SUCCESS) continue;
      for (uint32_t k = 0; k < n && k < devices.size(); ++k)
        for (size_t h = 0; h < m_handles.size(); ++h)
          if (m_handles[h] == devices[k]) out.push_back({int(proc.process_id), m_view.gpus[h].pci, std::nullopt});
    }
    return out;
  }

 private:
  topo::RuntimeGpu read_gpu(uint32_t i, std::string pci) const {
    topo::RuntimeGpu g;
    g.pci = std::move(pci);
    uint64_t id = 0;
    if (m_unique_id && m_unique_id(i, &id) == RSMI_STATUS_SUCCESS) {
      char text[40];
      std::snprintf(text, sizeof text, "GPU-%016llx", (unsigned long long)id);  // ROCR_VISIBLE_DEVICES' form
      g.uuid = text;
    }
    char text[128] = {};
    if (m_name && m_name(i, text, sizeof text) == RSMI_STATUS_SUCCESS) g.name = text;
    text[0] = '\0';
    if (m_serial && m_serial(i, text, sizeof text) == RSMI_STATUS_SUCCESS) g.serial = text;
    uint32_t node = 0;
    if (m_numa && m_numa(i, &node) == RSMI_STATUS_SUCCESS) g.numa = node;
    // The link's possible rates and lanes; `current` indexes the one in use now.
    rsmi_pcie_bandwidth_t bw{};
    if (m_bandwidth && m_bandwidth(i, &bw) == RSMI_STATUS_SUCCESS && bw.transfer_rate.num_supported > 0 &&
        bw.transfer_rate.num_supported <= RSMI_MAX_NUM_FREQUENCIES && bw.transfer_rate.current < bw.transfer_rate.num_supported) {
      topo::PcieLinkState link;
      for (uint32_t k = 0; k < bw.transfer_rate.num_supported; ++k) {
        link.max_gen = std::max(link.max_gen, pcie_gen_of_rate(bw.transfer_rate.frequency[k]));
        link.max_width = std::max(link.max_width, bw.lanes[k]);
      }
      link.gen = pcie_gen_of_rate(bw.transfer_rate.frequency[bw.transfer_rate.current]);
      link.width = bw.lanes[bw.transfer_rate.current];
      g.pcie = link;
    }
    g.utilization = utilization(i);
    return g;
  }

  std::optional<unsigned> utilization(uint32_t i) const {
    uint32_t busy = 0;
    if (m_busy(i, &busy) == RSMI_STATUS_SUCCESS && busy <= 100) return busy;
    return std::nullopt;
  }

  // xGMI links: GPUs one xGMI hop apart, one link per pair (as hwloc's XGMIHops).
  std::optional<std::vector<topo::GpuLink>> links() const {
    if (!m_link_type) return std::nullopt;
    std::vector<topo::GpuLink> out;
    for (size_t a = 0; a < m_handles.size(); ++a)
      for (size_t b = a + 1; b < m_handles.size(); ++b) {
        uint64_t hops = 0;
        RSMI_IO_LINK_TYPE type = RSMI_IOLINK_TYPE_UNDEFINED;
        if (m_link_type(m_handles[a], m_handles[b], &hops, &type) != RSMI_STATUS_SUCCESS) continue;
        if (type == RSMI_IOLINK_TYPE_XGMI && hops == 1) {
          const std::string &x = m_view.gpus[a].pci, &y = m_view.gpus[b].pci;
          out.push_back({std::min(x, y), std::max(x, y), topo::GpuLink::Kind::xgmi, 1});
        }
      }
    topo::sort_links(out);
    return out;
  }

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
  decltype(&rsmi_dev_serial_number_get) m_serial = nullptr;
  decltype(&rsmi_version_get) m_version = nullptr;
  decltype(&rsmi_topo_get_numa_node_number) m_numa = nullptr;
  decltype(&rsmi_dev_pci_bandwidth_get) m_bandwidth = nullptr;
  decltype(&rsmi_topo_get_link_type) m_link_type = nullptr;
  decltype(&rsmi_compute_process_info_get) m_process_list = nullptr;
  decltype(&rsmi_compute_process_gpus_get) m_process_gpus = nullptr;
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

std::vector<probe::GpuProcess> GpuRuntimes::processes() const {
  std::vector<probe::GpuProcess> out;
  for (const auto& r : loaded)
    for (probe::GpuProcess& p : r->processes()) out.push_back(std::move(p));
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

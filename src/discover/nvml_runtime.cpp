// NVML (libnvidia-ml.so.1, dlopened): NVIDIA GPUs' identity, MIG instances, NVLinks, PCIe link,
// use and the processes holding a context.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "discover/classify.hpp"
#include "discover/nvml_api.hpp"
#include "discover/runtime_library.hpp"
#include "discover/runtime_of.hpp"
#include "util/strings.hpp"

namespace gpubind::discover {

namespace {

using detail::RuntimeOf;


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

  std::optional<std::vector<probe::GpuProcess>> processes() const override {
    if (!m_processes && !m_processes_v1) return std::nullopt;
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
        auto infos = listed(m_processes, m_handles[i]);
        if (!infos) return std::nullopt;
        for (const nvml::ProcessInfo& p : *infos) add(p.pid, p.used_gpu_memory);
      } else {
        auto infos = listed(m_processes_v1, m_handles[i]);
        if (!infos) return std::nullopt;
        for (const nvml::ProcessInfoV1& p : *infos) add(p.pid, p.used_gpu_memory);
      }
    }
    return out;
  }

 private:
  // A process-list call, asked again with room for the count it needs (processes come and go);
  // nullopt when NVML refuses it.
  template <class Info>
  static std::optional<std::vector<Info>> listed(nvml::Return (*call)(nvml::Device, unsigned int*, Info*), nvml::Device d) {
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
    return std::nullopt;
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
    if (m_numa && m_numa(d, &node) == nvml::kSuccess) g.memory_numa = node;  // the GPU's memory, not its CPUs' node
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

}  // namespace

Result<std::unique_ptr<GpuRuntime>> open_nvml() { return Nvml::open(); }

}  // namespace gpubind::discover

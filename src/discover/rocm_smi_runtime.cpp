// ROCm SMI (librocm_smi64.so, dlopened; its header for the ABI): AMD GPUs' identity, xGMI links,
// PCIe link, use and the processes holding a context.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include <rocm_smi/rocm_smi.h>

#include "discover/classify.hpp"
#include "discover/runtime_library.hpp"
#include "discover/runtime_of.hpp"
#include "util/strings.hpp"

namespace gpubind::discover {

namespace {

using detail::RuntimeOf;

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
  std::optional<std::vector<probe::GpuProcess>> processes() const override {
    std::vector<probe::GpuProcess> out;
    if (!m_process_list || !m_process_gpus) return std::nullopt;
    uint32_t count = 0;
    if (m_process_list(nullptr, &count) != RSMI_STATUS_SUCCESS || count > 65536) return std::nullopt;
    if (count == 0) return out;
    std::vector<rsmi_process_info_t> procs(count);
    if (rsmi_status_t st = m_process_list(procs.data(), &count); st != RSMI_STATUS_SUCCESS && st != RSMI_STATUS_INSUFFICIENT_SIZE)
      return std::nullopt;
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

Result<std::unique_ptr<GpuRuntime>> open_rocm_smi() { return RocmSmi::open(); }

}  // namespace gpubind::discover

// A fake ROCm SMI for tests: the rsmi_* entry points gpubind calls, with the signatures of
// Debian's librocm-smi-dev header, answering from the JSON file named by GPUBIND_FAKE_ROCM_SMI.
// Built by the test suite as build/tests/fake-rocm-smi/librocm_smi64.so.1; a test puts that
// directory on LD_LIBRARY_PATH, so gpubind loads it through its real dlopen path.
//   {"init_error": 0,
//    "gpus": [{"bdfid": "0000:c1:00.0", "unique_id": "0x...", "name": "...", "serial": "...",
//              "busy": 95, "vram_used": 1024, "vram_total": 2048, "busy_error": 0,
//              "pcie": {"rates_gts": [2.5, 8, 16], "lanes": [16, 16, 16], "current": 2},
//              "xgmi": ["0000:c6:00.0"]}]}
// "xgmi" lists the GPUs one xGMI hop away (either side may list a pair); any other pair is PCIe.
// An "*_error" field is the rsmi_status_t that call returns (2 RSMI_STATUS_NOT_SUPPORTED...); a
// GPU without "numa" answers NOT_SUPPORTED for rsmi_topo_get_numa_node_number.
#include <rocm_smi/rocm_smi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "fake_config.hpp"

namespace {

nlohmann::json& config() {
  static nlohmann::json j = gpubind::fakes::read_config("GPUBIND_FAKE_ROCM_SMI");
  return j;
}

const nlohmann::json* gpu(uint32_t i) {
  if (config().is_discarded() || !config().contains("gpus") || i >= config()["gpus"].size()) return nullptr;
  return &config()["gpus"][i];
}

rsmi_status_t status_of(const nlohmann::json& j, const char* key) { return rsmi_status_t(j.value(key, 0)); }

}  // namespace

extern "C" {

rsmi_status_t rsmi_init(uint64_t) {
  if (config().is_discarded()) return RSMI_STATUS_UNKNOWN_ERROR;
  return status_of(config(), "init_error");
}
rsmi_status_t rsmi_shut_down() { return RSMI_STATUS_SUCCESS; }
rsmi_status_t rsmi_status_string(rsmi_status_t status, const char** out) {
  switch (status) {
    case RSMI_STATUS_SUCCESS: *out = "RSMI_STATUS_SUCCESS"; break;
    case RSMI_STATUS_NOT_SUPPORTED: *out = "RSMI_STATUS_NOT_SUPPORTED"; break;
    case RSMI_STATUS_INIT_ERROR: *out = "RSMI_STATUS_INIT_ERROR"; break;
    default: *out = "RSMI_STATUS_UNKNOWN_ERROR"; break;
  }
  return RSMI_STATUS_SUCCESS;
}
rsmi_status_t rsmi_version_get(rsmi_version_t* v) {
  v->major = 5;
  v->minor = 2;
  v->patch = 3;
  v->build = "fake";
  return RSMI_STATUS_SUCCESS;
}
rsmi_status_t rsmi_num_monitor_devices(uint32_t* n) {
  *n = config().contains("gpus") ? uint32_t(config()["gpus"].size()) : 0;
  return RSMI_STATUS_SUCCESS;
}
rsmi_status_t rsmi_dev_pci_id_get(uint32_t i, uint64_t* bdfid) {
  const auto* g = gpu(i);
  if (!g) return RSMI_STATUS_INVALID_ARGS;
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  std::sscanf(g->value("bdfid", "").c_str(), "%x:%x:%x.%x", &domain, &bus, &dev, &fn);
  *bdfid = (uint64_t(domain) << 32) | (bus << 8) | (dev << 3) | fn;
  return RSMI_STATUS_SUCCESS;
}
rsmi_status_t rsmi_dev_unique_id_get(uint32_t i, uint64_t* id) {
  const auto* g = gpu(i);
  if (!g) return RSMI_STATUS_INVALID_ARGS;
  *id = std::stoull(g->value("unique_id", "0"), nullptr, 16);
  return RSMI_STATUS_SUCCESS;
}
rsmi_status_t rsmi_dev_name_get(uint32_t i, char* name, size_t len) {
  const auto* g = gpu(i);
  if (!g) return RSMI_STATUS_INVALID_ARGS;
  std::snprintf(name, len, "%s", g->value("name", "").c_str());
  return RSMI_STATUS_SUCCESS;
}
rsmi_status_t rsmi_dev_busy_percent_get(uint32_t i, uint32_t* busy) {
  const auto* g = gpu(i);
  if (!g) return RSMI_STATUS_INVALID_ARGS;
  if (rsmi_status_t e = status_of(*g, "busy_error")) return e;
  *busy = g->value("busy", 0u);
  return RSMI_STATUS_SUCCESS;
}
rsmi_status_t rsmi_dev_memory_usage_get(uint32_t i, rsmi_memory_type_t type, uint64_t* used) {
  const auto* g = gpu(i);
  if (!g || type != RSMI_MEM_TYPE_VRAM) return RSMI_STATUS_INVALID_ARGS;
  *used = g->value("vram_used", uint64_t(0));
  return RSMI_STATUS_SUCCESS;
}
rsmi_status_t rsmi_dev_memory_total_get(uint32_t i, rsmi_memory_type_t type, uint64_t* total) {
  const auto* g = gpu(i);
  if (!g || type != RSMI_MEM_TYPE_VRAM) return RSMI_STATUS_INVALID_ARGS;
  *total = g->value("vram_total", uint64_t(0));
  return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_topo_get_numa_node_number(uint32_t i, uint32_t* node) {
  const auto* g = gpu(i);
  if (!g) return RSMI_STATUS_INVALID_ARGS;
  if (!g->contains("numa")) return RSMI_STATUS_NOT_SUPPORTED;
  *node = (*g)["numa"].get<uint32_t>();
  return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_dev_serial_number_get(uint32_t i, char* serial, uint32_t len) {
  const auto* g = gpu(i);
  if (!g) return RSMI_STATUS_INVALID_ARGS;
  if (!g->contains("serial")) return RSMI_STATUS_NOT_SUPPORTED;
  std::snprintf(serial, len, "%s", (*g)["serial"].get<std::string>().c_str());
  return RSMI_STATUS_SUCCESS;
}
rsmi_status_t rsmi_dev_pci_bandwidth_get(uint32_t i, rsmi_pcie_bandwidth_t* bw) {
  const auto* g = gpu(i);
  if (!g) return RSMI_STATUS_INVALID_ARGS;
  if (!g->contains("pcie")) return RSMI_STATUS_NOT_SUPPORTED;
  const auto& p = (*g)["pcie"];
  std::memset(bw, 0, sizeof *bw);
  bw->transfer_rate.num_supported = uint32_t(p["rates_gts"].size());
  bw->transfer_rate.current = p.value("current", 0u);
  for (size_t k = 0; k < p["rates_gts"].size() && k < RSMI_MAX_NUM_FREQUENCIES; ++k) {
    bw->transfer_rate.frequency[k] = uint64_t(p["rates_gts"][k].get<double>() * 1e9);
    bw->lanes[k] = p["lanes"][k].get<uint32_t>();
  }
  return RSMI_STATUS_SUCCESS;
}
rsmi_status_t rsmi_topo_get_link_type(uint32_t a, uint32_t b, uint64_t* hops, RSMI_IO_LINK_TYPE* type) {
  const auto *x = gpu(a), *y = gpu(b);
  if (!x || !y) return RSMI_STATUS_INVALID_ARGS;
  auto lists = [](const nlohmann::json& g, const nlohmann::json& other) {
    if (!g.contains("xgmi")) return false;
    for (const auto& p : g["xgmi"])
      if (p == other.value("bdfid", "")) return true;
    return false;
  };
  bool xgmi = lists(*x, *y) || lists(*y, *x);
  *type = xgmi ? RSMI_IOLINK_TYPE_XGMI : RSMI_IOLINK_TYPE_PCIEXPRESS;
  *hops = xgmi ? 1 : 2;
  return RSMI_STATUS_SUCCESS;
}

}  // extern "C"

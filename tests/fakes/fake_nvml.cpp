// A fake libnvidia-ml.so.1 for tests: the NVML entry points gpubind calls, answering from the JSON
// file named by GPUBIND_FAKE_NVML. Built by the test suite as build/tests/fake-nvml/libnvidia-ml.so.1;
// a test puts that directory on LD_LIBRARY_PATH, so gpubind loads it through its real dlopen path.
//   {"version": "12.535.54", "init_error": 0,
//    "gpus": [{"bus_id": "00000000:18:00.0", "uuid": "GPU-...", "name": "...", "utilization": 97,
//              "memory_used": 1024, "memory_total": 2048, "pcie_tx_kb": 10, "pcie_rx_kb": 20,
//              "utilization_error": 0}]}
// "mig": [...] lists a GPU's MIG instance UUIDs (MIG mode on). A GPU without "pcie_tx_kb" answers NOT_SUPPORTED for its PCIe throughput; one without "numa"
// or "cpus" (a cpulist) likewise for nvmlDeviceGetNumaNodeId and nvmlDeviceGetCpuAffinity.
// An "*_error" field is the NVML return code that call gives (3 NOT_SUPPORTED, 9 DRIVER_NOT_LOADED...).
#include <cstdlib>
#include <cstring>

#include <nlohmann/json.hpp>

#include "fake_config.hpp"

namespace {

nlohmann::json& config() {
  static nlohmann::json j = gpubind::fakes::read_config("GPUBIND_FAKE_NVML");
  return j;
}

int error_of(const nlohmann::json& j, const char* key) { return j.is_object() ? j.value(key, 0) : 0; }

// A handle is the GPU's index + 1, and for a MIG instance its slot + 1 in the bits above 16.
const nlohmann::json* device(void* d) {
  auto i = reinterpret_cast<uintptr_t>(d) & 0xffff;
  const auto& gpus = config()["gpus"];
  if (i == 0 || i > gpus.size()) return nullptr;
  return &gpus[i - 1];
}
unsigned mig_slot(void* d) { return unsigned(reinterpret_cast<uintptr_t>(d) >> 16); }

int copy(const std::string& s, char* out, unsigned len) {
  if (s.size() + 1 > len) return 7;  // NVML_ERROR_INSUFFICIENT_SIZE
  std::memcpy(out, s.c_str(), s.size() + 1);
  return 0;
}

struct PciInfo {
  char bus_id_legacy[16];
  unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
};

}  // namespace

extern "C" {

int nvmlInit_v2() {
  if (config().is_discarded()) return 999;  // NVML_ERROR_UNKNOWN
  return error_of(config(), "init_error");
}
int nvmlShutdown() { return 0; }
const char* nvmlErrorString(int r) {
  switch (r) {
    case 0: return "Success";
    case 3: return "Not Supported";
    case 9: return "Driver Not Loaded";
    case 999: return "Unknown Error";
    default: return "Fake NVML error";
  }
}
int nvmlSystemGetNVMLVersion(char* out, unsigned len) { return copy(config().value("version", "12.0"), out, len); }
int nvmlDeviceGetCount_v2(unsigned* n) {
  *n = unsigned(config().contains("gpus") ? config()["gpus"].size() : 0);
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void** d) {
  if (!config().contains("gpus") || i >= config()["gpus"].size()) return 2;  // INVALID_ARGUMENT
  *d = reinterpret_cast<void*>(uintptr_t(i) + 1);
  return 0;
}
int nvmlDeviceGetPciInfo_v3(void* d, PciInfo* p) {
  const auto* g = device(d);
  if (!g) return 2;
  std::memset(p, 0, sizeof *p);
  std::string id = g->value("bus_id", "");
  std::strncpy(p->bus_id, id.c_str(), sizeof p->bus_id - 1);
  return 0;
}
int nvmlDeviceGetUUID(void* d, char* out, unsigned len) {
  const auto* g = device(d);
  if (!g) return 2;
  if (unsigned slot = mig_slot(d)) return copy((*g)["mig"][slot - 1].get<std::string>(), out, len);
  return copy(g->value("uuid", ""), out, len);
}
// "mig": ["MIG-...", ...] turns MIG on; the count has one more slot than instances, left empty.
int nvmlDeviceGetMigMode(void* d, unsigned* current, unsigned* pending) {
  const auto* g = device(d);
  if (!g) return 2;
  *current = *pending = g->contains("mig") ? 1 : 0;
  return 0;
}
int nvmlDeviceGetMaxMigDeviceCount(void* d, unsigned* count) {
  const auto* g = device(d);
  if (!g) return 2;
  *count = g->contains("mig") ? unsigned((*g)["mig"].size()) + 1 : 0;
  return 0;
}
int nvmlDeviceGetMigDeviceHandleByIndex(void* d, unsigned index, void** mig) {
  const auto* g = device(d);
  if (!g || !g->contains("mig")) return 2;
  if (index >= (*g)["mig"].size()) return 6;  // NOT_FOUND: an empty slot
  *mig = reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(d) | (uintptr_t(index) + 1) << 16);
  return 0;
}
int nvmlDeviceGetName(void* d, char* out, unsigned len) {
  const auto* g = device(d);
  return g ? copy(g->value("name", ""), out, len) : 2;
}
int nvmlDeviceGetUtilizationRates(void* d, unsigned* util) {
  const auto* g = device(d);
  if (!g) return 2;
  if (int e = error_of(*g, "utilization_error")) return e;
  util[0] = g->value("utilization", 0u);
  util[1] = 0;
  return 0;
}
int nvmlDeviceGetMemoryInfo(void* d, unsigned long long* mem) {
  const auto* g = device(d);
  if (!g) return 2;
  mem[0] = g->value("memory_total", 0ull);
  mem[2] = g->value("memory_used", 0ull);
  mem[1] = mem[0] - mem[2];
  return 0;
}

int nvmlDeviceGetNumaNodeId(void* d, unsigned* node) {
  const auto* g = device(d);
  if (!g) return 2;
  if (!g->contains("numa")) return 3;
  *node = (*g)["numa"].get<unsigned>();
  return 0;
}
int nvmlDeviceGetCpuAffinity(void* d, unsigned words, unsigned long* mask) {
  const auto* g = device(d);
  if (!g) return 2;
  if (!g->contains("cpus")) return 3;
  std::memset(mask, 0, words * sizeof *mask);
  std::string list = (*g)["cpus"].get<std::string>();
  for (size_t at = 0; at < list.size();) {  // "0-55,112-167"
    size_t comma = list.find(',', at);
    std::string range = list.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    unsigned lo = unsigned(std::stoul(range)), hi = lo;
    if (auto dash = range.find('-'); dash != std::string::npos) hi = unsigned(std::stoul(range.substr(dash + 1)));
    for (unsigned c = lo; c <= hi && c / 64 < words; ++c) mask[c / 64] |= 1ul << (c % 64);
    at = comma == std::string::npos ? list.size() : comma + 1;
  }
  return 0;
}
int nvmlDeviceGetPcieThroughput(void* d, int counter, unsigned* kb) {
  const auto* g = device(d);
  if (!g) return 2;
  const char* key = counter == 0 ? "pcie_tx_kb" : "pcie_rx_kb";
  if (!g->contains(key)) return 3;  // NOT_SUPPORTED
  *kb = (*g)[key].get<unsigned>();
  return 0;
}

}  // extern "C"

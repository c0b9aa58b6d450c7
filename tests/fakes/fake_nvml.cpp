// A fake libnvidia-ml.so.1 for tests: the NVML entry points gpubind calls, answering from the JSON
// file named by GPUBIND_FAKE_NVML. Built by the test suite as build/tests/fake-nvml/libnvidia-ml.so.1;
// a test puts that directory on LD_LIBRARY_PATH, so gpubind loads it through its real dlopen path.
//   {"version": "12.535.54", "init_error": 0,
//    "gpus": [{"bus_id": "00000000:18:00.0", "uuid": "GPU-...", "name": "...", "serial": "...",
//              "utilization": 97, "memory_used": 1024, "memory_total": 2048, "pcie_tx_kb": 10,
//              "pcie_rx_kb": 20, "pcie": {"gen": 5, "max_gen": 5, "width": 16, "max_width": 16},
//              "nvlinks": [{"remote": "00000000:2A:00.0", "type": 0, "count": 2, "active": true}],
//              "processes": [{"pid": 4242, "memory": 1073741824}],
//              "errors": {"nvmlDeviceGetUtilizationRates": 3}}]}
// "mig": [...] lists a GPU's MIG instance UUIDs (MIG mode on). "nvlinks" fill the GPU's link
// slots in order (type 0 a GPU, 1 an IBM NPU, 2 an NVSwitch); slots past them are invalid, and a GPU
// without "nvlinks" answers NOT_SUPPORTED for every slot. "pcie_sample_ms" at the top makes each
// PCIe throughput call block that long, as the real one does (about 20 ms). A GPU
// without "pcie_tx_kb", "pcie", "serial", "memory_numa" or "cpus" (a cpulist) answers NOT_SUPPORTED for
// that call. "memory_numa" is what nvmlDeviceGetNumaNodeId answers: the node holding the GPU's own
// memory, which only GPUs that are NUMA nodes have (GH200, POWER9); an x86 GPU answers NOT_SUPPORTED. "errors" names calls and the NVML return code each gives for that GPU (3
// NOT_SUPPORTED, 9 DRIVER_NOT_LOADED, 15 GPU_IS_LOST...).
// Built a second time with GPUBIND_FAKE_NVML_OLD as build/tests/fake-nvml-old: an NVML from before
// MIG, nvmlDeviceGetNumaNodeId and nvmlDeviceGetNvLinkRemoteDeviceType (a driver of 2019).
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <nlohmann/json.hpp>

#include "fake_config.hpp"

namespace {

nlohmann::json& config() {
  static nlohmann::json j = gpubind::fakes::read_config("GPUBIND_FAKE_NVML");
  return j;
}

int error_of(const nlohmann::json& j, const char* key) { return j.is_object() ? j.value(key, 0) : 0; }
using gpubind::fakes::call_error;

// A handle is the GPU's index + 1, and for a MIG instance its slot + 1 in the bits above 16.
const nlohmann::json* device(void* d) {
  auto i = reinterpret_cast<uintptr_t>(d) & 0xffff;
  const auto& gpus = config()["gpus"];
  if (i == 0 || i > gpus.size()) return nullptr;
  return &gpus[i - 1];
}
unsigned mig_slot(void* d) { return unsigned(reinterpret_cast<uintptr_t>(d) >> 16); }

// A MIG instance of the fixture: its UUID, or {"uuid", "gi", "ci"}.
std::string mig_uuid(const nlohmann::json& m) { return m.is_string() ? m.get<std::string>() : m.value("uuid", ""); }

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

// The GPU's "processes" into `infos` (ProcessInfo or the two-field ProcessInfoV1 of old drivers).
template <class Info>
int running(void* d, const char* call, unsigned* count, Info* infos) {
  const auto* g = device(d);
  if (!g) return 2;
  if (int e = call_error(*g, call)) return e;
  const nlohmann::json procs = g->value("processes", nlohmann::json::array());
  if (procs.size() > *count) {
    *count = unsigned(procs.size());
    return 7;  // INSUFFICIENT_SIZE
  }
  *count = unsigned(procs.size());
  for (size_t i = 0; i < procs.size(); ++i) {
    std::memset(&infos[i], 0, sizeof infos[i]);
    infos[i].pid = procs[i].value("pid", 0u);
    infos[i].used_gpu_memory = procs[i].value("memory", ~0ull);
    if constexpr (requires { infos[i].gpu_instance_id; }) {
      // A real H200's NVML 580 gives a process on a whole GPU instance ids 0xFFFFFFFF, not 0.
      infos[i].gpu_instance_id = procs[i].value("gi", 0xffffffffu);
      infos[i].compute_instance_id = procs[i].value("ci", 0xffffffffu);
    }
  }
  return 0;
}
struct ProcessInfoV1 {
  unsigned pid;
  unsigned long long used_gpu_memory;
};
struct ProcessInfo {
  unsigned pid;
  unsigned long long used_gpu_memory;
  unsigned gpu_instance_id, compute_instance_id;
};
// The PCIe link's "gen", "max_gen", "width" or "max_width".
int pcie_link(void* d, const char* call, const char* key, unsigned* value) {
  const auto* g = device(d);
  if (!g) return 2;
  if (int e = call_error(*g, call)) return e;
  if (!g->contains("pcie")) return 3;
  *value = (*g)["pcie"].value(key, 0u);
  return 0;
}
// The "nvlinks" entry that fills link slot `link`, or nullptr past them.
const nlohmann::json* nvlink(const nlohmann::json& g, unsigned link) {
  unsigned slot = 0;
  for (const auto& l : g["nvlinks"]) {
    slot += l.value("count", 1u);
    if (link < slot) return &l;
  }
  return nullptr;
}
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
    case 15: return "GPU is lost";
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
  if (int e = call_error(*g, "nvmlDeviceGetPciInfo_v3")) return e;
  std::memset(p, 0, sizeof *p);
  std::string id = g->value("bus_id", "");
  std::strncpy(p->bus_id, id.c_str(), sizeof p->bus_id - 1);
  return 0;
}
int nvmlDeviceGetUUID(void* d, char* out, unsigned len) {
  const auto* g = device(d);
  if (!g) return 2;
  if (int e = call_error(*g, "nvmlDeviceGetUUID")) return e;
  if (unsigned slot = mig_slot(d)) return copy(mig_uuid((*g)["mig"][slot - 1]), out, len);
  return copy(g->value("uuid", ""), out, len);
}
#ifndef GPUBIND_FAKE_NVML_OLD
// "mig": ["MIG-...", ...] turns MIG on; the count has one more slot than instances, left empty.
// An instance may be {"uuid": "MIG-...", "gi": 1, "ci": 0}: its GPU and compute instance.
int nvmlDeviceGetMigMode(void* d, unsigned* current, unsigned* pending) {
  const auto* g = device(d);
  if (!g) return 2;
  if (int e = call_error(*g, "nvmlDeviceGetMigMode")) return e;
  *current = *pending = g->contains("mig") ? 1 : 0;
  return 0;
}
int nvmlDeviceGetMaxMigDeviceCount(void* d, unsigned* count) {
  const auto* g = device(d);
  if (!g) return 2;
  if (int e = call_error(*g, "nvmlDeviceGetMaxMigDeviceCount")) return e;
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
#endif
#ifndef GPUBIND_FAKE_NVML_OLD
// A MIG device's GPU instance ("gi") and compute instance ("ci"); INVALID_ARGUMENT on a whole GPU
// (as a real H200 answers), NOT_SUPPORTED for an instance the fixture gives no id.
static int instance_id(void* d, const char* key, unsigned* id) {
  const auto* g = device(d);
  unsigned slot = mig_slot(d);
  if (!g || !slot) return 2;
  const auto& m = (*g)["mig"][slot - 1];
  if (!m.is_object() || !m.contains(key)) return 3;
  *id = m[key].get<unsigned>();
  return 0;
}
int nvmlDeviceGetGpuInstanceId(void* d, unsigned* id) { return instance_id(d, "gi", id); }
int nvmlDeviceGetComputeInstanceId(void* d, unsigned* id) { return instance_id(d, "ci", id); }
#endif
int nvmlDeviceGetName(void* d, char* out, unsigned len) {
  const auto* g = device(d);
  if (!g) return 2;
  if (int e = call_error(*g, "nvmlDeviceGetName")) return e;
  return copy(g->value("name", ""), out, len);
}
int nvmlDeviceGetUtilizationRates(void* d, unsigned* util) {
  const auto* g = device(d);
  if (!g) return 2;
  if (int e = call_error(*g, "nvmlDeviceGetUtilizationRates")) return e;
  util[0] = g->value("utilization", 0u);
  util[1] = 0;
  return 0;
}
int nvmlDeviceGetMemoryInfo(void* d, unsigned long long* mem) {
  const auto* g = device(d);
  if (!g) return 2;
  if (int e = call_error(*g, "nvmlDeviceGetMemoryInfo")) return e;
  mem[0] = g->value("memory_total", 0ull);
  mem[2] = g->value("memory_used", 0ull);
  mem[1] = mem[0] - mem[2];
  return 0;
}

#ifndef GPUBIND_FAKE_NVML_OLD
int nvmlDeviceGetNumaNodeId(void* d, unsigned* node) {
  const auto* g = device(d);
  if (!g) return 2;
  if (int e = call_error(*g, "nvmlDeviceGetNumaNodeId")) return e;
  if (!g->contains("memory_numa")) return 3;
  *node = (*g)["memory_numa"].get<unsigned>();
  return 0;
}
#endif
int nvmlDeviceGetCpuAffinity(void* d, unsigned words, unsigned long* mask) {
  const auto* g = device(d);
  if (!g) return 2;
  if (int e = call_error(*g, "nvmlDeviceGetCpuAffinity")) return e;
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
  if (int e = call_error(*g, "nvmlDeviceGetPcieThroughput")) return e;
  const char* key = counter == 0 ? "pcie_tx_kb" : "pcie_rx_kb";
  if (!g->contains(key)) return 3;  // NOT_SUPPORTED
  // The real call samples the link before it answers: 21 ms per counter on an H200 with NVML 580.
  if (unsigned ms = config().value("pcie_sample_ms", 0u)) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  *kb = (*g)[key].get<unsigned>();
  return 0;
}

int nvmlDeviceGetSerial(void* d, char* out, unsigned len) {
  const auto* g = device(d);
  if (!g) return 2;
  if (int e = call_error(*g, "nvmlDeviceGetSerial")) return e;
  if (!g->contains("serial")) return 3;
  return copy((*g)["serial"].get<std::string>(), out, len);
}

int nvmlDeviceGetCurrPcieLinkGeneration(void* d, unsigned* v) { return pcie_link(d, "nvmlDeviceGetCurrPcieLinkGeneration", "gen", v); }
int nvmlDeviceGetMaxPcieLinkGeneration(void* d, unsigned* v) { return pcie_link(d, "nvmlDeviceGetMaxPcieLinkGeneration", "max_gen", v); }
int nvmlDeviceGetCurrPcieLinkWidth(void* d, unsigned* v) { return pcie_link(d, "nvmlDeviceGetCurrPcieLinkWidth", "width", v); }
int nvmlDeviceGetMaxPcieLinkWidth(void* d, unsigned* v) { return pcie_link(d, "nvmlDeviceGetMaxPcieLinkWidth", "max_width", v); }

int nvmlDeviceGetNvLinkState(void* d, unsigned link, unsigned* active) {
  const auto* g = device(d);
  if (!g) return 2;
  if (int e = call_error(*g, "nvmlDeviceGetNvLinkState")) return e;
  if (!g->contains("nvlinks")) return 3;
  const auto* l = nvlink(*g, link);
  if (!l) return 2;
  *active = l->value("active", true) ? 1 : 0;
  return 0;
}
int nvmlDeviceGetNvLinkRemotePciInfo_v2(void* d, unsigned link, PciInfo* p) {
  const auto* g = device(d);
  if (!g) return 2;
  if (int e = call_error(*g, "nvmlDeviceGetNvLinkRemotePciInfo_v2")) return e;
  if (!g->contains("nvlinks")) return 3;
  const auto* l = nvlink(*g, link);
  if (!l) return 2;
  std::memset(p, 0, sizeof *p);
  std::strncpy(p->bus_id, l->value("remote", "").c_str(), sizeof p->bus_id - 1);
  return 0;
}
int nvmlDeviceGetComputeRunningProcesses(void* d, unsigned* count, ProcessInfoV1* infos) {
  return running(d, "nvmlDeviceGetComputeRunningProcesses", count, infos);
}

#ifndef GPUBIND_FAKE_NVML_OLD
int nvmlDeviceGetComputeRunningProcesses_v3(void* d, unsigned* count, ProcessInfo* infos) {
  return running(d, "nvmlDeviceGetComputeRunningProcesses_v3", count, infos);
}
int nvmlDeviceGetNvLinkRemoteDeviceType(void* d, unsigned link, unsigned* type) {
  const auto* g = device(d);
  if (!g) return 2;
  if (int e = call_error(*g, "nvmlDeviceGetNvLinkRemoteDeviceType")) return e;
  if (!g->contains("nvlinks")) return 3;
  const auto* l = nvlink(*g, link);
  if (!l) return 2;
  *type = l->value("type", 0u);
  return 0;
}
#endif

}  // extern "C"

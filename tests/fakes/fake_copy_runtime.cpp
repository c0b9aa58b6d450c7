// A fake CUDA runtime (libcudart.so.12) or HIP runtime (libamdhip64.so.6) for tests of
// `topo --measure`: the copy and event calls gpubind makes, answering from the JSON file named by
// GPUBIND_FAKE_CUDART (GPUBIND_FAKE_HIP). Built twice by the test suite, with FAKE_PREFIX cuda or
// hip, into build/tests/fake-cudart/ and build/tests/fake-hip/; a test puts the directory on
// LD_LIBRARY_PATH so gpubind loads it through its real dlopen path.
//   {"init_error": 0,
//    "gpus": [{"bus_id": "0000:18:00.0", "gbps": {"0": 24.0, "1": 12.0}, "errors": {"Memcpy": 700}}]}
// A copy takes bytes / gbps of the NUMA node the source pages are on (get_mempolicy) on a
// per-device virtual clock, which the events read: the measured bandwidth is the fixture's,
// exactly. A copy from memory not registered (pinned), to a pointer not allocated on the current
// device, or from a node the fixture does not list fails with error 1 (invalid value).
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "fake_config.hpp"

#define FAKE_CAT2(a, b) a##b
#define FAKE_CAT(a, b) FAKE_CAT2(a, b)
#define FAKE_API(name) FAKE_CAT(FAKE_PREFIX, name)
#define FAKE_STR2(x) #x
#define FAKE_STR(x) FAKE_STR2(x)

namespace {

nlohmann::json& config() {
  static nlohmann::json j = gpubind::fakes::read_config(std::string(FAKE_STR(FAKE_PREFIX)) == "cuda" ? "GPUBIND_FAKE_CUDART" : "GPUBIND_FAKE_HIP");
  return j;
}
const nlohmann::json* gpu(int i) {
  if (config().is_discarded() || !config().contains("gpus") || i < 0 || size_t(i) >= config()["gpus"].size()) return nullptr;
  return &config()["gpus"][size_t(i)];
}
int failure(int device, const char* call) {
  const nlohmann::json* g = gpu(device);
  return g ? gpubind::fakes::call_error(*g, call) : 0;
}

std::mutex m;
thread_local int current = 0;
std::map<const void*, int> device_buffers;    // device pointer -> device
std::map<uintptr_t, size_t> pinned;           // host range start -> length
std::map<int, double> clock_ms;               // per device
std::map<void*, double> events;               // event -> clock when recorded

bool is_pinned(const void* p, size_t n) {
  auto a = reinterpret_cast<uintptr_t>(p);
  auto it = pinned.upper_bound(a);
  if (it == pinned.begin()) return false;
  --it;
  return a >= it->first && a + n <= it->first + it->second;
}

}  // namespace

extern "C" {

int FAKE_API(GetDeviceCount)(int* n) {
  if (config().is_discarded()) return 999;
  if (int e = config().value("init_error", 0)) return e;
  *n = config().contains("gpus") ? int(config()["gpus"].size()) : 0;
  return 0;
}
int FAKE_API(SetDevice)(int d) {
  if (!gpu(d)) return 101;  // invalid device
  current = d;
  return failure(d, "SetDevice");
}
int FAKE_API(DeviceGetPCIBusId)(char* out, int len, int d) {
  if (!gpu(d)) return 101;
  std::snprintf(out, size_t(len), "%s", gpu(d)->value("bus_id", "").c_str());
  return 0;
}
int FAKE_API(Malloc)(void** p, size_t n) {
  if (int e = failure(current, "Malloc")) return e;
  std::lock_guard<std::mutex> lock(m);
  *p = new char[n];
  device_buffers[*p] = current;
  return 0;
}
int FAKE_API(Free)(void* p) {
  std::lock_guard<std::mutex> lock(m);
  if (!device_buffers.erase(p)) return 1;
  delete[] static_cast<char*>(p);
  return 0;
}
int FAKE_API(HostRegister)(void* p, size_t n, unsigned) {
  std::lock_guard<std::mutex> lock(m);
  pinned[reinterpret_cast<uintptr_t>(p)] = n;
  return 0;
}
int FAKE_API(HostUnregister)(void* p) {
  std::lock_guard<std::mutex> lock(m);
  return pinned.erase(reinterpret_cast<uintptr_t>(p)) ? 0 : 1;
}
int FAKE_API(Memcpy)(void* dst, const void* src, size_t n, int kind) {
  if (int e = failure(current, "Memcpy")) return e;
  std::lock_guard<std::mutex> lock(m);
  auto it = device_buffers.find(dst);
  if (kind != 1 || it == device_buffers.end() || it->second != current || !is_pinned(src, n)) return 1;
  int node = -1;
  if (::syscall(SYS_get_mempolicy, &node, nullptr, 0, src, 3ul /* MPOL_F_NODE | MPOL_F_ADDR */) != 0) return 1;
  const nlohmann::json& rates = (*gpu(current))["gbps"];
  if (!rates.contains(std::to_string(node))) return 1;
  clock_ms[current] += double(n) / (rates[std::to_string(node)].get<double>() * 1e9) * 1000.0;
  return 0;
}
int FAKE_API(EventCreate)(void** e) {
  std::lock_guard<std::mutex> lock(m);
  *e = new char;
  events[*e] = 0;
  return 0;
}
int FAKE_API(EventRecord)(void* e, void*) {
  std::lock_guard<std::mutex> lock(m);
  if (!events.count(e)) return 400;  // invalid resource handle
  events[e] = clock_ms[current];
  return 0;
}
int FAKE_API(EventSynchronize)(void* e) {
  std::lock_guard<std::mutex> lock(m);
  return events.count(e) ? 0 : 400;
}
int FAKE_API(EventElapsedTime)(float* ms, void* start, void* stop) {
  std::lock_guard<std::mutex> lock(m);
  if (!events.count(start) || !events.count(stop)) return 400;
  *ms = float(events[stop] - events[start]);
  return 0;
}
int FAKE_API(EventDestroy)(void* e) {
  std::lock_guard<std::mutex> lock(m);
  if (!events.erase(e)) return 400;
  delete static_cast<char*>(e);
  return 0;
}
const char* FAKE_API(GetErrorString)(int e) {
  switch (e) {
    case 1: return "invalid argument";
    case 100: return "no CUDA-capable device is detected";
    case 101: return "invalid device ordinal";
    case 700: return "an illegal memory access was encountered";
    default: return "fake runtime error";
  }
}

}  // extern "C"

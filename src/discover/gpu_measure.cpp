#include "discover/gpu_measure.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <thread>

#include "discover/gpu_runtime.hpp"
#include "discover/runtime_library.hpp"
#include "sys/binder.hpp"
#include "sys/environment.hpp"
#include "sys/node_memory.hpp"

namespace gpubind::discover {

namespace {

// The runtime calls a copy needs. The CUDA runtime's and HIP's have the same shapes and the same
// names after their prefix ("cuda", "hip"); declared here from their public API references.
struct CopyApi {
  using Err = int;  // cudaError_t / hipError_t: 0 success
  Err (*get_count)(int*) = nullptr;
  Err (*set_device)(int) = nullptr;
  Err (*bus_id)(char*, int, int) = nullptr;  // DeviceGetPCIBusId(text, length, device)
  Err (*malloc)(void**, size_t) = nullptr;
  Err (*free)(void*) = nullptr;
  Err (*host_register)(void*, size_t, unsigned) = nullptr;
  Err (*host_unregister)(void*) = nullptr;
  Err (*memcpy)(void*, const void*, size_t, int) = nullptr;
  Err (*event_create)(void**) = nullptr;
  Err (*event_record)(void*, void*) = nullptr;  // (event, stream): the default stream
  Err (*event_synchronize)(void*) = nullptr;
  Err (*event_elapsed)(float*, void*, void*) = nullptr;  // milliseconds from start to stop
  Err (*event_destroy)(void*) = nullptr;
  const char* (*error_string)(Err) = nullptr;
};
constexpr int kMemcpyHostToDevice = 1;     // cudaMemcpyHostToDevice, hipMemcpyHostToDevice
constexpr unsigned kHostRegisterPortable = 1;  // pinned for every device's context

struct Runtime {
  const char* label;  // "CUDA runtime"
  const char* prefix;
  const char* variable;  // names the library file instead of the candidates
  std::vector<std::string> files;
};

Result<CopyApi> load(const Runtime& rt) {
  std::optional<std::string> chosen = sys::env_value(rt.variable);
  Library lib(rt.label, chosen && !chosen->empty() ? std::vector<std::string>{*chosen} : rt.files);
  CopyApi api;
  auto name = [&](const char* suffix) { return std::string(rt.prefix) + suffix; };
  for (Status s : {lib.bind(api.get_count, name("GetDeviceCount").c_str()), lib.bind(api.set_device, name("SetDevice").c_str()),
                   lib.bind(api.bus_id, name("DeviceGetPCIBusId").c_str()), lib.bind(api.malloc, name("Malloc").c_str()),
                   lib.bind(api.free, name("Free").c_str()), lib.bind(api.host_register, name("HostRegister").c_str()),
                   lib.bind(api.host_unregister, name("HostUnregister").c_str()), lib.bind(api.memcpy, name("Memcpy").c_str()),
                   lib.bind(api.event_create, name("EventCreate").c_str()), lib.bind(api.event_record, name("EventRecord").c_str()),
                   lib.bind(api.event_synchronize, name("EventSynchronize").c_str()),
                   lib.bind(api.event_elapsed, name("EventElapsedTime").c_str()),
                   lib.bind(api.event_destroy, name("EventDestroy").c_str()), lib.bind(api.error_string, name("GetErrorString").c_str())})
    if (!s) return s.error();
  return api;
}

// "CUDA runtime: cudaMemcpy: invalid argument (1)": a failed call in the runtime's own words.
std::string runtime_error(const Runtime& rt, const CopyApi& api, const char* what, int e) {
  const char* text = api.error_string ? api.error_string(e) : nullptr;
  return std::string(rt.label) + ": " + rt.prefix + what + ": " + (text ? text : "error") + " (" + std::to_string(e) + ")";
}

// One device of the runtime: its index, PCI address, a device buffer and two events.
struct Device {
  int index = 0;
  std::string pci;
  void* buffer = nullptr;
  void* start = nullptr;
  void* stop = nullptr;
};

// A runtime call that failed: its name after the prefix ("Memcpy") and its error code.
struct Failed {
  const char* call;
  int error;
};

// Makes the device current and gives it a buffer of `bytes` and two events.
std::optional<Failed> prepare(const CopyApi& api, Device& d, size_t bytes) {
  if (int e = api.set_device(d.index)) return Failed{"SetDevice", e};
  if (int e = api.malloc(&d.buffer, bytes)) return Failed{"Malloc", e};
  if (int e = api.event_create(&d.start)) return Failed{"EventCreate", e};
  if (int e = api.event_create(&d.stop)) return Failed{"EventCreate", e};
  return std::nullopt;
}

// Frees what prepare made (whatever part of it it made).
void release(const CopyApi& api, Device& d) {
  if (d.buffer) api.free(d.buffer);
  if (d.start) api.event_destroy(d.start);
  if (d.stop) api.event_destroy(d.stop);
  d.buffer = d.start = d.stop = nullptr;
}

// `copies` host-to-device copies of `bytes` at `host` (pinned) to the device's buffer, timed
// with its events on the GPU's timeline: their milliseconds in `ms`.
std::optional<Failed> timed_copies(const CopyApi& api, const Device& d, const void* host, size_t bytes, int copies, float& ms) {
  if (int e = api.set_device(d.index)) return Failed{"SetDevice", e};
  if (int e = api.event_record(d.start, nullptr)) return Failed{"EventRecord", e};
  for (int c = 0; c < copies; ++c)
    if (int e = api.memcpy(d.buffer, host, bytes, kMemcpyHostToDevice)) return Failed{"Memcpy", e};
  if (int e = api.event_record(d.stop, nullptr)) return Failed{"EventRecord", e};
  if (int e = api.event_synchronize(d.stop)) return Failed{"EventSynchronize", e};
  if (int e = api.event_elapsed(&ms, d.start, d.stop)) return Failed{"EventElapsedTime", e};
  return std::nullopt;
}

class Measurer {
 public:
  Measurer(const Runtime& rt, const CopyApi& api, const MeasureOptions& o, Measurements& out)
      : m_rt(rt), m_api(api), m_o(o), m_out(out) {}

  void run() {
    int count = 0;
    if (int e = m_api.get_count(&count); e != 0) return note("", "GetDeviceCount", e);
    for (int i = 0; i < count && i < 4096; ++i) {
      Device d;
      d.index = i;
      char bus[64] = {};
      if (int e = m_api.bus_id(bus, sizeof bus, i); e != 0) {
        note("device " + std::to_string(i), "DeviceGetPCIBusId", e);
        continue;
      }
      d.pci = normalize_bus_id(bus);
      if (auto f = prepare(m_api, d, m_o.bytes)) {
        failed(d, *f);
        release(m_api, d);
        continue;
      }
      m_devices.push_back(d);
      m_out.gpus.push_back({d.pci, m_rt.label, {}});
    }
    for (const MeasureOptions::Node& n : m_o.nodes) from_node(n);
    for (Device& d : m_devices) release(m_api, d);
  }

 private:
  // Every device's copies from one node's memory, by a thread running on that node's CPUs.
  void from_node(const MeasureOptions::Node& n) {
    std::thread worker([&] {
      if (!n.cpus.empty()) (void)sys::real_binder()->set_cpu_affinity(n.cpus);  // where it runs matters little: DMA
      auto host = sys::memory_on_node(m_o.bytes, n.os_index);
      if (!host) return m_out.notes.push_back("no measurement from NUMA node " + std::to_string(n.os_index) + ": " + host.error().message());
      if (int e = m_api.host_register(host->data(), host->size(), kHostRegisterPortable); e != 0)
        return note("NUMA node " + std::to_string(n.os_index), "HostRegister", e);
      for (size_t k = 0; k < m_devices.size(); ++k) {
        const Device& d = m_devices[k];
        float ms = 0;
        // One untimed copy first (the first pays for mappings the others reuse).
        if (int e = m_api.set_device(d.index)) {
          failed(d, {"SetDevice", e});
          continue;
        }
        if (int e = m_api.memcpy(d.buffer, host->data(), host->size(), kMemcpyHostToDevice)) {
          failed(d, {"Memcpy", e});
          continue;
        }
        if (auto f = timed_copies(m_api, d, host->data(), host->size(), m_o.copies, ms)) {
          failed(d, *f);
          continue;
        }
        // Whole bytes per second (no libm: the binary links libc only).
        if (ms > 0) m_out.gpus[m_first + k].bytes_per_second[n.os_index] = double(uint64_t(double(host->size()) * m_o.copies / (double(ms) / 1000.0) + 0.5));
      }
      m_api.host_unregister(host->data());
    });
    worker.join();
  }

  void failed(const Device& d, const Failed& f) { note("GPU " + d.pci, f.call, f.error); }
  void note(const std::string& who, const char* what, int e) {
    m_out.notes.push_back("no measurement" + (who.empty() ? "" : " for " + who) + ": " + runtime_error(m_rt, m_api, what, e));
  }
  const Runtime& m_rt;
  const CopyApi& m_api;
  const MeasureOptions& m_o;
  Measurements& m_out;
  std::vector<Device> m_devices;
  size_t m_first = m_out.gpus.size();  // this runtime's first GPU in m_out.gpus
};

const Runtime& cuda_runtime() {
  static const Runtime rt{"CUDA runtime", "cuda", "GPUBIND_CUDA_RUNTIME",
                          {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so",
                           "/usr/local/cuda/lib64/libcudart.so"}};
  return rt;
}

const Runtime& hip_runtime() {
  static const Runtime rt{"HIP runtime", "hip", "GPUBIND_HIP_RUNTIME",
                          {"libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so",
                           "/opt/rocm/lib/libamdhip64.so"}};
  return rt;
}

}  // namespace

struct GpuCopier::State {
  const Runtime* rt = nullptr;
  CopyApi api;
  Device device;
  void* host = nullptr;
  size_t bytes = 0;
  bool pinned = false;
};

GpuCopier::GpuCopier(std::unique_ptr<State> s) : m_s(std::move(s)) {}

GpuCopier::~GpuCopier() {
  if (m_s->pinned) m_s->api.host_unregister(m_s->host);
  release(m_s->api, m_s->device);
}

Result<std::unique_ptr<GpuCopier>> GpuCopier::open(topo::Vendor vendor, const std::string& pci, void* host, size_t bytes) {
  if (vendor != topo::Vendor::nvidia && vendor != topo::Vendor::amd)
    return Error{"GPU " + pci, std::string("no copy runtime for a ") + topo::to_string(vendor) + " GPU (CUDA or HIP)"};
  auto s = std::make_unique<State>();
  s->rt = vendor == topo::Vendor::nvidia ? &cuda_runtime() : &hip_runtime();
  auto api = load(*s->rt);
  if (!api) return api.error();
  s->api = *api;
  s->host = host;
  s->bytes = bytes;
  // The copier owns what it made from here on: an early return releases it.
  std::unique_ptr<GpuCopier> c(new GpuCopier(std::move(s)));
  State& st = *c->m_s;
  auto failed = [&](const Failed& f) { return Error{"GPU " + pci, runtime_error(*st.rt, st.api, f.call, f.error)}; };
  int count = 0;
  if (int e = st.api.get_count(&count); e != 0) return failed({"GetDeviceCount", e});
  int found = -1;
  for (int i = 0; i < count && i < 4096 && found < 0; ++i) {
    char bus[64] = {};
    if (st.api.bus_id(bus, sizeof bus, i) == 0 && normalize_bus_id(bus) == normalize_bus_id(pci)) found = i;
  }
  if (found < 0) return Error{"GPU " + pci, std::string(st.rt->label) + " sees no device at this PCI address"};
  st.device.index = found;
  st.device.pci = normalize_bus_id(pci);
  if (auto f = prepare(st.api, st.device, bytes)) return failed(*f);
  if (int e = st.api.host_register(host, bytes, kHostRegisterPortable); e != 0) return failed({"HostRegister", e});
  st.pinned = true;
  return c;
}

Result<double> GpuCopier::copy() {
  State& s = *m_s;
  float ms = 0;
  if (auto f = timed_copies(s.api, s.device, s.host, s.bytes, 1, ms))
    return Error{"GPU copy", runtime_error(*s.rt, s.api, f->call, f->error)};
  return double(ms);
}

Measurements measure_copy_bandwidth(bool nvidia, bool amd, const MeasureOptions& o) {
  Measurements out;
  for (auto [rtp, wanted] : {std::pair{&cuda_runtime(), nvidia}, std::pair{&hip_runtime(), amd}}) {
    if (!wanted) continue;
    const Runtime& rt = *rtp;
    auto api = load(rt);
    if (!api) {
      out.notes.push_back("no measurement: " + api.error().message());
      continue;
    }
    Measurer(rt, *api, o, out).run();
  }
  return out;
}

}  // namespace gpubind::discover

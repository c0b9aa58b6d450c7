#include "discover/gpu_measure.hpp"

#include <cstdint>
#include <memory>
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
      if (!call(d, "SetDevice", m_api.set_device(i)) || !call(d, "Malloc", m_api.malloc(&d.buffer, m_o.bytes)) ||
          !call(d, "EventCreate", m_api.event_create(&d.start)) || !call(d, "EventCreate", m_api.event_create(&d.stop))) {
        release(d);
        continue;
      }
      m_devices.push_back(d);
      m_out.gpus.push_back({d.pci, m_rt.label, {}});
    }
    for (const MeasureOptions::Node& n : m_o.nodes) from_node(n);
    for (Device& d : m_devices) release(d);
  }

 private:
  // Every device's copies from one node's memory, by a thread running on that node's CPUs.
  void from_node(const MeasureOptions::Node& n) {
    std::thread worker([&] {
      if (!n.cpus.empty()) (void)sys::real_binder()->set_cpu_affinity(n.cpus);  // where it runs matters little: DMA
      auto host = sys::NodeBuffer::allocate(m_o.bytes, n.os_index);
      if (!host) return m_out.notes.push_back("no measurement from NUMA node " + std::to_string(n.os_index) + ": " + host.error().message());
      if (int e = m_api.host_register(host->data(), host->size(), kHostRegisterPortable); e != 0)
        return note("NUMA node " + std::to_string(n.os_index), "HostRegister", e);
      for (size_t k = 0; k < m_devices.size(); ++k) {
        const Device& d = m_devices[k];
        float ms = 0;
        if (!call(d, "SetDevice", m_api.set_device(d.index)) ||
            !call(d, "Memcpy", m_api.memcpy(d.buffer, host->data(), host->size(), kMemcpyHostToDevice)) ||
            !call(d, "EventRecord", m_api.event_record(d.start, nullptr)))
          continue;
        bool copied = true;
        for (int c = 0; c < m_o.copies && copied; ++c)
          copied = call(d, "Memcpy", m_api.memcpy(d.buffer, host->data(), host->size(), kMemcpyHostToDevice));
        if (!copied || !call(d, "EventRecord", m_api.event_record(d.stop, nullptr)) ||
            !call(d, "EventSynchronize", m_api.event_synchronize(d.stop)) ||
            !call(d, "EventElapsedTime", m_api.event_elapsed(&ms, d.start, d.stop)))
          continue;
        // Whole bytes per second (no libm: the binary links libc only).
        if (ms > 0) m_out.gpus[m_first + k].bytes_per_second[n.os_index] = double(uint64_t(double(host->size()) * m_o.copies / (double(ms) / 1000.0) + 0.5));
      }
      m_api.host_unregister(host->data());
    });
    worker.join();
  }

  bool call(const Device& d, const char* what, int e) {
    if (e == 0) return true;
    note("GPU " + d.pci, what, e);
    return false;
  }
  void note(const std::string& who, const char* what, int e) {
    m_out.notes.push_back("no measurement" + (who.empty() ? "" : " for " + who) + ": " + runtime_error(m_rt, m_api, what, e));
  }
  void release(Device& d) {
    if (d.buffer) m_api.free(d.buffer);
    if (d.start) m_api.event_destroy(d.start);
    if (d.stop) m_api.event_destroy(d.stop);
    d = Device{};
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
  int device = 0;
  void* host = nullptr;
  size_t bytes = 0;
  void* buffer = nullptr;
  void* start = nullptr;
  void* stop = nullptr;
  bool pinned = false;
};

GpuCopier::GpuCopier(std::unique_ptr<State> s) : m_s(std::move(s)) {}

GpuCopier::~GpuCopier() {
  State& s = *m_s;
  if (s.pinned) s.api.host_unregister(s.host);
  if (s.buffer) s.api.free(s.buffer);
  if (s.start) s.api.event_destroy(s.start);
  if (s.stop) s.api.event_destroy(s.stop);
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
  auto failed = [&](const char* what, int e) { return Error{"GPU " + pci, runtime_error(*st.rt, st.api, what, e)}; };
  int count = 0;
  if (int e = st.api.get_count(&count); e != 0) return failed("GetDeviceCount", e);
  int found = -1;
  for (int i = 0; i < count && i < 4096 && found < 0; ++i) {
    char bus[64] = {};
    if (st.api.bus_id(bus, sizeof bus, i) == 0 && normalize_bus_id(bus) == normalize_bus_id(pci)) found = i;
  }
  if (found < 0) return Error{"GPU " + pci, std::string(st.rt->label) + " sees no device at this PCI address"};
  st.device = found;
  if (int e = st.api.set_device(found); e != 0) return failed("SetDevice", e);
  if (int e = st.api.malloc(&st.buffer, bytes); e != 0) return failed("Malloc", e);
  if (int e = st.api.event_create(&st.start); e != 0) return failed("EventCreate", e);
  if (int e = st.api.event_create(&st.stop); e != 0) return failed("EventCreate", e);
  if (int e = st.api.host_register(host, bytes, kHostRegisterPortable); e != 0) return failed("HostRegister", e);
  st.pinned = true;
  return c;
}

Result<double> GpuCopier::copy() {
  State& s = *m_s;
  float ms = 0;
  auto failed = [&](const char* what, int e) { return Error{"GPU copy", runtime_error(*s.rt, s.api, what, e)}; };
  if (int e = s.api.set_device(s.device); e != 0) return failed("SetDevice", e);
  if (int e = s.api.event_record(s.start, nullptr); e != 0) return failed("EventRecord", e);
  if (int e = s.api.memcpy(s.buffer, s.host, s.bytes, kMemcpyHostToDevice); e != 0) return failed("Memcpy", e);
  if (int e = s.api.event_record(s.stop, nullptr); e != 0) return failed("EventRecord", e);
  if (int e = s.api.event_synchronize(s.stop); e != 0) return failed("EventSynchronize", e);
  if (int e = s.api.event_elapsed(&ms, s.start, s.stop); e != 0) return failed("EventElapsedTime", e);
  return double(ms);
}

Measurements measure_copy_bandwidth(bool nvidia, bool amd, const MeasureOptions& o) {
  Measurements out;
  for (const Runtime* rtp : {&cuda_runtime(), &hip_runtime()}) {
    const Runtime& rt = *rtp;
    if ((rtp == &cuda_runtime() && !nvidia) || (rtp == &hip_runtime() && !amd)) continue;
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

#pragma once
// topo --measure: how fast each GPU takes host-to-device copies from pinned memory on each NUMA
// node, through the CUDA runtime (libcudart) or HIP (libamdhip64) loaded with dlopen, never
// linked. Timed with the runtime's events, on the GPU's own timeline. The node a GPU is really
// closest to is then measured rather than believed (topo::cross_check_measured judges it).
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "topo/cross_check.hpp"
#include "topo/topology.hpp"
#include "util/cpuset.hpp"
#include "util/result.hpp"

namespace gpubind::discover {

struct MeasureOptions {
  struct Node {
    unsigned os_index = 0;
    CpuSet cpus;  // the copying thread runs there (empty: where it is)
  };
  std::vector<Node> nodes;   // the NUMA nodes to copy from
  size_t bytes = 64u << 20;  // per copy
  int copies = 5;            // timed, after one untimed
};

struct Measurements {
  std::vector<topo::MeasuredGpu> gpus;  // every GPU the runtime sees
  std::vector<std::string> notes;       // what could not be measured, one line each
};

// Measures with the runtime of each vendor asked for; a runtime that cannot be loaded or started
// is a note ("no measurement: CUDA runtime: ...").
Measurements measure_copy_bandwidth(bool nvidia, bool amd, const MeasureOptions& o);

// bench --gpu: one rank's host buffer copied to its GPU every step through the same runtime,
// each copy timed on the GPU's timeline (its events), so pages on a remote node show as a slower
// copy wherever the CPU ran.
class GpuCopier {
 public:
  // Loads the runtime of `vendor` (NVIDIA: CUDA, AMD: HIP), opens the device at PCI address
  // `pci`, allocates `bytes` on it and pins `host` (which stays the caller's).
  static Result<std::unique_ptr<GpuCopier>> open(topo::Vendor vendor, const std::string& pci, void* host, size_t bytes);
  GpuCopier(const GpuCopier&) = delete;
  GpuCopier& operator=(const GpuCopier&) = delete;
  ~GpuCopier();
  // Copies the whole buffer to the device; the copy's time on the GPU in milliseconds.
  Result<double> copy();

  struct State;

 private:
  explicit GpuCopier(std::unique_ptr<State> s);
  std::unique_ptr<State> m_s;
};

}  // namespace gpubind::discover

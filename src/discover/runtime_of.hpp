#pragma once
// What gpubind's two GPU runtime libraries share (nvml_runtime.cpp, rocm_smi_runtime.cpp): the
// view a runtime keeps with each GPU's library handle. Internal to src/discover.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "discover/gpu_runtime.hpp"

namespace gpubind::discover::detail {

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

}  // namespace gpubind::discover::detail

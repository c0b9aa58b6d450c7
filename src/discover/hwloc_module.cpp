// The entry point of gpubind-hwloc.so, the module the CLI loads when it must discover a topology.
#include "discover/hwloc_loader.hpp"

extern "C" __attribute__((visibility("default"))) const gpubind::discover::HwlocApi* gpubind_hwloc_api_v1() {
  static const gpubind::discover::HwlocApi api{1, &gpubind::discover::hwloc_backend_load,
                                               &gpubind::discover::hwloc_backend_version};
  return &api;
}

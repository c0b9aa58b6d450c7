// hwloc loaded when needed: the CLI's `exec` on a cached topology (every rank of every job) then
// maps neither libhwloc nor libudev (docs/PERFORMANCE.md). The module gpubind-hwloc.so is looked
// for beside the executable (the build tree), in ../LIBDIR/gpubind relative to it (a relocated
// install) and in the configured LIBDIR/gpubind.
#include <vector>

#include "discover/hwloc_loader.hpp"
#include "sys/module.hpp"

namespace gpubind::discover {

namespace {

Result<const HwlocApi*> api() {
  static constexpr sys::ModuleSpec kSpec{"gpubind-hwloc.so", "gpubind_hwloc_api_v1", "hwloc discovery", "hwloc discovery",
                                         "hwloc", "a topology file or --topology example:NAME works without it"};
  return sys::module_api<HwlocApi>(kSpec, [](const HwlocApi& a) { return a.abi == 1 && a.load && a.version; });
}

}  // namespace

Result<topo::Topology> load_with_hwloc(const HwlocInput& in) {
  auto a = api();
  if (!a) return a.error();
  return (*a)->load(in);
}

Result<std::string> hwloc_version() {
  auto a = api();
  if (!a) return a.error();
  return (*a)->version();
}

}  // namespace gpubind::discover

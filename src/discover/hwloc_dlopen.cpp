// hwloc loaded when needed: the CLI's `exec` on a cached topology (every rank of every job) then
// maps neither libhwloc nor libudev (docs/PERFORMANCE.md). The module gpubind-hwloc.so is looked
// for beside the executable (the build tree), in ../LIBDIR/gpubind relative to it (a relocated
// install) and in the configured LIBDIR/gpubind.
#include <vector>

#include "discover/hwloc_loader.hpp"
#include "sys/module.hpp"

namespace gpubind::discover {

namespace {

constexpr const char* kModule = "gpubind-hwloc.so";

Result<const HwlocApi*> api() {
  static const HwlocApi* loaded = nullptr;
  if (loaded) return loaded;
  auto m = sys::find_module_symbol(kModule, "gpubind_hwloc_api_v1");
  if (!m && m.error().kind == ErrorKind::not_found)
    return Error{"hwloc discovery", std::string("the module ") + kModule + " is " + m.error().why +
                                        "; a topology file or --topology example:NAME works without it"};
  if (!m) return Error{m.error().what, "cannot load hwloc discovery: " + m.error().why};
  using Entry = const HwlocApi* (*)();
  const HwlocApi* a = reinterpret_cast<Entry>(m->address)();
  if (!a || a->abi != 1 || !a->load || !a->version) return Error{m->path, "not a gpubind hwloc module of this version"};
  loaded = a;
  return loaded;
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

// hwloc linked in: tests, benchmarks and the SPANK plugin (slurmstepd pays no per-rank start-up).
#include "discover/hwloc_loader.hpp"

namespace gpubind::discover {

Result<topo::Topology> load_with_hwloc(const HwlocInput& in) { return hwloc_backend_load(in); }

Result<std::string> hwloc_version() { return hwloc_backend_version(); }

}  // namespace gpubind::discover

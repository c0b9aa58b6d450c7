#pragma once
// The only hwloc user: turns what hwloc sees (live, XML, synthetic, a gathered /sys+/proc tree)
// into a topo::Topology.
#include <string>

#include "topo/topology.hpp"
#include "util/result.hpp"

namespace gpubind::discover {

struct HwlocInput {
  enum class Kind { live, xml_file, synthetic, fsroot };
  Kind kind = Kind::live;
  std::string value;   // file, synthetic description or directory; unused for live
  std::string origin;  // recorded in Topology::origin
  // Where GPUs and NICs come from: hwloc's I/O discovery, or gpubind's sysfs scan of the same
  // root (live default: much faster, see sysfs_pci.hpp). XML and synthetic inputs only have hwloc's.
  enum class Devices { hwloc, sysfs };
  Devices devices = Devices::hwloc;
};

Result<topo::Topology> load_with_hwloc(const HwlocInput& in);

// hwloc's own version string, for caches and --version.
std::string hwloc_version();

}  // namespace gpubind::discover

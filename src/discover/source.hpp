#pragma once
// Entry point of the discover layer: one --topology SRC string in, one Topology out.
//   ""                       this machine (live)
//   FILE.xml                 hwloc XML (1.x or 2.x export) or NCCL/RCCL topology (<system>)
//   FILE.json                gpubind's own JSON (topo --format json)
//   DIR                      a gathered /sys and /proc tree (hwloc-gather-topology)
//   FILE.tar.bz2 (.tar.gz...) the same tree as an archive
//   "pack:2 numa:2 core:8 pu:2"  an hwloc synthetic description
//   example:NAME             a machine built into gpubind (data/examples/NAME.json)
#include <string>

#include "topo/topology.hpp"
#include "util/result.hpp"

namespace gpubind::discover {

enum class SourceKind { live, hwloc_xml, nccl_xml, gpubind_json, fsroot, archive, synthetic, example };
const char* to_string(SourceKind k);

// What SRC is, decided from the file system and the file's first element; no topology is built.
Result<SourceKind> detect_source(const std::string& spec);

Result<topo::Topology> load_topology(const std::string& spec);

// Names of the built-in example machines, comma-separated.
std::string example_names();

}  // namespace gpubind::discover

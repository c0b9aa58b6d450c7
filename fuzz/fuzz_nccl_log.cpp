// NCCL's INFO log as `check --nccl-log` reads it (a user's file, anyone's text), judged against a
// DGX H100: every process found gets one verdict, and the judge never plans a rank it cannot.
#include <cstddef>
#include <cstdint>
#include <string>

#include "check/nccl_check.hpp"
#include "discover/source.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const gpubind::topo::Topology dgx = *gpubind::discover::load_topology("example:dgx-h100");
  std::string text(reinterpret_cast<const char*>(data), size);
  gpubind::check::NcclLog log = gpubind::check::parse_nccl_logs({{"fuzz", text}});
  gpubind::check::NcclReport r = gpubind::check::judge_nccl_log(dgx, log, {});
  gpubind::fuzz::require(r.ranks.size() == log.processes.size(), "one report per process");
  for (const auto& x : r.ranks) gpubind::fuzz::require(!gpubind::check::verdicts_of(x).empty(), "a verdict per rank");
  return 0;
}

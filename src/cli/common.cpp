#include "cli/common.hpp"

#include <cstdio>

#include "util/exit_status.hpp"
#include "util/strings.hpp"
#include "sys/environment.hpp"

namespace gpubind::cli {

int fail(const Error& e, int code) {
  std::fprintf(stderr, "gpubind: error: %s\n", e.message().c_str());
  return code;
}

std::string topology_source(const std::string& flag) {
  if (!flag.empty()) return flag;
  return sys::env_value("GPUBIND_TOPOLOGY").value_or("");
}

void add_topology_option(Args& app, std::string& target) {
  app.option("--topology", target,
             "Topology source: hwloc XML, NCCL/RCCL XML, gpubind JSON, a gathered /sys+/proc directory or "
             ".tar.bz2, an hwloc synthetic string, or example:NAME (default: $GPUBIND_TOPOLOGY, else this machine)");
}

void add_quiet_option(Args& app, bool& target) {
  app.flag("-q,--quiet", target, "Print no warnings (errors are still printed)");
}

void print_warnings(const std::vector<std::string>& warnings, bool quiet) {
  if (quiet) return;
  for (const std::string& w : warnings) std::fprintf(stderr, "gpubind: warning: %s\n", one_line(w).c_str());
}

std::map<std::string, std::string> environment_of(const std::vector<std::string>& names) { return sys::env_values(names); }


}  // namespace gpubind::cli

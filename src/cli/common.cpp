#include "cli/common.hpp"

#include <cstdio>
#include <cstdlib>

#include "util/exit_status.hpp"

namespace gpubind::cli {

int fail(const Error& e, int code) {
  std::fprintf(stderr, "gpubind: error: %s\n", e.message().c_str());
  return code;
}

std::string topology_source(const std::string& flag) {
  if (!flag.empty()) return flag;
  const char* env = std::getenv("GPUBIND_TOPOLOGY");
  return env ? env : "";
}

void add_topology_option(CLI::App& app, std::string& target) {
  app.add_option("--topology", target,
                 "Topology source: hwloc XML, NCCL/RCCL XML, gpubind JSON, a gathered /sys+/proc directory or "
                 ".tar.bz2, an hwloc synthetic string, or example:NAME (default: $GPUBIND_TOPOLOGY, else this machine)");
}

int parse(CLI::App& app, const std::vector<std::string>& args, int usage_exit) {
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 consumes from the back
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    // App names are "gpubind <command>"; the error line names just the command.
    std::string name = app.get_name();
    if (name.starts_with("gpubind ")) name = name.substr(8);
    fail(Error{name, e.what()}, usage_exit);
    std::fprintf(stderr, "hint: see '%s --help'\n", app.get_name().c_str());
    return usage_exit;
  }
  return -1;
}

std::optional<std::pair<std::vector<std::string>, std::vector<std::string>>> split_command(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i] == "--")
      return std::make_pair(std::vector<std::string>(args.begin(), args.begin() + long(i)),
                            std::vector<std::string>(args.begin() + long(i) + 1, args.end()));
  return std::nullopt;
}

std::map<std::string, std::string> environment_of(const std::vector<std::string>& names) {
  std::map<std::string, std::string> env;
  for (const std::string& n : names)
    if (const char* v = std::getenv(n.c_str())) env[n] = v;
  return env;
}

}  // namespace gpubind::cli

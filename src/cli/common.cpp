#include "cli/common.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "util/exit_status.hpp"
#include "util/strings.hpp"

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

void add_quiet_option(CLI::App& app, bool& target) {
  app.add_flag("-q,--quiet", target, "Print no warnings (errors are still printed)");
}

void print_warnings(const std::vector<std::string>& warnings, bool quiet) {
  if (quiet) return;
  for (const std::string& w : warnings) std::fprintf(stderr, "gpubind: warning: %s\n", one_line(w).c_str());
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

int parse_with_command(CLI::App& app, const std::vector<std::string>& args, int usage_exit, std::vector<std::string>& command) {
  auto dashes = std::find(args.begin(), args.end(), "--");
  std::vector<std::string> options(args.begin(), dashes);
  bool wants_help = std::find(options.begin(), options.end(), "--help") != options.end() ||
                    std::find(options.begin(), options.end(), "-h") != options.end();
  std::string name = app.get_name().starts_with("gpubind ") ? app.get_name().substr(8) : app.get_name();
  if (dashes == args.end() && !wants_help)
    return fail(Error{name, "missing '--' before the command (" + app.get_name() + " [options] -- CMD [ARGS...])"}, usage_exit);
  if (int rc = parse(app, options, usage_exit); rc >= 0) return rc;
  command.assign(dashes + 1, args.end());
  if (command.empty()) return fail(Error{name, "no command after '--'"}, usage_exit);
  return -1;
}

std::map<std::string, std::string> environment_of(const std::vector<std::string>& names) {
  std::map<std::string, std::string> env;
  for (const std::string& n : names)
    if (const char* v = std::getenv(n.c_str())) env[n] = v;
  return env;
}

std::string json_text(const nlohmann::ordered_json& j) {
  return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace gpubind::cli

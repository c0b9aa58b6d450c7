#pragma once
// What every subcommand shares: the error line format, --topology resolution, flag parsing glue.
#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "util/result.hpp"

namespace gpubind::cli {

// Prints "gpubind: error: what: why" to stderr and returns `code`.
int fail(const Error& e, int code);

// --topology wins; else GPUBIND_TOPOLOGY; else "" (this machine).
std::string topology_source(const std::string& flag);

// Adds --topology to a subcommand.
void add_topology_option(CLI::App& app, std::string& target);

// Adds --quiet (no warnings on stderr) to a subcommand.
void add_quiet_option(CLI::App& app, bool& target);

// Every warning goes to stderr, one line each ("gpubind: warning: ..."), in every format and
// command, unless --quiet. Control characters (a newline in a device name) are escaped so one
// warning stays one line.
void print_warnings(const std::vector<std::string>& warnings, bool quiet);

// JSON output, indented, ending in a newline. Bytes that are not UTF-8 (a process name or
// command line read from /proc) become U+FFFD instead of failing the whole output.
std::string json_text(const nlohmann::ordered_json& j);

// Parses args with CLI11. Returns -1 when the command should go on, else the exit status to
// return (0 after --help, `usage_exit` after a usage error, which it reports in gpubind's format).
int parse(CLI::App& app, const std::vector<std::string>& args, int usage_exit = 2);

// For commands of the form "gpubind X [options] -- CMD [ARGS...]": splits at the first "--",
// parses the options, and fills `command`. Returns -1 to go on, else the exit status (0 after
// --help; `usage_exit` for bad options, a missing "--" or an empty command).
int parse_with_command(CLI::App& app, const std::vector<std::string>& args, int usage_exit, std::vector<std::string>& command);

// The named variables of this process's environment, for the pure layers that take a map.
std::map<std::string, std::string> environment_of(const std::vector<std::string>& names);

}  // namespace gpubind::cli

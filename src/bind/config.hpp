#pragma once
// /etc/gpubind.conf: a site's defaults for exec, launch and the SPANK plugin, and their
// off-switch. parse_config is pure (the text is passed in); read_config reads the file through
// sys::read_file. Precedence: a command-line flag, then the
// environment (GPUBIND_CACHE_DIR...), then this file, then the built-in default.
//
//   # comment
//   binding = on|off          off: exec, launch and the plugin bind nothing (exec still runs CMD)
//   policy = closest|socket-split|socket|numa|l3|cpu-only|none
//   mem = preferred|bind|interleave|none
//   reserve = CPULIST         CPUs no rank gets (system daemons), whole cores
//   cache_dir = PATH|off      the topology cache
//   cache_max_files = N       topology cache files kept (oldest removed first), 1-10000
#include <optional>
#include <string>

#include "util/result.hpp"

namespace gpubind::bind {

inline constexpr const char* kDefaultConfigPath = "/etc/gpubind.conf";

struct Config {
  std::string path;                    // the file read, "" when none exists
  bool binding = true;
  std::optional<std::string> policy;
  std::optional<std::string> mem;
  std::optional<std::string> reserve;
  std::optional<std::string> cache_dir;
  unsigned cache_max_files = 16;
};

// Parses the file's text; errors name "PATH:LINE".
Result<Config> parse_config(const std::string& text, const std::string& path);

// Reads and parses `path`. A missing file is the defaults (Config::path ""), unless
// `must_exist` (a path the user named explicitly).
Result<Config> read_config(const std::string& path, bool must_exist);

}  // namespace gpubind::bind

#include "bind/config.hpp"

#include "plan/plan.hpp"
#include "sys/fsroot.hpp"
#include "util/cpuset.hpp"
#include "util/strings.hpp"

namespace gpubind::bind {

Result<Config> parse_config(const std::string& text, const std::string& path) {
  Config c;
  c.path = path;
  unsigned line_no = 0;
  for (std::string_view line : split(text, '\n')) {
    ++line_no;
    if (size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    line = trim(line);
    if (line.empty()) continue;
    std::string where = path + ":" + std::to_string(line_no);
    size_t eq = line.find('=');
    if (eq == std::string_view::npos) return Error{where, "expected KEY = VALUE, got '" + one_line(line) + "'"};
    std::string key(trim(line.substr(0, eq))), value(trim(line.substr(eq + 1)));
    auto bad = [&](const std::string& want) { return Error{where, key + " = '" + one_line(value) + "': expected " + want}; };
    if (key == "binding") {
      if (value == "on" || value == "yes" || value == "true") c.binding = true;
      else if (value == "off" || value == "no" || value == "false") c.binding = false;
      else return bad("on or off");
    } else if (key == "policy") {
      if (!plan::policy_from_string(value)) return bad("closest, socket-split, socket, numa, l3, cpu-only or none");
      c.policy = value;
    } else if (key == "mem") {
      if (!plan::mem_policy_from_string(value)) return bad("preferred, bind, interleave or none");
      c.mem = value;
    } else if (key == "reserve") {
      if (auto s = CpuSet::parse_list(value); !s) return bad("a CPU list such as 0,56 (" + s.error().message() + ")");
      c.reserve = value;
    } else if (key == "cache_dir") {
      if (value.empty() || (value != "off" && !value.starts_with("/"))) return bad("an absolute path or off");
      c.cache_dir = value;
    } else if (key == "cache_max_files") {
      auto n = parse_uint(value);
      if (!n || *n < 1 || *n > 10000) return bad("a number from 1 to 10000");
      c.cache_max_files = unsigned(*n);
    } else {
      return Error{where, "unknown key '" + one_line(key) + "' (binding, policy, mem, reserve, cache_dir, cache_max_files)"};
    }
  }
  return c;
}

Result<Config> read_config(const std::string& path, bool must_exist) {
  sys::PathKind kind = sys::path_kind(path);
  if (kind == sys::PathKind::missing) {
    if (must_exist) return Error{path, "no such configuration file"};
    return Config{};
  }
  if (kind != sys::PathKind::file) return Error{path, "not a regular file"};
  auto text = sys::read_file(path);
  if (!text) return text.error();
  return parse_config(*text, path);
}

}  // namespace gpubind::bind

#include "bind/torchrun.hpp"

#include "util/strings.hpp"

namespace gpubind::bind {

namespace {

Result<unsigned> small_number(const std::string& flag, std::string_view v, uint64_t max) {
  auto n = parse_uint(trim(v));
  if (!n || *n > max) return Error{flag + " '" + std::string(v) + "'", "expected a number from 0 to " + std::to_string(max), ErrorKind::usage};
  return unsigned(*n);
}

}  // namespace

Result<NodeRange> parse_nnodes(const std::string& s) {
  size_t colon = s.find(':');
  auto lo = small_number("--nnodes", std::string_view(s).substr(0, colon), 100000);
  if (!lo) return lo.error();
  auto hi = colon == std::string::npos ? lo : small_number("--nnodes", std::string_view(s).substr(colon + 1), 100000);
  if (!hi) return hi.error();
  if (*lo == 0 || *lo > *hi) return Error{"--nnodes " + s, "expected N or MIN:MAX with 1 <= MIN <= MAX", ErrorKind::usage};
  return NodeRange{*lo, *hi};
}

unsigned StreamSelection::of(unsigned local_rank) const {
  auto it = per_rank.find(local_rank);
  return it == per_rank.end() ? all : it->second;
}

Result<StreamSelection> parse_stream_selection(const std::string& flag, const std::string& s) {
  StreamSelection out;
  if (s.find(':') == std::string::npos) {
    auto v = small_number(flag, s, 3);
    if (!v) return v.error();
    out.all = *v;
    return out;
  }
  for (std::string_view part : split(s, ',')) {
    size_t colon = part.find(':');
    if (colon == std::string_view::npos) return Error{flag + " '" + s + "'", "expected 0-3 or LOCAL_RANK:0-3,... (1 stdout, 2 stderr, 3 both)", ErrorKind::usage};
    auto rank = small_number(flag, part.substr(0, colon), 1000000);
    auto v = small_number(flag, part.substr(colon + 1), 3);
    if (!rank) return rank.error();
    if (!v) return v.error();
    out.per_rank[*rank] = *v;
  }
  return out;
}

Result<std::map<std::string, std::string>> parse_key_values(const std::string& flag, const std::string& s) {
  std::map<std::string, std::string> out;
  if (trim(s).empty()) return out;
  for (std::string_view part : split(s, ',')) {
    size_t eq = part.find('=');
    if (eq == std::string_view::npos || trim(part.substr(0, eq)).empty())
      return Error{flag + " '" + s + "'", "expected KEY=VALUE[,KEY=VALUE...]", ErrorKind::usage};
    out[std::string(trim(part.substr(0, eq)))] = std::string(trim(part.substr(eq + 1)));
  }
  return out;
}

std::vector<std::string> substitute_local_rank(std::vector<std::string> args, unsigned local_rank) {
  static const std::string macro = "${local_rank}";
  for (std::string& a : args)
    for (size_t at = a.find(macro); at != std::string::npos; at = a.find(macro, at))
      a.replace(at, macro.size(), std::to_string(local_rank));
  return args;
}

}  // namespace gpubind::bind

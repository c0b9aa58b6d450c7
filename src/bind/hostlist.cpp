#include "bind/hostlist.hpp"

#include "util/strings.hpp"

namespace gpubind::bind {

namespace {

// Entries of a list: split at commas outside brackets. Empty on unbalanced brackets.
std::optional<std::vector<std::string>> entries(const std::string& list) {
  std::vector<std::string> out;
  size_t depth = 0, start = 0;
  for (size_t i = 0; i <= list.size(); ++i) {
    char c = i < list.size() ? list[i] : ',';
    if (c == '[') {
      if (++depth > 1) return std::nullopt;
    } else if (c == ']') {
      if (depth == 0) return std::nullopt;
      --depth;
    } else if (c == ',' && depth == 0) {
      if (i == start) return std::nullopt;
      out.push_back(list.substr(start, i - start));
      start = i + 1;
    }
  }
  if (depth != 0) return std::nullopt;
  return out;
}

// Expands one entry's first bracket group and recurses on the rest. Returns false when malformed.
bool expand_entry(const std::string& entry, size_t limit, std::vector<std::string>& out, bool& truncated) {
  size_t open = entry.find('[');
  if (open == std::string::npos) {
    if (out.size() >= limit) return truncated = true;
    out.push_back(entry);
    return true;
  }
  size_t close = entry.find(']', open);
  if (close == std::string::npos || close == open + 1) return false;
  std::string prefix = entry.substr(0, open), rest = entry.substr(close + 1);
  for (std::string_view part : split(std::string_view(entry).substr(open + 1, close - open - 1), ',')) {
    size_t dash = part.find('-');
    std::string_view lo_s = part.substr(0, dash), hi_s = dash == std::string_view::npos ? lo_s : part.substr(dash + 1);
    auto lo = parse_uint(lo_s), hi = parse_uint(hi_s);
    if (!lo || !hi || *lo > *hi || *hi > 99999999) return false;
    for (uint64_t n = *lo; n <= *hi; ++n) {
      std::string num = std::to_string(n);
      if (num.size() < lo_s.size()) num.insert(0, lo_s.size() - num.size(), '0');
      if (!expand_entry(prefix + num + rest, limit, out, truncated)) return false;
      if (truncated) return true;
    }
  }
  return true;
}

}  // namespace

Result<std::vector<std::string>> expand_hosts(const std::string& nodelist, size_t limit, bool limit_is_error) {
  Error bad{"host list '" + nodelist + "'", "expected hosts like node[01-04,07],gpu5"};
  auto parts = entries(nodelist);
  if (!parts || parts->empty()) return bad;
  std::vector<std::string> out;
  bool truncated = false;
  for (const std::string& e : *parts) {
    if (!expand_entry(e, limit, out, truncated)) return bad;
    if (truncated) {
      if (limit_is_error) return Error{"host list '" + nodelist + "'", "more than " + std::to_string(limit) + " hosts"};
      break;
    }
  }
  return out;
}

std::optional<std::string> first_host(const std::string& nodelist) {
  auto hosts = expand_hosts(nodelist, 1, false);
  if (!hosts || hosts->empty()) return std::nullopt;
  return hosts->front();
}

}  // namespace gpubind::bind

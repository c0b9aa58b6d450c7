#include "bind/hostlist.hpp"

namespace gpubind::bind {

std::optional<std::string> first_host(const std::string& nodelist) {
  // The first entry ends at a comma outside brackets.
  size_t depth = 0, end = nodelist.size();
  for (size_t i = 0; i < nodelist.size(); ++i) {
    if (nodelist[i] == '[') ++depth;
    else if (nodelist[i] == ']') {
      if (depth == 0) return std::nullopt;
      --depth;
    } else if (nodelist[i] == ',' && depth == 0) {
      end = i;
      break;
    }
  }
  std::string entry = nodelist.substr(0, end);
  if (entry.empty()) return std::nullopt;
  size_t open = entry.find('[');
  if (open == std::string::npos) return entry;
  size_t close = entry.find(']', open);
  if (close == std::string::npos || open == 0) return std::nullopt;
  // First element of the first range keeps its zero padding: node[007-010] -> node007.
  std::string inside = entry.substr(open + 1, close - open - 1);
  std::string first = inside.substr(0, inside.find_first_of(",-"));
  if (first.empty()) return std::nullopt;
  for (char c : first)
    if (c < '0' || c > '9') return std::nullopt;
  return entry.substr(0, open) + first + entry.substr(close + 1);
}

}  // namespace gpubind::bind

#include "topo/pinning_env.hpp"

#include <cstdint>
#include <optional>

#include "topo/topology.hpp"

namespace gpubind::topo::pinning_env {

bool on(const std::map<std::string, std::string>& env, std::string_view name) {
  auto it = env.find(std::string(name));
  if (it == env.end()) return false;
  if (name == "NCCL_PROXY_CPUSET" || name == "GOMP_CPU_AFFINITY") return !it->second.empty();
  const std::string& v = it->second;
  return !(v.empty() || v == "0" || v == "false" || v == "no" || v == "off" || v == "FALSE" || v == "False");
}

std::vector<std::string> names_read() {
  std::vector<std::string> out;
  for (const Knob& k : kKnobs) out.push_back(k.name);
  out.insert(out.end(), std::begin(kAlsoRead), std::end(kAlsoRead));
  return out;
}

namespace {

int digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return 99;
}

// strtoull(token, NULL, 0): spaces, a sign, then a number in base 16 ("0x"), 8 ("0") or 10,
// up to the first character that is no digit of it; nullopt past kMaxCpuId or when negative.
std::optional<unsigned> c_number(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r'))) ++i;
  bool negative = i < s.size() && s[i] == '-';
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  unsigned base = 10;
  if (i + 1 < s.size() && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X') && i + 2 < s.size() && digit_value(s[i + 2]) < 16) {
    base = 16;
    i += 2;
  } else if (i < s.size() && s[i] == '0') {
    base = 8;
  }
  uint64_t v = 0;
  for (; i < s.size() && unsigned(digit_value(s[i])) < base; ++i) {
    v = v * base + unsigned(digit_value(s[i]));
    if (v > kMaxCpuId) return std::nullopt;
  }
  if (negative && v != 0) return std::nullopt;
  return unsigned(v);
}

}  // namespace

CpuSet nccl_cpu_list(std::string_view text) {
  CpuSet out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string_view token = text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (!token.empty())
      if (auto id = c_number(token)) out.set(*id);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace gpubind::topo::pinning_env

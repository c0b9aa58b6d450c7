#include "util/strings.hpp"

#include <algorithm>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace gpubind {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (;;) {
    size_t pos = s.find(sep, start);
    out.push_back(s.substr(start, pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

std::string to_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::optional<uint64_t> parse_uint(std::string_view s, int base) {
  s = trim(s);
  if (base == 16 && (s.starts_with("0x") || s.starts_with("0X"))) s.remove_prefix(2);
  uint64_t v = 0;
  if (s.empty()) return std::nullopt;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<double> parse_double(std::string_view s) {
  std::string t(trim(s));
  if (t.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::string key_value(std::string_view text, std::string_view key) {
  for (std::string_view line : split(text, '\n')) {
    if (!line.starts_with(key)) continue;
    size_t colon = line.find_first_not_of(" \t", key.size());
    if (colon != std::string_view::npos && line[colon] == ':') return std::string(trim(line.substr(colon + 1)));
  }
  return "";
}

namespace {

// Length of the well-formed UTF-8 sequence at s[i] (1-4), or 0 when the bytes there are not one
// (a stray continuation byte, a truncated or overlong sequence, a surrogate, beyond U+10FFFF).
size_t utf8_length(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u; };
  unsigned c = b(0);
  if (c < 0x80) return 1;
  auto cont = [&](size_t k) { return (b(k) & 0xc0) == 0x80; };
  if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xe0 && b(1) < 0xa0) return 0;   // overlong
    if (c == 0xed && b(1) >= 0xa0) return 0;  // UTF-16 surrogate
    return 3;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xf0 && b(1) < 0x90) return 0;   // overlong
    if (c == 0xf4 && b(1) >= 0x90) return 0;  // beyond U+10FFFF
    return 4;
  }
  return 0;
}

// U+0080-U+009F (C2 80-C2 9F): C1 controls; U+009B is a terminal's CSI like ESC [.
bool is_c1_control(std::string_view s, size_t i, size_t n) {
  return n == 2 && static_cast<unsigned char>(s[i]) == 0xc2 && static_cast<unsigned char>(s[i + 1]) < 0xa0;
}

constexpr std::string_view kReplacement = "\xef\xbf\xbd";  // U+FFFD

void append_hex(std::string& out, unsigned char u) {
  static const char hex[] = "0123456789abcdef";
  out += "\\x";
  out += hex[u >> 4];
  out += hex[u & 15];
}

}  // namespace

std::string one_line(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    auto u = static_cast<unsigned char>(s[i]);
    size_t n = utf8_length(s, i);
    if (s[i] == '\n') out += "\\n";
    else if (s[i] == '\t') out += "\\t";
    else if (n == 0 || u < 0x20 || u == 0x7f) append_hex(out, u);
    else if (is_c1_control(s, i, n)) append_hex(out, u), append_hex(out, static_cast<unsigned char>(s[i + 1]));
    else out.append(s.substr(i, n));
    i += n == 0 ? 1 : n;
  }
  return out;
}

std::string valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8_length(s, i);
    if (n == 0) out += kReplacement;
    else out.append(s.substr(i, n));
    i += n == 0 ? 1 : n;
  }
  return out;
}

std::string text_problem(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    auto u = static_cast<unsigned char>(s[i]);
    size_t n = utf8_length(s, i);
    if (n == 0) return "a byte that is not UTF-8";
    if (u < 0x20 || u == 0x7f) return "a control character";
    i += n;
  }
  return "";
}

std::string fixed(double v, int digits) {
  int n = std::snprintf(nullptr, 0, "%.*f", digits, v);
  if (n <= 0) return "";
  std::string out(size_t(n), '\0');
  std::snprintf(out.data(), out.size() + 1, "%.*f", digits, v);
  return out;
}

std::string human_bytes(uint64_t bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = double(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 5) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  if (u == 0 || v >= 100.0 || v == double(uint64_t(v)))
    std::snprintf(buf, sizeof buf, "%.0f %s", v, units[u]);
  else
    std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

std::string xml_escape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8_length(s, i);
    char c = s[i];
    if (n == 0 || (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f ||
        is_c1_control(s, i, n)) {
      out += kReplacement;  // XML 1.0 has no way to write these, even as a character reference
    } else if (c == '&') {
      out += "&amp;";
    } else if (c == '<') {
      out += "&lt;";
    } else if (c == '>') {
      out += "&gt;";
    } else if (c == '"') {
      out += "&quot;";
    } else {
      out.append(s.substr(i, n));
    }
    i += n == 0 ? 1 : n;
  }
  return out;
}

std::string join_numbers(const std::vector<unsigned>& v, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += sep;
    out += std::to_string(v[i]);
  }
  return out;
}

std::string join_number_runs(const std::vector<unsigned>& v) {
  std::string out;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(v[i]);
    if (j >= i + 2) out += "-" + std::to_string(v[j]);
    else if (j == i + 1) out += "," + std::to_string(v[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace gpubind

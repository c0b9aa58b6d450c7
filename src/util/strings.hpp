#pragma once
// Small string helpers that know nothing about gpubind.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpubind {

std::string_view trim(std::string_view s);
std::vector<std::string_view> split(std::string_view s, char sep);
std::string join(const std::vector<std::string>& parts, std::string_view sep);
std::string to_lower(std::string_view s);
// Parses a whole string as an unsigned number in the given base; nullopt on any junk.
std::optional<uint64_t> parse_uint(std::string_view s, int base = 10);
// Whether `s` is one or more decimal digits and nothing else (no sign, no space).
bool all_digits(std::string_view s);
// Parses a whole string (spaces around allowed) as a finite decimal number (strtod's syntax);
// nullopt on any junk, inf or nan.
std::optional<double> parse_double(std::string_view s);
// The value of the first "key: value" line, trimmed; "" when absent. The key may be padded
// before its colon: /proc/PID/status writes "Cpus_allowed_list:\t0-3", /proc/PID/sched
// "se.nr_migrations    :    42".
std::string key_value(std::string_view text, std::string_view key);
// "16 GiB", "512 MiB", "0 B": binary units, one decimal when useful.
std::string human_bytes(uint64_t bytes);
// `v` with `digits` decimals, as printf's %.*f: fixed(1.23456, 2) is "1.23".
std::string fixed(double v, int digits);
// The escaping rules, one per output kind, for values gpubind did not write itself (another
// user's RANK, a process name, a file's contents, an environment variable):
//   text (tables, reasons, error and warning lines): one_line;
//   JSON: valid UTF-8 (render::json_text dumps with invalid bytes replaced by U+FFFD), the rest
//         is JSON's own escaping;
//   SVG and XML: xml_escape;
//   Prometheus label values: valid_utf8, then the exposition's own escapes (render/metrics).
// The text with control characters (newline, ESC, the C1 controls such as CSI U+009B) and bytes
// that are not UTF-8 written as \n, \x1b, \xc2\x9b, \xff..., so it prints as one line, cannot
// move a terminal's cursor and is valid UTF-8.
std::string one_line(std::string_view s);
// The text with every byte that is not part of well-formed UTF-8 replaced by U+FFFD.
std::string valid_utf8(std::string_view s);
// "" when `s` is well-formed UTF-8 without control characters; else what is wrong with it
// ("a control character", "a byte that is not UTF-8"). Names read from files must pass.
std::string text_problem(std::string_view s);
// The text with & < > " written as XML entities, for an attribute value or element text; bytes
// that are not UTF-8 and characters XML 1.0 cannot carry (controls but tab, CR and LF) become U+FFFD.
std::string xml_escape(std::string_view s);
// Joins numbers with a separator: {0,1} -> "0,1".
std::string join_numbers(const std::vector<unsigned>& v, std::string_view sep = ",");
// "0,1,5-9": runs of three or more consecutive numbers as ranges, so a list of thousands of
// ranks stays short; pairs stay "0,1".
std::string join_number_runs(const std::vector<unsigned>& v);

}  // namespace gpubind

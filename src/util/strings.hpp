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
// The value of the first "key: value" line (as in /proc/PID/status), trimmed; "" when absent.
std::string key_value(std::string_view text, std::string_view key);
// "16 GiB", "512 MiB", "0 B": binary units, one decimal when useful.
std::string human_bytes(uint64_t bytes);
// The text with control characters (newline, ESC...) and bytes that are not UTF-8 written as
// \n, \x1b, \xff..., so it prints as one line, cannot move a terminal's cursor and is valid UTF-8.
std::string one_line(std::string_view s);
// "" when `s` is well-formed UTF-8 without control characters; else what is wrong with it
// ("a control character", "a byte that is not UTF-8"). Names read from files must pass.
std::string text_problem(std::string_view s);
// The text with & < > " written as XML entities, for an attribute value or element text.
std::string xml_escape(std::string_view s);
// Joins numbers with a separator: {0,1} -> "0,1".
std::string join_numbers(const std::vector<unsigned>& v, std::string_view sep = ",");
// "0,1,5-9": runs of three or more consecutive numbers as ranges, so a list of thousands of
// ranks stays short; pairs stay "0,1".
std::string join_number_runs(const std::vector<unsigned>& v);

}  // namespace gpubind

#include "render/table.hpp"

#include <algorithm>

#include "util/strings.hpp"

namespace gpubind::render {

std::string text_block(const std::string& title, const std::vector<std::string>& lines) {
  if (lines.empty()) return "";
  std::string out = "\n" + title + ":\n";
  for (const std::string& l : lines) out += "  " + one_line(l) + "\n";
  return out;
}

std::string TextTable::str(const std::string& indent) const {
  // Every cell as text: a value from another user's process prints as one line without
  // terminal controls (already-escaped cells are unchanged).
  std::vector<std::vector<std::string>> rows = m_rows;
  for (auto& row : rows)
    for (auto& cell : row) cell = one_line(cell);
  std::vector<size_t> width;
  for (const auto& row : rows) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line = indent;
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(width[c] - row[c].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

}  // namespace gpubind::render

#pragma once
// A minimal aligned-column text table: left-aligned cells, two spaces between columns.
#include <string>
#include <vector>

namespace gpubind::render {

// "\n<title>:\n  line\n..." for a non-empty list of lines (warnings, explanations); "" otherwise.
std::string text_block(const std::string& title, const std::vector<std::string>& lines);

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) { m_rows.push_back(std::move(header)); }
  void add(std::vector<std::string> row) { m_rows.push_back(std::move(row)); }
  std::string str(const std::string& indent = "") const;

 private:
  std::vector<std::vector<std::string>> m_rows;
};

}  // namespace gpubind::render

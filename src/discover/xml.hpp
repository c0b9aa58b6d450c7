#pragma once
// A small XML reader for NCCL/RCCL topology files: elements, attributes, comments, the XML
// declaration and DOCTYPE, character data (ignored) and the five predefined entities plus
// numeric character references. It checks well-formedness (matching tags, quoted attributes,
// one root) and reports the line of the first problem. gpubind reads hwloc XML through hwloc
// itself; this exists so the binary does not load libxml2 (and ICU) at every start.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/result.hpp"

namespace gpubind::discover {

struct XmlElement {
  std::string name;
  std::vector<std::pair<std::string, std::string>> attributes;
  std::vector<XmlElement> children;
  unsigned line = 0;

  // The attribute's value, or nullptr.
  const std::string* attr(std::string_view key) const;
};

// Parses a whole document and returns its root element.
Result<XmlElement> parse_xml(std::string_view text);

}  // namespace gpubind::discover

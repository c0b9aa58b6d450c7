#include "discover/xml.hpp"

#include <cctype>

namespace gpubind::discover {

const std::string* XmlElement::attr(std::string_view key) const {
  for (const auto& [k, v] : attributes)
    if (k == key) return &v;
  return nullptr;
}

namespace {

bool name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':'; }
bool name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':' || c == '-' || c == '.';
}

class Parser {
 public:
  explicit Parser(std::string_view text) : m_text(text) {}

  Result<XmlElement> document() {
    if (!skip_misc()) return m_error;
    if (at_end()) return fail("no root element");
    if (peek() != '<') return fail("text before the root element");
    XmlElement root;
    if (!element(root, 0)) return m_error;
    if (!skip_misc()) return m_error;
    if (!at_end()) return fail("content after the root element");
    return root;
  }

 private:
  static constexpr int kMaxDepth = 256;

  bool at_end() const { return m_pos >= m_text.size(); }
  char peek() const { return m_text[m_pos]; }
  bool starts(std::string_view s) const { return m_text.substr(m_pos, s.size()) == s; }
  void advance(size_t n = 1) {
    for (size_t i = 0; i < n && m_pos < m_text.size(); ++i, ++m_pos)
      if (m_text[m_pos] == '\n') ++m_line;
  }
  void skip_space() {
    while (!at_end() && std::isspace(static_cast<unsigned char>(peek()))) advance();
  }
  Error fail(const std::string& why) {
    m_error = Error{"line " + std::to_string(m_line), why};
    return m_error;
  }
  bool bad(const std::string& why) {
    fail(why);
    return false;
  }

  // Skips whitespace, comments, processing instructions and DOCTYPE between elements.
  bool skip_misc() {
    for (;;) {
      skip_space();
      if (starts("<!--")) {
        size_t end = m_text.find("-->", m_pos + 4);
        if (end == std::string_view::npos) return bad("unterminated comment");
        advance(end + 3 - m_pos);
      } else if (starts("<?")) {
        size_t end = m_text.find("?>", m_pos + 2);
        if (end == std::string_view::npos) return bad("unterminated processing instruction");
        advance(end + 2 - m_pos);
      } else if (starts("<!DOCTYPE")) {
        size_t end = m_text.find('>', m_pos);
        if (end == std::string_view::npos) return bad("unterminated DOCTYPE");
        advance(end + 1 - m_pos);
      } else {
        return true;
      }
    }
  }

  bool name(std::string& out) {
    if (at_end() || !name_start(peek())) return bad("expected a name");
    size_t start = m_pos;
    while (!at_end() && name_char(peek())) advance();
    out = std::string(m_text.substr(start, m_pos - start));
    return true;
  }

  bool decode(std::string_view raw, std::string& out) {
    out.clear();
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '<') return bad("'<' inside an attribute value");
      if (raw[i] != '&') {
        out += raw[i];
        continue;
      }
      size_t semi = raw.find(';', i);
      if (semi == std::string_view::npos) return bad("unterminated entity reference");
      std::string_view ent = raw.substr(i + 1, semi - i - 1);
      if (ent == "amp") out += '&';
      else if (ent == "lt") out += '<';
      else if (ent == "gt") out += '>';
      else if (ent == "quot") out += '"';
      else if (ent == "apos") out += '\'';
      else if (ent.size() > 1 && ent[0] == '#') {
        unsigned long code = 0;
        bool hex = ent[1] == 'x';
        std::string digits(ent.substr(hex ? 2 : 1));
        if (digits.empty() || digits.size() > 6) return bad("bad character reference");
        for (char c : digits) {
          if (!(hex ? std::isxdigit(static_cast<unsigned char>(c)) : std::isdigit(static_cast<unsigned char>(c))))
            return bad("bad character reference");
        }
        code = std::stoul(digits, nullptr, hex ? 16 : 10);
        if (code < 0x80) out += char(code);
        else out += '?';  // topology files are ASCII; anything else is not used by gpubind
      } else {
        return bad("unknown entity '&" + std::string(ent) + ";'");
      }
      i = semi;
    }
    return true;
  }

  bool element(XmlElement& e, int depth) {
    if (depth > kMaxDepth) return bad("elements nested too deeply");
    e.line = m_line;
    advance();  // '<'
    if (!name(e.name)) return false;
    // Attributes.
    for (;;) {
      bool had_space = !at_end() && std::isspace(static_cast<unsigned char>(peek()));
      skip_space();
      if (at_end()) return bad("unterminated start tag <" + e.name + ">");
      if (starts("/>")) {
        advance(2);
        return true;
      }
      if (peek() == '>') {
        advance();
        break;
      }
      if (!had_space) return bad("expected a space before an attribute in <" + e.name + ">");
      std::string key;
      if (!name(key)) return false;
      skip_space();
      if (at_end() || peek() != '=') return bad("attribute '" + key + "' has no value");
      advance();
      skip_space();
      if (at_end() || (peek() != '"' && peek() != '\'')) return bad("attribute '" + key + "' is not quoted");
      char quote = peek();
      advance();
      size_t end = m_text.find(quote, m_pos);
      if (end == std::string_view::npos) return bad("unterminated value of attribute '" + key + "'");
      std::string value;
      if (!decode(m_text.substr(m_pos, end - m_pos), value)) return false;
      advance(end + 1 - m_pos);
      for (const auto& [k, v] : e.attributes)
        if (k == key) return bad("attribute '" + key + "' given twice");
      e.attributes.emplace_back(std::move(key), std::move(value));
    }
    // Content up to the matching end tag.
    for (;;) {
      size_t lt = m_text.find('<', m_pos);
      if (lt == std::string_view::npos) return bad("<" + e.name + "> is not closed");
      advance(lt - m_pos);  // character data: ignored
      if (starts("</")) {
        advance(2);
        std::string end_name;
        if (!name(end_name)) return false;
        if (end_name != e.name) return bad("</" + end_name + "> closes <" + e.name + ">");
        skip_space();
        if (at_end() || peek() != '>') return bad("malformed end tag </" + end_name + ">");
        advance();
        return true;
      }
      if (starts("<!--") || starts("<?")) {
        if (!skip_misc()) return false;
        continue;
      }
      if (starts("<![CDATA[")) {
        size_t end = m_text.find("]]>", m_pos);
        if (end == std::string_view::npos) return bad("unterminated CDATA section");
        advance(end + 3 - m_pos);
        continue;
      }
      XmlElement child;
      if (!element(child, depth + 1)) return false;
      e.children.push_back(std::move(child));
    }
  }

  std::string_view m_text;
  size_t m_pos = 0;
  unsigned m_line = 1;
  Error m_error;
};

}  // namespace

Result<XmlElement> parse_xml(std::string_view text) { return Parser(text).document(); }

}  // namespace gpubind::discover

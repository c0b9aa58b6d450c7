#include "util/pattern.hpp"

#include <regex.h>

namespace gpubind {

struct Pattern::Compiled {
  regex_t re{};
  bool compiled = false;
  ~Compiled() {
    if (compiled) regfree(&re);
  }
};

Result<Pattern> Pattern::compile(const std::string& text) {
  auto c = std::make_shared<Pattern::Compiled>();
  int rc = regcomp(&c->re, text.c_str(), REG_EXTENDED | REG_NOSUB);
  if (rc != 0) {
    char buf[256];
    regerror(rc, &c->re, buf, sizeof buf);
    return Error{text, buf};
  }
  c->compiled = true;
  return Pattern(std::move(c));
}

bool Pattern::search(std::string_view subject) const {
  std::string s(subject.substr(0, kMaxSubject));
  return regexec(&m_c->re, s.c_str(), 0, nullptr, 0) == 0;
}

}  // namespace gpubind

#pragma once
// A POSIX extended regular expression (regcomp/regexec), for `check --match`. std::regex
// matches by recursion and overflows the stack on long subjects (a 32 KB command line any user
// can give a process); glibc's matcher does not recurse per character.
#include <memory>
#include <string>
#include <string_view>

#include "util/result.hpp"

namespace gpubind {

class Pattern {
 public:
  // The Error's `why` is regerror's text.
  static Result<Pattern> compile(const std::string& text);
  // Whether the pattern matches anywhere in the first kMaxSubject bytes of `subject`.
  bool search(std::string_view subject) const;
  static constexpr size_t kMaxSubject = 64 * 1024;

 private:
  struct Compiled;
  explicit Pattern(std::shared_ptr<Compiled> c) : m_c(std::move(c)) {}
  std::shared_ptr<Compiled> m_c;
};

}  // namespace gpubind

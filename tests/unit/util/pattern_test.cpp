// check --match's matcher (issue 12 item 3): POSIX extended syntax, and a long subject does not
// overflow the stack as std::regex's recursive matcher did.
#include "util/pattern.hpp"

#include <gtest/gtest.h>

namespace gpubind {

TEST(Pattern, ExtendedSyntaxSearchesAnywhere) {
  auto p = Pattern::compile("python.*train(ing)?");
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->search("/usr/bin/python3 -u train.py --steps 20"));
  EXPECT_FALSE(p->search("sleep 60"));
}

TEST(Pattern, BadPatternIsAnErrorWithRegerrorsText) {
  auto p = Pattern::compile("(unclosed");
  ASSERT_FALSE(p.ok());
  EXPECT_FALSE(p.error().why.empty());
}

TEST(Pattern, LongSubjectsAreMatchedWithoutRecursion) {
  // 2 MB of 'a' (a command line can be that long): std::regex overflowed the stack from 32 KB.
  std::string subject(2 << 20, 'a');
  auto p = Pattern::compile("(a|b)*c");
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->search(subject));
  auto q = Pattern::compile("a+");
  ASSERT_TRUE(q.ok());
  EXPECT_TRUE(q->search(subject));
}

}  // namespace gpubind

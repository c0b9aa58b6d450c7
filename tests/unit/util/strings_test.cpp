#include "util/strings.hpp"

#include <gtest/gtest.h>

namespace gpubind {

TEST(Strings, SplitKeepsEmptyFields) {
  auto v = split("a,,b", ',');
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[1], "");
}

TEST(Strings, ParseUintRejectsTrailingJunk) {
  EXPECT_EQ(parse_uint("42"), 42u);
  EXPECT_EQ(parse_uint("0x1f", 16), 31u);
  EXPECT_FALSE(parse_uint("42x").has_value());
  EXPECT_FALSE(parse_uint("").has_value());
  EXPECT_FALSE(parse_uint("-1").has_value());
}

TEST(Strings, HumanBytesUsesBinaryUnits) {
  EXPECT_EQ(human_bytes(0), "0 B");
  EXPECT_EQ(human_bytes(1024ull * 1024 * 1024), "1 GiB");
  EXPECT_EQ(human_bytes(1536ull * 1024 * 1024), "1.5 GiB");
}

TEST(Strings, JoinNumberRunsShortensRunsOfThreeOrMore) {
  EXPECT_EQ(join_number_runs({}), "");
  EXPECT_EQ(join_number_runs({4}), "4");
  EXPECT_EQ(join_number_runs({4, 5}), "4,5");
  EXPECT_EQ(join_number_runs({0, 1, 2, 3, 7, 9, 10}), "0-3,7,9,10");
  std::vector<unsigned> many(4096);
  for (unsigned i = 0; i < many.size(); ++i) many[i] = i;
  EXPECT_EQ(join_number_runs(many), "0-4095");
}

}  // namespace gpubind

TEST(Strings, XmlEscapeWritesMarkupCharactersAsEntities) {
  EXPECT_EQ(gpubind::xml_escape("a<b & \"c\">"), "a&lt;b &amp; &quot;c&quot;&gt;");
  EXPECT_EQ(gpubind::xml_escape("plain"), "plain");
}

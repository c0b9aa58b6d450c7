#include "util/strings.hpp"

#include <gtest/gtest.h>

namespace gpubind {

TEST(Strings, SplitKeepsEmptyFields) {
  auto v = split("a,,b", ',');
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[1], "");
}

TEST(Strings, ParseDoubleTakesAWholeFiniteNumber) {
  EXPECT_EQ(parse_double("12.5"), 12.5);
  EXPECT_EQ(parse_double(" 1e3 \n"), 1000.0);
  EXPECT_EQ(parse_double("-0.25"), -0.25);
  EXPECT_FALSE(parse_double(""));
  EXPECT_FALSE(parse_double("12.5 ms"));
  EXPECT_FALSE(parse_double("nan"));
  EXPECT_FALSE(parse_double("inf"));
  EXPECT_FALSE(parse_double("1e999"));
}

TEST(Strings, ParseUintRejectsTrailingJunk) {
  EXPECT_EQ(parse_uint("42"), 42u);
  EXPECT_EQ(parse_uint("0x1f", 16), 31u);
  EXPECT_FALSE(parse_uint("42x").has_value());
  EXPECT_FALSE(parse_uint("").has_value());
  EXPECT_FALSE(parse_uint("-1").has_value());
}

TEST(Strings, KeyValueTakesTheWholeKeyPaddedOrNot) {
  std::string status = "Cpus_allowed:\t3\nCpus_allowed_list:\t0-1\n";
  EXPECT_EQ(key_value(status, "Cpus_allowed_list"), "0-1");
  EXPECT_EQ(key_value(status, "Cpus_allowed"), "3");  // not the longer key that starts with it
  std::string sched = "sh (23373, #threads: 1)\n-------\nse.nr_migrations        :       42\nnr_switches  :  7\n";
  EXPECT_EQ(key_value(sched, "se.nr_migrations"), "42");
  EXPECT_EQ(key_value(sched, "nr_switches"), "7");
  EXPECT_EQ(key_value(sched, "se.nr"), "");
  EXPECT_EQ(key_value(sched, "nr_migrations"), "");  // a key starts its line
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

TEST(Strings, OneLineEscapesControlsIncludingC1AndBytesThatAreNotUtf8) {
  EXPECT_EQ(gpubind::one_line("3\n\x1b[31mFORGED"), "3\\n\\x1b[31mFORGED");
  EXPECT_EQ(gpubind::one_line("a\xc2\x9b" "2J"), "a\\xc2\\x9b" "2J");  // U+009B, CSI
  EXPECT_EQ(gpubind::one_line("\xff"), "\\xff");
  EXPECT_EQ(gpubind::one_line("gr\xc3\xbc\xc3\x9f" "e \xe2\x9c\x93"), "gr\xc3\xbc\xc3\x9f" "e \xe2\x9c\x93");  // UTF-8 kept
  EXPECT_EQ(gpubind::one_line(gpubind::one_line("x\x1by")), gpubind::one_line("x\x1by"));
}

TEST(Strings, ValidUtf8ReplacesEachBadByteAndKeepsTheRest) {
  EXPECT_EQ(gpubind::valid_utf8("ok \xe2\x9c\x93"), "ok \xe2\x9c\x93");
  EXPECT_EQ(gpubind::valid_utf8("a\xff" "b"), "a\xef\xbf\xbd" "b");
  EXPECT_EQ(gpubind::valid_utf8("\xc0\x80"), "\xef\xbf\xbd\xef\xbf\xbd");  // overlong NUL
  EXPECT_EQ(gpubind::valid_utf8("\xed\xa0\x80"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");  // a surrogate
  EXPECT_EQ(gpubind::valid_utf8("end\xe2\x82"), "end\xef\xbf\xbd\xef\xbf\xbd");  // truncated
}

TEST(Strings, XmlEscapeReplacesWhatXmlCannotCarry) {
  EXPECT_EQ(gpubind::xml_escape("1\x01\x1b[2J\x7f"), "1\xef\xbf\xbd\xef\xbf\xbd[2J\xef\xbf\xbd");
  EXPECT_EQ(gpubind::xml_escape("\xff<"), "\xef\xbf\xbd&lt;");
  EXPECT_EQ(gpubind::xml_escape("tab\tok"), "tab\tok");
}

TEST(Strings, XmlEscapeWritesMarkupCharactersAsEntities) {
  EXPECT_EQ(gpubind::xml_escape("a<b & \"c\">"), "a&lt;b &amp; &quot;c&quot;&gt;");
  EXPECT_EQ(gpubind::xml_escape("plain"), "plain");
}

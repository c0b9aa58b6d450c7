#include "util/cpuset.hpp"

#include <gtest/gtest.h>

namespace gpubind {

TEST(CpuSet, ParsesListWithRangesAndSingles) {
  auto s = CpuSet::parse_list("0-3,8,10-11");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->ids(), (std::vector<unsigned>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(s->to_list(), "0-3,8,10-11");
}

TEST(CpuSet, EmptyListIsEmptySet) {
  auto s = CpuSet::parse_list("  ");
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->empty());
  EXPECT_EQ(s->to_list(), "");
}

TEST(CpuSet, ParsesStridedRange) {
  auto s = CpuSet::parse_list("0-8:4");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->to_list(), "0,4,8");
}

TEST(CpuSet, RejectsJunk) {
  for (const char* bad : {"a", "1-", "3-1", "1,,2", "0-8:0", "-1", "99999999999"}) {
    auto s = CpuSet::parse_list(bad);
    EXPECT_FALSE(s.ok()) << bad;
  }
}

TEST(CpuSet, ParsesLinuxMaskWordsMostSignificantFirst) {
  // NCCL affinity "00000000,0000ffff,ff000000" = CPUs 24-47.
  auto s = CpuSet::parse_mask("00000000,0000ffff,ff000000");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->to_list(), "24-47");
  auto t = CpuSet::parse_mask("0x5");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->to_list(), "0,2");
}

TEST(CpuSet, ShortCommaWordsAreStill32Bits) {
  auto s = CpuSet::parse_mask("1,0");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->to_list(), "32");
}

TEST(CpuSet, MaskRoundTrip) {
  CpuSet s = CpuSet::of({0, 33, 100});
  auto back = CpuSet::parse_mask(s.to_mask());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, s);
  EXPECT_FALSE(CpuSet::parse_mask("xyz").ok());
}

TEST(CpuSet, MaskAndListShareOneCeiling) {
  // Issue 12: a mask could set CPU 1048577, which no cpulist accepts, so its list did not read
  // back. Both forms now stop at CPU 1048576.
  std::string top = "1" + std::string(1048576 / 4, '0');  // CPU 1048576 alone
  auto ok = CpuSet::parse_mask(top);
  ASSERT_TRUE(ok.ok()) << ok.error().message();
  EXPECT_EQ(ok->to_list(), "1048576");
  EXPECT_EQ(*CpuSet::parse_list(ok->to_list()), *ok);
  auto over = CpuSet::parse_mask("2" + std::string(1048576 / 4, '0'));  // CPU 1048577
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.error().why.find("1048577"), std::string::npos);
  EXPECT_FALSE(CpuSet::parse_list("1048577").ok());
}

TEST(CpuSet, SetAlgebra) {
  CpuSet a = CpuSet::range(0, 7), b = CpuSet::range(4, 11);
  EXPECT_EQ((a & b).to_list(), "4-7");
  EXPECT_EQ((a | b).to_list(), "0-11");
  EXPECT_EQ((a - b).to_list(), "0-3");
  EXPECT_TRUE(a.intersects(b));
  EXPECT_FALSE((a - b).intersects(b));
  EXPECT_TRUE(CpuSet::range(1, 2).is_subset_of(a));
  EXPECT_EQ(a.count(), 8u);
  EXPECT_EQ(*b.first(), 4u);
  EXPECT_EQ(*b.last(), 11u);
  CpuSet c = a;
  c.clear(7);
  c.clear(6);
  EXPECT_EQ(c.to_list(), "0-5");
}

TEST(CpuSet, DifferenceToEmptyEqualsEmpty) {
  CpuSet a = CpuSet::range(64, 70);
  EXPECT_EQ(a - a, CpuSet());
  EXPECT_TRUE((a - a).empty());
}

}  // namespace gpubind

namespace gpubind {

// Sets above 256 CPUs leave the inline words for the heap and come back when they shrink.
TEST(CpuSet, GrowsPastInlineStorageAndShrinksBack) {
  CpuSet s = CpuSet::of({1, 255});
  s.set(4095);
  EXPECT_EQ(s.to_list(), "1,255,4095");
  EXPECT_EQ(s.count(), 3u);
  CpuSet big = CpuSet::range(0, 4095);
  EXPECT_TRUE(s.is_subset_of(big));
  EXPECT_FALSE(big.is_subset_of(s));
  s.clear(4095);
  EXPECT_EQ(s, CpuSet::of({1, 255}));
  EXPECT_EQ((big & CpuSet::of({7, 3000})).to_list(), "7,3000");
  EXPECT_EQ((big - CpuSet::range(64, 4095)).to_list(), "0-63");
  CpuSet copy = big;
  copy.clear(0);
  EXPECT_EQ(big.count(), 4096u);
  EXPECT_EQ(copy.count(), 4095u);
}

}  // namespace gpubind

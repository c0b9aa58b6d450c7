#include "util/cpuset.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <random>
#include <set>

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

namespace gpubind {

// The sparse words: SMT siblings numbered half a 16384-PU machine apart are two words, and every
// operation agrees with a plain set of ids on random sets, sparse and dense, small and large.
TEST(CpuSet, SparseSetsAgreeWithAPlainSetOfIds) {
  std::mt19937 rng(34);
  auto random_set = [&](std::set<unsigned>& ids) {
    CpuSet s;
    unsigned span = std::uniform_int_distribution<unsigned>(1, 3)(rng) == 1 ? 200 : 20000;
    unsigned n = std::uniform_int_distribution<unsigned>(0, 40)(rng);
    for (unsigned k = 0; k < n; ++k) {
      unsigned id = std::uniform_int_distribution<unsigned>(0, span)(rng);
      ids.insert(id);
      s.set(id);  // out of order: inserts before, between and after the words in use
    }
    if (std::uniform_int_distribution<unsigned>(0, 4)(rng) == 0) {
      unsigned lo = std::uniform_int_distribution<unsigned>(0, span)(rng), len = std::uniform_int_distribution<unsigned>(0, 300)(rng);
      s |= CpuSet::range(lo, lo + len);
      for (unsigned i = lo; i <= lo + len; ++i) ids.insert(i);
    }
    return s;
  };
  auto list = [](const std::set<unsigned>& ids) { return std::vector<unsigned>(ids.begin(), ids.end()); };
  for (int round = 0; round < 2000; ++round) {
    std::set<unsigned> a_ids, b_ids;
    CpuSet a = random_set(a_ids), b = random_set(b_ids);
    ASSERT_EQ(a.ids(), list(a_ids));
    std::set<unsigned> u = a_ids, i, d;
    u.insert(b_ids.begin(), b_ids.end());
    std::set_intersection(a_ids.begin(), a_ids.end(), b_ids.begin(), b_ids.end(), std::inserter(i, i.end()));
    std::set_difference(a_ids.begin(), a_ids.end(), b_ids.begin(), b_ids.end(), std::inserter(d, d.end()));
    EXPECT_EQ((a | b).ids(), list(u));
    EXPECT_EQ((a & b).ids(), list(i));
    EXPECT_EQ((a - b).ids(), list(d));
    EXPECT_EQ(a.intersects(b), !i.empty());
    EXPECT_EQ(a.is_subset_of(b), d.empty());
    EXPECT_EQ(a.count(), a_ids.size());
    EXPECT_EQ(a.empty(), a_ids.empty());
    EXPECT_EQ(a == b, a_ids == b_ids);
    EXPECT_EQ((a & b) == (b & a), true);
    EXPECT_EQ(a - a, CpuSet());
    if (!a_ids.empty()) {
      EXPECT_EQ(a.first(), *a_ids.begin());
      EXPECT_EQ(a.last(), *a_ids.rbegin());
      unsigned gone = *std::next(a_ids.begin(), long(a_ids.size() / 2));
      CpuSet c = a;
      c.clear(gone);
      a_ids.erase(gone);
      EXPECT_EQ(c.ids(), list(a_ids));
      EXPECT_FALSE(c.test(gone));
      EXPECT_EQ(*CpuSet::parse_list(c.to_list()), c);
      EXPECT_EQ(*CpuSet::parse_mask(c.to_mask()), c);
    }
  }
}

TEST(CpuSet, RangesAcrossWordEdges) {
  for (auto [lo, hi] : std::vector<std::pair<unsigned, unsigned>>{{0, 0}, {0, 63}, {63, 64}, {1, 62}, {64, 127}, {60, 200}, {8191, 16383}}) {
    std::vector<unsigned> want;
    for (unsigned i = lo; i <= hi; ++i) want.push_back(i);
    EXPECT_EQ(CpuSet::range(lo, hi).ids(), want) << lo << "-" << hi;
  }
  EXPECT_TRUE(CpuSet::range(5, 4).empty());
  EXPECT_EQ(CpuSet::of({5, 8197}).to_mask().size(), 257u * 8 + 256);  // 257 32-bit words of 8 digits, commas between
}

}  // namespace gpubind

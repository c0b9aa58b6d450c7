// The Prometheus exposition of watch (render/metrics.hpp) on hand-made results.
#include "render/metrics.hpp"

#include <gtest/gtest.h>

#include "util/strings.hpp"

namespace gpubind::render {

namespace {

watch::RankInterval rank(int pid, const std::string& rank_name) {
  watch::RankInterval r;
  r.pid = pid;
  r.rank = rank_name;
  r.local_rank = "0";
  r.gpus = {"0000:18:00.0"};
  r.cross_numa = 0.25;
  return r;
}

}  // namespace

TEST(Metrics, EveryFamilyHasHelpAndTypeAndCountersEndInTotal) {
  std::string text = metrics_text({"n1", nullptr, nullptr, 0.002});
  for (const std::string& f : metric_families()) {
    EXPECT_NE(text.find("# HELP " + f + " "), std::string::npos) << f;
    size_t type = text.find("# TYPE " + f + " ");
    ASSERT_NE(type, std::string::npos) << f;
    bool counter = text.compare(type + 8 + f.size(), 7, "counter") == 0;
    EXPECT_EQ(counter, f.ends_with("_total")) << f;
  }
  EXPECT_NE(text.find("gpubind_watch_sample_seconds{node=\"n1\"} 0.002"), std::string::npos) << text;
  EXPECT_NE(text.find("gpubind_watch_intervals_total{node=\"n1\"} 0\n"), std::string::npos) << text;
}

TEST(Metrics, LabelValuesAreEscaped) {
  watch::Interval iv;
  iv.ranks = {rank(7, "a\"b\\c\nd")};
  std::string text = metrics_text({"node\"x", nullptr, &iv, 0});
  EXPECT_NE(text.find("gpubind_rank_cross_numa_ratio{node=\"node\\\"x\",pid=\"7\",rank=\"a\\\"b\\\\c\\nd\""), std::string::npos) << text;
}

// Prometheus rejects the whole scrape ("invalid UTF-8 label value") for one bad byte, so a rank
// variable another user sets to bytes that are not UTF-8 must reach the exposition as UTF-8.
TEST(Metrics, LabelValuesAreValidUtf8WhateverTheProcessSet) {
  watch::Interval iv;
  iv.ranks = {rank(7, "3\xff\xc0\x80\xed\xa0\x80")};
  iv.ranks[0].job = "job\xe2\x82";  // truncated sequence at the end
  std::string text = metrics_text({"n1", nullptr, &iv, 0});
  EXPECT_EQ(gpubind::valid_utf8(text), text) << "the exposition holds bytes that are not UTF-8";
  EXPECT_NE(text.find("rank=\"3\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"), std::string::npos) << text;
  EXPECT_NE(text.find("job=\"job\xef\xbf\xbd"), std::string::npos) << text;
}

TEST(Metrics, CountersComeFromTheSummaryAndOnlyForRanksStillThere) {
  watch::Interval iv;
  iv.ranks = {rank(7, "0")};
  iv.ranks[0].findings = {{watch::Finding::drifted, "allowed CPUs differ"}};
  iv.imbalance = 0.5;
  watch::Summary s;
  s.intervals = 4;
  s.ranks.resize(2);
  s.ranks[0].pid = 7;
  s.ranks[0].migrations = 12;
  s.ranks[0].remote_memory = 0.75;
  s.ranks[1].pid = 8;  // exited: not in the last interval
  s.ranks[1].migrations = 99;
  std::string text = metrics_text({"n1", &s, &iv, 0});
  EXPECT_NE(text.find("gpubind_rank_migrations_total{node=\"n1\",pid=\"7\""), std::string::npos) << text;
  EXPECT_NE(text.find("} 12\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("pid=\"8\""), std::string::npos) << text;
  EXPECT_NE(text.find("gpubind_rank_drifted{node=\"n1\",pid=\"7\",rank=\"0\",local_rank=\"0\",gpu=\"0000:18:00.0\",job=\"\"} 1\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("gpubind_rank_overlap{node=\"n1\",pid=\"7\",rank=\"0\",local_rank=\"0\",gpu=\"0000:18:00.0\",job=\"\"} 0\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("gpubind_rank_remote_memory_ratio{node=\"n1\",pid=\"7\""), std::string::npos) << text;
  EXPECT_NE(text.find("gpubind_node_rank_imbalance_ratio{node=\"n1\"} 0.5\n"), std::string::npos) << text;
  EXPECT_NE(text.find("gpubind_watch_intervals_total{node=\"n1\"} 4\n"), std::string::npos) << text;
}

}  // namespace gpubind::render

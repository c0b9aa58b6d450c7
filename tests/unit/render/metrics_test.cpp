// The Prometheus exposition of watch (render/metrics.hpp) on hand-made results.
#include "render/metrics.hpp"

#include <gtest/gtest.h>

#include <cctype>

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
  std::string text = metrics_text({"n1", nullptr, nullptr, nullptr, 0.002});
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
  std::string text = metrics_text({"node\"x", nullptr, nullptr, &iv, 0});
  EXPECT_NE(text.find("gpubind_rank_cross_numa_ratio{node=\"node\\\"x\",pid=\"7\",rank=\"a\\\"b\\\\c\\nd\""), std::string::npos) << text;
}

// Prometheus rejects the whole scrape ("invalid UTF-8 label value") for one bad byte, so a rank
// variable another user sets to bytes that are not UTF-8 must reach the exposition as UTF-8.
TEST(Metrics, LabelValuesAreValidUtf8WhateverTheProcessSet) {
  watch::Interval iv;
  iv.ranks = {rank(7, "3\xff\xc0\x80\xed\xa0\x80")};
  iv.ranks[0].slurm_job = "job\xe2\x82";  // truncated sequence at the end
  std::string text = metrics_text({"n1", nullptr, nullptr, &iv, 0});
  EXPECT_EQ(gpubind::valid_utf8(text), text) << "the exposition holds bytes that are not UTF-8";
  EXPECT_NE(text.find("rank=\"3\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"), std::string::npos) << text;
  EXPECT_NE(text.find("slurm_job_id=\"job\xef\xbf\xbd"), std::string::npos) << text;
}

TEST(Metrics, CountersComeFromTheSummaryAndOnlyForRanksStillThere) {
  watch::Interval iv;
  iv.ranks = {rank(7, "0")};
  iv.ranks[0].findings = {{watch::Finding::drifted, "allowed CPUs differ"}};
  iv.ranks[0].cpus = *CpuSet::parse_list("0-3,8");
  iv.imbalance = 0.5;
  watch::Summary s;
  s.intervals = 4;
  s.ranks.resize(2);
  s.ranks[0].pid = 7;
  s.ranks[0].migrations = 12;
  s.ranks[0].remote_memory = 0.75;
  s.ranks[0].cross_numa_seconds = 2.5;
  s.ranks[0].rank = s.ranks[0].local_rank = "0";  // counters are labelled from the summary's record
  s.ranks[0].gpus = {"0000:18:00.0"};
  s.ranks[1].pid = 8;  // exited: not in the last interval
  s.ranks[1].migrations = 99;
  std::string text = metrics_text({"n1", nullptr, &s, &iv, 0});
  const std::string labels = "{node=\"n1\",pid=\"7\",rank=\"0\",local_rank=\"0\",gpu=\"\",UUID=\"\",pci=\"0000:18:00.0\",slurm_job_id=\"\","
                             "slurm_step_id=\"\",torchelastic_run_id=\"\",k8s_namespace=\"\",k8s_pod=\"\",k8s_container=\"\"}";
  EXPECT_NE(text.find("gpubind_rank_migrations_total{node=\"n1\",pid=\"7\""), std::string::npos) << text;
  EXPECT_NE(text.find("} 12\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("pid=\"8\""), std::string::npos) << text;
  EXPECT_NE(text.find("gpubind_rank_drifted" + labels + " 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("gpubind_rank_overlap" + labels + " 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("gpubind_rank_cross_numa_cpu_seconds_total" + labels + " 2.5\n"), std::string::npos) << text;
  // Without CPU time from the kernel the counter is not exported at all (not a 0 that grows never).
  EXPECT_EQ(text.find("gpubind_rank_cross_socket_cpu_seconds_total{"), std::string::npos) << text;
  std::string cpus = labels;
  cpus.insert(cpus.size() - 1, ",cpus=\"0-3,8\"");
  EXPECT_NE(text.find("gpubind_rank_allowed_cpus" + cpus + " 5\n"), std::string::npos) << text;
  EXPECT_NE(text.find("gpubind_rank_remote_memory_ratio{node=\"n1\",pid=\"7\""), std::string::npos) << text;
  EXPECT_NE(text.find("gpubind_node_rank_imbalance_ratio{node=\"n1\"} 0.5\n"), std::string::npos) << text;
  EXPECT_NE(text.find("gpubind_watch_intervals_total{node=\"n1\"} 4\n"), std::string::npos) << text;
}

// The GPU as dcgm-exporter names it (index and UUID), so DCGM_FI_* and gpubind_* join on UUID;
// no label is `job` or `instance`, which Prometheus renames to exported_* (honor_labels: false).
TEST(Metrics, GpusCarryIndexAndUuidAndNoLabelCollidesWithATargetLabel) {
  topo::Topology t;
  topo::Gpu g;
  g.pci = "0000:18:00.0";
  g.index = 3;
  g.uuid = "GPU-5d1a2c4e-0000-0000-0000-000000000003";
  t.gpus = {g};
  watch::Interval iv;
  iv.ranks = {rank(7, "0")};
  iv.ranks[0].slurm_job = "4242";
  iv.ranks[0].slurm_step = "0";
  iv.gpus = {{"0000:18:00.0", 0.5, std::nullopt, std::nullopt, std::nullopt, std::nullopt}};
  watch::Summary s;
  s.ranks.resize(1);
  s.ranks[0].pid = 7;
  s.ranks[0].slurm_job = "4242";
  s.ranks[0].changes_by_thread = {{"pt_nccl", 3}};
  std::string text = metrics_text({"n1", &t, &s, &iv, 0});
  EXPECT_NE(text.find("gpubind_rank_cross_numa_ratio{node=\"n1\",pid=\"7\",rank=\"0\",local_rank=\"0\",gpu=\"3\","
                      "UUID=\"GPU-5d1a2c4e-0000-0000-0000-000000000003\",pci=\"0000:18:00.0\",slurm_job_id=\"4242\",slurm_step_id=\"0\","),
            std::string::npos) << text;
  EXPECT_NE(text.find("gpubind_gpu_utilization_ratio{node=\"n1\",gpu=\"3\",UUID=\"GPU-5d1a2c4e-0000-0000-0000-000000000003\","
                      "pci=\"0000:18:00.0\"} 0.5\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find(",thread=\"pt_nccl\"} 3\n"), std::string::npos) << text;
  for (const char* target_label : {"job=", "instance=", "exported_"})
    for (size_t at = text.find(target_label); at != std::string::npos; at = text.find(target_label, at + 1))
      EXPECT_TRUE(at > 0 && (std::isalnum((unsigned char)text[at - 1]) || text[at - 1] == '_')) << target_label << " in " << text;
}

TEST(Metrics, RepinsAreCountedPerRankFromZeroOnlyWhenEnforcing) {
  watch::Interval iv;
  iv.ranks = {rank(7, "0"), rank(8, "1")};
  EXPECT_EQ(metrics_text({"n1", nullptr, nullptr, &iv, 0}).find("gpubind_rank_repins_total{"), std::string::npos);
  std::map<int, uint64_t> repins = {{7, 3}};
  MetricsInput in{"n1", nullptr, nullptr, &iv, 0};
  in.repins = &repins;
  in.enforce_mode = "report";
  std::string text = metrics_text(in);
  EXPECT_NE(text.find("gpubind_rank_repins_total{node=\"n1\",pid=\"7\""), std::string::npos) << text;
  EXPECT_NE(text.find(",mode=\"report\"} 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find(",mode=\"report\"} 0\n"), std::string::npos) << text;  // rank 8: none yet
}

}  // namespace gpubind::render

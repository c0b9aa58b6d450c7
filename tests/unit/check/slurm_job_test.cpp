// check --slurm-job's pure parts (check/slurm_job.hpp): the job id, squeue's answer, srun's
// command line, the lines a node prints and their merge.
#include <gtest/gtest.h>

#include "check/slurm_job.hpp"
#include "util/strings.hpp"

namespace gpubind::check {

namespace {

ProcessReport process(int pid, const std::string& rank, std::vector<Finding> findings = {}) {
  ProcessReport p;
  p.state.pid = pid;
  p.state.env["SLURM_PROCID"] = rank;
  p.state.env["SLURM_LOCALID"] = std::to_string(std::stoi(rank) % 2);
  p.state.cpus_allowed = CpuSet::of({unsigned(pid % 2)});
  p.gpus = {"0000:e1:00.0"};
  p.findings = std::move(findings);
  return p;
}

}  // namespace

TEST(SlurmJob, JobIdsAreDigitsOrArrayTasks) {
  EXPECT_TRUE(valid_job_id("4242"));
  EXPECT_TRUE(valid_job_id("4242_7"));
  for (const char* bad : {"", "42a", "-1", "1;rm", "42_", "_4", "1 2"}) EXPECT_FALSE(valid_job_id(bad)) << bad;
}

TEST(SlurmJob, OnlyARunningJobIsChecked) {
  auto n = squeue_job("7", "7|7|2|RUNNING\n");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->nodes, 2u);
  EXPECT_EQ(n->id, "7");
  auto pending = squeue_job("7", "7|7|1|PENDING\n");
  ASSERT_FALSE(pending.ok());
  EXPECT_NE(pending.error().message().find("the job is PENDING"), std::string::npos) << pending.error().message();
  EXPECT_FALSE(squeue_job("7", "").ok());
  EXPECT_FALSE(squeue_job("7", "7|7|x|RUNNING").ok());
  EXPECT_FALSE(squeue_job("7", "2|RUNNING").ok());
}

TEST(SlurmJob, AnArrayTaskIsTheJobOfItsOwnIdAndAnArraysIdIsRefusedNamingItsTasks) {
  // squeue prints an array task as 7_1; srun --jobid=7_1 said "Invalid numeric value", and the
  // task's processes carry SLURM_JOB_ID=8.
  auto task = squeue_job("7_1", "8|7_1|1|RUNNING\n");
  ASSERT_TRUE(task.ok()) << task.error().message();
  EXPECT_EQ(task->id, "8");
  auto by_own_id = squeue_job("8", "8|7_1|1|RUNNING\n");
  ASSERT_TRUE(by_own_id.ok());
  EXPECT_EQ(by_own_id->id, "8");
  // "7": the array; checking one of its tasks silently was the bug.
  for (const char* out : {"8|7_1|1|RUNNING\n9|7_2|1|RUNNING\n", "8|7_1|1|RUNNING\n"}) {
    auto array = squeue_job("7", out);
    ASSERT_FALSE(array.ok()) << out;
    EXPECT_EQ(array.error().kind, ErrorKind::usage);
    EXPECT_NE(array.error().why.find("a job array: its tasks 7_1 (job 8, running)"), std::string::npos) << array.error().why;
    EXPECT_NE(array.error().why.find("name one (--slurm-job 7_1)"), std::string::npos) << array.error().why;
  }
}

TEST(SlurmJob, SrunRunsOneCheckPerNodeBesideTheJob) {
  auto argv = fanout_command("7", 2, "/opt/gpubind", {"check", "--slurm-node", "7", "--no-gpu-runtime"});
  std::vector<std::string> want = {"srun", "--overlap", "--jobid=7", "--nodes=2", "--ntasks-per-node=1", "--quiet",
                                   "--kill-on-bad-exit=0", "/opt/gpubind", "check", "--slurm-node", "7", "--no-gpu-runtime"};
  EXPECT_EQ(argv, want);
}

TEST(SlurmJob, NodesLinesMergeIntoOneTable) {
  Report n1, n2;
  n1.processes = {process(101, "0"), process(102, "1")};
  n2.processes = {process(201, "2"), process(202, "3", {{Verdict::drifted, "allowed CPUs 0-1, gpubind applied 1"}})};
  n2.errors = {Error{"PID 203", "permission denied"}};
  // srun relays the nodes' lines interleaved, with its own messages among them.
  std::string rows1 = node_rows(n1, "n1"), rows2 = node_rows(n2, "n2");
  std::vector<std::string_view> a = split(rows1, '\n'), b = split(rows2, '\n');
  std::string out = "srun: a message of its own\n";
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    if (i < a.size()) out += std::string(a[i]) + "\n";
    if (i < b.size()) out += std::string(b[i]) + "\n";
  }
  JobReport r = merge_node_rows("7", 2, out);
  ASSERT_EQ(r.rows.size(), 4u);
  EXPECT_EQ(r.rows[0].node, "n1");
  EXPECT_EQ(r.rows[3].node, "n2");
  EXPECT_EQ(r.rows[3].pid, 202);
  EXPECT_EQ(r.rows[3].rank, "3");
  EXPECT_EQ(r.rows[3].local_rank, "1");
  EXPECT_EQ(r.rows[3].gpus, "0000:e1:00.0");
  EXPECT_EQ(r.rows[3].verdict, "DRIFTED");
  EXPECT_EQ(r.rows[3].reason, "allowed CPUs 0-1, gpubind applied 1");
  EXPECT_EQ(r.nodes, (std::vector<std::string>{"n1", "n2"}));
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0], "n2: PID 203: permission denied");
  EXPECT_TRUE(r.has_findings());
}

TEST(SlurmJob, ASilentNodeIsAnError) {
  Report n1;
  n1.processes = {process(101, "0")};
  JobReport r = merge_node_rows("7", 2, node_rows(n1, "n1"));
  EXPECT_FALSE(r.has_findings());
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0], "1 of the job's 2 nodes gave no answer");
}

TEST(SlurmJob, AFieldCannotBreakTheLine) {
  Report n1;
  n1.processes = {process(101, "0", {{Verdict::misplaced, "a\treason\nwith a newline"}})};
  JobReport r = merge_node_rows("7", 1, node_rows(n1, "n\t1"));
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].node, "n\\t1");  // escaped, never a raw tab
  EXPECT_EQ(r.rows[0].verdict, "MISPLACED");
  EXPECT_TRUE(r.errors.empty()) << r.errors[0];
}

TEST(SlurmJob, WatchSummariesOfTheNodesMerge) {
  // Each node's watch ends with its summary line among its interval lines; srun relays them.
  std::string out =
      R"({"schema_version":1,"type":"interval","node":"n1","ranks":[]})" "\n"
      R"({"schema_version":1,"type":"summary","node":"n2","intervals":3,"ranks":[{"pid":202,"comm":"python","rank":"3","local_rank":"1","seen":["DRIFTED","OVERLAP"],"worst_interval":2,"exited":false}],"any_finding":true})" "\n"
      "srun: something of its own\n"
      R"({"schema_version":1,"type":"summary","node":"n1","intervals":3,"ranks":[{"pid":101,"comm":"python","rank":"0","local_rank":"0","seen":[],"worst_interval":null,"exited":true}],"any_finding":false})" "\n";
  JobWatchReport r = merge_watch_summaries("7", 2, out);
  EXPECT_TRUE(r.errors.empty());
  EXPECT_TRUE(r.any_finding);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].node, "n1");
  EXPECT_TRUE(r.rows[0].exited);
  EXPECT_EQ(r.rows[0].seen, "");
  EXPECT_EQ(r.rows[1].seen, "DRIFTED,OVERLAP");
  EXPECT_EQ(r.rows[1].worst_interval, 2u);
  // A node without a summary, and members of the wrong type, are not trusted.
  r = merge_watch_summaries("7", 2, R"({"type":"summary","node":"n1","ranks":[{"pid":"x"},{"pid":5,"exited":"yes","seen":[1]}],"any_finding":"no"})");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0], "1 of the job's 2 nodes gave no summary");
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_FALSE(r.rows[0].exited);
  EXPECT_FALSE(r.any_finding);
}

// srun sends a task's output in messages of at most 1024 bytes and writes them as they come: a
// longer summary line from one node was cut and interleaved with another node's, and the merge
// lost a node ("1 of the job's 2 nodes gave no summary", seen in the Slurm tier). Each node's
// summary now travels as short numbered pieces, put back together whatever their interleaving.
TEST(SlurmJob, SummaryPiecesSurviveSrunInterleavingThem) {
  auto summary = [](const std::string& node, int pid) {
    std::string reason(1500, 'x');  // a long finding's reason: the line is far over 1024 bytes
    return R"({"schema_version":1,"type":"summary","node":")" + node + R"(","ranks":[{"pid":)" + std::to_string(pid) +
           R"(,"rank":"0","local_rank":"0","comm":"python","seen":["DRIFTED"],"findings":[{"reason":")" + reason +
           R"("}],"worst_interval":1,"exited":false}],"any_finding":true})";
  };
  std::string a = summary_pieces("n1", summary("n1", 101) + "\n"), b = summary_pieces("n2", summary("n2", 202));
  std::vector<std::string_view> la = split(a, '\n'), lb = split(b, '\n');
  ASSERT_GT(la.size(), 3u);
  for (std::string_view l : la) EXPECT_LT(l.size(), 1024u);
  // The two nodes' pieces alternating, srun's own chatter between.
  std::string out;
  for (size_t i = 0; i < std::max(la.size(), lb.size()); ++i) {
    if (i < lb.size() && !lb[i].empty()) out += std::string(lb[i]) + "\n";
    if (i == 1) out += "srun: something of its own\n";
    if (i < la.size() && !la[i].empty()) out += std::string(la[i]) + "\n";
  }
  JobWatchReport r = merge_watch_summaries("7", 2, out);
  EXPECT_TRUE(r.errors.empty()) << (r.errors.empty() ? "" : r.errors[0]);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].node, "n1");
  EXPECT_EQ(r.rows[0].pid, 101);
  EXPECT_EQ(r.rows[1].pid, 202);
  // A node whose pieces did not all come gave no summary.
  std::string missing = a.substr(0, a.find('\n') + 1) + b;
  r = merge_watch_summaries("7", 2, missing);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0], "1 of the job's 2 nodes gave no summary");
}

}  // namespace gpubind::check

#include "bind/hostlist.hpp"
#include "bind/launcher.hpp"

#include <gtest/gtest.h>

#include <map>

namespace gpubind::bind {

TEST(Hostlist, FirstHostOfASlurmNodelist) {
  EXPECT_EQ(first_host("node17"), "node17");
  EXPECT_EQ(first_host("node[01-04,07],gpu5"), "node01");
  EXPECT_EQ(first_host("gpu[007-010]"), "gpu007");
  EXPECT_EQ(first_host("a,b"), "a");
  EXPECT_EQ(first_host("rack1-node[3,5]-ib"), "rack1-node3-ib");
  EXPECT_FALSE(first_host("").has_value());
  EXPECT_FALSE(first_host("node[").has_value());
  EXPECT_FALSE(first_host("node]1").has_value());
  EXPECT_FALSE(first_host("node[a-b]").has_value());
}

TEST(Hostlist, ExpandsEveryHost) {
  using V = std::vector<std::string>;
  EXPECT_EQ(*expand_hosts("node[01-03,07],gpu5"), (V{"node01", "node02", "node03", "node07", "gpu5"}));
  EXPECT_EQ(*expand_hosts("gpu[009-011]"), (V{"gpu009", "gpu010", "gpu011"}));
  EXPECT_EQ(*expand_hosts("r[1-2]n[1-2]"), (V{"r1n1", "r1n2", "r2n1", "r2n2"}));
  EXPECT_FALSE(expand_hosts("node[3-1]").ok());
  EXPECT_FALSE(expand_hosts("node[[1]]").ok());
  EXPECT_FALSE(expand_hosts("a,,b").ok());
  EXPECT_FALSE(expand_hosts("n[0-99999999]", 1000).ok());  // bounded, not 100 million strings
  EXPECT_EQ(expand_hosts("n[0-99999999]", 2, false)->size(), 2u);
}

TEST(LauncherEnvironment, TorchrunContract) {
  LaunchSpec spec;
  spec.nnodes = 2;
  spec.node_rank = 1;
  spec.master_addr = "node01";
  spec.master_port = 29500;
  std::map<std::string, std::string> env;
  for (const auto& [k, v] : launcher_environment(spec, 3, 8)) env[k] = v;
  EXPECT_EQ(env["RANK"], "11");
  EXPECT_EQ(env["LOCAL_RANK"], "3");
  EXPECT_EQ(env["WORLD_SIZE"], "16");
  EXPECT_EQ(env["LOCAL_WORLD_SIZE"], "8");
  EXPECT_EQ(env["GROUP_RANK"], "1");
  EXPECT_EQ(env["NODE_RANK"], "1");
  EXPECT_EQ(env["MASTER_ADDR"], "node01");
  EXPECT_EQ(env["MASTER_PORT"], "29500");
}

TEST(LauncherEnvironment, EveryVariableTorchrunSets) {
  // torch 1.13's local_elastic_agent sets exactly these (and OMP_NUM_THREADS when inherited).
  LaunchSpec spec;
  spec.role = "trainer";
  spec.run_id = "job42";
  spec.max_restarts = 3;
  spec.restart_count = 2;
  std::map<std::string, std::string> env;
  for (const auto& [k, v] : launcher_environment(spec, 0, 2)) env[k] = v;
  for (const char* k : {"LOCAL_RANK", "RANK", "GROUP_RANK", "ROLE_RANK", "ROLE_NAME", "LOCAL_WORLD_SIZE", "WORLD_SIZE",
                        "GROUP_WORLD_SIZE", "ROLE_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT",
                        "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_USE_AGENT_STORE",
                        "NCCL_ASYNC_ERROR_HANDLING"})
    EXPECT_TRUE(env.count(k)) << k;
  EXPECT_EQ(env["ROLE_NAME"], "trainer");
  EXPECT_EQ(env["TORCHELASTIC_RUN_ID"], "job42");
  EXPECT_EQ(env["TORCHELASTIC_RESTART_COUNT"], "2");
  EXPECT_EQ(env["TORCHELASTIC_MAX_RESTARTS"], "3");
  EXPECT_EQ(env["TORCHELASTIC_USE_AGENT_STORE"], "False");  // rank 0 hosts the store, not an agent
  EXPECT_EQ(env["NCCL_ASYNC_ERROR_HANDLING"], "1");
  EXPECT_EQ(env["TORCH_NCCL_ASYNC_ERROR_HANDLING"], "1");
}

TEST(Torchrun, NnodesFixedOrRange) {
  EXPECT_EQ(parse_nnodes("2")->min, 2u);
  EXPECT_EQ(parse_nnodes("2")->max, 2u);
  EXPECT_EQ(parse_nnodes("1:4")->max, 4u);
  EXPECT_FALSE(parse_nnodes("0").ok());
  EXPECT_FALSE(parse_nnodes("4:1").ok());
  EXPECT_FALSE(parse_nnodes("two").ok());
}

TEST(Torchrun, StreamSelectionForAllOrPerRank) {
  EXPECT_EQ(parse_stream_selection("--tee", "3")->of(5), 3u);
  auto per = parse_stream_selection("--redirects", "0:1,2:3");
  ASSERT_TRUE(per.ok());
  EXPECT_EQ(per->of(0), 1u);
  EXPECT_EQ(per->of(1), 0u);
  EXPECT_EQ(per->of(2), 3u);
  EXPECT_FALSE(parse_stream_selection("--tee", "4").ok());
  EXPECT_FALSE(parse_stream_selection("--tee", "0:x").ok());
}

TEST(Torchrun, RdzvConfKeyValues) {
  auto kv = parse_key_values("--rdzv-conf", "join_timeout=30, read_timeout=60");
  ASSERT_TRUE(kv.ok());
  EXPECT_EQ((*kv)["join_timeout"], "30");
  EXPECT_EQ((*kv)["read_timeout"], "60");
  EXPECT_TRUE(parse_key_values("--rdzv-conf", "")->empty());
  EXPECT_FALSE(parse_key_values("--rdzv-conf", "timeout").ok());
}

TEST(Torchrun, LocalRankMacroInArguments) {
  auto args = substitute_local_rank({"train.py", "--out=run${local_rank}.log", "${local_rank}${local_rank}"}, 7);
  EXPECT_EQ(args[1], "--out=run7.log");
  EXPECT_EQ(args[2], "77");
}

}  // namespace gpubind::bind

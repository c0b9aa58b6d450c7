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

}  // namespace gpubind::bind

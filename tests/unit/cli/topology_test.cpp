// Where a command's topology comes from (cli::acquire_topology): one rule for every command,
// one test per branch of it.
#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <string>

#include "../../support/env_var.hpp"
#include "../../support/fake_tree.hpp"
#include "bind/config.hpp"
#include "cli/common.hpp"

namespace gpubind::cli {
namespace {

using testing::EnvVar;

size_t files_in(const std::string& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

}  // namespace

TEST(AcquireTopology, ACapturedTreeWithoutATopologyIsAUsageErrorNamingTheTree) {
  EnvVar no_file("GPUBIND_TOPOLOGY", std::nullopt);
  auto t = acquire_topology({.root = "/captured/node7", .recorded = "recorded", .quiet = true});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().kind, ErrorKind::usage);
  EXPECT_EQ(t.error().message(), "--root /captured/node7: needs --topology (the machine the recorded processes ran on)");
}

TEST(AcquireTopology, K8sCheckReadsTheTreesOwnSysAndSaysWhenItHasNone) {
  EnvVar no_file("GPUBIND_TOPOLOGY", std::nullopt);
  testing::FakeTree tree;
  tree.file("proc/1/status", "Name:\tinit\n");
  auto t = acquire_topology({.root = tree.root(), .root_is_machine = true, .quiet = true});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().kind, ErrorKind::usage);
  EXPECT_EQ(t.error().message(), "--root " + tree.root() + ": has no sys/devices/system/node: give --topology SRC (the node's topology)");
}

TEST(AcquireTopology, AFileIsTakenAsItIsToDescribeOrJudgeAMachine) {
  EnvVar no_file("GPUBIND_TOPOLOGY", std::nullopt);
  for (TopologyUse use : {TopologyUse::describe, TopologyUse::processes}) {
    auto t = acquire_topology({.use = use, .flag = "example:dgx-h100", .root = "/captured/tree", .quiet = true});
    ASSERT_TRUE(t.ok()) << t.error().message();
    EXPECT_EQ(t->gpus.size(), 8u);
  }
}

TEST(AcquireTopology, ABindingTakesAFileOnlyWhenItDescribesThisMachineOrIsPreviewed) {
  EnvVar no_file("GPUBIND_TOPOLOGY", std::nullopt);
  auto bound = acquire_topology({.use = TopologyUse::binding, .flag = "example:dgx-h100", .quiet = true});
  ASSERT_FALSE(bound.ok()) << "a DGX H100's topology taken to bind this machine's processes";
  EXPECT_EQ(bound.error().message().rfind("--topology example:dgx-h100", 0), 0u) << bound.error().message();
  auto previewed = acquire_topology({.use = TopologyUse::binding, .flag = "example:dgx-h100", .preview = true, .quiet = true});
  ASSERT_TRUE(previewed.ok()) << previewed.error().message();
  EXPECT_EQ(previewed->gpus.size(), 8u);
}

TEST(AcquireTopology, GpubindTopologyStandsInForTheFlagAndIsNamedInErrors) {
  EnvVar file("GPUBIND_TOPOLOGY", "example:dgx-h100");
  auto judged = acquire_topology({.quiet = true});
  ASSERT_TRUE(judged.ok()) << judged.error().message();
  EXPECT_EQ(judged->gpus.size(), 8u);
  auto bound = acquire_topology({.use = TopologyUse::binding, .quiet = true});
  ASSERT_FALSE(bound.ok());
  EXPECT_EQ(bound.error().message().rfind("GPUBIND_TOPOLOGY=example:dgx-h100", 0), 0u) << bound.error().message();
  auto flag = acquire_topology({.flag = "example:gh200", .quiet = true});  // the flag wins
  ASSERT_TRUE(flag.ok()) << flag.error().message();
  EXPECT_NE(flag->gpus.size(), judged->gpus.size());
}

TEST(AcquireTopology, ThisMachineToJudgeOrBindComesThroughTheConfiguredCacheAndToDescribeAfresh) {
  EnvVar no_file("GPUBIND_TOPOLOGY", std::nullopt);
  EnvVar no_override("GPUBIND_CACHE_DIR", std::nullopt);
  testing::FakeTree dir;
  bind::Config cfg;
  cfg.cache_dir = dir.root();
  auto described = acquire_topology({.use = TopologyUse::describe, .config = &cfg, .quiet = true});
  ASSERT_TRUE(described.ok()) << described.error().message();
  EXPECT_EQ(files_in(dir.root()), 0u) << "topo, plan, compare and slurm discover this machine afresh";
  auto uncached = acquire_topology({.use = TopologyUse::binding, .no_cache = true, .config = &cfg, .quiet = true});
  ASSERT_TRUE(uncached.ok()) << uncached.error().message();
  EXPECT_EQ(files_in(dir.root()), 0u) << "--no-cache wrote the cache";
  for (TopologyUse use : {TopologyUse::processes, TopologyUse::binding}) {
    auto t = acquire_topology({.use = use, .config = &cfg, .quiet = true});
    ASSERT_TRUE(t.ok()) << t.error().message();
    EXPECT_EQ(t->cpus, described->cpus);
    EXPECT_EQ(files_in(dir.root()), 1u) << "not through gpubind.conf's cache_dir";
  }
}

}  // namespace gpubind::cli

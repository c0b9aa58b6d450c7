// The SPANK plugin's plugstack.conf arguments and --gpubind option, parsed without Slurm.
#include "bind/spank_args.hpp"

#include <gtest/gtest.h>

namespace gpubind::bind {

TEST(SpankArgs, EveryPlugstackArgument) {
  auto a = parse_plugstack_args(
      {"default=socket-split", "mem=bind", "strict", "require-mem-policy", "dryrun", "config=/etc/x.conf", "topology=/t.json"});
  ASSERT_TRUE(a.ok()) << a.error().message();
  EXPECT_EQ(a->site_default, "socket-split");
  EXPECT_EQ(a->mem, plan::MemPolicy::bind);
  EXPECT_TRUE(a->mem_set && a->strict && a->require_mem_policy && a->dry_run && a->config_set);
  EXPECT_EQ(a->config, "/etc/x.conf");
  EXPECT_EQ(a->topology, "/t.json");
  auto none = parse_plugstack_args({});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->site_default, "");
  EXPECT_EQ(none->config, kDefaultConfigPath);
  EXPECT_FALSE(none->require_mem_policy);
}

TEST(SpankArgs, ExecsPlanningOptions) {
  auto a = parse_plugstack_args(
      {"no-smt", "nic-env", "isolate-gpus", "omp", "nccl-proxy-cpus", "balanced", "require-gpu", "gpus-per-rank=2", "mem-node=3"});
  ASSERT_TRUE(a.ok()) << a.error().message();
  EXPECT_TRUE(a->plan.no_smt && a->plan.nic_env && a->plan.isolate_gpus && a->plan.omp && a->plan.balanced && a->plan.require_gpu);
  EXPECT_TRUE(a->plan.nccl_proxy_cpus);
  EXPECT_EQ(a->plan.gpus_per_rank, 2u);
  EXPECT_EQ(a->plan.mem_node, 3u);
  auto none = parse_plugstack_args({});
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->plan.no_smt || none->plan.nic_env || none->plan.isolate_gpus || none->plan.omp || none->plan.balanced ||
               none->plan.nccl_proxy_cpus);
  EXPECT_FALSE(none->plan.gpus_per_rank || none->plan.mem_node);
  for (const char* bad : {"gpus-per-rank=0", "gpus-per-rank=x", "mem-node=", "mem-node=99999", "no-smt=1"})
    EXPECT_FALSE(parse_plugstack_args({bad}).ok()) << bad;
}

TEST(SpankArgs, BadPlugstackArgumentsAreNamed) {
  auto bad = parse_plugstack_args({"default=fastest"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().what, "plugstack.conf: bad argument 'default=fastest'");
  EXPECT_NE(bad.error().why.find("default=closest|socket-split"), std::string::npos);
  EXPECT_FALSE(parse_plugstack_args({"mem=nearest"}).ok());
  auto unknown = parse_plugstack_args({"strict", "colour=blue\n"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().what.find('\n'), std::string::npos);  // one line, even for a newline
}

TEST(SpankArgs, GpubindOption) {
  auto bare = parse_gpubind_option(nullptr);
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->mode, "closest");
  EXPECT_TRUE(bare->defaulted);
  auto null_text = parse_gpubind_option("(null)");  // sbatch's bare --gpubind as steps see it
  ASSERT_TRUE(null_text.ok());
  EXPECT_TRUE(null_text->defaulted);
  auto verbose = parse_gpubind_option("verbose");
  ASSERT_TRUE(verbose.ok());
  EXPECT_TRUE(verbose->verbose && verbose->defaulted);
  EXPECT_EQ(verbose->mode, "closest");
  auto numa = parse_gpubind_option("numa");
  ASSERT_TRUE(numa.ok());
  EXPECT_FALSE(numa->defaulted);
  EXPECT_FALSE(parse_gpubind_option("sockets").ok());
}

// --gpubind=numa,verbose was refused (exit 255 from srun): a mode combines with verbose/report,
// mem= and nic-env, in any order; one mode at most.
TEST(SpankArgs, GpubindOptionWordsCombine) {
  auto o = parse_gpubind_option("numa,verbose");
  ASSERT_TRUE(o.ok()) << o.error().message();
  EXPECT_EQ(o->mode, "numa");
  EXPECT_FALSE(o->defaulted);
  EXPECT_TRUE(o->verbose);
  auto m = parse_gpubind_option("report,mem=interleave,nic-env");
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_EQ(m->mode, "closest");
  EXPECT_TRUE(m->defaulted);
  EXPECT_TRUE(m->verbose && m->nic_env);
  ASSERT_TRUE(m->mem.has_value());
  EXPECT_EQ(*m->mem, plan::MemPolicy::interleave);
  auto s = parse_gpubind_option("nic-env,socket-split");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->mode, "socket-split");
  EXPECT_FALSE(s->verbose);
  auto two = parse_gpubind_option("numa,socket");
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.error().why.find("two modes"), std::string::npos) << two.error().why;
  EXPECT_FALSE(parse_gpubind_option("numa,mem=nearest").ok());
  EXPECT_FALSE(parse_gpubind_option("numa,,verbose").ok());
  EXPECT_FALSE(parse_gpubind_option("numa,loud").ok());
}

// The release a built plugin names: the prefix followed by digits and dots up to a NUL; the bare
// prefix (the reader's own constant, also in the file) and a cut-off text are skipped.
TEST(SpankArgs, BuiltForIsTheReleaseAfterThePrefixUpToItsNul) {
  using namespace std::string_literals;
  std::string prefix(kSpankBuiltFor);
  EXPECT_EQ(spank_built_for("\x7f"
                            "ELF"s +
                            prefix + "\0junk"s + prefix + "25.11.4\0more"s),
            "25.11.4");
  EXPECT_FALSE(spank_built_for(prefix + "\0"s));
  EXPECT_FALSE(spank_built_for(prefix + "22.05"));  // no NUL: cut off
  EXPECT_FALSE(spank_built_for(prefix + "22.05x\0"s));
  EXPECT_FALSE(spank_built_for("no marker at all"));
}

}  // namespace gpubind::bind

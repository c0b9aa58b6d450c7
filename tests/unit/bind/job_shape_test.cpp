// bind::job_shape: launch's flags (torchrun's names and defaults) and Slurm's variables in, this
// node's part of the job out.
#include "bind/job_shape.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace gpubind::bind {
namespace {

using Env = std::map<std::string, std::string>;

LaunchFlags torchrun(std::vector<std::string> rest) {
  LaunchFlags f;
  f.rest = std::move(rest);
  return f;
}

JobShape must(const LaunchFlags& f, const Env& env = {}) {
  auto s = job_shape(f, env);
  if (!s.ok()) throw std::runtime_error("job_shape failed: " + s.error().message());
  return std::move(s).value();
}

Error refused(const LaunchFlags& f, const Env& env = {}) {
  auto s = job_shape(f, env);
  if (s.ok()) throw std::runtime_error("job_shape accepted what it must refuse");
  EXPECT_EQ(s.error().kind, ErrorKind::usage) << s.error().message();
  return s.error();
}

TEST(JobShape, TorchrunsScriptFormRunsPythonUnbufferedOnOneNodeAtAFreePort) {
  LaunchFlags f = torchrun({"train.py", "--epochs", "1"});
  f.nproc = "8";
  JobShape s = must(f);
  EXPECT_EQ(s.spec.command, (std::vector<std::string>{"python3", "-u", "train.py", "--epochs", "1"}));
  EXPECT_TRUE(s.spec.substitute_local_rank);  // torchrun's ${local_rank}
  EXPECT_EQ(s.ranks, 8u);
  EXPECT_EQ(s.spec.nnodes, 1u);
  EXPECT_EQ(s.spec.node_rank, 0u);
  EXPECT_EQ(s.spec.master_addr, "127.0.0.1");
  EXPECT_TRUE(s.needs_free_port);
  EXPECT_EQ(s.spec.run_id, "gpubind");
  EXPECT_EQ(s.spec.role, "default");
  EXPECT_DOUBLE_EQ(s.join_timeout_seconds, 600);  // torchrun's join timeout
  EXPECT_EQ(s.spec.nccl_async_error_handling, "1");
}

TEST(JobShape, ModuleNoPythonAndTheDashDashForm) {
  LaunchFlags m = torchrun({"pkg.train"});
  m.module = true;
  EXPECT_EQ(must(m, {{"GPUBIND_PYTHON", "/opt/py/bin/python"}}).spec.command,
            (std::vector<std::string>{"/opt/py/bin/python", "-u", "-m", "pkg.train"}));
  LaunchFlags direct = torchrun({"./train.sh"});
  direct.no_python = true;
  EXPECT_EQ(must(direct).spec.command, std::vector<std::string>{"./train.sh"});
  JobShape dash = must(torchrun({"--", "python", "train.py"}));
  EXPECT_EQ(dash.spec.command, (std::vector<std::string>{"python", "train.py"}));
  EXPECT_FALSE(dash.spec.substitute_local_rank);
  LaunchFlags wrong = torchrun({"--", "python"});
  wrong.module = true;
  EXPECT_EQ(refused(wrong).what, "--module");
}

TEST(JobShape, UnderSrunNodesNodeRankMasterAndRunIdComeFromSlurm) {
  Env slurm = {{"SLURM_STEP_ID", "0"}, {"SLURM_NNODES", "4"}, {"SLURM_NODEID", "2"}, {"SLURM_JOB_NODELIST", "gpu[07-10]"},
               {"SLURM_JOB_ID", "4242"}};
  JobShape s = must(torchrun({"train.py"}), slurm);
  EXPECT_EQ(s.spec.nnodes, 4u);
  EXPECT_EQ(s.spec.node_rank, 2u);
  EXPECT_EQ(s.spec.master_addr, "gpu07");
  EXPECT_EQ(s.spec.master_port, 29500u);  // torchrun's static default on several nodes
  EXPECT_FALSE(s.needs_free_port);
  EXPECT_EQ(s.spec.run_id, "slurm-4242");
  // Flags win over Slurm's variables.
  LaunchFlags f = torchrun({"train.py"});
  f.nnodes = "2";
  f.node_rank = 1;
  f.master_addr = "head";
  f.master_port = 1234;
  f.rdzv_id = "run7";
  JobShape g = must(f, slurm);
  EXPECT_EQ(g.spec.nnodes, 2u);
  EXPECT_EQ(g.spec.node_rank, 1u);
  EXPECT_EQ(g.spec.master_addr, "head");
  EXPECT_EQ(g.spec.master_port, 1234u);
  EXPECT_EQ(g.spec.run_id, "run7");
}

TEST(JobShape, RdzvEndpointGivesTheMasterWithC10dsPortOnSeveralNodes) {
  LaunchFlags f = torchrun({"train.py"});
  f.nnodes = "2";
  f.node_rank = 0;
  f.rdzv_backend = "c10d";
  f.rdzv_endpoint = "node0";
  JobShape s = must(f);
  EXPECT_EQ(s.spec.master_addr, "node0");
  EXPECT_EQ(s.spec.master_port, 29400u);
  f.rdzv_endpoint = "node0:5555";
  EXPECT_EQ(must(f).spec.master_port, 5555u);
  f.rdzv_endpoint = "node0:99999";
  EXPECT_EQ(refused(f).what, "--rdzv-endpoint node0:99999");
  f.rdzv_endpoint = "node0";
  f.master_addr = "other";
  EXPECT_EQ(refused(f).what, "--rdzv-endpoint");
}

TEST(JobShape, StandaloneIsOneNodeOnLocalhost) {
  LaunchFlags f = torchrun({"train.py"});
  f.standalone = true;
  f.rdzv_endpoint = "elsewhere:1";
  JobShape s = must(f);
  EXPECT_EQ(s.spec.master_addr, "127.0.0.1");
  EXPECT_TRUE(s.needs_free_port);
  f.nnodes = "2";
  EXPECT_EQ(refused(f).what, "--standalone");
}

TEST(JobShape, RdzvConfJoinTimeoutIsHonouredAndOtherKeysRefused) {
  LaunchFlags f = torchrun({"train.py"});
  f.rdzv_conf = "join_timeout=30";
  EXPECT_DOUBLE_EQ(must(f).join_timeout_seconds, 30);
  f.rdzv_conf = "read_timeout=30";
  EXPECT_EQ(refused(f).what, "--rdzv-conf read_timeout");
}

TEST(JobShape, FlagsThatCannotBeHonouredAreRefusedByName) {
  auto with = [](auto set) {
    LaunchFlags f = torchrun({"train.py"});
    set(f);
    return refused(f).what;
  };
  EXPECT_EQ(with([](LaunchFlags& f) { f.run_path = true; }), "--run-path");
  EXPECT_EQ(with([](LaunchFlags& f) { f.rdzv_backend = "etcd"; }), "--rdzv-backend etcd");
  EXPECT_EQ(with([](LaunchFlags& f) { f.tee = "3"; }), "--tee");  // no --log-dir
  EXPECT_EQ(with([](LaunchFlags& f) { f.nnodes = "1:4"; }), "--nnodes 1:4");  // elastic
  EXPECT_EQ(with([](LaunchFlags& f) {
              f.nnodes = "2";
              f.master_addr = "h";
              f.node_rank = 2;
            }),
            "--node-rank 2");
  EXPECT_EQ(with([](LaunchFlags& f) { f.nnodes = "2"; }), "--nnodes 2");  // several nodes, no master
  EXPECT_EQ(with([](LaunchFlags& f) {
              f.nnodes = "2";
              f.master_addr = "h";
              f.rdzv_backend = "c10d";
            }),
            "--rdzv-backend c10d");  // node rank unknown
  EXPECT_EQ(with([](LaunchFlags& f) {
              f.ranks = 2;
              f.nproc = "4";
            }),
            "--nproc-per-node");
  EXPECT_EQ(with([](LaunchFlags& f) { f.nproc = "many"; }), "--nproc-per-node many");
  EXPECT_EQ(with([](LaunchFlags& f) { f.rest = {"--bogus"}; }), "launch");
  EXPECT_EQ(with([](LaunchFlags& f) { f.rest.clear(); }), "launch");
}

TEST(JobShape, NprocGpuCpuAutoAreLeftToTheMachine) {
  LaunchFlags f = torchrun({"train.py"});
  f.nproc = "gpu";
  JobShape s = must(f);
  EXPECT_FALSE(s.ranks);
  EXPECT_EQ(s.ranks_from, "gpu");
}

TEST(JobShape, TheWorkersNcclSettingFollowsTorchsVariables) {
  EXPECT_EQ(must(torchrun({"t.py"}), {{"NCCL_ASYNC_ERROR_HANDLING", "0"}}).spec.nccl_async_error_handling, "0");
  EXPECT_EQ(must(torchrun({"t.py"}), {{"TORCH_NCCL_ASYNC_ERROR_HANDLING", "3"}, {"NCCL_ASYNC_ERROR_HANDLING", "0"}})
                .spec.nccl_async_error_handling,
            "3");
}

}  // namespace
}  // namespace gpubind::bind

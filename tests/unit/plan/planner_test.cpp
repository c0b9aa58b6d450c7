// The planner's rules (../shared/DESIGN.md "Planner rules", issue 3), one test per rule and per
// fallback, named after it.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include "../../support/test_machines.hpp"
#include "discover/source.hpp"
#include "plan/plan.hpp"

namespace gpubind::plan {

namespace {

using testing::example;

// The plan, or the test fails here: the exception ends the test (GoogleTest reports it) before
// it can index into a plan that was never made.
Plan must_plan(const topo::Topology& t, const Request& r) {
  auto p = make_plan(t, r);
  if (!p.ok()) throw std::runtime_error("make_plan failed: " + p.error().message());
  return std::move(p).value();
}

Request with_env(std::map<std::string, std::string> env) {
  Request r;
  r.env = std::move(env);
  return r;
}

bool has_warning(const Plan& p, const std::string& part) {
  for (const auto& w : p.warnings)
    if (w.find(part) != std::string::npos) return true;
  return false;
}

std::string env_of(const RankBinding& rb, const std::string& k) {
  for (const auto& [key, v] : rb.env)
    if (key == k) return v;
  return "";
}

// One NUMA node, 8 L3 domains of 4 cores (2 PUs each, siblings n and n+32), two GPUs on it.
topo::Topology eight_l3_node() {
  topo::Topology t;
  t.origin = "test";
  t.cpus = t.allowed_cpus = CpuSet::range(0, 63);
  t.packages.push_back({0, t.cpus});
  t.numa_nodes.push_back({0, t.cpus, 0, 0, ""});
  for (unsigned l = 0; l < 8; ++l) {
    CpuSet s;
    for (unsigned c = l * 4; c < l * 4 + 4; ++c) {
      s.set(c);
      s.set(c + 32);
      t.cores.push_back({CpuSet::of({c, c + 32})});
    }
    t.l3_domains.push_back({s, 32u << 20});
  }
  for (unsigned i = 0; i < 2; ++i) {
    topo::Gpu g;
    g.index = i;
    g.pci = "0000:0" + std::to_string(i + 1) + ":00.0";
    g.vendor = topo::Vendor::nvidia;
    g.device_id = 0x2330;
    g.numa = std::vector<unsigned>{0};
    g.cpus = t.cpus;
    g.pcie_path = {"hb:0000:0" + std::to_string(i)};
    g.uuid = i == 0 ? "GPU-aaaa1111-0000-0000-0000-000000000000" : "GPU-bbbb2222-0000-0000-0000-000000000000";
    t.gpus.push_back(g);
  }
  return t;
}

// `packages` packages with one NUMA node each of `cores` cores x `smt` PUs, and gpus_on[n] GPUs
// on node n (issue 10's crowded machines in miniature).
topo::Topology crowded_machine(unsigned packages, unsigned cores, unsigned smt, const std::vector<unsigned>& gpus_on) {
  return testing::synthetic_with_gpus("pack:" + std::to_string(packages) + " numa:1 core:" + std::to_string(cores) + " pu:" +
                                          std::to_string(smt),
                                      gpus_on);
}

bool on_gpu_node(const topo::Topology& t, const RankBinding& rb) {
  const topo::Gpu* g = topo::find_gpu(t, rb.gpus.at(0).pci);
  return rb.cpus.is_subset_of(topo::cpus_of_nodes(t, *g->numa));
}

unsigned ranks_on_gpu_node(const topo::Topology& t, const Plan& p) {
  unsigned n = 0;
  for (const auto& rb : p.ranks) n += on_gpu_node(t, rb);
  return n;
}

}  // namespace

// --- 1. defaults -----------------------------------------------------------------------------

TEST(Planner, DefaultRanksEqualVisibleGpus) {
  Plan p = must_plan(example("dgx-h100"), {});
  ASSERT_EQ(p.ranks.size(), 8u);
  for (unsigned r = 0; r < 8; ++r) EXPECT_EQ(p.ranks[r].gpus.at(0).index, r);
  EXPECT_EQ(p.policy, Policy::closest);
  EXPECT_EQ(p.ranks[0].mem_policy, MemPolicy::preferred);
}

TEST(Planner, SmtSiblingsStayTogether) {
  auto t = example("dgx-h100");
  Plan p = must_plan(t, {});
  for (const auto& rb : p.ranks)
    for (const auto& c : t.cores)
      if (c.pus.intersects(rb.cpus)) {
        EXPECT_TRUE(c.pus.is_subset_of(rb.cpus)) << c.pus.to_list();
      }
}

TEST(Planner, NoSmtKeepsOnePuPerCore) {
  Request r;
  r.smt = false;
  Plan p = must_plan(example("dgx-h100"), r);
  EXPECT_EQ(p.ranks[0].cpus.to_list(), "0-13");
  EXPECT_EQ(p.ranks[4].cpus.to_list(), "56-69");
}

TEST(Planner, OneRankOwnsEveryVisibleGpu) {
  // One task per node (srun --ntasks-per-node=1 running its own launcher) owns the node.
  auto t = example("dgx-h100");
  Request r;
  r.ranks = 1;
  Plan p = must_plan(t, r);
  ASSERT_EQ(p.ranks.size(), 1u);
  EXPECT_EQ(p.ranks[0].gpus.size(), 8u);
  EXPECT_EQ(p.ranks[0].cpus, t.allowed_cpus);
  EXPECT_EQ(p.ranks[0].nics.size(), 8u);
  EXPECT_EQ(p.ranks[0].mem_nodes, (std::vector<unsigned>{0, 1}));
  // An explicit --gpus-per-rank 1 keeps the old meaning: the first GPU and its node.
  r.gpus_per_rank = 1;
  Plan one = must_plan(t, r);
  EXPECT_EQ(one.ranks[0].gpus.size(), 1u);
  EXPECT_EQ(one.ranks[0].cpus.to_list(), "0-55,112-167");
}

TEST(Planner, RanksGpusGivenByTheLauncherAreKept) {
  // Slurm's --gpu-bind=map_gpu:5,0: rank 0 drives GPU 5 (socket 1), rank 1 GPU 0 (socket 0).
  auto t = example("dgx-h100");
  Request r;
  r.ranks = 2;
  r.rank_gpus = {{5}, {0}};
  Plan p = must_plan(t, r);
  ASSERT_EQ(p.ranks.size(), 2u);
  ASSERT_EQ(p.ranks[0].gpus.size(), 1u);
  EXPECT_EQ(p.ranks[0].gpus[0].index, 5u);
  EXPECT_EQ(p.ranks[1].gpus[0].index, 0u);
  EXPECT_TRUE(p.ranks[0].cpus.is_subset_of(t.numa_nodes[1].cpus)) << p.ranks[0].cpus.to_list();
  EXPECT_TRUE(p.ranks[1].cpus.is_subset_of(t.numa_nodes[0].cpus)) << p.ranks[1].cpus.to_list();
}

TEST(Planner, RanksGpusGivenByTheLauncherGetTheCpusOfTheirGpuAsWithoutThem) {
  // A rank gets the same CPUs whether Slurm narrows each task to its GPU or not: with the ranks
  // permuted over the GPUs, the rank on GPU g gets what the default plan gives GPU g's rank.
  auto t = example("dgx-h100");
  Request plain;
  plain.ranks = 8;
  Plan base = must_plan(t, plain);
  Request given = plain;
  const std::vector<unsigned> gpu_of_rank = {3, 7, 0, 4, 1, 5, 2, 6};
  for (unsigned g : gpu_of_rank) given.rank_gpus.push_back({g});
  Plan p = must_plan(t, given);
  for (unsigned r = 0; r < 8; ++r) {
    EXPECT_EQ(p.ranks[r].gpus[0].index, gpu_of_rank[r]);
    EXPECT_EQ(p.ranks[r].cpus, base.ranks[gpu_of_rank[r]].cpus) << "rank " << r;
    EXPECT_EQ(p.ranks[r].mem_nodes, base.ranks[gpu_of_rank[r]].mem_nodes) << "rank " << r;
  }
}

TEST(Planner, RanksGpusGivenMustNameEveryRankAndVisibleGpus) {
  auto t = example("dgx-h100");
  Request r;
  r.ranks = 3;
  r.rank_gpus = {{0}, {1}};
  EXPECT_FALSE(make_plan(t, r).ok());
  r.ranks = 2;
  r.rank_gpus = {{0}, {8}};
  auto p = make_plan(t, r);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message().find("position 8 of 8 visible GPUs"), std::string::npos) << p.error().message();
}

// --- 2. GPU identity -------------------------------------------------------------------------

TEST(GpuIdentity, CudaVisibleDevicesIndicesPickGpusInOrder) {
  Plan p = must_plan(example("dgx-h100"), with_env({{"CUDA_VISIBLE_DEVICES", "5,2"}}));
  ASSERT_EQ(p.ranks.size(), 2u);
  EXPECT_EQ(p.ranks[0].gpus[0].index, 5u);
  EXPECT_EQ(p.ranks[1].gpus[0].index, 2u);
  // Each rank runs next to its own GPU: rank 0 on socket 1, rank 1 on socket 0.
  EXPECT_TRUE(p.ranks[0].cpus.is_subset_of(CpuSet::range(56, 111) | CpuSet::range(168, 223)));
  EXPECT_TRUE(p.ranks[1].cpus.is_subset_of(CpuSet::range(0, 55) | CpuSet::range(112, 167)));
}

TEST(GpuIdentity, CudaVisibleDevicesUuidPrefix) {
  Plan p = must_plan(eight_l3_node(), with_env({{"CUDA_VISIBLE_DEVICES", "GPU-bbbb"}}));
  ASSERT_EQ(p.ranks.size(), 1u);
  EXPECT_EQ(p.ranks[0].gpus[0].index, 1u);
}

TEST(GpuIdentity, UnknownUuidIsAnError) {
  auto p = make_plan(eight_l3_node(), with_env({{"CUDA_VISIBLE_DEVICES", "GPU-cccc"}}));
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message().find("no GPU has a UUID"), std::string::npos) << p.error().message();
}

TEST(GpuIdentity, UuidWithoutUuidsInTopologyIsAnError) {
  auto p = make_plan(example("dgx-h100"), with_env({{"CUDA_VISIBLE_DEVICES", "GPU-1234"}}));
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message().find("records no GPU UUIDs"), std::string::npos);
}

TEST(GpuIdentity, LegacyMigIdMapsToParentGpu) {
  Plan p = must_plan(eight_l3_node(), with_env({{"CUDA_VISIBLE_DEVICES", "MIG-GPU-bbbb2222-0000-0000-0000-000000000000/1/0"}}));
  ASSERT_EQ(p.ranks.size(), 1u);
  EXPECT_EQ(p.ranks[0].gpus[0].index, 1u);
}

TEST(GpuIdentity, ModernMigIdWithoutMigDataAndSeveralGpusNamesWhatIsMissing) {
  auto p = make_plan(eight_l3_node(), with_env({{"CUDA_VISIBLE_DEVICES", "MIG-5c5a4f09-9d1f-5b2f-9b4d-6a1a3bdb1f0e"}}));
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message().find("lists no MIG instances (they come from NVML"), std::string::npos) << p.error().message();
  EXPECT_NE(p.error().message().find("2 GPUs could be its parent"), std::string::npos);
}

// Issue 32: no NVML, no recorded instances, several GPUs: the MIG capability files the process may
// open (a container or cgroup given one MIG device) name the parent.
TEST(GpuIdentity, ModernMigIdResolvesThroughTheCapabilityFilesGiven) {
  Request r = with_env({{"CUDA_VISIBLE_DEVICES", "MIG-5c5a4f09-9d1f-5b2f-9b4d-6a1a3bdb1f0e"}});
  r.openable_mig_parents = std::vector<std::string>{"0000:ab:00.0"};
  Plan p = must_plan(example("dgx-h100"), r);
  ASSERT_EQ(p.ranks.size(), 1u);
  EXPECT_EQ(p.ranks[0].gpus[0].index, 5u);
  EXPECT_TRUE(p.ranks[0].cpus.is_subset_of(*CpuSet::parse_list("56-111,168-223")));  // GPU 5's socket
  EXPECT_TRUE(std::any_of(p.explain.begin(), p.explain.end(),
                          [](const std::string& e) { return e.find("the only GPU whose MIG capability files") != std::string::npos; }));
  r.openable_mig_parents = std::vector<std::string>{"0000:ab:00.0", "0000:18:00.0"};
  auto q = make_plan(example("dgx-h100"), r);
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.error().message().find("belong to 2 GPU(s)"), std::string::npos) << q.error().message();
}

TEST(GpuIdentity, ModernMigIdOnTheOneGpuSlurmAllocated) {
  // Every GPU openable (no ConstrainDevices): CUDA enumerates all eight, but the job has GPU 5.
  Request r = with_env({{"CUDA_VISIBLE_DEVICES", "MIG-5c5a4f09-9d1f-5b2f-9b4d-6a1a3bdb1f0e"}, {"SLURM_STEP_GPUS", "5"}});
  auto t = example("dgx-h100");
  r.openable_gpus = std::vector<std::string>{};
  for (const auto& g : t.gpus) r.openable_gpus->push_back(g.pci);
  r.openable_mig_parents = std::vector<std::string>{"0000:18:00.0", "0000:ab:00.0"};
  Plan p = must_plan(t, r);
  EXPECT_EQ(p.ranks[0].gpus[0].index, 5u);
  EXPECT_TRUE(std::any_of(p.explain.begin(), p.explain.end(),
                          [](const std::string& e) { return e.find("the one GPU Slurm allocated") != std::string::npos; }));
}

TEST(GpuIdentity, ModernMigIdResolvesThroughTheTopologysMigInstances) {
  // As Slurm exports MIG devices: CUDA_VISIBLE_DEVICES=MIG-<uuid> (R470+ form).
  auto t = eight_l3_node();
  t.gpus[1].mig_uuids = {"MIG-5c5a4f09-9d1f-5b2f-9b4d-6a1a3bdb1f0e", "MIG-77777777-0000-0000-0000-000000000000"};
  Plan p = must_plan(t, with_env({{"CUDA_VISIBLE_DEVICES", "MIG-5c5a4f09-9d1f-5b2f-9b4d-6a1a3bdb1f0e"}}));
  ASSERT_EQ(p.ranks.size(), 1u);
  EXPECT_EQ(p.ranks[0].gpus[0].index, 1u);
  // Two instances of one GPU are two devices: two ranks on GPU 1, CPUs still split.
  Plan two = must_plan(t, with_env({{"CUDA_VISIBLE_DEVICES", "MIG-5c5a4f09,MIG-77777777"}}));
  ASSERT_EQ(two.ranks.size(), 2u);
  EXPECT_EQ(two.ranks[1].gpus[0].index, 1u);
  EXPECT_EQ(two.score.overlap_cpus, 0u);
  EXPECT_FALSE(make_plan(t, with_env({{"CUDA_VISIBLE_DEVICES", "MIG-99999999"}})).ok());
}

TEST(GpuIdentity, ModernMigIdOnTheOnlyCandidateGpuIsThatGpu) {
  // SLURM_STEP_GPUS narrows the candidates to one GPU: the MIG instance must be on it.
  Plan p = must_plan(eight_l3_node(), with_env({{"SLURM_STEP_GPUS", "1"}, {"CUDA_VISIBLE_DEVICES", "MIG-5c5a4f09-9d1f"}}));
  ASSERT_EQ(p.ranks.size(), 1u);
  EXPECT_EQ(p.ranks[0].gpus[0].index, 1u);
  EXPECT_TRUE(has_warning(p, "is a MIG instance; the topology does not list MIG instances"));
}

TEST(GpuIdentity, AmbiguousConfinementIsSaidToBeAGuess) {
  // SLURM_STEP_GPUS=1 with CUDA_VISIBLE_DEVICES=1: physical GPU 1 (unconfined) or position 1 of a
  // one-GPU confined allocation (past its end). gpubind takes the physical reading and says so.
  Plan p = must_plan(eight_l3_node(), with_env({{"SLURM_STEP_GPUS", "1"}, {"CUDA_VISIBLE_DEVICES", "1"}}));
  ASSERT_EQ(p.ranks.size(), 1u);
  EXPECT_EQ(p.ranks[0].gpus[0].index, 1u);
  EXPECT_TRUE(has_warning(p, "This is a guess"));
  // SLURM_STEP_GPUS=0,1 with CUDA_VISIBLE_DEVICES=0,1 reads the same either way: no warning.
  Plan same = must_plan(eight_l3_node(), with_env({{"SLURM_STEP_GPUS", "0,1"}, {"CUDA_VISIBLE_DEVICES", "0,1"}}));
  EXPECT_FALSE(has_warning(same, "This is a guess"));
}

TEST(GpuIdentity, AmbiguousConfinementIsDecidedByTheDevicesTheJobCanOpen) {
  // SLURM_STEP_GPUS=1 with CUDA_VISIBLE_DEVICES=0 where only GPU 1 can be opened: confined, so
  // the runtime sees one GPU, numbered 0, and that is physical GPU 1.
  Request r = with_env({{"SLURM_STEP_GPUS", "1"}, {"CUDA_VISIBLE_DEVICES", "0"}});
  r.openable_gpus = std::vector<std::string>{"0000:02:00.0"};
  Plan confined = must_plan(eight_l3_node(), r);
  ASSERT_EQ(confined.ranks.size(), 1u);
  EXPECT_EQ(confined.ranks[0].gpus[0].index, 1u);
  EXPECT_FALSE(has_warning(confined, "This is a guess"));
  // Every GPU can be opened: the value holds physical indices, and that is no longer a guess.
  Request all = with_env({{"SLURM_STEP_GPUS", "1"}, {"CUDA_VISIBLE_DEVICES", "1"}});
  all.openable_gpus = std::vector<std::string>{"0000:01:00.0", "0000:02:00.0"};
  Plan open = must_plan(eight_l3_node(), all);
  ASSERT_EQ(open.ranks.size(), 1u);
  EXPECT_EQ(open.ranks[0].gpus[0].index, 1u);
  EXPECT_FALSE(has_warning(open, "This is a guess"));
}

TEST(GpuIdentity, PodMetadataNamesTheContainersGpusWhereTheDeviceFilesCannot) {
  // A pod whose DRA metadata names GPU 1 (its pciBusID); the device files tell nothing.
  Request r;
  r.pod_metadata = Request::PodMetadata{{"0000:02:00.0"}, {"/m/f: GPU gpu-1 ..."}, {}};
  Plan p = must_plan(eight_l3_node(), r);
  ASSERT_EQ(p.ranks.size(), 1u);
  EXPECT_EQ(p.ranks[0].gpus[0].index, 1u);
  EXPECT_TRUE(std::any_of(p.explain.begin(), p.explain.end(), [](const std::string& e) { return e == "/m/f: GPU gpu-1 ..."; }));
  EXPECT_TRUE(std::any_of(p.explain.begin(), p.explain.end(), [](const std::string& e) {
    return e.find("the pod's DRA metadata: the container's GPUs are 1 (0000:02:00.0)") != std::string::npos;
  }));
  // The device files say GPU 0: they win, and the disagreement is a warning.
  r.openable_gpus = std::vector<std::string>{"0000:01:00.0"};
  Plan files = must_plan(eight_l3_node(), r);
  EXPECT_EQ(files.ranks[0].gpus[0].index, 0u);
  EXPECT_TRUE(has_warning(files, "the pod's DRA metadata names GPU(s) 1 (0000:02:00.0) but this process may open 0 (0000:01:00.0)"));
}

TEST(GpuIdentity, GpusTheProcessCannotOpenAreNotEnumerated) {
  // A container that holds only GPU 1's device file: cuda:0 is GPU 1, with no variable set.
  Request r;
  r.openable_gpus = std::vector<std::string>{"0000:02:00.0"};
  Plan p = must_plan(eight_l3_node(), r);
  ASSERT_EQ(p.ranks.size(), 1u);
  EXPECT_EQ(p.ranks[0].gpus[0].index, 1u);
  // An allocation that is not what the process can open: the openable GPUs win, with a warning.
  r.env = {{"SLURM_STEP_GPUS", "0"}};
  Plan q = must_plan(eight_l3_node(), r);
  ASSERT_EQ(q.ranks.size(), 1u);
  EXPECT_EQ(q.ranks[0].gpus[0].index, 1u);
  EXPECT_TRUE(has_warning(q, "but this process may open"));
}

std::vector<unsigned> gpu_indices(const Plan& p) {
  std::vector<unsigned> out;
  for (const auto& r : p.ranks)
    for (const auto& g : r.gpus) out.push_back(g.index);
  return out;
}

TEST(GpuIdentity, NvidiaVisibleDevicesIndicesAreTheContainersGpus) {
  // The device plugin's container holds host GPUs 4 and 5; CUDA numbers them 0 and 1.
  Plan p = must_plan(example("dgx-h100"), with_env({{"NVIDIA_VISIBLE_DEVICES", "5,4"}}));
  EXPECT_EQ(gpu_indices(p), (std::vector<unsigned>{4, 5}));
  Plan q = must_plan(example("dgx-h100"), with_env({{"NVIDIA_VISIBLE_DEVICES", "4,5"}, {"CUDA_VISIBLE_DEVICES", "1"}}));
  EXPECT_EQ(gpu_indices(q), (std::vector<unsigned>{5}));
}

TEST(GpuIdentity, NvidiaVisibleDevicesUuidsAndMigIdsNameTheirGpus) {
  topo::Topology t = example("dgx-h100");
  t.gpus[6].uuid = "GPU-aaaa";
  t.gpus[7].uuid = "GPU-bbbb";
  t.gpus[7].mig_uuids = {"MIG-cccc"};
  EXPECT_EQ(gpu_indices(must_plan(t, with_env({{"NVIDIA_VISIBLE_DEVICES", "gpu-AAAA"}}))), (std::vector<unsigned>{6}));
  EXPECT_EQ(gpu_indices(must_plan(t, with_env({{"NVIDIA_VISIBLE_DEVICES", "MIG-cccc"}}))), (std::vector<unsigned>{7}));
  auto unknown = make_plan(t, with_env({{"NVIDIA_VISIBLE_DEVICES", "GPU-dddd"}}));
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().message(), "NVIDIA_VISIBLE_DEVICES='GPU-dddd': GPU-dddd matches no GPU's UUID");
}

TEST(GpuIdentity, NvidiaVisibleDevicesAllNoneAndVoid) {
  EXPECT_EQ(must_plan(example("dgx-h100"), with_env({{"NVIDIA_VISIBLE_DEVICES", "all"}})).ranks.size(), 8u);
  for (const char* none : {"none", "void"}) {
    Plan p = must_plan(example("dgx-h100"), with_env({{"NVIDIA_VISIBLE_DEVICES", none}}));
    EXPECT_TRUE(gpu_indices(p).empty()) << none;
  }
}

TEST(GpuIdentity, NvidiaVisibleDevicesMalformedIsAnError) {
  for (const char* bad : {"abc", "8", "0,x"}) EXPECT_FALSE(make_plan(example("dgx-h100"), with_env({{"NVIDIA_VISIBLE_DEVICES", bad}})).ok()) << bad;
}

TEST(GpuIdentity, NvidiaVisibleDevicesUuidsWithoutUuidsFallBackToTheDeviceFiles) {
  // NVML is not loaded for this variable: the device files decide, and without them every GPU.
  Request r = with_env({{"NVIDIA_VISIBLE_DEVICES", "GPU-aaaa"}});
  r.openable_gpus = std::vector<std::string>{"0000:ab:00.0"};
  Plan p = must_plan(example("dgx-h100"), r);
  EXPECT_EQ(gpu_indices(p), (std::vector<unsigned>{5}));
  EXPECT_FALSE(has_warning(p, "NVIDIA_VISIBLE_DEVICES"));
  Plan q = must_plan(example("dgx-h100"), with_env({{"NVIDIA_VISIBLE_DEVICES", "GPU-aaaa"}}));
  EXPECT_EQ(q.ranks.size(), 8u);
  EXPECT_TRUE(has_warning(q, "names GPUs by UUID and the topology has none"));
}

TEST(GpuIdentity, DeviceFilesWinOverNvidiaVisibleDevices) {
  Request r = with_env({{"NVIDIA_VISIBLE_DEVICES", "0"}});
  r.openable_gpus = std::vector<std::string>{"0000:ab:00.0"};
  Plan p = must_plan(example("dgx-h100"), r);
  EXPECT_EQ(gpu_indices(p), (std::vector<unsigned>{5}));
  EXPECT_TRUE(has_warning(p, "NVIDIA_VISIBLE_DEVICES=0 names GPU(s) 0 (0000:18:00.0) but this process may open 5 (0000:ab:00.0)"));
}

TEST(PodAlignment, PodCpusOffItsGpusNodeAreTheKubeletsMisalignment) {
  Request r = with_env({{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"NVIDIA_VISIBLE_DEVICES", "4"}});
  r.allowed = *CpuSet::parse_list("1-4,113-116");
  Plan p = must_plan(example("dgx-h100"), r);
  EXPECT_TRUE(has_warning(p, "in a Kubernetes pod: its CPUs 1-4,113-116 (the pod's cpuset) are on NUMA node(s) 0, its GPU(s) 4 "
                             "(0000:9a:00.0) on node(s) 1: the kubelet did not align them"));
  // Aligned: no such warning; outside a pod, only the planner's own fallback warning.
  r.allowed = *CpuSet::parse_list("57-60,169-172");
  EXPECT_FALSE(has_warning(must_plan(example("dgx-h100"), r), "Kubernetes"));
  Request bare = with_env({{"NVIDIA_VISIBLE_DEVICES", "4"}});
  bare.allowed = *CpuSet::parse_list("1-4,113-116");
  Plan b = must_plan(example("dgx-h100"), bare);
  EXPECT_FALSE(has_warning(b, "Kubernetes"));
  EXPECT_TRUE(has_warning(b, "which has no allowed CPUs"));
}

TEST(GpuIdentity, MalformedCudaVisibleDevicesIsAnError) {
  for (const char* bad : {"abc", "0,,1", "1,1", "zero"}) {
    auto p = make_plan(example("dgx-h100"), with_env({{"CUDA_VISIBLE_DEVICES", bad}}));
    ASSERT_FALSE(p.ok()) << bad;
    EXPECT_EQ(p.error().kind, ErrorKind::usage) << bad;
    EXPECT_EQ(p.error().what, std::string("CUDA_VISIBLE_DEVICES='") + bad + "'");
  }
}

TEST(GpuIdentity, OutOfRangeEntryEndsTheListLikeCuda) {
  Plan p = must_plan(example("dgx-h100"), with_env({{"CUDA_VISIBLE_DEVICES", "1,9,2"}}));
  ASSERT_EQ(p.ranks.size(), 1u);
  EXPECT_EQ(p.ranks[0].gpus[0].index, 1u);
  EXPECT_TRUE(has_warning(p, "ignored"));
}

TEST(GpuIdentity, EmptyCudaVisibleDevicesHidesEveryGpu) {
  Plan p = must_plan(example("dgx-h100"), with_env({{"CUDA_VISIBLE_DEVICES", ""}}));
  EXPECT_TRUE(has_warning(p, "hides every GPU"));
  for (const auto& rb : p.ranks) EXPECT_TRUE(rb.gpus.empty());
}

TEST(GpuIdentity, SlurmConfinedDevicesAreRenumbered) {
  // ConstrainDevices=yes: the job holds physical GPUs 4,5; CUDA sees them as 0,1.
  Plan p = must_plan(example("dgx-h100"), with_env({{"SLURM_STEP_GPUS", "4,5"}, {"CUDA_VISIBLE_DEVICES", "0,1"}}));
  ASSERT_EQ(p.ranks.size(), 2u);
  EXPECT_EQ(p.ranks[0].gpus[0].index, 4u);
  EXPECT_EQ(p.ranks[1].gpus[0].index, 5u);
}

TEST(GpuIdentity, SlurmWithoutConfinementUsesPhysicalIndices) {
  Plan p = must_plan(example("dgx-h100"), with_env({{"SLURM_STEP_GPUS", "4,5"}, {"CUDA_VISIBLE_DEVICES", "4,5"}}));
  ASSERT_EQ(p.ranks.size(), 2u);
  EXPECT_EQ(p.ranks[0].gpus[0].index, 4u);
  EXPECT_EQ(p.ranks[1].gpus[0].index, 5u);
}

TEST(GpuIdentity, SlurmGpuRangesAreAccepted) {
  Plan p = must_plan(example("dgx-h100"), with_env({{"SLURM_STEP_GPUS", "2-3,6"}}));
  ASSERT_EQ(p.ranks.size(), 3u);
  EXPECT_EQ(p.ranks[2].gpus[0].index, 6u);
}

TEST(GpuIdentity, SlurmJobGpusAloneLimitsTheGpus) {
  Plan p = must_plan(example("dgx-h100"), with_env({{"SLURM_JOB_GPUS", "6,7"}}));
  ASSERT_EQ(p.ranks.size(), 2u);
  EXPECT_EQ(p.ranks[1].gpus[0].index, 7u);
}

TEST(GpuIdentity, RocrThenHipVisibleDevices) {
  // ROCR keeps GCDs 4-7, HIP then picks the second of those: GCD 5, whose NUMA node (its L3 and
  // its neighbour GCD's, first cores reserved) the lone rank gets.
  Plan p = must_plan(example("frontier-like"), with_env({{"ROCR_VISIBLE_DEVICES", "4,5,6,7"}, {"HIP_VISIBLE_DEVICES", "1"}}));
  ASSERT_EQ(p.ranks.size(), 1u);
  EXPECT_EQ(p.ranks[0].gpus[0].index, 5u);
  EXPECT_EQ(p.ranks[0].cpus.to_list(), "1-7,9-15,65-71,73-79");
}

TEST(GpuIdentity, ZeAffinityMaskTilesBelongToTheirDevice) {
  auto t = eight_l3_node();
  for (auto& g : t.gpus) g.vendor = topo::Vendor::intel;
  Plan p = must_plan(t, with_env({{"ZE_AFFINITY_MASK", "1.0,1.1"}}));
  ASSERT_EQ(p.ranks.size(), 2u);
  EXPECT_EQ(p.ranks[0].gpus[0].index, 1u);
  EXPECT_EQ(p.ranks[1].gpus[0].index, 1u);
}

// --- Level Zero's device hierarchy (issue 32) ------------------------------------------------
// tests/data/intel/gpu-max-1550-x8.json: eight Intel Data Center GPU Max 1550, two stacks each,
// GPUs 0-3 on socket 0 (node 0, CPUs 0-55,112-167), 4-7 on socket 1. FLAT, Level Zero's default,
// makes each stack a device: 16 devices, device 2c+s = card c stack s.
topo::Topology gpu_max_x8() {
  auto t = discover::load_topology(std::string(GPUBIND_SOURCE_DIR) + "/tests/data/intel/gpu-max-1550-x8.json");
  EXPECT_TRUE(t.ok()) << t.error().message();
  return *t;
}

TEST(LevelZero, FlatMaskIndexesStacks) {
  // ZE_AFFINITY_MASK=7 is card 3 stack 1, on socket 0 (not card 7 on socket 1).
  Plan p = must_plan(gpu_max_x8(), with_env({{"ZE_AFFINITY_MASK", "7"}}));
  ASSERT_EQ(p.ranks.size(), 1u);
  EXPECT_EQ(p.ranks[0].gpus[0].index, 3u);
  EXPECT_EQ(p.ranks[0].gpus[0].stack, std::optional<unsigned>(1));
  EXPECT_TRUE(p.ranks[0].cpus.is_subset_of(*CpuSet::parse_list("0-55,112-167")));
  EXPECT_EQ(p.ranks[0].mem_nodes, std::vector<unsigned>{0});
}

TEST(LevelZero, FlatMaskPastTheCardsIsAStack) {
  // =12 is card 6 stack 0 (socket 1): sixteen devices, not eight, so not a CPU-only plan.
  Plan p = must_plan(gpu_max_x8(), with_env({{"ZE_AFFINITY_MASK", "12"}}));
  ASSERT_EQ(p.ranks.size(), 1u);
  ASSERT_EQ(p.ranks[0].gpus.size(), 1u);
  EXPECT_EQ(p.ranks[0].gpus[0].index, 6u);
  EXPECT_EQ(p.ranks[0].gpus[0].stack, std::optional<unsigned>(0));
  EXPECT_TRUE(p.ranks[0].cpus.is_subset_of(*CpuSet::parse_list("56-111,168-223")));
  EXPECT_FALSE(must_plan(gpu_max_x8(), with_env({{"ZE_AFFINITY_MASK", "16"}})).ranks[0].gpus.size());  // past 16: none
}

TEST(LevelZero, CombinedIndexesStacksLikeFlat) {
  Plan p = must_plan(gpu_max_x8(), with_env({{"ZE_FLAT_DEVICE_HIERARCHY", "COMBINED"}, {"ZE_AFFINITY_MASK", "7"}}));
  EXPECT_EQ(p.ranks[0].gpus[0].index, 3u);
  EXPECT_EQ(p.ranks[0].gpus[0].stack, std::optional<unsigned>(1));
}

TEST(LevelZero, CompositeMaskNamesCardsAndCardStacks) {
  Plan p = must_plan(gpu_max_x8(), with_env({{"ZE_FLAT_DEVICE_HIERARCHY", "COMPOSITE"}, {"ZE_AFFINITY_MASK", "7,3.1"}}));
  ASSERT_EQ(p.ranks.size(), 2u);
  EXPECT_EQ(p.ranks[0].gpus[0].index, 7u);
  EXPECT_FALSE(p.ranks[0].gpus[0].stack.has_value());
  EXPECT_EQ(p.ranks[1].gpus[0].index, 3u);
  EXPECT_EQ(p.ranks[1].gpus[0].stack, std::optional<unsigned>(1));
  auto bad = make_plan(gpu_max_x8(), with_env({{"ZE_FLAT_DEVICE_HIERARCHY", "COMPOSITE"}, {"ZE_AFFINITY_MASK", "3.2"}}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("has 2 stack(s): no stack 2"), std::string::npos) << bad.error().message();
}

TEST(LevelZero, FlatWithoutMaskIsOneRankPerStack) {
  Request r;
  r.isolate_gpus = true;
  Plan p = must_plan(gpu_max_x8(), r);
  ASSERT_EQ(p.ranks.size(), 16u);
  EXPECT_EQ(p.ranks[7].gpus[0].index, 3u);
  EXPECT_EQ(p.ranks[7].gpus[0].stack, std::optional<unsigned>(1));
  EXPECT_FALSE(p.ranks[6].cpus.intersects(p.ranks[7].cpus));  // two stacks of a card split its CPUs
  auto env_of = [](const RankBinding& rb, const std::string& k) {
    for (const auto& [n, v] : rb.env)
      if (n == k) return v;
    return std::string("unset");
  };
  EXPECT_EQ(env_of(p.ranks[7], "ZE_AFFINITY_MASK"), "7");   // its own stack, as a FLAT index
  EXPECT_EQ(env_of(p.ranks[12], "ZE_AFFINITY_MASK"), "12");
  r.env = {{"ZE_FLAT_DEVICE_HIERARCHY", "COMPOSITE"}};
  Plan q = must_plan(gpu_max_x8(), r);
  ASSERT_EQ(q.ranks.size(), 8u);
  EXPECT_EQ(env_of(q.ranks[3], "ZE_AFFINITY_MASK"), "3");  // a whole card
}

TEST(LevelZero, CardStackEntriesAreCompositesOnly) {
  auto p = make_plan(gpu_max_x8(), with_env({{"ZE_AFFINITY_MASK", "3.1"}}));
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().kind, ErrorKind::usage);
  EXPECT_NE(p.error().message().find("only the COMPOSITE hierarchy"), std::string::npos) << p.error().message();
  auto h = make_plan(gpu_max_x8(), with_env({{"ZE_FLAT_DEVICE_HIERARCHY", "flat"}}));
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.error().what, "ZE_FLAT_DEVICE_HIERARCHY='flat'");
}

TEST(LevelZero, WholeCardMaskIsEveryStackInFlat) {
  auto t = gpu_max_x8();
  EXPECT_EQ(ze_affinity_mask(t, {&t.gpus[3]}, ZeHierarchy::flat), "6,7");
  EXPECT_EQ(ze_affinity_mask(t, {&t.gpus[3]}, ZeHierarchy::composite), "3");
  topo::Gpu stack = t.gpus[3];
  stack.stack = 1;
  EXPECT_EQ(ze_affinity_mask(t, {&stack}, ZeHierarchy::composite), "3.1");
  EXPECT_EQ(ze_affinity_mask(t, {&stack}, ZeHierarchy::combined), "7");
}

TEST(GpuIdentity, MixedModelsWarnAboutCudaOrder) {
  auto t = eight_l3_node();
  t.gpus[1].device_id = 0x1234;
  Plan p = must_plan(t, {});
  EXPECT_TRUE(has_warning(p, "CUDA_DEVICE_ORDER"));
  Plan q = must_plan(t, with_env({{"CUDA_DEVICE_ORDER", "PCI_BUS_ID"}}));
  EXPECT_FALSE(has_warning(q, "CUDA_DEVICE_ORDER"));
}

TEST(GpuIdentity, MixedKnownModelsFollowCudasFastestFirstOrder) {
  // GPU 0 a V100 (cc 7.0), GPU 1 an H100 (cc 9.0): with CUDA's default order cuda:0 is the H100.
  auto t = eight_l3_node();
  t.gpus[0].device_id = 0x1db1;
  Plan p = must_plan(t, {});
  ASSERT_EQ(p.ranks.size(), 2u);
  EXPECT_EQ(p.ranks[0].gpus[0].index, 1u);
  EXPECT_EQ(p.ranks[1].gpus[0].index, 0u);
  EXPECT_FALSE(has_warning(p, "CUDA_DEVICE_ORDER"));
  std::string all;
  for (const auto& e : p.explain) all += e + "\n";
  EXPECT_NE(all.find("1 (0000:02:00.0) cc 9.0, 0 (0000:01:00.0) cc 7.0"), std::string::npos) << all;
  // CUDA_VISIBLE_DEVICES indexes that order; FASTEST_FIRST spelled out is the same order.
  Plan v = must_plan(t, with_env({{"CUDA_VISIBLE_DEVICES", "1"}, {"CUDA_DEVICE_ORDER", "FASTEST_FIRST"}}));
  ASSERT_EQ(v.ranks.size(), 1u);
  EXPECT_EQ(v.ranks[0].gpus[0].index, 0u);
  // A confined Slurm allocation is enumerated in the same order: position 0 is the H100.
  Plan s = must_plan(t, with_env({{"SLURM_STEP_GPUS", "0,1"}, {"CUDA_VISIBLE_DEVICES", "0"}}));
  ASSERT_EQ(s.ranks.size(), 1u);
  EXPECT_EQ(s.ranks[0].gpus[0].index, 1u);
  // PCI_BUS_ID keeps the PCI order.
  Plan q = must_plan(t, with_env({{"CUDA_DEVICE_ORDER", "PCI_BUS_ID"}}));
  EXPECT_EQ(q.ranks[0].gpus[0].index, 0u);
}

TEST(GpuIdentity, ExplainShowsEveryStep) {
  Plan p = must_plan(example("dgx-h100"), with_env({{"SLURM_STEP_GPUS", "4,5"}, {"CUDA_VISIBLE_DEVICES", "0,1"}}));
  std::string all;
  for (const auto& e : p.explain) all += e + "\n";
  EXPECT_NE(all.find("SLURM_STEP_GPUS=4,5"), std::string::npos) << all;
  EXPECT_NE(all.find("renumbered"), std::string::npos) << all;
  EXPECT_NE(all.find("split"), std::string::npos) << all;
}

// --- 3. CPU split ----------------------------------------------------------------------------

TEST(CpuSplit, RanksSharingANodeGetEqualContiguousDisjointBlocks) {
  Plan p = must_plan(example("dgx-h100"), {});
  EXPECT_EQ(p.ranks[0].cpus.to_list(), "0-13,112-125");
  EXPECT_EQ(p.ranks[1].cpus.to_list(), "14-27,126-139");
  EXPECT_EQ(p.score.overlap_cpus, 0u);
  EXPECT_EQ(p.score.min_cores, 14u);
  EXPECT_EQ(p.score.max_cores, 14u);
}

TEST(CpuSplit, TwoRanksOnEightL3DomainsGetFourEach) {
  Plan p = must_plan(eight_l3_node(), {});
  ASSERT_EQ(p.ranks.size(), 2u);
  EXPECT_EQ(p.ranks[0].cpus.to_list(), "0-15,32-47");
  EXPECT_EQ(p.ranks[1].cpus.to_list(), "16-31,48-63");
}

TEST(CpuSplit, SixteenRanksOnEightL3DomainsSplitEachDomain) {
  Request r;
  r.ranks = 16;
  Plan p = must_plan(eight_l3_node(), r);
  EXPECT_EQ(p.ranks[0].cpus.to_list(), "0-1,32-33");
  EXPECT_EQ(p.ranks[1].cpus.to_list(), "2-3,34-35");
}

TEST(CpuSplit, LeftoverCoresAreHandedOutOneByOne) {
  Request r;
  r.ranks = 3;
  r.env = {{"CUDA_VISIBLE_DEVICES", "0,1,2"}};
  // 56 cores on socket 0 for 3 ranks: 19, 19, 18.
  Plan p = must_plan(example("dgx-h100"), r);
  EXPECT_EQ(p.score.max_cores, 19u);
  EXPECT_EQ(p.score.min_cores, 18u);
}

TEST(CpuSplit, BalancedLeavesLeftoverCoresIdle) {
  Request r;
  r.ranks = 3;
  r.balanced = true;
  r.env = {{"CUDA_VISIBLE_DEVICES", "0,1,2"}};
  Plan p = must_plan(example("dgx-h100"), r);
  EXPECT_EQ(p.score.max_cores, 18u);
  EXPECT_EQ(p.score.min_cores, 18u);
}

TEST(CpuSplit, ReservedCpusAreNeverUsed) {
  Request r;
  r.reserve = CpuSet::of({0, 112, 56, 168});
  Plan p = must_plan(example("dgx-h100"), r);
  for (const auto& rb : p.ranks) EXPECT_FALSE(rb.cpus.intersects(r.reserve));
  EXPECT_EQ(p.ranks[0].cpus.first(), 1u);
}

TEST(CpuSplit, ReserveTakesWholeCores) {
  // DGX A100: CPU 48's SMT sibling is 176; reserving 48 must not hand 176 to a rank.
  Request r;
  r.reserve = CpuSet::of({48});
  Plan p = must_plan(example("dgx-a100-nps4"), r);
  for (const auto& rb : p.ranks) {
    EXPECT_FALSE(rb.cpus.test(48)) << rb.local_rank;
    EXPECT_FALSE(rb.cpus.test(176)) << rb.local_rank;
  }
  EXPECT_EQ(p.score.overlap_cpus, 0u);
}

TEST(CpuSplit, FrontierReservedFirstCoreOfEachL3IsNotUsed) {
  auto t = example("frontier-like");
  Plan p = must_plan(t, {});
  for (const auto& rb : p.ranks) {
    EXPECT_TRUE(rb.cpus.is_subset_of(t.allowed_cpus));
    EXPECT_EQ(rb.cpus.count(), 14u);
  }
  EXPECT_EQ(p.ranks[4].cpus.to_list(), "1-7,65-71");  // GCD 4 sits on the first L3 domain
}

TEST(CpuSplit, CallersAllowedSetIsRespected) {
  Request r;
  r.allowed = CpuSet::range(0, 27) | CpuSet::range(112, 139);
  r.env = {{"CUDA_VISIBLE_DEVICES", "0,1"}};
  Plan p = must_plan(example("dgx-h100"), r);
  for (const auto& rb : p.ranks) EXPECT_TRUE(rb.cpus.is_subset_of(*r.allowed));
  EXPECT_EQ(p.score.overlap_cpus, 0u);
}

// --- 4. fallbacks ----------------------------------------------------------------------------

TEST(Fallback, GpuNodeWithoutAllowedCoresUsesNearestNodeOnSamePackage) {
  // DGX A100 NPS4: GPU 0 is on node 3; only node 0 (same package) and node 4 (other) are allowed.
  auto t = example("dgx-a100-nps4");
  Request r;
  r.allowed = t.numa_nodes[0].cpus | t.numa_nodes[4].cpus;
  r.env = {{"CUDA_VISIBLE_DEVICES", "0"}};
  Plan p = must_plan(t, r);
  EXPECT_TRUE(p.ranks[0].cpus.is_subset_of(t.numa_nodes[0].cpus)) << p.ranks[0].cpus.to_list();
  EXPECT_TRUE(has_warning(p, "no allowed CPUs"));
  EXPECT_TRUE(has_warning(p, "same package"));
  // Memory still goes to the GPU's own node.
  EXPECT_EQ(p.ranks[0].mem_nodes, std::vector<unsigned>{3});
}

TEST(Fallback, GpuNodeWithoutAllowedCoresOnAnyPackageUsesNearestByDistance) {
  auto t = example("dgx-a100-nps4");
  Request r;
  r.allowed = t.numa_nodes[5].cpus;  // other package only
  r.env = {{"CUDA_VISIBLE_DEVICES", "0"}};
  Plan p = must_plan(t, r);
  EXPECT_TRUE(p.ranks[0].cpus.is_subset_of(t.numa_nodes[5].cpus));
  EXPECT_TRUE(has_warning(p, "nearest by NUMA distance"));
}

TEST(Fallback, UnknownGpuLocalitySpreadsRanksOverPackagesInGpuOrder) {
  auto t = example("cloud-vm-unknown-locality");
  Plan p = must_plan(t, {});
  ASSERT_EQ(p.ranks.size(), 4u);
  EXPECT_TRUE(p.ranks[0].cpus.is_subset_of(t.packages[0].cpus));
  EXPECT_TRUE(p.ranks[1].cpus.is_subset_of(t.packages[0].cpus));
  EXPECT_TRUE(p.ranks[2].cpus.is_subset_of(t.packages[1].cpus));
  EXPECT_TRUE(p.ranks[3].cpus.is_subset_of(t.packages[1].cpus));
  EXPECT_EQ(p.score.overlap_cpus, 0u);
  EXPECT_TRUE(has_warning(p, "GPU locality is unknown"));
  EXPECT_FALSE(p.score.cpu_locality.has_value());
}

TEST(Fallback, MoreRanksThanCoresShareCores) {
  Request r;
  r.ranks = 100;
  r.allowed = CpuSet::range(0, 3);
  r.env = {{"CUDA_VISIBLE_DEVICES", "0"}};
  Plan p = must_plan(example("gh200"), r);
  ASSERT_EQ(p.ranks.size(), 100u);
  // Spread evenly: 25 ranks on each of the 4 cores, never all on one.
  std::map<std::string, unsigned> per_core;
  for (const auto& rb : p.ranks) ++per_core[rb.cpus.to_list()];
  EXPECT_EQ(per_core, (std::map<std::string, unsigned>{{"0", 25}, {"1", 25}, {"2", 25}, {"3", 25}}));
  EXPECT_TRUE(has_warning(p, "share cores"));
}

TEST(Fallback, MoreRanksThanGpusShareGpusWhileCoresAreSplit) {
  Request r;
  r.ranks = 16;
  Plan p = must_plan(example("dgx-h100"), r);
  EXPECT_EQ(p.ranks[0].gpus[0].index, 0u);
  EXPECT_EQ(p.ranks[1].gpus[0].index, 0u);
  EXPECT_EQ(p.ranks[15].gpus[0].index, 7u);
  EXPECT_EQ(p.score.overlap_cpus, 0u);
  EXPECT_EQ(p.score.min_cores, 7u);
  EXPECT_TRUE(has_warning(p, "share a GPU"));
}

TEST(Fallback, GpusPerRankTakesGpusClosestToEachOther) {
  Request r;
  r.gpus_per_rank = 2;
  Plan p = must_plan(example("dgx-a100-nps4"), r);
  ASSERT_EQ(p.ranks.size(), 4u);
  // GPUs 0 and 1 share a PCIe switch (and NUMA node 3).
  EXPECT_EQ(p.ranks[0].gpus[0].index, 0u);
  EXPECT_EQ(p.ranks[0].gpus[1].index, 1u);
  EXPECT_EQ(p.ranks[0].cpus.to_list(), "48-63,176-191");
}

TEST(Fallback, GpusPerRankThatDoesNotFitIsAnError) {
  Request r;
  r.gpus_per_rank = 3;
  r.ranks = 3;
  auto p = make_plan(example("dgx-h100"), r);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message().find("9 GPUs"), std::string::npos) << p.error().message();
}

// --- 4b. crowded nodes (issue 10) ---------------------------------------------------------

TEST(Crowded, RanksShareTheirOwnNodeWhenWideningCannotRemoveSharing) {
  // DGX-2H with trimmed CPUs: 8 GPUs on each of two 2-core nodes, 16 ranks on 4 cores. Moving
  // ranks to the other node would not remove sharing, so every rank stays on its GPU's node.
  auto t = crowded_machine(2, 2, 1, {8, 8});
  Plan p = must_plan(t, {});
  ASSERT_EQ(p.ranks.size(), 16u);
  for (const auto& rb : p.ranks) EXPECT_TRUE(on_gpu_node(t, rb)) << rb.local_rank << ": " << rb.cpus.to_list();
  EXPECT_EQ(*p.score.cpu_locality, 1.0);
  EXPECT_TRUE(has_warning(p, "ranks share cores"));
}

TEST(Crowded, SmtSiblingsBeforeSharingOrSpilling) {
  // 6 ranks on a node of 4 cores x 2 PUs: each rank gets its own PU, none leaves the node.
  auto t = crowded_machine(2, 4, 2, {2, 0});
  Request r;
  r.ranks = 6;
  Plan p = must_plan(t, r);
  for (const auto& rb : p.ranks) EXPECT_TRUE(on_gpu_node(t, rb)) << rb.local_rank;
  EXPECT_EQ(p.score.overlap_cpus, 0u);
  EXPECT_TRUE(has_warning(p, "SMT siblings of some cores go to different ranks"));
}

TEST(Crowded, SpillsOnlyTheRanksBeyondTheNodesCpus) {
  // 6 ranks, 4 single-PU cores on the GPUs' node: 4 stay, exactly 2 move to the other node.
  auto t = crowded_machine(2, 4, 1, {2, 0});
  Request r;
  r.ranks = 6;
  Plan p = must_plan(t, r);
  EXPECT_EQ(ranks_on_gpu_node(t, p), 4u);
  EXPECT_EQ(p.score.overlap_cpus, 0u);
  EXPECT_TRUE(on_gpu_node(t, p.ranks[0]));
  EXPECT_FALSE(on_gpu_node(t, p.ranks[5]));
  EXPECT_TRUE(has_warning(p, "ranks 4,5: no CPU left near their GPU; moved"));
}

// Cores whose PUs went to more than one rank.
unsigned split_cores(const topo::Topology& t, const Plan& p) {
  unsigned n = 0;
  for (const auto& core : t.cores) {
    unsigned holders = 0;
    for (const auto& rb : p.ranks) holders += rb.cpus.intersects(core.pus);
    n += holders > 1;
  }
  return n;
}

TEST(Crowded, SmtSplitsTheFewestCores) {
  // 6 ranks on a node of 4 SMT4 cores (POWER9 AC922 -n 12): 2 ranks on a whole core each, 4 on
  // halves of the 2 other cores; before, all 4 cores were split.
  auto t = crowded_machine(2, 4, 4, {3, 3});
  Request r;
  r.ranks = 12;
  Plan p = must_plan(t, r);
  EXPECT_EQ(split_cores(t, p), 4u);  // 2 per node
  EXPECT_EQ(p.score.overlap_cpus, 0u);
  std::multiset<size_t> sizes;
  for (unsigned i = 0; i < 6; ++i) sizes.insert(p.ranks[i].cpus.count());
  EXPECT_EQ(sizes, (std::multiset<size_t>{2, 2, 2, 2, 4, 4}));
  for (const auto& rb : p.ranks) EXPECT_TRUE(on_gpu_node(t, rb)) << rb.local_rank;
}

TEST(Crowded, SmtSplitsTheFewestCoresEvenWhenTheyCannotBeHalved) {
  // 5 ranks on 4 cores x 2 PUs: one core split in two, three whole.
  auto t = crowded_machine(1, 4, 2, {1});
  Request r;
  r.ranks = 5;
  Plan p = must_plan(t, r);
  EXPECT_EQ(split_cores(t, p), 1u);
  EXPECT_EQ(p.score.overlap_cpus, 0u);
  // 7 ranks on 3 cores x 4 PUs: no even division (4 ranks on 1 core of 4, or 5 on 2 cores of 8,
  // do not divide evenly except 1 PU each): the fewest cores that hold them.
  auto u = crowded_machine(1, 3, 4, {1});
  r.ranks = 7;
  Plan q = must_plan(u, r);
  EXPECT_EQ(q.score.overlap_cpus, 0u);
  for (const auto& rb : q.ranks) EXPECT_FALSE(rb.cpus.empty());
  EXPECT_EQ(split_cores(u, q), 2u);
}

TEST(Crowded, SpilledRanksUseTheFreeCoresSmtSiblings) {
  // 12 ranks, 8 PUs on the GPUs' node: 8 stay (one PU each), 4 move onto 2 free cores' 4 PUs.
  auto t = crowded_machine(2, 4, 2, {2, 0});
  Request r;
  r.ranks = 12;
  Plan p = must_plan(t, r);
  EXPECT_EQ(ranks_on_gpu_node(t, p), 8u);
  EXPECT_EQ(p.score.overlap_cpus, 0u);
}

TEST(Crowded, SpilledRanksTakeOnlyCoresTheOtherNodesRanksDoNotNeed) {
  // 8 ranks on 3 GPUs: 6 ranks on node 0's 4 cores, 2 on node 1's 4 cores. The 2 spilled ranks
  // take node 1's two spare cores and its own ranks keep one core each: nobody shares.
  auto t = crowded_machine(2, 4, 1, {2, 1});
  Request r;
  r.ranks = 8;
  Plan p = must_plan(t, r);
  EXPECT_EQ(p.score.overlap_cpus, 0u);
  EXPECT_EQ(ranks_on_gpu_node(t, p), 6u);
  EXPECT_TRUE(on_gpu_node(t, p.ranks[6]));
  EXPECT_TRUE(on_gpu_node(t, p.ranks[7]));
}

// --- 5. memory -------------------------------------------------------------------------------

TEST(Memory, PreferredOnTheGpusNode) {
  Plan p = must_plan(example("dgx-a100-nps4"), {});
  EXPECT_EQ(p.ranks[0].mem_nodes, std::vector<unsigned>{3});
  EXPECT_EQ(p.ranks[0].mem_policy, MemPolicy::preferred);
}

TEST(Memory, NeverACpulessNodeUnlessAsked) {
  Plan p = must_plan(example("gh200"), {});
  EXPECT_EQ(p.ranks[0].mem_nodes, std::vector<unsigned>{0});
  Request r;
  r.mem_node = 1;
  r.mem = MemPolicy::bind;
  Plan q = must_plan(example("gh200"), r);
  EXPECT_EQ(q.ranks[0].mem_nodes, std::vector<unsigned>{1});
  EXPECT_EQ(q.ranks[0].mem_policy, MemPolicy::bind);
}

// Issue 32: a GPU's own memory node (GH200: node 1) is never planned for CPUs, and is the
// memory target only with --mem-on-gpu.
TEST(Memory, GpuMemoryNodeOnlyOnRequest) {
  Plan p = must_plan(example("gh200"), {});
  EXPECT_EQ(p.ranks[0].cpus, CpuSet::range(0, 71));
  EXPECT_EQ(p.ranks[0].mem_nodes, std::vector<unsigned>{0});
  Request r;
  r.mem_on_gpu = true;
  Plan q = must_plan(example("gh200"), r);
  EXPECT_EQ(q.ranks[0].mem_nodes, std::vector<unsigned>{1});
  EXPECT_EQ(q.ranks[0].cpus, CpuSet::range(0, 71));
  EXPECT_EQ(q.ranks[0].mem_policy, MemPolicy::preferred);
}

TEST(Memory, MemOnGpuWithoutAGpuMemoryNodeIsAnError) {
  Request r;
  r.mem_on_gpu = true;
  auto p = make_plan(example("dgx-h100"), r);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().what, "--mem-on-gpu");
  EXPECT_EQ(p.error().kind, ErrorKind::usage);
  r.mem_node = 1;
  auto q = make_plan(example("gh200"), r);
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.error().message().find("two memory targets"), std::string::npos);
}

TEST(Memory, MemOnGpuRankWhoseGpuHasNoMemoryNodeKeepsItsCpusNode) {
  auto t = example("dgx-h100");
  t.gpus[0].memory_numa = {9};  // only GPU 0 has a memory node of its own
  Request r;
  r.mem_on_gpu = true;
  Plan p = must_plan(t, r);
  EXPECT_EQ(p.ranks[0].mem_nodes, std::vector<unsigned>{9});
  EXPECT_EQ(p.ranks[0].cpus, must_plan(example("dgx-h100"), {}).ranks[0].cpus);  // CPUs as without it
  EXPECT_EQ(p.ranks[5].mem_nodes, std::vector<unsigned>{1});
  EXPECT_TRUE(has_warning(p, "rank 5: --mem-on-gpu: GPU 5 has no memory node of its own; memory on its CPUs' node(s)"));
}

TEST(Memory, NeverAMemorylessNodeNorAnEmptyList) {
  // A Threadripper 2990WX in miniature (issue 33 item 9): node 0 has CPUs 0-3 and memory, node 1
  // CPUs 4-7 and none, CPUs 8-11 are in no node (a capture's memoryless dies). numactl refuses
  // --preferred-many= with an empty list and a memoryless node.
  topo::Topology t;
  t.origin = "test";
  for (unsigned c = 0; c < 12; ++c) t.cores.push_back({CpuSet::of({c})});
  t.cpus = t.allowed_cpus = CpuSet::range(0, 11);
  t.packages = {{0, t.cpus}};
  t.numa_nodes = {{0, CpuSet::range(0, 3), 64ull << 30, 0, ""}, {1, CpuSet::range(4, 7), 0, 0, ""}};
  Request r;
  r.ranks = 3;
  r.policy = Policy::cpu_only;
  Plan p = must_plan(t, r);
  EXPECT_EQ(p.ranks[0].mem_nodes, (std::vector<unsigned>{0}));
  EXPECT_EQ(p.ranks[1].mem_nodes, (std::vector<unsigned>{0}));  // not its memoryless node 1
  EXPECT_EQ(p.ranks[2].mem_nodes, (std::vector<unsigned>{0}));  // not an empty list
  EXPECT_EQ(p.ranks[2].mem_policy, MemPolicy::preferred);
  EXPECT_TRUE(has_warning(p, "rank 2: CPUs 8-11 are on no NUMA node with memory"));
  t.numa_nodes[1].memory_bytes = 0;
  t.numa_nodes[0].memory_bytes = 0;  // sizes unknown: node 1 is not taken for memoryless
  Plan q = must_plan(t, r);
  EXPECT_EQ(q.ranks[1].mem_nodes, (std::vector<unsigned>{1}));
}

TEST(Memory, NoneLeavesMemoryAlone) {
  Request r;
  r.mem = MemPolicy::none;
  Plan p = must_plan(example("dgx-h100"), r);
  EXPECT_EQ(p.ranks[0].mem_policy, MemPolicy::none);
  EXPECT_TRUE(p.ranks[0].mem_nodes.empty());
}

TEST(Memory, InterleaveSpansTheRanksLocalNodes) {
  Request r;
  r.mem = MemPolicy::interleave;
  r.policy = Policy::socket;
  Plan p = must_plan(example("dgx-a100-nps4"), r);
  EXPECT_EQ(p.ranks[0].mem_nodes, (std::vector<unsigned>{0, 1, 2, 3}));
}

TEST(Memory, NeverANodeTheCgroupForbids) {
  // cpuset.mems allows node 1 only: ranks of GPUs on node 0 prefer node 1, with a warning.
  Request r;
  r.allowed_mems = CpuSet::of({1});
  Plan p = must_plan(example("dgx-h100"), r);
  for (const auto& rb : p.ranks) EXPECT_EQ(rb.mem_nodes, std::vector<unsigned>{1}) << rb.local_rank;
  EXPECT_TRUE(has_warning(p, "rank 0: memory node 0 is outside the allowed memory nodes 1 (cpuset.mems); memory goes to node 1"));
  EXPECT_FALSE(has_warning(p, "rank 4: memory node"));
}

TEST(Memory, ExplicitMemNodeOutsideTheAllowedNodesIsAnError) {
  Request r;
  r.allowed_mems = CpuSet::of({1});
  r.mem_node = 0;
  auto p = make_plan(example("dgx-h100"), r);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message().find("outside the allowed memory nodes 1"), std::string::npos);
  Request none;
  none.allowed_mems = CpuSet::of({7});
  EXPECT_FALSE(make_plan(example("dgx-h100"), none).ok());
}

// --- 6. NIC ----------------------------------------------------------------------------------

TEST(Nic, ShortestPciePathWins) {
  Plan p = must_plan(example("dgx-h100"), {});
  for (const auto& rb : p.ranks) EXPECT_EQ(rb.nics.at(0).path, topo::PathClass::PIX);
  EXPECT_EQ(p.ranks[0].nics[0].name, "ibp26s0,mlx5_0");
}

TEST(Nic, RanksAreBalancedOverNicsOfEqualDistance) {
  // Two GPUs and two HCAs behind each switch: each rank gets its own HCA.
  Plan p = must_plan(example("dgx-a100-nps4"), {});
  std::set<std::string> used;
  for (const auto& rb : p.ranks) used.insert(rb.nics.at(0).pci);
  EXPECT_EQ(used.size(), 8u);
}

TEST(Nic, EnvironmentOnlyWithNicEnv) {
  Plan p = must_plan(example("dgx-h100"), {});
  EXPECT_EQ(env_of(p.ranks[0], "NCCL_IB_HCA"), "");
  EXPECT_EQ(env_of(p.ranks[0], "UCX_NET_DEVICES"), "");
  Request r;
  r.nic_env = true;
  Plan q = must_plan(example("dgx-h100"), r);
  EXPECT_NE(env_of(q.ranks[0], "NCCL_IB_HCA"), "");
}

TEST(Nic, NcclSeesTheSameHcaListOnEveryRank) {
  // NCCL must see one HCA list on all ranks (NVIDIA/nccl#1478): the node's paired HCAs.
  Request r;
  r.nic_env = true;
  Plan q = must_plan(example("dgx-h100"), r);
  for (const auto& rb : q.ranks) EXPECT_EQ(env_of(rb, "NCCL_IB_HCA"), "=mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7");
  r.ranks = 2;  // on GPUs 0 and 4, one per package
  Plan two = must_plan(example("dgx-h100"), r);
  EXPECT_EQ(env_of(two.ranks[0], "NCCL_IB_HCA"), "=mlx5_0,mlx5_4");
  EXPECT_EQ(env_of(two.ranks[1], "NCCL_IB_HCA"), "=mlx5_0,mlx5_4");
}

TEST(Nic, UcxDeviceIsTheRanksOwn) {
  Request r;
  r.nic_env = true;
  Plan q = must_plan(example("dgx-h100"), r);
  EXPECT_EQ(env_of(q.ranks[0], "UCX_NET_DEVICES"), "mlx5_0:1");
  EXPECT_EQ(env_of(q.ranks[7], "UCX_NET_DEVICES"), "mlx5_7:1");
}

TEST(Nic, MultiGpuRankGetsTheNicOfEachGpu) {
  Request r;
  r.gpus_per_rank = 2;
  Plan q = must_plan(example("dgx-h100"), r);
  ASSERT_EQ(q.ranks.size(), 4u);
  for (const auto& rb : q.ranks) EXPECT_EQ(rb.nics.size(), 2u) << rb.local_rank;
  EXPECT_EQ(q.ranks[0].nics[0].name, "ibp26s0,mlx5_0");
}

topo::Nic nic(const std::string& pci, std::vector<std::string> names, unsigned node, const topo::Topology& t,
             std::vector<std::string> path) {
  topo::Nic n;
  n.pci = pci;
  n.class_id = 0x0200;
  n.os_names = std::move(names);
  n.numa = std::vector<unsigned>{node};
  n.cpus = topo::cpus_of_nodes(t, {node});
  n.pcie_path = std::move(path);
  return n;
}

TEST(Nic, FabricNicsBeforeEthernetEvenWhenFarther) {
  // Tioga: a 1 GbE management port under the GPU's own host bridge, the Slingshot NIC on the other
  // node. The rank gets the fabric NIC; NCCL is told about the fabric only.
  auto t = crowded_machine(2, 4, 1, {1, 0});
  t.nics.push_back(nic("0000:10:00.1", {"ens2"}, 0, t, {"hb:0000:10"}));  // same host bridge as GPU 0
  t.nics.push_back(nic("0000:c5:00.0", {"hsi0"}, 1, t, {"hb:0000:c4"}));
  Request r;
  r.nic_env = true;
  Plan p = must_plan(t, r);
  EXPECT_EQ(p.ranks[0].nics.at(0).name, "hsi0");
  EXPECT_EQ(env_of(p.ranks[0], "NCCL_SOCKET_IFNAME"), "=hsi0");
}

TEST(Nic, IpoibSlingshotAndInfinibandClassesAreFabric) {
  auto t = crowded_machine(1, 4, 1, {1});
  t.nics.push_back(nic("0000:10:00.1", {"eno1"}, 0, t, {"hb:0000:10"}));
  topo::Nic ib = nic("0000:05:00.0", {"eth2", "ib0"}, 0, t, {"hb:0000:04"});
  ib.class_id = 0x0c06;
  t.nics.push_back(ib);
  EXPECT_EQ(must_plan(t, {}).ranks[0].nics.at(0).name, "eth2,ib0");
  t.nics.pop_back();
  t.nics.push_back(nic("0000:05:00.0", {"hsn0"}, 0, t, {"hb:0000:04"}));
  EXPECT_EQ(must_plan(t, {}).ranks[0].nics.at(0).name, "hsn0");
}

// --- 7. environment --------------------------------------------------------------------------

TEST(Env, ThreadPoolSizesAreTheRanksCores) {
  Plan p = must_plan(example("dgx-h100"), {});
  EXPECT_EQ(env_of(p.ranks[0], "OMP_NUM_THREADS"), "14");
  EXPECT_EQ(env_of(p.ranks[0], "MKL_NUM_THREADS"), "14");  // every pool size the rank's cores (issue 55)
  EXPECT_EQ(env_of(p.ranks[0], "OPENBLAS_NUM_THREADS"), "14");
  EXPECT_EQ(env_of(p.ranks[0], "OMP_PLACES"), "");
  Request r;
  r.omp = true;
  Plan q = must_plan(example("dgx-h100"), r);
  EXPECT_EQ(env_of(q.ranks[0], "OMP_PLACES"), "cores");
  EXPECT_EQ(env_of(q.ranks[0], "OMP_PROC_BIND"), "close");
}

TEST(Env, NcclProxyCpusIsTheRanksLastCoreAsNcclReadsIt) {
  EXPECT_EQ(env_of(must_plan(example("dgx-h100"), {}).ranks[1], "NCCL_PROXY_CPUSET"), "") << "only on request";
  Request r;
  r.nccl_proxy_cpus = true;
  Plan p = must_plan(example("dgx-h100"), r);
  // Rank 1 has 14-27,126-139: its last core is PUs 27 and 139, as a comma list (NCCL takes no ranges).
  EXPECT_EQ(env_of(p.ranks[1], "NCCL_PROXY_CPUSET"), "27,139");
  r.smt = false;
  EXPECT_EQ(env_of(must_plan(example("dgx-h100"), r).ranks[1], "NCCL_PROXY_CPUSET"), "27");
}

TEST(Env, EveryGpuStaysVisibleUnlessIsolated) {
  Plan p = must_plan(example("dgx-h100"), {});
  EXPECT_EQ(env_of(p.ranks[3], "CUDA_VISIBLE_DEVICES"), "");
  Request r;
  r.isolate_gpus = true;
  Plan q = must_plan(example("dgx-h100"), r);
  EXPECT_EQ(env_of(q.ranks[3], "CUDA_VISIBLE_DEVICES"), "3");
  EXPECT_EQ(env_of(q.ranks[3], "CUDA_DEVICE_ORDER"), "PCI_BUS_ID");
  Plan a = must_plan(example("frontier-like"), r);
  EXPECT_EQ(env_of(a.ranks[2], "ROCR_VISIBLE_DEVICES"), "2");
}

// --- fewer ranks than GPUs (issue 33 item 1) ---------------------------------------------------

std::vector<unsigned> gpu_indexes(const Plan& p) {
  std::vector<unsigned> out;
  for (const auto& rb : p.ranks) out.push_back(rb.gpus.at(0).index);
  return out;
}

TEST(Spread, FewerRanksThanGpusTakeGpusSpreadOverPackages) {
  auto t = example("dgx-h100");  // GPUs 0-3 on package 0, 4-7 on package 1
  Request r;
  r.ranks = 2;
  Plan two = must_plan(t, r);
  EXPECT_EQ(gpu_indexes(two), (std::vector<unsigned>{0, 4}));
  EXPECT_EQ(two.score.idle_cpus, 0u);
  EXPECT_EQ(two.score.cpu_locality, 1.0);
  EXPECT_EQ(two.score.min_cores, 56u);
  r.ranks = 4;
  Plan four = must_plan(t, r);
  EXPECT_EQ(gpu_indexes(four), (std::vector<unsigned>{0, 1, 4, 5}));
  EXPECT_EQ(four.score.idle_cpus, 0u);
  EXPECT_EQ(four.score.min_cores, 28u);
}

TEST(Spread, SpreadGpusAreEveryRanksVisibleListInRankOrder) {
  Request r;
  r.ranks = 2;
  Plan p = must_plan(example("dgx-h100"), r);
  for (const auto& rb : p.ranks) {
    EXPECT_EQ(env_of(rb, "CUDA_VISIBLE_DEVICES"), "0,4");  // rank r's cuda:r is its GPU
    EXPECT_EQ(env_of(rb, "CUDA_DEVICE_ORDER"), "PCI_BUS_ID");
  }
  r.isolate_gpus = true;  // isolated: each rank sees its own GPU only
  Plan q = must_plan(example("dgx-h100"), r);
  EXPECT_EQ(env_of(q.ranks[1], "CUDA_VISIBLE_DEVICES"), "4");
  r.isolate_gpus = false;
  r.ranks = 4;
  Plan a = must_plan(example("frontier-like"), r);  // one GCD per NUMA node
  EXPECT_EQ(gpu_indexes(a), (std::vector<unsigned>{0, 2, 4, 6}));
  EXPECT_EQ(env_of(a.ranks[3], "ROCR_VISIBLE_DEVICES"), "0,2,4,6");
}

TEST(Spread, OneGpuPerNumaNodeBeforeTwoOnOne) {
  auto t = example("dgx-a100-nps4");  // two GPUs on each of nodes 1, 3, 5 and 7
  Request r;
  r.ranks = 4;
  Plan p = must_plan(t, r);
  std::set<unsigned> nodes;
  for (const auto& rb : p.ranks) nodes.insert(topo::find_gpu(t, rb.gpus[0].pci)->numa->at(0));
  EXPECT_EQ(nodes, (std::set<unsigned>{1, 3, 5, 7}));
  for (const auto& rb : p.ranks) EXPECT_EQ(rb.cpus.count(), 32u);  // the whole node each
}

TEST(Spread, WithinANodeGpusBehindOtherPcieSwitchesFirst) {
  auto t = crowded_machine(1, 16, 1, {4});  // GPUs 0,1 behind one switch, 2,3 behind another
  for (unsigned i = 0; i < 4; ++i)
    t.gpus[i].pcie_path = {"hb:0000:10", i < 2 ? "0000:11:00.0" : "0000:21:00.0", "0000:1" + std::to_string(i) + ":01.0"};
  Request r;
  r.ranks = 2;
  Plan p = must_plan(t, r);
  EXPECT_EQ(gpu_indexes(p), (std::vector<unsigned>{0, 2}));
}

TEST(Spread, AcrossPackagesTheGpuLinkedToTheChosenOnes) {
  // Two packages of two GPUs; NVLink joins GPU 0 and GPU 3 only (a bridge pair across sockets):
  // two ranks take GPUs 0 and 3, one per package and able to talk over NVLink, not 0 and 2.
  auto t = crowded_machine(2, 8, 1, {2, 2});
  topo::GpuLink link;
  link.a = t.gpus[0].pci;
  link.b = t.gpus[3].pci;
  link.count = 4;
  link.kind = topo::GpuLink::Kind::nvlink;
  t.links.push_back(link);
  Request r;
  r.ranks = 2;
  EXPECT_EQ(gpu_indexes(must_plan(t, r)), (std::vector<unsigned>{0, 3}));
  t.links.clear();
  EXPECT_EQ(gpu_indexes(must_plan(t, r)), (std::vector<unsigned>{0, 2}));
}

TEST(Spread, VisibilityFixedByTheEnvironmentKeepsRankROnVisibleGpuR) {
  for (const char* var : {"CUDA_VISIBLE_DEVICES", "SLURM_STEP_GPUS", "NVIDIA_VISIBLE_DEVICES"}) {
    Request r = with_env({{var, "0,1,2,3,4,5,6,7"}});
    r.ranks = 2;
    Plan p = must_plan(example("dgx-h100"), r);
    EXPECT_EQ(gpu_indexes(p), (std::vector<unsigned>{0, 1})) << var;
    EXPECT_EQ(env_of(p.ranks[0], "CUDA_VISIBLE_DEVICES"), "") << var;
  }
  Request all = with_env({{"NVIDIA_VISIBLE_DEVICES", "all"}});  // the container runtime's "every GPU"
  all.ranks = 2;
  EXPECT_EQ(gpu_indexes(must_plan(example("dgx-h100"), all)), (std::vector<unsigned>{0, 4}));
}

TEST(Spread, NoSpreadGpusKeepsRankROnVisibleGpuR) {
  Request r;
  r.ranks = 2;
  r.spread_gpus = false;
  Plan p = must_plan(example("dgx-h100"), r);
  EXPECT_EQ(gpu_indexes(p), (std::vector<unsigned>{0, 1}));
  EXPECT_EQ(env_of(p.ranks[0], "CUDA_VISIBLE_DEVICES"), "");
}

TEST(Spread, GpusTheProcessCannotOpenFixVisibility) {
  auto t = example("dgx-h100");
  Request r;
  r.ranks = 2;
  r.openable_gpus = std::vector<std::string>{t.gpus[2].pci, t.gpus[3].pci, t.gpus[6].pci};
  Plan p = must_plan(t, r);  // the runtime renumbers what is left: no index of ours would be right
  EXPECT_EQ(gpu_indexes(p), (std::vector<unsigned>{2, 3}));
  r.openable_gpus = std::vector<std::string>{};
  for (const auto& g : t.gpus) r.openable_gpus->push_back(g.pci);
  EXPECT_EQ(gpu_indexes(must_plan(t, r)), (std::vector<unsigned>{0, 4}));
}

TEST(Spread, SeveralGpusPerRankSpreadOnlyWhenIsolated) {
  Request r;
  r.ranks = 2;
  r.gpus_per_rank = 2;
  Plan kept = must_plan(example("dgx-h100"), r);  // a worker finds its GPUs by position: 0,1 and 2,3
  EXPECT_EQ(kept.ranks[1].gpus[0].index, 2u);
  r.isolate_gpus = true;
  Plan p = must_plan(example("dgx-h100"), r);
  ASSERT_EQ(p.ranks[1].gpus.size(), 2u);
  EXPECT_EQ(p.ranks[0].gpus[0].index, 0u);
  EXPECT_EQ(p.ranks[1].gpus[0].index, 4u);
  EXPECT_EQ(env_of(p.ranks[1], "CUDA_VISIBLE_DEVICES"), "4,5");
  EXPECT_EQ(p.score.idle_cpus, 0u);
}

TEST(Spread, PoliciesThatIgnoreGpusKeepGpuOrder) {
  for (Policy policy : {Policy::none, Policy::cpu_only}) {
    Request r;
    r.ranks = 2;
    r.policy = policy;
    Plan p = must_plan(example("dgx-h100"), r);
    EXPECT_EQ(gpu_indexes(p), (std::vector<unsigned>{0, 1})) << to_string(policy);
    EXPECT_TRUE(p.visible_env.empty()) << to_string(policy);
  }
}

TEST(Spread, UnknownLocalityKeepsGpuOrder) {
  Request r;
  r.ranks = 2;
  Plan p = must_plan(example("cloud-vm-unknown-locality"), r);
  EXPECT_EQ(gpu_indexes(p), (std::vector<unsigned>{0, 1}));
}

// --- a lone rank (issue 33 item 2) ------------------------------------------------------------

TEST(LoneRank, ARankAloneOnItsNumaNodeGetsTheWholeNode) {
  auto t = example("frontier-like");  // a GCD's locality is one L3 domain, two per NUMA node
  Request r;
  r.ranks = 1;
  r.gpus_per_rank = 1;
  Plan p = must_plan(t, r);
  const topo::Gpu* g = topo::find_gpu(t, p.ranks[0].gpus[0].pci);
  EXPECT_EQ(p.ranks[0].cpus, topo::cpus_of_nodes(t, *g->numa) & t.allowed_cpus);
  EXPECT_GT(p.ranks[0].cpus.count(), (*g->cpus & t.allowed_cpus).count());
}

TEST(LoneRank, RanksSharingANodeKeepTheirL3) {
  Plan p = must_plan(example("frontier-like"), {});  // 8 ranks, two per node
  for (const auto& rb : p.ranks) EXPECT_EQ(rb.cpus.count(), 14u);
}

TEST(LoneRank, PolicyL3KeepsTheL3) {
  Request r;
  r.ranks = 1;
  r.gpus_per_rank = 1;
  r.policy = Policy::l3;
  Plan p = must_plan(example("frontier-like"), r);
  EXPECT_EQ(p.ranks[0].cpus.count(), 14u);
}

TEST(LoneRank, UnknownLocalityOneRankGetsEveryAllowedCpu) {
  auto t = example("cloud-vm-unknown-locality");
  Request r;
  r.ranks = 1;
  Plan p = must_plan(t, r);
  EXPECT_EQ(p.ranks[0].cpus, t.allowed_cpus);
  EXPECT_TRUE(has_warning(p, "the one rank gets every allowed CPU"));
}

// --- 8. other policies -----------------------------------------------------------------------

TEST(Policy, SocketSharesTheGpusPackage) {
  Request r;
  r.policy = Policy::socket;
  Plan p = must_plan(example("dgx-a100-nps4"), r);
  EXPECT_EQ(p.ranks[0].cpus.to_list(), "0-63,128-191");
  EXPECT_EQ(p.ranks[0].cpus, p.ranks[1].cpus);
}

TEST(Policy, SocketSplitGivesEveryCoreOfThePackageDisjointly) {
  // DGX A100 NPS4: 8 GPUs on 4 of the 8 NUMA nodes; closest leaves half the machine idle.
  auto t = example("dgx-a100-nps4");
  Request r;
  r.policy = Policy::socket_split;
  Plan p = must_plan(t, r);
  ASSERT_EQ(p.ranks.size(), 8u);
  EXPECT_EQ(p.score.overlap_cpus, 0u);
  EXPECT_EQ(p.score.idle_cpus, 0u);
  EXPECT_EQ(p.score.min_cores, 16u);
  EXPECT_EQ(p.score.max_cores, 16u);
  for (const auto& rb : p.ranks) {
    // Every core on the GPU's package.
    const topo::Gpu* g = topo::find_gpu(t, rb.gpus[0].pci);
    const topo::NumaNode* home = topo::find_numa(t, g->numa->at(0));
    CpuSet pkg;
    for (const auto& pk : t.packages)
      if (pk.os_index == home->package) pkg = pk.cpus;
    EXPECT_TRUE(rb.cpus.is_subset_of(pkg)) << rb.local_rank;
  }
}

TEST(Policy, SocketSplitFillsFromTheGpusNodeFirst) {
  auto t = example("dgx-a100-nps4");
  Request r;
  r.policy = Policy::socket_split;
  Plan p = must_plan(t, r);
  Plan closest = must_plan(t, {});
  for (size_t i = 0; i < p.ranks.size(); ++i) {
    // Half of each rank's cores are on its GPU's node: the ones closest gives it.
    const topo::Gpu* g = topo::find_gpu(t, p.ranks[i].gpus[0].pci);
    CpuSet node = topo::cpus_of_nodes(t, *g->numa);
    EXPECT_EQ((p.ranks[i].cpus & node).count(), 16u) << i;
    EXPECT_TRUE(closest.ranks[i].cpus.is_subset_of(p.ranks[i].cpus)) << i;
  }
}

TEST(Policy, SocketSplitFallsBackToClosestWhenAPackageIsCrowded) {
  Request r;
  r.policy = Policy::socket_split;
  r.allowed = CpuSet::range(0, 3) | CpuSet::range(112, 115);
  r.ranks = 8;
  Plan p = must_plan(example("dgx-h100"), r);
  EXPECT_TRUE(has_warning(p, "socket-split: a package has fewer allowed cores than ranks"));
}

TEST(Policy, NumaSharesTheGpusNode) {
  Request r;
  r.policy = Policy::numa;
  Plan p = must_plan(example("dgx-a100-nps4"), r);
  EXPECT_EQ(p.ranks[0].cpus.to_list(), "48-63,176-191");
  EXPECT_EQ(p.ranks[1].cpus, p.ranks[0].cpus);
}

TEST(Policy, L3GivesOneL3DomainPerRank) {
  Request r;
  r.policy = Policy::l3;
  Plan p = must_plan(example("dgx-a100-nps4"), r);
  EXPECT_EQ(p.ranks[0].cpus.to_list(), "48-51,176-179");
  EXPECT_EQ(p.ranks[1].cpus.to_list(), "52-55,180-183");
}

TEST(Policy, CpuOnlyIgnoresTheGpus) {
  Request r;
  r.policy = Policy::cpu_only;
  Plan p = must_plan(example("dgx-a100-nps4"), r);
  EXPECT_EQ(p.ranks[0].cpus.to_list(), "0-15,128-143");  // node 0, while GPU 0 is on node 3
  EXPECT_EQ(p.score.cpu_locality, 0.0);
}

TEST(Policy, NoneBindsNothing) {
  Request r;
  r.policy = Policy::none;
  auto t = example("dgx-h100");
  Plan p = must_plan(t, r);
  EXPECT_EQ(p.ranks[0].cpus, t.allowed_cpus);
  EXPECT_EQ(p.ranks[0].mem_policy, MemPolicy::none);
  EXPECT_TRUE(p.ranks[0].env.empty());
  EXPECT_DOUBLE_EQ(*p.score.cpu_locality, 0.5);
}

// --- 9. score --------------------------------------------------------------------------------

TEST(Score, OverlapIsNotClaimedWhenCoresAreUnknown) {
  auto t = example("dgx-h100");
  t.cores_known = false;
  Plan p = must_plan(t, {});
  EXPECT_FALSE(p.score.cores_known);
  EXPECT_TRUE(has_warning(p, "some may be SMT siblings of one core"));
  EXPECT_TRUE(must_plan(example("dgx-h100"), {}).score.cores_known);
}

TEST(Score, IdleCpusAreTheAllowedCpusNoRankGot) {
  auto t = example("dgx-a100-nps4");
  Plan p = must_plan(t, {});
  EXPECT_EQ(p.score.idle_cpus, 128u);  // the four GPU-less NUMA nodes
  Request none;
  none.policy = Policy::none;
  EXPECT_EQ(must_plan(t, none).score.idle_cpus, 0u);
}

TEST(Score, ClosestOnNps4IsFullyLocal) {
  Plan p = must_plan(example("dgx-a100-nps4"), {});
  EXPECT_DOUBLE_EQ(*p.score.cpu_locality, 1.0);
  EXPECT_DOUBLE_EQ(*p.score.mem_locality, 1.0);
  EXPECT_EQ(p.score.overlap_cpus, 0u);
  EXPECT_EQ(p.score.nic_path.size(), 8u);
}

// --- no GPU, bad requests --------------------------------------------------------------------

TEST(NoGpu, CpuOnlyPlanWithAWarning) {
  auto t = discover::load_topology("pack:2 numa:2 core:4 pu:2");
  ASSERT_TRUE(t.ok());
  Plan p = must_plan(*t, {});
  EXPECT_EQ(p.ranks.size(), 4u);  // one per NUMA node with CPUs
  EXPECT_TRUE(has_warning(p, "no GPUs"));
  EXPECT_EQ(p.score.overlap_cpus, 0u);
}

// A capture gathered without I/O holds no PCI devices: its GPUs are unknown, not absent, and the
// CPU-only plan says so and how to gather one that has them.
TEST(NoGpu, EachRankGetsANumaDomainUnderRoundRobinNumbering) {
  // No GPU, one rank per NUMA node: the split follows hwloc's core order, so each rank's block is
  // one node even where CPU numbers alternate between sockets and sub-NUMA clusters (issue 33
  // item 11: contiguous CPU numbers spanned all four nodes).
  topo::Topology t = testing::round_robin_snc2();
  Plan p = must_plan(t, {});
  ASSERT_EQ(p.ranks.size(), 4u);
  std::set<unsigned> nodes;
  for (const auto& rb : p.ranks) {
    ASSERT_EQ(rb.mem_nodes.size(), 1u) << rb.cpus.to_list();
    EXPECT_EQ(rb.cpus, topo::find_numa(t, rb.mem_nodes[0])->cpus) << rb.local_rank;
    nodes.insert(rb.mem_nodes[0]);
  }
  EXPECT_EQ(nodes.size(), 4u);
}

TEST(NoGpu, ACaptureWithoutDevicesSaysItsGpusAreUnknown) {
  auto t = discover::load_topology("pack:2 numa:2 core:4 pu:2");
  ASSERT_TRUE(t.ok());
  t->devices_known = false;
  Plan p = must_plan(*t, {});
  EXPECT_FALSE(has_warning(p, "the topology has no GPUs"));
  EXPECT_TRUE(has_warning(p, "the capture holds no PCI devices (gathered without I/O): its GPUs are unknown"));
  EXPECT_TRUE(has_warning(p, "hwloc-gather-topology --io"));
}

TEST(NoGpu, RequireGpuMakesItAnError) {
  auto t = discover::load_topology("pack:1 core:2 pu:1");
  ASSERT_TRUE(t.ok());
  Request r;
  r.require_gpu = true;
  auto p = make_plan(*t, r);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().what, "--require-gpu");
  EXPECT_EQ(p.error().why, "the topology has no GPUs");
  EXPECT_EQ(p.error().kind, ErrorKind::not_found);  // no GPU is a runtime condition (exit 1), not a usage error
}

TEST(BadRequest, Rejected) {
  auto t = example("dgx-h100");
  Request zero;
  zero.ranks = 0;
  EXPECT_FALSE(make_plan(t, zero).ok());
  Request outside;
  outside.reserve = CpuSet::of({500});
  EXPECT_NE(make_plan(t, outside).error().message().find("not in this machine"), std::string::npos);
  Request allowed;
  allowed.allowed = CpuSet::range(220, 300);
  EXPECT_FALSE(make_plan(t, allowed).ok());
  Request all_reserved;
  all_reserved.reserve = t.cpus;
  EXPECT_NE(make_plan(t, all_reserved).error().message().find("is reserved"), std::string::npos);
  Request bad_node;
  bad_node.mem_node = 7;
  EXPECT_FALSE(make_plan(t, bad_node).ok());
  Request k0;
  k0.gpus_per_rank = 0;
  EXPECT_FALSE(make_plan(t, k0).ok());
}

}  // namespace gpubind::plan

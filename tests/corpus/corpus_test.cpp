// Acceptance test over the real-machine corpus (../shared/topologies): every hwloc XML, sysfs
// tree and NCCL/RCCL file is loaded in place, and each GPU's and NIC's NUMA nodes and CPU list
// are compared with ground-truth.json. The files are never copied into this repository; when the
// folder is absent the test exits 77 (ctest: skipped) and says why.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../support/plan_invariants.hpp"
#include "discover/hwloc_loader.hpp"
#include "discover/source.hpp"
#include "plan/peers.hpp"
#include "plan/slurm_node.hpp"
#include "render/gres_conf.hpp"
#include "sys/archive.hpp"

namespace {

using nlohmann::json;
const std::string kDir = GPUBIND_CORPUS_DIR;

// Files the model cannot represent, with the reason; the test checks they fail the way we say.
const std::map<std::string, std::string> kUnrepresentable = {
    {"aws-p5.48xlarge-32xEFA-nics-only.nccl.xml",
     "no processing units"},  // no <cpu affinity>: NIC->NUMA only, nothing to bind CPUs to
};

// Files whose devices hang off the whole machine: gpubind reports locality unknown (null) where
// ground truth writes the machine's full CPU and node set.
const std::set<std::string> kUnknownLocality = {"jsc-juropa3-2xE5-2650-2xK20Xm-no-pci-locality.hwloc1.xml"};

json ground_truth() {
  std::ifstream f(kDir + "/ground-truth.json");
  std::stringstream ss;
  ss << f.rdbuf();
  return json::parse(ss.str());
}

std::string numa_text(const std::optional<std::vector<unsigned>>& n) { return n ? json(*n).dump() : "null"; }

class Corpus : public ::testing::TestWithParam<std::string> {};

TEST_P(Corpus, LocalityMatchesGroundTruth) {
  const std::string file = GetParam();
  json truth;
  for (const json& e : ground_truth())
    if (e["file"] == file) truth = e;
  ASSERT_FALSE(truth.is_null());

  auto t = gpubind::discover::load_topology(kDir + "/" + file);
  if (auto it = kUnrepresentable.find(file); it != kUnrepresentable.end()) {
    ASSERT_FALSE(t.ok()) << file << " was expected to be unrepresentable";
    EXPECT_NE(t.error().message().find(it->second), std::string::npos) << t.error().message();
    return;
  }
  ASSERT_TRUE(t.ok()) << t.error().message();
  bool unknown_ok = kUnknownLocality.count(file) > 0;

  ASSERT_EQ(t->gpus.size(), truth["gpus"].size()) << file;
  for (const json& g : truth["gpus"]) {
    auto it = std::find_if(t->gpus.begin(), t->gpus.end(), [&](const auto& x) { return x.pci == g["pci"]; });
    ASSERT_NE(it, t->gpus.end()) << file << ": GPU " << g["pci"] << " not found";
    EXPECT_EQ(to_string(it->vendor), g["vendor"].get<std::string>()) << file << " " << it->pci;
    if (!it->numa && unknown_ok) {
      EXPECT_EQ(g["cpus"].get<std::string>(), t->cpus.to_list()) << file << ": unknown locality must mean 'whole machine'";
      continue;
    }
    EXPECT_EQ(numa_text(it->numa), g["numa"].dump()) << file << " GPU " << it->pci;
    EXPECT_EQ(it->cpus ? json(it->cpus->to_list()) : json(), g["cpus"]) << file << " GPU " << it->pci;
  }

  // The ground truth counts NICs by class 0200/0207/0280 only; gpubind also counts the legacy
  // serial-bus InfiniBand class 0c06 (the SL390s' ConnectX-2, issue 10), checked separately.
  size_t legacy_ib = size_t(std::count_if(t->nics.begin(), t->nics.end(), [](const auto& x) { return x.class_id == 0x0c06; }));
  if (file == "hp-proliant-sl390s-g7-2xXeon-3xTeslaM2070-interleaved-cpus.hwloc.xml") {
    EXPECT_EQ(legacy_ib, 1u) << "the ConnectX-2 (class 0c06) must be a NIC";
  }
  ASSERT_EQ(t->nics.size() - legacy_ib, truth["nics"].size()) << file;
  for (const json& n : truth["nics"]) {
    auto it = std::find_if(t->nics.begin(), t->nics.end(), [&](const auto& x) {
      if (!n["pci"].is_null()) return x.pci == n["pci"];
      return !x.os_names.empty() && x.os_names.front() == n["name"];
    });
    ASSERT_NE(it, t->nics.end()) << file << ": NIC " << n["pci"] << " " << n["name"] << " not found";
    if (!n["name"].is_null()) {
      std::string names;
      for (const auto& s : it->os_names) names += (names.empty() ? "" : ",") + s;
      EXPECT_EQ(names, n["name"].get<std::string>()) << file << " NIC " << it->pci;
    }
    if (!it->numa && unknown_ok) continue;
    EXPECT_EQ(numa_text(it->numa), n["numa"].dump()) << file << " NIC " << it->pci;
  }
}

// gpubind reads live PCI devices from sysfs itself rather than through hwloc's I/O discovery.
// On every gathered tree of the corpus both must find the same GPUs and NICs in the same place.
class SysfsTrees : public ::testing::TestWithParam<std::string> {};

TEST_P(SysfsTrees, SysfsScanAgreesWithHwloc) {
  using gpubind::discover::HwlocInput;
  auto tmp = gpubind::sys::extract_archive(kDir + "/" + GetParam());
  ASSERT_TRUE(tmp.ok()) << tmp.error().message();
  std::string dir;
  for (const auto& e : std::filesystem::directory_iterator(tmp->path()))
    if (std::filesystem::exists(e.path() / "sys")) dir = e.path();
  ASSERT_FALSE(dir.empty());
  auto by_hwloc = gpubind::discover::load_with_hwloc({HwlocInput::Kind::fsroot, dir, "h", HwlocInput::Devices::hwloc});
  auto by_sysfs = gpubind::discover::load_with_hwloc({HwlocInput::Kind::fsroot, dir, "s", HwlocInput::Devices::sysfs});
  ASSERT_TRUE(by_hwloc.ok()) << by_hwloc.error().message();
  ASSERT_TRUE(by_sysfs.ok()) << by_sysfs.error().message();
  ASSERT_EQ(by_sysfs->gpus.size(), by_hwloc->gpus.size());
  for (size_t i = 0; i < by_hwloc->gpus.size(); ++i) {
    const auto &a = by_hwloc->gpus[i], &b = by_sysfs->gpus[i];
    EXPECT_EQ(b.pci, a.pci);
    EXPECT_EQ(b.vendor, a.vendor) << a.pci;
    EXPECT_EQ(numa_text(b.numa), numa_text(a.numa)) << a.pci;
    EXPECT_EQ(b.cpus, a.cpus) << a.pci;
    EXPECT_EQ(b.pcie_path, a.pcie_path) << a.pci;
  }
  ASSERT_EQ(by_sysfs->nics.size(), by_hwloc->nics.size());
  for (size_t i = 0; i < by_hwloc->nics.size(); ++i) {
    const auto &a = by_hwloc->nics[i], &b = by_sysfs->nics[i];
    EXPECT_EQ(b.pci, a.pci);
    EXPECT_EQ(numa_text(b.numa), numa_text(a.numa)) << a.pci;
    EXPECT_EQ(b.os_names, a.os_names) << a.pci;
    EXPECT_EQ(b.pcie_path, a.pcie_path) << a.pci;
  }
}

// The planner's invariants on every corpus machine that loads.
class CorpusPlans : public ::testing::TestWithParam<std::string> {};

TEST_P(CorpusPlans, PlanInvariantsHold) {
  if (kUnrepresentable.count(GetParam())) GTEST_SKIP() << "unrepresentable: " << kUnrepresentable.at(GetParam());
  auto t = gpubind::discover::load_topology(kDir + "/" + GetParam());
  ASSERT_TRUE(t.ok()) << t.error().message();
  for (const auto& r : gpubind::testing::invariant_requests(*t))
    gpubind::testing::expect_plan_invariants(*t, r, GetParam() + " -n " + std::to_string(*r.ranks) + " --gpus-per-rank " +
                                                        (r.gpus_per_rank ? std::to_string(*r.gpus_per_rank) : std::string("default")));
}

// gres-conf on every real machine, for each release that checks sockets: every GPU's Cores= is
// what that release's slurmctld accepts on the node definition written with it, holds the GPU's
// own cores, and is wider only where the plan counts it so.
TEST_P(CorpusPlans, SlurmNodeCoresAreAcceptedAndHoldEachGpusOwn) {
  if (kUnrepresentable.count(GetParam())) GTEST_SKIP() << "unrepresentable: " << kUnrepresentable.at(GetParam());
  auto t = gpubind::discover::load_topology(kDir + "/" + GetParam());
  ASSERT_TRUE(t.ok()) << t.error().message();
  for (const char* release : {"22.05", "24.11", "25.05", "25.11", "26.05"}) {
    auto v = gpubind::plan::parse_slurm_version(release);
    ASSERT_TRUE(v.ok());
    gpubind::plan::SlurmNodePlan p = gpubind::plan::plan_slurm_node(*t, *v);
    ASSERT_EQ(p.gpus.size(), t->gpus.size());
    unsigned added = 0;
    for (const auto& g : p.gpus) {
      std::string where = GetParam() + " Slurm " + release + " GPU " + std::to_string(g.gpu);
      if (!p.no_cores.empty()) {
        EXPECT_TRUE(g.cores.empty()) << where;
        continue;
      }
      EXPECT_TRUE(g.own.is_subset_of(g.cores)) << where << ": " << g.own.to_list() << " not in " << g.cores.to_list();
      EXPECT_TRUE(gpubind::plan::slurm_accepts(g.cores, p.sockets, p.rule)) << where << ": Cores=" << g.cores.to_list();
      if (p.rule == gpubind::plan::SlurmCoresRule::any) {
        EXPECT_EQ(g.cores, g.own) << where;
      }
      added += g.cores.count() - g.own.count();
    }
    EXPECT_EQ(added, p.widened_cores()) << GetParam() << " " << release;
    if (p.rule != gpubind::plan::SlurmCoresRule::any && p.no_cores.empty() && !t->gpus.empty()) {  // the node line written
      EXPECT_EQ(p.sockets.cores_per_socket * p.sockets.sockets.size(), t->cores.size()) << GetParam() << " " << release;
    }
  }
}

// Issue 10's headline: on every real machine gpubind's closest plan is never worse than the tool
// a user would otherwise reach for. Worse means a peer keeps more of its CPUs next to the GPU
// without sharing more CPUs, or the same locality with less sharing.
TEST_P(CorpusPlans, ClosestIsNeverWorseThanAPeer) {
  if (kUnrepresentable.count(GetParam())) GTEST_SKIP() << "unrepresentable: " << kUnrepresentable.at(GetParam());
  auto t = gpubind::discover::load_topology(kDir + "/" + GetParam());
  ASSERT_TRUE(t.ok()) << t.error().message();
  using gpubind::plan::Peer;
  gpubind::plan::Request req;
  auto ours = gpubind::plan::make_plan(*t, req);
  ASSERT_TRUE(ours.ok()) << ours.error().message();
  if (ours->ranks.empty() || ours->ranks[0].gpus.empty() || !ours->score.cpu_locality)
    GTEST_SKIP() << "no GPU with known locality: nothing to compare";
  const gpubind::plan::Score& c = ours->score;
  for (Peer peer : {Peer::torchrun_exclusive, Peer::torchrun_core_complex, Peer::gpu_affinity_socket, Peer::slurm_block,
                    Peer::slurm_cyclic}) {
    auto b = gpubind::plan::peer_bindings(*t, req, peer);
    if (!b.ok()) continue;  // the peer itself cannot plan this machine
    auto s = gpubind::plan::score_plan(*t, *b, gpubind::plan::usable_cpus(*t, req));
    if (!s.cpu_locality) continue;
    EXPECT_FALSE(*s.cpu_locality > *c.cpu_locality + 1e-9 && s.overlap_cpus <= c.overlap_cpus)
        << GetParam() << ": " << to_string(peer) << " locality " << *s.cpu_locality << " > " << *c.cpu_locality;
    EXPECT_FALSE(std::abs(*s.cpu_locality - *c.cpu_locality) < 1e-9 && s.overlap_cpus < c.overlap_cpus)
        << GetParam() << ": " << to_string(peer) << " shares " << s.overlap_cpus << " CPUs, closest " << c.overlap_cpus;
  }
}

// gres.conf's Type= as Slurm's AutoDetect (gpu/nvml, gpu/rsmi) writes it: the model NVML or ROCm
// SMI reports, which these captures carry on their nvml*/rsmi* OS devices, not the PCI database's
// name (issue 33 item 10: "tu104gl__tesla_t4_" where AutoDetect writes "tesla_t4").
TEST(CorpusGres, TypeIsTheModelAutoDetectReads) {
  const std::map<std::string, std::string> model_of = {
      {"aws-g4dn.metal-2xXeon8259CL-8xT4.hwloc.xml", "tesla_t4"},
      {"llnl-lassen-ibm-ac922-2xPOWER9-4xV100.hwloc.xml", "tesla_v100-sxm2-16gb"},
      {"llnl-pascal-2xE5-2695v4-2xP100.hwloc.xml", "tesla_p100-pcie-16gb"},
      {"nvidia-dgx2h-16xV100-nvswitch-trimmedcpus.hwloc.xml", "tesla_v100-sxm3-32gb-h"},
      {"llnl-corona-supermicro-2xEPYC7402-8xMI50-rsmi.hwloc.xml", "deon_instinct_mi50_32gb"},  // as ROCm SMI cut it
  };
  for (const auto& [file, type] : model_of) {
    auto t = gpubind::discover::load_topology(kDir + "/" + file);
    ASSERT_TRUE(t.ok()) << file << ": " << t.error().message();
    ASSERT_FALSE(t->gpus.empty()) << file;
    for (const auto& g : t->gpus) EXPECT_EQ(gpubind::render::slurm_gpu_type(g), type) << file << " GPU " << g.index;
  }
}

// PUs in a capture's complete cpuset but not in its topology (offline, or removed as disallowed:
// Lassen's 8 PUs of its two system cores) are not PUs of the machine, nor one-PU cores of their
// own (issue 33 item 11: "56 cores, 176 PUs" where the tree has 40 cores and 160 PUs).
TEST(CorpusTopo, PusOutsideTheTopologyAreNeitherPusNorCores) {
  for (const char* file : {"llnl-lassen-ibm-ac922-2xPOWER9-4xV100.hwloc.xml", "llnl-lassen-ibm-ac922-2xPOWER9-4xV100-gpu-numa-nodes.hwloc1.xml"}) {
    auto t = gpubind::discover::load_topology(kDir + "/" + file);
    ASSERT_TRUE(t.ok()) << file << ": " << t.error().message();
    EXPECT_EQ(t->cpus.count(), 160u) << file;
    EXPECT_EQ(t->cores.size(), 40u) << file;
    for (const auto& c : t->cores) EXPECT_EQ(c.pus.count(), 4u) << file << " core " << c.pus.to_list();  // SMT4 throughout
  }
}

std::vector<std::string> sysfs_trees() {
  std::vector<std::string> out;
  if (!std::filesystem::exists(kDir + "/ground-truth.json")) return out;
  for (const json& e : ground_truth())
    if (e["kind"] == "sysfs") out.push_back(e["file"]);
  return out;
}

std::vector<std::string> corpus_files() {
  std::vector<std::string> out;
  if (!std::filesystem::exists(kDir + "/ground-truth.json")) return out;
  for (const json& e : ground_truth())
    if (e["kind"] != "nvidia-smi") out.push_back(e["file"]);  // matrices are answers, not sources
  return out;
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string s = info.param;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Shared, Corpus, ::testing::ValuesIn(corpus_files()), test_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Corpus);
INSTANTIATE_TEST_SUITE_P(Shared, CorpusPlans, ::testing::ValuesIn(corpus_files()), test_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(CorpusPlans);
INSTANTIATE_TEST_SUITE_P(Shared, SysfsTrees, ::testing::ValuesIn(sysfs_trees()), test_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(SysfsTrees);

}  // namespace

int main(int argc, char** argv) {
  if (!std::filesystem::exists(kDir + "/ground-truth.json")) {
    std::printf("SKIP: corpus not found at %s (it lives in the shared folder beside the checkout)\n", kDir.c_str());
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  int rc = RUN_ALL_TESTS();
  std::printf("corpus: %zu files checked\n", corpus_files().size());
  return rc;
}

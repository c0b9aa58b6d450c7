// Live: gpubind's view of this machine against what Linux reports in /sys and sched_getaffinity.
#include <gtest/gtest.h>

#include <algorithm>
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "discover/live_cache.hpp"
#include "sys/cgroup_cpuset.hpp"
#include "discover/source.hpp"
#include "topo/json.hpp"

namespace {

std::string read(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

TEST(LiveTopology, PusMatchSysfs) {
  auto t = gpubind::discover::load_topology("");
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(t->origin, "live");
  auto online = gpubind::CpuSet::parse_list(read("/sys/devices/system/cpu/online"));
  ASSERT_TRUE(online.ok());
  EXPECT_TRUE(online->is_subset_of(t->cpus)) << online->to_list() << " vs " << t->cpus.to_list();
}

TEST(LiveTopology, NumaNodesMatchSysfs) {
  auto t = gpubind::discover::load_topology("");
  ASSERT_TRUE(t.ok());
  if (!std::filesystem::exists("/sys/devices/system/node")) GTEST_SKIP() << "no /sys/devices/system/node (kernel without NUMA)";
  for (const auto& n : t->numa_nodes) {
    std::string path = "/sys/devices/system/node/node" + std::to_string(n.os_index) + "/cpulist";
    auto sys = gpubind::CpuSet::parse_list(read(path));
    ASSERT_TRUE(sys.ok()) << path;
    EXPECT_EQ(n.cpus, *sys) << "node " << n.os_index;
  }
}

TEST(LiveTopology, AllowedCoversOurAffinity) {
  auto t = gpubind::discover::load_topology("");
  ASSERT_TRUE(t.ok());
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  for (unsigned i = 0; i < CPU_SETSIZE; ++i)
    if (CPU_ISSET(i, &set)) {
      EXPECT_TRUE(t->allowed_cpus.test(i)) << "CPU " << i;
    }
}

TEST(LiveTopology, NicLocalityMatchesSysfs) {
  auto t = gpubind::discover::load_topology("");
  ASSERT_TRUE(t.ok());
  size_t judged = 0;
  for (const auto& n : t->nics) {
    if (n.pci.empty()) continue;
    ++judged;
    std::string node = read("/sys/bus/pci/devices/" + n.pci + "/numa_node");
    if (node == "-1") {
      // One NUMA node: the device is local to it; several: locality unknown, said as null.
      if (t->numa_nodes.size() == 1) {
        ASSERT_TRUE(n.numa.has_value()) << n.pci;
        EXPECT_EQ(*n.numa, std::vector<unsigned>{t->numa_nodes[0].os_index}) << n.pci;
      } else {
        EXPECT_FALSE(n.numa.has_value()) << n.pci;
      }
      continue;
    }
    ASSERT_TRUE(n.numa.has_value()) << n.pci;
    ASSERT_FALSE(n.numa->empty()) << n.pci;
    EXPECT_EQ((*n.numa)[0], std::stoul(node)) << n.pci;
  }
  if (judged == 0) GTEST_SKIP() << "this machine has no PCI network device: nothing to compare with sysfs";
}

}  // namespace

namespace {

// Runs hwloc-gather-topology on this machine into a new temporary directory (node.tar.bz2,
// node.xml, then `then` in it) and returns the directory; "" with the failed command in `why`.
std::string gather(const std::string& then, std::string& why) {
  char tmpl[] = "/tmp/gpubind-gather.XXXXXX";
  std::string dir = ::mkdtemp(tmpl);
  std::string cmd = "cd " + dir + " && hwloc-gather-topology ./node >/dev/null 2>&1" + then;
  if (std::system(cmd.c_str()) == 0) return dir;
  why = cmd;
  std::filesystem::remove_all(dir);
  return "";
}
bool have_gather() { return std::system("command -v hwloc-gather-topology >/dev/null 2>&1") == 0; }

// hwloc-gather-topology (hwloc's own capture tool) saves this machine as a /sys+/proc archive and
// an XML file; gpubind must read both back as the same machine it sees live.
TEST(LiveTopology, GatheredCaptureMatchesLive) {
  if (!have_gather()) GTEST_SKIP() << "hwloc-gather-topology is not installed (Debian package hwloc-nox)";
  std::string why;
  std::string dir = gather("", why);
  ASSERT_FALSE(dir.empty()) << why;
  auto live = gpubind::discover::load_topology("");
  auto archive = gpubind::discover::load_topology(dir + "/node.tar.bz2");
  auto xml = gpubind::discover::load_topology(dir + "/node.xml");
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(live.ok()) << live.error().message();
  ASSERT_TRUE(archive.ok()) << archive.error().message();
  ASSERT_TRUE(xml.ok()) << xml.error().message();
  // Where this machine's CPUID disagrees with its kernel and sysfs has no caches, gpubind takes
  // none from CPUID (hwloc_loader.hpp); hwloc-gather-topology's XML is hwloc's own export, caches
  // from that CPUID included, so only the archive's L3 domains can match.
  bool cpuid_refused = std::any_of(live->warnings.begin(), live->warnings.end(),
                                   [](const std::string& w) { return w.find("CPUID disagrees") != std::string::npos; });
  for (const auto* t : {&*archive, &*xml}) {
    EXPECT_EQ(t->cpus, live->cpus) << t->origin;
    EXPECT_EQ(t->packages.size(), live->packages.size()) << t->origin;
    EXPECT_EQ(t->cores.size(), live->cores.size()) << t->origin;
    if (!cpuid_refused || t == &*archive) {
      EXPECT_EQ(t->l3_domains.size(), live->l3_domains.size()) << t->origin;
    }
    ASSERT_EQ(t->numa_nodes.size(), live->numa_nodes.size()) << t->origin;
    for (size_t i = 0; i < t->numa_nodes.size(); ++i) EXPECT_EQ(t->numa_nodes[i].cpus, live->numa_nodes[i].cpus);
  }
  // The XML carries hwloc's I/O objects: the same GPUs and NICs as gpubind's sysfs scan.
  ASSERT_EQ(xml->gpus.size(), live->gpus.size());
  ASSERT_EQ(xml->nics.size(), live->nics.size());
  for (size_t i = 0; i < live->nics.size(); ++i) {
    EXPECT_EQ(xml->nics[i].pci, live->nics[i].pci);
    EXPECT_EQ(xml->nics[i].numa, live->nics[i].numa);
    EXPECT_EQ(xml->nics[i].pcie_path, live->nics[i].pcie_path);
  }
}

// A VM whose sysfs has no cpu*/cache directories (seen on AMD EPYC guests): live discovery takes
// the caches from CPUID, and hwloc-gather-topology saves CPUID dumps beside /sys, so the capture
// read back must have the same L3 domains. Simulated here by removing the cache directories from
// a capture of this machine; where the capture has no CPUID dumps (not x86) there is nothing to
// read them from, and the test says so.
TEST(LiveTopology, GatheredCaptureWithoutSysfsCachesTakesThemFromItsCpuidDumps) {
  if (!have_gather()) GTEST_SKIP() << "hwloc-gather-topology is not installed (Debian package hwloc-nox)";
  std::string why;
  std::string dir = gather(" && tar xjf node.tar.bz2", why);
  ASSERT_FALSE(dir.empty()) << why;
  namespace fs = std::filesystem;
  bool dumps = fs::exists(dir + "/node/cpuid/hwloc-cpuid-info") || fs::exists(dir + "/node/hwloc-cpuid/hwloc-cpuid-info");
  // (On a machine whose sysfs has none, there is nothing to remove: the capture already lacks them.)
  for (const auto& cpu : fs::directory_iterator(dir + "/node/sys/devices/system/cpu")) {
    std::error_code ignored;  // entries that are files (online, present) have no cache/ in them
    fs::remove_all(cpu.path() / "cache", ignored);
  }
  auto live = gpubind::discover::load_topology("");
  auto gathered = gpubind::discover::load_topology(dir + "/node");
  fs::remove_all(dir);
  ASSERT_TRUE(live.ok()) << live.error().message();
  ASSERT_TRUE(gathered.ok()) << gathered.error().message();
  if (!dumps) GTEST_SKIP() << "hwloc-gather-topology saved no CPUID dumps here (not x86): the capture cannot carry caches sysfs lacks";
  if (live->l3_domains.empty()) GTEST_SKIP() << "this machine shows no L3 live: nothing to compare";
  // A hypervisor whose CPUID answers vary from call to call leaves dumps that disagree with the
  // capture (hwloc_loader.hpp): gpubind then says so and takes no caches from them.
  for (const std::string& w : gathered->warnings)
    if (w.find("CPUID dumps disagree") != std::string::npos) {
      EXPECT_TRUE(gathered->l3_domains.empty()) << "caches taken from dumps said to disagree";
      GTEST_SKIP() << "this machine's CPUID cannot describe its caches: " << w;
    }
  EXPECT_EQ(gathered->l3_domains.size(), live->l3_domains.size());
  ASSERT_EQ(gathered->cores.size(), live->cores.size());
  EXPECT_EQ(gathered->cpus, live->cpus);
}

}  // namespace

namespace {

std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  ::pclose(p);
  return out;
}

// On a live machine the plan stays inside the caller's affinity (taskset, cgroups, Slurm): the
// binary reads it with sched_getaffinity.
TEST(LivePlan, RespectsTheCallersAffinity) {
  if (std::system("command -v taskset >/dev/null 2>&1") != 0) GTEST_SKIP() << "taskset (util-linux) is not installed";
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  int last = -1;
  for (int i = 0; i < CPU_SETSIZE; ++i)
    if (CPU_ISSET(i, &set)) last = i;
  ASSERT_GE(last, 0);
  std::string out = run("taskset -c " + std::to_string(last) + " " + GPUBIND_BINARY + " plan --json -n 2");
  auto j = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << out;
  for (const auto& r : j["ranks"]) EXPECT_EQ(r["cpus"], std::to_string(last)) << out;
}

}  // namespace

// The topology cache on this machine: the first load discovers and writes one entry keyed by
// boot, online CPUs and nodes, versions and code, neither this process's affinity nor its cgroup
// (whose cpuset this machine's reader reads as hwloc does); the second reads it back unchanged,
// with the allowed CPUs of this process's cgroup applied.
TEST(LiveCache, WrittenOnceThenReadBackUnchanged) {
  char tmpl[] = "/tmp/gpubind-live-cache.XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  std::string dir = std::string(tmpl) + "/cache";
  std::vector<std::string> notes;
  auto first = gpubind::discover::load_live_cached(dir, 16, &notes);
  ASSERT_TRUE(first.ok()) << first.error().message();
  EXPECT_TRUE(notes.empty()) << notes.front();
  std::vector<std::filesystem::path> entries;
  for (const auto& e : std::filesystem::directory_iterator(dir)) entries.push_back(e.path());
  ASSERT_EQ(entries.size(), 1u);
  auto entry = nlohmann::json::parse(read(entries[0].string()));
  std::string key = entry.at("cache_key").get<std::string>();
  for (const char* part : {"gpubind ", " code ", "; hwloc ", "; boot ", "; online ", "; nodes "})
    EXPECT_NE(key.find(part), std::string::npos) << part << " in " << key;
  EXPECT_EQ(key.find("; cpus "), std::string::npos) << key;    // pinned ranks share the entry
  EXPECT_EQ(key.find("; cgroup "), std::string::npos) << key;  // and so do per-job cgroups
  // Marked, so the second load shows it came from the entry and not from a second discovery;
  // the allowed CPUs stored are not used: the cgroup's are applied at each load.
  entry["topology"]["hostname"] = "read-from-the-cache";
  entry["topology"]["allowed_cpus"] = std::to_string(*first->cpus.first());
  std::ofstream(entries[0]) << entry.dump();
  auto second = gpubind::discover::load_live_cached(dir, 16, &notes);
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(notes.empty());
  EXPECT_EQ(second->hostname, "read-from-the-cache");
  second->hostname = first->hostname;
  EXPECT_EQ(gpubind::topo::to_json(*second).dump(), gpubind::topo::to_json(*first).dump());
  std::filesystem::remove_all(tmpl);
}

// The cgroup cpuset reader agrees with hwloc's allowed set on this machine (the cache applies the
// reader's value to entries hwloc discovered).
TEST(LiveCache, CgroupCpusetIsHwlocsAllowedSet) {
  auto root = gpubind::sys::open_fsroot("/");
  ASSERT_TRUE(root.ok());
  auto cg = gpubind::sys::cgroup_allowed_cpus(**root);
  ASSERT_TRUE(cg.ok()) << cg.error().message();
  auto t = gpubind::discover::load_topology("");
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ((cg->cpus & t->cpus).to_list(), t->allowed_cpus.to_list()) << cg->file;
}

// k8s check's reader (k8s/reader.hpp) over an FsRoot that refuses the kubelet's directory, as
// Linux refuses a user other than root the search of /var/lib/kubelet (mode 0700).
#include "k8s/reader.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace gpubind::k8s {
namespace {

// Every path under var/lib/kubelet: EACCES, which also makes it look absent to a lookup (an
// O_PATH open needs the same search permission).
class KubeletDirRefused final : public sys::FsRoot {
 public:
  Result<std::string> read(const std::string& rel) const override { return refuse(rel); }
  Result<std::vector<std::string>> list(const std::string& rel) const override { return Error{rel, "No such file or directory", ErrorKind::not_found}; }
  Result<std::string> read_link(const std::string& rel) const override { return refuse(rel).error(); }
  bool exists(const std::string&) const override { return false; }
  int access_rw(const std::string&) const override { return EACCES; }
  std::string describe() const override { return "/"; }
  bool is_this_system() const override { return false; }
  Result<sys::UniqueFd> open_read(const std::string& rel) const override { return refuse(rel).error(); }

 private:
  Result<std::string> refuse(const std::string& rel) const {
    if (rel.starts_with("var/lib/kubelet/")) return Error{path_of(rel), "Permission denied", ErrorKind::permission};
    return Error{path_of(rel), "No such file or directory", ErrorKind::not_found};
  }
};

TEST(K8sReader, AKubeletDirectoryThisUserMayNotSearchIsAnErrorNotAnAbsentFile) {
  KubeletDirRefused root;
  auto s = read_node_state(root, ReaderOptions{});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message(),
            "/var/lib/kubelet/config.yaml: Permission denied (the kubelet's files are root's: run k8s check as root)");
}

}  // namespace

namespace reader_dra {

namespace fs = std::filesystem;

const std::string kTree = std::string(GPUBIND_SOURCE_DIR) + "/tests/data/k8s/dra-cpu";

// Read without the kubelet's config.yaml (its YAML module is not beside the test program).
NodeState read_tree(const std::string& dir) {
  auto root = sys::open_fsroot(dir);
  EXPECT_TRUE(root);
  ReaderOptions options;
  options.config = "/var/lib/kubelet/absent.yaml";
  auto s = read_node_state(**root, options);
  EXPECT_TRUE(s) << (s ? "" : s.error().message());
  return s ? *s : NodeState{};
}

void put(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file) << text;
}

TEST(K8sReaderDra, TheCpuDriversClaimsCgroupsAndRegistrationFromANodesTree) {
  NodeState s = read_tree(kTree);
  EXPECT_EQ(s.cpu_claims.size(), 5u);
  EXPECT_EQ(s.cpu_claims.at("ca000000-0000-4000-8000-000000000002").to_list(), "0-7,128-135");
  ASSERT_EQ(s.container_cpus.size(), 6u);
  const auto& cg = s.container_cpus.at({"5a000000-0000-4000-8000-000000000006", "trainer"});
  EXPECT_EQ(cg.cpus.to_list(), "0-255");
  EXPECT_NE(cg.file.find("/kubepods-pod5a000000_0000_4000_8000_000000000006.slice/cri-containerd-"), std::string::npos) << cg.file;
  EXPECT_EQ(s.cpu_driver, kTree + "/var/lib/kubelet/plugins_registry/dra.cpu-reg.sock");
  ASSERT_GE(s.notes.size(), 2u);
  EXPECT_EQ(s.notes[1],
            "no " + kTree + "/var/lib/kubelet/cpu_manager_state: the CPU DRA driver, not the kubelet, gives containers CPUs of their own");
  bool bad_spec = false;
  for (const std::string& n : s.notes)
    bad_spec = bad_spec ||
               (n.find("dra.k8s.io-cpu_claim-ca000000-0000-4000-8000-0000000000ff.json") != std::string::npos && n.ends_with(": skipped"));
  EXPECT_TRUE(bad_spec) << "the broken CDI spec is a note";
}

// cgroup v1's cpuset hierarchy and the cgroupfs driver's names (kubepods/burstable/pod<UID>/<ID>),
// a cpuset file that does not parse (a note naming it and the container; the others still read).
TEST(K8sReaderDra, CgroupV1CgroupfsNamesAndABadCpusetFile) {
  fs::path dir = fs::temp_directory_path() / ("gpubind-k8s-reader-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  std::string id1(64, 'a'), id2(64, 'b');
  put(dir / "var/log/pods/ml_a_u1/main/0.log", "");
  put(dir / "var/log/pods/ml_b_u2/main/0.log", "");
  put(dir / ("var/log/containers/a_ml_main-" + id1 + ".log"), "");
  put(dir / ("var/log/containers/b_ml_main-" + id2 + ".log"), "");
  put(dir / ("sys/fs/cgroup/cpuset/kubepods/burstable/podu1/" + id1 + "/cpuset.effective_cpus"), "4-7\n");
  put(dir / ("sys/fs/cgroup/cpuset/kubepods/podu2/" + id2 + "/cpuset.effective_cpus"), "4-x\n");
  NodeState s = read_tree(dir.string());
  ASSERT_EQ(s.container_cpus.size(), 1u);
  EXPECT_EQ(s.container_cpus.at({"u1", "main"}).cpus.to_list(), "4-7");
  bool said = false;
  for (const std::string& n : s.notes)
    said =
        said || (n.find(id2 + "/cpuset.effective_cpus") != std::string::npos && n.find("container main of pod ml/b") != std::string::npos);
  EXPECT_TRUE(said) << "the bad cpuset file is a note naming it and its container";
  EXPECT_EQ(s.cpu_driver, "");
  fs::remove_all(dir);
}

}  // namespace reader_dra
}  // namespace gpubind::k8s

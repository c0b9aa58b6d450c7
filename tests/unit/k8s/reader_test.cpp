// k8s check's reader (k8s/reader.hpp) over an FsRoot that refuses the kubelet's directory, as
// Linux refuses a user other than root the search of /var/lib/kubelet (mode 0700).
#include "k8s/reader.hpp"

#include <gtest/gtest.h>

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
}  // namespace gpubind::k8s

#pragma once
// Builds small /sys and /proc trees in a temporary directory for tests of code that reads
// through an FsRoot: files with contents, directories, and the symlinks sysfs uses.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace gpubind::testing {

class FakeTree {
 public:
  FakeTree() {
    char tmpl[] = "/tmp/gpubind-tree.XXXXXX";
    m_root = ::mkdtemp(tmpl);
  }
  ~FakeTree() { std::filesystem::remove_all(m_root); }
  FakeTree(const FakeTree&) = delete;
  FakeTree& operator=(const FakeTree&) = delete;

  const std::string& root() const { return m_root; }

  void file(const std::string& rel, const std::string& text) {
    std::filesystem::path p = std::filesystem::path(m_root) / rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  void dir(const std::string& rel) { std::filesystem::create_directories(std::filesystem::path(m_root) / rel); }
  void link(const std::string& rel, const std::string& target) {
    std::filesystem::path p = std::filesystem::path(m_root) / rel;
    std::filesystem::create_directories(p.parent_path());
    std::filesystem::create_symlink(target, p);
  }

  // A PCI function at sysfs device path `devpath` ("pci0000:15/0000:15:01.0/0000:16:00.0"),
  // registered under sys/bus/pci/devices like the kernel does.
  void pci(const std::string& devpath, const std::string& cls, const std::string& vendor, int numa_node,
           const std::string& local_cpulist) {
    std::string dir = "sys/devices/" + devpath;
    file(dir + "/class", cls + "\n");
    file(dir + "/vendor", vendor + "\n");
    file(dir + "/device", "0x1234\n");
    file(dir + "/numa_node", std::to_string(numa_node) + "\n");
    file(dir + "/local_cpulist", local_cpulist + "\n");
    std::string addr = devpath.substr(devpath.rfind('/') + 1);
    link("sys/bus/pci/devices/" + addr, "../../../devices/" + devpath);
  }

 private:
  std::string m_root;
};

}  // namespace gpubind::testing

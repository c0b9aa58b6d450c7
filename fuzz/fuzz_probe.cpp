// The /proc and /sys parsers behind probe: a process's status, stat, sched and numa_maps and the
// NVIDIA information file, written into a small tree (fields separated by NUL bytes) and read
// back through an FsRoot.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "probe/probe.hpp"
#include "sys/fsroot.hpp"

namespace {

std::string g_root;

std::string make_tree() {
  char tmpl[] = "/tmp/gpubind-fuzz-probe.XXXXXX";
  std::string root = ::mkdtemp(tmpl);
  g_root = root;
  std::atexit([] { std::filesystem::remove_all(g_root); });
  std::filesystem::create_directories(root + "/proc/7/task/7");
  std::filesystem::create_directories(root + "/proc/7/fd");
  std::filesystem::create_directories(root + "/proc/driver/nvidia/gpus/0000:07:00.0");
  std::filesystem::create_symlink("/dev/nvidia0", root + "/proc/7/fd/3");
  return root;
}

void put(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::trunc) << text; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string root = make_tree();
  std::vector<std::string> field(5);
  size_t k = 0;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0 && k + 1 < field.size()) ++k;
    else field[k] += char(data[i]);
  }
  put(root + "/proc/7/status", field[0]);
  put(root + "/proc/7/task/7/status", field[0]);
  put(root + "/proc/7/task/7/stat", field[1]);
  put(root + "/proc/7/task/7/sched", field[2]);
  put(root + "/proc/7/numa_maps", field[3]);
  put(root + "/proc/driver/nvidia/gpus/0000:07:00.0/information", field[4]);
  auto fs = gpubind::sys::open_fsroot(root);
  if (!fs) return 0;
  (void)gpubind::probe::probe_process(**fs, 7, {true});
  gpubind::probe::GpuDeviceMap map(**fs);
  (void)map.pci_of("/dev/nvidia0");
  return 0;
}

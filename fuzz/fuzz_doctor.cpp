// The files doctor reads (doctor/reader.hpp): kernel settings, /proc/meminfo, /proc/cmdline, the
// isolated and nohz_full CPU lists, a PCIe link's width and speed files, slurm.conf (its NodeName=
// lines for node gpu01), an interrupt's CPUs, irqbalance's and systemd's settings, the cgroup's
// files, an IOMMU group's type and a switch port's config space, written into a small tree (fields
// separated by NUL bytes), read back through an FsRoot and judged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "discover/source.hpp"
#include "doctor/doctor.hpp"
#include "doctor/reader.hpp"
#include "sys/fsroot.hpp"

namespace {

std::string g_root;
const char* kFiles[] = {"proc/sys/kernel/numa_balancing", "proc/sys/vm/zone_reclaim_mode", "sys/kernel/mm/transparent_hugepage/enabled",
                        "sys/kernel/mm/transparent_hugepage/defrag", "proc/meminfo", "proc/cmdline",
                        "sys/devices/system/cpu/isolated", "sys/devices/system/cpu/nohz_full",
                        "sys/bus/pci/devices/0000:18:00.0/current_link_width", "sys/bus/pci/devices/0000:18:00.0/max_link_speed",
                        "etc/slurm/slurm.conf", "proc/irq/180/effective_affinity_list", "etc/default/irqbalance",
                        "etc/systemd/system.conf", "proc/self/cgroup", "proc/self/mountinfo", "sys/fs/cgroup/cpuset.mems.effective",
                        "sys/kernel/iommu_groups/30/type", "sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/config",
                        "etc/slurm/plugstack.conf", "etc/slurm/plugstack.conf.d/gpubind.conf"};
// GPU 0's device directory, below a switch port, which the bus's entry links to.
const char* kDevice = "sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:18:00.0";

std::string make_tree() {
  char tmpl[] = "/tmp/gpubind-fuzz-doctor.XXXXXX";
  std::string root = ::mkdtemp(tmpl);
  g_root = root;
  std::atexit([] { std::filesystem::remove_all(g_root); });
  std::filesystem::create_directories(root + "/" + kDevice + "/msi_irqs/180");
  std::filesystem::create_directories(root + "/sys/bus/pci/devices");
  std::filesystem::create_symlink("../../../devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:18:00.0", root + "/sys/bus/pci/devices/0000:18:00.0");
  std::filesystem::create_directory_symlink("../../../../../kernel/iommu_groups/30", root + "/" + kDevice + "/iommu_group");
  for (const char* f : kFiles) std::filesystem::create_directories(std::filesystem::path(root + "/" + f).parent_path());
  return root;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string root = make_tree();
  static const gpubind::topo::Topology t = *gpubind::discover::load_topology("example:dgx-h100");
  std::vector<std::string> field(std::size(kFiles));
  size_t k = 0;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0 && k + 1 < field.size()) ++k;
    else field[k] += char(data[i]);
  }
  for (size_t i = 0; i < field.size(); ++i) std::ofstream(root + "/" + kFiles[i], std::ios::trunc) << field[i];
  auto fs = gpubind::sys::open_fsroot(root);
  if (!fs) return 0;
  auto facts = gpubind::doctor::read_node_facts(**fs, t, {"", "gpu01", "", false, false});
  if (!facts) return 0;  // only a file the user names is an error: none is named here
  gpubind::doctor::Report r = gpubind::doctor::judge(t, *facts);
  (void)r.worst();
  return 0;
}

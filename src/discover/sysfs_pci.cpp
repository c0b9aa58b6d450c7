#include "discover/sysfs_pci.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "util/strings.hpp"

namespace gpubind::discover {

namespace {

std::optional<uint64_t> read_hex(const sys::FsRoot& root, const std::string& path) {
  auto text = root.read(path);
  if (!text) return std::nullopt;
  return parse_uint(*text, 16);
}

bool is_pci_address(std::string_view s) {
  // dddd:bb:dd.f
  return s.size() == 12 && s[4] == ':' && s[7] == ':' && s[10] == '.';
}

// "../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0" -> {"hb:0000:00", "0000:00:01.0"}.
std::vector<std::string> path_from_link(const std::string& link, const std::string& self) {
  std::vector<std::string> path;
  for (std::string_view part : split(link, '/')) {
    if (part.starts_with("pci") && part.size() >= 10 && part[7] == ':') {
      path.clear();
      path.push_back("hb:" + to_lower(part.substr(3)));
    } else if (is_pci_address(part) && part != self) {
      if (!path.empty()) path.push_back(to_lower(part));
    }
  }
  return path;
}

void add_class_dir(const sys::FsRoot& root, const std::string& dir, const char* sub, std::vector<std::string>& names,
                   bool only_render_and_card = false) {
  auto entries = root.list(dir + "/" + sub);
  if (!entries) return;
  for (const std::string& e : *entries) {
    if (only_render_and_card && !(e.starts_with("card") || e.starts_with("renderD"))) continue;
    names.push_back(e);
  }
}

// /proc/driver/nvidia/gpus/<busid>/information: "Model: \t NVIDIA H100 80GB HBM3", "GPU UUID: GPU-...".
void read_nvidia_info(const sys::FsRoot& root, const std::string& dir, SysfsPciDevice& d) {
  auto text = root.read(dir + "/information");
  if (!text) return;
  d.name = key_value(*text, "Model");
  d.uuid = key_value(*text, "GPU UUID");
}

// Entries of `dir` named PREFIX then digits ("tile0", "gt1").
unsigned count_numbered(const sys::FsRoot& root, const std::string& dir, std::string_view prefix) {
  auto entries = root.list(dir);
  if (!entries) return 0;
  return unsigned(std::count_if(entries->begin(), entries->end(), [&](const std::string& e) {
    return e.size() > prefix.size() && e.starts_with(prefix) && parse_uint(e.substr(prefix.size())).has_value();
  }));
}

// An Intel GPU's stacks (tiles): the xe driver makes tile0/, tile1/ under the PCI device; i915
// one gt/gtN per tile under its DRM card. 0 where neither says (other drivers and vendors).
unsigned count_stacks(const sys::FsRoot& root, const std::string& dir, const std::vector<std::string>& os_names) {
  if (unsigned tiles = count_numbered(root, dir, "tile")) return tiles;
  for (const std::string& n : os_names)
    if (n.starts_with("card"))
      if (unsigned gts = count_numbered(root, dir + "/drm/" + n + "/gt", "gt")) return gts;
  return 0;
}

}  // namespace

Result<std::vector<SysfsPciDevice>> scan_sysfs_pci(const sys::FsRoot& root) {
  std::vector<SysfsPciDevice> out;
  if (!root.exists("sys/bus/pci/devices")) return out;
  auto names = root.list("sys/bus/pci/devices");
  if (!names) return names.error();

  std::map<std::string, std::string> nvidia;  // bus id -> /proc dir
  if (auto gpus = root.list("proc/driver/nvidia/gpus"))
    for (const std::string& g : *gpus) nvidia[to_lower(g)] = "proc/driver/nvidia/gpus/" + g;

  for (const std::string& name : *names) {
    std::string dir = "sys/bus/pci/devices/" + name;
    SysfsPciDevice d;
    d.pci = to_lower(name);
    // Wider than 16 bits is no id the kernel writes: unknown (0), never wrapped.
    auto id16 = [](std::optional<uint64_t> v) { return v && *v <= 0xffff ? uint16_t(*v) : uint16_t(0); };
    d.vendor_id = id16(read_hex(root, dir + "/vendor"));
    d.device_id = id16(read_hex(root, dir + "/device"));
    d.class_id = uint32_t(read_hex(root, dir + "/class").value_or(0) >> 8);  // 0x030200 -> 0x0302
    if (auto cpus = root.read(dir + "/local_cpulist")) {
      auto set = CpuSet::parse_list(*cpus);
      if (set && !set->empty()) d.local_cpus = *set;
    } else if (auto mask = root.read(dir + "/local_cpus")) {
      auto set = CpuSet::parse_mask(*mask);
      if (set && !set->empty()) d.local_cpus = *set;
    }
    if (auto link = root.read_link(dir)) d.pcie_path = path_from_link(*link, d.pci);
    add_class_dir(root, dir, "net", d.os_names);
    add_class_dir(root, dir, "infiniband", d.os_names);
    add_class_dir(root, dir, "drm", d.os_names, true);
    add_class_dir(root, dir, "cxi", d.os_names);
    // virtio devices put their network interface one level down (virtio2/net/eth0).
    if (auto entries = root.list(dir))
      for (const std::string& e : *entries)
        if (e.starts_with("virtio")) add_class_dir(root, dir + "/" + e, "net", d.os_names);
    std::sort(d.os_names.begin(), d.os_names.end());
    d.stacks = count_stacks(root, dir, d.os_names);
    if (auto it = nvidia.find(d.pci); it != nvidia.end()) {
      d.nvidia_driver_bound = true;
      read_nvidia_info(root, it->second, d);
    }
    out.push_back(std::move(d));
  }
  std::sort(out.begin(), out.end(), [](const SysfsPciDevice& a, const SysfsPciDevice& b) { return a.pci < b.pci; });

  // Bridges are kept only when sysfs lists them as devices (a trimmed capture may hold the
  // device but not its switch), and a device whose entry is a plain directory rather than the
  // usual symlink gets a host bridge of its own bus, which is also what hwloc makes of it.
  std::set<std::string> known;
  for (const SysfsPciDevice& d : out) known.insert(d.pci);
  for (SysfsPciDevice& d : out) {
    if (d.pcie_path.empty()) {
      d.pcie_path.push_back("hb:" + d.pci.substr(0, 7));
      continue;
    }
    std::erase_if(d.pcie_path, [&](const std::string& p) { return !p.starts_with("hb:") && !known.count(p); });
  }
  return out;
}

}  // namespace gpubind::discover

#include "doctor/reader.hpp"

#include <cstdlib>

#include "util/strings.hpp"

namespace gpubind::doctor {

namespace {

// A file's text, or nullopt: absent silently, otherwise with a note.
std::optional<std::string> read(const sys::FsRoot& root, const std::string& rel, NodeFacts& f) {
  auto text = root.read(rel);
  if (text) return *text;
  if (text.error().kind != ErrorKind::not_found) f.unreadable.push_back(root.path_of(rel) + ": " + text.error().why);
  return std::nullopt;
}

std::optional<long> number(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  auto v = parse_uint(trim(*text));
  if (!v) return std::nullopt;
  return long(*v);
}

// "always defer [defer+madvise] madvise never" -> "defer+madvise"
std::optional<std::string> bracketed(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  size_t a = text->find('['), b = text->find(']');
  if (a == std::string::npos || b == std::string::npos || b < a) return std::nullopt;
  return text->substr(a + 1, b - a - 1);
}

std::optional<CpuSet> cpus(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  std::string_view t = trim(*text);
  if (t.empty()) return CpuSet{};
  auto c = CpuSet::parse_list(t);
  if (!c) return std::nullopt;
  return *c;
}

// "16.0 GT/s PCIe" -> 16
std::optional<double> gt_per_second(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  std::string t(trim(*text));
  char* end = nullptr;
  double v = std::strtod(t.c_str(), &end);
  if (end == t.c_str() || v <= 0 || t.find("GT/s") == std::string::npos) return std::nullopt;
  return v;
}

PcieLink link_of(const sys::FsRoot& root, const std::string& pci, NodeFacts& f) {
  std::string dir = "sys/bus/pci/devices/" + pci + "/";
  PcieLink l{pci, {}, {}, {}, {}};
  auto width = [&](const char* name) -> std::optional<unsigned> {
    auto v = number(read(root, dir + name, f));
    return v ? std::optional<unsigned>(unsigned(*v)) : std::nullopt;
  };
  l.width = width("current_link_width");
  l.max_width = width("max_link_width");
  l.speed = gt_per_second(read(root, dir + "current_link_speed", f));
  l.max_speed = gt_per_second(read(root, dir + "max_link_speed", f));
  return l;
}

}  // namespace

std::string slurm_conf_value(const std::string& text, const std::string& key) {
  std::string value;
  std::string want = to_lower(key) + "=";
  for (std::string_view line : split(text, '\n')) {
    line = trim(line.substr(0, line.find('#')));
    if (to_lower(std::string(line.substr(0, want.size()))) == want) value = std::string(trim(line.substr(want.size())));
  }
  return value;
}

NodeFacts read_node_facts(const sys::FsRoot& root, const topo::Topology& t, const ReaderOptions& o) {
  NodeFacts f;
  f.numa_balancing = number(read(root, "proc/sys/kernel/numa_balancing", f));
  f.zone_reclaim_mode = number(read(root, "proc/sys/vm/zone_reclaim_mode", f));
  f.thp_enabled = bracketed(read(root, "sys/kernel/mm/transparent_hugepage/enabled", f));
  f.thp_defrag = bracketed(read(root, "sys/kernel/mm/transparent_hugepage/defrag", f));
  if (auto meminfo = read(root, "proc/meminfo", f)) {
    std::string swap = key_value(*meminfo, "SwapTotal");  // "8388604 kB"
    if (auto kb = parse_uint(swap.substr(0, swap.find(' ')))) f.swap_total_kb = *kb;
  }
  if (auto cmdline = read(root, "proc/cmdline", f)) f.cmdline = std::string(trim(*cmdline));
  f.isolated = cpus(read(root, "sys/devices/system/cpu/isolated", f));
  f.nohz_full = cpus(read(root, "sys/devices/system/cpu/nohz_full", f));
  for (const topo::Gpu& g : t.gpus)
    if (!g.pci.empty()) f.links.push_back(link_of(root, g.pci, f));
  for (const topo::Nic& n : t.nics)
    if (!n.pci.empty()) f.links.push_back(link_of(root, n.pci, f));
  std::string conf = o.slurm_conf.empty() ? "/etc/slurm/slurm.conf" : o.slurm_conf;
  if (auto text = read(root, std::string(conf.starts_with('/') ? conf.substr(1) : conf), f)) {
    f.slurm_conf = conf;
    f.slurm_task_plugin = slurm_conf_value(*text, "TaskPlugin");
  }
  return f;
}

}  // namespace gpubind::doctor

#include "doctor/reader.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <set>

#include "bind/hostlist.hpp"
#include "bind/spank_args.hpp"
#include "sys/cgroup_cpuset.hpp"
#include "sys/yaml.hpp"
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

bool is_pci_address(std::string_view s) {
  // "0000:17:00.0"
  if (s.size() != 12 || s[4] != ':' || s[7] != ':' || s[10] != '.') return false;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9, 11})
    if (!std::isxdigit(static_cast<unsigned char>(s[i]))) return false;
  return true;
}

DeviceIrqs irqs_of(const sys::FsRoot& root, const std::string& pci, NodeFacts& f) {
  DeviceIrqs d{pci, {}};
  std::string dir = "sys/bus/pci/devices/" + pci + "/";
  std::vector<unsigned> numbers;
  if (auto msi = root.list(dir + "msi_irqs")) {
    for (const std::string& n : *msi)
      if (auto v = parse_uint(n)) numbers.push_back(unsigned(*v));
  } else if (auto legacy = number(read(root, dir + "irq", f)); legacy && *legacy > 0) {
    numbers.push_back(unsigned(*legacy));
  }
  for (unsigned n : numbers) {
    std::string irq = "proc/irq/" + std::to_string(n) + "/";
    DeviceIrq i{n, {}};
    if (f.proc_irq) {
      i.cpus = cpus(read(root, irq + "effective_affinity_list", f));
      if (!i.cpus) i.cpus = cpus(read(root, irq + "smp_affinity_list", f));
    }
    d.irqs.push_back(i);
  }
  return d;
}

Irqbalance irqbalance(const sys::FsRoot& root, NodeFacts& f) {
  Irqbalance b;
  if (auto pids = root.list("proc"))
    for (const std::string& pid : *pids)
      if (parse_uint(pid))
        if (auto comm = root.read("proc/" + pid + "/comm"); comm && trim(*comm) == "irqbalance") b.running = true;
  for (const char* file : {"etc/default/irqbalance", "etc/sysconfig/irqbalance"}) {
    auto text = read(root, file, f);
    if (!text) continue;
    b.config = "/" + std::string(file);
    auto value = [&](std::string_view key) {  // KEY=value as the shell reads it: the last, quotes removed
      std::string v;
      for (std::string_view line : split(*text, '\n')) {
        line = trim(line);
        if (line.starts_with(key) && line.substr(key.size()).starts_with("=")) v = std::string(trim(line.substr(key.size() + 1)));
      }
      if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front()) v = v.substr(1, v.size() - 2);
      return v;
    };
    if (std::string l = value("IRQBALANCE_BANNED_CPULIST"); !l.empty()) b.banned = cpus(l);
    else if (std::string m = value("IRQBALANCE_BANNED_CPUS"); !m.empty())
      if (auto mask = CpuSet::parse_mask(m)) b.banned = *mask;
    std::string oneshot = to_lower(value("IRQBALANCE_ONESHOT"));
    b.oneshot = !oneshot.empty() && oneshot != "0" && oneshot != "no" && oneshot != "false";
    break;
  }
  return b;
}

IommuDevice iommu_of(const sys::FsRoot& root, const std::string& pci, NodeFacts& f) {
  IommuDevice d{pci, {}, ""};
  auto link = root.read_link("sys/bus/pci/devices/" + pci + "/iommu_group");
  if (!link) return d;
  std::string target = *link;
  if (auto v = parse_uint(target.substr(target.rfind('/') + 1))) {
    d.group = unsigned(*v);
    if (auto type = read(root, "sys/kernel/iommu_groups/" + std::to_string(*v) + "/type", f)) d.type = std::string(trim(*type));
  }
  return d;
}

// The switch ports above each GPU and NIC: the PCI addresses of its sysfs device path
// (/sys/devices/pci0000:17/0000:17:01.0/0000:18:00.0/0000:19:00.0/0000:1a:00.0) between the root
// port (the first) and the device itself (the last).
void bridges(const sys::FsRoot& root, const std::vector<std::string>& devices, NodeFacts& f) {
  for (const std::string& pci : devices) {
    auto link = root.read_link("sys/bus/pci/devices/" + pci);
    if (!link) continue;
    size_t devices_at = link->find("devices/");
    if (devices_at == std::string::npos) continue;
    std::string dir = "sys";  // each bridge's directory, "sys/devices/pci0000:17/0000:17:01.0/..."
    std::vector<std::pair<std::string, std::string>> path;  // address, directory
    for (std::string_view part : split(std::string_view(*link).substr(devices_at), '/')) {
      dir += "/" + std::string(part);
      if (is_pci_address(part)) path.emplace_back(std::string(part), dir);
    }
    for (size_t i = 1; i + 1 < path.size(); ++i) {
      auto at = std::find_if(f.bridges.begin(), f.bridges.end(), [&](const PcieBridge& b) { return b.pci == path[i].first; });
      if (at == f.bridges.end()) {
        PcieBridge b{path[i].first, {}, false, {}};
        if (auto config = root.read(path[i].second + "/config")) {
          b.config_read = config->size() > 0x100;
          b.acs_control = acs_control(*config);
        } else if (config.error().kind != ErrorKind::not_found) {
          f.unreadable.push_back(root.path_of(path[i].second + "/config") + ": " + config.error().why);
        }
        f.bridges.push_back(b);
        at = f.bridges.end() - 1;
      }
      at->below.push_back(pci);
    }
  }
}

// systemd's CPUAffinity= in [Manager] of system.conf, then of system.conf.d/*.conf in name order
// (a later setting wins; an empty one resets it).
void systemd_affinity(const sys::FsRoot& root, NodeFacts& f) {
  std::vector<std::string> files{"etc/systemd/system.conf"};
  if (auto d = root.list("etc/systemd/system.conf.d"))
    for (const std::string& n : *d)
      if (n.ends_with(".conf")) files.push_back("etc/systemd/system.conf.d/" + n);
  for (const std::string& file : files) {
    auto text = read(root, file, f);
    if (!text) continue;
    bool manager = false;
    for (std::string_view line : split(*text, '\n')) {
      line = trim(line);
      if (line.starts_with("[")) manager = line == "[Manager]";
      if (!manager || !line.starts_with("CPUAffinity=")) continue;
      std::string list(trim(line.substr(12)));
      for (char& c : list)
        if (c == ' ' || c == '\t') c = ',';
      if (list.empty()) {
        f.systemd_cpu_affinity.reset();
        f.systemd_conf.clear();
      } else if (auto c = CpuSet::parse_list(list)) {
        f.systemd_cpu_affinity = *c;
        f.systemd_conf = "/" + file;
      } else {
        f.unreadable.push_back("/" + file + ": CPUAffinity=" + std::string(line.substr(12)) + " is not a CPU list");
      }
    }
  }
}

// A path as on the node, relative to the root ("/etc/slurm/slurm.conf" -> "etc/slurm/slurm.conf").
std::string under_root(const std::string& path) {
  size_t start = path.find_first_not_of('/');
  return start == std::string::npos ? "" : path.substr(start);
}

// A file the user named (`what`: "slurm.conf"): its text, or an Error naming it (absent included).
Result<std::string> read_named(const sys::FsRoot& root, const std::string& rel, const std::string& what) {
  auto text = root.read(rel);
  if (!text) return Error{what + " " + root.path_of(rel), text.error().why, text.error().kind};
  return *text;
}

Status kubelet(const sys::FsRoot& root, const ReaderOptions& o, NodeFacts& f) {
  std::string rel = under_root(o.kubelet_config);
  if (rel.empty()) rel = "var/lib/kubelet/config.yaml";
  std::optional<std::string> text;
  if (o.kubelet_config_named) {
    auto named = read_named(root, rel, "kubelet configuration");
    if (!named) return named.error();
    text = *named;
  } else {
    text = read(root, rel, f);
  }
  if (!text) return Ok{};
  f.kubelet_config = "/" + rel;  // as on the node
  auto json = sys::yaml_to_json(*text, root.path_of(rel));
  auto c = json ? k8s::parse_kubelet_config(*json, root.path_of(rel)) : Result<k8s::KubeletConfig>(json.error());
  if (!c) {
    if (o.kubelet_config_named) return c.error();
    f.unreadable.push_back(c.error().message());
    return Ok{};
  }
  f.kubelet = *c;
  return Ok{};
}

// The CPU DRA driver: its kubelet plugin's registration, its process, and the configuration its
// command line and --config file (read in its container's root) give.
void cpu_dra_driver(const sys::FsRoot& root, NodeFacts& f) {
  std::string name = k8s::kCpuDriver;
  for (const std::string& rel : {"var/lib/kubelet/plugins_registry/" + name + "-reg.sock", "var/lib/kubelet/plugins/" + name})
    if (f.cpu_driver_seen.empty() && root.exists(rel)) f.cpu_driver_seen = "/" + rel;
  auto pids = root.list("proc");
  for (const std::string& pid : pids ? *pids : std::vector<std::string>{}) {
    auto comm = parse_uint(pid) ? root.read("proc/" + pid + "/comm") : Result<std::string>(Error{"", ""});
    if (!comm || trim(*comm) != "dracpu") continue;
    auto cmdline = read(root, "proc/" + pid + "/cmdline", f);
    if (!cmdline) continue;
    std::vector<std::string> args;
    for (std::string_view a : split(*cmdline, '\0')) args.emplace_back(a);
    while (!args.empty() && args.back().empty()) args.pop_back();
    if (!args.empty()) args.erase(args.begin());  // the program
    std::string source = "/proc/" + pid + "/cmdline";
    if (f.cpu_driver_seen.empty()) f.cpu_driver_seen = "/proc/" + pid + " (dracpu)";
    f.cpu_driver_source = "/proc/" + pid;  // its configuration, once read, replaces it
    k8s::CpuDriverConfig flags = k8s::cpu_driver_flags(args);
    std::optional<std::string> json;
    if (!flags.config_file.empty()) {
      std::string rel = "proc/" + pid + "/root/" + under_root(flags.config_file);
      auto text = read(root, rel, f);
      if (!text) continue;  // absent or unreadable: said in f.unreadable where it exists
      auto j = sys::yaml_to_json(*text, root.path_of(rel));
      if (!j) {
        f.unreadable.push_back(j.error().message());
        continue;
      }
      json = *j;
      source += ", /" + rel;
    }
    auto c = k8s::parse_cpu_driver_config(args, json ? &*json : nullptr, "/proc/" + pid);
    if (!c) {
      f.unreadable.push_back(c.error().message());
      continue;
    }
    f.cpu_driver = *c;
    f.cpu_driver_source = source;
    break;
  }
}

// The files an include pattern names, as on the node, sorted as glob(3) sorts them: a pattern in
// the last component only (Slurm's own lines use "plugstack.conf.d/*.conf").
std::vector<std::string> included(const sys::FsRoot& root, const std::string& pattern) {
  size_t slash = pattern.rfind('/');
  std::string dir = pattern.substr(0, slash), name = pattern.substr(slash + 1);
  if (name.find_first_of("*?[") == std::string::npos) return {pattern};
  auto names = root.list(under_root(dir));
  std::vector<std::string> out;
  if (!names) return out;  // glob(3) matches nothing in a directory it cannot read
  for (const std::string& n : *names)
    if (::fnmatch(name.c_str(), n.c_str(), FNM_PERIOD) == 0) out.push_back(dir + "/" + n);
  return out;
}

// Slurm follows includes without a bound; a file that includes itself (or a glob that matches
// its own directory) would never end, or read thousands of files: at most 64 files, 8 deep, each
// limit said once.
struct IncludeBudget {
  int files = 64;
  bool deep_said = false, files_said = false;
};

void plugstack_file(const sys::FsRoot& root, const std::string& conf, NodeFacts& f, unsigned depth, IncludeBudget& budget) {
  if (budget.files == 0) {
    if (!budget.files_said) f.unreadable.push_back(conf + ": more than 64 plugin stack files: not followed");
    budget.files_said = true;
    return;
  }
  if (depth > 8) {
    if (!budget.deep_said) f.unreadable.push_back(conf + ": includes nested deeper than 8 files: not followed");
    budget.deep_said = true;
    return;
  }
  --budget.files;
  auto text = read(root, under_root(conf), f);
  if (!text) return;
  unsigned number = 0;
  for (std::string_view raw : split(*text, '\n')) {
    ++number;
    std::string line(raw.substr(0, raw.find('#')));
    std::replace(line.begin(), line.end(), '\t', ' ');
    std::vector<std::string> words;
    for (std::string_view w : split(line, ' '))
      if (!w.empty()) words.emplace_back(w);
    if (words.size() < 2) continue;
    if (words[0] == "include") {
      std::string pattern = words[1].starts_with('/') ? words[1] : conf.substr(0, conf.rfind('/')) + "/" + words[1];
      for (const std::string& file : included(root, pattern)) plugstack_file(root, file, f, depth + 1, budget);
      continue;
    }
    if (words[0] != "required" && words[0] != "optional") continue;
    std::string_view plugin = words[1];
    if (plugin.substr(plugin.rfind('/') + 1) != "gpubind_spank.so") continue;
    std::string where = conf + ":" + std::to_string(number);
    auto args = bind::parse_plugstack_args(std::vector<std::string>(words.begin() + 2, words.end()));
    if (!args) {
      f.unreadable.push_back(where + ": gpubind_spank.so would not load: " + args.error().message());
      continue;
    }
    f.gpubind_spank = NodeFacts::SpankPlugin{where, args->site_default, words[0] == "required", words[1], {}, {}, {}};
  }
}

// The plugin file a plugstack.conf line names: an absolute path as it is, a relative one in each
// PluginDir directory in turn (slurm.conf's, colon-separated; unset: where Debian's, SchedMD's
// packages and a source build put plugins), and the release it was built for.
void find_spank_plugin(const sys::FsRoot& root, const std::string& plugin_dir, NodeFacts::SpankPlugin& p, NodeFacts& f) {
  std::vector<std::string> dirs;
  if (p.named.starts_with('/')) dirs.push_back("");
  else if (!plugin_dir.empty())
    for (std::string_view d : split(plugin_dir, ':')) dirs.emplace_back(d);
  else
    dirs = {"/usr/lib/x86_64-linux-gnu/slurm-wlm", "/usr/lib/aarch64-linux-gnu/slurm-wlm", "/usr/lib64/slurm", "/usr/lib/slurm",
            "/usr/local/lib/slurm"};
  if (!p.named.starts_with('/')) p.looked_in = join(dirs, ":");
  for (const std::string& d : dirs) {
    std::string path = d.empty() ? p.named : d + "/" + p.named;
    if (!root.exists(under_root(path))) continue;
    p.file = path;
    if (auto bytes = read(root, under_root(path), f)) p.built_for = bind::spank_built_for(*bytes);
    return;
  }
}

}  // namespace

void read_plugstack(const sys::FsRoot& root, const std::string& conf, NodeFacts& f) {
  IncludeBudget budget;
  plugstack_file(root, conf, f, 0, budget);
}

namespace {

}  // namespace

std::optional<uint16_t> acs_control(const std::string& config) {
  auto u32 = [&](size_t at) -> uint32_t {
    uint32_t v = 0;
    for (size_t i = 0; i < 4; ++i) v |= uint32_t(static_cast<unsigned char>(config[at + i])) << (8 * i);
    return v;
  };
  std::set<size_t> seen;
  for (size_t at = 0x100; at >= 0x100 && at + 8 <= config.size() && seen.insert(at).second;) {
    uint32_t header = u32(at);
    if (header == 0 || header == 0xffffffffu) return std::nullopt;
    if ((header & 0xffff) == 0x000d) return uint16_t(u32(at + 4) >> 16);  // the control register at +6
    at = (header >> 20) & 0xffc;
  }
  return std::nullopt;
}

namespace {

// A line of slurm.conf or gres.conf (`#` to its end a comment) as its KEY=VALUE words, each key in
// lower case: Slurm reads keys whatever their case.
std::vector<std::pair<std::string, std::string>> conf_words(std::string_view raw) {
  std::string spaced(trim(raw.substr(0, raw.find('#'))));
  std::replace(spaced.begin(), spaced.end(), '\t', ' ');
  std::vector<std::pair<std::string, std::string>> out;
  for (std::string_view word : split(spaced, ' '))
    if (size_t eq = word.find('='); eq != std::string_view::npos)
      out.emplace_back(to_lower(std::string(word.substr(0, eq))), std::string(word.substr(eq + 1)));
  return out;
}

// Whether a NodeName= host list names `node` (or its short name, slurmd's default NodeName).
bool names_node(const std::string& pattern, const std::string& node) {
  auto hosts = bind::expand_hosts(pattern);
  std::string short_name = node.substr(0, node.find('.'));
  return hosts && (std::find(hosts->begin(), hosts->end(), node) != hosts->end() ||
                   std::find(hosts->begin(), hosts->end(), short_name) != hosts->end());
}

}  // namespace

std::optional<SlurmNodeLine> slurm_node_line(const std::string& text, const std::string& node) {
  std::optional<SlurmNodeLine> found;
  SlurmNodeLine defaults;
  for (std::string_view raw : split(text, '\n')) {
    auto words = conf_words(raw);
    if (words.empty() || words.front().first != "nodename") continue;
    SlurmNodeLine l = defaults;
    std::string pattern;
    for (const auto& [key, value] : words) {
      if (key == "nodename") pattern = value;
      else if (key == "cpuspeclist") l.cpu_spec_list = value;
      else if (key == "corespeccount") {
        if (auto v = parse_uint(value)) l.core_spec_count = unsigned(*v);
      } else if (key == "restrictedcorespergpu") {
        if (auto v = parse_uint(value)) l.restricted_cores_per_gpu = unsigned(*v);
      } else if (key == "parameters") {
        l.parameters = value;
      } else {
        std::optional<unsigned>* shape = key == "boards"            ? &l.boards
                                         : key == "sockets"         ? &l.sockets
                                         : key == "socketsperboard" ? &l.sockets_per_board
                                         : key == "corespersocket"  ? &l.cores_per_socket
                                         : key == "threadspercore"  ? &l.threads_per_core
                                                                    : nullptr;
        if (shape)
          if (auto v = parse_uint(value)) *shape = unsigned(*v);
      }
    }
    if (to_lower(pattern) == "default") {
      defaults = l;
      continue;
    }
    if (!names_node(pattern, node)) continue;
    l.pattern = pattern;
    found = l;
  }
  return found;
}

std::vector<NodeFacts::GresGpu> gres_gpu_lines(const std::string& text, const std::string& file, const std::string& node,
                                               std::string& autodetect) {
  std::vector<NodeFacts::GresGpu> out;
  unsigned number = 0;
  for (std::string_view raw : split(text, '\n')) {
    ++number;
    std::string names, name, auto_detect;
    std::optional<uint64_t> count;
    NodeFacts::GresGpu g;
    g.where = file + ":" + std::to_string(number);
    for (const auto& [key, value] : conf_words(raw)) {
      if (key == "nodename") names = value;
      else if (key == "name") name = value;
      else if (key == "file") g.file = value;
      else if (key == "count") count = parse_uint(value);
      else if (key == "type") g.type = value;
      else if (key == "cores" || key == "cpus") g.cores = value;
      else if (key == "autodetect") auto_detect = value;
    }
    if (!names.empty() && !names_node(names, node)) continue;
    if (!auto_detect.empty()) autodetect = auto_detect;
    // A line names as many GPUs as its File= expands to (/dev/nvidia[0-3]: four), else Count=.
    auto files = bind::expand_hosts(g.file, 1024);
    if (!g.file.empty() && files && !files->empty()) g.count = unsigned(files->size());
    else if (count && *count > 0 && *count < 1024) g.count = unsigned(*count);
    if (to_lower(name) == "gpu") out.push_back(std::move(g));
  }
  return out;
}

std::string slurm_conf_value(const std::string& text, const std::string& key) {
  std::string value;
  std::string want = to_lower(key) + "=";
  for (std::string_view line : split(text, '\n')) {
    line = trim(line.substr(0, line.find('#')));
    if (to_lower(std::string(line.substr(0, want.size()))) == want) value = std::string(trim(line.substr(want.size())));
  }
  return value;
}

Result<NodeFacts> read_node_facts(const sys::FsRoot& root, const topo::Topology& t, const ReaderOptions& o) {
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
  std::vector<std::string> devices;  // the GPUs' and NICs' PCI addresses, GPUs first
  for (const topo::Gpu& g : t.gpus)
    if (!g.pci.empty()) devices.push_back(g.pci);
  for (const topo::Nic& n : t.nics)
    if (!n.pci.empty()) devices.push_back(n.pci);
  for (const std::string& pci : devices) f.links.push_back(link_of(root, pci, f));
  std::string conf = o.slurm_conf.empty() ? "/etc/slurm/slurm.conf" : o.slurm_conf;
  std::optional<std::string> slurm;
  if (o.slurm_conf_named) {
    auto named = read_named(root, under_root(conf), "slurm.conf");
    if (!named) return named.error();
    slurm = *named;
  } else {
    slurm = read(root, under_root(conf), f);
  }
  if (slurm) {
    f.slurm_conf = conf;
    f.slurm_task_plugin = slurm_conf_value(*slurm, "TaskPlugin");
    f.slurmd_parameters = slurm_conf_value(*slurm, "SlurmdParameters");
    if (auto line = o.node_name.empty() ? std::nullopt : slurm_node_line(*slurm, o.node_name)) {
      f.slurm_cpu_spec_list = line->cpu_spec_list;
      f.slurm_core_spec_count = line->core_spec_count;
      f.slurm_restricted_cores_per_gpu = line->restricted_cores_per_gpu;
      f.slurm_spec_cores_first = to_lower(slurm_conf_value(*slurm, "SchedulerParameters")).find("spec_cores_first") != std::string::npos;
      f.slurm_node_found = true;
      // Sockets= with Boards= means sockets per board (slurm.conf(5)).
      if (std::optional<unsigned> per_board = line->sockets_per_board ? line->sockets_per_board : line->sockets)
        f.slurm_sockets = line->boards.value_or(1) * *per_board;
      f.slurm_cores_per_socket = line->cores_per_socket;
      f.slurm_threads_per_core = line->threads_per_core;
      f.slurm_node_parameters = line->parameters;
      std::string gres = conf.substr(0, conf.rfind('/') + 1) + "gres.conf";  // Slurm reads it beside slurm.conf
      if (auto text = read(root, under_root(gres), f)) {
        f.gres_conf = gres;
        f.gres_gpus = gres_gpu_lines(*text, gres, o.node_name, f.gres_autodetect);
      }
    }
    std::string plugstack = slurm_conf_value(*slurm, "PlugStackConfig");
    if (plugstack.empty()) plugstack = conf.substr(0, conf.rfind('/') + 1) + "plugstack.conf";  // Slurm's default: beside slurm.conf
    read_plugstack(root, plugstack, f);
    if (f.gpubind_spank) find_spank_plugin(root, slurm_conf_value(*slurm, "PluginDir"), *f.gpubind_spank, f);
  }
  f.proc_irq = root.exists("proc/irq");
  for (const std::string& pci : devices) {
    if (!root.exists("sys/bus/pci/devices/" + pci)) continue;
    DeviceIrqs d = irqs_of(root, pci, f);
    if (!d.irqs.empty()) f.irqs.push_back(d);
    f.iommu.push_back(iommu_of(root, pci, f));
  }
  f.irqbalance = irqbalance(root, f);
  bridges(root, devices, f);
  if (auto mems = sys::cgroup_allowed_mems(root)) {
    f.cgroup_mems = mems->cpus;
    f.cgroup_mems_file = mems->file;
  } else if (mems.error().kind != ErrorKind::not_found) {
    f.unreadable.push_back(mems.error().message());
  }
  systemd_affinity(root, f);
  if (Status s = kubelet(root, o, f); !s) return s.error();
  if (f.kubelet) cpu_dra_driver(root, f);
  return f;
}

}  // namespace gpubind::doctor

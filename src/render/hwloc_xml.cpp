#include "render/hwloc_xml.hpp"

#include <cstdio>
#include <algorithm>
#include <map>
#include <set>

#include "util/strings.hpp"

namespace gpubind::render {

using namespace topo;

namespace {

// hwloc's bitmap text: 32-bit words, most significant first, each "0x%08x".
std::string mask(const CpuSet& s) {
  if (s.empty()) return "0x0";
  std::string out;
  unsigned words = *s.last() / 32 + 1;
  for (unsigned w = words; w-- > 0;) {
    uint32_t v = 0;
    for (unsigned b = 0; b < 32; ++b)
      if (s.test(w * 32 + b)) v |= 1u << b;
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08x", v);
    out += buf;
    if (w) out += ',';
  }
  return out;
}

struct Writer {
  const Topology& t;
  std::string out;
  unsigned gp = 1;
  unsigned fake_bus = 0;
  std::map<std::string, std::string> fake_roots;  // non-"hb:" roots (NCCL "cpu:N") -> bus range
  std::set<const PciDevice*> emitted;             // each device once, at its deepest container

  std::string indent(int depth) const { return std::string(size_t(depth) * 2, ' '); }

  CpuSet nodes_of(const CpuSet& cpus) const {
    CpuSet n;
    for (const NumaNode& node : t.numa_nodes)
      if (!node.cpus.empty() && node.cpus.intersects(cpus)) n.set(node.os_index);
    return n;
  }

  std::string sets(const CpuSet& cpus, const CpuSet& nodes) const {
    return "cpuset=\"" + mask(cpus) + "\" complete_cpuset=\"" + mask(cpus) + "\" nodeset=\"" + mask(nodes) +
           "\" complete_nodeset=\"" + mask(nodes) + "\"";
  }

  void numa(const NumaNode& n, const CpuSet& parent_cpus, int depth) {
    out += indent(depth) + "<object type=\"NUMANode\" os_index=\"" + std::to_string(n.os_index) + "\" " +
           sets(parent_cpus, CpuSet::of({n.os_index})) + " gp_index=\"" + std::to_string(gp++) + "\"" +
           (n.subtype.empty() ? "" : " subtype=\"" + xml_escape(n.subtype) + "\"") + " local_memory=\"" +
           std::to_string(n.memory_bytes) + "\"/>\n";
  }

  void core(const Core& c, int depth) {
    out += indent(depth) + "<object type=\"Core\" " + sets(c.pus, nodes_of(c.pus)) + " gp_index=\"" + std::to_string(gp++) + "\">\n";
    for (unsigned pu : c.pus.ids())
      out += indent(depth + 1) + "<object type=\"PU\" os_index=\"" + std::to_string(pu) + "\" " +
             sets(CpuSet::of({pu}), nodes_of(CpuSet::of({pu}))) + " gp_index=\"" + std::to_string(gp++) + "\"/>\n";
    out += indent(depth) + "</object>\n";
  }

  // Cores inside `cpus`, grouped under the L3 domains that fit entirely inside it.
  void compute(const CpuSet& cpus, int depth) {
    CpuSet done;
    for (const L3Domain& l3 : t.l3_domains) {
      if (!l3.cpus.is_subset_of(cpus)) continue;
      out += indent(depth) + "<object type=\"L3Cache\" " + sets(l3.cpus, nodes_of(l3.cpus)) + " gp_index=\"" +
             std::to_string(gp++) + "\" cache_size=\"" + std::to_string(l3.size_bytes) +
             "\" depth=\"3\" cache_linesize=\"64\" cache_associativity=\"0\" cache_type=\"0\">\n";
      for (const Core& c : t.cores)
        if (c.pus.is_subset_of(l3.cpus)) core(c, depth + 1);
      io_for(l3.cpus, false, depth + 1);  // Frontier-type GPUs hang off one L3 domain
      out += indent(depth) + "</object>\n";
      done |= l3.cpus;
    }
    for (const Core& c : t.cores)
      if (c.pus.is_subset_of(cpus) && !c.pus.intersects(done)) core(c, depth);
  }

  // An Intel GPU's stacks as hwloc's levelzero backend shows them in Level Zero's default FLAT
  // hierarchy: one co-processor "zeN" per stack, numbered across the GPUs in their order.
  void level_zero_devices(const std::string& pci, int depth) {
    const Gpu* g = find_gpu(t, pci);
    if (!g || g->vendor != Vendor::intel || g->stacks < 2) return;
    unsigned first = 0;
    for (const Gpu& o : t.gpus)
      if (o.vendor == Vendor::intel && o.index < g->index) first += o.stacks;
    for (unsigned s = 0; s < g->stacks; ++s)
      out += indent(depth) + "<object type=\"OSDev\" gp_index=\"" + std::to_string(gp++) + "\" name=\"ze" +
             std::to_string(first + s) + "\" subtype=\"LevelZero\" osdev_type=\"5\">\n" + indent(depth + 1) +
             "<info name=\"Backend\" value=\"LevelZero\"/>\n" + indent(depth) + "</object>\n";
  }

  std::string pci_type(uint32_t cls, uint16_t vendor, uint16_t device) const {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%04x [%04x:%04x] [0000:0000] 00", cls, vendor, device);
    return buf;
  }

  std::string host_bridge_range(const std::string& root) {
    unsigned dom = 0, bus = 0;
    if (root.starts_with("hb:") && std::sscanf(root.c_str(), "hb:%x:%x", &dom, &bus) == 2 && root.find('#') == std::string::npos) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%04x:[%02x-%02x]", dom, bus, bus);
      return buf;
    }
    auto it = fake_roots.find(root);
    if (it != fake_roots.end()) return it->second;
    char buf[32];
    std::snprintf(buf, sizeof buf, "ffff:[%02x-%02x]", fake_bus, fake_bus);
    ++fake_bus;
    return fake_roots[root] = buf;
  }

  // One subtree of bridges: devices whose path continues with `prefix`.
  void io_tree(const std::vector<const PciDevice*>& devs, const std::vector<std::string>& prefix, int depth) {
    // Devices sitting directly here.
    for (const PciDevice* d : devs) {
      if (d->pcie_path != prefix) continue;
      out += indent(depth) + "<object type=\"PCIDev\" gp_index=\"" + std::to_string(gp++) + "\" pci_busid=\"" + d->pci +
             "\" pci_type=\"" + pci_type(d->class_id, d->vendor_id, d->device_id) + "\" pci_link_speed=\"0.000000\">\n";
      if (!d->name.empty()) out += indent(depth + 1) + "<info name=\"PCIDevice\" value=\"" + xml_escape(d->name) + "\"/>\n";
      // hwloc's OS device types: 1 GPU, 2 network, 3 OpenFabrics (an RDMA device), 5 co-processor.
      bool is_gpu = find_gpu(t, d->pci) != nullptr;
      for (const std::string& os : d->os_names) {
        int type = is_gpu ? ((os.starts_with("cuda") || os.starts_with("opencl") || os.starts_with("ve")) ? 5 : 1)
                          : (is_rdma_device_name(os) ? 3 : 2);
        out += indent(depth + 1) + "<object type=\"OSDev\" gp_index=\"" + std::to_string(gp++) + "\" name=\"" + xml_escape(os) +
               "\" osdev_type=\"" + std::to_string(type) + "\"/>\n";
      }
      level_zero_devices(d->pci, depth + 1);
      out += indent(depth) + "</object>\n";
    }
    // Bridges one level further down, in first-seen order.
    std::vector<std::string> next;
    for (const PciDevice* d : devs)
      if (d->pcie_path.size() > prefix.size() && std::equal(prefix.begin(), prefix.end(), d->pcie_path.begin())) {
        const std::string& b = d->pcie_path[prefix.size()];
        if (std::find(next.begin(), next.end(), b) == next.end()) next.push_back(b);
      }
    for (const std::string& b : next) {
      std::vector<std::string> sub = prefix;
      sub.push_back(b);
      if (prefix.empty()) {
        out += indent(depth) + "<object type=\"Bridge\" gp_index=\"" + std::to_string(gp++) +
               "\" bridge_type=\"0-1\" depth=\"0\" bridge_pci=\"" + host_bridge_range(b) + "\">\n";
      } else {
        std::string dom = b.size() >= 7 ? b.substr(0, 4) : "0000";
        std::string bus = b.size() >= 7 ? b.substr(5, 2) : "00";
        out += indent(depth) + "<object type=\"Bridge\" gp_index=\"" + std::to_string(gp++) +
               "\" bridge_type=\"1-1\" depth=\"" + std::to_string(prefix.size() - 1) + "\" bridge_pci=\"" + dom + ":[" +
               bus + "-" + bus + "]\" pci_busid=\"" + b + "\" pci_type=\"" + pci_type(0x0604, 0, 0) +
               "\" pci_link_speed=\"0.000000\">\n";
      }
      io_tree(devs, sub, depth + 1);
      out += indent(depth) + "</object>\n";
    }
  }

  // I/O devices are attached to the object whose CPUs equal theirs; unknown locality -> Machine.
  void io_for(const CpuSet& cpus, bool is_machine, int depth) {
    std::vector<const PciDevice*> devs;
    auto take = [&](const PciDevice& d) {
      if (d.pci.empty() || emitted.count(&d)) return;
      bool here = d.cpus ? (*d.cpus == cpus) : is_machine;
      if (here || is_machine) {
        devs.push_back(&d);
        emitted.insert(&d);
      }
    };
    for (const Gpu& g : t.gpus) take(g);
    for (const Nic& n : t.nics) take(n);
    io_tree(devs, {}, depth);
  }

  void container(const CpuSet& cpus, const std::vector<const NumaNode*>& mem, int depth) {
    for (const NumaNode* n : mem) numa(*n, cpus, depth);
    compute(cpus, depth);
    io_for(cpus, false, depth);
  }

  void run() {
    out += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n<topology version=\"2.0\">\n";
    CpuSet all_nodes;
    for (const NumaNode& n : t.numa_nodes) all_nodes.set(n.os_index);
    out += "  <object type=\"Machine\" os_index=\"0\" cpuset=\"" + mask(t.cpus) + "\" complete_cpuset=\"" + mask(t.cpus) +
           "\" allowed_cpuset=\"" + mask(t.allowed_cpus) + "\" nodeset=\"" + mask(all_nodes) + "\" complete_nodeset=\"" +
           mask(all_nodes) + "\" allowed_nodeset=\"" + mask(all_nodes) + "\" gp_index=\"" + std::to_string(gp++) + "\">\n";
    if (!t.hostname.empty()) out += "    <info name=\"HostName\" value=\"" + xml_escape(t.hostname) + "\"/>\n";

    // CPU-less nodes: under their package, else under the Machine.
    std::map<std::optional<unsigned>, std::vector<const NumaNode*>> cpuless;
    for (const NumaNode& n : t.numa_nodes)
      if (n.cpus.empty()) cpuless[n.package].push_back(&n);
    if (cpuless.count(std::nullopt))
      for (const NumaNode* n : cpuless[std::nullopt]) numa(*n, t.cpus, 2);

    CpuSet placed;
    auto numa_groups = [&](const CpuSet& within, int depth) {
      std::vector<const NumaNode*> inside;
      for (const NumaNode& n : t.numa_nodes)
        if (!n.cpus.empty() && n.cpus.is_subset_of(within)) inside.push_back(&n);
      if (inside.size() == 1 && inside[0]->cpus == within) return inside;  // the container itself holds it
      for (const NumaNode* n : inside) {
        out += indent(depth) + "<object type=\"Group\" " + sets(n->cpus, CpuSet::of({n->os_index})) + " gp_index=\"" +
               std::to_string(gp++) + "\" kind=\"1001\" subkind=\"0\">\n";
        container(n->cpus, {n}, depth + 1);
        out += indent(depth) + "</object>\n";
      }
      return std::vector<const NumaNode*>{};
    };

    for (const Package& p : t.packages) {
      out += "    <object type=\"Package\" os_index=\"" + std::to_string(p.os_index) + "\" " + sets(p.cpus, nodes_of(p.cpus)) +
             " gp_index=\"" + std::to_string(gp++) + "\">\n";
      std::vector<const NumaNode*> mem;
      if (cpuless.count(p.os_index)) mem = cpuless[p.os_index];
      std::vector<const NumaNode*> own = numa_groups(p.cpus, 3);
      if (!own.empty()) {
        own.insert(own.end(), mem.begin(), mem.end());
        container(p.cpus, own, 3);
      } else {
        for (const NumaNode* n : mem) numa(*n, p.cpus, 3);
        // Cores of the package outside every NUMA node (memory-less dies).
        CpuSet covered;
        for (const NumaNode& n : t.numa_nodes) covered |= n.cpus;
        compute(p.cpus - covered, 3);
        io_for(p.cpus, false, 3);
      }
      out += "    </object>\n";
      placed |= p.cpus;
    }
    // Whatever no package holds: NUMA groups directly under the Machine, then loose cores.
    CpuSet rest = t.cpus - placed;
    if (!rest.empty()) {
      std::vector<const NumaNode*> own = numa_groups(rest, 2);
      if (!own.empty()) container(rest, own, 2);
      else {
        CpuSet covered;
        for (const NumaNode& n : t.numa_nodes) covered |= n.cpus;
        compute(rest - covered, 2);
      }
    }
    io_for(t.cpus, true, 2);
    out += "  </object>\n";

    if (!t.distances.empty()) {
      size_t n = t.numa_nodes.size();
      out += "  <distances2 type=\"NUMANode\" nbobjs=\"" + std::to_string(n) + "\" kind=\"5\" name=\"NUMALatency\" indexing=\"os\">\n";
      std::vector<unsigned> idx;
      for (const NumaNode& node : t.numa_nodes) idx.push_back(node.os_index);
      std::string ids = join_numbers(idx, " ") + " ";
      out += "    <indexes length=\"" + std::to_string(ids.size()) + "\">" + ids + "</indexes>\n";
      std::string vals;
      for (const auto& row : t.distances) vals += join_numbers(row, " ") + " ";
      out += "    <u64values length=\"" + std::to_string(vals.size()) + "\">" + vals + "</u64values>\n";
      out += "  </distances2>\n";
    }
    out += "</topology>\n";
  }
};

}  // namespace

std::string to_hwloc_xml(const Topology& t) {
  Writer w{t, {}, 1, 0, {}, {}};
  w.run();
  return w.out;
}

}  // namespace gpubind::render

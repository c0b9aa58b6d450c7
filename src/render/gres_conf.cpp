#include "render/gres_conf.hpp"

#include <algorithm>
#include <cctype>

#include "util/strings.hpp"

namespace gpubind::render {


// Slurm's AutoDetect (gpu/nvml, gpu/rsmi, gpu/nvidia) names a type by lowercasing the model name
// and turning spaces into underscores ("NVIDIA A100-SXM4-40GB" -> nvidia_a100-sxm4-40gb), so a
// gres.conf written here and AutoDetect agree. Characters that would break gres.conf or
// --gres=gpu:TYPE:N parsing (',', ':', '=', '#', brackets) also become underscores.
std::string slurm_gpu_type(const topo::Gpu& g) {
  std::string name = g.name.empty() ? std::string(topo::to_string(g.vendor)) : g.name;
  std::string out;
  for (char c : trim(name)) {
    auto u = static_cast<unsigned char>(c);
    bool breaks = std::isspace(u) || std::string_view(",:=#()[]{}\"'").find(c) != std::string_view::npos || u < 0x20;
    out += breaks ? '_' : char(std::tolower(u));
  }
  return out.empty() ? "gpu" : out;
}

std::string slurm_node_gres(const topo::Topology& t) {
  std::vector<std::pair<std::string, unsigned>> counts;
  for (const topo::Gpu& g : t.gpus) {
    std::string type = slurm_gpu_type(g);
    auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == type; });
    if (it == counts.end()) counts.push_back({type, 1});
    else ++it->second;
  }
  std::vector<std::string> parts;
  for (const auto& [type, n] : counts) parts.push_back("gpu:" + type + ":" + std::to_string(n));
  return join(parts, ",");
}

namespace {

std::string device_file(const topo::Gpu& g) {
  if (g.vendor == topo::Vendor::nvidia) return "/dev/nvidia" + std::to_string(g.index);
  for (const std::string& n : g.os_names)
    if (n.starts_with("renderD")) return "/dev/dri/" + n;
  return "/dev/dri/renderD" + std::to_string(128 + g.index);
}

}  // namespace

std::string gres_conf(const topo::Topology& t, const std::string& node_name) {
  std::string out = "# gres.conf for " + (t.hostname.empty() ? std::string("this node") : t.hostname) + ", written by gpubind from " +
                    t.origin + "\n# Cores= uses Slurm's core numbering (hwloc's logical order), not OS CPU numbers.\n";
  std::vector<unsigned> ids = topo::logical_core_ids(t);
  std::vector<const topo::Gpu*> gpus;
  for (const topo::Gpu& g : t.gpus) gpus.push_back(&g);
  for (const topo::Gpu* g : gpus) {
    std::string line = (node_name.empty() ? "" : "NodeName=" + node_name + " ") + "Name=gpu Type=" + slurm_gpu_type(*g) +
                       " File=" + device_file(*g);
    if (g->cpus && g->numa) {
      CpuSet cores;
      for (size_t i = 0; i < t.cores.size(); ++i)
        if (t.cores[i].pus.intersects(*g->cpus)) cores.set(ids[i]);
      line += " Cores=" + cores.to_list();
    } else {
      out += "# GPU " + std::to_string(g->index) + " (" + g->pci + "): locality unknown, no Cores= (any core may use it)\n";
    }
    // Links: per GPU of the same vendor in index order, -1 for itself, else the link count.
    std::vector<std::string> links;
    bool any = false;
    for (const topo::Gpu* o : gpus) {
      if (o->vendor != g->vendor) continue;
      if (o == g) {
        links.push_back("-1");
        continue;
      }
      const topo::GpuLink* l = topo::find_link(t, g->pci, o->pci);
      unsigned n = l ? std::max(1u, l->count) : 0;
      any = any || n;
      links.push_back(std::to_string(n));
    }
    if (any) line += " Links=" + join(links, ",");
    out += "# GPU " + std::to_string(g->index) + ": " + g->pci + (g->name.empty() ? "" : ", " + g->name) + "\n" + line + "\n";
  }
  if (gpus.empty()) {
    out += "# no GPU in this topology\n";
    return out;
  }
  // The node's slurm.conf line must name the same typed GPUs, or slurmd ignores them ("Ignoring
  // extra GRES").
  out += "# slurm.conf: " + (node_name.empty() ? std::string("NodeName=... ") : "NodeName=" + node_name + " ") + "Gres=" +
         slurm_node_gres(t) + "\n";
  return out;
}

}  // namespace gpubind::render

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

// What the release accepts, in a comment: why the lines below look as they do.
std::string rule_note(const plan::SlurmNodePlan& p) {
  std::string v = p.version.text();
  switch (p.rule) {
    case plan::SlurmCoresRule::any: return "";
    case plan::SlurmCoresRule::whole_sockets:
      return "# Slurm " + v +
             " takes a GPU's Cores= only as whole sockets, and drains a node whose gres.conf names part of a\n"
             "# socket (\"doesn't match socket boundaries\").\n";
    case plan::SlurmCoresRule::one_socket_or_all:
      return "# Slurm " + v +
             " takes a GPU's Cores= only as one whole socket or every core of the node, and drains a node\n"
             "# whose gres.conf names anything else (\"doesn't match socket boundaries\").\n";
  }
  return "";
}

// The socket definition chosen, and what it costs.
std::string sockets_note(const plan::SlurmNodePlan& p, bool no_packages) {
  if (p.rule == plan::SlurmCoresRule::any) return "";
  if (!p.no_cores.empty()) return "# No Cores= below: " + p.no_cores + ". Slurm then gives a job any core of the node with a GPU.\n";
  const plan::SlurmSockets& s = p.sockets;
  std::string shape = std::to_string(s.sockets.size()) + (s.sockets.size() == 1 ? " socket of " : " sockets of ") +
                      std::to_string(s.cores_per_socket) + " cores";
  std::string out;
  if (s.definition == plan::SlurmSocket::package) out = "# Sockets here are slurmd's default, the packages (" + shape + ").\n";
  else
    out = "# Sockets here are " + s.kind + "s (" + std::string(plan::slurmd_parameter(s.definition)) + "): " + shape +
          ". Jobs' --sockets-per-node,\n# --cpu-bind=sockets and -m *:block then count " + s.kind +
          "s, and slurm.conf must say so (below).\n";
  if (s.definition == plan::SlurmSocket::numa_node && no_packages)
    out += "# (The source names no packages: where each NUMA node is a whole package, the parameter changes nothing.)\n";
  unsigned widened = p.widened_cores();
  bool any_local = std::any_of(p.gpus.begin(), p.gpus.end(), [](const plan::SlurmGpuCores& g) { return !g.own.empty(); });
  if (!any_local) return out;
  if (widened == 0) return out + "# Each GPU's Cores= is exactly its own cores.\n";
  return out +
         "# No socket definition slurmd knows (package, NUMA node, L3) makes every GPU's own cores whole sockets:\n"
         "# " +
         std::to_string(widened) +
         " cores more are named below, each GPU's comment says which. Leaving Cores= out instead\n"
         "# would let Slurm give a job any core of the node with the GPU.\n";
}

// After the lines: the node's slurm.conf definition that the Cores= numbers are counted against.
std::string node_definition(const topo::Topology& t, const std::string& node_name, const plan::SlurmNodePlan& p) {
  std::string node = node_name.empty() ? std::string("NodeName=... ") : "NodeName=" + node_name + " ";
  if (p.rule == plan::SlurmCoresRule::any || !p.no_cores.empty())
    return "# slurm.conf: " + node + "Gres=" + render::slurm_node_gres(t) + "\n";
  const plan::SlurmSockets& s = p.sockets;
  std::string param(plan::slurmd_parameter(s.definition));
  std::string out;
  bool per_node = plan::slurm_node_parameters(p.version);
  if (!param.empty() && !per_node)
    out += "# Slurm " + p.version.text() +
           " takes it only for every node (node-specific Parameters= came in 25.11):\n"
           "# slurm.conf: SlurmdParameters=" +
           param + "\n";
  out += "# slurm.conf: " + node + "Boards=1 SocketsPerBoard=" + std::to_string(s.sockets.size()) +
         " CoresPerSocket=" + std::to_string(s.cores_per_socket) + " ThreadsPerCore=" + std::to_string(s.threads_per_core) +
         (!param.empty() && per_node ? " Parameters=" + param : "") + " Gres=" + render::slurm_node_gres(t) + "\n";
  if (per_node) out += "# On the node, slurmd -C" + (param.empty() ? "" : " --parameters=" + param) + " must print the same counts.\n";
  return out;
}

std::string widened_note(const plan::SlurmGpuCores& g, const plan::SlurmNodePlan& p) {
  if (!g.widened() || g.cores.empty()) return "";
  bool all = g.cores.count() == p.total_cores;
  return "#   its own cores " + g.own.to_list() + " are not " +
         (all ? "one whole socket: every core is named" : "whole sockets: their sockets' cores are named") + " for Slurm " +
         p.version.text() + "\n";
}

}  // namespace

std::string gres_conf(const topo::Topology& t, const std::string& node_name, const plan::SlurmNodePlan& plan,
                      const std::string& version_from) {
  std::string out = "# gres.conf for " + (t.hostname.empty() ? std::string("this node") : t.hostname) + ", written by gpubind from " +
                    t.origin + " for Slurm " + plan.version.text() + " (" + version_from +
                    ")\n# Cores= uses Slurm's core numbering (hwloc's logical order), not OS CPU numbers.\n";
  out += rule_note(plan);
  if (!t.gpus.empty()) out += sockets_note(plan, t.packages.empty());
  std::vector<const topo::Gpu*> gpus;
  for (const topo::Gpu& g : t.gpus) gpus.push_back(&g);
  for (size_t i = 0; i < gpus.size(); ++i) {
    const topo::Gpu* g = gpus[i];
    const plan::SlurmGpuCores& cores = plan.gpus.at(i);
    std::string line = (node_name.empty() ? "" : "NodeName=" + node_name + " ") + "Name=gpu Type=" + slurm_gpu_type(*g) +
                       " File=" + device_file(*g);
    if (!cores.cores.empty()) {
      line += " Cores=" + cores.cores.to_list();
    } else if (cores.own.empty()) {
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
    out += "# GPU " + std::to_string(g->index) + ": " + g->pci + (g->name.empty() ? "" : ", " + g->name) + "\n" +
           widened_note(cores, plan) + line + "\n";
  }
  if (gpus.empty()) {
    out += "# no GPU in this topology\n";
    return out;
  }
  // The node's slurm.conf line must name the same typed GPUs, or slurmd ignores them ("Ignoring
  // extra GRES").
  return out + node_definition(t, node_name, plan);
}

}  // namespace gpubind::render

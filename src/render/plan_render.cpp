#include "render/plan_render.hpp"

#include <algorithm>
#include <cstdio>

#include "render/gres_conf.hpp"
#include "render/table.hpp"
#include "util/strings.hpp"

namespace gpubind::render {

using plan::MemPolicy;
using plan::Plan;
using plan::RankBinding;

namespace {

std::string gpu_list(const RankBinding& rb) {
  std::vector<std::string> parts;
  for (const auto& g : rb.gpus) parts.push_back(std::to_string(g.index) + (g.stack ? "." + std::to_string(*g.stack) : ""));
  return parts.empty() ? "-" : join(parts, ",");
}

std::string gpu_pcis(const RankBinding& rb) {
  std::vector<std::string> parts;
  for (const auto& g : rb.gpus) parts.push_back(g.pci);
  return join(parts, ",");
}

std::string mem_text(const RankBinding& rb) {
  if (rb.mem_policy == MemPolicy::none) return "-";
  return std::string(plan::to_string(rb.mem_policy)) + ":" + join_numbers(rb.mem_nodes);
}

std::string nic_text(const RankBinding& rb) {
  if (rb.nics.empty()) return "-";
  return (rb.nics[0].name.empty() ? rb.nics[0].pci : rb.nics[0].name) + " (" + topo::to_string(rb.nics[0].path) + ")";
}

std::string hex_mask(const CpuSet& s) {
  // Slurm's mask_cpu takes one hex number per task.
  std::string m = s.to_mask();
  std::string out;
  for (char c : m)
    if (c != ',') out += c;
  size_t nz = out.find_first_not_of('0');
  return "0x" + (nz == std::string::npos ? std::string("0") : out.substr(nz));
}

}  // namespace

// POSIX sh quoting: plain when every character is safe, else single quotes with each ' written
// as '\'' , so no value from a topology file (a NIC or GPU name) can run as shell code under eval.
std::string shell_quote(const std::string& v) {
  bool plain = !v.empty();
  for (char c : v)
    plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || c == ',' || c == '-' || c == '_' || c == '.' || c == ':' || c == '/');
  if (plain) return v;
  std::string out = "'";
  for (char c : v) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string format_share(const std::optional<double>& v) {
  if (!v) return "unknown";
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.0f%%", *v * 100.0);
  return buf;
}

std::string describe_binding(const plan::RankBinding& rb, const topo::Topology& t, const std::string& memory_note) {
  std::vector<std::string> gpus;
  for (const plan::GpuRef& g : rb.gpus) {
    auto known = std::find_if(t.gpus.begin(), t.gpus.end(), [&](const topo::Gpu& tg) { return tg.pci == g.pci && !tg.uuid.empty(); });
    gpus.push_back(std::to_string(g.index) + " (" + g.pci + (known == t.gpus.end() ? "" : ", " + known->uuid) + ")");
  }
  std::string mem =
      rb.mem_policy == plan::MemPolicy::none
          ? "unchanged"
          : std::string(plan::to_string(rb.mem_policy)) + " " + join_numbers(rb.mem_nodes) + (memory_note.empty() ? "" : " " + memory_note);
  std::vector<std::string> nics;
  for (const plan::NicRef& n : rb.nics) nics.push_back(n.name.empty() ? n.pci : n.name);
  return one_line(std::string(gpus.size() > 1 ? "GPUs " : "GPU ") + (gpus.empty() ? std::string("none") : join(gpus, ", ")) + ", CPUs " +
                  rb.cpus.to_list() + ", memory " + mem +
                  (nics.empty() ? "" : (nics.size() > 1 ? ", NICs " : ", NIC ") + join(nics, "; ")));
}

std::string report_line(const topo::Topology& t, int pid, long global_rank, unsigned local_size, const plan::RankBinding& rb,
                        const std::string& memory_note) {
  return "[" + one_line(t.hostname.empty() ? "localhost" : t.hostname) + ":" + std::to_string(pid) + "] gpubind: rank " +
         (global_rank < 0 ? std::string("?") : std::to_string(global_rank)) + " (local " + std::to_string(rb.local_rank) + " of " +
         std::to_string(local_size) + ") bound to " + describe_binding(rb, t, memory_note) + ": " + core_map(t, rb.cpus);
}

std::string core_map(const topo::Topology& t, const CpuSet& cpus) {
  std::string out;
  for (const topo::Package& pkg : t.packages) {
    std::vector<std::string> cores;
    for (const topo::Core& c : t.cores) {
      if (!c.pus.is_subset_of(pkg.cpus)) continue;
      std::string s;
      for (unsigned pu : c.pus.ids()) s += cpus.test(pu) ? 'B' : '.';
      cores.push_back(s);
    }
    out += "[" + join(cores, "/") + "]";
  }
  return out;
}

std::string env_words(const std::vector<std::pair<std::string, std::string>>& env) {
  std::vector<std::string> words;
  for (const auto& [k, v] : env) words.push_back(k + "=" + shell_quote(v));
  return join(words, " ");
}

std::string plan_table(const Plan& p, bool explain) {
  std::string out = "Plan: " + std::to_string(p.ranks.size()) + " rank(s), policy " + plan::to_string(p.policy) + ", memory " +
                    plan::to_string(p.mem) + ", on " + p.topology_origin + "\n\n";
  TextTable t({"RANK", "GPU", "PCI", "CPUS", "CORES", "MEMORY", "NIC"});
  for (const RankBinding& rb : p.ranks) {
    unsigned cores = 0;
    for (const auto& e : rb.env)
      if (e.first == "OMP_NUM_THREADS") cores = unsigned(std::stoul(e.second));
    t.add({std::to_string(rb.local_rank), gpu_list(rb), rb.gpus.empty() ? "-" : gpu_pcis(rb), rb.cpus.to_list(),
           cores ? std::to_string(cores) : "-", mem_text(rb), nic_text(rb)});
  }
  out += t.str();
  const plan::Score& s = p.score;
  out += "\nscore: cpu locality " + format_share(s.cpu_locality) + ", memory locality " + format_share(s.mem_locality) +
         ", overlap " + std::to_string(s.overlap_cpus) + " CPU(s)" + (s.cores_known ? "" : " (shared cores unknown)") + ", idle " + std::to_string(s.idle_cpus) + " CPU(s), cores per rank " + std::to_string(s.min_cores) + "-" +
         std::to_string(s.max_cores) + "\n";
  if (!p.visible_env.empty()) out += "every rank: " + env_words(p.visible_env) + " (the GPUs chosen for fewer ranks than GPUs)\n";
  if (explain) out += text_block("explain", p.explain);
  return out;
}

nlohmann::ordered_json plan_json(const Plan& p, bool explain) {
  using oj = nlohmann::ordered_json;
  oj j;
  j["schema_version"] = kPlanSchemaVersion;
  j["topology"] = p.topology_origin;
  j["policy"] = plan::to_string(p.policy);
  j["mem_policy"] = plan::to_string(p.mem);
  j["ranks"] = oj::array();
  for (const RankBinding& rb : p.ranks) {
    oj r;
    r["local_rank"] = rb.local_rank;
    r["gpus"] = oj::array();
    for (const auto& g : rb.gpus) {
      oj o = {{"index", g.index}, {"pci", g.pci}, {"vendor", topo::to_string(g.vendor)}};
      if (g.stack) o["stack"] = *g.stack;  // one stack of the GPU (Level Zero FLAT)
      r["gpus"].push_back(o);
    }
    r["cpus"] = rb.cpus.to_list();
    r["mem_nodes"] = rb.mem_nodes;
    r["mem_policy"] = plan::to_string(rb.mem_policy);
    r["nics"] = oj::array();
    for (const auto& n : rb.nics)
      r["nics"].push_back({{"pci", n.pci.empty() ? oj() : oj(n.pci)}, {"name", n.name}, {"path", topo::to_string(n.path)}});
    r["env"] = oj::object();
    for (const auto& [k, v] : rb.env) r["env"][k] = v;
    r["warnings"] = rb.warnings;
    j["ranks"].push_back(r);
  }
  const plan::Score& s = p.score;
  oj score;
  score["cpu_locality"] = s.cpu_locality ? oj(*s.cpu_locality) : oj();
  score["mem_locality"] = s.mem_locality ? oj(*s.mem_locality) : oj();
  score["overlap_cpus"] = s.overlap_cpus;
  score["cores_known"] = s.cores_known;
  score["idle_cpus"] = s.idle_cpus;
  score["cores_per_rank"] = {{"min", s.min_cores}, {"max", s.max_cores}};
  score["nic_path"] = oj::array();
  for (const auto& c : s.nic_path) score["nic_path"].push_back(c ? oj(topo::to_string(*c)) : oj());
  j["score"] = score;
  if (!p.visible_env.empty()) {
    j["visible_env"] = oj::object();
    for (const auto& [k, v] : p.visible_env) j["visible_env"][k] = v;
  }
  j["warnings"] = p.warnings;
  if (explain) j["explain"] = p.explain;
  return j;
}

std::string plan_env(const Plan& p, unsigned rank, const std::map<std::string, std::string>& kept) {
  const RankBinding& rb = p.ranks.at(rank);
  std::string out = "# gpubind plan: local rank " + std::to_string(rank) + " of " + std::to_string(p.ranks.size()) + "\n";
  for (const auto& [k, v] : plan::rank_environment(p, rb)) {
    auto mine = plan::is_user_kept_env(k) ? kept.find(k) : kept.end();
    if (mine == kept.end()) out += "export " + k + "=" + shell_quote(v) + "\n";
    else out += "# " + k + "=" + shell_quote(mine->second) + " kept: set before gpubind (the plan's " + v + ")\n";
  }
  return out;
}

std::vector<std::string> plan_slurm_notes(const Plan& p) {
  std::vector<std::string> out;
  if (p.mem != MemPolicy::preferred) return out;
  for (const RankBinding& rb : p.ranks)
    if (rb.mem_nodes.size() > 1)
      out.push_back("rank " + std::to_string(rb.local_rank) + ": memory preferred on nodes " + join_numbers(rb.mem_nodes) +
                    ", but Slurm's --mem-bind=prefer takes one node: node " + std::to_string(rb.mem_nodes[0]) +
                    " (--mem bind keeps them all)");
  return out;
}

std::string plan_slurm(const Plan& p) {
  std::vector<std::string> masks, gpus, mems;
  bool multi_gpu = false, any_gpu = false;
  for (const RankBinding& rb : p.ranks) {
    masks.push_back(hex_mask(rb.cpus));
    multi_gpu = multi_gpu || rb.gpus.size() > 1;
    any_gpu = any_gpu || !rb.gpus.empty();
    CpuSet nodes;
    for (unsigned n : rb.mem_nodes) nodes.set(n);
    // Slurm's prefer is MPOL_PREFERRED on the mask's first node only: say that one.
    if (p.mem == MemPolicy::preferred && !rb.mem_nodes.empty()) nodes = CpuSet::of({*nodes.first()});
    mems.push_back(rb.mem_nodes.empty() ? "" : hex_mask(nodes));
  }
  for (const RankBinding& rb : p.ranks) {
    if (multi_gpu) {
      CpuSet g;
      for (const auto& x : rb.gpus) g.set(x.index);
      gpus.push_back(hex_mask(g));
    } else {
      gpus.push_back(rb.gpus.empty() ? "0" : std::to_string(rb.gpus[0].index));
    }
  }
  std::string out = "--cpu-bind=mask_cpu:" + join(masks, ",");
  if (any_gpu) out += std::string(" --gpu-bind=") + (multi_gpu ? "mask_gpu:" : "map_gpu:") + join(gpus, ",");
  bool mem = p.mem != MemPolicy::none && p.mem != MemPolicy::interleave;
  for (const std::string& m : mems) mem = mem && !m.empty();
  if (mem) out += std::string(" --mem-bind=") + (p.mem == MemPolicy::preferred ? "prefer," : "") + "mask_mem:" + join(mems, ",");
  return out + "\n";
}

std::string plan_rankfile(const Plan& p, const topo::Topology& t, const std::vector<std::string>& hosts, bool logical) {
  std::string out =
      logical ? "# Open MPI 5 rankfile from gpubind (hwloc logical indexes of the allowed cores; PRRTE reads only\n"
                "# logical numbers):\n"
                "#   mpirun --map-by rankfile:file=FILE ...\n"
              : "# Open MPI 4 rankfile from gpubind (physical CPU numbers):\n"
                "#   mpirun --rankfile FILE --mca rmaps_rank_file_physical 1 ...\n"
                "# Open MPI 5 (PRRTE) reads rankfile CPUs as logical indexes: use --format rankfile-logical there.\n";
  std::vector<std::string> slots;
  // hwloc's logical core order is Slurm's core numbering (topo::logical_core_ids) over the cores
  // the process may use: hwloc leaves disallowed ones (a cgroup, reserved system cores) out.
  std::vector<unsigned> ids;
  if (logical) {
    std::vector<unsigned> all = topo::logical_core_ids(t);
    std::vector<size_t> by_id(all.size());
    for (size_t i = 0; i < all.size(); ++i) by_id[all[i]] = i;
    ids.assign(all.size(), 0);
    unsigned next = 0;
    for (size_t i : by_id)
      if (t.cores[i].pus.intersects(t.allowed_cpus)) ids[i] = next++;
  }
  for (const RankBinding& rb : p.ranks) {
    if (!logical) {
      slots.push_back(rb.cpus.to_list());
      continue;
    }
    CpuSet cores;
    for (size_t i = 0; i < t.cores.size(); ++i)
      if (t.cores[i].pus.intersects(rb.cpus)) cores.set(ids[i]);
    slots.push_back(cores.to_list());
  }
  size_t n = p.ranks.size();
  for (size_t h = 0; h < hosts.size(); ++h)
    for (const RankBinding& rb : p.ranks)
      out += "rank " + std::to_string(h * n + rb.local_rank) + "=" + hosts[h] + " slot=" + slots[rb.local_rank] + "\n";
  return out;
}

std::string plan_numactl(const Plan& p) {
  std::string out;
  for (const RankBinding& rb : p.ranks) {
    out += "numactl --physcpubind=" + rb.cpus.to_list();
    std::string nodes = join_numbers(rb.mem_nodes);
    switch (rb.mem_policy) {
      case MemPolicy::preferred:
        // numactl --preferred takes one node; several need --preferred-many (numactl >= 2.0.15).
        out += rb.mem_nodes.size() == 1 ? " --preferred=" + nodes : " --preferred-many=" + nodes;
        break;
      case MemPolicy::bind: out += " --membind=" + nodes; break;
      case MemPolicy::interleave: out += " --interleave=" + nodes; break;
      case MemPolicy::none: break;
    }
    out += " -- CMD   # local rank " + std::to_string(rb.local_rank) + ", GPU " + gpu_list(rb) + "\n";
  }
  return out;
}

}  // namespace gpubind::render

#include "plan/slurm_node.hpp"

#include <algorithm>
#include <array>
#include <cctype>

#include "util/strings.hpp"

namespace gpubind::plan {

namespace {

// Release series of Slurm (SchedMD's tags slurm-17-02 to slurm-26-05).
constexpr std::array<std::pair<unsigned, unsigned>, 15> kSeries{{{17, 2},
                                                                 {17, 11},
                                                                 {18, 8},
                                                                 {19, 5},
                                                                 {20, 2},
                                                                 {20, 11},
                                                                 {21, 8},
                                                                 {22, 5},
                                                                 {23, 2},
                                                                 {23, 11},
                                                                 {24, 5},
                                                                 {24, 11},
                                                                 {25, 5},
                                                                 {25, 11},
                                                                 {26, 5}}};

std::string two_digits(unsigned n) { return (n < 10 ? "0" : "") + std::to_string(n); }

std::string known_series() {
  return std::to_string(kSeries.front().first) + "." + two_digits(kSeries.front().second) + " to " + std::to_string(kSeries.back().first) +
         "." + two_digits(kSeries.back().second);
}

std::optional<unsigned> number(std::string_view s) {
  if (s.empty() || s.size() > 4) return std::nullopt;
  unsigned n = 0;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    n = n * 10 + unsigned(c - '0');
  }
  return n;
}

// Each group of PUs (a package, a NUMA node, an L3) as the Slurm core numbers of the cores in it.
// Slurm numbers cores socket by socket in hwloc's order: socket i must be exactly the cores
// i*C .. (i+1)*C-1, every core in one socket, all sockets of C cores.
void fill_sockets(const topo::Topology& t, const std::vector<CpuSet>& groups, SlurmSockets& out) {
  std::vector<unsigned> ids = topo::logical_core_ids(t);
  std::vector<CpuSet> sockets;
  CpuSet seen;
  unsigned pus = 0;
  for (const CpuSet& g : groups) {
    CpuSet cores;
    for (size_t i = 0; i < t.cores.size(); ++i)
      if (t.cores[i].pus.intersects(g)) cores.set(ids[i]);
    if (cores.empty()) continue;  // slurmd counts only sockets that have cores
    if (cores.intersects(seen)) {
      out.unusable = "a core in two of its " + out.kind + "s";
      return;
    }
    seen |= cores;
    sockets.push_back(cores);
  }
  for (const topo::Core& c : t.cores) pus += c.pus.count();
  if (sockets.empty() || seen.count() != t.cores.size()) {
    out.unusable = "cores that are in no " + out.kind;
    return;
  }
  std::sort(sockets.begin(), sockets.end());
  unsigned per = sockets.front().count();
  for (size_t i = 0; i < sockets.size(); ++i) {
    if (sockets[i].count() != per) {
      out.unusable = "its " + out.kind + "s have different numbers of cores (" + std::to_string(per) + " and " +
                     std::to_string(sockets[i].count()) + "): slurmd divides the cores evenly among sockets";
      return;
    }
    if (sockets[i] != CpuSet::range(unsigned(i) * per, unsigned(i + 1) * per - 1)) {
      out.unusable = "its " + out.kind + "s' cores are not consecutive in Slurm's core numbering";
      return;
    }
  }
  if (pus % t.cores.size() != 0) {
    out.unusable = "its cores have different numbers of threads";
    return;
  }
  out.sockets = std::move(sockets);
  out.cores_per_socket = per;
  out.threads_per_core = pus / unsigned(t.cores.size());
}

// The CPUs of each of `objects` (packages, L3s).
template <typename T>
std::vector<CpuSet> cpus_of(const std::vector<T>& objects) {
  std::vector<CpuSet> out;
  for (const T& o : objects) out.push_back(o.cpus);
  return out;
}

// What numa_node_as_socket makes a socket: slurmd takes the hwloc parent of the first NUMA node
// and counts every object of that parent's type (xcpuinfo.c). A node whose CPUs are its
// package's hangs below the package (nothing changes); one that is an L3's, below the L3;
// otherwise below an object hwloc makes for it (a Group, or a Die where the CPU reports dies), one
// per NUMA node of that kind. The topology keeps no Groups; slurmd -C on the corpus' hwloc
// captures counts the same (tests/slurm/release_test.sh).
std::vector<CpuSet> numa_node_groups(const topo::Topology& t, std::string& kind) {
  std::vector<CpuSet> nodes;
  for (const topo::NumaNode& n : t.numa_nodes)
    if (!n.cpus.empty()) nodes.push_back(n.cpus);
  std::sort(nodes.begin(), nodes.end());
  if (nodes.empty()) return nodes;
  const CpuSet& first = nodes.front();
  std::vector<CpuSet> packages = cpus_of(t.packages), l3s = cpus_of(t.l3_domains);
  auto holds_first = [&](const std::vector<CpuSet>& sets) { return std::find(sets.begin(), sets.end(), first) != sets.end(); };
  if (holds_first(packages)) {
    kind = "package";
    return packages;
  }
  if (holds_first(l3s)) {
    kind = "L3";
    return l3s;
  }
  kind = "NUMA node";
  return nodes;
}

// `own` made acceptable under `rule` on `s`: the whole sockets it touches, or every core.
CpuSet widen(const CpuSet& own, const SlurmSockets& s, SlurmCoresRule rule, unsigned total) {
  if (own.empty() || rule == SlurmCoresRule::any || slurm_accepts(own, s, rule)) return own;
  CpuSet touched;
  unsigned count = 0;
  for (const CpuSet& socket : s.sockets)
    if (socket.intersects(own)) {
      touched |= socket;
      ++count;
    }
  if (rule == SlurmCoresRule::whole_sockets || count == 1) return touched;
  return CpuSet::range(0, total - 1);
}

}  // namespace

std::string SlurmVersion::text() const {
  return std::to_string(major) + "." + two_digits(minor) + (micro ? "." + std::to_string(*micro) : "");
}

Result<SlurmVersion> parse_slurm_version(std::string_view text) {
  std::string_view s = trim(text);
  // slurmd -V: "slurm 25.11.4", Debian's "slurm-wlm 22.05.8": the last word.
  if (size_t space = s.find_last_of(" \t"); space != std::string_view::npos) s = s.substr(space + 1);
  if (size_t dash = s.find('-'); dash != std::string_view::npos) s = s.substr(0, dash);  // 25.11.0-0rc1
  std::vector<std::string_view> parts = split(s, '.');
  Error bad{"--slurm-version", "'" + one_line(std::string(text)) + "' is not a Slurm release (25.11 or 25.11.4; " + known_series() + ")",
            ErrorKind::usage};
  if (parts.size() < 2 || parts.size() > 3) return bad;
  auto major = number(parts[0]), minor = number(parts[1]);
  std::optional<unsigned> micro;
  if (parts.size() == 3 && !(micro = number(parts[2]))) return bad;
  if (!major || !minor) return bad;
  if (std::find(kSeries.begin(), kSeries.end(), std::pair{*major, *minor}) == kSeries.end()) {
    bad.why = "Slurm has no release " + std::to_string(*major) + "." + two_digits(*minor) + " (its releases: " + known_series() +
              "; since 20.11 each year's .05 and .11)";
    return bad;
  }
  return SlurmVersion{*major, *minor, micro};
}

SlurmVersion newest_slurm() { return {kSeries.back().first, kSeries.back().second, std::nullopt}; }

SlurmCoresRule slurm_cores_rule(const SlurmVersion& v) {
  if (v.at_least(25, 11)) return SlurmCoresRule::one_socket_or_all;
  if (v.at_least(24, 11)) return SlurmCoresRule::whole_sockets;
  return SlurmCoresRule::any;
}

bool slurm_node_parameters(const SlurmVersion& v) { return v.at_least(25, 11); }

std::string_view slurmd_parameter(SlurmSocket s) {
  switch (s) {
    case SlurmSocket::package: return "";
    case SlurmSocket::numa_node: return "numa_node_as_socket";
    case SlurmSocket::l3cache: return "l3cache_as_socket";
  }
  return "";
}

SlurmSockets slurm_sockets(const topo::Topology& t, SlurmSocket s) {
  SlurmSockets out;
  out.definition = s;
  std::vector<CpuSet> groups;
  switch (s) {
    case SlurmSocket::package:
      out.kind = "package";
      groups = cpus_of(t.packages);
      if (groups.empty()) out.unusable = "the source does not say which cores share a package";
      break;
    case SlurmSocket::numa_node:
      out.kind = "NUMA node";
      groups = numa_node_groups(t, out.kind);
      if (groups.empty()) out.unusable = "no NUMA node with CPUs is known";
      break;
    case SlurmSocket::l3cache:
      out.kind = "L3";
      groups = cpus_of(t.l3_domains);
      if (groups.empty()) out.unusable = "no L3 is known (the source gives no cache information)";
      break;
  }
  if (out.unusable.empty()) fill_sockets(t, groups, out);
  return out;
}

bool slurm_accepts(const CpuSet& cores, const SlurmSockets& s, SlurmCoresRule rule) {
  if (rule == SlurmCoresRule::any || cores.empty()) return true;
  unsigned total = s.cores_per_socket * unsigned(s.sockets.size());
  if (rule == SlurmCoresRule::one_socket_or_all && cores == CpuSet::range(0, total - 1)) return true;
  unsigned whole = 0;
  for (const CpuSet& socket : s.sockets) {
    unsigned in = (cores & socket).count();
    if (in == 0) continue;
    if (in != s.cores_per_socket) return false;
    ++whole;
  }
  return rule == SlurmCoresRule::whole_sockets || whole == 1;
}

unsigned SlurmNodePlan::widened_cores() const {
  unsigned n = 0;
  for (const SlurmGpuCores& g : gpus) n += g.cores.count() - g.own.count();
  return n;
}

SlurmNodePlan plan_slurm_node(const topo::Topology& t, const SlurmVersion& v) {
  SlurmNodePlan plan;
  plan.version = v;
  plan.rule = slurm_cores_rule(v);
  plan.total_cores = unsigned(t.cores.size());
  std::vector<unsigned> ids = topo::logical_core_ids(t);
  for (size_t i = 0; i < t.gpus.size(); ++i) {
    SlurmGpuCores g;
    g.gpu = i;
    const topo::Gpu& gpu = t.gpus[i];
    if (gpu.cpus && gpu.numa)
      for (size_t c = 0; c < t.cores.size(); ++c)
        if (t.cores[c].pus.intersects(*gpu.cpus)) g.own.set(ids[c]);
    plan.gpus.push_back(std::move(g));
  }
  std::optional<unsigned> best_cost;
  std::string why_none;
  for (SlurmSocket s : {SlurmSocket::package, SlurmSocket::numa_node, SlurmSocket::l3cache}) {
    SlurmSockets sockets = slurm_sockets(t, s);
    if (!sockets.unusable.empty()) {
      if (s == SlurmSocket::package) why_none = sockets.unusable;
      continue;
    }
    if (plan.rule == SlurmCoresRule::any && s != SlurmSocket::package) break;
    unsigned cost = 0;
    for (const SlurmGpuCores& g : plan.gpus) cost += widen(g.own, sockets, plan.rule, plan.total_cores).count() - g.own.count();
    if (best_cost && cost >= *best_cost) continue;
    best_cost = cost;
    plan.sockets = std::move(sockets);
  }
  if (!best_cost) {
    // Before 24.11 slurmctld does not look at sockets: the GPUs' own cores stand.
    plan.sockets = slurm_sockets(t, SlurmSocket::package);
    if (plan.rule == SlurmCoresRule::any) {
      for (SlurmGpuCores& g : plan.gpus) g.cores = g.own;
      return plan;
    }
    plan.no_cores = "slurmd cannot count this node's sockets evenly: " + (why_none.empty() ? plan.sockets.unusable : why_none);
    return plan;
  }
  for (SlurmGpuCores& g : plan.gpus) g.cores = widen(g.own, plan.sockets, plan.rule, plan.total_cores);
  return plan;
}

CpuSet slurm_core_spec_cores(unsigned sockets, unsigned cores_per_socket, unsigned count, bool spec_cores_first) {
  CpuSet out;
  for (unsigned round = 0; round < cores_per_socket && count; ++round)
    for (unsigned s = 0; s < sockets && count; ++s, --count) {
      unsigned socket = spec_cores_first ? s : sockets - 1 - s;
      unsigned core = spec_cores_first ? round : cores_per_socket - 1 - round;
      out.set(socket * cores_per_socket + core);
    }
  return out;
}

CpuSet slurm_cpu_spec_cores(const CpuSet& cpu_ids, unsigned threads_per_core) {
  CpuSet out;
  for (unsigned id : cpu_ids.ids()) out.set(id / std::max(1u, threads_per_core));
  return out;
}

SlurmRestrictedCores slurm_restricted_cores(const std::vector<SlurmGresGpus>& lines, const CpuSet& specialized, unsigned per_gpu) {
  SlurmRestrictedCores out;
  out.no_cores = std::none_of(lines.begin(), lines.end(), [](const SlurmGresGpus& l) { return !l.cores.empty(); });
  for (size_t i = 0; i < lines.size() && !out.down(); ++i) {
    CpuSet mine;
    unsigned want = per_gpu * lines[i].count;
    if (!lines[i].cores.empty())
      for (unsigned c : (lines[i].cores - specialized - out.all).ids()) {
        if (mine.count() == want) break;
        mine.set(c);
      }
    if (!lines[i].cores.empty() && mine.count() < want) {
      out.short_line = i;
      out.got = mine.count();
    }
    out.all |= mine;
    out.per_line.push_back(mine);
  }
  return out;
}

bool slurm_restricted_cores_known(const SlurmVersion& v) { return v.at_least(24, 5); }

}  // namespace gpubind::plan

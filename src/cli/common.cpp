#include "cli/common.hpp"

#include "bind/pinning.hpp"
#include "topo/pinning_env.hpp"

#include <cstdio>

#include "cli/plan_options.hpp"
#include "discover/gpu_runtime.hpp"
#include "discover/live_cache.hpp"
#include "discover/source.hpp"
#include "sys/environment.hpp"
#include "sys/process.hpp"
#include "util/exit_status.hpp"
#include "util/pattern.hpp"
#include "util/strings.hpp"

namespace gpubind::cli {

int exit_status_of(const Error& e) { return e.kind == ErrorKind::usage ? kExitUsage : kExitFailure; }

int fail_with(const Error& e, int code) {
  std::fprintf(stderr, "gpubind: error: %s\n", one_line(e.message()).c_str());
  return code;
}

int fail(const Error& e) { return fail_with(e, exit_status_of(e)); }

int fail_exec(const Error& e) { return fail_with(e, kExitExecFailed); }

std::string topology_source(const std::string& flag) {
  if (!flag.empty()) return flag;
  return sys::env_value("GPUBIND_TOPOLOGY").value_or("");
}

void add_topology_option(Args& app, std::string& target) {
  app.option("--topology", target,
             "Topology source: hwloc XML, NCCL/RCCL XML, gpubind JSON, a gathered /sys+/proc directory or "
             ".tar.bz2, an hwloc synthetic string, or example:NAME (default: $GPUBIND_TOPOLOGY, else this machine)");
}

void add_quiet_option(Args& app, bool& target) {
  app.flag("-q,--quiet", target, "Print no warnings (errors are still printed)");
}

void print_warnings(const std::vector<std::string>& warnings, bool quiet) {
  if (quiet) return;
  for (const std::string& w : warnings) std::fprintf(stderr, "gpubind: warning: %s\n", one_line(w).c_str());
}

void print_explain(const std::vector<std::string>& steps) {
  for (const std::string& e : steps) std::fprintf(stderr, "gpubind: explain: %s\n", one_line(e).c_str());
}

std::optional<InstalledSlurm> installed_slurm() {
  for (const char* slurmd : {"slurmd", "/usr/sbin/slurmd", "/usr/local/sbin/slurmd"}) {
    auto r = sys::run_command({slurmd, "-V"}, std::chrono::seconds(10));
    if (r && r->exit_code == 0 && !trim(r->out).empty()) return InstalledSlurm{std::string(trim(r->out)), std::string(slurmd) + " -V"};
  }
  return std::nullopt;
}

void add_runtime_identity(topo::Topology& t, bool quiet, bool container_variable) {
  print_warnings(discover::add_runtime_identity(t, [](const char* n) { return sys::env_value(n).value_or(""); }, container_variable),
                 quiet);
}

void add_selection_options(Args& app, SelectionFlags& f, const std::string& verb, bool all_gpu_default) {
  std::string Verb = verb;
  if (!Verb.empty()) Verb[0] = char(Verb[0] - 'a' + 'A');
  app.option("--pid", f.pids, "Processes to " + verb + " (repeatable)");
  app.flag("--self", f.self, Verb + " this gpubind process (it inherited its parent's binding and environment)");
  app.flag("--all-gpu-procs", f.all_gpu,
           std::string("Every process holding a GPU device open") + (all_gpu_default ? " (the default)" : " (name it: rebind moves no process it was not told to)"));
  app.option("--children-of", f.children_of, "Every descendant of this PID (a launcher's ranks)");
  app.option("--match", f.match, "Processes whose command line matches this regular expression");
}

namespace {
std::optional<int> parse_pid(const std::string& text) {
  auto v = parse_uint(text);
  if (!v || *v == 0 || *v > (1u << 30)) return std::nullopt;
  return int(*v);
}
}  // namespace

Result<probe::Selection> make_selection(const SelectionFlags& f, bool live) {
  probe::Selection sel;
  for (const std::string& a : f.pids) {
    auto pid = parse_pid(a);
    if (!pid) return Error{"--pid " + a, "not a process id", ErrorKind::usage};
    sel.pids.push_back(*pid);
  }
  if (!f.children_of.empty()) {
    sel.children_of = parse_pid(f.children_of);
    if (!sel.children_of) return Error{"--children-of " + f.children_of, "not a process id", ErrorKind::usage};
  }
  if (!f.match.empty()) {
    auto p = Pattern::compile(f.match);
    if (!p) return Error{"--match '" + f.match + "'", "not a valid regular expression (" + p.error().why + ")", ErrorKind::usage};
    sel.match = [re = *p](const std::string& c) { return re.search(c); };
  }
  if (f.self && !live) return Error{"--self", "cannot be used with --root", ErrorKind::usage};
  if (f.self) sel.pids.push_back(sys::current_pid());
  sel.all_gpu = f.all_gpu;
  if (live) sel.exclude = sys::current_pid();
  return sel;
}

std::optional<std::vector<probe::GpuProcess>> gpu_contexts(const topo::Topology& t, probe::Selection& sel, const std::string& unknown,
                                                           bool quiet) {
  discover::GpuRuntimes runtimes = discover::open_gpu_runtimes(t, unknown);
  print_warnings(runtimes.notes, quiet);
  auto contexts = runtimes.processes();
  if (contexts)
    for (const probe::GpuProcess& c : *contexts) sel.gpu_context_pids.push_back(c.pid);
  return contexts;
}

TopologyCache topology_cache(const bind::Config& cfg) {
  return {discover::default_cache_dir(cfg.cache_dir.value_or("")), cfg.cache_max_files, {}};
}

TopologyCache topology_cache() {
  auto cfg = load_config();
  if (cfg) return topology_cache(*cfg);
  TopologyCache c = topology_cache(bind::Config{});
  c.notes.push_back("the topology cache at its default place: " + cfg.error().message());
  return c;
}

Result<topo::Topology> acquire_topology(const TopologyFrom& from) {
  std::string source = topology_source(from.flag);
  if (source.empty() && !from.root.empty()) {
    if (!from.root_is_machine)
      return Error{"--root " + from.root, "needs --topology (the machine the " + from.recorded + " processes ran on)", ErrorKind::usage};
    auto tree = sys::open_fsroot(from.root);
    if (!tree) return tree.error();
    if (!(*tree)->exists("sys/devices/system/node"))
      return Error{"--root " + from.root, "has no sys/devices/system/node: give --topology SRC (the node's topology)", ErrorKind::usage};
    return discover::load_topology(from.root);
  }
  bool bound = from.use == TopologyUse::binding && !(from.preview && !source.empty());
  if (from.use == TopologyUse::describe || (!source.empty() && !bound)) return discover::load_topology(source);
  TopologyCache cache = from.config ? topology_cache(*from.config) : topology_cache();
  std::string dir = from.no_cache ? "" : cache.dir;
  auto topo = bound ? discover::load_for_binding(source, (from.flag.empty() ? "GPUBIND_TOPOLOGY=" : "--topology ") + source, dir,
                                                 cache.max_files, &cache.notes)
                    : discover::load_live_cached(dir, cache.max_files, &cache.notes);
  print_warnings(cache.notes, from.quiet);
  return topo;
}

std::map<std::string, std::string> environment_of(const std::vector<std::string>& names) { return sys::env_values(names); }

void print_pinning(const topo::Topology& t, const plan::Plan& p, const std::vector<const plan::RankBinding*>& ranks, const CpuSet& affinity,
                   bool check_start, bool quiet) {
  if (quiet) return;
  auto env = environment_of(topo::pinning_env::names_read());
  if (check_start)
    if (auto w = bind::narrowed_before(t, affinity, env)) std::fprintf(stderr, "gpubind: warning: %s\n", one_line(*w).c_str());
  for (const plan::RankBinding* rb : ranks)
    for (const std::string& line : bind::pinning_notes(t, p, *rb, env))
      std::fprintf(stderr, "gpubind: note: local rank %u: %s\n", rb->local_rank, line.c_str());
}

std::string node_name(const std::string& flag, const std::string& slurm_node, const topo::Topology& t) {
  if (!flag.empty()) return flag;
  if (!slurm_node.empty()) return slurm_node;
  if (auto v = sys::env_value("NODE_NAME"); v && !v->empty()) return *v;
  return t.hostname.empty() ? sys::hostname() : t.hostname;
}

}  // namespace gpubind::cli

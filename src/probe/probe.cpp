#include "probe/probe.hpp"

#include "probe/cpu_quota.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <optional>
#include <set>

#include "sys/affinity.hpp"
#include "sys/rebind_record.hpp"
#include "sys/task_mover.hpp"
#include "topo/binding_env.hpp"
#include "topo/launcher_env.hpp"
#include "topo/pinning_env.hpp"
#include "util/strings.hpp"
#include "util/sweep.hpp"

namespace gpubind::probe {

namespace {

Result<CpuSet> list_field(const std::string& status, std::string_view name, const std::string& where) {
  std::string v = key_value(status, name);
  auto s = CpuSet::parse_list(v);
  if (!s) return Error{where, std::string(name) + ": " + s.error().why};
  return *s;
}

// /proc/PID/stat: "pid (comm) state ppid ..."; comm may hold spaces and parentheses, so fields
// are counted after the last ')'.
struct StatFields {
  std::string comm;
  char state = 0;                       // field 3
  std::optional<unsigned> last_cpu;     // field 39 (processor)
  std::optional<uint64_t> run_ns;       // fields 14 and 15 (utime, stime)
};

StatFields parse_stat(std::string_view stat) {
  StatFields out;
  size_t open = stat.find('('), close = stat.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return out;
  out.comm = std::string(stat.substr(open + 1, close - open - 1));
  std::optional<uint64_t> utime, stime;
  unsigned field = 3;  // the first after the comm is field 3 (state)
  std::string_view rest = stat.substr(close + 1);
  size_t i = 0;
  while (i < rest.size() && field <= 39) {
    while (i < rest.size() && (rest[i] == ' ' || rest[i] == '\n')) ++i;
    size_t end = i;
    while (end < rest.size() && rest[end] != ' ' && rest[end] != '\n') ++end;
    if (end == i) break;
    std::string_view f = rest.substr(i, end - i);
    switch (field) {
      case 3: out.state = f[0]; break;
      case 14: utime = parse_uint(f); break;
      case 15: stime = parse_uint(f); break;
      case 39:
        if (auto cpu = parse_uint(f)) out.last_cpu = unsigned(*cpu);
        break;
      default: break;
    }
    ++field;
    i = end;
  }
  // utime and stime in USER_HZ ticks, which Linux fixes at 100 per second.
  if (utime && stime) out.run_ns = (*utime + *stime) * 10'000'000ull;
  return out;
}

// How a thread's files are read: kept open between probes or opened each time.
struct ThreadReader {
  const sys::FsRoot& root;
  const ProbeOptions& options;
  // `opened`: whether the content came from a file opened now rather than one kept open.
  Result<std::string> read(const std::string& rel, bool* opened = nullptr) const {
    if (options.kept) return options.kept->read(rel, opened);
    if (opened) *opened = true;
    return root.read(rel);
  }
};

// Migrations and context switches from `sched`.
void read_sched(const ThreadReader& r, const std::string& dir, ThreadState& t) {
  if (auto sched = r.read(dir + "/sched")) {
    t.migrations = parse_uint(key_value(*sched, "se.nr_migrations"));
    t.switches = parse_uint(key_value(*sched, "nr_switches"));
  }
}

// schedstat: the thread's CPU time and the time it waited for a CPU, in nanoseconds, and how many
// times it ran, when the kernel keeps them (CONFIG_SCHED_INFO).
void parse_schedstat(std::string_view text, ThreadState& t) {
  auto fields = split(trim(text), ' ');
  if (auto ns = parse_uint(fields.front())) t.run_ns = *ns;
  if (fields.size() >= 2)
    if (auto delay = parse_uint(fields[1])) t.run_delay_ns = *delay;
}
void read_run_ns(const ThreadReader& r, const std::string& dir, ThreadState& t) {
  if (auto schedstat = r.read(dir + "/schedstat")) parse_schedstat(*schedstat, t);
}

// Everything, from status, stat, schedstat and sched.
Result<ThreadState> read_thread_files(const ThreadReader& r, const std::string& dir, int tid) {
  ThreadState t;
  t.tid = tid;
  auto status = r.read(dir + "/status");
  if (!status) return status.error();
  t.comm = key_value(*status, "Name");
  auto cpus = list_field(*status, "Cpus_allowed_list", r.root.path_of(dir + "/status"));
  auto mems = list_field(*status, "Mems_allowed_list", r.root.path_of(dir + "/status"));
  if (!cpus) return cpus.error();
  if (!mems) return mems.error();
  t.cpus_allowed = *cpus;
  t.mems_allowed = *mems;
  t.voluntary_switches = parse_uint(key_value(*status, "voluntary_ctxt_switches"));
  t.involuntary_switches = parse_uint(key_value(*status, "nonvoluntary_ctxt_switches"));
  if (auto stat = r.read(dir + "/stat")) {
    StatFields f = parse_stat(*stat);
    t.state = f.state;
    t.last_cpu = f.last_cpu;
    t.run_ns = f.run_ns;
  }
  read_run_ns(r, dir, t);
  read_sched(r, dir, t);
  if (t.voluntary_switches && t.involuntary_switches) t.switches = *t.voluntary_switches + *t.involuntary_switches;
  return t;
}

// Whether `cpus` lies within one of these sets.
bool within_one(const std::vector<CpuSet>& sets, const CpuSet& cpus) {
  return !cpus.empty() && std::any_of(sets.begin(), sets.end(), [&](const CpuSet& s) { return cpus.is_subset_of(s); });
}

// What watch needs, cheaply (sys/task_counters.hpp): the allowed CPUs, CPU time and migrations
// from the TaskCounters; `stat` for the last CPU and the name, unless the ThreadMemo knows them
// and the thread has not migrated since; `schedstat` and `sched` only where no counter could be
// attached. A thread the ThreadMemo knows that has not run since keeps the allowed CPUs read
// then, but at its identity check. The memory nodes are the process's; context switches are not
// read.
Result<ThreadState> read_thread_light(const ThreadReader& r, const std::string& dir, int tid, const CpuSet& process_mems) {
  ThreadState t;
  t.tid = tid;
  t.mems_allowed = process_mems;
  ThreadMemo* memo = r.options.memo;
  auto counts = r.options.counters->counts(tid);
  ThreadMemo::Entry* m = counts && memo && !counts->fresh ? memo->find(tid) : nullptr;
  if (m) m->idle = counts->run_ns != m->run_ns ? 0 : m->idle + 1;
  // It ran (its counter's thread lives, the id is its own), or it idles and is not checked now.
  bool unchecked = m && (m->idle == 0 || m->idle % ThreadMemo::kIdentityEvery != 0);
  if (m && m->idle != 0 && unchecked) {
    t.cpus_allowed = m->cpus;
  } else {
    auto cpus = r.options.counters->allowed_cpus(tid);
    if (!cpus) return Error{r.root.path_of(dir), "no such thread", ErrorKind::not_found};
    t.cpus_allowed = std::move(*cpus);
  }
  // The thread's stat and schedstat stay open while unread: stat for when it next migrates,
  // schedstat for the identity check below and the wait for a CPU.
  std::string schedstat = dir + "/schedstat", stat_file = dir + "/stat";
  std::optional<uint64_t> delay;  // what is known of its wait for a CPU, carried from sample to sample
  unsigned ran = 0;
  if (m) {
    bool same = unchecked;
    if (same && r.options.kept) r.options.kept->keep(schedstat);
    if (!same) {
      bool opened = true;
      auto text = r.read(schedstat, &opened);
      same = text.ok() && !opened;  // a kept file of an ended thread fails
      if (same) {
        ThreadState read;
        parse_schedstat(*text, read);
        m->run_delay_ns = read.run_delay_ns;
      } else {
        r.options.counters->forget(tid);
        counts = r.options.counters->counts(tid);
      }
    }
    // A thread that ran has its wait read at every kDelayEvery-th sample it ran, threads taking
    // turns by id: the rank's waits are all read within that many samples, at an eighth of the cost.
    if (same && m->idle == 0 && (++m->ran + unsigned(tid)) % ThreadMemo::kDelayEvery == 0)
      if (auto text = r.read(schedstat)) {
        ThreadState read;
        parse_schedstat(*text, read);
        m->run_delay_ns = read.run_delay_ns;
      }
    if (same) {
      delay = m->run_delay_ns;
      ran = m->ran;
    }
    bool moved = counts->migrations != m->migrations;
    if (same && (!moved || within_one(r.options.numa_cpus, t.cpus_allowed))) {
      if (r.options.kept) r.options.kept->keep(stat_file);
      m->run_ns = counts->run_ns;
      m->migrations = counts->migrations;
      m->cpus = t.cpus_allowed;
      t.run_ns = counts->run_ns;
      t.run_delay_ns = delay;
      t.migrations = counts->migrations;
      t.switches = counts->switches;
      t.comm = m->comm;
      t.last_cpu = m->last_cpu;
      m->stale |= moved;
      t.last_cpu_stale = m->stale;
      return t;
    }
  }
  if (counts) {
    t.run_ns = counts->run_ns;
    t.run_delay_ns = delay;
    t.migrations = counts->migrations;
    t.switches = counts->switches;
  }
  auto stat = r.read(stat_file);
  if (!stat) return stat.error();
  StatFields f = parse_stat(*stat);
  t.comm = std::move(f.comm);
  t.last_cpu = f.last_cpu;
  if (counts) {
    if (memo) memo->put(tid, {t.comm, t.last_cpu, counts->migrations, counts->run_ns, t.cpus_allowed, 0, false, true, delay, ran});
    if (memo && r.options.kept) r.options.kept->keep(schedstat);
    return t;
  }
  t.run_ns = f.run_ns;
  read_run_ns(r, dir, t);
  read_sched(r, dir, t);
  return t;
}

constexpr const char* kNoSuchProcess = "no such process";
constexpr const char* kVanished = "vanished while being read";
constexpr const char* kExited = "has exited (";
constexpr const char* kKernelThread = "is a kernel thread (";

Error vanished_or(const Error& e, int pid, const char* gone = kNoSuchProcess) {
  if (e.kind == ErrorKind::not_found) return Error{"PID " + std::to_string(pid), gone, ErrorKind::not_found};
  if (e.kind == ErrorKind::permission)
    return Error{"PID " + std::to_string(pid), "permission denied (run as its user or as root)", ErrorKind::permission};
  return e;
}

}  // namespace

std::map<unsigned, uint64_t> sum_numa_maps(const std::string& text) {
  std::map<unsigned, uint64_t> pages;
  for (std::string_view line : split(text, '\n')) {
    if (line.find(" anon=") == std::string_view::npos || line.find(" file=") != std::string_view::npos) continue;
    for (std::string_view tok : split(line, ' ')) {
      if (tok.size() < 4 || tok[0] != 'N') continue;
      auto eq = tok.find('=');
      if (eq == std::string_view::npos) continue;
      auto node = parse_uint(tok.substr(1, eq - 1));
      auto n = parse_uint(tok.substr(eq + 1));
      if (node && n) pages[unsigned(*node)] += *n;
    }
  }
  return pages;
}

std::string slurm_job_of_cgroup(std::string_view cgroup) {
  for (size_t at = cgroup.find("/job_"); at != std::string_view::npos; at = cgroup.find("/job_", at + 1)) {
    size_t from = at + 5, to = from;
    while (to < cgroup.size() && cgroup[to] >= '0' && cgroup[to] <= '9') ++to;
    if (to > from && (to == cgroup.size() || cgroup[to] == '/' || cgroup[to] == '\n')) return std::string(cgroup.substr(from, to - from));
  }
  return "";
}

std::optional<std::pair<std::string, int>> slurmstepd_job_above(const sys::FsRoot& root, int ppid) {
  for (int pid = ppid, depth = 0; pid > 1 && depth < 64; ++depth) {
    auto stat = root.read("proc/" + std::to_string(pid) + "/stat");
    if (!stat) return std::nullopt;
    size_t open = stat->find('('), close = stat->rfind(')');
    if (open == std::string::npos || close == std::string::npos || close < open) return std::nullopt;
    if (stat->compare(open + 1, close - open - 1, "slurmstepd") == 0) {
      auto cmdline = root.read("proc/" + std::to_string(pid) + "/cmdline");
      if (!cmdline) return std::nullopt;
      size_t bracket = cmdline->find("slurmstepd: [");  // "slurmstepd: [7.0]", "[7.batch]"
      if (bracket == std::string::npos) return std::nullopt;
      size_t from = bracket + 13, to = from;
      while (to < cmdline->size() && (*cmdline)[to] >= '0' && (*cmdline)[to] <= '9') ++to;
      if (to == from) return std::nullopt;
      return std::pair{cmdline->substr(from, to - from), pid};
    }
    std::vector<std::string_view> f = split(std::string_view(*stat).substr(close + 2), ' ');  // state, ppid, ...
    auto up = f.size() > 1 ? parse_uint(f[1]) : std::nullopt;
    if (!up || int(*up) == pid) return std::nullopt;
    pid = int(*up);
  }
  return std::nullopt;
}

std::string numa_maps_policy(const std::string& text) {
  std::map<std::string, size_t> count;
  for (std::string_view line : split(text, '\n')) {
    if (line.find(" anon=") == std::string_view::npos || line.find(" file=") != std::string_view::npos) continue;
    std::vector<std::string_view> f = split(line, ' ');
    if (f.size() > 1) ++count[std::string(f[1])];
  }
  std::string most;
  size_t best = 0;
  for (const auto& [policy, n] : count)
    if (n > best) {
      most = policy;
      best = n;
    }
  return most == "default" ? "" : most;
}

CpuSet policy_nodes(const std::string& policy) {
  size_t colon = policy.find(':');
  if (colon == std::string::npos) return {};
  std::string nodes = policy.substr(colon + 1);
  if (size_t flags = nodes.find_first_of("=("); flags != std::string::npos) nodes = nodes.substr(0, flags);  // "bind=static:1"
  auto set = CpuSet::parse_list(nodes);
  return set ? *set : CpuSet{};
}

ThreadMemo::Entry* ThreadMemo::find(int tid) {
  auto it = m_entries.find(tid);
  if (it == m_entries.end()) return nullptr;
  it->second.used = true;
  return &it->second;
}

void ThreadMemo::put(int tid, Entry e) {
  e.used = true;
  m_entries.insert_or_assign(tid, std::move(e));
}

const std::vector<std::string>* ThreadMemo::threads_of(int pid, uint64_t count) {
  auto it = m_threads.find(pid);
  if (it == m_threads.end() || it->second.count != count || ++it->second.age % kIdentityEvery == 0) return nullptr;
  it->second.used = true;
  return &it->second.tids;
}

void ThreadMemo::put_threads(int pid, uint64_t count, std::vector<std::string> tids) {
  m_threads.insert_or_assign(pid, Threads{count, std::move(tids), 0, true});
}

void ThreadMemo::sweep() {
  sweep_unused(m_entries, [](const Entry&) {});
  sweep_unused(m_threads, [](const Threads&) {});
}

std::string container_id_of_cgroup(std::string_view text) {
  constexpr size_t kIdLength = 64;
  std::string_view found;
  size_t run = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    bool hex = i < text.size() && std::isxdigit((unsigned char)text[i]) && !std::isupper((unsigned char)text[i]);
    if (hex) {
      ++run;
      continue;
    }
    if (run == kIdLength) found = text.substr(i - run, run);
    run = 0;
  }
  return std::string(found);
}

std::map<std::string, KubeContainer> kube_containers_of_log_names(const std::vector<std::string>& names) {
  std::map<std::string, KubeContainer> out;
  for (std::string_view n : names) {
    if (!n.ends_with(".log")) continue;
    n.remove_suffix(4);
    size_t dash = n.rfind('-');
    if (dash == std::string_view::npos) continue;
    std::string id(n.substr(dash + 1));
    if (container_id_of_cgroup(id) != id) continue;
    std::vector<std::string_view> parts = split(n.substr(0, dash), '_');
    if (parts.size() != 3 || parts[0].empty() || parts[1].empty() || parts[2].empty()) continue;
    out[id] = KubeContainer{std::string(parts[1]), std::string(parts[0]), std::string(parts[2])};
  }
  return out;
}

const std::vector<std::string>& env_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v(std::begin(topo::binding_env::kAll), std::end(topo::binding_env::kAll));
    for (const std::string& n : topo::local_rank_env_names()) v.push_back(n);
    for (const char* n : topo::launcher_env::kGlobalRank) v.push_back(n);
    for (const char* n : topo::launcher_env::kJob) v.push_back(n);
    v.push_back("SLURM_STEP_ID");
    for (const char* n : {"CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"}) v.push_back(n);
    // What sizes the thread pools inside a rank (check/contention.hpp names them in its reasons).
    for (const char* n : {"OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"}) v.push_back(n);
    // What makes a library inside it pin its threads itself (watch names it behind a DRIFTED thread).
    for (const topo::pinning_env::Knob& k : topo::pinning_env::kKnobs) v.push_back(k.name);
    return v;
  }();
  return names;
}

GpuDeviceMap::GpuDeviceMap(const sys::FsRoot& root) : m_root(root) {
  auto gpus = root.list("proc/driver/nvidia/gpus");
  if (!gpus) return;
  for (const std::string& bus : *gpus) {
    auto info = root.read("proc/driver/nvidia/gpus/" + bus + "/information");
    if (!info) continue;
    if (auto minor = parse_uint(key_value(*info, "Device Minor"))) m_nvidia_minor[unsigned(*minor)] = to_lower(bus);
  }
}

bool GpuDeviceMap::is_gpu_device_file(const std::string& p) {
  return (p.starts_with("/dev/nvidia") || p.starts_with("/dev/dri/")) && !is_gpu_control_file(p);
}

bool GpuDeviceMap::is_gpu_control_file(const std::string& p) {
  return p == "/dev/nvidiactl" || p == "/dev/nvidia-uvm" || p == "/dev/nvidia-uvm-tools" || p == "/dev/kfd" ||
         p.starts_with("/dev/nvidia-caps");
}

std::string GpuDeviceMap::pci_of(const std::string& p) const {
  if (p.starts_with("/dev/nvidia")) {
    auto minor = parse_uint(p.substr(11));
    if (!minor) return "";
    auto it = m_nvidia_minor.find(unsigned(*minor));
    return it == m_nvidia_minor.end() ? "" : it->second;
  }
  if (p.starts_with("/dev/dri/renderD") || p.starts_with("/dev/dri/card")) {
    std::string node = p.substr(9);
    auto link = m_root.read_link("sys/class/drm/" + node + "/device");
    if (!link) return "";
    std::string target = *link;
    while (!target.empty() && target.back() == '/') target.pop_back();
    std::string last = target.substr(target.rfind('/') + 1);
    return last.size() == 12 && last[4] == ':' ? to_lower(last) : "";
  }
  return "";
}

std::string GpuDeviceMap::device_of(const std::string& pci) const {
  for (const auto& [minor, bus] : m_nvidia_minor)
    if (bus == pci) return "dev/nvidia" + std::to_string(minor);
  auto nodes = m_root.list("sys/class/drm");
  if (!nodes) return "";
  for (const std::string& node : *nodes)
    if (node.starts_with("renderD") && pci_of("/dev/dri/" + node) == pci) return "dev/dri/" + node;
  return "";
}

std::optional<std::vector<std::string>> openable_mig_parents(const sys::FsRoot& root) {
  const std::string caps = "proc/driver/nvidia/capabilities";
  auto gpus = root.list(caps);
  if (!gpus) return std::nullopt;
  GpuDeviceMap map(root);
  std::set<std::string> parents;
  bool any_capability = false, any_file = false;
  // One capability's access file: the device file it names, whether this process may open it.
  auto openable = [&](const std::string& access) {
    auto text = root.read(access);
    if (!text) return false;
    auto minor = parse_uint(key_value(*text, "DeviceFileMinor"));
    if (!minor) return false;
    any_capability = true;
    int e = root.access_rw("dev/nvidia-caps/nvidia-cap" + std::to_string(*minor));
    any_file = any_file || e != ENOENT;
    return e != ENOENT && e != EPERM;
  };
  for (const std::string& gpu : *gpus) {
    auto minor = gpu.starts_with("gpu") ? parse_uint(gpu.substr(3)) : std::nullopt;
    std::string pci = minor ? map.pci_of("/dev/nvidia" + std::to_string(*minor)) : "";
    if (pci.empty()) continue;
    std::string mig = caps + "/" + gpu + "/mig";
    auto instances = root.list(mig);
    if (!instances) continue;
    for (const std::string& gi : *instances) {
      if (!gi.starts_with("gi")) continue;
      bool usable = openable(mig + "/" + gi + "/access");
      if (auto cis = root.list(mig + "/" + gi))
        for (const std::string& ci : *cis)
          if (ci.starts_with("ci")) usable = openable(mig + "/" + gi + "/" + ci + "/access") || usable;
      if (usable) parents.insert(pci);
    }
  }
  if (!any_capability || !any_file) return std::nullopt;
  return std::vector<std::string>(parents.begin(), parents.end());
}

std::optional<std::vector<std::string>> openable_gpus(const sys::FsRoot& root, const std::vector<std::string>& pcis) {
  GpuDeviceMap map(root);
  std::vector<std::pair<std::string, int>> access;
  bool any_file = false;
  for (const std::string& pci : pcis) {
    std::string dev = map.device_of(pci);
    if (dev.empty()) return std::nullopt;
    int e = root.access_rw(dev);
    any_file = any_file || e != ENOENT;
    access.emplace_back(pci, e);
  }
  if (!any_file) return std::nullopt;
  std::vector<std::string> out;
  for (const auto& [pci, e] : access)
    if (e != EPERM && e != ENOENT) out.push_back(pci);
  return out;
}

namespace {

// KEP-5304's files are at most a few KiB (a claim's devices and their attributes).
constexpr size_t kMaxPodMetadataBytes = 1 << 20;

void collect_pod_metadata(const sys::FsRoot& root, const std::string& dir, int depth, ProcessAllowance& a) {
  auto names = root.list(dir);
  if (!names) {
    if (depth == 0 && names.error().kind != ErrorKind::not_found) a.pod_metadata_unreadable.push_back(names.error().message());
    return;
  }
  for (const std::string& name : *names) {
    std::string rel = dir + "/" + name;
    if (name.ends_with("-metadata.json")) {
      auto fd = root.open_read(rel);
      auto text = fd ? sys::read_to_end(std::move(*fd), root.path_of(rel), kMaxPodMetadataBytes) : Result<std::string>(fd.error());
      if (text) a.pod_metadata_files[root.path_of(rel)] = std::move(*text);
      else a.pod_metadata_unreadable.push_back(text.error().message());
    } else if (depth < 4) {
      collect_pod_metadata(root, rel, depth + 1, a);
    }
  }
}

}  // namespace

void pod_metadata_files(const sys::FsRoot& root, ProcessAllowance& a) {
  if (root.exists(kPodMetadataDir)) collect_pod_metadata(root, kPodMetadataDir, 0, a);
}

Result<ProcessAllowance> this_process_allowance(const topo::Topology& t, const std::map<std::string, std::string>& gpu_env) {
  ProcessAllowance a;
  auto cpus = sys::current_affinity();
  if (!cpus) return cpus.error();
  auto mems = sys::current_mems_allowed();
  if (!mems) return mems.error();
  a.cpus = std::move(*cpus);
  a.mems = std::move(*mems);
  auto root = sys::open_fsroot("/");
  if (!root) return a;  // which GPUs it may open stays unknown
  pod_metadata_files(**root, a);
  if (t.gpus.empty()) return a;
  std::vector<std::string> pcis;
  for (const topo::Gpu& g : t.gpus) pcis.push_back(g.pci);
  a.openable_gpus = openable_gpus(**root, pcis);
  // MIG instance ids name no parent GPU: only then are the MIG capability files read.
  bool mig =
      std::any_of(gpu_env.begin(), gpu_env.end(), [](const auto& kv) { return to_lower(kv.second).find("mig-") != std::string::npos; });
  if (mig) a.openable_mig_parents = openable_mig_parents(**root);
  return a;
}

bool is_not_a_live_process(const Error& e) {
  return e.kind == ErrorKind::not_found || e.kind == ErrorKind::unsupported;
}

Result<std::map<std::string, std::string>> environment_of(const sys::FsRoot& root, int pid, const std::vector<std::string>& names) {
  auto env = root.read("proc/" + std::to_string(pid) + "/environ");
  if (!env) return env.error();
  std::map<std::string, std::string> out;
  for (std::string_view kv : split(*env, '\0')) {
    auto eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    std::string key(kv.substr(0, eq));
    if (std::find(names.begin(), names.end(), key) != names.end()) out[key] = kv.substr(eq + 1);
  }
  return out;
}

std::vector<int> list_pids(const sys::FsRoot& root) {
  std::vector<int> pids;
  auto names = root.list("proc");
  if (!names) return pids;
  for (const std::string& n : *names)
    if (auto v = parse_uint(n); v && *v > 0 && *v < (1u << 30)) pids.push_back(int(*v));
  std::sort(pids.begin(), pids.end());
  return pids;
}

Result<ProcessState> probe_process(const sys::FsRoot& root, int pid, const ProbeOptions& options) {
  std::string dir = "proc/" + std::to_string(pid);
  ProcessState p;
  p.pid = pid;
  auto status = root.read(dir + "/status");
  if (!status) return vanished_or(status.error(), pid);
  p.comm = key_value(*status, "Name");
  p.ppid = int(parse_uint(key_value(*status, "PPid")).value_or(0));
  // A zombie has no threads, memory or binding left to judge; a kernel thread was never bound.
  std::string state = key_value(*status, "State");
  if (state.starts_with("Z") || state.starts_with("X"))
    return Error{"PID " + std::to_string(pid), kExited + one_line(p.comm) + ", a zombie its parent has not reaped)", ErrorKind::unsupported};
  bool kthread = key_value(*status, "Kthread") == "1";
  if (!kthread && (p.ppid == 2 || pid == 2)) {  // kernels before the Kthread field: kthreadd's children have no cmdline
    auto cmd = root.read(dir + "/cmdline");
    kthread = cmd && cmd->empty();
  }
  if (kthread)
    return Error{"PID " + std::to_string(pid), kKernelThread + one_line(p.comm) + "), not a process to judge", ErrorKind::unsupported};
  auto cpus = list_field(*status, "Cpus_allowed_list", root.path_of(dir + "/status"));
  auto mems = list_field(*status, "Mems_allowed_list", root.path_of(dir + "/status"));
  if (!cpus) return cpus.error();
  if (!mems) return mems.error();
  p.cpus_allowed = *cpus;
  p.mems_allowed = *mems;
  if (auto cmd = root.read(dir + "/cmdline")) {
    std::string c = *cmd;
    std::replace(c.begin(), c.end(), '\0', ' ');
    p.cmdline = std::string(trim(c));
  }

  // Threads; one that exits while being read is simply gone, not an error.
  ThreadReader reader{root, options};
  ThreadMemo* memo = options.counters ? options.memo : nullptr;
  auto count = parse_uint(key_value(*status, "Threads"));
  const std::vector<std::string>* listed = memo && count ? memo->threads_of(pid, *count) : nullptr;
  Result<std::vector<std::string>> tids = listed ? *listed : root.list(dir + "/task");
  if (!tids) return vanished_or(tids.error(), pid, kVanished);
  if (memo && count && !listed) memo->put_threads(pid, *count, *tids);
  p.threads.reserve(tids->size());
  for (const std::string& t : *tids) {
    auto tid = parse_uint(t);
    if (!tid) continue;
    std::string tdir = dir + "/task/" + t;
    auto ts = options.counters ? read_thread_light(reader, tdir, int(*tid), p.mems_allowed) : read_thread_files(reader, tdir, int(*tid));
    if (ts) p.threads.push_back(std::move(*ts));
    else if (int(*tid) == pid) return vanished_or(ts.error(), pid, kVanished);
    else if (memo) memo->forget_threads(pid);  // listed, now gone: list again next time
  }
  // Reaped after its status was read: the kernel still opens /proc/PID/task but lists no thread
  // in it. A living process always lists at least its leader (a zombie leader too).
  if (p.threads.empty()) return Error{"PID " + std::to_string(pid), kVanished, ErrorKind::not_found};

  // GPUs held open.
  std::optional<GpuDeviceMap> own_devices;
  const GpuDeviceMap& devices = options.devices ? *options.devices : own_devices.emplace(root);
  std::set<std::string> gpus;
  if (auto fds = root.list(dir + "/fd")) {
    for (const std::string& fd : *fds) {
      auto target = root.read_link(dir + "/fd/" + fd);
      if (!target || !target->starts_with("/dev/")) continue;
      std::string pci = devices.pci_of(*target);
      if (!pci.empty()) gpus.insert(pci);
    }
  } else {
    p.notes.push_back("open files not readable (" + fds.error().why + "): GPUs unknown");
    if (fds.error().kind == ErrorKind::permission) p.denied = fds.error().message();
  }
  p.gpus.assign(gpus.begin(), gpus.end());

  if (auto env = environment_of(root, pid, env_names())) p.env = std::move(*env);
  else {
    p.notes.push_back("environment not readable (" + env.error().why + ")");
    if (env.error().kind == ErrorKind::permission && p.denied.empty()) p.denied = env.error().message();
  }
  // What gpubind recorded when it bound the process: its container refused the memory policy.
  if (auto it = p.env.find(topo::binding_env::kMemPolicy); it != p.env.end() && it->second == "refused")
    p.notes.push_back("memory policy refused by the container when gpubind bound it (GPUBIND_MEM_POLICY=refused): "
                      "CPUs bound, pages placed by first touch");
  std::string cgroup_text;
  if (auto cgroup = root.read(dir + "/cgroup")) {
    cgroup_text = *cgroup;
    p.container_id = container_id_of_cgroup(*cgroup);
    p.cpu_quota = cpu_quota_of(root, cgroup_text, options.quotas);
  }
  std::string uids = key_value(*status, "Uid");  // real, effective, saved, filesystem
  if (auto uid = parse_uint(uids.substr(0, uids.find_first_of(" \t")))) p.uid = unsigned(*uid);
  if (auto stat = root.read(dir + "/stat")) p.start_time = sys::stat_start_time(*stat);
  if (p.start_time)
    if (auto record = sys::read_rebind_record(root, pid, *p.start_time, p.uid)) {
      p.rebound_cpus = record->cpus;
      p.rebound_record = record->file;
    }
  // A process that says it is a Slurm job's: which job the node says it is in (issue 52: a user
  // could join another's job by setting SLURM_JOB_ID).
  if (p.env.count("SLURM_JOB_ID")) {
    if (std::string job = slurm_job_of_cgroup(cgroup_text); !job.empty()) {
      p.slurm_job_seen = job;
      p.slurm_evidence = "its cgroup is job " + job + "'s";
    } else if (auto above = slurmstepd_job_above(root, p.ppid)) {
      p.slurm_job_seen = above->first;
      p.slurm_evidence = "slurmstepd [" + above->first + ".*] (PID " + std::to_string(above->second) + ") is above it";
    }
  }

  if (options.numa_maps) {
    if (auto maps = root.read(dir + "/numa_maps")) p.pages_per_node = sum_numa_maps(*maps);
    else p.notes.push_back("numa_maps not readable (" + maps.error().why + ")");
  }
  return p;
}

}  // namespace gpubind::probe

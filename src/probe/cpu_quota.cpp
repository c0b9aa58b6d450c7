#include "probe/cpu_quota.hpp"

#include "util/strings.hpp"

namespace gpubind::probe {

namespace {

// The mounted directory of the cgroup holding the process's cpu controller, and whether it is
// cgroup v1's; nullopt when no line names one.
struct CpuCgroup {
  std::string mount, path;  // "sys/fs/cgroup", "/kubepods.slice/..." ("" for the root)
  bool v1 = false;
};

std::optional<CpuCgroup> cpu_cgroup(const sys::FsRoot& root, std::string_view text) {
  std::optional<CpuCgroup> v2;
  for (std::string_view line : split(text, '\n')) {
    // "hierarchy-ID:controller-list:path"; the path may hold ':'.
    size_t a = line.find(':'), b = a == std::string_view::npos ? a : line.find(':', a + 1);
    if (b == std::string_view::npos) continue;
    std::string_view controllers = line.substr(a + 1, b - a - 1);
    std::string path(trim(line.substr(b + 1)));
    if (path == "/") path.clear();
    if (controllers.empty()) {
      for (const char* mount : {"sys/fs/cgroup", "sys/fs/cgroup/unified"})
        if (root.exists(std::string(mount) + "/cgroup.controllers")) {
          v2 = CpuCgroup{mount, path, false};
          break;
        }
      continue;
    }
    for (std::string_view c : split(controllers, ','))
      if (c == "cpu")
        for (std::string mount : {"sys/fs/cgroup/" + std::string(controllers), std::string("sys/fs/cgroup/cpu")})
          if (root.exists(mount + "/cpu.cfs_quota_us")) return CpuCgroup{mount, path, true};
  }
  return v2;
}

// The quota set on one directory, with its setting as the files say it.
std::optional<CpuQuota> quota_at(const sys::FsRoot& root, const std::string& dir, bool v1) {
  CpuQuota q;
  q.cgroup = root.path_of(dir);
  if (!v1) {
    auto max = root.read(dir + "/cpu.max");
    if (!max) return std::nullopt;
    auto cpus = parse_cpu_max(*max);
    if (!cpus) return std::nullopt;
    q.cpus = *cpus;
    q.setting = "cpu.max " + std::string(trim(*max));
    return q;
  }
  auto quota = root.read(dir + "/cpu.cfs_quota_us");
  auto period = root.read(dir + "/cpu.cfs_period_us");
  if (!quota || !period) return std::nullopt;
  auto us = parse_uint(trim(*quota));  // -1: none
  auto per = parse_uint(trim(*period));
  if (!us || !per || *per == 0) return std::nullopt;
  q.cpus = double(*us) / double(*per);
  q.setting = "cpu.cfs_quota_us " + std::to_string(*us) + " (period " + std::to_string(*per) + ")";
  return q;
}

// The smallest quota of the process's cgroup and those above it, up to the mount's root, with the
// directory that sets it.
std::optional<std::pair<std::string, CpuQuota>> find_limiter(const sys::FsRoot& root, const CpuCgroup& cg) {
  std::optional<std::pair<std::string, CpuQuota>> best;
  std::string path = cg.path;
  for (;;) {
    std::string dir = cg.mount + path;
    if (auto q = quota_at(root, dir, cg.v1); q && (!best || q->cpus < best->second.cpus)) best.emplace(dir, std::move(*q));
    if (path.empty()) break;
    size_t slash = path.rfind('/');
    path.resize(slash == std::string::npos ? 0 : slash);
  }
  return best;
}

}  // namespace

std::optional<double> parse_cpu_max(std::string_view text) {
  auto fields = split(trim(text), ' ');
  if (fields.empty() || fields.size() > 2 || fields[0] == "max") return std::nullopt;
  auto quota = parse_uint(fields[0]);
  auto period = fields.size() == 2 ? parse_uint(fields[1]) : std::optional<uint64_t>(100000);
  if (!quota || !period || *period == 0) return std::nullopt;
  return double(*quota) / double(*period);
}

bool parse_cpu_stat(std::string_view text, CpuQuota& q) {
  bool periods = false;
  for (std::string_view line : split(text, '\n')) {
    size_t sp = line.find(' ');
    if (sp == std::string_view::npos) continue;
    std::string_view key = line.substr(0, sp);
    auto v = parse_uint(trim(line.substr(sp + 1)));
    if (!v) continue;
    if (key == "nr_periods") {
      q.periods = *v;
      periods = true;
    } else if (key == "nr_throttled") {
      q.throttled_periods = *v;
    } else if (key == "throttled_usec") {
      q.throttled_ns = *v * 1000;
    } else if (key == "throttled_time") {
      q.throttled_ns = *v;
    }
  }
  return periods;
}

CpuQuotaMemo::Limiter* CpuQuotaMemo::find(const std::string& cgroup_text) {
  auto it = m_limiters.find(cgroup_text);
  if (it == m_limiters.end()) return nullptr;
  it->second.used = true;
  return &it->second;
}

void CpuQuotaMemo::sweep() {
  std::erase_if(m_limiters, [](const auto& e) { return !e.second.used; });
  for (auto& [text, l] : m_limiters) l.used = false;
}

std::optional<CpuQuota> cpu_quota_of(const sys::FsRoot& root, const std::string& cgroup_text, CpuQuotaMemo* memo) {
  CpuQuotaMemo::Limiter* known = memo ? memo->find(cgroup_text) : nullptr;
  CpuQuotaMemo::Limiter found;
  if (known && ++known->uses % CpuQuotaMemo::kRefreshEvery != 0) {
    found = *known;
  } else {
    if (std::optional<CpuCgroup> cg = cpu_cgroup(root, cgroup_text))
      if (auto limiter = find_limiter(root, *cg)) {
        found.dir = std::move(limiter->first);
        found.quota = std::move(limiter->second);
      }
    if (known) {
      known->dir = found.dir;
      known->quota = found.quota;
    } else if (memo) {
      memo->put(cgroup_text, found);
    }
  }
  if (!found.quota) return std::nullopt;
  auto stat = root.read(found.dir + "/cpu.stat");
  if (!stat || !parse_cpu_stat(*stat, *found.quota)) return std::nullopt;
  return found.quota;
}

}  // namespace gpubind::probe

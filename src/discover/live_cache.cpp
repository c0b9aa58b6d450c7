#include "discover/live_cache.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <nlohmann/json.hpp>

#include "discover/code_id.hpp"
#include "discover/hwloc_loader.hpp"
#include "discover/source.hpp"
#include "sys/cgroup_cpuset.hpp"
#include "sys/environment.hpp"
#include "sys/fsroot.hpp"
#include "sys/private_dir.hpp"
#include "topo/json.hpp"
#include "util/json_field.hpp"
#include "util/strings.hpp"
#include "util/version.hpp"

namespace gpubind::discover {

namespace {

std::string fnv1a(const std::string& s);

constexpr const char* kGpubindVersion = kVersion;
// A cache file is a machine's topology as JSON: a few MiB for the largest machines.
constexpr size_t kMaxCacheBytes = 64u << 20;

// The key's text, read under this system's root; its FNV-1a hash names the file, the text
// itself is checked on load. What the discovered topology depends on: the machine (boot, online
// CPUs and memory nodes) and the code. Not the caller's affinity (hwloc's allowed set ignores it:
// ranks a launcher pinned to different CPUs share one entry) nor its cgroup: the allowed set is
// the cgroup's cpuset, read afresh at each start and applied to the entry. Only where that cpuset
// cannot be read, or disagrees with hwloc's, is the cgroup part of the key (with_cgroup).
Result<std::string> cache_key(const sys::FsRoot& root) {
  auto boot = root.read("proc/sys/kernel/random/boot_id");
  if (!boot) return boot.error();
  auto online = root.read("sys/devices/system/cpu/online");
  auto nodes = root.read("sys/devices/system/node/online");
  std::string key = "gpubind " + std::string(kGpubindVersion) + " code " + kTopologyCodeId + "; hwloc " + hwloc_build_version() +
                    "; boot " + std::string(trim(*boot)) + "; online " + std::string(trim(online ? *online : std::string())) +
                    "; nodes " + std::string(trim(nodes ? *nodes : std::string()));
  return key;
}

std::string with_cgroup(const sys::FsRoot& root, const std::string& machine_key) {
  auto cgroup = root.read("proc/self/cgroup");
  return machine_key + "; cgroup " + std::string(trim(cgroup ? *cgroup : std::string("unknown")));
}

// A cache entry's topology when the file holds one under exactly this key; nullopt otherwise
// (absent, another key, or not of the expected shape: a miss, never an exception).
std::optional<topo::Topology> read_entry(const sys::PrivateDir& dir, const std::string& key, const std::function<void(const Error&)>& note) {
  auto text = dir.read("topology-" + fnv1a(key) + ".json", kMaxCacheBytes);
  if (!text) {
    if (text.error().kind != ErrorKind::not_found) note(text.error());
    return std::nullopt;
  }
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (json_field::get<std::string>(j, "cache_key") == key)
    if (const nlohmann::json* topology = json_field::member(j, "topology"))
      if (auto t = topo::from_json(*topology); t) return std::move(*t);
  return std::nullopt;
}

std::string fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace

#ifndef GPUBIND_HWLOC_VERSION
#error "GPUBIND_HWLOC_VERSION must be hwloc's version from pkg-config"
#endif
const char* hwloc_build_version() { return GPUBIND_HWLOC_VERSION; }

std::string default_cache_dir(const std::string& configured) {
  if (auto d = sys::env_value("GPUBIND_CACHE_DIR")) return *d == "off" ? "" : *d;
  if (!configured.empty()) return configured == "off" ? "" : configured;
  // Root (exec in a prolog, the SPANK plugin) never uses a path under the shared /tmp that
  // another user could create first: /run is root's own.
  if (sys::user_id() == "0") return "/run/gpubind";
  if (auto x = sys::env_value("XDG_RUNTIME_DIR"); x && !x->empty()) return *x + "/gpubind";
  return "/tmp/gpubind-" + sys::user_id();
}

Result<topo::Topology> load_for_binding(const std::string& source, const std::string& label, const std::string& cache_dir,
                                        size_t max_files, std::vector<std::string>* notes) {
  auto live = load_live_cached(cache_dir, max_files, notes);
  if (source.empty() || !live) return live;
  auto file = load_topology(source);
  if (!file) return file.error();
  std::vector<std::string> diff = topo::machine_differences(*live, *file);
  if (!diff.empty())
    return Error{label, "does not describe this machine (" + join(diff, "; ") + "); --dry-run previews a binding for another machine"};
  file->allowed_cpus = live->allowed_cpus & file->cpus;
  return file;
}

Result<topo::Topology> load_live_cached(const std::string& cache_dir, size_t max_files, std::vector<std::string>* notes) {
  if (cache_dir.empty()) return load_topology("");
  auto live = sys::open_fsroot("/");
  if (!live) return load_topology("");
  auto machine_key = cache_key(**live);
  if (!machine_key) return load_topology("");
  auto cgroup = sys::cgroup_allowed_cpus(**live);
  auto note = [&](const Error& e) {
    if (notes) notes->push_back("topology cache not used: " + e.message() + "; discovering the topology");
  };
  // The directory is checked (ours, not a link, writable by no one else) before anything in it
  // is read: a directory another user created first is refused, not trusted.
  auto dir = sys::PrivateDir::open(cache_dir, true);
  if (!dir) note(dir.error());
  // The machine's entry with this process's cgroup cpuset applied; else (the cpuset unreadable,
  // or it disagreed with hwloc when discovered) the entry of this cgroup.
  if (dir && cgroup)
    if (auto t = read_entry(*dir, *machine_key, note)) {
      t->allowed_cpus = cgroup->cpus & t->cpus;
      return std::move(*t);
    }
  const std::string cgroup_key = with_cgroup(**live, *machine_key);
  if (dir)
    if (auto t = read_entry(*dir, cgroup_key, note)) return std::move(*t);
  auto t = load_topology("");
  if (!t || !dir) return t;
  // The machine's entry only when the cgroup's cpuset, as read here, is hwloc's allowed set.
  const std::string& key = cgroup && (cgroup->cpus & t->cpus) == t->allowed_cpus ? *machine_key : cgroup_key;
  nlohmann::ordered_json j;
  j["cache_key"] = key;
  j["topology"] = topo::to_json(*t);
  // A cache that cannot be written is only slower: a warning says why. Old entries are pruned:
  // the newest max_files stay.
  const std::string name = "topology-" + fnv1a(key) + ".json";
  if (Status w = dir->write_atomic(name, j.dump()); !w) {
    if (notes) notes->push_back("topology cache not written: " + w.error().message() + "; the next start discovers again");
  } else {
    dir->prune("topology-", ".json", std::max<size_t>(1, max_files));
  }
  return t;
}

}  // namespace gpubind::discover

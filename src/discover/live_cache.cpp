#include "discover/live_cache.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "discover/code_id.hpp"
#include "discover/hwloc_loader.hpp"
#include "discover/source.hpp"
#include "sys/fsroot.hpp"
#include "sys/private_dir.hpp"
#include "topo/json.hpp"
#include "util/strings.hpp"
#include "util/version.hpp"
#include "sys/environment.hpp"

namespace gpubind::discover {

namespace {

constexpr const char* kGpubindVersion = kVersion;
// A cache file is a machine's topology as JSON: a few MiB for the largest machines.
constexpr size_t kMaxCacheBytes = 64u << 20;

// The key's text, read under this system's root; its FNV-1a hash names the file, the text
// itself is checked on load.
Result<std::string> cache_key(const sys::FsRoot& root) {
  auto boot = root.read("proc/sys/kernel/random/boot_id");
  auto status = root.read("proc/self/status");
  auto cgroup = root.read("proc/self/cgroup");
  auto online = root.read("sys/devices/system/cpu/online");
  if (!boot) return boot.error();
  if (!status) return status.error();
  // What the discovered topology depends on: the machine (boot, online CPUs), the code, and the
  // cgroup, whose cpuset is the topology's allowed set (processes in different cgroups must not
  // share an entry). Not the caller's own affinity: hwloc's allowed set ignores it, so ranks a
  // launcher pinned to different CPUs (srun --cpu-bind, mpirun --bind-to core) share one entry.
  return "gpubind " + std::string(kGpubindVersion) + " code " + kTopologyCodeId + "; hwloc " + hwloc_build_version() +
         "; boot " + std::string(trim(*boot)) + "; online " + std::string(trim(online ? *online : std::string())) + "; mems " +
         key_value(*status, "Mems_allowed_list") + "; cgroup " + std::string(trim(cgroup ? *cgroup : std::string()));
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
  auto key = cache_key(**live);
  if (!key) return load_topology("");
  auto note = [&](const Error& e) {
    if (notes) notes->push_back("topology cache not used: " + e.message() + "; discovering the topology");
  };
  // The directory is checked (ours, not a link, writable by no one else) before anything in it
  // is read: a directory another user created first is refused, not trusted.
  auto dir = sys::PrivateDir::open(cache_dir, true);
  if (!dir) note(dir.error());
  std::string name = "topology-" + fnv1a(*key) + ".json";
  if (dir) {
    if (auto text = dir->read(name, kMaxCacheBytes)) {
      nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
      // Anything not of the expected shape is a miss, never an exception.
      if (j.is_object() && j.contains("cache_key") && j["cache_key"].is_string() && j["cache_key"].get<std::string>() == *key &&
          j.contains("topology"))
        if (auto t = topo::from_json(j["topology"]); t) return t;
    } else if (text.error().kind != ErrorKind::not_found) {
      note(text.error());
    }
  }
  auto t = load_topology("");
  if (!t || !dir) return t;
  nlohmann::ordered_json j;
  j["cache_key"] = *key;
  j["topology"] = topo::to_json(*t);
  // A cache that cannot be written is only slower: a warning says why. Each cgroup has its own
  // key, so old entries are pruned: the newest max_files stay.
  if (Status w = dir->write_atomic(name, j.dump()); !w) {
    if (notes) notes->push_back("topology cache not written: " + w.error().message() + "; the next start discovers again");
  } else {
    dir->prune("topology-", ".json", std::max<size_t>(1, max_files));
  }
  return t;
}

}  // namespace gpubind::discover

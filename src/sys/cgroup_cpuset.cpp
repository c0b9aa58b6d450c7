#include "sys/cgroup_cpuset.hpp"

#include <optional>
#include <vector>

#include "util/strings.hpp"

namespace gpubind::sys {

namespace {

// mountinfo escapes space, tab, newline and backslash in paths as \ooo.
std::string unescape_octal(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' && s[i + 2] <= '7' &&
        s[i + 3] >= '0' && s[i + 3] <= '7') {
      out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

struct Mount {
  std::string root;         // the hierarchy's directory mounted there ("/" for the whole)
  std::string mount_point;  // absolute
};

// The cgroup's directory under the mount, relative to the FsRoot; nullopt when the cgroup lies
// outside the mounted subtree.
std::optional<std::string> cgroup_dir(const Mount& m, const std::string& path) {
  std::string rest = path;
  if (m.root != "/") {
    if (path != m.root && !path.starts_with(m.root + "/")) return std::nullopt;
    rest = path.substr(m.root.size());
  }
  std::string dir = m.mount_point + rest;
  while (dir.starts_with("/")) dir.erase(0, 1);
  while (dir.ends_with("/")) dir.pop_back();
  return dir;
}

Result<CgroupCpus> read_list(const FsRoot& root, const std::string& rel) {
  auto text = root.read(rel);
  if (!text) return text.error();
  auto cpus = CpuSet::parse_list(trim(*text));
  if (!cpus) return Error{root.path_of(rel), cpus.error().message()};
  return CgroupCpus{*cpus, root.path_of(rel)};
}

// The files of one cpuset list: CPUs or memory nodes.
struct ListFiles {
  const char* v1_effective;  // cgroup v1
  const char* v1;
  const char* v2_effective;  // cgroup v2
  const char* all;           // no cpuset hierarchy: every one online
};
constexpr ListFiles kCpus{"cpuset.effective_cpus", "cpuset.cpus", "cpuset.cpus.effective", "sys/devices/system/cpu/online"};
constexpr ListFiles kMems{"cpuset.effective_mems", "cpuset.mems", "cpuset.mems.effective", "sys/devices/system/node/online"};

Result<CgroupCpus> cgroup_list(const FsRoot& root, const std::string& pid, const ListFiles& files) {
  const std::string proc = "proc/" + pid + "/";
  auto cgroup = root.read(proc + "cgroup");
  if (!cgroup) return cgroup.error();
  auto mountinfo = root.read(proc + "mountinfo");
  if (!mountinfo) return mountinfo.error();
  // "ID:controllers:path": the v1 hierarchy holding cpuset, and the v2 one ("0::path").
  std::optional<std::string> v1_path, v2_path;
  for (std::string_view line : split(*cgroup, '\n')) {
    size_t a = line.find(':'), b = a == std::string_view::npos ? a : line.find(':', a + 1);
    if (b == std::string_view::npos) continue;
    std::string_view controllers = line.substr(a + 1, b - a - 1);
    std::string path(line.substr(b + 1));
    if (line.substr(0, a) == "0" && controllers.empty()) v2_path = path;
    for (std::string_view c : split(controllers, ','))
      if (c == "cpuset") v1_path = path;
  }
  std::optional<Mount> v1, v2;
  for (std::string_view line : split(*mountinfo, '\n')) {
    // "ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER_OPTIONS"
    size_t dash = line.find(" - ");
    if (dash == std::string_view::npos) continue;
    std::vector<std::string_view> pre = split(line.substr(0, dash), ' ');
    std::vector<std::string_view> post = split(line.substr(dash + 3), ' ');
    if (pre.size() < 5 || post.size() < 3) continue;
    Mount m{unescape_octal(pre[3]), unescape_octal(pre[4])};
    if (post[0] == "cgroup2" && !v2) v2 = m;
    if (post[0] == "cgroup" && !v1)
      for (std::string_view o : split(post[2], ','))
        if (o == "cpuset") v1 = m;
  }
  if (v1 && v1_path) {
    auto dir = cgroup_dir(*v1, *v1_path);
    if (!dir) return Error{root.path_of(proc + "cgroup"), "cpuset cgroup " + *v1_path + " is outside the mount at " + v1->mount_point, ErrorKind::not_found};
    auto effective = read_list(root, *dir + "/" + files.v1_effective);
    if (effective || effective.error().kind != ErrorKind::not_found) return effective;
    return read_list(root, *dir + "/" + files.v1);
  }
  if (v2 && v2_path) {
    auto dir = cgroup_dir(*v2, *v2_path);
    if (!dir) return Error{root.path_of(proc + "cgroup"), "cgroup " + *v2_path + " is outside the mount at " + v2->mount_point, ErrorKind::not_found};
    const std::string top = cgroup_dir(*v2, v2->root).value_or("");
    if (!root.exists(*dir)) return Error{root.path_of(*dir), "no such cgroup directory", ErrorKind::not_found};
    for (std::string d = *dir;;) {
      if (root.exists(d + "/" + files.v2_effective)) return read_list(root, d + "/" + files.v2_effective);
      if (d.size() <= top.size()) break;
      size_t slash = d.rfind('/');
      if (slash == std::string::npos) break;
      d.erase(slash);
    }
  }
  auto online = read_list(root, files.all);
  if (!online) return online.error();
  return CgroupCpus{online->cpus, ""};
}

}  // namespace

Result<CgroupCpus> cgroup_allowed_cpus(const FsRoot& root, const std::string& pid) { return cgroup_list(root, pid, kCpus); }

Result<CgroupCpus> cgroup_allowed_mems(const FsRoot& root, const std::string& pid) { return cgroup_list(root, pid, kMems); }

}  // namespace gpubind::sys

#include "sys/rebind_record.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sys/environment.hpp"
#include "sys/task_mover.hpp"
#include "util/strings.hpp"

namespace gpubind::sys {

namespace {

constexpr const char* kRootDir = "run/gpubind/rebound";  // under the root, as on the node
constexpr size_t kMaxRecordBytes = 4096;

std::string record_name(int pid, uint64_t start_time) { return std::to_string(pid) + "-" + std::to_string(start_time); }

// The record at `rel` when `owner` (or root) owns it.
std::optional<RebindRecord> read_owned(const FsRoot& root, const std::string& rel, unsigned owner) {
  auto fd = root.open_read(rel);
  if (!fd) return std::nullopt;
  struct stat st {};
  if (::fstat(fd->get(), &st) != 0 || (st.st_uid != 0 && st.st_uid != owner)) return std::nullopt;
  auto text = read_to_end(std::move(*fd), root.path_of(rel), kMaxRecordBytes);
  if (!text) return std::nullopt;
  RebindRecord r;
  r.file = root.path_of(rel);
  for (std::string_view line : split(*text, '\n')) {
    std::string_view value = line.substr(line.find('=') == std::string_view::npos ? line.size() : line.find('=') + 1);
    auto set = CpuSet::parse_list(value);
    if (line.starts_with("cpus=") && set) r.cpus = *set;
    if (line.starts_with("mems=") && set) r.mems = *set;
  }
  if (r.cpus.empty()) return std::nullopt;
  return r;
}

// This user's record directory: root's, else the runtime directory's; "" when there is none.
std::string own_dir() {
  if (::geteuid() == 0) return "/" + std::string(kRootDir);
  std::string runtime = env_value("XDG_RUNTIME_DIR").value_or("");
  if (runtime.empty()) runtime = "/run/user/" + std::to_string(::geteuid());
  if (path_kind(runtime) != PathKind::directory) return "";
  return runtime + "/gpubind/rebound";
}

Status make_dirs(const std::string& dir) {
  for (size_t at = 1; at != std::string::npos;) {
    at = dir.find('/', at + 1);
    std::string part = dir.substr(0, at);
    if (::mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) return errno_error(part, errno);
  }
  return Ok{};
}

}  // namespace

std::optional<RebindRecord> read_rebind_record(const FsRoot& root, int pid, uint64_t start_time, std::optional<unsigned> uid) {
  std::string name = record_name(pid, start_time);
  if (auto r = read_owned(root, std::string(kRootDir) + "/" + name, 0)) return r;
  if (!uid) return std::nullopt;
  return read_owned(root, "run/user/" + std::to_string(*uid) + "/gpubind/rebound/" + name, *uid);
}

Status write_rebind_record(int pid, uint64_t start_time, const CpuSet& cpus, const CpuSet& mems) {
  std::string dir = own_dir();
  if (dir.empty()) return Error{"the rebind record", "no directory to keep it in (no $XDG_RUNTIME_DIR or /run/user/" + std::to_string(::geteuid()) + ")"};
  if (Status s = make_dirs(dir); !s) return s;
  // Records of processes that no longer run (or whose PID went to another) are dropped.
  auto here = open_fsroot(dir);
  auto names = here ? (*here)->list(".") : Result<std::vector<std::string>>(here.error());
  if (names) {
    for (const std::string& n : *names) {
      size_t dash = n.find('-');
      auto p = parse_uint(n.substr(0, dash));
      auto st = dash == std::string::npos ? std::nullopt : parse_uint(n.substr(dash + 1));
      if (!p || !st) continue;
      if (process_start_time(int(*p)) != *st) (void)remove_file(dir + "/" + n);  // best effort: a stale record is only clutter
    }
  }
  return replace_file(dir + "/" + record_name(pid, start_time), "cpus=" + cpus.to_list() + "\nmems=" + mems.to_list() + "\n");
}

}  // namespace gpubind::sys

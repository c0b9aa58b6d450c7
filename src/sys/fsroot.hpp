#pragma once
// FsRoot: every read of /sys and /proc goes through one of these, so the same code runs on this
// machine ("/") and on a gathered tree (hwloc-gather-topology output, test fixtures). Paths
// given to it are relative to the root ("sys/bus/pci/devices"), never absolute.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sys/unique_fd.hpp"
#include "util/result.hpp"

namespace gpubind::sys {

// The most FsRoot::read and KeptOpenFiles::read take of one file. /proc and /sys files are a page
// or a few; the largest read whole is a process's numa_maps (about 250 bytes a mapping, so some
// 16 MiB at the kernel's default vm.max_map_count of 65530). A file past it, a sparse file of
// GiBs planted in a --root tree, is an Error naming it instead of memory exhausted.
inline constexpr size_t kMaxFsRootFileBytes = size_t(64) << 20;

class FsRoot {
 public:
  virtual ~FsRoot() = default;
  // The whole file; an Error names the path and errno's text, or says that the file is larger
  // than kMaxFsRootFileBytes.
  virtual Result<std::string> read(const std::string& rel) const = 0;
  // Entry names of a directory, sorted, without "." and "..".
  virtual Result<std::vector<std::string>> list(const std::string& rel) const = 0;
  // Where a symlink points (readlink), relative or absolute as stored.
  virtual Result<std::string> read_link(const std::string& rel) const = 0;
  virtual bool exists(const std::string& rel) const = 0;
  // 0 when this process may open the file for reading and writing, else the errno: ENOENT,
  // EACCES (file permissions) or EPERM (a device cgroup or security module refuses the device).
  virtual int access_rw(const std::string& rel) const = 0;
  // Human-readable location for messages, e.g. "/" or "/tmp/node1".
  virtual std::string describe() const = 0;
  // `rel` as a path a user reads in a message: "/proc/1/status", "/tmp/node1/proc/1/status".
  std::string path_of(const std::string& rel) const {
    std::string root = describe();
    return root == "/" ? "/" + rel : root + "/" + rel;
  }
  // True only for the live root "/": binding against any other root must be refused.
  virtual bool is_this_system() const = 0;
  // The file opened for reading (close-on-exec), for a caller that keeps it open and reads it
  // again (KeptOpenFiles).
  virtual Result<UniqueFd> open_read(const std::string& rel) const = 0;
};

// Files read again and again — watch's per-thread /proc files at every sample — kept open and
// read with pread from offset 0, which makes /proc regenerate them: one syscall per read instead
// of open, read, read and close. A file whose read fails (its task ended: ESRCH) is opened afresh
// once. At most `max_open` files are kept; sweep() closes those not read since the last sweep.
class KeptOpenFiles {
 public:
  KeptOpenFiles(const FsRoot& root, size_t max_open) : m_root(root), m_max(max_open) {}
  KeptOpenFiles(const KeptOpenFiles&) = delete;
  KeptOpenFiles& operator=(const KeptOpenFiles&) = delete;
  // `opened` (when given) says whether the content came from a file opened by this call (first
  // read, reopened because its task ended, or read without keeping it) rather than a kept one.
  Result<std::string> read(const std::string& rel, bool* opened = nullptr);
  // Keeps the file open through the next sweep without reading it, opening it when it is not
  // (a later read of it then tells whether its task ended meanwhile).
  void keep(const std::string& rel);
  void sweep();
  size_t open_count() const { return m_files.size(); }

 private:
  struct Kept {
    UniqueFd fd;
    bool used = true;
  };
  const FsRoot& m_root;
  size_t m_max;
  std::unordered_map<std::string, Kept> m_files;
};

// Raises this process's soft limit on open files to its hard limit; returns the soft limit now.
size_t raise_open_file_limit();

// Opens a directory as an FsRoot; reads then use openat() relative to it.
Result<std::unique_ptr<FsRoot>> open_fsroot(const std::string& dir);

// An Error for errno `e` on `what`: errno's text, and the kind (ENOENT and ESRCH are not_found,
// EACCES and EPERM permission).
Error errno_error(const std::string& what, int e);

// --- plain file-system helpers for loaders (not under a root) ---
enum class PathKind { missing, file, directory, other };
PathKind path_kind(const std::string& path);
// The whole file; an Error when it is larger than `max_bytes`, or not a regular file (a FIFO is
// refused without blocking; FsRoot::read and open_read refuse the same).
Result<std::string> read_file(const std::string& path, size_t max_bytes = SIZE_MAX);
// `fd` when it is a regular file; otherwise it is closed and the Error says what it is.
Result<UniqueFd> regular_only(UniqueFd fd, const std::string& what);
// Reads `fd` to its end, then closes it. An Error naming `what` when a read fails or the content
// grows past `max_bytes`.
Result<std::string> read_to_end(UniqueFd fd, const std::string& what, size_t max_bytes = SIZE_MAX);
// This process's standard input to its end (a pipe: `kubectl logs POD | gpubind check --nccl-log -`),
// read through a duplicate so that descriptor 0 stays open.
Result<std::string> read_standard_input(size_t max_bytes = SIZE_MAX);
// Writes all of `data` to `fd`, through short writes and EINTR; an Error with errno's text.
// `fault_point` names its libfiu point (docs/FAULTS.md).
Status write_fully(int fd, std::string_view data, const char* fault_point = "gpubind/write");
// Replaces the file at `path` with `data` atomically: a reader sees the old content or the new,
// never half of it (a temporary file beside it, created exclusively under an unpredictable name,
// then renamed over it). Mode 0644. Refuses a `path` that exists and is not a regular file, and a
// directory every user may write that is not sticky.
Status replace_file(const std::string& path, std::string_view data);
// Removes the regular file at `path`; one that is not there is no error, anything but a regular
// file (a directory, a FIFO, a device) is refused and left alone.
Status remove_file(const std::string& path);
std::string hostname();
// `path` from the current directory when relative ("etc/x.conf" -> "/home/u/etc/x.conf"), as is when absolute.
std::string absolute_path(const std::string& path);
// Whether standard output is a terminal (a person watching, not a pipe or a file).
bool stdout_is_terminal();
// This process's effective user id, as text.
std::string user_id();

}  // namespace gpubind::sys

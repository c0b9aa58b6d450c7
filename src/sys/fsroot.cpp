#include "sys/fsroot.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "sys/fault.hpp"
#include "util/sweep.hpp"

namespace gpubind::sys {

namespace {

// EXDEV is what FsRoot says of a path outside its root.
std::string errno_text(int e) { return e == EXDEV ? "a path outside the root" : std::strerror(e); }

// Paths given to an FsRoot stay under it: not absolute, no ".." component.
bool inside(const std::string& rel) {
  if (rel.empty() || rel.front() == '/') return false;
  for (size_t i = 0; i <= rel.size();) {
    size_t j = rel.find('/', i);
    if (j == std::string::npos) j = rel.size();
    if (rel.compare(i, j - i, "..") == 0) return false;
    i = j + 1;
  }
  return true;
}

class DirFsRoot final : public FsRoot {
 public:
  DirFsRoot(UniqueFd fd, std::string path) : m_fd(std::move(fd)), m_path(std::move(path)), m_confine(m_path != "/") {}
  DirFsRoot(const DirFsRoot&) = delete;
  DirFsRoot& operator=(const DirFsRoot&) = delete;

  Result<std::string> read(const std::string& rel) const override {
    auto fd = open_read(rel);
    if (!fd) return fd.error();
    return read_to_end(std::move(*fd), path_of(rel), kMaxFsRootFileBytes);
  }

  Result<UniqueFd> open_read(const std::string& rel) const override {
    UniqueFd fd(faultable_path("gpubind/open", path_of(rel), [&] { return open_in(rel, O_RDONLY | O_NONBLOCK); }));
    if (!fd) return errno_error(path_of(rel), errno);
    return regular_only(std::move(fd), path_of(rel));
  }

  Result<std::vector<std::string>> list(const std::string& rel) const override {
    UniqueFd fd(faultable_path("gpubind/open", path_of(rel), [&] { return open_in(rel, O_RDONLY | O_DIRECTORY); }));
    if (!fd) return errno_error(path_of(rel), errno);
    DIR* d = ::fdopendir(fd.get());
    if (!d) return errno_error(path_of(rel), errno);
    fd.release();  // the DIR's now: closedir closes it
    std::vector<std::string> names;
    while (dirent* ent = ::readdir(d)) {
      if (std::strcmp(ent->d_name, ".") == 0 || std::strcmp(ent->d_name, "..") == 0) continue;
      names.emplace_back(ent->d_name);
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    return names;
  }

  Result<std::string> read_link(const std::string& rel) const override {
    // The link itself is read, not followed; its directory is reached inside the root.
    size_t slash = rel.rfind('/');
    UniqueFd dir(slash == std::string::npos ? ::dup(m_fd.get()) : open_in(rel.substr(0, slash), O_PATH | O_DIRECTORY));
    if (!dir || !inside(rel)) return errno_error(path_of(rel), !dir ? errno : EXDEV);
    std::string name = slash == std::string::npos ? rel : rel.substr(slash + 1);
    char buf[4096];
    ssize_t n = faultable_path("gpubind/readlink", path_of(rel), [&] { return ::readlinkat(dir.get(), name.c_str(), buf, sizeof buf - 1); });
    if (n < 0) return errno_error(path_of(rel), errno);
    return std::string(buf, size_t(n));
  }

  bool exists(const std::string& rel) const override {
    return bool(UniqueFd(open_in(rel, O_PATH)));
  }

  int access_rw(const std::string& rel) const override {
    if (!inside(rel)) return EXDEV;
    // faccessat runs the same checks as open, the device cgroup's included, without opening:
    // opening a GPU's device file could start its driver. Under a fixture the answer is the
    // fixture's files' modes: only the live root's answer says what this process may open.
    return ::faccessat(m_fd.get(), rel.c_str(), R_OK | W_OK, 0) == 0 ? 0 : errno;
  }

  std::string describe() const override { return m_path; }
  bool is_this_system() const override { return m_path == "/"; }

 private:

  // openat under the root. A gathered tree's own symlinks may be absolute ("/proc/1") or climb
  // ("../../.."): under any root but "/" they resolve inside it (openat2 RESOLVE_IN_ROOT), so a
  // fixture never reads the host. EXDEV (as openat2 says) for a path that names the outside.
  int open_in(const std::string& rel, int flags) const {
    if (!inside(rel)) {
      errno = EXDEV;
      return -1;
    }
    if (m_confine) {
      open_how how{};
      how.flags = uint64_t(flags | O_CLOEXEC);
      how.resolve = RESOLVE_IN_ROOT;
      long fd = ::syscall(SYS_openat2, m_fd.get(), rel.c_str(), &how, sizeof how);
      if (fd >= 0 || errno != ENOSYS) return int(fd);  // ENOSYS: a kernel before 5.6
    }
    return ::openat(m_fd.get(), rel.c_str(), flags | O_CLOEXEC);
  }

  UniqueFd m_fd;
  std::string m_path;
  bool m_confine;
};

}  // namespace

Error errno_error(const std::string& what, int e) {
  ErrorKind kind = e == ENOENT || e == ESRCH ? ErrorKind::not_found : e == EACCES || e == EPERM ? ErrorKind::permission : ErrorKind::failed;
  return Error{what, errno_text(e), kind};
}

Result<std::unique_ptr<FsRoot>> open_fsroot(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return errno_error(dir, errno);
  std::string path = dir;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return std::unique_ptr<FsRoot>(new DirFsRoot(std::move(fd), path));
}

namespace {

// A file past the most a reader takes: "larger than 64 MiB" (whole MiBs), else in bytes.
Error too_large(const std::string& what, size_t max_bytes) {
  size_t mib = size_t(1) << 20;
  std::string size = max_bytes >= mib && max_bytes % mib == 0 ? std::to_string(max_bytes / mib) + " MiB" : std::to_string(max_bytes) + " bytes";
  return Error{what, "larger than " + size + " (gpubind reads no more of one file)"};
}

}  // namespace

Result<std::string> read_to_end(UniqueFd fd, const std::string& what, size_t max_bytes) {
  std::string out;
  char buf[16384];
  for (;;) {
    ssize_t n = faultable_path("gpubind/read", what, [&] { return ::read(fd.get(), buf, sizeof buf); });
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno_error(what, errno);
    if (n == 0) return out;
    out.append(buf, size_t(n));
    if (out.size() > max_bytes) return too_large(what, max_bytes);
  }
}

Result<std::string> read_standard_input(size_t max_bytes) {
  int fd = ::fcntl(0, F_DUPFD_CLOEXEC, 3);
  if (fd < 0) return errno_error("standard input", errno);
  return read_to_end(UniqueFd(fd), "standard input", max_bytes);
}

namespace {

// The whole file from offset 0, leaving it open. A read shorter than the buffer is the end: /proc
// generates these files whole on the first read (and a regular file's short read is its end), so
// the usual second read that returns 0 is saved — half the syscalls of a sample.
Result<std::string> pread_all(int fd, const std::string& what) {
  std::string out;
  char buf[16384];
  for (off_t at = 0;;) {
    ssize_t n = faultable_path("gpubind/read", what, [&] { return ::pread(fd, buf, sizeof buf, at); });
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno_error(what, errno);
    out.append(buf, size_t(n));
    if (out.size() > kMaxFsRootFileBytes) return too_large(what, kMaxFsRootFileBytes);
    if (size_t(n) < sizeof buf) return out;
    at += n;
  }
}

}  // namespace

Result<std::string> KeptOpenFiles::read(const std::string& rel, bool* opened) {
  if (opened) *opened = false;
  if (auto it = m_files.find(rel); it != m_files.end()) {
    it->second.used = true;
    if (auto text = pread_all(it->second.fd.get(), m_root.path_of(rel))) return text;
    m_files.erase(it);  // the task behind it ended, or the file went away: open afresh
  }
  if (opened) *opened = true;
  if (m_files.size() >= m_max) return m_root.read(rel);
  auto fd = m_root.open_read(rel);
  if (!fd) return fd.error();
  auto text = pread_all(fd->get(), m_root.path_of(rel));
  if (!text) return text.error();
  m_files.emplace(rel, Kept{std::move(*fd), true});
  return text;
}

void KeptOpenFiles::keep(const std::string& rel) {
  if (auto it = m_files.find(rel); it != m_files.end()) {
    it->second.used = true;
    return;
  }
  if (m_files.size() >= m_max) return;
  if (auto fd = m_root.open_read(rel)) m_files.emplace(rel, Kept{std::move(*fd), true});
}

void KeptOpenFiles::sweep() {
  sweep_unused(m_files, [](const Kept&) {});  // erased, each closes
}

size_t raise_open_file_limit() {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0) return 1024;
  if (r.rlim_cur < r.rlim_max) {
    rlimit want = r;
    want.rlim_cur = r.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &want) == 0) r = want;
  }
  return r.rlim_cur == RLIM_INFINITY ? size_t(1) << 20 : size_t(r.rlim_cur);
}

bool stdout_is_terminal() { return ::isatty(STDOUT_FILENO) == 1; }

Status remove_file(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Ok{};
    return Error{path, std::strerror(errno), errno == EACCES || errno == EPERM ? ErrorKind::permission : ErrorKind::failed};
  }
  if (!S_ISREG(st.st_mode)) return Error{path, "not a regular file: left alone"};
  if (::unlink(path.c_str()) != 0 && errno != ENOENT)
    return Error{path, std::strerror(errno), errno == EACCES || errno == EPERM ? ErrorKind::permission : ErrorKind::failed};
  return Ok{};
}

Status replace_file(const std::string& path, std::string_view data) {
  // What would be replaced: nothing, or a regular file. A device node (--textfile /dev/full as
  // root), a FIFO, a directory or a symlink is left alone.
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    return Error{path, "exists and is not a regular file: refusing to replace it", ErrorKind::unsupported};
  // Where: a directory other users may write without the sticky bit lets them swap the file
  // between our write and a reader's.
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  if (::stat(dir.c_str(), &st) != 0) return errno_error(path, errno);
  if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX))
    return Error{path, "its directory " + dir + " is writable by every user and not sticky: another user could replace the file",
                 ErrorKind::permission};
  // The temporary name is unpredictable and created exclusively (mkostemp: O_CREAT|O_EXCL), so no
  // other user can have made it first.
  std::string tmp = path + ".tmp.XXXXXX";
  UniqueFd fd(::mkostemp(tmp.data(), O_CLOEXEC));
  // Errors name the file the caller asked for, not the temporary one.
  if (!fd) return errno_error(path, errno);
  Status s = ::fchmod(fd.get(), 0644) == 0 ? write_fully(fd.get(), data) : errno_error(path, errno);
  if (fd.close() != 0 && s) s = errno_error(path, errno);
  if (s && ::rename(tmp.c_str(), path.c_str()) != 0) s = errno_error(path, errno);
  if (!s) ::unlink(tmp.c_str());
  return s;
}

Status write_fully(int fd, std::string_view data, const char* fault_point) {
  while (!data.empty()) {
    ssize_t n = faultable(fault_point, [&] { return ::write(fd, data.data(), data.size()); });
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno_error("write", errno);
    if (n == 0) return Error{"write", "no progress"};
    data.remove_prefix(size_t(n));
  }
  return Ok{};
}

PathKind path_kind(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return PathKind::missing;
  if (S_ISDIR(st.st_mode)) return PathKind::directory;
  if (S_ISREG(st.st_mode)) return PathKind::file;
  return PathKind::other;
}

Result<std::string> read_file(const std::string& path, size_t max_bytes) {
  UniqueFd fd(faultable_path("gpubind/open", path, [&] { return ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC); }));
  if (!fd) return errno_error(path, errno);
  auto regular = regular_only(std::move(fd), path);
  if (!regular) return regular.error();
  return read_to_end(std::move(*regular), path, max_bytes);
}

Result<UniqueFd> regular_only(UniqueFd fd, const std::string& what) {
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0) return errno_error(what, errno);
  if (!S_ISREG(st.st_mode)) {
    return Error{what, S_ISFIFO(st.st_mode)  ? "a FIFO, not a regular file (it would block the read)"
                       : S_ISDIR(st.st_mode) ? "a directory, not a file"
                       : S_ISSOCK(st.st_mode) ? "a socket, not a regular file"
                                              : "a device, not a regular file"};
  }
  // Opened non-blocking so that a FIFO could not hold the open; a regular file's reads ignore the
  // flag (open(2)), so it stays: two system calls fewer per file read.
  return fd;
}

std::string user_id() { return std::to_string(::geteuid()); }

std::string hostname() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
}

std::string absolute_path(const std::string& path) {
  if (path.empty() || path.front() == '/') return path;
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(path, ec);
  return ec ? path : p.lexically_normal().string();
}

}  // namespace gpubind::sys

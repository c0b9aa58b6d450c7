#include "sys/archive.hpp"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "sys/fsroot.hpp"
#include "sys/process.hpp"

namespace gpubind::sys {

TempDir::TempDir(std::string path, bool guarded) : m_path(std::move(path)) {
  if (!guarded) return;
  auto cleaner = start_watcher("gpubind-tmpclean", [dir = m_path](int fd) {
    char c;
    while (::read(fd, &c, 1) < 0 && errno == EINTR) {
    }
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  });
  if (!cleaner) return;  // unguarded: removed by this process only
  m_cleaner_pid = cleaner->first;
  m_cleaner_fd = cleaner->second;
}

TempDir::TempDir(TempDir&& o) noexcept : m_path(std::move(o.m_path)), m_cleaner_fd(o.m_cleaner_fd), m_cleaner_pid(o.m_cleaner_pid) {
  o.m_path.clear();
  o.m_cleaner_fd = -1;
  o.m_cleaner_pid = -1;
}

TempDir::~TempDir() {
  if (!m_path.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(m_path, ec);
  }
  if (m_cleaner_fd >= 0) ::close(m_cleaner_fd);
  if (m_cleaner_pid > 0)
    while (::waitpid(m_cleaner_pid, nullptr, 0) < 0 && errno == EINTR) {
    }
}

TempDir& TempDir::operator=(TempDir&& o) noexcept {
  if (this != &o) {
    TempDir old(std::move(*this));
    m_path = std::move(o.m_path);
    m_cleaner_fd = o.m_cleaner_fd;
    m_cleaner_pid = o.m_cleaner_pid;
    o.m_path.clear();
    o.m_cleaner_fd = -1;
    o.m_cleaner_pid = -1;
  }
  return *this;
}

Result<TempDir> extract_archive(const std::string& archive) {
  std::error_code ec;
  std::filesystem::path tmp = std::filesystem::temp_directory_path(ec);  // $TMPDIR, else /tmp
  if (ec) {
    const char* env = std::getenv("TMPDIR");
    return Error{"temporary directory" + (env ? " TMPDIR=" + std::string(env) : std::string()), ec.message()};
  }
  // tar would wait for ever on a FIFO named as the archive, and read a device.
  if (PathKind k = path_kind(archive); k != PathKind::file && k != PathKind::missing) return Error{archive, "not a regular file"};
  std::string tmpl = (tmp / "gpubind-topo.XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) return Error{"temporary directory", std::strerror(errno)};
  TempDir dir(tmpl, true);

  std::string local = archive.starts_with("/") ? archive : "./" + archive;
  // tar's own diagnostics go to a pipe so a broken archive gives one gpubind line, not tar noise.
  int err_pipe[2];
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) return Error{"pipe", std::strerror(errno)};
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) return Error{"fork", std::strerror(errno)};
  if (pid == 0) {
    // tar ends with gpubind (killed while tar reads a slow or endless file).
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    ::dup2(err_pipe[1], STDERR_FILENO);
    int devnull = ::open("/dev/null", O_WRONLY);
    if (devnull >= 0) ::dup2(devnull, STDOUT_FILENO);
    // A name is a local file, never a remote archive (GNU tar reads HOST:FILE as one and runs a
    // remote shell to HOST), never "-" (stdin), never an option; and no TAR_OPTIONS from the
    // environment adds any (--to-command, --checkpoint-action).
    ::unsetenv("TAR_OPTIONS");
    const char* argv[] = {"tar", "--force-local", "--extract", "--no-same-owner", "--no-same-permissions",
                          "--directory", dir.path().c_str(), "--file", local.c_str(), nullptr};
    ::execvp("tar", const_cast<char* const*>(argv));
    ::_exit(127);
  }
  ::close(err_pipe[1]);
  std::string err;
  char buf[512];
  ssize_t n;
  while ((n = ::read(err_pipe[0], buf, sizeof buf)) > 0) err.append(buf, size_t(n));
  ::close(err_pipe[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127) return Error{archive, "cannot run tar to unpack it"};
    while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
    if (auto nl = err.find('\n'); nl != std::string::npos) err = err.substr(0, nl);
    return Error{archive, "not a readable archive" + (err.empty() ? std::string() : " (" + err + ")")};
  }
  if (Status s = refuse_special_files(dir.path()); !s) return Error{archive, "holds " + s.error().why};
  return dir;
}

Status refuse_special_files(const std::string& tree) {
  namespace fs = std::filesystem;
  std::error_code ec;
  size_t seen = 0;
  for (fs::recursive_directory_iterator it(tree, fs::directory_options::none, ec), end; !ec && it != end; it.increment(ec)) {
    if (++seen > kMaxTreeEntries) return Error{tree, "more than " + std::to_string(kMaxTreeEntries) + " entries"};
    fs::file_type t = it->symlink_status(ec).type();
    if (t == fs::file_type::regular || t == fs::file_type::directory || t == fs::file_type::symlink) continue;
    std::string what = t == fs::file_type::fifo ? "a FIFO" : t == fs::file_type::socket ? "a socket" : "a device file";
    return Error{tree, what + " (" + fs::relative(it->path(), tree, ec).string() + "), which would block or mislead hwloc's reads"};
  }
  if (ec) return Error{tree, ec.message()};
  return Ok{};
}

}  // namespace gpubind::sys

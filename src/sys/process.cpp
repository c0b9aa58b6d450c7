#include "sys/process.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "sys/fault.hpp"
#include "sys/fork.hpp"
#include "sys/fsroot.hpp"
#include "sys/unique_fd.hpp"
#include "util/strings.hpp"

namespace gpubind::sys {

void close_fd(int fd) {
  if (fd >= 0) ::close(fd);
}

int current_pid() { return int(::getpid()); }

Result<unsigned> free_tcp_port() {
  UniqueFd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s) return Error{"socket", std::strerror(errno)};
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (::bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::getsockname(s.get(), reinterpret_cast<sockaddr*>(&a), &len) != 0)
    return Error{"finding a free port", std::strerror(errno)};
  return unsigned(ntohs(a.sin_port));
}

Result<bool> tcp_reachable(const std::string& host, unsigned port, int timeout_ms) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  std::string service = std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &res); rc != 0)
    return Error{"host '" + host + "'", ::gai_strerror(rc)};
  bool ok = false;
  for (addrinfo* ai = res; ai && !ok; ai = ai->ai_next) {
    UniqueFd s(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol));
    if (!s) continue;
    if (::connect(s.get(), ai->ai_addr, ai->ai_addrlen) == 0) {
      ok = true;
    } else if (errno == EINPROGRESS) {
      pollfd p{s.get(), POLLOUT, 0};
      int err = 0;
      socklen_t len = sizeof err;
      if (::poll(&p, 1, timeout_ms) == 1 && ::getsockopt(s.get(), SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) ok = true;
    }
  }
  ::freeaddrinfo(res);
  return ok;
}

Result<int> create_log_file(const std::string& base, const std::string& relative) {
  std::vector<std::string> names;
  for (std::string_view n : split(relative, '/')) names.emplace_back(n);
  if (names.empty() || std::any_of(names.begin(), names.end(), [](const std::string& n) { return n.empty() || n == "." || n == ".."; }))
    return Error{base + "/" + relative, "not a plain path below the directory"};
  // The directory the user named, created when missing (as torchrun does), links in it followed.
  for (size_t slash = base.find('/', 1);; slash = base.find('/', slash + 1)) {
    std::string prefix = base.substr(0, slash);
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) return Error{prefix, std::strerror(errno)};
    if (slash == std::string::npos) break;
  }
  UniqueFd dir(::open(base.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir) return Error{base, std::strerror(errno)};
  std::string so_far = base;
  for (size_t i = 0; i + 1 < names.size(); ++i) {
    so_far += "/" + names[i];
    if (::mkdirat(dir.get(), names[i].c_str(), 0755) != 0 && errno != EEXIST) return Error{so_far, std::strerror(errno)};
    int next = ::openat(dir.get(), names[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int e = errno;
    dir.reset(next);
    if (!dir) return Error{so_far, e == ELOOP || e == ENOTDIR ? "not a directory (a symbolic link is not followed here)" : std::strerror(e)};
  }
  so_far += "/" + names.back();
  // O_NONBLOCK: opening a FIFO for writing would wait for a reader.
  int fd = ::openat(dir.get(), names.back().c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  int e = errno;
  if (fd < 0) return Error{so_far, e == ELOOP ? "a symbolic link (not followed)" : e == ENXIO ? "a FIFO (not a regular file)" : std::strerror(e)};
  auto regular = regular_only(UniqueFd(fd), so_far);  // a FIFO with a reader opens: refused here
  if (!regular) return regular.error();
  if (::ftruncate(regular->get(), 0) != 0) return Error{so_far, std::strerror(errno)};
  return regular->release();
}

Status write_all(int fd, std::string_view data) { return write_fully(fd, data); }

namespace {

struct Drained {
  std::string out;
  bool late = false;       // the deadline passed: the child was killed
  bool truncated = false;  // it wrote more than `cap`
};

// What child `pid` writes on `fd`, until it closes its end or `deadline` passes (a library
// blocked on a file, a command that hangs): then it is killed. A read error leaves what was
// read; the caller judges the content.
Drained read_child(int fd, pid_t pid, std::chrono::seconds deadline, size_t cap) {
  Drained d;
  auto until = std::chrono::steady_clock::now() + deadline;
  for (char buf[16384];;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now()).count();
    pollfd p{fd, POLLIN, 0};
    int r = left > 0 ? ::poll(&p, 1, int(std::min<long long>(left, 1000000))) : 0;
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) {
      d.late = true;
      ::kill(pid, SIGKILL);
      break;
    }
    ssize_t n = r > 0 ? faultable("gpubind/read", [&] { return ::read(fd, buf, sizeof buf); }) : -1;
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    size_t room = cap - std::min(cap, d.out.size());
    d.truncated = d.truncated || size_t(n) > room;
    d.out.append(buf, std::min(size_t(n), room));
  }
  return d;
}

// At most `max` bytes of what was written to memory file `fd`, from its start.
std::string memfd_text(int fd, size_t max) {
  std::string out;
  char buf[16384];
  while (out.size() < max) {
    ssize_t n = ::pread(fd, buf, std::min(sizeof buf, max - out.size()), off_t(out.size()));
    if (n <= 0) break;
    out.append(buf, size_t(n));
  }
  return out;
}

}  // namespace

Result<std::string> run_isolated(const std::function<std::string()>& work, const std::vector<EnvChange>& env,
                                 std::chrono::seconds deadline) {
  // What the library prints on its own (hwloc's assertion text, its warnings) goes here, not to
  // this process's stderr beside gpubind's own line; a crash's error quotes its first line.
  UniqueFd chatter(::memfd_create("gpubind-child-stderr", MFD_CLOEXEC));
  auto child = fork_with_pipe();
  if (!child) return child.error();
  if (child->pid == 0) {
    child->read_end.reset();
    if (chatter) ::dup2(chatter.get(), STDERR_FILENO);
    // Die of a crash, quietly: no handler inherited from the parent (a sanitizer's, a fuzzer's)
    // may report it as the parent's.
    for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL, SIGTRAP}) ::signal(sig, SIG_DFL);
    for (const auto& [name, value] : env) {
      if (value) ::setenv(name.c_str(), value->c_str(), 1);
      else ::unsetenv(name.c_str());
    }
    std::string out = work();
    static_cast<void>(write_fully(child->write_end.get(), out, "gpubind/pipe-write"));
    ::_exit(0);
  }
  child->write_end.reset();
  Drained d = read_child(child->read_end.get(), child->pid, deadline, SIZE_MAX);
  int status = wait_child(child->pid);
  std::string said;  // the first line the child printed on stderr
  if (chatter) {
    std::string text = memfd_text(chatter.get(), 512);
    said = std::string(trim(std::string_view(text).substr(0, text.find('\n'))));
  }
  std::string quoted = said.empty() ? "" : "; it said: " + one_line(said);
  if (d.late) return Error{"child", "did not finish within " + std::to_string(deadline.count()) + " s, and was stopped"};
  if (WIFSIGNALED(status))
    return Error{"child", std::string("crashed (") + (sigabbrev_np(WTERMSIG(status)) ? "SIG" + std::string(sigabbrev_np(WTERMSIG(status)))
                                                                                    : "signal " + std::to_string(WTERMSIG(status))) + quoted + ")"};
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return Error{"child", "exited with status " + std::to_string(WEXITSTATUS(status)) + (said.empty() ? "" : " (it said: " + one_line(said) + ")")};
  return std::move(d.out);
}

Result<CommandResult> run_command(const std::vector<std::string>& argv, std::chrono::seconds deadline, const CommandOptions& options) {
  if (argv.empty()) return Error{"run_command", "no program named"};
  const std::string& what = argv[0];
  // Its standard error goes to a memory file, read when it ended: one pipe to wait on.
  UniqueFd err(::memfd_create("gpubind-command-stderr", MFD_CLOEXEC));
  if (!err) return Error{what, std::string("memfd_create: ") + std::strerror(errno)};
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  auto child = fork_with_pipe();
  if (!child) return Error{what, child.error().message()};
  if (child->pid == 0) {
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    ::dup2(child->write_end.get(), STDOUT_FILENO);
    ::dup2(err.get(), STDERR_FILENO);
    for (const std::string& name : options.unset_env) ::unsetenv(name.c_str());
    for (const auto& [name, value] : options.set_env) ::setenv(name.c_str(), value.c_str(), 1);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  child->write_end.reset();
  Drained d = read_child(child->read_end.get(), child->pid, deadline, kMaxCommandOutput);
  int status = wait_child(child->pid);
  CommandResult r;
  r.out = std::move(d.out);
  r.err = memfd_text(err.get(), kMaxCommandOutput);
  r.truncated = d.truncated || r.err.size() >= kMaxCommandOutput;
  if (d.late && options.late_is_error) return Error{what, "did not finish within " + std::to_string(deadline.count()) + " s: killed"};
  r.late = d.late;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (r.exit_code == 127 && r.out.empty() && r.err.empty()) return Error{what, "cannot be run (not found in PATH, or not executable)"};
  return r;
}

}  // namespace gpubind::sys

#include "sys/fork.hpp"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "sys/fault.hpp"

namespace gpubind::sys {

Result<pid_t> fork_child(const ForkOptions& options) {
  pid_t parent = ::getpid();
  std::fflush(nullptr);
  pid_t pid = options.fault_name.empty() ? faultable(options.fault_point, [] { return ::fork(); })
                                         : faultable_path(options.fault_point, options.fault_name, [] { return ::fork(); });
  if (pid < 0) return Error{"fork", std::strerror(errno)};
  if (options.own_group) {
    if (pid == 0) ::setpgid(0, 0);
    else ::setpgid(pid, pid);
  }
  if (pid == 0 && options.dies_with_parent) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    // This process ended between fork and the line above: nothing will kill the child for it.
    if (::getppid() != parent) ::_exit(kExitParentGone);
  }
  return pid;
}

int wait_child(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

Result<PipedChild> fork_with_pipe(const ForkOptions& options) {
  std::array<int, 2> fds{-1, -1};
  if (faultable("gpubind/pipe", [&] { return ::pipe2(fds.data(), O_CLOEXEC); }) != 0) return Error{"pipe", std::strerror(errno)};
  PipedChild c{-1, UniqueFd(fds[0]), UniqueFd(fds[1])};
  auto pid = fork_child(options);
  if (!pid) return pid.error();
  c.pid = *pid;
  return c;
}

Watcher::Watcher(Watcher&& o) noexcept : m_fd(std::move(o.m_fd)), m_pid(std::exchange(o.m_pid, -1)) {}

Watcher& Watcher::operator=(Watcher&& o) noexcept {
  if (this != &o) {
    end();
    m_fd = std::move(o.m_fd);
    m_pid = std::exchange(o.m_pid, -1);
  }
  return *this;
}

Watcher::~Watcher() { end(); }

void Watcher::end() {
  m_fd.reset();
  if (m_pid > 0) wait_child(m_pid);
  m_pid = -1;
}

Result<Watcher> start_watcher(const char* name, const std::function<void(int)>& body) {
  auto forked = fork_with_pipe({.dies_with_parent = false, .own_group = true});
  if (!forked) return forked.error();
  if (forked->pid == 0) {
    // Its own group (a signal sent to this process's group or to rank groups never reaches it),
    // nothing of this process's open (a pipe a reader waits on must not stay open), every
    // catchable signal blocked.
    ::prctl(PR_SET_NAME, name);
    sigset_t all;
    ::sigfillset(&all);
    ::sigprocmask(SIG_BLOCK, &all, nullptr);
    int null = ::open("/dev/null", O_RDWR);
    if (null >= 0) {
      ::dup2(null, STDIN_FILENO);
      ::dup2(null, STDOUT_FILENO);
      ::dup2(null, STDERR_FILENO);
    }
    ::dup2(forked->read_end.get(), 3);
    ::close_range(4, ~0u, 0);
    body(3);
    ::_exit(0);
  }
  forked->read_end.reset();
  return Watcher(std::move(forked->write_end), forked->pid);
}

}  // namespace gpubind::sys

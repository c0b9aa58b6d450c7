#include "sys/command.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gpubind::sys {

namespace {

// Appends what `fd` has to `to` (within the cap); false at end of file or on an error.
bool drain(int fd, std::string& to, bool& truncated) {
  char buf[65536];
  ssize_t n = ::read(fd, buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
  if (n <= 0) return false;
  size_t room = kMaxCommandOutput - std::min(kMaxCommandOutput, to.size());
  if (size_t(n) > room) truncated = true;
  to.append(buf, std::min(size_t(n), room));
  return true;
}

}  // namespace

Result<CommandResult> run_command(const std::vector<std::string>& argv, std::chrono::seconds deadline) {
  if (argv.empty()) return Error{"run_command", "no program named"};
  std::string what = argv[0];
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return Error{what, std::string("pipe: ") + std::strerror(errno)};
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return Error{what, std::string("pipe: ") + std::strerror(errno)};
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) ::close(fd);
    return Error{what, std::string("fork: ") + std::strerror(errno)};
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    ::dup2(out_pipe[1], STDOUT_FILENO);
    ::dup2(err_pipe[1], STDERR_FILENO);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  CommandResult r;
  auto end = std::chrono::steady_clock::now() + deadline;
  bool out_open = true, err_open = true, late = false;
  while (out_open || err_open) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      late = true;
      break;
    }
    pollfd fds[2] = {{out_open ? out_pipe[0] : -1, POLLIN, 0}, {err_open ? err_pipe[0] : -1, POLLIN, 0}};
    int n = ::poll(fds, 2, int(std::min<long long>(left, 1000)));
    if (n < 0 && errno != EINTR) break;
    if (out_open && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) out_open = drain(out_pipe[0], r.out, r.truncated);
    if (err_open && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) err_open = drain(err_pipe[0], r.err, r.truncated);
  }
  ::close(out_pipe[0]);
  ::close(err_pipe[0]);
  if (late) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (late) return Error{what, "did not finish within " + std::to_string(deadline.count()) + " s: killed"};
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (r.exit_code == 127 && r.out.empty() && r.err.empty()) return Error{what, "cannot be run (not found in PATH, or not executable)"};
  return r;
}

}  // namespace gpubind::sys

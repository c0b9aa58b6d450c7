#include "sys/spawner.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "sys/binder.hpp"
#include "sys/fault.hpp"
#include "sys/signal_watch.hpp"
#include "util/exit_status.hpp"
#include "util/strings.hpp"

namespace gpubind::sys {

namespace {

[[noreturn]] void child_fail(int code, const std::string& msg) {
  std::string line = "gpubind: error: " + one_line(msg) + "\n";
  ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
  ::_exit(code);
}

// Forks a child that leads its own process group, is SIGKILLed if this process dies, gets
// `child_mask` as its signal mask and the request's environment, runs its `prepare` (binding),
// then execs its argv. If `prepare` fails the child prints the error and exits 125; a failed exec
// exits 127 (not found) or 126 (not executable), as env(1) does. `number` names the fault point:
// "gpubind/spawn/2" fails the third child of a Spawner.
Result<Spawned> spawn(const SpawnRequest& request, const sigset_t& child_mask, unsigned number) {
  const auto& [argv, env, capture_output, prepare] = request;
  if (argv.empty()) return Error{"spawn", "empty command"};
  UniqueFd out_read, out_write, err_read, err_write;
  if (capture_output) {
    int out_pipe[2], err_pipe[2];
    if (faultable("gpubind/pipe", [&] { return ::pipe2(out_pipe, O_CLOEXEC); }) != 0) return Error{"pipe", std::strerror(errno)};
    out_read.reset(out_pipe[0]);
    out_write.reset(out_pipe[1]);
    if (::pipe2(err_pipe, O_CLOEXEC) != 0) return Error{"pipe", std::strerror(errno)};
    err_read.reset(err_pipe[0]);
    err_write.reset(err_pipe[1]);
  }
  auto pid = fork_child({.fault_point = "gpubind/spawn", .fault_name = std::to_string(number), .own_group = true});
  if (!pid) return pid.error();
  if (*pid == 0) {
    ::sigprocmask(SIG_SETMASK, &child_mask, nullptr);
    if (capture_output) {
      ::dup2(out_write.get(), STDOUT_FILENO);
      ::dup2(err_write.get(), STDERR_FILENO);
    }
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    if (prepare) {
      Status s = prepare();
      if (!s) child_fail(kExitExecFailed, s.error().message());
    }
    ExecFailure f = exec_command(argv);
    child_fail(f.exit_code, f.message);
  }
  Spawned s;
  s.pid = *pid;
  s.out_fd = out_read.release();
  s.err_fd = err_read.release();
  return s;
}

// Every child that has ended, without blocking.
std::vector<ChildExit> reap_children() {
  std::vector<ChildExit> out;
  for (;;) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) break;
    ChildExit e;
    e.pid = pid;
    if (WIFEXITED(status)) e.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) e.signal = WTERMSIG(status);
    out.push_back(e);
  }
  return out;
}

class RealSpawner final : public Spawner {
 public:
  RealSpawner(SignalWatch watch, GroupReaper reaper) : m_watch(std::move(watch)), m_reaper(std::move(reaper)) {}
  Result<Spawned> spawn(const SpawnRequest& request) override {
    auto s = sys::spawn(request, m_watch.original(), m_spawns++);
    if (s) m_reaper.watch(s->pid);
    return s;
  }
  void signal_group(pid_t pgid, int sig) override {
    if (pgid > 0) ::kill(-pgid, sig);
  }
  void forget_group(pid_t pgid) override { m_reaper.forget(pgid); }
  SpawnEvents wait(const std::vector<int>& fds, std::optional<std::chrono::milliseconds> timeout) override {
    std::vector<pollfd> p{{m_watch.fd(), POLLIN, 0}};
    for (int fd : fds) p.push_back({fd, POLLIN, 0});
    int ms = timeout ? int(std::clamp<long long>(timeout->count(), 0, 1000000)) : -1;
    SpawnEvents ev;
    if (::poll(p.data(), p.size(), ms) > 0) {
      if (p[0].revents & POLLIN)
        for (int sig : m_watch.drain())
          if (sig != SIGCHLD && sig != SIGPIPE) ev.signals.push_back(sig);
      for (size_t i = 1; i < p.size(); ++i)
        if (p[i].revents & (POLLIN | POLLHUP | POLLERR)) ev.readable.push_back(p[i].fd);
    }
    ev.exits = reap_children();
    return ev;
  }
  std::string read_some(int fd) override {
    char buf[65536];
    for (;;) {
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      return n > 0 ? std::string(buf, size_t(n)) : std::string();
    }
  }
  void close_fd(int fd) override { sys::close_fd(fd); }

 private:
  SignalWatch m_watch;
  GroupReaper m_reaper;
  unsigned m_spawns = 0;
};

}  // namespace

Result<GroupReaper> GroupReaper::start() {
  auto started = start_watcher(kGroupReaperName, [](int fd) {
    std::vector<pid_t> groups;
    int32_t v;
    for (;;) {
      ssize_t n = ::read(fd, &v, sizeof v);
      if (n < 0 && errno == EINTR) continue;
      if (n != ssize_t(sizeof v)) break;  // end of file: launch is gone
      if (v > 0) groups.push_back(v);
      else groups.erase(std::remove(groups.begin(), groups.end(), -v), groups.end());
    }
    for (pid_t g : groups) ::kill(-g, SIGKILL);
  });
  if (!started) return started.error();
  return GroupReaper(std::move(*started));
}

void GroupReaper::watch(pid_t pgid) {
  int32_t v = pgid;
  static_cast<void>(write_all(m_helper.fd(), std::string_view(reinterpret_cast<const char*>(&v), sizeof v)));
}

void GroupReaper::forget(pid_t pgid) {
  int32_t v = -pgid;
  static_cast<void>(write_all(m_helper.fd(), std::string_view(reinterpret_cast<const char*>(&v), sizeof v)));
}

Result<std::unique_ptr<Spawner>> real_spawner() {
  // SIGPIPE too: a write to a closed pipe (the group reaper killed, launch's stdout closed by
  // `| head`) then fails with EPIPE instead of killing launch; children get the original mask.
  auto watch = SignalWatch::create({SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGPIPE});
  if (!watch) return watch.error();
  auto reaper = GroupReaper::start();
  if (!reaper) return reaper.error();
  return std::unique_ptr<Spawner>(std::make_unique<RealSpawner>(std::move(*watch), std::move(*reaper)));
}

}  // namespace gpubind::sys

#include "sys/process.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "sys/binder.hpp"
#include "sys/clock.hpp"
#include "sys/environment.hpp"
#include "sys/fault.hpp"
#include "sys/fsroot.hpp"
#include "sys/spawner.hpp"
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

// Forks a child that leads its own process group, is SIGKILLed if this process dies
// (PR_SET_PDEATHSIG), gets `child_mask` as its signal mask and the request's environment, runs
// its `prepare` (binding), then execs its argv. If `prepare` fails the child prints the error and
// exits 125; a failed exec exits 127 (not found) or 126 (not executable), as env(1) does.
// `number` names the fault point: "gpubind/spawn/2" fails the third child of a Spawner.
Result<Spawned> spawn(const SpawnRequest& request, const sigset_t& child_mask, unsigned number) {
  const auto& [argv, env, capture_output, prepare] = request;
  if (argv.empty()) return Error{"spawn", "empty command"};
  int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
  if (capture_output && (faultable("gpubind/pipe", [&] { return ::pipe2(out_pipe, O_CLOEXEC); }) != 0 ||
                         ::pipe2(err_pipe, O_CLOEXEC) != 0)) {
    int e = errno;
    for (int fd : {out_pipe[0], out_pipe[1]})
      if (fd >= 0) ::close(fd);
    return Error{"pipe", std::strerror(e)};
  }
  pid_t parent = ::getpid();
  std::fflush(nullptr);
  pid_t pid = faultable_path("gpubind/spawn", std::to_string(number), [] { return ::fork(); });
  if (pid < 0) {
    int e = errno;
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]})
      if (fd >= 0) ::close(fd);
    return Error{"fork", std::strerror(e)};
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    // Killed with gpubind launch, even when launch itself is SIGKILLed; if it already died
    // between fork and here, stop now.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(kExitExecFailed);
    ::sigprocmask(SIG_SETMASK, &child_mask, nullptr);
    if (capture_output) {
      ::dup2(out_pipe[1], STDOUT_FILENO);
      ::dup2(err_pipe[1], STDERR_FILENO);
    }
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    if (prepare) {
      Status s = prepare();
      if (!s) child_fail(kExitExecFailed, s.error().message());
    }
    ExecFailure f = exec_command(argv);
    child_fail(f.exit_code, f.message);
  }
  // The parent also sets the group, so a signal sent right after spawn cannot miss it.
  ::setpgid(pid, pid);
  Spawned s;
  s.pid = pid;
  if (capture_output) {
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    s.out_fd = out_pipe[0];
    s.err_fd = err_pipe[0];
  }
  return s;
}

// A close-on-exec pipe, then fork: both ends are open in both processes; each closes the one
// it does not use.
Result<std::pair<pid_t, std::array<int, 2>>> fork_with_pipe() {
  std::array<int, 2> fds{-1, -1};
  if (faultable("gpubind/pipe", [&] { return ::pipe2(fds.data(), O_CLOEXEC); }) != 0) return Error{"pipe", std::strerror(errno)};
  std::fflush(nullptr);
  pid_t pid = faultable("gpubind/fork", [] { return ::fork(); });
  if (pid < 0) {
    int e = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    return Error{"fork", std::strerror(e)};
  }
  return std::make_pair(pid, fds);
}

}  // namespace

Result<std::pair<pid_t, int>> start_watcher(const char* name, const std::function<void(int)>& body) {
  auto forked = fork_with_pipe();
  if (!forked) return forked.error();
  auto [pid, fds] = *forked;
  if (pid == 0) {
    // Its own group (a signal sent to this process's group or to rank groups never reaches it),
    // nothing of this process's open (a pipe a reader waits on must not stay open), every
    // catchable signal blocked.
    ::setpgid(0, 0);
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
    ::dup2(fds[0], 3);
    ::close_range(4, ~0u, 0);
    body(3);
    ::_exit(0);
  }
  ::close(fds[0]);
  return std::make_pair(pid, fds[1]);
}

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
  return GroupReaper(started->second, started->first);
}

GroupReaper::GroupReaper(GroupReaper&& o) noexcept : m_fd(o.m_fd), m_pid(o.m_pid) {
  o.m_fd = -1;
  o.m_pid = -1;
}

GroupReaper::~GroupReaper() {
  if (m_fd >= 0) ::close(m_fd);
  if (m_pid > 0)
    while (::waitpid(m_pid, nullptr, 0) < 0 && errno == EINTR) {
    }
}

void GroupReaper::watch(pid_t pgid) {
  int32_t v = pgid;
  static_cast<void>(write_all(m_fd, std::string_view(reinterpret_cast<const char*>(&v), sizeof v)));
}

void GroupReaper::forget(pid_t pgid) {
  int32_t v = -pgid;
  static_cast<void>(write_all(m_fd, std::string_view(reinterpret_cast<const char*>(&v), sizeof v)));
}

void close_fd(int fd) {
  if (fd >= 0) ::close(fd);
}

int current_pid() { return int(::getpid()); }

Result<unsigned> free_tcp_port() {
  int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return Error{"socket", std::strerror(errno)};
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    int e = errno;
    ::close(s);
    return Error{"finding a free port", std::strerror(e)};
  }
  ::close(s);
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
    int s = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (s < 0) continue;
    if (::connect(s, ai->ai_addr, ai->ai_addrlen) == 0) {
      ok = true;
    } else if (errno == EINPROGRESS) {
      pollfd p{s, POLLOUT, 0};
      int err = 0;
      socklen_t len = sizeof err;
      if (::poll(&p, 1, timeout_ms) == 1 && ::getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) ok = true;
    }
    ::close(s);
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
  int dir = ::open(base.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return Error{base, std::strerror(errno)};
  std::string so_far = base;
  for (size_t i = 0; i + 1 < names.size(); ++i) {
    so_far += "/" + names[i];
    if (::mkdirat(dir, names[i].c_str(), 0755) != 0 && errno != EEXIST) {
      int e = errno;
      ::close(dir);
      return Error{so_far, std::strerror(e)};
    }
    int next = ::openat(dir, names[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int e = errno;
    ::close(dir);
    if (next < 0) return Error{so_far, e == ELOOP || e == ENOTDIR ? "not a directory (a symbolic link is not followed here)" : std::strerror(e)};
    dir = next;
  }
  so_far += "/" + names.back();
  // O_NONBLOCK: opening a FIFO for writing would wait for a reader.
  int fd = ::openat(dir, names.back().c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  int e = errno;
  ::close(dir);
  if (fd < 0) return Error{so_far, e == ELOOP ? "a symbolic link (not followed)" : e == ENXIO ? "a FIFO (not a regular file)" : std::strerror(e)};
  auto regular = regular_only(fd, so_far);  // a FIFO with a reader opens: refused here
  if (!regular) return regular.error();
  if (::ftruncate(*regular, 0) != 0) {
    e = errno;
    ::close(*regular);
    return Error{so_far, std::strerror(e)};
  }
  return *regular;
}

Status write_all(int fd, std::string_view data) { return write_fully(fd, data); }

// Signals delivered through a signalfd instead of handlers (launch's supervisor, watch's
// InterruptibleClock). They stay blocked while it lives; original() is the mask to give children.
class SignalWatch {
 public:
  static Result<SignalWatch> create(std::initializer_list<int> signals) {
    sigset_t s;
    ::sigemptyset(&s);
    for (int sig : signals) ::sigaddset(&s, sig);
    sigset_t original;
    if (::sigprocmask(SIG_BLOCK, &s, &original) != 0) return Error{"sigprocmask", std::strerror(errno)};
    int fd = faultable("gpubind/signalfd", [&] { return ::signalfd(-1, &s, SFD_CLOEXEC | SFD_NONBLOCK); });
    if (fd < 0) {
      int e = errno;
      ::sigprocmask(SIG_SETMASK, &original, nullptr);
      return Error{"signalfd", std::strerror(e)};
    }
    return SignalWatch(fd, s, original);
  }
  SignalWatch(SignalWatch&& o) noexcept : m_fd(o.m_fd), m_set(o.m_set), m_original(o.m_original) { o.m_fd = -1; }
  SignalWatch& operator=(SignalWatch&&) = delete;
  SignalWatch(const SignalWatch&) = delete;
  ~SignalWatch() {
    if (m_fd < 0) return;
    ::close(m_fd);
    // A SIGPIPE still pending (a write to a closed pipe since the last drain) would be delivered
    // as soon as the mask is restored and kill the process on its way out: consume it first.
    if (::sigismember(&m_set, SIGPIPE) == 1) {
      sigset_t pipe;
      ::sigemptyset(&pipe);
      ::sigaddset(&pipe, SIGPIPE);
      timespec now{};
      while (::sigtimedwait(&pipe, nullptr, &now) == SIGPIPE) {
      }
    }
    ::sigprocmask(SIG_SETMASK, &m_original, nullptr);
  }
  int fd() const { return m_fd; }
  const sigset_t& original() const { return m_original; }
  // Signals received since the last call (SIGCHLD included).
  std::vector<int> drain() {
    std::vector<int> out;
    signalfd_siginfo info;
    while (::read(m_fd, &info, sizeof info) == ssize_t(sizeof info)) out.push_back(int(info.ssi_signo));
    return out;
  }

 private:
  SignalWatch(int fd, const sigset_t& set, const sigset_t& original) : m_fd(fd), m_set(set), m_original(original) {}
  int m_fd = -1;
  sigset_t m_set;
  sigset_t m_original;
};

namespace {

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

Result<std::unique_ptr<Spawner>> real_spawner() {
  // SIGPIPE too: a write to a closed pipe (the group reaper killed, launch's stdout closed by
  // `| head`) then fails with EPIPE instead of killing launch; children get the original mask.
  auto watch = SignalWatch::create({SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGPIPE});
  if (!watch) return watch.error();
  auto reaper = GroupReaper::start();
  if (!reaper) return reaper.error();
  return std::unique_ptr<Spawner>(std::make_unique<RealSpawner>(std::move(*watch), std::move(*reaper)));
}

const Clock& steady_clock() {
  struct Steady final : Clock {
    time_point now() const override { return std::chrono::steady_clock::now(); }
    void sleep_for(std::chrono::milliseconds d) const override { std::this_thread::sleep_for(d); }
  };
  static const Steady clock;
  return clock;
}

std::string utc_timestamp() {
  struct timespec now {};
  clock_gettime(CLOCK_REALTIME, &now);
  if (auto fixed = env_value("SOURCE_DATE_EPOCH"))
    if (auto seconds = parse_uint(*fixed); seconds && *seconds < (uint64_t(1) << 40)) now = {time_t(*seconds), 0};
  struct tm utc {};
  gmtime_r(&now.tv_sec, &utc);
  char text[96];  // room for any int the format could see
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday, utc.tm_hour,
                utc.tm_min, utc.tm_sec, int(now.tv_nsec / 1000000));
  return text;
}

Result<std::unique_ptr<InterruptibleClock>> InterruptibleClock::create() {
  auto watch = SignalWatch::create({SIGINT, SIGTERM, SIGHUP});
  if (!watch) return watch.error();
  return std::unique_ptr<InterruptibleClock>(new InterruptibleClock(std::make_unique<SignalWatch>(std::move(*watch))));
}

InterruptibleClock::InterruptibleClock(std::unique_ptr<SignalWatch> watch) : m_watch(std::move(watch)) {}

InterruptibleClock::~InterruptibleClock() = default;

Clock::time_point InterruptibleClock::now() const { return std::chrono::steady_clock::now(); }

void InterruptibleClock::sleep_for(std::chrono::milliseconds d) const {
  if (m_signal) return;
  auto until = now() + d;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - now()).count();
    pollfd p{m_watch->fd(), POLLIN, 0};
    int r = ::poll(&p, 1, int(std::clamp<long long>(left, 0, 1000000)));
    if (r > 0)
      if (std::vector<int> got = m_watch->drain(); !got.empty()) {
        m_signal = got.front();
        return;
      }
    if (r == 0 || left <= 0) return;
    // EINTR (a signal outside the set): wait out the rest.
  }
}

namespace {

// The start of a child that must end with this process (gpubind killed while the child blocks
// must not leave it): false when this process already ended between fork and here.
bool die_with_parent(pid_t parent) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  return ::getppid() == parent;
}

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

int wait_child(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
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
  pid_t parent = ::getpid();
  // What the library prints on its own (hwloc's assertion text, its warnings) goes here, not to
  // this process's stderr beside gpubind's own line; a crash's error quotes its first line.
  int chatter = ::memfd_create("gpubind-child-stderr", MFD_CLOEXEC);
  auto forked = fork_with_pipe();
  if (!forked) {
    if (chatter >= 0) ::close(chatter);
    return forked.error();
  }
  auto [pid, fds] = *forked;
  if (pid == 0) {
    ::close(fds[0]);
    if (chatter >= 0) ::dup2(chatter, STDERR_FILENO);
    if (!die_with_parent(parent)) ::_exit(1);
    // Die of a crash, quietly: no handler inherited from the parent (a sanitizer's, a fuzzer's)
    // may report it as the parent's.
    for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL, SIGTRAP}) ::signal(sig, SIG_DFL);
    for (const auto& [name, value] : env) {
      if (value) ::setenv(name.c_str(), value->c_str(), 1);
      else ::unsetenv(name.c_str());
    }
    std::string out = work();
    static_cast<void>(write_fully(fds[1], out, "gpubind/pipe-write"));
    ::_exit(0);
  }
  ::close(fds[1]);
  Drained d = read_child(fds[0], pid, deadline, SIZE_MAX);
  ::close(fds[0]);
  int status = wait_child(pid);
  std::string said;  // the first line the child printed on stderr
  if (chatter >= 0) {
    std::string text = memfd_text(chatter, 512);
    said = std::string(trim(std::string_view(text).substr(0, text.find('\n'))));
    ::close(chatter);
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

Result<CommandResult> run_command(const std::vector<std::string>& argv, std::chrono::seconds deadline, bool late_is_error) {
  if (argv.empty()) return Error{"run_command", "no program named"};
  const std::string& what = argv[0];
  // Its standard error goes to a memory file, read when it ended: one pipe to wait on.
  int err = ::memfd_create("gpubind-command-stderr", MFD_CLOEXEC);
  if (err < 0) return Error{what, std::string("memfd_create: ") + std::strerror(errno)};
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t parent = ::getpid();
  auto forked = fork_with_pipe();
  if (!forked) {
    ::close(err);
    return Error{what, forked.error().message()};
  }
  auto [pid, fds] = *forked;
  if (pid == 0) {
    if (!die_with_parent(parent)) ::_exit(127);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    ::dup2(fds[1], STDOUT_FILENO);
    ::dup2(err, STDERR_FILENO);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  Drained d = read_child(fds[0], pid, deadline, kMaxCommandOutput);
  ::close(fds[0]);
  int status = wait_child(pid);
  CommandResult r;
  r.out = std::move(d.out);
  r.err = memfd_text(err, kMaxCommandOutput);
  r.truncated = d.truncated || r.err.size() >= kMaxCommandOutput;
  ::close(err);
  if (d.late && late_is_error) return Error{what, "did not finish within " + std::to_string(deadline.count()) + " s: killed"};
  r.late = d.late;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (r.exit_code == 127 && r.out.empty() && r.err.empty()) return Error{what, "cannot be run (not found in PATH, or not executable)"};
  return r;
}

}  // namespace gpubind::sys

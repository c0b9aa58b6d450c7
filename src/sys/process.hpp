#pragma once
// Child processes for `gpubind launch`: spawning (own process group, killed with the parent),
// signals as a file descriptor, reaping, and a free TCP port for the rendezvous.
#include <sys/types.h>

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/result.hpp"

namespace gpubind::sys {

struct Spawned {
  pid_t pid = -1;
  int out_fd = -1;  // read ends of the child's stdout/stderr when captured, else -1
  int err_fd = -1;
};

// Forks a child that leads its own process group, is SIGKILLed if this process dies
// (PR_SET_PDEATHSIG), gets `env` added to its environment, runs `prepare` (binding), then execs
// `argv`. If `prepare` fails the child prints the error and exits 125; a failed exec exits 127
// (not found) or 126 (not executable), as env(1) does.
Result<Spawned> spawn(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& env,
                      bool capture_output, const std::function<Status()>& prepare);

// A helper process that outlives this one only to SIGKILL the process groups it was told about
// when this process dies without forgetting them: launch SIGKILLed or OOM-killed. A rank's
// PR_SET_PDEATHSIG kills the rank, but not what the rank started in its group (a shell's
// children); this kills the whole group. It notices the death by end of file on a pipe only this
// process holds, and never kills a group it was told to forget (reaped, so the id may be reused).
class GroupReaper {
 public:
  static constexpr const char* kGroupReaperName = "gpubind-reaper";  // its process name (comm)
  static Result<GroupReaper> start();
  GroupReaper(GroupReaper&& o) noexcept;
  GroupReaper& operator=(GroupReaper&&) = delete;
  GroupReaper(const GroupReaper&) = delete;
  ~GroupReaper();  // a normal end: the helper exits, killing only groups not yet forgotten
  void watch(pid_t pgid);
  void forget(pid_t pgid);

 private:
  GroupReaper(int fd, pid_t pid) : m_fd(fd), m_pid(pid) {}
  int m_fd = -1;
  pid_t m_pid = -1;
};

// SIGINT, SIGTERM, SIGHUP and SIGCHLD delivered through a signalfd instead of handlers. The
// signals stay blocked while it lives; spawned children get the original mask back.
class SignalWatch {
 public:
  static Result<SignalWatch> create();
  SignalWatch(SignalWatch&& o) noexcept;
  SignalWatch& operator=(SignalWatch&&) = delete;
  SignalWatch(const SignalWatch&) = delete;
  ~SignalWatch();
  int fd() const { return m_fd; }
  // Signals received since the last call (SIGCHLD included).
  std::vector<int> drain();

 private:
  explicit SignalWatch(int fd) : m_fd(fd) {}
  int m_fd = -1;
};

struct ChildExit {
  pid_t pid = -1;
  int exit_code = 0;  // valid when signal == 0
  int signal = 0;     // the signal that killed it, 0 when it exited
};

// Every child that has ended, without blocking.
std::vector<ChildExit> reap_children();
// Sends `sig` to a process group; a group that is already gone is not an error.
void signal_group(pid_t pgid, int sig);
// Blocks in poll(2) on `fds` (readable) for at most `timeout_ms` (-1: forever); returns the
// indexes of readable or hung-up descriptors.
std::vector<size_t> wait_readable(const std::vector<int>& fds, int timeout_ms);
// Reads what is available (at most 64 KiB); an empty result means end of file.
std::string read_some(int fd);
void close_fd(int fd);
int current_pid();
// A TCP port that was free on the loopback interface a moment ago.
Result<unsigned> free_tcp_port();
// Whether a TCP connection to host:port can be made within `timeout_ms` (one attempt; the
// connection is closed at once). An Error names a host that does not resolve.
Result<bool> tcp_reachable(const std::string& host, unsigned port, int timeout_ms);
// Creates the directories of `path` (mode 0755) and the file itself (0644, truncated); returns
// its descriptor (close-on-exec).
Result<int> create_log_file(const std::string& path);
// Writes all of `data` to `fd` (retrying short writes and EINTR); errors are ignored, as for a
// full disk under a log.
void write_all(int fd, std::string_view data);

// Runs `work` in a forked child and returns what it produced, so a crash in a library (hwloc on
// a malformed XML file) becomes an Error instead of killing this process: the Error says how the
// child died. The caller must be single-threaded. `work` runs in the child only.
Result<std::string> run_isolated(const std::function<std::string()>& work);

}  // namespace gpubind::sys

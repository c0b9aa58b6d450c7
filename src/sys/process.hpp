#pragma once
// Processes and descriptors for `gpubind launch` (its Spawner is in sys/spawner.hpp), the TCP
// checks of its rendezvous, and running a library call in a child process.
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
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

// A helper process that outlives this one to clean up after it: forked into a process group of
// its own, every catchable signal blocked, /dev/null as its stdio and nothing of this process's
// open but the read end of a pipe (as fd 3); it runs `body(3)`, named `name`, and exits. This
// process keeps the write end (returned with the helper's pid): the end of file that body reads
// when this process closes it, or ends in any way, even SIGKILL, is its cue.
Result<std::pair<pid_t, int>> start_watcher(const char* name, const std::function<void(int)>& body);

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

struct ChildExit {
  pid_t pid = -1;
  int exit_code = 0;  // valid when signal == 0
  int signal = 0;     // the signal that killed it, 0 when it exited
  int stopped = 0;    // reap_child without waiting: the signal that stopped it (SIGSTOP), still alive
};

void close_fd(int fd);
int current_pid();
// A TCP port that was free on the loopback interface a moment ago.
Result<unsigned> free_tcp_port();
// Whether a TCP connection to host:port can be made within `timeout_ms` (one attempt; the
// connection is closed at once). An Error names a host that does not resolve.
Result<bool> tcp_reachable(const std::string& host, unsigned port, int timeout_ms);
// Creates `relative` under the directory `base` (created first when missing): each directory of it (mode
// 0755) and the file itself (0644, truncated); returns its descriptor (close-on-exec, blocking).
// `base` is opened as given; below it no symbolic link is followed (another user who can write
// there cannot redirect the file elsewhere), `relative` must be plain names (no "", "." or
// ".."), and the file must be a regular one (a FIFO or device is refused without blocking).
Result<int> create_log_file(const std::string& base, const std::string& relative);
// Writes all of `data` to `fd` (retrying short writes and EINTR); an Error (a full disk: "No
// space left on device") when it cannot.
Status write_all(int fd, std::string_view data);

// An environment variable set (a value) or unset (nullopt).
using EnvChange = std::pair<std::string, std::optional<std::string>>;

// Runs `work` in a forked child and returns what it produced, so a crash in a library (hwloc on
// a malformed XML file) becomes an Error instead of killing this process: the Error says how the
// child died. `env` is applied in the child before `work`: settings a library reads only from
// the environment (hwloc's) never touch this process's environment, which other threads may be
// reading. `work` runs in the child only and must not need locks other threads hold. The child
// dies with this process (PR_SET_PDEATHSIG), and is killed when it has not finished within
// `deadline` (a library blocked on a FIFO in a tree, or building a topology of millions of PUs):
// an Error that says so.
Result<std::string> run_isolated(const std::function<std::string()>& work, const std::vector<EnvChange>& env = {},
                                 std::chrono::seconds deadline = std::chrono::seconds(120));

// Running another program to completion and keeping what it printed: what `check --slurm-job`
// and `watch --slurm-job` ask of Slurm's own commands (squeue for the job's node count, srun for
// the fan-out).
struct CommandResult {
  int exit_code = 0;    // 128+N when a signal N ended it
  std::string out;      // its standard output, at most kMaxCommandOutput bytes
  std::string err;      // its standard error, the same
  bool truncated = false;
  bool late = false;    // killed at the deadline (only with late_is_error false)
};

constexpr size_t kMaxCommandOutput = 64u << 20;

// Runs argv[0] (searched in PATH) with this process's environment, stdin from /dev/null, as
// run_isolated runs its work: the child dies with this process (PR_SET_PDEATHSIG) and is killed
// after `deadline`, which is an Error that says so, as is a program that cannot be started (exit
// 127 before it printed). With `late_is_error` false, a program killed at the deadline is a
// result with `late` set and what it printed until then.
Result<CommandResult> run_command(const std::vector<std::string>& argv, std::chrono::seconds deadline, bool late_is_error = true);

}  // namespace gpubind::sys

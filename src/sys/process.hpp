#pragma once
// Processes and descriptors for `gpubind launch` (its Spawner is in sys/spawner.hpp), the TCP
// checks of its rendezvous, running a library call in a child process and another program to
// completion (every child forked by sys/fork.hpp's fork_child).
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

struct CommandOptions {
  // A program killed at the deadline is an Error; false: a result with `late` set and what it
  // printed until then.
  bool late_is_error = true;
  // Variables removed from its environment (a setting the program reads from there that this
  // call must not get: tar's TAR_OPTIONS).
  std::vector<std::string> unset_env;
  std::vector<std::pair<std::string, std::string>> set_env;  // variables set in its environment
};

// Runs argv[0] (searched in PATH) with this process's environment, stdin from /dev/null, as
// run_isolated runs its work: the child dies with this process (PR_SET_PDEATHSIG) and is killed
// after `deadline`, which is an Error that says so, as is a program that cannot be started (exit
// 127 before it printed).
Result<CommandResult> run_command(const std::vector<std::string>& argv, std::chrono::seconds deadline, const CommandOptions& options = {});

}  // namespace gpubind::sys

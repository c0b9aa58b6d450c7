#pragma once
// Every child gpubind forks starts through fork_child: a rank of `launch`, a library call run
// apart (run_isolated), another program (run_command), bench's ranks, and the helpers that
// outlive this process to clean up after it (start_watcher).
#include <sys/types.h>

#include <csignal>
#include <functional>
#include <string>

#include "sys/unique_fd.hpp"
#include "util/result.hpp"

namespace gpubind::sys {

// What a child that must end with this process exits with when this process ended before the
// child could ask to be killed with it: as if SIGKILLed with it (nobody but init reads it).
constexpr int kExitParentGone = 128 + SIGKILL;

struct ForkOptions {
  // The failure point that fails the fork (docs/FAULTS.md), and the name below it ("2" fails
  // "gpubind/spawn/2" only), empty for the point itself.
  const char* fault_point = "gpubind/fork";
  std::string fault_name;
  // SIGKILLed when this process dies (PR_SET_PDEATHSIG), even by SIGKILL; a child whose parent
  // is already gone exits kExitParentGone at once. False only for helpers that outlive it.
  bool dies_with_parent = true;
  // Leads a process group of its own; set by both processes, so a signal sent to the group
  // right after fork_child returns cannot miss the child.
  bool own_group = false;
};

// Forks (standard I/O buffers flushed first, so no line is written twice): 0 in the child, the
// child's pid in this process; an Error when it could not fork.
Result<pid_t> fork_child(const ForkOptions& options = {});

// Waits for child `pid` to end (through EINTR) and returns its wait status.
int wait_child(pid_t pid);

// A close-on-exec pipe, then fork_child: the child's pid (0 in the child) and both ends, open in
// both processes; each closes the end it does not use.
struct PipedChild {
  pid_t pid = -1;
  UniqueFd read_end;
  UniqueFd write_end;
};
Result<PipedChild> fork_with_pipe(const ForkOptions& options = {});

// A helper process started by start_watcher, held through this process's end of its pipe.
// Destroying the Watcher closes that end, the helper's cue to do its work and exit, and waits
// for it.
class Watcher {
 public:
  Watcher() = default;
  Watcher(UniqueFd fd, pid_t pid) : m_fd(std::move(fd)), m_pid(pid) {}
  Watcher(Watcher&& o) noexcept;
  Watcher& operator=(Watcher&& o) noexcept;
  Watcher(const Watcher&) = delete;
  Watcher& operator=(const Watcher&) = delete;
  ~Watcher();
  int fd() const { return m_fd.get(); }
  explicit operator bool() const { return m_pid > 0; }

 private:
  void end();
  UniqueFd m_fd;
  pid_t m_pid = -1;
};

// A helper process that outlives this one to clean up after it: forked into a process group of
// its own, every catchable signal blocked, /dev/null as its stdio and nothing of this process's
// open but the read end of a pipe (as fd 3); it runs `body(3)`, named `name`, and exits. This
// process keeps the write end: the end of file that body reads when this process closes it, or
// ends in any way, even SIGKILL, is its cue.
Result<Watcher> start_watcher(const char* name, const std::function<void(int)>& body);

}  // namespace gpubind::sys

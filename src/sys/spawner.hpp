#pragma once
// Child processes as a seam: `launch`'s supervisor starts ranks, signals their process groups
// and waits for what happens next (a signal to launch, output on a pipe, a child's end) only
// through a Spawner, so its rules (fail-fast, grace, forwarding, exit status) are unit-tested
// with a scripted fake and a fake Clock (tests/unit/bind/supervisor_test.cpp).
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sys/fork.hpp"
#include "sys/process.hpp"
#include "util/result.hpp"

namespace gpubind::sys {

struct SpawnRequest {
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;  // added to the child's environment
  bool capture_output = false;                           // stdout/stderr through pipes (Spawned::out_fd/err_fd)
  std::function<Status()> prepare;                       // runs in the child before exec (binding)
};

// What ended a wait: signals sent to this process (SIGINT, SIGTERM, SIGHUP; never SIGCHLD),
// descriptors among those waited on that are readable or hung up, and children that ended.
struct SpawnEvents {
  std::vector<int> signals;
  std::vector<int> readable;
  std::vector<ChildExit> exits;
};

class Spawner {
 public:
  virtual ~Spawner() = default;
  // Starts a child leading its own process group (pgid == pid).
  virtual Result<Spawned> spawn(const SpawnRequest& request) = 0;
  // Sends `sig` to a process group; a group that is gone is not an error.
  virtual void signal_group(pid_t pgid, int sig) = 0;
  // The group's leader was reaped: its id may be reused, so it is never killed on our behalf.
  virtual void forget_group(pid_t pgid) = 0;
  // Blocks until a signal, output on one of `fds` or a child's end, at most `timeout` (nullopt:
  // no limit). Children that ended are reported once.
  virtual SpawnEvents wait(const std::vector<int>& fds, std::optional<std::chrono::milliseconds> timeout) = 0;
  // What is available on `fd` (at most 64 KiB); empty means end of file.
  virtual std::string read_some(int fd) = 0;
  virtual void close_fd(int fd) = 0;
};

// A helper process that outlives this one only to SIGKILL the process groups it was told about
// when this process dies without forgetting them: launch SIGKILLed or OOM-killed. A rank's
// PR_SET_PDEATHSIG kills the rank, but not what the rank started in its group (a shell's
// children); this kills the whole group. It notices the death by end of file on a pipe only this
// process holds, and never kills a group it was told to forget (reaped, so the id may be reused).
class GroupReaper {
 public:
  static constexpr const char* kGroupReaperName = "gpubind-reaper";  // its process name (comm)
  static Result<GroupReaper> start();
  // Destroyed (a normal end), the helper exits, killing only groups not yet forgotten.
  void watch(pid_t pgid);
  void forget(pid_t pgid);

 private:
  explicit GroupReaper(Watcher helper) : m_helper(std::move(helper)) {}
  Watcher m_helper;
};

// The real one: SIGINT, SIGTERM, SIGHUP and SIGCHLD are blocked and read through a signalfd while
// it lives (children get the caller's mask back), and a helper process kills every group not
// yet forgotten if this process dies (GroupReaper). One per launch; not for several threads.
Result<std::unique_ptr<Spawner>> real_spawner();

}  // namespace gpubind::sys

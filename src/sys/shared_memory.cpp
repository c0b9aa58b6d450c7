#include "sys/shared_memory.hpp"

#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <exception>

#include "sys/fork.hpp"

namespace gpubind::sys {

Result<Mapping> shared_memory(size_t bytes) {
  if (bytes == 0) bytes = 1;
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return Error{"shared memory of " + std::to_string(bytes) + " bytes", std::strerror(errno)};
  return Mapping(p, bytes);
}

void futex_wait(std::atomic<uint32_t>& word, uint32_t expected, std::optional<std::chrono::milliseconds> timeout) {
  timespec ts{};
  if (timeout) {
    ts.tv_sec = time_t(timeout->count() / 1000);
    ts.tv_nsec = long(timeout->count() % 1000) * 1'000'000;
  }
  // Not FUTEX_PRIVATE_FLAG: the word is in memory shared between processes.
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT, expected, timeout ? &ts : nullptr, nullptr, 0);
}

void futex_wake_all(std::atomic<uint32_t>& word) {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
}

Result<pid_t> fork_call(const std::function<int()>& body) {
  auto pid = fork_child();
  if (!pid || *pid > 0) return pid;
  int rc = 70;
  try {
    rc = body();
  } catch (const std::exception&) {
    rc = 70;
  }
  ::_exit(rc);
}

std::optional<ChildExit> reap_child(pid_t pid, bool wait) {
  int status = 0;
  pid_t r;
  while ((r = ::waitpid(pid, &status, wait ? 0 : WNOHANG | WUNTRACED)) < 0 && errno == EINTR) {
  }
  if (r == 0) return std::nullopt;
  ChildExit e;
  e.pid = pid;
  if (r < 0) {
    e.exit_code = 70;  // not our child, or reaped already: report it as ended
    return e;
  }
  if (WIFSTOPPED(status)) e.stopped = WSTOPSIG(status);
  else if (WIFSIGNALED(status)) e.signal = WTERMSIG(status);
  else e.exit_code = WEXITSTATUS(status);
  return e;
}

void kill_child(pid_t pid) {
  if (pid > 0) ::kill(pid, SIGKILL);
}

int current_cpu() { return ::sched_getcpu(); }

}  // namespace gpubind::sys

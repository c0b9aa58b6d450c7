#pragma once
// A child left behind when its parent is SIGKILLed, as gpubind's children are when a job is
// killed: for the tests that its children die with it (and that its helpers outlive it).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

namespace gpubind::testing {

// Forks a middle process that runs `body` (which starts children and reports one's PID with
// report_pid on the descriptor it is given) and then waits; once the PID is reported, the middle
// process is SIGKILLed and reaped. Returns the reported PID, -1 when none was.
inline pid_t orphan_of(const std::function<void(int report_fd)>& body) {
  int p[2];
  if (::pipe(p) != 0) return -1;
  pid_t middle = ::fork();
  if (middle < 0) return -1;
  if (middle == 0) {
    ::close(p[0]);
    body(p[1]);
    ::pause();
    ::_exit(0);
  }
  ::close(p[1]);
  pid_t child = -1;
  if (::read(p[0], &child, sizeof child) != ssize_t(sizeof child)) child = -1;
  ::close(p[0]);
  ::kill(middle, SIGKILL);
  ::waitpid(middle, nullptr, 0);
  return child;
}

inline void report_pid(int fd, pid_t pid) { static_cast<void>(!::write(fd, &pid, sizeof pid)); }

// Whether `pid` runs: neither gone nor a zombie its new parent has not reaped yet.
inline bool running(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  return line.substr(line.rfind(')') + 2, 1) != "Z";
}

// Waits while `pending` holds, at most 30 s (a loaded machine takes its time; nothing here is
// timed).
inline void wait_while(const std::function<bool()>& pending) {
  for (int i = 0; i < 600 && pending(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

}  // namespace gpubind::testing

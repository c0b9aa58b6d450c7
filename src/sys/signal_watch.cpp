#include "sys/signal_watch.hpp"

#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sys/fault.hpp"

namespace gpubind::sys {

Result<SignalWatch> SignalWatch::create(std::initializer_list<int> signals) {
  sigset_t s;
  ::sigemptyset(&s);
  for (int sig : signals) ::sigaddset(&s, sig);
  sigset_t original;
  if (::sigprocmask(SIG_BLOCK, &s, &original) != 0) return Error{"sigprocmask", std::strerror(errno)};
  UniqueFd fd(faultable("gpubind/signalfd", [&] { return ::signalfd(-1, &s, SFD_CLOEXEC | SFD_NONBLOCK); }));
  if (!fd) {
    int e = errno;
    ::sigprocmask(SIG_SETMASK, &original, nullptr);
    return Error{"signalfd", std::strerror(e)};
  }
  return SignalWatch(std::move(fd), s, original);
}

SignalWatch::~SignalWatch() {
  if (!m_fd) return;  // moved from
  m_fd.reset();
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

std::vector<int> SignalWatch::drain() {
  std::vector<int> out;
  signalfd_siginfo info;
  while (::read(m_fd.get(), &info, sizeof info) == ssize_t(sizeof info)) out.push_back(int(info.ssi_signo));
  return out;
}

}  // namespace gpubind::sys

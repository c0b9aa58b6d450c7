#pragma once
// Signals delivered through a signalfd instead of handlers (launch's supervisor, watch's
// InterruptibleClock): blocked while a SignalWatch lives, read from its descriptor, and the
// mask restored when it goes. original() is the mask to give children.
#include <signal.h>

#include <initializer_list>
#include <vector>

#include "sys/unique_fd.hpp"
#include "util/result.hpp"

namespace gpubind::sys {

class SignalWatch {
 public:
  static Result<SignalWatch> create(std::initializer_list<int> signals);
  SignalWatch(SignalWatch&& o) noexcept : m_fd(std::move(o.m_fd)), m_set(o.m_set), m_original(o.m_original) {}
  SignalWatch& operator=(SignalWatch&&) = delete;
  SignalWatch(const SignalWatch&) = delete;
  ~SignalWatch();
  int fd() const { return m_fd.get(); }
  const sigset_t& original() const { return m_original; }
  // Signals received since the last call (SIGCHLD included).
  std::vector<int> drain();

 private:
  SignalWatch(UniqueFd fd, const sigset_t& set, const sigset_t& original) : m_fd(std::move(fd)), m_set(set), m_original(original) {}
  UniqueFd m_fd;
  sigset_t m_set;
  sigset_t m_original;
};

}  // namespace gpubind::sys

#pragma once
// A file descriptor with one owner: closed when the owner goes away, moved and never copied, so
// an early return cannot leak one and no path closes one twice.
#include <unistd.h>

#include <utility>

namespace gpubind::sys {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) noexcept : m_fd(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : m_fd(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    reset(o.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const noexcept { return m_fd; }
  explicit operator bool() const noexcept { return m_fd >= 0; }
  // Gives the descriptor up to the caller, who closes it.
  int release() noexcept { return std::exchange(m_fd, -1); }
  // Closes the descriptor held (if any) and holds `fd` instead.
  void reset(int fd = -1) noexcept {
    if (m_fd >= 0 && m_fd != fd) ::close(m_fd);
    m_fd = fd;
  }
  // Closes it now and says whether close(2) succeeded (0, else -1 with errno): for a file just
  // written, where the error of a delayed write shows only here.
  int close() noexcept { return m_fd < 0 ? 0 : ::close(std::exchange(m_fd, -1)); }

 private:
  int m_fd = -1;
};

}  // namespace gpubind::sys

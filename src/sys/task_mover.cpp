#include "sys/task_mover.hpp"

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <vector>

#include "sys/fault.hpp"
#include "sys/fsroot.hpp"
#include "sys/task_counters.hpp"
#include "sys/unique_fd.hpp"

namespace gpubind::sys {

namespace {

constexpr size_t kWordBits = 8 * sizeof(unsigned long);

// A kernel bitmap of `set` with room for `bits` members.
std::vector<unsigned long> bitmap(const CpuSet& set, size_t bits) {
  std::vector<unsigned long> words((bits + kWordBits - 1) / kWordBits, 0);
  for (unsigned i : set.ids()) words[i / kWordBits] |= 1ul << (i % kWordBits);
  return words;
}

class RealTaskMover final : public TaskMover {
 public:
  Result<CpuSet> affinity(int tid) override { return thread_affinity(tid); }

  Status set_affinity(int tid, const CpuSet& cpus) override {
    if (cpus.empty()) return Error{"sched_setaffinity " + std::to_string(tid), "empty CPU set"};
    std::vector<unsigned long> mask = bitmap(cpus, *cpus.last() + 1);
    long rc = faultable("gpubind/rebind_setaffinity",
                        [&] { return ::syscall(SYS_sched_setaffinity, tid, mask.size() * sizeof(unsigned long), mask.data()); });
    if (rc != 0) return errno_error("sched_setaffinity " + std::to_string(tid) + " " + cpus.to_list(), errno);
    return Ok{};
  }

  Result<uint64_t> migrate_pages(int pid, const CpuSet& from, const CpuSet& to) override {
    if (from.empty() || to.empty()) return uint64_t{0};
    // maxnode counts bits; the kernel reads maxnode - 1 of them, so one more than the highest.
    size_t maxnode = std::max(*from.last(), *to.last()) + 2;
    std::vector<unsigned long> old_nodes = bitmap(from, maxnode), new_nodes = bitmap(to, maxnode);
    long rc = faultable("gpubind/migrate_pages",
                        [&] { return ::syscall(SYS_migrate_pages, pid, maxnode, old_nodes.data(), new_nodes.data()); });
    if (rc < 0) return errno_error("migrate_pages " + std::to_string(pid) + " " + from.to_list() + " -> " + to.to_list(), errno);
    return uint64_t(rc);
  }

  uint64_t now_ns() override {
    return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
  }

  Status hold(int pid, uint64_t start_time) override {
    release(pid);
    const std::string who = "PID " + std::to_string(pid);
    // The pidfd first, then the start time: a pidfd opened on the process probed stays its own,
    // so every check after this one is of that process, never of a PID's next owner.
    UniqueFd fd(int(::syscall(SYS_pidfd_open, pid, 0)));
    if (!fd && errno == ESRCH) return Error{who, "ended since it was probed", ErrorKind::not_found};
    auto now = process_start_time(pid);
    if (!now) return Error{who, "ended since it was probed", ErrorKind::not_found};
    if (*now != start_time)
      return Error{who, "no longer the process probed: the PID belongs to one started later (the rank ended meanwhile)", ErrorKind::not_found};
    m_held[pid] = Held{std::move(fd), start_time};
    return Ok{};
  }

  bool held_alive(int pid) override {
    auto it = m_held.find(pid);
    if (it == m_held.end()) return true;
    if (it->second.fd) return ::syscall(SYS_pidfd_send_signal, it->second.fd.get(), 0, nullptr, 0) == 0;
    return process_start_time(pid) == it->second.start_time;  // no pidfd (before Linux 5.3)
  }

  void release(int pid) override { m_held.erase(pid); }

 private:
  struct Held {
    UniqueFd fd;  // none before Linux 5.3
    uint64_t start_time = 0;
  };
  std::map<int, Held> m_held;
};

}  // namespace

std::unique_ptr<TaskMover> real_task_mover() { return std::make_unique<RealTaskMover>(); }

std::optional<uint64_t> process_start_time(int pid) {
  auto text = read_file("/proc/" + std::to_string(pid) + "/stat", 4096);
  return text ? stat_start_time(*text) : std::nullopt;
}

std::optional<uint64_t> stat_start_time(std::string_view stat) {
  size_t close = stat.rfind(')');  // the command may hold spaces and parentheses
  if (close == std::string_view::npos) return std::nullopt;
  size_t field = 2, at = close + 1;
  while (at < stat.size()) {
    while (at < stat.size() && stat[at] == ' ') ++at;
    size_t end = stat.find(' ', at);
    if (end == std::string_view::npos) end = stat.size();
    if (++field == 22) {
      uint64_t v = 0;
      for (size_t i = at; i < end; ++i) {
        if (stat[i] < '0' || stat[i] > '9') return std::nullopt;
        v = v * 10 + uint64_t(stat[i] - '0');
      }
      return end > at ? std::optional<uint64_t>(v) : std::nullopt;
    }
    at = end;
  }
  return std::nullopt;
}

}  // namespace gpubind::sys

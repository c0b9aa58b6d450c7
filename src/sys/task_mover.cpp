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
};

}  // namespace

std::unique_ptr<TaskMover> real_task_mover() { return std::make_unique<RealTaskMover>(); }

}  // namespace gpubind::sys

#include "sys/task_counters.hpp"

#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <unordered_map>

#include "sys/affinity.hpp"
#include "sys/fault.hpp"
#include "sys/fsroot.hpp"
#include "sys/unique_fd.hpp"
#include "util/strings.hpp"
#include "util/sweep.hpp"

namespace gpubind::sys {

namespace {

// A group of three per-thread software counters, on any CPU: task-clock (the leader: CPU time in
// ns), cpu-migrations and context-switches. The kernel counts a migration when the thread next
// runs, on its new CPU, so a thread moved twice while it waited on a run queue counts once: the
// migrations that cost it its caches. All happen in the scheduler, in kernel mode: excluding the
// kernel would count nothing. The leader is not open when the group could not be (errno says why).
constexpr int kMembers = 2;
struct CounterGroup {
  UniqueFd leader;
  UniqueFd members[kMembers];
};
CounterGroup open_counter_group(int tid) {
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_TASK_CLOCK;
  attr.read_format = PERF_FORMAT_GROUP;
  auto open = [&](int group) {
    return int(faultable("gpubind/perf_event_open", [&] {
      return ::syscall(SYS_perf_event_open, &attr, tid, -1, group, PERF_FLAG_FD_CLOEXEC);
    }));
  };
  CounterGroup g;
  g.leader.reset(open(-1));
  if (!g.leader) return g;
  const uint64_t configs[kMembers] = {PERF_COUNT_SW_CPU_MIGRATIONS, PERF_COUNT_SW_CONTEXT_SWITCHES};
  for (int i = 0; i < kMembers; ++i) {
    attr.config = configs[i];
    g.members[i].reset(open(g.leader.get()));
    if (!g.members[i]) {
      int e = errno;
      g = CounterGroup{};
      errno = e;
      return g;
    }
  }
  return g;
}

class LiveTaskCounters final : public TaskCounters {
 public:
  explicit LiveTaskCounters(size_t max_open) : m_max(max_open) {}
  ~LiveTaskCounters() override {
    for (auto& [tid, c] : m_counters) close(c);
  }

  std::optional<CpuSet> allowed_cpus(int tid) override {
    auto set = thread_affinity(tid);
    if (!set) return std::nullopt;
    return *set;
  }

  std::optional<Counts> counts(int tid) override {
    auto it = m_counters.find(tid);
    bool fresh = it == m_counters.end();
    if (fresh) {
      Group g;
      if (!m_refused && m_open + kMembers + 1 <= m_max) {
        g.fds = open_counter_group(tid);
        if (!g.fds.leader) {
          if (errno == ESRCH) return std::nullopt;  // the thread is gone
          // Refused for every thread (not allowed, not built in); only this one at the file limit.
          if (errno != EMFILE && errno != ENFILE && errno != ENOMEM) m_refused = true;
        } else {
          m_open += kMembers + 1;
          g.migrations_at_attach = kernel_migrations(tid);
        }
      }
      it = m_counters.emplace(tid, std::move(g)).first;
    }
    Group& g = it->second;
    g.used = true;
    if (!g.fds.leader) return std::nullopt;
    // Once the leader's user page is mapped, the kernel rewrites it (and steps its `lock`) each time
    // the group is switched in with its thread. A thread whose counts did not change between two
    // reads was not running at the second; if it has not been switched in since (the lock as it was
    // before that read), its counts are the same and are not read again: no system call for a
    // thread that waits (most of a training process's).
    uint32_t lock = g.page ? __atomic_load_n(&g.page->lock, __ATOMIC_ACQUIRE) : 0;
    if (g.page && g.idle && lock == g.lock) {
      Counts same = g.last;
      same.unread = true;
      return same;
    }
    uint64_t values[kMembers + 2] = {};  // PERF_FORMAT_GROUP: the number of counters, then each value
    if (::read(g.fds.leader.get(), values, sizeof values) != ssize_t(sizeof values) || values[0] != kMembers + 1) return std::nullopt;
    Counts c{values[1], values[2], values[3], fresh};
    if (c.migrations > 0 && !g.migrations_checked) {
      g.migrations_checked = true;
      g.stale = stale_migration(tid, g.migrations_at_attach, c.migrations);
    }
    c.migrations -= g.stale;
    bool still = !fresh && c.run_ns == g.last.run_ns;
    g.idle = still && g.page;  // only with a lock read before this read
    g.lock = lock;
    g.last = c;
    // The page costs the thread at every switch-in (0.2-0.5 us here), so only a waiting thread has
    // it: mapped when it is found idle (trusted from the next read on), unmapped once it runs.
    if (still && !g.page) g.page = map_user_page(g.fds.leader.get());
    if (!still && g.page) unmap(g);
    return c;
  }

  void forget(int tid) override {
    if (auto it = m_counters.find(tid); it != m_counters.end()) {
      close(it->second);
      m_counters.erase(it);
    }
  }

  void sweep() override {
    sweep_unused(m_counters, [this](Group& g) { close(g); });
  }

 private:
  struct Group {
    CounterGroup fds;  // no leader: none could be attached; the caller reads /proc for this thread
    bool used = true;
    // The leader's user page, mapped read-only (nullptr where mmap was refused: every call reads),
    // its `lock` at the last read, that read's counts, and whether they equalled the read before.
    const perf_event_mmap_page* page = nullptr;
    uint32_t lock = 0;
    Counts last;
    bool idle = false;
    // The kernel's own count of the thread's migrations when the counters were attached (nullopt
    // where /proc/TID/sched is unreadable), whether the counter's first migrations were checked
    // against it, and the one it counted from before it was attached (0 or 1), taken off each read.
    std::optional<uint64_t> migrations_at_attach;
    bool migrations_checked = false;
    uint64_t stale = 0;
  };
  // The cpu-migrations counter can count one migration that happened before it was attached.
  // The kernel marks a thread it moves (task_struct's sched_migrated) only while some
  // cpu-migrations counter exists anywhere, and counts and clears the mark when the thread is
  // next switched in, if one still exists. A thread moved while another program's counter
  // existed (another watch, `perf stat`), which then closed before the thread ran again, keeps
  // the mark; the first counter attached to it afterwards counts it at the thread's next
  // switch-in: a migration that never happened in its time, on a thread that may be pinned to one
  // CPU (watch called such a rank MIGRATING). That count comes at the first switch-in, no later
  // than any real migration's, so it is in the first read that shows any migration: there the
  // counter is checked against the kernel's own count, `se.nr_migrations` of /proc/TID/sched
  // (read twice per thread, never at every sample). The counter counts at most as many
  // migrations as the kernel, never more (two moves while waiting count once), so any excess is
  // that one.
  static std::optional<uint64_t> kernel_migrations(int tid) {
    auto sched = read_file("/proc/" + std::to_string(tid) + "/sched");
    return sched ? parse_uint(key_value(*sched, "se.nr_migrations")) : std::nullopt;
  }
  static uint64_t stale_migration(int tid, std::optional<uint64_t> at_attach, uint64_t counted) {
    auto now = at_attach ? kernel_migrations(tid) : std::nullopt;
    return now && *now >= *at_attach && counted > *now - *at_attach ? 1 : 0;
  }
  // One page, no ring buffer: perf's mlock accounting charges it (perf_event_mlock_kb, then
  // RLIMIT_MEMLOCK, unless CAP_IPC_LOCK); past those the thread is read each time instead.
  static const perf_event_mmap_page* map_user_page(int leader) {
    void* p = ::mmap(nullptr, size_t(::sysconf(_SC_PAGESIZE)), PROT_READ, MAP_SHARED, leader, 0);
    return p == MAP_FAILED ? nullptr : static_cast<const perf_event_mmap_page*>(p);
  }
  static void unmap(Group& g) {
    ::munmap(const_cast<perf_event_mmap_page*>(g.page), size_t(::sysconf(_SC_PAGESIZE)));
    g.page = nullptr;
    g.idle = false;
  }
  void close(Group& g) {
    if (!g.fds.leader) return;
    if (g.page) unmap(g);
    g.fds = CounterGroup{};
    m_open -= kMembers + 1;
  }
  size_t m_max;
  size_t m_open = 0;
  bool m_refused = false;
  std::unordered_map<int, Group> m_counters;
};

}  // namespace

std::unique_ptr<TaskCounters> live_task_counters(size_t max_open) { return std::make_unique<LiveTaskCounters>(max_open); }

}  // namespace gpubind::sys

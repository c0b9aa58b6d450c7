#include "sys/task_counters.hpp"

#include <dirent.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <thread>

#include <gtest/gtest.h>

#include "sys/affinity.hpp"
#include "sys/fsroot.hpp"

namespace gpubind::sys {

namespace {

size_t open_fds() {
  size_t n = 0;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (dirent* e = ::readdir(d)) n += e->d_name[0] != '.';
    ::closedir(d);
  }
  return n;
}

void pin_self(unsigned cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  ASSERT_EQ(::sched_setaffinity(0, sizeof set, &set), 0);
}

// Runs until this thread has used `d` of CPU time (wall time would count time it waited,
// preempted, on a loaded machine).
uint64_t thread_cpu_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
}
void spin(std::chrono::milliseconds d) {
  uint64_t until = thread_cpu_ns() + uint64_t(std::chrono::nanoseconds(d).count());
  while (thread_cpu_ns() < until) {
  }
}

// The live counters, or a skip that says why this machine refuses them.
#define COUNTERS_OR_SKIP(counters, tid)                                                                        \
  if (!(counters)->counts((tid), 1)) {                                                                         \
    auto paranoid = read_file("/proc/sys/kernel/perf_event_paranoid");                                        \
    GTEST_SKIP() << "perf counters refused here (perf_event_paranoid " << (paranoid ? *paranoid : "unknown") \
                 << "): watch reads /proc's schedstat and sched instead";                                     \
  }

}  // namespace

TEST(TaskCounters, CountTheMigrationsAndCpuTimeOfAThreadMovedBetweenCpus) {
  auto all = current_affinity();
  ASSERT_TRUE(all.ok());
  if (all->count() < 2) GTEST_SKIP() << "needs 2 CPUs to move between, this process has " << all->count();
  unsigned a = *all->first(), b = *all->last();
  auto counters = live_task_counters(64);
  int tid = ::gettid();
  COUNTERS_OR_SKIP(counters, tid);
  auto before = counters->counts(tid, 1);
  for (int i = 0; i < 20; ++i) {
    pin_self(i % 2 ? a : b);  // off the CPU it runs on: the kernel moves it at once
    spin(std::chrono::milliseconds(1));
  }
  auto after = counters->counts(tid, 1);
  CpuSet restore = *all;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (unsigned c : restore.ids()) CPU_SET(c, &set);
  ::sched_setaffinity(0, sizeof set, &set);
  ASSERT_TRUE(after.has_value());
  EXPECT_GE(after->migrations - before->migrations, 19u);
  EXPECT_GE(after->run_ns - before->run_ns, 20'000'000u);
}

TEST(TaskCounters, ANewStartTimeIsANewThreadWhoseCountsStartAfresh) {
  auto counters = live_task_counters(64);
  int tid = ::gettid();
  COUNTERS_OR_SKIP(counters, tid);
  spin(std::chrono::milliseconds(30));
  auto old_thread = counters->counts(tid, 1);
  ASSERT_TRUE(old_thread.has_value());
  EXPECT_GE(old_thread->run_ns, 30'000'000u);
  auto new_thread = counters->counts(tid, 2);
  ASSERT_TRUE(new_thread.has_value());
  EXPECT_LT(new_thread->run_ns, old_thread->run_ns);
}

TEST(TaskCounters, SweepClosesTheCountersOfThreadsNotAskedAboutSinceTheLastSweep) {
  auto counters = live_task_counters(64);
  int tid = ::gettid();
  size_t before = open_fds();
  COUNTERS_OR_SKIP(counters, tid);
  EXPECT_EQ(open_fds(), before + 2);  // task-clock and cpu-migrations
  counters->sweep();                   // asked since the last sweep: kept
  EXPECT_EQ(open_fds(), before + 2);
  counters->sweep();
  EXPECT_EQ(open_fds(), before);
}

TEST(TaskCounters, NoMoreCountersThanTheLimitAllows) {
  auto counters = live_task_counters(1);  // not even one group of two
  EXPECT_EQ(counters->counts(::gettid(), 1), std::nullopt);
}

TEST(TaskCounters, AllowedCpusOfAnotherThread) {
  auto all = current_affinity();
  ASSERT_TRUE(all.ok());
  unsigned last = *all->last();
  std::atomic<int> tid{0};
  std::atomic<bool> done{false};
  std::thread t([&] {
    pin_self(last);
    tid = ::gettid();
    while (!done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  while (!tid) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  auto counters = live_task_counters(64);
  auto cpus = counters->allowed_cpus(tid);
  done = true;
  t.join();
  ASSERT_TRUE(cpus.has_value());
  EXPECT_EQ(*cpus, CpuSet::of({last}));
  EXPECT_EQ(counters->allowed_cpus(tid), std::nullopt);  // the thread has ended
}

}  // namespace gpubind::sys

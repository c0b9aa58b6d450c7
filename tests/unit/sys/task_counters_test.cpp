#include "sys/task_counters.hpp"

#include <dirent.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <thread>

#include <gtest/gtest.h>

#include "sys/affinity.hpp"
#include "sys/fsroot.hpp"
#include "util/strings.hpp"

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
  if (!(counters)->counts(tid)) {                                                                         \
    auto paranoid = read_file("/proc/sys/kernel/perf_event_paranoid");                                        \
    GTEST_SKIP() << "perf counters refused here (perf_event_paranoid " << (paranoid ? *paranoid : "unknown") \
                 << "): watch reads /proc's schedstat and sched instead";                                     \
  }

// Perf counters this process has mapped (their user pages), from /proc/self/maps.
size_t perf_mappings() {
  auto maps = read_file("/proc/self/maps");
  size_t n = 0;
  for (size_t at = 0; maps && (at = maps->find("[perf_event]", at)) != std::string::npos; ++at) ++n;
  return n;
}

// The state letter of thread `tid` of this process (`stat`'s third field), '?' when unreadable.
char thread_state(int tid) {
  auto stat = read_file("/proc/self/task/" + std::to_string(tid) + "/stat");
  size_t paren = stat ? stat->rfind(')') : std::string::npos;
  return paren != std::string::npos && paren + 2 < stat->size() ? (*stat)[paren + 2] : '?';
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
  auto before = counters->counts(tid);
  for (int i = 0; i < 20; ++i) {
    pin_self(i % 2 ? a : b);  // off the CPU it runs on: the kernel moves it at once
    spin(std::chrono::milliseconds(1));
  }
  auto after = counters->counts(tid);
  CpuSet restore = *all;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (unsigned c : restore.ids()) CPU_SET(c, &set);
  ::sched_setaffinity(0, sizeof set, &set);
  ASSERT_TRUE(after.has_value());
  EXPECT_GE(after->migrations - before->migrations, 19u);
  EXPECT_GE(after->run_ns - before->run_ns, 20'000'000u);
  EXPECT_GE(after->switches - before->switches, 10u);  // a move takes it off its CPU (the first may not move it)
}

// The kernel's own count of thread `tid`'s migrations (/proc's sched), nullopt when unreadable.
std::optional<uint64_t> kernel_migrations(int tid) {
  auto sched = read_file("/proc/self/task/" + std::to_string(tid) + "/sched");
  return sched ? parse_uint(key_value(*sched, "se.nr_migrations")) : std::nullopt;
}

TEST(TaskCounters, AMigrationFromBeforeTheCounterWasAttachedIsNotCounted) {
  auto all = current_affinity();
  ASSERT_TRUE(all.ok());
  if (all->count() < 2) GTEST_SKIP() << "needs 2 CPUs to move a thread between, this process has " << all->count();
  unsigned a = *all->first(), b = *all->last();
  auto counters = live_task_counters(64);
  COUNTERS_OR_SKIP(counters, ::gettid());
  counters.reset();  // no cpu-migrations counter of this process's left open
  if (!kernel_migrations(::gettid())) GTEST_SKIP() << "no /proc/PID/sched here (a kernel without CONFIG_SCHED_DEBUG)";
  pin_self(a);
  // The thread that is moved: it runs only when a byte comes down its pipe, as a pool's thread
  // runs when given work, so the test decides when it is switched in.
  int wake[2];
  ASSERT_EQ(::pipe(wake), 0);
  std::atomic<int> tid{0};
  std::atomic<unsigned> runs{0};
  std::thread moved([&] {
    pin_self(a);
    tid = ::gettid();
    char c;
    while (::read(wake[0], &c, 1) == 1) ++runs;
  });
  // A real-time thread that holds CPU b, so the moved thread waits there, queued, until released.
  std::atomic<int> hold{0};  // 0 starting, 1 holding, 2 released, -1 refused
  std::thread holder([&] {
    pin_self(b);
    sched_param p{};
    p.sched_priority = 1;
    if (::pthread_setschedparam(::pthread_self(), SCHED_FIFO, &p) != 0) {
      hold = -1;
      return;
    }
    hold = 1;
    while (hold == 1) {
    }
  });
  auto finish = [&] {
    if (hold == 1) hold = 2;
    holder.join();
    ::close(wake[1]);  // read() returns 0: the thread ends
    moved.join();
    ::close(wake[0]);
    cpu_set_t set;
    CPU_ZERO(&set);
    for (unsigned c : all->ids()) CPU_SET(c, &set);
    ::sched_setaffinity(0, sizeof set, &set);
  };
  // Runs the moved thread once: a byte down its pipe, then until it waits for the next.
  auto run_once = [&] {
    unsigned before = runs;
    EXPECT_EQ(::write(wake[1], "r", 1), 1);
    while (runs == before || thread_state(tid) != 'S') std::this_thread::sleep_for(std::chrono::milliseconds(1));
  };
  while (!tid || hold == 0 || thread_state(tid) != 'S') std::this_thread::yield();
  if (hold < 0) {
    finish();
    GTEST_SKIP() << "SCHED_FIFO refused (no CAP_SYS_NICE, or a cgroup without real-time time): needed to hold the thread off its new CPU";
  }
  // Another program's cpu-migrations counter exists while the thread is moved (at its wake-up,
  // onto CPU b, where it waits behind the holder), and is closed before it runs there: the kernel
  // marks the thread at the move and keeps the mark.
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_CPU_MIGRATIONS;
  int other = int(::syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC));
  ASSERT_GE(other, 0);
  auto before_move = kernel_migrations(tid);
  cpu_set_t to_b;
  CPU_ZERO(&to_b);
  CPU_SET(b, &to_b);
  ASSERT_EQ(::sched_setaffinity(tid, sizeof to_b, &to_b), 0);
  ASSERT_EQ(::write(wake[1], "r", 1), 1);
  while (kernel_migrations(tid) == before_move) std::this_thread::sleep_for(std::chrono::milliseconds(1));  // moved, queued on b
  ::close(other);
  hold = 2;
  while (runs == 0 || thread_state(tid) != 'S') std::this_thread::sleep_for(std::chrono::milliseconds(1));  // ran on b, waits again
  // Attached after the move, while the thread waits; then it runs once more, on b.
  auto fresh = live_task_counters(64);
  auto first = fresh->counts(tid);
  auto kernel_first = kernel_migrations(tid);
  run_once();
  auto second = fresh->counts(tid);
  auto kernel_second = kernel_migrations(tid);
  finish();
  ASSERT_TRUE(first && second && kernel_first && kernel_second);
  EXPECT_EQ(*kernel_second - *kernel_first, 0u);  // pinned to b
  EXPECT_EQ(second->migrations - first->migrations, 0u) << "a migration made before the counter was attached was counted";
}

TEST(TaskCounters, ACounterOutlivesItsThreadAndReadsFrozenUntilForgotten) {
  auto counters = live_task_counters(64);
  COUNTERS_OR_SKIP(counters, ::gettid());
  size_t before = open_fds();
  std::atomic<int> tid{0};
  std::atomic<bool> attached{false};
  uint64_t last_read = 0;  // what the counter said in the thread, before it ended
  std::thread t([&] {
    tid = ::gettid();
    while (!attached) std::this_thread::yield();
    // Until the counter itself has counted 20 ms. task-clock runs only while perf's context is
    // switched in, a little less than the thread's CPU clock per switch (0.25 ms less over 20 ms
    // on a loaded machine): a spin of 20 ms by the thread's clock is not 20 ms by the counter's.
    // The main thread is in join() meanwhile; it uses the counters before and after only.
    while (auto c = counters->counts(tid)) {
      last_read = c->run_ns;
      if (last_read >= 20'000'000u) break;
      spin(std::chrono::milliseconds(1));
    }
  });
  while (!tid) std::this_thread::yield();
  auto first = counters->counts(tid);
  attached = true;
  t.join();
  ASSERT_TRUE(first.has_value());
  EXPECT_TRUE(first->fresh);
  ASSERT_GE(last_read, 20'000'000u) << "the counter stopped answering while its thread ran";
  auto ended = counters->counts(tid);
  ASSERT_TRUE(ended.has_value());
  EXPECT_FALSE(ended->fresh);
  EXPECT_GE(ended->run_ns, last_read);  // what it counted while the thread lived, kept after it ended
  // The kernel does not hang the counter up: it reads the same forever (the probe tells a
  // reused id by the thread's kept-open schedstat instead).
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(counters->counts(tid)->run_ns, ended->run_ns);
  EXPECT_EQ(open_fds(), before + 3);
  counters->forget(tid);
  EXPECT_EQ(open_fds(), before);
  EXPECT_FALSE(counters->counts(tid).has_value());  // no such thread to attach to now
}

TEST(TaskCounters, AThreadThatHasNotRunSinceAnIdleReadIsNotReadAgainUntilItRuns) {
  auto counters = live_task_counters(64);
  COUNTERS_OR_SKIP(counters, ::gettid());
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  std::atomic<int> tid{0}, runs{0};
  std::thread t([&] {
    tid = ::gettid();
    char c = 0;
    while (::read(pipe_fds[0], &c, 1) == 1 && c == 'r') {  // waits in read(), as an idle pool's thread
      spin(std::chrono::milliseconds(5));
      ++runs;
    }
  });
  while (!tid) std::this_thread::yield();
  // Until it sleeps in read(), its only wait (on a loaded machine it may sit runnable for a while
  // first, which two equal reads would not tell from waiting).
  while (thread_state(tid) != 'S') std::this_thread::sleep_for(std::chrono::milliseconds(1));
  // Read until two reads in a row agree: the second read was of a thread that had not run since
  // the first.
  auto last = counters->counts(tid);
  ASSERT_TRUE(last.has_value());
  EXPECT_TRUE(last->fresh);
  bool agreed = false;
  for (int i = 0; i < 400 && !agreed; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    auto now = counters->counts(tid);
    ASSERT_TRUE(now.has_value());
    EXPECT_FALSE(now->unread);  // not before two reads agreed
    agreed = now->run_ns == last->run_ns;
    last = now;
  }
  ASSERT_TRUE(agreed) << "the thread never stopped running";
  EXPECT_EQ(perf_mappings(), 1u);  // the waiting thread's page, mapped when it was found idle
  // The read after the page was mapped is trusted; from the next one on, it is not read again.
  auto trusted = counters->counts(tid);
  ASSERT_TRUE(trusted.has_value());
  EXPECT_FALSE(trusted->unread);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  auto waiting = counters->counts(tid);
  ASSERT_TRUE(waiting.has_value());
  EXPECT_TRUE(waiting->unread) << "read again although the thread has not run";
  EXPECT_EQ(waiting->run_ns, last->run_ns);
  EXPECT_EQ(waiting->switches, last->switches);
  // It runs: the next call reads, and sees the CPU time it used.
  ASSERT_EQ(::write(pipe_fds[1], "r", 1), 1);
  while (runs < 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  auto ran = counters->counts(tid);
  ASSERT_TRUE(ran.has_value());
  EXPECT_FALSE(ran->unread);
  EXPECT_GE(ran->run_ns, waiting->run_ns + 4'000'000u);  // its 5 ms by its own clock, less perf's switch-in lag
  EXPECT_GT(ran->switches, waiting->switches);
  EXPECT_EQ(perf_mappings(), 0u);  // a thread that runs pays nothing at its switches
  ::close(pipe_fds[1]);  // read() returns 0: the thread ends
  t.join();
  ::close(pipe_fds[0]);
}

TEST(TaskCounters, AThreadRunningAtTheLastReadIsReadAgainThoughNotSwitchedInSince) {
  auto all = current_affinity();
  ASSERT_TRUE(all.ok());
  if (all->count() < 2) GTEST_SKIP() << "needs 2 CPUs, one for a thread that runs throughout; this process has " << all->count();
  auto counters = live_task_counters(64);
  COUNTERS_OR_SKIP(counters, ::gettid());
  unsigned a = *all->first(), b = *all->last();
  std::atomic<int> tid{0};
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> used{0};  // the thread's CPU time, as it last saw it
  std::thread t([&] {
    pin_self(b);
    tid = ::gettid();
    while (!stop) used = thread_cpu_ns();  // runs throughout: switched in once, perhaps never again while read
  });
  pin_self(a);
  while (!tid) std::this_thread::yield();
  // Between reads, the thread uses 2 ms of CPU (by its own clock, whatever else the machine runs),
  // so each read finds its counts changed and none takes it for waiting.
  auto after_using = [&](auto read) {
    uint64_t from = used;
    while (used < from + 2'000'000u) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return read();
  };
  auto read = [&] { return counters->counts(tid); };
  auto first = read();
  ASSERT_TRUE(first.has_value());
  auto second = after_using(read);
  auto third = after_using(read);
  size_t mapped = perf_mappings();
  stop = true;
  t.join();
  cpu_set_t set;
  CPU_ZERO(&set);
  for (unsigned c : all->ids()) CPU_SET(c, &set);
  ::sched_setaffinity(0, sizeof set, &set);
  ASSERT_TRUE(second.has_value() && third.has_value());
  EXPECT_FALSE(third->unread) << "a thread that ran up to the last read was taken for idle";
  EXPECT_GT(third->run_ns, second->run_ns);
  EXPECT_EQ(mapped, 0u) << "a running thread's counters were mapped: it pays at every switch-in";
}

TEST(TaskCounters, SweepClosesTheCountersOfThreadsNotAskedAboutSinceTheLastSweep) {
  auto counters = live_task_counters(64);
  int tid = ::gettid();
  size_t before = open_fds();
  COUNTERS_OR_SKIP(counters, tid);
  EXPECT_EQ(open_fds(), before + 3);  // task-clock, cpu-migrations, context-switches
  counters->sweep();                   // asked since the last sweep: kept
  EXPECT_EQ(open_fds(), before + 3);
  counters->sweep();
  EXPECT_EQ(open_fds(), before);
}

TEST(TaskCounters, NoMoreCountersThanTheLimitAllows) {
  auto counters = live_task_counters(2);  // not even one group of three
  EXPECT_FALSE(counters->counts(::gettid()).has_value());
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
  // The thread has ended. join() returns when the kernel clears its id word, a little before the
  // thread is released, so this waits (at most a second) for it to go.
  std::optional<CpuSet> after_end = counters->allowed_cpus(tid);
  for (int i = 0; i < 1000 && after_end; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    after_end = counters->allowed_cpus(tid);
  }
  EXPECT_EQ(after_end, std::nullopt);
}

}  // namespace gpubind::sys

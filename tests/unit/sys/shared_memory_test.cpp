// Shared memory, futex waits and forked calls (sys/shared_memory.hpp): what bench's ranks and
// orchestrator meet through.
#include "sys/shared_memory.hpp"

#include <gtest/gtest.h>

#include <new>

namespace gpubind::sys {

TEST(SharedMemory, AForkedChildWritesWhatTheParentReads) {
  auto mem = shared_memory(4096);
  ASSERT_TRUE(mem) << mem.error().message();
  auto* word = new (mem->data()) std::atomic<uint32_t>(0);
  auto pid = fork_call([&] {
    word->store(42);
    futex_wake_all(*word);
    return 7;
  });
  ASSERT_TRUE(pid) << pid.error().message();
  while (word->load() == 0) futex_wait(*word, 0, std::chrono::milliseconds(100));
  EXPECT_EQ(word->load(), 42u);
  auto end = reap_child(*pid, true);
  ASSERT_TRUE(end);
  EXPECT_EQ(end->exit_code, 7);
  EXPECT_EQ(end->signal, 0);
}

TEST(SharedMemory, AWaitOnAWordThatAlreadyChangedReturnsAtOnce) {
  auto mem = shared_memory(64);
  ASSERT_TRUE(mem);
  auto* word = new (mem->data()) std::atomic<uint32_t>(5);
  futex_wait(*word, 4);  // not 4: returns without sleeping (no timeout given)
  EXPECT_EQ(word->load(), 5u);
}

TEST(SharedMemory, AKilledChildIsReportedWithItsSignal) {
  auto pid = fork_call([] {
    for (;;) futex_wait(*new std::atomic<uint32_t>(0), 0);
    return 0;
  });
  ASSERT_TRUE(pid);
  EXPECT_FALSE(reap_child(*pid, false));  // still running
  kill_child(*pid);
  auto end = reap_child(*pid, true);
  ASSERT_TRUE(end);
  EXPECT_EQ(end->signal, 9);
}

TEST(SharedMemory, AnExceptionInTheChildIsAnExitStatus) {
  auto pid = fork_call([]() -> int { throw std::runtime_error("no"); });
  ASSERT_TRUE(pid);
  auto end = reap_child(*pid, true);
  ASSERT_TRUE(end);
  EXPECT_EQ(end->exit_code, 70);
}

TEST(SharedMemory, TheCurrentCpuIsOneOfThisMachines) {
  int cpu = current_cpu();
  EXPECT_GE(cpu, 0);
}

}  // namespace gpubind::sys

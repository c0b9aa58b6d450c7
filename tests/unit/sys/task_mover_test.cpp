// The real TaskMover's hold on a process (rebind and watch --enforce act on PIDs they probed
// earlier): held by a pidfd and its start time, so a PID that went to another process is told.
#include "sys/task_mover.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "sys/fsroot.hpp"

namespace gpubind::sys {

TEST(TaskMover, TheStartTimeIsField22WhateverTheCommandHolds) {
  EXPECT_EQ(stat_start_time("77 (my (odd) name) S 1 77 77 0 -1 4194560 100 0 0 0 3 1 0 0 20 0 4 0 123456 9000 300\n"), 123456u);
  EXPECT_FALSE(stat_start_time("77 (x) S 1 2 3"));  // too short
  EXPECT_FALSE(stat_start_time("no parentheses"));
}

TEST(TaskMover, AHeldProcessIsTheOneProbedAndItsEndIsSeen) {
  auto own = read_file("/proc/self/stat");
  ASSERT_TRUE(own.ok());
  auto start = stat_start_time(*own);
  ASSERT_TRUE(start);
  auto mover = real_task_mover();
  ASSERT_TRUE(mover->hold(::getpid(), *start).ok());
  EXPECT_TRUE(mover->held_alive(::getpid()));
  mover->release(::getpid());
  auto other = mover->hold(::getpid(), *start + 1);  // "the process probed" started at another time
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().kind, ErrorKind::not_found);
  EXPECT_NE(other.error().why.find("no longer the process probed"), std::string::npos);
  // A child held, then ended and reaped: no longer alive, though its PID may be reused.
  pid_t child = ::fork();
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  ASSERT_GT(child, 0);
  auto text = read_file("/proc/" + std::to_string(child) + "/stat");
  ASSERT_TRUE(text.ok());
  ASSERT_TRUE(mover->hold(child, *stat_start_time(*text)).ok());
  EXPECT_TRUE(mover->held_alive(child));
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_FALSE(mover->held_alive(child));
  mover->release(child);
}

}  // namespace gpubind::sys

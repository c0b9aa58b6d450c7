// sys::run_isolated and sys::env_value: a library call in a child process, with the environment
// that library reads applied in the child only.
#include "sys/process.hpp"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "../../support/orphans.hpp"
#include "sys/environment.hpp"

namespace gpubind::sys {

TEST(RunIsolated, TheChildGetsTheEnvironmentChangesAndThisProcessKeepsItsOwn) {
  ::setenv("GPUBIND_TEST_KEPT", "parent", 1);
  ::setenv("GPUBIND_TEST_UNSET", "parent", 1);
  auto out = run_isolated(
      [] {
        return env_value("GPUBIND_TEST_KEPT").value_or("<unset>") + " " + env_value("GPUBIND_TEST_NEW").value_or("<unset>") +
               " " + env_value("GPUBIND_TEST_UNSET").value_or("<unset>");
      },
      {{"GPUBIND_TEST_KEPT", "child"}, {"GPUBIND_TEST_NEW", "1"}, {"GPUBIND_TEST_UNSET", std::nullopt}});
  ASSERT_TRUE(out.ok()) << out.error().message();
  EXPECT_EQ(*out, "child 1 <unset>");
  EXPECT_EQ(env_value("GPUBIND_TEST_KEPT"), "parent");
  EXPECT_EQ(env_value("GPUBIND_TEST_UNSET"), "parent");
  EXPECT_FALSE(env_value("GPUBIND_TEST_NEW").has_value());
  ::unsetenv("GPUBIND_TEST_KEPT");
  ::unsetenv("GPUBIND_TEST_UNSET");
}

TEST(RunIsolated, ACrashInTheChildIsAnErrorThatNamesTheSignal) {
  auto out = run_isolated([]() -> std::string {
    std::raise(SIGSEGV);
    return "not reached";
  });
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().message().find("SIGSEGV"), std::string::npos) << out.error().message();
}

// A library's own text on stderr (hwloc's assertion message before it aborts) is not printed
// beside gpubind's line: the error quotes its first line instead.
TEST(RunIsolated, TheChildsStderrIsQuotedInTheErrorNotPrinted) {
  ::testing::internal::CaptureStderr();
  auto out = run_isolated([]() -> std::string {
    std::fprintf(stderr, "topology.c:42: hwloc_insert: Assertion `obj->cpuset' failed.\nsecond line\n");
    std::fflush(stderr);
    std::abort();
  });
  std::string printed = ::testing::internal::GetCapturedStderr();
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(printed, "");
  EXPECT_NE(out.error().why.find("crashed (SIGABRT; it said: topology.c:42: hwloc_insert: Assertion `obj->cpuset' failed.)"), std::string::npos)
      << out.error().why;
  auto quiet = run_isolated([]() -> std::string {
    std::fprintf(stderr, "hwloc: a warning of its own\n");
    return "fine";
  });
  ASSERT_TRUE(quiet.ok());
  EXPECT_EQ(*quiet, "fine");
}

TEST(RunIsolated, AChildPastItsDeadlineIsStoppedAndSaysSo) {
  auto out = run_isolated(
      []() -> std::string {
        ::pause();
        return "not reached";
      },
      {}, std::chrono::seconds(1));
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().message().find("did not finish within 1 s"), std::string::npos) << out.error().message();
}

// run_command (squeue and srun for --slurm-job): both streams kept, the exit status said, a
// program that cannot start or does not end an Error.
TEST(RunCommand, KeepsOutputErrorAndExitStatus) {
  auto r = run_command({"sh", "-c", "echo out; echo err >&2; exit 3"}, std::chrono::seconds(60));
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->out, "out\n");
  EXPECT_EQ(r->err, "err\n");
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_FALSE(r->truncated);
}

TEST(RunCommand, AMissingProgramIsAnError) {
  auto r = run_command({"gpubind-no-such-program"}, std::chrono::seconds(60));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("cannot be run"), std::string::npos) << r.error().message();
}

TEST(RunCommand, AProgramPastItsDeadlineIsKilledAndSaysSo) {
  auto r = run_command({"sleep", "600"}, std::chrono::seconds(1));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("did not finish within 1 s: killed"), std::string::npos) << r.error().message();
}

// gpubind killed while a library blocks in the child (hwloc reading a FIFO): the child must not
// stay behind under PID 1.
TEST(RunIsolated, TheChildDiesWithThisProcess) {
  pid_t child = testing::orphan_of([](int report) {
    static_cast<void>(run_isolated([report]() -> std::string {
      testing::report_pid(report, ::getpid());
      ::pause();
      return "";
    }));
  });
  ASSERT_GT(child, 0);
  testing::wait_while([child] { return testing::running(child); });
  EXPECT_FALSE(testing::running(child)) << "the child " << child << " outlived its parent";
}

TEST(EnvValue, AnEmptyValueIsAValueAndUnsetIsNone) {
  ::setenv("GPUBIND_TEST_EMPTY", "", 1);
  EXPECT_EQ(env_value("GPUBIND_TEST_EMPTY"), "");
  ::unsetenv("GPUBIND_TEST_EMPTY");
  EXPECT_FALSE(env_value("GPUBIND_TEST_EMPTY").has_value());
  ::setenv("GPUBIND_TEST_A", "a", 1);
  auto m = env_values({"GPUBIND_TEST_A", "GPUBIND_TEST_EMPTY"});
  EXPECT_EQ(m.size(), 1u);
  EXPECT_EQ(m["GPUBIND_TEST_A"], "a");
  ::unsetenv("GPUBIND_TEST_A");
}

}  // namespace gpubind::sys

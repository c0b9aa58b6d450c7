// sys::UniqueFd and sys::fork_child: one owner per descriptor, one way to fork a child.
#include "sys/fork.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>

#include "../../support/orphans.hpp"
#include "sys/process.hpp"
#include "sys/unique_fd.hpp"

namespace gpubind::sys {
namespace {

bool is_open(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

}  // namespace

TEST(UniqueFd, ClosesWhatItHoldsWhenItGoesAndNotWhatItGaveAway) {
  int held = -1, given = -1;
  {
    UniqueFd a(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    ASSERT_TRUE(a);
    held = a.get();
    UniqueFd b(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    given = b.release();
    EXPECT_FALSE(b);
    UniqueFd moved(std::move(a));
    EXPECT_FALSE(a);
    EXPECT_EQ(moved.get(), held);
    EXPECT_TRUE(is_open(held));
  }
  EXPECT_FALSE(is_open(held));
  EXPECT_TRUE(is_open(given));
  ::close(given);
}

TEST(UniqueFd, ResetClosesTheOldOneAndCloseSaysHowItWent) {
  UniqueFd a(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  int first = a.get();
  a.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  EXPECT_FALSE(is_open(first));
  int second = a.get();
  EXPECT_EQ(a.close(), 0);
  EXPECT_FALSE(a);
  EXPECT_FALSE(is_open(second));
  EXPECT_EQ(a.close(), 0);  // nothing held: nothing to close
}

// A child in a group of its own leads it as soon as fork_child returns in the parent: a signal to
// the group sent at once reaches it.
TEST(ForkChild, AnOwnGroupIsSetBeforeTheParentGoesOn) {
  auto pid = fork_child({.own_group = true});
  ASSERT_TRUE(pid.ok()) << pid.error().message();
  if (*pid == 0) {
    ::pause();
    ::_exit(0);
  }
  EXPECT_EQ(::getpgid(*pid), *pid);
  ::kill(-*pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(*pid, &status, 0), *pid);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

// The default child dies with its parent, even one SIGKILLed; a Watcher's helper outlives it and
// does its work at the end of the pipe.
TEST(ForkChild, TheChildDiesWithItsParentAndAWatcherOutlivesIt) {
  char marker[] = "/tmp/gpubind-watcher-XXXXXX";
  int m = ::mkstemp(marker);
  ASSERT_GE(m, 0);
  ::close(m);
  ::unlink(marker);
  pid_t child = testing::orphan_of([path = std::string(marker)](int report) {
    auto forked = fork_child();
    if (!forked) ::_exit(1);
    if (*forked == 0) {
      ::pause();
      ::_exit(0);
    }
    auto watcher = start_watcher("gpubind-test", [path](int fd) {
      char c;
      while (::read(fd, &c, 1) > 0) {
      }
      std::ofstream(path) << "cue\n";
    });
    if (!watcher) ::_exit(1);
    testing::report_pid(report, *forked);
    ::pause();  // the Watcher is held until this process is killed
  });
  ASSERT_GT(child, 0);
  testing::wait_while([&] { return testing::running(child) || !std::ifstream(marker).good(); });
  EXPECT_FALSE(testing::running(child)) << "the child " << child << " outlived its parent";
  EXPECT_TRUE(std::ifstream(marker).good()) << "the watcher did not run at the end of its pipe";
  ::unlink(marker);
}

TEST(RunCommand, TheNamedVariablesAreRemovedFromItsEnvironment) {
  ::setenv("GPUBIND_TEST_TAR_OPTIONS", "--to-command=evil", 1);
  auto r = run_command({"sh", "-c", "echo ${GPUBIND_TEST_TAR_OPTIONS-unset}"}, std::chrono::seconds(60),
                       {.unset_env = {"GPUBIND_TEST_TAR_OPTIONS"}});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->out, "unset\n");
  EXPECT_EQ(::getenv("GPUBIND_TEST_TAR_OPTIONS"), std::string("--to-command=evil"));  // this process keeps it
  ::unsetenv("GPUBIND_TEST_TAR_OPTIONS");
}

}  // namespace gpubind::sys

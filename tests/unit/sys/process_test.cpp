// sys::run_isolated and sys::env_value: a library call in a child process, with the environment
// that library reads applied in the child only.
#include "sys/process.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>

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

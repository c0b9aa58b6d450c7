// sys::refuse_modules and sys::exec_module_binary: how the static front (src/cli/front.cpp) hands a
// command to gpubind-full instead of loading a module it cannot load.
#include "sys/module.hpp"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

namespace gpubind::sys {

namespace {
struct Refused {
  std::string file;
};
[[noreturn]] void throw_refused(const std::string& file) { throw Refused{file}; }
}  // namespace

TEST(RefuseModules, EveryWayToLoadAModuleCallsTheRefusalWithTheFileName) {
  refuse_modules(throw_refused);
  std::string by_name, by_path;
  try {
    (void)find_module_symbol("gpubind-hwloc.so", "gpubind_hwloc_api");
  } catch (const Refused& r) {
    by_name = r.file;
  }
  try {
    (void)module_symbol("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", "nvmlInit_v2");
  } catch (const Refused& r) {
    by_path = r.file;
  }
  refuse_modules(nullptr);
  EXPECT_EQ(by_name, "gpubind-hwloc.so");
  EXPECT_EQ(by_path, "libnvidia-ml.so.1");
  // Without a refusal the loader is asked again: a module that is not installed is an error.
  auto none = find_module_symbol("gpubind-no-such-module.so", "entry");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().kind, ErrorKind::not_found);
}

TEST(ExecModuleBinary, ABinaryNotInstalledSaysWhereItLooked) {
  char name[] = "gpubind-test";
  char* argv[] = {name, nullptr};
  Error e = exec_module_binary("gpubind-no-such-binary", argv);
  EXPECT_EQ(e.kind, ErrorKind::not_found);
  EXPECT_EQ(e.what, "gpubind-no-such-binary");
  EXPECT_NE(e.why.find("not installed (looked for " + executable_dir() + "/gpubind-no-such-binary, "), std::string::npos) << e.why;
}

TEST(ExecModuleBinary, RunsTheFirstCandidateWithTheArgumentsAsTheyAre) {
  // A stand-in for gpubind-full beside this test binary, which writes its arguments down.
  std::string name = "gpubind-test-sibling-" + std::to_string(::getpid());
  std::string script = executable_dir() + "/" + name, out = script + ".out";
  {
    std::ofstream f(script);
    f << "#!/bin/sh\necho \"$0|$*\" >\"" << out << "\"\n";
  }
  ASSERT_EQ(::chmod(script.c_str(), 0755), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char a0[] = "gpubind", a1[] = "topo", a2[] = "--json";
    char* argv[] = {a0, a1, a2, nullptr};
    exec_module_binary(name, argv);
    ::_exit(99);  // only when it could not execute the stand-in
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  std::ifstream in(out);
  std::stringstream got;
  got << in.rdbuf();
  ::unlink(script.c_str());
  ::unlink(out.c_str());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  // The script's $0 is its path (the kernel runs it by path); the arguments follow unchanged.
  EXPECT_EQ(got.str(), script + "|topo --json\n");
}

}  // namespace gpubind::sys

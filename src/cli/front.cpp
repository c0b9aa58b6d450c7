#include "cli/front.hpp"

#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "sys/module.hpp"
#include "util/exit_status.hpp"

namespace gpubind::cli {

namespace {

char** front_argv = nullptr;

// Executes gpubind-full with this process's arguments; returns the status to exit with only when
// it cannot (exec: 125, as for any failure of gpubind before the command starts).
int hand_over(const std::string& needed, int failure_exit) {
  Error e = sys::exec_module_binary(kFullBinary, front_argv);
  return fail_with(Error{e.what, e.why + "; the gpubind front binary hands it " + needed}, failure_exit);
}

// A module is needed (discovery, a GPU runtime, a topology file read through hwloc): nothing was
// applied or printed yet, so gpubind-full runs the whole command instead.
[[noreturn]] void hand_over_exec(const std::string& module) {
  std::exit(hand_over("an exec that needs " + module, kExitExecFailed));
}

}  // namespace

int run_front(int argc, char** argv) {
  front_argv = argv;
  if (argc < 2 || std::strcmp(argv[1], "exec") != 0) return hand_over("every command but exec", kExitFailure);
  sys::refuse_modules(hand_over_exec);
  try {
    return cmd_exec(std::vector<std::string>(argv + 2, argv + argc));
  } catch (const std::exception& e) {
    return fail_with(Error{"exec", std::string("internal error: ") + e.what()}, kExitExecFailed);
  }
}

}  // namespace gpubind::cli

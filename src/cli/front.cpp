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

// The served command's status for a failure of gpubind itself (exec: 125).
int served_failure_exit = kExitFailure;

// A module is needed (discovery, a GPU runtime, a topology file read through hwloc): exec and
// launch load them before they print, bind or start anything, so gpubind-full runs the whole
// command instead.
[[noreturn]] void hand_over_needing(const std::string& module) {
  std::exit(hand_over(std::string(front_argv[1]) + " when it needs " + module, served_failure_exit));
}

}  // namespace

int run_front(int argc, char** argv) {
  front_argv = argv;
  // What the front serves: a rank's start, and a node's launch of its ranks.
  static const Command served[] = {{"exec", "", cmd_exec, kExitExecFailed}, {"launch", "", cmd_launch}};
  const Command* c = nullptr;
  for (const Command& s : served)
    if (argc >= 2 && std::strcmp(argv[1], s.name) == 0) c = &s;
  if (!c) return hand_over("every command but exec and launch", kExitFailure);
  served_failure_exit = c->internal_error_exit;
  sys::refuse_modules(hand_over_needing);
  try {
    return c->run(std::vector<std::string>(argv + 2, argv + argc));
  } catch (const std::exception& e) {
    return fail_with(Error{c->name, std::string("internal error: ") + e.what()}, c->internal_error_exit);
  }
}

}  // namespace gpubind::cli

#pragma once
// The table of subcommands: `gpubind help` prints it, main() dispatches through it, so the help
// text cannot drift from what exists.
#include <string>
#include <vector>

namespace gpubind::cli {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(const std::vector<std::string>& args);  // args exclude "gpubind" and the command name
  int internal_error_exit = 1;  // the status when an exception escapes `run` (exec: 125, as env(1))
};

const std::vector<Command>& commands();

// Entry point used by main(): returns the process exit status.
int run_main(int argc, char** argv);

// One function per subcommand, each in cmd_<name>.cpp.
int cmd_topo(const std::vector<std::string>& args);
int cmd_plan(const std::vector<std::string>& args);
int cmd_compare(const std::vector<std::string>& args);
int cmd_exec(const std::vector<std::string>& args);
int cmd_launch(const std::vector<std::string>& args);
int cmd_check(const std::vector<std::string>& args);
int cmd_slurm(const std::vector<std::string>& args);
int cmd_watch(const std::vector<std::string>& args);
int cmd_rebind(const std::vector<std::string>& args);
int cmd_doctor(const std::vector<std::string>& args);
int cmd_bench(const std::vector<std::string>& args);
int cmd_k8s(const std::vector<std::string>& args);

}  // namespace gpubind::cli

#include "cli/commands.hpp"

#include <cstdio>
#include <cstring>
#include <exception>

#include "cli/common.hpp"
#include "discover/hwloc_loader.hpp"
#include "util/exit_status.hpp"
#include "util/version.hpp"

namespace gpubind::cli {

namespace {

void print_usage(FILE* out) {
  std::fprintf(out, "usage: gpubind <command> [options]\n\nBind GPU workers to the CPUs, memory and NIC nearest their GPU.\n\ncommands:\n");
  for (const Command& c : commands()) std::fprintf(out, "  %-10s %s\n", c.name, c.summary);
  std::fprintf(out, "\n'gpubind <command> --help' shows a command's options. Exit codes: 0 ok, 1 error, 2 usage error,\n"
               "3 check, watch or k8s check found problems; rebind: 4 refused, 5 no permission; doctor: 3 warnings, 4 failures;\n"
               "exec: 125 gpubind failed, 126 not executable, 127 not found, else the command's own.\n");
}

}  // namespace

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      {"topo", "show sockets, NUMA nodes, caches, cores, GPUs and NICs and how they connect", cmd_topo},
      {"plan", "plan each local rank's GPU, CPUs, memory node and NIC", cmd_plan},
      {"compare", "score the same job under several binding strategies side by side", cmd_compare},
      {"exec", "bind this rank (under srun, mpirun, torchrun...) to its GPU's CPUs, memory and NIC, then run CMD", cmd_exec,
       kExitExecFailed},
      {"launch", "start N bound local ranks with torchrun's environment and supervise them", cmd_launch},
      {"check", "judge what running processes are actually bound to: OK or what is wrong, and why", cmd_check},
      {"slurm", "Slurm helpers: 'gpubind slurm gres-conf' writes gres.conf with correct Cores=", cmd_slurm},
      {"watch", "sample running workers over time: migrations, CPU time off the GPU's node, drift, imbalance", cmd_watch},
      {"rebind", "move a running job's ranks in place: every thread onto its GPU's CPUs, its pages onto the GPU's node", cmd_rebind},
      {"doctor", "check this node for the causes of jitter binding cannot cure: NUMA balancing, isolcpus, PCIe links, swap...",
       cmd_doctor},
      {"bench", "measure a synthetic data-parallel job under each binding strategy: step time, jitter, idle, migrations",
       cmd_bench},
      {"k8s", "Kubernetes: 'gpubind k8s check' judges whether the kubelet gave GPU pods CPUs on their GPUs' NUMA node", cmd_k8s},
  };
  return table;
}

int run_main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
      std::strcmp(argv[1], "help") == 0) {
    print_usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? kExitUsage : kExitOk;
  }
  if (std::strcmp(argv[1], "--version") == 0) {
    auto hwloc = discover::hwloc_version();
    std::printf("gpubind %s (hwloc %s)\n", kVersion, hwloc ? hwloc->c_str() : "discovery module not installed");
    return kExitOk;
  }
  std::vector<std::string> args(argv + 2, argv + argc);
  for (const Command& c : commands()) {
    if (std::strcmp(argv[1], c.name) != 0) continue;
    // The library reports failures as Results; an exception reaching here is a bug, and still
    // must end as one line and a documented status rather than a core dump.
    try {
      return c.run(args);
    } catch (const std::exception& e) {
      return fail_with(Error{c.name, std::string("internal error: ") + e.what()}, c.internal_error_exit);
    }
  }
  fail(Error{argv[1], "unknown command", ErrorKind::usage});
  std::fprintf(stderr, "hint: 'gpubind help' lists the commands\n");
  return kExitUsage;
}

}  // namespace gpubind::cli

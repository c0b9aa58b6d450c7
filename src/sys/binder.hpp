#pragma once
// Binder: the side effects of binding this process, behind one small interface so the bind
// layer is tested with a recording fake. RealBinder makes the syscalls; it must only be used on
// the machine the plan was made for (the CLI refuses a file topology unless --dry-run).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sys/fsroot.hpp"
#include "util/cpuset.hpp"
#include "util/exit_status.hpp"
#include "util/result.hpp"

namespace gpubind::sys {

enum class MemMode { preferred, bind, interleave };

// Why exec failed, in env(1)'s terms: 127 not found, 126 found but not executable.
struct ExecFailure {
  int exit_code = kExitNotFound;
  std::string message;
};

class Binder {
 public:
  virtual ~Binder() = default;
  // sched_setaffinity for the calling thread (inherited by threads it creates and kept by exec).
  virtual Status set_cpu_affinity(const CpuSet& cpus) = 0;
  // set_mempolicy for the calling thread; `nodes` are NUMA OS indexes. An Error of kind
  // permission (EPERM, EACCES) or unsupported (ENOSYS) is the environment refusing the call.
  virtual Status set_memory_policy(MemMode mode, const CpuSet& nodes) = 0;
  // Back to the default policy (allocate on the node of the CPU that runs): undoes
  // set_memory_policy when a later step of a binding fails.
  virtual Status reset_memory_policy() = 0;
  virtual Status set_env(const std::string& name, const std::string& value) = 0;
  // The variable's value now (nullopt when unset), and removing it: undoing set_env.
  virtual std::optional<std::string> get_env(const std::string& name) = 0;
  virtual Status unset_env(const std::string& name) = 0;
  // execvp(argv); returns only when the exec failed.
  virtual ExecFailure exec(const std::vector<std::string>& argv) = 0;
};

std::unique_ptr<Binder> real_binder();

// execvp(argv) for this process; returns only when it failed, saying why in env(1)'s terms. The
// real Binder's exec and launch's spawned ranks both end here.
ExecFailure exec_command(const std::vector<std::string>& argv);

// Linux's own view, for validating a binding before applying it, read under `root`.
Result<CpuSet> online_cpus(const FsRoot& root);        // sys/devices/system/cpu/online
Result<CpuSet> online_numa_nodes(const FsRoot& root);  // sys/devices/system/node/online (node 0 when absent)

}  // namespace gpubind::sys

#pragma once
// Choosing which processes `check` and `watch` look at, through an FsRoot, and probing them.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "probe/probe.hpp"
#include "sys/fsroot.hpp"

namespace gpubind::probe {

// Every descendant of `pid` (children, grandchildren...), sorted.
std::vector<int> descendants_of(const sys::FsRoot& root, int pid);

// Threads in state R (running or waiting for a CPU) now, outside process `pid` and its
// descendants: the other load on the CPUs at this moment (bench samples it while it runs). Each
// process's stat is read; a multi-threaded one's tasks too. Kernel threads count.
unsigned runnable_threads_outside(const sys::FsRoot& root, int pid);
// PIDs whose command line (arguments joined by spaces) `matches` accepts.
std::vector<int> matching(const sys::FsRoot& root, const std::function<bool(const std::string&)>& matches);
// PIDs holding a GPU device file open (/dev/nvidiaN, /dev/dri/renderD*, /dev/kfd).
std::vector<int> gpu_processes(const sys::FsRoot& root);

// The tasks of a Slurm job on one node: processes whose environment has SLURM_JOB_ID=job and a
// SLURM_STEP_ID (a step's tasks and their children, not the batch script or srun itself), other
// than `skip_step` (the step gpubind itself runs in), and SLURMD_NODENAME=node when `node` is not
// empty (several slurmd on one host, as the test cluster runs them, keep their tasks apart).
struct SlurmTasks {
  std::string job;
  std::string node;
  std::string skip_step;
};
std::vector<int> slurm_job_tasks(const sys::FsRoot& root, const SlurmTasks& which);

// What the user asked to look at (check's and watch's --pid, --self, --children-of, --match,
// --all-gpu-procs). Nothing asked: every GPU process.
struct Selection {
  std::vector<int> pids;                          // named: --pid, and this process for --self
  std::optional<int> children_of;
  std::function<bool(const std::string&)> match;  // on the command line; empty: none
  bool all_gpu = false;
  std::optional<SlurmTasks> slurm_job;  // check --slurm-node
  std::vector<int> gpu_context_pids;  // processes the GPU libraries list: GPU processes too
  int exclude = -1;  // never found by a selector (gpubind itself, on the live root)
};

struct Selected {
  std::vector<int> pids;   // sorted, unique
  std::vector<int> named;  // those the user named: each problem with them is reported
};

Selected select_processes(const sys::FsRoot& root, const Selection& s);

struct Probed {
  std::vector<ProcessState> states;
  std::vector<Error> errors;  // named processes that cannot be read; found ones that cannot, but live
  std::vector<int> error_pids;  // the PID of each error
};

// Probes each selected process. A found one that ended meanwhile (or is a zombie) is skipped, as
// is launch's group reaper (not a rank); a named one is always reported.
Probed probe_selected(const sys::FsRoot& root, const Selected& selected, const ProbeOptions& options);

// The GPUs the runtime libraries say each process has a context on, into its context_gpus (once
// each).
void add_context_gpus(std::vector<ProcessState>& states, const std::vector<GpuProcess>& contexts);

}  // namespace gpubind::probe

#pragma once
// What Slurm tells the SPANK plugin about a step, read without Slurm so it can be tested: the
// step's environment as srun sent it, which the plugin sees in slurm_spank_user_init before
// slurmstepd adds each task's own variables, and each task's environment in
// slurm_spank_task_init. Measured on Slurm 22.05 (tests/slurm/spank_test.sh):
//   - srun --cpu-bind=TYPE exports SLURM_CPU_BIND, SLURM_CPU_BIND_TYPE and SLURM_CPU_BIND_LIST
//     to the step; task/affinity's automatic binding writes the same names into each task's
//     environment only, after user_init. So the step's copy tells the user's choice apart.
//   - --gpus-per-task=N and --gpu-bind=... narrow each task's SLURM_STEP_GPUS and
//     CUDA_VISIBLE_DEVICES to its own GPUs; the step's copy still lists every GPU of the step on
//     the node, and SLURMD_TRES_BIND (gpu:per_task:1, gpu:map_gpu:1,0...) says the rule.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "topo/topology.hpp"
#include "util/cpuset.hpp"
#include "util/result.hpp"

namespace gpubind::bind {

using EnvMap = std::map<std::string, std::string>;

// The names the plugin reads from the step's environment: the CPU binding variables and the GPU
// selection variables (plan::gpu_env_names()).
std::vector<std::string> slurm_step_env_names();

// The CPU binding the user chose for the step (srun --cpu-bind=TYPE, or SLURM_CPU_BIND in srun's
// environment), as Slurm writes it ("map_cpu:1,0", "none"); nullopt when the step's environment
// has none, or only a verbosity (--cpu-bind=verbose chooses no binding).
std::optional<std::string> user_cpu_binding(const EnvMap& step);

// How each task of the step on this node was given its GPUs, as positions in the step's GPU list.
struct TaskGpus {
  std::vector<std::vector<unsigned>> rows;  // one per local task, positions below step_gpus
  unsigned step_gpus = 0;                   // how many GPUs the step has on this node
  bool exact = false;    // false: only this task's row is Slurm's; the others are assumed
  std::string how;       // for the plan's explanation and warnings
};

// Each local task's GPUs when Slurm narrowed this task's GPUs below the step's (per-task GPU
// binding); nullopt when it did not (every task sees the step's GPUs: the plan is made as without
// Slurm) or the variables do not say (no SLURM_STEP_GPUS; a GPU of the task not in the step's).
//   step, task: SLURM_STEP_GPUS of the step and of the task (gres indices); tres_bind:
//   SLURMD_TRES_BIND. Rows follow Slurm's rule where it names them all (per_task:N, map_gpu,
//   mask_gpu) and agrees with this task's own GPUs; otherwise (closest, single:K) the task's row
//   is its own GPUs and the others keep the default (task t on the step's GPU t), exchanged with
//   the task that held this task's GPU, and `exact` is false.
std::optional<TaskGpus> slurm_task_gpus(const std::string& step, const std::string& task, const std::string& tres_bind,
                                        unsigned local_tasks, unsigned local_id);

// The same inside a task that does not see the step's variables (`srun --gpus-per-task=1 gpubind
// exec`): the task's SLURM_STEP_GPUS is narrowed to its own GPUs, and the job's GPUs on this node
// (SLURM_JOB_GPUS) stand for the step's when there are exactly as many as the node's tasks take
// (local tasks x the task's GPUs: a step over the whole allocation, the common case). Slurm's rule
// from SLURMD_TRES_BIND or SLURM_TRES_BIND, else per_task:N from SLURM_GPUS_PER_TASK. On success
// `gpu_env` is the step's view: SLURM_STEP_GPUS the job's list, the task's narrowed visibility
// variables dropped (the plan numbers GPUs over the step). nullopt: as slurm_task_gpus, or the job's
// GPUs are not the step's (then the plan is made as before, over what the task sees).
std::optional<TaskGpus> exec_task_gpus(const EnvMap& task, unsigned local_tasks, unsigned local_id, EnvMap& gpu_env);

// The CPUs of the cores Slurm allocated to the step on this node (the plugin's
// S_STEP_ALLOC_CORES, e.g. "0-3,8"). Slurm numbers a node's cores 0..N-1 socket by socket in
// hwloc's order (topo::logical_core_ids: within a package NUMA node by NUMA node, then L3 by L3),
// whatever the OS numbers its CPUs; cores
// it keeps for the system (CoreSpecCount, CpuSpecList, --core-spec) and other jobs' are never in
// the list. An Error when a core is beyond this machine's (slurm.conf describes another layout)
// or the topology gives no cores.
Result<CpuSet> slurm_core_cpus(const topo::Topology& t, const std::string& cores);

}  // namespace gpubind::bind

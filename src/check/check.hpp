#pragma once
// Judging what running processes are bound to against the topology and, when gpubind bound
// them (GPUBIND_* in their environment), against that intent. Pure: probed states in, report out.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "probe/state.hpp"
#include "util/result.hpp"
#include "topo/topology.hpp"

namespace gpubind::check {

// remote_nic and no_gdr are said by `check --nccl-log` only (check/nccl_check.hpp).
enum class Verdict { ok, unbound, misplaced, overlap, remote_memory, drifted, no_gpu, oversubscribed, throttled, remote_nic, no_gdr };
const char* to_string(Verdict v);

// Who a process is, from the variables its launcher set ("" when none says): its local rank
// (GPUBIND_LOCAL_RANK, what gpubind bound it as, first; then LOCAL_RANK, SLURM_LOCALID,
// OMPI_COMM_WORLD_LOCAL_RANK), its global rank (RANK, SLURM_PROCID, OMPI_COMM_WORLD_RANK,
// PMI_RANK) and its job (SLURM_JOB_ID, TORCHELASTIC_RUN_ID).
std::string local_rank_of(const probe::ProcessState& p);
std::string global_rank_of(const probe::ProcessState& p);
std::string job_of(const probe::ProcessState& p);

struct Finding {
  Verdict verdict = Verdict::ok;
  std::string reason;  // one line naming the CPUs and nodes involved
};

struct ProcessReport {
  probe::ProcessState state;
  std::vector<std::string> gpus;         // judged against: held open, else GPUBIND_GPU
  std::string gpu_source;                // "open device files", "GPUBIND_GPU", ""
  std::optional<CpuSet> gpu_local;       // CPUs of the GPUs' NUMA node(s); nullopt when unknown
  std::vector<unsigned> gpu_nodes;
  std::optional<CpuSet> intended_cpus;   // GPUBIND_CPUS
  std::vector<Finding> findings;         // empty: OK (or NO_GPU, when not judged)
  bool judged = true;                    // false: NO_GPU or GPU_HOLDER, listed only (unless pinned and overlapping)
  std::string holder;                    // why it is a GPU_HOLDER (not a rank), "" for any other process
  std::vector<int> threads_off_node;   // threads whose last CPU is off the GPU's node
  std::vector<int> threads_drifted;    // threads allowed outside what gpubind applied
  std::string apart;                   // why it is NOT_IN_JOB (outside_their_job): listed apart, not judged
  std::string wrapper;                 // why it is a WRAPPER (wrappers_of_ranks): listed, not judged
};

// Processes that claim a Slurm job (SLURM_JOB_ID) the node does not put them in, each with why. A
// job's environment is anyone's to copy: a user who starts a process with another's job id and a
// local rank joined that job's plan, and root split the job's CPUs with it. What counts is what
// the node says (probe: the job of its cgroup, or of the slurmstepd above it): a process in
// another job; a process the node puts in no job while the job's own tasks are in it; where the
// node says nothing of any (a captured tree), a job whose claimants run as several users.
std::map<int, std::string> outside_their_job(const std::vector<probe::ProcessState>& states);

// Processes that only wrap a rank: an interpreter shim or a runner (`conda run`, `uv run`, a
// `bash -c` that waits) starts the real rank as its child and waits, and the child inherits the
// launcher's rank variables, so both look like the same rank. A process is a wrapper when it
// holds no GPU device file or context, a process below it has the same job and rank, and either
// one of those holds a GPU or the process is one of kRankWrappers. Each with why; check lists it
// as WRAPPER, not judged, and watch leaves it out of the ranks' spread (its CPU time is none).
// A rank's own children (a DataLoader worker) are below the rank, not above it: never wrappers.
inline constexpr const char* kRankWrappers[] = {"conda", "mamba", "micromamba", "uv",   "poetry", "pipenv", "pyenv",
                                                "pdm",   "hatch", "pixi",       "bash", "sh",     "dash",   "zsh",
                                                "env",   "timeout", "nice",     "stdbuf", "time", "taskset", "numactl"};
std::map<int, std::string> wrappers_of_ranks(const std::vector<probe::ProcessState>& states);

// The process's verdicts as check prints them: "OK", "NO_GPU", "GPU_HOLDER", "NOT_IN_JOB" or
// "WRAPPER" (not judged), or
// its findings' verdicts, each once, joined by commas ("DRIFTED,OVERLAP").
std::string verdicts_of(const ProcessReport& p);

struct Report {
  std::vector<ProcessReport> processes;
  std::vector<Error> errors;             // PIDs that could not be read
  bool has_findings() const;
};

// A process that holds GPU device files open without being a rank: a GPU daemon such as
// nvidia-persistenced, which "holds the NVIDIA character device files open" on every GPU, DCGM's
// nv-hostengine or dcgm-exporter. It is listed as GPU_HOLDER, not judged, takes no part in OVERLAP
// and watch leaves it out of IMBALANCE. A process with a rank variable (a launcher's, or gpubind's
// GPUBIND_*) is a rank, whatever it is called. Otherwise it is a holder when its name is one of
// kGpuDaemons, or when the GPU library lists contexts (`contexts_known`) and it has none.
inline constexpr const char* kGpuDaemons[] = {"nvidia-persistenced", "nv-hostengine",         "dcgm-exporter",
                                              "nvidia-dcgm",         "dcgmi",                 "nvidia-smi",
                                              "nvidia-device-plugin", "gpu-feature-discovery", "nvidia-cuda-mps-control",
                                              "rocm-smi",            "amd-smi",               "amdgpu-device-plugin"};
std::string holder_reason(const probe::ProcessState& p, bool contexts_known);

struct JudgeOptions {
  bool contexts_known = false;  // the GPU library listed the processes with a context (NVML, ROCm SMI)
};

Report judge(const topo::Topology& t, std::vector<probe::ProcessState> states, std::vector<Error> errors,
             const JudgeOptions& options = {});

}  // namespace gpubind::check

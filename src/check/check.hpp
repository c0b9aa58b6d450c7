#pragma once
// Judging what running processes are bound to against the topology and, when gpubind bound
// them (GPUBIND_* in their environment), against that intent. Pure: probed states in, report out.
#include <optional>
#include <string>
#include <vector>

#include "probe/state.hpp"
#include "util/result.hpp"
#include "topo/topology.hpp"

namespace gpubind::check {

enum class Verdict { ok, unbound, misplaced, overlap, remote_memory, drifted, no_gpu };
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
  bool judged = true;                    // false: NO_GPU, listed only (unless pinned and overlapping)
  std::vector<int> threads_off_node;   // threads whose last CPU is off the GPU's node
  std::vector<int> threads_drifted;    // threads allowed outside what gpubind applied
};

// The process's verdicts as check prints them: "OK", "NO_GPU" (not judged), or its findings'
// verdicts, each once, joined by commas ("DRIFTED,OVERLAP").
std::string verdicts_of(const ProcessReport& p);

struct Report {
  std::vector<ProcessReport> processes;
  std::vector<Error> errors;             // PIDs that could not be read
  bool has_findings() const;
};

Report judge(const topo::Topology& t, std::vector<probe::ProcessState> states, std::vector<Error> errors);

}  // namespace gpubind::check

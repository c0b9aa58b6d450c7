#pragma once
// The variables gpubind exports to every process it binds (exec, launch, the SPANK plugin), and
// that `check` reads back from a running process: one contract, named once. Plain names only,
// so every layer may include it.
namespace gpubind::topo::binding_env {

inline constexpr const char* kLocalRank = "GPUBIND_LOCAL_RANK";  // the local rank bound
inline constexpr const char* kGpu = "GPUBIND_GPU";               // its GPUs' PCI addresses
inline constexpr const char* kCpus = "GPUBIND_CPUS";             // the CPUs it was bound to (cpulist)
inline constexpr const char* kMem = "GPUBIND_MEM";               // its memory nodes
inline constexpr const char* kMemPolicy = "GPUBIND_MEM_POLICY";  // preferred, bind, interleave, none;
                                                                 // refused: the container refused it
inline constexpr const char* kPolicy = "GPUBIND_POLICY";         // the planning policy
// Set by the SPANK plugin on a task it leaves as the user chose: "user" (srun --cpu-bind: the
// user's binding wins over the site default), "none" (srun --gpubind=none). watch --enforce
// leaves such a task alone unless gpubind bound it later (GPUBIND_CPUS).
inline constexpr const char* kBinding = "GPUBIND_BINDING";

inline constexpr const char* kAll[] = {kLocalRank, kGpu, kCpus, kMem, kMemPolicy, kPolicy, kBinding};

}  // namespace gpubind::topo::binding_env

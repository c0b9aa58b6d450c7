#pragma once
// Value types of a probed process (src/probe/probe.hpp reads them; src/check judges them).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "util/cpuset.hpp"

namespace gpubind::probe {

// Process and thread ids are plain ints (Linux pid_t), so this header needs no system header.

struct ThreadState {
  int tid = 0;
  std::string comm;
  CpuSet cpus_allowed;
  CpuSet mems_allowed;
  std::optional<unsigned> last_cpu;        // /proc/PID/task/TID/stat field 39
  // The last CPU is an earlier sample's: the light probe did not read `stat` again, the thread's
  // allowed CPUs lying within one NUMA node (where it ran is judged by those).
  bool last_cpu_stale = false;
  // se.nr_migrations (needs CONFIG_SCHED_DEBUG). With TaskCounters (watch), this and run_ns count
  // from when watch attached its counters: only deltas between two probes of a thread mean anything.
  std::optional<uint64_t> migrations;
  std::optional<uint64_t> voluntary_switches;    // from status; not read by watch's light probe
  std::optional<uint64_t> involuntary_switches;
  std::optional<uint64_t> switches;              // both together (watch: from TaskCounters or `sched`)
  std::optional<uint64_t> run_ns;          // CPU time so far: schedstat, else stat utime+stime
  // Time it waited, runnable, for a CPU so far (schedstat's second field, CONFIG_SCHED_INFO). The
  // light probe reads it at every ThreadMemo::kDelayEvery-th sample of a running thread: between
  // two reads it is the last one read.
  std::optional<uint64_t> run_delay_ns;
  char state = 0;  // stat field 3: 'R' running or waiting for a CPU, 'S' asleep...; 0 when not read
};

// The CPU bandwidth limit over a process: the cgroup, of its own and its ancestors, with the
// smallest CPU quota (cgroup v2 cpu.max, v1 cpu.cfs_quota_us over cpu.cfs_period_us), and that
// cgroup's throttling counters (cpu.stat) since it was made.
struct CpuQuota {
  std::string cgroup;                           // its directory ("/sys/fs/cgroup/kubepods.slice/...", under --root's directory for a tree)
  std::string setting;                          // "cpu.max 200000 100000", "cpu.cfs_quota_us 200000 (period 100000)"
  double cpus = 0;                              // quota / period: how many CPUs' worth of time it may use
  uint64_t periods = 0, throttled_periods = 0;  // nr_periods, nr_throttled
  uint64_t throttled_ns = 0;                    // throttled_usec (v2) or throttled_time (v1): run queues held back, summed over CPUs
};

// One GPU's use, from its runtime library (NVML): filled by discover's GpuRuntime, judged by watch.
struct GpuUsage {
  std::string pci;                    // "0000:18:00.0"
  std::optional<double> utilization;  // 0-1: the busy share of the library's last sample period
  std::optional<uint64_t> memory_used, memory_total;  // bytes
  std::optional<double> pcie_tx, pcie_rx;              // bytes per second from / to the GPU (NVML)
};

// A process with a context on a GPU, as the GPU library lists it (NVML's compute processes, ROCm
// SMI's KFD processes): host PIDs.
struct GpuProcess {
  int pid = 0;
  std::string pci;
  std::optional<uint64_t> memory_used;  // bytes of GPU memory it holds
};

// The Kubernetes container a process runs in, as the node's container log links name it
// (/var/log/containers/POD_NAMESPACE_CONTAINER-ID.log, written by the kubelet for every container).
struct KubeContainer {
  std::string namespace_name, pod, container;
};

struct ProcessState {
  int pid = 0;
  int ppid = 0;
  std::string comm;
  std::string cmdline;                     // arguments joined by spaces
  CpuSet cpus_allowed;                     // the main thread's
  CpuSet mems_allowed;
  std::vector<ThreadState> threads;
  std::vector<std::string> gpus;           // PCI addresses of the GPU device files it holds open
  std::vector<std::string> context_gpus;   // PCI addresses of the GPUs it has a context on (GPU library)
  std::optional<std::map<unsigned, uint64_t>> pages_per_node;  // with numa_maps
  std::map<std::string, std::string> env;  // the variables of env_names() it has, when readable
  std::string container_id;                // the container runtime's id in /proc/PID/cgroup, "" when none
  std::optional<KubeContainer> kube;       // its pod and container, where the node's log links name its id
  std::vector<std::string> notes;          // what could not be read, and why
  std::optional<unsigned> uid;             // its real user id (status Uid)
  // When it started (stat field 22, clock ticks after boot): with the PID, which process it is.
  std::optional<uint64_t> start_time;
  // What `gpubind rebind` applied to it (sys/rebind_record.hpp), the file that says so: the
  // target check and watch --enforce judge by, over GPUBIND_CPUS.
  std::optional<CpuSet> rebound_cpus;
  std::string rebound_record;
  // The Slurm job the node says it runs in, whatever its environment claims: the job of its
  // cgroup (task/cgroup's .../job_7/step_0/...) or of the slurmstepd above it ("slurmstepd:
  // [7.0]"); "" when neither says (no Slurm here, a captured tree). `slurm_evidence` says which.
  std::string slurm_job_seen, slurm_evidence;
  // Its environment or open files refused for permission (another user's process, read without
  // root): the file and errno's text; "" when both were read. Whether it is a rank cannot be told.
  std::string denied;
  // The CPU quota its cgroups put over it; nullopt when none has one (or cgroups are not readable).
  std::optional<CpuQuota> cpu_quota;
};

// What this process may use, as Linux says now (probe::process_allowance), or a test's or a dry
// run's stand-in: bind::make_request plans within it when the allowed CPUs are not the topology's.
struct ProcessAllowance {
  CpuSet cpus;  // its affinity (taskset, a cgroup's cpuset, Slurm's and Kubernetes' CPUs)
  CpuSet mems;  // its cpuset.mems: a node outside it is never planned (set_mempolicy would fail)
  // PCI addresses of the GPUs whose device files it may open (probe::openable_gpus), and of the
  // GPUs of the MIG instances it may use (probe::openable_mig_parents, read only when a GPU
  // variable names a MIG instance); nullopt where that cannot be told.
  std::optional<std::vector<std::string>> openable_gpus;
  std::optional<std::vector<std::string>> openable_mig_parents;
  // The pod's DRA device metadata files (KEP-5304) this container sees, by path
  // (probe::pod_metadata_files), and those that could not be read (each an error's message).
  std::map<std::string, std::string> pod_metadata_files;
  std::vector<std::string> pod_metadata_unreadable;
};

}  // namespace gpubind::probe

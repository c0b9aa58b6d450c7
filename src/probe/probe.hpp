#pragma once
// What a running process is actually bound to, read through an FsRoot so the same code runs on
// this machine and on fixture trees: per thread its allowed CPUs and memory nodes, the CPU it
// last ran on, migrations and context switches; per process the GPUs it holds open, its resident
// pages per NUMA node (optional, costly for big processes) and the environment variables that
// say what was intended (GPUBIND_*, LOCAL_RANK, CUDA_VISIBLE_DEVICES...).
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "probe/state.hpp"
#include "sys/fsroot.hpp"
#include "sys/task_counters.hpp"
#include "topo/topology.hpp"
#include "util/result.hpp"

namespace gpubind::probe {

// What the light probe read of each thread's `stat`, kept from one probe to the next. A thread
// that has not migrated since still last ran on the same CPU, so its `stat` is not read again;
// nor is it for a thread whose allowed CPUs lie within one NUMA node (ProbeOptions::numa_cpus):
// wherever it ran, it ran on that node and package, which is all watch judges of the last CPU
// (the last CPU kept is then the one first read).
// - One that ran (its CPU time grew: the counter's thread is alive, so the id is still its own)
//   costs no file read.
// - One that did not run ran nowhere: its allowed CPUs are not asked for either (a change of them
//   is read when it next runs) but at every kIdentityEvery-th such sample, with a
//   read of its kept-open `schedstat`, which fails when the thread has ended, its id perhaps
//   reused: then it is counted afresh. A thread id the same process reuses for a new thread within
//   that many samples is told at the next check (its counts and allowed CPUs until then are the
//   ended thread's).
// A thread renamed since keeps its old name until its `stat` is read again.
// Its wait for a CPU (schedstat's second field) is read at every kDelayEvery-th sample it ran in
// and at each identity check; a thread that did not run did not wait either, unless it waited for
// the whole interval (starved), which the identity check reads.
class ThreadMemo {
 public:
  struct Entry {
    std::string comm;
    std::optional<unsigned> last_cpu;
    uint64_t migrations = 0;
    uint64_t run_ns = 0;
    CpuSet cpus = {};    // its allowed CPUs, when last read
    unsigned idle = 0;   // samples in a row it did not run
    bool stale = false;  // it migrated since last_cpu was read
    bool used = true;
    std::optional<uint64_t> run_delay_ns = {};  // its wait for a CPU, when last read
    unsigned ran = 0;                           // samples it ran in
  };
  static constexpr unsigned kIdentityEvery = 4;
  // A thread that runs has its `schedstat` read for its wait for a CPU at every kDelayEvery-th
  // sample it ran in (threads take turns by id); between reads its wait is the one read last.
  static constexpr unsigned kDelayEvery = 8;
  // The entry of a thread probed before, marked as used; nullptr when none.
  Entry* find(int tid);
  void put(int tid, Entry e);

  // A process's thread ids as /proc/PID/task listed them, with its thread count then (`status`'
  // Threads:). The light probe lists the directory again when the count changed, a listed thread
  // was found gone, or at every kIdentityEvery-th sample (a thread that ended while another
  // started, the count the same, is seen by then).
  struct Threads {
    uint64_t count = 0;
    std::vector<std::string> tids = {};
    unsigned age = 0;  // samples since listed
    bool used = true;
  };
  // The ids to probe this sample if the listing still stands for `count` threads; else nullptr.
  const std::vector<std::string>* threads_of(int pid, uint64_t count);
  void put_threads(int pid, uint64_t count, std::vector<std::string> tids);
  void forget_threads(int pid) { m_threads.erase(pid); }

  // Forgets the threads and processes not probed since the last sweep.
  void sweep();
  size_t size() const { return m_entries.size(); }

 private:
  std::unordered_map<int, Entry> m_entries;
  std::unordered_map<int, Threads> m_threads;
};

class GpuDeviceMap;
class CpuQuotaMemo;

struct ProbeOptions {
  bool numa_maps = false;
  // Per-thread files kept open between probes of the same root (watch samples every second);
  // nullptr: opened and closed each time.
  sys::KeptOpenFiles* kept = nullptr;
  // The light probe watch takes of the live system: each thread's allowed CPUs and migrations
  // from these, its memory nodes the process's, its context switches not read; nullptr: all
  // from /proc files (sys/task_counters.hpp says why).
  sys::TaskCounters* counters = nullptr;
  ThreadMemo* memo = nullptr;  // with counters: skip `stat` for threads that did not migrate
  // The GPU device files of this root, read once for all the processes of one probe (a sample);
  // nullptr: each process reads them.
  const GpuDeviceMap* devices = nullptr;
  // The CPUs of each NUMA node (the light probe's: see ThreadMemo); empty: unknown.
  std::vector<CpuSet> numa_cpus = {};
  // Which cgroup limits each process's CPU time, kept from one probe to the next
  // (probe/cpu_quota.hpp); nullptr: found afresh for each process.
  CpuQuotaMemo* quotas = nullptr;
};

// The container id in a /proc/PID/cgroup text: the last run of 64 hexadecimal digits, as
// containerd ("cri-containerd-ID.scope"), CRI-O ("crio-ID.scope"), Docker ("docker-ID.scope") and
// the cgroupfs driver (".../ID") name a container's cgroup; "" when there is none.
std::string container_id_of_cgroup(std::string_view text);

// The Kubernetes names of containers by id, from the names of the kubelet's container log links
// ("POD_NAMESPACE_CONTAINER-ID.log"; Kubernetes names hold no '_'). Other names are skipped.
std::map<std::string, KubeContainer> kube_containers_of_log_names(const std::vector<std::string>& names);

// Where Kubernetes mounts a container's DRA device metadata (KEP-5304), under a root.
inline constexpr const char* kPodMetadataDir = "var/run/kubernetes.io/dra-device-attributes";
// The "*-metadata.json" files under it (resourceclaims/ and resourceclaimtemplates/, each
// <claim>/<request>[/<subrequest>]/), into `a`; none when it does not exist.
void pod_metadata_files(const sys::FsRoot& root, ProcessAllowance& a);

// The environment variables a probe keeps.
const std::vector<std::string>& env_names();

// The variables of `names` that process `pid`'s environment (/proc/PID/environ) has.
Result<std::map<std::string, std::string>> environment_of(const sys::FsRoot& root, int pid, const std::vector<std::string>& names);


// Resident pages per NUMA node from a numa_maps text: anonymous mappings only (heap, stacks,
// anonymous mmap: "anon=", no "file="), where the process's own memory is. A file's page cache (its
// binary, shared libraries, /dev/shm) sits where it was first read, often by another process.
std::map<unsigned, uint64_t> sum_numa_maps(const std::string& text);
// The Slurm job a cgroup file names (".../job_7/step_0/task_1" -> "7"), "" when none.
std::string slurm_job_of_cgroup(std::string_view cgroup);
// The job of the slurmstepd above `ppid` (its cmdline "slurmstepd: [7.0]"), with that
// slurmstepd's PID; nullopt when no ancestor within 64 is one.
std::optional<std::pair<std::string, int>> slurmstepd_job_above(const sys::FsRoot& root, int ppid);
// The memory policy a numa_maps text shows on most of its anonymous mappings (each line's second
// field: the mapping's own policy, else the process's), "" for the kernel's default: "bind:1",
// "prefer:1", "interleave:0-1", "preferred-many:0-1"... (numactl --membind=1, srun --mem-bind).
std::string numa_maps_policy(const std::string& text);
// The nodes a policy names ("bind:1" -> {1}, "interleave:0-1" -> {0,1}); empty for "default"
// and "local", which name none.
CpuSet policy_nodes(const std::string& policy);

// Reads one process; an Error when it does not exist (or vanished) or cannot be read at all.
Result<ProcessState> probe_process(const sys::FsRoot& root, int pid, const ProbeOptions& options);

// Whether probe_process's error says the PID is no live user process: gone, vanished while being
// read, a zombie or a kernel thread. `check` reports those for PIDs it was given and skips them
// among the processes a selector found (a launcher's exited, unreaped child).
bool is_not_a_live_process(const Error& e);

// PIDs of every process under the root, sorted.
std::vector<int> list_pids(const sys::FsRoot& root);

// Maps GPU device files to PCI addresses: /dev/nvidiaN via /proc/driver/nvidia/gpus/*/information
// ("Device Minor"), /dev/dri/renderD* and card* via /sys/class/drm/*/device.
class GpuDeviceMap {
 public:
  explicit GpuDeviceMap(const sys::FsRoot& root);
  // The PCI address behind a device path such as "/dev/nvidia3", or "".
  std::string pci_of(const std::string& device_path) const;
  // True for device files that belong to a GPU stack but name no single GPU (/dev/nvidiactl, /dev/kfd).
  static bool is_gpu_control_file(const std::string& device_path);
  // True for the device file of one GPU (/dev/nvidia3, /dev/dri/renderD129): a process holding
  // one is a GPU process (`check --all-gpu-procs`); one holding only control files is not.
  static bool is_gpu_device_file(const std::string& device_path);
  // The device file of the GPU at this PCI address ("dev/nvidia3", "dev/dri/renderD129"), relative
  // to the root, or "" when the driver does not say.
  std::string device_of(const std::string& pci) const;

 private:
  std::map<unsigned, std::string> m_nvidia_minor;
  const sys::FsRoot& m_root;
};

// Which of these GPUs (PCI addresses) this process may open: a device cgroup (Slurm's
// ConstrainDevices, a container's device list) hides the others from CUDA and ROCm, which then
// number the rest from 0. A GPU is hidden when the kernel refuses its device file (EPERM) or the
// file is missing while another GPU's exists (a container that mounts only its own). nullopt
// when that cannot be told: a GPU whose device file the driver does not name, or no GPU device
// file at all (the driver creates them on first use).
std::optional<std::vector<std::string>> openable_gpus(const sys::FsRoot& root, const std::vector<std::string>& pcis);

// The GPUs (PCI addresses) of the MIG instances this process may use: the NVIDIA driver lists each
// GPU instance's and compute instance's capability under
// /proc/driver/nvidia/capabilities/gpu<minor>/mig/gi<G>[/ci<C>]/access ("DeviceFileMinor: M"), and
// a container or device cgroup given a MIG device is given /dev/nvidia-caps/nvidia-cap<M> of its
// instance only. nullopt when the driver lists no MIG capability or no capability file exists.
std::optional<std::vector<std::string>> openable_mig_parents(const sys::FsRoot& root);

// What this process may use of topology `t` (this machine's): its affinity and cpuset.mems,
// which of t's GPUs it may open, and, when a GPU variable of `gpu_env` (plan::gpu_env_names())
// names a MIG instance (which names no parent GPU), the parents of the MIG instances it may use.
// What exec, launch, plan, compare, bench and the plugin plan within. An Error when the affinity
// or cpuset.mems cannot be read.
Result<ProcessAllowance> this_process_allowance(const topo::Topology& t, const std::map<std::string, std::string>& gpu_env);

}  // namespace gpubind::probe

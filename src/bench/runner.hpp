#pragma once
// Running `gpubind bench` on this machine: for every round and every strategy in the round's
// order, the strategy's plan (plan::make_plan with its policy: the same planner as exec and
// launch) is applied to freshly forked rank processes by the same binder (bind::apply_binding),
// the ranks step together through a shared-memory barrier, and what happened is measured:
// step times, each rank's work and wait, the CPUs its threads ran on, migrations and page
// placement (probe::probe_process, as `check` reads them).
#include <cstdint>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bench/record.hpp"
#include "plan/plan.hpp"
#include "sys/fsroot.hpp"
#include "topo/topology.hpp"
#include "util/result.hpp"

namespace gpubind::bench {

struct RunOptions {
  std::vector<StrategySpec> strategies;
  unsigned threads = 0;   // per rank; 0: the cores of the smallest rank under closest (1 to 8)
  unsigned steps = 200;
  unsigned rounds = 5;
  unsigned warmup = 5;
  unsigned noise = 0;
  // Where the noise runs; each placement runs every strategy (interleaved with the others) and
  // is reported on its own. reserved: on housekeeping_cpus, every strategy's ranks planned around
  // them (needs noise).
  std::vector<NoisePlacement> placements = {NoisePlacement::roaming};
  uint64_t buffer_bytes = 0;  // per thread; 0: default_buffer_bytes
  unsigned compute = 20000;
  // Every step, rank thread 0 also copies its buffer to the rank's GPU (CUDA or HIP runtime).
  bool gpu = false;
  // Called once before the first run with each of node_notes (what this node can and cannot
  // show), and after every run (strategy within a round), for progress on stderr.
  std::function<void(const std::string& note)> notice;
  std::function<void(const std::string& strategy, unsigned round)> progress;
  // Each distinct warning of the ranks' binding (a memory policy the container refuses), once,
  // when first seen; all are in the record's warnings too.
  std::function<void(const std::string& warning)> warning;
};

// Per thread: enough to stream past its L2 and, with all threads, about half the L3 (between
// 1 and 8 MiB; 4 MiB when the cache sizes are unknown).
uint64_t default_buffer_bytes(const topo::Topology& t, unsigned total_threads);

// The machine as the report states it; its allowed CPUs are the ones the request's ranks may use
// (bench's own affinity: what Slurm's task/affinity or taskset gave it), not only the cgroup's.
MachineInfo machine_info(const topo::Topology& t, const plan::Request& r);

// Other load around a run (bench's own and --ab's): the 1-minute load average when made; the
// share of CPU time the hypervisor stole from then until finish (/proc/loadavg, /proc/stat under
// `root`); and the threads runnable outside this process and its descendants
// (probe::runnable_threads_outside), sampled once a second on a thread of its own and at finish
// (not when made: the shell's other commands of a pipeline are starting then; each sample reads
// every process's stat, a few ms on a quiet node).
class LoadWatch {
 public:
  explicit LoadWatch(const sys::FsRoot& root);
  ~LoadWatch();
  LoadWatch(const LoadWatch&) = delete;
  LoadWatch& operator=(const LoadWatch&) = delete;
  // The 1-minute load average when it was made.
  std::optional<double> load_before() const { return m_load; }
  // Stops the sampling; sets load_before, steal_share and the runnable threads' mean and max.
  void finish(MachineInfo& m);

 private:
  void stop();
  const sys::FsRoot& m_root;
  std::optional<double> m_load;
  std::optional<CpuTicks> m_ticks;
  std::mutex m_mutex;
  std::condition_variable m_wake;
  bool m_stop = false;
  std::vector<unsigned> m_runnable;  // one per sample
  std::thread m_sampler;
};

// Runs the benchmark on this machine (`t` must be its live topology). An Error of kind usage for
// a request that cannot run (a strategy that cannot be planned, --gpu without a GPU, too many
// step records), before anything starts; any other Error when a rank could not be bound or
// started, or died.
Result<Record> run_bench(const topo::Topology& t, const plan::Request& base, const RunOptions& o);

}  // namespace gpubind::bench

#pragma once
// bench's workload, run in forked ranks: the block of shared memory ranks and the orchestrator
// (runner.cpp) share, each rank's threads stepping through a futex barrier (a memory-bound pass,
// a compute part, --gpu's copy), and the unbound noise processes. Internal to src/bench.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>

#include "bind/apply.hpp"
#include "plan/plan.hpp"

namespace gpubind::bench::workload {

constexpr uint64_t kMiB = 1024 * 1024;

// --- what ranks and the orchestrator share, one block per run ---

// One thread's record of one measured step.
struct StepRecord {
  int64_t work_ns;    // the memory pass(es) and the compute part
  int16_t cpu_start;  // the CPU it started and ended the work on (-1: unknown)
  int16_t cpu_end;
  float copy_ms;      // --gpu: the copy to the GPU, on the GPU's timeline (part of work_ns)
};

// Where one thread's buffer is after the measured steps.
struct PageRecord {
  uint64_t pages;   // resident
  uint64_t remote;  // on a node outside the rank's home nodes
};

constexpr size_t kErrorBytes = 512;

struct Control {
  alignas(64) std::atomic<uint32_t> phase;  // 0: warming up, 1: measure, 2: exit (written by the orchestrator)
  std::atomic<uint32_t> ready;              // threads done with the warm-up
  std::atomic<uint32_t> done;               // threads done with the measured steps
  std::atomic<uint32_t> failed;             // ranks that failed (binding, the GPU copy)
  std::atomic<uint32_t> warned;             // ranks bound with a warning (a refused memory policy)
  alignas(64) std::atomic<uint32_t> arrived;  // the barrier
  std::atomic<uint32_t> generation;
  alignas(64) char error[kErrorBytes];
  char warning[kErrorBytes];                // the first warned rank's first warning
};

struct RunShape {
  unsigned ranks, threads, steps, warmup, batch, compute;
  size_t doubles;  // per thread
  bool gpu;        // thread 0 of each rank copies its buffer to the rank's GPU every step
};

// Pointers into one run's shared memory: the control block, the step release times (steps + 1:
// the start, then the end of each step) and every thread's step records.
struct Shared {
  Control* control;
  int64_t* release;
  StepRecord* records;  // [rank][thread][step]
  PageRecord* pages;    // [rank][thread]

  static size_t threads(const RunShape& s) { return size_t(s.ranks) * s.threads; }
  static size_t bytes(const RunShape& s) {
    return sizeof(Control) + sizeof(int64_t) * (s.steps + 1) + sizeof(StepRecord) * threads(s) * s.steps +
           sizeof(PageRecord) * threads(s);
  }
  static Shared in(void* base, const RunShape& s) {
    auto* p = static_cast<char*>(base);
    Shared out{};
    out.control = new (p) Control();
    p += sizeof(Control);
    out.release = reinterpret_cast<int64_t*>(p);
    p += sizeof(int64_t) * (s.steps + 1);
    out.records = reinterpret_cast<StepRecord*>(p);
    p += sizeof(StepRecord) * threads(s) * s.steps;
    out.pages = reinterpret_cast<PageRecord*>(p);
    return out;
  }
  StepRecord& record(const RunShape& s, unsigned rank, unsigned thread, unsigned step) const {
    return records[(size_t(rank) * s.threads + thread) * s.steps + step];
  }
  PageRecord& page_record(const RunShape& s, unsigned rank, unsigned thread) const {
    return pages[size_t(rank) * s.threads + thread];
  }
};

// Monotonic nanoseconds (sys::steady_clock).
int64_t now_ns();
// One more arrived at `counter`, and its waiters woken.
void arrive(std::atomic<uint32_t>& counter);
// Until the orchestrator's phase reaches `want`.
void wait_phase(Control& c, uint32_t want);
// The body of a forked rank: confined to `confine` first when not empty (the CPUs a node that
// keeps reserved CPUs gives a job, as its cgroup or the kubelet's shared pool would: an unbound
// rank roams only those), then bound as exec would, then its threads run; its exit status.
int rank_main(const RunShape& s, const Shared& sh, const plan::Plan& p, const plan::RankBinding& rb, const bind::MachineState& m,
              const CpuSet& home_nodes, const CpuSet& confine);
// The body of noise process `index`; never returns (the orchestrator kills it).
[[noreturn]] void noise_main(unsigned index);

}  // namespace gpubind::bench::workload

#include "bench/workload.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "discover/gpu_measure.hpp"
#include "sys/binder.hpp"
#include "util/strings.hpp"
#include "sys/clock.hpp"
#include "sys/node_memory.hpp"
#include "sys/shared_memory.hpp"

namespace gpubind::bench::workload {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(sys::steady_clock().now().time_since_epoch()).count();
}

void arrive(std::atomic<uint32_t>& counter) {
  counter.fetch_add(1, std::memory_order_acq_rel);
  sys::futex_wake_all(counter);
}

void wait_phase(Control& c, uint32_t want) {
  for (uint32_t v; (v = c.phase.load(std::memory_order_acquire)) < want;) sys::futex_wait(c.phase, v);
}

namespace {

// A hint to the core that this is a spin-wait loop (x86 PAUSE, Arm YIELD).
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
  asm volatile("yield");
#endif
}

// Every thread of every rank: a short spin (a step ends within microseconds for all when the
// ranks are balanced), then sleep on the futex, so a waiting rank leaves its CPU to others.
void barrier(Control& c, uint32_t parties) {
  uint32_t gen = c.generation.load(std::memory_order_acquire);
  if (c.arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == parties) {
    c.arrived.store(0, std::memory_order_relaxed);
    c.generation.store(gen + 1, std::memory_order_release);
    sys::futex_wake_all(c.generation);
    return;
  }
  for (int i = 0; i < 200; ++i) {
    if (c.generation.load(std::memory_order_acquire) != gen) return;
    cpu_relax();
  }
  while (c.generation.load(std::memory_order_acquire) == gen) sys::futex_wait(c.generation, gen);
}

// --- the workload: what one thread of a rank does every step ---

// A streaming pass that reads and writes every element: memory-bound once the buffer is past the L2.
void stream(double* a, size_t n) {
  for (size_t i = 0; i < n; ++i) a[i] = a[i] * 0.999 + 1.0;
}

// Dependent multiply-adds: the step's compute part, a fixed number of cycles wherever it runs.
double compute(unsigned n, double x) {
  for (unsigned i = 0; i < n; ++i) x = x * 1.0000001 + 1e-7;
  return x;
}

std::atomic<uint64_t> g_sink{0};  // keeps the compiler from dropping the work

// The step's work; with a copier, then the buffer to the GPU (its time on the GPU's timeline in
// `copy_ms`). An Error when the copy failed.
Status one_step(const RunShape& s, double* buf, double& x, discover::GpuCopier* copier, float& copy_ms) {
  stream(buf, s.doubles);
  x = compute(s.compute * s.batch, x);
  if (!copier) return Ok{};
  auto ms = copier->copy();
  if (!ms) return ms.error();
  copy_ms = float(*ms);
  return Ok{};
}

// The first failure of a rank, for the orchestrator to report; the rank then stops stepping (the
// others wait at the barrier until the orchestrator ends them all).
void report_failure(const Shared& sh, unsigned rank, const Error& e) {
  std::string why = "rank " + std::to_string(rank) + ": " + e.message();
  if (sh.control->failed.fetch_add(1) == 0) std::strncpy(sh.control->error, why.c_str(), kErrorBytes - 1);
  arrive(sh.control->ready);
  arrive(sh.control->done);
}

void worker(const RunShape& s, const Shared& sh, const plan::RankBinding& rb, unsigned thread, const CpuSet& home_nodes) {
  Control& c = *sh.control;
  unsigned rank = rb.local_rank;
  uint32_t parties = s.ranks * s.threads;
  // Allocated here, first touched here: the pages land where this thread runs (or where the
  // rank's memory policy puts them), as a training process's buffers do.
  std::unique_ptr<double[]> buf(new (std::nothrow) double[s.doubles]);
  if (!buf)
    return report_failure(sh, rank, Error{"--buffer-mib", "cannot allocate " + human_bytes(s.doubles * sizeof(double)) + " for thread " +
                                                              std::to_string(thread) + " (out of memory)"});
  for (size_t i = 0; i < s.doubles; ++i) buf[i] = double(i & 1023);
  double x = 1.0 + thread;
  std::unique_ptr<discover::GpuCopier> copier;
  if (s.gpu && thread == 0) {
    auto opened = discover::GpuCopier::open(rb.gpus.front().vendor, rb.gpus.front().pci, buf.get(), s.doubles * sizeof(double));
    if (!opened) return report_failure(sh, rank, Error{"--gpu", opened.error().message()});
    copier = std::move(*opened);
  }
  float copy_ms = 0;
  for (unsigned i = 0; i < s.warmup; ++i) {
    if (auto st = one_step(s, buf.get(), x, copier.get(), copy_ms); !st) return report_failure(sh, rank, st.error());
    barrier(c, parties);
  }
  arrive(c.ready);
  wait_phase(c, 1);
  barrier(c, parties);
  bool lead = rank == 0 && thread == 0;
  if (lead) sh.release[0] = now_ns();
  for (unsigned i = 0; i < s.steps; ++i) {
    int cpu0 = sys::current_cpu();
    int64_t t0 = now_ns();
    if (auto st = one_step(s, buf.get(), x, copier.get(), copy_ms); !st) return report_failure(sh, rank, st.error());
    int64_t t1 = now_ns();
    int cpu1 = sys::current_cpu();
    sh.record(s, rank, thread, i) = {t1 - t0, int16_t(cpu0), int16_t(cpu1), copy_ms};
    barrier(c, parties);
    if (lead) sh.release[i + 1] = now_ns();
  }
  g_sink.fetch_add(uint64_t(x) + uint64_t(buf[s.doubles / 2]), std::memory_order_relaxed);
  // Where its buffer's pages are: this buffer only, not what the rank inherited from bench.
  PageRecord& pr = sh.page_record(s, rank, thread);
  if (auto nodes = sys::page_nodes(buf.get(), s.doubles * sizeof(double)))
    for (const auto& [node, n] : *nodes) {
      pr.pages += n;
      if (!home_nodes.test(node)) pr.remote += n;
    }
  arrive(c.done);
  wait_phase(c, 2);
}

}  // namespace

// The body of a forked rank: bind as exec would, then run its threads.
int rank_main(const RunShape& s, const Shared& sh, const plan::Plan& p, const plan::RankBinding& rb,
              const bind::MachineState& m, const CpuSet& home_nodes, const CpuSet& confine) {
  auto binder = sys::real_binder();
  if (!confine.empty())
    if (auto st = binder->set_cpu_affinity(confine); !st) {
      report_failure(sh, rb.local_rank, st.error());
      return 1;
    }
  std::vector<std::string> warnings;
  // A memory policy the container refuses: the rank runs with its CPUs bound, as under exec, and
  // leaves the warning to bench, which says each one once for the whole run, not once per rank.
  if (auto st = bind::apply_binding(p, rb, m, *binder, bind::BestEffort::no, bind::MemRefused::warn, warnings); !st) {
    report_failure(sh, rb.local_rank, st.error());
    return 1;
  }
  if (!warnings.empty() && sh.control->warned.fetch_add(1) == 0) std::strncpy(sh.control->warning, warnings[0].c_str(), kErrorBytes - 1);
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < s.threads; ++t) threads.emplace_back(worker, std::cref(s), std::cref(sh), std::cref(rb), t, std::cref(home_nodes));
  worker(s, sh, rb, 0, home_nodes);
  for (std::thread& t : threads) t.join();
  return 0;
}

// --- background noise: unbound processes like the other tenants and daemons of a node ---

// Unbound, as the other tenants and daemons of a node are, and like them on and off: even ones are
// CPU hogs that pause 1 ms after every 1 ms of work, odd ones stream 64 MiB (past any L3 share)
// and pause 1 ms. A CPU left idle for a moment is where the scheduler moves a waking rank.
[[noreturn]] void noise_main(unsigned index) {
  double x = 1;
  size_t n = index % 2 ? 64 * kMiB / sizeof(double) : 0;
  std::unique_ptr<double[]> buf(new double[std::max<size_t>(n, 1)]);
  for (size_t i = 0; i < n; ++i) buf[i] = 1;
  for (;;) {
    if (n) {
      stream(buf.get(), n);
    } else {
      int64_t until = now_ns() + 1'000'000;
      while (now_ns() < until) x = compute(10000, x);
    }
    g_sink.fetch_add(uint64_t(x) + uint64_t(buf[0]), std::memory_order_relaxed);
    sys::steady_clock().sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace gpubind::bench::workload

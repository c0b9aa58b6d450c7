#include "bench/runner.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "bind/apply.hpp"
#include "discover/gpu_measure.hpp"
#include "probe/probe.hpp"
#include "sys/binder.hpp"
#include "sys/clock.hpp"
#include "sys/fsroot.hpp"
#include "sys/node_memory.hpp"
#include "sys/shared_memory.hpp"
#include "util/strings.hpp"

namespace gpubind::bench {

namespace {

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
  alignas(64) std::atomic<uint32_t> arrived;  // the barrier
  std::atomic<uint32_t> generation;
  alignas(64) char error[kErrorBytes];
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
  std::unique_ptr<double[]> buf(new double[s.doubles]);
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

// The body of a forked rank: bind as exec would, then run its threads.
int rank_main(const RunShape& s, const Shared& sh, const plan::Plan& p, const plan::RankBinding& rb,
              const bind::MachineState& m, const CpuSet& home_nodes) {
  auto binder = sys::real_binder();
  std::vector<std::string> warnings;
  if (auto st = bind::apply_binding(p, rb, m, *binder, bind::BestEffort::no, warnings); !st) {
    report_failure(sh, rb.local_rank, st.error());
    return 1;
  }
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

class Children {
 public:
  ~Children() {
    for (pid_t p : m_pids) {
      sys::kill_child(p);
      sys::reap_child(p, true);
    }
  }
  void add(pid_t p) { m_pids.push_back(p); }
  const std::vector<pid_t>& pids() const { return m_pids; }
  // Reaps them all (they are expected to end); returns the first that failed.
  std::optional<std::pair<size_t, sys::ChildExit>> reap_all() {
    std::optional<std::pair<size_t, sys::ChildExit>> bad;
    for (size_t i = 0; i < m_pids.size(); ++i) {
      auto e = sys::reap_child(m_pids[i], true);
      if (e && (e->signal || e->exit_code) && !bad) bad = std::make_pair(i, *e);
    }
    m_pids.clear();
    return bad;
  }

 private:
  std::vector<pid_t> m_pids;
};

std::string exit_text(const sys::ChildExit& e) {
  return e.signal ? "killed by signal " + std::to_string(e.signal) : "exit " + std::to_string(e.exit_code);
}

// Waits until `counter` reaches `want`; an Error when a rank failed or died first.
Status wait_count(const Shared& sh, std::atomic<uint32_t>& counter, uint32_t want, Children& ranks, const char* stage) {
  for (;;) {
    if (sh.control->failed.load() > 0) return Error{"bench", std::string(sh.control->error)};
    uint32_t v = counter.load(std::memory_order_acquire);
    if (v >= want) return Ok{};
    for (size_t r = 0; r < ranks.pids().size(); ++r)
      if (auto e = sys::reap_child(ranks.pids()[r], false))
        return Error{"bench", "rank " + std::to_string(r) + " ended " + stage + " (" + exit_text(*e) + ")"};
    sys::futex_wait(counter, v, std::chrono::milliseconds(100));
  }
}

// Each thread's se.nr_migrations, read as `check` reads it.
struct Probed {
  std::map<int, uint64_t> migrations;  // by thread id
  bool migrations_known = true;
};

Result<Probed> probe_rank(const sys::FsRoot& root, pid_t pid) {
  auto ps = probe::probe_process(root, pid, {});
  if (!ps) return ps.error();
  Probed out;
  for (const probe::ThreadState& t : ps->threads) {
    if (t.migrations) out.migrations[t.tid] = *t.migrations;
    else out.migrations_known = false;
  }
  return out;
}

std::vector<unsigned> home_nodes(const topo::Topology& t, const plan::RankBinding& rb, const plan::RankBinding* closest) {
  for (const plan::GpuRef& g : rb.gpus)
    if (const topo::Gpu* gpu = topo::find_gpu(t, g.pci); gpu && gpu->numa) {
      auto nodes = topo::nodes_with_cpus(t, *gpu->numa);
      if (!nodes.empty()) return nodes;
    }
  if (closest) {
    if (!closest->mem_nodes.empty()) return closest->mem_nodes;
    std::set<unsigned> nodes;
    for (unsigned cpu : closest->cpus.ids())
      if (const topo::NumaNode* n = topo::numa_of_pu(t, cpu)) nodes.insert(n->os_index);
    return {nodes.begin(), nodes.end()};
  }
  return {};
}

// What one run of a strategy measured, added to its record (all rounds together).
void add_run(const topo::Topology& t, const plan::Plan& p, const RunShape& s, const Shared& sh,
             const std::vector<std::vector<unsigned>>& homes, const std::vector<Probed>& before,
             const std::vector<Probed>& after, double measured_s, StrategyRecord& out) {
  for (unsigned i = 0; i < s.steps; ++i) out.step_ms.push_back(double(sh.release[i + 1] - sh.release[i]) / 1e6);
  if (out.ranks.empty()) out.ranks.resize(p.ranks.size());
  for (size_t r = 0; r < p.ranks.size(); ++r) {
    const plan::RankBinding& rb = p.ranks[r];
    RankRecord& rr = out.ranks[r];
    rr.rank = rb.local_rank;
    rr.gpu = rb.gpus.empty() ? "" : rb.gpus.front().pci;
    rr.cpus = rb.cpus;
    rr.mem_nodes = rb.mem_policy == plan::MemPolicy::none ? std::vector<unsigned>{} : rb.mem_nodes;
    rr.mem_policy = plan::to_string(rb.mem_policy);
    rr.home_nodes = homes[r];
    CpuSet home = topo::cpus_of_nodes(t, rr.home_nodes);
    rr.measured_s += measured_s;
    for (unsigned i = 0; i < s.steps; ++i) {
      double step = double(sh.release[i + 1] - sh.release[i]) / 1e9, busy = 0;
      for (unsigned th = 0; th < s.threads; ++th) {
        const StepRecord& rec = sh.record(s, unsigned(r), th, i);
        double work = double(rec.work_ns) / 1e9;
        busy = std::max(busy, work);
        rr.work_s += work;
        if (s.gpu && th == 0) {
          rr.copy_s += double(rec.copy_ms) / 1e3;
          rr.copy_bytes += s.doubles * sizeof(double);
        }
        for (int cpu : {rec.cpu_start, rec.cpu_end})
          if (cpu >= 0 && !home.empty() && !home.test(unsigned(cpu))) rr.off_home_s += work / 2;
      }
      rr.step_s += step;
      rr.busy_s += busy;
    }
    uint64_t moved = 0;
    bool known = before[r].migrations_known && after[r].migrations_known;
    for (const auto& [tid, n] : after[r].migrations)
      if (auto it = before[r].migrations.find(tid); it != before[r].migrations.end() && n >= it->second) moved += n - it->second;
    if (known) rr.migrations = rr.migrations.value_or(0) + moved;
    for (unsigned th = 0; th < s.threads; ++th) {
      rr.pages += sh.page_record(s, unsigned(r), th).pages;
      rr.remote_pages += sh.page_record(s, unsigned(r), th).remote;
    }
  }
}

// One strategy's ranks, started, stepped and measured once; adds to `out`.
Status run_once(const topo::Topology& t, const plan::Plan& p, const plan::Plan& closest, const RunShape& s,
                const bind::MachineState& m, const sys::FsRoot& root, StrategyRecord& out) {
  auto mem = sys::shared_memory(Shared::bytes(s));
  if (!mem) return mem.error();
  Shared sh = Shared::in(mem->data(), s);
  Children ranks;
  std::vector<std::vector<unsigned>> homes;
  for (size_t r = 0; r < p.ranks.size(); ++r)
    homes.push_back(home_nodes(t, p.ranks[r], r < closest.ranks.size() ? &closest.ranks[r] : nullptr));
  for (size_t r = 0; r < p.ranks.size(); ++r) {
    CpuSet home;
    for (unsigned n : homes[r]) home.set(n);
    auto pid = sys::fork_call([&] { return rank_main(s, sh, p, p.ranks[r], m, home); });
    if (!pid) return pid.error();
    ranks.add(*pid);
  }
  uint32_t parties = s.ranks * s.threads;
  if (auto st = wait_count(sh, sh.control->ready, parties, ranks, "before its first step"); !st) return st;

  std::vector<Probed> before;
  for (pid_t pid : ranks.pids()) {
    auto pr = probe_rank(root, pid);
    if (!pr) return pr.error();
    before.push_back(std::move(*pr));
  }
  int64_t start = now_ns();
  sh.control->phase.store(1, std::memory_order_release);
  sys::futex_wake_all(sh.control->phase);
  if (auto st = wait_count(sh, sh.control->done, parties, ranks, "while stepping"); !st) return st;
  int64_t end = now_ns();
  std::vector<Probed> after;
  for (pid_t pid : ranks.pids()) {
    auto pr = probe_rank(root, pid);
    if (!pr) return pr.error();
    after.push_back(std::move(*pr));
  }
  sh.control->phase.store(2, std::memory_order_release);
  sys::futex_wake_all(sh.control->phase);
  if (auto bad = ranks.reap_all())
    return Error{"bench", "rank " + std::to_string(bad->first) + " failed (" + exit_text(bad->second) + ")"};

  add_run(t, p, s, sh, homes, before, after, double(end - start) / 1e9, out);
  return Ok{};
}

// Every strategy planned for `base` (its policy replaced), in order; an Error of kind usage when
// one cannot be planned, or with `gpu` when a rank has no NVIDIA or AMD GPU to copy to.
Result<std::vector<plan::Plan>> plan_strategies(const topo::Topology& t, const plan::Request& base,
                                                const std::vector<StrategySpec>& strategies, bool gpu) {
  std::vector<plan::Plan> plans;
  for (const StrategySpec& s : strategies) {
    plan::Request r = base;
    r.policy = s.policy;
    auto p = plan::make_plan(t, r);
    if (!p) return Error{"strategy " + s.name, p.error().message(), p.error().kind};
    if (gpu)
      for (const plan::RankBinding& rb : p->ranks)
        if (rb.gpus.empty() || (rb.gpus.front().vendor != topo::Vendor::nvidia && rb.gpus.front().vendor != topo::Vendor::amd))
          return Error{"--gpu",
                       "rank " + std::to_string(rb.local_rank) + " has no NVIDIA or AMD GPU to copy to" +
                           (t.gpus.empty() ? " (this machine has no GPU)" : ""),
                       ErrorKind::usage};
    plans.push_back(std::move(*p));
  }
  return plans;
}

}  // namespace

uint64_t default_buffer_bytes(const topo::Topology& t, unsigned total_threads) {
  uint64_t l3 = 0;
  for (const topo::L3Domain& d : t.l3_domains) l3 += d.size_bytes;
  if (l3 == 0) return 4 * kMiB;
  uint64_t share = l3 / 2 / std::max(1u, total_threads);
  return std::clamp<uint64_t>(share / kMiB * kMiB, kMiB, 8 * kMiB);
}

MachineInfo machine_info(const topo::Topology& t) {
  MachineInfo m;
  m.name = t.hostname.empty() ? t.origin : t.hostname;
  m.packages = unsigned(t.packages.size());
  for (const topo::NumaNode& n : t.numa_nodes) (n.cpus.empty() ? m.memory_nodes : m.numa_nodes)++;
  m.cpus = t.cpus.count();
  m.allowed_cpus = t.allowed_cpus.count();
  m.gpus = unsigned(t.gpus.size());
  return m;
}


Result<Record> run_bench(const topo::Topology& t, const plan::Request& base, const RunOptions& o) {
  if (o.strategies.empty()) return Error{"--strategies", "no strategy to run", ErrorKind::usage};
  auto plans = plan_strategies(t, base, o.strategies, o.gpu);
  if (!plans) return plans.error();
  plan::Request cr = base;
  cr.policy = plan::Policy::closest;
  auto closest = plan::make_plan(t, cr);
  if (!closest) {
    Error e = closest.error();
    e.kind = ErrorKind::usage;
    return e;
  }

  Record rec;
  rec.machine = machine_info(t);
  Config& c = rec.config;
  c.ranks = unsigned(closest->ranks.size());
  for (const plan::Plan& p : *plans)
    if (p.ranks.size() != c.ranks) return Error{"bench", "the strategies plan different numbers of ranks"};
  c.threads = o.threads ? o.threads : std::clamp(closest->score.min_cores, 1u, 8u);
  c.steps = o.steps;
  c.rounds = std::clamp(o.rounds, 1u, std::max(1u, o.steps));
  c.warmup = o.warmup;
  c.noise = o.noise;
  c.buffer_bytes = o.buffer_bytes ? o.buffer_bytes : default_buffer_bytes(t, c.ranks * c.threads);
  c.compute = o.compute;
  c.gpu = o.gpu;
  rec.warnings = closest->warnings;
  // A run keeps every thread's step records in shared memory: bounded, so a request too big is
  // refused before anything starts.
  uint64_t record_bytes = uint64_t(c.ranks) * c.threads * ((c.steps + c.rounds - 1) / c.rounds) * sizeof(StepRecord);
  if (record_bytes > (1ull << 30))
    return Error{"--steps " + std::to_string(c.steps),
                 "one round's step records would take " + human_bytes(record_bytes) +
                     " (at most 1 GiB: fewer steps, more --rounds, or fewer threads)",
                 ErrorKind::usage};

  auto m = bind::live_machine_state();
  if (!m) return m.error();
  auto root = sys::open_fsroot("/");
  if (!root) return root.error();

  for (const StrategySpec& s : o.strategies) rec.strategies.push_back({s.name, s.policy, s.batch, {}, {}});
  Children noise;
  for (unsigned i = 0; i < o.noise; ++i) {
    auto pid = sys::fork_call([i]() -> int { noise_main(i); });
    if (!pid) return pid.error();
    noise.add(*pid);
  }
  auto order = round_order(o.strategies.size(), c.rounds);
  auto steps = steps_per_round(c.steps, c.rounds);
  for (unsigned round = 0; round < c.rounds; ++round) {
    if (steps[round] == 0) continue;
    for (size_t i : order[round]) {
      const StrategySpec& spec = o.strategies[i];
      RunShape shape{c.ranks, c.threads, steps[round], c.warmup, spec.batch, c.compute,
                     size_t(c.buffer_bytes * spec.batch / sizeof(double)), o.gpu};
      if (auto st = run_once(t, (*plans)[i], *closest, shape, *m, **root, rec.strategies[i]); !st)
        return Error{st.error().what + ": " + spec.name, st.error().why};
      if (o.progress) o.progress(spec.name, round);
    }
  }
  return rec;
}

}  // namespace gpubind::bench

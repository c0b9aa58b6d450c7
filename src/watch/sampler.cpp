#include "watch/sampler.hpp"

#include <algorithm>

namespace gpubind::watch {

Sampler::Sampler(std::vector<const sys::FsRoot*> roots, const sys::Clock& clock, SamplerOptions options)
    : m_roots(std::move(roots)), m_clock(clock), m_options(std::move(options)), m_start(clock.now()) {
  // Room for the files this process itself opens (the HTTP server's sockets, the cache, logs).
  constexpr size_t kReserved = 256;
  size_t limit = sys::raise_open_file_limit();
  if (m_roots.size() != 1 || limit <= kReserved) return;
  // At most three files per thread (stat, schedstat, sched where no counter) and one counter.
  m_kept = std::make_unique<sys::KeptOpenFiles>(*m_roots[0], (limit - kReserved) * 3 / 4);
  if (m_roots[0]->is_this_system()) m_counters = sys::live_task_counters((limit - kReserved) / 4);
}

Taken Sampler::take() {
  const sys::FsRoot& root = *m_roots[std::min<size_t>(m_taken, m_roots.size() - 1)];
  bool numa_maps = m_options.mem_every && m_taken % m_options.mem_every == 0;
  ++m_taken;
  auto before = m_clock.now();
  std::optional<std::vector<probe::GpuProcess>> contexts;
  if (m_options.gpu_contexts) contexts = m_options.gpu_contexts();
  m_options.selection.gpu_context_pids.clear();
  if (contexts)
    for (const probe::GpuProcess& c : *contexts) m_options.selection.gpu_context_pids.push_back(c.pid);
  probe::Probed probed = probe::probe_selected(
      root, probe::select_processes(root, m_options.selection),
      {numa_maps, m_kept.get(), m_counters.get(), m_counters ? &m_memo : nullptr, nullptr, m_options.numa_cpus, &m_quotas});
  if (contexts) probe::add_context_gpus(probed.states, *contexts);
  // Threads that ended: their files, counters and memo close.
  if (m_kept) m_kept->sweep();
  if (m_counters) m_counters->sweep();
  m_memo.sweep();
  m_quotas.sweep();
  std::vector<probe::GpuUsage> gpus;
  if (m_options.gpu_usage) gpus = m_options.gpu_usage();
  auto after = m_clock.now();
  Taken t;
  t.snapshot.gpus = std::move(gpus);
  t.snapshot.contexts_known = contexts.has_value();
  t.snapshot.t = std::chrono::duration<double>(before - m_start).count();
  for (const probe::ProcessState& p : probed.states) {
    m_seen.insert(p.pid);
    for (const std::string& n : p.notes)
      if (m_noted.emplace(p.pid, n).second) t.notes.push_back("PID " + std::to_string(p.pid) + " (" + p.comm + "): " + n);
  }
  t.snapshot.processes = std::move(probed.states);
  for (size_t i = 0; i < probed.errors.size(); ++i) {
    int pid = probed.error_pids[i];
    if (m_seen.count(pid) && probe::is_not_a_live_process(probed.errors[i])) continue;
    if (m_reported.insert(pid).second) t.errors.push_back(probed.errors[i]);
  }
  // Only PIDs this sample selected are remembered: a watch over processes that come and go (10,000
  // short-lived ones) keeps its memory flat. An explicit --pid that is gone stays selected, so its
  // error is still reported once.
  std::set<int> selected(probed.error_pids.begin(), probed.error_pids.end());
  for (const probe::ProcessState& p : t.snapshot.processes) selected.insert(p.pid);
  std::erase_if(m_seen, [&](int pid) { return !selected.count(pid); });
  std::erase_if(m_reported, [&](int pid) { return !selected.count(pid); });
  std::erase_if(m_noted, [&](const auto& n) { return !selected.count(n.first); });
  t.cost_seconds = std::chrono::duration<double>(after - before).count();
  return t;
}

}  // namespace gpubind::watch

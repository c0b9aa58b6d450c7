#include "watch/sampler.hpp"

#include <algorithm>

namespace gpubind::watch {

Taken Sampler::take() {
  const sys::FsRoot& root = *m_roots[std::min<size_t>(m_taken, m_roots.size() - 1)];
  bool numa_maps = m_options.mem_every && m_taken % m_options.mem_every == 0;
  ++m_taken;
  auto before = m_clock.now();
  probe::Probed probed = probe::probe_selected(root, probe::select_processes(root, m_options.selection), {numa_maps});
  auto after = m_clock.now();
  Taken t;
  t.snapshot.t = std::chrono::duration<double>(before - m_start).count();
  for (const probe::ProcessState& p : probed.states) m_seen.insert(p.pid);
  t.snapshot.processes = std::move(probed.states);
  for (size_t i = 0; i < probed.errors.size(); ++i) {
    int pid = probed.error_pids[i];
    if (m_seen.count(pid) && probe::is_not_a_live_process(probed.errors[i])) continue;
    if (m_reported.insert(pid).second) t.errors.push_back(probed.errors[i]);
  }
  t.cost_seconds = std::chrono::duration<double>(after - before).count();
  return t;
}

}  // namespace gpubind::watch

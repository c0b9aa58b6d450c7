#include "bind/launcher.hpp"

#include <algorithm>
#include <cstdio>

#include "sys/process.hpp"
#include "util/strings.hpp"

namespace gpubind::bind {

std::vector<std::pair<std::string, std::string>> launcher_environment(const LaunchSpec& spec, unsigned local_rank,
                                                                      unsigned local_size) {
  unsigned world = spec.nnodes * local_size;
  unsigned rank = spec.node_rank * local_size + local_rank;
  return {
      {"RANK", std::to_string(rank)},
      {"LOCAL_RANK", std::to_string(local_rank)},
      {"WORLD_SIZE", std::to_string(world)},
      {"LOCAL_WORLD_SIZE", std::to_string(local_size)},
      {"GROUP_RANK", std::to_string(spec.node_rank)},
      {"GROUP_WORLD_SIZE", std::to_string(spec.nnodes)},
      {"NODE_RANK", std::to_string(spec.node_rank)},
      {"ROLE_RANK", std::to_string(rank)},
      {"ROLE_WORLD_SIZE", std::to_string(world)},
      {"ROLE_NAME", spec.role},
      {"MASTER_ADDR", spec.master_addr},
      {"MASTER_PORT", std::to_string(spec.master_port)},
      {"TORCHELASTIC_RUN_ID", spec.run_id},
      {"TORCHELASTIC_RESTART_COUNT", std::to_string(spec.restart_count)},
      {"TORCHELASTIC_MAX_RESTARTS", std::to_string(spec.max_restarts)},
      // Rank 0 hosts the c10d store itself (env:// rendezvous); "True" would make every rank a
      // client of a store the agent hosts, which gpubind does not.
      {"TORCHELASTIC_USE_AGENT_STORE", "False"},
      // torch < 2.2 reads the first name, torch >= 2.2 the second.
      {"NCCL_ASYNC_ERROR_HANDLING", spec.nccl_async_error_handling},
      {"TORCH_NCCL_ASYNC_ERROR_HANDLING", spec.nccl_async_error_handling},
  };
}

Status wait_for_master(const std::string& host, unsigned port, std::chrono::milliseconds timeout, const sys::Clock& clock) {
  auto deadline = clock.now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock.now());
    auto ok = sys::tcp_reachable(host, port, int(std::clamp<long long>(left.count(), 1, 1000)));
    if (!ok) return ok.error();
    if (*ok) return Ok{};
    if (clock.now() >= deadline)
      return Error{"rendezvous with " + host + ":" + std::to_string(port),
                   "not reachable after " + std::to_string(timeout.count() / 1000) +
                       " s (is node 0 started? raise the limit with --rdzv-conf join_timeout=SECONDS)"};
    clock.sleep_for(std::chrono::milliseconds(200));
  }
}

namespace {

// torchrun's layout: LOG_DIR/RUN_ID/attempt_N/LOCAL_RANK, this being the part below LOG_DIR.
std::string log_subdir_of(const LaunchSpec& spec, unsigned local_rank) {
  return spec.run_id + "/attempt_" + std::to_string(spec.restart_count) + "/" + std::to_string(local_rank);
}

// One attempt of the worker group: the ranks' output files, environment and binding, then the
// Supervisor's rules.
Result<LaunchResult> launch_once(const plan::Plan& plan, const MachineState& machine, const LaunchSpec& spec,
                                 sys::Spawner& spawner, const sys::Clock& clock) {
  unsigned n = unsigned(plan.ranks.size());
  std::vector<RankStart> starts(n);
  std::vector<int> log_files;
  auto close_logs = [&log_files] {
    for (int fd : log_files) sys::close_fd(fd);
  };
  for (unsigned i = 0; i < n; ++i) {
    RankStart& r = starts[i];
    r.local_rank = i;
    r.global_rank = spec.node_rank * n + i;
    // Output: captured when tagged or logged; each stream goes to the console, a file or both.
    // Every log file is created before any rank starts, so a bad --log-dir starts nothing.
    unsigned redirected = spec.log_dir.empty() ? 0 : spec.redirects.of(i), teed = spec.log_dir.empty() ? 0 : spec.tee.of(i);
    for (unsigned bit : {1u, 2u}) {
      Sink& s = bit == 1 ? r.out : r.err;
      s.console = (redirected & bit) && !(teed & bit) ? nullptr : bit == 1 ? stdout : stderr;
      if (!((redirected | teed) & bit)) continue;
      auto fd = sys::create_log_file(spec.log_dir, log_subdir_of(spec, i) + (bit == 1 ? "/stdout.log" : "/stderr.log"));
      if (!fd) {
        close_logs();
        return Error{"--log-dir", fd.error().message()};
      }
      s.file = *fd;
      log_files.push_back(*fd);
    }
    sys::SpawnRequest& req = r.request;
    req.argv = spec.substitute_local_rank ? substitute_local_rank(spec.command, i) : spec.command;
    req.env = launcher_environment(spec, i, n);
    if (!spec.log_dir.empty()) req.env.push_back({"TORCHELASTIC_ERROR_FILE", spec.log_dir + "/" + log_subdir_of(spec, i) + "/error.json"});
    req.capture_output = spec.tag_output || r.out.file >= 0 || r.err.file >= 0;
    if (spec.bind) {
      const plan::RankBinding& rb = plan.ranks[i];
      req.prepare = [&plan, &rb, &machine, &spec]() -> Status {
        auto binder = sys::real_binder();
        std::vector<std::string> warnings;
        auto applied = apply_binding(plan, rb, machine, *binder, spec.best_effort, spec.mem_refused, warnings);
        if (!spec.quiet)
          for (const std::string& w : warnings) std::fprintf(stderr, "gpubind: warning: %s\n", one_line(w).c_str());
        if (!applied) return applied.error();
        if (spec.on_bound) spec.on_bound(rb, *applied);
        return Ok{};
      };
    }
  }
  LaunchResult result = Supervisor(spawner, clock, spec.grace, spec.tag_output).run(std::move(starts));
  close_logs();
  return result;
}

}  // namespace

Result<LaunchResult> launch(const plan::Plan& plan, const MachineState& machine, const LaunchSpec& spec, sys::Spawner& spawner,
                            const sys::Clock& clock) {
  LaunchSpec attempt = spec;
  for (unsigned n = 0;; ++n) {
    attempt.restart_count = n;
    auto r = launch_once(plan, machine, attempt, spawner, clock);
    if (!r) return r;
    r->restarts = n;
    if (r->exit_code == 0 || r->forwarded_signal || n >= spec.max_restarts) return r;
    std::fprintf(stderr, "gpubind launch: worker group failed (local rank %u, exit %d); restart %u of %u\n",
                 r->first_failure.value_or(0), r->exit_code, n + 1, spec.max_restarts);
  }
}

}  // namespace gpubind::bind

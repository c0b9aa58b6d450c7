#include "bind/launcher.hpp"

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <functional>
#include <optional>
#include <cstdio>
#include <map>

#include "sys/process.hpp"
#include "util/strings.hpp"

namespace gpubind::bind {

using Clock = std::chrono::steady_clock;

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
      {"ROLE_NAME", "default"},
      {"MASTER_ADDR", spec.master_addr},
      {"MASTER_PORT", std::to_string(spec.master_port)},
      {"TORCHELASTIC_RUN_ID", spec.run_id},
      {"TORCHELASTIC_RESTART_COUNT", "0"},
      {"TORCHELASTIC_MAX_RESTARTS", "0"},
  };
}

namespace {

struct Rank {
  RankOutcome outcome;
  sys::Spawned proc;
  bool running = false;
  Clock::time_point start;
  std::string pending_out, pending_err;  // partial lines while tagging
};

// Writes complete lines of `buf` to `to`, each prefixed; keeps the incomplete tail.
void emit_lines(std::string& buf, FILE* to, unsigned rank, bool final_flush) {
  size_t start = 0;
  for (;;) {
    size_t nl = buf.find('\n', start);
    if (nl == std::string::npos) break;
    std::fprintf(to, "[%u] %.*s\n", rank, int(nl - start), buf.data() + start);
    start = nl + 1;
  }
  buf.erase(0, start);
  if (final_flush && !buf.empty()) {
    std::fprintf(to, "[%u] %s\n", rank, buf.c_str());
    buf.clear();
  }
  std::fflush(to);
}

}  // namespace

Result<LaunchResult> launch(const plan::Plan& plan, const MachineState& machine, const LaunchSpec& spec) {
  auto watch = sys::SignalWatch::create();
  if (!watch) return watch.error();
  unsigned n = unsigned(plan.ranks.size());
  std::vector<Rank> ranks(n);
  std::map<int, size_t> by_pid;
  LaunchResult result;

  auto terminate_others = [&](int sig) {
    for (Rank& r : ranks)
      if (r.running) sys::signal_group(r.proc.pid, sig);
  };
  // Stopping: ranks got SIGTERM (or a forwarded signal) and have until kill_at to end.
  enum class Stop { none, grace, killed } stop = Stop::none;
  Clock::time_point kill_at;
  auto start_grace = [&] {
    if (stop != Stop::none) return;
    stop = Stop::grace;
    kill_at = Clock::now() + spec.grace;
  };

  // 1. Start every rank; a rank that cannot start fails the job like a rank that exits early.
  for (unsigned i = 0; i < n; ++i) {
    Rank& r = ranks[i];
    r.outcome.local_rank = i;
    r.outcome.global_rank = spec.node_rank * n + i;
    const plan::RankBinding& rb = plan.ranks[i];
    auto env = launcher_environment(spec, i, n);
    std::function<Status()> prepare;
    if (spec.bind) {
      prepare = [&plan, &rb, &machine, &spec]() -> Status {
        auto binder = sys::real_binder();
        std::vector<std::string> warnings;
        Status s = apply_binding(plan, rb, machine, *binder, spec.best_effort, warnings);
        if (!spec.quiet)
          for (const std::string& w : warnings) std::fprintf(stderr, "gpubind: warning: %s\n", one_line(w).c_str());
        return s;
      };
    }
    r.start = Clock::now();
    auto proc = sys::spawn(spec.command, env, spec.tag_output, prepare);
    if (!proc) {
      r.outcome.exit_code = 125;
      if (!result.first_failure) result.first_failure = i;
      terminate_others(SIGTERM);
      start_grace();
      std::fprintf(stderr, "gpubind: error: local rank %u: %s\n", i, proc.error().message().c_str());
      break;
    }
    r.proc = *proc;
    r.running = true;
    r.outcome.started = true;
    r.outcome.pid = proc->pid;
    by_pid[proc->pid] = i;
  }

  // 2. Supervise until every rank has ended and its output is drained.
  auto anyone_running = [&] {
    for (const Rank& r : ranks)
      if (r.running || r.proc.out_fd >= 0 || r.proc.err_fd >= 0) return true;
    return false;
  };
  while (anyone_running()) {
    std::vector<int> fds{watch->fd()};
    std::vector<std::pair<size_t, bool>> owners{{SIZE_MAX, false}};  // rank, is stderr
    for (size_t i = 0; i < ranks.size(); ++i) {
      if (ranks[i].proc.out_fd >= 0) {
        fds.push_back(ranks[i].proc.out_fd);
        owners.push_back({i, false});
      }
      if (ranks[i].proc.err_fd >= 0) {
        fds.push_back(ranks[i].proc.err_fd);
        owners.push_back({i, true});
      }
    }
    int timeout = -1;
    if (stop == Stop::grace) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(kill_at - Clock::now()).count();
      timeout = int(std::clamp<long long>(left, 0, 1000000));
    }
    for (size_t idx : sys::wait_readable(fds, timeout)) {
      if (idx == 0) {
        for (int sig : watch->drain()) {
          if (sig == SIGCHLD) continue;
          // Forward to every rank's group; if they do not stop within the grace period, kill.
          result.forwarded_signal = sig;
          terminate_others(sig);
          start_grace();
        }
        continue;
      }
      auto [ri, is_err] = owners[idx];
      Rank& r = ranks[ri];
      int& fd = is_err ? r.proc.err_fd : r.proc.out_fd;
      std::string& pending = is_err ? r.pending_err : r.pending_out;
      std::string chunk = sys::read_some(fd);
      if (chunk.empty()) {
        emit_lines(pending, is_err ? stderr : stdout, r.outcome.local_rank, true);
        sys::close_fd(fd);
        fd = -1;
      } else {
        pending += chunk;
        emit_lines(pending, is_err ? stderr : stdout, r.outcome.local_rank, false);
      }
    }
    for (const sys::ChildExit& e : sys::reap_children()) {
      auto it = by_pid.find(e.pid);
      if (it == by_pid.end()) continue;
      Rank& r = ranks[it->second];
      r.running = false;
      r.outcome.wall_seconds = std::chrono::duration<double>(Clock::now() - r.start).count();
      r.outcome.signal = e.signal;
      r.outcome.exit_code = e.signal ? 128 + e.signal : e.exit_code;
      // Whatever the rank started in its group goes with it.
      sys::signal_group(r.proc.pid, SIGKILL);
      if (r.outcome.exit_code != 0 && !result.first_failure) {
        result.first_failure = r.outcome.local_rank;
        terminate_others(SIGTERM);
        start_grace();
      }
    }
    if (stop == Stop::grace && Clock::now() >= kill_at) {
      terminate_others(SIGKILL);
      stop = Stop::killed;  // from here only SIGCHLD and output wake the loop
    }
  }
  for (Rank& r : ranks) result.ranks.push_back(r.outcome);
  if (result.first_failure) result.exit_code = ranks[*result.first_failure].outcome.exit_code;
  else if (result.forwarded_signal) result.exit_code = 128 + result.forwarded_signal;
  return result;
}

}  // namespace gpubind::bind

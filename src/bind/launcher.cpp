#include "bind/launcher.hpp"

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <functional>
#include <optional>
#include <cstdio>
#include <map>
#include <thread>

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

Status wait_for_master(const std::string& host, unsigned port, std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    auto ok = sys::tcp_reachable(host, port, int(std::clamp<long long>(left.count(), 1, 1000)));
    if (!ok) return ok.error();
    if (*ok) return Ok{};
    if (Clock::now() >= deadline)
      return Error{"rendezvous with " + host + ":" + std::to_string(port),
                   "not reachable after " + std::to_string(timeout.count() / 1000) +
                       " s (is node 0 started? raise the limit with --rdzv-conf join_timeout=SECONDS)"};
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

namespace {

// Where one captured stream of a rank goes: the console (tagged or not) and/or a log file.
struct Sink {
  FILE* console = nullptr;  // nullptr: redirected to the file only
  int file = -1;
  std::string pending;      // an incomplete last line
};

struct Rank {
  RankOutcome outcome;
  sys::Spawned proc;
  bool running = false;
  Clock::time_point start;
  Clock::time_point ended;  // when it was reaped
  Sink out, err;
};

// How long a rank's output is still read after it ended: what it wrote just before exiting is
// in the pipe, but a process it detached (setsid, a daemon) may hold the pipe open for ever.
constexpr auto kDrainAfterExit = std::chrono::milliseconds(500);

// Writes the complete lines of `s.pending` to the sink (the console copy prefixed with
// "[RANK] " when tagging); keeps the incomplete tail unless `final_flush`.
void emit_lines(Sink& s, bool tag, unsigned rank, bool final_flush) {
  std::string& buf = s.pending;
  size_t start = 0;
  auto emit = [&](std::string_view line) {
    if (s.file >= 0) {
      sys::write_all(s.file, line);
      sys::write_all(s.file, "\n");
    }
    if (!s.console) return;
    if (tag) std::fprintf(s.console, "[%u] ", rank);
    std::fwrite(line.data(), 1, line.size(), s.console);
    std::fputc('\n', s.console);
  };
  for (;;) {
    size_t nl = buf.find('\n', start);
    if (nl == std::string::npos) break;
    emit(std::string_view(buf).substr(start, nl - start));
    start = nl + 1;
  }
  buf.erase(0, start);
  if (final_flush && !buf.empty()) {
    emit(buf);
    buf.clear();
  }
  if (s.console) std::fflush(s.console);
}

Result<LaunchResult> launch_once(const plan::Plan& plan, const MachineState& machine, const LaunchSpec& spec);

// torchrun's layout: LOG_DIR/RUN_ID/attempt_N/LOCAL_RANK.
std::string log_dir_of(const LaunchSpec& spec, unsigned local_rank) {
  return spec.log_dir + "/" + spec.run_id + "/attempt_" + std::to_string(spec.restart_count) + "/" + std::to_string(local_rank);
}

}  // namespace

Result<LaunchResult> launch(const plan::Plan& plan, const MachineState& machine, const LaunchSpec& spec) {
  LaunchSpec attempt = spec;
  for (unsigned n = 0;; ++n) {
    attempt.restart_count = n;
    auto r = launch_once(plan, machine, attempt);
    if (!r) return r;
    r->restarts = n;
    if (r->exit_code == 0 || r->forwarded_signal || n >= spec.max_restarts) return r;
    std::fprintf(stderr, "gpubind launch: worker group failed (local rank %u, exit %d); restart %u of %u\n",
                 r->first_failure.value_or(0), r->exit_code, n + 1, spec.max_restarts);
  }
}

namespace {

Result<LaunchResult> launch_once(const plan::Plan& plan, const MachineState& machine, const LaunchSpec& spec) {
  auto watch = sys::SignalWatch::create();
  if (!watch) return watch.error();
  // Kills every rank's whole process group if this process is SIGKILLed or OOM-killed.
  auto reaper = sys::GroupReaper::start();
  if (!reaper) return reaper.error();
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

  auto close_logs = [&ranks] {
    for (Rank& r : ranks)
      for (Sink* s : {&r.out, &r.err})
        if (s->file >= 0) sys::close_fd(s->file);
  };
  // 0. Output: captured when tagged or logged; each stream goes to the console, a file or both.
  // Every log file is created before any rank starts, so a bad --log-dir starts nothing.
  for (unsigned i = 0; i < n; ++i) {
    unsigned redirected = spec.log_dir.empty() ? 0 : spec.redirects.of(i), teed = spec.log_dir.empty() ? 0 : spec.tee.of(i);
    for (unsigned bit : {1u, 2u}) {
      Sink& s = bit == 1 ? ranks[i].out : ranks[i].err;
      s.console = (redirected & bit) && !(teed & bit) ? nullptr : bit == 1 ? stdout : stderr;
      if (!((redirected | teed) & bit)) continue;
      auto fd = sys::create_log_file(log_dir_of(spec, i) + (bit == 1 ? "/stdout.log" : "/stderr.log"));
      if (!fd) {
        close_logs();
        return Error{"--log-dir", fd.error().message()};
      }
      s.file = *fd;
    }
  }

  // 1. Start every rank; a rank that cannot start fails the job like a rank that exits early.
  for (unsigned i = 0; i < n; ++i) {
    Rank& r = ranks[i];
    r.outcome.local_rank = i;
    r.outcome.global_rank = spec.node_rank * n + i;
    const plan::RankBinding& rb = plan.ranks[i];
    auto env = launcher_environment(spec, i, n);
    if (!spec.log_dir.empty()) env.push_back({"TORCHELASTIC_ERROR_FILE", log_dir_of(spec, i) + "/error.json"});
    bool capture = spec.tag_output || r.out.file >= 0 || r.err.file >= 0;
    std::vector<std::string> command = spec.substitute_local_rank ? substitute_local_rank(spec.command, i) : spec.command;
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
    auto proc = sys::spawn(command, env, capture, prepare);
    if (!proc) {
      r.outcome.exit_code = 125;
      if (!result.first_failure) result.first_failure = i;
      terminate_others(SIGTERM);
      start_grace();
      std::fprintf(stderr, "gpubind: error: local rank %u: %s\n", i, proc.error().message().c_str());
      break;
    }
    r.proc = *proc;
    reaper->watch(proc->pid);
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
    auto wake_by = [&](Clock::time_point t) {
      auto left = std::clamp<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count(), 0, 1000000);
      timeout = timeout < 0 ? int(left) : std::min(timeout, int(left));
    };
    if (stop == Stop::grace) wake_by(kill_at);
    for (const Rank& r : ranks)
      if (!r.running && (r.proc.out_fd >= 0 || r.proc.err_fd >= 0)) wake_by(r.ended + kDrainAfterExit);
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
      Sink& sink = is_err ? r.err : r.out;
      std::string chunk = sys::read_some(fd);
      if (chunk.empty()) {
        emit_lines(sink, spec.tag_output, r.outcome.global_rank, true);
        sys::close_fd(fd);
        fd = -1;
      } else {
        sink.pending += chunk;
        emit_lines(sink, spec.tag_output, r.outcome.global_rank, false);
      }
    }
    for (const sys::ChildExit& e : sys::reap_children()) {
      auto it = by_pid.find(e.pid);
      if (it == by_pid.end()) continue;
      Rank& r = ranks[it->second];
      r.running = false;
      r.ended = Clock::now();
      r.outcome.wall_seconds = std::chrono::duration<double>(Clock::now() - r.start).count();
      r.outcome.signal = e.signal;
      r.outcome.exit_code = e.signal ? 128 + e.signal : e.exit_code;
      // Whatever the rank started in its group goes with it.
      sys::signal_group(r.proc.pid, SIGKILL);
      reaper->forget(r.proc.pid);
      if (r.outcome.exit_code != 0 && !result.first_failure) {
        result.first_failure = r.outcome.local_rank;
        terminate_others(SIGTERM);
        start_grace();
      }
    }
    // A rank that ended kDrainAfterExit ago: its output is done, whoever still holds the pipe.
    for (Rank& r : ranks)
      if (!r.running && Clock::now() >= r.ended + kDrainAfterExit)
        for (auto [fd, sink] : {std::pair{&r.proc.out_fd, &r.out}, std::pair{&r.proc.err_fd, &r.err}})
          if (*fd >= 0) {
            emit_lines(*sink, spec.tag_output, r.outcome.global_rank, true);
            sys::close_fd(*fd);
            *fd = -1;
          }
    if (stop == Stop::grace && Clock::now() >= kill_at) {
      terminate_others(SIGKILL);
      stop = Stop::killed;  // from here only SIGCHLD and output wake the loop
    }
  }
  for (Rank& r : ranks) result.ranks.push_back(r.outcome);
  close_logs();
  if (result.first_failure) result.exit_code = ranks[*result.first_failure].outcome.exit_code;
  else if (result.forwarded_signal) result.exit_code = 128 + result.forwarded_signal;
  return result;
}

}  // namespace

}  // namespace gpubind::bind

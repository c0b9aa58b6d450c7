#include "bind/job_shape.hpp"

#include <algorithm>

#include "bind/hostlist.hpp"
#include "bind/torchrun.hpp"
#include "util/strings.hpp"

namespace gpubind::bind {

namespace {

Error usage(std::string what, std::string why) { return Error{std::move(what), std::move(why), ErrorKind::usage}; }

std::optional<std::string> value(const std::map<std::string, std::string>& env, const char* name) {
  auto it = env.find(name);
  return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
}

std::optional<unsigned> number(const std::map<std::string, std::string>& env, const char* name) {
  auto v = value(env, name);
  auto n = v ? parse_uint(*v) : std::nullopt;
  return n ? std::optional<unsigned>(unsigned(*n)) : std::nullopt;
}

// The command: as given after "--"; torchrun's form runs SCRIPT with python (-u, unbuffered, as
// torchrun does), or -m MODULE, or SCRIPT itself with --no-python.
Status command(const LaunchFlags& f, const std::map<std::string, std::string>& env, LaunchSpec& spec) {
  std::vector<std::string> rest = f.rest;
  bool torchrun_form = true;
  if (!rest.empty() && rest[0] == "--") {
    rest.erase(rest.begin());
    torchrun_form = false;
  } else if (!rest.empty() && rest[0].starts_with("-")) {
    return usage("launch", "unknown option " + rest[0]);
  }
  if (rest.empty()) return usage("launch", "no command (gpubind launch [options] -- CMD [ARGS...], or gpubind launch [options] SCRIPT.py)");
  if (f.run_path)
    return usage("--run-path", "not supported: gpubind starts each worker as its own process (python SCRIPT), never inside the "
                               "launcher's interpreter");
  if (!torchrun_form && (f.module || f.no_python))
    return usage(f.module ? "--module" : "--no-python", "applies to torchrun's SCRIPT form, not to '-- CMD'");
  if (torchrun_form && !f.no_python) {
    auto py = value(env, "GPUBIND_PYTHON");
    std::vector<std::string> cmd = {py && !py->empty() ? *py : "python3", "-u"};
    if (f.module) cmd.push_back("-m");
    rest.insert(rest.begin(), cmd.begin(), cmd.end());
  }
  spec.command = rest;
  spec.substitute_local_rank = torchrun_form;
  return Ok{};
}

// Per-rank logs, restarts, output and the workers' NCCL setting.
Status workers(const LaunchFlags& f, const std::map<std::string, std::string>& env, LaunchSpec& spec) {
  if ((!f.redirects.empty() || !f.tee.empty()) && f.log_dir.empty())
    return usage(f.redirects.empty() ? "--tee" : "--redirects", "needs --log-dir DIR (where the per-rank files go)");
  if (!(f.grace_seconds >= 0 && f.grace_seconds <= 86400))  // NaN fails every comparison
    return usage("--grace", "expected seconds from 0 to 86400");
  spec.bind = !f.no_bind;
  spec.tag_output = f.tag_output;
  spec.grace = std::chrono::milliseconds(long(f.grace_seconds * 1000));
  spec.best_effort = f.best_effort ? BestEffort::yes : BestEffort::no;
  spec.mem_refused = f.require_mem_policy ? MemRefused::error : MemRefused::warn;
  spec.quiet = f.quiet;
  spec.role = f.role;
  spec.max_restarts = f.max_restarts.value_or(0);
  if (auto v = value(env, "TORCH_NCCL_ASYNC_ERROR_HANDLING")) spec.nccl_async_error_handling = *v;
  else if (auto w = value(env, "NCCL_ASYNC_ERROR_HANDLING")) spec.nccl_async_error_handling = *w;
  spec.log_dir = f.log_dir;
  if (!f.redirects.empty()) {
    auto r = parse_stream_selection("--redirects", f.redirects);
    if (!r) return r.error();
    spec.redirects = *r;
  }
  if (!f.tee.empty()) {
    auto t = parse_stream_selection("--tee", f.tee);
    if (!t) return t.error();
    spec.tee = *t;
  }
  return Ok{};
}

// Nodes and this node's rank: the flags, else Slurm's under srun (one launch per node).
Status nodes(const LaunchFlags& f, const std::map<std::string, std::string>& env, bool under_srun, LaunchSpec& spec) {
  NodeRange n{1, 1};
  if (!f.nnodes.empty()) {
    auto r = parse_nnodes(f.nnodes);
    if (!r) return r.error();
    n = *r;
    if (n.min != n.max) return usage("--nnodes " + f.nnodes, "elastic membership (MIN < MAX) is not supported: give a fixed node count");
  } else if (under_srun) {
    n.min = n.max = number(env, "SLURM_NNODES").value_or(1);
  }
  if (f.standalone && n.max > 1) return usage("--standalone", "is a single-node job; --nnodes says " + f.nnodes);
  spec.nnodes = n.max;
  std::optional<unsigned> node_rank = f.node_rank;
  if (!node_rank && under_srun) node_rank = number(env, "SLURM_NODEID");
  if (f.rdzv_backend == "c10d" && spec.nnodes > 1 && !node_rank)
    return usage("--rdzv-backend c10d", "node ranks are assigned by gpubind statically: give --node-rank (or run under srun)");
  spec.node_rank = node_rank.value_or(0);
  if (spec.node_rank >= spec.nnodes)
    return usage("--node-rank " + std::to_string(spec.node_rank), "not below --nnodes " + std::to_string(spec.nnodes));
  return Ok{};
}

// The rendezvous: --master-addr/--master-port, torchrun's --rdzv-endpoint or --standalone, else
// the first host of Slurm's node list; the run id.
Status rendezvous(const LaunchFlags& f, const std::map<std::string, std::string>& env, bool under_srun, JobShape& shape) {
  LaunchSpec& spec = shape.spec;
  std::string master_addr = f.master_addr;
  unsigned master_port = f.master_port.value_or(0);  // 0: none given
  if (!f.rdzv_endpoint.empty() && !f.standalone) {
    // HOST[:PORT]; torchrun's c10d default port is 29400.
    size_t colon = f.rdzv_endpoint.rfind(':');
    if (!master_addr.empty() || master_port) return usage("--rdzv-endpoint", "give it or --master-addr/--master-port, not both");
    master_addr = colon == std::string::npos ? f.rdzv_endpoint : f.rdzv_endpoint.substr(0, colon);
    if (colon != std::string::npos) {
      auto p = parse_uint(f.rdzv_endpoint.substr(colon + 1));
      if (!p || *p > 65535) return usage("--rdzv-endpoint " + f.rdzv_endpoint, "expected HOST[:PORT] with a port up to 65535");
      if (*p) master_port = unsigned(*p);
    } else if (spec.nnodes > 1) {
      master_port = 29400;
    }
  }
  if (f.standalone) {
    master_addr = "127.0.0.1";
    master_port = 0;
  }
  if (!master_addr.empty()) {
    spec.master_addr = master_addr;
  } else if (under_srun && spec.nnodes > 1) {
    auto list = value(env, "SLURM_JOB_NODELIST");
    auto host = list ? first_host(*list) : std::nullopt;
    if (!host) return usage("SLURM_JOB_NODELIST", "cannot find the first host; give --master-addr");
    spec.master_addr = *host;
  } else if (spec.nnodes > 1) {
    return usage("--nnodes " + std::to_string(spec.nnodes), "several nodes need --master-addr");
  }
  if (master_port) spec.master_port = master_port;
  shape.needs_free_port = !master_port && spec.nnodes == 1;
  if (!f.rdzv_id.empty()) spec.run_id = f.rdzv_id;
  else if (auto job = value(env, "SLURM_JOB_ID")) spec.run_id = "slurm-" + *job;
  // The run id names a directory under --log-dir (RUN_ID/attempt_N/LOCAL_RANK): one plain name.
  if (spec.run_id == "." || spec.run_id == ".." || spec.run_id.size() > 255 ||
      std::any_of(spec.run_id.begin(), spec.run_id.end(), [](char c) { return c == '/' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }))
    return usage(f.rdzv_id.empty() ? "SLURM_JOB_ID " + spec.run_id.substr(6) : "--rdzv-id " + spec.run_id, "the run id names one directory under --log-dir: no '/', no control character, not '.' or '..', at most 255 bytes");
  return Ok{};
}

}  // namespace

const std::vector<std::string>& job_env_names() {
  static const std::vector<std::string> names = {"SLURM_STEP_ID",   "SLURM_NNODES", "SLURM_NODEID",
                                                 "SLURM_JOB_NODELIST", "SLURM_JOB_ID", "TORCH_NCCL_ASYNC_ERROR_HANDLING",
                                                 "NCCL_ASYNC_ERROR_HANDLING", "GPUBIND_PYTHON"};
  return names;
}

Result<JobShape> job_shape(const LaunchFlags& f, const std::map<std::string, std::string>& env) {
  JobShape shape;
  if (Status s = command(f, env, shape.spec); !s) return s.error();
  if (f.rdzv_backend != "static" && f.rdzv_backend != "c10d")
    return usage("--rdzv-backend " + f.rdzv_backend, "not supported: gpubind rendezvous is static (MASTER_ADDR:MASTER_PORT, "
                                                     "node ranks known); c10d is accepted when the node rank is known");
  // Ranks on this node: -n or --nproc-per-node (N, gpu, cpu, auto).
  shape.ranks = f.ranks;
  if (!f.nproc.empty()) {
    if (f.ranks) return usage("--nproc-per-node", "give -n or --nproc-per-node, not both");
    if (auto v = parse_uint(f.nproc); v && *v > 0 && *v <= 65536) shape.ranks = unsigned(*v);
    else if (f.nproc == "gpu" || f.nproc == "cpu" || f.nproc == "auto") shape.ranks_from = f.nproc;
    else return usage("--nproc-per-node " + f.nproc, "expected a number, gpu, cpu or auto");
  }
  if (Status s = workers(f, env, shape.spec); !s) return s.error();
  auto conf = parse_key_values("--rdzv-conf", f.rdzv_conf);
  if (!conf) return conf.error();
  for (const auto& [k, v] : *conf) {
    if (k != "join_timeout" && k != "timeout") return usage("--rdzv-conf " + k, "not supported (only join_timeout / timeout, in seconds)");
    auto secs = parse_uint(v);
    if (!secs || *secs > 86400) return usage("--rdzv-conf " + k + "=" + v, "expected seconds (0-86400)");
    shape.join_timeout_seconds = double(*secs);
  }
  bool under_srun = env.count("SLURM_STEP_ID") && env.count("SLURM_NNODES") && env.count("SLURM_NODEID");
  if (Status s = nodes(f, env, under_srun, shape.spec); !s) return s.error();
  if (Status s = rendezvous(f, env, under_srun, shape); !s) return s.error();
  return shape;
}

}  // namespace gpubind::bind

#include "bind/spank_args.hpp"

#include <cstring>

#include "util/strings.hpp"

namespace gpubind::bind {

namespace {

// A mode name, "" meaning closest; "verbose" is closest with a report.
bool parse_mode(const std::string& v, std::string& mode, bool& verbose) {
  std::string m = v.empty() ? "closest" : v;
  if (m == "verbose") {
    verbose = true;
    m = "closest";
  }
  if (m != "closest" && m != "socket-split" && m != "socket" && m != "numa" && m != "none") return false;
  mode = m;
  return true;
}

}  // namespace

Result<PlugstackArgs> parse_plugstack_args(const std::vector<std::string>& args) {
  PlugstackArgs out;
  for (const std::string& a : args) {
    if (a.starts_with("default=")) {
      bool verbose = false;
      if (!parse_mode(a.substr(8), out.site_default, verbose))
        return Error{"plugstack.conf: bad argument '" + one_line(a) + "'", "default=closest|socket-split|socket|numa|none"};
    } else if (a.starts_with("mem=")) {
      auto m = plan::mem_policy_from_string(a.substr(4));
      if (!m) return Error{"plugstack.conf: bad argument '" + one_line(a) + "'", "mem=preferred|bind|interleave|none"};
      out.mem = *m;
      out.mem_set = true;
    } else if (a == "strict") {
      out.strict = true;
    } else if (a == "dryrun") {
      out.dry_run = true;
    } else if (a.starts_with("config=")) {
      out.config = a.substr(7);
      out.config_set = true;
    } else if (a.starts_with("topology=")) {
      out.topology = a.substr(9);
    } else if (bool* flag = a == "no-smt"               ? &out.plan.no_smt
                            : a == "nic-env"            ? &out.plan.nic_env
                            : a == "isolate-gpus"       ? &out.plan.isolate_gpus
                            : a == "no-spread-gpus"     ? &out.plan.no_spread_gpus
                            : a == "omp"                ? &out.plan.omp
                            : a == "nccl-proxy-cpus"    ? &out.plan.nccl_proxy_cpus
                            : a == "balanced"           ? &out.plan.balanced
                            : a == "mem-on-gpu"         ? &out.plan.mem_on_gpu
                            : a == "require-gpu"        ? &out.plan.require_gpu
                            : a == "require-mem-policy" ? &out.require_mem_policy
                                                        : nullptr) {
      *flag = true;
    } else if (a.starts_with("gpus-per-rank=") || a.starts_with("mem-node=")) {
      bool per_rank = a.starts_with("gpus-per-rank=");
      auto n = parse_uint(a.substr(a.find('=') + 1));
      if (!n || *n > 4096 || (per_rank && *n == 0))
        return Error{"plugstack.conf: bad argument '" + one_line(a) + "'", per_rank ? "gpus-per-rank=N (1-4096)" : "mem-node=N (a NUMA node)"};
      (per_rank ? out.plan.gpus_per_rank : out.plan.mem_node) = unsigned(*n);
    } else {
      return Error{"plugstack.conf: unknown argument '" + one_line(a) + "'",
                   "default=, mem=, strict, require-mem-policy, topology=, dryrun, config=, no-smt, nic-env, isolate-gpus, "
                   "no-spread-gpus, omp, nccl-proxy-cpus, balanced, mem-on-gpu, require-gpu, gpus-per-rank=, mem-node="};
    }
  }
  return out;
}

Result<GpubindOption> parse_gpubind_option(const char* optarg) {
  // sbatch --gpubind without a value reaches the job's steps as the literal "(null)" (Slurm
  // 22.05 prints the missing optional argument into SLURM_SPANK__SLURM_SPANK_OPTION_gpubind_gpubind).
  std::string v = optarg && std::strcmp(optarg, "(null)") != 0 ? optarg : "";
  GpubindOption o;
  o.mode = "closest";
  o.defaulted = true;
  auto bad = [&v](const std::string& why) {
    return Error{"--gpubind=" + one_line(v),
                 why + "; expected a comma-separated list of at most one mode (closest, socket-split, socket, numa, none) and "
                       "verbose, report, mem=preferred|bind|interleave|none, nic-env"};
  };
  if (v.empty()) return o;
  for (std::string_view item : split(v, ',')) {
    std::string w(item);
    if (w == "verbose" || w == "report") {
      o.verbose = true;
    } else if (w == "nic-env") {
      o.nic_env = true;
    } else if (w.starts_with("mem=")) {
      auto m = plan::mem_policy_from_string(w.substr(4));
      if (!m) return bad("unknown memory policy '" + one_line(w.substr(4)) + "'");
      o.mem = *m;
    } else if (bool ignored = false; parse_mode(w, o.mode, ignored) && !w.empty()) {
      if (!o.defaulted) return bad("two modes");
      o.defaulted = false;
    } else {
      return bad("unknown word '" + one_line(w) + "'");
    }
  }
  return o;
}

std::optional<std::string> spank_built_for(std::string_view file) {
  // The prefix alone is in the file too (this function's own constant): the first occurrence
  // followed by a release and its NUL.
  for (size_t at = file.find(kSpankBuiltFor); at != std::string_view::npos; at = file.find(kSpankBuiltFor, at + 1)) {
    std::string_view rest = file.substr(at + kSpankBuiltFor.size());
    size_t end = rest.find_first_not_of("0123456789.");
    if (end != 0 && end != std::string_view::npos && rest[end] == '\0') return std::string(rest.substr(0, end));
  }
  return std::nullopt;
}

}  // namespace gpubind::bind

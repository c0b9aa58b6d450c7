#include "bind/local_rank.hpp"

#include <vector>

#include "util/strings.hpp"

namespace gpubind::bind {

namespace {

struct Source {
  const char* rank;
  const char* size;  // may be nullptr
};

// The order of launchers checked; a process launched by one inside another (mpirun inside an
// salloc shell) sees the inner launcher's variables first in this list only when Slurm did not
// launch it, since srun is the outermost launcher that sets SLURM_LOCALID per task.
const Source kSources[] = {
    {"SLURM_LOCALID", nullptr},
    {"OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {"MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
    {"PMI_LOCAL_RANK", "PMI_LOCAL_SIZE"},
    {"PALS_LOCAL_RANKID", "PALS_LOCAL_SIZE"},
    {"MV2_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_SIZE"},
    {"FLUX_TASK_LOCAL_ID", nullptr},
    {"JSM_NAMESPACE_LOCAL_RANK", "JSM_NAMESPACE_LOCAL_SIZE"},
    {"LOCAL_RANK", "LOCAL_WORLD_SIZE"},
};

Result<unsigned> number(const std::map<std::string, std::string>& env, const std::string& name) {
  const std::string& v = env.at(name);
  auto n = parse_uint(v);
  if (!n || *n > 1000000) return Error{name + "='" + v + "'", "expected a non-negative integer"};
  return unsigned(*n);
}

}  // namespace

const std::vector<std::string>& local_rank_env_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const Source& s : kSources) {
      v.push_back(s.rank);
      if (s.size) v.push_back(s.size);
    }
    for (const char* extra : {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE", "SLURM_NODEID"}) v.push_back(extra);
    return v;
  }();
  return names;
}

std::optional<std::vector<unsigned>> expand_slurm_counts(const std::string& s) {
  std::vector<unsigned> out;
  for (std::string_view part : split(s, ',')) {
    part = trim(part);
    unsigned repeat = 1;
    if (auto open = part.find("(x"); open != std::string_view::npos) {
      if (!part.ends_with(")")) return std::nullopt;
      auto r = parse_uint(part.substr(open + 2, part.size() - open - 3));
      if (!r || *r == 0 || *r > 100000) return std::nullopt;
      repeat = unsigned(*r);
      part = part.substr(0, open);
    }
    auto n = parse_uint(part);
    if (!n || *n > 1000000) return std::nullopt;
    if (repeat > kMaxSlurmNodes - out.size()) return std::nullopt;
    out.insert(out.end(), repeat, unsigned(*n));
  }
  return out;
}

Result<std::optional<LocalRank>> detect_local_rank(const std::map<std::string, std::string>& env) {
  for (const Source& s : kSources) {
    if (!env.count(s.rank)) continue;
    auto rank = number(env, s.rank);
    if (!rank) return rank.error();
    LocalRank lr;
    lr.rank = *rank;
    lr.source = s.rank;
    if (s.size && env.count(s.size)) {
      auto size = number(env, s.size);
      if (!size) return size.error();
      lr.size = *size;
    }
    if (std::string(s.rank) == "SLURM_LOCALID") {
      // Tasks on this node: entry SLURM_NODEID of the step's (else the job's) per-node counts.
      for (const char* counts : {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"}) {
        if (!env.count(counts)) continue;
        auto per_node = expand_slurm_counts(env.at(counts));
        if (!per_node) return Error{std::string(counts) + "='" + env.at(counts) + "'", "expected counts like 4(x2),2"};
        unsigned node = 0;
        if (env.count("SLURM_NODEID")) {
          auto n = number(env, "SLURM_NODEID");
          if (!n) return n.error();
          node = *n;
        }
        if (node >= per_node->size())
          return Error{"SLURM_NODEID=" + std::to_string(node), std::string("past the ") + std::to_string(per_node->size()) +
                                                                   " nodes of " + counts};
        lr.size = (*per_node)[node];
        break;
      }
    }
    if (lr.size && lr.rank >= *lr.size)
      return Error{std::string(s.rank) + "=" + std::to_string(lr.rank),
                   "not below the local size " + std::to_string(*lr.size)};
    return std::optional<LocalRank>(lr);
  }
  return std::optional<LocalRank>();
}

}  // namespace gpubind::bind

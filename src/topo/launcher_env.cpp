#include "topo/launcher_env.hpp"

#include <vector>

#include "util/strings.hpp"

namespace gpubind::topo {

namespace {

using launcher_env::LocalRankVars;

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
    for (const LocalRankVars& s : launcher_env::kLocalRank) {
      v.push_back(s.rank);
      if (s.size) v.push_back(s.size);
    }
    for (const char* extra : launcher_env::kSlurmCounts) v.push_back(extra);
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

// The local rank `s` gives; nullopt when its rank variable is not set.
Result<std::optional<LocalRank>> read_local_rank(const std::map<std::string, std::string>& env, const LocalRankVars& s) {
  if (!env.count(s.rank)) return std::optional<LocalRank>();
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
    return Error{std::string(s.rank) + "=" + std::to_string(lr.rank), "not below the local size " + std::to_string(*lr.size)};
  return std::optional<LocalRank>(lr);
}

Result<std::optional<LocalRank>> detect_local_rank(const std::map<std::string, std::string>& env) {
  std::optional<LocalRank> first;
  for (const LocalRankVars& s : launcher_env::kLocalRank) {
    auto lr = read_local_rank(env, s);
    if (!lr) return lr.error();
    if (!*lr) continue;
    if (!first) {
      first = *lr;
      // Only one task of a Slurm step on this node: a launcher inside it may have started more.
      if (first->source != "SLURM_LOCALID" || first->size.value_or(1) > 1) return first;
      continue;
    }
    if ((*lr)->size.value_or(1) > 1) return *lr;
  }
  return first;
}

const std::vector<std::string>& global_rank_env_names() {
  static const std::vector<std::string> names(std::begin(launcher_env::kGlobalRank), std::end(launcher_env::kGlobalRank));
  return names;
}

long global_rank(const std::map<std::string, std::string>& env) {
  for (const char* n : launcher_env::kGlobalRank)
    if (auto it = env.find(n); it != env.end())
      if (auto v = parse_uint(it->second); v && *v < 100000000) return long(*v);
  return -1;
}

}  // namespace gpubind::topo

#include "check/slurm_job.hpp"

#include <algorithm>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "util/json_field.hpp"
#include "util/strings.hpp"

namespace gpubind::check {

namespace {

constexpr const char* kRow = "gpubind-row";
constexpr const char* kError = "gpubind-error";
constexpr const char* kEnd = "gpubind-end";

// A field of a node's line: one line, no tab.
std::string field(const std::string& s) {
  std::string out = one_line(s);
  std::replace(out.begin(), out.end(), '\t', ' ');
  return out;
}

// Every finding's reason, joined: "" when OK.
std::string reasons(const ProcessReport& p) {
  std::vector<std::string> out;
  for (const Finding& f : p.findings) out.push_back(f.reason);
  return join(out, "; ");
}

// A member of a JSON object another node wrote, "" when absent or of another type.
std::string text_of(const nlohmann::json& o, const char* key) { return json_field::get<std::string>(o, key).value_or(""); }

// The end of a merge: nodes that sent no `what` are an error; rows by node, then PID.
template <class Report>
void close_merge(Report& rep, const char* what) {
  if (rep.nodes.size() < rep.nodes_expected)
    rep.errors.push_back(std::to_string(rep.nodes_expected - rep.nodes.size()) + " of the job's " + std::to_string(rep.nodes_expected) +
                         " nodes gave no " + what);
  std::stable_sort(rep.rows.begin(), rep.rows.end(), [](const auto& a, const auto& b) { return a.node != b.node ? a.node < b.node : a.pid < b.pid; });
}

// A job id's number: digits, at most 20 (what a 64-bit id prints).
bool job_number(std::string_view s) { return all_digits(s) && s.size() <= 20; }

}  // namespace

bool JobReport::has_findings() const {
  return std::any_of(rows.begin(), rows.end(), [](const JobRow& r) { return r.verdict != "OK" && r.verdict != "NO_GPU"; });
}

bool valid_job_id(const std::string& job) {
  size_t us = job.find('_');
  if (us == std::string::npos) return job_number(job);
  return job_number(std::string_view(job).substr(0, us)) && job_number(std::string_view(job).substr(us + 1));
}

Result<SqueueJob> squeue_job(const std::string& job, const std::string& squeue_out) {
  std::string what = "--slurm-job " + job;
  std::vector<std::vector<std::string>> rows;
  for (std::string_view line : split(trim(squeue_out), '\n')) {
    if (trim(line).empty()) continue;
    std::vector<std::string> f;
    for (std::string_view x : split(trim(line), '|')) f.emplace_back(x);
    if (f.size() != 4) return Error{what, "squeue gave no job id, node count and state ('" + one_line(std::string(line)) + "')"};
    rows.push_back(std::move(f));
  }
  if (rows.empty()) return Error{what, "squeue knows no such job (finished, or another cluster's)"};
  if (rows.size() > 1 || (rows[0][1] != job && rows[0][0] != job)) {  // "7": an array whose tasks are jobs of their own
    std::vector<std::string> tasks;
    for (const auto& r : rows) tasks.push_back(r[1] + " (job " + r[0] + ", " + to_lower(r[3]) + ")");
    return Error{what, "a job array: its tasks " + join(tasks, ", ") + " are jobs of their own; name one (--slurm-job " + rows[0][1] + ")",
                 ErrorKind::usage};
  }
  const std::vector<std::string>& r = rows[0];
  auto n = parse_uint(r[2]);
  if (!job_number(r[0]) || !n || *n == 0) return Error{what, "squeue gave no job id or node count ('" + one_line(join(r, "|")) + "')"};
  if (r[3] != "RUNNING")
    return Error{what, "the job is " + (r[3].empty() ? std::string("in an unknown state") : r[3]) + ": only a running job's tasks can be checked"};
  return SqueueJob{r[0], unsigned(*n)};
}

std::vector<std::string> fanout_command(const std::string& job, unsigned nodes, const std::string& gpubind,
                                        const std::vector<std::string>& command) {
  std::vector<std::string> argv = {"srun", "--overlap", "--jobid=" + job, "--nodes=" + std::to_string(nodes), "--ntasks-per-node=1",
                                   "--quiet", "--kill-on-bad-exit=0", gpubind};
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

std::string node_rows(const Report& r, const std::string& node) {
  std::string out;
  std::string n = field(node);
  for (const ProcessReport& p : r.processes) {
    std::vector<std::string> f = {kRow,
                                  n,
                                  std::to_string(p.state.pid),
                                  field(global_rank_of(p.state)),
                                  field(local_rank_of(p.state)),
                                  field(join(p.gpus, ",")),
                                  p.state.cpus_allowed.to_list(),
                                  verdicts_of(p),
                                  field(reasons(p))};
    out += join(f, "\t") + "\n";
  }
  for (const Error& e : r.errors) out += std::string(kError) + "\t" + n + "\t" + field(e.message()) + "\n";
  out += std::string(kEnd) + "\t" + n + "\t" + std::to_string(r.processes.size()) + "\t" + std::to_string(r.errors.size()) + "\n";
  return out;
}

JobReport merge_node_rows(const std::string& job, unsigned nodes_expected, const std::string& out) {
  JobReport rep;
  rep.job = job;
  rep.nodes_expected = nodes_expected;
  for (std::string_view line : split(out, '\n')) {
    std::vector<std::string_view> f = split(line, '\t');
    if (f.empty()) continue;
    if (f[0] == kRow && f.size() == 9) {
      auto pid = parse_uint(f[2]);
      if (!pid) continue;
      rep.rows.push_back({std::string(f[1]), int(*pid), std::string(f[3]), std::string(f[4]), std::string(f[5]), std::string(f[6]),
                          std::string(f[7]), std::string(f[8])});
    } else if (f[0] == kError && f.size() == 3) {
      rep.errors.push_back(std::string(f[1]) + ": " + std::string(f[2]));
    } else if (f[0] == kEnd && f.size() == 4) {
      rep.nodes.emplace_back(f[1]);
    }
  }
  close_merge(rep, "answer");
  return rep;
}

namespace {

constexpr std::string_view kPiece = "gpubind-summary-piece";
constexpr size_t kPieceBytes = 512;  // far below srun's 1024-byte messages, with the node name and numbers

// One node's summary (a JSON object) into the report.
void take_summary(const nlohmann::json& j, JobWatchReport& rep) {
  auto node = json_field::get<std::string>(j, "node");
  if (text_of(j, "type") != "summary" || !node) return;
  rep.nodes.push_back(*node);
  if (json_field::get<bool>(j, "any_finding").value_or(false)) rep.any_finding = true;
  const nlohmann::json* ranks = json_field::member(j, "ranks");
  if (!ranks || !ranks->is_array()) return;
  for (const auto& r : *ranks) {
    auto pid = json_field::get<int>(r, "pid");
    if (!pid) continue;
    JobWatchRow row;
    row.node = *node;
    row.pid = *pid;
    row.rank = text_of(r, "rank");
    row.local_rank = text_of(r, "local_rank");
    row.comm = text_of(r, "comm");
    row.seen = join(json_field::get<std::vector<std::string>>(r, "seen").value_or(std::vector<std::string>{}), ",");
    row.worst_interval = json_field::get<unsigned>(r, "worst_interval");
    row.exited = json_field::get<bool>(r, "exited").value_or(false);
    rep.rows.push_back(row);
  }
}

}  // namespace

std::string summary_pieces(const std::string& node, const std::string& json_line) {
  std::string_view text = trim(json_line);
  size_t count = std::max<size_t>(1, (text.size() + kPieceBytes - 1) / kPieceBytes);
  std::string out;
  for (size_t i = 0; i < count; ++i)
    out += std::string(kPiece) + "\t" + field(node) + "\t" + std::to_string(i + 1) + "\t" + std::to_string(count) + "\t" +
           std::string(text.substr(i * kPieceBytes, kPieceBytes)) + "\n";
  return out;
}

JobWatchReport merge_watch_summaries(const std::string& job, unsigned nodes_expected, const std::string& out) {
  JobWatchReport rep;
  rep.job = job;
  rep.nodes_expected = nodes_expected;
  std::map<std::string, std::vector<std::optional<std::string>>> pieces;  // by node, in the order they came
  std::vector<std::string> order;
  for (std::string_view line : split(out, '\n')) {
    if (line.substr(0, kPiece.size()) == kPiece) {
      std::vector<std::string_view> f = split(line, '\t');
      auto i = f.size() == 5 ? parse_uint(f[2]) : std::nullopt;
      auto n = f.size() == 5 ? parse_uint(f[3]) : std::nullopt;
      if (!i || !n || *i == 0 || *i > *n || *n > 1u << 16) continue;
      auto [it, added] = pieces.try_emplace(std::string(f[1]));
      if (added) order.push_back(it->first);
      it->second.resize(*n);
      it->second[*i - 1] = std::string(f[4]);
      continue;
    }
    if (line.find("\"summary\"") == std::string_view::npos) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded()) take_summary(j, rep);
  }
  for (const std::string& node : order) {
    std::string text;
    bool whole = true;
    for (const auto& p : pieces[node]) {
      whole = whole && p.has_value();
      if (p) text += *p;
    }
    if (!whole) continue;  // a node whose pieces did not all come is a node without a summary
    nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (!j.is_discarded()) take_summary(j, rep);
  }
  close_merge(rep, "summary");
  return rep;
}

}  // namespace gpubind::check

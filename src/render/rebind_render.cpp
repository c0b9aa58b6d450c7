#include "render/rebind_render.hpp"

#include <cstdio>

#include "render/table.hpp"
#include "util/strings.hpp"

namespace gpubind::render {

namespace {

using oj = nlohmann::ordered_json;
constexpr uint64_t kPageBytes = 4096;  // numa_maps counts base pages

std::string mib(uint64_t pages) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", double(pages * kPageBytes) / (1024.0 * 1024.0));
  return buf;
}

std::string ms(uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f ms", double(ns) / 1e6);
  return buf;
}

uint64_t pages_on(const std::optional<std::map<unsigned, uint64_t>>& pages, const CpuSet& nodes) {
  uint64_t n = 0;
  if (pages)
    for (const auto& [node, count] : *pages)
      if (nodes.test(node)) n += count;
  return n;
}

std::string threads_before(const rebind::ProcessMove& p) {
  CpuSet s;
  for (const rebind::ThreadMove& t : p.threads) s |= t.before;
  return s.empty() ? "-" : s.to_list();
}

// Where its threads may run now, as far as rebind saw them ("-": none seen).
std::string threads_now(const rebind::ProcessMove& p) {
  CpuSet s;
  for (const rebind::ThreadMove& t : p.threads) s |= t.after;
  return s.empty() ? "-" : s.to_list();
}

std::string memory_text(const rebind::ProcessMove& p, bool dry_run) {
  const rebind::MemoryMove& m = p.memory;
  if (p.error && !m.done) return "not moved: stopped (below)";
  if (!p.gone.empty()) return "-";
  if (m.refused) return "not moved: refused (the warning says why)";
  if (!m.note.empty() && !m.done) return m.note;
  if (m.from.empty()) return m.to.empty() ? "stays" : !m.before ? "to node " + m.to.to_list() + " (pages not probed)" : "already on node " + m.to.to_list();
  uint64_t away = pages_on(m.before, m.from);
  std::string what = std::to_string(away) + " pages (" + mib(away) + ") node " + m.from.to_list() + " -> " + m.to.to_list();
  if (dry_run) return what + " to move";
  std::string s = what + " in " + ms(m.ns);
  if (m.not_moved) s += ", " + std::to_string(m.not_moved) + " not moved";
  if (m.after) s += ", " + std::to_string(pages_on(m.after, m.from)) + " left there";
  return s;
}

std::string rank_name(const rebind::RankPlan& r) {
  return r.local_rank.empty() ? std::to_string(r.position) : r.local_rank;
}

// What each thread left alone or not moved is, and why; process notes; errors.
std::vector<std::string> details(const rebind::RankMove& r, bool verbose, bool dry_run) {
  std::vector<std::string> lines;
  std::string who = "rank " + rank_name(r.plan);
  for (const std::string& n : r.plan.notes) lines.push_back(who + " (PID " + std::to_string(r.plan.pid()) + "): " + n);
  for (const rebind::ProcessMove& p : r.processes) {
    std::string pw = who + " PID " + std::to_string(p.pid) + " (" + p.comm + ")";
    for (const rebind::ThreadMove& t : p.threads) {
      std::string tw = pw + " thread " + std::to_string(t.tid) + " (" + t.comm + ")";
      if (t.action != rebind::ThreadAction::move && (verbose || t.action == rebind::ThreadAction::within))
        lines.push_back(tw + " left on " + t.before.to_list() + ": " + rebind::why_left(t.action));
      else if (!t.note.empty()) lines.push_back(tw + ": " + t.note);
      else if (verbose) lines.push_back(tw + ": " + t.before.to_list() + " -> " + (dry_run ? r.plan.cpus : t.after).to_list());
    }
    if (!p.gone.empty()) lines.push_back(pw + ": " + p.gone + " (skipped)");
    if (p.error) lines.push_back(pw + ": stopped: " + p.error->message());
  }
  return lines;
}

}  // namespace

std::string rebind_text(const rebind::Outcome& o, const std::vector<rebind::Skipped>& skipped, bool verbose) {
  TextTable table({"RANK", "PID", "COMMAND", "GPU", "CPUS BEFORE", o.dry_run ? "CPUS PLANNED" : "CPUS NOW", "THREADS", "MEMORY"});
  std::vector<std::string> lines;
  for (const rebind::RankMove& r : o.ranks) {
    for (const rebind::ProcessMove& p : r.processes) {
      unsigned to_move = 0, moved = 0;
      for (const rebind::ThreadMove& t : p.threads) {
        to_move += t.action == rebind::ThreadAction::move;
        moved += t.moved;
      }
      std::string threads = o.dry_run ? std::to_string(to_move) + " of " + std::to_string(p.threads.size()) + " to move"
                                      : std::to_string(moved) + " of " + std::to_string(p.threads.size()) + " moved";
      bool first = p.pid == r.plan.pid();
      table.add({first ? rank_name(r.plan) : "", std::to_string(p.pid), p.comm, first ? (r.plan.gpus.empty() ? "-" : join(r.plan.gpus, ",")) : "",
                 threads_before(p), o.dry_run ? r.plan.cpus.to_list() : threads_now(p), threads, memory_text(p, o.dry_run)});
    }
    for (std::string& l : details(r, verbose, o.dry_run)) lines.push_back(std::move(l));
    if (verbose)
      lines.push_back("rank " + rank_name(r.plan) + " (PID " + std::to_string(r.plan.pid()) + "): GPU from " +
                      (r.plan.gpu_source.empty() ? "none (CPU-only plan)" : r.plan.gpu_source));
  }
  std::string out = o.dry_run ? "dry run: nothing changed\n" : "";
  if (!o.ranks.empty()) out += table.str();
  out += text_block("notes", lines);
  std::vector<std::string> skip;
  for (const rebind::Skipped& s : skipped) skip.push_back("PID " + std::to_string(s.pid) + " (" + s.comm + "): " + s.why);
  out += text_block("skipped", skip);
  return out;
}

oj rebind_json(const rebind::Outcome& o, const std::vector<rebind::Skipped>& skipped, const std::string& node, const std::string& time) {
  oj j;
  j["format"] = "gpubind-rebind/1";
  j["node"] = node;
  j["time"] = time;
  j["dry_run"] = o.dry_run;
  j["threads_moved"] = o.threads_moved();
  j["pages_moved"] = o.pages_moved();
  j["ranks"] = oj::array();
  for (const rebind::RankMove& r : o.ranks) {
    oj rank;
    rank["job"] = r.plan.job.empty() ? oj() : oj(r.plan.job);
    rank["local_rank"] = r.plan.local_rank.empty() ? oj() : oj(r.plan.local_rank);
    rank["position"] = r.plan.position;
    rank["gpus"] = r.plan.gpus;
    rank["gpu_source"] = r.plan.gpu_source;
    rank["cpus_planned"] = r.plan.planned.to_list();
    rank["cgroup_cpus"] = r.plan.cgroup.to_list();
    rank["cpus"] = r.plan.cpus.to_list();
    rank["mem_nodes"] = r.plan.mem_nodes;
    rank["notes"] = r.plan.notes;
    rank["processes"] = oj::array();
    for (const rebind::ProcessMove& p : r.processes) {
      oj proc;
      proc["pid"] = p.pid;
      proc["comm"] = p.comm;
      proc["threads"] = oj::array();
      for (const rebind::ThreadMove& t : p.threads)
        proc["threads"].push_back({{"tid", t.tid}, {"comm", t.comm}, {"before", t.before.to_list()}, {"after", t.after.to_list()},
                                   {"action", rebind::to_string(t.action)}, {"moved", t.moved},
                                   {"why", t.note.empty() ? std::string(rebind::why_left(t.action)) : t.note}});
      const rebind::MemoryMove& m = p.memory;
      auto pages = [](const std::optional<std::map<unsigned, uint64_t>>& v) {
        oj x = oj::object();
        if (!v) return oj();
        for (const auto& [node_id, n] : *v) x[std::to_string(node_id)] = n;
        return x;
      };
      proc["memory"] = {{"from", m.from.to_list()}, {"to", m.to.to_list()}, {"pages_before", pages(m.before)}, {"pages_after", pages(m.after)},
                        {"migrated", m.done}, {"not_moved", m.not_moved}, {"seconds", double(m.ns) / 1e9},
                        {"note", m.note.empty() ? oj() : oj(m.note)}};
      proc["gone"] = p.gone.empty() ? oj() : oj(p.gone);
      proc["error"] = p.error ? oj(p.error->message()) : oj();
      rank["processes"].push_back(std::move(proc));
    }
    j["ranks"].push_back(std::move(rank));
  }
  j["skipped"] = oj::array();
  for (const rebind::Skipped& s : skipped) j["skipped"].push_back({{"pid", s.pid}, {"comm", s.comm}, {"why", s.why}});
  return j;
}

std::string repin_text(const rebind::Repin& r) {
  std::string who = "rank " + (r.local_rank.empty() ? "?" : r.local_rank) + " (PID " + std::to_string(r.rank_pid) + ")" +
                    (r.pid != r.rank_pid ? " PID " + std::to_string(r.pid) : "") + " thread " + std::to_string(r.tid) + " (" + r.comm + ")";
  std::string what;
  switch (r.outcome) {
    case rebind::RepinOutcome::repinned: what = "repinned to " + r.to.to_list(); break;
    case rebind::RepinOutcome::reported: what = "off its CPUs " + r.to.to_list() + " (reported only)"; break;
    case rebind::RepinOutcome::failed: what = "not repinned to " + r.to.to_list() + ": " + r.error; break;
    default: what = rebind::to_string(r.outcome); break;
  }
  return who + ": allowed " + r.from.to_list() + ", " + what + " (target from " + r.target + ")";
}

oj repin_json(const rebind::Repin& r, const std::string& node, const std::string& time) {
  return {{"type", "repin"}, {"node", node}, {"time", time}, {"pid", r.pid}, {"tid", r.tid}, {"comm", r.comm}, {"rank_pid", r.rank_pid},
          {"local_rank", r.local_rank.empty() ? oj() : oj(r.local_rank)}, {"from", r.from.to_list()}, {"to", r.to.to_list()},
          {"target", r.target}, {"outcome", rebind::to_string(r.outcome)}, {"error", r.error.empty() ? oj() : oj(r.error)}};
}

}  // namespace gpubind::render

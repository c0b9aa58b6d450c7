#include "check/nccl_log.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <set>
#include <tuple>

#include "util/strings.hpp"

namespace gpubind::check {

namespace {

std::optional<unsigned> small_number(std::string_view s) {
  if (!all_digits(s) || s.size() > 9) return std::nullopt;
  return unsigned(*parse_uint(s));
}

// The word after `key` in `msg` (up to a space), where `key` starts the message or follows a
// space: " rank " does not match inside "nranks ".
std::string_view word_after(std::string_view msg, std::string_view key) {
  for (size_t at = msg.find(key); at != std::string_view::npos; at = msg.find(key, at + 1)) {
    if (at != 0 && msg[at - 1] != ' ') continue;
    std::string_view rest = msg.substr(at + key.size());
    return rest.substr(0, rest.find(' '));
  }
  return {};
}

std::optional<unsigned> number_after(std::string_view msg, std::string_view key) { return small_number(word_after(msg, key)); }

// One line's parts: "HOST:PID:TID [DEV] NCCL INFO MESSAGE", anything before HOST (a timestamp, a
// launcher's tag) ignored.
struct InfoLine {
  std::string_view host, tid, message;
  int pid = 0;
  std::optional<unsigned> dev;
  bool attributed = false;
};

std::optional<InfoLine> info_line(std::string_view line) {
  constexpr std::string_view kInfo = " NCCL INFO ";
  size_t at = line.find(kInfo);
  if (at == std::string_view::npos) return std::nullopt;
  InfoLine l;
  l.message = trim(line.substr(at + kInfo.size()));
  std::string_view head = line.substr(0, at);  // "... HOST:PID:TID [DEV]"
  size_t open = head.rfind('[');
  if (open == std::string_view::npos || head.back() != ']') return l;
  l.dev = small_number(head.substr(open + 1, head.size() - open - 2));
  head = trim(head.substr(0, open));
  size_t last = head.rfind(':');
  if (last == std::string_view::npos) return l;
  size_t middle = head.rfind(':', last - 1);
  if (middle == std::string_view::npos || middle == 0) return l;
  std::string_view pid = head.substr(middle + 1, last - middle - 1), tid = head.substr(last + 1);
  // HOST runs back to a space or a ':' (mpirun --tag-output's "[1,0]<stdout>:HOST").
  size_t start = head.find_last_of(" :", middle - 1);
  std::string_view host =
      head.substr(start == std::string_view::npos ? 0 : start + 1, middle - (start == std::string_view::npos ? 0 : start + 1));
  if (!all_digits(pid) || pid.size() > 9 || !all_digits(tid) || host.empty()) return l;
  l.host = host;
  l.pid = int(*parse_uint(pid));
  l.tid = tid;
  l.attributed = true;
  return l;
}

// "...NCCL version 2.18.1+cuda12.1", "RCCL version : 2.20.5-..." anywhere in a line.
std::optional<std::pair<std::string, bool>> version_in(std::string_view line) {
  for (std::string_view key : {std::string_view("RCCL version"), std::string_view("NCCL version")}) {
    size_t at = line.find(key);
    if (at == std::string_view::npos) continue;
    std::string_view rest = trim(line.substr(at + key.size()));
    if (rest.starts_with(":")) rest = trim(rest.substr(1));
    std::string_view v = rest.substr(0, rest.find_first_of(" \t"));
    if (!v.empty() && std::isdigit(static_cast<unsigned char>(v[0]))) return std::make_pair(std::string(v), key[0] == 'R');
  }
  return std::nullopt;
}

struct Builder {
  std::map<std::pair<std::string, int>, NcclProcess> processes;
  // Per process, each affinity line with the thread that logged it.
  std::map<std::pair<std::string, int>, std::vector<std::pair<std::string, NcclAffinity>>> affinities;

  void init_line(NcclProcess& p, const InfoLine& l) {
    std::string_view m = l.message;
    std::string ptr(word_after(m, "comm "));
    auto rank = number_after(m, "rank ");
    if (ptr.empty() || !rank) return;
    auto it = std::find_if(p.comms.begin(), p.comms.end(), [&](const NcclComm& c) { return c.ptr == ptr; });
    NcclComm& c = it != p.comms.end() ? *it : p.comms.emplace_back();
    c.ptr = ptr;
    c.rank = *rank;
    if (auto n = number_after(m, "nranks ")) c.nranks = *n;
    if (auto n = number_after(m, "nRanks ")) c.nranks = *n;
    if (auto n = number_after(m, "nNodes ")) c.nodes = *n;
    if (auto n = number_after(m, "localRanks ")) c.local_ranks = *n;
    if (auto n = number_after(m, "localRank ")) c.local_rank = *n;
    if (m.find("Init START") != std::string_view::npos || c.init_tid.empty()) c.init_tid = std::string(l.tid);
    if (auto d = number_after(m, "cudaDev ")) p.cuda_dev = *d;
    if (std::string bus = nccl_bus_id(word_after(m, "busId ")); !bus.empty()) p.bus_id = bus;
  }

  // "Setting affinity for GPU G to SET" and 2.28+'s "Affinity for GPU G is SET. (GPU affinity = A ; CPU affinity = C)."
  void affinity_line(NcclProcess& p, const InfoLine& l) {
    std::string_view m = l.message;
    NcclAffinity a;
    if (size_t at = m.find("Setting affinity for GPU "); at != std::string_view::npos) {
      size_t to = m.find(" to ", at);
      if (to == std::string_view::npos) return;
      auto set = nccl_cpu_set(trim(m.substr(to + 4)));
      if (!set) return;
      a.set = *set;
    } else {
      size_t is = m.find(" is ", m.find("Affinity for GPU "));
      size_t gpu = m.find(". (GPU affinity =");
      if (is == std::string_view::npos || gpu == std::string_view::npos || gpu < is) return;
      std::string_view set = trim(m.substr(is + 4, gpu - is - 4));
      a.range_form = true;
      if (!set.starts_with("empty")) {
        auto s = CpuSet::parse_list(set);
        if (!s) return;
        a.set = *s;
      }
      std::string_view rest = m.substr(gpu + std::string_view(". (GPU affinity =").size());
      size_t close = rest.rfind(")");
      rest = rest.substr(0, close);
      size_t cpu = rest.find("; CPU affinity =");
      std::string_view gpu_text = trim(rest.substr(0, cpu));
      if (auto g = CpuSet::parse_list(gpu_text)) a.gpu_affinity = *g;
      if (cpu == std::string_view::npos) {
        p.ignore_cpu_affinity = true;
      } else if (auto c = CpuSet::parse_list(trim(rest.substr(cpu + std::string_view("; CPU affinity =").size())))) {
        a.cpu_affinity = *c;
      }
    }
    affinities[{p.host, p.pid}].emplace_back(std::string(l.tid), std::move(a));
  }

  // "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB ib0:..." and Socket's like it.
  static void devices_line(NcclProcess& p, std::string_view m) {
    size_t using_at = m.find(" : Using");
    std::string name(trim(m.substr(4, using_at - 4)));
    std::vector<std::string>& devs = p.net_devices[name];
    devs.clear();
    std::string_view list = m.substr(using_at + 8);
    list = list.substr(0, list.find(';'));
    for (std::string_view w : split(list, ' ')) {
      if (!w.starts_with("[")) continue;
      size_t close = w.find(']');
      auto index = small_number(w.substr(1, close == std::string_view::npos ? 0 : close - 1));
      if (!index || *index > 4096) continue;
      std::string_view dev = w.substr(close + 1);
      dev = dev.substr(0, dev.find(':'));
      if (devs.size() <= *index) devs.resize(*index + 1);
      devs[*index] = std::string(dev);
    }
  }

  // "Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0(2)/GDRDMA(PCI)/Shared"
  static void channel_line(NcclProcess& p, std::string_view m) {
    size_t via = m.find(" via NET/");
    std::string_view rest = m.substr(via + 9);
    size_t slash = std::string_view::npos;
    for (size_t i = 0; i + 1 < rest.size(); ++i)
      if (rest[i] == '/' && std::isdigit(static_cast<unsigned char>(rest[i + 1]))) {
        slash = i;
        break;
      }
    if (slash == std::string_view::npos) return;
    std::string name(rest.substr(0, slash));
    std::string_view tail = rest.substr(slash + 1);
    size_t digits = 0;
    while (digits < tail.size() && std::isdigit(static_cast<unsigned char>(tail[digits]))) ++digits;
    auto dev = small_number(tail.substr(0, digits));
    if (!dev || *dev > 4096) return;
    tail = tail.substr(digits);
    NcclNetUse& use = p.net_used[name][*dev];
    if (tail.starts_with("(")) {
      ++use.proxied;
      return;
    }
    ++use.channels;
    if (tail.find("/GDRDMA") != std::string_view::npos) ++use.gdr_channels;
  }

  // "NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no module)" (and Enabled).
  static void hca_gdr_line(NcclProcess& p, std::string_view m) {
    size_t q = m.find('\'');
    size_t q2 = q == std::string_view::npos ? q : m.find('\'', q + 1);
    if (q2 == std::string_view::npos) return;
    p.gdr_support[std::string(m.substr(q + 1, q2 - q - 1))] = m.find("RDMA Enabled") != std::string_view::npos;
  }

  // The line's process, its record updated.
  NcclProcess* line(const std::string& file, const InfoLine& l) {
    NcclProcess& p = processes[{std::string(l.host), l.pid}];
    if (p.file.empty()) p.file = file, p.host = std::string(l.host), p.pid = l.pid;
    if (l.dev && !p.cuda_dev) p.cuda_dev = l.dev;
    std::string_view m = l.message;
    if (auto v = version_in(m)) {
      p.version = v->first;
      p.rccl = v->second;
    } else if (m.find("comm ") != std::string_view::npos && m.find(" rank ") != std::string_view::npos) {
      init_line(p, l);
    } else if (m.find("Setting affinity for GPU ") != std::string_view::npos || m.find("Affinity for GPU ") != std::string_view::npos) {
      affinity_line(p, l);
    } else if (constexpr std::string_view kIgnore = "NCCL_IGNORE_CPU_AFFINITY set by environment to "; m.starts_with(kIgnore)) {
      p.ignore_cpu_affinity = !m.substr(kIgnore.size()).starts_with("0");
    } else if (m.starts_with("NET/") && m.find(" : Using") != std::string_view::npos) {
      devices_line(p, m);
    } else if (m.starts_with("Using network ")) {
      p.net = std::string(trim(m.substr(14)));
    } else if (m.starts_with("Channel ") && m.find(" via NET/") != std::string_view::npos) {
      channel_line(p, m);
    } else if (m.starts_with("NET/") && m.find("GPU Direct RDMA") != std::string_view::npos &&
               m.find("for HCA") != std::string_view::npos) {
      hca_gdr_line(p, m);
    } else if (m.starts_with("GPU Direct RDMA Disabled for GPU")) {
      p.gdr_said = std::string(m);
    } else if (m.starts_with("[Proxy Progress] Device ")) {
      if (auto core = number_after(m, "core ")) p.proxy_cores.push_back(*core);
    } else if (m.starts_with("NCCL_PROXY_CPUSET = ")) {
      std::string_view set = m.substr(20);
      p.proxy_cpuset = std::string(set.substr(0, set.find(':')));
    }
    return &p;
  }

  // Each process's affinity: the line its largest communicator's init thread logged, else its first.
  void settle() {
    for (auto& [key, p] : processes) {
      auto it = affinities.find(key);
      if (it == affinities.end()) continue;
      const NcclComm* w = p.world();
      auto own = std::find_if(it->second.begin(), it->second.end(), [&](const auto& a) { return w && a.first == w->init_tid; });
      p.affinity = (own != it->second.end() ? own : it->second.begin())->second;
    }
  }
};

}  // namespace

const NcclComm* NcclProcess::world() const {
  const NcclComm* best = nullptr;
  for (const NcclComm& c : comms)
    if (!best || c.nranks > best->nranks) best = &c;
  return best;
}

const std::vector<std::string>* NcclProcess::devices(const std::string& name) const {
  auto it = net_devices.find(name);
  if (it != net_devices.end()) return &it->second;
  return net_devices.size() == 1 ? &net_devices.begin()->second : nullptr;
}

std::string nccl_bus_id(std::string_view hex) {
  if (hex.empty() || hex.size() > 12 ||
      !std::all_of(hex.begin(), hex.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); }))
    return "";
  uint64_t v = *parse_uint(hex, 16);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04llx:%02llx:%02llx.%llx", (unsigned long long)(v >> 20), (unsigned long long)((v >> 12) & 0xff),
                (unsigned long long)((v >> 4) & 0xff), (unsigned long long)(v & 0xf));
  return buf;
}

std::optional<CpuSet> nccl_cpu_set(std::string_view text) {
  text = trim(text);
  std::vector<std::string_view> words = split(text, ',');
  bool mask = !text.empty();
  for (size_t i = 0; i < words.size() && mask; ++i) {
    std::string_view w = words[i];
    bool hex = std::all_of(w.begin(), w.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
    mask = hex && (i == 0 ? !w.empty() && w.size() % 2 == 0 && w.size() <= 8 : w.size() == 8);
  }
  auto set = mask ? CpuSet::parse_mask(text) : CpuSet::parse_list(text);
  if (!set) return std::nullopt;
  return *set;
}

std::optional<std::pair<unsigned, unsigned>> nccl_version(const std::string& version) {
  std::string_view number = std::string_view(version).substr(0, version.find_first_of("+-"));
  std::vector<std::string_view> parts = split(number, '.');
  if (parts.size() < 2) return std::nullopt;
  auto major = small_number(parts[0]), minor = small_number(parts[1]);
  if (!major || !minor) return std::nullopt;
  return std::make_pair(*major, *minor);
}

NcclLog parse_nccl_logs(const std::vector<std::pair<std::string, std::string>>& files) {
  NcclLog log;
  Builder b;
  for (const auto& [name, text] : files) {
    std::optional<std::pair<std::string, bool>> file_version;  // a version line without HOST:PID:TID
    std::set<NcclProcess*> seen;                               // processes with lines in this file
    for (std::string_view raw : split(text, '\n')) {
      std::string_view line = raw.ends_with('\r') ? raw.substr(0, raw.size() - 1) : raw;
      auto l = info_line(line);
      if (!l) {
        if (auto v = version_in(line)) file_version = v;
        continue;
      }
      ++log.lines;
      if (!l->attributed) {
        ++log.unattributed;
        if (auto v = version_in(l->message)) file_version = v;
        continue;
      }
      seen.insert(b.line(name, *l));
    }
    if (file_version)
      for (NcclProcess* p : seen)
        if (p->version.empty()) p->version = file_version->first, p->rccl = file_version->second;
  }
  b.settle();
  for (auto& [key, p] : b.processes) log.processes.push_back(std::move(p));
  auto order = [](const NcclProcess& p) {
    const NcclComm* w = p.world();
    return std::make_tuple(p.host, w ? w->rank : ~0u, p.pid);
  };
  std::sort(log.processes.begin(), log.processes.end(), [&](const NcclProcess& x, const NcclProcess& y) { return order(x) < order(y); });
  return log;
}

}  // namespace gpubind::check

#include "probe/select.hpp"

#include <algorithm>
#include <map>

#include "probe/probe.hpp"
#include "util/strings.hpp"

namespace gpubind::probe {

std::vector<int> descendants_of(const sys::FsRoot& root, int pid) {
  std::multimap<int, int> children;
  for (int p : list_pids(root)) {
    auto stat = root.read("proc/" + std::to_string(p) + "/stat");
    if (!stat) continue;
    size_t close = stat->rfind(')');
    if (close == std::string::npos) continue;
    auto fields = split(trim(std::string_view(*stat).substr(close + 1)), ' ');
    if (fields.size() < 2) continue;
    if (auto pp = parse_uint(fields[1])) children.emplace(int(*pp), p);
  }
  std::vector<int> out, todo{pid};
  while (!todo.empty()) {
    int p = todo.back();
    todo.pop_back();
    auto [a, b] = children.equal_range(p);
    for (auto it = a; it != b; ++it) {
      out.push_back(it->second);
      todo.push_back(it->second);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<int> matching(const sys::FsRoot& root, const std::function<bool(const std::string&)>& matches) {
  std::vector<int> out;
  for (int p : list_pids(root)) {
    auto cmd = root.read("proc/" + std::to_string(p) + "/cmdline");
    if (!cmd || cmd->empty()) continue;
    std::string c = *cmd;
    std::replace(c.begin(), c.end(), '\0', ' ');
    if (matches(std::string(trim(c)))) out.push_back(p);
  }
  return out;
}

std::vector<int> gpu_processes(const sys::FsRoot& root) {
  std::vector<int> out;
  for (int p : list_pids(root)) {
    std::string dir = "proc/" + std::to_string(p) + "/fd";
    auto fds = root.list(dir);
    if (!fds) continue;
    for (const std::string& fd : *fds) {
      auto target = root.read_link(dir + "/" + fd);
      if (target && GpuDeviceMap::is_gpu_device_file(*target)) {
        out.push_back(p);
        break;
      }
    }
  }
  return out;
}

}  // namespace gpubind::probe

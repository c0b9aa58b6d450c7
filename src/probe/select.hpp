#pragma once
// Choosing which processes `check` (and later `watch`) look at, through an FsRoot.
#include <functional>
#include <string>
#include <vector>

#include "sys/fsroot.hpp"

namespace gpubind::probe {

// Every descendant of `pid` (children, grandchildren...), sorted.
std::vector<int> descendants_of(const sys::FsRoot& root, int pid);
// PIDs whose command line (arguments joined by spaces) `matches` accepts.
std::vector<int> matching(const sys::FsRoot& root, const std::function<bool(const std::string&)>& matches);
// PIDs holding a GPU device file open (/dev/nvidiaN, /dev/dri/renderD*, /dev/kfd).
std::vector<int> gpu_processes(const sys::FsRoot& root);

}  // namespace gpubind::probe

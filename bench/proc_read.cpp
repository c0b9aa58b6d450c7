// The raw cost of what `watch` reads for every thread at every sample: open, read and close
// /proc/PID/task/TID/{status,stat,sched,schedstat}, nothing parsed. bench/watch_cost.sh compares
// watch's own per-thread sampling cost with this, in the same run.
//   gpubind_proc_read ROUNDS PID...   prints the median microseconds per thread per round
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s ROUNDS PID...\n", argv[0]);
    return 2;
  }
  int rounds = std::atoi(argv[1]);
  std::vector<std::string> dirs;
  for (int i = 2; i < argc; ++i) {
    std::string task = std::string("/proc/") + argv[i] + "/task";
    if (DIR* d = ::opendir(task.c_str())) {
      while (dirent* e = ::readdir(d))
        if (e->d_name[0] != '.') dirs.push_back(task + "/" + e->d_name);
      ::closedir(d);
    }
  }
  if (dirs.empty()) return 1;
  std::vector<double> per_thread;
  char buf[8192];
  for (int r = 0; r < rounds; ++r) {
    auto start = std::chrono::steady_clock::now();
    for (const std::string& d : dirs)
      for (const char* f : {"/status", "/stat", "/sched", "/schedstat"}) {
        int fd = ::open((d + f).c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        while (::read(fd, buf, sizeof buf) > 0) {
        }
        ::close(fd);
      }
    per_thread.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() /
                         double(dirs.size()));
  }
  std::sort(per_thread.begin(), per_thread.end());
  std::printf("%.1f us per thread (%zu threads, median of %d rounds)\n", per_thread[per_thread.size() / 2], dirs.size(), rounds);
  return 0;
}

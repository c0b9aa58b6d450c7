// The raw cost of what `watch` asks the kernel for every thread at every sample, nothing parsed,
// nothing kept but the descriptors: list /proc/PID/task, sched_getaffinity, read the thread's
// group of perf counters (task-clock, cpu-migrations, context-switches), and pread one kept-open
// file: `stat` for a thread that migrated since the last sample, `schedstat` for one that did not
// run (a thread that ran without migrating needs neither).
// Also, for comparison, what a sampler reading only /proc files costs: open, read and close
// status, stat, sched and schedstat. benchmarks/watch_cost.sh compares watch's own per-thread sampling
// cost with the first, in the same run.
//   gpubind_proc_read ROUNDS PID...   prints the median microseconds per thread per round of each,
//                                     rounds 1 s apart (-ROUNDS: back to back)
#include <dirent.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

bool pace = true;

int open_counter(int tid, uint64_t config, int group) {
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = config;
  attr.read_format = PERF_FORMAT_GROUP;
  return int(::syscall(SYS_perf_event_open, &attr, tid, -1, group, PERF_FLAG_FD_CLOEXEC));
}

// Rounds one second apart, at watch's pace: back to back, every cache would still hold the last
// round's kernel objects and the figure would be the warm floor, not what watch meets.
template <class Round>
double median_us_per_thread(int rounds, size_t threads, Round round) {
  std::vector<double> per_thread;
  for (int r = 0; r < rounds; ++r) {
    if (pace) ::usleep(1'000'000);
    auto start = std::chrono::steady_clock::now();
    round();
    per_thread.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / double(threads));
  }
  std::sort(per_thread.begin(), per_thread.end());
  return per_thread[per_thread.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s ROUNDS PID...\n", argv[0]);
    return 2;
  }
  int rounds = std::atoi(argv[1]);
  if (rounds < 0) {  // a negative count: back to back
    rounds = -rounds;
    pace = false;
  }
  std::vector<std::string> tasks, dirs;
  std::vector<int> tids;
  for (int i = 2; i < argc; ++i) {
    std::string task = std::string("/proc/") + argv[i] + "/task";
    tasks.push_back(task);
    if (DIR* d = ::opendir(task.c_str())) {
      while (dirent* e = ::readdir(d))
        if (e->d_name[0] != '.') {
          dirs.push_back(task + "/" + e->d_name);
          tids.push_back(std::atoi(e->d_name));
        }
      ::closedir(d);
    }
  }
  if (dirs.empty()) return 1;
  char buf[8192];

  std::vector<int> stat_fds, schedstat_fds, leaders;
  for (size_t i = 0; i < dirs.size(); ++i) {
    stat_fds.push_back(::open((dirs[i] + "/stat").c_str(), O_RDONLY | O_CLOEXEC));
    schedstat_fds.push_back(::open((dirs[i] + "/schedstat").c_str(), O_RDONLY | O_CLOEXEC));
    int leader = open_counter(tids[i], PERF_COUNT_SW_TASK_CLOCK, -1);
    if (leader >= 0) {
      open_counter(tids[i], PERF_COUNT_SW_CPU_MIGRATIONS, leader);
      open_counter(tids[i], PERF_COUNT_SW_CONTEXT_SWITCHES, leader);
    }
    leaders.push_back(leader);
  }
  bool perf = leaders[0] >= 0;
  auto calls = [&](const std::vector<int>& kept) {
    return median_us_per_thread(rounds, dirs.size(), [&] {
      for (const std::string& t : tasks)
        if (DIR* d = ::opendir(t.c_str())) {
          while (::readdir(d)) {
          }
          ::closedir(d);
        }
      for (size_t i = 0; i < dirs.size(); ++i) {
        (void)!::pread(kept[i], buf, sizeof buf, 0);
        cpu_set_t set;
        ::sched_getaffinity(tids[i], sizeof set, &set);
        if (perf) (void)!::read(leaders[i], buf, 32);
      }
    });
  };
  double migrated = calls(stat_fds), idle = calls(schedstat_fds);
  double files = median_us_per_thread(rounds, dirs.size(), [&] {
    for (const std::string& d : dirs)
      for (const char* f : {"/status", "/stat", "/sched", "/schedstat"}) {
        int fd = ::open((d + f).c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        while (::read(fd, buf, sizeof buf) > 0) {
        }
        ::close(fd);
      }
  });
  std::printf("%.1f us per thread: watch's calls for a thread that migrated%s (%zu threads, median of %d rounds)\n", migrated,
              perf ? "" : ", without perf counters (refused here)", dirs.size(), rounds);
  std::printf("%.1f us per thread: watch's calls for a thread that did not run\n", idle);
  std::printf("%.1f us per thread: open, read and close status, stat, sched and schedstat\n", files);
  return 0;
}

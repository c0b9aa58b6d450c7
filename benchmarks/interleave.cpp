// Start-up cost of whole commands on a noisy machine: runs each command once per round, in turn,
// for many rounds, so drift in the machine's speed hits every command alike, and prints each
// command's median wall time and its ratio to the first command's (hyperfine runs one command's
// runs back to back, and a slow minute then lands on one command only).
//   gpubind_interleave ROUNDS 'numactl --physcpubind=0 true' 'gpubind exec -- true' ...
// Each command is split at spaces; its output goes to /dev/null.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

namespace {

std::vector<std::string> words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// Wall time of one run in ms, or a negative value when it could not start or failed.
double run_once(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  auto t0 = std::chrono::steady_clock::now();
  pid_t pid;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  auto t1 = std::chrono::steady_clock::now();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
  return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s ROUNDS COMMAND...\n", argv[0]);
    return 2;
  }
  int rounds = std::atoi(argv[1]);
  if (rounds < 1) {
    std::fprintf(stderr, "%s: ROUNDS must be at least 1\n", argv[0]);
    return 2;
  }
  std::vector<std::vector<std::string>> cmds;
  for (int i = 2; i < argc; ++i) cmds.push_back(words(argv[i]));
  std::vector<std::vector<double>> times(cmds.size());
  for (size_t c = 0; c < cmds.size(); ++c)  // warm-up: page cache, the topology cache
    for (int w = 0; w < 10; ++w) run_once(cmds[c]);
  for (int r = 0; r < rounds; ++r)
    for (size_t c = 0; c < cmds.size(); ++c) {
      double ms = run_once(cmds[c]);
      if (ms < 0) {
        std::fprintf(stderr, "%s: '%s' failed\n", argv[0], argv[c + 2]);
        return 1;
      }
      times[c].push_back(ms);
    }
  double base = median(times[0]);
  for (size_t c = 0; c < cmds.size(); ++c)
    std::printf("  %7.2f ms  %5.2fx  %s\n", median(times[c]), median(times[c]) / base, argv[c + 2]);
  return 0;
}

// A stand-in training worker for `make run` on machines without PyTorch: each rank runs a few
// "steps" of arithmetic and prints where it ran, in the same shape as examples/ddp_train.py.
//
//   gpubind launch -n 2 -- build/examples/gpubind_demo_worker --steps 20
//   gpubind launch -n 2 -- build/examples/gpubind_demo_worker --seconds 8   (steps until 8 s passed)
//   ... --print-steps: every step's time, one line each ("step 3 1.234 ms"), for bench --ab
//   ... --step-file PATH: the same times, one per line in ms, written to PATH by rank 0
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::string status_field(const std::string& name) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(name + ":", 0) == 0) {
      std::string v = line.substr(name.size() + 1);
      return v.substr(v.find_first_not_of(" \t"));
    }
  return "";
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 20;
  double seconds = 0;  // > 0: steps until this much time has passed, however fast the machine is
  bool print_steps = false;
  const char* step_file = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--print-steps") == 0) print_steps = true;
    if (i + 1 >= argc) continue;
    if (std::strcmp(argv[i], "--steps") == 0) steps = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--seconds") == 0) seconds = std::atof(argv[i + 1]);
    if (std::strcmp(argv[i], "--step-file") == 0) step_file = argv[i + 1];
  }
  const auto start = std::chrono::steady_clock::now();
  auto more = [&](int s) {
    if (seconds > 0) return s == 0 || std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds;
    return s < steps;
  };
  std::vector<double> times;
  double acc = 0;
  for (int s = 0; more(s); ++s) {
    auto t0 = std::chrono::steady_clock::now();
    for (int k = 1; k < 200000; ++k) acc += std::sqrt(double(k) * (s + 1));
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  if (print_steps)
    for (size_t s = 0; s < times.size(); ++s) std::printf("step %zu %.3f ms\n", s, times[s]);
  if (step_file && env("RANK") == "0") {
    std::ofstream out(step_file);
    for (double t : times) out << t << "\n";
  }
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  std::printf("WORKER {\"rank\": %s, \"local_rank\": %s, \"world_size\": %s, \"cpus_allowed_list\": \"%s\", "
              "\"mems_allowed_list\": \"%s\", \"last_cpu\": %d, \"gpubind_cpus\": \"%s\", \"steps\": %zu, \"step_ms\": {\"median\": %.2f, "
              "\"max\": %.2f}, \"checksum\": %.0f}\n",
              env("RANK").c_str(), env("LOCAL_RANK").c_str(), env("WORLD_SIZE").c_str(),
              status_field("Cpus_allowed_list").c_str(), status_field("Mems_allowed_list").c_str(), sched_getcpu(),
              env("GPUBIND_CPUS").c_str(), times.size(), sorted[sorted.size() / 2], sorted.back(), acc);
  return 0;
}

// Cost of `gpubind check`: probing 8 processes x 100 threads (no numa_maps) and judging them,
// on a /proc tree written to a temporary directory the way Linux lays it out.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "check/check.hpp"
#include "discover/source.hpp"
#include "probe/probe.hpp"

namespace {

namespace fs = std::filesystem;
using namespace gpubind;

struct Tree {
  std::string root = "/tmp/gpubind-check-bench-" + std::to_string(::getpid());
  Tree() {
    auto put = [](const fs::path& p, const std::string& text) {
      fs::create_directories(p.parent_path());
      std::ofstream(p) << text;
    };
    for (int r = 0; r < 8; ++r) {
      int pid = 1000 + r * 1000;
      std::string cpus = std::to_string(r * 14) + "-" + std::to_string(r * 14 + 13);
      std::string status = "Name:\tpython\nPPid:\t1\nCpus_allowed_list:\t" + cpus +
                           "\nMems_allowed_list:\t0\nvoluntary_ctxt_switches:\t5\nnonvoluntary_ctxt_switches:\t1\n";
      // stat: "pid (comm) S ppid" then numeric fields; field 39 (processor) is the 37th after ')'.
      std::string stat = std::to_string(pid) + " (python) S 1";
      for (int f = 2; f < 50; ++f) stat += " " + std::to_string(f == 36 ? r * 14 : 0);
      stat += "\n";
      fs::path d = fs::path(root) / "proc" / std::to_string(pid);
      put(d / "status", status);
      put(d / "environ", std::string("GPUBIND_CPUS=") + cpus + '\0');
      put(d / "cmdline", std::string("python") + '\0');
      fs::create_directories(d / "fd");
      fs::create_symlink("/dev/nvidia" + std::to_string(r), d / "fd" / "3");
      for (int t = 0; t < 100; ++t) {
        fs::path td = d / "task" / std::to_string(pid + t);
        put(td / "status", status);
        put(td / "stat", stat);
        put(td / "sched", "se.nr_migrations : 3\n");
      }
    }
  }
  ~Tree() { fs::remove_all(root); }
};

void BM_Check_8Procs_100Threads(benchmark::State& state) {
  static Tree tree;
  static topo::Topology t = *discover::load_topology("example:dgx-h100");
  auto root = sys::open_fsroot(tree.root);
  for (auto _ : state) {
    std::vector<probe::ProcessState> states;
    for (int r = 0; r < 8; ++r) states.push_back(*probe::probe_process(**root, 1000 + r * 1000, {}));
    auto report = check::judge(t, std::move(states), {});
    benchmark::DoNotOptimize(report);
  }
}
BENCHMARK(BM_Check_8Procs_100Threads)->Unit(benchmark::kMillisecond);

}  // namespace

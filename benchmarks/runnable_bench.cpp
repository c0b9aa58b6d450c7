// Cost of one sample of bench's "other load during the run" (probe::runnable_threads_outside):
// every process's stat under this machine's /proc, and a multi-threaded one's tasks.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include "probe/select.hpp"
#include "sys/fsroot.hpp"

namespace {

using namespace gpubind;

void BM_RunnableThreadsOutside_LiveProc(benchmark::State& state) {
  auto root = sys::open_fsroot("/");
  size_t processes = probe::list_pids(**root).size();
  for (auto _ : state) benchmark::DoNotOptimize(probe::runnable_threads_outside(**root, ::getpid()));
  state.counters["processes"] = double(processes);
}
BENCHMARK(BM_RunnableThreadsOutside_LiveProc)->Unit(benchmark::kMillisecond);

}  // namespace

// Topology loading cost: a 256-PU machine (pack:2 numa:4 l3:4 core:4 pu:2, as in
// ../shared/notes/perf-baselines.md) from gpubind JSON, from hwloc XML and from the synthetic
// string itself; plus the embedded DGX H100 example and this machine live.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <unistd.h>

#include "render/hwloc_xml.hpp"
#include "discover/source.hpp"
#include "topo/json.hpp"

namespace {

const char* kSynthetic256 = "pack:2 numa:4 l3:4 core:4 pu:2";

struct Files {
  std::string json, xml;
  Files() {
    auto t = gpubind::discover::load_topology(kSynthetic256);
    if (!t) std::abort();
    json = "/tmp/gpubind-bench-" + std::to_string(::getpid()) + ".json";
    xml = "/tmp/gpubind-bench-" + std::to_string(::getpid()) + ".xml";
    std::ofstream(json) << gpubind::topo::to_json(*t).dump(2);
    std::ofstream(xml) << gpubind::render::to_hwloc_xml(*t);
  }
  ~Files() {
    std::remove(json.c_str());
    std::remove(xml.c_str());
  }
};

const Files& files() {
  static Files f;
  return f;
}

void load(benchmark::State& state, const std::string& spec) {
  for (auto _ : state) {
    auto t = gpubind::discover::load_topology(spec);
    if (!t) state.SkipWithError(t.error().message().c_str());
    benchmark::DoNotOptimize(t);
  }
}

void BM_Load256_GpubindJson(benchmark::State& s) { load(s, files().json); }
void BM_Load256_HwlocXml(benchmark::State& s) { load(s, files().xml); }
void BM_Load256_Synthetic(benchmark::State& s) { load(s, kSynthetic256); }
void BM_LoadExample_DgxH100(benchmark::State& s) { load(s, "example:dgx-h100"); }
void BM_LoadLive(benchmark::State& s) { load(s, ""); }

BENCHMARK(BM_Load256_GpubindJson)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Load256_HwlocXml)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Load256_Synthetic)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_LoadExample_DgxH100)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_LoadLive)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();

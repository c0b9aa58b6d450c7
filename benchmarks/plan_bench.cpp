// Planner cost: an 8-GPU 256-PU node (DGX A100 NPS4 example) and synthetic nodes growing to 64
// GPUs and 4096 PUs, to show how planning time scales.
#include <benchmark/benchmark.h>

#include "discover/source.hpp"
#include "plan/compare.hpp"
#include "plan/plan.hpp"
#include "render/node_svg.hpp"

#include <algorithm>

namespace {

using namespace gpubind;

// `sockets` packages x 4 NUMA nodes x 4 L3 domains x `cores_per_l3` cores x 2 PUs, one GPU per
// NUMA node... times `gpus_per_node`, each behind its own switch with a NIC.
topo::Topology synthetic(unsigned sockets, unsigned cores_per_l3, unsigned gpus_per_node) {
  topo::Topology t;
  t.origin = "bench";
  unsigned cores_total = sockets * 4 * 4 * cores_per_l3;
  unsigned core = 0;
  for (unsigned s = 0; s < sockets; ++s) {
    CpuSet pkg;
    for (unsigned n = 0; n < 4; ++n) {
      CpuSet node;
      for (unsigned l = 0; l < 4; ++l) {
        CpuSet l3;
        for (unsigned c = 0; c < cores_per_l3; ++c, ++core) {
          CpuSet pus = CpuSet::of({core, core + cores_total});
          t.cores.push_back({pus});
          l3 |= pus;
        }
        t.l3_domains.push_back({l3, 32u << 20});
        node |= l3;
      }
      unsigned id = s * 4 + n;
      t.numa_nodes.push_back({id, node, 64ull << 30, s, ""});
      for (unsigned g = 0; g < gpus_per_node; ++g) {
        topo::Gpu gpu;
        unsigned gi = unsigned(t.gpus.size());
        char pci[16];
        std::snprintf(pci, sizeof pci, "%04x:%02x:00.0", gi / 200, gi % 200 + 1);
        gpu.pci = pci;
        gpu.index = gi;
        gpu.vendor = topo::Vendor::nvidia;
        gpu.numa = std::vector<unsigned>{id};
        gpu.cpus = node;
        gpu.pcie_path = {"hb:" + std::to_string(gi), "sw" + std::to_string(gi)};
        t.gpus.push_back(gpu);
        topo::Nic nic;
        std::snprintf(pci, sizeof pci, "%04x:%02x:00.1", gi / 200, gi % 200 + 1);
        nic.pci = pci;
        nic.os_names = {"mlx5_" + std::to_string(gi)};
        nic.numa = gpu.numa;
        nic.cpus = node;
        nic.pcie_path = gpu.pcie_path;
        t.nics.push_back(nic);
      }
      pkg |= node;
    }
    t.packages.push_back({s, pkg});
  }
  for (const auto& c : t.cores) t.cpus |= c.pus;
  t.allowed_cpus = t.cpus;
  return t;
}

void run(benchmark::State& state, const topo::Topology& t) {
  plan::Request r;
  for (auto _ : state) {
    auto p = plan::make_plan(t, r);
    if (!p) state.SkipWithError(p.error().message().c_str());
    benchmark::DoNotOptimize(p);
  }
  state.counters["PUs"] = double(t.cpus.count());
  state.counters["GPUs"] = double(t.gpus.size());
}

void BM_Plan_DgxA100Nps4_8Gpu_256Pu(benchmark::State& s) {
  static auto t = *discover::load_topology("example:dgx-a100-nps4");
  run(s, t);
}

// Grows together: sockets x (4 NUMA x 4 L3 x cores) x 2 PUs, gpus per NUMA node.
void BM_Plan_Synthetic(benchmark::State& s) {
  auto t = synthetic(unsigned(s.range(0)), unsigned(s.range(1)), unsigned(s.range(2)));
  run(s, t);
}

// Many ranks on one node (-n N, shared cores): planning must stay near-linear in N (issue 12).
void BM_Plan_DgxA100Nps4_ManyRanks(benchmark::State& s) {
  static auto t = *discover::load_topology("example:dgx-a100-nps4");
  plan::Request r;
  r.ranks = unsigned(s.range(0));
  for (auto _ : s) {
    auto p = plan::make_plan(t, r);
    if (!p) s.SkipWithError(p.error().message().c_str());
    benchmark::DoNotOptimize(p);
  }
}

BENCHMARK(BM_Plan_DgxA100Nps4_8Gpu_256Pu)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Plan_DgxA100Nps4_ManyRanks)->Arg(4096)->Arg(16384)->Arg(65536)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Plan_Synthetic)
    ->Args({2, 4, 1})     // 8 GPUs, 256 PUs
    ->Args({2, 8, 2})     // 16 GPUs, 512 PUs
    ->Args({4, 8, 2})     // 32 GPUs, 1024 PUs
    ->Args({8, 8, 2})     // 64 GPUs, 2048 PUs
    ->Args({8, 16, 2})    // 64 GPUs, 4096 PUs
    ->Unit(benchmark::kMicrosecond);

// Scale (issue 34 item 4): plan, compare and the SVG drawing on synthetic nodes of 1024 to 16384
// PUs (2 PUs per core, 16 NUMA nodes per 4 packages... growing with the packages), one GPU per
// NUMA node x 2. benchmarks/scale.py fits the growth exponent from these.
topo::Topology scale_node(unsigned pus) {
  // sockets x 4 x 4 x cores_per_l3 x 2 = pus, with 8 cores per L3 domain up to 16 sockets.
  unsigned sockets = std::max(1u, pus / (4 * 4 * 8 * 2));
  unsigned per_l3 = pus / (sockets * 4 * 4 * 2);
  return synthetic(std::min(sockets, 16u), sockets > 16 ? per_l3 * sockets / 16 : per_l3, 2);
}

void BM_Scale_Plan(benchmark::State& s) {
  auto t = scale_node(unsigned(s.range(0)));
  run(s, t);
}

void BM_Scale_Compare(benchmark::State& s) {
  auto t = scale_node(unsigned(s.range(0)));
  plan::Request r;
  for (auto _ : s) {
    auto c = plan::compare_strategies(t, r);
    if (!c) s.SkipWithError(c.error().message().c_str());
    benchmark::DoNotOptimize(c);
  }
}

void BM_Scale_PlanSvg(benchmark::State& s) {
  auto t = scale_node(unsigned(s.range(0)));
  auto p = plan::make_plan(t, plan::Request{});
  for (auto _ : s) benchmark::DoNotOptimize(render::plan_svg(t, *p));
}

void BM_Scale_CompareSvg(benchmark::State& s) {
  auto t = scale_node(unsigned(s.range(0)));
  auto c = plan::compare_strategies(t, plan::Request{});
  for (auto _ : s) benchmark::DoNotOptimize(render::compare_svg(t, *c));
}

BENCHMARK(BM_Scale_Plan)->RangeMultiplier(2)->Range(1024, 16384)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Scale_Compare)->RangeMultiplier(2)->Range(1024, 16384)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Scale_PlanSvg)->RangeMultiplier(2)->Range(1024, 16384)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Scale_CompareSvg)->RangeMultiplier(2)->Range(1024, 16384)->Unit(benchmark::kMillisecond);

}  // namespace

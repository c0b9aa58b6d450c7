// CoreIndex answers "which cores lie in this set" from each PU's core, as a scan of every core
// would: checked against that scan on machines with SMT siblings numbered far apart.
#include <gtest/gtest.h>

#include <algorithm>

#include "topo/topology.hpp"

namespace gpubind::topo {

TEST(CoreIndex, AgreesWithAScanOfEveryCore) {
  // 16 cores of 2 PUs, siblings numbered half the machine apart (core c: PUs c and c + 16), as
  // Linux numbers most x86 machines.
  Topology t;
  for (unsigned c = 0; c < 16; ++c) t.cores.push_back({CpuSet::of({c, c + 16})});
  t.cpus = t.allowed_cpus = CpuSet::range(0, 31);
  const CoreIndex index(t);
  for (const CpuSet& cpus : {CpuSet::range(0, 31), CpuSet::of({3, 19}), CpuSet::of({19, 3, 4}), CpuSet::range(8, 23), CpuSet(),
                             CpuSet::of({31, 0}), CpuSet::of({200})}) {
    std::vector<size_t> touching, within;
    for (size_t c = 0; c < t.cores.size(); ++c) {
      if (t.cores[c].pus.intersects(cpus)) touching.push_back(c);
      if (!t.cores[c].pus.empty() && t.cores[c].pus.is_subset_of(cpus)) within.push_back(c);
    }
    // touching: by lowest PU within the set
    std::sort(touching.begin(), touching.end(),
              [&](size_t a, size_t b) { return *(t.cores[a].pus & cpus).first() < *(t.cores[b].pus & cpus).first(); });
    EXPECT_EQ(index.touching(cpus), touching) << cpus.to_list();
    EXPECT_EQ(index.within(cpus), within) << cpus.to_list();
  }
  // {3, 19} is core 3 whole; {4, 19} touches core 4 (by PU 4), then core 3 (by PU 19).
  EXPECT_EQ(index.within(CpuSet::of({3, 19})), std::vector<size_t>{3});
  EXPECT_EQ(index.touching(CpuSet::of({4, 19})), (std::vector<size_t>{4, 3}));
}

}  // namespace gpubind::topo

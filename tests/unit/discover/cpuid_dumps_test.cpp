// A gathered capture's CPUID dumps are used only where they agree with the capture's own
// /proc/cpuinfo (discover/hwloc_loader.hpp): each PU's initial APIC id.
#include <gtest/gtest.h>

#include "../../support/fake_tree.hpp"
#include "discover/hwloc_loader.hpp"

namespace gpubind::discover {
namespace {

// A capture of two PUs whose kernel recorded initial APIC ids 0 and 1, with each PU's leaf-1
// answer giving `apic0` and `apic1` (EBX bits 31-24).
std::string capture(gpubind::testing::FakeTree& t, unsigned apic0, unsigned apic1) {
  t.file("proc/cpuinfo", "processor\t: 0\napicid\t\t: 0\ninitial apicid\t: 0\nflags\t\t: fpu\n\n"
                         "processor\t: 1\napicid\t\t: 1\ninitial apicid\t: 1\nflags\t\t: fpu\n\n");
  auto pu = [](unsigned apic) {
    char ebx[16];
    std::snprintf(ebx, sizeof ebx, "%x", (apic << 24) | 0x0800u);
    return std::string("# mask e[abcd]x => e[abcd]x\n1 0 0 0 0 => d 68747541 444d4163 69746e65\n") +
           "5 7 0 1 0 => 30 0 0 0\n1 1 0 0 0 => b00f21 " + ebx + " fed83203 178bfbff\n";
  };
  t.file("cpuid/hwloc-cpuid-info", "Architecture: x86_64\n");
  t.file("cpuid/pu0", pu(apic0));
  t.file("cpuid/pu1", pu(apic1));
  return t.root() + "/cpuid";
}

TEST(CpuidDumps, AgreeingWithProcCpuinfoAreUsed) {
  gpubind::testing::FakeTree t;
  std::string dumps = capture(t, 0, 1);
  EXPECT_EQ(cpuid_disagreement(t.root(), dumps), "");
}

// A hypervisor whose CPUID answers change from call to call (seen on an AMD EPYC family 26 guest).
TEST(CpuidDumps, ApicIdsOtherThanTheKernelsAreNamed) {
  gpubind::testing::FakeTree t;
  std::string dumps = capture(t, 212, 127);
  EXPECT_EQ(cpuid_disagreement(t.root(), dumps), "PU 0 has APIC id 212 in its CPUID dump, 0 in /proc/cpuinfo");
  gpubind::testing::FakeTree second;
  dumps = capture(second, 0, 7);
  EXPECT_EQ(cpuid_disagreement(second.root(), dumps), "PU 1 has APIC id 7 in its CPUID dump, 1 in /proc/cpuinfo");
}

// Nothing to compare with (no /proc/cpuinfo, no leaf 1 in a dump): no disagreement to report.
TEST(CpuidDumps, WithoutEitherSideThereIsNothingToDisagree) {
  gpubind::testing::FakeTree t;
  t.file("cpuid/pu0", "1 0 0 0 0 => d 68747541 444d4163 69746e65\n");
  EXPECT_EQ(cpuid_disagreement(t.root(), t.root() + "/cpuid"), "");
  t.file("proc/cpuinfo", "processor\t: 0\ninitial apicid\t: 0\n");
  EXPECT_EQ(cpuid_disagreement(t.root(), t.root() + "/cpuid"), "");
}

}  // namespace
}  // namespace gpubind::discover

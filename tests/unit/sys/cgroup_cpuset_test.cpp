// The CPUs a process's cpuset cgroup allows, read as hwloc reads a live topology's allowed set:
// cgroup v1 and v2, nested v2 cgroups without the controller, a container's subtree mount, and
// a node with no cpuset hierarchy. Fixture trees; mountinfo lines as the kernel writes them.
#include "sys/cgroup_cpuset.hpp"

#include <gtest/gtest.h>

#include "../../support/fake_tree.hpp"

namespace gpubind::sys {

namespace {
const char* kHybridMounts =
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime shared:9 - cgroup cgroup rw,cpuset\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
const char* kV2Mounts = "27 22 0:25 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n";

Result<CgroupCpus> read(const testing::FakeTree& t) {
  auto root = open_fsroot(t.root());
  if (!root) return root.error();
  return cgroup_allowed_cpus(**root);
}
}  // namespace

TEST(CgroupCpus, V1CpusetHierarchyReadsTheEffectiveCpus) {
  testing::FakeTree t;
  t.file("proc/self/cgroup", "4:memory:/job\n3:cpuset:/slurm/uid_0/job_7/step_0\n0::/\n");
  t.file("proc/self/mountinfo", kHybridMounts);
  t.file("sys/fs/cgroup/cpuset/slurm/uid_0/job_7/step_0/cpuset.cpus", "0-15\n");
  t.file("sys/fs/cgroup/cpuset/slurm/uid_0/job_7/step_0/cpuset.effective_cpus", "4-7,12\n");
  t.file("sys/fs/cgroup/unified/cpuset.cpus.effective", "0-63\n");  // not the controller's hierarchy
  auto r = read(t);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->cpus.to_list(), "4-7,12");
  EXPECT_EQ(r->file, t.root() + "/sys/fs/cgroup/cpuset/slurm/uid_0/job_7/step_0/cpuset.effective_cpus");
}

TEST(CgroupCpus, V1WithoutEffectiveCpusReadsCpusetCpus) {
  testing::FakeTree t;
  t.file("proc/self/cgroup", "3:cpu,cpuset:/a\n");
  t.file("proc/self/mountinfo", "34 31 0:31 / /sys/fs/cgroup/cpu,cpuset rw - cgroup cgroup rw,cpu,cpuset\n");
  t.file("sys/fs/cgroup/cpu,cpuset/a/cpuset.cpus", "2-3\n");
  auto r = read(t);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->cpus.to_list(), "2-3");
}

TEST(CgroupCpus, V2CgroupWithoutTheControllerTakesItsNearestAncestors) {
  testing::FakeTree t;
  t.file("proc/self/cgroup", "0::/system.slice/slurmstepd.scope/job_9/step_0/user/task_0\n");
  t.file("proc/self/mountinfo", kV2Mounts);
  t.file("sys/fs/cgroup/cpuset.cpus.effective", "0-63\n");
  t.file("sys/fs/cgroup/system.slice/slurmstepd.scope/job_9/cpuset.cpus.effective", "8-15,40-47\n");
  t.file("sys/fs/cgroup/system.slice/slurmstepd.scope/job_9/step_0/user/task_0/cgroup.procs", "1\n");
  auto r = read(t);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->cpus.to_list(), "8-15,40-47");
}

TEST(CgroupCpus, ContainersSubtreeMountIsFollowedThroughTheMountsRoot) {
  // Docker without a cgroup namespace: /proc/self/cgroup names the host's path, the mount's root
  // is that path, mounted at /sys/fs/cgroup.
  testing::FakeTree t;
  t.file("proc/self/cgroup", "0::/system.slice/docker-ab12.scope\n");
  t.file("proc/self/mountinfo",
         "700 600 0:25 /system.slice/docker-ab12.scope /sys/fs/cgroup ro,nosuid - cgroup2 cgroup rw\n");
  t.file("sys/fs/cgroup/cpuset.cpus.effective", "1,3\n");
  auto r = read(t);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->cpus.to_list(), "1,3");
}

TEST(CgroupCpus, ACgroupOutsideTheMountedSubtreeIsNotGuessed) {
  testing::FakeTree t;
  t.file("proc/self/cgroup", "0::/other\n");
  t.file("proc/self/mountinfo", "700 600 0:25 /mine /sys/fs/cgroup rw - cgroup2 cgroup rw\n");
  t.file("sys/fs/cgroup/cpuset.cpus.effective", "0\n");
  auto r = read(t);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::not_found);
}

TEST(CgroupCpus, EscapedMountPointsAreUnescaped) {
  testing::FakeTree t;
  t.file("proc/self/cgroup", "0::/j\n");
  t.file("proc/self/mountinfo", "27 22 0:25 / /srv/cg\\040root rw - cgroup2 cgroup2 rw\n");
  t.file("srv/cg root/j/cpuset.cpus.effective", "5\n");
  auto r = read(t);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->cpus.to_list(), "5");
}

TEST(CgroupCpus, NoCpusetHierarchyMeansEveryOnlineCpu) {
  testing::FakeTree t;
  t.file("proc/self/cgroup", "0::/\n");
  t.file("proc/self/mountinfo", "22 1 0:21 / /proc rw - proc proc rw\n");
  t.file("sys/devices/system/cpu/online", "0-7\n");
  auto r = read(t);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->cpus.to_list(), "0-7");
  EXPECT_EQ(r->file, "");
}

TEST(CgroupCpus, UnreadableOrGarbledFilesAreErrorsNotGuesses) {
  testing::FakeTree t;
  t.file("proc/self/cgroup", "3:cpuset:/a\n");
  t.file("proc/self/mountinfo", kHybridMounts);
  t.file("sys/fs/cgroup/cpuset/a/cpuset.effective_cpus", "zero-one\n");
  EXPECT_FALSE(read(t).ok());
  testing::FakeTree none;
  EXPECT_FALSE(read(none).ok());
}

}  // namespace gpubind::sys

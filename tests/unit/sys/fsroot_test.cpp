// FsRoot keeps every read under its root: a gathered tree or a test fixture never reads the
// host, whatever paths callers pass and whatever symlinks the tree holds.
#include "sys/fsroot.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cerrno>
#include <filesystem>

#include "../../support/fake_tree.hpp"

namespace gpubind::sys {

namespace {
std::unique_ptr<FsRoot> open_root(const testing::FakeTree& t) {
  auto r = open_fsroot(t.root());
  EXPECT_TRUE(r.ok());
  return std::move(*r);
}
}  // namespace

TEST(FsRoot, PathsNamingTheOutsideAreRefused) {
  testing::FakeTree t;
  t.file("proc/1/status", "Name:\tfixture\n");
  auto root = open_root(t);
  for (const char* p : {"/etc/hostname", "../etc/hostname", "proc/../../etc/hostname", "proc/1/../../.."}) {
    auto r = root->read(p);
    ASSERT_FALSE(r.ok()) << p;
    EXPECT_EQ(r.error().why, "a path outside the root") << p;
    EXPECT_FALSE(root->exists(p)) << p;
    EXPECT_FALSE(root->list(p).ok()) << p;
    EXPECT_FALSE(root->read_link(p).ok()) << p;
  }
  EXPECT_EQ(*root->read("proc/1/status"), "Name:\tfixture\n");
}

TEST(FsRoot, AbsoluteAndClimbingSymlinksInATreeResolveInsideIt) {
  testing::FakeTree t;
  t.file("proc/1/status", "Name:\tfixture-init\n");
  t.link("proc/self", "/proc/1");           // absolute: the tree's /proc/1, not the host's
  t.link("sys/escape", "../../../../../etc");  // climbs past the root: stops at it
  auto root = open_root(t);
  EXPECT_EQ(*root->read("proc/self/status"), "Name:\tfixture-init\n");
  EXPECT_FALSE(root->read("sys/escape/hostname").ok());  // would be the host's /etc/hostname
  EXPECT_FALSE(root->exists("sys/escape/hostname"));
  // The link is read, not followed, and its directory is reached inside the root.
  EXPECT_EQ(*root->read_link("proc/self"), "/proc/1");
}

TEST(FsRoot, TheLiveRootIsThisSystemAndAFixtureIsNot) {
  testing::FakeTree t;
  auto fixture = open_root(t);
  EXPECT_FALSE(fixture->is_this_system());
  auto live = open_fsroot("/");
  ASSERT_TRUE(live.ok());
  EXPECT_TRUE((*live)->is_this_system());
  EXPECT_TRUE((*live)->read("proc/self/status").ok());
}

TEST(FsRoot, ErrorsCarryTheirKindNotJustText) {
  testing::FakeTree t;
  t.file("secret", "x");
  auto root = open_root(t);
  EXPECT_EQ(root->read("missing").error().kind, ErrorKind::not_found);
  EXPECT_EQ(root->list("missing").error().kind, ErrorKind::not_found);
  EXPECT_EQ(errno_error("f", ENOENT).kind, ErrorKind::not_found);
  EXPECT_EQ(errno_error("PID 4", ESRCH).kind, ErrorKind::not_found);
  EXPECT_EQ(errno_error("f", EACCES).kind, ErrorKind::permission);
  EXPECT_EQ(errno_error("f", EPERM).kind, ErrorKind::permission);
  EXPECT_EQ(errno_error("f", EIO).kind, ErrorKind::failed);
  EXPECT_EQ(errno_error("f", EIO).message(), "f: Input/output error");
}

}  // namespace gpubind::sys

namespace gpubind::sys {

// KeptOpenFiles: files read again and again stay open, and a read sees the file as it is now.
TEST(FsRoot, AFileLargerThanTheCapIsAnErrorNamingItNotMemoryExhausted) {
  // A sparse file of 3 GiB planted in a --root tree: read whole it ended in std::bad_alloc.
  testing::FakeTree t;
  t.file("proc/meminfo", "");
  t.file("proc/1/numa_maps", "");
  std::filesystem::resize_file(t.root() + "/proc/meminfo", uintmax_t(3) << 30);
  std::filesystem::resize_file(t.root() + "/proc/1/numa_maps", kMaxFsRootFileBytes);  // at the cap: read whole
  auto root = open_root(t);
  auto big = root->read("proc/meminfo");
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().message(), t.root() + "/proc/meminfo: larger than 64 MiB (gpubind reads no more of one file)");
  auto at_cap = root->read("proc/1/numa_maps");
  ASSERT_TRUE(at_cap.ok()) << at_cap.error().message();
  EXPECT_EQ(at_cap->size(), kMaxFsRootFileBytes);
  KeptOpenFiles kept(*root, 4);
  auto kept_big = kept.read("proc/meminfo");
  ASSERT_FALSE(kept_big.ok());
  EXPECT_EQ(kept_big.error().why, "larger than 64 MiB (gpubind reads no more of one file)");
}

TEST(KeptOpenFiles, ReadsAgainThroughTheOpenFileAndSweepsWhatWasNotRead) {
  testing::FakeTree t;
  t.file("proc/7/task/7/stat", "first");
  t.file("proc/7/task/8/stat", "other");
  auto root = open_root(t);
  KeptOpenFiles kept(*root, 16);
  EXPECT_EQ(*kept.read("proc/7/task/7/stat"), "first");
  EXPECT_EQ(kept.open_count(), 1u);
  t.file("proc/7/task/7/stat", "second, longer");  // rewritten in place, as /proc regenerates it
  EXPECT_EQ(*kept.read("proc/7/task/7/stat"), "second, longer");
  EXPECT_EQ(kept.open_count(), 1u);
  EXPECT_EQ(*kept.read("proc/7/task/8/stat"), "other");
  kept.sweep();  // both were read since the last sweep: kept
  EXPECT_EQ(kept.open_count(), 2u);
  EXPECT_EQ(*kept.read("proc/7/task/7/stat"), "second, longer");
  kept.sweep();  // thread 8 was not read: its file closes
  EXPECT_EQ(kept.open_count(), 1u);
  EXPECT_FALSE(kept.read("proc/7/task/9/stat").ok());  // missing: an error, nothing kept
  EXPECT_EQ(kept.open_count(), 1u);
}

TEST(KeptOpenFiles, KeepHoldsAFileThroughSweepsUnreadAndAReadSaysWhetherItWasOpenedNow) {
  testing::FakeTree t;
  t.file("proc/7/task/7/schedstat", "10 0 1");
  auto root = open_root(t);
  KeptOpenFiles kept(*root, 16);
  kept.keep("proc/7/task/7/schedstat");  // opened, not read
  EXPECT_EQ(kept.open_count(), 1u);
  kept.sweep();
  kept.keep("proc/7/task/7/schedstat");
  kept.sweep();
  EXPECT_EQ(kept.open_count(), 1u);  // kept through both sweeps
  bool opened = true;
  EXPECT_EQ(*kept.read("proc/7/task/7/schedstat", &opened), "10 0 1");
  EXPECT_FALSE(opened);  // through the kept descriptor
  t.file("proc/7/task/8/schedstat", "20 0 1");
  EXPECT_EQ(*kept.read("proc/7/task/8/schedstat", &opened), "20 0 1");
  EXPECT_TRUE(opened);
  kept.keep("proc/7/task/9/schedstat");  // missing: nothing kept
  EXPECT_EQ(kept.open_count(), 2u);
}

TEST(KeptOpenFiles, BeyondItsLimitFilesAreReadWithoutBeingKept) {
  testing::FakeTree t;
  t.file("a", "1");
  t.file("b", "2");
  auto root = open_root(t);
  KeptOpenFiles kept(*root, 1);
  EXPECT_EQ(*kept.read("a"), "1");
  EXPECT_EQ(*kept.read("b"), "2");
  EXPECT_EQ(kept.open_count(), 1u);
}

}  // namespace gpubind::sys

namespace gpubind::sys {

// replace_file: what `watch --textfile` and `bench --plot` write with.
namespace {
std::string read_all(const std::string& path) {
  auto r = read_file(path);
  return r ? *r : "<" + r.error().message() + ">";
}
size_t entries(const std::string& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}
}  // namespace

TEST(ReplaceFile, WritesAtomicallyWithMode0644AndLeavesNoTemporary) {
  testing::FakeTree t;
  std::string path = t.root() + "/gpubind.prom";
  ASSERT_TRUE(replace_file(path, "a 1\n").ok());
  ASSERT_TRUE(replace_file(path, "a 2\n").ok());
  EXPECT_EQ(read_all(path), "a 2\n");
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  EXPECT_EQ(entries(t.root()), 1u);
}

TEST(ReplaceFile, AnotherUsersPrecreatedTemporaryNameIsNotUsed) {
  testing::FakeTree t;
  std::string path = t.root() + "/gpubind.prom";
  // The name the old code always used: another user in the directory could own it.
  std::string predictable = path + ".tmp." + std::to_string(::getpid());
  t.file("gpubind.prom.tmp." + std::to_string(::getpid()), "planted\n");
  ASSERT_TRUE(replace_file(path, "a 1\n").ok());
  EXPECT_EQ(read_all(path), "a 1\n");
  EXPECT_EQ(read_all(predictable), "planted\n");  // untouched, and not what was published
}

TEST(ReplaceFile, AnExistingPathThatIsNotARegularFileIsRefusedAndLeftAlone) {
  testing::FakeTree t;
  std::string fifo = t.root() + "/fifo.prom", dir = t.root() + "/dir.prom", link = t.root() + "/link.prom";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  t.dir("dir.prom");
  t.file("target", "kept\n");
  t.link("link.prom", t.root() + "/target");
  for (const std::string& p : {fifo, dir, link}) {
    auto s = replace_file(p, "a 1\n");
    ASSERT_FALSE(s.ok()) << p;
    EXPECT_EQ(s.error().why, "exists and is not a regular file: refusing to replace it") << p;
  }
  struct stat st;
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  ASSERT_EQ(::lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(read_all(t.root() + "/target"), "kept\n");
  EXPECT_EQ(entries(t.root()), 4u);  // fifo, dir, target, link: no temporary left
}

TEST(ReplaceFile, ADirectoryEveryUserMayWriteMustBeSticky) {
  testing::FakeTree t;
  t.dir("open");
  std::string open = t.root() + "/open";
  ASSERT_EQ(::chmod(open.c_str(), 0777), 0);
  auto s = replace_file(open + "/gpubind.prom", "a 1\n");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().why.find("writable by every user and not sticky"), std::string::npos) << s.error().why;
  EXPECT_EQ(entries(open), 0u);
  ASSERT_EQ(::chmod(open.c_str(), 01777), 0);  // as /tmp: others cannot rename or remove our files
  EXPECT_TRUE(replace_file(open + "/gpubind.prom", "a 1\n").ok());
}

}  // namespace gpubind::sys

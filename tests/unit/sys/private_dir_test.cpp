// The topology cache's directory (issue 11): only this user's own directory and files are read,
// nothing is written through a link.
#include "sys/private_dir.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "../../support/fake_tree.hpp"

namespace gpubind::sys {

namespace {
std::string mode_of(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return "missing";
  char buf[8];
  std::snprintf(buf, sizeof buf, "%o", unsigned(st.st_mode & 07777));
  return buf;
}
}  // namespace

TEST(PrivateDir, CreatedOwnerOnlyAndRoundTrips) {
  gpubind::testing::FakeTree t;
  std::string path = t.root() + "/cache";
  auto d = PrivateDir::open(path, true);
  ASSERT_TRUE(d.ok()) << d.error().message();
  EXPECT_EQ(mode_of(path), "700");
  ASSERT_TRUE(d->write_atomic("a.json", "{}"));
  EXPECT_EQ(mode_of(path + "/a.json"), "600");
  auto text = d->read("a.json", 100);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "{}");
  EXPECT_FALSE(d->read("missing.json", 100).ok());
}

TEST(PrivateDir, NotCreatedWhenAskedNotTo) {
  gpubind::testing::FakeTree t;
  EXPECT_FALSE(PrivateDir::open(t.root() + "/absent", false).ok());
  EXPECT_FALSE(std::filesystem::exists(t.root() + "/absent"));
}

TEST(PrivateDir, SymlinkedDirectoryIsRefused) {
  gpubind::testing::FakeTree t;
  t.dir("real");
  ::chmod((t.root() + "/real").c_str(), 0700);
  t.link("cache", t.root() + "/real");
  auto d = PrivateDir::open(t.root() + "/cache", true);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().why, "is a symbolic link");
}

TEST(PrivateDir, DirectoryOthersCanWriteIsRefused) {
  gpubind::testing::FakeTree t;
  t.dir("cache");
  ::chmod((t.root() + "/cache").c_str(), 01777);
  auto d = PrivateDir::open(t.root() + "/cache", true);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().why, "writable by other users");
}

TEST(PrivateDir, DirectoryOfAnotherUserIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a directory to another user";
  gpubind::testing::FakeTree t;
  t.dir("cache");
  std::string path = t.root() + "/cache";
  ::chmod(path.c_str(), 0700);
  ASSERT_EQ(::chown(path.c_str(), 65534, 65534), 0);
  auto d = PrivateDir::open(path, true);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().why.find("owned by uid 65534"), std::string::npos) << d.error().why;
}

TEST(PrivateDir, FilesThatAreLinksWritableOrHugeAreNotRead) {
  gpubind::testing::FakeTree t;
  std::string path = t.root() + "/cache";
  auto d = PrivateDir::open(path, true);
  ASSERT_TRUE(d.ok());
  t.file("elsewhere.json", "forged");
  t.link("cache/link.json", t.root() + "/elsewhere.json");
  EXPECT_EQ(d->read("link.json", 100).error().why, "is a symbolic link");
  t.file("cache/open.json", "forged");
  ::chmod((path + "/open.json").c_str(), 0666);
  EXPECT_EQ(d->read("open.json", 100).error().why, "writable by other users");
  t.file("cache/big.json", std::string(200, 'x'));
  ::chmod((path + "/big.json").c_str(), 0600);
  EXPECT_NE(d->read("big.json", 100).error().why.find("larger than 100"), std::string::npos);
  // Writing over a planted link replaces the link; its target is untouched.
  ASSERT_TRUE(d->write_atomic("link.json", "ours"));
  EXPECT_EQ(*d->read("link.json", 100), "ours");
  auto top = PrivateDir::open(t.root(), false);
  ASSERT_TRUE(top.ok());
  EXPECT_EQ(*top->read("elsewhere.json", 100), "forged");
}

TEST(PrivateDir, PruneKeepsTheNewest) {
  gpubind::testing::FakeTree t;
  auto d = PrivateDir::open(t.root() + "/cache", true);
  ASSERT_TRUE(d.ok());
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(d->write_atomic("topology-" + std::to_string(i) + ".json", "x"));
    struct timespec times[2] = {{1000 + i, 0}, {1000 + i, 0}};
    ::utimensat(AT_FDCWD, (t.root() + "/cache/topology-" + std::to_string(i) + ".json").c_str(), times, 0);
  }
  d->prune("topology-", ".json", 2);
  EXPECT_FALSE(std::filesystem::exists(t.root() + "/cache/topology-0.json"));
  EXPECT_FALSE(std::filesystem::exists(t.root() + "/cache/topology-1.json"));
  EXPECT_TRUE(std::filesystem::exists(t.root() + "/cache/topology-3.json"));
}

}  // namespace gpubind::sys

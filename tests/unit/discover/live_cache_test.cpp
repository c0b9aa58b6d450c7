// Where the topology cache lives: the environment, then gpubind.conf, then a directory no other
// user could have created first.
#include "discover/live_cache.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "../../support/env_var.hpp"

namespace gpubind::discover {

using testing::EnvVar;

TEST(CacheDir, EnvironmentWinsThenTheConfigFile) {
  EnvVar env("GPUBIND_CACHE_DIR", "/srv/cache");
  EXPECT_EQ(default_cache_dir("/etc/configured"), "/srv/cache");
  EnvVar off("GPUBIND_CACHE_DIR", "off");
  EXPECT_EQ(default_cache_dir("/etc/configured"), "");
}

TEST(CacheDir, ConfigFileThenAPrivateDefault) {
  EnvVar env("GPUBIND_CACHE_DIR", std::nullopt);
  EnvVar xdg("XDG_RUNTIME_DIR", "/run/user/1000");
  EXPECT_EQ(default_cache_dir("/var/cache/gpubind"), "/var/cache/gpubind");
  EXPECT_EQ(default_cache_dir("off"), "");
  // Root never uses a shared /tmp path another user could create first; other users use their
  // runtime directory.
  EXPECT_EQ(default_cache_dir(""), ::geteuid() == 0 ? "/run/gpubind" : "/run/user/1000/gpubind");
  EnvVar no_xdg("XDG_RUNTIME_DIR", std::nullopt);
  EXPECT_EQ(default_cache_dir(""), ::geteuid() == 0 ? "/run/gpubind" : "/tmp/gpubind-" + std::to_string(::geteuid()));
}

}  // namespace gpubind::discover

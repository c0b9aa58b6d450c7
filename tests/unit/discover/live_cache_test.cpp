// Where the topology cache lives: the environment, then gpubind.conf, then a directory no other
// user could have created first.
#include "discover/live_cache.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <string>

namespace gpubind::discover {

namespace {
// Sets (or unsets, nullopt) an environment variable for one test and puts it back.
class EnvVar {
 public:
  EnvVar(const char* name, std::optional<std::string> value) : m_name(name) {
    if (const char* old = std::getenv(name)) m_old = old;
    if (value) ::setenv(name, value->c_str(), 1);
    else ::unsetenv(name);
  }
  ~EnvVar() {
    if (m_old) ::setenv(m_name, m_old->c_str(), 1);
    else ::unsetenv(m_name);
  }
  EnvVar(const EnvVar&) = delete;
  EnvVar& operator=(const EnvVar&) = delete;

 private:
  const char* m_name;
  std::optional<std::string> m_old;
};
}  // namespace

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

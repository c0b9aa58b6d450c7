// gpubind.conf: every key, its bad values, comments, and errors that name the line.
#include "bind/config.hpp"

#include <gtest/gtest.h>

namespace gpubind::bind {

TEST(Config, EveryKey) {
  auto c = parse_config("# site defaults\n\nbinding = on\npolicy = socket-split  # comment\nmem=bind\nreserve = 0,56\n"
                        "cache_dir = /run/gpubind\ncache_max_files = 4\n",
                        "/etc/gpubind.conf");
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_TRUE(c->binding);
  EXPECT_EQ(c->policy, "socket-split");
  EXPECT_EQ(c->mem, "bind");
  EXPECT_EQ(c->reserve, "0,56");
  EXPECT_EQ(c->cache_dir, "/run/gpubind");
  EXPECT_EQ(c->cache_max_files, 4u);
}

TEST(Config, EmptyFileIsTheDefaults) {
  auto c = parse_config("", "f");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->binding);
  EXPECT_FALSE(c->policy.has_value());
  EXPECT_EQ(c->cache_max_files, 16u);
}

TEST(Config, OffSwitch) {
  for (const char* v : {"off", "no", "false"}) EXPECT_FALSE(parse_config(std::string("binding = ") + v, "f")->binding) << v;
  EXPECT_FALSE(parse_config("binding = maybe", "f").ok());
}

TEST(Config, BadInputNamesTheLine) {
  struct Case {
    const char* text;
    const char* message;
  } cases[] = {
      {"policy = closest\npolcy = numa", "f:2: unknown key 'polcy'"},
      {"policy = nearest", "f:1: policy = 'nearest': expected"},
      {"mem = sometimes", "f:1: mem = 'sometimes'"},
      {"reserve = 5-2", "f:1: reserve = '5-2'"},
      {"cache_dir = relative/dir", "f:1: cache_dir = 'relative/dir': expected an absolute path or off"},
      {"cache_max_files = 0", "f:1: cache_max_files = '0'"},
      {"cache_max_files = 99999", "f:1: cache_max_files = '99999'"},
      {"\n\njust words", "f:3: expected KEY = VALUE"},
      {"policy = numa\x1b[2J", "f:1: policy = 'numa\\x1b"},  // escaped, one line
  };
  for (const Case& c : cases) {
    auto r = parse_config(c.text, "f");
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.error().message().find(c.message), std::string::npos) << r.error().message();
  }
}

TEST(Config, MissingDefaultFileIsTheDefaultsButANamedOneMustExist) {
  auto quiet = read_config("/nonexistent/gpubind.conf", false);
  ASSERT_TRUE(quiet.ok());
  EXPECT_EQ(quiet->path, "");
  EXPECT_FALSE(read_config("/nonexistent/gpubind.conf", true).ok());
  EXPECT_FALSE(read_config("/", false).ok());  // a directory
}

}  // namespace gpubind::bind

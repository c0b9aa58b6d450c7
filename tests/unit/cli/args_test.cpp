// Args hands CLI11 only the options the arguments name (src/cli/args.cpp): each case is parsed
// that way and by CLI11 with every option declared, and must come out the same: exit status,
// error line, every target's value, every option's count.
#include <gtest/gtest.h>

#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cli/args.hpp"
#include "sys/module.hpp"

namespace gpubind::cli {
namespace {

struct Targets {
  std::string name = "x", format = "table", policy = "closest";
  unsigned ranks = 0;
  std::optional<unsigned> local;
  std::optional<int> shift;
  double ratio = 0.5;
  int level = 1;
  bool json = false, quiet = false, smt = false, verbose = false;
  std::vector<std::string> list;
};

constexpr const char* kNames[] = {"--name", "--format", "--policy", "-n", "--ranks", "--local-rank", "--shift", "--ratio",
                                  "--level", "--json", "-q", "--quiet", "--no-smt", "--smt", "-v", "--verbose", "--list"};

// What one parse leaves: its exit status and error text, then every target and every count.
std::string outcome(const std::vector<std::string>& argv, bool every_option) {
  Targets t;
  Args app("A command for the test", "gpubind test");
  app.option("--name", t.name, "A name");
  app.option("--format", t.format, "A format").one_of({"table", "json"});
  app.option("--policy", t.policy, "A policy").one_of({"closest", "spread"});
  app.option("-n,--ranks", t.ranks, "Ranks").range(1, 64);
  app.option("--local-rank", t.local, "A rank");
  app.option("--shift", t.shift, "A signed number");
  app.option("--ratio", t.ratio, "A ratio").range(0.0, 1.0);
  app.option("--level", t.level, "A level").range(0, 3);
  app.flag("--json", t.json, "JSON");
  app.same_as("--json", "--format", "json");
  app.flag("-q,--quiet", t.quiet, "Quiet");
  app.flag("--no-smt,!--smt", t.smt, "No SMT");
  app.flag("-v,--verbose", t.verbose, "Verbose");
  app.option("--list", t.list, "A list");
  if (every_option) app.declare_every_option();
  int rc = -1;
  std::string err = sys::capture_stderr([&] { rc = app.parse(argv); });
  std::ostringstream out;
  out << "rc " << rc << " err [" << err << "] name " << t.name << " format " << t.format << " policy " << t.policy
      << " ranks " << t.ranks << " local " << (t.local ? std::to_string(*t.local) : "-") << " shift "
      << (t.shift ? std::to_string(*t.shift) : "-") << " ratio " << t.ratio << " level " << t.level << " json " << t.json
      << " quiet " << t.quiet << " smt " << t.smt << " verbose " << t.verbose << " list";
  for (const std::string& l : t.list) out << " " << l;
  for (const char* n : kNames) out << " " << n << "=" << app.count(n);
  return out.str();
}

TEST(Args, ParsingOnlyTheNamedOptionsAgreesWithCli11GivenEveryOption) {
  const std::vector<std::vector<std::string>> cases = {
      {},
      {"--json"},
      {"--json", "--format", "table"},
      {"--json", "--format", "json"},
      {"-n", "4"},
      {"-n4"},
      {"--ranks=4"},
      {"-qv"},
      {"-qn", "4"},
      {"-q", "-n", "65"},
      {"--ranks", "0"},
      {"--ranks", "-3"},
      {"--ranks", "four"},
      {"--smt"},
      {"--no-smt"},
      {"--smt", "--no-smt"},
      {"--ratio", "nan"},
      {"--ratio", "1e400"},
      {"--ratio", "0.25"},
      {"--ratio", "2"},
      {"--shift", "-2"},
      {"--level", "3", "--level", "2"},
      {"--policy", "bogus"},
      {"--policy=spread"},
      {"--format"},
      {"--name", "--json"},
      {"--name", "-q"},
      {"--name=--json"},
      {"--bogus"},
      {"-x"},
      {"--list", "a", "--list", "b"},
      {"--list", "a", "b"},
      {"--local-rank", "2", "extra"},
      {"--verbose=1"},
      {"--quiet", "--quiet"},
  };
  for (const auto& argv : cases) {
    std::string joined;
    for (const std::string& a : argv) joined += " " + a;
    EXPECT_EQ(outcome(argv, false), outcome(argv, true)) << "arguments:" << joined;
  }
}

// Something to compare: the cases above must not all pass through without a parse.
TEST(Args, ParsingOnlyTheNamedOptionsStillReportsErrorsAndValues) {
  EXPECT_NE(outcome({"--ranks", "65"}, false).find("rc 2 err [gpubind: error: test: --ranks"), std::string::npos)
      << outcome({"--ranks", "65"}, false);
  EXPECT_NE(outcome({"-n4", "--json"}, false).find("format table policy closest ranks 4"), std::string::npos);
  EXPECT_NE(outcome({"-n4", "--json"}, false).find("--json=1"), std::string::npos);
  EXPECT_NE(outcome({"--no-smt"}, false).find("smt 1"), std::string::npos);
}

}  // namespace
}  // namespace gpubind::cli

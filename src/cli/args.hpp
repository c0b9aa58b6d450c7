#pragma once
// Command-line flags for the subcommands. CLI11 parses them, but only src/cli/args.cpp includes
// it: CLI11 is a header-only library that costs ~15 s of compiling in every file that includes
// it, and this is the one file that does (docs/PERFORMANCE.md, "Building").
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace gpubind::cli {

class Args {
 public:
  struct Impl;  // the declarations, and CLI11's App once built (src/cli/args.cpp)

  // `name` is "gpubind <command>": the help's usage line and the error line name it.
  Args(const std::string& description, const std::string& name);
  ~Args();
  Args(const Args&) = delete;
  Args& operator=(const Args&) = delete;

  // An option just declared, to restrict its values.
  class Option {
   public:
    Option& range(int min, int max);                         // a whole number within [min, max]
    Option& range(double min, double max);                   // a number within [min, max]
    Option& one_of(const std::vector<std::string>& values);  // one of these words

   private:
    friend class Args;
    explicit Option(void* impl) : m_impl(impl) {}
    void* m_impl;
  };

  // "-n,--ranks": the names, comma-separated. T is std::string, unsigned, int, double,
  // std::optional<unsigned>, std::optional<int> or std::vector<std::string> (one value per use).
  template <class T>
  Option option(const std::string& names, T& target, const std::string& help);
  // A flag without a value; "--no-smt,!--smt" also gives the negating name (both at once are a
  // usage error).
  void flag(const std::string& names, bool& target, const std::string& help);
  // `flag` is short for `option value` ("--json" for "--format json"): both given with another
  // value is a usage error.
  void same_as(const std::string& flag, const std::string& option, const std::string& value);
  // A subcommand with its own options ("gpubind slurm gres-conf"); owned by this Args.
  Args& subcommand(const std::string& name, const std::string& description);
  // Exactly one subcommand must be given.
  void require_subcommand();
  // Text after the options in --help (examples).
  void footer(const std::string& text);
  // Everything from the first argument that is not an option on is left for remaining().
  void prefix_command();

  // How many times the option named `name` ("--policy") was given.
  size_t count(const std::string& name) const;
  std::vector<std::string> remaining() const;
  const std::string& name() const { return m_name; }

  // parse() then hands CLI11 every option, not only those the arguments name (for the test that
  // both ways agree).
  void declare_every_option();

  // Parses args. Returns -1 when the command should go on, else the exit status to return (0
  // after --help, `usage_exit` after a usage error, which it reports in gpubind's format).
  int parse(const std::vector<std::string>& args, int usage_exit = 2);
  // For "gpubind X [options] -- CMD [ARGS...]": splits at the first "--", parses the options,
  // and fills `command`. Returns -1 to go on, else the exit status (0 after --help;
  // `usage_exit` for bad options, a missing "--" or an empty command).
  int parse_with_command(const std::vector<std::string>& args, int usage_exit, std::vector<std::string>& command);

 private:
  Args(std::unique_ptr<Impl> impl, const std::string& name);
  // CLI11's App, built at the first need: with the options `args` name, else with every one.
  CLI::App& built(const std::vector<std::string>* args = nullptr) const;
  int usage_error(const std::string& why, int usage_exit) const;
  std::optional<std::string> conflicts() const;  // of this command and its given subcommands
  std::unique_ptr<Impl> m_impl;
  std::string m_name;
};

}  // namespace gpubind::cli

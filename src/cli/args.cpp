#include "cli/args.hpp"

#include <cmath>
#include <cstdlib>
#include <deque>
#include <type_traits>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>

#include "cli/common.hpp"
#include "util/exit_status.hpp"

namespace gpubind::cli {

struct Args::Impl {
  std::unique_ptr<CLI::App> owned;  // the top-level command's
  CLI::App* app = nullptr;          // a subcommand's belongs to its parent
  std::vector<std::unique_ptr<Args>> subcommands;
  struct Alias {
    std::string flag, option, value;
  };
  std::vector<Alias> aliases;  // `flag` means `option value`
  std::deque<bool> negations;  // the storage of negating flags ("--smt" of "--no-smt,!--smt")
};

Args::Args(const std::string& description, const std::string& name) : m_impl(std::make_unique<Impl>()), m_name(name) {
  m_impl->owned = std::make_unique<CLI::App>(description, name);
  m_impl->app = m_impl->owned.get();
}

Args::Args(std::unique_ptr<Impl> impl, const std::string& name) : m_impl(std::move(impl)), m_name(name) {}

Args::~Args() = default;

Args::Option& Args::Option::range(int min, int max) {
  static_cast<CLI::Option*>(m_impl)->check(CLI::Range(min, max));
  return *this;
}

Args::Option& Args::Option::range(double min, double max) {
  static_cast<CLI::Option*>(m_impl)->check(CLI::Range(min, max));
  return *this;
}

Args::Option& Args::Option::one_of(const std::vector<std::string>& values) {
  static_cast<CLI::Option*>(m_impl)->check(CLI::IsMember(values));
  return *this;
}

namespace {
// NaN passes every range check (each comparison with it is false) and infinity is no count of
// seconds: a number flag takes finite values only.
const CLI::Validator kFinite(
    [](std::string& text) -> std::string {
      double v = std::strtod(text.c_str(), nullptr);
      return std::isfinite(v) ? std::string() : "expected a finite number, not " + text;
    },
    "FINITE", "finite");
}  // namespace

template <class T>
Args::Option Args::option(const std::string& names, T& target, const std::string& help) {
  CLI::Option* o = m_impl->app->add_option(names, target, help);
  if constexpr (std::is_floating_point_v<T>) o->check(kFinite);
  return Option(o);
}

template Args::Option Args::option(const std::string&, std::string&, const std::string&);
template Args::Option Args::option(const std::string&, unsigned&, const std::string&);
template Args::Option Args::option(const std::string&, int&, const std::string&);
template Args::Option Args::option(const std::string&, double&, const std::string&);
template Args::Option Args::option(const std::string&, std::optional<unsigned>&, const std::string&);
template Args::Option Args::option(const std::string&, std::optional<int>&, const std::string&);
template Args::Option Args::option(const std::string&, std::vector<std::string>&, const std::string&);

void Args::flag(const std::string& names, bool& target, const std::string& help) {
  // "--no-smt,!--smt": two flags, so that giving both is a usage error, not the last one winning.
  size_t bang = names.find(",!");
  if (bang == std::string::npos) {
    m_impl->app->add_flag(names, target, help);
    return;
  }
  std::string negation = names.substr(bang + 2);
  CLI::Option* yes = m_impl->app->add_flag(names.substr(0, bang), target, help);
  bool& said = m_impl->negations.emplace_back(false);
  CLI::Option* no = m_impl->app->add_flag(negation, said, "The opposite of " + names.substr(0, bang) + " (the default)");
  no->excludes(yes);
  yes->excludes(no);
}

void Args::same_as(const std::string& flag, const std::string& option, const std::string& value) {
  m_impl->aliases.push_back({flag, option, value});
}


Args& Args::subcommand(const std::string& name, const std::string& description) {
  auto impl = std::make_unique<Impl>();
  impl->app = m_impl->app->add_subcommand(name, description);
  m_impl->subcommands.push_back(std::unique_ptr<Args>(new Args(std::move(impl), m_name + " " + name)));
  return *m_impl->subcommands.back();
}

void Args::require_subcommand() { m_impl->app->require_subcommand(1); }
void Args::footer(const std::string& text) { m_impl->app->footer(text); }
void Args::prefix_command() { m_impl->app->prefix_command(); }
size_t Args::count(const std::string& name) const { return m_impl->app->count(name); }
std::vector<std::string> Args::remaining() const { return m_impl->app->remaining(); }

int Args::usage_error(const std::string& why, int usage_exit) const {
  // App names are "gpubind <command>"; the error line names just the command.
  CLI::App& app = *m_impl->app;
  std::string name = app.get_name();
  if (name.starts_with("gpubind ")) name = name.substr(8);
  fail_with(Error{name, why}, usage_exit);
  std::fprintf(stderr, "hint: see '%s --help'\n", app.get_name().c_str());
  return usage_exit;
}

// A flag and the option it is short for, given with another value ("--json and --format table
// contradict each other"); then the subcommands that were given.
std::optional<std::string> Args::conflicts() const {
  CLI::App& app = *m_impl->app;
  for (const auto& a : m_impl->aliases) {
    if (app.count(a.flag) == 0 || app.count(a.option) == 0) continue;
    std::string given = app.get_option(a.option)->as<std::string>();
    if (given != a.value) return a.flag + " and " + a.option + " " + given + " contradict each other";
  }
  for (const auto& s : m_impl->subcommands)
    if (s->m_impl->app->parsed())
      if (auto why = s->conflicts()) return why;
  return std::nullopt;
}

int Args::parse(const std::vector<std::string>& args, int usage_exit) {
  CLI::App& app = *m_impl->app;
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 consumes from the back
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    return usage_error(e.what(), usage_exit);
  }
  if (auto why = conflicts()) return usage_error(*why, usage_exit);
  return -1;
}

int Args::parse_with_command(const std::vector<std::string>& args, int usage_exit, std::vector<std::string>& command) {
  auto dashes = std::find(args.begin(), args.end(), "--");
  std::vector<std::string> options(args.begin(), dashes);
  bool wants_help = std::find(options.begin(), options.end(), "--help") != options.end() ||
                    std::find(options.begin(), options.end(), "-h") != options.end();
  std::string name = m_name.starts_with("gpubind ") ? m_name.substr(8) : m_name;
  if (dashes == args.end() && !wants_help)
    return fail_with(Error{name, "missing '--' before the command (" + m_name + " [options] -- CMD [ARGS...])"}, usage_exit);
  if (int rc = parse(options, usage_exit); rc >= 0) return rc;
  command.assign(dashes + 1, args.end());
  if (command.empty()) return fail_with(Error{name, "no command after '--'"}, usage_exit);
  return -1;
}

}  // namespace gpubind::cli

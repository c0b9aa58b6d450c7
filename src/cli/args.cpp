#include "cli/args.hpp"

#include <cmath>
#include <cstdlib>
#include <deque>
#include <type_traits>

// CLI11's headers include <iostream> for std::cout and std::cerr, which it names only as default
// arguments of App::exit and in warnings about deprecated and retired options, none of which
// gpubind uses (it prints through stdio). <iostream>'s static ios_base::Init builds the C++ locale
// and the eight standard streams before main, at every start (0.65 ms of an empty binder's start
// on a VM whose page faults are slow; docs/PERFORMANCE.md). Its include guard is set here instead,
// with the two declarations CLI11 needs; exec_topology.sh checks that the binary has no
// ios_base::Init.
#include <istream>
#include <ostream>
#define _GLIBCXX_IOSTREAM 1
namespace std {
extern ostream cout;
extern ostream cerr;
}  // namespace std
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>

#include "cli/common.hpp"
#include "util/exit_status.hpp"
#include "util/strings.hpp"

namespace gpubind::cli {

// The declarations are recorded and handed to CLI11 only when there is something to parse: a
// command given without options ("gpubind exec -- CMD", what srun and mpirun start on every rank)
// keeps every default without building CLI11's App, whose option declarations check each new name
// against every earlier one (40 % of exec's instructions, docs/PERFORMANCE.md).
struct Args::Impl {
  std::string description;
  struct Check {
    enum Kind { int_range, double_range, one_of } kind = int_range;
    double min = 0, max = 0;
    std::vector<std::string> values;
  };
  struct Decl {
    std::string names, help;
    void* target = nullptr;
    void (*add)(CLI::App&, const Decl&, Impl&) = nullptr;  // option<T>'s, flag's
    std::vector<Check> checks;
    bool named_in(const std::vector<std::string>& args) const;
  };
  std::deque<Decl> decls;  // an Option refers to its Decl: never moved
  std::string footer;
  bool prefix = false, require_sub = false, every_option = false;
  std::vector<std::pair<std::string, std::string>> subcommand_names;  // name, description

  std::unique_ptr<CLI::App> owned;  // the top-level command's, once built
  CLI::App* app = nullptr;          // a subcommand's belongs to its parent
  std::vector<std::unique_ptr<Args>> subcommands;
  struct Alias {
    std::string flag, option, value;
  };
  std::vector<Alias> aliases;  // `flag` means `option value`
  std::deque<bool> negations;  // the storage of negating flags ("--smt" of "--no-smt,!--smt")

  void build_into(CLI::App& a, const std::vector<std::string>* only);  // only: the options these name
};

Args::Args(const std::string& description, const std::string& name) : m_impl(std::make_unique<Impl>()), m_name(name) {
  m_impl->description = description;
}

Args::Args(std::unique_ptr<Impl> impl, const std::string& name) : m_impl(std::move(impl)), m_name(name) {}

Args::~Args() = default;

Args::Option& Args::Option::range(int min, int max) {
  static_cast<Impl::Decl*>(m_impl)->checks.push_back({Impl::Check::int_range, double(min), double(max), {}});
  return *this;
}

Args::Option& Args::Option::range(double min, double max) {
  static_cast<Impl::Decl*>(m_impl)->checks.push_back({Impl::Check::double_range, min, max, {}});
  return *this;
}

Args::Option& Args::Option::one_of(const std::vector<std::string>& values) {
  static_cast<Impl::Decl*>(m_impl)->checks.push_back({Impl::Check::one_of, 0, 0, values});
  return *this;
}

namespace {
// NaN passes every range check (each comparison with it is false) and infinity is no count of
// seconds: a number flag takes finite values only.
const CLI::Validator& finite() {
  static const CLI::Validator v(
      [](std::string& text) -> std::string {
        double d = std::strtod(text.c_str(), nullptr);
        return std::isfinite(d) ? std::string() : "expected a finite number, not " + text;
      },
      "FINITE", "finite");
  return v;
}

void add_checks(CLI::Option* o, const std::vector<Args::Impl::Check>& checks) {
  for (const Args::Impl::Check& c : checks) {
    if (c.kind == Args::Impl::Check::int_range) o->check(CLI::Range(int(c.min), int(c.max)));
    else if (c.kind == Args::Impl::Check::double_range) o->check(CLI::Range(c.min, c.max));
    else o->check(CLI::IsMember(c.values));
  }
}

template <class T>
void add_option(CLI::App& app, const Args::Impl::Decl& d, Args::Impl&) {
  CLI::Option* o = app.add_option(d.names, *static_cast<T*>(d.target), d.help);
  if constexpr (std::is_floating_point_v<T>) o->check(finite());
  add_checks(o, d.checks);
}

// "--no-smt,!--smt": two flags, so that giving both is a usage error, not the last one winning.
void add_flag(CLI::App& app, const Args::Impl::Decl& d, Args::Impl& impl) {
  bool& target = *static_cast<bool*>(d.target);
  size_t bang = d.names.find(",!");
  if (bang == std::string::npos) {
    app.add_flag(d.names, target, d.help);
    return;
  }
  std::string negation = d.names.substr(bang + 2);
  CLI::Option* yes = app.add_flag(d.names.substr(0, bang), target, d.help);
  bool& said = impl.negations.emplace_back(false);
  CLI::Option* no = app.add_flag(negation, said, "The opposite of " + d.names.substr(0, bang) + " (the default)");
  no->excludes(yes);
  yes->excludes(no);
}
}  // namespace

// Whether any argument could name the declaration's option: "--name", "--name=VALUE", or a
// single dash with the short name's letter anywhere after it ("-n4", "-qv"). Generous on purpose:
// an option declared needlessly costs time, one left out would change what CLI11 makes of the
// arguments.
bool Args::Impl::Decl::named_in(const std::vector<std::string>& args) const {
  for (std::string_view name : split(names, ',')) {
    name = trim(name);
    if (name.starts_with("!")) name.remove_prefix(1);
    bool is_long = name.starts_with("--");
    for (std::string_view a : args) {
      if (is_long && a.starts_with("--") && a.substr(0, a.find('=')) == name) return true;
      if (!is_long && name.size() == 2 && a.size() > 1 && a[0] == '-' && a[1] != '-' && a.find(name[1], 1) != std::string_view::npos)
        return true;
    }
  }
  return false;
}

void Args::Impl::build_into(CLI::App& a, const std::vector<std::string>* only) {
  app = &a;
  for (const Decl& d : decls)
    if (!only || d.named_in(*only)) d.add(a, d, *this);
  if (!footer.empty()) a.footer(footer);
  if (prefix) a.prefix_command();
  if (require_sub) a.require_subcommand(1);
  for (size_t i = 0; i < subcommands.size(); ++i)
    subcommands[i]->m_impl->build_into(*a.add_subcommand(subcommand_names[i].first, subcommand_names[i].second), nullptr);
}

CLI::App& Args::built(const std::vector<std::string>* args) const {
  if (!m_impl->app) {
    // Only the options the arguments name, unless the help lists them all or subcommands parse
    // the rest: CLI11 checks each new option's names against every earlier one's.
    bool help = args && std::any_of(args->begin(), args->end(), [](const std::string& a) { return a == "-h" || a == "--help"; });
    const std::vector<std::string>* only = args && !help && m_impl->subcommands.empty() && !m_impl->every_option ? args : nullptr;
    m_impl->owned = std::make_unique<CLI::App>(m_impl->description, m_name);
    m_impl->build_into(*m_impl->owned, only);
  }
  return *m_impl->app;
}

template <class T>
Args::Option Args::option(const std::string& names, T& target, const std::string& help) {
  Impl::Decl& d = m_impl->decls.emplace_back();
  d.names = names;
  d.help = help;
  d.target = &target;
  d.add = &add_option<T>;
  return Option(&d);
}

template Args::Option Args::option(const std::string&, std::string&, const std::string&);
template Args::Option Args::option(const std::string&, unsigned&, const std::string&);
template Args::Option Args::option(const std::string&, int&, const std::string&);
template Args::Option Args::option(const std::string&, double&, const std::string&);
template Args::Option Args::option(const std::string&, std::optional<unsigned>&, const std::string&);
template Args::Option Args::option(const std::string&, std::optional<int>&, const std::string&);
template Args::Option Args::option(const std::string&, std::vector<std::string>&, const std::string&);

void Args::flag(const std::string& names, bool& target, const std::string& help) {
  Impl::Decl& d = m_impl->decls.emplace_back();
  d.names = names;
  d.help = help;
  d.target = &target;
  d.add = &add_flag;
}

void Args::same_as(const std::string& flag, const std::string& option, const std::string& value) {
  m_impl->aliases.push_back({flag, option, value});
}


Args& Args::subcommand(const std::string& name, const std::string& description) {
  m_impl->subcommand_names.emplace_back(name, description);
  m_impl->subcommands.push_back(std::unique_ptr<Args>(new Args(std::make_unique<Impl>(), m_name + " " + name)));
  return *m_impl->subcommands.back();
}

void Args::declare_every_option() { m_impl->every_option = true; }
void Args::require_subcommand() { m_impl->require_sub = true; }
void Args::footer(const std::string& text) { m_impl->footer = text; }
void Args::prefix_command() { m_impl->prefix = true; }
// Nothing was given where CLI11 was never needed, nor of an option the arguments did not name.
size_t Args::count(const std::string& name) const {
  const CLI::Option* o = m_impl->app ? m_impl->app->get_option_no_throw(name) : nullptr;
  return o ? o->count() : 0;
}
std::vector<std::string> Args::remaining() const { return m_impl->app ? m_impl->app->remaining() : std::vector<std::string>{}; }

int Args::usage_error(const std::string& why, int usage_exit) const {
  // App names are "gpubind <command>"; the error line names just the command.
  CLI::App& app = built();
  std::string name = app.get_name();
  if (name.starts_with("gpubind ")) name = name.substr(8);
  fail_with(Error{name, why}, usage_exit);
  std::fprintf(stderr, "hint: see '%s --help'\n", app.get_name().c_str());
  return usage_exit;
}

// A flag and the option it is short for, given with another value ("--json and --format table
// contradict each other"); then the subcommands that were given.
std::optional<std::string> Args::conflicts() const {
  CLI::App& app = built();
  for (const auto& a : m_impl->aliases) {
    if (count(a.flag) == 0 || count(a.option) == 0) continue;
    std::string given = app.get_option(a.option)->as<std::string>();
    if (given != a.value) return a.flag + " and " + a.option + " " + given + " contradict each other";
  }
  for (const auto& s : m_impl->subcommands)
    if (s->m_impl->app && s->m_impl->app->parsed())
      if (auto why = s->conflicts()) return why;
  return std::nullopt;
}

int Args::parse(const std::vector<std::string>& args, int usage_exit) {
  // Without arguments CLI11 would only check that a required subcommand was given.
  if (args.empty() && !m_impl->require_sub && !m_impl->every_option) return -1;
  CLI::App& app = built(&args);
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

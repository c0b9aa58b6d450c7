#include "sys/archive.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <utility>

#include "sys/fsroot.hpp"
#include "sys/process.hpp"
#include "util/strings.hpp"

namespace gpubind::sys {

TempDir::TempDir(std::string path, bool guarded) : m_path(std::move(path)) {
  if (!guarded) return;
  auto cleaner = start_watcher("gpubind-tmpclean", [dir = m_path](int fd) {
    char c;
    while (::read(fd, &c, 1) < 0 && errno == EINTR) {
    }
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  });
  if (cleaner) m_cleaner = std::move(*cleaner);  // else unguarded: removed by this process only
}

TempDir::TempDir(TempDir&& o) noexcept : m_path(std::exchange(o.m_path, {})), m_cleaner(std::move(o.m_cleaner)) {}

TempDir::~TempDir() {
  if (!m_path.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(m_path, ec);
  }
}

TempDir& TempDir::operator=(TempDir&& o) noexcept {
  if (this != &o) {
    TempDir old(std::move(*this));
    m_path = std::exchange(o.m_path, {});
    m_cleaner = std::move(o.m_cleaner);
  }
  return *this;
}

Result<TempDir> extract_archive(const std::string& archive) {
  std::error_code ec;
  std::filesystem::path tmp = std::filesystem::temp_directory_path(ec);  // $TMPDIR, else /tmp
  if (ec) {
    const char* env = std::getenv("TMPDIR");
    return Error{"temporary directory" + (env ? " TMPDIR=" + std::string(env) : std::string()), ec.message()};
  }
  // tar would wait for ever on a FIFO named as the archive, and read a device.
  if (PathKind k = path_kind(archive); k != PathKind::file && k != PathKind::missing) return Error{archive, "not a regular file"};
  std::string tmpl = (tmp / "gpubind-topo.XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) return Error{"temporary directory", std::strerror(errno)};
  TempDir dir(tmpl, true);

  // A name is a local file, never a remote archive (GNU tar reads HOST:FILE as one and runs a
  // remote shell to HOST), never "-" (stdin), never an option; and no TAR_OPTIONS from the
  // environment adds any (--to-command, --checkpoint-action). Its own diagnostics are kept, so
  // a broken archive gives one gpubind line, not tar's noise.
  std::string local = archive.starts_with("/") ? archive : "./" + archive;
  auto tar = run_command({"tar", "--force-local", "--extract", "--no-same-owner", "--no-same-permissions", "--directory", dir.path(),
                          "--file", local},
                         kTarDeadline, {.unset_env = {"TAR_OPTIONS"}});
  if (!tar) return Error{archive, "cannot unpack it: " + tar.error().message()};
  if (tar->exit_code != 0) {
    std::string err(trim(tar->err));
    if (auto nl = err.find('\n'); nl != std::string::npos) err = err.substr(0, nl);
    return Error{archive, "not a readable archive" + (err.empty() ? std::string() : " (" + err + ")")};
  }
  if (Status s = refuse_special_files(dir.path()); !s) return Error{archive, "holds " + s.error().why};
  return dir;
}

Status refuse_special_files(const std::string& tree) {
  namespace fs = std::filesystem;
  std::error_code ec;
  size_t seen = 0;
  for (fs::recursive_directory_iterator it(tree, fs::directory_options::none, ec), end; !ec && it != end; it.increment(ec)) {
    if (++seen > kMaxTreeEntries) return Error{tree, "more than " + std::to_string(kMaxTreeEntries) + " entries"};
    fs::file_type t = it->symlink_status(ec).type();
    if (t == fs::file_type::regular || t == fs::file_type::directory || t == fs::file_type::symlink) continue;
    std::string what = t == fs::file_type::fifo ? "a FIFO" : t == fs::file_type::socket ? "a socket" : "a device file";
    return Error{tree, what + " (" + fs::relative(it->path(), tree, ec).string() + "), which would block or mislead hwloc's reads"};
  }
  if (ec) return Error{tree, ec.message()};
  return Ok{};
}

}  // namespace gpubind::sys

#pragma once
// Unpacking a gathered topology archive (hwloc-gather-topology's .tar.bz2) into a temporary
// directory that is removed when the TempDir goes away.
#include <chrono>
#include <string>

#include "sys/fork.hpp"
#include "util/result.hpp"

namespace gpubind::sys {

class TempDir {
 public:
  TempDir() = default;
  // Takes `path` (an existing directory) and, when `guarded`, forks a cleaner that removes it
  // should this process end without doing so (SIGKILL, a crash): the cleaner waits on a pipe
  // only this process writes, and removes the tree once that pipe closes.
  explicit TempDir(std::string path, bool guarded = false);
  ~TempDir();
  TempDir(TempDir&& o) noexcept;
  TempDir& operator=(TempDir&& o) noexcept;
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return m_path; }

 private:
  std::string m_path;
  Watcher m_cleaner;  // ended after the tree is removed
};

// Runs tar(1) (which picks the decompressor itself) into a fresh temporary directory, through
// run_command: tar ends with gpubind, and is killed after kTarDeadline. The archive must be a
// regular file, and what it unpacks must pass refuse_special_files.
constexpr std::chrono::seconds kTarDeadline{300};
Result<TempDir> extract_archive(const std::string& archive);

// A gathered tree (sys/, proc/) holds directories, regular files and symbolic links only: a FIFO,
// socket or device in it is an Error naming it (hwloc's reads would block on a FIFO for ever).
// At most kMaxTreeEntries entries are looked at.
constexpr size_t kMaxTreeEntries = 1000000;
Status refuse_special_files(const std::string& tree);

}  // namespace gpubind::sys

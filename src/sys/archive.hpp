#pragma once
// Unpacking a gathered topology archive (hwloc-gather-topology's .tar.bz2) into a temporary
// directory that is removed when the TempDir goes away.
#include <string>

#include "util/result.hpp"

namespace gpubind::sys {

class TempDir {
 public:
  TempDir() = default;
  explicit TempDir(std::string path) : m_path(std::move(path)) {}
  ~TempDir();
  TempDir(TempDir&& o) noexcept : m_path(std::move(o.m_path)) { o.m_path.clear(); }
  TempDir& operator=(TempDir&& o) noexcept;
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return m_path; }

 private:
  std::string m_path;
};

// Runs tar(1) (which picks the decompressor itself) into a fresh temporary directory. The archive
// must be a regular file, and what it unpacks must pass refuse_special_files.
Result<TempDir> extract_archive(const std::string& archive);

// A gathered tree (sys/, proc/) holds directories, regular files and symbolic links only: a FIFO,
// socket or device in it is an Error naming it (hwloc's reads would block on a FIFO for ever).
// At most kMaxTreeEntries entries are looked at.
constexpr size_t kMaxTreeEntries = 1000000;
Status refuse_special_files(const std::string& tree);

}  // namespace gpubind::sys

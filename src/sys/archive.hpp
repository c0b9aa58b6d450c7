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

// Runs tar(1) (which picks the decompressor itself) into a fresh temporary directory.
Result<TempDir> extract_archive(const std::string& archive);

}  // namespace gpubind::sys

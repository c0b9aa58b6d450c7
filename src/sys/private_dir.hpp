#pragma once
// A directory only this user can write, held open by descriptor: the topology cache that root's
// `exec` and the SPANK plugin (inside slurmstepd) read. Every check is made on the opened
// directory and every file is opened relative to it without following symlinks, so another local
// user can neither make gpubind read a forged file nor write through a planted link, even by
// creating the directory first or swapping the path afterwards.
#include <string>

#include "sys/unique_fd.hpp"
#include "util/result.hpp"

namespace gpubind::sys {

class PrivateDir {
 public:
  // Opens `path`, creating it 0700 first when `create` and it is missing, and verifies what was
  // opened: a directory (not a symlink), owned by this effective user, writable by no group or
  // other user. The Error says which check failed.
  static Result<PrivateDir> open(const std::string& path, bool create);

  // A regular file of the directory (not a symlink), owned by this user and writable by no one
  // else, of at most `max_bytes`; an Error otherwise (ENOENT's text when it does not exist).
  Result<std::string> read(const std::string& name, size_t max_bytes) const;
  // Writes a new file under a temporary name (created exclusively, never through a link) and
  // renames it over `name`, so readers see the old or the new content, never half of it.
  Status write_atomic(const std::string& name, const std::string& text) const;
  // Keeps the `keep` newest (by modification time) regular files whose names start with `prefix`
  // and end with `suffix`, and removes the others. Best effort.
  void prune(const std::string& prefix, const std::string& suffix, size_t keep) const;
  const std::string& path() const { return m_path; }

 private:
  PrivateDir(UniqueFd fd, std::string path) : m_fd(std::move(fd)), m_path(std::move(path)) {}
  UniqueFd m_fd;
  std::string m_path;
};

}  // namespace gpubind::sys

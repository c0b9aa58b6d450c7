#include "sys/private_dir.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "sys/fault.hpp"
#include "sys/fsroot.hpp"

namespace gpubind::sys {

namespace {

// Owned by this effective user and writable by nobody else.
std::string ownership_problem(const struct stat& st) {
  if (st.st_uid != ::geteuid())
    return "owned by uid " + std::to_string(st.st_uid) + ", not this user (uid " + std::to_string(::geteuid()) + ")";
  if (st.st_mode & (S_IWGRP | S_IWOTH)) return "writable by other users";
  return "";
}

}  // namespace

Result<PrivateDir> PrivateDir::open(const std::string& path, bool create) {
  if (create && ::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) return errno_error(path, errno);
  UniqueFd fd(faultable_path("gpubind/open", path, [&] { return ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC); }));
  if (!fd) {
    int e = errno;
    struct stat st;
    if ((e == ELOOP || e == ENOTDIR) && ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) return Error{path, "is a symbolic link"};
    return Error{path, e == ENOTDIR ? "not a directory" : std::strerror(e)};
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return errno_error(path, errno);
  if (std::string why = ownership_problem(st); !why.empty()) return Error{path, why};
  return PrivateDir(std::move(fd), path);
}

Result<std::string> PrivateDir::read(const std::string& name, size_t max_bytes) const {
  std::string where = m_path + "/" + name;
  UniqueFd fd(::openat(m_fd.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd) return errno == ELOOP ? Error{where, "is a symbolic link"} : errno_error(where, errno);
  struct stat st;
  std::string why;
  if (::fstat(fd.get(), &st) != 0) why = std::strerror(errno);
  else if (!S_ISREG(st.st_mode)) why = "not a regular file";
  else if (why = ownership_problem(st); why.empty() && size_t(st.st_size) > max_bytes)
    why = "larger than " + std::to_string(max_bytes) + " bytes";
  if (!why.empty()) return Error{where, why};
  return read_to_end(std::move(fd), where, max_bytes);
}

Status PrivateDir::write_atomic(const std::string& name, const std::string& text) const {
  static std::atomic<unsigned> counter{0};
  std::string tmp = name + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  UniqueFd fd(faultable_path("gpubind/create", m_path + "/" + name,
                             [&] { return ::openat(m_fd.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600); }));
  if (!fd) return errno_error(m_path + "/" + tmp, errno);
  if (Status s = write_fully(fd.get(), text); !s) {
    fd.reset();
    ::unlinkat(m_fd.get(), tmp.c_str(), 0);
    return Error{m_path + "/" + tmp, s.error().why};
  }
  if (fd.close() != 0 || faultable("gpubind/rename", [&] { return ::renameat(m_fd.get(), tmp.c_str(), m_fd.get(), name.c_str()); }) != 0) {
    int e = errno;
    ::unlinkat(m_fd.get(), tmp.c_str(), 0);
    return errno_error(m_path + "/" + name, e);
  }
  return Ok{};
}

void PrivateDir::prune(const std::string& prefix, const std::string& suffix, size_t keep) const {
  UniqueFd fd(::openat(m_fd.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return;
  DIR* d = ::fdopendir(fd.get());
  if (!d) return;
  fd.release();  // the DIR's now: closedir closes it
  std::vector<std::pair<std::pair<long long, long long>, std::string>> files;  // (mtime s, ns), name
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.size() < prefix.size() + suffix.size() || !name.starts_with(prefix) || !name.ends_with(suffix)) continue;
    struct stat st;
    if (::fstatat(m_fd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
    files.push_back({{st.st_mtim.tv_sec, st.st_mtim.tv_nsec}, name});
  }
  if (files.size() > keep) {
    std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (size_t i = keep; i < files.size(); ++i) ::unlinkat(m_fd.get(), files[i].second.c_str(), 0);
  }
  ::closedir(d);
}

}  // namespace gpubind::sys

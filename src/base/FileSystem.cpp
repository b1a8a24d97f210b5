//===- FileSystem.cpp - reading and atomically writing files --------------===//
#include "tritonc/base/FileSystem.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>  // renameat2, RENAME_EXCHANGE
#include <cstring>
#include <optional>

namespace tritonc {

std::optional<std::string> readWholeFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return std::nullopt;
  }
  std::string contents;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && st.st_size > 0) {
    contents.reserve(static_cast<size_t>(st.st_size));
  }
  char buffer[65536];
  while (true) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      int saved = errno;
      ::close(fd);
      errno = saved;
      return std::nullopt;
    }
    if (n == 0) break;
    contents.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return contents;
}

std::string temporaryPathFor(const std::string& path) {
  static std::atomic<unsigned> counter{0};
  return path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
}

namespace {

// Writes all of `contents` to `fd` and closes it; false (with `error`) when
// either fails (the descriptor is closed then too).
bool writeAllAndClose(int fd, std::string_view contents, std::string* error) {
  const char* data = contents.data();
  size_t left = contents.size();
  while (left > 0) {
    ssize_t n = ::write(fd, data, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      *error = std::strerror(errno);
      ::close(fd);
      return false;
    }
    data += n;
    left -= static_cast<size_t>(n);
  }
  if (::close(fd) != 0) {
    *error = std::strerror(errno);
    return false;
  }
  return true;
}

// Writes `contents` to a new temporary file next to `path`; its name in `temp`.
bool writeTemporary(const std::string& path, std::string_view contents, std::string& temp,
                    std::string* error) {
  temp = temporaryPathFor(path);
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    *error = std::strerror(errno);
    return false;
  }
  if (!writeAllAndClose(fd, contents, error)) {
    ::unlink(temp.c_str());
    return false;
  }
  return true;
}

// Whether `path` (its symlinks followed) is a device, FIFO or socket: a file
// to write into, not to replace.
bool isSpecial(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

bool writeInto(const std::string& path, std::string_view contents, std::string* error) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = std::strerror(errno);
    return false;
  }
  return writeAllAndClose(fd, contents, error);
}

// Puts the file `temp` at `path`. A regular file already there is swapped
// out (its old data then goes with the temporary name) and removed; a plain
// rename when there is none, or when the file system cannot exchange.
bool install(const std::string& temp, const std::string& path, std::string* error) {
  if (isSpecial(path)) {
    std::optional<std::string> bytes = readWholeFile(temp);
    bool ok = bytes ? writeInto(path, *bytes, error)
                    : (*error = "cannot read back " + temp, false);
    ::unlink(temp.c_str());
    return ok;
  }
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
      ::renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, path.c_str(), RENAME_EXCHANGE) == 0) {
    ::unlink(temp.c_str());
    return true;
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    *error = std::strerror(errno);
    ::unlink(temp.c_str());
    return false;
  }
  return true;
}

// Whether `path` is a regular file holding exactly `contents`.
bool holds(const std::string& path, std::string_view contents) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<size_t>(st.st_size) != contents.size()) {
    return false;
  }
  std::optional<std::string> old = readWholeFile(path);
  return old && *old == contents;
}

}  // namespace

bool writeFileAtomically(const std::string& path, std::string_view contents, std::string* error) {
  if (isSpecial(path)) return writeInto(path, contents, error);
  std::string temp;
  return writeTemporary(path, contents, temp, error) && install(temp, path, error);
}

bool updateFileAtomically(const std::string& path, std::string_view contents, std::string* error) {
  if (holds(path, contents) && ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0) == 0) {
    return true;
  }
  return writeFileAtomically(path, contents, error);
}

FileTransaction::~FileTransaction() {
  for (const Staged& file : staged_) {
    if (!file.temp.empty()) ::unlink(file.temp.c_str());
  }
}

// A directory at `path` takes no file: found while staging, so that nothing
// is put in place (a rename onto it would fail only at commit).
bool isDirectory(const std::string& path, std::string* error) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    *error = std::strerror(EISDIR);
    return true;
  }
  return false;
}

bool FileTransaction::stage(const std::string& path, std::string_view contents,
                            std::string* error) {
  if (isDirectory(path, error)) return false;
  if (isSpecial(path)) {
    staged_.push_back({path, "", false, true, std::string(contents)});
    return true;
  }
  if (holds(path, contents)) {
    staged_.push_back({path, "", false, false, {}});
    return true;
  }
  std::string temp;
  if (!writeTemporary(path, contents, temp, error)) return false;
  staged_.push_back({path, temp, false, false, {}});
  return true;
}

bool FileTransaction::stageFile(const std::string& path, const std::string& temp,
                                std::string* error) {
  staged_.push_back({path, temp, false, false, {}});
  return !isDirectory(path, error);
}

void FileTransaction::stageRemoval(const std::string& path) {
  staged_.push_back({path, "", true, false, {}});
}

bool FileTransaction::commit(std::string* failedPath, std::string* error) {
  for (Staged& file : staged_) {
    bool ok = file.direct ? writeInto(file.path, file.contents, error)
              : file.remove ? ::unlink(file.path.c_str()) == 0 || errno == ENOENT ||
                                (*error = std::strerror(errno), false)
              : file.temp.empty() ? ::utimensat(AT_FDCWD, file.path.c_str(), nullptr, 0) == 0 ||
                                      (*error = std::strerror(errno), false)
                                : install(file.temp, file.path, error);
    file.temp.clear();  // installed, or removed by install()
    if (!ok) {
      *failedPath = file.path;
      return false;
    }
  }
  staged_.clear();
  return true;
}

bool makeDirectories(const std::string& path, std::string* error) {
  if (path.empty()) return true;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return true;
    *error = std::strerror(ENOTDIR);
    return false;
  }
  size_t slash = path.find_last_of('/');
  if (slash != std::string::npos && slash > 0 &&
      !makeDirectories(path.substr(0, slash), error)) {
    return false;
  }
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    *error = std::strerror(errno);
    return false;
  }
  return true;
}

}  // namespace tritonc

//===- FileSystem.cpp - reading and atomically writing files --------------===//
#include "tritonc/base/FileSystem.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>  // renameat2, RENAME_EXCHANGE
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <utility>

namespace tritonc {

int openRegularFile(const std::string& path, bool followLinks, FoundFile* found,
                    struct stat* st) {
  struct stat local {};
  if (st == nullptr) st = &local;
  *st = {};
  if ((followLinks ? ::stat(path.c_str(), st) : ::lstat(path.c_str(), st)) != 0) {
    *found = errno == ENOENT || errno == ENOTDIR ? FoundFile::Missing : FoundFile::Unreadable;
    st->st_mode = 0;
    return -1;
  }
  if (!S_ISREG(st->st_mode)) {
    *found = FoundFile::NotRegular;
    return -1;
  }
  *found = FoundFile::Unreadable;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | (followLinks ? 0 : O_NOFOLLOW));
  if (fd < 0) {
    if (errno == ELOOP || errno == ENXIO) *found = FoundFile::NotRegular;  // replaced since
    if (errno == ENOENT) *found = FoundFile::Missing;
    return -1;
  }
  if (::fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {  // replaced since the stat
    int saved = errno;
    if (S_ISREG(st->st_mode) || st->st_mode == 0) {
      *found = FoundFile::Unreadable;
    } else {
      *found = FoundFile::NotRegular;
    }
    ::close(fd);
    errno = saved;
    return -1;
  }
  *found = FoundFile::Regular;
  return fd;
}

bool readFileAt(int fd, std::string& into, size_t size, off_t offset) {
  size_t start = into.size();
  into.resize(start + size);
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(fd, into.data() + start + done, size - done,
                        offset + static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      into.resize(start + done);
      return false;
    }
    if (n == 0) break;  // shorter than its size said (truncated meanwhile)
    done += static_cast<size_t>(n);
  }
  into.resize(start + done);
  return true;
}

std::optional<std::string> readRegularFile(const std::string& path, bool followLinks,
                                           FoundFile* found, struct stat* st) {
  struct stat local {};
  if (st == nullptr) st = &local;
  int fd = openRegularFile(path, followLinks, found, st);
  if (fd < 0) return std::nullopt;
  std::string contents;
  bool read = readFileAt(fd, contents, static_cast<size_t>(st->st_size), 0);
  int saved = errno;
  ::close(fd);
  errno = saved;
  if (!read) {
    *found = FoundFile::Unreadable;
    return std::nullopt;
  }
  return contents;
}

bool removePath(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return false;
  if (!S_ISDIR(st.st_mode)) return ::unlink(path.c_str()) == 0;
  std::error_code error;
  std::filesystem::remove_all(path, error);
  if (error) errno = error.value();
  return !error;
}

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

// The files removed when SIGINT, SIGTERM, SIGHUP or SIGQUIT ends the process
// (temporaries, and the old contents a commit keeps until it ends), as
// clang's RemoveFileOnSignal does. Each slot owns a malloc'ed path; the
// handler and keepFileOnSignal each take a path with an exchange, so only
// one of them ever has it, and the handler frees nothing.
constexpr int kSignalSlots = 128;
std::atomic<char*> signalSlots[kSignalSlots];
std::once_flag handlersInstalled;
// The process groups of running children (runProcess), 0 when free; the
// handler passes them the signal before it removes the files they write.
constexpr int kGroupSlots = 16;
std::atomic<pid_t> groupSlots[kGroupSlots];

// Set by exitOnSignal: what to write to stderr and the status to exit with
// instead of dying by the signal (`watch` stops with 0 at Ctrl-C, also in the
// middle of a compile). Written before the signals are unblocked.
std::atomic<const char*> exitMessage{nullptr};
std::atomic<int> exitStatus{-1};

void removeFilesAndResignal(int signal) {
  for (std::atomic<pid_t>& slot : groupSlots) {
    if (pid_t group = slot.exchange(0); group > 0) {
      ::kill(-group, signal);
      // Children started in the background of a shell ignore SIGINT and SIGQUIT.
      if (signal != SIGTERM) ::kill(-group, SIGTERM);
    }
  }
  // Directories (a private one for a tool's files) after the files in them.
  char* directories[kSignalSlots];
  int count = 0;
  for (std::atomic<char*>& slot : signalSlots) {
    if (char* path = slot.exchange(nullptr); path != nullptr && ::unlink(path) != 0 &&
                                             (errno == EISDIR || errno == EPERM)) {
      directories[count++] = path;
    }
  }
  // A private directory also holds what a child made in it (nvcc's tmpxft_*
  // files, with TMPDIR pointing there): its entries are removed with system
  // calls only (getdents64, unlinkat), which a signal handler may make.
  while (count > 0) {
    const char* directory = directories[--count];
    if (::rmdir(directory) == 0 || (errno != ENOTEMPTY && errno != EEXIST)) continue;
    int fd = ::open(directory, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) continue;
    alignas(8) char buffer[4096];
    for (int round = 0; round < 64; ++round) {
      long n = ::syscall(SYS_getdents64, fd, buffer, sizeof buffer);
      if (n <= 0) break;
      for (long at = 0; at < n;) {
        // struct linux_dirent64: ino (8), off (8), reclen (2), type (1), name.
        unsigned short length = 0;
        std::memcpy(&length, buffer + at + 16, sizeof length);
        const char* name = buffer + at + 19;
        if (!(name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0')))) {
          ::unlinkat(fd, name, 0);
        }
        if (length == 0) break;
        at += length;
      }
    }
    ::close(fd);
    ::rmdir(directory);
  }
  if (int status = exitStatus.load(); status >= 0) {
    if (const char* message = exitMessage.load(); message != nullptr) {
      (void)!::write(STDERR_FILENO, message, std::strlen(message));
    }
    ::_exit(status);
  }
  ::signal(signal, SIG_DFL);
  ::raise(signal);  // delivered when the handler returns: the default action
}

void installSignalHandlers() {
  for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) {
    struct sigaction old {};
    // Ignored (nohup) or someone else's handler: left alone.
    if (::sigaction(signal, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) continue;
    struct sigaction action {};
    action.sa_handler = removeFilesAndResignal;
    sigemptyset(&action.sa_mask);
    ::sigaction(signal, &action, nullptr);
  }
}

}  // namespace

void exitOnSignal(const char* message, int status) {
  std::call_once(handlersInstalled, installSignalHandlers);
  exitMessage.store(message);
  exitStatus.store(status);
}

void removeFileOnSignal(const std::string& path) {
  std::call_once(handlersInstalled, installSignalHandlers);
  char* copy = ::strdup(path.c_str());
  if (copy == nullptr) return;
  for (std::atomic<char*>& slot : signalSlots) {
    char* expected = nullptr;
    if (slot.compare_exchange_strong(expected, copy)) return;
  }
  std::free(copy);  // every slot taken: this one is not removed on a signal
}

void keepFileOnSignal(const std::string& path) {
  for (std::atomic<char*>& slot : signalSlots) {
    char* held = slot.load();
    // Only the thread that registered a path takes it back, so `held` is
    // not freed under us; the handler may take it first (and not free it).
    if (held != nullptr && path == held && slot.compare_exchange_strong(held, nullptr)) {
      std::free(held);
      return;
    }
  }
}

std::string makePrivateDirectory(const std::string& prefix, std::string* error) {
  std::string path = prefix + ".XXXXXX";
  if (::mkdtemp(path.data()) == nullptr) {
    *error = std::strerror(errno);
    return {};
  }
  return path;
}

ProcessResult runProcess(const std::vector<std::string>& args, const std::string& logPath,
                         const std::vector<std::string>& environment) {
  std::call_once(handlersInstalled, installSignalHandlers);
  ProcessResult result;
  std::vector<char*> argv;
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  // tritonc's environment, with `environment`'s variables in place of theirs.
  std::vector<char*> envp;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string_view variable = *entry;
    std::string_view name = variable.substr(0, variable.find('='));
    bool replaced = std::any_of(environment.begin(), environment.end(), [&](const std::string& e) {
      return e.size() > name.size() && e.compare(0, name.size(), name) == 0 && e[name.size()] == '=';
    });
    if (!replaced) envp.push_back(*entry);
  }
  for (const std::string& e : environment) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attributes);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, logPath.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  // A group of its own (pgid = its pid), every signal unblocked (`watch`
  // blocks SIGINT/SIGTERM for its signalfd) and the ones tritonc handles at
  // their default action.
  sigset_t none;
  sigset_t handled;
  sigemptyset(&none);
  sigemptyset(&handled);
  for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGXFSZ}) sigaddset(&handled, signal);
  posix_spawnattr_setpgroup(&attributes, 0);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &handled);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                            POSIX_SPAWN_SETSIGDEF);
  // Blocked from the spawn until the group is registered, so a signal in
  // between cannot miss the child.
  sigset_t all;
  sigset_t old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  pid_t pid = 0;
  int spawned = posix_spawn(&pid, argv[0], &actions, &attributes, argv.data(), envp.data());
  std::atomic<pid_t>* slot = nullptr;
  if (spawned == 0) {
    for (std::atomic<pid_t>& s : groupSlots) {
      pid_t expected = 0;
      if (s.compare_exchange_strong(expected, pid)) {
        slot = &s;
        break;
      }
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (spawned != 0) {
    result.error = std::string("it could not be run: ") + std::strerror(spawned);
    return result;
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (slot != nullptr) {
    pid_t mine = pid;
    slot->compare_exchange_strong(mine, 0);
  }
  if (WIFEXITED(status)) {
    result.exitCode = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.error = "killed by signal " + std::to_string(WTERMSIG(status));
  }
  return result;
}

namespace {
std::atomic<int> standardOutputErrno{0};
}  // namespace

void writeStandardOutput(std::string_view text) {
  errno = 0;
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size()) {
    int expected = 0;
    standardOutputErrno.compare_exchange_strong(expected, errno != 0 ? errno : EIO);
  }
}

int flushStandardOutput() {
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    int error = errno;
    int expected = 0;
    standardOutputErrno.compare_exchange_strong(expected, error != 0 ? error : EIO);
  }
  return standardOutputErrno.load();
}

namespace {

// Whether `path` is in /proc (`/proc/self/fd/1`, what `/dev/stdout` links
// to): a link there names an open file or a process's state, not a path to
// put a file at.
bool inProc(std::string_view path) { return path.starts_with("/proc/"); }

// The descriptor of this process that `path` names (`/dev/stdout`,
// `/dev/fd/1`, `/proc/self/fd/1`, also through a linked directory): a write
// to it goes to that descriptor, at its offset, as the shell opened it (`>>`
// appends), not to the file reopened from the start.
std::optional<int> ownDescriptorOf(const std::string& path) {
  if (path == "/dev/stdin") return 0;
  if (path == "/dev/stdout") return 1;
  if (path == "/dev/stderr") return 2;
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos || slash + 1 == path.size() ||
      path.find_first_not_of("0123456789", slash + 1) != std::string::npos ||
      path.size() - slash > 9) {
    return std::nullopt;
  }
  char real[PATH_MAX];
  std::string dir = slash == 0 ? "/" : path.substr(0, slash);
  if (::realpath(dir.c_str(), real) == nullptr) return std::nullopt;
  std::string_view resolved = real;
  if (resolved != "/proc/self/fd" && resolved != "/proc/" + std::to_string(::getpid()) + "/fd") {
    return std::nullopt;
  }
  return std::stoi(path.substr(slash + 1));
}

// Whether following the link `link` (lstat in `st`) is what the kernel's
// protected_symlinks refuses: a link in a sticky, world-writable directory
// (/tmp) owned by neither the follower nor the directory's owner. Followed in
// user space here, so checked here: another user's link planted at
// /tmp/m.py must not get the caller's file replaced.
bool untrustedLink(const std::string& link, const struct stat& st) {
  size_t slash = link.find_last_of('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : link.substr(0, slash);
  struct stat parent {};
  if (::stat(dir.c_str(), &parent) != 0) return false;
  return (parent.st_mode & S_ISVTX) != 0 && (parent.st_mode & S_IWOTH) != 0 &&
         st.st_uid != ::geteuid() && st.st_uid != parent.st_uid;
}

}  // namespace

Expected<std::string> followSymlinks(const std::string& path) {
  std::string at = path;
  for (int hops = 0; hops < 40; ++hops) {  // 40: the kernel's ELOOP limit
    struct stat st {};
    if (inProc(at) || ownDescriptorOf(at) || ::lstat(at.c_str(), &st) != 0 ||
        !S_ISLNK(st.st_mode)) {
      return at;
    }
    if (untrustedLink(at, st)) return Error{at + ": " + std::strerror(EACCES)};
    std::string target(PATH_MAX, '\0');
    ssize_t n = ::readlink(at.c_str(), target.data(), target.size());
    if (n < 0) return Error{at + ": " + std::strerror(errno)};
    target.resize(static_cast<size_t>(n));
    size_t slash = at.find_last_of('/');
    at = target.empty() || target.front() == '/' || slash == std::string::npos
             ? target
             : at.substr(0, slash + 1) + target;
  }
  return Error{path + ": " + std::strerror(ELOOP)};
}

namespace {

// Removes a file that removeFileOnSignal registered.
void removeRegistered(const std::string& path) {
  ::unlink(path.c_str());
  keepFileOnSignal(path);
}

// Writes `contents` to a new temporary file next to `path`; its name in `temp`
// (removed if a signal ends the process before it is put in place).
bool writeTemporary(const std::string& path, std::string_view contents, std::string& temp,
                    std::string* error, bool executable = false) {
  int fd = -1;
  // A name taken is tried again with the next number, as mkstemp does: a
  // run killed outright (SIGKILL) leaves its temporary file, and in a
  // container the next run often has the same process id.
  // (Registered for removal on a signal once it is ours: a name found taken
  // is another process's file.)
  for (int attempt = 0; fd < 0 && attempt < 100; ++attempt) {
    temp = temporaryPathFor(path);
    // 0666 less the umask, as every compiler and editor creates files (0777
    // for what a linker would make executable: a shared library).
    fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, executable ? 0777 : 0666);
    if (fd < 0) {
      *error = std::strerror(errno);
      if (errno != EEXIST) return false;
    }
  }
  if (fd < 0) return false;
  removeFileOnSignal(temp);
  if (!writeAllAndClose(fd, contents, error)) {
    removeRegistered(temp);
    return false;
  }
  return true;
}

// The file a write to `given` replaces (followSymlinks), or nullopt with
// `error` saying why its links cannot be followed (without the path, which
// the caller's message names).
std::optional<std::string> outputTarget(const std::string& given, std::string* error) {
  Expected<std::string> followed = followSymlinks(given);
  if (followed) return std::move(*followed);
  const std::string& message = followed.error().message;
  size_t colon = message.rfind(": ");
  *error = colon == std::string::npos ? message : message.substr(colon + 2);
  return std::nullopt;
}

// Whether `path` (already through followSymlinks) is a file to write into, not
// to replace: standard output, a descriptor of this process (`/dev/stdout`,
// `/dev/fd/1`: written where the shell put it, and never renamed over), a
// device, FIFO or socket, or another file named through /proc.
bool isSpecial(const std::string& path) {
  if (path == "-" || inProc(path) || ownDescriptorOf(path)) return true;
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

bool writeInto(const std::string& path, std::string_view contents, std::string* error) {
  if (path == "-") {  // standard output (`-o -`), left open
    int out = ::dup(STDOUT_FILENO);
    if (out < 0) {
      *error = std::strerror(errno);
      return false;
    }
    return writeAllAndClose(out, contents, error);
  }
  // `-o /dev/stdout`, `/dev/fd/3`: the descriptor itself, where the shell put
  // it (a closed stream, held read-only on /dev/null, fails as closed).
  if (std::optional<int> own = ownDescriptorOf(path)) {
    int out = ::dup(*own);
    if (out < 0) {
      *error = std::strerror(errno);
      return false;
    }
    return writeAllAndClose(out, contents, error);
  }
  // Another regular file reached through /proc is written from its start and
  // cut to the new length, as `cc -o` writes one.
  struct stat st {};
  bool regular = ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | (regular ? O_TRUNC : 0));
  if (fd < 0) {
    *error = std::strerror(errno);
    return false;
  }
  return writeAllAndClose(fd, contents, error);
}

// Puts the file `temp` at `path`. A regular file already there is swapped
// out (its old data then goes with the temporary name); a plain rename when
// there is none, or when the file system cannot exchange. The old data is
// left at `*old` when `old` is given (to undo), else removed.
bool install(const std::string& temp, const std::string& path, std::string* error,
             std::string* old = nullptr) {
  if (isSpecial(path)) {  // a device path: written into
    std::optional<std::string> bytes = readWholeFile(temp);
    bool ok = bytes ? writeInto(path, *bytes, error)
                    : (*error = "cannot read back " + temp, false);
    removeRegistered(temp);
    return ok;
  }
  struct stat st {};
  bool exists = ::lstat(path.c_str(), &st) == 0;
  if (exists && S_ISREG(st.st_mode) &&
      ::renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, path.c_str(), RENAME_EXCHANGE) == 0) {
    if (old != nullptr) *old = temp;
    else removeRegistered(temp);
    return true;
  }
  // Without an exchange, the old file is kept under a second name to undo.
  std::string backup;
  if (exists && old != nullptr) {
    backup = temporaryPathFor(path);
    removeFileOnSignal(backup);
    if (::link(path.c_str(), backup.c_str()) != 0) {
      keepFileOnSignal(backup);
      backup.clear();
    }
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    *error = std::strerror(errno);
    removeRegistered(temp);
    if (!backup.empty()) removeRegistered(backup);
    return false;
  }
  keepFileOnSignal(temp);
  if (old != nullptr) *old = backup;
  return true;
}

// The process's umask, read without changing it (umask(2) both sets and
// returns it, a race with threads creating files): /proc's Umask line,
// else the set-and-restore once, when this is first asked.
mode_t processUmask() {
  static const mode_t mask = [] {
    if (std::optional<std::string> status = readWholeFile("/proc/self/status")) {
      size_t at = status->find("\nUmask:\t");
      if (at != std::string::npos) {
        return static_cast<mode_t>(std::strtoul(status->c_str() + at + 8, nullptr, 8) & 0777);
      }
    }
    mode_t m = ::umask(022);
    ::umask(m);
    return m;
  }();
  return mask;
}

// The mode an output kept because it holds the new contents is given, so
// that its mode is a new output's whatever was there before (an older umask's,
// a chmod): 0666, or 0777 for an executable, less the umask; 0 (keep it) when
// it has that mode, or when its directory has a default ACL, which decides the
// modes of new files itself (a chmod would narrow the ACL's mask).
unsigned newOutputMode(const std::string& path, mode_t mode, bool executable) {
  auto want = static_cast<mode_t>((executable ? 0777 : 0666) & ~processUmask());
  if ((mode & 07777) == want) return 0;
  size_t slash = path.find_last_of('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
  ssize_t acl = ::getxattr(dir.c_str(), "system.posix_acl_default", nullptr, 0);
  return acl > 0 ? 0 : want;
}

// Whether `path` is a regular file holding exactly `contents` (its mode in
// `mode`, when given).
bool holds(const std::string& path, std::string_view contents, mode_t* mode = nullptr) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<size_t>(st.st_size) != contents.size()) {
    return false;
  }
  if (mode != nullptr) *mode = st.st_mode;
  std::optional<std::string> old = readWholeFile(path);
  return old && *old == contents;
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

}  // namespace

bool writeFileAtomically(const std::string& given, std::string_view contents,
                         std::string* error) {
  std::optional<std::string> target = outputTarget(given, error);
  if (!target) return false;
  const std::string& path = *target;
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
    if (!file.temp.empty()) removeRegistered(file.temp);
  }
}

bool FileTransaction::stage(const std::string& given, std::string_view contents,
                            std::string* error, bool executable) {
  std::optional<std::string> target = outputTarget(given, error);
  if (!target) return false;
  const std::string& path = *target;
  if (isDirectory(path, error)) return false;
  if (isSpecial(path)) {
    staged_.push_back({path, "", Kind::Direct, std::string(contents), {}, false, given, 0});
    return true;
  }
  if (mode_t mode = 0; holds(path, contents, &mode)) {
    staged_.push_back(
        {path, "", Kind::Touch, {}, {}, false, given, newOutputMode(path, mode, executable)});
    return true;
  }
  std::string temp;
  if (!writeTemporary(path, contents, temp, error, executable)) return false;
  staged_.push_back({path, temp, Kind::Replace, {}, {}, false, given, 0});
  return true;
}

void FileTransaction::stageRemoval(const std::string& given) {
  // The link stays; what it names goes (never a device, or /dev/stdout's file).
  Expected<std::string> path = followSymlinks(given);
  if (!path || isSpecial(*path)) return;
  staged_.push_back({*path, "", Kind::Remove, {}, {}, false, given, 0});
}

// Puts one staged file in place; what it replaced is kept in `file.old`.
bool FileTransaction::apply(Staged& file, std::string* error) {
  switch (file.kind) {
    case Kind::Replace: {
      std::string temp = std::exchange(file.temp, "");
      struct stat st {};
      file.created = ::lstat(file.path.c_str(), &st) != 0;
      return install(temp, file.path, error, &file.old);
    }
    case Kind::Touch:
      // Best effort: a file of another owner keeps its mode, as before.
      if (file.mode != 0) ::chmod(file.path.c_str(), static_cast<mode_t>(file.mode));
      return ::utimensat(AT_FDCWD, file.path.c_str(), nullptr, 0) == 0 ||
             (*error = std::strerror(errno), false);
    case Kind::Remove: {
      struct stat st {};
      if (::lstat(file.path.c_str(), &st) != 0) return true;  // nothing to remove
      file.old = temporaryPathFor(file.path);
      removeFileOnSignal(file.old);
      if (::rename(file.path.c_str(), file.old.c_str()) != 0) {
        *error = std::strerror(errno);
        keepFileOnSignal(file.old);
        file.old.clear();
        return false;
      }
      return true;
    }
    case Kind::Direct:
      return writeInto(file.path, file.contents, error);
  }
  return false;
}

// Puts back what `file` replaced (best effort: the error being reported is
// the first one).
void FileTransaction::undo(Staged& file) {
  if (file.kind == Kind::Replace && !file.old.empty()) {
    // The old data is at `old`: exchanged back, the new data goes with it.
    if (::renameat2(AT_FDCWD, file.old.c_str(), AT_FDCWD, file.path.c_str(),
                    RENAME_EXCHANGE) == 0) {
      removeRegistered(file.old);
    } else if (::rename(file.old.c_str(), file.path.c_str()) == 0) {
      keepFileOnSignal(file.old);
    }
  } else if (file.kind == Kind::Replace && file.created) {
    ::unlink(file.path.c_str());
  } else if (file.kind == Kind::Remove && !file.old.empty() &&
             ::rename(file.old.c_str(), file.path.c_str()) == 0) {
    keepFileOnSignal(file.old);
  }
  file.old.clear();
}

bool FileTransaction::commit(std::string* failedPath, std::string* error) {
  // Devices and FIFOs last: what was written into them cannot be taken back.
  std::stable_partition(staged_.begin(), staged_.end(),
                        [](const Staged& file) { return file.kind != Kind::Direct; });
  size_t applied = 0;
  for (; applied < staged_.size(); ++applied) {
    if (!apply(staged_[applied], error)) break;
  }
  if (applied < staged_.size()) {
    *failedPath = staged_[applied].given;
    while (applied > 0) undo(staged_[--applied]);
    return false;
  }
  for (Staged& file : staged_) {
    if (!file.old.empty()) removeRegistered(file.old);
  }
  staged_.clear();
  return true;
}

void holdClosedStandardStreams() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    // Standard input held write-only and the outputs read-only: reading or
    // writing them still fails (EBADF) as on a closed stream.
    int held = ::open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY);
    if (held >= 0 && held != fd) {
      ::dup2(held, fd);
      ::close(held);
    }
  }
}

bool makeDirectories(const std::string& path, std::string* error,
                     std::vector<std::string>* created) {
  if (path.empty()) return true;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return true;
    *error = std::strerror(ENOTDIR);
    return false;
  }
  size_t slash = path.find_last_of('/');
  if (slash != std::string::npos && slash > 0 &&
      !makeDirectories(path.substr(0, slash), error, created)) {
    return false;
  }
  // 0777 less the umask, as `mkdir -p` makes them: a shared cache's group
  // (umask 002) can write into the folders it holds entries of.
  if (::mkdir(path.c_str(), 0777) != 0) {
    if (errno == EEXIST) return true;  // made meanwhile by another process
    *error = std::strerror(errno);
    return false;
  }
  if (created) created->push_back(path);
  return true;
}

bool isExecutableFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

std::string findProgramOnPath(std::string_view name) {
  const char* path = std::getenv("PATH");
  if (name.empty() || path == nullptr) return std::string();
  std::string_view dirs = path;
  while (true) {
    size_t colon = dirs.find(':');
    std::string_view dir = dirs.substr(0, colon);
    std::string candidate = dir.empty() ? std::string(".") : std::string(dir);
    candidate += '/';
    candidate += name;
    if (isExecutableFile(candidate)) return candidate;
    if (colon == std::string_view::npos) return std::string();
    dirs.remove_prefix(colon + 1);
  }
}

}  // namespace tritonc

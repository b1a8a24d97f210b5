//===- FileSystem.h - reading and atomically writing files ------*- C++ -*-===//
//
// The few file operations the driver and the cache share. Writes go to a
// unique temporary file in the destination's directory and are renamed into
// place, so a reader sees the old contents or the new ones, never a part.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tritonc/base/Expected.h"

namespace tritonc {

/// The whole file, or nullopt (errno says why).
std::optional<std::string> readWholeFile(const std::string& path);

/// What readRegularFile found at its path.
enum class FoundFile : uint8_t {
  Regular,     ///< a regular file, read
  Missing,     ///< nothing (or a dangling link, when links are followed)
  NotRegular,  ///< a directory, FIFO, socket, device, or a link not followed
  Unreadable,  ///< a regular file that could not be opened or read (errno says why)
};

/// The contents of the regular file at `path`, or nullopt with `*found`
/// saying why. Nothing else is opened: reading a FIFO or a terminal would
/// wait for a writer forever, and a device may do anything on open. The file
/// is opened without blocking, checked again (it may have been replaced since
/// it was looked at), and read up to the size it had then. With
/// `followLinks` false a symbolic link is NotRegular. `st` (when given) gets
/// what the path held (st_mode 0 when Missing).
std::optional<std::string> readRegularFile(const std::string& path, bool followLinks,
                                           FoundFile* found, struct stat* st = nullptr);
/// readRegularFile's first half: the open descriptor of the regular file at
/// `path` (the caller closes it), or -1 with `*found` saying why; `st` (when
/// given) gets what it is. For a reader that reads part of it.
int openRegularFile(const std::string& path, bool followLinks, FoundFile* found,
                    struct stat* st = nullptr);
/// Appends up to `size` bytes of `fd` at `offset` to `into` (fewer at the end
/// of the file); false (errno set) on a read error.
bool readFileAt(int fd, std::string& into, size_t size, off_t offset);

/// Removes what is at `path`, never following a link: a file, a link, a FIFO,
/// or a directory with what it holds. False (errno set) when it remains.
bool removePath(const std::string& path);

/// A temporary name next to `path`, unique across processes and threads:
/// `<path>.tmp.<pid>.<n>`.
std::string temporaryPathFor(const std::string& path);

/// Writes `contents` to a temporary file and renames it over `path`. On
/// failure, sets `error` (strerror) and leaves no temporary file behind.
/// A regular file already at `path` is swapped out (renameat2
/// RENAME_EXCHANGE) and then removed: as atomic as a rename, but ext4 does
/// not flush the new data at once, which it does when a rename replaces a
/// file (auto_da_alloc; 1.4-3 ms on this machine's disk).
bool writeFileAtomically(const std::string& path, std::string_view contents, std::string* error);

/// A device, FIFO or socket at `path` (`-o /dev/null`, `-o /dev/stdout`) is
/// written into, as clang does, never replaced by a regular file; the path
/// `-` is standard output.
///
/// Like writeFileAtomically, but when `path` already holds exactly
/// `contents` only its modification time is refreshed.
bool updateFileAtomically(const std::string& path, std::string_view contents, std::string* error);

/// Several files replaced together, so that a failure leaves every one as it
/// was: stage() writes each new content to a temporary file next to its path
/// (or notes that the path holds it already, to be touched); commit() puts
/// them all in place, each as writeFileAtomically does, and when one cannot
/// be put in place, puts back the ones before it. Temporaries not committed
/// are removed when the transaction goes away, or when a signal ends the
/// process.
class FileTransaction {
 public:
  FileTransaction() = default;
  FileTransaction(const FileTransaction&) = delete;
  FileTransaction& operator=(const FileTransaction&) = delete;
  ~FileTransaction();
  /// False (with `error`) when the temporary file cannot be written.
  /// `executable`: created 0777 less the umask, as a linker makes a library.
  bool stage(const std::string& path, std::string_view contents, std::string* error,
             bool executable = false);
  /// A file of an earlier build to remove at commit (if it exists).
  void stageRemoval(const std::string& path);
  /// False (with the path and `error`) when one cannot be put in place; the
  /// ones before it are then put back as they were (regular files; what was
  /// written into a device or FIFO, which commit() writes last, stays).
  bool commit(std::string* failedPath, std::string* error);

 private:
  enum class Kind { Replace, Touch, Remove, Direct };
  struct Staged {
    std::string path;
    std::string temp;  ///< Replace: the new contents, until put in place
    Kind kind = Kind::Replace;  ///< Touch: `path` holds the contents already
    std::string contents;  ///< what Direct (a device or FIFO at `path`) writes
    std::string old;       ///< during commit: what was at `path`, to undo
    bool created = false;  ///< during commit: nothing was at `path`
    std::string given = {};  ///< `path` as named, before its links were followed
    unsigned mode = 0;  ///< Touch: the mode a new output would get, to give it (0: keep)
  };
  bool apply(Staged& file, std::string* error);
  void undo(Staged& file);
  std::vector<Staged> staged_;
};

/// The file `path` names, its symlinks followed: a chain of links, relative
/// targets (from the link's directory), and a last link that dangles (the
/// path a write creates); stops at a path that names a descriptor of the
/// process (`/dev/stdout`, `/dev/fd/1`) or leads into /proc, which names an
/// open file. An error for a loop, and for a link the kernel's
/// protected_symlinks would not follow (another user's, in a sticky
/// world-writable directory such as /tmp). Writes follow them
/// (writeFileAtomically, FileTransaction), so that an output or a
/// configuration file named by a link is written through it (the link stays,
/// what it names is replaced), as gcc and `git config` do.
Expected<std::string> followSymlinks(const std::string& path);

/// Holds each of the standard streams (0, 1, 2) that the caller closed
/// (`2>&-`) open on /dev/null, opened so that using it still fails as on a
/// closed stream. Without it the next file opened takes the number, and a
/// message for that stream lands in it (a cache entry, an output): git's
/// sanitize_stdfds does the same. Called first thing in main().
void holdClosedStandardStreams();

/// Registers a file to remove if SIGINT, SIGTERM, SIGHUP or SIGQUIT ends the
/// process (installing handlers for the signals not ignored or handled
/// already); keepFileOnSignal() takes it back. Temporary outputs use it, as
/// clang's RemoveFileOnSignal does. An empty directory may be registered
/// too: it is removed after the files.
void removeFileOnSignal(const std::string& path);
/// From now on a signal that ends tritonc (see removeFileOnSignal) writes
/// `message` (a string that outlives the call; may be null) to stderr and
/// exits with `status` after the removals, instead of dying by the signal;
/// a negative `status` restores that.
void exitOnSignal(const char* message, int status);
void keepFileOnSignal(const std::string& path);

/// How a child process ended (runProcess).
struct ProcessResult {
  int exitCode = -1;   ///< its exit status; -1 when it did not exit normally
  std::string error;   ///< otherwise why: "it could not be run: ...", "killed by signal 9"
};

/// Runs `args[0]` (a path) with `args`, its stdout and stderr appended to
/// `logPath`, and waits for it. The child runs in a process group of its own,
/// which a signal that ends tritonc (see removeFileOnSignal) ends too: `kill`
/// of tritonc alone, as CI systems do, would otherwise leave it running and
/// writing files (ninja runs its commands the same way).
/// Creates a new directory `prefix` + ".XXXXXX" (six random characters),
/// readable by its owner only, as mkdtemp; its path, or empty with `error`.
std::string makePrivateDirectory(const std::string& prefix, std::string* error);

/// `environment` ("NAME=value") replaces or adds variables of tritonc's own.
ProcessResult runProcess(const std::vector<std::string>& args, const std::string& logPath,
                         const std::vector<std::string>& environment = {});

/// Writes `text` to stdout (buffered). The errno of the first write that
/// failed is kept for flushStandardOutput(): by the final fflush the stream
/// only says that one did (`--dump-ir > /dev/full` says "No space left on
/// device", not "a write failed").
void writeStandardOutput(std::string_view text);
/// Flushes stdout: 0 when everything written reached it, else the errno of
/// the first failure (EIO when none was recorded).
int flushStandardOutput();

/// `mkdir -p`; true when the directory exists afterwards. `created` (when
/// given) gets the directories it made, outermost first.
bool makeDirectories(const std::string& path, std::string* error,
                     std::vector<std::string>* created = nullptr);

/// Whether `path` is an executable regular file (a program to run; a directory is none).
bool isExecutableFile(const std::string& path);

/// The first executable regular file called `name` in the directories of
/// $PATH, searched as execvp does (an empty entry is the current directory);
/// empty when there is none or $PATH is unset.
std::string findProgramOnPath(std::string_view name);

}  // namespace tritonc

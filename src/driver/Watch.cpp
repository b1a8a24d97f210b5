//===- Watch.cpp - `tritonc watch`: recompile on every save -----------------===//
//
// Watches the file's directory, and those of the files it imports, with inotify (editors often save by writing a
// temporary file and renaming it over the original, which a watch on the file
// itself would lose), coalesces the events of one save, and recompiles with
// one cache kept open, so its in-memory level survives between compiles. A
// file saved with errors prints its diagnostics and is watched on; a deleted
// file is waited for. SIGINT/SIGTERM (read through a signalfd) end it with
// exit status 0.
//
//===----------------------------------------------------------------------===//
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tritonc/base/FileSystem.h"
#include "tritonc/base/Text.h"
#include "tritonc/driver/Driver.h"

namespace tritonc {
namespace {

// A status line on stderr, prefixed so that it stands out from diagnostics;
// with JSON diagnostics (`json`), a JSON object of their keys (severity
// "note", code "WatchStatus") about `path`, so that every line of stderr
// stays one object.
std::string statusLine(bool json, const std::string& path, const std::string& text) {
  std::string line;
  if (json) {
    line = "{\"file\":";
    appendJsonString(line, path);
    line += ",\"line\":0,\"column\":0,\"severity\":\"note\",\"code\":\"WatchStatus\","
            "\"message\":";
    appendJsonString(line, "tritonc watch: " + text);
    line += ",\"notes\":[]}\n";
  } else {
    line = "tritonc watch: " + text + "\n";
  }
  return line;
}

void status(bool json, const std::string& path, const std::string& text) {
  std::string line = statusLine(json, path, text);
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

// Whether `path` is a file to watch; else errno says why (EISDIR for a
// directory, as `compile` says it).
bool exists(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  errno = S_ISDIR(st.st_mode) ? EISDIR : S_ISREG(st.st_mode) ? 0 : EINVAL;
  return S_ISREG(st.st_mode);
}

}  // namespace

int runWatch(const CompileOptions& options) {
  const std::string& path = options.inputs.front();
  bool json = options.diagnosticsFormat == DiagnosticsFormat::Json;
  errno = 0;
  if (!exists(path)) {
    int why = errno == 0 ? ENOENT : errno;  // the words compile uses
    std::unique_ptr<DiagnosticConsumer> printer = makeConsumer(options);
    DiagnosticEngine diags(*printer);
    diags.reportForPath(Diag::CannotReadFile, "",
                        fmt::format("cannot {} '{}': {}", why == EISDIR ? "read" : "open", path,
                                    std::strerror(why)))
        .about(path);
    return kExitUsageError;
  }
  // Directories watched (by watch descriptor) and the files of interest in
  // each: the input, then every file it imports (learned from each compile).
  int inotify = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (inotify < 0) {
    std::fprintf(stderr, "tritonc: error: cannot watch %s: %s\n", path.c_str(), std::strerror(errno));
    return kExitInternalError;
  }
  // A directory has one watch descriptor however it is spelled (`.` and
  // `sub/..`, a link to it): each spelling is kept, or events for the files
  // named through the first would be looked up under the last (audit 46G).
  std::map<int, std::set<std::string>> dirOf;
  constexpr uint32_t kEvents = IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_MOVED_FROM;
  // A directory watched: a followed file's, or one of its own (an -I folder,
  // one made after a failed compile), where any `.tri` appearing after a
  // failed compile may be the import that was not found.
  auto watchDirectory = [&](const std::string& dir) {
    int wd = ::inotify_add_watch(inotify, dir.c_str(), kEvents);
    if (wd >= 0) dirOf[wd].insert(dir);
    return wd >= 0;
  };
  std::set<std::pair<std::string, std::string>> followed;  // (directory, file name)
  auto follow = [&](auto& self, const std::string& file) -> bool {
    size_t slash = file.find_last_of('/');
    std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : file.substr(0, slash));
    std::string base = slash == std::string::npos ? file : file.substr(slash + 1);
    if (followed.emplace(dir, base).second && !watchDirectory(dir)) return false;
    // A symbolic link: a save writes the file it names, in its own directory
    // (looked up at every compile: the link may have been pointed elsewhere).
    struct stat st {};
    if (::lstat(file.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
      if (char* real = ::realpath(file.c_str(), nullptr)) {
        std::string target = real;
        std::free(real);
        self(self, target);
      }
    }
    return true;
  };
  if (!follow(follow, path)) {
    std::fprintf(stderr, "tritonc: error: cannot watch %s: %s\n", path.c_str(), std::strerror(errno));
    return kExitInternalError;
  }
  for (const std::string& dir : options.includeDirs) watchDirectory(dir);
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  ::sigprocmask(SIG_BLOCK, &signals, nullptr);
  int signal = ::signalfd(-1, &signals, SFD_CLOEXEC);
  // What a signal in the middle of a compile prints before exit status 0.
  const std::string stopped = statusLine(json, path, "stopped");
  exitOnSignal(stopped.c_str(), kExitSuccess);

  // One cache for every compile.
  cache::Settings settings = cache::resolveSettings(options.cacheDir, options.noCache);
  cache::Cache cache = cache::Cache::open(settings);
  if (!cache.warning().empty() && !options.quiet) {
    // Said once: every compile of the session goes on without the disk
    // cache (the memory level still serves unchanged imports).
    status(json, path, cache.warning() + "; compiling without the cache");
  }
  cache.enableMemoryLevel();

  // After a failed compile a `.tri` file appearing in a watched directory
  // may be the import it could not find: that compiles again too.
  bool failed = false;
  auto build = [&] {
    if (!exists(path)) {
      status(json, path, fmt::format("{} is gone; waiting for it to come back", path));
      return;
    }
    auto start = std::chrono::steady_clock::now();
    std::vector<std::string> imported;
    // Ctrl-C in the middle of a compile stops at once, as it does `compile`
    // (with nvcc running, a compile takes minutes): the signal kills nvcc,
    // removes the temporary files and ends the watch with exit status 0;
    // the outputs are the last complete compile's. Between compiles the
    // signals stay blocked for the signalfd.
    ::sigprocmask(SIG_UNBLOCK, &signals, nullptr);
    int rc = runCompileWith(options, cache, &imported);
    ::sigprocmask(SIG_BLOCK, &signals, nullptr);
    cache.flush();
    follow(follow, path);  // a link to it may point elsewhere now
    for (const std::string& file : imported) {
      follow(follow, file);  // a directory that cannot be watched just is not followed
    }
    failed = rc != kExitSuccess;
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                    .count();
    if (rc == kExitSuccess) {
      status(json, path, fmt::format("compiled {} in {:.1f} ms", path, ms));
    } else {
      status(json, path, fmt::format("{} did not compile (exit {}); watching for the next save", path, rc));
    }
  };

  build();
  status(json, path, fmt::format("watching {} (Ctrl-C to stop)", path));
  alignas(struct inotify_event) char buffer[16384];
  while (true) {
    struct pollfd fds[2] = {{inotify, POLLIN, 0}, {signal, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if ((fds[1].revents & POLLIN) != 0) {
      status(json, path, "stopped");
      break;
    }
    // Read every pending event; a save is relevant when it names the file.
    // A file just created is still being written until its writer closes it
    // (`cp`, `cat > m.tri`, a save after a delete): compiling at IN_CREATE
    // would compile it empty or half-written.
    bool relevant = false;
    bool awaitingClose = false;
    auto drain = [&] {
      ssize_t n;
      while ((n = ::read(inotify, buffer, sizeof buffer)) > 0) {
        for (char* p = buffer; p < buffer + n;) {
          auto* event = reinterpret_cast<struct inotify_event*>(p);
          auto dir = dirOf.find(event->wd);
          std::string name = event->len > 0 ? std::string(event->name) : std::string();
          bool named = dir != dirOf.end() && std::any_of(
              dir->second.begin(), dir->second.end(),
              [&](const std::string& d) { return followed.count({d, name}) != 0; });
          bool appeared = failed && dir != dirOf.end() && name.ends_with(".tri") &&
                          (event->mask & (IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE)) != 0;
          // A folder made after a failed compile (`import "sub/lib.tri"`,
          // `mkdir sub`): watched, for the file that will appear in it.
          if (failed && dir != dirOf.end() && !name.empty() && (event->mask & IN_ISDIR) != 0 &&
              (event->mask & (IN_CREATE | IN_MOVED_TO)) != 0) {
            std::set<std::string> spellings = dir->second;
            for (const std::string& d : spellings) {
              watchDirectory(d == "/" ? "/" + name : d + "/" + name);
            }
          }
          if (!name.empty() && (named || appeared)) {
            relevant = true;
            if ((event->mask & IN_CREATE) != 0) {
              awaitingClose = true;
            } else if ((event->mask & (IN_CLOSE_WRITE | IN_MOVED_TO | IN_DELETE |
                                       IN_MOVED_FROM)) != 0) {
              awaitingClose = false;
            }
          }
          p += sizeof(struct inotify_event) + event->len;
        }
      }
    };
    drain();
    // An editor's save is several events (write, rename, attributes): wait
    // until 30 ms pass without one, then compile once. A created file waits
    // for its writer to close it, up to 2 s (a hard link or a symlink made
    // in its place is never written).
    while (relevant) {
      struct pollfd more = {inotify, POLLIN, 0};
      if (::poll(&more, 1, awaitingClose ? 2000 : 30) <= 0) break;
      drain();
    }
    if (relevant) build();
  }
  exitOnSignal(nullptr, -1);
  ::close(inotify);
  if (signal >= 0) ::close(signal);
  return kExitSuccess;
}

}  // namespace tritonc

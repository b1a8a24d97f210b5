//===- FileSystemTest.cpp - file system helpers of base/ ------------------===//
#include "tritonc/base/FileSystem.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "TestUtil.h"

namespace tritonc {
namespace {

namespace fs = std::filesystem;

/// Sets $PATH for one test and restores it.
class ScopedPath {
 public:
  explicit ScopedPath(const std::string& value) {
    if (const char* old = std::getenv("PATH")) old_ = old;
    ::setenv("PATH", value.c_str(), 1);
  }
  ~ScopedPath() {
    if (old_) {
      ::setenv("PATH", old_->c_str(), 1);
    } else {
      ::unsetenv("PATH");
    }
  }

 private:
  std::optional<std::string> old_;
};

void makeFile(const fs::path& path, mode_t mode) {
  std::ofstream(path) << "#!/bin/sh\n";
  ASSERT_EQ(::chmod(path.c_str(), mode), 0);
}

TEST(FindProgramOnPath, FirstExecutableInPathOrder) {
  test::ScratchDir dir("tritonc_fs");
  fs::create_directories(dir.path() / "a");
  fs::create_directories(dir.path() / "b");
  fs::create_directories(dir.path() / "c");
  makeFile(dir.path() / "b" / "nvcc", 0755);
  makeFile(dir.path() / "c" / "nvcc", 0755);
  ScopedPath path((dir.path() / "a").string() + ":" + (dir.path() / "b").string() + ":" +
                  (dir.path() / "c").string());
  EXPECT_EQ(findProgramOnPath("nvcc"), (dir.path() / "b" / "nvcc").string());
  EXPECT_EQ(findProgramOnPath("absent"), "");
}

TEST(FindProgramOnPath, SkipsFilesThatCannotRunAndDirectories) {
  test::ScratchDir dir("tritonc_fs");
  fs::create_directories(dir.path() / "plain");
  fs::create_directories(dir.path() / "dir" / "nvcc");  // a directory called nvcc
  fs::create_directories(dir.path() / "good");
  makeFile(dir.path() / "plain" / "nvcc", 0644);
  makeFile(dir.path() / "good" / "nvcc", 0755);
  ScopedPath path((dir.path() / "plain").string() + ":" + (dir.path() / "dir").string() + ":" +
                  (dir.path() / "good").string());
  // Without execute bits a file cannot run, for root too (access(X_OK)).
  EXPECT_EQ(findProgramOnPath("nvcc"), (dir.path() / "good" / "nvcc").string());
}

TEST(FindProgramOnPath, EmptyEntryIsTheCurrentDirectory) {
  test::ScratchDir dir("tritonc_fs");
  makeFile(dir.path() / "tool", 0755);
  fs::path old = fs::current_path();
  fs::current_path(dir.path());
  {
    ScopedPath path("/nonexistent-dir::/also-absent");
    EXPECT_EQ(findProgramOnPath("tool"), "./tool");
  }
  {
    ScopedPath path("/nonexistent-dir:");  // a trailing empty entry too
    EXPECT_EQ(findProgramOnPath("tool"), "./tool");
  }
  {
    ScopedPath path("/nonexistent-dir");
    EXPECT_EQ(findProgramOnPath("tool"), "");
  }
  fs::current_path(old);
}

TEST(FindProgramOnPath, UnsetPathOrEmptyNameFindsNothing) {
  EXPECT_EQ(findProgramOnPath(""), "");
  const char* old = std::getenv("PATH");
  std::string saved = old != nullptr ? old : "";
  ::unsetenv("PATH");
  EXPECT_EQ(findProgramOnPath("sh"), "");
  ::setenv("PATH", saved.c_str(), 1);
}

TEST(FollowSymlinks, ChainsRelativeTargetsAndDanglingLinks) {
  test::ScratchDir dir("tritonc_fs");
  fs::create_directories(dir.path() / "real");
  std::ofstream(dir.path() / "real" / "t.py") << "old\n";
  // a -> sub/b (relative, from a's directory) -> ../real/t.py (from b's)
  fs::create_directories(dir.path() / "sub");
  fs::create_symlink("../real/t.py", dir.path() / "sub" / "b");
  fs::create_symlink("sub/b", dir.path() / "a");
  Expected<std::string> target = followSymlinks((dir.path() / "a").string());
  ASSERT_TRUE(target);
  EXPECT_TRUE(fs::equivalent(*target, dir.path() / "real" / "t.py")) << *target;
  // A plain file is itself; a dangling link names the file a write creates.
  EXPECT_EQ(*followSymlinks((dir.path() / "real" / "t.py").string()),
            (dir.path() / "real" / "t.py").string());
  fs::create_symlink("real/new.py", dir.path() / "dangling");
  EXPECT_EQ(*followSymlinks((dir.path() / "dangling").string()),
            (dir.path() / "real/new.py").string());
  // Written through: the link stays, its target gets the data.
  std::string error;
  ASSERT_TRUE(writeFileAtomically((dir.path() / "a").string(), "new\n", &error)) << error;
  EXPECT_TRUE(fs::is_symlink(dir.path() / "a"));
  std::ifstream in(dir.path() / "real" / "t.py");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "new\n");
}

TEST(FollowSymlinks, StopsAtProcAndRefusesLoops) {
  test::ScratchDir dir("tritonc_fs");
  // /dev/stdout's kind of link: /proc/self/fd/1 names an open file, not a path.
  fs::create_symlink("/proc/self/fd/1", dir.path() / "stdout");
  EXPECT_EQ(*followSymlinks((dir.path() / "stdout").string()), "/proc/self/fd/1");
  fs::create_symlink("loop_b", dir.path() / "loop_a");
  fs::create_symlink("loop_a", dir.path() / "loop_b");
  EXPECT_FALSE(followSymlinks((dir.path() / "loop_a").string()));
  std::string error;
  EXPECT_FALSE(writeFileAtomically((dir.path() / "loop_a").string(), "x", &error));
  EXPECT_TRUE(fs::is_symlink(dir.path() / "loop_a"));
}

}  // namespace
}  // namespace tritonc

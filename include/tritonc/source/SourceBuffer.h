//===- SourceBuffer.h - a source file and its line table --------*- C++ -*-===//
//
// A `SourceBuffer` owns the bytes of one input and maps byte offsets to
// 1-based line and column numbers (columns count bytes, as clang does).
// Every later stage refers to source positions as 32-bit byte offsets.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tritonc/base/Expected.h"

namespace tritonc {

/// 1-based line and column of a byte offset.
struct LineCol {
  uint32_t line = 0;
  uint32_t column = 0;
};

/// The contents of one source file plus its line table.
class SourceBuffer {
 public:
  /// Largest input accepted: offsets must fit in 32 bits with room for sentinels.
  static constexpr size_t kMaxSize = size_t{1} << 31;

  /// The name of a buffer read from standard input, as clang names it.
  static constexpr std::string_view kStandardInputName = "<stdin>";

  /// Reads `path`; fails with a message when it cannot be read or is too large.
  static Expected<SourceBuffer> readFile(const std::string& path);
  /// Reads standard input to its end (the input `-`), named `<stdin>`.
  static Expected<SourceBuffer> readStandardInput();
  /// Wraps in-memory text (tests, fuzzers, benchmarks).
  static SourceBuffer fromString(std::string name, std::string text);

  const std::string& name() const { return name_; }
  std::string_view text() const { return text_; }

  /// Line and column of `offset` (offset == size() is the end of file).
  LineCol lineCol(uint32_t offset) const;
  /// The text of 1-based `line`, without its line terminator.
  std::string_view lineText(uint32_t line) const;
  uint32_t lineCount() const { return static_cast<uint32_t>(lineStarts_.size()); }

 private:
  SourceBuffer(std::string name, std::string text);
  /// Reads `fd` to its end and closes it; `path` names it in errors and the buffer.
  static Expected<SourceBuffer> readDescriptor(int fd, const std::string& path);
  std::string name_;
  std::string text_;
  std::vector<uint32_t> lineStarts_;
};

}  // namespace tritonc

//===- SourceBuffer.cpp ---------------------------------------------------===//
#include "tritonc/source/SourceBuffer.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tritonc {

SourceBuffer::SourceBuffer(std::string name, std::string text)
    : name_(std::move(name)), text_(std::move(text)) {
  // A lone CR (classic Mac OS) ends a line, as in Python's universal
  // newlines and in every editor; rewritten in place so offsets stay byte
  // offsets into the file. CRLF is left alone.
  for (size_t at = text_.find('\r'); at != std::string::npos; at = text_.find('\r', at + 1)) {
    if (at + 1 == text_.size() || text_[at + 1] != '\n') {
      text_[at] = '\n';
    }
  }
  // A UTF-8 byte order mark is not part of line 1: columns count from after it.
  bool bom = text_.size() >= 3 && text_.compare(0, 3, "\xEF\xBB\xBF") == 0;
  lineStarts_.push_back(bom ? 3 : 0);
  const char* begin = text_.data();
  const char* end = begin + text_.size();
  for (const char* p = begin; p < end;) {
    const void* nl = std::memchr(p, '\n', static_cast<size_t>(end - p));
    if (nl == nullptr) {
      break;
    }
    p = static_cast<const char*>(nl) + 1;
    lineStarts_.push_back(static_cast<uint32_t>(p - begin));
  }
}

SourceBuffer SourceBuffer::fromString(std::string name, std::string text) {
  return SourceBuffer(std::move(name), std::move(text));
}

Expected<SourceBuffer> SourceBuffer::readFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Error{std::string("cannot open '") + path + "': " + std::strerror(errno)};
  }
  return readDescriptor(fd, path);
}

Expected<SourceBuffer> SourceBuffer::readStandardInput() {
  int fd = ::dup(STDIN_FILENO);
  if (fd < 0) {
    return Error{std::string("cannot read standard input: ") + std::strerror(errno)};
  }
  return readDescriptor(fd, std::string(kStandardInputName));
}

Expected<SourceBuffer> SourceBuffer::readDescriptor(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    int err = S_ISDIR(st.st_mode) ? EISDIR : errno;
    ::close(fd);
    return Error{std::string("cannot read '") + path + "': " + std::strerror(err)};
  }
  std::string text;
  if (S_ISREG(st.st_mode)) {
    // Refused before reserving: a 200 GB (sparse) file was "out of memory".
    if (static_cast<uint64_t>(st.st_size) >= kMaxSize) {
      ::close(fd);
      return Error{std::string("cannot read '") + path + "': file is larger than 2 GiB"};
    }
    text.reserve(static_cast<size_t>(st.st_size));
  }
  char chunk[65536];
  while (true) {
    ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      int err = errno;
      ::close(fd);
      return Error{std::string("cannot read '") + path + "': " + std::strerror(err)};
    }
    if (n == 0) {
      break;
    }
    text.append(chunk, static_cast<size_t>(n));
    // No source holds a NUL byte: the lexer reports the first one (a binary file, or
    // UTF-16, told from the bytes before it) and reads nothing after it, so reading
    // stops here; `check /dev/zero` read 2 GiB before it said so.
    if (std::memchr(chunk, 0, static_cast<size_t>(n)) != nullptr) {
      break;
    }
    if (text.size() >= kMaxSize) {
      ::close(fd);
      return Error{std::string("cannot read '") + path + "': file is larger than 2 GiB"};
    }
  }
  ::close(fd);
  return SourceBuffer(path, std::move(text));
}

LineCol SourceBuffer::lineCol(uint32_t offset) const {
  offset = std::max(offset, lineStarts_[0]);  // inside a byte order mark: 1:1
  auto it = std::upper_bound(lineStarts_.begin(), lineStarts_.end(), offset);
  auto line = static_cast<uint32_t>(it - lineStarts_.begin());
  return LineCol{line, offset - lineStarts_[line - 1] + 1};
}

std::string_view SourceBuffer::lineText(uint32_t line) const {
  if (line == 0 || line > lineStarts_.size()) {
    return {};
  }
  size_t begin = lineStarts_[line - 1];
  size_t end = line < lineStarts_.size() ? lineStarts_[line] : text_.size();
  std::string_view text(text_.data() + begin, end - begin);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) {
    text.remove_suffix(1);
  }
  return text;
}

}  // namespace tritonc

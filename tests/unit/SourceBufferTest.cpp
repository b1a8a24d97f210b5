//===- SourceBufferTest.cpp - source files and line tables ----------------===//
#include "tritonc/source/SourceBuffer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "TestUtil.h"

namespace tritonc {
namespace {

namespace fs = std::filesystem;

void expectLineCol(const SourceBuffer& buffer, uint32_t offset, uint32_t line, uint32_t column) {
  LineCol lc = buffer.lineCol(offset);
  EXPECT_EQ(lc.line, line) << "offset " << offset;
  EXPECT_EQ(lc.column, column) << "offset " << offset;
}

TEST(SourceBufferTest, FromStringKeepsNameAndText) {
  SourceBuffer buffer = SourceBuffer::fromString("mem.tri", "let x = 1\n");
  EXPECT_EQ(buffer.name(), "mem.tri");
  EXPECT_EQ(buffer.text(), "let x = 1\n");
}

TEST(SourceBufferTest, LineColOfEveryOffset) {
  // Lines: "ab" (0..2), "" (3), "cde" (4..7)
  SourceBuffer buffer = SourceBuffer::fromString("t", "ab\n\ncde");
  expectLineCol(buffer, 0, 1, 1);
  expectLineCol(buffer, 1, 1, 2);
  expectLineCol(buffer, 2, 1, 3);  // the '\n' belongs to line 1
  expectLineCol(buffer, 3, 2, 1);
  expectLineCol(buffer, 4, 3, 1);
  expectLineCol(buffer, 6, 3, 3);
  EXPECT_EQ(buffer.lineCount(), 3u);
}

TEST(SourceBufferTest, LineColAtEndOfFile) {
  SourceBuffer noNewline = SourceBuffer::fromString("t", "ab\ncd");
  expectLineCol(noNewline, 5, 2, 3);  // offset == size()

  SourceBuffer withNewline = SourceBuffer::fromString("t", "ab\ncd\n");
  expectLineCol(withNewline, 6, 3, 1);  // after the last line break: a new, empty line
  EXPECT_EQ(withNewline.lineCount(), 3u);
  EXPECT_EQ(withNewline.lineText(3), "");
}

TEST(SourceBufferTest, ColumnsCountBytes) {
  // "é" is two bytes; columns count bytes, as clang does.
  SourceBuffer buffer = SourceBuffer::fromString("t", "\xC3\xA9x");
  expectLineCol(buffer, 2, 1, 3);
}

TEST(SourceBufferTest, LineTextWithoutTerminator) {
  SourceBuffer buffer = SourceBuffer::fromString("t", "first\nsecond\nthird");
  EXPECT_EQ(buffer.lineText(1), "first");
  EXPECT_EQ(buffer.lineText(2), "second");
  EXPECT_EQ(buffer.lineText(3), "third");
}

TEST(SourceBufferTest, LineTextStripsCrlf) {
  SourceBuffer buffer = SourceBuffer::fromString("t", "ab\r\ncd\r\n\r\nef");
  EXPECT_EQ(buffer.lineCount(), 4u);
  EXPECT_EQ(buffer.lineText(1), "ab");
  EXPECT_EQ(buffer.lineText(2), "cd");
  EXPECT_EQ(buffer.lineText(3), "");
  EXPECT_EQ(buffer.lineText(4), "ef");
  // The '\r' is a byte of its line; the next line starts after the '\n'.
  expectLineCol(buffer, 2, 1, 3);
  expectLineCol(buffer, 4, 2, 1);
}

TEST(SourceBufferTest, ALoneCrEndsALineAndKeepsOffsets) {
  SourceBuffer buffer = SourceBuffer::fromString("t", "ab\rcd\r\nef\r");
  EXPECT_EQ(buffer.text().size(), 10u);
  EXPECT_EQ(buffer.lineCount(), 4u);
  EXPECT_EQ(buffer.lineText(1), "ab");
  EXPECT_EQ(buffer.lineText(2), "cd");
  EXPECT_EQ(buffer.lineText(3), "ef");
  expectLineCol(buffer, 3, 2, 1);
  expectLineCol(buffer, 7, 3, 1);
  EXPECT_EQ(buffer.text(), "ab\ncd\r\nef\n");
}

TEST(SourceBufferTest, ColumnsOnLineOneCountFromAfterAByteOrderMark) {
  SourceBuffer buffer = SourceBuffer::fromString("t", "\xEF\xBB\xBFlet x\ny");
  EXPECT_EQ(buffer.lineText(1), "let x");
  expectLineCol(buffer, 3, 1, 1);
  expectLineCol(buffer, 7, 1, 5);
  expectLineCol(buffer, 9, 2, 1);
  expectLineCol(buffer, 0, 1, 1);
}

TEST(SourceBufferTest, LineTextOutOfRangeIsEmpty) {
  SourceBuffer buffer = SourceBuffer::fromString("t", "one\ntwo");
  EXPECT_EQ(buffer.lineText(0), "");
  EXPECT_EQ(buffer.lineText(3), "");
  EXPECT_EQ(buffer.lineText(1000), "");
}

TEST(SourceBufferTest, EmptyFile) {
  SourceBuffer buffer = SourceBuffer::fromString("empty.tri", "");
  EXPECT_EQ(buffer.text(), "");
  EXPECT_EQ(buffer.lineCount(), 1u);
  expectLineCol(buffer, 0, 1, 1);
  EXPECT_EQ(buffer.lineText(1), "");
}

TEST(SourceBufferTest, OnlyNewlines) {
  SourceBuffer buffer = SourceBuffer::fromString("t", "\n\n");
  EXPECT_EQ(buffer.lineCount(), 3u);
  expectLineCol(buffer, 0, 1, 1);
  expectLineCol(buffer, 1, 2, 1);
  expectLineCol(buffer, 2, 3, 1);
}

TEST(SourceBufferTest, ReadFileReturnsContentsAndPath) {
  test::ScratchDir dir("tritonc_sb");
  fs::path file = dir.path() / "model.tri";
  std::string contents = std::string("main {\n  print(1)\n}\n") + std::string(1, '\0') + "tail";
  {
    std::ofstream out(file, std::ios::binary);
    out << contents;
  }
  Expected<SourceBuffer> buffer = SourceBuffer::readFile(file.string());
  ASSERT_TRUE(buffer) << buffer.error().message;
  EXPECT_EQ(buffer->name(), file.string());
  EXPECT_EQ(buffer->text(), contents);
  EXPECT_EQ(buffer->text().size(), 25u);  // the NUL byte is kept
  EXPECT_EQ(buffer->lineText(2), "  print(1)");
}

TEST(SourceBufferTest, ReadEmptyFile) {
  test::ScratchDir dir("tritonc_sb");
  fs::path file = dir.path() / "empty.tri";
  { std::ofstream out(file); }
  Expected<SourceBuffer> buffer = SourceBuffer::readFile(file.string());
  ASSERT_TRUE(buffer) << buffer.error().message;
  EXPECT_EQ(buffer->text(), "");
  EXPECT_EQ(buffer->lineCount(), 1u);
}

TEST(SourceBufferTest, ReadMissingFileFails) {
  test::ScratchDir dir("tritonc_sb");
  std::string path = (dir.path() / "does_not_exist.tri").string();
  Expected<SourceBuffer> buffer = SourceBuffer::readFile(path);
  ASSERT_FALSE(buffer);
  const std::string& message = buffer.error().message;
  EXPECT_NE(message.find("'" + path + "'"), std::string::npos) << message;
  EXPECT_NE(message.find("No such file or directory"), std::string::npos) << message;
}

TEST(SourceBufferTest, ReadDirectoryFails) {
  test::ScratchDir dir("tritonc_sb");
  std::string path = dir.path().string();
  Expected<SourceBuffer> buffer = SourceBuffer::readFile(path);
  ASSERT_FALSE(buffer);
  const std::string& message = buffer.error().message;
  EXPECT_NE(message.find("'" + path + "'"), std::string::npos) << message;
  EXPECT_NE(message.find("Is a directory"), std::string::npos) << message;
}

}  // namespace
}  // namespace tritonc

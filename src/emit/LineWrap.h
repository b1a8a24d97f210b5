//===- LineWrap.h - Python statements within 100 columns --------*- C++ -*-===//
//
// The generated code keeps to 100 columns (TOOLCHAIN.md) the way black does:
// a line breaks only inside brackets, where Python joins the lines again, so
// a wrapped statement is the same tokens (a trailing comma where black adds
// one, parentheses around a whole operand, a string literal cut into
// adjacent literals, which Python joins). Only a single token longer than a
// line (a source name of 100 characters) or code indented too deep to leave
// room is written longer. docs/pytorch.md, "Formatting", describes the
// result.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

namespace tritonc {

/// The longest line the emitter writes, indentation included.
inline constexpr size_t kMaxColumns = 100;

inline bool isQuote(char c) { return c == '"' || c == '\''; }

/// The index of the quote closing the Python string literal that opens at
/// `text[at]` (escapes skipped); text.size() when it is not closed.
inline size_t stringEnd(std::string_view text, size_t at) {
  char quote = text[at];
  size_t i = at + 1;
  for (; i < text.size() && text[i] != quote; ++i) {
    if (text[i] == '\\') ++i;
  }
  return std::min(i, text.size());
}

/// Walks Python text `text[0, end)` outside its string literals: calls
/// visit(i, depth) for every other character, `depth` the brackets ((, [, {)
/// enclosing it; a bracket is at the depth of its pair (an opener before it
/// opens, a closer once it has closed). Stops where visit returns false;
/// returns the depth at the end.
template <typename Visit>
int walkBrackets(std::string_view text, size_t end, Visit visit) {
  int depth = 0;
  for (size_t i = 0; i < end; ++i) {
    char c = text[i];
    if (isQuote(c)) {
      i = stringEnd(text, i);
      continue;
    }
    bool closer = c == ')' || c == ']' || c == '}';
    if (closer) --depth;
    if (!visit(i, depth)) break;
    if (c == '(' || c == '[' || c == '{') ++depth;
  }
  return depth;
}

/// Appends `text`, one Python statement at indentation `depth` (4 spaces a
/// level), to `out` as one or more lines of at most kMaxColumns, each ending
/// in '\n'. `bracketed`: the text is a part of a statement inside its
/// brackets (an argument of a wrapped call), so it may also break between
/// any two tokens: before an operator, between adjacent string literals, and
/// inside a string literal (as adjacent literals).
void writeWrapped(std::string& out, int depth, std::string_view text, bool bracketed = false);

}  // namespace tritonc

//===- Text.h - escaping and number formatting for dumps and JSON -*- C++ -*-===//
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tritonc {

/// Appends `text` as a JSON string literal (quotes included).
void appendJsonString(std::string& out, std::string_view text);

/// `text` in double quotes with \n \t \r \\ \" escaped and other control
/// bytes as \xNN, so that a dump line stays one line.
std::string quoteForDump(std::string_view text);

/// The shortest text that reads back as the same double, always with a '.'
/// or an exponent so that it reads as a float ("1.0", "1e-05", "inf"; any NaN
/// is "nan").
std::string formatFloat(double value);

/// Columns a terminal gives code point `cp`: 2 for East Asian wide and
/// fullwidth characters and emoji, 0 for combining marks and variation
/// selectors, 1 otherwise (as wcwidth, without depending on the locale).
int displayWidth(char32_t cp);

/// True for a character that prints as nothing but changes what the text
/// means or how it is laid out: zero-width spaces and joiners, bidirectional
/// controls (Trojan Source), a byte order mark, a soft hyphen. Diagnostics
/// show these as `<U+200B>`.
bool isInvisibleCharacter(char32_t cp);

/// When the UTF-8 character at `text[i]` is invisible (isInvisibleCharacter),
/// appends its escape `\uXXXX` (as JSON and Python write it; every such
/// character is below U+10000) and returns its length in bytes, so that what
/// shows the text shows the character and is not driven by it (a C1 control
/// such as U+009B acts as ESC [; a bidi control reorders the line). Returns 0
/// and appends nothing for any other character.
size_t appendInvisibleEscape(std::string& out, std::string_view text, size_t i);
/// "RIGHT-TO-LEFT OVERRIDE" for a bidirectional control character (the
/// Trojan Source ones: embeddings, overrides, isolates, marks); "" otherwise.
std::string_view bidiControlName(char32_t cp);

/// What a Unicode space other than U+0020 is called ("non-breaking space",
/// U+00A0), or empty when `cp` is none: each looks like a blank in a message.
std::string_view unicodeSpaceName(char32_t cp);

/// A typographic character that word processors put in place of ASCII
/// punctuation (curly quotes, dashes, the minus and times signs): its name and
/// the ASCII it stands for; empty names for other characters.
struct AsciiLookalike {
  std::string_view name;
  std::string_view ascii;
};
AsciiLookalike asciiLookalike(char32_t cp);

/// `<U+XXXX>` for code point `cp`.
std::string codePointName(char32_t cp);

/// The UTF-8 character at the start of `text`: its length in bytes (1..4) and
/// code point, or length 0 when the bytes are not valid UTF-8 (truncated,
/// overlong, a surrogate, beyond U+10FFFF).
struct Utf8Char {
  size_t length = 0;
  char32_t codePoint = 0;
};
Utf8Char decodeUtf8(std::string_view text);

/// Appends the UTF-8 character that starts at `text[i]` (a byte >= 0x80) to
/// `out` and returns its length, or returns 0 (appending nothing) when the
/// bytes there are not valid UTF-8: the caller writes its own substitute.
size_t appendUtf8Char(std::string& out, std::string_view text, size_t i);

}  // namespace tritonc

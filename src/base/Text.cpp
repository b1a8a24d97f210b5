//===- Text.cpp -----------------------------------------------------------===//
#include "tritonc/base/Text.h"

#include <cmath>
#include <fmt/format.h>

namespace tritonc {

namespace {
constexpr char kHex[] = "0123456789abcdef";
}  // namespace

void appendJsonString(std::string& out, std::string_view text) {
  out += '"';
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += "\\u00";
          out += kHex[(c >> 4) & 15];
          out += kHex[c & 15];
        } else if (static_cast<unsigned char>(c) < 0x80) {
          out += c;
        } else if (size_t escaped = appendInvisibleEscape(out, text, i); escaped > 0) {
          i += escaped - 1;
        } else if (size_t n = appendUtf8Char(out, text, i); n > 0) {
          i += n - 1;
        } else {
          out += "\\ufffd";  // JSON is UTF-8: a byte that is not becomes U+FFFD
        }
    }
  }
  out += '"';
}

std::string quoteForDump(std::string_view text) {
  std::string out = "\"";
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    switch (c) {
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) {
          out += fmt::format("\\x{:02X}", static_cast<unsigned>(static_cast<unsigned char>(c)));
        } else if (static_cast<unsigned char>(c) < 0x80) {
          out += c;
        } else if (size_t escaped = appendInvisibleEscape(out, text, i); escaped > 0) {
          i += escaped - 1;
        } else if (size_t n = appendUtf8Char(out, text, i); n > 0) {
          i += n - 1;
        } else {
          // Not UTF-8 (a file name's byte): an escape, so that the Python
          // file stays UTF-8 and imports.
          out += fmt::format("\\x{:02X}", static_cast<unsigned>(static_cast<unsigned char>(c)));
        }
    }
  }
  out += '"';
  return out;
}

std::string formatFloat(double value) {
  if (std::isnan(value)) return "nan";  // as Python prints it: a NaN's sign means nothing
  std::string text = fmt::format("{}", value);
  if (text.find_first_of(".eEn") == std::string::npos) {
    text += ".0";
  }
  return text;
}

namespace {

struct CodePointRange {
  char32_t first;
  char32_t last;
};

bool inRanges(char32_t cp, const CodePointRange* begin, const CodePointRange* end) {
  for (const CodePointRange* r = begin; r != end; ++r) {
    if (cp < r->first) {
      return false;  // sorted
    }
    if (cp <= r->last) {
      return true;
    }
  }
  return false;
}

// East Asian Wide (W) and Fullwidth (F) blocks and the emoji presentation
// ranges of Unicode 15, merged where the gaps hold no assigned characters.
constexpr CodePointRange kWide[] = {
    {0x1100, 0x115F},   {0x231A, 0x231B},   {0x2329, 0x232A},   {0x23E9, 0x23EC},
    {0x23F0, 0x23F0},   {0x23F3, 0x23F3},   {0x25FD, 0x25FE},   {0x2614, 0x2615},
    {0x2648, 0x2653},   {0x267F, 0x267F},   {0x2693, 0x2693},   {0x26A1, 0x26A1},
    {0x26AA, 0x26AB},   {0x26BD, 0x26BE},   {0x26C4, 0x26C5},   {0x26CE, 0x26CE},
    {0x26D4, 0x26D4},   {0x26EA, 0x26EA},   {0x26F2, 0x26F3},   {0x26F5, 0x26F5},
    {0x26FA, 0x26FA},   {0x26FD, 0x26FD},   {0x2705, 0x2705},   {0x270A, 0x270B},
    {0x2728, 0x2728},   {0x274C, 0x274C},   {0x274E, 0x274E},   {0x2753, 0x2755},
    {0x2757, 0x2757},   {0x2795, 0x2797},   {0x27B0, 0x27B0},   {0x27BF, 0x27BF},
    {0x2B1B, 0x2B1C},   {0x2B50, 0x2B50},   {0x2B55, 0x2B55},   {0x2E80, 0x303E},
    {0x3041, 0x33FF},   {0x3400, 0x4DBF},   {0x4E00, 0x9FFF},   {0xA000, 0xA4CF},
    {0xA960, 0xA97F},   {0xAC00, 0xD7A3},   {0xF900, 0xFAFF},   {0xFE10, 0xFE19},
    {0xFE30, 0xFE6F},   {0xFF00, 0xFF60},   {0xFFE0, 0xFFE6},   {0x16FE0, 0x16FE4},
    {0x17000, 0x18CFF}, {0x1B000, 0x1B2FF}, {0x1F004, 0x1F004}, {0x1F0CF, 0x1F0CF},
    {0x1F18E, 0x1F18E}, {0x1F191, 0x1F19A}, {0x1F200, 0x1F251}, {0x1F300, 0x1F64F},
    {0x1F680, 0x1F6FF}, {0x1F7E0, 0x1F7EB}, {0x1F90C, 0x1F9FF}, {0x1FA70, 0x1FAFF},
    {0x20000, 0x2FFFD}, {0x30000, 0x3FFFD},
};

// Combining marks (Mn/Me) of the common scripts, zero-width joiners and
// variation selectors: they print on top of the character before them.
constexpr CodePointRange kZeroWidth[] = {
    {0x0300, 0x036F}, {0x0483, 0x0489}, {0x0591, 0x05BD}, {0x05BF, 0x05BF},
    {0x05C1, 0x05C2}, {0x05C4, 0x05C5}, {0x05C7, 0x05C7}, {0x0610, 0x061A},
    {0x064B, 0x065F}, {0x0670, 0x0670}, {0x06D6, 0x06DC}, {0x06DF, 0x06E4},
    {0x0E31, 0x0E31}, {0x0E34, 0x0E3A}, {0x0E47, 0x0E4E}, {0x1AB0, 0x1AFF},
    {0x1DC0, 0x1DFF}, {0x200B, 0x200F}, {0x202A, 0x202E}, {0x2060, 0x2064},
    {0x2066, 0x2069}, {0x20D0, 0x20FF}, {0x302A, 0x302F}, {0x3099, 0x309A},
    {0xFE00, 0xFE0F}, {0xFE20, 0xFE2F}, {0xFEFF, 0xFEFF}, {0xE0100, 0xE01EF},
};

constexpr CodePointRange kInvisible[] = {
    {0x0080, 0x009F}, {0x00AD, 0x00AD}, {0x180E, 0x180E}, {0x200B, 0x200F}, {0x2028, 0x202E},
    {0x2060, 0x2064}, {0x2066, 0x2069}, {0xFEFF, 0xFEFF},
};

}  // namespace

int displayWidth(char32_t cp) {
  if (cp < 0x300) {
    return 1;
  }
  if (inRanges(cp, std::begin(kZeroWidth), std::end(kZeroWidth))) {
    return 0;
  }
  return inRanges(cp, std::begin(kWide), std::end(kWide)) ? 2 : 1;
}

bool isInvisibleCharacter(char32_t cp) {
  return cp >= 0x80 && inRanges(cp, std::begin(kInvisible), std::end(kInvisible));
}

size_t appendInvisibleEscape(std::string& out, std::string_view text, size_t i) {
  Utf8Char ch = decodeUtf8(text.substr(i));
  if (ch.length == 0 || !isInvisibleCharacter(ch.codePoint)) return 0;
  out += fmt::format("\\u{:04x}", uint32_t{ch.codePoint});
  return ch.length;
}

std::string_view bidiControlName(char32_t cp) {
  switch (cp) {
    case 0x061C: return "ARABIC LETTER MARK";
    case 0x200E: return "LEFT-TO-RIGHT MARK";
    case 0x200F: return "RIGHT-TO-LEFT MARK";
    case 0x202A: return "LEFT-TO-RIGHT EMBEDDING";
    case 0x202B: return "RIGHT-TO-LEFT EMBEDDING";
    case 0x202C: return "POP DIRECTIONAL FORMATTING";
    case 0x202D: return "LEFT-TO-RIGHT OVERRIDE";
    case 0x202E: return "RIGHT-TO-LEFT OVERRIDE";
    case 0x2066: return "LEFT-TO-RIGHT ISOLATE";
    case 0x2067: return "RIGHT-TO-LEFT ISOLATE";
    case 0x2068: return "FIRST STRONG ISOLATE";
    case 0x2069: return "POP DIRECTIONAL ISOLATE";
    default: return "";
  }
}

std::string_view unicodeSpaceName(char32_t cp) {
  switch (cp) {
    case 0x00A0: return "non-breaking space";
    case 0x202F: return "narrow non-breaking space";
    case 0x3000: return "ideographic space";
    case 0x1680:
    case 0x205F: return "Unicode space";
    default: return cp >= 0x2000 && cp <= 0x200A ? "Unicode space" : "";
  }
}

AsciiLookalike asciiLookalike(char32_t cp) {
  switch (cp) {
    case 0x201C: return {"a left double quotation mark", "\""};
    case 0x201D: return {"a right double quotation mark", "\""};
    case 0x201E: return {"a low double quotation mark", "\""};
    case 0x2033: return {"a double prime", "\""};
    case 0x2018: return {"a left single quotation mark", "'"};
    case 0x2019: return {"a right single quotation mark", "'"};
    case 0x201A: return {"a low single quotation mark", "'"};
    case 0x2032: return {"a prime", "'"};
    case 0x2010:
    case 0x2011: return {"a hyphen", "-"};
    case 0x2012:
    case 0x2013: return {"an en dash", "-"};
    case 0x2014: return {"an em dash", "-"};
    case 0x2212: return {"a minus sign", "-"};
    case 0x00D7: return {"a multiplication sign", "*"};
    case 0x00F7: return {"a division sign", "/"};
    case 0x2026: return {"an ellipsis", "..."};
    case 0x2192: return {"a rightwards arrow", "->"};
    case 0x2264: return {"a less-than or equal sign", "<="};
    case 0x2265: return {"a greater-than or equal sign", ">="};
    case 0x2260: return {"a not-equal sign", "!="};
    case 0x00B7: return {"a middle dot", "*"};
    case 0x22C5: return {"a dot operator", "*"};
    case 0x2217: return {"an asterisk operator", "*"};
    case 0x2215: return {"a division slash", "/"};
    // Fullwidth punctuation (a CJK input method).
    case 0xFF02: return {"a fullwidth quotation mark", "\""};
    case 0xFF07: return {"a fullwidth apostrophe", "'"};
    case 0xFF08: return {"a fullwidth left parenthesis", "("};
    case 0xFF09: return {"a fullwidth right parenthesis", ")"};
    case 0xFF0A: return {"a fullwidth asterisk", "*"};
    case 0xFF0B: return {"a fullwidth plus sign", "+"};
    case 0xFF0C: return {"a fullwidth comma", ","};
    case 0xFF0D: return {"a fullwidth hyphen-minus", "-"};
    case 0xFF0E: return {"a fullwidth full stop", "."};
    case 0xFF0F: return {"a fullwidth solidus", "/"};
    case 0xFF1A: return {"a fullwidth colon", ":"};
    case 0xFF1B: return {"a fullwidth semicolon", ";"};
    case 0xFF1C: return {"a fullwidth less-than sign", "<"};
    case 0xFF1D: return {"a fullwidth equals sign", "="};
    case 0xFF1E: return {"a fullwidth greater-than sign", ">"};
    case 0xFF3B: return {"a fullwidth left square bracket", "["};
    case 0xFF3D: return {"a fullwidth right square bracket", "]"};
    case 0xFF5B: return {"a fullwidth left curly bracket", "{"};
    case 0xFF5D: return {"a fullwidth right curly bracket", "}"};
    case 0x3001: return {"an ideographic comma", ","};
    default: return {};
  }
}

std::string codePointName(char32_t cp) {
  return fmt::format("<U+{:04X}>", static_cast<uint32_t>(cp));
}

size_t appendUtf8Char(std::string& out, std::string_view text, size_t i) {
  size_t length = decodeUtf8(text.substr(i)).length;
  out.append(text.substr(i, length));
  return length;
}

Utf8Char decodeUtf8(std::string_view text) {
  if (text.empty()) {
    return {};
  }
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  unsigned char c = byte(0);
  if (c < 0x80) {
    return {1, c};
  }
  size_t length;
  char32_t min;
  char32_t cp;
  if ((c & 0xE0) == 0xC0) {
    length = 2, min = 0x80, cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    length = 3, min = 0x800, cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    length = 4, min = 0x10000, cp = c & 0x07;
  } else {
    return {};
  }
  if (text.size() < length) {
    return {};
  }
  for (size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xC0) != 0x80) {
      return {};
    }
    cp = (cp << 6) | (byte(i) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    return {};
  }
  return {length, cp};
}

}  // namespace tritonc

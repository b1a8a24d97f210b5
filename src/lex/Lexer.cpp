//===- Lexer.cpp - Triton DSL lexer ---------------------------------------===//
//
// A single forward pass over the bytes of a file. Whitespace and comments are
// skipped and only remembered as the "newline before" flag of the next token.
// Every error is reported once, where it happens, and leaves a token the
// parser can live with: a literal with a best-effort value, or an Error token
// that tells the parser the mistake has already been reported.
//
//===----------------------------------------------------------------------===//
#include <array>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "tritonc/base/Memory.h"
#include "tritonc/base/Text.h"
#include "tritonc/lex/Lex.h"

namespace tritonc {

namespace {

// A literal as a message quotes it: a long one by its ends and its length
// (the snippet under the message shows it anyway; 100,000 digits made a
// 100 KB message line).
std::string elidedLiteral(std::string_view text) {
  if (text.size() <= 40) return std::string(text);
  return fmt::format("{}...{} ({} characters)", text.substr(0, 24), text.substr(text.size() - 8),
                     text.size());
}

enum CharClass : uint8_t {
  kIdentStart = 1,
  kIdentContinue = 2,
  kDecimal = 4,
  kHex = 8,
};

constexpr std::array<uint8_t, 256> makeCharClasses() {
  std::array<uint8_t, 256> table{};
  for (int c = 'a'; c <= 'z'; ++c) {
    table[c] = kIdentStart | kIdentContinue;
  }
  for (int c = 'A'; c <= 'Z'; ++c) {
    table[c] = kIdentStart | kIdentContinue;
  }
  table['_'] = kIdentStart | kIdentContinue;
  for (int c = '0'; c <= '9'; ++c) {
    table[c] = kIdentContinue | kDecimal | kHex;
  }
  for (int c = 'a'; c <= 'f'; ++c) {
    table[c] |= kHex;
  }
  for (int c = 'A'; c <= 'F'; ++c) {
    table[c] |= kHex;
  }
  return table;
}
constexpr std::array<uint8_t, 256> kCharClasses = makeCharClasses();

inline bool isIdentStart(unsigned char c) { return (kCharClasses[c] & kIdentStart) != 0; }
inline bool isIdentContinue(unsigned char c) { return (kCharClasses[c] & kIdentContinue) != 0; }
inline bool isDecimal(unsigned char c) { return (kCharClasses[c] & kDecimal) != 0; }

// Length of the valid UTF-8 sequence at p (1..4), or 0 if invalid.
size_t utf8SequenceLength(const unsigned char* p, const unsigned char* end) {
  return decodeUtf8(std::string_view(reinterpret_cast<const char*>(p),
                                     static_cast<size_t>(end - p)))
      .length;
}

struct KeywordEntry {
  std::string_view spelling;
  TokenKind kind;
};
constexpr KeywordEntry kKeywords[] = {
#define KEYWORD(Name, Spelling) {Spelling, TokenKind::Name},
#include "tritonc/lex/TokenKinds.def"
};

// Keywords are 2..8 bytes of lower-case letters; a switch on the first byte
// rejects almost every identifier before any comparison.
inline TokenKind classifyIdentifier(std::string_view text) {
  if (text.size() < 2 || text.size() > 8 || text[0] < 'b' || text[0] > 'w') {
    return TokenKind::Identifier;
  }
  switch (text[0]) {
    case 'b': return text == "break" ? TokenKind::KwBreak : TokenKind::Identifier;
    case 'c': return text == "continue" ? TokenKind::KwContinue : TokenKind::Identifier;
    case 'e': return text == "else" ? TokenKind::KwElse : TokenKind::Identifier;
    case 'f':
      if (text == "fn") return TokenKind::KwFn;
      if (text == "for") return TokenKind::KwFor;
      if (text == "false") return TokenKind::KwFalse;
      return TokenKind::Identifier;
    case 'i':
      if (text == "if") return TokenKind::KwIf;
      if (text == "in") return TokenKind::KwIn;
      if (text == "import") return TokenKind::KwImport;
      return TokenKind::Identifier;
    case 'l':
      if (text == "let") return TokenKind::KwLet;
      if (text == "layer") return TokenKind::KwLayer;
      return TokenKind::Identifier;
    case 'm': return text == "main" ? TokenKind::KwMain : TokenKind::Identifier;
    case 'r': return text == "return" ? TokenKind::KwReturn : TokenKind::Identifier;
    case 't': return text == "true" ? TokenKind::KwTrue : TokenKind::Identifier;
    case 'w': return text == "while" ? TokenKind::KwWhile : TokenKind::Identifier;
    default: return TokenKind::Identifier;
  }
}

}  // namespace

/// The lexer proper; a class only to share state between its helpers.
class Lexer {
 public:
  Lexer(const SourceBuffer& source, Interner& interner, DiagnosticEngine& diags)
      : buffer_(source, interner),
        diags_(diags),
        begin_(reinterpret_cast<const unsigned char*>(source.text().data())),
        end_(begin_ + source.text().size()),
        p_(begin_) {}

  TokenizedBuffer run();

 private:
  uint32_t offsetOf(const unsigned char* p) const { return static_cast<uint32_t>(p - begin_); }
  void addToken(TokenKind kind, const unsigned char* start, uint32_t payload = 0) {
    buffer_.tokens_.push_back(TokenizedBuffer::Token{
        kind, static_cast<uint8_t>(newlineBefore_ ? TokenizedBuffer::kNewlineBefore : 0), 0, offsetOf(start),
        static_cast<uint32_t>(p_ - start), payload});
    newlineBefore_ = false;
  }
  template <typename... Args>
  DiagnosticBuilder error(Diag kind, const unsigned char* at, size_t length, Args&&... args) {
    buffer_.hasErrors_ = true;
    uint32_t offset = offsetOf(at);
    // (Errors only: a warning, a bidi control in a comment, is no mistake
    // whose consequences the parser should keep quiet about.)
    if (diagSeverity(kind) == Severity::Error &&
        (buffer_.errorOffsets_.empty() || buffer_.errorOffsets_.back() <= offset)) {
      buffer_.errorOffsets_.push_back(offset);
    }
    return diags_.report(kind, buffer_.source(),
                         SourceRange{offset, offset + static_cast<uint32_t>(length)},
                         std::forward<Args>(args)...);
  }

  void skipLineComment();
  void checkCommentUtf8(const unsigned char* from, const unsigned char* to);
  void skipBlockComment();
  void lexIdentifier();
  void lexNumber();
  void lexString();
  bool warnBidi(const unsigned char* at, size_t len, std::string_view where);
  std::string_view wideEncoding() const;
  void lexLookalike(const unsigned char* start, size_t length, char32_t cp, AsciiLookalike look);
  void lexUnexpected();
  void lexBitwiseOperator();
  bool warnDigitGroups(const unsigned char* start, std::string_view text);
  std::string_view operandAfter(const unsigned char* p) const;
  std::string_view operandBefore() const;
  // Length of the run of stray bytes at p (characters that start no token).
  size_t strayRunLength(const unsigned char* p) const;
  bool restOfLineIsBlank(const unsigned char* p) const;
  // Scans digits of `cls` with '_' separators from p_; returns false on a misplaced '_'.
  const unsigned char* scanDigits(uint8_t cls, bool* badSeparator);

  TokenizedBuffer buffer_;
  DiagnosticEngine& diags_;
  const unsigned char* begin_;
  const unsigned char* end_;
  const unsigned char* p_;
  bool newlineBefore_ = false;
};

TokenizedBuffer Lexer::run() {
  // Typical source has 3.5-4 bytes per token; reserving for 3 avoids the copy
  // of a reallocation in nearly every file.
  buffer_.tokens_.reserve(static_cast<size_t>(end_ - begin_) / 3 + 16);
  adviseHugePages(buffer_.tokens_.data(),
                  buffer_.tokens_.capacity() * sizeof(TokenizedBuffer::Token));
  // A UTF-8 byte order mark is not part of the program.
  if (end_ - p_ >= 3 && p_[0] == 0xEF && p_[1] == 0xBB && p_[2] == 0xBF) {
    p_ += 3;
  }
  // UTF-16 and UTF-32 (PowerShell 5's `>`, Notepad's "Unicode"): text, but
  // not UTF-8. Told by a byte order mark, or by ASCII text's every other byte
  // being zero; one error that says what to do instead of "not a text file".
  if (std::string_view encoding = wideEncoding(); !encoding.empty()) {
    error(Diag::Utf16Source, p_, 1, encoding);
    p_ = end_;
  }
  // No text holds a NUL byte: this is a binary file (a checkpoint or a .pyc
  // given by mistake). One error says so, instead of one per stray byte and
  // line of escapes; the file then reads as empty.
  if (const void* nul = std::memchr(p_, 0, static_cast<size_t>(end_ - p_))) {
    const auto* at = static_cast<const unsigned char*>(nul);
    error(Diag::BinarySource, at, 1, offsetOf(at));
    p_ = end_;
  }
  while (p_ < end_) {
    const unsigned char* start = p_;
    unsigned char c = *p_;
    switch (c) {
      case ' ': case '\t': case '\r': case '\f': case '\v':
        ++p_;
        while (p_ < end_ && (*p_ == ' ' || *p_ == '\t')) {  // indentation
          ++p_;
        }
        continue;
      case '\n':
        newlineBefore_ = true;
        ++p_;
        continue;
      case '#':
        skipLineComment();
        continue;
      case '"': case '\'':
        lexString();
        continue;
      case '0': case '1': case '2': case '3': case '4':
      case '5': case '6': case '7': case '8': case '9':
        lexNumber();
        continue;
      case '.':
        if (p_ + 1 < end_ && isDecimal(p_[1])) {
          lexNumber();
        } else if (p_ + 1 < end_ && p_[1] == '.') {
          // `0...10` (Swift's, Ruby's range): reported, and read as `0..10`
          // rather than `0 .. .10`, so the rest checks as the range meant.
          // (`...` before anything else is Python's Ellipsis, which the
          // parser names.)
          if (p_ + 3 < end_ && p_[2] == '.' && (isDecimal(p_[3]) || isIdentStart(p_[3]))) {
            error(Diag::ThreeDotRange, p_, 3);
            p_ += 3;
          } else {
            p_ += 2;
          }
          addToken(TokenKind::DotDot, start);
        } else {
          ++p_;
          addToken(TokenKind::Dot, start);
        }
        continue;
      default:
        break;
    }
    if (isIdentStart(c)) {
      lexIdentifier();
      continue;
    }
    // Punctuation: longest match.
    unsigned char next = p_ + 1 < end_ ? p_[1] : 0;
    TokenKind kind;
    size_t len = 1;
    switch (c) {
      case '+': kind = next == '=' ? (len = 2, TokenKind::PlusEqual) : TokenKind::Plus; break;
      case '-':
        if (next == '=') {
          kind = TokenKind::MinusEqual, len = 2;
        } else if (next == '>') {
          kind = TokenKind::Arrow, len = 2;
        } else {
          kind = TokenKind::Minus;
        }
        break;
      case '*':
        if (next == '/' && !(p_ + 2 < end_ && p_[2] == '*')) {
          // `*/` outside a comment (a `/*` left out, or a comment's first
          // line that was deleted): no expression continues with `/`. (`*/*`
          // is a product whose right operand starts with a comment.)
          // An error token: the parser says nothing more of the statement.
          error(Diag::StrayCommentEnd, p_, 2);
          p_ += 2;
          addToken(TokenKind::Error, start);
          continue;
        }
        if (next == '*') {
          kind = TokenKind::StarStar, len = 2;
        } else if (next == '=') {
          kind = TokenKind::StarEqual, len = 2;
        } else {
          kind = TokenKind::Star;
        }
        break;
      case '/':
        if (next == '*') {
          skipBlockComment();
          continue;
        }
        if (next == '/') {
          // Habits from other languages. At the start of a line, a C-style
          // comment: reported and skipped as one. Elsewhere Python's floor
          // division: reported and read as '/', which floors integers.
          const unsigned char* q = p_;
          while (q > begin_ && (q[-1] == ' ' || q[-1] == '\t')) --q;
          if (q == begin_ || q[-1] == '\n' || q[-1] == '\r') {
            error(Diag::SlashSlashComment, p_, 2);
            skipLineComment();
            continue;
          }
          error(Diag::FloorDivisionOperator, p_, 2);
          kind = TokenKind::Slash, len = 2;
          break;
        }
        kind = next == '=' ? (len = 2, TokenKind::SlashEqual) : TokenKind::Slash;
        break;
      case '%': kind = TokenKind::Percent; break;
      case '@': kind = next == '=' ? (len = 2, TokenKind::AtEqual) : TokenKind::At; break;
      case '=': kind = next == '=' ? (len = 2, TokenKind::EqualEqual) : TokenKind::Equal; break;
      case '!': kind = next == '=' ? (len = 2, TokenKind::BangEqual) : TokenKind::Bang; break;
      case '<': kind = next == '=' ? (len = 2, TokenKind::LessEqual) : TokenKind::Less; break;
      case '>':
        kind = next == '=' ? (len = 2, TokenKind::GreaterEqual) : TokenKind::Greater;
        break;
      case '&':
      case '|':
        if (next == c) {
          kind = c == '&' ? TokenKind::AmpAmp : TokenKind::PipePipe;
          len = 2;
          break;
        }
        lexUnexpected();
        continue;
      case '(': kind = TokenKind::LParen; break;
      case ')': kind = TokenKind::RParen; break;
      case '[': kind = TokenKind::LBracket; break;
      case ']': kind = TokenKind::RBracket; break;
      case '{': kind = TokenKind::LBrace; break;
      case '}': kind = TokenKind::RBrace; break;
      case ',': kind = TokenKind::Comma; break;
      case ':': kind = TokenKind::Colon; break;
      case ';': kind = TokenKind::Semicolon; break;
      case '?': kind = TokenKind::Question; break;
      default:
        lexUnexpected();
        continue;
    }
    p_ += len;
    addToken(kind, start);
  }
  addToken(TokenKind::EndOfFile, p_);
  return std::move(buffer_);
}

// "UTF-16 (little-endian)" etc. when the file is in a wide encoding.
std::string_view Lexer::wideEncoding() const {
  size_t n = static_cast<size_t>(end_ - p_);
  const unsigned char* b = p_;
  if (n >= 4 && b[0] == 0xFF && b[1] == 0xFE && b[2] == 0 && b[3] == 0) return "UTF-32 (little-endian)";
  if (n >= 4 && b[0] == 0 && b[1] == 0 && b[2] == 0xFE && b[3] == 0xFF) return "UTF-32 (big-endian)";
  if (n >= 2 && b[0] == 0xFF && b[1] == 0xFE) return "UTF-16 (little-endian)";
  if (n >= 2 && b[0] == 0xFE && b[1] == 0xFF) return "UTF-16 (big-endian)";
  // Without a byte order mark: ASCII characters with a zero byte beside each.
  size_t pairs = std::min<size_t>(n / 2, 32);
  if (pairs < 2) return "";
  bool le = true, be = true;
  for (size_t i = 0; i < pairs; ++i) {
    unsigned char lo = b[2 * i], hi = b[2 * i + 1];
    le = le && lo != 0 && lo < 0x80 && hi == 0;
    be = be && hi != 0 && hi < 0x80 && lo == 0;
  }
  return le ? "UTF-16 (little-endian)" : be ? "UTF-16 (big-endian)" : "";
}

void Lexer::skipLineComment() {
  const void* nl = std::memchr(p_, '\n', static_cast<size_t>(end_ - p_));
  const unsigned char* stop = nl != nullptr ? static_cast<const unsigned char*>(nl) : end_;
  checkCommentUtf8(p_, stop);
  p_ = stop;
}

// Source is UTF-8 (LANGUAGE.md), comments included: the first invalid byte
// of a comment is reported (one error for a comment of binary garbage).
void Lexer::checkCommentUtf8(const unsigned char* from, const unsigned char* to) {
  bool warnedBidi = false;
  for (const unsigned char* q = from; q < to;) {
    if (*q < 0x80) {
      ++q;
      continue;
    }
    size_t len = utf8SequenceLength(q, to);
    if (len == 0) {
      error(Diag::InvalidUtf8, q, 1, static_cast<unsigned>(*q));
      return;
    }
    if (!warnedBidi) warnedBidi = warnBidi(q, len, "comment");
    q += len;
  }
}

// Trojan Source (CVE-2021-42574): a text direction control in a comment or a
// string displays the line in another order than it compiles. Warned once per
// comment or literal, as gcc's -Wbidi-chars and rustc's lints do. Returns
// whether it warned.
bool Lexer::warnBidi(const unsigned char* at, size_t len, std::string_view where) {
  Utf8Char ch = decodeUtf8(std::string_view(reinterpret_cast<const char*>(at), len));
  std::string_view name = bidiControlName(ch.codePoint);
  if (name.empty()) return false;
  error(Diag::BidiControl, at, len, codePointName(ch.codePoint), name, where)
      .note(Note::RemoveBidiControl);
  return true;
}

void Lexer::skipBlockComment() {
  const unsigned char* start = p_;
  p_ += 2;
  bool warnedNested = false;
  while (p_ < end_) {
    unsigned char c = *p_;
    if (c == '*' && p_ + 1 < end_ && p_[1] == '/') {
      checkCommentUtf8(start + 2, p_);
      p_ += 2;
      return;
    }
    if (c == '\n') {
      newlineBefore_ = true;
    } else if (c == '/' && p_ + 1 < end_ && p_[1] == '*' && !warnedNested) {
      warnedNested = true;  // once per comment
      error(Diag::NestedBlockComment, p_, 2)
          .note(Note::CommentStartedHere, buffer_.source(),
                SourceRange{offsetOf(start), offsetOf(start) + 2});
    }
    ++p_;
  }
  checkCommentUtf8(start + 2, p_);
  error(Diag::UnterminatedBlockComment, start, 2);
  buffer_.endsInUnterminatedComment_ = true;
}

void Lexer::lexIdentifier() {
  const unsigned char* start = p_;
  ++p_;
  while (p_ < end_ && isIdentContinue(*p_)) {
    ++p_;
  }
  std::string_view text(reinterpret_cast<const char*>(start), static_cast<size_t>(p_ - start));
  TokenKind kind = classifyIdentifier(text);
  if (kind == TokenKind::Identifier) {
    addToken(kind, start, buffer_.interner_->intern(text).index);
  } else {
    addToken(kind, start);
  }
}

const unsigned char* Lexer::scanDigits(uint8_t cls, bool* badSeparator) {
  // Accepts [digit] { ['_'] digit }; a '_' not between two digits is reported.
  bool lastWasDigit = false;
  const unsigned char* firstBad = nullptr;
  while (p_ < end_) {
    unsigned char c = *p_;
    if ((kCharClasses[c] & cls) != 0) {
      lastWasDigit = true;
    } else if (c == '_') {
      bool nextIsDigit = p_ + 1 < end_ && (kCharClasses[p_[1]] & cls) != 0;
      if ((!lastWasDigit || !nextIsDigit) && firstBad == nullptr) {
        firstBad = p_;
      }
      lastWasDigit = false;
    } else {
      break;
    }
    ++p_;
  }
  *badSeparator = firstBad != nullptr;
  return firstBad;
}

void Lexer::lexNumber() {
  const unsigned char* start = p_;
  bool badSeparator = false;
  const unsigned char* badAt = nullptr;
  auto noteSeparator = [&](const unsigned char* at) {
    if (at != nullptr && badAt == nullptr) {
      badAt = at;
    }
  };

  // Radix-prefixed integers.
  if (*p_ == '0' && p_ + 1 < end_) {
    unsigned char prefix = static_cast<unsigned char>(p_[1] | 0x20);
    int radix = prefix == 'x' ? 16 : prefix == 'b' ? 2 : prefix == 'o' ? 8 : 0;
    if (radix != 0) {
      const char* radixName = radix == 16 ? "hexadecimal" : radix == 2 ? "binary" : "octal";
      p_ += 2;
      const unsigned char* digitsStart = p_;
      noteSeparator(scanDigits(radix == 16 ? kHex : kDecimal, &badSeparator));
      // C's and Python's float.fromhex spelling (`0x1.8p3`): no literal of
      // the language; the decimal value to write instead, as one error.
      auto isHexDigit = [](unsigned char c) {
        return isDecimal(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
      };
      bool hasDigits = p_ > digitsStart;
      bool hexFloat =
          radix == 16 && p_ + 1 < end_ &&
          ((*p_ == '.' && (isHexDigit(p_[1]) || (hasDigits && (p_[1] | 0x20) == 'p'))) ||
           (hasDigits && (*p_ | 0x20) == 'p' && (isDecimal(p_[1]) || p_[1] == '+' || p_[1] == '-')));
      if (hexFloat) {
        if (*p_ == '.') {
          ++p_;
          while (p_ < end_ && (isHexDigit(*p_) || *p_ == '_')) ++p_;
        }
        if (p_ < end_ && (*p_ | 0x20) == 'p') {
          ++p_;
          if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
          while (p_ < end_ && isDecimal(*p_)) ++p_;
        }
        while (p_ < end_ && isIdentContinue(*p_)) ++p_;
        std::string text(reinterpret_cast<const char*>(start), static_cast<size_t>(p_ - start));
        std::string digits;
        for (char c : text) {
          if (c != '_') digits += c;
        }
        char* parsed = nullptr;
        double value = std::strtod(digits.c_str(), &parsed);
        std::string decimal = "its decimal value";
        if (parsed == digits.c_str() + digits.size() && std::isfinite(value)) {
          decimal = "'" + formatFloat(value) + "'";
        }
        error(Diag::HexFloatLiteral, start, text.size(), text, decimal);
        addToken(TokenKind::Error, start);
        return;
      }
      bool ok = true;
      if (p_ == digitsStart) {
        error(Diag::MissingDigits, start, 2, radixName,
              std::string_view(reinterpret_cast<const char*>(start), 2));
        ok = false;
      }
      // Decimal digits beyond the radix, or letters glued to the literal.
      const unsigned char* invalid = nullptr;
      for (const unsigned char* q = digitsStart; q < p_; ++q) {
        if (*q != '_' && (radix == 2 ? *q > '1' : radix == 8 ? *q > '7' : false)) {
          invalid = q;
          break;
        }
      }
      if (invalid == nullptr && p_ < end_ && isIdentContinue(*p_)) {
        invalid = p_;
      }
      while (p_ < end_ && isIdentContinue(*p_)) {
        ++p_;
      }
      if (ok && invalid != nullptr) {
        error(Diag::InvalidDigit, invalid, 1, std::string(1, static_cast<char>(*invalid)),
              radixName);
        ok = false;
      }
      if (ok && badAt != nullptr) {
        error(Diag::MisplacedDigitSeparator, badAt, 1);
        ok = false;
      }
      uint64_t value = 0;
      if (ok) {
        for (const unsigned char* q = digitsStart; q < p_; ++q) {
          if (*q == '_') {
            continue;
          }
          unsigned digit = isDecimal(*q) ? *q - '0' : (*q | 0x20) - 'a' + 10;
          if (value > (UINT64_MAX - digit) / static_cast<unsigned>(radix)) {
            error(Diag::IntegerTooLarge, start, static_cast<size_t>(p_ - start),
                  elidedLiteral(std::string_view(reinterpret_cast<const char*>(start),
                                                 static_cast<size_t>(p_ - start))));
            value = 0;
            break;
          }
          value = value * static_cast<unsigned>(radix) + digit;
        }
      }
      buffer_.ints_.push_back(value);
      addToken(TokenKind::IntLiteral, start, static_cast<uint32_t>(buffer_.ints_.size() - 1));
      return;
    }
  }

  // Decimal integer or float: [digits] ['.' [digits]] [exponent].
  bool isFloat = false;
  if (*p_ != '.') {
    noteSeparator(scanDigits(kDecimal, &badSeparator));
  }
  if (p_ < end_ && *p_ == '.') {
    unsigned char after = p_ + 1 < end_ ? p_[1] : 0;
    bool exponentFollows =
        (after == 'e' || after == 'E') && p_ + 2 < end_ &&
        (isDecimal(p_[2]) || ((p_[2] == '+' || p_[2] == '-') && p_ + 3 < end_ && isDecimal(p_[3])));
    // `1..n` is a range and `x.T`-like member access stays member access.
    if (after != '.' && (!isIdentStart(after) || exponentFollows)) {
      isFloat = true;
      ++p_;
      if (p_ < end_ && isDecimal(*p_)) {
        noteSeparator(scanDigits(kDecimal, &badSeparator));
      }
    }
  }
  bool ok = true;
  if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
    const unsigned char* exponent = p_;
    ++p_;
    if (p_ < end_ && (*p_ == '+' || *p_ == '-')) {
      ++p_;
    }
    if (p_ < end_ && isDecimal(*p_)) {
      noteSeparator(scanDigits(kDecimal, &badSeparator));
      isFloat = true;
    } else {
      error(Diag::MissingExponentDigits, exponent, static_cast<size_t>(p_ - exponent));
      ok = false;
      isFloat = true;
    }
  }
  if (p_ < end_ && isIdentContinue(*p_)) {
    const unsigned char* invalid = p_;
    while (p_ < end_ && isIdentContinue(*p_)) {
      ++p_;
    }
    if (ok) {
      auto builder = error(Diag::InvalidDigit, invalid, 1,
                           std::string(1, static_cast<char>(*invalid)),
                           isFloat ? "floating-point" : "decimal");
      if (!isFloat && !isDecimal(*invalid)) {
        // `3x`, `2conv`: a name that starts with a digit. An error token,
        // which the parser skips silently (`let 3x = 1` is one error).
        builder.note(Note::NameStartsWithDigit);
        addToken(TokenKind::Error, start);
        return;
      }
      ok = false;
    }
  }
  if (ok && badAt != nullptr) {
    error(Diag::MisplacedDigitSeparator, badAt, 1);
    ok = false;
  }
  std::string_view text(reinterpret_cast<const char*>(start), static_cast<size_t>(p_ - start));
  if (isFloat) {
    double value = 0.0;
    if (ok) {
      std::string digits;
      digits.reserve(text.size());
      for (char c : text) {
        if (c != '_') {
          digits += c;
        }
      }
      errno = 0;
      value = std::strtod(digits.c_str(), nullptr);
      if (errno == ERANGE && std::isinf(value)) {
        error(Diag::FloatOutOfRange, start, text.size(), text);
        value = 0.0;
      }
    }
    buffer_.floats_.push_back(value);
    addToken(TokenKind::FloatLiteral, start, static_cast<uint32_t>(buffer_.floats_.size() - 1));
    return;
  }
  uint64_t value = 0;
  if (ok) {
    for (char c : text) {
      if (c == '_') {
        continue;
      }
      auto digit = static_cast<unsigned>(c - '0');
      if (value > (UINT64_MAX - digit) / 10) {
        error(Diag::IntegerTooLarge, start, text.size(), elidedLiteral(text));
        value = 0;
        break;
      }
      value = value * 10 + digit;
    }
  }
  bool grouped = ok && warnDigitGroups(start, text);
  // `017` is 17 here (as in many languages), 15 in C (octal); Python rejects
  // it. Said where the two readings differ.
  if (ok && !grouped && text.size() > 1 && text[0] == '0' && value >= 8 &&
      text.find_first_of("89") == std::string_view::npos) {
    std::string digits;
    for (char c : text) {
      if (c != '_') digits += c;
    }
    uint64_t octal = 0;
    for (char c : digits) octal = octal * 8 + static_cast<unsigned>(c - '0');
    size_t first = digits.find_first_not_of('0');
    uint32_t offset = offsetOf(start);
    diags_.report(Diag::LeadingZeroDecimal, buffer_.source(),
                  SourceRange{offset, offset + static_cast<uint32_t>(text.size())}, text, value,
                  octal, digits.substr(first == std::string::npos ? digits.size() - 1 : first));
  }
  buffer_.ints_.push_back(value);
  addToken(TokenKind::IntLiteral, start, static_cast<uint32_t>(buffer_.ints_.size() - 1));
}

// `1,000` or `2,048` (the literal `text` at `start` being the `000`): a number written
// with a thousands separator, which reads as two numbers (the second with a leading
// zero). Warned about as such, with the groups that follow (`1,000,000`); true then, so
// the lexer does not also ask the octal question of the `000`.
bool Lexer::warnDigitGroups(const unsigned char* start, std::string_view text) {
  if (text.size() != 3 || text[0] != '0' || buffer_.tokens_.size() < 2) return false;
  const TokenizedBuffer::Token& comma = buffer_.tokens_.back();
  const TokenizedBuffer::Token& before = buffer_.tokens_[buffer_.tokens_.size() - 2];
  if (comma.kind != TokenKind::Comma || comma.offset + comma.length != offsetOf(start) ||
      before.kind != TokenKind::IntLiteral || before.offset + before.length != comma.offset) {
    return false;
  }
  std::string_view first(reinterpret_cast<const char*>(begin_) + before.offset, before.length);
  if (first.size() > 3 || first.find_first_not_of("0123456789") != std::string_view::npos ||
      (first.size() > 1 && first[0] == '0')) {
    return false;
  }
  const unsigned char* last = p_;
  std::string groups = fmt::format("{}_{}", first, text);
  std::string numbers = fmt::format("{}, {}", first, text);
  while (end_ - last >= 4 && last[0] == ',' && isDecimal(last[1]) && isDecimal(last[2]) &&
         isDecimal(last[3]) && (end_ - last == 4 || !isIdentContinue(last[4]))) {
    std::string_view group(reinterpret_cast<const char*>(last) + 1, 3);
    groups += '_';
    groups += group;
    numbers += ", ";
    numbers += group;
    last += 4;
  }
  std::string_view written(reinterpret_cast<const char*>(begin_) + before.offset,
                           offsetOf(last) - before.offset);
  diags_.report(Diag::DigitGroupComma, buffer_.source(),
                SourceRange{before.offset, offsetOf(last)}, written, numbers, groups);
  return true;
}

void Lexer::lexString() {
  const unsigned char* start = p_;
  if (end_ - p_ >= 3 && p_[1] == p_[0] && p_[2] == p_[0]) [[unlikely]] {
    // A Python docstring, `"""..."""` over several lines: one error, and
    // lexing goes on after its end (its lines are not read as code).
    unsigned char q = p_[0];
    const unsigned char* close = p_ + 3;
    while (close + 2 < end_ && !(close[0] == q && close[1] == q && close[2] == q)) ++close;
    error(Diag::TripleQuotedString, start, 3, std::string(3, static_cast<char>(q)));
    p_ = close + 2 < end_ ? close + 3 : end_;
    addToken(TokenKind::Error, start);
    return;
  }
  unsigned char quote = *p_++;
  std::string value;
  bool terminated = false;
  bool badUtf8 = false;
  bool warnedBidi = false;
  while (p_ < end_) {
    unsigned char c = *p_;
    if (c == quote) {
      ++p_;
      terminated = true;
      break;
    }
    if (c == '\n') {
      break;
    }
    if (c == '\\') {
      if (p_ + 1 >= end_ || p_[1] == '\n' || p_[1] == '\r') {
        ++p_;  // `\` at the end of the line (LF, CRLF or CR): the string is unterminated
        break;
      }
      unsigned char e = p_[1];
      switch (e) {
        case 'n': value += '\n'; break;
        case 't': value += '\t'; break;
        case 'r': value += '\r'; break;
        case '\\': value += '\\'; break;
        case '"': value += '"'; break;
        case '\'': value += '\''; break;
        default: {
          size_t len = utf8SequenceLength(p_ + 1, end_);
          std::string shown = len > 1 ? std::string(reinterpret_cast<const char*>(p_ + 1), len)
                                      : std::string(1, static_cast<char>(e));
          if (len == 0 || e < 0x20) {
            shown = fmt::format("x{:02X}", static_cast<unsigned>(e));
          }
          error(Diag::UnknownEscape, p_, 1 + std::max<size_t>(len, 1), shown)
              .note(Note::ValidEscapes);
          p_ += 1 + std::max<size_t>(len, 1);
          continue;
        }
      }
      p_ += 2;
      continue;
    }
    if (c >= 0x80) {
      size_t len = utf8SequenceLength(p_, end_);
      if (len == 0) {
        // One error per literal, over the run of bad bytes (as a comment or
        // code gets one per run): a Latin-1 string is one mistake, not one
        // per accented letter filling the error limit.
        const unsigned char* run = p_;
        while (p_ < end_ && *p_ >= 0x80 && utf8SequenceLength(p_, end_) == 0) ++p_;
        if (!badUtf8) {
          error(Diag::InvalidUtf8, run, static_cast<uint32_t>(p_ - run), static_cast<unsigned>(c));
          badUtf8 = true;
        }
        continue;
      }
      if (!warnedBidi) warnedBidi = warnBidi(p_, len, "string literal");
      value.append(reinterpret_cast<const char*>(p_), len);
      p_ += len;
      continue;
    }
    value += static_cast<char>(c);
    ++p_;
  }
  if (!terminated) {
    auto builder = error(Diag::UnterminatedString, start, 1,
                         quote == '"' ? std::string_view("'\"'") : std::string_view("\"'\""));
    if (p_ < end_) {
      builder.note(Note::StringSpansLine);
    }
  }
  if (!terminated) {
    // The parser treats an Error token as already reported: no cascade of
    // "expected ')'" for the delimiters the string swallowed.
    addToken(TokenKind::Error, start);
    return;
  }
  buffer_.strings_.push_back(std::move(value));
  addToken(TokenKind::StringLiteral, start, static_cast<uint32_t>(buffer_.strings_.size() - 1));
}

// A byte that starts no token: invalid UTF-8, control characters other than
// white space, non-ASCII characters, and ASCII punctuation the language lacks.
size_t Lexer::strayRunLength(const unsigned char* p) const {
  const unsigned char* q = p;
  while (q < end_) {
    unsigned char c = *q;
    if (c >= 0x80) {
      size_t len = utf8SequenceLength(q, end_);
      q += len == 0 ? 1 : len;
    } else if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v') ||
               c == 0x7F || c == '$' || c == '`' || c == '\\' || c == '~' || c == '^') {
      ++q;
    } else {
      break;
    }
  }
  return static_cast<size_t>(q - p);
}

// Letters of the Latin, Greek, Cyrillic, Hebrew, Arabic, CJK, kana and
// Hangul blocks (not symbols such as '²', '×' or '°'): the ones a name may
// have been meant to hold.
static bool isLetterOfAnotherAlphabet(char32_t cp) {
  return (cp >= 0xC0 && cp <= 0x24F && cp != 0xD7 && cp != 0xF7) || (cp >= 0x370 && cp <= 0x52F) ||
         (cp >= 0x590 && cp <= 0x6FF) || (cp >= 0x3040 && cp <= 0x30FF) ||
         (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0xAC00 && cp <= 0xD7AF);
}

// The invisible characters other than spaces and text direction controls
// (reported on their own) that pasted text brings: the zero-width ones.
static std::string_view invisibleCharacterName(char32_t cp) {
  switch (cp) {
    case 0x00AD: return "soft hyphen";
    case 0x200B: return "zero-width space";
    case 0x200C: return "zero-width non-joiner";
    case 0x200D: return "zero-width joiner";
    case 0x2060: return "word joiner";
    case 0xFEFF: return "zero-width no-break space (a byte order mark)";
    default: return cp >= 0x2061 && cp <= 0x2064 ? "invisible operator" : "";
  }
}

void Lexer::lexUnexpected() {
  const unsigned char* start = p_;
  unsigned char c = *p_;
  if (c == '&' || c == '|') {
    ++p_;
    error(Diag::UnexpectedCharacter, start, 1, std::string(1, static_cast<char>(c)))
        .note(Note::DidYouMean, buffer_.source(),
              SourceRange{offsetOf(start), offsetOf(start) + 1}, c == '&' ? "&&" : "||");
    addToken(TokenKind::Error, start);
    return;
  }
  if ((c == '~' || c == '^') && strayRunLength(p_) == 1) {
    lexBitwiseOperator();
    return;
  }
  if (c == '`') {
    // `x` quoted as Markdown or Kotlin quote names: one error for the pair,
    // and the name itself as the fix (a name needs no quotes).
    const unsigned char* close = p_ + 1;
    while (close < end_ && *close != '`' && *close != '\n') ++close;
    if (close < end_ && *close == '`' && close > p_ + 1) {
      p_ = close + 1;
      std::string_view inner(reinterpret_cast<const char*>(start + 1),
                             static_cast<size_t>(close - start - 1));
      auto builder = error(Diag::UnexpectedCharacter, start, static_cast<size_t>(p_ - start), "`");
      bool name = isIdentStart(static_cast<unsigned char>(inner.front()));
      for (char ch : inner) name = name && isIdentContinue(static_cast<unsigned char>(ch));
      if (name) {
        builder.note(Note::DidYouMean, buffer_.source(),
                     SourceRange{offsetOf(start), offsetOf(p_)}, std::string(inner));
      }
      addToken(TokenKind::Error, start);
      return;
    }
  }
  // A run of stray bytes (binary data, pasted text) is one diagnostic that
  // names the first character and underlines the run.
  size_t run = std::max<size_t>(strayRunLength(p_), 1);
  p_ += run;
  if (c >= 0x80 && utf8SequenceLength(start, end_) == 0) {
    error(Diag::InvalidUtf8, start, run, static_cast<unsigned>(c));
  } else if (c >= 0x80) {
    Utf8Char ch = decodeUtf8(std::string_view(reinterpret_cast<const char*>(start),
                                              static_cast<size_t>(end_ - start)));
    if (AsciiLookalike look = asciiLookalike(ch.codePoint); !look.name.empty()) {
      lexLookalike(start, ch.length, ch.codePoint, look);
      return;
    }
    // A zero-width space or a bidi control would read as '' in the message,
    // a non-breaking space as ' '.
    std::string_view space = unicodeSpaceName(ch.codePoint);
    DiagnosticBuilder diag =
        error(Diag::UnexpectedCharacter, start, run,
              isInvisibleCharacter(ch.codePoint) || !space.empty()
                  ? codePointName(ch.codePoint)
                  : std::string(reinterpret_cast<const char*>(start), ch.length));
    if (!space.empty()) {
      diag.note(Note::UnicodeSpace, codePointName(ch.codePoint), space);
    } else if (std::string_view name = invisibleCharacterName(ch.codePoint); !name.empty()) {
      diag.note(Note::InvisibleCharacter, codePointName(ch.codePoint), name);
    } else if (isLetterOfAnotherAlphabet(ch.codePoint)) {
      // `café`, `Δw`, `let α = 0.1`, a Cyrillic 'а' that looks Latin: a letter
      // of another alphabet where a name is, named by its code point (the
      // glyph alone may look like an ASCII letter).
      diag.note(Note::AsciiNames, std::string(reinterpret_cast<const char*>(start), ch.length),
                fmt::format("U+{:04X}", static_cast<uint32_t>(ch.codePoint)));
    }
  } else if (c < 0x20 || c == 0x7F) {
    error(Diag::UnexpectedCharacter, start, run,
          fmt::format("\\x{:02X}", static_cast<unsigned>(c)));
  } else if (c == '\\' && run == 1 && restOfLineIsBlank(p_)) {
    // Python's `\` at the end of a line, to continue the statement.
    error(Diag::UnexpectedCharacter, start, run, "\\").note(Note::NoLineContinuation);
  } else {
    error(Diag::UnexpectedCharacter, start, run, std::string(1, static_cast<char>(c)));
  }
  addToken(TokenKind::Error, start);
}

// The operand that starts at `p` on its line, for a note that rewrites it: a
// name, a number or a member chain (`x.shape`), with the call or index that
// follows it, or a parenthesized group. Empty when none is there or it is long.
std::string_view Lexer::operandAfter(const unsigned char* p) const {
  const unsigned char* q = p;
  auto isWord = [](unsigned char ch) { return std::isalnum(ch) || ch == '_' || ch == '.'; };
  while (q < end_ && isWord(*q)) {
    ++q;
  }
  if (q < end_ && (*q == '(' || *q == '[')) {
    int depth = 0;
    while (q < end_ && *q != '\n') {
      if (*q == '(' || *q == '[') ++depth;
      if (*q == ')' || *q == ']') --depth;
      ++q;
      if (depth == 0) break;
    }
    if (depth != 0) return {};
  }
  size_t length = static_cast<size_t>(q - p);
  if (length == 0 || length > 32) return {};
  return std::string_view(reinterpret_cast<const char*>(p), length);
}

// The operand that ends right before the current stray character, on its line:
// the last token (a name, a number, or a bracketed group with the name it
// follows). Empty when none is there or it is long.
std::string_view Lexer::operandBefore() const {
  const auto& tokens = buffer_.tokens_;
  if (tokens.empty() || newlineBefore_) return {};
  size_t i = tokens.size() - 1;
  auto kind = [&](size_t k) { return tokens[k].kind; };
  if (kind(i) == TokenKind::RParen || kind(i) == TokenKind::RBracket) {
    int depth = 0;
    for (;; --i) {
      TokenKind k = kind(i);
      if (k == TokenKind::RParen || k == TokenKind::RBracket) ++depth;
      if (k == TokenKind::LParen || k == TokenKind::LBracket) --depth;
      if (depth == 0 || i == 0) break;
      if (tokens[i].flags & TokenizedBuffer::kNewlineBefore) return {};
    }
    if (depth != 0) return {};
    if (i > 0 && kind(i - 1) == TokenKind::Identifier) --i;
  } else if (kind(i) != TokenKind::Identifier && kind(i) != TokenKind::IntLiteral &&
             kind(i) != TokenKind::FloatLiteral) {
    return {};
  }
  // A member chain before it, `x.shape`.
  while (i >= 2 && kind(i - 1) == TokenKind::Dot && kind(i - 2) == TokenKind::Identifier) {
    i -= 2;
  }
  uint32_t begin = tokens[i].offset;
  const TokenizedBuffer::Token& lastToken = tokens.back();
  uint32_t end = lastToken.offset + lastToken.length;
  std::string_view text(reinterpret_cast<const char*>(begin_) + begin, end - begin);
  if (text.size() > 32 || text.find('\n') != std::string_view::npos) return {};
  return text;
}

// C's and Python's `~x` and `x ^ 2`: bitwise operators, which Triton DSL does
// not have. `~` meant a logical not; `^`, a power (the commoner mistake).
void Lexer::lexBitwiseOperator() {
  const unsigned char* start = p_;
  unsigned char c = *p_;
  ++p_;
  DiagnosticBuilder diag = error(Diag::UnexpectedCharacter, start, 1, std::string(1, c));
  const unsigned char* after = p_;
  while (after < end_ && (*after == ' ' || *after == '\t')) {
    ++after;
  }
  std::string_view right = operandAfter(after);
  if (c == '~') {
    diag.note(Note::LogicalNot, right.empty() ? "x" : right);
  } else {
    std::string_view left = operandBefore();
    diag.note(Note::PowerOperator, !left.empty() && !right.empty()
                                       ? fmt::format("{} ** {}", left, right)
                                       : std::string("a ** b"));
  }
  addToken(TokenKind::Error, start);
}

// Whether only spaces, tabs and a '#' comment follow `p` on its line.
bool Lexer::restOfLineIsBlank(const unsigned char* p) const {
  while (p < end_ && (*p == ' ' || *p == '\t')) {
    ++p;
  }
  return p == end_ || *p == '\n' || *p == '\r' || *p == '#';
}


// A typographic character (text pasted from a document or a chat): one
// error saying which ASCII character it stands for. `“absmean”` on one line
// is one error and lexes as the string it means, so nothing else is reported.
void Lexer::lexLookalike(const unsigned char* start, size_t length, char32_t cp,
                         AsciiLookalike look) {
  std::string_view glyph(reinterpret_cast<const char*>(start), length);
  bool opens = cp == 0x201C || cp == 0x201E || cp == 0x2018 || cp == 0x201A;
  if (opens) {
    // The closing quote: ” or “ (after „), ’ or ‘ (after ‚), on this line.
    std::string_view rest(reinterpret_cast<const char*>(start + length),
                          static_cast<size_t>(end_ - start) - length);
    rest = rest.substr(0, rest.find('\n'));
    bool isDouble = look.ascii == "\"";
    for (std::string_view close : isDouble ? std::array<std::string_view, 2>{"\u201D", "\u201C"}
                                           : std::array<std::string_view, 2>{"\u2019", "\u2018"}) {
      size_t at = rest.find(close);
      if (at == std::string_view::npos || rest.substr(0, at).find(look.ascii) != std::string_view::npos) {
        continue;
      }
      std::string_view inner = rest.substr(0, at);
      p_ = start + length + at + close.size();
      error(Diag::UnexpectedCharacter, start, length, std::string(glyph))
          .note(Note::TypographicQuotes, std::string(glyph), std::string(close),
                fmt::format("{0}{1}{0}", look.ascii, inner));
      buffer_.strings_.emplace_back(inner);
      addToken(TokenKind::StringLiteral, start,
               static_cast<uint32_t>(buffer_.strings_.size() - 1));
      return;
    }
  }
  p_ = start + length;
  error(Diag::UnexpectedCharacter, start, length, std::string(glyph))
      .note(Note::AsciiLookalike, std::string(glyph), look.name, look.ascii);
  addToken(TokenKind::Error, start);
}

TokenizedBuffer lex(const SourceBuffer& source, Interner& interner, DiagnosticEngine& diags) {
  return Lexer(source, interner, diags).run();
}

}  // namespace tritonc

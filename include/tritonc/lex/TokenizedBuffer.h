//===- TokenizedBuffer.h - the lexer's output -------------------*- C++ -*-===//
//
// A `TokenizedBuffer` is the token sequence of one source file: a dense array
// of 16-byte tokens named by `TokenId`, with literal values in side tables and
// identifiers interned. It always ends with an EndOfFile token.
//
// Newlines are not tokens: each token records whether a line break precedes
// it, and the parser applies the statement-termination rule of LANGUAGE.md §1
// with that flag (it knows the context the rule depends on).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tritonc/base/Interner.h"
#include "tritonc/diag/Diagnostics.h"
#include "tritonc/source/SourceBuffer.h"

namespace tritonc {

/// Every token kind, from TokenKinds.def.
enum class TokenKind : uint8_t {
#define TOKEN(Name, Description) Name,
#include "tritonc/lex/TokenKinds.def"
};

/// "Identifier", "KwLayer", "Plus", ...
std::string_view tokenKindName(TokenKind kind);
/// How diagnostics name a kind: "identifier", "'layer'", "'+'", ...
std::string_view tokenKindDescription(TokenKind kind);
/// The fixed spelling of keywords and punctuation; empty for the others.
std::string_view tokenKindSpelling(TokenKind kind);
bool isKeyword(TokenKind kind);
/// The keyword spellings, for "did you mean" suggestions.
const std::vector<std::string_view>& keywordSpellings();

/// Index of a token in its buffer.
struct TokenId {
  uint32_t index = UINT32_MAX;
  bool isValid() const { return index != UINT32_MAX; }
  friend bool operator==(TokenId, TokenId) = default;
};

class TokenizedBuffer {
 public:
  enum Flags : uint8_t {
    kNewlineBefore = 1,  ///< a line break separates this token from the previous one
  };
  struct Token {
    TokenKind kind;
    uint8_t flags;
    uint16_t reserved = 0;
    uint32_t offset;   ///< byte offset in the source
    uint32_t length;   ///< bytes of source text
    uint32_t payload;  ///< identifier id, or index into the literal tables
  };
  static_assert(sizeof(Token) == 16, "tokens are packed");

  explicit TokenizedBuffer(const SourceBuffer& source, Interner& interner)
      : source_(&source), interner_(&interner) {}

  const SourceBuffer& source() const { return *source_; }
  const Interner& interner() const { return *interner_; }
  size_t size() const { return tokens_.size(); }
  const Token& token(TokenId id) const { return tokens_[id.index]; }
  TokenKind kind(TokenId id) const { return tokens_[id.index].kind; }
  bool hasNewlineBefore(TokenId id) const {
    return (tokens_[id.index].flags & kNewlineBefore) != 0;
  }
  SourceRange range(TokenId id) const {
    const Token& t = tokens_[id.index];
    return SourceRange{t.offset, t.offset + t.length};
  }
  std::string_view spelling(TokenId id) const {
    const Token& t = tokens_[id.index];
    return source_->text().substr(t.offset, t.length);
  }
  IdentifierId identifier(TokenId id) const { return IdentifierId{tokens_[id.index].payload}; }
  uint64_t intValue(TokenId id) const { return ints_[tokens_[id.index].payload]; }
  double floatValue(TokenId id) const { return floats_[tokens_[id.index].payload]; }
  /// The decoded value of a string literal (escapes applied).
  const std::string& stringValue(TokenId id) const { return strings_[tokens_[id.index].payload]; }
  bool hasErrors() const { return hasErrors_; }
  /// Whether the lexer reported a mistake at an offset in [begin, end).
  bool errorBetween(uint32_t begin, uint32_t end) const {
    auto it = std::lower_bound(errorOffsets_.begin(), errorOffsets_.end(), begin);
    return it != errorOffsets_.end() && *it < end;
  }
  /// Whether an unterminated block comment ran to the end of the file (so
  /// what the parser misses there is that error's consequence).
  bool endsInUnterminatedComment() const { return endsInUnterminatedComment_; }

  /// One line per token: `line:col Kind 'spelling'` plus value and flags.
  std::string dump() const;

 private:
  friend class Lexer;
  const SourceBuffer* source_;
  Interner* interner_;
  std::vector<Token> tokens_;
  std::vector<uint64_t> ints_;
  std::vector<double> floats_;
  std::vector<std::string> strings_;
  bool hasErrors_ = false;
  std::vector<uint32_t> errorOffsets_;  ///< where the lexer reported, ascending
  bool endsInUnterminatedComment_ = false;
};

}  // namespace tritonc

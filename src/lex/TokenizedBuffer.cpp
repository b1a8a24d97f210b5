//===- TokenizedBuffer.cpp - token tables and the --dump-tokens format ----===//
#include "tritonc/lex/TokenizedBuffer.h"

#include <fmt/format.h>

#include "tritonc/base/Text.h"

namespace tritonc {

namespace {
constexpr std::string_view kNames[] = {
#define TOKEN(Name, Description) #Name,
#include "tritonc/lex/TokenKinds.def"
};
constexpr std::string_view kDescriptions[] = {
#define TOKEN(Name, Description) Description,
#include "tritonc/lex/TokenKinds.def"
};
constexpr std::string_view kSpellings[] = {
#define TOKEN(Name, Description) "",
#define KEYWORD(Name, Spelling) Spelling,
#define PUNCT(Name, Spelling) Spelling,
#include "tritonc/lex/TokenKinds.def"
};
constexpr bool kIsKeyword[] = {
#define TOKEN(Name, Description) false,
#define KEYWORD(Name, Spelling) true,
#define PUNCT(Name, Spelling) false,
#include "tritonc/lex/TokenKinds.def"
};

}  // namespace

std::string_view tokenKindName(TokenKind kind) { return kNames[static_cast<size_t>(kind)]; }
std::string_view tokenKindDescription(TokenKind kind) {
  return kDescriptions[static_cast<size_t>(kind)];
}
std::string_view tokenKindSpelling(TokenKind kind) { return kSpellings[static_cast<size_t>(kind)]; }
bool isKeyword(TokenKind kind) { return kIsKeyword[static_cast<size_t>(kind)]; }

const std::vector<std::string_view>& keywordSpellings() {
  static const std::vector<std::string_view> spellings = [] {
    std::vector<std::string_view> out;
    for (size_t i = 0; i < std::size(kSpellings); ++i) {
      if (kIsKeyword[i]) {
        out.push_back(kSpellings[i]);
      }
    }
    return out;
  }();
  return spellings;
}

std::string TokenizedBuffer::dump() const {
  std::string out;
  out.reserve(tokens_.size() * 32);
  for (uint32_t i = 0; i < tokens_.size(); ++i) {
    TokenId id{i};
    const Token& t = tokens_[i];
    LineCol lc = source_->lineCol(t.offset);
    out += fmt::format("{}:{} {} {}", lc.line, lc.column, tokenKindName(t.kind),
                       quoteForDump(spelling(id)));
    switch (t.kind) {
      case TokenKind::IntLiteral: out += fmt::format(" value={}", intValue(id)); break;
      case TokenKind::FloatLiteral: out += " value=" + formatFloat(floatValue(id)); break;
      case TokenKind::StringLiteral: out += " value=" + quoteForDump(stringValue(id)); break;
      default: break;
    }
    if ((t.flags & kNewlineBefore) != 0) {
      out += " [newline]";
    }
    out += '\n';
  }
  return out;
}

}  // namespace tritonc

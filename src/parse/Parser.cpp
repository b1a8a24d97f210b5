//===- Parser.cpp - recursive-descent parser for Triton DSL ---------------===//
//
// Design
// ------
// A hand-written recursive-descent parser over the token buffer; binary
// expressions use precedence climbing. Each parse function carries the
// grammar rule it implements (LANGUAGE.md §2) in a comment.
//
// Newlines. The lexer only marks tokens that start a new line. A newline ends
// a statement unless the parser is inside ( ) or [ ] (`newlinesSignificant`),
// or the statement cannot end where the line ends (the parser simply goes on
// reading what the rule requires), or the next line starts with a token that
// continues an expression: a binary operator other than + and -, '.', ')',
// ']', '->', '{' or 'else' (`continuesExpression`).
//
// Errors and recovery. The first error of a statement is reported and puts
// the parser in panic mode, where further errors are not reported; parse
// functions then unwind quickly. The statement (or item) loop synchronizes:
// it skips tokens, keeping count of the open delimiters of the statement,
// until it reaches the statement's end, and leaves panic mode. Error tokens
// from the lexer were already reported and so put the parser in panic mode
// silently. This gives one diagnostic per broken statement and no cascades.
//
// Habits from other languages (Python's `or`, `def`, `x[..., 0]`, a missing
// ',') are repaired instead where the intent is clear: errorAndGoOn()
// reports them and parsing goes on without panic mode, as if the fix were
// written, so the rest of the item is still checked; only a statement's
// first such report is shown. Where the intent depends on what follows (is
// `let w Tensor<...>` a type without its ':'?), a trial parse (QuietScope,
// checkpoint()/rewind()) reads ahead without reporting, and on failure the
// parser rewinds and reports the usual error.
//
// Depth. Every construct that nests (brackets, blocks, unary operators, `**`,
// type arguments) goes through `NestingGuard`; past ParseLimits::kMaxNesting
// the parser reports once and unwinds. Nodes record their tree depth, and a
// tree deeper than kMaxTreeDepth (long operator chains) is an error as well,
// so later stages can recurse over trees without overflowing the stack.
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <utility>
#include <cstring>
#include <initializer_list>
#include <optional>

#include "tritonc/base/Memory.h"
#include "tritonc/parse/Parse.h"

namespace tritonc {

namespace {

constexpr uint32_t kNone = UINT32_MAX;

// Binary operators by precedence; higher binds tighter. 0 = not binary.
int binaryPrecedence(TokenKind kind) {
  switch (kind) {
    case TokenKind::PipePipe: return 1;
    case TokenKind::AmpAmp: return 2;
    case TokenKind::EqualEqual:
    case TokenKind::BangEqual: return 3;
    case TokenKind::Less:
    case TokenKind::LessEqual:
    case TokenKind::Greater:
    case TokenKind::GreaterEqual: return 4;
    case TokenKind::Plus:
    case TokenKind::Minus: return 5;
    case TokenKind::Star:
    case TokenKind::Slash:
    case TokenKind::Percent:
    case TokenKind::At: return 6;
    default: return 0;
  }
}

bool isAssignOperator(TokenKind kind) {
  switch (kind) {
    case TokenKind::Equal:
    case TokenKind::PlusEqual:
    case TokenKind::MinusEqual:
    case TokenKind::StarEqual:
    case TokenKind::SlashEqual:
    case TokenKind::AtEqual: return true;
    default: return false;
  }
}

// Tokens that start an operand but cannot continue the expression before
// them: after a complete expression they begin another one.
constexpr bool startsOperand(TokenKind kind) {
  switch (kind) {
    case TokenKind::Identifier:
    case TokenKind::IntLiteral:
    case TokenKind::FloatLiteral:
    case TokenKind::StringLiteral:
    case TokenKind::KwTrue:
    case TokenKind::KwFalse:
    case TokenKind::Bang: return true;
    default: return false;
  }
}

// startsOperand() as a bit set over the token kinds, for tests on the hot
// path that should not branch on the kind.
constexpr uint64_t operandStartSet() {
  uint64_t set = 0;
  for (unsigned kind = 0; kind < 64; ++kind) {
    if (startsOperand(static_cast<TokenKind>(kind))) {
      set |= uint64_t{1} << kind;
    }
  }
  return set;
}
constexpr uint64_t kOperandStartSet = operandStartSet();
bool inOperandStartSet(TokenKind kind) {
  auto index = static_cast<unsigned>(kind);
  return index < 64 && ((kOperandStartSet >> index) & 1) != 0;
}

bool isOpener(TokenKind kind) {
  return kind == TokenKind::LParen || kind == TokenKind::LBracket || kind == TokenKind::LBrace;
}
bool isCloser(TokenKind kind) {
  return kind == TokenKind::RParen || kind == TokenKind::RBracket || kind == TokenKind::RBrace;
}

const std::vector<std::string_view>& itemKeywords() {
  static const std::vector<std::string_view> words = {"layer", "fn", "main", "import", "let"};
  return words;
}
const std::vector<std::string_view>& statementKeywords() {
  static const std::vector<std::string_view> words = {"let", "return", "if", "for", "while",
                                                      "break", "continue", "else"};
  return words;
}

}  // namespace

class Parser {
 public:
  Parser(const TokenizedBuffer& tokens, DiagnosticEngine& diags)
      : tokens_(tokens), diags_(diags), tree_(tokens) {
    // About 0.6 nodes and 0.3 list words per token in typical source.
    tree_.nodes_.reserve(tokens.size() * 2 / 3 + 16);
    tree_.lists_.reserve(tokens.size() / 2 + 16);
    adviseHugePages(tree_.nodes_.data(), tree_.nodes_.capacity() * sizeof(Tree::Node));
    adviseHugePages(tree_.lists_.data(), tree_.lists_.capacity() * sizeof(uint32_t));
  }

  Tree run();
  Tree runItems(std::span<const ItemTokens> items, bool& complete);

 private:
  // ---- token access -------------------------------------------------------
  TokenKind peekKind() const { return tokens_.kind(pos_); }
  TokenKind peekKind(uint32_t ahead) const {
    uint32_t index = std::min<uint32_t>(pos_.index + ahead,
                                        static_cast<uint32_t>(tokens_.size() - 1));
    return tokens_.kind(TokenId{index});
  }
  bool at(TokenKind kind) const { return peekKind() == kind; }
  bool atEnd() const { return at(TokenKind::EndOfFile); }
  TokenId consume() {
    TokenId token = pos_;
    TokenKind kind = tokens_.kind(token);
    if (kind != TokenKind::EndOfFile) {
      ++pos_.index;
    }
    if (isDelimiter(kind)) [[unlikely]] {
      trackDelimiter(kind, token);
    }
    return token;
  }
  static bool isDelimiter(TokenKind kind) {
    static_assert(static_cast<int>(TokenKind::LParen) + 5 == static_cast<int>(TokenKind::RBrace),
                  "delimiters are contiguous in TokenKinds.def");
    return static_cast<unsigned>(kind) - static_cast<unsigned>(TokenKind::LParen) < 6;
  }
  void trackDelimiter(TokenKind kind, TokenId token) {
    if (isOpener(kind)) {
      openDelims_.push_back(token);
    } else if (!openDelims_.empty()) {
      openDelims_.pop_back();
    }
  }
  bool consumeIf(TokenKind kind) {
    if (at(kind)) {
      consume();
      return true;
    }
    return false;
  }
  // Consumes a '=' (or the '=' left over from splitting '>=' after a type).
  bool consumeEqual() {
    if (splitEqual_) {
      splitEqual_ = false;
      return true;
    }
    return consumeIf(TokenKind::Equal);
  }
  bool newlineBefore() const { return tokens_.hasNewlineBefore(pos_); }
  // Whether token `id` is spelled `word`. The length is compared first, so
  // most tokens are rejected without reading the source (this runs on the
  // hot path of valid programs, e.g. for every identifier operand).
  bool spelledAs(TokenId id, std::string_view word) const {
    const TokenizedBuffer::Token& token = tokens_.token(id);
    return token.length == word.size() &&
           std::memcmp(tokens_.source().text().data() + token.offset, word.data(),
                       word.size()) == 0;
  }
  // Inside ( ) or [ ] line breaks never end anything.
  bool newlinesSignificant() const {
    return openDelims_.empty() || tokens_.kind(openDelims_.back()) == TokenKind::LBrace;
  }
  // True when the current token may not continue the expression before it
  // because it starts a new line (LANGUAGE.md §1). The line-break flag is
  // tested inline first: most tokens have none.
  bool startsNewStatement() const { return newlineBefore() && startsNewStatementAfterBreak(); }
  [[gnu::noinline]] bool startsNewStatementAfterBreak() const {
    if (!newlinesSignificant()) {
      return false;
    }
    TokenKind kind = peekKind();
    if (kind == TokenKind::Plus || kind == TokenKind::Minus) {
      return true;
    }
    if (binaryPrecedence(kind) != 0 || kind == TokenKind::StarStar ||
        kind == TokenKind::DotDot) {
      return false;
    }
    switch (kind) {
      case TokenKind::Dot:
      case TokenKind::RParen:
      case TokenKind::RBracket:
      case TokenKind::Arrow:
      case TokenKind::LBrace:
      case TokenKind::KwElse: return false;
      default: return true;
    }
  }

  // ---- diagnostics ---------------------------------------------------------
  std::string describe(TokenId token) const {
    TokenKind kind = tokens_.kind(token);
    switch (kind) {
      case TokenKind::Identifier:
      case TokenKind::IntLiteral:
      case TokenKind::FloatLiteral: {
        std::string_view text = tokens_.spelling(token);
        if (text.size() > 40) {
          return fmt::format("{} '{}...'", tokenKindDescription(kind), text.substr(0, 37));
        }
        return fmt::format("{} '{}'", tokenKindDescription(kind), text);
      }
      default: return std::string(tokenKindDescription(kind));
    }
  }
  // Where to point when something was expected before `token`: at the token,
  // or just after the previous one when `token` starts a new line or is EOF.
  SourceRange expectedAt(TokenId token) const {
    if (token.index > 0 &&
        (tokens_.hasNewlineBefore(token) || tokens_.kind(token) == TokenKind::EndOfFile)) {
      SourceRange prev = tokens_.range(TokenId{token.index - 1});
      return SourceRange{prev.end, prev.end};
    }
    return tokens_.range(token);
  }
  // Reports unless a previous error of this statement is still unwinding;
  // returns a builder that may be empty (nullopt) in panic mode.
  //
  // The reporting functions are cold: valid programs never call them, and
  // the attribute keeps the paths that lead to them (building messages and
  // notes) out of the hot parsing functions.
  template <typename... Args>
  [[gnu::cold]] std::optional<DiagnosticBuilder> error(Diag kind, SourceRange range,
                                                       Args&&... args) {
    if (panic_) {
      return std::nullopt;
    }
    panic_ = true;
    if (at(TokenKind::Error) || quiet_ > 0 || repaired_ || lexErrorInStatement() ||
        (atEnd() && (tokens_.endsInUnterminatedComment() || reportedAtEnd_))) {
      // The lexer reported this spot already (or the comment that swallowed
      // the rest of the file), this is a trial parse, the statement's first
      // mistake was reported and repaired, or the file ends unfinished and
      // that was said (each enclosing bracket still open is not an error of
      // its own: a file being typed ends so at every save).
      return std::nullopt;
    }
    reportedAtEnd_ = atEnd();
    return diags_.report(kind, tokens_.source(), range, std::forward<Args>(args)...);
  }
  // Reports a mistake that the parser repairs where it is (a Python operator,
  // a missing ','): parsing goes on as if the fix were written, so panic mode
  // stays off and the statement's tree is complete. Only the statement's
  // first mistake is reported (`repaired_`): a second one is often the
  // same habit again, or a consequence of a wrong guess. In a trial parse
  // the mistake fails the trial instead.
  template <typename... Args>
  [[gnu::cold]] std::optional<DiagnosticBuilder> errorAndGoOn(Diag kind, SourceRange range,
                                                              Args&&... args) {
    if (panic_) {
      return std::nullopt;
    }
    if (quiet_ > 0) {
      panic_ = true;
      return std::nullopt;
    }
    if (repaired_ || at(TokenKind::Error) || lexErrorInStatement() ||
        (atEnd() && tokens_.endsInUnterminatedComment())) {
      return std::nullopt;
    }
    repaired_ = true;
    return diags_.report(kind, tokens_.source(), range, std::forward<Args>(args)...);
  }
  // Whether the lexer reported a mistake in the statement so far (since its
  // start, through the current token): what the parser finds after it is most often
  // that mistake again (`x \` then a line starting `* 2`, `x */ 2.0`).
  bool lexErrorInStatement() const {
    if (!tokens_.hasErrors()) return false;
    // (Also an error token just before it: it may end the statement, and the
    // next line then starts one, `* 2` after `let y = x \`.)
    if (pos_.index > 0 && pos_.index <= syncStart_.index &&
        tokens_.kind(TokenId{pos_.index - 1}) == TokenKind::Error) {
      return true;
    }
    uint32_t from = syncStart_.index;
    if (from >= tokens_.size()) return false;
    uint32_t end = pos_.index < tokens_.size() ? tokens_.range(pos_).end
                                               : static_cast<uint32_t>(tokens_.source().text().size());
    return tokens_.errorBetween(tokens_.range(TokenId{from}).begin, end);
  }
  SourceRange rangeOf(TokenId first, TokenId last) const {
    return SourceRange{tokens_.range(first).begin, tokens_.range(last).end};
  }
  // The source text from the start of `first` to the end of `last`, or
  // `fallback` when it is long or spans lines (it is quoted in a message).
  std::string_view sourceText(TokenId first, TokenId last, std::string_view fallback) const {
    SourceRange range = rangeOf(first, last);
    std::string_view text = tokens_.source().text().substr(range.begin, range.end - range.begin);
    if (text.size() > 48 || text.find('\n') != std::string_view::npos) {
      return fallback;
    }
    return text;
  }

  // ---- trial parses ----------------------------------------------------------
  // A trial parses a construct the user probably meant (the type after
  // `let x Tensor<...>`) without reporting anything; when it fails, rewind()
  // puts the parser back where the trial started.
  struct Checkpoint {
    TokenId pos;
    std::vector<TokenId> openDelims;
    size_t nodes;
    size_t lists;
    size_t scratch;
    bool splitEqual;
    bool unwindToItem;
    bool treeTooDeepReported;
  };
  Checkpoint checkpoint() const {
    return Checkpoint{pos_,          openDelims_,    tree_.nodes_.size(),
                      tree_.lists_.size(), scratch_.size(), splitEqual_,
                      unwindToItem_, treeTooDeepReported_};
  }
  void rewind(const Checkpoint& point) {
    pos_ = point.pos;
    openDelims_ = point.openDelims;
    tree_.nodes_.resize(point.nodes);
    tree_.lists_.resize(point.lists);
    scratch_.resize(point.scratch);
    splitEqual_ = point.splitEqual;
    unwindToItem_ = point.unwindToItem;
    treeTooDeepReported_ = point.treeTooDeepReported;
    panic_ = false;
  }
  // While one lives, errors are not reported but still end the parse of the
  // construct (panic mode).
  class QuietScope {
   public:
    explicit QuietScope(Parser& parser) : parser_(parser) { ++parser_.quiet_; }
    ~QuietScope() { --parser_.quiet_; }
    QuietScope(const QuietScope&) = delete;
    QuietScope& operator=(const QuietScope&) = delete;

   private:
    Parser& parser_;
  };
  // Reports "expected X, found Y" at the current token.
  [[gnu::cold]] void errorExpected(std::string_view what) {
    error(Diag::ExpectedToken, expectedAt(pos_), what, describe(pos_));
  }
  // Consumes `kind` or reports that it is missing; `open` (if valid) is the
  // delimiter it closes, shown in a note.
  bool expect(TokenKind kind, TokenId open = TokenId{}) {
    if (at(kind)) {
      consume();
      return true;
    }
    auto builder =
        error(Diag::ExpectedToken, expectedAt(pos_), tokenKindDescription(kind), describe(pos_));
    if (builder && open.isValid()) {
      builder->note(Note::MatchingDelimiter, tokens_.source(), tokens_.range(open),
                    tokenKindSpelling(tokens_.kind(open)));
    }
    return false;
  }

  // Closes the delimiter `open`, which must be the innermost open one. On a
  // missing closer the open delimiter is still counted, so that recovery can
  // skip to its real closer. In an expression (`inExpression`), a closer
  // missing where a line ends (the next line starts another statement, or
  // the file ends) gets a note with the line as it should end: every '(' and
  // '[' the statement left open on it is closed there.
  bool expectClose(TokenKind kind, TokenId open, bool inExpression = true) {
    if (at(kind)) {
      consume();
      return true;
    }
    auto builder =
        error(Diag::ExpectedToken, expectedAt(pos_), tokenKindDescription(kind), describe(pos_));
    if (!builder) {
      return false;
    }
    builder->note(Note::MatchingDelimiter, tokens_.source(), tokens_.range(open),
                  tokenKindSpelling(tokens_.kind(open)));
    // (Not after a ',' or an opener, `[784, 256,`: the line is unfinished.)
    if (inExpression && kind != TokenKind::RBrace && pos_.index > 0 &&
        (newlineBefore() || atEnd()) && !isOpener(tokens_.kind(TokenId{pos_.index - 1})) &&
        tokens_.kind(TokenId{pos_.index - 1}) != TokenKind::Comma) {
      noteClosersAtLineEnd(*builder);
    }
    return false;
  }
  [[gnu::cold]] void noteClosersAtLineEnd(DiagnosticBuilder& builder) const {
    std::string closers;
    for (size_t i = openDelims_.size(); i > 0; --i) {
      TokenId opener = openDelims_[i - 1];
      TokenKind kind = tokens_.kind(opener);
      if (kind == TokenKind::LBrace || opener.index < syncStart_.index) {
        break;
      }
      closers += kind == TokenKind::LParen ? ')' : ']';
    }
    if (closers.empty()) {
      return;
    }
    // The previous token's line, from its first token to that token, closed.
    const SourceBuffer& source = tokens_.source();
    uint32_t end = tokens_.range(TokenId{pos_.index - 1}).end;
    std::string_view line = source.lineText(source.lineCol(end).line);
    size_t lineBegin = static_cast<size_t>(line.data() - source.text().data());
    std::string_view text = line.substr(0, end - lineBegin);
    size_t indent = text.find_first_not_of(" \t");
    text.remove_prefix(indent == std::string_view::npos ? text.size() : indent);
    std::string shown;
    if (text.size() > 56) {
      size_t from = text.size() - 44;
      while (from < text.size() && (static_cast<unsigned char>(text[from]) & 0xC0) == 0x80) {
        ++from;  // not inside a UTF-8 sequence
      }
      shown = "...";
      text.remove_prefix(from);
    }
    shown += text;
    shown += closers;
    builder.note(Note::InsertClosers, closers, shown);
  }
  // Whether the token at `pos_` starts a line indented no deeper than the
  // line of `open`, which is still open: the line of `open` misses its
  // closer, and this one starts the next statement (`let h = relu(fc1(x)`
  // then `h = ...`). An argument continued on the next line is indented
  // deeper (`f(a,` then `  b)`).
  bool startsStatementAfterUnclosed(TokenId open) const {
    return open.isValid() && newlineBefore() && !atEnd() && indentOfLine(pos_) <= indentOfLine(open);
  }

  // Skips to the end of the broken statement: past any delimiters it left
  // open, to a ';' (consumed), a line break, or a '}' that closes the block.
  // A closer matches the nearest open delimiter of its kind, so a '}' ends the
  // block even when the statement left a '(' open, and a line that starts
  // with a statement keyword is taken to start a new statement.
  void synchronize(size_t baseDelims) {
    while (!atEnd()) {
      TokenKind kind = peekKind();
      bool atBase = openDelims_.size() <= baseDelims;
      if (atBase && kind == TokenKind::Semicolon) {
        consume();
        break;
      }
      if (newlineBefore() && pos_.index > syncStart_.index &&
          (atBase || resumesAt(kind, baseDelims))) {
        break;
      }
      if (isCloser(kind)) {
        TokenKind opener = kind == TokenKind::RParen     ? TokenKind::LParen
                           : kind == TokenKind::RBracket ? TokenKind::LBracket
                                                         : TokenKind::LBrace;
        size_t match = openDelims_.size();
        while (match > baseDelims && tokens_.kind(openDelims_[match - 1]) != opener) {
          --match;
        }
        if (match > baseDelims) {
          openDelims_.resize(match - 1);  // drops delimiters left open inside
          ++pos_.index;
          continue;
        }
        if (kind == TokenKind::RBrace) {
          break;  // closes the enclosing block
        }
        ++pos_.index;  // a stray ')' or ']'
        continue;
      }
      consume();
    }
    // Delimiters opened by the broken statement and never closed.
    if (openDelims_.size() > baseDelims) {
      openDelims_.resize(baseDelims);
    }
    panic_ = false;
    splitEqual_ = false;
  }

  // Whether a keyword at the start of a line ends the skipping although the
  // broken statement left delimiters open: at top level an item keyword; in
  // a block a statement keyword, unless the broken statement opened a block
  // of its own (whose statements are skipped with it).
  bool resumesAt(TokenKind kind, size_t baseDelims) const {
    switch (kind) {
      case TokenKind::KwLayer:
      case TokenKind::KwFn:
      case TokenKind::KwMain:
      case TokenKind::KwImport: return true;
      case TokenKind::KwLet:
      case TokenKind::KwReturn:
      case TokenKind::KwIf:
      case TokenKind::KwFor:
      case TokenKind::KwWhile:
        if (baseDelims == 0) {
          return false;
        }
        for (size_t i = baseDelims; i < openDelims_.size(); ++i) {
          if (tokens_.kind(openDelims_[i]) == TokenKind::LBrace) {
            return false;
          }
        }
        return true;
      default: return false;
    }
  }

  // ---- nodes ---------------------------------------------------------------
  unsigned depthOf(uint32_t child) const {
    return child == kNone ? 0 : tree_.nodes_[child].depth;
  }
  unsigned depthOfList(uint32_t list) const {
    unsigned depth = 0;
    if (list != kNone) {
      uint32_t count = tree_.lists_[list];
      for (uint32_t i = 0; i < count; ++i) {
        depth = std::max(depth, depthOf(tree_.lists_[list + 1 + i]));
      }
    }
    return depth;
  }
  NodeId add(NodeKind kind, TokenId token, uint32_t a = kNone, uint32_t b = kNone,
             uint32_t c = kNone, unsigned childDepth = 0) {
    unsigned depth = 1 + childDepth;
    if (depth > ParseLimits::kMaxTreeDepth) {
      if (!treeTooDeepReported_) {
        treeTooDeepReported_ = true;
        auto builder = error(Diag::NestingTooDeep, tokens_.range(token),
                             ParseLimits::kMaxTreeDepth);
        if (builder) {
          builder->note(Note::NestingHint);
        }
      }
      panic_ = true;
      unwindToItem_ = true;
      kind = NodeKind::Error;
      a = b = c = kNone;
      depth = 1;
    }
    tree_.nodes_.push_back(
        Tree::Node{kind, 0, static_cast<uint16_t>(depth), token, a, b, c});
    return NodeId{static_cast<uint32_t>(tree_.nodes_.size() - 1)};
  }
  NodeId add1(NodeKind kind, TokenId token, NodeId a) {
    return add(kind, token, a.index, kNone, kNone, depthOf(a.index));
  }
  NodeId add2(NodeKind kind, TokenId token, NodeId a, NodeId b) {
    return add(kind, token, a.index, b.index, kNone, std::max(depthOf(a.index), depthOf(b.index)));
  }
  NodeId add3(NodeKind kind, TokenId token, NodeId a, NodeId b, NodeId c) {
    return add(kind, token, a.index, b.index, c.index,
               std::max({depthOf(a.index), depthOf(b.index), depthOf(c.index)}));
  }
  NodeId addError(TokenId token) { return add(NodeKind::Error, token); }
  // Lists are collected on one scratch stack (nested lists push above the
  // outer list's mark) and copied into the tree when complete, so building a
  // list allocates nothing.
  size_t listMark() const { return scratch_.size(); }
  void listPush(NodeId item) { scratch_.push_back(item); }
  uint32_t addList(size_t mark) {
    auto index = static_cast<uint32_t>(tree_.lists_.size());
    tree_.lists_.push_back(static_cast<uint32_t>(scratch_.size() - mark));
    for (size_t i = mark; i < scratch_.size(); ++i) {
      tree_.lists_.push_back(scratch_[i].index);
    }
    scratch_.resize(mark);
    return index;
  }

  // Counts one level of nesting for as long as it lives; `ok()` is false
  // (after one diagnostic) when the limit is exceeded.
  // What nests decides the advice: a sub-expression can be bound with
  // `let`, a block moved into a `fn`; a type has no way out.
  enum class Nested : uint8_t { Expression, Block, Type };
  class NestingGuard {
   public:
    explicit NestingGuard(Parser& parser, Nested what = Nested::Expression) : parser_(parser) {
      if (++parser_.nesting_ > ParseLimits::kMaxNesting) {
        ok_ = false;
        auto builder = parser_.error(Diag::NestingTooDeep, parser_.tokens_.range(parser_.pos_),
                                     ParseLimits::kMaxNesting);
        if (builder && what == Nested::Expression) {
          builder->note(Note::NestingHint);
        } else if (builder && what == Nested::Block) {
          builder->note(Note::BlockNestingHint);
        }
        parser_.panic_ = true;
        parser_.unwindToItem_ = true;
      }
    }
    ~NestingGuard() { --parser_.nesting_; }
    NestingGuard(const NestingGuard&) = delete;
    NestingGuard& operator=(const NestingGuard&) = delete;
    bool ok() const { return ok_; }

   private:
    Parser& parser_;
    bool ok_ = true;
  };

  // ---- grammar -------------------------------------------------------------
  NodeId parseItem();
  /// parseItem(), noting whether the item failed (afterFailedItem_).
  NodeId parseItemNotingFailure();
  NodeId parsePythonDefinition();
  NodeId parseFromImport();
  NodeId parseImport();
  NodeId parseCallable(NodeKind kind, bool quietHeader = false);
  NodeId parseMain();
  uint32_t parseParams(TokenId open);
  NodeId parseParam();
  NodeId parseBlock();
  /// ExpectedIdentifier for a name being declared; a keyword written there
  /// that keywordAsName() did not take (`let in + 2`) gets a note saying it
  /// is one.
  /// `next` is the keyword that follows the name there (`for in range(3)`
  /// misses the name; `in` is not one taken for it).
  [[gnu::cold]] void errorExpectedName(std::string_view what,
                                       TokenKind next = TokenKind::EndOfFile) {
    auto builder = error(Diag::ExpectedIdentifier, expectedAt(pos_), what, describe(pos_));
    if (builder && isKeyword(peekKind()) && peekKind() != next && !newlineBefore()) {
      builder->note(Note::KeywordAsName, tokens_.spelling(pos_));
    }
  }
  /// A keyword declared as a name, followed by one of `follows` as the name
  /// would be (`let in = 3`, `fn f(in: int)`, `for in in range(3)`):
  /// reported with another name to write, and consumed as the name (true).
  /// Later uses of the keyword as an operand in this item parse as that name
  /// (keywordNames_), so they are no errors of their own.
  [[gnu::cold]] bool keywordAsName(std::initializer_list<TokenKind> follows,
                                   bool orStatementEnd = false);
  bool keywordIsName(TokenKind kind) const {
    return std::find(keywordNames_.begin(), keywordNames_.end(), kind) != keywordNames_.end();
  }
  [[gnu::cold]] bool closesEnclosingBlock(TokenId open, size_t base);
  [[gnu::cold]] bool elseEndsBlock(TokenId open);
  bool unmatchedByCount(TokenId open);
  bool insideBlockOpenByCount(size_t count);
  /// The first token of the statement or item each open block belongs to
  /// (`if`, `layer`): its line's indentation is the block's, whatever line
  /// the '{' ends up on (a header over several lines).
  std::vector<TokenId> blockOwners_;
  struct BlockOwner {
    Parser& parser;
    BlockOwner(Parser& p, TokenId owner) : parser(p) { parser.blockOwners_.push_back(owner); }
    ~BlockOwner() { parser.blockOwners_.pop_back(); }
    BlockOwner(const BlockOwner&) = delete;
    BlockOwner& operator=(const BlockOwner&) = delete;
  };
  uint32_t indentOfLine(TokenId token) const;
  std::optional<std::string> cStyleForRewrite() const;
  NodeId parseStatement();
  NodeId parseLet();
  NodeId parseLetAfterKeyword();
  /// Another language's declaration keyword (`var x = 1`, `const N: int = 4`):
  /// reported, then parsed as the `let` it stands for.
  [[gnu::noinline]] bool declarationHabit();
  NodeId parseIf();
  NodeId parseCondition();
  void errorExpectedBlock(std::string_view what, std::string_view keyword, NodeId expr);
  bool skipSemicolonBeforeBlock(std::string_view keyword);
  NodeId parseFor();
  NodeId parseWhile();
  NodeId parseType();
  [[gnu::cold]] NodeId parseBracketTypeArguments(TokenId name);
  [[gnu::cold]] NodeId parseQualifiedType(TokenId name);
  [[gnu::cold]] std::optional<NodeId> parseFString();
  [[gnu::cold]] NodeId parseTuple(TokenId open, NodeId first);
  NodeId parseShape();
  NodeId parseDim(int minPrecedence);
  NodeId parseDimAtom();
  NodeId parseExpression();
  NodeId parseBinary(int minPrecedence);
  // The rare paths of the habit diagnostics are out of line (and cold), so
  // the hot functions they branch from keep small frames.
  [[gnu::noinline]] NodeId parsePythonOperator(int minPrecedence);
  [[gnu::noinline]] bool incrementHabit();
  // The cheap test before parsePythonOperator(), on the token array only:
  // the current name is two or three letters long (`or`, `and`, `is`) and
  // does not start a new statement (for a name, startsNewStatement() is a
  // significant line break before it).
  bool mayBePythonOperator() const {
    // The line break first: a name that starts the next statement is the
    // usual (and a predictable) case.
    const TokenizedBuffer::Token& token = tokens_.token(pos_);
    return ((token.flags & TokenizedBuffer::kNewlineBefore) == 0 || !newlinesSignificant()) &&
           token.length - 2 <= 1;
  }
  [[gnu::cold]] NodeId parsePythonNot();
  [[gnu::cold]] NodeId parseEllipsisIndex();
  [[gnu::cold]] void reportMissingComma(std::string_view what);
  [[gnu::cold]] NodeId parseTypeWithoutColon(bool parameter = false);
  [[gnu::cold]] NodeId parseAssignInCondition();
  [[gnu::cold]] NodeId parseNegativeDimension();
  [[gnu::cold]] NodeId reportReturnTuple(TokenId start);
  [[gnu::cold]] NodeId parseInferredSize();
  [[gnu::cold]] void reportUnpackedArgument();
  bool unpacksArgument() const;
  [[gnu::cold]] NodeId parseSizeExpression(TokenId dimStart, TokenId open);
  [[gnu::cold]] NodeId parseWithBlock();
  [[gnu::cold]] void noteStatementInMain(DiagnosticBuilder& builder, TokenId start);
  bool statementShaped(TokenId start) const;
  TokenId matchingCloser(TokenId open) const;
  TokenId calleeStart(TokenId open) const;
  /// The source text of `whole` with each of `edits` (ascending, inside it)
  /// replaced; nullopt when the result is long or spans lines (it is quoted
  /// in a note).
  std::optional<std::string> rewrittenText(
      SourceRange whole, const std::vector<std::pair<SourceRange, std::string_view>>& edits)
      const;
  NodeId parseUnary();
  NodeId parsePostfix();
  NodeId parsePrimary();
  uint32_t parseArguments();
  NodeId parseIndex();
  bool expectStatementEnd(NodeId statement);
  bool closeBlocksBeforeItem();
  void skipPythonBody();
  void skipRestOfCallable();
  void warnSignStatement(NodeId expr);
  std::string_view textOf(NodeId node) const {
    SourceRange range = tree_.range(node);
    return tokens_.source().text().substr(range.begin, range.end - range.begin);
  }

  const TokenizedBuffer& tokens_;
  DiagnosticEngine& diags_;
  Tree tree_;
  TokenId pos_{0};
  TokenId syncStart_{0};
  std::vector<TokenId> openDelims_;
  std::vector<NodeId> scratch_;  ///< items of the lists under construction
  unsigned nesting_ = 0;
  unsigned quiet_ = 0;  ///< trial parses under way: errors are not reported
  bool panic_ = false;
  bool repaired_ = false;  ///< errorAndGoOn() reported in this statement
  bool reportedAtEnd_ = false;  ///< an error at the end of the file was reported
  bool afterFailedItem_ = false;  ///< the item before this one reported an error
  bool skippedJunk_ = false;      ///< this item was junk after a failed one, skipped
  TokenId namedArgument_;    ///< the name of the named argument being parsed, if any
  TokenId namedValueStart_;  ///< the first token of its value
  bool pythonBlocks_ = false;  ///< a block written with ':' and indentation was reported
  /// Keywords declared as names (keywordAsName), reported there: by this
  /// item, or by a top-level `let` before it (a constant every item sees).
  std::vector<TokenKind> keywordNames_;
  std::vector<TokenKind> constantKeywordNames_;
  bool closeBlocks_ = false;  ///< a '}' is missing before an item: close every block
  TokenId itemStart_;         ///< first token of the item being parsed
  /// The '}' that ended the last body although it is indented as the body's
  /// statements are (an extra '}' inside it?), with the item's name and
  /// column; cleared by an item that starts at that column or left of it.
  TokenId earlyClose_;
  TokenId earlyCloseName_;
  uint32_t earlyCloseColumn_ = 0;
  void noteEarlyClose(TokenId name);
  void noteInclusiveRange(TokenId dots, TokenId equal, NodeId range);
  bool bracesMatched_ = false;
  std::vector<uint32_t> unmatchedBraces_;  ///< '{' tokens without a '}' (ascending)
  bool splitEqual_ = false;  ///< a '>=' closed a type: its '=' is pending
  /// The last item was a statement written at top level (reported with a note
  /// saying to put it in 'main'), or one skipped after such a one.
  bool statementAtTopLevel_ = false;
  bool unwindToItem_ = false;  ///< a depth limit was hit: resync at item level
  bool treeTooDeepReported_ = false;
};

// program = { item } ;
Tree Parser::run() {
  size_t items = listMark();
  while (!atEnd()) {
    if (consumeIf(TokenKind::Semicolon)) {
      continue;
    }
    syncStart_ = pos_;
    repaired_ = false;
    closeBlocks_ = false;
    pythonBlocks_ = false;
    keywordNames_ = constantKeywordNames_;
    itemStart_ = pos_;
    NodeId item = parseItemNotingFailure();
    if (item.isValid()) {
      listPush(item);
    }
    if (panic_) {
      synchronize(0);
      skipPythonBody();
      skipRestOfCallable();
      unwindToItem_ = false;
      // At top level a stray '}' would stop synchronization forever.
      if (at(TokenKind::RBrace) && openDelims_.empty()) {
        ++pos_.index;
      }
    }
  }
  tree_.root_ = add(NodeKind::Program, TokenId{0}, addList(items), kNone, kNone, 0);
  // The root's depth is irrelevant; children were already bounded.
  return std::move(tree_);
}

// After a broken item whose line ends with ':' (`def forward(self, x):`,
// `fn f(x: T) -> T:`), the lines indented under it are its Python-style
// body: they are skipped with it rather than each reported as a misplaced
// statement.
void Parser::skipPythonBody() {
  if (pos_.index == 0 || atEnd() || !newlineBefore() ||
      tokens_.kind(TokenId{pos_.index - 1}) != TokenKind::Colon || !itemStart_.isValid()) {
    return;
  }
  const SourceBuffer& source = tokens_.source();
  uint32_t itemColumn = source.lineCol(tokens_.range(itemStart_).begin).column;
  while (!atEnd() &&
         (!newlineBefore() || source.lineCol(tokens_.range(pos_).begin).column > itemColumn)) {
    ++pos_.index;
  }
}

// After a broken `layer` or `fn` header (`layer Net` with its '(' forgotten,
// a stray ')' in a parameter's type), the rest of the item is skipped up to
// the next line that starts an item at the broken one's column or left of
// it: its remaining parameter lines and its body are not each reported as
// a misplaced top-level statement.
void Parser::skipRestOfCallable() {
  if (!itemStart_.isValid()) return;
  TokenKind kind = tokens_.kind(itemStart_);
  std::string_view word = tokens_.spelling(itemStart_);
  bool callable = kind == TokenKind::KwLayer || kind == TokenKind::KwFn ||
                  (kind == TokenKind::Identifier && (word == "def" || word == "class"));
  if (!callable) return;
  const SourceBuffer& source = tokens_.source();
  uint32_t itemColumn = source.lineCol(tokens_.range(itemStart_).begin).column;
  auto startsItem = [&] {
    switch (peekKind()) {
      case TokenKind::KwLayer:
      case TokenKind::KwFn:
      case TokenKind::KwMain:
      case TokenKind::KwImport:
      case TokenKind::KwLet: return true;
      case TokenKind::Identifier: {
        std::string_view w = tokens_.spelling(pos_);
        return w == "def" || w == "class" || w == "from";
      }
      default: return false;
    }
  };
  while (!atEnd() &&
         !(newlineBefore() && startsItem() &&
           source.lineCol(tokens_.range(pos_).begin).column <= itemColumn)) {
    ++pos_.index;
  }
  openDelims_.clear();
}

// item = import | layer | fn | main | let_stmt ;
Tree Parser::runItems(std::span<const ItemTokens> items, bool& complete) {
  complete = true;
  size_t list = listMark();
  for (const ItemTokens& range : items) {
    pos_ = range.begin;
    syncStart_ = pos_;
    repaired_ = false;
    closeBlocks_ = false;
    pythonBlocks_ = false;
    keywordNames_ = constantKeywordNames_;
    itemStart_ = pos_;
    NodeId item = parseItemNotingFailure();
    if (item.isValid()) {
      listPush(item);
    }
    while (pos_.index < range.end.index && at(TokenKind::Semicolon)) {
      ++pos_.index;
    }
    if (panic_ || pos_.index != range.end.index) {
      complete = false;
      break;
    }
  }
  tree_.root_ = add(NodeKind::Program, TokenId{0}, addList(list), kNone, kNone, 0);
  return std::move(tree_);
}

NodeId Parser::parseItemNotingFailure() {
  size_t errorsBefore = diags_.errorCount();
  TokenId first = pos_;
  NodeId item = parseItem();
  // (An indented item, `let` after `main` without '{', is still the failed one's body.)
  bool indented = tokens_.source().lineCol(tokens_.range(first).begin).column > 1;
  afterFailedItem_ = diags_.errorCount() > errorsBefore || std::exchange(skippedJunk_, false) ||
                     (afterFailedItem_ && indented);
  return item;
}

NodeId Parser::parseItem() {
  bool afterStatement = std::exchange(statementAtTopLevel_, false);
  if (earlyClose_.isValid() &&
      tokens_.source().lineCol(tokens_.range(pos_).begin).column <= earlyCloseColumn_) {
    earlyClose_ = TokenId{};
  }
  switch (peekKind()) {
    case TokenKind::KwImport: return parseImport();
    case TokenKind::KwLayer: return parseCallable(NodeKind::Layer);
    case TokenKind::KwFn: return parseCallable(NodeKind::Fn);
    case TokenKind::KwMain: return parseMain();
    case TokenKind::KwLet: {
      NodeId let = parseLet();
      expectStatementEnd(let);
      if (tree_.kind(let) == NodeKind::Let && isKeyword(tokens_.kind(tree_.token(let)))) {
        constantKeywordNames_.push_back(tokens_.kind(tree_.token(let)));
      }
      return let;
    }
    default: break;
  }
  TokenId start = pos_;
  if (at(TokenKind::Identifier)) {
    if (declarationHabit()) {
      NodeId let = parseLetAfterKeyword();
      expectStatementEnd(let);
      return let;
    }
    std::string_view word = tokens_.spelling(start);
    if (word == "def" || word == "class") {
      return parsePythonDefinition();
    }
    if (word == "from") {
      return parseFromImport();
    }
    if (word == "with" && peekKind(1) == TokenKind::Identifier &&
        !tokens_.hasNewlineBefore(TokenId{start.index + 1})) {
      // Python's `with torch.no_grad():` at top level: said once, and the block skipped
      // (synchronize() skips a { } body) rather than each of its lines reported.
      if (auto builder = error(Diag::WithBlock, tokens_.range(start))) {
        builder->note(Note::WithBlockInMain);
      }
      return addError(start);
    }
  }
  // Lines at top level after an item that failed are mostly the rest of it (the body of a
  // header that missed its '{', a header that lost its first line): that item's error said
  // what is wrong, and one error per line would only repeat it. They are skipped
  // unreported, up to the next item that parses.
  // (A line at the first column that starts like an item, `lyer B(...)`, `x = 3`, is an
  // error of its own: reported.)
  // So are the statements after a statement at top level (`model = Net()`, then
  // `print(model(x))`): the first one's note says where they go.
  if (afterFailedItem_ && (tokens_.source().lineCol(tokens_.range(start).begin).column > 1 ||
                           !at(TokenKind::Identifier) ||
                           (afterStatement && statementShaped(start)))) {
    statementAtTopLevel_ = afterStatement;
    panic_ = true;
    skippedJunk_ = true;
    earlyClose_ = TokenId{};
    return addError(start);
  }
  auto builder = error(Diag::ExpectedItem, tokens_.range(start), describe(start));
  statementAtTopLevel_ = statementShaped(start);
  if (builder && earlyClose_.isValid()) {
    builder->note(Note::BodyEndedEarly, tokens_.source(), tokens_.range(earlyClose_),
                  tokens_.spelling(earlyCloseName_));
    earlyClose_ = TokenId{};
  } else if (builder && at(TokenKind::At)) {
    // Python's decorator, `@torch.no_grad()`: its line, quoted in the note.
    TokenId last = start;
    while (tokens_.kind(TokenId{last.index + 1}) != TokenKind::EndOfFile &&
           !tokens_.hasNewlineBefore(TokenId{last.index + 1})) {
      ++last.index;
    }
    builder->note(Note::NoDecorators, sourceText(start, last, "@..."));
  } else if (builder && statementShaped(start)) {
    noteStatementInMain(*builder, start);
  } else if (builder && at(TokenKind::Identifier)) {
    std::string_view match = closestMatch(tokens_.spelling(start), itemKeywords());
    if (!match.empty()) {
      builder->note(Note::DidYouMean, tokens_.source(), tokens_.range(start), match);
    }
  }
  // synchronize() skips the junk, including a whole { } body after it.
  return addError(start);
}

// Python's `def f(...)` and `class C(...)` at top level: the keyword is
// reported, and when the rest reads as a fn (a layer) header, up to the '{'
// of its body, the item is parsed as one, so mistakes in its body are still
// found. A header that does not parse (`def forward(self, x):`) is skipped
// with the keyword's error alone.
NodeId Parser::parsePythonDefinition() {
  TokenId word = pos_;
  bool isClass = tokens_.spelling(word) == "class";
  error(Diag::MisspelledKeyword, tokens_.range(word), tokens_.spelling(word),
        isClass ? "write 'layer'" : "write 'fn' (or 'layer' for a module with weights)");
  panic_ = false;
  return parseCallable(isClass ? NodeKind::Layer : NodeKind::Fn, /*quietHeader=*/true);
}

// Python's `from "blocks.tri" import A, B` (or `from blocks import A`):
// reported with the import to write; the line is skipped.
NodeId Parser::parseFromImport() {
  TokenId word = consume();
  std::string path;
  if (at(TokenKind::StringLiteral)) {
    path = tokens_.stringValue(pos_);
    consume();
  } else if (at(TokenKind::Identifier)) {
    // `from models.blocks import X` names the file "models/blocks.tri".
    path = tokens_.spelling(consume());
    while (at(TokenKind::Dot) && peekKind(1) == TokenKind::Identifier && !newlineBefore()) {
      consume();
      path += "/";
      path += tokens_.spelling(consume());
    }
    path += ".tri";
  } else {
    path = "FILE.tri";
  }
  std::string_view member = "NAME";
  if (at(TokenKind::KwImport) && !newlineBefore() && peekKind(1) == TokenKind::Identifier) {
    member = tokens_.spelling(TokenId{pos_.index + 1});
  }
  auto builder = error(Diag::MisspelledKeyword, tokens_.range(word), "from",
                       fmt::format("write 'import \"{}\"'", path));
  if (builder) {
    builder->note(Note::ImportWholeFile, path, member);
  }
  return addError(word);
}

// import = "import" STRING [ "as" IDENT ] ;
NodeId Parser::parseImport() {
  TokenId keyword = consume();
  if (!at(TokenKind::StringLiteral)) {
    auto builder = error(Diag::ImportPathNotString, expectedAt(pos_), describe(pos_));
    std::string_view module = at(TokenKind::Identifier) ? tokens_.spelling(pos_) : "";
    if (builder && (module == "torch" || module == "numpy" || module == "np" || module == "math" ||
                    module == "tritonrt")) {
      builder->note(Note::NoLibraryImport, module);
    }
    return addError(keyword);
  }
  TokenId path = consume();
  uint32_t alias = kNone;
  if (at(TokenKind::Identifier) && tokens_.spelling(pos_) == "as" && !newlineBefore()) {
    consume();
    if (!at(TokenKind::Identifier)) {
      error(Diag::ExpectedIdentifier, expectedAt(pos_), "a module name after 'as'",
            describe(pos_));
      return addError(keyword);
    }
    alias = consume().index;
  }
  NodeId node = add(NodeKind::Import, path, kNone, alias);
  expectStatementEnd(node);
  return node;
}

// layer = "layer" IDENT "(" [ params ] ")" [ "->" type ] block ;
// fn    = "fn" IDENT "(" [ params ] ")" [ "->" type ] block ;
// With `quietHeader` (after Python's `def`, already reported) errors up to
// the body's '{' are not reported: they end the item, which is skipped.
NodeId Parser::parseCallable(NodeKind kind, bool quietHeader) {
  std::optional<QuietScope> quiet;
  if (quietHeader) {
    quiet.emplace(*this);
  }
  TokenId keyword = consume();
  if (kind == NodeKind::Fn && at(TokenKind::KwMain)) {
    // `fn main() {`: the entry point, declared as in Rust or C.
    TokenId word = consume();
    error(Diag::FnMain, rangeOf(keyword, word));
    if (at(TokenKind::LParen) && peekKind(1) == TokenKind::RParen) {
      consume();
      consume();
    }
    if (at(TokenKind::LBrace) && !quietHeader) {
      panic_ = false;  // reported; the body is a main's
      NodeId body = parseBlock();
      return add(NodeKind::Main, word, kNone, kNone, body.index, depthOf(body.index));
    }
    return addError(keyword);
  }
  if (!at(TokenKind::Identifier)) {
    // (`fn while()`: a keyword there gets the note that it is one.)
    errorExpectedName(kind == NodeKind::Layer ? "a layer name" : "a function name");
    return addError(keyword);
  }
  TokenId name = consume();
  if (!at(TokenKind::LParen)) {
    errorExpected("'(' to start the parameter list");
    return addError(name);
  }
  TokenId open = consume();
  uint32_t params = parseParams(open);
  if (panic_) {
    return addError(name);
  }
  NodeId returnType;
  if (consumeIf(TokenKind::Arrow)) {
    if (at(TokenKind::LParen)) [[unlikely]] {
      // `-> (T, T)`: Python's tuple of results; there are no tuple types.
      auto builder = error(Diag::ExpectedType, tokens_.range(pos_), describe(pos_));
      if (builder) {
        builder->note(Note::TupleReturnType);
      }
      return addError(name);
    }
    returnType = parseType();
    if (splitEqual_) {  // `-> T<...>=`: no '=' belongs here
      splitEqual_ = false;
      error(Diag::ExpectedToken, tokens_.range(TokenId{pos_.index - 1}), "'>'", "'>='");
    }
    if (panic_) {
      return addError(name);
    }
  } else if (at(TokenKind::Equal) && peekKind(1) == TokenKind::Greater &&
             tokens_.range(pos_).end == tokens_.range(TokenId{pos_.index + 1}).begin) {
    // `layer L(...) => T {` (JavaScript's, Scala's or C#'s arrow): reported,
    // and the return type is parsed.
    TokenId equal = consume();
    TokenId greater = consume();
    auto builder = errorAndGoOn(Diag::ExpectedToken, rangeOf(equal, greater),
                                "'->' before the return type", "'=>'");
    if (builder) {
      builder->note(Note::DidYouMean, tokens_.source(), rangeOf(equal, greater), "->");
    }
    returnType = parseType();
    if (panic_) {
      return addError(name);
    }
  } else if (at(TokenKind::Minus) && peekKind(1) == TokenKind::Greater &&
             !tokens_.hasNewlineBefore(TokenId{pos_.index + 1})) {
    // `layer L(...) - > T {`: an arrow split by a space, reported, and the return
    // type is parsed.
    TokenId minus = consume();
    TokenId greater = consume();
    SourceRange both = rangeOf(minus, greater);
    std::string_view written =
        tokens_.source().text().substr(both.begin, both.end - both.begin);
    auto builder = errorAndGoOn(
        Diag::ExpectedToken, both, "'->' before the return type",
        written.size() <= 8 ? fmt::format("'{}'", written) : std::string("'-'"));
    if (builder) {
      builder->note(Note::DidYouMean, tokens_.source(), both, "->");
    }
    returnType = parseType();
    if (panic_) {
      return addError(name);
    }
  } else if ((at(TokenKind::Colon) || at(TokenKind::Identifier)) && !newlineBefore()) {
    // `fn f(x: T): T {` (the annotation of TypeScript or Kotlin) or
    // `fn f(x: T) T {`: when a type and then the body follow on the line,
    // the '->' is what is missing.
    TokenId where = pos_;
    Checkpoint point = checkpoint();
    NodeId type;
    {
      QuietScope trial(*this);
      consumeIf(TokenKind::Colon);
      if (at(TokenKind::Identifier) && !newlineBefore()) {
        type = parseType();
      }
    }
    if (type.isValid() && !panic_ && !splitEqual_ && at(TokenKind::LBrace)) {
      auto builder = errorAndGoOn(Diag::ExpectedToken, expectedAt(where),
                                  "'->' before the return type", describe(where));
      if (builder && tokens_.kind(where) == TokenKind::Colon) {
        std::string fix = "-> " + std::string(textOf(type));
        builder->note(Note::WriteInstead, tokens_.source(),
                      SourceRange{tokens_.range(where).begin, tree_.range(type).end},
                      fix.size() > 52 ? std::string("-> TYPE") : fix);
      }
      returnType = type;
    } else {
      rewind(point);
    }
  }
  if (!at(TokenKind::LBrace)) {
    auto builder = error(Diag::ExpectedToken, expectedAt(pos_),
                         kind == NodeKind::Layer ? "'{' to start the layer body"
                                                 : "'{' to start the function body",
                         describe(pos_));
    if (builder && at(TokenKind::Colon)) {
      std::string header = fmt::format("{} {}(...)", tokens_.spelling(keyword),
                                        tokens_.spelling(name));
      if (returnType.isValid()) {
        std::string_view type = textOf(returnType);
        header += " -> ";
        header += type.size() > 40 || type.find('\n') != std::string_view::npos
                      ? std::string_view("...")
                      : type;
      }
      builder->note(Note::BlockInBraces, header);
    }
    return addError(name);
  }
  quiet.reset();
  NodeId body = parseBlock();
  noteEarlyClose(name);
  return add(kind, name, params, returnType.index, body.index,
             std::max({depthOfList(params), depthOf(returnType.index), depthOf(body.index)}));
}

// main = "main" block ;
NodeId Parser::parseMain() {
  TokenId keyword = consume();
  if (at(TokenKind::LParen) && peekKind(1) == TokenKind::RParen && !newlineBefore()) {
    // `main() {`: reported, and the body is parsed.
    TokenId open = consume();
    TokenId close = consume();
    if (at(TokenKind::LBrace)) {
      errorAndGoOn(Diag::MainParameters, rangeOf(open, close));
    }
  } else if (at(TokenKind::LParen) && !newlineBefore()) {
    error(Diag::MainParameters, tokens_.range(pos_));
    return addError(keyword);
  }
  if (!at(TokenKind::LBrace)) {
    errorExpected("'{' after 'main'");
    return addError(keyword);
  }
  NodeId body = parseBlock();
  noteEarlyClose(keyword);
  return add(NodeKind::Main, keyword, kNone, kNone, body.index, depthOf(body.index));
}

void Parser::noteEarlyClose(TokenId name) {
  earlyClose_ = TokenId{};
  if (pos_.index == 0 || !itemStart_.isValid()) return;
  TokenId close{pos_.index - 1};
  const SourceBuffer& source = tokens_.source();
  uint32_t column = source.lineCol(tokens_.range(itemStart_).begin).column;
  if (tokens_.kind(close) == TokenKind::RBrace && tokens_.hasNewlineBefore(close) &&
      source.lineCol(tokens_.range(close).begin).column > column) {
    earlyClose_ = close;
    earlyCloseName_ = name;
    earlyCloseColumn_ = column;
  }
}

// params = param { "," param } [ "," ] ;   (after the opening parenthesis)
uint32_t Parser::parseParams(TokenId open) {
  size_t params = listMark();
  NestingGuard guard(*this, Nested::Type);
  if (!guard.ok()) {
    return addList(params);
  }
  while (!at(TokenKind::RParen)) {
    listPush(parseParam());
    if (panic_) {
      return addList(params);
    }
    if (consumeIf(TokenKind::Comma)) {
      continue;
    }
    // `a: int b: int`: another parameter follows, so a ',' is missing.
    if (at(TokenKind::Identifier) && peekKind(1) == TokenKind::Colon) {
      reportMissingComma("',' between parameters");
      continue;
    }
    break;
  }
  expectClose(TokenKind::RParen, open, /*inExpression=*/false);
  return addList(params);
}

// param = IDENT ":" type [ "=" expr ] ;
NodeId Parser::parseParam() {
  if ((at(TokenKind::Star) || at(TokenKind::StarStar)) &&
      peekKind(1) == TokenKind::Identifier) [[unlikely]] {
    // Python's `*args` and `**kwargs`: reported, and the parameter dropped.
    TokenId star = consume();
    TokenId name = consume();
    errorAndGoOn(Diag::VariadicParameter, rangeOf(star, name), sourceText(star, name, "**kwargs"));
    return addError(name);
  }
  if (!at(TokenKind::Identifier) && !keywordAsName({TokenKind::Colon})) {
    errorExpectedName("a parameter name");
    return addError(pos_);
  }
  TokenId name = consume();
  if (!at(TokenKind::Colon) && (at(TokenKind::Comma) || at(TokenKind::RParen)) &&
      tokens_.spelling(name) == "self") {
    // Python's `def forward(self, x)`: reported, and the parameter dropped.
    errorAndGoOn(Diag::SelfReference, tokens_.range(name));
    return addError(name);
  }
  if (!at(TokenKind::Colon) && at(TokenKind::Identifier) && !newlineBefore()) {
    // `x Tensor<float32, [?, 4]>`: a type follows, its ':' is missing.
    if (NodeId type = parseTypeWithoutColon(/*parameter=*/true); type.isValid()) {
      NodeId init;
      if (consumeEqual()) init = parseExpression();
      return add2(NodeKind::Param, name, type, init);
    }
  }
  if (at(TokenKind::Equal) && !newlineBefore()) {
    // `b1 = Tensor<float32, [256]>`: '=' written for ':' (a type follows).
    static constexpr std::string_view kTypeWords[] = {
        "Tensor", "TernaryTensor", "tensor", "int", "float", "bool", "trit", "str", "float16",
        "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8"};
    TokenId next{pos_.index + 1};
    if (next.index < tokens_.size() && tokens_.kind(next) == TokenKind::Identifier &&
        std::find(std::begin(kTypeWords), std::end(kTypeWords), tokens_.spelling(next)) !=
            std::end(kTypeWords)) {
      Checkpoint point = checkpoint();
      TokenId equal = consume();
      NodeId type;
      {
        QuietScope trial(*this);
        type = parseType();
      }
      if (!panic_ && (at(TokenKind::Comma) || at(TokenKind::RParen) || at(TokenKind::Equal))) {
        errorAndGoOn(Diag::ExpectedToken, tokens_.range(equal), "':' before the type",
                     describe(equal));
        NodeId init;
        if (consumeEqual()) init = parseExpression();
        return add2(NodeKind::Param, name, type, init);
      }
      rewind(point);
    }
  }
  if (!at(TokenKind::Colon)) {
    auto builder = error(Diag::MissingParamType, tokens_.range(name), tokens_.spelling(name));
    if (builder) {
      builder->note(Note::ParamTypeHint, tokens_.spelling(name));
    }
    return addError(name);
  }
  consume();
  NodeId type = parseType();
  NodeId init;
  if (!panic_ && consumeEqual()) {
    init = parseExpression();
  }
  return add2(NodeKind::Param, name, type, init);
}

// block = "{" { stmt } "}" ;
NodeId Parser::parseBlock() {
  TokenId open = pos_;
  NestingGuard guard(*this, Nested::Block);
  if (!guard.ok()) {
    return addError(open);
  }
  size_t base = openDelims_.size();
  // A body's owner is its item; a nested block's, the statement that holds it.
  BlockOwner owner(*this, blockOwners_.empty() ? (itemStart_.isValid() ? itemStart_ : open)
                                               : syncStart_);
  consume();  // '{'
  size_t statements = listMark();
  bool endsAtElse = false;
  while (!at(TokenKind::RBrace) && !atEnd() && !closeBlocks_) {
    if (consumeIf(TokenKind::Semicolon)) {
      continue;
    }
    syncStart_ = pos_;
    repaired_ = false;
    if (at(TokenKind::KwElse) && elseEndsBlock(open)) [[unlikely]] {
      endsAtElse = true;  // reported; the 'if' that owns this block takes the 'else'
      break;
    }
    NodeId statement = parseStatement();
    if (statement.isValid() && tree_.kind(statement) == NodeKind::Block) [[unlikely]] {
      // The block of a `with` (reported): its statements, as the note says to write them.
      uint32_t list = tree_.nodes_[statement.index].a;
      for (uint32_t i = 0; i < tree_.lists_[list]; ++i) {
        listPush(NodeId{tree_.lists_[list + 1 + i]});
      }
    } else if (statement.isValid()) {
      listPush(statement);
    }
    if (panic_) {
      if (unwindToItem_) {
        // Unwinding from a depth overflow: the item loop skips the rest.
        scratch_.resize(statements);
        return addError(open);
      }
      synchronize(base + 1);
    }
  }
  uint32_t list = addList(statements);
  repaired_ = false;
  TokenId close = pos_;
  // A '}' missing before an 'else' (elseEndsBlock), before an item
  // (closeBlocksBeforeItem), or before a '}' that belongs to the enclosing
  // block (closesEnclosingBlock) was reported: the block ends after its last
  // token, and what follows is the enclosing block's.
  if (endsAtElse || closeBlocks_ ||
      (at(TokenKind::RBrace) && newlineBefore() &&
       indentOfLine(pos_) < indentOfLine(blockOwners_.back()) &&
       closesEnclosingBlock(open, base))) [[unlikely]] {
    openDelims_.resize(base);
    close = TokenId{pos_.index - 1};
  } else if (!expectClose(TokenKind::RBrace, open)) {
    return addError(open);
  }
  return add(NodeKind::Block, open, list, kNone, close.index, depthOfList(list));
}

// `} else {` with its '}' deleted: an 'else' that starts a line indented as
// the 'if' owning this block ends the block there. Reported as the missing
// '}' (not "'else' without a preceding 'if'" and a missing '}' at the end).
bool Parser::elseEndsBlock(TokenId open) {
  if (quiet_ > 0 || !newlineBefore() || blockOwners_.empty() ||
      tokens_.kind(blockOwners_.back()) != TokenKind::KwIf ||
      indentOfLine(pos_) != indentOfLine(blockOwners_.back())) {
    return false;
  }
  // Only in a block the brace count leaves open (a '}' is missing around here).
  if (!insideBlockOpenByCount(openDelims_.size())) {
    return false;
  }
  const SourceBuffer& source = tokens_.source();
  auto builder = errorAndGoOn(Diag::UnclosedBlock, expectedAt(pos_),
                              source.lineCol(tokens_.range(open).begin).line);
  if (builder) {
    builder->note(Note::MatchingDelimiter, source, tokens_.range(open), "{");
  }
  return true;
}

// Whether the '{' at `open` has no '}' when the file's braces are matched by
// count alone (computed once, for the error paths that ask).
bool Parser::unmatchedByCount(TokenId open) {
  if (!bracesMatched_) {
    bracesMatched_ = true;
    for (uint32_t i = 0; i < tokens_.size(); ++i) {
      TokenKind kind = tokens_.kind(TokenId{i});
      if (kind == TokenKind::LBrace) {
        unmatchedBraces_.push_back(i);
      } else if (kind == TokenKind::RBrace && !unmatchedBraces_.empty()) {
        unmatchedBraces_.pop_back();
      }
    }
  }
  return std::binary_search(unmatchedBraces_.begin(), unmatchedBraces_.end(), open.index);
}

// Whether one of the first `count` open delimiters is a '{' the brace count
// leaves without a '}'.
bool Parser::insideBlockOpenByCount(size_t count) {
  for (size_t i = 0; i < count && i < openDelims_.size(); ++i) {
    if (tokens_.kind(openDelims_[i]) == TokenKind::LBrace && unmatchedByCount(openDelims_[i])) {
      return true;
    }
  }
  return false;
}

// The number of spaces and tabs that start the line of `token`.
uint32_t Parser::indentOfLine(TokenId token) const {
  const SourceBuffer& source = tokens_.source();
  std::string_view line = source.lineText(source.lineCol(tokens_.range(token).begin).line);
  size_t indent = line.find_first_not_of(" \t");
  return static_cast<uint32_t>(indent == std::string_view::npos ? line.size() : indent);
}

// A '}' (first on its line) that ends the block opened at `open` by count,
// but is indented less than the statement that owns the block, as the
// statement owning the block around it is: inside a block the brace count
// leaves open, this block's '}' is taken to be the missing one, not the
// enclosing block's (which `closeBlocksBeforeItem` would report at the next
// item). The error points where the block's lines end: before its first line
// indented no deeper than its statement, else after its last token. Blocks
// the count closes (files whose braces balance) are never second-guessed.
bool Parser::closesEnclosingBlock(TokenId open, size_t base) {
  if (quiet_ > 0) {
    return false;
  }
  const SourceBuffer& source = tokens_.source();
  uint32_t closeIndent = indentOfLine(pos_);
  TokenId enclosing;
  for (size_t i = base; i-- > 0;) {
    if (tokens_.kind(openDelims_[i]) == TokenKind::LBrace) {
      enclosing = openDelims_[i];
      break;
    }
  }
  // The enclosing block's statement indented as the '}', inside a block the
  // count leaves open (the '}' missing is around here, not in a later item).
  if (!enclosing.isValid() || blockOwners_.size() < 2 ||
      indentOfLine(blockOwners_[blockOwners_.size() - 2]) != closeIndent ||
      !insideBlockOpenByCount(base)) {
    return false;
  }
  uint32_t openIndent = indentOfLine(blockOwners_.back());
  TokenId end{pos_.index - 1};
  for (uint32_t i = open.index + 1; i < pos_.index; ++i) {
    if (tokens_.hasNewlineBefore(TokenId{i}) && indentOfLine(TokenId{i}) <= openIndent) {
      end = TokenId{i - 1};
      break;
    }
  }
  uint32_t openLine = source.lineCol(tokens_.range(open).begin).line;
  SourceRange at = tokens_.range(end);
  auto builder = errorAndGoOn(Diag::UnclosedBlock, SourceRange{at.end, at.end}, openLine);
  if (builder) {
    builder->note(Note::MatchingDelimiter, source, tokens_.range(open), "{");
    builder->note(Note::ClosedByIndentation, source, tokens_.range(pos_),
                  source.lineCol(tokens_.range(blockOwners_[blockOwners_.size() - 2]).begin).line);
  }
  return true;
}

// stmt = let_stmt | "return" [ expr ] | assign | if_stmt
//      | "for" IDENT "in" expr block | "while" expr block
//      | "break" | "continue" | expr ;
// assign = postfix ( "=" | "+=" | "-=" | "*=" | "/=" | "@=" ) expr ;
NodeId Parser::parseStatement() {
  TokenId start = pos_;
  NodeId node;
  switch (peekKind()) {
    case TokenKind::KwLet: node = parseLet(); break;
    case TokenKind::KwReturn: {
      consume();
      NodeId value;
      if (!at(TokenKind::RBrace) && !at(TokenKind::Semicolon) && !atEnd() && !newlineBefore()) {
        value = parseExpression();
        if (!panic_ && at(TokenKind::Comma)) {
          return reportReturnTuple(start);
        }
      }
      node = add1(NodeKind::Return, start, value);
      break;
    }
    case TokenKind::KwIf: return parseIf();
    case TokenKind::KwFor: return parseFor();
    case TokenKind::KwWhile: return parseWhile();
    case TokenKind::KwBreak: consume(); node = add(NodeKind::Break, start); break;
    case TokenKind::KwContinue: consume(); node = add(NodeKind::Continue, start); break;
    case TokenKind::KwElse:
      // After `if c:` was reported (blocks by indentation), its `else:` is
      // the same habit, not a second mistake.
      if (pythonBlocks_ && peekKind(1) == TokenKind::Colon) {
        panic_ = true;
        return addError(start);
      }
      error(Diag::ElseWithoutIf, tokens_.range(start));
      return addError(start);
    case TokenKind::KwLayer:
    case TokenKind::KwFn:
    case TokenKind::KwMain:
    case TokenKind::KwImport:
      if (closeBlocksBeforeItem()) {
        return NodeId{};
      }
      error(Diag::ExpectedStatement, tokens_.range(start), describe(start));
      return addError(start);
    default: {
      if (at(TokenKind::Identifier) && declarationHabit()) [[unlikely]] {
        node = parseLetAfterKeyword();
        break;
      }
      if (at(TokenKind::Identifier) && peekKind(1) == TokenKind::Identifier &&
          !tokens_.hasNewlineBefore(TokenId{pos_.index + 1}) && spelledAs(pos_, "with"))
          [[unlikely]] {
        // Python's `with torch.no_grad():` (a block of its own, spliced by parseBlock).
        return parseWithBlock();
      }
      if (at(TokenKind::Identifier) && peekKind(1) == TokenKind::LParen &&
          peekKind(2) == TokenKind::Identifier && peekKind(3) == TokenKind::Colon &&
          !tokens_.hasNewlineBefore(TokenId{pos_.index + 1})) [[unlikely]] {
        // `forward(x: Tensor<...>) -> ... {` in a layer's body (other frameworks' forward
        // method), or a function defined inside a body: parameters with types.
        bool forward = tokens_.spelling(start) == "forward";
        error(Diag::DefinitionInBody, tokens_.range(start), tokens_.spelling(start),
              forward ? "a layer has no methods, its body is forward(); write the inputs as "
                        "the layer's parameters after its hyperparameters (layer L(c: int, "
                        "x: Tensor<...>) -> ...) and these statements in the layer's body"
                      : "functions do not nest; write it as a 'fn' at the top level of the "
                        "file");
        return addError(start);
      }
      if (at(TokenKind::Identifier) && peekKind(1) == TokenKind::Colon &&
          !tokens_.hasNewlineBefore(TokenId{pos_.index + 1})) [[unlikely]] {
        // Python's annotated assignment `x: int = 3`: a declaration without
        // its 'let', parsed as the declaration.
        errorAndGoOn(Diag::MissingLet, tokens_.range(start), tokens_.spelling(start));
        node = parseLetAfterKeyword();
        break;
      }
      NodeId expr = parseExpression();
      if (panic_) {
        return expr;
      }
      if (isAssignOperator(peekKind()) && !startsNewStatement()) {
        TokenId op = consume();
        NodeKind targetKind = tree_.kind(expr);
        if (targetKind != NodeKind::Name && targetKind != NodeKind::Index &&
            targetKind != NodeKind::Member) {
          error(Diag::InvalidAssignTarget, tree_.range(expr));
          return addError(start);
        }
        NodeId value = parseExpression();
        node = add2(NodeKind::Assign, op, expr, value);
      } else {
        node = add1(NodeKind::ExprStmt, start, expr);
        warnSignStatement(expr);
      }
      break;
    }
  }
  expectStatementEnd(node);
  return node;
}

// An item keyword that starts a statement is a missing '}' before it when it
// starts a line no further right than the item being parsed and one of the
// open blocks has no '}' anywhere in the file (`}` forgotten at the end of
// the previous layer). Reports it once, at the end of the statement before,
// and sets `closeBlocks_`: every open block ends there and the item is
// parsed as one. An item indented inside a closed block stays an error of
// its own (ExpectedStatement).
bool Parser::closeBlocksBeforeItem() {
  if (!newlineBefore() || quiet_ > 0 || !itemStart_.isValid()) {
    return false;
  }
  const SourceBuffer& source = tokens_.source();
  if (source.lineCol(tokens_.range(pos_).begin).column >
      source.lineCol(tokens_.range(itemStart_).begin).column) {
    return false;
  }
  // The innermost open block without a '}'.
  TokenId unclosed;
  for (TokenId open : openDelims_) {
    if (tokens_.kind(open) == TokenKind::LBrace && unmatchedByCount(open)) {
      unclosed = open;
    }
  }
  if (!unclosed.isValid()) {
    return false;
  }
  auto builder =
      errorAndGoOn(Diag::ExpectedToken, expectedAt(pos_), "'}'", describe(pos_));
  if (builder) {
    builder->note(Note::MatchingDelimiter, source, tokens_.range(unclosed), "{");
  }
  closeBlocks_ = true;
  return true;
}

// A statement ends at ';', at a line break, before '}' or at end of file.
bool Parser::expectStatementEnd(NodeId statement) {
  if (panic_) {
    return false;
  }
  if (consumeIf(TokenKind::Semicolon) || at(TokenKind::RBrace) || atEnd() || newlineBefore()) {
    return true;
  }
  // `retrun x` and `} elif c {` parse as a name followed by junk: the name is
  // the mistake, so it is what the error points at.
  NodeId expr = tree_.kind(statement) == NodeKind::ExprStmt ? tree_.childA(statement) : NodeId{};
  // `let f = lambda t: t`: Python's lambda, here a name followed by junk.
  NodeId value = tree_.kind(statement) == NodeKind::Let ? tree_.childB(statement) : NodeId{};
  if (value.isValid() && tree_.kind(value) == NodeKind::Name &&
      tokens_.spelling(tree_.token(value)) == "lambda") {
    error(Diag::MisspelledKeyword, tokens_.range(tree_.token(value)), "lambda",
          "there are no lambdas; declare a 'fn' and call it by name");
    return false;
  }
  if (expr.isValid() && tree_.kind(expr) == NodeKind::Name) {
    TokenId nameToken = tree_.token(expr);
    std::string_view name = tokens_.spelling(nameToken);
    // In a body: `def forward(self, x):` of a PyTorch module, or a nested
    // function; neither is written so here.
    TokenId defined{nameToken.index + 1};
    std::string_view method =
        defined.index < tokens_.size() && tokens_.kind(defined) == TokenKind::Identifier
            ? tokens_.spelling(defined) : std::string_view();
    std::string fix =
        name == "elif" ? "write 'else if'"
        : name == "def" && (method == "forward" || method == "__init__")
            ? "a layer has no methods: its body is forward(); write the statements in the "
              "layer's body and the inputs as the layer's parameters"
        : name == "def" ? "write 'fn' at the top level of the file (functions do not nest)"
                      : name == "assert" ? "it is a function: write 'assert(condition, \"message\")'"
                      : name == "print" ? "it is a function: write 'print(value)'"
                      : name == "raise" ? "there are no exceptions: write 'assert(condition, \"message\")'"
                                      : "";
    if (fix.empty()) {
      std::string_view match = closestMatch(name, statementKeywords());
      if (!match.empty()) fix = fmt::format("did you mean '{}'?", match);
    }
    if (!fix.empty()) {
      error(Diag::MisspelledKeyword, tokens_.range(nameToken), name, fix);
      return false;
    }
  }
  // `relu(sigmoid(x)))`: one closer too many (the one missing an opener is
  // the mistake, or the opener is).
  if (at(TokenKind::RParen) || at(TokenKind::RBracket)) {
    bool paren = at(TokenKind::RParen);
    error(Diag::UnmatchedClosing, tokens_.range(pos_), paren ? "')'" : "']'",
          paren ? "'('" : "'['");
    return false;
  }
  // Python's `a if c else b` and C's `c ? a : b`.
  if (at(TokenKind::KwIf) || at(TokenKind::Question)) {
    error(Diag::ConditionalExpression, tokens_.range(pos_));
    return false;
  }
  error(Diag::ExpectedStatementEnd, tokens_.range(pos_), describe(pos_));
  return false;
}

// let_stmt = "let" IDENT [ ":" type ] [ "=" expr ] ;
NodeId Parser::parseLet() {
  consume();  // 'let'
  return parseLetAfterKeyword();
}

bool Parser::declarationHabit() {
  std::string_view word = tokens_.spelling(pos_);
  // C's `int y = n * 2`: the type first, no 'let'.
  static constexpr std::pair<std::string_view, std::string_view> kCTypes[] = {
      {"int", "int"},         {"float", "float"},       {"double", "float32"},
      {"long", "int64"},      {"bool", "bool"},         {"int8", "int8"},
      {"int16", "int16"},     {"int32", "int32"},       {"int64", "int64"},
      {"float16", "float16"}, {"float32", "float32"},   {"float64", "float32"},
      {"bfloat16", "bfloat16"}};
  for (const auto& [c, dsl] : kCTypes) {
    if (word != c || peekKind(1) != TokenKind::Identifier ||
        tokens_.hasNewlineBefore(TokenId{pos_.index + 1}) ||
        (peekKind(2) != TokenKind::Equal && peekKind(2) != TokenKind::Semicolon)) {
      continue;
    }
    error(Diag::TypeBeforeName, tokens_.range(pos_), dsl,
          tokens_.spelling(TokenId{pos_.index + 1}));
    consume();
    panic_ = false;
    return true;
  }
  if ((word != "var" && word != "val" && word != "const" && word != "auto") ||
      peekKind(1) != TokenKind::Identifier || tokens_.hasNewlineBefore(TokenId{pos_.index + 1}) ||
      (peekKind(2) != TokenKind::Equal && peekKind(2) != TokenKind::Colon)) {
    return false;
  }
  error(Diag::MisspelledKeyword, tokens_.range(pos_), word, "declare it with 'let'");
  consume();
  panic_ = false;
  return true;
}

NodeId Parser::parseLetAfterKeyword() {
  if (at(TokenKind::Identifier) && tokens_.spelling(pos_) == "mut" &&
      peekKind(1) == TokenKind::Identifier && !tokens_.hasNewlineBefore(TokenId{pos_.index + 1}))
      [[unlikely]] {
    // Rust's `let mut x = 0`: every `let` variable can be assigned again.
    error(Diag::MisspelledKeyword, tokens_.range(pos_), "mut",
          "leave it out (a 'let' variable can be assigned again)");
    consume();
    panic_ = false;
  }
  if (!at(TokenKind::Identifier) &&
      !keywordAsName({TokenKind::Equal, TokenKind::Colon}, /*orStatementEnd=*/true)) {
    errorExpectedName("a name after 'let'");
    return addError(pos_);
  }
  TokenId name = consume();
  NodeId type;
  NodeId init;
  if (at(TokenKind::Comma) && !newlineBefore()) [[unlikely]] {
    // Python's tuple unpacking, `let q, k = split(x, d, dim=-1)`.
    auto builder = error(Diag::ExpectedStatementEnd, tokens_.range(pos_), describe(pos_));
    if (builder) builder->note(Note::OneNamePerLet);
    return addError(name);
  }
  // `let x` ends at a line break like any statement: a ':' or '=' that
  // starts the next line is not part of it.
  if (!startsNewStatement() && consumeIf(TokenKind::Colon)) {
    type = parseType();
  } else if (at(TokenKind::Identifier) && !newlineBefore()) {
    type = parseTypeWithoutColon();
  }
  if (!panic_ && (splitEqual_ || !startsNewStatement()) && consumeEqual()) {
    init = parseExpression();
  } else if (!panic_ && !type.isValid() && !atEnd() && !newlineBefore() &&
             (startsOperand(peekKind()) || at(TokenKind::LParen) || at(TokenKind::LBracket))) {
    // `let y relu(x)`: the '=' is missing (reported; parsed as if written).
    errorAndGoOn(Diag::ExpectedToken, expectedAt(pos_),
                 fmt::format("'=' after 'let {}'", tokens_.spelling(name)), describe(pos_));
    init = parseExpression();
  }
  return add2(NodeKind::Let, name, type, init);
}

// `let w Tensor<...> = ...` (or the parameter `w Tensor<...>,`): when a type
// and then '=' or the end of the statement (of the parameter: ',', ')' or
// '=') follow, the ':' is what is missing (reported; the type is kept).
// Otherwise the parser rewinds and returns no type.
NodeId Parser::parseTypeWithoutColon(bool parameter) {
  TokenId where = pos_;
  Checkpoint point = checkpoint();
  NodeId type;
  {
    QuietScope trial(*this);
    type = parseType();
  }
  bool ends = parameter ? at(TokenKind::Comma) || at(TokenKind::RParen) || at(TokenKind::Equal)
                        : splitEqual_ || at(TokenKind::Equal) || at(TokenKind::Semicolon) ||
                              at(TokenKind::RBrace) || atEnd() || newlineBefore();
  if (!panic_ && ends) {
    errorAndGoOn(Diag::ExpectedToken, expectedAt(where), "':' before the type",
                 describe(where));
    return type;
  }
  rewind(point);
  return NodeId{};
}

// The condition of an `if` or `while`. `if mode = 1 {` is reported ("did
// you mean '=='?") and parsed as the comparison.
NodeId Parser::parseCondition() {
  NodeId cond = parseExpression();
  if (!panic_ && at(TokenKind::Equal) && !startsNewStatement()) {
    return parseAssignInCondition();
  }
  return cond;
}

NodeId Parser::parseAssignInCondition() {
  TokenId op = consume();
  errorAndGoOn(Diag::AssignInCondition, tokens_.range(op));
  parseExpression();
  return addError(op);
}

// Reports "expected '{' ..." where a block must start. After a ':' (Python's
// block) a note shows the header with braces: `keyword` then `expr`'s text.
void Parser::errorExpectedBlock(std::string_view what, std::string_view keyword, NodeId expr) {
  auto builder = error(Diag::ExpectedToken, expectedAt(pos_), what, describe(pos_));
  if (!builder || !at(TokenKind::Colon)) {
    return;
  }
  std::string header(keyword);
  if (expr.isValid()) {
    std::string_view text = textOf(expr);
    header += text.size() > 40 || text.find('\n') != std::string_view::npos
                  ? std::string_view("...")
                  : text;
  }
  builder->note(Note::BlockInBraces, header);
  pythonBlocks_ = true;
}

// `if n > 0; {` (C's `if (c);`, or a typo): a ';' between a header and its
// block is reported at the ';' and skipped, as if it were not written, so the
// block is parsed as the statement's (not as a stray '{' after a broken
// statement). Returns whether it did; in a trial parse the report fails the
// trial instead (errorAndGoOn sets panic mode) and nothing is skipped.
bool Parser::skipSemicolonBeforeBlock(std::string_view keyword) {
  if (!at(TokenKind::Semicolon) || peekKind(1) != TokenKind::LBrace) {
    return false;
  }
  errorAndGoOn(Diag::SemicolonBeforeBlock, tokens_.range(pos_), keyword);
  if (panic_) {
    return false;
  }
  consume();  // ';'
  return true;
}

bool Parser::keywordAsName(std::initializer_list<TokenKind> follows, bool orStatementEnd) {
  TokenKind kind = peekKind();
  if (!isKeyword(kind) || kind == TokenKind::KwTrue || kind == TokenKind::KwFalse ||
      newlineBefore()) {
    return false;
  }
  TokenId next{pos_.index + 1};
  TokenKind nextKind = peekKind(1);
  bool sameLine = next.index < tokens_.size() && !tokens_.hasNewlineBefore(next);
  bool fits = (sameLine && std::find(follows.begin(), follows.end(), nextKind) != follows.end()) ||
              (orStatementEnd && (!sameLine || nextKind == TokenKind::Semicolon ||
                                  nextKind == TokenKind::RBrace ||
                                  nextKind == TokenKind::EndOfFile));
  if (!fits) {
    return false;
  }
  errorAndGoOn(Diag::KeywordUsedAsName, tokens_.range(pos_), tokens_.spelling(pos_));
  if (panic_) {
    return false;  // a trial parse: it fails
  }
  if (!keywordIsName(kind)) {
    keywordNames_.push_back(kind);
  }
  return true;
}

// if_stmt = "if" expr block [ "else" ( block | if_stmt ) ] ;
NodeId Parser::parseIf() {
  // An else-if chain is iterative: each If's else field is filled in later.
  std::vector<std::pair<TokenId, std::pair<NodeId, NodeId>>> chain;
  NodeId elseBlock;
  while (true) {
    TokenId keyword = consume();  // 'if'
    NodeId cond = parseCondition();
    if (panic_) {
      return addError(keyword);
    }
    if (!at(TokenKind::LBrace) && !skipSemicolonBeforeBlock("if")) {
      errorExpectedBlock("'{' after the condition", "if ", cond);
      return addError(keyword);
    }
    NodeId then = parseBlock();
    chain.push_back({keyword, {cond, then}});
    if (panic_ || !at(TokenKind::KwElse)) {
      break;
    }
    consume();  // 'else'
    if (at(TokenKind::KwIf)) {
      continue;
    }
    if (!at(TokenKind::LBrace) && !skipSemicolonBeforeBlock("else")) {
      errorExpectedBlock("'{' or 'if' after 'else'", "else", NodeId{});
      break;
    }
    elseBlock = parseBlock();
    break;
  }
  NodeId result = elseBlock;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    result = add3(NodeKind::If, it->first, it->second.first, it->second.second, result);
  }
  return result;
}

// At the '(' of C's `for (let i = 0; i < n; i += 1)` (a ';' before the ')' on
// its line): the loop written as a range, `for i in 0..n`, when its parts
// read as a start and a bound; else the form in general.
std::optional<std::string> Parser::cStyleForRewrite() const {
  uint32_t close = pos_.index + 1;
  bool semicolon = false;
  for (int depth = 1;; ++close) {
    TokenId token{close};
    TokenKind kind = tokens_.kind(token);
    if (kind == TokenKind::EndOfFile || tokens_.hasNewlineBefore(token)) {
      return std::nullopt;
    }
    depth += kind == TokenKind::LParen ? 1 : kind == TokenKind::RParen ? -1 : 0;
    semicolon = semicolon || (kind == TokenKind::Semicolon && depth == 1);
    if (depth == 0) {
      break;
    }
  }
  if (!semicolon) {
    return std::nullopt;
  }
  std::string general = "for i in 0..n";
  // [let | int | var | auto] IDENT = START ; IDENT (< | <=) END ; ...
  uint32_t i = pos_.index + 1;
  if (tokens_.kind(TokenId{i}) == TokenKind::KwLet ||
      (tokens_.kind(TokenId{i}) == TokenKind::Identifier &&
       tokens_.kind(TokenId{i + 1}) == TokenKind::Identifier)) {
    ++i;
  }
  TokenId var{i};
  if (tokens_.kind(var) != TokenKind::Identifier || tokens_.kind(TokenId{i + 1}) != TokenKind::Equal) {
    return general;
  }
  uint32_t startFirst = i + 2;
  uint32_t semi = startFirst;
  while (semi < close && tokens_.kind(TokenId{semi}) != TokenKind::Semicolon) {
    ++semi;
  }
  TokenId bound{semi + 1};
  TokenKind cmp = tokens_.kind(TokenId{semi + 2});
  if (semi == startFirst || semi >= close || tokens_.kind(bound) != TokenKind::Identifier ||
      tokens_.spelling(bound) != tokens_.spelling(var) ||
      (cmp != TokenKind::Less && cmp != TokenKind::LessEqual)) {
    return general;
  }
  uint32_t endFirst = semi + 3;
  uint32_t semi2 = endFirst;
  while (semi2 < close && tokens_.kind(TokenId{semi2}) != TokenKind::Semicolon) {
    ++semi2;
  }
  if (semi2 == endFirst || semi2 >= close) {
    return general;
  }
  std::string_view start = sourceText(TokenId{startFirst}, TokenId{semi - 1}, "");
  std::string_view end = sourceText(TokenId{endFirst}, TokenId{semi2 - 1}, "");
  if (start.empty() || end.empty()) {
    return general;
  }
  // `i <= n` runs to `n + 1`; a bound of several tokens is parenthesized.
  std::string bounded = cmp == TokenKind::LessEqual ? fmt::format("({} + 1)", end)
                        : semi2 - endFirst == 1     ? std::string(end)
                                                    : fmt::format("({})", end);
  return fmt::format("for {} in {}..{}", tokens_.spelling(var),
                     semi - startFirst == 1 ? std::string(start) : fmt::format("({})", start),
                     bounded);
}

// "for" IDENT "in" expr block ;   with expr = range(...) or a..b
NodeId Parser::parseFor() {
  TokenId keyword = consume();
  // C's and JavaScript's `for (i in range(n)) {`: reported, parsed without the parentheses.
  bool parenthesized = false;
  if (at(TokenKind::LParen) && peekKind(1) == TokenKind::Identifier &&
      peekKind(2) == TokenKind::KwIn) [[unlikely]] {
    errorAndGoOn(Diag::ExpectedToken, tokens_.range(pos_),
                 fmt::format("a loop variable after 'for' (no parentheses: 'for {} in ...')",
                             tokens_.spelling(TokenId{pos_.index + 1})),
                 describe(pos_));
    consume();  // '('
    parenthesized = true;
  }
  if (at(TokenKind::LParen)) [[unlikely]] {
    if (std::optional<std::string> loop = cStyleForRewrite()) {
      // C's `for (let i = 0; i < n; i += 1) {`: the range loop it means.
      auto builder = error(Diag::ExpectedIdentifier, tokens_.range(pos_),
                           "a loop variable after 'for'", describe(pos_));
      if (builder) {
        builder->note(Note::CStyleFor, *loop);
      }
      return addError(keyword);
    }
  }
  if (!at(TokenKind::Identifier) && !keywordAsName({TokenKind::KwIn})) {
    errorExpectedName("a loop variable after 'for'", TokenKind::KwIn);
    return addError(keyword);
  }
  TokenId var = consume();
  if (at(TokenKind::Comma)) {
    // Python's `for i, v in enumerate(xs)`: one loop variable here.
    auto builder = error(Diag::ExpectedToken, expectedAt(pos_), "'in'", describe(pos_));
    if (builder) builder->note(Note::OneLoopVariable, tokens_.spelling(var));
    return addError(keyword);
  }
  if (!expect(TokenKind::KwIn)) {
    return addError(keyword);
  }
  NodeId iterated = parseBinary(1);
  if (!panic_ && at(TokenKind::DotDot)) {
    TokenId op = consume();
    // `0..=10` (Rust's inclusive range): reported, and parsed as `0..10`.
    std::optional<TokenId> inclusive;
    if (at(TokenKind::Equal) && tokens_.range(op).end == tokens_.range(pos_).begin) {
      inclusive = consume();
    }
    NodeId end = parseBinary(1);
    iterated = add2(NodeKind::Range, op, iterated, end);
    if (inclusive && !panic_) noteInclusiveRange(op, *inclusive, iterated);
  }
  if (!panic_ && parenthesized && !expect(TokenKind::RParen)) {
    return addError(keyword);
  }
  if (panic_) {
    return addError(keyword);
  }
  if (!at(TokenKind::LBrace) && !skipSemicolonBeforeBlock("for")) {
    errorExpectedBlock("'{' to start the loop body",
                       fmt::format("for {} in ", tokens_.spelling(var)), iterated);
    return addError(keyword);
  }
  NodeId body = parseBlock();
  return add2(NodeKind::For, var, iterated, body);
}

// `for i in a..=b`: the range ends before its end, so the note writes the
// loop that includes it, `a..b + 1` (`a..11` for a literal 10).
void Parser::noteInclusiveRange(TokenId dots, TokenId equal, NodeId range) {
  auto builder = errorAndGoOn(Diag::ExpectedToken, rangeOf(dots, equal), "'..'", "'..='");
  if (!builder) return;
  NodeId from = tree_.childA(range);
  NodeId to = tree_.childB(range);
  std::string_view first = textOf(from), last = textOf(to);
  std::string end;
  if (tree_.kind(to) == NodeKind::IntLit && tokens_.intValue(tree_.token(to)) < (uint64_t{1} << 62)) {
    end = std::to_string(tokens_.intValue(tree_.token(to)) + 1);
  } else if (tree_.kind(to) == NodeKind::Name || tree_.kind(to) == NodeKind::Member ||
             tree_.kind(to) == NodeKind::Paren || tree_.kind(to) == NodeKind::Call) {
    end = fmt::format("{} + 1", last);
  } else {
    end = fmt::format("({}) + 1", last);
  }
  std::string fix = fmt::format("{}..{}", first, end);
  if (fix.size() <= 60 && fix.find('\n') == std::string::npos) {
    builder->note(Note::InclusiveRange, fix);
  }
}

// "while" expr block ;
NodeId Parser::parseWhile() {
  TokenId keyword = consume();
  NodeId cond = parseCondition();
  if (panic_) {
    return addError(keyword);
  }
  if (!at(TokenKind::LBrace) && !skipSemicolonBeforeBlock("while")) {
    errorExpectedBlock("'{' to start the loop body", "while ", cond);
    return addError(keyword);
  }
  NodeId body = parseBlock();
  return add2(NodeKind::While, keyword, cond, body);
}

// type     = IDENT [ "<" type_arg { "," type_arg } ">" ] ;
// type_arg = type | shape ;
NodeId Parser::parseType() {
  if (!at(TokenKind::Identifier)) {
    error(Diag::ExpectedType, expectedAt(pos_), describe(pos_));
    return addError(pos_);
  }
  TokenId name = consume();
  if (at(TokenKind::LBracket) && !newlineBefore()) {
    return parseBracketTypeArguments(name);
  }
  if (at(TokenKind::Dot) && !newlineBefore()) {
    return parseQualifiedType(name);
  }
  if (!at(TokenKind::Less)) {
    return add(NodeKind::TypeName, name);
  }
  NestingGuard guard(*this, Nested::Type);
  if (!guard.ok()) {
    return addError(name);
  }
  TokenId open = consume();
  size_t args = listMark();
  while (true) {
    if (at(TokenKind::LParen)) [[unlikely]] {
      // `Tensor<float32, (?, 784)>`: a Python tuple for the shape.
      auto builder = error(Diag::ExpectedType, expectedAt(pos_), describe(pos_));
      if (builder) builder->note(Note::ShapeInBrackets);
      listPush(addError(pos_));
      break;
    }
    if ((at(TokenKind::IntLiteral) || at(TokenKind::Question)) && args != listMark()) [[unlikely]] {
      // `Tensor<float32, 256>`: the sizes without their brackets.
      TokenId first = pos_;
      TokenId last = pos_;
      for (uint32_t k = 0; k < 16; ++k) {
        TokenKind kind = peekKind(k);
        if (kind == TokenKind::Greater || kind == TokenKind::GreaterEqual ||
            kind == TokenKind::EndOfFile || (k > 0 && tokens_.hasNewlineBefore(
                                                          TokenId{pos_.index + k}))) {
          break;
        }
        last = TokenId{pos_.index + k};
      }
      auto builder = error(Diag::ExpectedType, expectedAt(pos_), describe(pos_));
      if (builder) {
        builder->note(Note::ShapeWithoutBrackets, sourceText(first, last, "..."));
      }
      listPush(addError(pos_));
      break;
    }
    NodeId arg = at(TokenKind::LBracket) ? parseShape() : parseType();
    listPush(arg);
    if (panic_) {
      break;
    }
    if (!consumeIf(TokenKind::Comma)) {
      break;
    }
  }
  if (!panic_ && at(TokenKind::GreaterEqual)) {
    // `Tensor<float32, [4]>=zeros()`: the '>' closes the type and the '='
    // belongs to the declaration, as C++ splits '>>' after a template.
    TokenId close = consume();
    splitEqual_ = true;
    uint32_t list = addList(args);
    return add(NodeKind::TypeName, name, list, kNone, close.index, depthOfList(list));
  }
  if (!panic_ && !at(TokenKind::Greater)) {
    auto builder = error(Diag::ExpectedToken, expectedAt(pos_), "',' or '>' in type arguments",
                         describe(pos_));
    if (builder) {
      builder->note(Note::MatchingDelimiter, tokens_.source(), tokens_.range(open), "<");
    }
  }
  if (panic_) {
    scratch_.resize(args);
    return addError(name);
  }
  TokenId close = consume();  // '>'
  uint32_t list = addList(args);
  return add(NodeKind::TypeName, name, list, kNone, close.index, depthOfList(list));
}

// Python's `Tensor[float32, [?, 10]]` (typing's brackets; no valid type is
// followed by '['): when the arguments parse as type arguments, reported
// with the angle-bracket spelling and parsed as it.
// Python's `f"n = {n}"`: the prefix lexes as a name right before a string.
// Reported, and read as the string; nullopt when it is no f-string prefix.
std::optional<NodeId> Parser::parseFString() {
  std::string_view prefix = tokens_.spelling(pos_);
  TokenId string{pos_.index + 1};
  bool isPrefix = prefix.size() <= 2 && (prefix.find_first_of("fF") != std::string_view::npos) &&
                  prefix.find_first_not_of("fFrR") == std::string_view::npos;
  if (!isPrefix || tokens_.range(pos_).end != tokens_.range(string).begin) {
    return std::nullopt;
  }
  TokenId first = consume();
  consume();  // the string
  errorAndGoOn(Diag::FormatString, rangeOf(first, string));
  return addError(first);
}

// `x: torch.Tensor`, `np.ndarray`: a Python annotation where the type, with
// its dtype and shape, belongs. Reported, and read as an unknown type.
NodeId Parser::parseQualifiedType(TokenId name) {
  TokenId last = name;
  while (at(TokenKind::Dot) && peekKind(1) == TokenKind::Identifier) {
    consume();  // '.'
    last = consume();
  }
  errorAndGoOn(Diag::ForeignType, rangeOf(name, last),
               sourceText(name, last, tokens_.spelling(name)));
  return addError(name);
}

NodeId Parser::parseBracketTypeArguments(TokenId name) {
  Checkpoint point = checkpoint();
  TokenId open = pos_;
  size_t args = listMark();
  {
    QuietScope trial(*this);
    NestingGuard guard(*this, Nested::Type);
    if (guard.ok()) {
      consume();  // '['
      while (!panic_ && !at(TokenKind::RBracket)) {
        listPush(at(TokenKind::LBracket) ? parseShape() : parseType());
        if (!consumeIf(TokenKind::Comma)) {
          break;
        }
      }
    }
  }
  if (panic_ || splitEqual_ || !at(TokenKind::RBracket) || scratch_.size() == args) {
    rewind(point);
    errorExpected("'<' for type arguments");
    return addError(name);
  }
  TokenId close = consume();
  uint32_t list = addList(args);
  std::string fixed = fmt::format(
      "{}<{}>", tokens_.spelling(name),
      sourceText(TokenId{open.index + 1}, TokenId{close.index - 1}, "..."));
  errorAndGoOn(Diag::TypeArgumentsInBrackets, rangeOf(open, close), fixed);
  return add(NodeKind::TypeName, name, list, kNone, close.index, depthOfList(list));
}

// shape = "[" [ dim { "," dim } ] "]" ;
NodeId Parser::parseShape() {
  NestingGuard guard(*this, Nested::Type);
  TokenId open = pos_;
  if (!guard.ok()) {
    return addError(open);
  }
  consume();
  size_t dims = listMark();
  while (!at(TokenKind::RBracket)) {
    if (at(TokenKind::Question)) {
      listPush(add(NodeKind::DimUnknown, consume()));
    } else {
      TokenId dimStart = pos_;
      NodeId dim = parseDim(5);
      // `[x.shape[0], 784]`, `[len(xs), 3]`: a size computed when the model runs.
      if (!panic_ && (at(TokenKind::Dot) ||
                      ((at(TokenKind::LParen) || at(TokenKind::LBracket)) &&
                       tokens_.range(TokenId{pos_.index - 1}).end == tokens_.range(pos_).begin)))
          [[unlikely]] {
        dim = parseSizeExpression(dimStart, open);
      }
      listPush(dim);
    }
    if (panic_) {
      scratch_.resize(dims);
      return addError(open);
    }
    TokenKind kind = peekKind();
    if (kind == TokenKind::Greater || kind == TokenKind::GreaterEqual) {
      // `Tensor<float32, [?, 784>`: the shape's ']' is missing.
      auto builder = error(Diag::ExpectedToken, expectedAt(pos_), "']' to close the shape",
                           describe(pos_));
      if (builder) builder->note(Note::MatchingDelimiter, tokens_.source(), tokens_.range(open), "[");
      scratch_.resize(dims);
      return addError(open);
    }
    if (binaryPrecedence(kind) != 0 || kind == TokenKind::StarStar) {
      error(Diag::InvalidDimOperator, tokens_.range(pos_), tokens_.spelling(pos_));
      scratch_.resize(dims);
      return addError(open);
    }
    TokenId comma = pos_;
    if (!consumeIf(TokenKind::Comma)) {
      break;
    }
    if (at(TokenKind::RBracket)) {
      // `[?, ?, ]` (LANGUAGE.md §2: `dim { "," dim }`): often a deleted size,
      // whose rank would otherwise show only in errors far downstream.
      error(Diag::TrailingCommaInShape, tokens_.range(comma));
      break;
    }
  }
  uint32_t list = addList(dims);
  TokenId close = pos_;
  if (!expectClose(TokenKind::RBracket, open, /*inExpression=*/false)) {
    return addError(open);
  }
  return add(NodeKind::Shape, open, list, kNone, close.index, depthOfList(list));
}

// dim_expr = dim_term { ("+" | "-") dim_term } ;
// dim_term = dim_atom { ("*" | "/") dim_atom } ;
NodeId Parser::parseDim(int minPrecedence) {
  NodeId lhs = parseDimAtom();
  while (!panic_) {
    TokenKind kind = peekKind();
    int precedence = (kind == TokenKind::Plus || kind == TokenKind::Minus)   ? 5
                     : (kind == TokenKind::Star || kind == TokenKind::Slash) ? 6
                                                                             : 0;
    if (precedence == 0 || precedence < minPrecedence) {
      break;
    }
    TokenId op = consume();
    NodeId rhs = parseDim(precedence + 1);
    lhs = add2(NodeKind::Binary, op, lhs, rhs);
  }
  return lhs;
}

// dim_atom = INT | IDENT | "(" dim_expr ")" ;
NodeId Parser::parseDimAtom() {
  switch (peekKind()) {
    case TokenKind::IntLiteral: return add(NodeKind::IntLit, consume());
    case TokenKind::Identifier: return add(NodeKind::Name, consume());
    case TokenKind::LParen: {
      NestingGuard guard(*this, Nested::Type);
      if (!guard.ok()) {
        return addError(pos_);
      }
      TokenId open = consume();
      NodeId inner = parseDim(5);
      TokenId close = pos_;
      if (panic_ || !expectClose(TokenKind::RParen, open, /*inExpression=*/false)) {
        return addError(open);
      }
      return add(NodeKind::Paren, open, inner.index, kNone, close.index, depthOf(inner.index));
    }
    case TokenKind::Minus:
      if (peekKind(1) == TokenKind::IntLiteral &&
          tokens_.intValue(TokenId{pos_.index + 1}) == 1) {
        return parseNegativeDimension();
      }
      [[fallthrough]];
    default:
      error(Diag::ExpectedDim, expectedAt(pos_), describe(pos_));
      return addError(pos_);
  }
}

// expr = or ;  A range a..b is parsed here only to report it (see parseFor).
NodeId Parser::parseExpression() {
  NodeId expr = parseBinary(1);
  if (!panic_ && at(TokenKind::DotDot) && !startsNewStatement()) {
    TokenId op = consume();
    NodeId end = parseBinary(1);
    NodeId range = add2(NodeKind::Range, op, expr, end);
    auto builder = error(Diag::RangeOutsideFor, tree_.range(range));
    // The note writes the range as one would (`0..n`), from its two bounds:
    // a range broken over lines is not copied with its line breaks.
    std::string_view from = textOf(expr);
    std::string_view to = end.isValid() ? textOf(end) : std::string_view();
    if (builder && !to.empty() && from.find('\n') == std::string_view::npos &&
        to.find('\n') == std::string_view::npos) {
      builder->note(Note::ForRangeHint, fmt::format("{}..{}", from, to));
    }
    return range;
  }
  return expr;
}

// or  = and { "||" and } ;  and = eq { "&&" eq } ;  eq = cmp { ("=="|"!=") cmp } ;
// cmp = add { ("<"|"<="|">"|">=") add } ;  add = mul { ("+"|"-") mul } ;
// mul = unary { ("*"|"/"|"%"|"@") unary } ;
NodeId Parser::parseBinary(int minPrecedence) {
  NodeId lhs = parseUnary();
  while (!panic_) {
    int precedence = binaryPrecedence(peekKind());
    if (precedence == 0) {
      // A name after an operand ends the expression, or is Python's
      // `or`/`and`/`is`: the hot path tests only the token array (kind,
      // length, line break); the rest is out of line.
      if (at(TokenKind::Identifier) && mayBePythonOperator()) [[unlikely]] {
        NodeId repaired = parsePythonOperator(minPrecedence);
        if (repaired.isValid()) {
          lhs = repaired;
          continue;
        }
      }
      break;
    }
    if (precedence < minPrecedence || startsNewStatement()) {
      break;
    }
    if ((at(TokenKind::Plus) || at(TokenKind::Minus)) && peekKind(1) == peekKind() &&
        incrementHabit()) [[unlikely]] {
      break;
    }
    TokenId op = consume();
    NodeId rhs = parseBinary(precedence + 1);
    lhs = add2(NodeKind::Binary, op, lhs, rhs);
  }
  return lhs;
}

// C's `i++` and `i--` (as a statement: the doubled operator ends the line):
// reported with the assignment to write. Otherwise the line would continue
// on the next one, as a line ending in an operator does, and the error
// would come there, about something else.
bool Parser::incrementHabit() {
  TokenId first = pos_;
  TokenId second{pos_.index + 1};
  TokenId after{pos_.index + 2};
  if (tokens_.range(first).end != tokens_.range(second).begin) return false;
  TokenKind next = tokens_.kind(after);
  if (!(next == TokenKind::EndOfFile || next == TokenKind::Semicolon ||
        next == TokenKind::RBrace || tokens_.hasNewlineBefore(after))) {
    return false;
  }
  bool plus = at(TokenKind::Plus);
  std::string_view target = "x";
  if (first.index > 0 && tokens_.kind(TokenId{first.index - 1}) == TokenKind::Identifier) {
    target = tokens_.spelling(TokenId{first.index - 1});
  }
  error(Diag::PythonOperator, rangeOf(first, second), plus ? "++" : "--",
        fmt::format("{} {}= 1", target, plus ? "+" : "-"));
  return true;
}

// Python's `a or b`, `a and b`, `a is b`, `a is not b` at the current
// identifier: reported, and parsed as the operator to write; returns the
// Error node that stands for the whole operation. Returns no node, consuming
// nothing, when the identifier is not such an operator (of at least
// `minPrecedence`) followed by an operand. The caller has checked
// mayBePythonOperator(), so the source text is read only for a two- or
// three-letter name that continues the statement.
NodeId Parser::parsePythonOperator(int minPrecedence) {
  bool isOr = spelledAs(pos_, "or");
  bool isAnd = !isOr && spelledAs(pos_, "and");
  bool isIs = !isOr && !isAnd && spelledAs(pos_, "is");
  if (!isOr && !isAnd && !isIs) {
    return NodeId{};
  }
  bool isNot = isIs && peekKind(1) == TokenKind::Identifier &&
               spelledAs(TokenId{pos_.index + 1}, "not");
  std::string_view word = tokens_.spelling(pos_);
  std::string_view fix = isOr ? "||" : isAnd ? "&&" : isNot ? "!=" : "==";
  int wordPrecedence = isOr ? 1 : isAnd ? 2 : 3;
  TokenKind next = peekKind(isNot ? 2 : 1);
  bool operandFollows = startsOperand(next) || next == TokenKind::LParen ||
                        next == TokenKind::LBracket || next == TokenKind::Minus ||
                        next == TokenKind::Plus;
  if (wordPrecedence < minPrecedence || !operandFollows) {
    return NodeId{};
  }
  TokenId op = consume();
  TokenId last = isNot ? consume() : op;
  errorAndGoOn(Diag::PythonOperator, rangeOf(op, last), isNot ? "is not" : word, fix);
  parseBinary(wordPrecedence + 1);
  return addError(op);
}

// A statement `-x` or `+x` computes a value and drops it. It is nearly always
// the continuation of the previous line, which the newline rule ends there.
// So is a longer expression that starts with the sign, `+ sin(x) + cos(x)`:
// the sign is then the leftmost operand's, under the binary operators.
void Parser::warnSignStatement(NodeId expr) {
  if (panic_) {
    return;
  }
  NodeId first = expr;
  while (tree_.kind(first) == NodeKind::Binary) {
    first = tree_.childA(first);
  }
  if (tree_.kind(first) != NodeKind::Unary) {
    return;
  }
  TokenId op = tree_.token(first);
  TokenKind kind = tokens_.kind(op);
  if ((kind != TokenKind::Plus && kind != TokenKind::Minus) || !tokens_.hasNewlineBefore(op) ||
      quiet_ > 0) {
    return;
  }
  // After a line that ends in a lexical error, Python's `\` meant to continue
  // it: the lexer said so.
  if (op.index > 0 && tokens_.kind(TokenId{op.index - 1}) == TokenKind::Error) {
    return;
  }
  std::string_view text = textOf(expr);
  std::string shown = text.size() > 40 || text.find('\n') != std::string_view::npos
                          ? std::string(tokens_.spelling(op)) + "..."
                          : std::string(text);
  diags_.report(Diag::UnusedSignedStatement, tokens_.source(), tree_.range(expr), shown)
      .note(Note::StatementSplitHint);
}

// unary = ("-" | "+" | "!") unary | power ;
// power = postfix [ "**" unary ] ;   (right-associative)
NodeId Parser::parseUnary() {
  TokenKind kind = peekKind();
  // Python's `not x`: a name followed by an operand on its line, which no
  // valid program has. The token array is tested first, in one branch (a
  // name is never the last token: EndOfFile is, so the next one exists); the
  // spelling is read from the source text, which parsing does not otherwise
  // touch, only then.
  if (kind == TokenKind::Identifier) {
    const TokenizedBuffer::Token& next = tokens_.token(TokenId{pos_.index + 1});
    bool operandOnLine = inOperandStartSet(next.kind) &
                         ((next.flags & TokenizedBuffer::kNewlineBefore) == 0);
    if (operandOnLine && spelledAs(pos_, "not")) [[unlikely]] {
      return parsePythonNot();
    }
  }
  if (kind == TokenKind::Minus || kind == TokenKind::Plus || kind == TokenKind::Bang) {
    NestingGuard guard(*this);
    TokenId op = pos_;
    if (!guard.ok()) {
      return addError(op);
    }
    consume();
    NodeId operand = parseUnary();
    return add1(NodeKind::Unary, op, operand);
  }
  NodeId base = parsePostfix();
  if (!panic_ && at(TokenKind::StarStar) && !startsNewStatement()) {
    NestingGuard guard(*this);
    TokenId op = pos_;
    if (!guard.ok()) {
      return addError(op);
    }
    consume();
    NodeId exponent = parseUnary();
    return add2(NodeKind::Binary, op, base, exponent);
  }
  return base;
}

// postfix = primary { "(" [ args ] ")" | "[" index { "," index } "]" | "." IDENT } ;
NodeId Parser::parsePostfix() {
  NodeId expr = parsePrimary();
  while (!panic_ && !startsNewStatement()) {
    switch (peekKind()) {
      case TokenKind::LParen: {
        NestingGuard guard(*this);
        TokenId open = pos_;
        if (!guard.ok()) {
          return addError(open);
        }
        consume();
        uint32_t args = parseArguments();
        TokenId close = pos_;
        if (panic_ || !expectClose(TokenKind::RParen, open)) {
          return addError(open);
        }
        expr = add(NodeKind::Call, open, expr.index, args, close.index,
                   std::max(depthOf(expr.index), depthOfList(args)));
        break;
      }
      case TokenKind::LBracket: {
        NestingGuard guard(*this);
        TokenId open = pos_;
        if (!guard.ok()) {
          return addError(open);
        }
        consume();
        size_t indices = listMark();
        while (true) {
          listPush(parseIndex());
          if (panic_ || !consumeIf(TokenKind::Comma) || at(TokenKind::RBracket) || atEnd()) {
            break;
          }
        }
        TokenId close = pos_;
        if (panic_ || !expectClose(TokenKind::RBracket, open)) {
          scratch_.resize(indices);
          return addError(open);
        }
        uint32_t list = addList(indices);
        expr = add(NodeKind::Index, open, expr.index, list, close.index,
                   std::max(depthOf(expr.index), depthOfList(list)));
        break;
      }
      case TokenKind::Dot: {
        consume();
        if (!at(TokenKind::Identifier)) {
          error(Diag::ExpectedIdentifier, expectedAt(pos_), "a member name after '.'",
                describe(pos_));
          return addError(pos_);
        }
        expr = add1(NodeKind::Member, consume(), expr);
        break;
      }
      default: return expr;
    }
  }
  return expr;
}

// args = arg { "," arg } [ "," ] ;   arg = [ IDENT "=" ] expr ;
uint32_t Parser::parseArguments() {
  size_t args = listMark();
  TokenId firstNamed;
  // At the end of the file (`f(a,`) the caller reports the ')' with its '('.
  while (!at(TokenKind::RParen) && !atEnd()) {
    if (isKeyword(peekKind()) && peekKind(1) == TokenKind::Equal) [[unlikely]] {
      // `TernaryLinear(in=784, out=10)`: a keyword cannot name an argument.
      auto builder = error(Diag::ExpectedExpression, tokens_.range(pos_), describe(pos_));
      if (builder) {
        builder->note(Note::KeywordAsArgument, tokens_.spelling(pos_),
                      at(TokenKind::KwIn) ? " ('in_features' of Linear and TernaryLinear, 'in_ch' "
                                            "of TernaryConv2d)"
                                          : "");
      }
      break;
    }
    // Python's unpacking, `concat(*parts, dim=1)` and `f(**options)`.
    if ((at(TokenKind::Star) || at(TokenKind::StarStar)) && unpacksArgument()) [[unlikely]] {
      bool dictionary = at(TokenKind::StarStar);
      reportUnpackedArgument();  // consumes the '*' or '**'
      if (dictionary) {
        // Parsed, and dropped: its entries cannot be told apart.
        TokenId where = pos_;
        parseExpression();
        listPush(addError(where));
        if (panic_ || !consumeIf(TokenKind::Comma)) {
          break;
        }
        continue;
      }
    }
    // `softmax(x, dim: 1)`: a named argument written as a type annotation or a
    // dictionary entry (reported; parsed as `dim=1`).
    if (at(TokenKind::Identifier) && peekKind(1) == TokenKind::Colon &&
        !tokens_.hasNewlineBefore(TokenId{pos_.index + 1})) [[unlikely]] {
      errorAndGoOn(Diag::ExpectedToken, tokens_.range(TokenId{pos_.index + 1}),
                   fmt::format("'=' after the argument name ('{}=...')", tokens_.spelling(pos_)),
                   describe(TokenId{pos_.index + 1}));
    }
    if (at(TokenKind::Identifier) &&
        (peekKind(1) == TokenKind::Equal ||
         (peekKind(1) == TokenKind::Colon && !tokens_.hasNewlineBefore(TokenId{pos_.index + 1})))) {
      TokenId name = consume();
      consume();  // '=' (or the ':' reported above)
      TokenId outerName = namedArgument_;
      namedArgument_ = name;  // for a tuple that is the value: `stride=(2, 2)`
      namedValueStart_ = pos_;
      NodeId value = parseExpression();
      namedArgument_ = outerName;
      if (!firstNamed.isValid()) {
        firstNamed = name;
      }
      listPush(add1(NodeKind::NamedArg, name, value));
    } else {
      NodeId value = parseExpression();
      if (!panic_ && firstNamed.isValid()) {
        auto builder = error(Diag::PositionalAfterNamed, tree_.range(value));
        if (builder) {
          builder->note(Note::NamedArgumentHere, tokens_.source(), tokens_.range(firstNamed),
                        tokens_.spelling(firstNamed));
        }
      }
      listPush(value);
    }
    if (panic_) {
      break;
    }
    if (consumeIf(TokenKind::Comma)) {
      continue;
    }
    // `f(3 16)`: an argument follows, so a ',' is missing. Unless it starts
    // the next statement: then the ')' is (reported by the caller).
    if (startsOperand(peekKind()) &&
        !startsStatementAfterUnclosed(openDelims_.empty() ? TokenId{} : openDelims_.back())) {
      reportMissingComma("',' between arguments");
      continue;
    }
    break;
  }
  return addList(args);
}

// index = expr | [ expr ] ":" [ expr ] [ ":" [ expr ] ] ;
NodeId Parser::parseIndex() {
  if (at(TokenKind::DotDot) && peekKind(1) == TokenKind::Dot &&
      tokens_.range(pos_).end == tokens_.range(TokenId{pos_.index + 1}).begin) {
    return parseEllipsisIndex();
  }
  NodeId start;
  if (!at(TokenKind::Colon)) {
    start = parseExpression();
    if (panic_ || !at(TokenKind::Colon)) {
      return start;
    }
  }
  TokenId colon = consume();
  auto endsPart = [&] {
    return at(TokenKind::Colon) || at(TokenKind::Comma) || at(TokenKind::RBracket);
  };
  NodeId stop;
  NodeId step;
  if (!endsPart()) {
    stop = parseExpression();
  }
  if (!panic_ && consumeIf(TokenKind::Colon) && !endsPart()) {
    step = parseExpression();
  }
  return add3(NodeKind::Slice, colon, start, stop, step);
}

// ---- habits from other languages: the rare paths ----------------------------

// Python's `not x` (a name `not` followed by an operand is no valid
// expression): reported, and parsed as `!x`.
NodeId Parser::parsePythonNot() {
  NestingGuard guard(*this);
  TokenId op = pos_;
  if (!guard.ok()) {
    return addError(op);
  }
  consume();
  errorAndGoOn(Diag::PythonOperator, tokens_.range(op), "not", "!");
  parseUnary();
  return addError(op);
}

// NumPy's `x[..., 0]`: reported, and skipped as an index.
NodeId Parser::parseEllipsisIndex() {
  TokenId first = consume();
  TokenId last = consume();
  errorAndGoOn(Diag::EllipsisIndex, rangeOf(first, last));
  return addError(first);
}

// `f(3 16)`, `a: int b: int`: another item follows, so a ',' is missing.
void Parser::reportMissingComma(std::string_view what) {
  errorAndGoOn(Diag::ExpectedToken, expectedAt(pos_), what, describe(pos_));
}

// PyTorch's `-1` for the batch: reported, and read as '?'.
NodeId Parser::parseNegativeDimension() {
  TokenId minus = consume();
  TokenId value = consume();
  errorAndGoOn(Diag::NegativeDimension, rangeOf(minus, value), sourceText(minus, value, "-1"));
  return add(NodeKind::DimUnknown, minus);
}

// `return a, b`: Python's tuple.
NodeId Parser::reportReturnTuple(TokenId start) {
  auto builder = error(Diag::ReturnTuple, tokens_.range(pos_));
  if (builder) {
    builder->note(Note::ReturnOneValue);
  }
  return addError(start);
}

// primary = IDENT | INT | FLOAT | STRING | "true" | "false" | "(" expr ")"
//         | "[" [ expr { "," expr } [ "," ] ] "]" ;
NodeId Parser::parsePrimary() {
  switch (peekKind()) {
    case TokenKind::Identifier:
      if (peekKind(1) == TokenKind::StringLiteral) {
        if (std::optional<NodeId> fstring = parseFString()) return *fstring;
      }
      return add(NodeKind::Name, consume());
    case TokenKind::IntLiteral: return add(NodeKind::IntLit, consume());
    case TokenKind::FloatLiteral: return add(NodeKind::FloatLit, consume());
    case TokenKind::StringLiteral: return add(NodeKind::StringLit, consume());
    case TokenKind::KwTrue:
    case TokenKind::KwFalse: return add(NodeKind::BoolLit, consume());
    case TokenKind::LParen: {
      NestingGuard guard(*this);
      TokenId open = pos_;
      if (!guard.ok()) {
        return addError(open);
      }
      consume();
      NodeId inner = parseExpression();
      if (!panic_ && at(TokenKind::Comma)) [[unlikely]] {
        return parseTuple(open, inner);
      }
      TokenId close = pos_;
      if (panic_ || !expectClose(TokenKind::RParen, open)) {
        return addError(open);
      }
      return add(NodeKind::Paren, open, inner.index, kNone, close.index, depthOf(inner.index));
    }
    case TokenKind::LBracket: {
      NestingGuard guard(*this);
      TokenId open = pos_;
      if (!guard.ok()) {
        return addError(open);
      }
      consume();
      size_t elements = listMark();
      // At the end of the file (`[1, 2,`) the ']' is reported with its '['.
      while (!at(TokenKind::RBracket) && !atEnd()) {
        // `reshape(x, [?, 784])`: a type's unknown size where the size to infer is -1.
        listPush(at(TokenKind::Question) ? parseInferredSize() : parseExpression());
        if (panic_ || !consumeIf(TokenKind::Comma)) {
          break;
        }
      }
      TokenId close = pos_;
      if (!panic_ && at(TokenKind::KwFor)) {
        // `[f(i) for i in range(3)]`: Python's comprehension.
        error(Diag::ListComprehension, tokens_.range(pos_));
        scratch_.resize(elements);
        return addError(open);
      }
      if (panic_ || !expectClose(TokenKind::RBracket, open)) {
        scratch_.resize(elements);
        return addError(open);
      }
      uint32_t list = addList(elements);
      return add(NodeKind::List, open, list, kNone, close.index, depthOfList(list));
    }
    default: {
      TokenId where = pos_;
      if (!keywordNames_.empty() && keywordIsName(peekKind())) [[unlikely]] {
        return add(NodeKind::Name, consume());  // declared as a name, reported there
      }
      auto builder = error(Diag::ExpectedExpression, expectedAt(pos_), describe(pos_));
      if (builder && at(TokenKind::Question)) {
        builder->note(Note::UnknownSizeOnlyInTypes);
      }
      return addError(where);
    }
  }
}

// A Python tuple, `stride=(2, 2)` (after its first element): an error that
// says to write the list, parsed as that list so the checker goes on.
NodeId Parser::parseTuple(TokenId open, NodeId first) {
  size_t elements = listMark();
  listPush(first);
  while (consumeIf(TokenKind::Comma) && !at(TokenKind::RParen) && !atEnd()) {
    listPush(parseExpression());
    if (panic_) break;
  }
  TokenId close = pos_;
  if (panic_ || !expectClose(TokenKind::RParen, open)) {
    scratch_.resize(elements);
    return addError(open);
  }
  // The same integer throughout (`(2, 2)`): one number says it too.
  std::optional<std::string_view> same;
  for (size_t i = elements; i < scratch_.size(); ++i) {
    NodeId element{scratch_[i]};
    std::string_view text = tokens_.spelling(tree_.token(element));
    if (tree_.kind(element) != NodeKind::IntLit || (same && *same != text)) {
      same.reset();
      break;
    }
    same = text;
  }
  bool single = scratch_.size() - elements == 1;
  uint32_t list = addList(elements);
  TokenId last{close.index - 1};
  if (tokens_.kind(last) == TokenKind::Comma) last = TokenId{last.index - 1};  // `(a, )`
  std::string fixed = fmt::format("[{}]", sourceText(TokenId{open.index + 1}, last, "..."));
  auto builder = errorAndGoOn(Diag::TupleNotSupported, rangeOf(open, close), fixed);
  // One number stands for equal sizes only in the window arguments of convolutions and
  // pools (`stride=(2, 2)`), not in a shape (`reshape(x, (2, 2))`).
  bool windowArgument = [&] {
    if (!namedArgument_.isValid() || namedValueStart_ != open) return false;
    std::string_view name = tokens_.spelling(namedArgument_);
    return name == "kernel_size" || name == "stride" || name == "padding" || name == "dilation";
  }();
  if (builder && same && !single && windowArgument) {
    builder->note(Note::OneNumberForEqualSizes, *same);
  }
  return add(NodeKind::List, open, list, kNone, close.index, depthOfList(list));
}

// ---- helpers of the notes that show a line rewritten ----------------------------

// The closer that matches the opener `open` (brackets of every kind counted),
// or an invalid id when the file ends first.
TokenId Parser::matchingCloser(TokenId open) const {
  int depth = 0;
  for (uint32_t i = open.index; i < tokens_.size(); ++i) {
    TokenKind kind = tokens_.kind(TokenId{i});
    if (kind == TokenKind::EndOfFile) {
      break;
    }
    if (isOpener(kind)) {
      ++depth;
    } else if (isCloser(kind) && --depth == 0) {
      return TokenId{i};
    }
  }
  return TokenId{};
}

// The first token of the callee of the call whose '(' is `open` (a name, or a
// chain `a.b`), or an invalid id when no name is right before it.
TokenId Parser::calleeStart(TokenId open) const {
  if (open.index == 0 || tokens_.kind(TokenId{open.index - 1}) != TokenKind::Identifier) {
    return TokenId{};
  }
  TokenId first{open.index - 1};
  while (first.index >= 2 && tokens_.kind(TokenId{first.index - 1}) == TokenKind::Dot &&
         tokens_.kind(TokenId{first.index - 2}) == TokenKind::Identifier) {
    first.index -= 2;
  }
  return first;
}

std::optional<std::string> Parser::rewrittenText(
    SourceRange whole, const std::vector<std::pair<SourceRange, std::string_view>>& edits) const {
  std::string_view text = tokens_.source().text();
  std::string result;
  uint32_t at = whole.begin;
  for (const auto& [range, replacement] : edits) {
    if (range.begin < at || range.end > whole.end) {
      return std::nullopt;
    }
    result.append(text.substr(at, range.begin - at));
    result.append(replacement);
    at = range.end;
  }
  result.append(text.substr(at, whole.end - at));
  if (result.size() > 60 || result.find('\n') != std::string::npos) {
    return std::nullopt;
  }
  return result;
}

// `reshape(x, [?, 784])`: '?', a type's size known only when the model runs,
// as an element of a list; the size to infer is -1 there. Reported with the
// call (or the list) rewritten, and read as an unknown value.
NodeId Parser::parseInferredSize() {
  TokenId question = pos_;
  TokenId open = openDelims_.empty() ? TokenId{} : openDelims_.back();  // the list's '['
  std::string fix = "-1";
  if (open.isValid() && tokens_.kind(open) == TokenKind::LBracket) {
    // The call the list is an argument of, else the list.
    TokenId first = open;
    if (openDelims_.size() >= 2 && tokens_.kind(openDelims_[openDelims_.size() - 2]) ==
                                       TokenKind::LParen) {
      TokenId paren = openDelims_[openDelims_.size() - 2];
      if (TokenId callee = calleeStart(paren); callee.isValid()) {
        first = callee;
        open = paren;
      }
    }
    TokenId close = matchingCloser(open);
    std::vector<std::pair<SourceRange, std::string_view>> edits;
    for (uint32_t i = first.index; close.isValid() && i <= close.index; ++i) {
      if (tokens_.kind(TokenId{i}) == TokenKind::Question) {
        edits.emplace_back(tokens_.range(TokenId{i}), "-1");
      }
    }
    if (close.isValid()) {
      std::optional<std::string> shown = rewrittenText(rangeOf(first, close), edits);
      if (!shown && first != openDelims_.back()) {
        // The call is long: the list alone.
        TokenId list = openDelims_.back();
        TokenId listClose = matchingCloser(list);
        std::erase_if(edits, [&](const auto& edit) {
          return edit.first.begin < tokens_.range(list).begin ||
                 (listClose.isValid() && edit.first.end > tokens_.range(listClose).end);
        });
        if (listClose.isValid()) shown = rewrittenText(rangeOf(list, listClose), edits);
      }
      if (shown) fix = std::move(*shown);
    }
  }
  auto builder = errorAndGoOn(Diag::ExpectedExpression, tokens_.range(question), describe(question));
  if (builder) {
    builder->note(Note::InferredSizeInList, fix);
  }
  consume();
  return addError(question);
}

// Whether the '*' or '**' at the start of an argument is Python's unpacking:
// an operand follows it directly, on its line.
bool Parser::unpacksArgument() const {
  TokenId next{pos_.index + 1};
  TokenKind kind = tokens_.kind(next);
  return (startsOperand(kind) || kind == TokenKind::LParen || kind == TokenKind::LBracket) &&
         tokens_.range(pos_).end == tokens_.range(next).begin;
}

// `concat(*parts, dim=1)`: the list is passed as it is (reported, and parsed
// without the '*'). `f(**options)`: there are no dictionaries (reported; the
// caller drops the argument).
void Parser::reportUnpackedArgument() {
  TokenId star = pos_;
  bool dictionary = at(TokenKind::StarStar);
  auto builder = errorAndGoOn(Diag::ExpectedExpression, tokens_.range(star), describe(star));
  if (builder && dictionary) {
    builder->note(Note::NoArgumentDictionaries);
  } else if (builder) {
    std::string fix(tokens_.spelling(TokenId{star.index + 1}));
    TokenId open = openDelims_.empty() ? TokenId{} : openDelims_.back();
    if (open.isValid() && tokens_.kind(open) == TokenKind::LParen) {
      TokenId callee = calleeStart(open);
      TokenId close = matchingCloser(open);
      if (callee.isValid() && close.isValid()) {
        if (std::optional<std::string> shown =
                rewrittenText(rangeOf(callee, close), {{tokens_.range(star), ""}})) {
          fix = std::move(*shown);
        }
      }
    }
    builder->note(Note::ListPassedAsIs, fix);
  }
  consume();
}

// `Tensor<float32, [x.shape[0], 784]>`: a size computed when the model runs
// (a member, a call or an index after the start of a dimension at `dimStart`),
// in the shape opened at `open`. Reported over the whole dimension with the
// shape to write, and read as '?'. When the dimension does not end at a ','
// or the shape's ']', the shape's usual error is left to the caller.
NodeId Parser::parseSizeExpression(TokenId dimStart, TokenId open) {
  int depth = 0;
  uint32_t end = pos_.index;
  for (;; ++end) {
    TokenKind kind = tokens_.kind(TokenId{end});
    if (kind == TokenKind::EndOfFile) {
      return addError(dimStart);
    }
    if (isOpener(kind)) {
      if (kind == TokenKind::LBrace) return addError(dimStart);
      ++depth;
    } else if (isCloser(kind)) {
      if (depth == 0) {
        if (kind != TokenKind::RBracket) return addError(dimStart);
        break;
      }
      --depth;
    } else if (depth == 0) {
      if (kind == TokenKind::Comma) break;
      if (kind == TokenKind::Greater || kind == TokenKind::GreaterEqual ||
          kind == TokenKind::Semicolon || kind == TokenKind::Equal) {
        return addError(dimStart);
      }
    }
  }
  TokenId last{end - 1};
  TokenId close = matchingCloser(open);
  auto builder = errorAndGoOn(Diag::SizeExpressionInType, rangeOf(dimStart, last));
  // A size read from a tensor (`x.shape[0]`, `len(x)`) is known when the model runs: '?'. Any other
  // (`L[0]` of a constant list, `int(h / 2)`) is known when it is built, and '?' there would
  // turn a weight into an input: a literal or a size variable.
  bool readFromTensor = false;
  for (uint32_t i = dimStart.index; i < end && !readFromTensor; ++i) {
    readFromTensor = spelledAs(TokenId{i}, "shape") || spelledAs(TokenId{i}, "size") ||
                     spelledAs(TokenId{i}, "len");
  }
  if (builder && close.isValid()) {
    if (!readFromTensor) {
      std::optional<std::string> fix =
          rewrittenText(rangeOf(open, close), {{rangeOf(dimStart, last), "n"}});
      builder->note(Note::SizeKnownWhenBuilt, fix ? *fix : std::string("[n, ...]"));
    } else if (std::optional<std::string> fix =
                   rewrittenText(rangeOf(open, close), {{rangeOf(dimStart, last), "?"}})) {
      builder->note(Note::WriteInstead, *fix);
    }
  }
  while (pos_.index < end) {
    consume();
  }
  return add(NodeKind::DimUnknown, dimStart);
}

// Python's `with torch.no_grad():` or `with x {`: reported at the 'with'. A
// block that follows on the line (or starts the next one) is parsed, and
// parseBlock() takes its statements as the enclosing block's; after a header
// ending in ':' the lines below parse as they are.
NodeId Parser::parseWithBlock() {
  TokenId with = pos_;
  auto builder = error(Diag::WithBlock, tokens_.range(with));
  if (builder) {
    builder->note(Note::WithBlockStatements);
  }
  int depth = 0;
  uint32_t i = with.index + 1;
  for (;; ++i) {
    TokenId token{i};
    TokenKind kind = tokens_.kind(token);
    if (kind == TokenKind::EndOfFile) break;
    if (depth == 0 && tokens_.hasNewlineBefore(token)) {
      break;  // a '{' here, first on the next line, is the block's
    }
    if (kind == TokenKind::LBrace && depth == 0) break;
    if (kind == TokenKind::Semicolon && depth == 0) break;
    if (isOpener(kind)) {
      ++depth;
    } else if (isCloser(kind) && --depth < 0) {
      break;
    }
  }
  TokenId stop{i};
  TokenId last{i - 1};
  bool block = tokens_.kind(stop) == TokenKind::LBrace;
  bool colon = !block && depth == 0 && tokens_.kind(last) == TokenKind::Colon &&
               (tokens_.hasNewlineBefore(stop) || tokens_.kind(stop) == TokenKind::EndOfFile);
  if (!block && !colon) {
    return addError(with);  // panic mode: the line is skipped
  }
  while (pos_.index < stop.index) {
    consume();
  }
  panic_ = false;
  if (colon) {
    return NodeId{};
  }
  return parseBlock();
}

// Whether the top-level line at `start` reads as a statement: a name then an
// assignment, a call, a member or an index on its line (`model = Net()`,
// `print(x)`, `x.y = 1`).
bool Parser::statementShaped(TokenId start) const {
  if (tokens_.kind(start) != TokenKind::Identifier) {
    return false;
  }
  TokenId next{start.index + 1};
  TokenKind kind = tokens_.kind(next);
  return !tokens_.hasNewlineBefore(next) &&
         (isAssignOperator(kind) || kind == TokenKind::LParen || kind == TokenKind::LBracket ||
          kind == TokenKind::Dot);
}

// Statements at top level go in 'main': the note shows the line in a main, a
// `name = value` declared with 'let' there.
void Parser::noteStatementInMain(DiagnosticBuilder& builder, TokenId start) {
  // The statement's line, when its brackets close on it.
  TokenId last = start;
  int depth = 0;
  bool balanced = true;
  for (uint32_t i = start.index;; ++i) {
    TokenId token{i};
    TokenKind kind = tokens_.kind(token);
    if (kind == TokenKind::EndOfFile || (i > start.index && tokens_.hasNewlineBefore(token)) ||
        (kind == TokenKind::Semicolon && depth == 0)) {
      break;
    }
    if (isOpener(kind)) ++depth;
    if (isCloser(kind)) --depth;
    last = token;
  }
  balanced = depth == 0;
  bool declares = tokens_.kind(TokenId{start.index + 1}) == TokenKind::Equal;
  std::string_view text = balanced ? sourceText(start, last, "") : std::string_view();
  std::string fix;
  if (text.empty()) {
    fix = declares ? fmt::format("main {{ let {} = ... }}", tokens_.spelling(start))
                   : std::string("main { ... }");
  } else {
    fix = fmt::format("main {{ {}{} }}", declares ? "let " : "", text);
  }
  builder.note(Note::StatementsInMain, fix);
}

Tree parse(const TokenizedBuffer& tokens, DiagnosticEngine& diags) {
  return Parser(tokens, diags).run();
}

Tree parseItems(const TokenizedBuffer& tokens, std::span<const ItemTokens> items,
                DiagnosticEngine& diags, bool& complete) {
  size_t errors = diags.errorCount();
  Tree tree = Parser(tokens, diags).runItems(items, complete);
  complete = complete && diags.errorCount() == errors;
  return tree;
}

}  // namespace tritonc

//===- LexerTest.cpp - tokens of LANGUAGE.md §1 ---------------------------===//
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "TestUtil.h"

namespace tritonc {
namespace {

using test::Lexed;
using K = TokenKind;

// ---- helpers -----------------------------------------------------------------

/// Lexes `text`, which must be exactly one token of `kind` without diagnostics.
void expectSingleToken(const std::string& text, TokenKind kind, const Lexed& lexed) {
  ASSERT_TRUE(lexed.diagnostics().empty())
      << text << ": " << test::diagNames(lexed.diagnostics());
  ASSERT_EQ(lexed.size(), 2u) << text << ": " << lexed.kindNames();
  EXPECT_EQ(lexed.kind(0), kind) << text << ": " << lexed.kindNames();
  EXPECT_EQ(lexed.spelling(0), text);
  EXPECT_EQ(lexed.kind(1), K::EndOfFile);
}

void expectInt(const std::string& text, uint64_t value) {
  SCOPED_TRACE(text);
  Lexed lexed(text);
  expectSingleToken(text, K::IntLiteral, lexed);
  EXPECT_EQ(lexed.tokens.intValue(lexed.id(0)), value);
}

void expectFloat(const std::string& text, double value) {
  SCOPED_TRACE(text);
  Lexed lexed(text);
  expectSingleToken(text, K::FloatLiteral, lexed);
  EXPECT_DOUBLE_EQ(lexed.tokens.floatValue(lexed.id(0)), value);
}

void expectString(const std::string& text, const std::string& value) {
  SCOPED_TRACE(text);
  Lexed lexed(text);
  expectSingleToken(text, K::StringLiteral, lexed);
  EXPECT_EQ(lexed.tokens.stringValue(lexed.id(0)), value);
}

/// `text` gives exactly one diagnostic, of `kind`, at [begin, end).
const Diagnostic* expectOneDiag(const Lexed& lexed, Diag kind, uint32_t begin, uint32_t end) {
  EXPECT_EQ(lexed.diagnostics().size(), 1u) << test::diagNames(lexed.diagnostics());
  if (lexed.diagnostics().size() != 1) {
    return nullptr;
  }
  const Diagnostic& d = lexed.diagnostics()[0];
  EXPECT_EQ(diagName(d.kind), diagName(kind));
  EXPECT_EQ(d.source, &lexed.source);
  EXPECT_EQ(d.range.begin, begin) << d.message;
  EXPECT_EQ(d.range.end, end) << d.message;
  return &d;
}

// ---- integer literals --------------------------------------------------------

TEST(LexerTest, DecimalInteger) {
  expectInt("42", 42);
  expectInt("0", 0);
  expectInt("007", 7);
}

TEST(LexerTest, HexBinaryOctalIntegers) {
  expectInt("0x2A", 42);
  expectInt("0x2a", 42);
  expectInt("0xff", 255);
  expectInt("0b1010", 10);
  expectInt("0o52", 42);
  expectInt("0o0", 0);
}

TEST(LexerTest, DigitSeparators) {
  expectInt("1_000", 1000);
  expectInt("1_000_000", 1000000);
  expectInt("0xFF_FF", 0xFFFF);
  expectInt("0b1010_1010", 0xAA);
  expectInt("0o7_7", 077);
}

TEST(LexerTest, Uint64MaxIsAccepted) {
  expectInt("18446744073709551615", UINT64_MAX);
  expectInt("0xFFFF_FFFF_FFFF_FFFF", UINT64_MAX);
  expectInt("0b" + std::string(64, '1'), UINT64_MAX);
  expectInt("0o1777777777777777777777", UINT64_MAX);
}

TEST(LexerTest, Uint64MaxPlusOneIsRejected) {
  Lexed lexed("18446744073709551616");
  const Diagnostic* d = expectOneDiag(lexed, Diag::IntegerTooLarge, 0, 20);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->message, "integer literal 18446744073709551616 is too large for a 64-bit integer");
  EXPECT_EQ(lexed.kindNames(), "IntLiteral EndOfFile");
  EXPECT_TRUE(lexed.tokens.hasErrors());
}

TEST(LexerTest, HexTooLarge) {
  Lexed lexed("x = 0x1_0000_0000_0000_0000");
  const Diagnostic* d = expectOneDiag(lexed, Diag::IntegerTooLarge, 4, 27);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->message,
            "integer literal 0x1_0000_0000_0000_0000 is too large for a 64-bit integer");
}

TEST(LexerTest, HugeDecimalIsOneDiagnostic) {
  Lexed lexed(std::string(100, '9'));
  expectOneDiag(lexed, Diag::IntegerTooLarge, 0, 100);
}

// ---- float literals ----------------------------------------------------------

TEST(LexerTest, FloatForms) {
  expectFloat("3.14", 3.14);
  expectFloat(".5", 0.5);
  expectFloat("5.", 5.0);
  expectFloat("1.0e-5", 1.0e-5);
  expectFloat("2E3", 2000.0);
  expectFloat("1e-5", 1e-5);
  expectFloat("1e+3", 1000.0);
  expectFloat("1_000.5", 1000.5);
  expectFloat("0.0", 0.0);
  expectFloat("5.e3", 5000.0);
}

TEST(LexerTest, ExponentMakesAFloat) {
  Lexed lexed("1e3");
  expectSingleToken("1e3", K::FloatLiteral, lexed);
}

TEST(LexerTest, FloatOutOfRange) {
  Lexed lexed("let f = 1e999");
  const Diagnostic* d = expectOneDiag(lexed, Diag::FloatOutOfRange, 8, 13);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->message, "floating-point literal 1e999 is out of range for a 64-bit float");
  EXPECT_EQ(lexed.kind(3), K::FloatLiteral);
}

TEST(LexerTest, TinyFloatRoundsToZero) {
  expectFloat("1e-400", 0.0);
}

// ---- string literals ---------------------------------------------------------

TEST(LexerTest, BothQuoteStyles) {
  expectString("\"hello\"", "hello");
  expectString("'hello'", "hello");
  expectString("\"it's\"", "it's");
  expectString("'say \"hi\"'", "say \"hi\"");
  expectString("\"\"", "");
  expectString("''", "");
}

TEST(LexerTest, EveryEscape) {
  expectString(R"("\n")", "\n");
  expectString(R"("\t")", "\t");
  expectString(R"("\r")", "\r");
  expectString(R"("\\")", "\\");
  expectString(R"("\"")", "\"");
  expectString(R"("\'")", "'");
  expectString(R"('\'')", "'");
  expectString(R"('\"')", "\"");
  expectString(R"('a\nb\tc\rd\\e\"f\'g')", "a\nb\tc\rd\\e\"f'g");
}

TEST(LexerTest, Utf8InStringsIsKept) {
  expectString("\"h\xC3\xA9llo \xE2\x86\x92 \xF0\x9F\x98\x80\"", "h\xC3\xA9llo \xE2\x86\x92 \xF0\x9F\x98\x80");
}

// ---- identifiers, keywords and tricky sequences --------------------------------

TEST(LexerTest, MinusIsAlwaysItsOwnToken) {
  Lexed lexed("x-1");
  EXPECT_EQ(lexed.kindNames(), "Identifier Minus IntLiteral EndOfFile");
  EXPECT_EQ(lexed.tokens.intValue(lexed.id(2)), 1u);
  Lexed negative("-1");
  EXPECT_EQ(negative.kindNames(), "Minus IntLiteral EndOfFile");
  Lexed spaced("x - 1.5");
  EXPECT_EQ(spaced.kindNames(), "Identifier Minus FloatLiteral EndOfFile");
}

TEST(LexerTest, IntegerRangeIsIntDotDotInt) {
  Lexed lexed("0..10");
  EXPECT_TRUE(lexed.diagnostics().empty());
  ASSERT_EQ(lexed.kindNames(), "IntLiteral DotDot IntLiteral EndOfFile");
  EXPECT_EQ(lexed.tokens.intValue(lexed.id(0)), 0u);
  EXPECT_EQ(lexed.tokens.intValue(lexed.id(2)), 10u);
  EXPECT_EQ(lexed.range(1).begin, 1u);
  EXPECT_EQ(lexed.range(1).end, 3u);

  Lexed names("a..b");
  EXPECT_EQ(names.kindNames(), "Identifier DotDot Identifier EndOfFile");
  Lexed one("1..n");
  EXPECT_EQ(one.kindNames(), "IntLiteral DotDot Identifier EndOfFile");
}

TEST(LexerTest, MemberAccess) {
  Lexed lexed("x.T");
  EXPECT_TRUE(lexed.diagnostics().empty());
  EXPECT_EQ(lexed.kindNames(), "Identifier Dot Identifier EndOfFile");
  EXPECT_EQ(lexed.spelling(2), "T");
  Lexed chained("a.b.shape");
  EXPECT_EQ(chained.kindNames(), "Identifier Dot Identifier Dot Identifier EndOfFile");
}

TEST(LexerTest, IntegerFollowedByMember) {
  // `1.T` is member access on 1, not the float `1.` followed by `T`.
  Lexed lexed("1.T");
  EXPECT_TRUE(lexed.diagnostics().empty());
  EXPECT_EQ(lexed.kindNames(), "IntLiteral Dot Identifier EndOfFile");
}

TEST(LexerTest, EveryKeyword) {
  struct Keyword {
    TokenKind kind;
    std::string spelling;
  };
  const std::vector<Keyword> keywords = {
#define KEYWORD(Name, Spelling) {TokenKind::Name, Spelling},
#define TOKEN(Name, Description)
#define PUNCT(Name, Spelling)
#include "tritonc/lex/TokenKinds.def"
  };
  ASSERT_EQ(keywords.size(), 15u);  // LANGUAGE.md §1
  std::set<std::string> spelled;
  for (const Keyword& keyword : keywords) {
    SCOPED_TRACE(keyword.spelling);
    Lexed lexed(keyword.spelling);
    expectSingleToken(keyword.spelling, keyword.kind, lexed);
    EXPECT_TRUE(isKeyword(keyword.kind));
    EXPECT_EQ(tokenKindSpelling(keyword.kind), keyword.spelling);
    spelled.insert(keyword.spelling);
  }
  const std::set<std::string> expected = {"layer", "fn",       "let",  "return", "if",
                                          "else",  "for",      "in",   "while",  "break",
                                          "continue", "true",  "false", "import", "main"};
  EXPECT_EQ(spelled, expected);
  EXPECT_EQ(keywordSpellings().size(), 15u);
}

TEST(LexerTest, KeywordPrefixesAndVariantsAreIdentifiers) {
  for (const char* text : {"layers", "fnx", "lets", "returns", "iff", "elsewhere", "format",
                           "inner", "whiles", "breaks", "continued", "trues", "falsey",
                           "imports", "mains", "If", "LET", "_if", "main_", "in2", "l", "f",
                           "b", "w", "t", "as"}) {
    SCOPED_TRACE(text);
    Lexed lexed(text);
    expectSingleToken(text, K::Identifier, lexed);
  }
}

TEST(LexerTest, TypeNamesAreIdentifiers) {
  for (const char* text : {"trit", "int8", "int16", "int32", "int64", "int", "float16",
                           "bfloat16", "float32", "float", "bool", "str", "Tensor",
                           "TernaryTensor", "tensor"}) {
    SCOPED_TRACE(text);
    Lexed lexed(text);
    expectSingleToken(text, K::Identifier, lexed);
  }
}

TEST(LexerTest, IdentifierCharacters) {
  Lexed lexed("_a1 A_b9 __x x__ _");
  EXPECT_TRUE(lexed.diagnostics().empty());
  EXPECT_EQ(lexed.kindNames(), "Identifier Identifier Identifier Identifier Identifier EndOfFile");
  EXPECT_EQ(lexed.spelling(0), "_a1");
  EXPECT_EQ(lexed.spelling(1), "A_b9");
  EXPECT_EQ(lexed.spelling(4), "_");
}

TEST(LexerTest, IdentifiersAreInterned) {
  Lexed lexed("foo bar foo Foo bar");
  ASSERT_EQ(lexed.size(), 6u);
  IdentifierId foo = lexed.tokens.identifier(lexed.id(0));
  IdentifierId bar = lexed.tokens.identifier(lexed.id(1));
  EXPECT_TRUE(foo.isValid());
  EXPECT_EQ(lexed.tokens.identifier(lexed.id(2)), foo);
  EXPECT_EQ(lexed.tokens.identifier(lexed.id(4)), bar);
  EXPECT_NE(foo, bar);
  EXPECT_NE(lexed.tokens.identifier(lexed.id(3)), foo);
  EXPECT_EQ(lexed.interner.spelling(foo), "foo");
  EXPECT_EQ(lexed.interner.spelling(bar), "bar");
  EXPECT_EQ(lexed.interner.size(), 3u);
}

TEST(LexerTest, InternerIsSharedBetweenFiles) {
  Interner interner;
  CollectingDiagnosticConsumer consumer;
  DiagnosticEngine diags(consumer);
  SourceBuffer a = SourceBuffer::fromString("a.tri", "alpha beta");
  SourceBuffer b = SourceBuffer::fromString("b.tri", "beta gamma");
  TokenizedBuffer ta = lex(a, interner, diags);
  TokenizedBuffer tb = lex(b, interner, diags);
  EXPECT_EQ(ta.identifier(TokenId{1}), tb.identifier(TokenId{0}));
  EXPECT_EQ(interner.size(), 3u);
  EXPECT_TRUE(consumer.diagnostics.empty());
}

// ---- punctuation ---------------------------------------------------------------

struct Punct {
  TokenKind kind;
  std::string spelling;
};
const std::vector<Punct>& allPunctuation() {
  static const std::vector<Punct> puncts = {
#define PUNCT(Name, Spelling) {TokenKind::Name, Spelling},
#define TOKEN(Name, Description)
#define KEYWORD(Name, Spelling)
#include "tritonc/lex/TokenKinds.def"
  };
  return puncts;
}

TEST(LexerTest, EveryPunctuationTokenAlone) {
  ASSERT_EQ(allPunctuation().size(), 35u);  // LANGUAGE.md §1
  for (const Punct& punct : allPunctuation()) {
    SCOPED_TRACE(punct.spelling);
    Lexed lexed(punct.spelling);
    expectSingleToken(punct.spelling, punct.kind, lexed);
    EXPECT_EQ(tokenKindSpelling(punct.kind), punct.spelling);
    EXPECT_FALSE(isKeyword(punct.kind));
  }
}

TEST(LexerTest, EveryPunctuationTokenBetweenIdentifiers) {
  for (const Punct& punct : allPunctuation()) {
    SCOPED_TRACE(punct.spelling);
    Lexed lexed("a" + punct.spelling + "b");
    ASSERT_TRUE(lexed.diagnostics().empty()) << test::diagNames(lexed.diagnostics());
    ASSERT_EQ(lexed.size(), 4u) << lexed.kindNames();
    EXPECT_EQ(lexed.kind(1), punct.kind);
    EXPECT_EQ(lexed.range(1).begin, 1u);
    EXPECT_EQ(lexed.range(1).end, 1u + punct.spelling.size());
  }
}

TEST(LexerTest, LongestMatch) {
  struct Case {
    const char* text;
    const char* kinds;
  };
  const Case cases[] = {
      {"**=", "StarStar Equal"},
      {"***", "StarStar Star"},
      {"->=", "Arrow Equal"},
      {"-->", "Minus Arrow"},
      {"-=-", "MinusEqual Minus"},
      {"+=+", "PlusEqual Plus"},
      {"*=*", "StarEqual Star"},
      {"/=/", "SlashEqual Slash"},
      {"@=@", "AtEqual At"},
      {"<==", "LessEqual Equal"},
      {">==", "GreaterEqual Equal"},
      {"!==", "BangEqual Equal"},
      {"===", "EqualEqual Equal"},
      {"!!=", "Bang BangEqual"},
      {"...", "DotDot Dot"},
      {"....", "DotDot DotDot"},
      {"&&&&", "AmpAmp AmpAmp"},
      {"||||", "PipePipe PipePipe"},
      {"<>", "Less Greater"},
      {">>=", "Greater GreaterEqual"},
      {"x->y", "Identifier Arrow Identifier"},
      {"a<-b", "Identifier Less Minus Identifier"},
      {"a**-b", "Identifier StarStar Minus Identifier"},
      {"([{}])", "LParen LBracket LBrace RBrace RBracket RParen"},
      {",:;?", "Comma Colon Semicolon Question"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    Lexed lexed(c.text);
    EXPECT_TRUE(lexed.diagnostics().empty()) << test::diagNames(lexed.diagnostics());
    EXPECT_EQ(lexed.kindNames(), std::string(c.kinds) + " EndOfFile");
  }
}

// '//' is neither an operator nor a comment: Python's floor division is read
// as one '/' (which floors integers), a C-style comment line is skipped, and
// both are reported.
TEST(LexerTest, SlashSlash) {
  Lexed floorDiv("a // b");
  EXPECT_EQ(test::diagNames(floorDiv.diagnostics()), "FloorDivisionOperator");
  EXPECT_EQ(floorDiv.kindNames(), "Identifier Slash Identifier EndOfFile");
  Lexed comment("a\n  // note\nb");
  EXPECT_EQ(test::diagNames(comment.diagnostics()), "SlashSlashComment");
  EXPECT_EQ(comment.kindNames(), "Identifier Identifier EndOfFile");
}

// ---- newlines and comments ---------------------------------------------------

TEST(LexerTest, NewlineFlag) {
  Lexed lexed("a b\nc\n\n  d");
  ASSERT_EQ(lexed.kindNames(), "Identifier Identifier Identifier Identifier EndOfFile");
  EXPECT_FALSE(lexed.newlineBefore(0));
  EXPECT_FALSE(lexed.newlineBefore(1));
  EXPECT_TRUE(lexed.newlineBefore(2));
  EXPECT_TRUE(lexed.newlineBefore(3));
  EXPECT_FALSE(lexed.newlineBefore(4));
}

TEST(LexerTest, NewlineFlagOnFirstTokenAndEndOfFile) {
  Lexed lexed("\nx\n");
  ASSERT_EQ(lexed.kindNames(), "Identifier EndOfFile");
  EXPECT_TRUE(lexed.newlineBefore(0));
  EXPECT_TRUE(lexed.newlineBefore(1));
}

TEST(LexerTest, CrlfSetsTheNewlineFlag) {
  Lexed lexed("a\r\nb");
  EXPECT_TRUE(lexed.diagnostics().empty());
  ASSERT_EQ(lexed.kindNames(), "Identifier Identifier EndOfFile");
  EXPECT_TRUE(lexed.newlineBefore(1));
  EXPECT_EQ(lexed.range(1).begin, 3u);
}

TEST(LexerTest, LineComment) {
  Lexed lexed("a # comment with ( and \" and /*\nb # trailing");
  EXPECT_TRUE(lexed.diagnostics().empty());
  ASSERT_EQ(lexed.kindNames(), "Identifier Identifier EndOfFile");
  EXPECT_TRUE(lexed.newlineBefore(1));
  EXPECT_EQ(lexed.spelling(1), "b");
}

TEST(LexerTest, CommentsAreNotLexed) {
  Lexed lexed("a # \xC3\xA9 $ ` \"\nb /* \xE2\x80\x9C @@ */ c");
  EXPECT_TRUE(lexed.diagnostics().empty()) << test::diagNames(lexed.diagnostics());
  EXPECT_EQ(lexed.kindNames(), "Identifier Identifier Identifier EndOfFile");
}

// Source is UTF-8 (LANGUAGE.md), comments included: one error per comment,
// at its first invalid byte; the tokens around are unaffected.
TEST(LexerTest, CommentsMustBeUtf8) {
  Lexed lexed("a # \xFF \xC3 $ `\nb /* \xFE @@ \xFF */ c /* \xC3");
  EXPECT_EQ(test::diagNames(lexed.diagnostics()),
            "InvalidUtf8 InvalidUtf8 InvalidUtf8 UnterminatedBlockComment");
  EXPECT_EQ(lexed.kindNames(), "Identifier Identifier Identifier EndOfFile");
  EXPECT_EQ(lexed.diagnostics()[0].range.begin, 4u);
}

TEST(LexerTest, SingleLineBlockCommentIsNotANewline) {
  Lexed lexed("a /* x */ b/**/c");
  EXPECT_TRUE(lexed.diagnostics().empty());
  ASSERT_EQ(lexed.kindNames(), "Identifier Identifier Identifier EndOfFile");
  EXPECT_FALSE(lexed.newlineBefore(1));
  EXPECT_FALSE(lexed.newlineBefore(2));
}

TEST(LexerTest, MultiLineBlockCommentSetsTheNewlineFlag) {
  Lexed lexed("a /* x\ny */ b");
  EXPECT_TRUE(lexed.diagnostics().empty());
  ASSERT_EQ(lexed.kindNames(), "Identifier Identifier EndOfFile");
  EXPECT_TRUE(lexed.newlineBefore(1));
}

TEST(LexerTest, BlockCommentEdgeCases) {
  Lexed stars("a /*** x **/ b /*/ c */ d");
  EXPECT_TRUE(stars.diagnostics().empty()) << test::diagNames(stars.diagnostics());
  EXPECT_EQ(stars.kindNames(), "Identifier Identifier Identifier EndOfFile");
  EXPECT_EQ(stars.spelling(2), "d");
}

TEST(LexerTest, TokenRanges) {
  Lexed lexed("let  xy = 0x1F\n  'ab'");
  ASSERT_EQ(lexed.kindNames(), "KwLet Identifier Equal IntLiteral StringLiteral EndOfFile");
  EXPECT_EQ(lexed.range(0).begin, 0u);
  EXPECT_EQ(lexed.range(0).end, 3u);
  EXPECT_EQ(lexed.range(1).begin, 5u);
  EXPECT_EQ(lexed.range(1).end, 7u);
  EXPECT_EQ(lexed.range(3).begin, 10u);
  EXPECT_EQ(lexed.range(3).end, 14u);
  EXPECT_EQ(lexed.range(4).begin, 17u);
  EXPECT_EQ(lexed.range(4).end, 21u);
  EXPECT_EQ(lexed.range(5).begin, 21u);
  EXPECT_EQ(lexed.range(5).end, 21u);
}

TEST(LexerTest, Dump) {
  Lexed lexed("x = 1.5\n'a\\n' 7");
  EXPECT_EQ(lexed.tokens.dump(),
            "1:1 Identifier \"x\"\n"
            "1:3 Equal \"=\"\n"
            "1:5 FloatLiteral \"1.5\" value=1.5\n"
            "2:1 StringLiteral \"'a\\\\n'\" value=\"a\\n\" [newline]\n"
            "2:7 IntLiteral \"7\" value=7\n"
            "2:8 EndOfFile \"\"\n");
}

// ---- byte order mark, NUL and end of file ----------------------------------------

TEST(LexerTest, ByteOrderMarkIsSkipped) {
  Lexed lexed("\xEF\xBB\xBFlet x");
  EXPECT_TRUE(lexed.diagnostics().empty()) << test::diagNames(lexed.diagnostics());
  ASSERT_EQ(lexed.kindNames(), "KwLet Identifier EndOfFile");
  EXPECT_EQ(lexed.range(0).begin, 3u);
  EXPECT_FALSE(lexed.newlineBefore(0));
}

// A NUL byte makes the file binary: one error at the first NUL, whatever
// else the bytes hold, and no tokens (the parser sees an empty file).
TEST(LexerTest, NulByteMakesTheFileBinary) {
  Lexed lexed(std::string("a\0b \xFF \x01 \"open\0", 13));
  const Diagnostic* d = expectOneDiag(lexed, Diag::BinarySource, 1, 2);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->message,
            "this is not a text file (a NUL byte at offset 1); tritonc reads Triton DSL source, "
            "UTF-8 text");
  EXPECT_EQ(lexed.kindNames(), "EndOfFile");
  EXPECT_TRUE(lexed.tokens.hasErrors());
}

TEST(LexerTest, LastTokenIsAlwaysEndOfFile) {
  const std::vector<std::string> inputs = {
      "",       "   ",     "\n\n",  "# only a comment", "/* open", "\"open", "x",
      "0x",     "1e",      "$",     std::string("\0", 1), "\xFF", "a /* b\n",  "'\\",
      "x\n",    "\xEF\xBB\xBF"};
  for (const std::string& input : inputs) {
    SCOPED_TRACE(input);
    Lexed lexed(input);
    ASSERT_GE(lexed.size(), 1u);
    EXPECT_EQ(lexed.kind(lexed.size() - 1), K::EndOfFile);
    EXPECT_EQ(lexed.range(lexed.size() - 1).begin, input.size());
    EXPECT_EQ(lexed.range(lexed.size() - 1).end, input.size());
    for (size_t i = 0; i + 1 < lexed.size(); ++i) {
      EXPECT_NE(lexed.kind(i), K::EndOfFile) << i;
    }
  }
}

TEST(LexerTest, CleanInputHasNoErrors) {
  Lexed lexed("layer L(x: Tensor<float32, [?, 4]>) -> Tensor<float32, [?, 4]> { return x }");
  EXPECT_TRUE(lexed.diagnostics().empty());
  EXPECT_FALSE(lexed.tokens.hasErrors());
}

// ---- lexical diagnostics -----------------------------------------------------

TEST(LexerTest, UnexpectedCharacter) {
  Lexed lexed("a $ b");
  const Diagnostic* d = expectOneDiag(lexed, Diag::UnexpectedCharacter, 2, 3);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->message, "unexpected character '$'");
  EXPECT_TRUE(d->notes.empty());
  EXPECT_EQ(lexed.kindNames(), "Identifier Error Identifier EndOfFile");
  EXPECT_TRUE(lexed.tokens.hasErrors());
}

TEST(LexerTest, UnexpectedNonAsciiCharacterCoversTheCodePoint) {
  Lexed lexed("x \xC3\xA9 y");
  const Diagnostic* d = expectOneDiag(lexed, Diag::UnexpectedCharacter, 2, 4);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->message, "unexpected character '\xC3\xA9'");
  EXPECT_EQ(lexed.kindNames(), "Identifier Error Identifier EndOfFile");
}

TEST(LexerTest, UnexpectedInvisibleCharacterIsNamed) {
  Lexed lexed("x \xE2\x80\x8B y");
  const Diagnostic* d = expectOneDiag(lexed, Diag::UnexpectedCharacter, 2, 5);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->message, "unexpected character '<U+200B>'");
}

TEST(LexerTest, SingleAmpersandSuggestsDoubled) {
  Lexed lexed("a & b");
  const Diagnostic* d = expectOneDiag(lexed, Diag::UnexpectedCharacter, 2, 3);
  ASSERT_NE(d, nullptr);
  ASSERT_EQ(d->notes.size(), 1u);
  EXPECT_EQ(d->notes[0].message, "did you mean '&&'?");
  EXPECT_EQ(d->notes[0].range.begin, 2u);

  Lexed pipe("a | b");
  d = expectOneDiag(pipe, Diag::UnexpectedCharacter, 2, 3);
  ASSERT_NE(d, nullptr);
  ASSERT_EQ(d->notes.size(), 1u);
  EXPECT_EQ(d->notes[0].message, "did you mean '||'?");
}

TEST(LexerTest, InvalidUtf8) {
  Lexed lexed("a \xFF b");
  const Diagnostic* d = expectOneDiag(lexed, Diag::InvalidUtf8, 2, 3);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->message, "invalid UTF-8 byte 0xFF in source file");
  EXPECT_EQ(lexed.kindNames(), "Identifier Error Identifier EndOfFile");
}

TEST(LexerTest, InvalidUtf8Sequences) {
  // Truncated, overlong, surrogate and out-of-range sequences are all rejected, naming their
  // first byte; the whole run of bad bytes is one diagnostic.
  for (const char* bad : {"\xC3", "\xC0\x80", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\x80"}) {
    SCOPED_TRACE(testing::PrintToString(bad));
    Lexed lexed(std::string("x ") + bad);
    ASSERT_EQ(lexed.diagnostics().size(), 1u);
    EXPECT_EQ(lexed.diagnostics()[0].kind, Diag::InvalidUtf8);
    EXPECT_EQ(lexed.diagnostics()[0].range.begin, 2u);
    EXPECT_EQ(lexed.diagnostics()[0].range.end, 2u + std::strlen(bad));
  }
}

TEST(LexerTest, InvalidUtf8InsideString) {
  Lexed lexed("s = \"a\xFE\"");
  const Diagnostic* d = expectOneDiag(lexed, Diag::InvalidUtf8, 6, 7);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->message, "invalid UTF-8 byte 0xFE in source file");
}

TEST(LexerTest, UnterminatedStringAtEndOfFile) {
  Lexed lexed("x = \"abc");
  const Diagnostic* d = expectOneDiag(lexed, Diag::UnterminatedString, 4, 5);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->message, "missing terminating '\"' character in string literal");
  EXPECT_TRUE(d->notes.empty());
  EXPECT_EQ(lexed.kindNames(), "Identifier Equal Error EndOfFile");
}

TEST(LexerTest, UnterminatedStringAtEndOfLine) {
  Lexed lexed("x = 'ab\ny");
  const Diagnostic* d = expectOneDiag(lexed, Diag::UnterminatedString, 4, 5);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->message, "missing terminating \"'\" character in string literal");
  ASSERT_EQ(d->notes.size(), 1u);
  EXPECT_EQ(d->notes[0].message, "strings cannot span lines; write '\\n' for a line break");
  // The next line is lexed normally.
  ASSERT_EQ(lexed.kindNames(), "Identifier Equal Error Identifier EndOfFile");
  EXPECT_TRUE(lexed.newlineBefore(3));
}

TEST(LexerTest, UnknownEscape) {
  Lexed lexed("s = \"a\\qb\"");
  const Diagnostic* d = expectOneDiag(lexed, Diag::UnknownEscape, 6, 8);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->message, "unknown escape sequence '\\q' in string literal");
  ASSERT_EQ(d->notes.size(), 1u);
  EXPECT_EQ(d->notes[0].message, "valid escapes are \\n \\t \\r \\\\ \\\" and \\'");
  EXPECT_EQ(d->notes[0].source, nullptr);
  // The literal itself is still a string token.
  EXPECT_EQ(lexed.kindNames(), "Identifier Equal StringLiteral EndOfFile");
}

TEST(LexerTest, UnknownEscapeOfAMultiByteCharacter) {
  Lexed lexed("'\\\xC3\xA9'");
  const Diagnostic* d = expectOneDiag(lexed, Diag::UnknownEscape, 1, 4);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->message, "unknown escape sequence '\\\xC3\xA9' in string literal");
}

TEST(LexerTest, UnterminatedBlockComment) {
  Lexed lexed("x /* abc\n def");
  const Diagnostic* d = expectOneDiag(lexed, Diag::UnterminatedBlockComment, 2, 4);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->message, "unterminated '/*' comment");
  EXPECT_EQ(lexed.kindNames(), "Identifier EndOfFile");
}

TEST(LexerTest, NestedBlockCommentIsAWarning) {
  Lexed lexed("/* a /* b */ x");
  const Diagnostic* d = expectOneDiag(lexed, Diag::NestedBlockComment, 5, 7);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->severity, Severity::Warning);
  ASSERT_EQ(d->notes.size(), 1u);
  EXPECT_EQ(d->notes[0].message, "comment started here");
  EXPECT_EQ(d->notes[0].range.begin, 0u);
  EXPECT_EQ(d->notes[0].range.end, 2u);
  // The comment ends at the first '*/'.
  EXPECT_EQ(lexed.kindNames(), "Identifier EndOfFile");
  EXPECT_EQ(lexed.diags.errorCount(), 0u);
  EXPECT_EQ(lexed.diags.warningCount(), 1u);
}

TEST(LexerTest, MissingDigits) {
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"0x", "expected hexadecimal digits after '0x'"},
      {"0b", "expected binary digits after '0b'"},
      {"0o", "expected octal digits after '0o'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    Lexed lexed(std::string("y = ") + c.text + ";");
    const Diagnostic* d = expectOneDiag(lexed, Diag::MissingDigits, 4, 6);
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->message, c.message);
    EXPECT_EQ(lexed.kindNames(), "Identifier Equal IntLiteral Semicolon EndOfFile");
  }
}

TEST(LexerTest, InvalidDigit) {
  struct Case {
    const char* text;
    uint32_t at;
    const char* message;
  };
  const Case cases[] = {
      {"0b102", 4, "invalid digit '2' in binary literal"},
      {"0o79", 3, "invalid digit '9' in octal literal"},
      {"0x1G", 3, "invalid digit 'G' in hexadecimal literal"},
      {"12abc", 2, "invalid digit 'a' in decimal literal"},
      {"1.5x", 3, "invalid digit 'x' in floating-point literal"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    Lexed lexed(c.text);
    const Diagnostic* d = expectOneDiag(lexed, Diag::InvalidDigit, c.at, c.at + 1);
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->message, c.message);
    // The whole glued run is one literal token.
    ASSERT_EQ(lexed.size(), 2u) << lexed.kindNames();
    EXPECT_EQ(lexed.spelling(0), c.text);
  }
}

TEST(LexerTest, NameStartingWithADigitIsAnErrorToken) {
  // `let 3x = 1`: one error, with a note; the parser skips the error token
  // silently (it once also reported "expected a name, found 3x").
  Lexed lexed("3x");
  const Diagnostic* d = expectOneDiag(lexed, Diag::InvalidDigit, 1, 2);
  ASSERT_NE(d, nullptr);
  ASSERT_EQ(d->notes.size(), 1u);
  EXPECT_EQ(d->notes[0].message, "a name cannot start with a digit");
  ASSERT_EQ(lexed.size(), 2u) << lexed.kindNames();
  EXPECT_EQ(lexed.kindNames(), "Error EndOfFile");
}

TEST(LexerTest, MisplacedDigitSeparator) {
  struct Case {
    const char* text;
    uint32_t at;
  };
  const Case cases[] = {
      {"1__000", 1}, {"1_", 1}, {"0x_FF", 2}, {"0b1_", 3}, {"1.5_", 3}, {"1_e5", 1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    Lexed lexed(c.text);
    ASSERT_FALSE(lexed.diagnostics().empty()) << lexed.kindNames();
    const Diagnostic* d = expectOneDiag(lexed, Diag::MisplacedDigitSeparator, c.at, c.at + 1);
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->message, "digit separator '_' must be between two digits");
  }
}

TEST(LexerTest, LeadingUnderscoreIsAnIdentifier) {
  Lexed lexed("_1");
  expectSingleToken("_1", K::Identifier, lexed);
}

TEST(LexerTest, MissingExponentDigits) {
  struct Case {
    const char* text;
    uint32_t begin;
    uint32_t end;
  };
  const Case cases[] = {{"1e", 1, 2}, {"2.5e+", 3, 5}, {"3E-", 1, 3}, {"4e;", 1, 2}, {"2e_5", 1, 2}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    Lexed lexed(c.text);
    const Diagnostic* d = expectOneDiag(lexed, Diag::MissingExponentDigits, c.begin, c.end);
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->message, "expected digits in the exponent of a floating-point literal");
    EXPECT_EQ(lexed.kind(0), K::FloatLiteral);
  }
}

TEST(LexerTest, ErrorsAreReportedOnceEach) {
  Lexed lexed("$ 0x \"a\\q\" 1e 0b2 `");
  EXPECT_EQ(test::diagNames(lexed.diagnostics()),
            "UnexpectedCharacter MissingDigits UnknownEscape MissingExponentDigits InvalidDigit "
            "UnexpectedCharacter");
  EXPECT_EQ(lexed.kind(lexed.size() - 1), K::EndOfFile);
}

}  // namespace
}  // namespace tritonc

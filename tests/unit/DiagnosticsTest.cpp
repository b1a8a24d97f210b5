//===- DiagnosticsTest.cpp - engine, text and JSON rendering --------------===//
#include "tritonc/diag/Diagnostics.h"
#include "tritonc/base/Text.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "TestUtil.h"

namespace tritonc {
namespace {

using test::kTestFile;

/// Reports through a real engine and keeps the diagnostics.
struct Harness {
  explicit Harness(std::string text, DiagnosticOptions options = {})
      : source(SourceBuffer::fromString(kTestFile, std::move(text))), diags(consumer, options) {}
  // const: DiagnosticBuilder::note's located overload takes a const SourceBuffer&.
  const SourceBuffer source;
  CollectingDiagnosticConsumer consumer;
  DiagnosticEngine diags;

  const Diagnostic& only() const {
    EXPECT_EQ(consumer.diagnostics.size(), 1u);
    return consumer.diagnostics.at(0);
  }
  std::string text() const { return TextDiagnosticConsumer::render(only(), false); }
  std::string json() const { return JsonDiagnosticConsumer::render(only()); }
};

// ---- static facts ------------------------------------------------------------

struct KindInfo {
  Diag kind;
  std::string_view name;
  Severity severity;
};
constexpr KindInfo kKinds[] = {
#define DIAG(Kind, Sev, Format) {Diag::Kind, #Kind, Severity::Sev},
#include "tritonc/diag/Diagnostics.def"
};

TEST(DiagnosticsTest, KindTablesMatchTheDefFile) {
  EXPECT_EQ(diagKindCount(), std::size(kKinds));
  std::set<std::string_view> names;
  for (const KindInfo& info : kKinds) {
    EXPECT_EQ(diagName(info.kind), info.name);
    EXPECT_EQ(diagSeverity(info.kind), info.severity) << info.name;
    EXPECT_FALSE(diagFormat(info.kind).empty()) << info.name;
    EXPECT_TRUE(names.insert(info.name).second) << "duplicate " << info.name;
  }
  EXPECT_EQ(diagSeverity(Diag::NestedBlockComment), Severity::Warning);
  EXPECT_EQ(diagSeverity(Diag::ChainedComparison), Severity::Warning);
  EXPECT_EQ(diagSeverity(Diag::ExpectedToken), Severity::Error);
  EXPECT_EQ(severityName(Severity::Error), "error");
  EXPECT_EQ(severityName(Severity::Warning), "warning");
  EXPECT_EQ(severityName(Severity::Note), "note");
}

// Every message is a valid format string: a stray '{' (`'{ }'` written for
// an empty block) threw at the first report of its kind.
TEST(DiagnosticsTest, EveryMessageFormats) {
  auto formats = [](std::string_view format) {
    try {
      // Integers satisfy every spec used ({0}, {0:02X}) as well as strings.
      (void)fmt::format(fmt::runtime(format), 1, 2, 3, 4, 5);
      return true;
    } catch (const fmt::format_error&) {
      return false;
    }
  };
  for (const KindInfo& info : kKinds) {
    EXPECT_TRUE(formats(diagFormat(info.kind))) << info.name;
  }
  constexpr Note kNotes[] = {
#define NOTE(Kind, Format) Note::Kind,
#include "tritonc/diag/Diagnostics.def"
  };
  for (Note note : kNotes) {
    EXPECT_TRUE(formats(noteFormat(note))) << noteFormat(note);
  }
  EXPECT_FALSE(formats("an empty block, '{ }'"));
}

TEST(DiagnosticsTest, ReportFormatsTheMessage) {
  Harness h("let x = (1\n");
  h.diags.report(Diag::ExpectedToken, h.source, SourceRange{10, 10}, "')'", "end of file");
  const Diagnostic& d = h.only();
  EXPECT_EQ(d.kind, Diag::ExpectedToken);
  EXPECT_EQ(d.severity, Severity::Error);
  EXPECT_EQ(d.source, &h.source);
  EXPECT_EQ(d.range.begin, 10u);
  EXPECT_EQ(d.range.end, 10u);
  EXPECT_EQ(d.message, "expected ')', found end of file");
  EXPECT_TRUE(d.notes.empty());
}

// ---- text rendering ----------------------------------------------------------

TEST(DiagnosticsTest, TextHeaderSourceLineAndCaret) {
  Harness h("let x = 1\nlet $ = 2\n");
  h.diags.report(Diag::UnexpectedCharacter, h.source, SourceRange{14, 15}, "$");
  EXPECT_EQ(h.text(),
            "test.tri:2:5: error: unexpected character '$' [UnexpectedCharacter]\n"
            "let $ = 2\n"
            "    ^\n");
}

TEST(DiagnosticsTest, TextUnderlinesTheRange) {
  Harness h("let y = foo bar\n");
  h.diags.report(Diag::ExpectedStatementEnd, h.source, SourceRange{12, 15}, "identifier 'bar'");
  EXPECT_EQ(h.text(),
            "test.tri:1:13: error: expected ';' or a new line after the statement, found "
            "identifier 'bar' [ExpectedStatementEnd]\n"
            "let y = foo bar\n"
            "            ^~~\n");
}

TEST(DiagnosticsTest, TextUnderlineStopsAtTheEndOfTheLine) {
  Harness h("ab cd\nef\n");
  h.diags.report(Diag::UnexpectedCharacter, h.source, SourceRange{3, 8}, "c");
  EXPECT_EQ(h.text(),
            "test.tri:1:4: error: unexpected character 'c' [UnexpectedCharacter]\n"
            "ab cd\n"
            "   ^~\n");
}

TEST(DiagnosticsTest, TextCaretAtEndOfLine) {
  Harness h("let x = (1\n");
  h.diags.report(Diag::ExpectedToken, h.source, SourceRange{10, 10}, "')'", "end of file");
  EXPECT_EQ(h.text(),
            "test.tri:1:11: error: expected ')', found end of file [ExpectedToken]\n"
            "let x = (1\n"
            "          ^\n");
}

TEST(DiagnosticsTest, TextExpandsTabsInBothLines) {
  Harness h("\tx $\n");
  h.diags.report(Diag::UnexpectedCharacter, h.source, SourceRange{3, 4}, "$");
  EXPECT_EQ(h.text(),
            "test.tri:1:4: error: unexpected character '$' [UnexpectedCharacter]\n"
            "        x $\n"
            "          ^\n");
  // A tab inside the underlined range: the caret stays under the operator
  // (a tab kept in the source line but one '~' wide put it left of it).
  Harness r("a\t+\tbb\n");
  r.diags.report(Diag::UnexpectedCharacter, r.source, SourceRange{0, 6}, "+").caretAt(2);
  EXPECT_EQ(r.text(),
            "test.tri:1:3: error: unexpected character '+' [UnexpectedCharacter]\n"
            "a       +       bb\n"
            "~~~~~~~~^~~~~~~~~~\n");
}

TEST(DiagnosticsTest, TextCountsOneColumnPerCodePointBeforeTheCaret) {
  // "é" (2 bytes) and "→" (3 bytes) each take one column; the header column counts bytes.
  Harness h("\"\xC3\xA9\xE2\x86\x92\" $\n");
  h.diags.report(Diag::UnexpectedCharacter, h.source, SourceRange{8, 9}, "$");
  EXPECT_EQ(h.text(),
            "test.tri:1:9: error: unexpected character '$' [UnexpectedCharacter]\n"
            "\"\xC3\xA9\xE2\x86\x92\" $\n"
            "     ^\n");
}

TEST(DiagnosticsTest, TextUnderlinesMultiByteCharactersOncePerCodePoint) {
  Harness h("x = \xC3\xA9\xC3\xA9!\n");
  h.diags.report(Diag::UnexpectedCharacter, h.source, SourceRange{4, 8}, "\xC3\xA9");
  EXPECT_EQ(h.text(),
            "test.tri:1:5: error: unexpected character '\xC3\xA9' [UnexpectedCharacter]\n"
            "x = \xC3\xA9\xC3\xA9!\n"
            "    ^~\n");
}

TEST(DiagnosticsTest, TextPadsByDisplayWidthUnderWideAndCombiningCharacters) {
  // "日本" (3 bytes, 2 columns each), "e\u0301" (the accent takes no column),
  // "🚀" (4 bytes, 2 columns): the caret sits under the '$' on a terminal.
  Harness h("\xE6\x97\xA5\xE6\x9C\xAC e\xCC\x81 \xF0\x9F\x9A\x80 $\n");
  h.diags.report(Diag::UnexpectedCharacter, h.source, SourceRange{16, 17}, "$");
  EXPECT_EQ(h.text(),
            "test.tri:1:17: error: unexpected character '$' [UnexpectedCharacter]\n"
            "\xE6\x97\xA5\xE6\x9C\xAC e\xCC\x81 \xF0\x9F\x9A\x80 $\n"
            "          ^\n");
}

TEST(DiagnosticsTest, TextCaretInsideTheRangeOnItsOwnLine) {
  // `(a\n   + b)`: the caret on the '+' names line 2 and shows it, with the
  // part of the range on that line underlined from its first non-blank.
  Harness h("y = (a\n     + b)\n");
  h.diags.report(Diag::InvalidOperands, h.source, SourceRange{4, 15}, "+", "int", "str")
      .caretAt(12);
  EXPECT_EQ(h.text(),
            "test.tri:2:6: error: invalid operands to '+': 'int' and 'str' [InvalidOperands]\n"
            "     + b)\n"
            "     ^~~\n");
  EXPECT_NE(h.json().find(R"("line":2,"column":6)"), std::string::npos) << h.json();
}

TEST(DiagnosticsTest, TextCaretInsideTheRangeUnderlinesBothSides) {
  Harness h("z = a + b\n");
  h.diags.report(Diag::InvalidOperands, h.source, SourceRange{4, 9}, "+", "int", "str")
      .caretAt(6);
  EXPECT_EQ(h.text(),
            "test.tri:1:7: error: invalid operands to '+': 'int' and 'str' [InvalidOperands]\n"
            "z = a + b\n"
            "    ~~^~~\n");
}

TEST(DiagnosticsTest, TextNamesInvisibleCharacters) {
  // A zero-width space and a right-to-left override would print as nothing.
  Harness h("a\xE2\x80\x8B\xE2\x80\xAE$\n");
  h.diags.report(Diag::UnexpectedCharacter, h.source, SourceRange{7, 8}, "$");
  EXPECT_EQ(h.text(),
            "test.tri:1:8: error: unexpected character '$' [UnexpectedCharacter]\n"
            "a<U+200B><U+202E>$\n"
            "                 ^\n");
}

TEST(DiagnosticsTest, TextShowsControlCharactersAsHexAndKeepsTheCaretAligned) {
  Harness h(std::string("a\x01$\n"));
  h.diags.report(Diag::UnexpectedCharacter, h.source, SourceRange{2, 3}, "$");
  EXPECT_EQ(h.text(),
            "test.tri:1:3: error: unexpected character '$' [UnexpectedCharacter]\n"
            "a<01>$\n"
            "     ^\n");
}

TEST(DiagnosticsTest, TextLongLineIsShownAroundTheCaret) {
  std::string line(400, 'a');
  line[150] = '$';
  Harness h(line + "\n");
  h.diags.report(Diag::UnexpectedCharacter, h.source, SourceRange{150, 151}, "$");
  std::string text = h.text();
  EXPECT_EQ(text.substr(0, 23), "test.tri:1:151: error: ");
  size_t first = text.find('\n');
  size_t second = text.find('\n', first + 1);
  ASSERT_NE(second, std::string::npos);
  std::string shown = text.substr(first + 1, second - first - 1);
  std::string marks = text.substr(second + 1, text.size() - second - 2);
  EXPECT_LT(shown.size(), line.size());  // shortened
  EXPECT_NE(shown.find("..."), std::string::npos);
  ASSERT_EQ(shown.find('$'), marks.find('^'));  // the caret is under the '$'
  EXPECT_EQ(marks.find_first_not_of(' '), marks.find('^'));
  EXPECT_EQ(marks.size(), marks.find('^') + 1);
}

TEST(DiagnosticsTest, TextNoteWithLocation) {
  Harness h("let x = (1\n");
  h.diags.report(Diag::ExpectedToken, h.source, SourceRange{10, 10}, "')'", "end of file")
      .note(Note::MatchingDelimiter, h.source, SourceRange{8, 9}, "(");
  ASSERT_EQ(h.only().notes.size(), 1u);
  EXPECT_EQ(h.only().notes[0].message, "to match this '('");
  EXPECT_EQ(h.text(),
            "test.tri:1:11: error: expected ')', found end of file [ExpectedToken]\n"
            "let x = (1\n"
            "          ^\n"
            "test.tri:1:9: note: to match this '('\n"
            "let x = (1\n"
            "        ^\n");
}

TEST(DiagnosticsTest, TextNoteWithoutLocation) {
  Harness h("s = \"\\q\"\n");
  h.diags.report(Diag::UnknownEscape, h.source, SourceRange{5, 7}, "q").note(Note::ValidEscapes);
  ASSERT_EQ(h.only().notes.size(), 1u);
  EXPECT_EQ(h.only().notes[0].source, nullptr);
  EXPECT_EQ(h.text(),
            "test.tri:1:6: error: unknown escape sequence '\\q' in string literal [UnknownEscape]\n"
            "s = \"\\q\"\n"
            "     ^~\n"
            "note: valid escapes are \\n \\t \\r \\\\ \\\" and \\'\n");
}

TEST(DiagnosticsTest, TextSeveralNotesInOrder) {
  Harness h("retrun x\n");
  h.diags.report(Diag::ExpectedStatementEnd, h.source, SourceRange{7, 8}, "identifier 'x'")
      .note(Note::DidYouMean, h.source, SourceRange{0, 6}, "return")
      .note(Note::NestingHint);
  EXPECT_EQ(h.text(),
            "test.tri:1:8: error: expected ';' or a new line after the statement, found "
            "identifier 'x' [ExpectedStatementEnd]\n"
            "retrun x\n"
            "       ^\n"
            "test.tri:1:1: note: did you mean 'return'?\n"
            "retrun x\n"
            "^~~~~~\n"
            "note: bind part of the expression to a name with 'let' to reduce nesting\n");
}

TEST(DiagnosticsTest, TextForAPathWithoutSource) {
  Harness h("");
  h.diags.reportForPath(Diag::CannotReadFile, "missing.tri", "No such file or directory");
  EXPECT_EQ(h.text(),
            "missing.tri: error: cannot read input file: No such file or directory "
            "[CannotReadFile]\n");
}

TEST(DiagnosticsTest, TextWithoutSourceOrPathNamesTheTool) {
  Diagnostic d;
  d.kind = Diag::CacheCommandFailed;
  d.severity = Severity::Error;
  d.message = "cannot clear the cache";
  EXPECT_EQ(TextDiagnosticConsumer::render(d, false),
            "tritonc: error: cannot clear the cache [CacheCommandFailed]\n");
}

TEST(DiagnosticsTest, TextWarningHeader) {
  Harness h("/* /* */\n");
  h.diags.report(Diag::NestedBlockComment, h.source, SourceRange{3, 5});
  EXPECT_EQ(h.text(),
            "test.tri:1:4: warning: '/*' within block comment; block comments do not nest "
            "[NestedBlockComment]\n"
            "/* /* */\n"
            "   ^~\n");
}

TEST(DiagnosticsTest, TextInColor) {
  Harness h("let $ = 1\n");
  h.diags.report(Diag::UnexpectedCharacter, h.source, SourceRange{4, 5}, "$");
  EXPECT_EQ(TextDiagnosticConsumer::render(h.only(), true),
            "\033[1mtest.tri:1:5: \033[1;31merror: \033[0m\033[1munexpected character '$' "
            "[UnexpectedCharacter]\033[0m\n"
            "let $ = 1\n"
            "    \033[1;32m^\033[0m\n");
}

// ---- JSON rendering ----------------------------------------------------------

TEST(DiagnosticsTest, JsonKeysInOrder) {
  Harness h("let x = 1\nlet $ = 2\n");
  h.diags.report(Diag::UnexpectedCharacter, h.source, SourceRange{14, 15}, "$");
  EXPECT_EQ(h.json(),
            R"({"file":"test.tri","line":2,"column":5,"severity":"error",)"
            R"("code":"UnexpectedCharacter","message":"unexpected character '$'","notes":[]})"
            "\n");
}

TEST(DiagnosticsTest, JsonNotesAreMessagesAndRelatedGivesTheirPlaces) {
  // `notes` holds every note's text; `related` the notes located elsewhere than the
  // diagnostic, with their places (a note without a place, or at the diagnostic's own,
  // is not in it).
  Harness h("let x = (1\n");
  h.diags.report(Diag::ExpectedToken, h.source, SourceRange{10, 10}, "')'", "end of file")
      .note(Note::MatchingDelimiter, h.source, SourceRange{8, 9}, "(")
      .note(Note::MatchingDelimiter, h.source, SourceRange{10, 10}, "x")
      .note(Note::NestingHint);
  EXPECT_EQ(h.json(),
            R"({"file":"test.tri","line":1,"column":11,"severity":"error",)"
            R"("code":"ExpectedToken","message":"expected ')', found end of file",)"
            R"("notes":["to match this '('","to match this 'x'",)"
            R"("bind part of the expression to a name with 'let' to reduce nesting"],)"
            R"("related":[{"file":"test.tri","line":1,"column":9,"message":"to match this '('"}]})"
            "\n");
}

TEST(DiagnosticsTest, JsonEscapesQuotesBackslashesNewlinesAndControlCharacters) {
  Diagnostic d;
  d.kind = Diag::CannotReadFile;
  d.severity = Severity::Error;
  d.path = "dir/\"odd\"\\name.tri";
  d.message = std::string("a\"b\\c\nd\re\tf") + '\x01' + "g" + '\x1f' + "h" + '\0' + "\xC3\xA9";
  d.notes.push_back(DiagnosticNote{nullptr, {}, "line1\nline2 \"q\""});
  EXPECT_EQ(JsonDiagnosticConsumer::render(d),
            R"({"file":"dir/\"odd\"\\name.tri","line":0,"column":0,"severity":"error",)"
            R"("code":"CannotReadFile",)"
            R"("message":"a\"b\\c\nd\re\tf\u0001g\u001fh\u0000)"
            "\xC3\xA9"
            R"(","notes":["line1\nline2 \"q\""]})"
            "\n");
}

TEST(DiagnosticsTest, JsonEscapesTheSourceName) {
  SourceBuffer source = SourceBuffer::fromString("we\"ird\n.tri", "$");
  CollectingDiagnosticConsumer consumer;
  DiagnosticEngine diags(consumer);
  diags.report(Diag::UnexpectedCharacter, source, SourceRange{0, 1}, "$");
  ASSERT_EQ(consumer.diagnostics.size(), 1u);
  EXPECT_EQ(JsonDiagnosticConsumer::render(consumer.diagnostics[0]),
            R"({"file":"we\"ird\n.tri","line":1,"column":1,"severity":"error",)"
            R"("code":"UnexpectedCharacter","message":"unexpected character '$'","notes":[]})"
            "\n");
}

TEST(DiagnosticsTest, JsonWarningSeverity) {
  Harness h("/* /* */\n");
  h.diags.report(Diag::NestedBlockComment, h.source, SourceRange{3, 5});
  EXPECT_EQ(h.json(),
            R"({"file":"test.tri","line":1,"column":4,"severity":"warning",)"
            R"("code":"NestedBlockComment",)"
            R"("message":"'/*' within block comment; block comments do not nest","notes":[]})"
            "\n");
}

// ---- engine options ----------------------------------------------------------

TEST(DiagnosticsTest, WarningsAreCountedSeparately) {
  Harness h("/* /* */ $\n");
  h.diags.report(Diag::NestedBlockComment, h.source, SourceRange{3, 5});
  EXPECT_EQ(h.diags.warningCount(), 1u);
  EXPECT_EQ(h.diags.errorCount(), 0u);
  EXPECT_FALSE(h.diags.hasErrors());
  h.diags.report(Diag::UnexpectedCharacter, h.source, SourceRange{9, 10}, "$");
  EXPECT_EQ(h.diags.warningCount(), 1u);
  EXPECT_EQ(h.diags.errorCount(), 1u);
  EXPECT_TRUE(h.diags.hasErrors());
  ASSERT_EQ(h.consumer.diagnostics.size(), 2u);
  EXPECT_EQ(h.consumer.diagnostics[0].severity, Severity::Warning);
  EXPECT_EQ(h.consumer.diagnostics[1].severity, Severity::Error);
}

TEST(DiagnosticsTest, WerrorPromotesWarningsAndCountsThemAsErrors) {
  DiagnosticOptions options;
  options.warningsAsErrors = true;
  Harness h("/* /* */\n", options);
  h.diags.report(Diag::NestedBlockComment, h.source, SourceRange{3, 5});
  const Diagnostic& d = h.only();
  EXPECT_EQ(d.kind, Diag::NestedBlockComment);
  EXPECT_EQ(d.severity, Severity::Error);
  EXPECT_EQ(h.diags.errorCount(), 1u);
  EXPECT_EQ(h.diags.warningCount(), 0u);
  EXPECT_TRUE(h.diags.hasErrors());
  EXPECT_EQ(h.text().substr(0, 22), "test.tri:1:4: error: '");
  EXPECT_NE(h.text().find(" [-Werror,NestedBlockComment]\n"), std::string::npos) << h.text();
  EXPECT_NE(h.json().find(R"("severity":"error")"), std::string::npos);
}

TEST(DiagnosticsTest, QuietDropsWarningsButKeepsErrors) {
  DiagnosticOptions options;
  options.suppressWarnings = true;
  Harness h("/* /* */ $\n", options);
  h.diags.report(Diag::NestedBlockComment, h.source, SourceRange{3, 5});
  EXPECT_TRUE(h.consumer.diagnostics.empty());
  EXPECT_EQ(h.diags.warningCount(), 0u);
  EXPECT_EQ(h.diags.errorCount(), 0u);
  h.diags.report(Diag::UnexpectedCharacter, h.source, SourceRange{9, 10}, "$");
  ASSERT_EQ(h.consumer.diagnostics.size(), 1u);
  EXPECT_EQ(h.consumer.diagnostics[0].kind, Diag::UnexpectedCharacter);
  EXPECT_EQ(h.diags.errorCount(), 1u);
}

TEST(DiagnosticsTest, WerrorAppliesToLexerWarnings) {
  DiagnosticOptions options;
  options.warningsAsErrors = true;
  test::Lexed lexed("/* a /* b */ x", options);
  ASSERT_EQ(lexed.diagnostics().size(), 1u);
  EXPECT_EQ(lexed.diagnostics()[0].kind, Diag::NestedBlockComment);
  EXPECT_EQ(lexed.diagnostics()[0].severity, Severity::Error);
  EXPECT_EQ(lexed.diags.errorCount(), 1u);
}

TEST(DiagnosticsTest, BuilderMovedFromEmitsOnce) {
  Harness h("x\n");
  {
    DiagnosticBuilder first =
        h.diags.report(Diag::UnexpectedCharacter, h.source, SourceRange{0, 1}, "x");
    DiagnosticBuilder second = std::move(first);
    EXPECT_TRUE(h.consumer.diagnostics.empty());  // emitted when the builder dies
  }
  EXPECT_EQ(h.consumer.diagnostics.size(), 1u);
  EXPECT_EQ(h.diags.errorCount(), 1u);
}

TEST(DiagnosticsTest, ContextsAddNotesInnermostFirstUpToTheInnermostReplacingOne) {
  Harness h("/* /* */ $\n");
  SourceBuffer other = SourceBuffer::fromString("other.tri", "x\n");
  auto note = [](std::string text) {
    return [text] { return std::vector<DiagnosticNote>{DiagnosticNote{nullptr, {}, text}}; };
  };
  h.diags.pushContext(h.source, note("outer chain"));  // hidden by the inner chain
  h.diags.pushContext(h.source, note("import chain"));
  h.diags.pushAddedContext(h.source, note("about the call"));
  h.diags.pushAddedContext(h.source, note("errors only"),
                           DiagnosticEngine::ContextScope::ErrorsOnly);
  h.diags.pushAddedContext(other, note("another file"));
  {
    ContextGuard guard;  // never armed: pops nothing
  }
  h.diags.report(Diag::UnexpectedCharacter, h.source, SourceRange{9, 10}, "$");
  h.diags.report(Diag::NestedBlockComment, h.source, SourceRange{3, 5});
  ASSERT_EQ(h.consumer.diagnostics.size(), 2u);
  auto messages = [](const Diagnostic& d) {
    std::vector<std::string> out;
    for (const DiagnosticNote& n : d.notes) out.push_back(n.message);
    return out;
  };
  EXPECT_EQ(messages(h.consumer.diagnostics[0]),
            (std::vector<std::string>{"errors only", "about the call", "import chain"}));
  EXPECT_EQ(messages(h.consumer.diagnostics[1]),
            (std::vector<std::string>{"about the call", "import chain"}));
  {
    ContextGuard guard;
    guard.arm(h.diags);  // pops "another file" ...
  }
  {
    ContextGuard guard;
    guard.arm(h.diags);  // ... and "errors only"
  }
  h.diags.report(Diag::UnexpectedCharacter, h.source, SourceRange{9, 10}, "$");
  EXPECT_EQ(messages(h.consumer.diagnostics.at(2)),
            (std::vector<std::string>{"about the call", "import chain"}));
}

// ---- typo suggestions --------------------------------------------------------

TEST(DiagnosticsTest, EditDistance) {
  EXPECT_EQ(editDistance("", "", 5), 0u);
  EXPECT_EQ(editDistance("abc", "abc", 0), 0u);
  EXPECT_EQ(editDistance("abc", "", 5), 3u);
  EXPECT_EQ(editDistance("", "abcd", 5), 4u);
  EXPECT_EQ(editDistance("kitten", "sitting", 10), 3u);
  EXPECT_EQ(editDistance("flaw", "lawn", 10), 2u);
  EXPECT_EQ(editDistance("retrun", "return", 10), 1u);  // a swap of neighbours is one edit
  EXPECT_EQ(editDistance("fro", "for", 1), 1u);
  EXPECT_EQ(editDistance("fi", "if", 1), 1u);
  EXPECT_EQ(editDistance("abc", "ca", 10), 3u);  // no edits of a swapped pair (OSA)
  EXPECT_EQ(editDistance("layr", "layer", 10), 1u);
  EXPECT_EQ(editDistance("layer", "layr", 10), 1u);
}

TEST(DiagnosticsTest, EditDistanceGivesUpPastTheLimit) {
  EXPECT_EQ(editDistance("abcdef", "uvwxyz", 2), 3u);  // maxDistance + 1
  EXPECT_EQ(editDistance("abcdef", "uvwxyz", 10), 6u);
  EXPECT_EQ(editDistance("kitten", "sitting", 3), 3u);  // exactly at the limit
}

// The banded computation against the full table, on random words over a small
// alphabet (many near matches) and every limit up to past the longest word.
TEST(DiagnosticsTest, EditDistanceBandEqualsTheFullTable) {
  auto full = [](std::string_view a, std::string_view b) {
    std::vector<std::vector<unsigned>> d(a.size() + 1, std::vector<unsigned>(b.size() + 1));
    for (size_t i = 0; i <= a.size(); ++i) d[i][0] = static_cast<unsigned>(i);
    for (size_t j = 0; j <= b.size(); ++j) d[0][j] = static_cast<unsigned>(j);
    for (size_t i = 1; i <= a.size(); ++i) {
      for (size_t j = 1; j <= b.size(); ++j) {
        d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1,
                            d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0u : 1u)});
        if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
          d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);  // neighbours swapped
        }
      }
    }
    return d[a.size()][b.size()];
  };
  uint32_t state = 12345;
  auto next = [&] {
    state = state * 1103515245u + 12345u;
    return (state >> 16) & 0x7fff;
  };
  auto word = [&] {
    std::string w(next() % 12, 'a');
    for (char& c : w) c = static_cast<char>('a' + next() % 3);
    return w;
  };
  for (int n = 0; n < 2000; ++n) {
    std::string a = word(), b = word();
    unsigned exact = full(a, b);
    for (unsigned limit = 0; limit <= 13; ++limit) {
      ASSERT_EQ(editDistance(a, b, limit), std::min(exact, limit + 1))
          << "'" << a << "' '" << b << "' limit " << limit;
    }
  }
}

// A long name with a typo is suggested in time linear in its length (the band
// and the limit of 10): 200,000 characters took minutes with the full table.
TEST(DiagnosticsTest, ClosestMatchOfVeryLongNames) {
  std::string defined(200000, 'v');
  std::string typo = defined + "w";
  std::vector<std::string_view> names = {defined, "x"};
  EXPECT_EQ(closestMatch(typo, names), defined);
  EXPECT_EQ(editDistance(typo, defined, 10), 1u);
}

TEST(DiagnosticsTest, ClosestMatch) {
  std::vector<std::string_view> statements = {"let", "return", "if", "for", "while",
                                              "break", "continue", "else"};
  EXPECT_EQ(closestMatch("retrun", statements), "return");
  EXPECT_EQ(closestMatch("whille", statements), "while");
  EXPECT_EQ(closestMatch("contnue", statements), "continue");
  std::vector<std::string_view> items = {"layer", "fn", "main", "import", "let"};
  EXPECT_EQ(closestMatch("lyer", items), "layer");
  EXPECT_EQ(closestMatch("fm", items), "fn");
  EXPECT_EQ(closestMatch("improt", items), "import");
}

TEST(DiagnosticsTest, ClosestMatchRejectsDistantWordsAndExactMatches) {
  std::vector<std::string_view> items = {"layer", "fn", "main", "import", "let"};
  EXPECT_EQ(closestMatch("banana", items), "");
  EXPECT_EQ(closestMatch("let", items), "");  // the word itself is no suggestion
  EXPECT_EQ(closestMatch("tle", items), "");  // two edits is too many for 3 letters
  EXPECT_EQ(closestMatch("lte", items), "let");  // one swap of neighbours is one
  EXPECT_EQ(closestMatch("x", {}), "");
}

TEST(DiagnosticsTest, ClosestMatchPrefersTheFirstOfEquallyCloseCandidates) {
  EXPECT_EQ(closestMatch("lat", {"let", "lit"}), "let");
  EXPECT_EQ(closestMatch("lat", {"lit", "let"}), "lit");
  EXPECT_EQ(closestMatch("lat", {"lxyz", "lit", "lid"}), "lit");
}

TEST(DiagnosticsTest, ClosestMatchPrefersTheWordWithoutAnExtraLastKey) {
  // One edit from both: a key pressed too many at the end, not a substitution.
  EXPECT_EQ(closestMatch("relux", {"relu6", "relu"}), "relu");
  EXPECT_EQ(closestMatch("reluu", {"relu", "relu6"}), "relu");
  EXPECT_EQ(closestMatch("relu7", {"relu", "relu6"}), "relu6");  // a digit is meant
}

TEST(DiagnosticsTest, ClosestMatchBreaksTiesByPrefixThenLength) {
  // All one edit away: the one keeping more of the word's start wins.
  EXPECT_EQ(closestMatch("lat", {"lit", "lad"}), "lad");
  EXPECT_EQ(closestMatch("int3", {"int", "int8", "int32"}), "int32");
  EXPECT_EQ(closestMatch("int6", {"int16", "int64"}), "int64");
  // Two edits each, same start: the one of the word's length.
  EXPECT_EQ(closestMatch("float64", {"float", "float32", "float16"}), "float32");
  EXPECT_EQ(closestMatch("floatt", {"float16", "float"}), "float");
}

}  // namespace
}  // namespace tritonc

// File names are bytes: one that is not UTF-8 must still give valid JSON and
// a Python string literal (the generated module is read as UTF-8).
TEST(DiagnosticsTest, QuotedTextStaysUtf8) {
  std::string json;
  tritonc::appendJsonString(json, "r\xffn\xc3\xa9.tri");  // a stray byte, then a valid 'é'
  EXPECT_EQ(json, "\"r\\ufffdn\xc3\xa9.tri\"");
  EXPECT_EQ(tritonc::quoteForDump("r\xffn\xc3\xa9\x01.tri"), "\"r\\xFFn\xc3\xa9\\x01.tri\"");
  EXPECT_EQ(tritonc::quoteForDump("\xe2\x82"), "\"\\xE2\\x82\"");  // a truncated sequence
}

// An invisible character (a bidi override, a zero-width space, a C1 control)
// is escaped the same way in JSON, in dumps and in the generated code's
// comments; a visible one, however far from ASCII, is kept.
TEST(DiagnosticsTest, InvisibleCharactersAreEscapedAlike) {
  std::string out;
  EXPECT_EQ(tritonc::appendInvisibleEscape(out, "a\xe2\x80\xae" "b", 1), 3u);  // U+202E
  EXPECT_EQ(out, "\\u202e");
  EXPECT_EQ(tritonc::appendInvisibleEscape(out, "\xc2\x9b", 0), 2u);  // U+009B (CSI)
  EXPECT_EQ(out, "\\u202e\\u009b");
  EXPECT_EQ(tritonc::appendInvisibleEscape(out, "\xc3\xa9", 0), 0u);          // é
  EXPECT_EQ(tritonc::appendInvisibleEscape(out, "\xf0\x9f\x98\x80", 0), 0u);  // an emoji
  EXPECT_EQ(tritonc::appendInvisibleEscape(out, "\xe2\x80", 0), 0u);          // truncated
  EXPECT_EQ(tritonc::appendInvisibleEscape(out, "x", 0), 0u);
  EXPECT_EQ(out, "\\u202e\\u009b");

  std::string json;
  tritonc::appendJsonString(json, "x\xe2\x80\x8by");  // U+200B
  EXPECT_EQ(json, "\"x\\u200by\"");
  EXPECT_EQ(tritonc::quoteForDump("x\xe2\x80\x8by"), "\"x\\u200by\"");
}

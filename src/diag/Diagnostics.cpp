//===- Diagnostics.cpp - engine, text and JSON rendering ------------------===//
#include "tritonc/diag/Diagnostics.h"

#include "tritonc/base/Text.h"

#include <cctype>
#include <algorithm>
#include <array>

namespace tritonc {

namespace {

struct DiagInfo {
  std::string_view name;
  Severity severity;
  std::string_view format;
};

constexpr DiagInfo kDiagInfo[] = {
#define DIAG(Kind, Sev, Format) {#Kind, Severity::Sev, Format},
#include "tritonc/diag/Diagnostics.def"
};

constexpr std::string_view kNoteFormat[] = {
#define NOTE(Kind, Format) Format,
#include "tritonc/diag/Diagnostics.def"
};

// ANSI styles, as clang uses them.
constexpr const char* kBold = "\033[1m";
constexpr const char* kReset = "\033[0m";
constexpr const char* kRed = "\033[1;31m";
constexpr const char* kMagenta = "\033[1;35m";
constexpr const char* kCyan = "\033[1;36m";
constexpr const char* kGreen = "\033[1;32m";

const char* severityColor(Severity severity) {
  switch (severity) {
    case Severity::Error: return kRed;
    case Severity::Warning: return kMagenta;
    case Severity::Note: return kCyan;
  }
  return kReset;
}

// Appends the source line of `range` and a caret line underlining it.
// Bytes that are not printable UTF-8 are shown as <XX>, tabs are expanded
// (to stops of 8) in both lines so that the caret lines up, and very long
// lines are shown in part.
// The line shown is the caret's; the parts of the range on it are underlined.
void renderSnippet(std::string& out, const SourceBuffer& source, SourceRange range,
                   uint32_t caretOffset, bool color) {
  LineCol lc = source.lineCol(caretOffset);
  std::string_view line = source.lineText(lc.line);
  size_t lineStart = caretOffset - (lc.column - 1);
  size_t caret = std::min<size_t>(lc.column - 1, line.size());
  auto onLine = [&](size_t offset) {
    return std::clamp(offset, lineStart, lineStart + line.size()) - lineStart;
  };
  size_t rangeBegin = onLine(range.begin);
  if (range.begin < lineStart) {  // continued from a line above: from the first non-blank
    rangeBegin = std::min(line.find_first_not_of(" \t"), caret);
  }
  size_t rangeEnd = caretOffset == range.begin
                        ? std::min<size_t>(caret + std::max<uint32_t>(range.end - range.begin, 1),
                                           line.size())
                        : onLine(range.end);
  constexpr size_t kContext = 120;  // bytes shown on each side of the caret
  constexpr size_t kTabStop = 8;
  size_t begin = caret > kContext ? caret - kContext : 0;
  size_t end = std::min(line.size(), std::max(std::min(rangeEnd, caret + 2 * kContext),
                                              caret + kContext));
  const auto* bytes = reinterpret_cast<const unsigned char*>(line.data());
  // Start on a character boundary.
  while (begin > 0 && (bytes[begin] & 0xC0) == 0x80) {
    --begin;
  }
  std::string shown;
  std::string marks;
  size_t column = 0;  // of `shown`, for tab stops
  if (begin > 0) {
    shown += "...";
    marks += "   ";
    column = 3;
  }
  for (size_t i = begin; i < end;) {
    unsigned char c = bytes[i];
    size_t len = 1;    // bytes of source consumed
    size_t width = 1;  // columns shown
    if (c >= 0x20 && c < 0x7F) {
      shown += static_cast<char>(c);
    } else if (c == '\t') {
      // Expanded to the next stop of 8 in both lines, as clang does: a tab
      // kept in the source line but underlined as one '~' put the caret
      // left of its column.
      width = kTabStop - column % kTabStop;
      shown.append(width, ' ');
    } else {
      // A valid UTF-8 character prints as itself, as wide as the terminal
      // shows it (so the caret lines up under CJK text and emoji); an
      // invisible one is named, anything else unprintable shown as <XX>.
      Utf8Char ch = c >= 0x80 ? decodeUtf8(line.substr(i)) : Utf8Char{};
      if (ch.length > 0 && isInvisibleCharacter(ch.codePoint)) {
        len = ch.length;
        std::string name = codePointName(ch.codePoint);
        shown += name;
        width = name.size();
      } else if (ch.length > 0) {
        len = ch.length;
        shown.append(line.substr(i, len));
        width = static_cast<size_t>(displayWidth(ch.codePoint));
      } else {
        constexpr char kHex[] = "0123456789ABCDEF";
        shown += '<';
        shown += kHex[c >> 4];
        shown += kHex[c & 15];
        shown += '>';
        width = 4;
      }
    }
    char mark = ' ';
    if (i == caret) {
      mark = '^';
    } else if (i >= rangeBegin && i < rangeEnd) {
      mark = '~';
    }
    if (width > 0 || mark == '^') {
      marks += mark;
      if (width > 1) {
        marks.append(width - 1, mark == '^' ? (c == '\t' ? ' ' : '~') : mark);
      }
    }
    column += width;
    i += len;
  }
  if (end < line.size()) {
    shown += "...";
  }
  if (caret >= end) {
    marks += '^';  // the range starts at the end of the line
  }
  while (!marks.empty() && marks.back() == ' ') {
    marks.pop_back();
  }
  out += shown;
  out += '\n';
  if (color) {
    size_t first = marks.find_first_of("^~");
    marks.insert(first == std::string::npos ? marks.size() : first, kGreen);
    marks += kReset;
  }
  out += marks;
  out += '\n';
}

void appendPrintable(std::string& out, std::string_view text);

void renderHeader(std::string& out, const SourceBuffer* source, const std::string& path,
                  uint32_t location, Severity severity, bool color) {
  if (color) {
    out += kBold;
  }
  if (source != nullptr) {
    LineCol lc = source->lineCol(location);
    // The name escaped as messages are: a newline in it would split the
    // `file:line:col:` that editors parse, an ESC drive the terminal.
    appendPrintable(out, source->name());
    out += fmt::format(":{}:{}: ", lc.line, lc.column);
  } else if (!path.empty()) {
    appendPrintable(out, path);
    out += ": ";
  } else if (severity != Severity::Note) {
    out += "tritonc: ";
  }
  if (color) {
    out += severityColor(severity);
  }
  out += severityName(severity);
  out += ": ";
  if (color) {
    out += kReset;
    out += kBold;
  }
}

}  // namespace

std::string_view diagName(Diag kind) { return kDiagInfo[static_cast<size_t>(kind)].name; }
Severity diagSeverity(Diag kind) { return kDiagInfo[static_cast<size_t>(kind)].severity; }
bool isUsageDiag(Diag kind) { return kind == Diag::UnknownEntry; }
std::string_view diagFormat(Diag kind) { return kDiagInfo[static_cast<size_t>(kind)].format; }
std::string_view noteFormat(Note kind) { return kNoteFormat[static_cast<size_t>(kind)]; }
size_t diagKindCount() { return std::size(kDiagInfo); }

std::string_view severityName(Severity severity) {
  switch (severity) {
    case Severity::Error: return "error";
    case Severity::Warning: return "warning";
    case Severity::Note: return "note";
  }
  return "error";
}

DiagnosticBuilder::~DiagnosticBuilder() {
  if (engine_ != nullptr) {
    engine_->emit(std::move(diagnostic_));
  }
}

void DiagnosticEngine::emit(Diagnostic diagnostic) {
  for (auto it = contexts_.rbegin(); it != contexts_.rend(); ++it) {
    if (it->source != diagnostic.source || diagnostic.source == nullptr) continue;
    if (it->kind == ContextKind::AddedToErrors && diagnostic.severity != Severity::Error) continue;
    std::vector<DiagnosticNote> notes = it->notes();
    diagnostic.notes.insert(diagnostic.notes.end(), notes.begin(), notes.end());
    if (it->kind == ContextKind::Replacing) break;
  }
  if (recorder_ != nullptr) {
    recorder_->push_back(diagnostic);
  }
  if (diagnostic.severity == Severity::Warning) {
    if (options_.warningsAsErrors) {
      diagnostic.severity = Severity::Error;
      diagnostic.promotedByWerror = true;
    } else if (options_.suppressWarnings) {
      return;
    }
  }
  if (diagnostic.severity == Severity::Note && options_.suppressWarnings) {
    return;  // -q: errors only (a note attached to an error stays with it)
  }
  if (diagnostic.severity == Severity::Error && isUsageDiag(diagnostic.kind)) {
    ++usageErrorCount_;
  }
  if (errorLimitReached()) {
    if (diagnostic.severity == Severity::Error) {
      ++errorCount_;
    }
    return;
  }
  if (diagnostic.severity == Severity::Error) {
    ++errorCount_;
  } else if (diagnostic.severity == Severity::Warning) {
    ++warningCount_;
  }
  consumer_->handle(diagnostic);
  if (diagnostic.severity == Severity::Error && errorLimitReached()) {
    Diagnostic stop;
    stop.kind = Diag::TooManyErrors;
    stop.severity = Severity::Error;
    stop.message = std::string(diagFormat(Diag::TooManyErrors));
    consumer_->handle(stop);
  }
}

namespace {

// A message as one line that cannot drive the terminal: control characters
// from the source (a string literal's ESC or newline) are shown as escapes,
// as the source excerpt shows them.
void appendPrintable(std::string& out, std::string_view text) {
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    auto byte = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (byte < 0x20 || byte == 0x7F) {
      out += fmt::format("\\x{:02X}", unsigned{byte});
    } else if (byte < 0x80) {
      out += c;
    } else if (Utf8Char ch = decodeUtf8(text.substr(i));
               ch.length > 0 && isInvisibleCharacter(ch.codePoint)) {
      // A C1 control, a bidi control (which would reorder the rest of the
      // line) or another invisible character: named, as the excerpt names it.
      out += codePointName(ch.codePoint);
      i += ch.length - 1;
    } else {
      out += c;
    }
  }
}

}  // namespace

std::string TextDiagnosticConsumer::render(const Diagnostic& diagnostic, bool color) {
  std::string out;
  renderHeader(out, diagnostic.source, diagnostic.path, diagnostic.location(), diagnostic.severity,
               color);
  appendPrintable(out, diagnostic.message);
  // As clang's `[-Werror,-Wunused-variable]`: an error that -Werror made from
  // a warning says so, or the user looks for a rule the language doesn't have.
  out += diagnostic.promotedByWerror ? " [-Werror," : " [";
  out += diagName(diagnostic.kind);
  out += ']';
  if (color) {
    out += kReset;
  }
  out += '\n';
  if (diagnostic.source != nullptr) {
    renderSnippet(out, *diagnostic.source, diagnostic.range, diagnostic.location(), color);
  }
  for (const DiagnosticNote& note : diagnostic.notes) {
    renderHeader(out, note.source, std::string(), note.range.begin, Severity::Note, color);
    appendPrintable(out, note.message);
    if (color) {
      out += kReset;
    }
    out += '\n';
    if (note.source != nullptr) {
      renderSnippet(out, *note.source, note.range, note.range.begin, color);
    }
  }
  return out;
}

void TextDiagnosticConsumer::handle(const Diagnostic& diagnostic) {
  std::string text = render(diagnostic, color_);
  std::fwrite(text.data(), 1, text.size(), out_);
  std::fflush(out_);
}

std::string JsonDiagnosticConsumer::render(const Diagnostic& diagnostic) {
  std::string out = "{\"file\":";
  LineCol lc;
  if (diagnostic.source != nullptr) {
    appendJsonString(out, diagnostic.source->name());
    lc = diagnostic.source->lineCol(diagnostic.location());
  } else {
    appendJsonString(out, diagnostic.path.empty() ? diagnostic.subject : diagnostic.path);
  }
  out += fmt::format(",\"line\":{},\"column\":{},\"severity\":", lc.line, lc.column);
  appendJsonString(out, severityName(diagnostic.severity));
  out += ",\"code\":";
  appendJsonString(out, diagName(diagnostic.kind));
  out += ",\"message\":";
  appendJsonString(out, diagnostic.message);
  out += ",\"notes\":[";
  for (size_t i = 0; i < diagnostic.notes.size(); ++i) {
    if (i > 0) {
      out += ',';
    }
    appendJsonString(out, diagnostic.notes[i].message);
  }
  out += ']';
  // The notes that point somewhere else ("'base.tri' is imported here", "in the 'Block'
  // created here with c = 64"), with their place, as LSP's relatedInformation: `notes`
  // stays the list of strings the contract names, and an editor or CI annotation can
  // still jump to "here".
  bool first = true;
  for (const DiagnosticNote& note : diagnostic.notes) {
    // (A note at the diagnostic's own place, "did you mean 'layer'?", adds no place.)
    if (note.source == nullptr ||
        (note.source == diagnostic.source && note.range.begin == diagnostic.location())) {
      continue;
    }
    out += first ? ",\"related\":[" : ",";
    first = false;
    LineCol at = note.source->lineCol(note.range.begin);
    out += "{\"file\":";
    appendJsonString(out, note.source->name());
    out += fmt::format(",\"line\":{},\"column\":{},\"message\":", at.line, at.column);
    appendJsonString(out, note.message);
    out += '}';
  }
  if (!first) out += ']';
  out += "}\n";
  return out;
}

void SortingDiagnosticConsumer::flush() {
  std::stable_sort(pending_.begin(), pending_.end(), [](const Diagnostic& a, const Diagnostic& b) {
    // By file and position; diagnostics about no position (the error limit)
    // come last.
    if ((a.source == nullptr) != (b.source == nullptr)) {
      return b.source == nullptr;
    }
    if (a.source == nullptr || a.source == b.source) {
      return a.source != nullptr && a.location() < b.location();
    }
    return a.source->name() < b.source->name();
  });
  for (const Diagnostic& diagnostic : pending_) {
    next_.handle(diagnostic);
  }
  pending_.clear();
}

void JsonDiagnosticConsumer::handle(const Diagnostic& diagnostic) {
  std::string text = render(diagnostic);
  std::fwrite(text.data(), 1, text.size(), out_);
  std::fflush(out_);
}

unsigned editDistance(std::string_view a, std::string_view b, unsigned maxDistance) {
  // Optimal string alignment: insertions, deletions, substitutions and swaps of
  // two adjacent letters cost 1 each (`fro` is one edit from `for`, as a typist
  // counts). Dynamic programming over the band |i - j| <= maxDistance (a cell
  // outside it is more than maxDistance away), three rows, so the cost is
  // O(|a| * maxDistance), not O(|a| * |b|); gives up early once every entry of
  // a row exceeds maxDistance.
  size_t gap = a.size() > b.size() ? a.size() - b.size() : b.size() - a.size();
  if (gap > maxDistance) return maxDistance + 1;
  const unsigned over = maxDistance + 1;
  // before: row i - 2 (swaps), row: row i - 1, next: row i. A row's cells just
  // outside its band are `over`, as the next row reads them.
  std::vector<unsigned> before(b.size() + 1, over), row(b.size() + 1, over),
      next(b.size() + 1, over);
  for (size_t j = 0; j <= b.size() && j <= maxDistance; ++j) {
    row[j] = static_cast<unsigned>(j);
  }
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t lo = i > maxDistance ? i - maxDistance : 1;
    size_t hi = std::min(b.size(), i + maxDistance);
    next[lo - 1] = lo == 1 && i <= maxDistance ? static_cast<unsigned>(i) : over;
    unsigned best = next[lo - 1];
    for (size_t j = lo; j <= hi; ++j) {
      unsigned cost = a[i - 1] == b[j - 1] ? 0 : 1;
      unsigned d = std::min({next[j - 1] + 1, row[j] + 1, row[j - 1] + cost, over});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d = std::min(d, before[j - 2] + 1);
      }
      next[j] = d;
      best = std::min(best, d);
    }
    if (hi + 1 <= b.size()) next[hi + 1] = over;
    if (best > maxDistance) {
      return over;
    }
    std::swap(before, row);
    std::swap(row, next);
  }
  return std::min(row[b.size()], over);
}

std::string_view closestMatch(std::string_view word,
                              const std::vector<std::string_view>& candidates) {
  // Allow roughly one typo per three characters, as clang's typo correction
  // does, and at most 10 (more edits than that are another word; the cap keeps
  // the banded distance linear in the length of a very long name).
  unsigned limit = static_cast<unsigned>(std::clamp<size_t>((word.size() + 2) / 3, 1, 10));
  std::string_view best;
  unsigned bestDistance = limit + 1;
  auto sharedPrefix = [&](std::string_view candidate) {
    size_t n = 0;
    while (n < word.size() && n < candidate.size() && word[n] == candidate[n]) ++n;
    return n;
  };
  for (std::string_view candidate : candidates) {
    // The length difference bounds the distance from below.
    size_t gap = candidate.size() > word.size() ? candidate.size() - word.size()
                                                : word.size() - candidate.size();
    if (candidate == word || gap > bestDistance) {
      continue;
    }
    unsigned distance = editDistance(word, candidate, limit);
    // A word replaced whole (`F` for `x`) is a different word, not a typo.
    if (distance > limit || distance >= word.size() || distance > bestDistance) {
      continue;
    }
    // Equally close: the word with one letter too many at its end (`relux`:
    // 'relu', not 'relu6'; a digit there is meant, `relu7`: 'relu6'), then
    // the one that keeps more of the word's start (`int3`: 'int32', not
    // 'int'), then the one nearer its length (`float64`: 'float32', not
    // 'float'), then the first.
    auto oneExtraKey = [&](std::string_view c) {
      return c.size() + 1 == word.size() && word.substr(0, c.size()) == c &&
             std::isalpha(static_cast<unsigned char>(word.back()));
    };
    if (distance == bestDistance && !(oneExtraKey(candidate) && !oneExtraKey(best))) {
      if (oneExtraKey(best)) continue;
      size_t kept = sharedPrefix(candidate), bestKept = sharedPrefix(best);
      size_t bestGap = best.size() > word.size() ? best.size() - word.size()
                                                 : word.size() - best.size();
      if (kept < bestKept || (kept == bestKept && gap >= bestGap)) continue;
    }
    bestDistance = distance;
    best = candidate;
  }
  return best;
}

}  // namespace tritonc

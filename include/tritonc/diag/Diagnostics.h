//===- Diagnostics.h - the diagnostics engine -------------------*- C++ -*-===//
//
// Entry header of the diag stage. Stages report user mistakes through one
// `DiagnosticEngine`:
//
//   diags.error(Diag::ExpectedToken, src, range, "')'", found)
//        .note(Note::MatchingDelimiter, src, openRange, "(");
//
// The builder hands the finished diagnostic to a consumer when it goes out of
// scope: text (clang style, with source line, caret and colours) or JSON (one
// object per line). Kinds, severities and formats come from Diagnostics.def.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "tritonc/source/SourceBuffer.h"

namespace tritonc {

/// Every diagnostic kind, from Diagnostics.def.
enum class Diag : uint16_t {
#define DIAG(Kind, Severity, Format) Kind,
#include "tritonc/diag/Diagnostics.def"
};
/// Every note kind, from Diagnostics.def.
enum class Note : uint16_t {
#define NOTE(Kind, Format) Kind,
#include "tritonc/diag/Diagnostics.def"
};

enum class Severity : uint8_t { Note, Warning, Error };

/// A half-open byte range [begin, end) in one source buffer.
struct SourceRange {
  uint32_t begin = 0;
  uint32_t end = 0;
};

/// Static facts about a kind.
std::string_view diagName(Diag kind);
Severity diagSeverity(Diag kind);
/// Whether `kind` is about the command line rather than the source (an
/// `--entry` naming no layer): a compile whose only errors are these exits
/// with status 2, "usage error", not 1 (TOOLCHAIN.md).
bool isUsageDiag(Diag kind);
std::string_view diagFormat(Diag kind);
std::string_view noteFormat(Note kind);
std::string_view severityName(Severity severity);
/// Number of DIAG entries (for coverage tests).
size_t diagKindCount();

struct DiagnosticNote {
  const SourceBuffer* source = nullptr;  ///< null: the note has no location
  SourceRange range;
  std::string message;
};

/// A note of `kind` located at `range` in `source`, to attach later.
template <typename... Args>
DiagnosticNote makeNote(Note kind, const SourceBuffer& source, SourceRange range,
                        Args&&... args) {
  return DiagnosticNote{&source, range,
                        fmt::format(fmt::runtime(noteFormat(kind)), std::forward<Args>(args)...)};
}

/// One finished diagnostic.
struct Diagnostic {
  /// The offset the header's line:col names: the caret.
  uint32_t location() const { return caret.value_or(range.begin); }

  Diag kind{};
  Severity severity = Severity::Error;
  const SourceBuffer* source = nullptr;  ///< null: not about a position in a file
  std::string path;                      ///< used when source is null
  SourceRange range;
  /// Where the caret goes when not at range.begin (clang's caret-in-a-range:
  /// an operator between its underlined operands). Also the line:col shown.
  std::optional<uint32_t> caret;
  std::string message;
  std::vector<DiagnosticNote> notes;
  bool promotedByWerror = false;  ///< a warning that -Werror made an error
  /// The file a diagnostic without a header path is about (a missing input, an
  /// unwritable output): the message names it for people, JSON's `file` for tools.
  std::string subject;
};

/// Receives finished diagnostics.
class DiagnosticConsumer {
 public:
  virtual ~DiagnosticConsumer() = default;
  virtual void handle(const Diagnostic& diagnostic) = 0;
};

/// Renders diagnostics as `file:line:col: error: message [Kind]` + source + caret.
class TextDiagnosticConsumer final : public DiagnosticConsumer {
 public:
  TextDiagnosticConsumer(std::FILE* out, bool color) : out_(out), color_(color) {}
  void handle(const Diagnostic& diagnostic) override;
  /// The rendering of `handle`, for tests and dumps.
  static std::string render(const Diagnostic& diagnostic, bool color);

 private:
  std::FILE* out_;
  bool color_;
};

/// Renders one JSON object per diagnostic per line:
/// {"file","line","column","severity","code","message","notes":[...]}.
class JsonDiagnosticConsumer final : public DiagnosticConsumer {
 public:
  explicit JsonDiagnosticConsumer(std::FILE* out) : out_(out) {}
  void handle(const Diagnostic& diagnostic) override;
  static std::string render(const Diagnostic& diagnostic);

 private:
  std::FILE* out_;
};

/// Keeps diagnostics in memory (unit tests, fuzzers).
class CollectingDiagnosticConsumer final : public DiagnosticConsumer {
 public:
  void handle(const Diagnostic& diagnostic) override { diagnostics.push_back(diagnostic); }
  std::vector<Diagnostic> diagnostics;
};

/// Holds diagnostics back and forwards them sorted by position (stable), so
/// that a file's lexical and syntax errors come out in source order.
class SortingDiagnosticConsumer final : public DiagnosticConsumer {
 public:
  explicit SortingDiagnosticConsumer(DiagnosticConsumer& next) : next_(next) {}
  ~SortingDiagnosticConsumer() override { flush(); }
  void handle(const Diagnostic& diagnostic) override { pending_.push_back(diagnostic); }
  /// Forwards everything held so far.
  void flush();

 private:
  DiagnosticConsumer& next_;
  std::vector<Diagnostic> pending_;
};

class DiagnosticEngine;

/// True when the first of Args is a SourceBuffer (selects the located note()).
template <typename... Args>
inline constexpr bool startsWithSource = false;
template <typename First, typename... Rest>
inline constexpr bool startsWithSource<First, Rest...> =
    std::is_same_v<std::remove_cvref_t<First>, SourceBuffer>;

/// Accumulates notes; emits the diagnostic when destroyed.
class DiagnosticBuilder {
 public:
  DiagnosticBuilder(DiagnosticEngine* engine, Diagnostic diagnostic)
      : engine_(engine), diagnostic_(std::move(diagnostic)) {}
  DiagnosticBuilder(DiagnosticBuilder&& other) noexcept
      : engine_(other.engine_), diagnostic_(std::move(other.diagnostic_)) {
    other.engine_ = nullptr;
  }
  DiagnosticBuilder(const DiagnosticBuilder&) = delete;
  DiagnosticBuilder& operator=(const DiagnosticBuilder&) = delete;
  DiagnosticBuilder& operator=(DiagnosticBuilder&&) = delete;
  ~DiagnosticBuilder();

  /// Adds a note located at `range` in `source`.
  template <typename... Args>
  DiagnosticBuilder& note(Note kind, const SourceBuffer& source, SourceRange range,
                          Args&&... args) {
    diagnostic_.notes.push_back(DiagnosticNote{
        &source, range, fmt::format(fmt::runtime(noteFormat(kind)), std::forward<Args>(args)...)});
    return *this;
  }
  /// Adds a note without a location.
  template <typename... Args>
    requires(!startsWithSource<Args...>)
  DiagnosticBuilder& note(Note kind, Args&&... args) {
    diagnostic_.notes.push_back(DiagnosticNote{
        nullptr, {}, fmt::format(fmt::runtime(noteFormat(kind)), std::forward<Args>(args)...)});
    return *this;
  }
  /// Puts the caret at `offset` inside the range (see Diagnostic::caret).
  DiagnosticBuilder& caretAt(uint32_t offset) {
    diagnostic_.caret = offset;
    return *this;
  }
  /// Names the file a diagnostic about no position is about (see Diagnostic::subject).
  DiagnosticBuilder& about(std::string file) {
    diagnostic_.subject = std::move(file);
    return *this;
  }

 private:
  DiagnosticEngine* engine_;
  Diagnostic diagnostic_;
};

/// Options that change how diagnostics are reported.
struct DiagnosticOptions {
  bool warningsAsErrors = false;  ///< -Werror
  bool suppressWarnings = false;  ///< -q keeps errors only
  /// After this many errors, one TooManyErrors is reported and the rest are
  /// counted but not shown (clang's -ferror-limit). 0 = no limit.
  unsigned errorLimit = 0;
};

/// Counts diagnostics and forwards them to a consumer.
class DiagnosticEngine {
 public:
  explicit DiagnosticEngine(DiagnosticConsumer& consumer, DiagnosticOptions options = {})
      : consumer_(&consumer), options_(options) {}

  /// Reports `kind` at `range` of `source`; format arguments follow.
  template <typename... Args>
  DiagnosticBuilder report(Diag kind, const SourceBuffer& source, SourceRange range,
                           Args&&... args) {
    Diagnostic diagnostic;
    diagnostic.kind = kind;
    diagnostic.severity = diagSeverity(kind);
    diagnostic.source = &source;
    diagnostic.range = range;
    diagnostic.message = fmt::format(fmt::runtime(diagFormat(kind)), std::forward<Args>(args)...);
    return DiagnosticBuilder(this, std::move(diagnostic));
  }
  /// Reports `kind` about a file as a whole (e.g. one that cannot be read).
  template <typename... Args>
  DiagnosticBuilder reportForPath(Diag kind, std::string path, Args&&... args) {
    Diagnostic diagnostic;
    diagnostic.kind = kind;
    diagnostic.severity = diagSeverity(kind);
    diagnostic.path = std::move(path);
    diagnostic.message = fmt::format(fmt::runtime(diagFormat(kind)), std::forward<Args>(args)...);
    return DiagnosticBuilder(this, std::move(diagnostic));
  }

  size_t errorCount() const { return errorCount_; }
  /// True once the error limit was reached: callers may stop early.
  bool errorLimitReached() const {
    return options_.errorLimit != 0 && errorCount_ >= options_.errorLimit;
  }
  size_t warningCount() const { return warningCount_; }
  bool hasErrors() const { return errorCount_ > 0; }
  /// Whether every error reported is a usage error (isUsageDiag).
  bool onlyUsageErrors() const { return errorCount_ > 0 && usageErrorCount_ == errorCount_; }

  /// Typo correction ("did you mean") searches every name in scope, so a file
  /// of thousands of misspellings would take quadratic time. As clang's
  /// -fspell-checking-limit, an engine does at most kSpellCheckingLimit of
  /// them, and none once the error limit hides what they would say.
  static constexpr size_t kSpellCheckingLimit = 50;
  bool takeSpellCheck() {
    if (errorLimitReached() || spellChecks_ >= kSpellCheckingLimit) {
      return false;
    }
    ++spellChecks_;
    return true;
  }

  /// Keeps a copy of every diagnostic as reported, before -Werror and -q
  /// apply (the compile cache stores them with the outputs). Null: none.
  void setRecorder(std::vector<Diagnostic>* recorder) { recorder_ = recorder; }
  /// Reports a diagnostic recorded earlier (a cache hit) as if it had just
  /// been reported: -Werror, -q and the error limit apply again.
  void replay(Diagnostic diagnostic) { emit(std::move(diagnostic)); }

  /// An engine that holds back into `consumer` what would be reported here,
  /// for replay() later (or never): nothing of -Werror or -q applied yet, and
  /// the error limit and the "did you mean" budget counted as here, so that
  /// holding does not lift them. settleHeld() takes back the budget it used.
  DiagnosticEngine holding(DiagnosticConsumer& consumer) const {
    DiagnosticOptions raw;
    raw.errorLimit = options_.errorLimit;
    DiagnosticEngine held(consumer, raw);
    held.errorCount_ = errorCount_;
    held.spellChecks_ = spellChecks_;
    return held;
  }
  void settleHeld(const DiagnosticEngine& held) {
    spellChecks_ = std::max(spellChecks_, held.spellChecks_);
  }

  /// While set, every diagnostic located in `source` gets the notes that
  /// `notes()` makes after its own: the chain of imports through which the
  /// file being read or checked was reached (clang's "In file included
  /// from"). Made only when such a diagnostic is reported (most files have
  /// none), so what `notes` refers to must outlive the context. Nested;
  /// popped in order; of these, the innermost for a file applies.
  void pushContext(const SourceBuffer& source,
                   std::function<std::vector<DiagnosticNote>()> notes) {
    contexts_.push_back(Context{&source, std::move(notes), ContextKind::Replacing});
  }
  /// Which diagnostics an added context (pushAddedContext) applies to.
  enum class ContextScope { Every, ErrorsOnly };
  /// Like pushContext, for notes about what is being checked (the call whose
  /// arguments these are): every such context applies, innermost first,
  /// before the innermost pushContext's.
  void pushAddedContext(const SourceBuffer& source,
                        std::function<std::vector<DiagnosticNote>()> notes,
                        ContextScope scope = ContextScope::Every) {
    contexts_.push_back(Context{&source, std::move(notes),
                                scope == ContextScope::Every ? ContextKind::Added
                                                             : ContextKind::AddedToErrors});
  }
  void popContext() { contexts_.pop_back(); }

 private:
  friend class DiagnosticBuilder;
  void emit(Diagnostic diagnostic);

  DiagnosticConsumer* consumer_;
  std::vector<Diagnostic>* recorder_ = nullptr;
  enum class ContextKind { Replacing, Added, AddedToErrors };
  struct Context {
    const SourceBuffer* source;
    std::function<std::vector<DiagnosticNote>()> notes;
    ContextKind kind;
  };
  std::vector<Context> contexts_;
  DiagnosticOptions options_;
  size_t errorCount_ = 0;
  size_t usageErrorCount_ = 0;
  size_t warningCount_ = 0;
  size_t spellChecks_ = 0;
};

/// Pops, when it goes out of scope, the context that was pushed on the engine it
/// is armed with (nothing when never armed): for a context pushed only sometimes.
class ContextGuard {
 public:
  ContextGuard() = default;
  ContextGuard(const ContextGuard&) = delete;
  ContextGuard& operator=(const ContextGuard&) = delete;
  ~ContextGuard() {
    if (engine_ != nullptr) engine_->popContext();
  }
  /// After a push on `engine` (the engine itself, not whichever is current when
  /// the guard ends: a checker may swap in a silent one meanwhile).
  void arm(DiagnosticEngine& engine) { engine_ = &engine; }
  bool armed() const { return engine_ != nullptr; }

 private:
  DiagnosticEngine* engine_ = nullptr;
};

/// Optimal string alignment distance (Levenshtein plus swaps of adjacent letters), for
/// "did you mean" suggestions.
unsigned editDistance(std::string_view a, std::string_view b, unsigned maxDistance);

/// The candidate closest to `word`, if it is close enough to be a likely typo.
std::string_view closestMatch(std::string_view word, const std::vector<std::string_view>& candidates);

}  // namespace tritonc

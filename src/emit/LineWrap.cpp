//===- LineWrap.cpp - Python statements within 100 columns ----------------===//
//
// A line too long is split the way black splits it, by the first of these
// that applies:
//
// 1. Inside brackets, before each top-level operator of the loosest kind the
//    line has (black's delimiter priorities): `if`/`else` of a conditional
//    expression, then `and`/`or`, comparisons, `+`/`-` together with the
//    places between adjacent string literals.
// 2. At a bracket pair (a "right-hand split"): the last pair outside any
//    other whose opening line (`x = f(`) and closing line (`)[0]`) fit,
//    passing over a subscript of one atom (`[0]`, `[i]`) when an earlier pair
//    fits, since splitting there gains nothing. Its contents go one element
//    per line with a trailing comma (black's), except where a comma would
//    change the meaning: a parenthesized expression (`(a,)` is a tuple) and a
//    subscript of one element (`x[a,]` indexes with a tuple).
// 3. Inside brackets, before each top-level `*`, `/`, `//`, `%` or `@`: after
//    2 where the pair follows the last of them, so that `f(a) / g(b)` keeps
//    its operands on one line where `g(` fits (2 passes over a pair before
//    one).
// 4. The operand of `x = `, `return `, `del `, `assert cond, `, `if ... :`
//    or, inside brackets, of a keyword argument `name=` put in parentheses of
//    its own (`x = (`), where that helps: black's "invisible parentheses".
// 5. At a pair of the kind passed over in 2.
// 6. A string literal inside brackets cut into adjacent literals, which
//    Python joins into the same string: never inside an escape or a UTF-8
//    sequence, after a space where one lies in a piece's second half.
// 7. Inside brackets, before the `.` of each top-level attribute (`x` and
//    `.shape` on lines of their own), as black splits a method chain.
// 8. At the last pair, however long its first and last lines (each is then
//    wrapped in turn).
//
// Every line written is one of the parts wrapped again, so a part that is
// still too long is split further. Only a single token longer than a line,
// or indentation that leaves almost no room, stays longer than 100 columns.
//
//===----------------------------------------------------------------------===//
#include "LineWrap.h"

#include <cctype>
#include <initializer_list>
#include <string>
#include <vector>

namespace tritonc {

namespace {

bool isOpener(char c) { return c == '(' || c == '[' || c == '{'; }
bool isCloser(char c) { return c == ')' || c == ']' || c == '}'; }
bool isNameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

bool fits(int depth, size_t size) { return static_cast<size_t>(depth) * 4 + size <= kMaxColumns; }

void writeLine(std::string& out, int depth, std::string_view text) {
  out.append(static_cast<size_t>(depth) * 4, ' ');
  out += text;
  out += '\n';
}

std::string_view trimmed(std::string_view text) {
  size_t first = text.find_first_not_of(' ');
  if (first == std::string_view::npos) return {};
  size_t last = text.find_last_not_of(' ');
  return text.substr(first, last - first + 1);
}

// Calls visit(i, level) for every character of `text` outside its string
// literals (for a literal, once, at its opening quote), `level` the brackets
// enclosing it. A closer with no opener before it in `text` (the line after
// a wrapped pair's contents, `)[0]`) leaves the level at 0.
template <typename Visit>
void walkLevels(std::string_view text, Visit visit) {
  int level = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (isCloser(c) && level > 0) --level;
    visit(i, level);
    if (isQuote(c)) {
      i = stringEnd(text, i);
    } else if (isOpener(c)) {
      ++level;
    }
  }
}

// Whether `text` has a closer for each opener and an opener for each closer.
bool balanced(std::string_view text) {
  bool under = false;
  int end = walkBrackets(text, text.size(), [&](size_t, int depth) {
    under = under || depth < 0;
    return true;
  });
  return !under && end == 0;
}

struct Pair {
  size_t open;
  size_t close;
};

// The bracket pairs of `text` outside any other, in order. A closer before
// any opener and an opener never closed (the line that opens a wrapped pair,
// `x = f(`) belong to none.
std::vector<Pair> outerPairs(std::string_view text) {
  std::vector<Pair> pairs;
  size_t open = std::string_view::npos;  // the opener of the pair inside
  walkLevels(text, [&](size_t i, int level) {
    if (level != 0) return;
    if (isOpener(text[i])) {
      open = i;
    } else if (isCloser(text[i]) && open != std::string_view::npos) {
      pairs.push_back({open, i});
      open = std::string_view::npos;
    }
  });
  return pairs;
}

// `[` right after a name, a closer or a string: indexing, not a list.
bool isSubscript(std::string_view text, size_t open) {
  if (text[open] != '[' || open == 0) return false;
  char before = text[open - 1];
  return isNameChar(before) || isCloser(before) || isQuote(before);
}

// `(` right after a name or a closer: a call's arguments (or a def's
// parameters), not a parenthesized expression or a tuple.
bool isCall(std::string_view text, size_t open) {
  if (text[open] != '(' || open == 0) return false;
  char before = text[open - 1];
  return isNameChar(before) || before == ')' || before == ']';
}

// A subscript of one atom (`[0]`, `[i]`, `[1:]`): no spaces, no commas.
bool atomSubscript(std::string_view text, const Pair& p) {
  return isSubscript(text, p.open) &&
         text.substr(p.open + 1, p.close - p.open - 1).find_first_of(" ,") ==
             std::string_view::npos;
}

// The top-level dots of `text` that start an attribute (`x.shape`,
// `f(x).to`), not those of a number (`1.5`), nor one that starts the text.
std::vector<size_t> attributeDots(std::string_view text) {
  std::vector<size_t> dots;
  walkLevels(text, [&](size_t i, int level) {
    if (level != 0 || text[i] != '.' || i == 0 || i + 1 >= text.size() ||
        !isNameChar(text[i + 1])) {
      return;
    }
    size_t word = i;  // the name or number before the dot
    while (word > 0 && isNameChar(text[word - 1])) --word;
    bool number = word < i && std::isdigit(static_cast<unsigned char>(text[word])) != 0;
    if ((word < i && !number) || (word == i && isCloser(text[i - 1]))) dots.push_back(i);
  });
  return dots;
}

// How loose the operator after the space at text[i] binds (0: no operator
// to break before): black's delimiter priorities, with adjacent string
// literals ranked with `+` and `-` as the emitter always did.
int breakRank(std::string_view text, size_t i) {
  if (i == 0 || i + 1 >= text.size()) return 0;
  std::string_view rest = text.substr(i + 1);
  auto any = [&](std::initializer_list<std::string_view> ops) {
    for (std::string_view op : ops) {
      if (rest.starts_with(op)) return true;
    }
    return false;
  };
  if (any({"if ", "else "})) return 5;
  if (any({"and ", "or "})) return 4;
  if (rest.starts_with("in ") && text.substr(0, i).ends_with(" not")) return 0;  // `not in`
  if (any({"== ", "!= ", "< ", "<= ", "> ", ">= ", "in ", "not in ", "is "})) return 3;
  if (any({"+ ", "- "}) || (isQuote(text[i - 1]) && isQuote(rest[0]))) return 2;
  if (any({"* ", "/ ", "// ", "% ", "@ "})) return 1;
  return 0;
}

class Wrapper {
 public:
  explicit Wrapper(std::string& out) : out_(out) {}

  /// `whole`: `text` is a whole statement or element, not a part another
  /// split cut off (`name=A | B` of `name=A | B * C`): only a whole one may
  /// get parentheses around its operand.
  void write(int depth, std::string_view text, bool bracketed, bool whole = true) {
    if (fits(depth, text.size())) {
      writeLine(out_, depth, text);
      return;
    }
    if (bracketed && splitAtOperators(depth, text, 2)) return;
    std::vector<Pair> pairs = outerPairs(text);
    // Inside brackets, where the last `*`, `/`, `//`, `%` or `@` is: a pair
    // before it is split there first (`f(\n    x,\n) * y` reads worse).
    size_t lastOperator = 0;
    walkLevels(text, [&](size_t i, int level) {
      if (bracketed && level == 0 && text[i] == ' ' && breakRank(text, i) == 1) lastOperator = i;
    });
    // The last pair (from the end) whose first and last lines fit.
    auto fitting = [&](bool atoms) -> const Pair* {
      for (size_t k = pairs.size(); k-- > 0;) {
        const Pair& p = pairs[k];
        if (p.close == p.open + 1 || !fits(depth, p.open + 1) ||
            !fits(depth, text.size() - p.close) ||
            (!atoms && (atomSubscript(text, p) || p.close < lastOperator))) {
          continue;
        }
        return &p;
      }
      return nullptr;
    };
    if (const Pair* p = fitting(false)) {
      splitAt(depth, text, *p, bracketed);
      return;
    }
    if (bracketed && splitAtOperators(depth, text, 1)) return;
    if (whole && wrapOperand(depth, text, bracketed)) return;
    if (const Pair* p = fitting(true)) {
      splitAt(depth, text, *p, bracketed);
      return;
    }
    if (splitLiteral(depth, text, bracketed)) return;
    if (bracketed && splitAtDots(depth, text)) return;
    for (bool atoms : {false, true}) {
      for (size_t k = pairs.size(); k-- > 0;) {
        if (pairs[k].close > pairs[k].open + 1 && (atoms || !atomSubscript(text, pairs[k]))) {
          splitAt(depth, text, pairs[k], bracketed);
          return;
        }
      }
    }
    writeLine(out_, depth, text);
  }

 private:
  // 1 and 3: before each top-level operator of the loosest kind, of
  // rank `least` or looser.
  bool splitAtOperators(int depth, std::string_view text, int least) {
    std::vector<size_t> breaks;
    int best = 0;
    walkLevels(text, [&](size_t i, int level) {
      if (level != 0 || text[i] != ' ') return;
      int rank = breakRank(text, i);
      if (rank < least || rank < best) return;
      if (rank > best) breaks.clear();
      best = rank;
      breaks.push_back(i);
    });
    if (breaks.empty()) return false;
    breaks.push_back(text.size());
    size_t start = 0;
    for (size_t at : breaks) {
      write(depth, text.substr(start, at - start), true, false);
      start = at + 1;  // past the space: the next part starts at its operator
    }
    return true;
  }

  // 7: before each top-level `.` of an attribute.
  bool splitAtDots(int depth, std::string_view text) {
    std::vector<size_t> breaks = attributeDots(text);
    if (breaks.empty()) return false;
    breaks.push_back(text.size());
    size_t start = 0;
    for (size_t at : breaks) {
      write(depth, text.substr(start, at - start), true, false);
      start = at;  // the next part starts at its dot
    }
    return true;
  }

  // 2, 5 and 8: the line up to the pair's opener, its contents one element
  // per line one level deeper, and the line from its closer on.
  void splitAt(int depth, std::string_view text, const Pair& p, bool bracketed) {
    write(depth, text.substr(0, p.open + 1), bracketed, false);
    std::string_view body = text.substr(p.open + 1, p.close - p.open - 1);
    std::vector<size_t> commas;
    walkLevels(body, [&](size_t i, int level) {
      if (level == 0 && body[i] == ',') commas.push_back(i);
    });
    char opener = text[p.open];
    bool elements = opener == '(' ? isCall(text, p.open) : !isSubscript(text, p.open);
    bool comma = elements || !commas.empty();
    commas.push_back(body.size());
    size_t start = 0;
    for (size_t at : commas) {
      std::string_view item = trimmed(body.substr(start, at - start));
      if (!item.empty()) write(depth + 1, std::string(item) + (comma ? "," : ""), true);
      start = at + 1;
    }
    write(depth, text.substr(p.close), bracketed, false);
  }

  // 4: `x = value` as `x = (` value `)`.
  bool wrapOperand(int depth, std::string_view text, bool bracketed) {
    size_t start = std::string_view::npos;
    size_t end = text.size();
    if (bracketed) {
      // A keyword argument (or a parameter's default): `name=value,`.
      size_t name = 0;
      while (name < text.size() && isNameChar(text[name])) ++name;
      if (name == 0 || name + 1 >= text.size() || text[name] != '=' || text[name + 1] == '=') {
        return false;
      }
      start = name + 1;
      if (text.ends_with(",")) end = text.size() - 1;
    } else if (text.starts_with("return ")) {
      start = 7;
    } else if (text.starts_with("del ")) {
      start = 4;
    } else if (text.starts_with("if ") && text.ends_with(":")) {
      start = 3;
      end = text.size() - 1;
    } else {
      bool assertion = text.starts_with("assert ");
      walkLevels(text, [&](size_t i, int level) {
        if (level != 0 || start != std::string_view::npos || i + 2 >= text.size()) return;
        if (assertion ? text.substr(i, 2) == ", " : text.substr(i, 3) == " = ") {
          start = i + (assertion ? 2 : 3);
        }
      });
    }
    if (start == std::string_view::npos || start >= end || !fits(depth, start + 1) ||
        !balanced(text)) {
      return false;
    }
    std::string_view operand = text.substr(start, end - start);
    std::vector<Pair> pairs = outerPairs(operand);
    if (!pairs.empty() && pairs[0].open == 0 && pairs[0].close + 1 == operand.size()) {
      return false;  // in parentheses already (the split at them did not fit)
    }
    bool spaced = false;  // an operator at its top level to break before
    walkLevels(operand, [&](size_t i, int level) {
      spaced = spaced || (level == 0 && operand[i] == ' ');
    });
    // A pair the operand splits at once on a line of its own.
    bool splits = std::any_of(pairs.begin(), pairs.end(), [&](const Pair& p) {
      return fits(depth + 1, p.open + 1) && fits(depth + 1, operand.size() - p.close);
    });
    bool dotted = !attributeDots(operand).empty();  // split at inside the new parentheses
    if (!fits(depth + 1, operand.size()) && !isQuote(operand[0]) && !spaced && !splits &&
        !dotted) {
      return false;  // one token too long: the parentheses would not help
    }
    std::string wrapped(text.substr(0, start));
    wrapped += '(';
    wrapped += operand;
    wrapped += ')';
    wrapped += text.substr(end);
    write(depth, wrapped, bracketed);
    return true;
  }

  // 6: the longest string literal where the line may break, as adjacent
  // literals: the text before it and the first piece on the first line, the
  // rest one piece a line (one level deeper outside brackets), the last with
  // the text after the literal.
  bool splitLiteral(int depth, std::string_view text, bool bracketed) {
    constexpr size_t kMinPiece = 10;  // narrower pieces read worse than a long line
    size_t open = std::string_view::npos;
    size_t close = 0;
    walkLevels(text, [&](size_t i, int level) {
      if (!isQuote(text[i]) || (!bracketed && level == 0)) return;
      size_t end = stringEnd(text, i);
      if (end < text.size() && (open == std::string_view::npos || end - i > close - open)) {
        open = i;
        close = end;
      }
    });
    int inner = bracketed ? depth : depth + 1;  // the depth of the pieces after the first
    if (open == std::string_view::npos || !fits(inner, 2 + kMinPiece)) return false;
    std::string_view prefix = text.substr(0, open);
    std::string_view content = text.substr(open + 1, close - open - 1);
    std::string_view suffix = text.substr(close + 1);
    char quote = text[open];
    size_t room = kMaxColumns - static_cast<size_t>(inner) * 4 - 2;  // between the quotes
    size_t firstRoom = fits(depth, prefix.size() + 2 + kMinPiece)
                           ? kMaxColumns - static_cast<size_t>(depth) * 4 - prefix.size() - 2
                           : 0;  // 0: the prefix on a line of its own
    bool suffixAlone = suffix.size() > room / 2;
    // The ends of the units a piece may not cut: an escape, a UTF-8 sequence.
    std::vector<size_t> ends;
    for (size_t i = 0; i < content.size();) {
      size_t n = 1;
      if (content[i] == '\\') {
        char kind = i + 1 < content.size() ? content[i + 1] : '\0';
        n = kind == 'x' ? 4 : kind == 'u' ? 6 : kind == 'U' ? 10 : 2;
      } else if (static_cast<unsigned char>(content[i]) >= 0xC0) {
        while (i + n < content.size() &&
               (static_cast<unsigned char>(content[i + n]) & 0xC0) == 0x80) {
          ++n;
        }
      }
      i = std::min(content.size(), i + n);
      ends.push_back(i);
    }
    // Greedy pieces, the last also holding the suffix unless it is alone.
    std::vector<std::string_view> pieces;
    size_t from = 0;
    size_t unit = 0;  // the first unit ending after `from`
    while (from < content.size()) {
      size_t limit = pieces.empty() && firstRoom > 0 ? firstRoom : room;
      size_t tail = suffixAlone ? 0 : suffix.size();
      if (content.size() - from + tail <= limit) {
        pieces.push_back(content.substr(from));
        break;
      }
      if (content.size() - from <= limit) {
        limit -= std::min(limit - 1, tail);  // leave the last piece some, to go with the suffix
      }
      size_t cut = ends[unit];  // at least one unit
      size_t space = std::string_view::npos;
      for (size_t u = unit; u < ends.size() && ends[u] - from <= limit; ++u) {
        cut = ends[u];
        if (content[ends[u] - 1] == ' ' && ends[u] - from > limit / 2) space = ends[u];
      }
      if (space != std::string_view::npos) cut = space;
      pieces.push_back(content.substr(from, cut - from));
      from = cut;
      while (unit < ends.size() && ends[unit] <= from) ++unit;
    }
    if (pieces.empty()) return false;
    if (firstRoom == 0 && !trimmed(prefix).empty()) {
      write(depth, trimmed(prefix), bracketed, false);
    }
    for (size_t k = 0; k < pieces.size(); ++k) {
      std::string piece;
      if (k == 0 && firstRoom > 0) piece += prefix;
      piece += quote;
      piece += pieces[k];
      piece += quote;
      if (k + 1 == pieces.size() && !suffixAlone) piece += suffix;
      writeLine(out_, k == 0 && firstRoom > 0 ? depth : inner, piece);
    }
    if (suffixAlone && !trimmed(suffix).empty()) write(inner, trimmed(suffix), bracketed, false);
    return true;
  }

  std::string& out_;
};

}  // namespace

void writeWrapped(std::string& out, int depth, std::string_view text, bool bracketed) {
  Wrapper(out).write(depth, text, bracketed);
}

}  // namespace tritonc

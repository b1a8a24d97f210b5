//===- ParserTest.cpp - the grammar of LANGUAGE.md §2 ---------------------===//
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "TestUtil.h"

namespace tritonc {
namespace {

using test::diagNames;
using test::Parsed;
using test::sexpr;

// ---- helpers -----------------------------------------------------------------

/// Parses `let r = <text>` at top level and renders the initializer.
std::string expr(const std::string& text) {
  Parsed p("let r = " + text);
  EXPECT_TRUE(p.diagnostics().empty()) << text << ": " << diagNames(p.diagnostics());
  if (p.items().size() != 1 || p.tree.kind(p.items()[0]) != NodeKind::Let) {
    return "<not one let: " + sexpr(p) + ">";
  }
  return sexpr(p.tree, p.tree.childB(p.items()[0]));
}

/// Renders the statements of a block.
std::string blockStatements(const Parsed& p, NodeId block) {
  if (!block.isValid() || p.tree.kind(block) != NodeKind::Block) {
    return "<no block: " + sexpr(p) + ">";
  }
  std::string out;
  for (NodeId statement : p.tree.list(p.tree.listA(block))) {
    if (!out.empty()) {
      out += "; ";
    }
    out += sexpr(p.tree, statement);
  }
  return out;
}

/// Parses `main {\n<body>\n}` and renders its statements, separated by "; ".
std::string stmts(const std::string& body) {
  Parsed p("main {\n" + body + "\n}\n");
  EXPECT_TRUE(p.diagnostics().empty()) << body << ": " << diagNames(p.diagnostics());
  if (p.items().size() != 1 || p.tree.kind(p.items()[0]) != NodeKind::Main) {
    return "<not one main: " + sexpr(p) + ">";
  }
  return blockStatements(p, p.tree.childC(p.items()[0]));
}

/// Like stmts(), for bodies where the only diagnostic must be one warning
/// `UnusedSignedStatement` (a line starting with '+' or '-').
std::string stmtsWithSignWarning(const std::string& body) {
  Parsed p("main {\n" + body + "\n}\n");
  EXPECT_EQ(diagNames(p.diagnostics()), "UnusedSignedStatement") << body;
  if (p.items().size() != 1 || p.tree.kind(p.items()[0]) != NodeKind::Main) {
    return "<not one main: " + sexpr(p) + ">";
  }
  return blockStatements(p, p.tree.childC(p.items()[0]));
}

/// Parses a whole program without diagnostics and renders it.
std::string program(const std::string& text) {
  Parsed p(text);
  EXPECT_TRUE(p.diagnostics().empty()) << text << ": " << diagNames(p.diagnostics());
  return sexpr(p);
}

/// Offset of the `n`-th (0-based) occurrence of `needle` in `text`.
uint32_t offsetOf(const std::string& text, const std::string& needle, int n = 0) {
  size_t pos = text.find(needle);
  while (n-- > 0 && pos != std::string::npos) {
    pos = text.find(needle, pos + 1);
  }
  EXPECT_NE(pos, std::string::npos) << needle;
  return static_cast<uint32_t>(pos);
}

// ---- precedence --------------------------------------------------------------

TEST(ParserTest, PrecedenceOfEveryLevel) {
  // or < and < eq < cmp < add < mul < unary < power < postfix
  EXPECT_EQ(expr("a || b && c"), "(|| a (&& b c))");
  EXPECT_EQ(expr("a && b || c"), "(|| (&& a b) c)");
  EXPECT_EQ(expr("a && b == c"), "(&& a (== b c))");
  EXPECT_EQ(expr("a != b && c"), "(&& (!= a b) c)");
  EXPECT_EQ(expr("a == b < c"), "(== a (< b c))");
  EXPECT_EQ(expr("a <= b != c"), "(!= (<= a b) c)");
  EXPECT_EQ(expr("a < b + c"), "(< a (+ b c))");
  EXPECT_EQ(expr("a - b > c"), "(> (- a b) c)");
  EXPECT_EQ(expr("a >= b - c"), "(>= a (- b c))");
  EXPECT_EQ(expr("a + b * c"), "(+ a (* b c))");
  EXPECT_EQ(expr("a / b - c"), "(- (/ a b) c)");
  EXPECT_EQ(expr("a - b % c"), "(- a (% b c))");
  EXPECT_EQ(expr("-a * b"), "(* (- a) b)");
  EXPECT_EQ(expr("a * -b"), "(* a (- b))");
  EXPECT_EQ(expr("!a && b"), "(&& (! a) b)");
  EXPECT_EQ(expr("+a - b"), "(- (+ a) b)");
  EXPECT_EQ(expr("a * b ** c"), "(* a (** b c))");
  EXPECT_EQ(expr("a ** b * c"), "(* (** a b) c)");
  EXPECT_EQ(expr("a.b ** c"), "(** (. a b) c)");
  EXPECT_EQ(expr("a ** b.c"), "(** a (. b c))");
  EXPECT_EQ(expr("f(x) ** 2"), "(** (call f x) 2)");
  EXPECT_EQ(expr("-a.b"), "(- (. a b))");
  EXPECT_EQ(expr("(a + b) * c"), "(* (paren (+ a b)) c)");
}

TEST(ParserTest, BinaryOperatorsAreLeftAssociative) {
  EXPECT_EQ(expr("a - b - c"), "(- (- a b) c)");
  EXPECT_EQ(expr("a / b / c"), "(/ (/ a b) c)");
  EXPECT_EQ(expr("a % b * c"), "(* (% a b) c)");
  EXPECT_EQ(expr("a + b - c + d"), "(+ (- (+ a b) c) d)");
  EXPECT_EQ(expr("a || b || c"), "(|| (|| a b) c)");
  EXPECT_EQ(expr("a && b && c"), "(&& (&& a b) c)");
  EXPECT_EQ(expr("a @ b @ c"), "(@ (@ a b) c)");
}

TEST(ParserTest, MatmulBindsLikeMultiplication) {
  EXPECT_EQ(expr("a @ b * c"), "(* (@ a b) c)");
  EXPECT_EQ(expr("a * b @ c"), "(@ (* a b) c)");
  EXPECT_EQ(expr("a / b @ c"), "(@ (/ a b) c)");
  EXPECT_EQ(expr("a + b @ c"), "(+ a (@ b c))");
  EXPECT_EQ(expr("x @ w + b"), "(+ (@ x w) b)");
  EXPECT_EQ(expr("-x @ w"), "(@ (- x) w)");
}

TEST(ParserTest, PowerIsRightAssociative) {
  EXPECT_EQ(expr("a ** b ** c"), "(** a (** b c))");
  EXPECT_EQ(expr("2 ** 3 ** 2"), "(** 2 (** 3 2))");
}

TEST(ParserTest, PowerBindsTighterThanUnaryMinusOnItsLeft) {
  EXPECT_EQ(expr("-x**2"), "(- (** x 2))");
  EXPECT_EQ(expr("-x ** 2"), "(- (** x 2))");
  EXPECT_EQ(expr("!a ** b"), "(! (** a b))");
  EXPECT_EQ(expr("--x**2"), "(- (- (** x 2)))");
}

TEST(ParserTest, UnaryOperandOfPower) {
  EXPECT_EQ(expr("2**-1"), "(** 2 (- 1))");
  EXPECT_EQ(expr("2 ** +1"), "(** 2 (+ 1))");
  EXPECT_EQ(expr("-a ** -b ** c"), "(- (** a (- (** b c))))");
}

TEST(ParserTest, UnaryOperatorsNest) {
  EXPECT_EQ(expr("--a"), "(- (- a))");
  EXPECT_EQ(expr("!!a"), "(! (! a))");
  EXPECT_EQ(expr("-+!a"), "(- (+ (! a)))");
}

TEST(ParserTest, Literals) {
  EXPECT_EQ(expr("42"), "42");
  EXPECT_EQ(expr("0x2A"), "42");
  EXPECT_EQ(expr("1.5"), "1.5f");
  EXPECT_EQ(expr("'s'"), "\"s\"");
  EXPECT_EQ(expr("true"), "true");
  EXPECT_EQ(expr("false"), "false");
  EXPECT_EQ(expr("[1, 2, 3]"), "(list 1 2 3)");
  EXPECT_EQ(expr("[1, 2,]"), "(list 1 2)");
  EXPECT_EQ(expr("[]"), "(list)");
  EXPECT_EQ(expr("[[1], []]"), "(list (list 1) (list))");
}

TEST(ParserTest, NodeKindsAndTokens) {
  Parsed p("let r = -a + f(b)");
  ASSERT_TRUE(p.diagnostics().empty());
  NodeId let = p.items()[0];
  EXPECT_EQ(p.tree.kind(let), NodeKind::Let);
  EXPECT_EQ(p.tokens.spelling(p.tree.token(let)), "r");
  EXPECT_FALSE(p.tree.childA(let).isValid());  // no type
  NodeId plus = p.tree.childB(let);
  EXPECT_EQ(p.tree.kind(plus), NodeKind::Binary);
  EXPECT_EQ(p.tokens.kind(p.tree.token(plus)), TokenKind::Plus);
  NodeId neg = p.tree.childA(plus);
  EXPECT_EQ(p.tree.kind(neg), NodeKind::Unary);
  EXPECT_EQ(p.tokens.kind(p.tree.token(neg)), TokenKind::Minus);
  NodeId call = p.tree.childB(plus);
  EXPECT_EQ(p.tree.kind(call), NodeKind::Call);
  EXPECT_EQ(p.tree.kind(p.tree.childA(call)), NodeKind::Name);
  ASSERT_EQ(p.tree.list(p.tree.listB(call)).size(), 1u);
  EXPECT_EQ(p.tree.kind(p.tree.root()), NodeKind::Program);
}

TEST(ParserTest, ComparisonsAssociateLeftAsInC) {
  // `a < b < c` is `(a < b) < c`; the checker, which knows the types, warns
  // or rejects it (SemaTest ComparisonChain*).
  Parsed p("let r = a < b < c");
  EXPECT_EQ(sexpr(p.tree, p.tree.childB(p.items()[0])), "(< (< a b) c)");
  EXPECT_TRUE(p.diagnostics().empty());
  // Different levels do not chain.
  EXPECT_EQ(expr("a < b == c"), "(== (< a b) c)");
  EXPECT_EQ(expr("(a < b) < c"), "(< (paren (< a b)) c)");
}

// ---- calls, indexing, members ------------------------------------------------

TEST(ParserTest, NamedArguments) {
  EXPECT_EQ(expr("f()"), "(call f)");
  EXPECT_EQ(expr("f(1, x=2, y=a+b)"), "(call f 1 x=2 y=(+ a b))");
  EXPECT_EQ(expr("f(a,)"), "(call f a)");
  EXPECT_EQ(expr("f(dim=-1,)"), "(call f dim=(- 1))");
  EXPECT_EQ(expr("f(x == 1)"), "(call f (== x 1))");
  EXPECT_EQ(expr("f(g(1), h=g(2))"), "(call f (call g 1) h=(call g 2))");
  EXPECT_EQ(expr("f(a)(b)"), "(call (call f a) b)");

  Parsed p("let r = f(1, x=2)");
  NodeId call = p.tree.childB(p.items()[0]);
  auto args = p.tree.list(p.tree.listB(call));
  ASSERT_EQ(args.size(), 2u);
  EXPECT_EQ(p.tree.kind(args[0]), NodeKind::IntLit);
  EXPECT_EQ(p.tree.kind(args[1]), NodeKind::NamedArg);
  EXPECT_EQ(p.tokens.spelling(p.tree.token(args[1])), "x");
}

TEST(ParserTest, PositionalAfterNamed) {
  std::string text = "let r = f(x=1, 2)";
  Parsed p(text);
  ASSERT_EQ(p.diagnostics().size(), 1u) << diagNames(p.diagnostics());
  const Diagnostic& d = p.diagnostics()[0];
  EXPECT_EQ(d.kind, Diag::PositionalAfterNamed);
  EXPECT_EQ(d.range.begin, offsetOf(text, "2"));
  EXPECT_EQ(d.range.end, offsetOf(text, "2") + 1);
  ASSERT_EQ(d.notes.size(), 1u);
  EXPECT_EQ(d.notes[0].message, "named argument 'x' is here; put positional arguments first");
  EXPECT_EQ(d.notes[0].range.begin, offsetOf(text, "x"));
}

TEST(ParserTest, Slices) {
  EXPECT_EQ(expr("x[1:]"), "(index x (slice 1 _ _))");
  EXPECT_EQ(expr("x[:2]"), "(index x (slice _ 2 _))");
  EXPECT_EQ(expr("x[::2]"), "(index x (slice _ _ 2))");
  EXPECT_EQ(expr("x[a:b:c]"), "(index x (slice a b c))");
  EXPECT_EQ(expr("x[:, 0]"), "(index x (slice _ _ _) 0)");
  EXPECT_EQ(expr("x[:]"), "(index x (slice _ _ _))");
  EXPECT_EQ(expr("x[1:2:]"), "(index x (slice 1 2 _))");
  EXPECT_EQ(expr("x[a::c]"), "(index x (slice a _ c))");
  EXPECT_EQ(expr("x[-1:, i + 1]"), "(index x (slice (- 1) _ _) (+ i 1))");
}

TEST(ParserTest, Indexing) {
  EXPECT_EQ(expr("x[i]"), "(index x i)");
  EXPECT_EQ(expr("x[i, j]"), "(index x i j)");
  EXPECT_EQ(expr("x[i][j]"), "(index (index x i) j)");
  EXPECT_EQ(expr("x[-1]"), "(index x (- 1))");
  EXPECT_EQ(expr("x[i,]"), "(index x i)");
}

TEST(ParserTest, MemberAccess) {
  EXPECT_EQ(expr("x.T"), "(. x T)");
  EXPECT_EQ(expr("a.b.c"), "(. (. a b) c)");
  EXPECT_EQ(expr("x.shape[0]"), "(index (. x shape) 0)");
  EXPECT_EQ(expr("m.forward(x)"), "(call (. m forward) x)");
  EXPECT_EQ(expr("f(x).T"), "(. (call f x) T)");
  EXPECT_EQ(expr("x[0].T"), "(. (index x 0) T)");
  EXPECT_EQ(expr("1.T"), "(. 1 T)");
}

TEST(ParserTest, MemberNeedsAName) {
  Parsed p("let r = x.+1");
  ASSERT_EQ(p.diagnostics().size(), 1u) << diagNames(p.diagnostics());
  EXPECT_EQ(p.diagnostics()[0].kind, Diag::ExpectedIdentifier);
  EXPECT_EQ(p.diagnostics()[0].message, "expected a member name after '.', found '+'");
  EXPECT_EQ(p.diagnostics()[0].range.begin, 10u);
}

// ---- statements --------------------------------------------------------------

TEST(ParserTest, LetForms) {
  EXPECT_EQ(stmts("let x"), "(let x _ _)");
  EXPECT_EQ(stmts("let x: int"), "(let x int _)");
  EXPECT_EQ(stmts("let x = 1"), "(let x _ 1)");
  EXPECT_EQ(stmts("let x: int8 = 1"), "(let x int8 1)");
  EXPECT_EQ(stmts("let t: TernaryTensor = w"), "(let t TernaryTensor w)");
}

TEST(ParserTest, Assignments) {
  EXPECT_EQ(stmts("x = 1; x += 2; x -= 3; x *= 4; x /= 5; x @= w"),
            "(= x 1); (+= x 2); (-= x 3); (*= x 4); (/= x 5); (@= x w)");
  EXPECT_EQ(stmts("x[0] = 1"), "(= (index x 0) 1)");
  EXPECT_EQ(stmts("m.w = a + b"), "(= (. m w) (+ a b))");
  EXPECT_EQ(stmts("x[:, 0] += y"), "(+= (index x (slice _ _ _) 0) y)");
}

TEST(ParserTest, InvalidAssignTarget) {
  std::string text = "main {\n  1 = x\n}\n";
  Parsed p(text);
  ASSERT_EQ(p.diagnostics().size(), 1u) << diagNames(p.diagnostics());
  EXPECT_EQ(p.diagnostics()[0].kind, Diag::InvalidAssignTarget);
  EXPECT_EQ(p.diagnostics()[0].range.begin, offsetOf(text, "1"));
  EXPECT_EQ(p.diagnostics()[0].range.end, offsetOf(text, "1") + 1);

  Parsed sum("main {\n  a + b = x\n}\n");
  ASSERT_EQ(sum.diagnostics().size(), 1u);
  EXPECT_EQ(sum.diagnostics()[0].kind, Diag::InvalidAssignTarget);
}

TEST(ParserTest, ExpressionStatementsAndSemicolons) {
  EXPECT_EQ(stmts("print(x); f(1)"), "(call print x); (call f 1)");
  EXPECT_EQ(stmts(";;x;;"), "x");
  EXPECT_EQ(stmts(""), "");
}

TEST(ParserTest, Return) {
  EXPECT_EQ(stmts("return"), "(return)");
  EXPECT_EQ(stmts("return x + 1"), "(return (+ x 1))");
  EXPECT_EQ(stmts("return;"), "(return)");
  EXPECT_EQ(program("fn f() { return }"), "(fn f () _ {(return)})");
}

TEST(ParserTest, IfElseIfChains) {
  EXPECT_EQ(stmts("if a { x = 1 }"), "(if a {(= x 1)} _)");
  EXPECT_EQ(stmts("if a { x = 1 } else { x = 2 }"), "(if a {(= x 1)} {(= x 2)})");
  EXPECT_EQ(stmts("if a { x = 1 } else if b { x = 2 } else { x = 3 }"),
            "(if a {(= x 1)} (if b {(= x 2)} {(= x 3)}))");
  EXPECT_EQ(stmts("if a {} else if b {} else if c {}"), "(if a {} (if b {} (if c {} _)))");
  EXPECT_EQ(stmts("if a && !b { }"), "(if (&& a (! b)) {} _)");

  Parsed p("main { if a {} else if b {} }");
  NodeId block = p.tree.childC(p.items()[0]);
  NodeId outer = p.tree.list(p.tree.listA(block))[0];
  NodeId inner = p.tree.childC(outer);
  EXPECT_EQ(p.tree.kind(outer), NodeKind::If);
  EXPECT_EQ(p.tree.kind(inner), NodeKind::If);
  EXPECT_EQ(p.tokens.kind(p.tree.token(outer)), TokenKind::KwIf);
  EXPECT_EQ(p.tokens.range(p.tree.token(inner)).begin, 20u);  // the second 'if'
}

TEST(ParserTest, LongElseIfChainIsNotDeep) {
  std::string body = "if c0 {}";
  for (int i = 1; i < 300; ++i) {
    body += " else if c" + std::to_string(i) + " {}";
  }
  Parsed p("main {\n" + body + "\n}");
  EXPECT_TRUE(p.diagnostics().empty()) << diagNames(p.diagnostics());
}

TEST(ParserTest, StrayElse) {
  Parsed p("main {\n  else { }\n}");
  ASSERT_EQ(p.diagnostics().size(), 1u) << diagNames(p.diagnostics());
  EXPECT_EQ(p.diagnostics()[0].kind, Diag::ElseWithoutIf);
  EXPECT_EQ(p.diagnostics()[0].range.begin, 9u);
  EXPECT_EQ(p.diagnostics()[0].range.end, 13u);
}

TEST(ParserTest, ForLoops) {
  EXPECT_EQ(stmts("for i in range(n) { s += i }"), "(for i (call range n) {(+= s i)})");
  EXPECT_EQ(stmts("for i in range(a, b) {}"), "(for i (call range a b) {})");
  EXPECT_EQ(stmts("for i in 0..10 {}"), "(for i (.. 0 10) {})");
  EXPECT_EQ(stmts("for i in a..b {}"), "(for i (.. a b) {})");
  EXPECT_EQ(stmts("for i in a + 1..n * 2 {}"), "(for i (.. (+ a 1) (* n 2)) {})");
  EXPECT_EQ(stmts("for x in xs {}"), "(for x xs {})");

  Parsed p("main { for i in 0..3 {} }");
  NodeId loop = p.tree.list(p.tree.listA(p.tree.childC(p.items()[0])))[0];
  EXPECT_EQ(p.tree.kind(loop), NodeKind::For);
  EXPECT_EQ(p.tokens.spelling(p.tree.token(loop)), "i");
  EXPECT_EQ(p.tree.kind(p.tree.childA(loop)), NodeKind::Range);
}

TEST(ParserTest, ForMissingVariable) {
  Parsed p("main {\n  for in range(3) {}\n}");
  ASSERT_EQ(p.diagnostics().size(), 1u) << diagNames(p.diagnostics());
  EXPECT_EQ(p.diagnostics()[0].kind, Diag::ExpectedIdentifier);
  EXPECT_EQ(p.diagnostics()[0].message, "expected a loop variable after 'for', found 'in'");
}

TEST(ParserTest, RangeOutsideFor) {
  std::string text = "let r = 0..n";
  Parsed p(text);
  ASSERT_EQ(p.diagnostics().size(), 1u) << diagNames(p.diagnostics());
  const Diagnostic& d = p.diagnostics()[0];
  EXPECT_EQ(d.kind, Diag::RangeOutsideFor);
  EXPECT_EQ(d.range.begin, 8u);
  EXPECT_EQ(d.range.end, 12u);
  ASSERT_EQ(d.notes.size(), 1u);
  EXPECT_EQ(d.notes[0].message, "write 'for i in 0..n' to loop over it");
}

TEST(ParserTest, WhileBreakContinue) {
  EXPECT_EQ(stmts("while i < n {\n  if i == 3 { break }\n  i += 1\n  continue\n}"),
            "(while (< i n) {(if (== i 3) {break} _) (+= i 1) continue})");
  EXPECT_EQ(stmts("while true { break; continue }"), "(while true {break continue})");
}

TEST(ParserTest, BreakTakesNothingAfterIt) {
  Parsed p("main {\n  while true { break x }\n}");
  ASSERT_EQ(p.diagnostics().size(), 1u) << diagNames(p.diagnostics());
  EXPECT_EQ(p.diagnostics()[0].kind, Diag::ExpectedStatementEnd);
}

// ---- items -------------------------------------------------------------------

TEST(ParserTest, Imports) {
  EXPECT_EQ(program("import \"lib/blocks.tri\""), "(import \"lib/blocks.tri\")");
  EXPECT_EQ(program("import 'x.tri' as blk"), "(import 'x.tri' as blk)");
  EXPECT_EQ(program("import \"a.tri\"\nimport \"b.tri\" as b\n"),
            "(import \"a.tri\")\n(import \"b.tri\" as b)");

  Parsed p("import \"x.tri\" as blk");
  NodeId import = p.items()[0];
  EXPECT_EQ(p.tree.kind(import), NodeKind::Import);
  EXPECT_EQ(p.tokens.stringValue(p.tree.token(import)), "x.tri");
  EXPECT_EQ(p.textOf(import), "\"x.tri\" as blk");
}

TEST(ParserTest, ImportPathMustBeAString) {
  Parsed p("import blocks");
  ASSERT_EQ(p.diagnostics().size(), 1u) << diagNames(p.diagnostics());
  EXPECT_EQ(p.diagnostics()[0].kind, Diag::ImportPathNotString);
  EXPECT_EQ(p.diagnostics()[0].range.begin, 7u);
}

TEST(ParserTest, Main) {
  EXPECT_EQ(program("main { print(1) }"), "(main {(call print 1)})");
  EXPECT_EQ(program("main {}"), "(main {})");
  Parsed p("main {}");
  EXPECT_EQ(p.tree.kind(p.items()[0]), NodeKind::Main);
}

TEST(ParserTest, TopLevelLet) {
  EXPECT_EQ(program("let N = 4\nlet eps: float32 = 1e-5"),
            "(let N _ 4)\n(let eps float32 1e-05f)");
  EXPECT_EQ(program("let a = 1; let b = 2"), "(let a _ 1)\n(let b _ 2)");
}

TEST(ParserTest, LayerAndFn) {
  EXPECT_EQ(program("fn f() {}"), "(fn f () _ {})");
  EXPECT_EQ(program("fn add(a: int, b: int,) -> int { return a + b }"),
            "(fn add ((param a int _) (param b int _)) int {(return (+ a b))})");
  EXPECT_EQ(program("layer L(x: Tensor<float32, [?, 4]>, n: int = 3) -> Tensor<float32, [?, 4]> {"
                    " return x }"),
            "(layer L ((param x Tensor<float32, [?, 4]> _) (param n int 3)) "
            "Tensor<float32, [?, 4]> {(return x)})");
  EXPECT_EQ(program("layer Id(x: TernaryTensor) { return x }"),
            "(layer Id ((param x TernaryTensor _)) _ {(return x)})");
  EXPECT_EQ(program("layer A() {}\nfn b() {}\nmain {}"), "(layer A () _ {})\n(fn b () _ {})\n(main {})");
}

TEST(ParserTest, MissingParamType) {
  Parsed p("layer L(x) {}");
  ASSERT_EQ(p.diagnostics().size(), 1u) << diagNames(p.diagnostics());
  EXPECT_EQ(p.diagnostics()[0].kind, Diag::MissingParamType);
  EXPECT_EQ(p.diagnostics()[0].message, "parameter 'x' has no type");
  EXPECT_EQ(p.diagnostics()[0].range.begin, 8u);
  EXPECT_EQ(p.diagnostics()[0].range.end, 9u);
}

TEST(ParserTest, ExpectedItem) {
  Parsed p("lyer L() {}\nmain {}");
  ASSERT_EQ(p.diagnostics().size(), 1u) << diagNames(p.diagnostics());
  const Diagnostic& d = p.diagnostics()[0];
  EXPECT_EQ(d.kind, Diag::ExpectedItem);
  EXPECT_EQ(d.range.begin, 0u);
  EXPECT_EQ(d.range.end, 4u);
  ASSERT_EQ(d.notes.size(), 1u);
  EXPECT_EQ(d.notes[0].message, "did you mean 'layer'?");
  // The main after the junk is still parsed.
  ASSERT_GE(p.items().size(), 1u);
  EXPECT_EQ(p.tree.kind(p.items().back()), NodeKind::Main);
}

TEST(ParserTest, MisspelledReturnSuggestsTheKeyword) {
  std::string text = "fn f() {\n  retrun x\n}";
  Parsed p(text);
  ASSERT_EQ(p.diagnostics().size(), 1u) << diagNames(p.diagnostics());
  const Diagnostic& d = p.diagnostics()[0];
  EXPECT_EQ(d.kind, Diag::MisspelledKeyword);
  EXPECT_EQ(d.range.begin, offsetOf(text, "retrun"));  // the word, not what follows it
  EXPECT_EQ(d.message, "'retrun' is not a keyword: did you mean 'return'?");
}

// ---- types -------------------------------------------------------------------

TEST(ParserTest, SplitsGreaterEqualAfterAType) {
  EXPECT_EQ(stmts("let w: Tensor<float32, [4]>=zeros([4])"),
            "(let w Tensor<float32, [4]> (call zeros (list 4)))");
  EXPECT_EQ(program("let w: Tensor<float32, [4]>=zeros([4])"),
            "(let w Tensor<float32, [4]> (call zeros (list 4)))");
  EXPECT_EQ(program("layer L(w: Tensor<float32, [4]>=zeros([4])) {}"),
            "(layer L ((param w Tensor<float32, [4]> (call zeros (list 4)))) _ {})");
  // With spaces nothing needs splitting.
  EXPECT_EQ(stmts("let w: Tensor<float32, [4]> = zeros([4])"),
            "(let w Tensor<float32, [4]> (call zeros (list 4)))");
}

TEST(ParserTest, GreaterEqualAfterAReturnTypeIsAnError) {
  Parsed p("fn f() -> Tensor<float32>= {}");
  ASSERT_EQ(p.diagnostics().size(), 1u) << diagNames(p.diagnostics());
  EXPECT_EQ(p.diagnostics()[0].kind, Diag::ExpectedToken);
}

TEST(ParserTest, ComparisonsOutsideTypesAreNotSplit) {
  EXPECT_EQ(expr("a >= b"), "(>= a b)");
  EXPECT_EQ(stmts("x = a>=b"), "(= x (>= a b))");
}

TEST(ParserTest, TypeForms) {
  EXPECT_EQ(stmts("let a: Tensor<float32>"), "(let a Tensor<float32> _)");
  EXPECT_EQ(stmts("let a: Tensor<float32, []>"), "(let a Tensor<float32, []> _)");
  EXPECT_EQ(stmts("let a: TernaryTensor<trit, [?, 3, 3]>"),
            "(let a TernaryTensor<trit, [?, 3, 3]> _)");
  EXPECT_EQ(stmts("let a: tensor<int8, [n]>"), "(let a tensor<int8, [n]> _)");
}

TEST(ParserTest, DimExpressions) {
  EXPECT_EQ(program("fn f(w: Tensor<float32, [out_ch, in_ch / groups, k, k]>) {}"),
            "(fn f ((param w Tensor<float32, [out_ch, (/ in_ch groups), k, k]> _)) _ {})");
  EXPECT_EQ(stmts("let a: Tensor<float32, [?, n * 2 + 1]>"),
            "(let a Tensor<float32, [?, (+ (* n 2) 1)]> _)");
  EXPECT_EQ(stmts("let a: Tensor<float32, [(a + b) * 2]>"),
            "(let a Tensor<float32, [(* (paren (+ a b)) 2)]> _)");
  EXPECT_EQ(stmts("let a: Tensor<float32, [a - b - c, a / b / c]>"),
            "(let a Tensor<float32, [(- (- a b) c), (/ (/ a b) c)]> _)");
  EXPECT_EQ(stmts("let a: Tensor<float32, [4 * d + 1 - e]>"),
            "(let a Tensor<float32, [(- (+ (* 4 d) 1) e)]> _)");
}

TEST(ParserTest, InvalidDimOperator) {
  std::string text = "let a: Tensor<float32, [n % 2]>";
  Parsed p(text);
  ASSERT_EQ(p.diagnostics().size(), 1u) << diagNames(p.diagnostics());
  const Diagnostic& d = p.diagnostics()[0];
  EXPECT_EQ(d.kind, Diag::InvalidDimOperator);
  EXPECT_EQ(d.message,
            "operator '%' cannot be used in a dimension; dimensions allow + - * / and "
            "parentheses");
  EXPECT_EQ(d.range.begin, offsetOf(text, "%"));
  EXPECT_EQ(d.range.end, offsetOf(text, "%") + 1);
}

TEST(ParserTest, ExpectedDim) {
  Parsed p("let a: Tensor<float32, [1.5]>");
  ASSERT_EQ(p.diagnostics().size(), 1u) << diagNames(p.diagnostics());
  EXPECT_EQ(p.diagnostics()[0].kind, Diag::ExpectedDim);
  EXPECT_EQ(p.diagnostics()[0].range.begin, 24u);
}

TEST(ParserTest, ExpectedType) {
  Parsed p("let a: 3 = 1");
  ASSERT_EQ(p.diagnostics().size(), 1u) << diagNames(p.diagnostics());
  EXPECT_EQ(p.diagnostics()[0].kind, Diag::ExpectedType);
  EXPECT_EQ(p.diagnostics()[0].message, "expected a type, found integer literal '3'");
}

// ---- newlines (LANGUAGE.md §1) -------------------------------------------------

TEST(ParserTest, NewlineEndsAStatement) {
  EXPECT_EQ(stmts("a\nb"), "a; b");
  EXPECT_EQ(stmts("let x = 1\nlet y = 2"), "(let x _ 1); (let y _ 2)");
  EXPECT_EQ(stmts("x = a\nf(1)"), "(= x a); (call f 1)");
}

TEST(ParserTest, NewlinesInsideParenthesesAndBrackets) {
  EXPECT_EQ(stmts("let x = f(1,\n2)"), "(let x _ (call f 1 2))");
  EXPECT_EQ(stmts("let x = f(\n  1\n  ,\n  2\n)"), "(let x _ (call f 1 2))");
  EXPECT_EQ(stmts("let y = (a\n- b)"), "(let y _ (paren (- a b)))");
  EXPECT_EQ(stmts("let y = (a\n+ b)"), "(let y _ (paren (+ a b)))");
  EXPECT_EQ(stmts("let z = [1,\n2\n]"), "(let z _ (list 1 2))");
  EXPECT_EQ(stmts("let z = [a\n- b]"), "(let z _ (list (- a b)))");
  EXPECT_EQ(stmts("let z = x[1\n:\n2]"), "(let z _ (index x (slice 1 2 _)))");
  // Inside brackets a '(' on the next line still continues: `a\n(b)` is a call.
  EXPECT_EQ(stmts("let z = f(g(a\n(b)))"), "(let z _ (call f (call g (call a b))))");
}

TEST(ParserTest, LineEndingWithAnOperatorContinues) {
  for (const char* op : {"+", "-", "*", "/", "%", "@", "**", "==", "!=", "<", "<=", ">", ">=",
                         "&&", "||"}) {
    SCOPED_TRACE(op);
    EXPECT_EQ(stmts(std::string("let x = a ") + op + "\nb"),
              std::string("(let x _ (") + op + " a b))");
  }
}

TEST(ParserTest, LineEndingWithOpenerCommaArrowOrEqualContinues) {
  EXPECT_EQ(stmts("let x =\n5"), "(let x _ 5)");
  EXPECT_EQ(stmts("x =\n5"), "(= x 5)");
  EXPECT_EQ(stmts("x +=\n5"), "(+= x 5)");
  EXPECT_EQ(stmts("let x = f(\na)"), "(let x _ (call f a))");
  EXPECT_EQ(stmts("let x = y[\n0]"), "(let x _ (index y 0))");
  EXPECT_EQ(stmts("let x = [\n1]"), "(let x _ (list 1))");
  EXPECT_EQ(stmts("let x = f(a,\nb)"), "(let x _ (call f a b))");
  EXPECT_EQ(program("fn f() ->\nint {}"), "(fn f () int {})");
  EXPECT_EQ(program("fn f(a: int,\nb: int) {}"), "(fn f ((param a int _) (param b int _)) _ {})");
}

TEST(ParserTest, LineStartingWithAnOperatorOtherThanPlusMinusContinues) {
  for (const char* op : {"*", "/", "%", "@", "**", "==", "!=", "<", "<=", ">", ">=", "&&",
                         "||"}) {
    SCOPED_TRACE(op);
    EXPECT_EQ(stmts(std::string("let x = a\n") + op + " b"),
              std::string("(let x _ (") + op + " a b))");
  }
}

TEST(ParserTest, LineStartingWithPlusOrMinusStartsANewStatement) {
  // The new statement computes a value and drops it: a warning says so.
  EXPECT_EQ(stmtsWithSignWarning("let x = a\n- b"), "(let x _ a); (- b)");
  EXPECT_EQ(stmtsWithSignWarning("let x = a\n+ b"), "(let x _ a); (+ b)");
  EXPECT_EQ(stmtsWithSignWarning("x = a * b\n-c"), "(= x (* a b)); (- c)");
  // ... but a line that ends with the operator continues.
  EXPECT_EQ(stmts("let x = a -\nb"), "(let x _ (- a b))");
  EXPECT_EQ(stmts("let x = a +\n-b"), "(let x _ (+ a (- b)))");
}

TEST(ParserTest, LineStartingWithDotContinues) {
  EXPECT_EQ(stmts("let y = x\n.T"), "(let y _ (. x T))");
  EXPECT_EQ(stmts("let y = a\n  .b(1)\n  .c"), "(let y _ (. (call (. a b) 1) c))");
}

TEST(ParserTest, LineStartingWithClosersContinues) {
  EXPECT_EQ(stmts("let x = f(a\n)"), "(let x _ (call f a))");
  EXPECT_EQ(stmts("let x = (a\n)"), "(let x _ (paren a))");
  EXPECT_EQ(stmts("let x = [1, 2\n]"), "(let x _ (list 1 2))");
  EXPECT_EQ(stmts("let x = y[0\n]"), "(let x _ (index y 0))");
}

TEST(ParserTest, LineStartingWithArrowContinues) {
  EXPECT_EQ(program("fn f(x: int)\n-> int {\n  return x\n}"),
            "(fn f ((param x int _)) int {(return x)})");
}

TEST(ParserTest, LineStartingWithBraceContinues) {
  EXPECT_EQ(stmts("if c\n{ x = 1 }"), "(if c {(= x 1)} _)");
  EXPECT_EQ(stmts("while c\n{\n}"), "(while c {})");
  EXPECT_EQ(stmts("for i in 0..n\n{}"), "(for i (.. 0 n) {})");
  EXPECT_EQ(program("main\n{}"), "(main {})");
  EXPECT_EQ(program("layer L()\n{}"), "(layer L () _ {})");
  EXPECT_EQ(program("fn f() -> int\n{}"), "(fn f () int {})");
}

TEST(ParserTest, LineStartingWithElseContinues) {
  EXPECT_EQ(stmts("if c {\n  x = 1\n}\nelse {\n  x = 2\n}"), "(if c {(= x 1)} {(= x 2)})");
  EXPECT_EQ(stmts("if c {}\nelse if d {}\nelse {}"), "(if c {} (if d {} {}))");
}

TEST(ParserTest, TypeArgumentsEndAtTheirClosingAngle) {
  EXPECT_EQ(stmts("let t: Tensor<float32, [4]>\nx = 1"), "(let t Tensor<float32, [4]> _); (= x 1)");
  EXPECT_EQ(stmts("let t: Tensor<float32, [4]>\nf(t)"), "(let t Tensor<float32, [4]> _); (call f t)");
}

TEST(ParserTest, ItemsNeedNoSeparator) {
  EXPECT_EQ(program("layer A() {} layer B() {} main {}"),
            "(layer A () _ {})\n(layer B () _ {})\n(main {})");
}

TEST(ParserTest, LineStartingWithOtherTokensStartsANewStatement) {
  EXPECT_EQ(stmts("let x = f\n(1)"), "(let x _ f); (paren 1)");
  EXPECT_EQ(stmts("let x = y\n[0]"), "(let x _ y); (list 0)");
  EXPECT_EQ(stmts("let x = a\n!b"), "(let x _ a); (! b)");
  EXPECT_EQ(stmts("return\nx"), "(return); x");
}

// LANGUAGE.md §1: a line break ends a statement unless one of the listed rules
// applies; a line that starts with '=' is not among them, so `let x` ends
// there and `= 5` is an error (as `x` then `= 5` already is for assignments).
TEST(ParserTest, LineStartingWithEqualEndsALet) {
  Parsed let("main {\n  let x\n  = 5\n}\n");
  ASSERT_EQ(let.diagnostics().size(), 1u) << diagNames(let.diagnostics());
  EXPECT_EQ(let.diagnostics()[0].kind, Diag::ExpectedExpression);
}

TEST(ParserTest, AssignmentOperatorOnItsOwnLineIsAnError) {
  Parsed assign("main {\n  x\n  = 5\n}\n");
  ASSERT_EQ(assign.diagnostics().size(), 1u) << diagNames(assign.diagnostics());
  EXPECT_EQ(assign.diagnostics()[0].kind, Diag::ExpectedExpression);
}

TEST(ParserTest, CommentsDoNotChangeStatementEnds) {
  EXPECT_EQ(stmts("let x = a # note\n* b"), "(let x _ (* a b))");
  EXPECT_EQ(stmtsWithSignWarning("let x = a /* two\nlines */ - b"), "(let x _ a); (- b)");
  EXPECT_EQ(stmts("let x = a /* one line */ - b"), "(let x _ (- a b))");
}

// ---- error recovery ------------------------------------------------------------

TEST(ParserTest, ThreeIndependentErrorsGiveThreeDiagnostics) {
  std::string text =
      "main {\n"
      "  let = 1\n"
      "  let a = 2 +* 3\n"
      "  alpha beta\n"
      "  let ok = 4\n"
      "}\n";
  Parsed p(text);
  ASSERT_EQ(p.diagnostics().size(), 3u) << diagNames(p.diagnostics());
  EXPECT_EQ(p.diagnostics()[0].kind, Diag::ExpectedIdentifier);
  EXPECT_EQ(p.diagnostics()[1].kind, Diag::ExpectedExpression);
  EXPECT_EQ(p.diagnostics()[2].kind, Diag::ExpectedStatementEnd);
  EXPECT_EQ(p.source.lineCol(p.diagnostics()[0].range.begin).line, 2u);
  EXPECT_EQ(p.source.lineCol(p.diagnostics()[1].range.begin).line, 3u);
  EXPECT_EQ(p.source.lineCol(p.diagnostics()[2].range.begin).line, 4u);
  EXPECT_EQ(p.diagnostics()[1].range.begin, offsetOf(text, "*"));
  EXPECT_EQ(p.diagnostics()[2].range.begin, offsetOf(text, "beta"));
  // The statement after the errors is parsed.
  NodeId block = p.tree.childC(p.items()[0]);
  auto statements = p.tree.list(p.tree.listA(block));
  ASSERT_FALSE(statements.empty());
  EXPECT_EQ(sexpr(p.tree, statements.back()), "(let ok _ 4)");
}

TEST(ParserTest, ThreeIndependentErrorsInThreeItems) {
  Parsed p("layer (x: int) {}\nfn f(x) {}\nlet = 3\nmain { print(1) }\n");
  ASSERT_EQ(p.diagnostics().size(), 3u) << diagNames(p.diagnostics());
  EXPECT_EQ(p.diagnostics()[0].kind, Diag::ExpectedIdentifier);
  EXPECT_EQ(p.diagnostics()[1].kind, Diag::MissingParamType);
  EXPECT_EQ(p.diagnostics()[2].kind, Diag::ExpectedIdentifier);
  EXPECT_EQ(p.tree.kind(p.items().back()), NodeKind::Main);
}

TEST(ParserTest, MissingCloseParenBeforeReturnIsOneDiagnostic) {
  std::string text =
      "fn f(x: int) -> int {\n"
      "  let y = g(x\n"
      "  return y\n"
      "}\n";
  Parsed p(text);
  ASSERT_EQ(p.diagnostics().size(), 1u) << diagNames(p.diagnostics());
  const Diagnostic& d = p.diagnostics()[0];
  EXPECT_EQ(d.kind, Diag::ExpectedToken);
  EXPECT_EQ(d.message, "expected ')', found 'return'");
  // Points just after the `x` that should have been followed by ')'.
  uint32_t afterX = offsetOf(text, "g(x") + 3;
  EXPECT_EQ(d.range.begin, afterX);
  EXPECT_EQ(d.range.end, afterX);
  ASSERT_EQ(d.notes.size(), 2u);
  EXPECT_EQ(d.notes[0].message, "to match this '('");
  EXPECT_EQ(d.notes[0].range.begin, offsetOf(text, "g(x") + 1);
  // The fix: the line as it should end.
  EXPECT_EQ(d.notes[1].message, "insert ')' at the end of the line: 'let y = g(x)'");
  // The return statement is still parsed.
  NodeId block = p.tree.childC(p.items()[0]);
  auto statements = p.tree.list(p.tree.listA(block));
  ASSERT_EQ(statements.size(), 2u);
  EXPECT_EQ(sexpr(p.tree, statements[1]), "(return y)");
}

TEST(ParserTest, MissingCloseParenBeforeBraceIsOneDiagnostic) {
  Parsed p("main {\n  f(1\n}\nfn g() {}\n");
  ASSERT_EQ(p.diagnostics().size(), 1u) << diagNames(p.diagnostics());
  EXPECT_EQ(p.diagnostics()[0].kind, Diag::ExpectedToken);
  ASSERT_EQ(p.items().size(), 2u);
  EXPECT_EQ(p.tree.kind(p.items()[1]), NodeKind::Fn);
}

TEST(ParserTest, MissingCloseBraceAtEndOfFile) {
  Parsed p("main {\n  print(1)\n");
  ASSERT_EQ(p.diagnostics().size(), 1u) << diagNames(p.diagnostics());
  EXPECT_EQ(p.diagnostics()[0].kind, Diag::ExpectedToken);
  EXPECT_EQ(p.diagnostics()[0].message, "expected '}', found end of file");
}

TEST(ParserTest, LexicalErrorsDoNotCascade) {
  Parsed p("main {\n  let s = f(\"abc)\n  let t = 1\n}\n");
  ASSERT_EQ(p.diagnostics().size(), 1u) << diagNames(p.diagnostics());
  EXPECT_EQ(p.diagnostics()[0].kind, Diag::UnterminatedString);

  Parsed q("main {\n  let s = 1 $ 2\n}\n");
  ASSERT_EQ(q.diagnostics().size(), 1u) << diagNames(q.diagnostics());
  EXPECT_EQ(q.diagnostics()[0].kind, Diag::UnexpectedCharacter);
}

TEST(ParserTest, EmptyProgram) {
  Parsed p("");
  EXPECT_TRUE(p.diagnostics().empty());
  EXPECT_EQ(p.tree.kind(p.tree.root()), NodeKind::Program);
  EXPECT_TRUE(p.items().empty());
  Parsed comments("# nothing\n/* here */\n;\n");
  EXPECT_TRUE(comments.diagnostics().empty());
  EXPECT_TRUE(comments.items().empty());
}

// ---- limits ------------------------------------------------------------------

std::string nestedParens(size_t depth) {
  return "let x = " + std::string(depth, '(') + "1" + std::string(depth, ')');
}

TEST(ParserTest, NestingOf256ParensIsAccepted) {
  Parsed p(nestedParens(256));
  EXPECT_TRUE(p.diagnostics().empty()) << diagNames(p.diagnostics());
  // Innermost is the literal.
  NodeId node = p.tree.childB(p.items()[0]);
  for (int i = 0; i < 256; ++i) {
    ASSERT_EQ(p.tree.kind(node), NodeKind::Paren) << i;
    node = p.tree.childA(node);
  }
  EXPECT_EQ(p.tree.kind(node), NodeKind::IntLit);
}

TEST(ParserTest, NestingOf257ParensIsTooDeep) {
  Parsed p(nestedParens(257));
  ASSERT_EQ(p.diagnostics().size(), 1u) << diagNames(p.diagnostics());
  const Diagnostic& d = p.diagnostics()[0];
  EXPECT_EQ(d.kind, Diag::NestingTooDeep);
  EXPECT_EQ(d.message, "nesting is too deep (the limit is 256 levels)");
  EXPECT_EQ(d.range.begin, 8u + 256u);  // the 257th '('
  EXPECT_EQ(d.range.end, 8u + 257u);
  ASSERT_EQ(d.notes.size(), 1u);
  EXPECT_EQ(d.notes[0].message,
            "bind part of the expression to a name with 'let' to reduce nesting");
}

TEST(ParserTest, TooDeepNestingAdvisesByWhatNests) {
  // Blocks: a 'let' cannot help, a 'fn' can.
  std::string blocks = "fn f(x: int) -> int {\n";
  for (int i = 0; i < 300; ++i) blocks += "if true {\n";
  for (int i = 0; i < 300; ++i) blocks += "}\n";
  blocks += "return x\n}\n";
  Parsed b(blocks);
  ASSERT_EQ(b.diagnostics().size(), 1u) << diagNames(b.diagnostics());
  EXPECT_EQ(b.diagnostics()[0].kind, Diag::NestingTooDeep);
  ASSERT_EQ(b.diagnostics()[0].notes.size(), 1u);
  EXPECT_EQ(b.diagnostics()[0].notes[0].message,
            "move the inner blocks into a 'fn' to reduce nesting");
  // Types: no advice (neither helps).
  std::string type = "fn f(x: ";
  for (int i = 0; i < 300; ++i) type += "Tensor<";
  type += "float32" + std::string(300, '>') + ") -> int { return 0 }\n";
  Parsed t(type);
  ASSERT_FALSE(t.diagnostics().empty());
  EXPECT_EQ(t.diagnostics()[0].kind, Diag::NestingTooDeep);
  EXPECT_TRUE(t.diagnostics()[0].notes.empty());
}

TEST(ParserTest, HundredThousandNestedParensGiveOneDiagnostic) {
  Parsed p(nestedParens(100000) + "\nlet y = 2\n");
  ASSERT_EQ(p.diagnostics().size(), 1u) << diagNames(p.diagnostics());
  EXPECT_EQ(p.diagnostics()[0].kind, Diag::NestingTooDeep);
  EXPECT_EQ(p.tree.kind(p.tree.root()), NodeKind::Program);
  // Recovery resumes after the broken item.
  ASSERT_FALSE(p.items().empty());
  EXPECT_EQ(sexpr(p.tree, p.items().back()), "(let y _ 2)");
  // Walking the tree is safe.
  EXPECT_FALSE(p.tree.dump().empty());
}

TEST(ParserTest, HundredThousandOpenParensAtEndOfFile) {
  Parsed p("let x = " + std::string(100000, '('));
  ASSERT_EQ(p.diagnostics().size(), 1u) << diagNames(p.diagnostics());
  EXPECT_EQ(p.diagnostics()[0].kind, Diag::NestingTooDeep);
}

TEST(ParserTest, DeepUnaryAndBracketNesting) {
  Parsed minus("let x = " + std::string(10000, '-') + "1");
  ASSERT_EQ(minus.diagnostics().size(), 1u) << diagNames(minus.diagnostics());
  EXPECT_EQ(minus.diagnostics()[0].kind, Diag::NestingTooDeep);

  Parsed lists("let x = " + std::string(10000, '[') + std::string(10000, ']'));
  ASSERT_EQ(lists.diagnostics().size(), 1u) << diagNames(lists.diagnostics());
  EXPECT_EQ(lists.diagnostics()[0].kind, Diag::NestingTooDeep);

  std::string powers = "let x = 2";
  for (int i = 0; i < 10000; ++i) {
    powers += " ** 2";
  }
  Parsed pow(powers);
  ASSERT_EQ(pow.diagnostics().size(), 1u) << diagNames(pow.diagnostics());
  EXPECT_EQ(pow.diagnostics()[0].kind, Diag::NestingTooDeep);
}

TEST(ParserTest, DeepBlockNesting) {
  auto nestedWhiles = [](size_t depth) {
    std::string text = "main {\n";
    for (size_t i = 0; i < depth; ++i) {
      text += "while c {\n";
    }
    for (size_t i = 0; i < depth; ++i) {
      text += "}\n";
    }
    return text + "}\n";
  };
  // main's block plus 255 loop bodies is 256 levels.
  Parsed ok(nestedWhiles(255));
  EXPECT_TRUE(ok.diagnostics().empty()) << diagNames(ok.diagnostics());
  Parsed deep(nestedWhiles(256));
  ASSERT_EQ(deep.diagnostics().size(), 1u) << diagNames(deep.diagnostics());
  EXPECT_EQ(deep.diagnostics()[0].kind, Diag::NestingTooDeep);
  Parsed huge(nestedWhiles(20000));
  ASSERT_EQ(huge.diagnostics().size(), 1u) << diagNames(huge.diagnostics());
  EXPECT_EQ(huge.diagnostics()[0].kind, Diag::NestingTooDeep);
}

std::string longSum(size_t terms) {
  std::string text = "let x = 1";
  for (size_t i = 1; i < terms; ++i) {
    text += " + 1";
  }
  return text;
}

TEST(ParserTest, LongSumWithinTheTreeDepthLimit) {
  Parsed p(longSum(4000));
  EXPECT_TRUE(p.diagnostics().empty()) << diagNames(p.diagnostics());
  EXPECT_LE(p.tree.depth(p.items()[0]), ParseLimits::kMaxTreeDepth);
}

TEST(ParserTest, FiveThousandTermSumHitsTheTreeDepthLimit) {
  std::string text = longSum(5000) + "\nlet y = 2\n";
  Parsed p(text);
  ASSERT_EQ(p.diagnostics().size(), 1u) << diagNames(p.diagnostics());
  const Diagnostic& d = p.diagnostics()[0];
  EXPECT_EQ(d.kind, Diag::NestingTooDeep);
  EXPECT_EQ(d.message, "nesting is too deep (the limit is 4096 levels)");
  // The 4096th '+' makes a node of depth 4097.
  uint32_t plus4096 = 8 + 4095 * 4 + 2;
  EXPECT_EQ(text.substr(plus4096, 1), "+");
  EXPECT_EQ(d.range.begin, plus4096);
  for (size_t i = 0; i < p.tree.size(); ++i) {
    ASSERT_LE(p.tree.depth(NodeId{static_cast<uint32_t>(i)}), ParseLimits::kMaxTreeDepth);
  }
  EXPECT_EQ(sexpr(p.tree, p.items().back()), "(let y _ 2)");
}

TEST(ParserTest, HugeSumGivesOneDiagnostic) {
  Parsed p(longSum(200000));
  ASSERT_EQ(p.diagnostics().size(), 1u) << diagNames(p.diagnostics());
  EXPECT_EQ(p.diagnostics()[0].kind, Diag::NestingTooDeep);
}

// ---- Tree::range and dump ------------------------------------------------------

/// Parses `let r = <text>` and returns the text the initializer's range covers.
std::string initText(const std::string& text) {
  Parsed p("let r = " + text);
  EXPECT_TRUE(p.diagnostics().empty()) << text << ": " << diagNames(p.diagnostics());
  return std::string(p.textOf(p.tree.childB(p.items()[0])));
}

TEST(ParserTest, RangeCoversOperatorsAndOperands) {
  EXPECT_EQ(initText("a + b * c"), "a + b * c");
  EXPECT_EQ(initText("a * b + c"), "a * b + c");
  EXPECT_EQ(initText("-x ** 2"), "-x ** 2");
  EXPECT_EQ(initText("!a && b.c"), "!a && b.c");
  EXPECT_EQ(initText("x.shape"), "x.shape");
  EXPECT_EQ(initText("a.b.c"), "a.b.c");
  EXPECT_EQ(initText("42"), "42");
  EXPECT_EQ(initText("\"str\""), "\"str\"");
}

TEST(ParserTest, RangeOfChildNodes) {
  Parsed p("let r = (a + b) * c");
  NodeId mul = p.tree.childB(p.items()[0]);
  NodeId rhs = p.tree.childB(mul);
  EXPECT_EQ(p.textOf(rhs), "c");
  NodeId paren = p.tree.childA(mul);
  NodeId sum = p.tree.childA(paren);
  EXPECT_EQ(p.textOf(sum), "a + b");
  SourceRange whole = p.tree.range(mul);
  SourceRange part = p.tree.range(sum);
  EXPECT_LE(whole.begin, part.begin);
  EXPECT_GE(whole.end, part.end);
}

TEST(ParserTest, RangeOfStatementsCoversTheirParts) {
  Parsed p("main {\n  x[i] += f(a) * 2\n  if c { y = 1 }\n}");
  auto statements = p.tree.list(p.tree.listA(p.tree.childC(p.items()[0])));
  ASSERT_EQ(statements.size(), 2u);
  EXPECT_EQ(p.textOf(statements[0]), "x[i] += f(a) * 2");
  EXPECT_EQ(p.textOf(statements[1]).substr(0, 4), "if c");
}

// The range of a node covers its closing delimiters too: `f(a, b)`, not `f(a, b`.
TEST(ParserTest, RangeCoversClosingDelimiters) {
  EXPECT_EQ(initText("f(a, b)"), "f(a, b)");
  EXPECT_EQ(initText("(a + b)"), "(a + b)");
  EXPECT_EQ(initText("[1, 2]"), "[1, 2]");
  EXPECT_EQ(initText("x[1:2]"), "x[1:2]");
  EXPECT_EQ(initText("f()"), "f()");
  EXPECT_EQ(initText("a + f(b)"), "a + f(b)");
}

// User-visible effect of the range above: suggestions quote broken code.
TEST(ParserTest, RangeSuggestionsQuoteWholeExpressions) {
  Parsed range("let r = 0..f(n)");
  ASSERT_EQ(range.diagnostics().size(), 1u);
  ASSERT_EQ(range.diagnostics()[0].notes.size(), 1u);
  EXPECT_EQ(range.diagnostics()[0].notes[0].message, "write 'for i in 0..f(n)' to loop over it");
  EXPECT_EQ(range.diagnostics()[0].range.end, 15u);
}

TEST(ParserTest, Dump) {
  Parsed p("main {\n  let y = -x**2 + a @ b\n}\n");
  EXPECT_EQ(p.tree.dump(),
            "Program\n"
            "  Main @1:1\n"
            "    Block @1:6\n"
            "      Let \"y\" @2:7\n"
            "        init: Binary \"+\" @2:17\n"
            "          Unary \"-\" @2:11\n"
            "            Binary \"**\" @2:13\n"
            "              Name \"x\" @2:12\n"
            "              IntLit 2 @2:15\n"
            "          Binary \"@\" @2:21\n"
            "            Name \"a\" @2:19\n"
            "            Name \"b\" @2:23\n");
}

// ---- parsing some items (the incremental compile) ------------------------------

// The token that starts each item: its keyword.
std::vector<TokenId> itemStarts(const Parsed& p) {
  std::vector<TokenId> starts;
  for (uint32_t t = 0; t < p.tokens.size(); ++t) {
    TokenKind kind = p.tokens.kind(TokenId{t});
    if (kind == TokenKind::KwLayer || kind == TokenKind::KwFn || kind == TokenKind::KwLet) {
      starts.push_back(TokenId{t});
    }
  }
  return starts;
}

TEST(ParserTest, ParseItemsGivesTheSameSubtreesAsTheWholeFile) {
  Parsed p("let A = 1;\nfn f(x: int) -> int { return x + A }\nlet B = f(2)\n");
  ASSERT_TRUE(p.diagnostics().empty());
  std::vector<TokenId> starts = itemStarts(p);
  ASSERT_EQ(starts.size(), 3u);
  TokenId end{static_cast<uint32_t>(p.tokens.size() - 1)};
  std::vector<ItemTokens> some = {{starts[1], starts[2]}, {starts[2], end}};
  bool complete = false;
  Tree tree = parseItems(p.tokens, some, p.diags, complete);
  EXPECT_TRUE(complete);
  std::span<const NodeId> items = tree.list(tree.listA(tree.root()));
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(sexpr(tree, items[0]), sexpr(p.tree, p.items()[1]));
  EXPECT_EQ(sexpr(tree, items[1]), sexpr(p.tree, p.items()[2]));
  EXPECT_EQ(tree.range(items[0]).begin, p.tree.range(p.items()[1]).begin);
  // The first item ends at its ';' (skipped), and may start the list too.
  std::vector<ItemTokens> first = {{starts[0], starts[1]}};
  parseItems(p.tokens, first, p.diags, complete);
  EXPECT_TRUE(complete);
}

TEST(ParserTest, ParseItemsRejectsASplitThatIsNotAnItemBoundary) {
  Parsed p("fn f(x: int) -> int { return x }\nfn g(x: int) -> int { return x }\n");
  std::vector<TokenId> starts = itemStarts(p);
  ASSERT_EQ(starts.size(), 2u);
  bool complete = true;
  // An end before the item's last token, and one past the next item's start.
  std::vector<ItemTokens> shortItem = {{starts[0], TokenId{starts[1].index - 1}}};
  parseItems(p.tokens, shortItem, p.diags, complete);
  EXPECT_FALSE(complete);
  std::vector<ItemTokens> longItem = {{starts[0], TokenId{starts[1].index + 1}}};
  parseItems(p.tokens, longItem, p.diags, complete);
  EXPECT_FALSE(complete);
}

TEST(ParserTest, ParseItemsReportsASyntaxErrorAsIncomplete) {
  Parsed p("fn f(x: int) -> int { return x + }\n");
  std::vector<TokenId> starts = itemStarts(p);
  ASSERT_EQ(starts.size(), 1u);
  bool complete = true;
  std::vector<ItemTokens> all = {{starts[0], TokenId{static_cast<uint32_t>(p.tokens.size() - 1)}}};
  CollectingDiagnosticConsumer collected;
  DiagnosticEngine diags(collected);
  parseItems(p.tokens, all, diags, complete);
  EXPECT_FALSE(complete);
  EXPECT_FALSE(collected.diagnostics.empty());
}

// ---- habits from Python and PyTorch ---------------------------------------------

TEST(ParserTest, PythonOperatorWordsAreStillNames) {
  // Only a word between two operands is taken for Python's operator.
  EXPECT_EQ(stmts("let not = 1\nlet w = not + 1\nnot(a)\nlet u = not [1]\nlet or = 2\n"
                  "let y = or * 2\nf(and=1, is=2)"),
            "(let not _ 1); (let w _ (+ not 1)); (call not a); (let u _ (index not 1)); "
            "(let or _ 2); (let y _ (* or 2)); (call f and=1 is=2)");
}

TEST(ParserTest, PythonOperatorsAreOneErrorPerStatement) {
  std::string text = "main {\n  let x = a or b and not c\n  let y = 1 +\n}\n";
  Parsed p(text);
  // The second line's error is independent and reported; the first line's
  // three words are one error (at the first) and no cascade.
  ASSERT_EQ(diagNames(p.diagnostics()), "PythonOperator ExpectedExpression");
  EXPECT_EQ(p.diagnostics()[0].message, "'or' is not an operator: write '||'");
  EXPECT_EQ(p.diagnostics()[0].range.begin, offsetOf(text, "or"));
}

TEST(ParserTest, DefAtTopLevelIsParsedAsFn) {
  Parsed p("def f(x: int) -> int {\n  return x +* 1\n}\nmain {}\n");
  ASSERT_EQ(diagNames(p.diagnostics()), "MisspelledKeyword ExpectedExpression");
  EXPECT_EQ(p.diagnostics()[0].message,
            "'def' is not a keyword: write 'fn' (or 'layer' for a module with weights)");
  ASSERT_EQ(p.items().size(), 2u);
  EXPECT_EQ(p.tree.kind(p.items()[0]), NodeKind::Fn);
  EXPECT_EQ(p.tree.kind(p.items()[1]), NodeKind::Main);
}

TEST(ParserTest, PythonDefHeaderIsSkippedWithItsIndentedBody) {
  Parsed p("class Net(nn.Module):\n    def forward(self, x):\n        return x\nmain {}\n");
  ASSERT_EQ(diagNames(p.diagnostics()), "MisspelledKeyword");
  EXPECT_EQ(p.diagnostics()[0].message, "'class' is not a keyword: write 'layer'");
  EXPECT_EQ(p.tree.kind(p.items().back()), NodeKind::Main);
}

TEST(ParserTest, MissingBraceBeforeAnItemClosesTheBlock) {
  std::string text = "fn f() {\n  if true {\n    print(1)\n  }\n\nfn g() {\n  print(2)\n}\n";
  Parsed p(text);
  ASSERT_EQ(diagNames(p.diagnostics()), "ExpectedToken");
  const Diagnostic& d = p.diagnostics()[0];
  EXPECT_EQ(d.message, "expected '}', found 'fn'");
  ASSERT_EQ(d.notes.size(), 1u);
  EXPECT_EQ(d.notes[0].range.begin, offsetOf(text, "{"));
  ASSERT_EQ(p.items().size(), 2u);
  EXPECT_EQ(p.tree.kind(p.items()[1]), NodeKind::Fn);
}

TEST(ParserTest, IndentedItemInAClosedBlockIsNotAMissingBrace) {
  Parsed p("fn f() {\n  fn g() {}\n}\n");
  ASSERT_EQ(diagNames(p.diagnostics()), "ExpectedStatement");
}

TEST(ParserTest, MissingCommaIsReportedOnceAndTheListGoesOn) {
  Parsed args("main {\n  f(1 2 3, x)\n  let y = 1 +\n}\n");
  ASSERT_EQ(diagNames(args.diagnostics()), "ExpectedToken ExpectedExpression");
  EXPECT_EQ(args.diagnostics()[0].message,
            "expected ',' between arguments, found integer literal '2'");
  Parsed params("fn f(a: int b: int) -> int { return a }\n");
  ASSERT_EQ(diagNames(params.diagnostics()), "ExpectedToken");
  EXPECT_EQ(params.diagnostics()[0].message,
            "expected ',' between parameters, found identifier 'b'");
  ASSERT_EQ(params.items().size(), 1u);
  EXPECT_EQ(params.tree.kind(params.items()[0]), NodeKind::Fn);
}

TEST(ParserTest, MainWithParenthesesKeepsItsBody) {
  Parsed p("main() {\n  print(1 +)\n}\n");
  ASSERT_EQ(diagNames(p.diagnostics()), "MainParameters ExpectedExpression");
  Parsed fnMain("fn main() {\n  print(1)\n}\n");
  ASSERT_EQ(diagNames(fnMain.diagnostics()), "FnMain");
  ASSERT_EQ(fnMain.items().size(), 1u);
  EXPECT_EQ(fnMain.tree.kind(fnMain.items()[0]), NodeKind::Main);
}

TEST(ParserTest, ReturnTypeWithoutArrow) {
  Parsed colon("fn f(x: int): int {\n  return x +* 1\n}\n");
  ASSERT_EQ(diagNames(colon.diagnostics()), "ExpectedToken ExpectedExpression");
  EXPECT_EQ(colon.diagnostics()[0].message, "expected '->' before the return type, found ':'");
  ASSERT_EQ(colon.diagnostics()[0].notes.size(), 1u);
  EXPECT_EQ(colon.diagnostics()[0].notes[0].message, "write '-> int'");
  // A Python header's ':' is no return type.
  Parsed python("fn f(x: int):\n  return x\n");
  ASSERT_EQ(diagNames(python.diagnostics()), "ExpectedToken");
  EXPECT_EQ(python.diagnostics()[0].message,
            "expected '{' to start the function body, found ':'");
}

TEST(ParserTest, TypeHabits) {
  Parsed brackets("fn f(x: Tensor[float32, [?, 4]]) {}\n");
  ASSERT_EQ(diagNames(brackets.diagnostics()), "TypeArgumentsInBrackets");
  EXPECT_EQ(brackets.diagnostics()[0].message,
            "type arguments are written in angle brackets: 'Tensor<float32, [?, 4]>'");
  Parsed minus("fn f(x: Tensor<float32, [-1, 4]>) {}\n");
  ASSERT_EQ(diagNames(minus.diagnostics()), "NegativeDimension");
  // Other negative sizes are no habit: the usual error.
  Parsed minusTwo("fn f(x: Tensor<float32, [-2, 4]>) {}\n");
  ASSERT_EQ(diagNames(minusTwo.diagnostics()), "ExpectedDim");
  Parsed let("main {\n  let w Tensor<float32, [4]> = zeros([4])\n}\n");
  ASSERT_EQ(diagNames(let.diagnostics()), "ExpectedToken");
  EXPECT_EQ(let.diagnostics()[0].message,
            "expected ':' before the type, found identifier 'Tensor'");
}

TEST(ParserTest, StatementHabits) {
  Parsed assign("main {\n  if x = 1 {\n    print(1 +)\n  }\n}\n");
  ASSERT_EQ(diagNames(assign.diagnostics()), "AssignInCondition ExpectedExpression");
  Parsed tuple("fn f() {\n  return a, b\n}\n");
  ASSERT_EQ(diagNames(tuple.diagnostics()), "ReturnTuple");
  Parsed ellipsis("main {\n  print(x[..., 0])\n}\n");
  ASSERT_EQ(diagNames(ellipsis.diagnostics()), "EllipsisIndex");
  // `if c; {`: one error at the ';', and the block is the if's (its own
  // statements' mistakes are still reported, each once).
  Parsed semicolon("main {\n  if x > 0; {\n    print(1 +)\n  }\n  while x; {\n  }\n}\n");
  ASSERT_EQ(diagNames(semicolon.diagnostics()),
            "SemicolonBeforeBlock ExpectedExpression SemicolonBeforeBlock");
  EXPECT_EQ(semicolon.diagnostics()[0].message, "stray ';' between 'if' and its block: remove it");
  // `let in = 3`: one error at the declaration; its uses parse as the name.
  Parsed keyword("fn f(in: int) -> int {\n  let main = in\n  return main + in\n}\n"
                 "fn g() -> int {\n  return in\n}\n");
  ASSERT_EQ(diagNames(keyword.diagnostics()),
            "KeywordUsedAsName KeywordUsedAsName ExpectedExpression");
  EXPECT_EQ(keyword.diagnostics()[1].message,
            "'main' is a keyword and cannot be a name: rename it and its uses, such as 'main_'");
  Parsed colon("main {\n  while x > 0:\n    x -= 1\n}\n");
  ASSERT_EQ(diagNames(colon.diagnostics()), "ExpectedToken");
  ASSERT_EQ(colon.diagnostics()[0].notes.size(), 1u);
  EXPECT_EQ(colon.diagnostics()[0].notes[0].message,
            "blocks are written in braces, not with ':' and indentation: 'while x > 0 { ... }'");
}

}  // namespace
}  // namespace tritonc

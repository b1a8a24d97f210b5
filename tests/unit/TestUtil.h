//===- TestUtil.h - shared helpers of the unit tests ------------*- C++ -*-===//
//
// `Lexed` lexes a string and `Parsed` lexes and parses one, both with a
// CollectingDiagnosticConsumer, so tests can look at tokens, trees and every
// diagnostic. `sexpr` renders a tree compactly for precedence and shape tests:
//
//   a + b * c        ->  (+ a (* b c))
//   -x               ->  (- x)
//   f(1, n=2)        ->  (call f 1 n=2)
//   x[1:, 0]         ->  (index x (slice 1 _ _) 0)
//   x.T              ->  (. x T)
//   (a)              ->  (paren a)
//   [1, 2]           ->  (list 1 2)
//   let x: T = v     ->  (let x T v)          absent parts print as `_`
//   { s1; s2 }       ->  {s1 s2}
//
// `Checked` lexes, parses and type-checks a string and finds `let` nodes by
// name, so sema tests can ask for the type the checker gave a variable.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tritonc/base/Interner.h"
#include "tritonc/diag/Diagnostics.h"
#include "tritonc/lex/Lex.h"
#include "tritonc/lex/TokenizedBuffer.h"
#include "tritonc/parse/Parse.h"
#include "tritonc/parse/Tree.h"
#include "tritonc/sema/CheckedModule.h"
#include "tritonc/sema/Sema.h"
#include "tritonc/source/SourceBuffer.h"

namespace tritonc::test {

/// A fresh directory under the test temp dir, named after the running test
/// (`<prefix>_<pid>_<test>`) and removed at the end of the test.
class ScratchDir {
 public:
  explicit ScratchDir(std::string_view prefix) {
    path_ = std::filesystem::path(::testing::TempDir()) /
            (std::string(prefix) + "_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

/// Name given to every in-memory source of the tests.
inline constexpr const char* kTestFile = "test.tri";

/// A source text lexed with a collecting consumer. Not movable: the token
/// buffer points at the source and the interner.
struct Lexed {
  explicit Lexed(std::string text, DiagnosticOptions options = {})
      : source(SourceBuffer::fromString(kTestFile, std::move(text))),
        diags(consumer, options),
        tokens(lex(source, interner, diags)) {}
  Lexed(const Lexed&) = delete;
  Lexed& operator=(const Lexed&) = delete;

  SourceBuffer source;
  Interner interner;
  CollectingDiagnosticConsumer consumer;
  DiagnosticEngine diags;
  TokenizedBuffer tokens;

  size_t size() const { return tokens.size(); }
  TokenId id(size_t i) const { return TokenId{static_cast<uint32_t>(i)}; }
  TokenKind kind(size_t i) const { return tokens.kind(id(i)); }
  std::string_view spelling(size_t i) const { return tokens.spelling(id(i)); }
  SourceRange range(size_t i) const { return tokens.range(id(i)); }
  bool newlineBefore(size_t i) const { return tokens.hasNewlineBefore(id(i)); }

  /// Every token kind, EndOfFile included.
  std::vector<TokenKind> kinds() const {
    std::vector<TokenKind> out;
    for (size_t i = 0; i < tokens.size(); ++i) {
      out.push_back(kind(i));
    }
    return out;
  }
  /// Token kind names joined by spaces, EndOfFile included: "Identifier Minus IntLiteral EndOfFile".
  std::string kindNames() const {
    std::string out;
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (i > 0) {
        out += ' ';
      }
      out += tokenKindName(kind(i));
    }
    return out;
  }
  const std::vector<Diagnostic>& diagnostics() const { return consumer.diagnostics; }
  std::vector<Diag> diagKinds() const {
    std::vector<Diag> out;
    for (const Diagnostic& d : consumer.diagnostics) {
      out.push_back(d.kind);
    }
    return out;
  }
};

/// A source text lexed and parsed.
struct Parsed : Lexed {
  explicit Parsed(std::string text, DiagnosticOptions options = {})
      : Lexed(std::move(text), options), tree(parse(tokens, diags)) {}

  Tree tree;

  /// The items of the program.
  std::span<const NodeId> items() const { return tree.list(tree.listA(tree.root())); }
  /// The text that `tree.range(node)` covers.
  std::string_view textOf(NodeId node) const {
    SourceRange r = tree.range(node);
    return source.text().substr(r.begin, r.end - r.begin);
  }
};

/// A source text lexed, parsed and type-checked. The diagnostics of all three
/// stages are collected; `parseDiagnostics` counts those before the check.
struct Checked : Parsed {
  explicit Checked(std::string text, DiagnosticOptions options = {})
      : Parsed(std::move(text), options),
        parseDiagnostics(consumer.diagnostics.size()),
        module(check(tree, interner, diags)) {}

  size_t parseDiagnostics;
  CheckedModule module;

  /// The `nth` (0-based, in source order) Let node named `name`; invalid if none.
  NodeId let(std::string_view name, size_t nth = 0) const {
    std::vector<NodeId> found;
    for (size_t i = 0; i < tree.size(); ++i) {
      NodeId node{static_cast<uint32_t>(i)};
      if (tree.kind(node) == NodeKind::Let && tokens.spelling(tree.token(node)) == name) {
        found.push_back(node);
      }
    }
    std::sort(found.begin(), found.end(), [&](NodeId a, NodeId b) {
      return tree.range(a).begin < tree.range(b).begin;
    });
    return nth < found.size() ? found[nth] : NodeId{};
  }
  /// The type the checker gave the `nth` let named `name`.
  TypeId letType(std::string_view name, size_t nth = 0) const {
    NodeId node = let(name, nth);
    return node.isValid() ? module.nodeType[node.index] : TypeId{};
  }
  /// That type formatted (`Tensor<float32, [?, 10]>`), or "<no let NAME>".
  std::string typeOf(std::string_view name, size_t nth = 0) const {
    if (!let(name, nth).isValid()) {
      return "<no let " + std::string(name) + ">";
    }
    return module.formatType(letType(name, nth));
  }
  /// How the initializer of the let named `name` is called (None if it is not a call).
  CallKind callKindOf(std::string_view name, size_t nth = 0) const {
    NodeId node = let(name, nth);
    if (!node.isValid()) {
      return CallKind::None;
    }
    NodeId init = tree.childB(node);
    if (!init.isValid() || tree.kind(init) != NodeKind::Call) {
      return CallKind::None;
    }
    return module.callKind[init.index];
  }
  /// The user layer or fn named `name`; null if none.
  const CallableInfo* callable(std::string_view name) const {
    for (const CallableInfo& c : module.callables) {
      if (interner.spelling(c.name) == name) {
        return &c;
      }
    }
    return nullptr;
  }
};

/// Diagnostic kind names joined by spaces ("ExpectedToken NestingTooDeep").
inline std::string diagNames(const std::vector<Diagnostic>& diagnostics) {
  std::string out;
  for (const Diagnostic& d : diagnostics) {
    if (!out.empty()) {
      out += ' ';
    }
    out += diagName(d.kind);
  }
  return out;
}

/// The compact rendering described at the top of this file.
inline std::string sexpr(const Tree& tree, NodeId id) {
  if (!id.isValid()) {
    return "_";
  }
  const TokenizedBuffer& tokens = tree.tokens();
  TokenId tok = tree.token(id);
  auto spell = [&] { return std::string(tokens.spelling(tok)); };
  auto listOf = [&](ListId list, std::string_view sep) {
    std::string out;
    for (NodeId child : tree.list(list)) {
      if (!out.empty()) {
        out += sep;
      }
      out += sexpr(tree, child);
    }
    return out;
  };
  auto withList = [&](std::string head, ListId list) {
    std::string rest = listOf(list, " ");
    return rest.empty() ? head : head + " " + rest;
  };
  NodeId a = tree.childA(id);
  NodeId b = tree.childB(id);
  NodeId c = tree.childC(id);
  switch (tree.kind(id)) {
    case NodeKind::Program: return listOf(tree.listA(id), "\n");
    case NodeKind::Import: {
      std::string out = "(import " + spell();
      if (b.isValid()) {
        out += " as " + std::string(tokens.spelling(TokenId{b.index}));
      }
      return out + ")";
    }
    case NodeKind::Layer:
    case NodeKind::Fn:
      return fmt::format("({} {} ({}) {} {})", tree.kind(id) == NodeKind::Layer ? "layer" : "fn",
                         spell(), listOf(tree.listA(id), " "), sexpr(tree, b), sexpr(tree, c));
    case NodeKind::Main: return "(main " + sexpr(tree, c) + ")";
    case NodeKind::Param:
      return fmt::format("(param {} {} {})", spell(), sexpr(tree, a), sexpr(tree, b));
    case NodeKind::Block: return "{" + listOf(tree.listA(id), " ") + "}";
    case NodeKind::Let:
      return fmt::format("(let {} {} {})", spell(), sexpr(tree, a), sexpr(tree, b));
    case NodeKind::Return: return a.isValid() ? "(return " + sexpr(tree, a) + ")" : "(return)";
    case NodeKind::Assign:
      return fmt::format("({} {} {})", spell(), sexpr(tree, a), sexpr(tree, b));
    case NodeKind::If:
      return fmt::format("(if {} {} {})", sexpr(tree, a), sexpr(tree, b), sexpr(tree, c));
    case NodeKind::For:
      return fmt::format("(for {} {} {})", spell(), sexpr(tree, a), sexpr(tree, b));
    case NodeKind::While: return fmt::format("(while {} {})", sexpr(tree, a), sexpr(tree, b));
    case NodeKind::Break: return "break";
    case NodeKind::Continue: return "continue";
    case NodeKind::ExprStmt: return sexpr(tree, a);
    case NodeKind::TypeName: {
      if (!tree.listA(id).isValid()) {
        return spell();
      }
      return spell() + "<" + listOf(tree.listA(id), ", ") + ">";
    }
    case NodeKind::Shape: return "[" + listOf(tree.listA(id), ", ") + "]";
    case NodeKind::DimUnknown: return "?";
    case NodeKind::Name: return spell();
    case NodeKind::IntLit: return fmt::format("{}", tokens.intValue(tok));
    case NodeKind::FloatLit: return fmt::format("{}f", tokens.floatValue(tok));
    case NodeKind::StringLit: return "\"" + tokens.stringValue(tok) + "\"";
    case NodeKind::BoolLit: return spell();
    case NodeKind::Paren: return "(paren " + sexpr(tree, a) + ")";
    case NodeKind::Unary: return fmt::format("({} {})", spell(), sexpr(tree, a));
    case NodeKind::Binary:
      return fmt::format("({} {} {})", spell(), sexpr(tree, a), sexpr(tree, b));
    case NodeKind::Call: return withList("(call " + sexpr(tree, a), tree.listB(id)) + ")";
    case NodeKind::NamedArg: return spell() + "=" + sexpr(tree, a);
    case NodeKind::Index: return withList("(index " + sexpr(tree, a), tree.listB(id)) + ")";
    case NodeKind::Slice:
      return fmt::format("(slice {} {} {})", sexpr(tree, a), sexpr(tree, b), sexpr(tree, c));
    case NodeKind::Member: return fmt::format("(. {} {})", sexpr(tree, a), spell());
    case NodeKind::List: return withList("(list", tree.listA(id)) + ")";
    case NodeKind::Range: return fmt::format("(.. {} {})", sexpr(tree, a), sexpr(tree, b));
    case NodeKind::Error: return "<error>";
  }
  return "<?>";
}

/// The whole program as s-expressions, one item per line.
inline std::string sexpr(const Parsed& parsed) { return sexpr(parsed.tree, parsed.tree.root()); }

}  // namespace tritonc::test

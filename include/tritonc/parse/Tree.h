//===- Tree.h - the abstract syntax tree ------------------------*- C++ -*-===//
//
// The parser's output. Nodes are 20-byte records in one vector, named by
// dense `NodeId`s; variable-length children (parameters, statements,
// arguments) live in a side vector and are named by `ListId`. Nothing points
// into other allocations, so a tree is cheap to build, walk and serialize.
//
// Node depth is bounded (Parser.h): later stages may recurse over a tree.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "tritonc/lex/TokenizedBuffer.h"

namespace tritonc {

enum class NodeKind : uint8_t {
#define NODE(Name, Fields) Name,
#include "tritonc/parse/NodeKinds.def"
};
std::string_view nodeKindName(NodeKind kind);

struct NodeId {
  uint32_t index = UINT32_MAX;
  bool isValid() const { return index != UINT32_MAX; }
  friend bool operator==(NodeId, NodeId) = default;
};

struct ListId {
  uint32_t index = UINT32_MAX;
  bool isValid() const { return index != UINT32_MAX; }
};

class Tree {
 public:
  struct Node {
    NodeKind kind;
    uint8_t reserved;
    uint16_t depth;  ///< 1 + the largest depth of a child (saturating)
    TokenId token;
    uint32_t a;
    uint32_t b;
    uint32_t c;
  };
  static_assert(sizeof(Node) == 20, "nodes are packed");

  explicit Tree(const TokenizedBuffer& tokens) : tokens_(&tokens) {}

  const TokenizedBuffer& tokens() const { return *tokens_; }
  NodeId root() const { return root_; }
  size_t size() const { return nodes_.size(); }

  NodeKind kind(NodeId id) const { return nodes_[id.index].kind; }
  TokenId token(NodeId id) const { return nodes_[id.index].token; }
  unsigned depth(NodeId id) const { return nodes_[id.index].depth; }
  /// The depth of the deepest item (layer, fn, main, ...) of the program.
  unsigned deepestItem() const;
  /// Operand a/b/c as a child node (invalid when absent).
  NodeId childA(NodeId id) const { return NodeId{nodes_[id.index].a}; }
  NodeId childB(NodeId id) const { return NodeId{nodes_[id.index].b}; }
  NodeId childC(NodeId id) const { return NodeId{nodes_[id.index].c}; }
  /// Operand a/b as a list.
  ListId listA(NodeId id) const { return ListId{nodes_[id.index].a}; }
  ListId listB(NodeId id) const { return ListId{nodes_[id.index].b}; }
  /// Operand c as a token (the closing delimiter of brackets and blocks).
  TokenId tokenC(NodeId id) const { return TokenId{nodes_[id.index].c}; }
  std::span<const NodeId> list(ListId id) const {
    if (!id.isValid()) {
      return {};
    }
    uint32_t count = lists_[id.index];
    return {reinterpret_cast<const NodeId*>(lists_.data() + id.index + 1), count};
  }
  /// The source text covered by a node and all of its children.
  SourceRange range(NodeId id) const;
  /// Where each node's text begins (range(id).begin for every node, in one
  /// pass: range() walks a node's whole subtree, and asking it of every
  /// statement of a deeply nested body is quadratic). Unreachable nodes
  /// (none after a successful parse) get their own token's.
  std::vector<uint32_t> beginOffsets() const;
  /// That text itself.
  std::string_view text(NodeId id) const;
  /// Whether `id` is `-9223372036854775808`: unary minus on the literal 2^63,
  /// which alone does not fit int64 and negated is its minimum.
  bool isInt64Minimum(NodeId id) const;
  /// Calls `visit` with the Name node of every variable assigned in the
  /// statements under `body` (nested blocks, branches and loops included;
  /// `x[i] = v` and `x.m = v` assign x).
  void forEachAssignedName(NodeId body, const std::function<void(NodeId)>& visit) const;
  /// Calls `visit` with `root` and every node below it, parents before
  /// children (iterative: any depth the parser accepts).
  void forEachNode(NodeId root, const std::function<void(NodeId)>& visit) const;
  /// Like forEachNode, but the nodes below a node are visited only when
  /// `visit` returns true for it.
  void forEachNodeWhile(NodeId root, const std::function<bool(NodeId)>& visit) const;

  /// An indented, deterministic rendering for --dump-ast. `annotate`, when
  /// given, returns text appended to a node's line (later stages use it to
  /// show types).
  std::string dump(const std::function<std::string(NodeId)>& annotate = {}) const;

 private:
  /// Calls `visit` with each child of `id` and its dump label (null for list
  /// elements and unlabeled fields), last child first, for stack walks.
  void forEachChildReversed(NodeId id,
                            const std::function<void(NodeId, const char*)>& visit) const;

  friend class Parser;
  const TokenizedBuffer* tokens_;
  std::vector<Node> nodes_;
  std::vector<uint32_t> lists_;  ///< [count, ids...] per list
  NodeId root_;
};

}  // namespace tritonc

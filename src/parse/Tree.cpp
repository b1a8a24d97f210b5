//===- Tree.cpp - node tables, source ranges and --dump-ast ---------------===//
#include "tritonc/parse/Tree.h"

#include <fmt/format.h>

#include <algorithm>

#include "tritonc/base/Text.h"

namespace tritonc {

namespace {
constexpr std::string_view kNodeNames[] = {
#define NODE(Name, Fields) #Name,
#include "tritonc/parse/NodeKinds.def"
};

// Which operand fields hold lists, and the labels of optional children.
struct Layout {
  bool aIsList = false;
  bool bIsList = false;
  const char* labels[3] = {nullptr, nullptr, nullptr};
  bool cIsToken = false;  ///< c holds the closing delimiter's token
};

Layout layoutOf(NodeKind kind) {
  switch (kind) {
    case NodeKind::Program: return {true, false, {}};
    case NodeKind::Block:
    case NodeKind::Shape:
    case NodeKind::List:
    case NodeKind::TypeName: return {true, false, {}, true};
    case NodeKind::Paren: return {false, false, {}, true};
    case NodeKind::Layer:
    case NodeKind::Fn: return {true, false, {nullptr, "returns", nullptr}};
    case NodeKind::Param: return {false, false, {"type", "default", nullptr}};
    case NodeKind::Let: return {false, false, {"type", "init", nullptr}};
    case NodeKind::If: return {false, false, {"cond", "then", "else"}};
    case NodeKind::Call: return {false, true, {"callee", nullptr, nullptr}, true};
    case NodeKind::Index: return {false, true, {"base", nullptr, nullptr}, true};
    case NodeKind::Slice: return {false, false, {"start", "stop", "step"}};
    case NodeKind::Assign: return {false, false, {"target", "value", nullptr}};
    case NodeKind::Import: return {false, false, {nullptr, nullptr, nullptr}};
    default: return {};
  }
}
}  // namespace

std::string_view nodeKindName(NodeKind kind) { return kNodeNames[static_cast<size_t>(kind)]; }

bool Tree::isInt64Minimum(NodeId id) const {
  if (kind(id) != NodeKind::Unary || tokens_->kind(token(id)) != TokenKind::Minus) return false;
  NodeId literal = childA(id);
  return kind(literal) == NodeKind::IntLit &&
         tokens_->intValue(token(literal)) == static_cast<uint64_t>(INT64_MAX) + 1;
}

unsigned Tree::deepestItem() const {
  unsigned deepest = 0;
  if (root_.isValid()) {
    for (NodeId item : list(listA(root_))) deepest = std::max(deepest, depth(item));
  }
  return deepest;
}

std::string_view Tree::text(NodeId id) const {
  SourceRange r = range(id);
  return tokens_->source().text().substr(r.begin, r.end - r.begin);
}

SourceRange Tree::range(NodeId id) const {
  SourceRange result = tokens_->range(token(id));
  std::vector<NodeId> stack{id};
  while (!stack.empty()) {
    NodeId node = stack.back();
    stack.pop_back();
    SourceRange r = tokens_->range(token(node));
    result.begin = std::min(result.begin, r.begin);
    result.end = std::max(result.end, r.end);
    Layout layout = layoutOf(kind(node));
    const Node& n = nodes_[node.index];
    uint32_t fields[3] = {n.a, n.b, n.c};
    if (kind(node) == NodeKind::Import) {
      if (n.b != UINT32_MAX) {
        SourceRange alias = tokens_->range(TokenId{n.b});
        result.end = std::max(result.end, alias.end);
      }
      continue;
    }
    for (int i = 0; i < 3; ++i) {
      if (fields[i] == UINT32_MAX) {
        continue;
      }
      if (i == 2 && layout.cIsToken) {
        result.end = std::max(result.end, tokens_->range(TokenId{fields[i]}).end);
        continue;
      }
      if ((i == 0 && layout.aIsList) || (i == 1 && layout.bIsList)) {
        for (NodeId child : list(ListId{fields[i]})) {
          stack.push_back(child);
        }
      } else {
        stack.push_back(NodeId{fields[i]});
      }
    }
  }
  return result;
}

std::vector<uint32_t> Tree::beginOffsets() const {
  std::vector<uint32_t> begin(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) {
    begin[i] = tokens_->range(nodes_[i].token).begin;
  }
  if (!root_.isValid()) return begin;
  // Post-order from the root: a node's begin is the least of its token's and
  // its children's (an Import's fields are tokens after its own).
  std::vector<std::pair<NodeId, bool>> stack{{root_, false}};
  while (!stack.empty()) {
    NodeId node = stack.back().first;
    bool childrenDone = stack.back().second;
    stack.pop_back();
    if (!childrenDone) {
      stack.push_back({node, true});
      forEachChildReversed(node, [&](NodeId child, const char*) { stack.push_back({child, false}); });
      continue;
    }
    forEachChildReversed(node, [&](NodeId child, const char*) {
      begin[node.index] = std::min(begin[node.index], begin[child.index]);
    });
  }
  return begin;
}

void Tree::forEachChildReversed(NodeId id,
                                const std::function<void(NodeId, const char*)>& visit) const {
  const Node& n = nodes_[id.index];
  if (n.kind == NodeKind::Import) {
    return;  // its fields are tokens
  }
  Layout layout = layoutOf(n.kind);
  uint32_t fields[3] = {n.a, n.b, n.c};
  for (int i = 2; i >= 0; --i) {
    if (fields[i] == UINT32_MAX || (i == 2 && layout.cIsToken)) {
      continue;
    }
    if ((i == 0 && layout.aIsList) || (i == 1 && layout.bIsList)) {
      std::span<const NodeId> children = list(ListId{fields[i]});
      for (size_t j = children.size(); j-- > 0;) {
        visit(children[j], nullptr);
      }
    } else {
      visit(NodeId{fields[i]}, layout.labels[i]);
    }
  }
}

void Tree::forEachNode(NodeId root, const std::function<void(NodeId)>& visit) const {
  forEachNodeWhile(root, [&](NodeId node) {
    visit(node);
    return true;
  });
}

void Tree::forEachNodeWhile(NodeId root, const std::function<bool(NodeId)>& visit) const {
  std::vector<NodeId> stack{root};
  while (!stack.empty()) {
    NodeId node = stack.back();
    stack.pop_back();
    if (node.isValid() && visit(node)) {
      forEachChildReversed(node, [&](NodeId child, const char*) { stack.push_back(child); });
    }
  }
}

void Tree::forEachAssignedName(NodeId body, const std::function<void(NodeId)>& visit) const {
  // Assignments are statements: only blocks and the statements that hold
  // blocks are descended into (a condition or a loop's range is visited and
  // holds none).
  forEachNodeWhile(body, [&](NodeId n) {
    switch (kind(n)) {
      case NodeKind::Assign: {
        NodeId target = childA(n);
        while (kind(target) == NodeKind::Index || kind(target) == NodeKind::Member) {
          target = childA(target);
        }
        if (kind(target) == NodeKind::Name) {
          visit(target);
        }
        return false;
      }
      case NodeKind::Block:
      case NodeKind::If:
      case NodeKind::For:
      case NodeKind::While: return true;
      default: return false;
    }
  });
}

std::string Tree::dump(const std::function<std::string(NodeId)>& annotate) const {
  std::string out;
  // Explicit stack of (node, indent, label) keeps the dump iterative.
  struct Item {
    NodeId node;
    unsigned indent;
    const char* label;
  };
  std::vector<Item> stack{{root_, 0, nullptr}};
  while (!stack.empty()) {
    Item item = stack.back();
    stack.pop_back();
    NodeId id = item.node;
    const Node& n = nodes_[id.index];
    TokenId tok = n.token;
    out.append(item.indent * 2, ' ');
    if (item.label != nullptr) {
      out += item.label;
      out += ": ";
    }
    out += nodeKindName(n.kind);
    switch (n.kind) {
      case NodeKind::Program: break;
      case NodeKind::IntLit: out += fmt::format(" {}", tokens_->intValue(tok)); break;
      case NodeKind::FloatLit: out += " " + formatFloat(tokens_->floatValue(tok)); break;
      case NodeKind::StringLit: out += " " + quoteForDump(tokens_->stringValue(tok)); break;
      case NodeKind::Import:
        out += " " + quoteForDump(tokens_->stringValue(tok));
        if (n.b != UINT32_MAX) {
          out += " as " + quoteForDump(tokens_->spelling(TokenId{n.b}));
        }
        break;
      case NodeKind::Main:
      case NodeKind::Block:
      case NodeKind::Paren:
      case NodeKind::Call:
      case NodeKind::Index:
      case NodeKind::Slice:
      case NodeKind::List:
      case NodeKind::Shape:
      case NodeKind::DimUnknown:
      case NodeKind::Return:
      case NodeKind::If:
      case NodeKind::While:
      case NodeKind::Break:
      case NodeKind::Continue:
      case NodeKind::ExprStmt:
      case NodeKind::Error: break;
      default: out += " " + quoteForDump(tokens_->spelling(tok)); break;
    }
    if (n.kind != NodeKind::Program) {
      LineCol lc = tokens_->source().lineCol(tokens_->range(tok).begin);
      out += fmt::format(" @{}:{}", lc.line, lc.column);
    }
    if (annotate) {
      out += annotate(id);
    }
    out += '\n';
    // Pushed in reverse so they print in order.
    forEachChildReversed(id, [&](NodeId child, const char* label) {
      stack.push_back({child, item.indent + 1, label});
    });
  }
  return out;
}

}  // namespace tritonc

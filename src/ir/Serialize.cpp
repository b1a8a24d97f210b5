//===- Serialize.cpp - the binary form of a module (L2 cache) ---------------===//
//
// Native byte order, fixed-width fields, every vector preceded by its length.
// The reader checks every length against the bytes left and every id against
// the table it indexes, so malformed input is an Error, never a crash. (Cache
// entries are checksummed as well; this is the second line of defence.)
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "tritonc/base/Bytes.h"
#include "tritonc/ir/IR.h"

namespace tritonc::ir {
namespace {

constexpr char kMagic[8] = {'T', 'R', 'I', 'I', 'R', 0, 0, 2};

constexpr uint32_t kOpKindCount = 0
#define OP(Name, Spelling, Flags) +1
#include "tritonc/ir/Ops.def"
    ;

// The IR's ids are written as their index.
class Writer : public ByteWriter {
 public:
  using ByteWriter::ByteWriter;
  using ByteWriter::put;
  void put(ValueId id) { put(id.index); }
  void put(OpId id) { put(id.index); }
  void put(BlockId id) { put(id.index); }
  void put(TypeId id) { put(id.index); }
  void put(DimId id) { put(id.index); }
  void put(IdentifierId id) { put(id.index); }
  void put(std::string_view text) { putString(text); }
  template <typename T>
  void putVector(const std::vector<T>& items) {
    put(static_cast<uint32_t>(items.size()));
    for (const T& item : items) put(item);
  }
};

class Reader : public ByteReader {
 public:
  using ByteReader::ByteReader;
  /// An id below `limit`, or invalid when `allowInvalid`.
  uint32_t getId(size_t limit, bool allowInvalid = true) { return getIndex(limit, allowInvalid); }
};

}  // namespace

std::string serialize(const Module& m) {
  std::string out;
  serializeTo(m, out);
  return out;
}

void serializeTo(const Module& m, std::string& out) {
  // About 56 bytes per op, 16 per value, 4 per pool entry: one allocation up front.
  size_t estimate = 4096 + m.ops.size() * 64 + m.values.size() * 16 +
                    m.operandPool.size() * 4 + m.resultPool.size() * 4 + m.intPool.size() * 8 +
                    m.types.size() * 24 + m.dims.size() * 24 + m.interner->size() * 16;
  Writer w(out, estimate);
  w.put(std::string_view(kMagic, 8));
  // Identifiers, in id order.
  const Interner& interner = *m.interner;
  w.put(static_cast<uint32_t>(interner.size()));
  for (uint32_t i = 0; i < interner.size(); ++i) w.put(interner.spelling(IdentifierId{i}));
  // Dimensions and types, in id order (each refers only to earlier ones).
  w.put(static_cast<uint32_t>(m.dims.size()));
  for (uint32_t i = 0; i < m.dims.size(); ++i) {
    const DimStore::Node& n = m.dims.node(DimId{i});
    w.put(n.kind);
    w.put(n.value);
    w.put(n.var);
    w.put(n.lhs);
    w.put(n.rhs);
  }
  w.put(static_cast<uint32_t>(m.types.size()));
  for (uint32_t i = 0; i < m.types.size(); ++i) {
    const TypeStore::Node& n = m.types.node(TypeId{i});
    w.put(n.kind);
    w.put(n.dtype);
    w.put(static_cast<uint8_t>(n.ternary));
    w.put(static_cast<uint8_t>(n.rankKnown));
    w.put(n.ref);
    w.put(n.count);
    std::span<const DimId> shape = n.kind == TypeKind::Tensor ? m.types.shape(TypeId{i})
                                                              : std::span<const DimId>();
    w.put(static_cast<uint32_t>(shape.size()));
    for (DimId d : shape) w.put(d);
  }
  // Ops, values, blocks and pools.
  w.put(static_cast<uint32_t>(m.ops.size()));
  for (const Op& op : m.ops) {
    w.put(op.kind);
    w.put(op.constKind);
    w.put(static_cast<uint8_t>(op.erased));
    w.put(static_cast<uint8_t>(op.inplace));
    w.put(op.intAttr);
    w.put(op.floatAttr);
    w.put(op.strAttr);
    w.put(op.intsBegin);
    w.put(op.intsCount);
    w.put(op.operandsBegin);
    w.put(op.operandsCount);
    w.put(op.resultsBegin);
    w.put(op.resultsCount);
    w.put(op.regions[0]);
    w.put(op.regions[1]);
    w.put(op.parent);
    w.put(op.loc);
  }
  w.put(static_cast<uint32_t>(m.values.size()));
  for (const Value& v : m.values) {
    w.put(v.type);
    w.put(v.def);
    w.put(v.block);
    w.put(v.name);
  }
  w.put(static_cast<uint32_t>(m.blocks.size()));
  for (const Block& b : m.blocks) {
    w.putVector(b.args);
    w.putVector(b.ops);
    w.put(b.parent);
  }
  w.putVector(m.operandPool);
  w.putVector(m.resultPool);
  w.putVector(m.intPool);
  w.put(static_cast<uint32_t>(m.strings.size()));
  for (const std::string& s : m.strings) w.put(std::string_view(s));
  // Declarations.
  w.put(static_cast<uint32_t>(m.functions.size()));
  for (const Function& f : m.functions) {
    w.put(f.kind);
    w.put(f.name);
    w.put(static_cast<uint32_t>(f.params.size()));
    for (const ParamRef& p : f.params) {
      w.put(p.kind);
      w.put(p.index);
    }
    w.put(static_cast<uint32_t>(f.hypers.size()));
    for (const HyperDecl& h : f.hypers) {
      w.put(h.name);
      w.put(h.type);
      w.put(static_cast<uint8_t>(h.implicit));
      w.put(h.defaultValue);
    }
    w.put(static_cast<uint32_t>(f.weights.size()));
    for (const WeightDecl& d : f.weights) {
      w.put(d.name);
      w.put(d.type);
      w.put(d.init);
      w.put(d.sparsity);
      w.put(static_cast<uint8_t>(d.packRuns));
    }
    w.put(static_cast<uint32_t>(f.inputs.size()));
    for (const InputDecl& d : f.inputs) {
      w.put(d.name);
      w.put(d.type);
      w.put(d.defaultValue);
    }
    w.put(static_cast<uint32_t>(f.instances.size()));
    for (const InstanceDecl& d : f.instances) {
      w.put(d.name);
      w.put(static_cast<uint8_t>(d.builtin));
      w.put(d.decl);
    }
    w.put(f.returnType);
    w.put(f.body);
    w.put(f.origin);
    w.put(f.sameAs);
  }
  w.put(static_cast<uint32_t>(m.globals.size()));
  for (const Global& g : m.globals) {
    w.put(g.name);
    w.put(g.type);
    w.put(g.init);
    w.put(g.origin);
  }
  w.put(static_cast<uint32_t>(m.origins.size()));
  for (const std::string& o : m.origins) w.put(std::string_view(o));
  w.put(static_cast<int32_t>(m.entry));
  w.finish();
}

Expected<Module> deserialize(std::string_view bytes, Interner& interner) {
  if (interner.size() != 0) {
    return Error{"deserialize needs an empty interner"};
  }
  Reader r(bytes);
  if (r.getString() != std::string_view(kMagic, 8)) {
    return Error{"not a serialized tritonc module"};
  }
  Module m;
  m.interner = &interner;
  uint32_t identifiers = r.getCount(4);
  for (uint32_t i = 0; i < identifiers && !r.failed(); ++i) {
    if (interner.intern(r.getString()).index != i) r.fail();  // duplicate spelling
  }
  uint32_t dims = r.getCount(21);
  for (uint32_t i = 0; i < dims && !r.failed(); ++i) {
    DimStore::Node n;
    n.kind = r.get<DimKind>();
    n.value = r.get<int64_t>();
    n.var = IdentifierId{r.getId(identifiers)};
    n.lhs = DimId{r.getId(i)};
    n.rhs = DimId{r.getId(i)};
    if (static_cast<uint8_t>(n.kind) > static_cast<uint8_t>(DimKind::Div)) r.fail();
    if (r.failed()) break;
    // The store's constructor already made node 0 (`?`).
    if (i < m.dims.size() ? m.dims.node(DimId{i}).kind != n.kind
                          : m.dims.restore(n).index != i) {
      r.fail();
    }
  }
  if (!r.failed() && m.dims.size() != dims) r.fail();
  uint32_t types = r.getCount(16);
  std::vector<DimId> shape;
  for (uint32_t i = 0; i < types && !r.failed(); ++i) {
    TypeStore::Node n;
    n.kind = r.get<TypeKind>();
    n.dtype = r.get<DType>();
    n.ternary = r.getBool();
    n.rankKnown = r.getBool();
    n.ref = r.get<uint32_t>();
    n.count = r.get<uint32_t>();
    uint32_t rank = r.getCount(4);
    shape.clear();
    for (uint32_t d = 0; d < rank && !r.failed(); ++d) shape.push_back(DimId{r.getId(dims, false)});
    if (static_cast<uint8_t>(n.kind) > static_cast<uint8_t>(TypeKind::Module) ||
        static_cast<uint8_t>(n.dtype) > static_cast<uint8_t>(DType::Str) ||
        (n.kind == TypeKind::List && n.ref >= i)) {
      r.fail();
    }
    if (r.failed()) break;
    if (i < m.types.size() ? m.types.kind(TypeId{i}) != n.kind
                           : m.types.restore(n, shape).index != i) {
      r.fail();
    }
  }
  if (!r.failed() && m.types.size() != types) r.fail();

  // Counts first (ids refer forward and backward), then the ids.
  uint32_t opCount = r.getCount(70);
  m.ops.resize(opCount);
  for (Op& op : m.ops) {
    op.kind = r.get<OpKind>();
    if (static_cast<uint32_t>(op.kind) >= kOpKindCount) r.fail();
    op.constKind = r.get<ConstKind>();
    if (static_cast<uint8_t>(op.constKind) > static_cast<uint8_t>(ConstKind::String)) r.fail();
    op.erased = r.getBool();
    op.inplace = r.getBool();
    op.intAttr = r.get<int64_t>();
    op.floatAttr = r.get<double>();
    op.strAttr = r.get<uint32_t>();
    op.intsBegin = r.get<uint32_t>();
    op.intsCount = r.get<uint32_t>();
    op.operandsBegin = r.get<uint32_t>();
    op.operandsCount = r.get<uint32_t>();
    op.resultsBegin = r.get<uint32_t>();
    op.resultsCount = r.get<uint32_t>();
    op.regions[0] = BlockId{r.get<uint32_t>()};
    op.regions[1] = BlockId{r.get<uint32_t>()};
    op.parent = BlockId{r.get<uint32_t>()};
    op.loc = r.get<uint32_t>();
    if (r.failed()) break;
  }
  uint32_t valueCount = r.getCount(16);
  m.values.resize(valueCount);
  for (Value& v : m.values) {
    v.type = TypeId{r.getId(types, false)};
    v.def = OpId{r.getId(opCount)};
    v.block = BlockId{r.get<uint32_t>()};
    v.name = IdentifierId{r.getId(identifiers)};
    if (r.failed()) break;
  }
  uint32_t blockCount = r.getCount(12);
  m.blocks.resize(blockCount);
  for (Block& b : m.blocks) {
    uint32_t args = r.getCount(4);
    for (uint32_t i = 0; i < args && !r.failed(); ++i) b.args.push_back(ValueId{r.getId(valueCount, false)});
    uint32_t ops = r.getCount(4);
    for (uint32_t i = 0; i < ops && !r.failed(); ++i) b.ops.push_back(OpId{r.getId(opCount, false)});
    b.parent = OpId{r.getId(opCount)};
    if (r.failed()) break;
  }
  auto readValueIds = [&](std::vector<ValueId>& pool) {
    uint32_t n = r.getCount(4);
    pool.reserve(n);
    for (uint32_t i = 0; i < n && !r.failed(); ++i) pool.push_back(ValueId{r.getId(valueCount)});
  };
  readValueIds(m.operandPool);
  readValueIds(m.resultPool);
  uint32_t ints = r.getCount(8);
  for (uint32_t i = 0; i < ints && !r.failed(); ++i) m.intPool.push_back(r.get<int64_t>());
  uint32_t strings = r.getCount(4);
  for (uint32_t i = 0; i < strings && !r.failed(); ++i) m.strings.emplace_back(r.getString());
  // Now that every table has its size, the ids inside ops and values.
  auto inRange = [](uint64_t begin, uint64_t count, size_t size) { return begin + count <= size; };
  auto blockOk = [&](BlockId b) { return !b.isValid() || b.index < blockCount; };
  for (const Op& op : m.ops) {
    if (!inRange(op.intsBegin, op.intsCount, m.intPool.size()) ||
        !inRange(op.operandsBegin, op.operandsCount, m.operandPool.size()) ||
        !inRange(op.resultsBegin, op.resultsCount, m.resultPool.size()) ||
        !blockOk(op.regions[0]) || !blockOk(op.regions[1]) || !blockOk(op.parent) ||
        (op.strAttr != UINT32_MAX && op.strAttr >= strings)) {
      r.fail();
    }
  }
  for (const Value& v : m.values) {
    if (!blockOk(v.block)) r.fail();
  }

  uint32_t functionCount = r.getCount(8);
  m.functions.resize(functionCount);
  for (Function& f : m.functions) {
    f.kind = r.get<Function::Kind>();
    if (static_cast<uint8_t>(f.kind) > static_cast<uint8_t>(Function::Kind::Main)) r.fail();
    f.name = IdentifierId{r.getId(identifiers)};
    uint32_t params = r.getCount(5);
    for (uint32_t i = 0; i < params && !r.failed(); ++i) {
      ParamRef p{};
      p.kind = r.get<ParamRef::Kind>();
      p.index = r.get<uint32_t>();
      f.params.push_back(p);
    }
    uint32_t hypers = r.getCount(13);
    for (uint32_t i = 0; i < hypers && !r.failed(); ++i) {
      HyperDecl h;
      h.name = IdentifierId{r.getId(identifiers)};
      h.type = TypeId{r.getId(types, false)};
      h.implicit = r.getBool();
      h.defaultValue = BlockId{r.getId(blockCount)};
      f.hypers.push_back(h);
    }
    uint32_t weights = r.getCount(20);
    for (uint32_t i = 0; i < weights && !r.failed(); ++i) {
      WeightDecl d;
      d.name = IdentifierId{r.getId(identifiers)};
      d.type = TypeId{r.getId(types, false)};
      d.init = BlockId{r.getId(blockCount)};
      d.sparsity = r.get<double>();
      auto runs = r.get<uint8_t>();
      if (runs > static_cast<uint8_t>(PackRuns::LastDim)) r.fail();
      d.packRuns = static_cast<PackRuns>(runs);
      f.weights.push_back(d);
    }
    uint32_t inputs = r.getCount(12);
    for (uint32_t i = 0; i < inputs && !r.failed(); ++i) {
      InputDecl d;
      d.name = IdentifierId{r.getId(identifiers)};
      d.type = TypeId{r.getId(types, false)};
      d.defaultValue = BlockId{r.getId(blockCount)};
      f.inputs.push_back(d);
    }
    uint32_t instances = r.getCount(9);
    for (uint32_t i = 0; i < instances && !r.failed(); ++i) {
      InstanceDecl d;
      d.name = IdentifierId{r.getId(identifiers)};
      d.builtin = r.getBool();
      d.decl = r.get<uint32_t>();
      f.instances.push_back(d);
    }
    for (const ParamRef& p : f.params) {
      size_t limit = p.kind == ParamRef::Kind::Hyper    ? f.hypers.size()
                     : p.kind == ParamRef::Kind::Weight ? f.weights.size()
                                                        : f.inputs.size();
      if (static_cast<uint8_t>(p.kind) > static_cast<uint8_t>(ParamRef::Kind::Input) ||
          p.index >= limit) {
        r.fail();
      }
    }
    f.returnType = TypeId{r.getId(types)};
    f.body = BlockId{r.getId(blockCount)};
    f.origin = r.get<uint32_t>();
    f.sameAs = r.get<int32_t>();
    if (f.sameAs < -1 || f.sameAs >= static_cast<int32_t>(m.functions.size())) r.fail();
    if (r.failed()) break;
  }
  for (const Function& f : m.functions) {
    for (const InstanceDecl& d : f.instances) {
      if (!d.builtin && d.decl >= functionCount) r.fail();
    }
  }
  uint32_t globals = r.getCount(12);
  for (uint32_t i = 0; i < globals && !r.failed(); ++i) {
    Global g;
    g.name = IdentifierId{r.getId(identifiers)};
    g.type = TypeId{r.getId(types, false)};
    g.init = BlockId{r.getId(blockCount)};
    g.origin = r.get<uint32_t>();
    m.globals.push_back(g);
  }
  uint32_t origins = r.getCount(4);
  for (uint32_t i = 0; i < origins && !r.failed(); ++i) {
    m.origins.emplace_back(r.getString());
  }
  for (const Function& f : m.functions) {
    if (f.origin != 0 && f.origin >= m.origins.size()) r.fail();
  }
  for (const Global& g : m.globals) {
    if (g.origin != 0 && g.origin >= m.origins.size()) r.fail();
  }
  m.entry = r.get<int32_t>();
  if (m.entry < -1 || m.entry >= static_cast<int32_t>(functionCount)) r.fail();
  if (r.failed() || !r.atEnd()) {
    return Error{"malformed serialized module"};
  }
  return m;
}

}  // namespace tritonc::ir

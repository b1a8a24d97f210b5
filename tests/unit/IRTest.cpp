//===- IRTest.cpp - IR construction, verifier and passes on hand-built IR -===//
#include <gtest/gtest.h>

#include <algorithm>

#include "tritonc/ir/IR.h"
#include "tritonc/ir/Verifier.h"
#include "tritonc/opt/Optimizer.h"

namespace tritonc::ir {
namespace {

// A module with one fn `f(x: int32) -> int32` whose body the test fills.
struct Fixture {
  Interner interner;
  Module m;
  TypeId i32;
  BlockId body;
  ValueId x;

  Fixture() {
    m.interner = &interner;
    i32 = m.types.scalar(DType::Int32);
    Function f;
    f.kind = Function::Kind::Fn;
    f.name = interner.intern("f");
    f.returnType = i32;
    f.body = m.createBlock();
    body = f.body;
    x = m.addArg(body, i32, interner.intern("x"));
    m.functions.push_back(f);
  }
  ValueId constant(int64_t v, BlockId block) {
    OpId op = m.createOp(block, OpKind::Constant, {}, std::span<const TypeId>(&i32, 1));
    m.op(op).constKind = ConstKind::Int;
    m.op(op).intAttr = v;
    return m.result(op);
  }
  ValueId binary(OpKind kind, ValueId a, ValueId b, BlockId block) {
    ValueId operands[] = {a, b};
    return m.result(m.createOp(block, kind, operands, std::span<const TypeId>(&i32, 1)));
  }
  void ret(ValueId v, BlockId block) { m.createOp(block, OpKind::Return, std::span(&v, 1), {}); }
  bool mentions(const std::vector<std::string>& problems, std::string_view text) {
    return std::any_of(problems.begin(), problems.end(),
                       [&](const std::string& p) { return p.find(text) != std::string::npos; });
  }
};

TEST(IRVerifierTest, ValidFunctionPasses) {
  Fixture t;
  ValueId two = t.constant(2, t.body);
  t.ret(t.binary(OpKind::Add, t.x, two, t.body), t.body);
  EXPECT_TRUE(verify(t.m).empty());
}

TEST(IRVerifierTest, UseBeforeDefinitionIsReported) {
  Fixture t;
  ValueId two = t.constant(2, t.body);
  ValueId sum = t.binary(OpKind::Add, t.x, two, t.body);
  t.ret(sum, t.body);
  // Move the constant after its use.
  std::vector<OpId>& ops = t.m.blocks[t.body.index].ops;
  std::rotate(ops.begin(), ops.begin() + 1, ops.end() - 1);
  std::vector<std::string> problems = verify(t.m);
  EXPECT_TRUE(t.mentions(problems, "does not dominate")) << problems.size();
}

TEST(IRVerifierTest, MissingTerminatorIsReported) {
  Fixture t;
  t.binary(OpKind::Add, t.x, t.x, t.body);
  EXPECT_TRUE(t.mentions(verify(t.m), "not a terminator"));
}

TEST(IRVerifierTest, TerminatorInTheMiddleIsReported) {
  Fixture t;
  t.ret(t.x, t.body);
  t.ret(t.x, t.body);
  EXPECT_TRUE(t.mentions(verify(t.m), "is not the last op"));
}

TEST(IRVerifierTest, RegionYieldCountMustMatchResults) {
  Fixture t;
  TypeId b = t.m.types.scalar(DType::Bool);
  OpId cmp = t.m.createOp(t.body, OpKind::Lt, std::vector<ValueId>{t.x, t.x},
                          std::span<const TypeId>(&b, 1));
  ValueId cond = t.m.result(cmp);
  BlockId thenBlock = t.m.createBlock();
  BlockId elseBlock = t.m.createBlock();
  t.m.createOp(thenBlock, OpKind::Yield, std::vector<ValueId>{t.x, t.x}, {});  // two, not one
  t.m.createOp(elseBlock, OpKind::Yield, std::vector<ValueId>{t.x}, {});
  OpId op = t.m.createOp(t.body, OpKind::If, std::span(&cond, 1), std::span<const TypeId>(&t.i32, 1));
  t.m.op(op).regions[0] = thenBlock;
  t.m.op(op).regions[1] = elseBlock;
  t.m.blocks[thenBlock.index].parent = op;
  t.m.blocks[elseBlock.index].parent = op;
  t.ret(t.m.result(op), t.body);
  EXPECT_TRUE(t.mentions(verify(t.m), "yields 2 values"));
}

TEST(IRVerifierTest, BreakOutsideLoopIsReported) {
  Fixture t;
  t.m.createOp(t.body, OpKind::Break, {}, {});
  EXPECT_TRUE(t.mentions(verify(t.m), "outside of a loop"));
}

TEST(IRVerifierTest, DivisionOfTensorsIsFloating) {
  // `/` of tensors is true division (LANGUAGE.md): an integer tensor result is a
  // broken invariant; numbers floor, as Python's `//`.
  Fixture t;
  ValueId two = t.constant(2, t.body);
  t.binary(OpKind::Div, t.x, two, t.body);  // int32 numbers: floor division
  TypeId ints = t.m.types.tensor(DType::Int32, std::vector<DimId>{});
  ValueId operands[] = {t.x, two};
  t.m.createOp(t.body, OpKind::Div, operands, std::span<const TypeId>(&ints, 1));
  t.ret(t.x, t.body);
  std::vector<std::string> problems = verify(t.m);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_TRUE(t.mentions(problems, "'/' of tensors is true division")) << problems[0];
}

TEST(IROptimizerTest, O1FoldsMergesAndRemoves) {
  Fixture t;
  ValueId two = t.constant(2, t.body);
  ValueId three = t.constant(3, t.body);
  ValueId five = t.binary(OpKind::Add, two, three, t.body);       // folds to 5
  ValueId a = t.binary(OpKind::Mul, t.x, five, t.body);
  ValueId b = t.binary(OpKind::Mul, t.x, five, t.body);           // same as a
  t.binary(OpKind::Sub, a, b, t.body);                             // dead
  t.ret(t.binary(OpKind::Add, a, b, t.body), t.body);
  OptimizerOptions options;
  options.level = '1';
  options.verifyEach = true;
  EXPECT_TRUE(optimize(t.m, options).empty());
  std::string ir = t.m.print();
  EXPECT_NE(ir.find("constant 5"), std::string::npos) << ir;
  EXPECT_EQ(ir.find("sub"), std::string::npos) << ir;
  // One multiplication left, added to itself.
  size_t first = ir.find("mul");
  ASSERT_NE(first, std::string::npos) << ir;
  EXPECT_EQ(ir.find("mul", first + 1), std::string::npos) << ir;
}

TEST(IROptimizerTest, O0ChangesNothing) {
  Fixture t;
  ValueId two = t.constant(2, t.body);
  t.binary(OpKind::Add, two, two, t.body);
  t.ret(t.x, t.body);
  std::string before = t.m.print();
  OptimizerOptions options;
  options.level = '0';
  EXPECT_TRUE(optimize(t.m, options).empty());
  EXPECT_EQ(t.m.print(), before);
  EXPECT_TRUE(pipelineFor('0').empty());
  EXPECT_NE(pipelineFor('2').size(), pipelineFor('1').size());
}

}  // namespace
}  // namespace tritonc::ir

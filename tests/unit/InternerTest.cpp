//===- InternerTest.cpp - identifier interning ----------------------------===//
#include "tritonc/base/Interner.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace tritonc {
namespace {

std::string nameOf(size_t i) { return "ident_" + std::to_string(i); }

TEST(InternerTest, EmptyInternerHasNothing) {
  Interner interner;
  EXPECT_EQ(interner.size(), 0u);
  EXPECT_FALSE(interner.lookup("x").isValid());
  EXPECT_FALSE(IdentifierId{}.isValid());
}

TEST(InternerTest, InternAssignsDenseIdsInOrder) {
  Interner interner;
  IdentifierId foo = interner.intern("foo");
  IdentifierId bar = interner.intern("bar");
  IdentifierId baz = interner.intern("baz");
  EXPECT_EQ(foo.index, 0u);
  EXPECT_EQ(bar.index, 1u);
  EXPECT_EQ(baz.index, 2u);
  EXPECT_EQ(interner.size(), 3u);
}

TEST(InternerTest, InterningTwiceGivesTheSameId) {
  Interner interner;
  IdentifierId first = interner.intern("layer_norm");
  interner.intern("other");
  std::string copy = "layer_norm";  // a different buffer with the same text
  IdentifierId second = interner.intern(copy);
  EXPECT_EQ(first, second);
  EXPECT_EQ(interner.size(), 2u);
}

TEST(InternerTest, SpellingRoundTrips) {
  Interner interner;
  IdentifierId id = interner.intern("TernaryTensor");
  EXPECT_EQ(interner.spelling(id), "TernaryTensor");
}

TEST(InternerTest, CaseAndPrefixesAreDistinct) {
  Interner interner;
  IdentifierId lower = interner.intern("x");
  IdentifierId upper = interner.intern("X");
  IdentifierId longer = interner.intern("xx");
  EXPECT_NE(lower, upper);
  EXPECT_NE(lower, longer);
  EXPECT_EQ(interner.size(), 3u);
  EXPECT_EQ(interner.spelling(upper), "X");
  EXPECT_EQ(interner.spelling(longer), "xx");
}

TEST(InternerTest, LookupFindsOnlyInternedText) {
  Interner interner;
  IdentifierId id = interner.intern("relu");
  EXPECT_EQ(interner.lookup("relu"), id);
  EXPECT_FALSE(interner.lookup("relu6").isValid());
  EXPECT_FALSE(interner.lookup("rel").isValid());
  // lookup never adds.
  EXPECT_EQ(interner.size(), 1u);
}

TEST(InternerTest, EmptyStringIsAnIdentifierLikeAnyOther) {
  Interner interner;
  IdentifierId empty = interner.intern("");
  EXPECT_TRUE(empty.isValid());
  EXPECT_EQ(interner.intern(""), empty);
  EXPECT_EQ(interner.lookup(""), empty);
  EXPECT_EQ(interner.spelling(empty), "");
}

TEST(InternerTest, EmbeddedNulIsPartOfTheSpelling) {
  Interner interner;
  std::string_view withNul("a\0b", 3);
  IdentifierId id = interner.intern(withNul);
  EXPECT_NE(interner.intern("a"), id);
  EXPECT_EQ(interner.spelling(id), withNul);
  EXPECT_EQ(interner.spelling(id).size(), 3u);
}

// The table starts with 1024 slots and grows at half load: crossing 1024
// entries forces at least two rehashes.
TEST(InternerTest, GrowsPast1024Entries) {
  Interner interner;
  constexpr size_t kCount = 3000;
  for (size_t i = 0; i < kCount; ++i) {
    ASSERT_EQ(interner.intern(nameOf(i)).index, i) << nameOf(i);
  }
  EXPECT_EQ(interner.size(), kCount);
  for (size_t i = 0; i < kCount; ++i) {
    ASSERT_EQ(interner.lookup(nameOf(i)).index, i) << nameOf(i);
    ASSERT_EQ(interner.intern(nameOf(i)).index, i) << nameOf(i);
    ASSERT_EQ(interner.spelling(IdentifierId{static_cast<uint32_t>(i)}), nameOf(i));
  }
  EXPECT_EQ(interner.size(), kCount);
  EXPECT_FALSE(interner.lookup(nameOf(kCount)).isValid());
}

TEST(InternerTest, HundredThousandEntries) {
  Interner interner;
  constexpr size_t kCount = 100000;
  for (size_t i = 0; i < kCount; ++i) {
    ASSERT_EQ(interner.intern(nameOf(i)).index, i);
  }
  EXPECT_EQ(interner.size(), kCount);
  for (size_t i = 0; i < kCount; ++i) {
    ASSERT_EQ(interner.lookup(nameOf(i)).index, i) << nameOf(i);
    ASSERT_EQ(interner.spelling(IdentifierId{static_cast<uint32_t>(i)}), nameOf(i));
  }
  // Nothing that was not added is found.
  for (size_t i = kCount; i < kCount + 1000; ++i) {
    ASSERT_FALSE(interner.lookup(nameOf(i)).isValid()) << nameOf(i);
  }
}

TEST(InternerTest, SpellingsStayValidWhileTheTableAndArenaGrow) {
  Interner interner;
  IdentifierId first = interner.intern("first");
  std::string_view before = interner.spelling(first);
  const char* data = before.data();
  std::vector<std::string_view> early;
  for (size_t i = 0; i < 100; ++i) {
    early.push_back(interner.spelling(interner.intern(nameOf(i))));
  }
  // Enough text to fill many 64 KiB arena chunks and rehash many times.
  for (size_t i = 100; i < 100000; ++i) {
    interner.intern(nameOf(i) + "_padding_to_make_the_spelling_long");
  }
  EXPECT_EQ(interner.spelling(first).data(), data);
  EXPECT_EQ(before, "first");
  for (size_t i = 0; i < early.size(); ++i) {
    ASSERT_EQ(early[i], nameOf(i));
    ASSERT_EQ(early[i].data(), interner.spelling(IdentifierId{static_cast<uint32_t>(i + 1)}).data());
  }
}

TEST(InternerTest, SpellingLargerThanAnArenaChunk) {
  Interner interner;
  interner.intern("small");
  std::string huge(200000, 'w');
  huge[0] = 'h';
  huge.back() = 'e';
  IdentifierId id = interner.intern(huge);
  IdentifierId after = interner.intern("after");
  EXPECT_EQ(interner.spelling(id), huge);
  EXPECT_EQ(interner.lookup(huge), id);
  EXPECT_EQ(interner.spelling(after), "after");
  EXPECT_EQ(interner.spelling(IdentifierId{0}), "small");
}

}  // namespace
}  // namespace tritonc

#include "util/json_field.hpp"

#include <gtest/gtest.h>

namespace gpubind {

using nlohmann::json;

TEST(JsonField, MemberIsNullForAbsentKeysAndNonObjects) {
  json o = {{"a", 1}};
  ASSERT_NE(json_field::member(o, "a"), nullptr);
  EXPECT_EQ(*json_field::member(o, "a"), 1);
  EXPECT_EQ(json_field::member(o, "b"), nullptr);
  EXPECT_EQ(json_field::member(json::array({1, 2}), "a"), nullptr);
  EXPECT_EQ(json_field::member(json("a"), "a"), nullptr);
  EXPECT_EQ(json_field::member(json(), "a"), nullptr);
}

TEST(JsonField, IntegersOutOfTheTypesRangeAreNoValueNotWrapped) {
  EXPECT_EQ(json_field::as<unsigned>(json(4)), 4u);
  EXPECT_FALSE(json_field::as<unsigned>(json(-1)));
  EXPECT_FALSE(json_field::as<unsigned>(json(uint64_t(1) << 32)));
  EXPECT_EQ(json_field::as<int>(json(-1)), -1);
  EXPECT_FALSE(json_field::as<int>(json(int64_t(-1) << 40)));
  EXPECT_EQ(json_field::as<uint64_t>(json(UINT64_MAX)), UINT64_MAX);
  EXPECT_FALSE(json_field::as<int64_t>(json(UINT64_MAX)));
  EXPECT_FALSE(json_field::as<unsigned>(json(2.5)));
  EXPECT_FALSE(json_field::as<unsigned>(json("4")));
  EXPECT_FALSE(json_field::as<unsigned>(json(true)));
}

TEST(JsonField, FloatsAreFiniteAndWithinRange) {
  EXPECT_EQ(json_field::as<double>(json(2.5)), 2.5);
  EXPECT_EQ(json_field::as<double>(json(3)), 3.0);
  EXPECT_FALSE(json_field::as<float>(json(1e300)));
  EXPECT_EQ(json_field::as<double>(json(1e300)), 1e300);
  EXPECT_FALSE(json_field::as<double>(json("2.5")));
}

TEST(JsonField, BoolsStringsAndVectorsOnlyOfTheirOwnType) {
  EXPECT_EQ(json_field::as<bool>(json(true)), true);
  EXPECT_FALSE(json_field::as<bool>(json(1)));
  EXPECT_EQ(json_field::as<std::string>(json("x")), "x");
  EXPECT_FALSE(json_field::as<std::string>(json(1)));
  EXPECT_EQ(json_field::as<std::vector<unsigned>>(json::array({1, 2})), (std::vector<unsigned>{1, 2}));
  EXPECT_EQ(json_field::as<std::vector<unsigned>>(json::array()), std::vector<unsigned>{});
  EXPECT_FALSE(json_field::as<std::vector<unsigned>>(json::array({1, -2})));
  EXPECT_FALSE(json_field::as<std::vector<unsigned>>(json(1)));
}

TEST(JsonField, GetIsNoValueWhenAbsentNullOrOfAnotherType) {
  json o = {{"n", 7}, {"s", "x"}, {"z", nullptr}};
  EXPECT_EQ(json_field::get<unsigned>(o, "n"), 7u);
  EXPECT_FALSE(json_field::get<std::string>(o, "n"));
  EXPECT_FALSE(json_field::get<unsigned>(o, "absent"));
  EXPECT_FALSE(json_field::get<std::string>(o, "z"));
  EXPECT_FALSE(json_field::get<unsigned>(json::array(), "n"));
}

}  // namespace gpubind

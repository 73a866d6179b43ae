#include "core/util/json_guard.h"

#include <gtest/gtest.h>

#include <string>

#include "core/util/checked_math.h"

namespace shardscope {
namespace {

std::string Nested(int depth, char open, char close, const std::string& inner) {
  std::string s;
  for (int i = 0; i < depth; ++i) s += open == '{' ? std::string("{\"a\":") : std::string(1, open);
  s += inner;
  for (int i = 0; i < depth; ++i) s += close;
  return s;
}

TEST(JsonGuardTest, AcceptsOrdinaryDocuments) {
  EXPECT_TRUE(CheckJsonText(R"({"a": [1, 2.5e10, -3], "b": {"c": "x{[\"]"}})", "f").ok());
  EXPECT_TRUE(CheckJsonText("not json at all", "f").ok());
  EXPECT_TRUE(CheckJsonText("1e-400", "f").ok());  // underflow reads as 0, which is honest
  EXPECT_TRUE(CheckJsonText(Nested(kMaxJsonDepth, '[', ']', "1"), "f").ok());
}

TEST(JsonGuardTest, RefusesDeepNestingNamingSourceAndLimit) {
  const Status s = CheckJsonText(Nested(100000, '{', '}', "1"), "job.json");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::kInvalidInput);
  EXPECT_NE(s.message().find("job.json: JSON nested deeper than 512 levels"), std::string::npos)
      << s.message();
  EXPECT_FALSE(CheckJsonText(Nested(kMaxJsonDepth + 1, '[', ']', "1"), "f").ok());
  EXPECT_FALSE(CheckJsonText(Nested(3, '[', ']', "1"), "f", /*max_depth=*/2).ok());
}

TEST(JsonGuardTest, BracketsInsideStringsDoNotCount) {
  const std::string many(10000, '[');
  EXPECT_TRUE(CheckJsonText("{\"k\": \"" + many + "\\\"" + many + "\"}", "f").ok());
}

TEST(JsonGuardTest, NumberBeyondDoubleNamesThePath) {
  const Status s = CheckJsonText("{\"training\": {\"grad_accum\": 1,\n \"seq_len\": 1e400}}", "j");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            "j: training.seq_len: number 1e400 is outside the range of a double (line 2)");
  const Status neg = CheckJsonText("[0, -2e308]", "j");
  ASSERT_FALSE(neg.ok());
  EXPECT_NE(neg.message().find("[1]: number -2e308"), std::string::npos) << neg.message();
}

// The parser reads a NUL byte as the end of its input: what follows must not be ignored.
TEST(JsonGuardTest, ANulByteIsRefusedNotTheEndOfTheInput) {
  const std::string text = std::string(R"({"model": "llama3-8b"})") + '\0' + " garbage {{{";
  Result<nlohmann::json> j = ParseJsonInput(text, "job.json");
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(j.status().message(),
            "job.json: not valid JSON at byte 22: a NUL byte (JSON text has none)");
  EXPECT_TRUE(ParseJsonInput(R"({"s": "a\u0000b"})", "f").ok());  // escaped, it is text
}

TEST(JsonGuardTest, Utf8IsCheckedByteByByte) {
  EXPECT_EQ(InvalidUtf8At(""), std::nullopt);
  EXPECT_EQ(InvalidUtf8At("plain ASCII"), std::nullopt);
  // Two, three and four bytes: é, €, U+10FFFF (the last code point).
  EXPECT_EQ(InvalidUtf8At("caf\xC3\xA9 \xE2\x82\xAC \xF4\x8F\xBF\xBF"), std::nullopt);
  EXPECT_EQ(InvalidUtf8At("h20\xFF"), 3u);           // never a UTF-8 byte
  EXPECT_EQ(InvalidUtf8At("ab\x80"), 2u);            // a continuation without a lead
  EXPECT_EQ(InvalidUtf8At("a\xC3"), 1u);             // cut short at the end
  EXPECT_EQ(InvalidUtf8At("a\xE2\x82z"), 1u);        // cut short inside
  EXPECT_EQ(InvalidUtf8At("\xC0\xAF"), 0u);          // overlong '/'
  EXPECT_EQ(InvalidUtf8At("x\xE0\x80\xAF"), 1u);     // overlong, three bytes
  EXPECT_EQ(InvalidUtf8At("\xED\xA0\x80"), 0u);      // a UTF-16 surrogate, U+D800
  EXPECT_EQ(InvalidUtf8At("\xF4\x90\x80\x80"), 0u);  // U+110000, past the last code point
  const Status s = CheckUtf8("h20\xFF", "--set description");
  EXPECT_EQ(s.code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(s.message(), "--set description: not valid UTF-8 (byte 0xFF at offset 3)");
  EXPECT_TRUE(CheckUtf8("caf\xC3\xA9", "x").ok());
}

// A file's name need not be UTF-8: written into a report it becomes U+FFFD, where nlohmann's
// dump() throws.
TEST(JsonGuardTest, DumpJsonReplacesBytesThatAreNotUtf8) {
  const nlohmann::json doc = {{"scenario", std::string("/tmp/\xFF.json")}, {"n", 1}};
  EXPECT_THROW((void)doc.dump(), nlohmann::json::type_error);
  EXPECT_EQ(DumpJson(doc), "{\"n\":1,\"scenario\":\"/tmp/\xEF\xBF\xBD.json\"}");
  EXPECT_EQ(DumpJson(nlohmann::json{{"a", "\xC3\xA9"}}, 1), "{\n \"a\": \"\xC3\xA9\"\n}");
}

TEST(CheckedMathTest, ReportsOverflow) {
  EXPECT_EQ(CheckedMul(int64_t{1} << 31, int64_t{1} << 31), int64_t{1} << 62);
  EXPECT_FALSE(CheckedMul(int64_t{1} << 62, 2).has_value());
  EXPECT_FALSE(CheckedMul(INT64_MIN, -1).has_value());
  EXPECT_EQ(CheckedAdd(INT64_MAX - 1, 1), INT64_MAX);
  EXPECT_FALSE(CheckedAdd(INT64_MAX, 1).has_value());
  EXPECT_EQ(CheckedProduct({2, 3, 7}), 42);
  EXPECT_FALSE(CheckedProduct({int64_t{1} << 40, int64_t{1} << 30}).has_value());
}

}  // namespace
}  // namespace shardscope

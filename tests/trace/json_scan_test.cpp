#include <gtest/gtest.h>

#include "tests/trace/json_scan_dom.h"

namespace shardscope {
namespace {

// The scanner accepts exactly what nlohmann accepts and yields the same values.
TEST(JsonScan, AgreesWithNlohmann) {
  const char* inputs[] = {
      R"({"a":[1,-2,3.5,1e3,-0,0.25e-2,true,false,null,"x"],"b":{},"c":[]})",
      R"("esc \" \\ \/ \b \f \n \r \t \u00e9 \ud83d\ude00")",
      "\"caf\xc3\xa9 \xf0\x9f\x98\x80\"",
      "18446744073709551615",
      "18446744073709551616",
      "-9223372036854775808",
      "-9223372036854775809",
      " [ 1 , 2 ] ",
      "{\"k\" : \"v\" }",
      // Rejected:
      "",
      "{",
      "[1,]",
      "{\"a\":1,}",
      "{\"a\" 1}",
      "{1:2}",
      "01",
      "1.",
      ".5",
      "1e",
      "-",
      "+1",
      "tru",
      "nul",
      "[1 2]",
      "\"\\x\"",
      "\"\\u12\"",
      "\"\\ud800\"",
      "\"\\udc00\"",
      "\"a\nb\"",
      "\"\xff\"",
      "\"\xc3\"",
      "\"\xed\xa0\x80\"",
      "\"\xe0\x80\x80\"",
      "[1]]",
      "{} {}",
      "1e999",
      "[\"a\":1]",
  };
  for (const char* in : inputs) {
    nlohmann::json mine;
    std::string error;
    const bool ok = testing::ScanToDom(in, &mine, &error);
    const nlohmann::json theirs = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    EXPECT_EQ(ok, !theirs.is_discarded()) << "input: " << in << " scanner: " << error;
    if (ok && !theirs.is_discarded()) {
      EXPECT_EQ(mine, theirs) << "input: " << in;
    }
  }
}

TEST(JsonScan, ErrorsGiveTheByteOffset) {
  nlohmann::json out;
  std::string error;
  testing::ScanDom dom(&out);
  EXPECT_FALSE(trace_internal::ScanJson("[1, 2 x]", &dom));
  EXPECT_EQ(dom.error_pos, 6u);
  EXPECT_EQ(dom.error, "expected ',' or ']'");
}

TEST(JsonScan, DeepNestingDoesNotRecurse) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  nlohmann::json out;
  struct Counter {
    int depth = 0, max_depth = 0;
    bool null() { return true; }
    bool boolean(bool) { return true; }
    bool number_integer(int64_t) { return true; }
    bool number_unsigned(uint64_t) { return true; }
    bool number_float(double, const std::string&) { return true; }
    bool string(std::string&) { return true; }
    bool start_object(std::size_t) { return true; }
    bool key(std::string&) { return true; }
    bool end_object() { return true; }
    bool start_array(std::size_t) {
      max_depth = std::max(max_depth, ++depth);
      return true;
    }
    bool end_array() {
      --depth;
      return true;
    }
    void ScanError(std::size_t, const std::string&) {}
  } counter;
  EXPECT_TRUE(trace_internal::ScanJson(deep, &counter));
  EXPECT_EQ(counter.max_depth, 100000);
}

}  // namespace
}  // namespace shardscope

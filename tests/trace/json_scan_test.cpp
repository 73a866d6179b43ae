#include <gtest/gtest.h>

#include <bit>
#include <charconv>
#include <string>
#include <vector>

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

// Strings are scanned eight bytes a step: a quote, a backslash, a control character or a
// non-ASCII byte at any offset of a word must be found where it is, as nlohmann finds it.
TEST(JsonScan, StringBytesAtEveryWordOffset) {
  const std::string specials[] = {"\\\"", "\\n",  "\\u00e9", "\xc3\xa9", "\xf0\x9f\x98\x80",
                                  "\x01", "\x1f", "\xff",    "\xc3",     "\\",
                                  "\x7f"};
  for (size_t len = 0; len < 20; ++len) {
    for (size_t at = 0; at <= len; ++at) {
      for (const std::string& special : specials) {
        std::string body(len, 'a');
        for (size_t k = 0; k < len; ++k) body[k] = static_cast<char>('a' + k % 26);
        body.insert(at, special);
        for (const std::string& in :
             {"\"" + body + "\"", "{\"" + body + "\":[\"" + body + "\"]}"}) {
          nlohmann::json mine;
          std::string error;
          const bool ok = testing::ScanToDom(in, &mine, &error);
          const nlohmann::json theirs =
              nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
          ASSERT_EQ(ok, !theirs.is_discarded()) << "input: " << in << " scanner: " << error;
          if (ok) {
            ASSERT_EQ(mine, theirs) << "input: " << in;
          }
        }
      }
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
    bool number_float(double, std::string_view) { return true; }
    bool string(std::string_view) { return true; }
    bool start_object(std::size_t) { return true; }
    bool key(std::string_view) { return true; }
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

// Plain decimals take the fast path (mantissa / 10^k); it must round as from_chars does.
TEST(JsonScan, FastDecimalsRoundAsFromChars) {
  std::vector<std::string> texts = {"0.0",
                                    "-0.0",
                                    "123.456",
                                    "0.1",
                                    "0.3",
                                    "1.000000001",
                                    "99999999999999.9",
                                    "0.000001",
                                    "-7.25",
                                    "1234567.891",
                                    "0.0000000000000000000001"};
  uint64_t x = 42;
  for (int i = 0; i < 20000; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    const int decimals = static_cast<int>((x >> 60) % 8);
    const uint64_t mantissa = (x >> 10) % 100000000000000ULL;  // 14 digits (+ a 0)
    std::string digits = std::to_string(mantissa);
    while (static_cast<int>(digits.size()) <= decimals) digits = "0" + digits;
    texts.push_back(digits.substr(0, digits.size() - decimals) + "." +
                    digits.substr(digits.size() - decimals) + (decimals == 0 ? "0" : ""));
  }
  for (const std::string& t : texts) {
    double fast = 0, slow = 0;
    ASSERT_TRUE(trace_internal::scan_detail::FastDecimal(t.data(), t.data() + t.size(), &fast))
        << t;
    ASSERT_EQ(std::from_chars(t.data(), t.data() + t.size(), slow).ec, std::errc()) << t;
    EXPECT_EQ(std::bit_cast<uint64_t>(fast), std::bit_cast<uint64_t>(slow)) << t;
  }
  // Beyond 15 significant digits or with an exponent: the general path.
  double d = 0;
  for (const std::string t : {"1234567890123456.5", "1.5e3", "0.12345678901234567"}) {
    EXPECT_FALSE(trace_internal::scan_detail::FastDecimal(t.data(), t.data() + t.size(), &d)) << t;
  }
}

}  // namespace
}  // namespace shardscope

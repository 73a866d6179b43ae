#include "sim/explore/price_table.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "sim/hardware/hardware.h"

namespace shardscope::sim {
namespace {

TEST(PriceTable, DefaultPricesEveryCatalogGpu) {
  const PriceTable& t = DefaultPriceTable();
  EXPECT_EQ(t.currency, "USD");
  for (const std::string& gpu : CatalogGpuNames()) {
    ASSERT_TRUE(t.PerGpuHour(gpu).has_value()) << gpu;
    EXPECT_GT(*t.PerGpuHour(gpu), 0) << gpu;
  }
  // The figures of bench/validate/measured_runs.json pricing.median_on_demand_per_gpu_hour_usd.
  EXPECT_DOUBLE_EQ(*t.PerGpuHour("h100-sxm"), 3.47);
  EXPECT_DOUBLE_EQ(*t.PerGpuHour("H200"), 5.40);
  EXPECT_DOUBLE_EQ(*t.PerGpuHour("b300"), 8.82);
}

TEST(PriceTable, UserFileReplacesTheTable) {
  Result<PriceTable> t = ParsePriceTable(
      R"({"format": "shardscope-prices/1", "currency": "usd", "per_gpu_hour": {"h100-sxm": 2}})",
      "mine.json");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->currency, "USD");
  EXPECT_DOUBLE_EQ(*t->PerGpuHour("h100-sxm"), 2.0);
  EXPECT_FALSE(t->PerGpuHour("b200").has_value());
  EXPECT_TRUE(t->notes.empty());
}

// Every cost is printed in $ and written as *_usd: euros were printed as dollars.
TEST(PriceTable, PricesAreInUsd) {
  Result<PriceTable> t = ParsePriceTable(
      R"({"format": "shardscope-prices/1", "currency": "EUR", "per_gpu_hour": {"h100-sxm": 2}})",
      "mine.json");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), ErrorCode::kInvalidInput);
  EXPECT_NE(t.status().message().find("mine.json: currency: \"EUR\": prices must be in USD"),
            std::string::npos)
      << t.status().message();
}

// A price per node or in cents passes the range check; a note names it.
TEST(PriceTable, PricesFarFromTheBuiltInOnesAreNamed) {
  const std::string path = ::testing::TempDir() + "/far_prices.json";
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(R"({"format": "shardscope-prices/1", "per_gpu_hour": )"
               R"({"h100-sxm": 210, "b200": 0.5, "h200": 5.0}})",
               f);
    std::fclose(f);
  }
  Result<PriceTable> t = LoadPriceTable(path);
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->notes.size(), 2u);
  EXPECT_NE(t->notes[0].find("per_gpu_hour.b200 = 0.5 is 1/17 of the built-in 8.55"),
            std::string::npos)
      << t->notes[0];
  EXPECT_NE(t->notes[1].find("per_gpu_hour.h100-sxm = 210 is 61 times the built-in 3.47: a "
                             "price per node, or in cents?"),
            std::string::npos)
      << t->notes[1];
  std::remove(path.c_str());
}

TEST(PriceTable, BadFilesNameTheKey) {
  auto error = [](const char* text) {
    Result<PriceTable> t = ParsePriceTable(text, "p.json");
    EXPECT_FALSE(t.ok()) << text;
    return t.ok() ? std::string() : t.status().message();
  };
  std::string m = error(R"({"format": "shardscope-prices/1", "per_gpu_hour": {"h100sxm": 2}})");
  EXPECT_NE(m.find("p.json: per_gpu_hour.h100sxm: not a catalog GPU"), std::string::npos) << m;
  EXPECT_NE(m.find("did you mean h100-sxm"), std::string::npos) << m;
  m = error(R"({"format": "shardscope-prices/1", "per_gpu_hour": {"h200": -1}})");
  EXPECT_NE(m.find("per_gpu_hour.h200: expected a price per GPU-hour from 0.0001 to 1e+06, got -1"),
            std::string::npos)
      << m;
  // Prices whose costs print as inf or 0.000 are unit slips, refused.
  for (const char* absurd : {"1e308", "5e-324", "0"}) {
    const std::string text =
        std::string(R"({"format": "shardscope-prices/1", "per_gpu_hour": {"h200": )") + absurd +
        "}}";
    m = error(text.c_str());
    EXPECT_NE(m.find("per_gpu_hour.h200: expected a price per GPU-hour from"), std::string::npos)
        << absurd << ": " << m;
  }
  m = error(R"({"format": "shardscope-prices/1", "per_gpu_hour": {"h200": "3"}})");
  EXPECT_NE(m.find("got \"3\""), std::string::npos) << m;
  m = error(R"({"per_gpu_hour": {}})");
  EXPECT_NE(m.find("p.json: format: expected \"shardscope-prices/1\""), std::string::npos) << m;
  m = error(R"({"format": "shardscope-prices/1", "per_gpu_hours": {}})");
  EXPECT_NE(m.find("per_gpu_hours: unknown key"), std::string::npos) << m;
  m = error("[1, 2");
  EXPECT_NE(m.find("p.json: not valid JSON at byte"), std::string::npos) << m;
  m = error(R"({"format": "shardscope-prices/1", "per_gpu_hour": {"h100-sxm": 2.5)");
  EXPECT_NE(m.find("p.json: not valid JSON at byte"), std::string::npos) << m;
  // A price twice: the last one used to win silently.
  m = error(
      R"({"format": "shardscope-prices/1", "per_gpu_hour": {"h100-sxm": 2.49, "h100-sxm": 3}})");
  EXPECT_NE(m.find("the key \"h100-sxm\" appears twice"), std::string::npos) << m;
  m = error(
      R"({"format": "shardscope-prices/1", "per_gpu_hour": {"H100-SXM": 2.49, "h100-sxm": 3}})");
  EXPECT_NE(m.find("h100-sxm is priced twice"), std::string::npos) << m;
}

TEST(PriceTable, CostPerMillionTokens) {
  // 3.6 $/h at 1000 tokens/s: 3.6e6 tokens an hour cost 3.6 $, a million 1 $.
  EXPECT_DOUBLE_EQ(*CostPerMillionTokens(3.6, 1000), 1.0);
  EXPECT_FALSE(CostPerMillionTokens(3.6, 0).has_value());
}

}  // namespace
}  // namespace shardscope::sim

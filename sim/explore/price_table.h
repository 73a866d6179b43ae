// What GPUs cost: USD per GPU-hour by catalog GPU name, for a sweep's cost per million tokens.
//
// Contents:
//   PriceTable        prices by GPU name + where they came from
//   DefaultPriceTable the table compiled in from sim/explore/prices.json
//   LoadPriceTable    a user's --prices file (same format; any subset of the catalog's GPUs)
//   ParsePriceTable   the same from text already read (`source` names it in errors)
//   CostPerMillionTokens  price · 1e6 / (3600 · tokens/s/GPU)
//
// Format (docs/sweep.md): {"format": "shardscope-prices/1", "currency": "USD",
// "per_gpu_hour": {"h100-sxm": 3.47, ...}}. Unknown GPU names (did-you-mean over the catalog),
// non-positive or non-numeric prices, a currency other than USD (every cost the commands print
// and write is in USD) and a wrong format are errors naming the file and key.
//
// Example:
//   SS_ASSIGN_OR_RETURN(PriceTable prices, LoadPriceTable("my_prices.json"));
//   std::optional<double> p = prices.PerGpuHour("h100-sxm");
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/util/status.h"

namespace shardscope::sim {

struct PriceTable {
  std::string source;  // "built-in (sim/explore/prices.json)" or the file's path
  std::string currency = "USD";
  std::map<std::string, double> per_gpu_hour;  // catalog name → price
  // A user's prices far from the built-in ones (10× or more either way): a price per node or
  // in cents passes the range check; what the command prints before its table.
  std::vector<std::string> notes;
  // The price of `gpu` (case-insensitive, as LookupHardware), if the table has it.
  std::optional<double> PerGpuHour(std::string_view gpu) const;
};

const PriceTable& DefaultPriceTable();
Result<PriceTable> LoadPriceTable(const std::string& path);
Result<PriceTable> ParsePriceTable(std::string_view text, const std::string& source);

// USD per million tokens at `tokens_per_s_per_gpu` (0 or less: nullopt).
std::optional<double> CostPerMillionTokens(double usd_per_gpu_hour, double tokens_per_s_per_gpu);

}  // namespace shardscope::sim

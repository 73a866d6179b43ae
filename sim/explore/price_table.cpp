#include "sim/explore/price_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/util/ascii_case.h"
#include "core/util/did_you_mean.h"
#include "core/util/file_io.h"
#include "core/util/json_guard.h"
#include "sim/hardware/hardware.h"

namespace shardscope::sim {

extern const char* const kEmbeddedPricesJson;

namespace {}  // namespace

std::optional<double> PriceTable::PerGpuHour(std::string_view gpu) const {
  auto it = per_gpu_hour.find(AsciiLower(gpu));
  if (it == per_gpu_hour.end()) return std::nullopt;
  return it->second;
}

Result<PriceTable> ParsePriceTable(std::string_view text, const std::string& source) {
  SS_ASSIGN_OR_RETURN(const nlohmann::json doc, ParseJsonInput(text, source));
  if (!doc.is_object()) {
    return InvalidInput(fmt::format("{}: expected a JSON object (shardscope-prices/1)", source));
  }
  if (!doc.contains("format") || doc["format"] != "shardscope-prices/1") {
    return InvalidInput(
        fmt::format("{}: format: expected \"shardscope-prices/1\", got {}", source,
                    doc.contains("format") ? doc["format"].dump() : std::string("nothing")));
  }
  for (const auto& [key, value] : doc.items()) {
    if (key == "format" || key == "currency" || key == "per_gpu_hour" || key.rfind('_', 0) == 0)
      continue;
    return InvalidInput(fmt::format(
        "{}: {}: unknown key (expected format, currency, per_gpu_hour, or _-prefixed notes)",
        source, key));
  }
  PriceTable table;
  table.source = source;
  if (doc.contains("currency")) {
    if (!doc["currency"].is_string() || doc["currency"].get<std::string>().empty()) {
      return InvalidInput(fmt::format("{}: currency: expected a non-empty string", source));
    }
    table.currency = doc["currency"].get<std::string>();
    // Costs are printed as $ and written as *_usd: another currency would be mislabelled.
    if (AsciiLower(table.currency) != "usd") {
      return InvalidInput(fmt::format(
          "{}: currency: \"{}\": prices must be in USD (every cost is printed in $ and written "
          "as *_usd); convert them or leave currency out",
          source, table.currency));
    }
    table.currency = "USD";
  }
  if (!doc.contains("per_gpu_hour") || !doc["per_gpu_hour"].is_object()) {
    return InvalidInput(fmt::format(
        "{}: per_gpu_hour: expected an object of GPU name → price per GPU-hour", source));
  }
  const std::vector<std::string> names = CatalogGpuNames();
  for (const auto& [gpu, price] : doc["per_gpu_hour"].items()) {
    const std::string where = fmt::format("{}: per_gpu_hour.{}", source, gpu);
    const std::string name = AsciiLower(gpu);
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      return InvalidInput(fmt::format("{}: not a catalog GPU{}; the catalog has: {}", where,
                                      DidYouMean(gpu, names), fmt::join(names, ", ")));
    }
    // From a hundredth of a cent to a million per GPU-hour: outside it a price is a unit slip,
    // and at the extremes a cost prints as inf (1e308) or 0.000 on the Pareto front (5e-324).
    constexpr double kMinPrice = 1e-4, kMaxPrice = 1e6;
    if (!price.is_number() || !std::isfinite(price.get<double>()) ||
        price.get<double>() < kMinPrice || price.get<double>() > kMaxPrice) {
      return InvalidInput(fmt::format("{}: expected a price per GPU-hour from {:g} to {:g}, got {}",
                                      where, kMinPrice, kMaxPrice, price.dump()));
    }
    // Names are case-insensitive: "H100-SXM" and "h100-sxm" are one GPU priced twice.
    if (!table.per_gpu_hour.emplace(name, price.get<double>()).second) {
      return InvalidInput(fmt::format("{}: {} is priced twice (names ignore case)", where, name));
    }
  }
  return table;
}

const PriceTable& DefaultPriceTable() {
  static const PriceTable table = [] {
    Result<PriceTable> t =
        ParsePriceTable(kEmbeddedPricesJson, "built-in prices (sim/explore/prices.json)");
    // Tests parse the embedded table, so an error here is caught before it ships.
    return t.ok() ? *t : PriceTable{};
  }();
  return table;
}

Result<PriceTable> LoadPriceTable(const std::string& path) {
  SS_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  SS_ASSIGN_OR_RETURN(PriceTable table, ParsePriceTable(text, path));
  const PriceTable& built_in = DefaultPriceTable();
  for (const auto& [gpu, price] : table.per_gpu_hour) {
    const std::optional<double> usual = built_in.PerGpuHour(gpu);
    if (!usual || (price < 10 * *usual && price > *usual / 10)) continue;
    const bool high = price > *usual;
    table.notes.push_back(fmt::format(
        "{}: per_gpu_hour.{} = {:g} is {}{:.0f} {} the built-in {:g}: {}? (prices are USD per "
        "GPU-hour)",
        path, gpu, price, high ? "" : "1/", high ? price / *usual : *usual / price,
        high ? "times" : "of", *usual,
        high ? "a price per node, or in cents" : "a price in thousands, or per GPU-minute"));
  }
  return table;
}

std::optional<double> CostPerMillionTokens(double usd_per_gpu_hour, double tokens_per_s_per_gpu) {
  if (tokens_per_s_per_gpu <= 0) return std::nullopt;
  return usd_per_gpu_hour * 1e6 / (3600.0 * tokens_per_s_per_gpu);
}

}  // namespace shardscope::sim

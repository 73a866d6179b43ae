#include "sim/cost/calibration.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <functional>
#include <vector>

#include "core/util/ascii_case.h"
#include "core/util/did_you_mean.h"
#include "core/util/file_io.h"
#include "core/util/json_guard.h"

namespace shardscope {
namespace {

using nlohmann::json;

// One numeric key of the "compute" / "collectives" sections.
struct ParamField {
  const char* key;
  bool integer;
  double min_value;
  double max_value;
  std::function<void(CostParams&, double)> set;
};

const std::vector<ParamField>& ComputeFields() {
  static const std::vector<ParamField> fields = {
      {"gemm_efficiency", false, 0.01, 1, [](CostParams& p, double v) { p.gemm_efficiency = v; }},
      {"gemm_ramp_us", false, 0, 1e4, [](CostParams& p, double v) { p.gemm_ramp_us = v; }},
      {"gemm_tile", true, 1, 4096,
       [](CostParams& p, double v) { p.gemm_tile = static_cast<int>(v); }},
      {"attention_efficiency", false, 0.01, 1,
       [](CostParams& p, double v) { p.attention_efficiency = v; }},
      {"attention_backward_ratio", false, 0.01, 2,
       [](CostParams& p, double v) { p.attention_backward_ratio = v; }},
      {"memory_bound_efficiency", false, 0.01, 1,
       [](CostParams& p, double v) { p.memory_bound_efficiency = v; }},
      {"elementwise_efficiency", false, 0.01, 1,
       [](CostParams& p, double v) { p.elementwise_efficiency = v; }},
      {"backward_kernels", false, 0, 64, [](CostParams& p, double v) { p.backward_kernels = v; }},
      {"kernel_overhead_us", false, 0, 1e5,
       [](CostParams& p, double v) { p.kernel_overhead_us = v; }},
      {"unit_overhead_us", false, 0, 1e7, [](CostParams& p, double v) { p.unit_overhead_us = v; }},
      {"overlap_slowdown", false, 1, 10, [](CostParams& p, double v) { p.overlap_slowdown = v; }},
      {"host_optimizer_gbps", false, 0.01, 1e5,
       [](CostParams& p, double v) { p.host_optimizer_gbps = v; }},
  };
  return fields;
}

const std::vector<ParamField>& CollectiveFields() {
  static const std::vector<ParamField> fields = {
      {"launch_us", false, 0, 1e6, [](CostParams& p, double v) { p.collective_launch_us = v; }},
      {"latency_scale", false, 0, 1e3,
       [](CostParams& p, double v) { p.collective_latency_scale = v; }},
      {"bandwidth_scale", false, 1e-3, 1e3,
       [](CostParams& p, double v) { p.collective_bandwidth_scale = v; }},
  };
  return fields;
}

std::vector<std::string> KeysOf(const std::vector<ParamField>& fields,
                                std::vector<std::string> extra = {}) {
  for (const ParamField& f : fields) extra.push_back(f.key);
  return extra;
}

Status CheckNumber(const json& v, const std::string& path, bool integer, double lo, double hi) {
  if (!v.is_number()) return InvalidInput(path + ": expected a number");
  const double x = v.get<double>();
  if (integer && x != std::floor(x))
    return InvalidInput(fmt::format("{}: expected an integer, got {}", path, x));
  if (!std::isfinite(x) || x < lo || x > hi) {
    return InvalidInput(fmt::format("{}: {} is out of range [{}, {}]", path, x, lo, hi));
  }
  return Status::Ok();
}

Status ApplyParamFields(const std::vector<ParamField>& fields, const json& section,
                        const std::string& where, const std::vector<std::string>& other_keys,
                        CostParams* params) {
  for (const auto& [key, value] : section.items()) {
    bool handled = false;
    for (const ParamField& f : fields) {
      if (key != f.key) continue;
      SS_RETURN_IF_ERROR(
          CheckNumber(value, where + "." + key, f.integer, f.min_value, f.max_value));
      f.set(*params, value.get<double>());
      handled = true;
    }
    bool other = false;
    for (const std::string& k : other_keys) other = other || k == key;
    if (!handled && !other) {
      return InvalidInput(fmt::format("{}.{}: unknown key{}", where, key,
                                      DidYouMean(key, KeysOf(fields, other_keys))));
    }
  }
  return Status::Ok();
}

Result<OpType> ParseCollectiveOp(const json& v, const std::string& path) {
  static const std::vector<std::pair<std::string, OpType>> ops = {
      {"all_gather", OpType::kAllGather},
      {"reduce_scatter", OpType::kReduceScatter},
      {"all_reduce", OpType::kAllReduce},
      {"all_to_all", OpType::kAllToAll},
      {"send", OpType::kSend},
      {"recv", OpType::kRecv}};
  std::vector<std::string> names;
  for (const auto& [name, type] : ops) {
    names.push_back(name);
    if (v.is_string() && v.get<std::string>() == name) return type;
  }
  const std::string given = v.is_string() ? "'" + v.get<std::string>() + "'" : v.dump();
  return InvalidInput(fmt::format("{}: {} is not a collective{}; expected one of {}", path, given,
                                  v.is_string() ? DidYouMean(v.get<std::string>(), names) : "",
                                  fmt::format("{}", fmt::join(names, ", "))));
}

Status ApplyOverrides(const json& list, const std::string& where, CostParams* params) {
  if (!list.is_array())
    return InvalidInput(
        where + ": expected an array of {op, ranks_per_node, nodes, latency_us, busbw_gbps}");
  std::vector<CollectiveOverride> out;
  const std::vector<std::string> keys = {"op", "ranks_per_node", "nodes", "latency_us",
                                         "busbw_gbps"};
  for (size_t i = 0; i < list.size(); ++i) {
    const json& e = list[i];
    const std::string path = fmt::format("{}[{}]", where, i);
    if (!e.is_object()) return InvalidInput(path + ": expected an object");
    for (const auto& [key, value] : e.items()) {
      bool known = false;
      for (const std::string& k : keys) known = known || k == key;
      if (!known)
        return InvalidInput(fmt::format("{}.{}: unknown key{}", path, key, DidYouMean(key, keys)));
    }
    for (const std::string& k : keys) {
      if (!e.contains(k)) return InvalidInput(fmt::format("{}: missing key '{}'", path, k));
    }
    CollectiveOverride o;
    SS_ASSIGN_OR_RETURN(o.type, ParseCollectiveOp(e["op"], path + ".op"));
    SS_RETURN_IF_ERROR(
        CheckNumber(e["ranks_per_node"], path + ".ranks_per_node", true, 1, 1 << 20));
    SS_RETURN_IF_ERROR(CheckNumber(e["nodes"], path + ".nodes", true, 1, 1 << 20));
    SS_RETURN_IF_ERROR(CheckNumber(e["latency_us"], path + ".latency_us", false, 0, 1e7));
    SS_RETURN_IF_ERROR(CheckNumber(e["busbw_gbps"], path + ".busbw_gbps", false, 1e-6, 1e6));
    o.ranks_per_node = e["ranks_per_node"].get<int>();
    o.nodes = e["nodes"].get<int>();
    o.latency_us = e["latency_us"].get<double>();
    o.busbw_gbps = e["busbw_gbps"].get<double>();
    // One shape, one figure: the model reads the first entry of a shape, so a second one
    // would be ignored without a word.
    for (size_t j = 0; j < out.size(); ++j) {
      if (out[j].type == o.type && out[j].ranks_per_node == o.ranks_per_node &&
          out[j].nodes == o.nodes) {
        return InvalidInput(fmt::format(
            "{}: the same op, ranks_per_node and nodes as entry {} (one entry per group shape)",
            path, j));
      }
    }
    out.push_back(o);
  }
  params->collective_overrides = std::move(out);
  return Status::Ok();
}

// Applies `j` (already a JSON object) to hardware and params; `source` prefixes messages.
// `cross_checks` compares figures with each other (best matmul <= peak) and with the GPU the
// file was fitted on, which only means something once the file is applied to the scenario's
// GPU.
Status ApplyJson(const json& j, const std::string& source, bool cross_checks, Hardware* hw,
                 CostParams* params) {
  const std::vector<std::string> sections = {"gpu",         "node",  "compute",
                                             "collectives", "notes", "fitted_on"};
  for (const auto& [key, value] : j.items()) {
    bool known = false;
    for (const std::string& s : sections) known = known || s == key;
    if (!known)
      return InvalidInput(
          fmt::format("{}: {}: unknown key{}", source, key, DidYouMean(key, sections)));
    if (key == "notes") {
      if (!value.is_string())
        return InvalidInput(fmt::format("{}: notes: expected a string", source));
    } else if (key == "fitted_on") {
      const std::vector<std::string> names = CatalogGpuNames();
      if (!value.is_string() || std::find(names.begin(), names.end(),
                                          AsciiLower(value.get<std::string>())) == names.end()) {
        return InvalidInput(fmt::format("{}: fitted_on: expected a catalog GPU name ({}), got {}",
                                        source, fmt::join(names, ", "), value.dump()));
      }
    } else if (!value.is_object()) {
      return InvalidInput(fmt::format("{}: {}: expected an object", source, key));
    }
  }
  const std::string prefix = source + ": ";
  // Figures fitted on one GPU (its GEMM rates, its kernels' efficiencies) are not another's:
  // an H100 fit applied to an MI300X moved it +10% and onto a sweep's Pareto front, silently.
  if (cross_checks && j.contains("fitted_on") &&
      AsciiLower(j["fitted_on"].get<std::string>()) != AsciiLower(hw->gpu.name)) {
    return InvalidInput(fmt::format(
        "{}fitted_on: the file was fitted on {}, the scenario runs {}: calibrate {}'s own runs, "
        "or remove fitted_on to apply these figures anyway",
        prefix, j["fitted_on"].get<std::string>(), hw->gpu.name, hw->gpu.name));
  }
  if (j.contains("gpu")) {
    const json& g = j["gpu"];
    SS_RETURN_IF_ERROR(ApplyGpuFields(g, prefix + "gpu", &hw->gpu));
    // Figures the parameters derive from the GPU follow it unless "compute" sets them.
    if (g.contains("best_matmul_tflops") || g.contains("peak_bf16_tflops")) {
      params->gemm_efficiency = hw->gpu.best_matmul_flops / hw->gpu.peak_bf16_flops;
    }
    if (g.contains("attention_efficiency"))
      params->attention_efficiency = hw->gpu.attention_efficiency;
    if (g.contains("memory_bound_efficiency"))
      params->memory_bound_efficiency = hw->gpu.memory_bound_efficiency;
    if (g.contains("elementwise_efficiency"))
      params->elementwise_efficiency = hw->gpu.elementwise_efficiency;
    if (g.contains("nvls")) params->nvls_enabled = hw->gpu.nvls;
    if (cross_checks && hw->gpu.best_matmul_flops > hw->gpu.peak_bf16_flops) {
      return InvalidInput(fmt::format("{}gpu.best_matmul_tflops: {} exceeds peak_bf16_tflops {}",
                                      prefix, hw->gpu.best_matmul_flops / 1e12,
                                      hw->gpu.peak_bf16_flops / 1e12));
    }
    if (cross_checks && hw->gpu.reserved_bytes >= hw->gpu.hbm_bytes) {
      return InvalidInput(prefix + "gpu.reserved_gib: must be smaller than hbm_gib");
    }
  }
  if (j.contains("node")) {
    const int gpus = hw->node.gpus_per_node;
    SS_RETURN_IF_ERROR(ApplyNodeFields(j["node"], prefix + "node", &hw->node));
    // Only the scenario's node tells: ParseCalibration validates against a stand-in one.
    if (cross_checks && hw->node.gpus_per_node != gpus) {
      return InvalidInput(
          fmt::format("{}node.gpus_per_node: set by the scenario ({}), not by a calibration file",
                      prefix, gpus));
    }
  }
  if (j.contains("compute")) {
    SS_RETURN_IF_ERROR(
        ApplyParamFields(ComputeFields(), j["compute"], prefix + "compute", {}, params));
  }
  if (j.contains("collectives")) {
    const json& c = j["collectives"];
    SS_RETURN_IF_ERROR(ApplyParamFields(CollectiveFields(), c, prefix + "collectives",
                                        {"nvls", "overrides"}, params));
    if (c.contains("nvls")) {
      if (!c["nvls"].is_boolean())
        return InvalidInput(prefix + "collectives.nvls: expected true or false");
      params->nvls_enabled = c["nvls"].get<bool>() && hw->gpu.nvls;
    }
    if (c.contains("overrides")) {
      SS_RETURN_IF_ERROR(ApplyOverrides(c["overrides"], prefix + "collectives.overrides", params));
    }
  }
  return Status::Ok();
}

}  // namespace

Result<Calibration> ParseCalibration(std::string_view text, std::string_view source) {
  const std::string src(source);
  SS_ASSIGN_OR_RETURN(json j, ParseJsonInput(text, src));
  if (!j.is_object()) return InvalidInput(src + ": expected a JSON object at the top level");
  // Validate every key and value now, against a catalog GPU, so a bad file fails at load.
  Result<Hardware> probe = LookupHardware("h100-sxm", 8, 1);
  if (!probe.ok()) return probe.status();
  Hardware hw = *probe;
  CostParams params = DefaultCostParams(hw);
  SS_RETURN_IF_ERROR(ApplyJson(j, src, /*cross_checks=*/false, &hw, &params));
  Calibration cal;
  cal.overrides = std::move(j);
  cal.source = src;
  return cal;
}

Result<Calibration> LoadCalibration(const std::string& path) {
  // Named by the scenario field that names the file: a scenario or a typo given there would
  // otherwise read as an error of the scenario itself ("base.json: cluster: unknown key").
  Result<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status().WithContext("cluster.cost_model");
  Result<Calibration> cal = ParseCalibration(*text, path);
  if (!cal.ok()) return cal.status().WithContext("cluster.cost_model");
  return cal;
}

Status ApplyCalibration(const Calibration& cal, Hardware* hw, CostParams* params) {
  Hardware hw_copy = hw != nullptr ? *hw : Hardware();
  CostParams params_copy = params != nullptr ? *params : CostParams();
  if (hw == nullptr) {
    Result<Hardware> probe = LookupHardware("h100-sxm", 8, 1);
    if (!probe.ok()) return probe.status();
    hw_copy = *probe;
  }
  // Named by the scenario field as LoadCalibration's errors are (a sweep counts the variant
  // under that field, not under the file's name).
  if (Status s =
          ApplyJson(cal.overrides, cal.source, /*cross_checks=*/true, &hw_copy, &params_copy);
      !s.ok()) {
    return s.WithContext("cluster.cost_model");
  }
  if (hw != nullptr) *hw = hw_copy;
  if (params != nullptr) *params = params_copy;
  return Status::Ok();
}

std::vector<std::string> CalibrationKeys() {
  std::vector<std::string> keys;
  for (const std::string& k : GpuFieldNames()) keys.push_back("gpu." + k);
  for (const std::string& k : NodeFieldNames()) keys.push_back("node." + k);
  for (const ParamField& f : ComputeFields()) keys.push_back(std::string("compute.") + f.key);
  for (const ParamField& f : CollectiveFields())
    keys.push_back(std::string("collectives.") + f.key);
  keys.push_back("collectives.nvls");
  keys.push_back("collectives.overrides");
  keys.push_back("fitted_on");
  return keys;
}

std::string CalibrationToJson(const Calibration& cal) { return DumpJson(cal.overrides, 2) + "\n"; }

}  // namespace shardscope

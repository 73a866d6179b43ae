#include "sim/hardware/hardware.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>

#include "core/util/ascii_case.h"
#include "core/util/did_you_mean.h"
#include "core/util/units.h"

namespace shardscope {

// Defined in the generated catalog_data.cpp (sim/CMakeLists.txt embeds catalog.json).
extern const char* const kEmbeddedCatalogJson;

namespace {

using nlohmann::json;

// One JSON key of a GPU or node entry: how to read it and where it goes.
template <typename T>
struct Field {
  const char* key;
  enum Kind { kNumber, kInteger, kBool } kind;
  double min_value;  // inclusive bounds for numbers and integers
  double max_value;
  std::function<void(T&, const json&)> set;
};

template <typename T>
Status ApplyFields(const std::vector<Field<T>>& fields, const json& j, std::string_view where,
                   T* out) {
  if (!j.is_object()) return InvalidInput(fmt::format("{}: expected an object", where));
  std::vector<std::string> names;
  for (const Field<T>& f : fields) names.push_back(f.key);
  for (const auto& [key, value] : j.items()) {
    const Field<T>* field = nullptr;
    for (const Field<T>& f : fields) {
      if (key == f.key) field = &f;
    }
    if (field == nullptr) {
      return InvalidInput(fmt::format("{}.{}: unknown key{}", where, key, DidYouMean(key, names)));
    }
    const std::string path = fmt::format("{}.{}", where, key);
    if (field->kind == Field<T>::kBool) {
      if (!value.is_boolean()) return InvalidInput(path + ": expected true or false");
    } else {
      if (!value.is_number()) return InvalidInput(path + ": expected a number");
      const double v = value.template get<double>();
      if (field->kind == Field<T>::kInteger && v != std::floor(v)) {
        return InvalidInput(fmt::format("{}: expected an integer, got {}", path, v));
      }
      if (!std::isfinite(v) || v < field->min_value || v > field->max_value) {
        return InvalidInput(fmt::format("{}: {} is out of range [{}, {}]", path, v,
                                        field->min_value, field->max_value));
      }
    }
    field->set(*out, value);
  }
  return Status::Ok();
}

const std::vector<Field<GpuSpec>>& GpuFields() {
  using F = Field<GpuSpec>;
  static const std::vector<F> fields = {
      {"peak_bf16_tflops", F::kNumber, 1e-3, 1e5,
       [](GpuSpec& g, const json& v) { g.peak_bf16_flops = v.get<double>() * 1e12; }},
      {"best_matmul_tflops", F::kNumber, 1e-3, 1e5,
       [](GpuSpec& g, const json& v) { g.best_matmul_flops = v.get<double>() * 1e12; }},
      {"hbm_gib", F::kNumber, 0.5, 1e5,
       [](GpuSpec& g, const json& v) { g.hbm_bytes = GiBToBytes(v.get<double>()); }},
      {"reserved_gib", F::kNumber, 0, 1e3,
       [](GpuSpec& g, const json& v) { g.reserved_bytes = GiBToBytes(v.get<double>()); }},
      {"hbm_tbps", F::kNumber, 0.01, 1e3,
       [](GpuSpec& g, const json& v) { g.hbm_gbps = v.get<double>() * 1e3; }},
      {"nvlink_gbps", F::kNumber, 0.01, 1e5,
       [](GpuSpec& g, const json& v) { g.nvlink_gbps = v.get<double>(); }},
      {"nvlink_links", F::kInteger, 1, 1024,
       [](GpuSpec& g, const json& v) { g.nvlink_links = v.get<int>(); }},
      {"nvlink_link_gbps", F::kNumber, 0.01, 1e4,
       [](GpuSpec& g, const json& v) { g.nvlink_link_gbps = v.get<double>(); }},
      {"nvls", F::kBool, 0, 0, [](GpuSpec& g, const json& v) { g.nvls = v.get<bool>(); }},
      {"nccl_channels", F::kInteger, 1, 64,
       [](GpuSpec& g, const json& v) { g.nccl_channels = v.get<int>(); }},
      {"nvls_channels", F::kInteger, 0, 64,
       [](GpuSpec& g, const json& v) { g.nvls_channels = v.get<int>(); }},
      {"sm_count", F::kInteger, 1, 4096,
       [](GpuSpec& g, const json& v) { g.sm_count = v.get<int>(); }},
      {"pcie_gbps", F::kNumber, 0.1, 1e4,
       [](GpuSpec& g, const json& v) { g.pcie_gbps = v.get<double>(); }},
      {"attention_efficiency", F::kNumber, 0.01, 1,
       [](GpuSpec& g, const json& v) { g.attention_efficiency = v.get<double>(); }},
      {"cudnn_attention_efficiency", F::kNumber, 0.01, 1,
       [](GpuSpec& g, const json& v) { g.cudnn_attention_efficiency = v.get<double>(); }},
      {"cudnn_attention_backward_ratio", F::kNumber, 0.05, 2,
       [](GpuSpec& g, const json& v) { g.cudnn_attention_backward_ratio = v.get<double>(); }},
      {"memory_bound_efficiency", F::kNumber, 0.01, 1,
       [](GpuSpec& g, const json& v) { g.memory_bound_efficiency = v.get<double>(); }},
      {"elementwise_efficiency", F::kNumber, 0.01, 1,
       [](GpuSpec& g, const json& v) { g.elementwise_efficiency = v.get<double>(); }},
      {"timing_jitter_us", F::kNumber, 0, 1e6,
       [](GpuSpec& g, const json& v) { g.timing_jitter_ns = v.get<double>() * 1e3; }},
  };
  return fields;
}

const std::vector<Field<NodeSpec>>& NodeFields() {
  using F = Field<NodeSpec>;
  static const std::vector<F> fields = {
      {"gpus_per_node", F::kInteger, 1, 1024,
       [](NodeSpec& n, const json& v) { n.gpus_per_node = v.get<int>(); }},
      {"nvlink_domain", F::kInteger, 1, 1 << 20,
       [](NodeSpec& n, const json& v) { n.nvlink_domain = v.get<int>(); }},
      {"nics_per_node", F::kInteger, 1, 1024,
       [](NodeSpec& n, const json& v) { n.nics_per_node = v.get<int>(); }},
      {"nic_gbit_per_s", F::kNumber, 1e-3, 1e5,
       [](NodeSpec& n, const json& v) { n.nic_gbit_per_s = v.get<double>(); }},
      {"nic_efficiency", F::kNumber, 0.01, 1,
       [](NodeSpec& n, const json& v) { n.nic_efficiency = v.get<double>(); }},
  };
  return fields;
}

Result<GpuArch> ParseArch(const json& v, const std::string& where) {
  const std::string s = v.is_string() ? v.get<std::string>() : "";
  for (GpuArch a : {GpuArch::kAmpere, GpuArch::kHopper, GpuArch::kBlackwell, GpuArch::kCdna3}) {
    if (s == GpuArchName(a)) return a;
  }
  return InvalidInput(where + ": expected one of ampere, hopper, blackwell, cdna3");
}

struct CatalogEntry {
  GpuSpec gpu;
  NodeSpec node;
};

// Parses the embedded catalog; an error here is a bug in catalog.json (tests parse it).
Result<std::vector<CatalogEntry>> ParseCatalog() {
  json root = json::parse(kEmbeddedCatalogJson, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.contains("gpus") || !root["gpus"].is_array()) {
    return RuntimeError("embedded catalog.json: not valid JSON with a \"gpus\" array");
  }
  std::vector<CatalogEntry> out;
  for (size_t i = 0; i < root["gpus"].size(); ++i) {
    json entry = root["gpus"][i];
    const std::string where = fmt::format("catalog.json: gpus[{}]", i);
    if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string()) {
      return RuntimeError(where + ": expected an object with a \"name\"");
    }
    CatalogEntry e;
    e.gpu.name = entry["name"].get<std::string>();
    e.gpu.description = entry.value("description", e.gpu.name);
    e.gpu.validated_by = entry.value("validated_by", std::string());
    Result<GpuArch> arch = ParseArch(entry.value("arch", json()), where + ".arch");
    if (!arch.ok()) return RuntimeError(arch.status().message());
    e.gpu.arch = *arch;
    json node = entry.value("node", json::object());
    for (const char* key : {"name", "description", "validated_by", "arch", "node", "notes"})
      entry.erase(key);
    Status s = ApplyGpuFields(entry, where, &e.gpu);
    if (s.ok() && e.gpu.sm_count <= 0) s = InvalidInput(where + ".sm_count: required");
    if (s.ok()) s = ApplyNodeFields(node, where + ".node", &e.node);
    if (s.ok() && e.node.nvlink_domain > e.node.gpus_per_node &&
        e.node.nvlink_domain % e.node.gpus_per_node != 0) {
      s = InvalidInput(where +
                       ".node.nvlink_domain: a domain larger than a node must be a whole "
                       "number of nodes");
    }
    if (!s.ok()) return RuntimeError(s.message());
    out.push_back(std::move(e));
  }
  return out;
}

const Result<std::vector<CatalogEntry>>& Catalog() {
  static const Result<std::vector<CatalogEntry>> catalog = ParseCatalog();
  return catalog;
}

}  // namespace

std::string_view GpuArchName(GpuArch arch) {
  switch (arch) {
    case GpuArch::kAmpere:
      return "ampere";
    case GpuArch::kHopper:
      return "hopper";
    case GpuArch::kBlackwell:
      return "blackwell";
    case GpuArch::kCdna3:
      return "cdna3";
  }
  return "unknown";
}

double Hardware::NicGbpsPerGpu() const {
  if (node.gpus_per_node <= 0) return 0;
  return node.nics_per_node * node.nic_gbit_per_s / 8.0 * node.nic_efficiency / node.gpus_per_node;
}

Status ApplyGpuFields(const json& j, std::string_view where, GpuSpec* gpu) {
  return ApplyFields(GpuFields(), j, where, gpu);
}

Status ApplyNodeFields(const json& j, std::string_view where, NodeSpec* node) {
  return ApplyFields(NodeFields(), j, where, node);
}

std::vector<std::string> GpuFieldNames() {
  std::vector<std::string> out;
  for (const auto& f : GpuFields()) out.push_back(f.key);
  return out;
}

std::vector<std::string> NodeFieldNames() {
  std::vector<std::string> out;
  for (const auto& f : NodeFields()) out.push_back(f.key);
  return out;
}

std::string_view CatalogJson() { return kEmbeddedCatalogJson; }

std::vector<std::string> CatalogGpuNames() {
  std::vector<std::string> out;
  if (!Catalog().ok()) return out;
  for (const CatalogEntry& e : *Catalog()) out.push_back(e.gpu.name);
  return out;
}

Result<Hardware> LookupHardware(std::string_view gpu_name, int gpus_per_node, int nodes) {
  if (!Catalog().ok()) return Catalog().status();
  const CatalogEntry* found = nullptr;
  // Case-insensitive ("H200", "H100-SXM"): the catalog's names differ in nothing but case
  // from how vendors write them, and the Hardware keeps the catalog's spelling.
  auto same = [](std::string_view x, std::string_view y) {
    return x.size() == y.size() && std::equal(x.begin(), x.end(), y.begin(), [](char p, char q) {
             return AsciiLower(p) == AsciiLower(q);
           });
  };
  for (const CatalogEntry& e : *Catalog()) {
    if (same(e.gpu.name, gpu_name)) found = &e;
  }
  if (found == nullptr) {
    const std::vector<std::string> names = CatalogGpuNames();
    return InvalidInput(fmt::format("unknown GPU '{}'{}; the catalog has: {}", gpu_name,
                                    DidYouMean(gpu_name, names), fmt::join(names, ", ")));
  }
  if (gpus_per_node < 1 || gpus_per_node > found->node.gpus_per_node) {
    return InvalidInput(
        fmt::format("gpus_per_node {} for {}: expected 1..{} (the catalog node size)",
                    gpus_per_node, found->gpu.name, found->node.gpus_per_node));
  }
  if (nodes < 1) return InvalidInput(fmt::format("nodes {}: expected at least 1", nodes));
  Hardware hw;
  hw.gpu = found->gpu;
  hw.node = found->node;
  // A partly used node keeps each used GPU's own NIC share (NICs are per GPU on these nodes).
  const double nics_per_gpu = static_cast<double>(hw.node.nics_per_node) / hw.node.gpus_per_node;
  hw.node.gpus_per_node = gpus_per_node;
  // A domain within the node shrinks with it; one spanning several nodes (GB200 NVL72: 18
  // trays of 4) keeps its node count, each node contributing the GPUs it uses.
  const int catalog_gpus = found->node.gpus_per_node;
  hw.node.nvlink_domain = found->node.nvlink_domain > catalog_gpus
                              ? found->node.nvlink_domain / catalog_gpus * gpus_per_node
                              : std::min(found->node.nvlink_domain, gpus_per_node);
  hw.node.nics_per_node = static_cast<int>(std::lround(nics_per_gpu * gpus_per_node));
  hw.nodes = nodes;
  return hw;
}

}  // namespace shardscope

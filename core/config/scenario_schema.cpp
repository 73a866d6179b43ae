#include "core/config/scenario_schema.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/util/did_you_mean.h"

namespace shardscope {
namespace {

using nlohmann::json;

std::vector<SchemaKey> BuildSchema() {
  // Defaults are formats.md §1's example values; pp_microbatches null means "= pp",
  // dp_replicate null "derived from the world size" (formats.md §1).
  return {
      {"description", KeyType::kNullableString, nullptr},
      {"model", KeyType::kModel, nullptr},
      // Checked by CheckModel beside the model's source key; the default applies in
      // scenario.cpp (the model has no default to hang it on).
      {"model.implementation", KeyType::kString, "transformers"},
      {"cluster", KeyType::kSection, nullptr},
      {"cluster.gpu", KeyType::kString, "h100-sxm"},
      {"cluster.nodes", KeyType::kInt, 1},
      {"cluster.gpus_per_node", KeyType::kInt, 8},
      {"cluster.cost_model", KeyType::kNullableString, nullptr},
      {"parallelism", KeyType::kSection, nullptr},
      {"parallelism.dp_shard", KeyType::kInt, -1},
      {"parallelism.dp_replicate", KeyType::kNullableInt, nullptr},
      {"parallelism.tp", KeyType::kInt, 1},
      {"parallelism.cp", KeyType::kInt, 1},
      {"parallelism.pp", KeyType::kInt, 1},
      {"parallelism.ep", KeyType::kInt, 1},
      {"parallelism.edp_shard", KeyType::kInt, 1},
      {"parallelism.loss_parallel", KeyType::kBool, false},
      {"parallelism.sequence_parallel", KeyType::kBool, true},
      {"parallelism.pp_schedule", KeyType::kString, "1f1b"},
      {"parallelism.pp_microbatches", KeyType::kNullableInt, nullptr},
      {"parallelism.pp_virtual_stages", KeyType::kInt, 1},
      {"fsdp", KeyType::kSection, nullptr},
      {"fsdp.replicate_params", KeyType::kStringList, json::array()},
      {"fsdp.mix_precision", KeyType::kSection, nullptr},
      {"fsdp.mix_precision.param_dtype", KeyType::kNullableString, "bfloat16"},
      {"fsdp.mix_precision.reduce_dtype", KeyType::kNullableString, "float32"},
      {"fsdp.mix_precision.output_dtype", KeyType::kNullableString, nullptr},
      {"fsdp.mix_precision.cast_forward_inputs", KeyType::kBool, true},
      {"fsdp.enable_offload", KeyType::kBool, false},
      {"fsdp.reshard_after_forward", KeyType::kBoolOrInt, true},
      {"fsdp.reshard_after_backward", KeyType::kBool, true},
      {"fsdp.requires_grad_sync", KeyType::kBool, true},
      {"fsdp.forward_prefetch_depth", KeyType::kInt, 1},
      {"fsdp.backward_prefetch_depth", KeyType::kInt, 1},
      {"fsdp.comm_fusion", KeyType::kBool, false},
      {"fsdp.comm_fusion_zero_copy", KeyType::kNullableBool, nullptr},
      {"fsdp.fp32_main_params", KeyType::kBool, false},
      {"fsdp.ignored_params", KeyType::kStringList, json::array()},
      {"training", KeyType::kSection, nullptr},
      {"training.local_batch", KeyType::kInt, 2},
      {"training.seq_len", KeyType::kInt, 8192},
      {"training.grad_accum", KeyType::kInt, 1},
      {"training.activation_checkpoint", KeyType::kString, "selective_op"},
      {"training.optimizer", KeyType::kString, "adamw"},
      {"training.attention_backend", KeyType::kString, "flash"},
      {"training.expandable_segments", KeyType::kBool, false},
      {"adapter", KeyType::kSection, nullptr},
      {"adapter.fsdp_wrap_modules", KeyType::kStringList, json::array()},
      {"adapter.fsdp_excluded_subtrees", KeyType::kStringList, json::array()},
      {"adapter.fsdp_execution_order", KeyType::kStringList, json::array()},
  };
}

std::string_view Parent(std::string_view path) {
  const size_t dot = path.rfind('.');
  return dot == std::string_view::npos ? std::string_view() : path.substr(0, dot);
}

std::string_view Leaf(std::string_view path) {
  const size_t dot = path.rfind('.');
  return dot == std::string_view::npos ? path : path.substr(dot + 1);
}

std::string_view JsonTypeText(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "boolean";
  if (v.is_number_integer() || v.is_number_unsigned()) return "integer";
  if (v.is_number()) return "number";
  if (v.is_string()) return "string";
  if (v.is_array()) return "array";
  return "object";
}

bool Matches(KeyType type, const json& v) {
  const bool is_int = v.is_number_integer() || v.is_number_unsigned();
  switch (type) {
    case KeyType::kSection:
      return v.is_object();
    case KeyType::kInt:
      return is_int;
    case KeyType::kBool:
      return v.is_boolean();
    case KeyType::kString:
      return v.is_string();
    case KeyType::kNullableString:
      return v.is_string() || v.is_null();
    case KeyType::kNullableBool:
      return v.is_boolean() || v.is_null();
    case KeyType::kNullableInt:
      return is_int || v.is_null();
    case KeyType::kBoolOrInt:
      return is_int || v.is_boolean();
    case KeyType::kStringList:
      if (!v.is_array()) return false;
      return std::all_of(v.begin(), v.end(), [](const json& e) { return e.is_string(); });
    case KeyType::kModel:
      return v.is_string() || v.is_object();
  }
  return false;
}

Status CheckModel(const json& v) {
  if (!Matches(KeyType::kModel, v)) {
    return InvalidInput(fmt::format(
        "model: expected a built-in name or an object {{\"hf_config\"|\"module_tree\": path}} "
        "or {{\"hf\": {{...}}}}, got {}",
        JsonTypeText(v)));
  }
  if (v.is_string()) {
    if (v.get<std::string>().empty()) return InvalidInput("model: the model name is empty");
    return Status::Ok();
  }
  static const std::vector<std::string> kKeys = {"hf_config", "module_tree", "hf", "builtin"};
  // Beside its one source key the object may name the implementation (model.implementation).
  const bool has_impl = v.contains("implementation");
  if (has_impl && !v["implementation"].is_string()) {
    return InvalidInput(
        fmt::format("model.implementation: expected a string (transformers or torchtitan), got {}",
                    JsonTypeText(v["implementation"])));
  }
  if (v.size() != (has_impl ? 2u : 1u)) {
    return InvalidInput(fmt::format(
        "model: expected exactly one of hf_config, module_tree, hf, builtin (and optionally "
        "implementation); got {} keys",
        v.size()));
  }
  auto source = v.begin();
  if (source.key() == "implementation") ++source;
  const std::string& key = source.key();
  if (std::find(kKeys.begin(), kKeys.end(), key) == kKeys.end()) {
    std::string best = kKeys.front();
    for (const std::string& k : kKeys) {
      if (EditDistance(key, k) < EditDistance(key, best)) best = k;
    }
    return InvalidInput(fmt::format("model.{}: unknown key (did you mean model.{}?)", key, best));
  }
  const json& value = source.value();
  if (key == "hf") {
    if (!value.is_object()) {
      return InvalidInput(fmt::format("model.hf: expected an object (an inline HF config), got {}",
                                      JsonTypeText(value)));
    }
  } else if (!value.is_string() || value.get<std::string>().empty()) {
    return InvalidInput(fmt::format("model.{}: expected a non-empty {} string, got {}", key,
                                    key == "builtin" ? "model name" : "path", JsonTypeText(value)));
  }
  return Status::Ok();
}

Status CheckSection(const json& obj, const std::string& prefix) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const std::string path = prefix.empty() ? it.key() : prefix + "." + it.key();
    const SchemaKey* key = FindSchemaKey(path);
    if (key == nullptr) {
      return InvalidInput(
          fmt::format("{}: unknown key (did you mean {}?)", path, SuggestKey(path)));
    }
    if (key->type == KeyType::kModel) {
      SS_RETURN_IF_ERROR(CheckModel(it.value()));
      continue;
    }
    if (!Matches(key->type, it.value())) {
      return InvalidInput(fmt::format("{}: expected {}, got {}", path, KeyTypeText(key->type),
                                      JsonTypeText(it.value())));
    }
    if (key->type == KeyType::kSection) SS_RETURN_IF_ERROR(CheckSection(it.value(), path));
  }
  return Status::Ok();
}

}  // namespace

const std::vector<SchemaKey>& ScenarioSchema() {
  static const std::vector<SchemaKey> schema = BuildSchema();
  return schema;
}

const SchemaKey* FindSchemaKey(std::string_view path) {
  for (const SchemaKey& k : ScenarioSchema()) {
    if (k.path == path) return &k;
  }
  return nullptr;
}

std::string SuggestKey(std::string_view path) {
  // Siblings compare by leaf name; a key with the same leaf in another section (a key put in
  // the wrong section) costs 1.
  const std::string_view parent = Parent(path);
  const std::string_view leaf = Leaf(path);
  std::string best;
  size_t best_cost = static_cast<size_t>(-1);
  for (const SchemaKey& k : ScenarioSchema()) {
    size_t cost;
    if (Parent(k.path) == parent) {
      cost = EditDistance(leaf, Leaf(k.path));
    } else if (Leaf(k.path) == leaf) {
      cost = 1;
    } else {
      cost = EditDistance(path, k.path) + 2;
    }
    if (cost < best_cost) {
      best_cost = cost;
      best = k.path;
    }
  }
  return best;
}

std::string_view KeyTypeText(KeyType type) {
  switch (type) {
    case KeyType::kSection:
      return "an object";
    case KeyType::kInt:
      return "an integer";
    case KeyType::kBool:
      return "a boolean";
    case KeyType::kString:
      return "a string";
    case KeyType::kNullableString:
      return "a string or null";
    case KeyType::kNullableBool:
      return "a boolean or null";
    case KeyType::kNullableInt:
      return "an integer or null";
    case KeyType::kBoolOrInt:
      return "a boolean or an integer";
    case KeyType::kStringList:
      return "an array of strings";
    case KeyType::kModel:
      return "a model name or object";
  }
  return "?";
}

Status CheckAgainstSchema(const json& doc) {
  if (!doc.is_object()) {
    return InvalidInput(
        fmt::format("expected a JSON object at the top level, got {}", JsonTypeText(doc)));
  }
  return CheckSection(doc, "");
}

json ScenarioDefaults() {
  json out = json::object();
  for (const SchemaKey& k : ScenarioSchema()) {
    if (k.type == KeyType::kModel || k.path == "description" || k.path == "model.implementation")
      continue;
    json::json_pointer ptr("/" + [&] {
      std::string p = k.path;
      std::replace(p.begin(), p.end(), '.', '/');
      return p;
    }());
    out[ptr] = k.type == KeyType::kSection ? json::object() : k.default_value;
  }
  return out;
}

}  // namespace shardscope

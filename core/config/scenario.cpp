#include "core/config/scenario.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <string_view>
#include <unordered_map>

#include "core/config/scenario_schema.h"
#include "core/model/unknown_model.h"
#include "core/util/checked_math.h"
#include "core/util/file_io.h"
#include "core/util/json_guard.h"

namespace shardscope {
namespace {

using nlohmann::json;

// Defaults under `doc`: values in `doc` win; sections merge key by key.
void MergeInto(json& base, const json& doc) {
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (it.value().is_object() && base.contains(it.key()) && base[it.key()].is_object() &&
        it.key() != "model") {
      MergeInto(base[it.key()], it.value());
    } else {
      base[it.key()] = it.value();
    }
  }
}

std::string ResolvePath(const std::string& base_dir, const std::string& path) {
  std::filesystem::path p(path);
  if (p.is_absolute() || base_dir.empty()) return p.lexically_normal().string();
  return (std::filesystem::path(base_dir) / p).lexically_normal().string();
}

std::string AbsolutePath(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::absolute(path, ec);
  return ec ? path : abs.lexically_normal().string();
}

// Upper bounds on what a scenario may ask for. Each is far beyond any real run, and together
// they keep every product the planner, the schedule and the cost model form from them (tokens
// per microbatch times hidden size times layers, world size times bytes, ops per step) inside
// int64 and inside seconds and a few GiB of work (issue 15).
constexpr int64_t kMaxWorldSize = int64_t{1} << 24;
constexpr int64_t kMaxSeqLen = int64_t{1} << 24;
constexpr int64_t kMaxLocalBatch = int64_t{1} << 16;
constexpr int64_t kMaxTokensPerMicrobatch = int64_t{1} << 27;
constexpr int64_t kMaxMicrobatches = 1024;  // grad_accum, pp_microbatches and their product
constexpr int64_t kMaxPrefetchDepth = 1024;
constexpr int64_t kMaxVirtualStages = 1024;

// The integer at `key`, read as int64 without wrapping: 18446744073709551615 is out of range,
// not -1.
Result<int64_t> IntegerAt(const json& section, const char* section_name, const char* key) {
  const json& v = section.at(key);
  if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{INT64_MAX}) {
    return InvalidInput(fmt::format("{}.{} = {} is outside the 64-bit integer range", section_name,
                                    key, v.get<uint64_t>()));
  }
  return v.get<int64_t>();
}

// Errors: "training.seq_len = 2147483647 (expected 1 to 16777216)".
Status InRange(const json& section, const char* section_name, const char* key, int64_t minimum,
               int64_t maximum) {
  SS_ASSIGN_OR_RETURN(const int64_t v, IntegerAt(section, section_name, key));
  if (v < minimum || v > maximum) {
    return InvalidInput(
        fmt::format("{}.{} = {} (expected {} to {})", section_name, key, v, minimum, maximum));
  }
  return Status::Ok();
}

Status AtLeast(const json& section, const char* section_name, const char* key, int64_t minimum) {
  return InRange(section, section_name, key, minimum, kMaxWorldSize);
}

Result<ModelSource> ParseModel(const json& m, const std::string& base_dir) {
  ModelSource src;
  if (m.is_object() && m.contains("implementation")) {
    SS_ASSIGN_OR_RETURN(
        src.implementation,
        ParseImplementation(m["implementation"].get<std::string>(), "model.implementation"));
  }
  auto source = m.is_object() ? m.begin() : m.end();
  if (m.is_object() && source.key() == "implementation") ++source;
  if (m.is_string() || source.key() == "builtin") {
    src.kind = ModelSource::Kind::kBuiltin;
    src.name_or_path = m.is_string() ? m.get<std::string>() : source.value().get<std::string>();
    // Checked here, not only when the model is built, so the error names the scenario file.
    const std::vector<std::string> names = BuiltinModelNames();
    if (std::find(names.begin(), names.end(), src.name_or_path) == names.end()) {
      return UnknownBuiltinModel(src.name_or_path);
    }
    return src;
  }
  const std::string& key = source.key();
  if (key == "hf") {
    src.kind = ModelSource::Kind::kHfInline;
    src.inline_config = source.value();
    return src;
  }
  src.kind =
      key == "hf_config" ? ModelSource::Kind::kHfConfigFile : ModelSource::Kind::kModuleTreeFile;
  src.name_or_path = ResolvePath(base_dir, source.value().get<std::string>());
  return src;
}

Result<std::optional<DType>> OptionalDType(const json& v, const char* field) {
  if (v.is_null()) return std::optional<DType>();
  SS_ASSIGN_OR_RETURN(DType d, ParseMixPrecisionDType(v.get<std::string>(), field));
  return std::optional<DType>(d);
}

// Resolves dp_shard and dp_replicate against the world size (formats.md §1): dp_shard = -1
// fills the world; dp_replicate omitted is W / (dp_shard·tp·cp·pp), planning.md §1.2's
// dp·cp / dp_shard in the planner's terms (its dp_shard is the scenario's dp_shard·cp).
Status ResolveDataParallel(json& p, const ClusterConfig& cluster, ParallelismConfig& par) {
  const int world = cluster.world_size();
  // Each degree is at most kMaxWorldSize, so their product may not fit in 64 bits.
  const std::optional<int64_t> model_parallel_or = CheckedProduct({par.tp, par.cp, par.pp});
  if (!model_parallel_or || *model_parallel_or > world) {
    return InvalidInput(fmt::format(
        "parallelism: tp·cp·pp = {}·{}·{} is more than the world size {} (nodes·gpus_per_node)",
        par.tp, par.cp, par.pp, world));
  }
  const int64_t model_parallel = *model_parallel_or;
  const bool replicate_given = !p["dp_replicate"].is_null();
  if (replicate_given) {
    SS_RETURN_IF_ERROR(AtLeast(p, "parallelism", "dp_replicate", 1));
    if (int64_t{p["dp_replicate"].get<int>()} * model_parallel > world) {
      return InvalidInput(fmt::format(
          "parallelism.dp_replicate = {}: dp_replicate·tp·cp·pp = {} is more than the world "
          "size {} (nodes·gpus_per_node)",
          p["dp_replicate"].get<int>(), p["dp_replicate"].get<int>() * model_parallel, world));
    }
  }
  par.dp_replicate = replicate_given ? p["dp_replicate"].get<int>() : 1;
  SS_ASSIGN_OR_RETURN(const int64_t dp_shard, IntegerAt(p, "parallelism", "dp_shard"));
  if (dp_shard == -1) {
    const int64_t others = int64_t{par.dp_replicate} * model_parallel;
    if (world % others != 0) {
      return InvalidInput(fmt::format(
          "parallelism.dp_shard = -1: world size {} (nodes·gpus_per_node) is not divisible by "
          "dp_replicate·tp·cp·pp = {}·{}·{}·{} = {}",
          world, par.dp_replicate, par.tp, par.cp, par.pp, others));
    }
    par.dp_shard = static_cast<int>(world / others);
    p["dp_shard"] = par.dp_shard;
  } else {
    SS_RETURN_IF_ERROR(AtLeast(p, "parallelism", "dp_shard", 1));
    par.dp_shard = static_cast<int>(dp_shard);
    if (int64_t{par.dp_shard} * par.dp_replicate * model_parallel > kMaxWorldSize * kMaxWorldSize) {
      return InvalidInput(fmt::format("parallelism.dp_shard = {} is more than the world size {}",
                                      par.dp_shard, world));
    }
    if (!replicate_given) {
      const int64_t shard_domain = int64_t{par.dp_shard} * model_parallel;
      if (world % shard_domain != 0) {
        return InvalidInput(fmt::format(
            "parallelism.dp_shard = {}: world size {} (nodes·gpus_per_node) is not divisible "
            "by dp_shard·tp·cp·pp = {}·{}·{}·{} = {}, so parallelism.dp_replicate (omitted) "
            "cannot be derived",
            par.dp_shard, world, par.dp_shard, par.tp, par.cp, par.pp, shard_domain));
      }
      par.dp_replicate = static_cast<int>(world / shard_domain);
    }
  }
  p["dp_replicate"] = par.dp_replicate;
  const int64_t product = int64_t{par.dp_replicate} * par.dp_shard * model_parallel;
  if (product != world) {
    return InvalidInput(fmt::format(
        "parallelism.dp_replicate = {} and parallelism.dp_shard = {} do not fit the world "
        "size: dp_replicate·dp_shard·tp·cp·pp = {}·{}·{}·{}·{} = {} but nodes·gpus_per_node = "
        "{}·{} = {}",
        par.dp_replicate, par.dp_shard, par.dp_replicate, par.dp_shard, par.tp, par.cp, par.pp,
        product, cluster.nodes, cluster.gpus_per_node, world));
  }
  return Status::Ok();
}

Status FillParallelism(json& p, const ClusterConfig& cluster, Scenario& s) {
  for (const char* key : {"tp", "cp", "pp", "ep"}) {
    SS_RETURN_IF_ERROR(InRange(p, "parallelism", key, 1, cluster.world_size()));
  }
  SS_RETURN_IF_ERROR(InRange(p, "parallelism", "pp_virtual_stages", 1, kMaxVirtualStages));
  ParallelismConfig& par = s.parallelism;
  par.tp = p["tp"].get<int>();
  par.cp = p["cp"].get<int>();
  par.pp = p["pp"].get<int>();
  par.ep = p["ep"].get<int>();
  par.pp_virtual_stages = p["pp_virtual_stages"].get<int>();
  par.loss_parallel = p["loss_parallel"].get<bool>();
  par.sequence_parallel = p["sequence_parallel"].get<bool>();
  SS_RETURN_IF_ERROR(ResolveDataParallel(p, cluster, par));
  SS_ASSIGN_OR_RETURN(const int64_t edp_shard, IntegerAt(p, "parallelism", "edp_shard"));
  if (edp_shard == -1) {
    // Fill the expert data-parallel domain: edp = dp·cp·tp / ep (checked below).
    const int64_t dp_cp_tp = int64_t{par.dp_replicate} * par.dp_shard * par.cp * par.tp;
    par.edp_shard = par.ep > 1 && dp_cp_tp % par.ep == 0 ? static_cast<int>(dp_cp_tp / par.ep) : 1;
    p["edp_shard"] = par.edp_shard;
  } else {
    SS_RETURN_IF_ERROR(AtLeast(p, "parallelism", "edp_shard", 1));
    // Without ep there is no expert mesh: the value would be dropped without a word, and
    // experts shard over dp_shard like every other parameter.
    if (edp_shard > 1 && par.ep == 1) {
      return InvalidInput(fmt::format(
          "parallelism.edp_shard = {}: the expert shard size applies only with expert "
          "parallelism (parallelism.ep > 1, and a model with routed experts); with ep = 1 "
          "experts shard over parallelism.dp_shard",
          edp_shard));
    }
    par.edp_shard = static_cast<int>(edp_shard);
  }
  const std::string sched = p["pp_schedule"].get<std::string>();
  if (sched == "1f1b") {
    par.pp_schedule = PpSchedule::k1F1B;
  } else if (sched == "interleaved_1f1b") {
    par.pp_schedule = PpSchedule::kInterleaved1F1B;
  } else if (sched == "gpipe") {
    par.pp_schedule = PpSchedule::kGPipe;
  } else {
    return InvalidInput(fmt::format(
        "parallelism.pp_schedule: unknown schedule '{}' (expected 1f1b, interleaved_1f1b or gpipe)",
        sched));
  }
  if (p["pp_microbatches"].is_null()) p["pp_microbatches"] = par.pp;
  SS_RETURN_IF_ERROR(InRange(p, "parallelism", "pp_microbatches", 1, kMaxMicrobatches));
  par.pp_microbatches = p["pp_microbatches"].get<int>();
  // torch.distributed.pipelining's single-stage schedules (Schedule1F1B, ScheduleGPipe: a
  // PipelineScheduleSingle) raise ValueError for fewer micro-batches than stages; a prediction
  // of such a job would be of one that cannot be launched.
  if (par.pp > 1 && par.pp_schedule != PpSchedule::kInterleaved1F1B &&
      par.pp_microbatches < par.pp) {
    return InvalidInput(fmt::format(
        "parallelism.pp_microbatches = {}: fewer than the {} pipeline stages (parallelism.pp); "
        "PyTorch's {} schedule needs at least one micro-batch per stage (expected {} or more)",
        par.pp_microbatches, par.pp, sched, par.pp));
  }
  return Status::Ok();
}

Status FillFsdp(const json& f, Scenario& s) {
  FsdpConfig& c = s.fsdp;
  c.dp_shard_size = s.parallelism.dp_shard * s.parallelism.cp;
  c.edp_shard_size = s.parallelism.edp_shard;
  c.replicate_params = f["replicate_params"].get<std::vector<std::string>>();
  c.ignored_params = f["ignored_params"].get<std::vector<std::string>>();
  // A name listed twice would be counted twice by whoever sums the list.
  for (const auto& [key, names] : {std::pair<const char*, const std::vector<std::string>*>{
                                       "replicate_params", &c.replicate_params},
                                   {"ignored_params", &c.ignored_params}}) {
    std::unordered_map<std::string_view, size_t> first;
    for (size_t i = 0; i < names->size(); ++i) {
      if (const auto [it, fresh] = first.emplace((*names)[i], i); !fresh) {
        return InvalidInput(fmt::format("fsdp.{}[{}]: '{}' is already listed at [{}]", key, i,
                                        (*names)[i], it->second));
      }
    }
  }
  const json& mp = f["mix_precision"];
  SS_ASSIGN_OR_RETURN(c.mix_precision.param_dtype,
                      OptionalDType(mp["param_dtype"], "fsdp.mix_precision.param_dtype"));
  SS_ASSIGN_OR_RETURN(c.mix_precision.reduce_dtype,
                      OptionalDType(mp["reduce_dtype"], "fsdp.mix_precision.reduce_dtype"));
  SS_ASSIGN_OR_RETURN(c.mix_precision.output_dtype,
                      OptionalDType(mp["output_dtype"], "fsdp.mix_precision.output_dtype"));
  c.mix_precision.cast_forward_inputs = mp["cast_forward_inputs"].get<bool>();
  c.enable_offload = f["enable_offload"].get<bool>();
  if (const json& raf = f["reshard_after_forward"]; raf.is_boolean()) {
    c.reshard_after_forward = raf.get<bool>();
  } else {
    // FSDP2's int form: the size of the groups to reshard to after forward.
    const int d = raf.get<int>();
    if (d < 1) {
      return InvalidInput(fmt::format(
          "fsdp.reshard_after_forward = {}: expected a boolean or a group size >= 1", d));
    }
    // Said here in the scenario's words; the planner's own check names fsdp_config.
    if (c.dp_shard_size % d != 0) {
      return InvalidInput(fmt::format(
          "fsdp.reshard_after_forward = {}: expected true, false or a group size that divides the "
          "shard group size {} (dp_shard · cp): FSDP2 reshards to groups of that many ranks",
          d, c.dp_shard_size));
    }
    c.reshard_after_forward = true;
    c.reshard_after_forward_ranks = d;
  }
  c.reshard_after_backward = f["reshard_after_backward"].get<bool>();
  c.requires_grad_sync = f["requires_grad_sync"].get<bool>();
  SS_RETURN_IF_ERROR(InRange(f, "fsdp", "forward_prefetch_depth", 0, kMaxPrefetchDepth));
  SS_RETURN_IF_ERROR(InRange(f, "fsdp", "backward_prefetch_depth", 0, kMaxPrefetchDepth));
  c.forward_prefetch_depth = f["forward_prefetch_depth"].get<int>();
  c.backward_prefetch_depth = f["backward_prefetch_depth"].get<int>();
  c.comm_fusion = f["comm_fusion"].get<bool>();
  if (!f["comm_fusion_zero_copy"].is_null()) {
    c.comm_fusion_zero_copy = f["comm_fusion_zero_copy"].get<bool>();
  }
  c.fp32_main_params = f["fp32_main_params"].get<bool>();
  return ValidateFsdpConfig(c);
}

Status FillTraining(const json& t, Scenario& s) {
  SS_RETURN_IF_ERROR(InRange(t, "training", "local_batch", 1, kMaxLocalBatch));
  SS_RETURN_IF_ERROR(InRange(t, "training", "seq_len", 1, kMaxSeqLen));
  SS_RETURN_IF_ERROR(InRange(t, "training", "grad_accum", 1, kMaxMicrobatches));
  s.training.local_batch = t["local_batch"].get<int64_t>();
  s.training.seq_len = t["seq_len"].get<int64_t>();
  s.training.grad_accum = t["grad_accum"].get<int>();
  if (s.training.local_batch * s.training.seq_len > kMaxTokensPerMicrobatch) {
    return InvalidInput(fmt::format(
        "training.local_batch·training.seq_len = {}·{} = {} tokens per microbatch (expected at "
        "most {})",
        s.training.local_batch, s.training.seq_len, s.training.local_batch * s.training.seq_len,
        kMaxTokensPerMicrobatch));
  }
  // Every microbatch is a forward and a backward of every unit in the schedule.
  const int64_t microbatches = int64_t{s.training.grad_accum} * s.parallelism.pp_microbatches;
  if (microbatches > kMaxMicrobatches) {
    return InvalidInput(fmt::format(
        "training.grad_accum·parallelism.pp_microbatches = {}·{} = {} microbatches per step "
        "(expected at most {}; lower either)",
        s.training.grad_accum, s.parallelism.pp_microbatches, microbatches, kMaxMicrobatches));
  }
  // Context parallelism splits the sequence into 2·cp chunks (load-balanced ring attention).
  if (s.parallelism.cp > 1 && s.training.seq_len % (2 * s.parallelism.cp) != 0) {
    return InvalidInput(fmt::format(
        "training.seq_len = {} is not divisible by 2·parallelism.cp = {} (context parallelism "
        "gives each rank two equal chunks of the sequence)",
        s.training.seq_len, 2 * s.parallelism.cp));
  }
  // Sequence parallelism shards each rank's tokens over tp (torchtitan asserts seq_len is a
  // multiple of tp·2·cp): otherwise a rank would hold a fraction of a token.
  if (const ParallelismConfig& p = s.parallelism; p.tp > 1 && p.sequence_parallel) {
    const int64_t divisor = int64_t{p.tp} * (p.cp > 1 ? 2 * p.cp : 1);
    if (s.training.seq_len % divisor != 0) {
      return InvalidInput(fmt::format(
          "training.seq_len = {} is not divisible by {} = {} (sequence parallelism splits each "
          "rank's tokens over the tp ranks; or set parallelism.sequence_parallel to false)",
          s.training.seq_len, p.cp > 1 ? "parallelism.tp·2·parallelism.cp" : "parallelism.tp",
          divisor));
    }
  }
  SS_ASSIGN_OR_RETURN(s.training.activation_checkpoint,
                      ParseActivationCheckpoint(t["activation_checkpoint"].get<std::string>(),
                                                "training.activation_checkpoint"));
  const std::string opt = t["optimizer"].get<std::string>();
  if (opt == "adamw") {
    s.training.optimizer = Optimizer::kAdamW;
  } else if (opt == "adam") {
    s.training.optimizer = Optimizer::kAdam;
  } else if (opt == "sgd") {
    s.training.optimizer = Optimizer::kSgd;
  } else {
    return InvalidInput(fmt::format(
        "training.optimizer: unknown optimizer '{}' (expected adamw, adam or sgd)", opt));
  }
  const std::string attention = t["attention_backend"].get<std::string>();
  if (attention == "flash") {
    s.training.attention_backend = AttentionBackend::kFlash;
  } else if (attention == "cudnn") {
    s.training.attention_backend = AttentionBackend::kCudnn;
  } else {
    return InvalidInput(fmt::format(
        "training.attention_backend: unknown backend '{}' (expected flash or cudnn)", attention));
  }
  s.training.expandable_segments = t["expandable_segments"].get<bool>();
  return Status::Ok();
}

Status FillAdapter(const json& a, Scenario& s) {
  struct List {
    const char* key;
    std::vector<std::string>* out;
  };
  for (const List& l : {List{"fsdp_wrap_modules", &s.adapter.fsdp_wrap_modules},
                        List{"fsdp_excluded_subtrees", &s.adapter.fsdp_excluded_subtrees},
                        List{"fsdp_execution_order", &s.adapter.fsdp_execution_order}}) {
    *l.out = a[l.key].get<std::vector<std::string>>();
    for (size_t i = 0; i < l.out->size(); ++i) {
      if ((*l.out)[i].empty()) {
        return InvalidInput(fmt::format("adapter.{}[{}]: empty module FQN", l.key, i));
      }
    }
  }
  return Status::Ok();
}

Result<Scenario> Resolve(json doc, const std::string& base_dir) {
  SS_RETURN_IF_ERROR(CheckAgainstSchema(doc));
  if (!doc.contains("model")) {
    return InvalidInput(
        "model: missing (expected a built-in name such as \"llama3-8b\", or {\"hf_config\": path}, "
        "{\"module_tree\": path}, {\"hf\": {...}})");
  }
  json r = ScenarioDefaults();
  MergeInto(r, doc);
  Scenario s;
  SS_ASSIGN_OR_RETURN(s.model, ParseModel(r["model"], base_dir));
  // The resolved scenario (what summaries and traces carry, and calibrate reads back) names
  // files by absolute path: one relative to the folder a run started in ("tests/…/config.json")
  // could not be found from another (calibrate of a measured trace from outside the repo).
  if (s.model.kind == ModelSource::Kind::kHfConfigFile) {
    r["model"] = json{{"hf_config", AbsolutePath(s.model.name_or_path)}};
  } else if (s.model.kind == ModelSource::Kind::kModuleTreeFile) {
    r["model"] = json{{"module_tree", AbsolutePath(s.model.name_or_path)}};
  }
  if (r["model"].is_object()) {
    r["model"]["implementation"] = std::string(ImplementationName(s.model.implementation));
  }
  json& cl = r["cluster"];
  SS_RETURN_IF_ERROR(InRange(cl, "cluster", "nodes", 1, kMaxWorldSize));
  SS_RETURN_IF_ERROR(InRange(cl, "cluster", "gpus_per_node", 1, kMaxWorldSize));
  s.cluster.gpu = cl["gpu"].get<std::string>();
  if (s.cluster.gpu.empty()) return InvalidInput("cluster.gpu: empty GPU name");
  s.cluster.nodes = cl["nodes"].get<int>();
  s.cluster.gpus_per_node = cl["gpus_per_node"].get<int>();
  if (int64_t{s.cluster.nodes} * s.cluster.gpus_per_node > (int64_t{1} << 24)) {
    return InvalidInput(fmt::format("cluster: {}·{} GPUs is more than 2^24", s.cluster.nodes,
                                    s.cluster.gpus_per_node));
  }
  if (!cl["cost_model"].is_null()) {
    if (cl["cost_model"].get<std::string>().empty()) {
      return InvalidInput(
          "cluster.cost_model: empty path (expected a calibration JSON file, or "
          "omit the key for the built-in cost model)");
    }
    s.cluster.cost_model = ResolvePath(base_dir, cl["cost_model"].get<std::string>());
    cl["cost_model"] = AbsolutePath(s.cluster.cost_model);
  }
  SS_RETURN_IF_ERROR(FillParallelism(r["parallelism"], s.cluster, s));
  SS_RETURN_IF_ERROR(FillFsdp(r["fsdp"], s));
  SS_RETURN_IF_ERROR(FillTraining(r["training"], s));
  SS_RETURN_IF_ERROR(FillAdapter(r["adapter"], s));
  // Every derived size (dp, dp_replicate, edp, edp_replicate) must divide exactly.
  Result<MeshContext> mesh = BuildMeshContext(ScenarioMeshLayout(s));
  if (!mesh.ok()) return mesh.status().WithContext("parallelism");
  s.resolved = std::move(r);
  return s;
}

}  // namespace

json OverrideValue(std::string_view text) {
  json value = json::parse(text, nullptr, /*allow_exceptions=*/false);
  return value.is_discarded() ? json(std::string(text)) : value;
}

Status ApplyOverride(json& doc, std::string_view assignment) {
  const size_t eq = assignment.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    return InvalidInput(
        fmt::format("--set {}: expected path=value, e.g. training.local_batch=4", assignment));
  }
  const std::string path(assignment.substr(0, eq));
  const std::string text(assignment.substr(eq + 1));
  const bool model_key = path == "model.hf_config" || path == "model.module_tree" ||
                         path == "model.hf" || path == "model.builtin";
  if (FindSchemaKey(path) == nullptr && !model_key && path != "model.implementation") {
    return InvalidInput(
        fmt::format("--set {}: unknown key (did you mean {}?)", path, SuggestKey(path)));
  }
  SS_RETURN_IF_ERROR(CheckJsonText(text, "--set " + path));
  if (json::parse(text, nullptr, /*allow_exceptions=*/false).is_discarded()) {
    SS_RETURN_IF_ERROR(CheckUtf8(text, "--set " + path));
  }
  const json value = OverrideValue(text);
  if (!doc.is_object()) doc = json::object();
  if (model_key) {
    // Another model source replaces the whole model entry (its implementation stays).
    const json old = doc.contains("model") ? doc["model"] : json();
    doc["model"] = json{{path.substr(6), value}};
    if (old.is_object() && old.contains("implementation")) {
      doc["model"]["implementation"] = old["implementation"];
    }
    return Status::Ok();
  }
  if (path == "model.implementation") {
    // A built-in name given as a string becomes {"builtin": name} to carry it.
    json& m = doc["model"];
    if (m.is_string()) m = json{{"builtin", m.get<std::string>()}};
    if (!m.is_object()) m = json::object();
    m["implementation"] = value;
    return Status::Ok();
  }
  json* node = &doc;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? dot : dot - start);
    if (dot == std::string::npos) {
      (*node)[key] = value;
      return Status::Ok();
    }
    json& next = (*node)[key];
    if (next.is_null()) next = json::object();
    if (!next.is_object()) {
      return InvalidInput(
          fmt::format("--set {}: {} is not an object in the scenario", path, path.substr(0, dot)));
    }
    node = &next;
    start = dot + 1;
  }
}

namespace {

// True when `path` occurs in `text` as a whole key path (not inside a longer one).
bool MentionsPath(std::string_view text, std::string_view path) {
  auto key_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
  };
  for (size_t at = text.find(path); at != std::string_view::npos; at = text.find(path, at + 1)) {
    const size_t end = at + path.size();
    if ((at == 0 || !key_char(text[at - 1])) && (end == text.size() || !key_char(text[end]) ||
                                                 (text[end] == '.' && end + 1 == text.size()))) {
      return true;
    }
  }
  return false;
}

// An error about a field the command line set says so: the value came from --set, not the file.
Status NameTheOverride(const Status& status, const std::vector<std::string>& overrides) {
  for (auto it = overrides.rbegin(); it != overrides.rend(); ++it) {
    const std::string_view path = std::string_view(*it).substr(0, it->find('='));
    if (MentionsPath(status.message(), path)) {
      Status named(status.code(), status.message() + " (from --set " + *it + ")");
      for (const SourceFrame& f : status.trail())
        named = std::move(named).WithFrame(f.file, f.line);
      return named;
    }
  }
  return status;
}

}  // namespace

Result<Scenario> ParseScenario(json doc, const std::string& source, const std::string& base_dir,
                               const std::vector<std::string>& overrides) {
  for (const std::string& o : overrides) {
    Status st = ApplyOverride(doc, o);
    if (!st.ok()) return st;
  }
  Result<Scenario> s = Resolve(std::move(doc), base_dir);
  if (!s.ok()) return NameTheOverride(s.status(), overrides).WithContext(source);
  s->source = source;
  // An inline config's errors come when the model is built, away from the scenario: named by
  // it, they say which file holds the config.
  if (s->model.kind == ModelSource::Kind::kHfInline) s->model.name_or_path = source + ": model.hf";
  return s;
}

Result<Scenario> LoadScenario(const std::string& path, const std::vector<std::string>& overrides) {
  SS_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  SS_ASSIGN_OR_RETURN(json doc, ParseJsonInput(text, path));
  const std::string base_dir = std::filesystem::path(path).parent_path().string();
  return ParseScenario(std::move(doc), path, base_dir, overrides);
}

MeshLayout ScenarioMeshLayout(const Scenario& s) {
  MeshLayout l;
  l.world_size = s.cluster.world_size();
  l.tp = s.parallelism.tp;
  l.cp = s.parallelism.cp;
  l.pp = s.parallelism.pp;
  l.ep = s.parallelism.ep;
  l.dp_shard = s.fsdp.dp_shard_size;
  l.edp_shard = s.fsdp.edp_shard_size;
  l.loss_parallel = s.parallelism.loss_parallel;
  return l;
}

const FsdpConfig& ScenarioFsdpConfig(const Scenario& s) { return s.fsdp; }

std::vector<NamedPath> ScenarioInputFiles(const Scenario& sc) {
  std::vector<NamedPath> files;
  if (sc.model.kind == ModelSource::Kind::kHfConfigFile ||
      sc.model.kind == ModelSource::Kind::kModuleTreeFile) {
    files.push_back({"model file", sc.model.name_or_path});
  }
  if (!sc.cluster.cost_model.empty())
    files.push_back({"cluster.cost_model", sc.cluster.cost_model});
  return files;
}

std::string_view PpScheduleName(PpSchedule s) {
  switch (s) {
    case PpSchedule::k1F1B:
      return "1f1b";
    case PpSchedule::kInterleaved1F1B:
      return "interleaved_1f1b";
    case PpSchedule::kGPipe:
      return "gpipe";
  }
  return "?";
}

std::string_view OptimizerName(Optimizer o) {
  switch (o) {
    case Optimizer::kAdamW:
      return "adamw";
    case Optimizer::kAdam:
      return "adam";
    case Optimizer::kSgd:
      return "sgd";
  }
  return "?";
}

std::string_view AttentionBackendName(AttentionBackend b) {
  return b == AttentionBackend::kCudnn ? "cudnn" : "flash";
}

}  // namespace shardscope

// `shardscope model NAME|CONFIG|TREE [--tree FILE] [--json FILE] [--tp N] [--ep N]`: parameter
// counts, layer structure and unit candidates of a model; writes its tree (formats.md §1a)
// and its summary (§1c).
#include <fmt/core.h>

#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/config/model_consistency.h"
#include "core/model/dtype.h"
#include "core/model/model_source.h"
#include "core/model/model_summary.h"
#include "core/model/tree_json.h"
#include "core/util/file_io.h"
#include "core/util/json_guard.h"
#include "core/util/output_files.h"
#include "core/util/units.h"
#include "tools/shardscope/command.h"

namespace shardscope::cli {
namespace {

struct ModelArgs {
  std::string model;
  std::string tree_out;
  std::string json_out;
  int tp = 1;
  int ep = 1;
  std::string param_dtype = "float32";
};

// 8030261248 → "8.03B (8,030,261,248)".
std::string Count(int64_t n) {
  std::string digits = std::to_string(n), grouped;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) grouped += ',';
    grouped += digits[i];
  }
  const double v = static_cast<double>(n);
  std::string short_form;
  if (v >= 1e9) {
    short_form = fmt::format("{:.2f}B", v / 1e9);
  } else if (v >= 1e6) {
    short_form = fmt::format("{:.2f}M", v / 1e6);
  } else {
    return grouped;
  }
  return short_form + " (" + grouped + ")";
}

Status RunModel(const ModelArgs& args) {
  SS_RETURN_IF_ERROR(CheckOutputs({{"--tree", args.tree_out}, {"--json", args.json_out}},
                                  {{"model", args.model}}));
  SS_ASSIGN_OR_RETURN(ModelSource source, ClassifyModelArgument(args.model));
  // A module tree carries its own layouts and dtypes (as exported): these flags would be
  // ignored, and a tree that --tp 3 cannot split would pass here and fail in simulate.
  if (source.kind == ModelSource::Kind::kModuleTreeFile &&
      (args.tp != 1 || args.ep != 1 || args.param_dtype != "float32")) {
    return InvalidInput(fmt::format(
        "{}: a module tree carries its own layouts and dtypes; --tp, --ep and --param-dtype "
        "apply to built-in models and config.json files (a scenario's parallelism.tp is "
        "checked against the tree's layouts by plan and simulate)",
        args.model));
  }
  ModelBuildOptions options;
  options.tp = args.tp;
  options.ep = args.ep;
  // Parameters are trained, so floating point; float8 and float64 are not how a model is made.
  // One message for every value refused (an unknown name listed every dtype, float64 among them,
  // which was then refused too); PyTorch's spellings (bf16, half, torch.bfloat16) are read.
  const Result<DType> dtype = ParseDType(args.param_dtype, "--param-dtype");
  if (dtype.ok()) options.param_dtype = *dtype;
  if (!dtype.ok() ||
      (options.param_dtype != DType::kFloat32 && options.param_dtype != DType::kBFloat16 &&
       options.param_dtype != DType::kFloat16)) {
    return InvalidInput(fmt::format(
        "--param-dtype {}: expected float32, bfloat16 or float16 (the dtype trainable parameters "
        "are created in)",
        args.param_dtype));
  }
  SS_ASSIGN_OR_RETURN(ModelTree tree, LoadModel(source, options));
  // As plan and simulate say for parallelism.ep: an expert mesh over a dense model.
  if (args.ep > 1 && !HasRoutedExperts(tree)) {
    return InvalidInput(fmt::format(
        "--ep {}: {} has no routed experts, so expert parallelism does not apply (expected --ep "
        "1 for a dense model)",
        args.ep, args.model));
  }
  const ModelSummary s = SummarizeModel(tree);

  fmt::print("model            {} ({})\n", s.model_type.empty() ? "?" : s.model_type,
             s.architecture.empty() ? "?" : s.architecture);
  fmt::print("total params     {}{}\n", Count(s.total_params),
             s.tied ? "  (tied tensors counted once)" : "");
  fmt::print("embedding        {}\n", Count(s.embedding_params));
  fmt::print("non-embedding    {}\n", Count(s.total_params - s.embedding_params));
  if (s.routed_expert_params > 0) {
    fmt::print("routed experts   {}\n", Count(s.routed_expert_params));
    fmt::print("active / token   {}\n", Count(s.active_params_per_token));
  }
  fmt::print("param memory     {:.2f} GiB in the tree's dtypes\n", ToGiB(s.param_bytes));
  fmt::print("layers           {}\n", s.blocks.size());
  for (const LayerGroup& g : s.layer_groups) {
    const std::string& first = s.blocks[static_cast<size_t>(g.first)];
    const std::string& last = s.blocks[static_cast<size_t>(g.first + g.count - 1)];
    fmt::print("  {:>3} x {:<28} {} params each   {}{}\n", g.count, g.class_name, Count(g.params),
               first, g.count > 1 ? " .. " + last : "");
  }
  if (s.blocks.empty()) {
    fmt::print(
        "unit candidates  none: no module carries gradient_checkpointing; declare units "
        "with adapter.fsdp_wrap_modules\n");
  } else {
    fmt::print("unit candidates  {} blocks: {} .. {}\n", s.blocks.size(), s.blocks.front(),
               s.blocks.back());
  }
  if (!s.expert_modules.empty()) {
    fmt::print("expert units     {} (with ep > 1): {} .. {}\n", s.expert_modules.size(),
               s.expert_modules.front(), s.expert_modules.back());
  }
  std::vector<std::pair<std::string, std::string>> files;
  if (!args.tree_out.empty())
    files.emplace_back(args.tree_out, DumpJson(ModelTreeToJson(tree), 1) + "\n");
  if (!args.json_out.empty())
    files.emplace_back(args.json_out, DumpJson(ModelSummaryToJson(s), 2) + "\n");
  SS_RETURN_IF_ERROR(WriteFilesAtomic(files));
  if (!args.tree_out.empty()) fmt::print("wrote tree       {}\n", args.tree_out);
  if (!args.json_out.empty()) fmt::print("wrote summary    {}\n", args.json_out);
  return Status::Ok();
}

}  // namespace

void RegisterModelCommand(CLI::App& app, CommandRegistry& registry) {
  auto args = std::make_shared<ModelArgs>();
  std::string names;
  for (const std::string& n : BuiltinModelNames()) names += (names.empty() ? "" : ", ") + n;
  CLI::App* sub =
      app.add_subcommand("model", "parameter counts, layers and FSDP unit candidates of a model");
  sub->add_option("model", args->model,
                  "A built-in name (" + names + "), an HF config.json, or a module tree file")
      ->required();
  sub->add_option("--tree", args->tree_out, "Write the module tree (shardscope-tree/1 JSON)")
      ->check(NonEmptyText());
  sub->add_option("--json", args->json_out, "Write the summary as JSON")->check(NonEmptyText());
  sub->add_option("--tp", args->tp, "Tensor-parallel size: attach the standard TP source layout")
      ->check(CLI::Range(1, 1 << 20));
  sub->add_option("--ep", args->ep, "Expert-parallel size: shard routed experts over ep")
      ->check(CLI::Range(1, 1 << 20));
  sub->add_option("--param-dtype", args->param_dtype,
                  "dtype of the parameters as created (default float32)");
  registry.Add(sub, [args] { return RunModel(*args); });
}

}  // namespace shardscope::cli

#include "core/config/scenario.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace shardscope {
namespace {

using nlohmann::json;

Result<Scenario> Parse(json doc, const std::vector<std::string>& overrides = {}) {
  return ParseScenario(std::move(doc), "job.json", "/jobs", overrides);
}

std::string ErrorOf(json doc, const std::vector<std::string>& overrides = {}) {
  Result<Scenario> s = Parse(std::move(doc), overrides);
  EXPECT_FALSE(s.ok());
  if (s.ok()) return "";
  EXPECT_EQ(s.status().code(), ErrorCode::kInvalidInput);
  return s.status().message();
}

TEST(ScenarioTest, DefaultsFilledAndDpShardFillsTheWorld) {
  Result<Scenario> s = Parse(json{{"model", "llama3-8b"}});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->model.kind, ModelSource::Kind::kBuiltin);
  EXPECT_EQ(s->model.name_or_path, "llama3-8b");
  EXPECT_EQ(s->cluster.world_size(), 8);
  EXPECT_EQ(s->parallelism.dp_shard, 8);
  EXPECT_EQ(s->fsdp.dp_shard_size, 8);
  EXPECT_EQ(s->fsdp.mix_precision.param_dtype, DType::kBFloat16);
  EXPECT_EQ(s->fsdp.mix_precision.reduce_dtype, DType::kFloat32);
  EXPECT_EQ(s->training.local_batch, 2);
  EXPECT_EQ(s->training.activation_checkpoint.mode, CheckpointMode::kSelectiveOp);
  EXPECT_EQ(s->training.optimizer, Optimizer::kAdamW);
  EXPECT_EQ(s->training.attention_backend, AttentionBackend::kFlash);
  EXPECT_FALSE(s->training.expandable_segments);  // PyTorch's default
  EXPECT_EQ(s->parallelism.pp_schedule, PpSchedule::k1F1B);
  EXPECT_EQ(s->parallelism.pp_microbatches, 1);
  EXPECT_TRUE(s->parallelism.sequence_parallel);
  EXPECT_FALSE(s->adapter.declared());
  // The resolved document has every default, sizes resolved.
  EXPECT_EQ(s->resolved["parallelism"]["dp_shard"], 8);
  EXPECT_EQ(s->resolved["parallelism"]["pp_microbatches"], 1);
  EXPECT_EQ(s->resolved["fsdp"]["forward_prefetch_depth"], 1);
  EXPECT_EQ(s->source, "job.json");
}

TEST(ScenarioTest, ResolvedDocumentParsesToItself) {
  json doc = {{"model", "llama3-8b"},
              {"cluster", {{"nodes", 4}}},
              {"parallelism", {{"tp", 2}, {"pp", 2}, {"dp_replicate", 2}}}};
  Result<Scenario> a = Parse(doc);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->parallelism.dp_shard, 4);  // 32 / (dp_replicate·tp·cp·pp = 2·2·1·2)
  Result<Scenario> b = Parse(a->resolved);
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(a->resolved, b->resolved);
}

TEST(ScenarioTest, CpFoldsIntoTheFsdpShardDim) {
  Result<Scenario> s = Parse(json{{"model", "llama3-8b"},
                                  {"cluster", {{"nodes", 2}}},
                                  {"parallelism", {{"dp_replicate", 2}, {"cp", 2}}}});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->parallelism.dp_shard, 4);  // 16 / (2·1·2·1)
  EXPECT_EQ(s->fsdp.dp_shard_size, 8);    // dp_shard·cp
  Result<MeshContext> mesh = BuildMeshContext(ScenarioMeshLayout(*s));
  ASSERT_TRUE(mesh.ok()) << mesh.status().message();
  EXPECT_EQ(mesh->dp_replicate, 2);  // planning's dp_replicate equals the scenario's
  EXPECT_EQ(mesh->dp, 8);
}

TEST(ScenarioTest, OmittedDpReplicateIsDerivedFromTheWorld) {
  // planning.md §1.2: dp_replicate = dp·cp / dp_shard (the planner's dp_shard is dp_shard·cp).
  struct Case {
    int nodes, dp_shard, tp, cp, want_replicate;
  };
  for (const Case& c : {Case{2, 4, 1, 1, 4}, Case{2, 8, 1, 1, 2}, Case{2, 2, 2, 2, 2},
                        Case{1, 8, 1, 1, 1}, Case{4, 8, 2, 1, 2}}) {
    SCOPED_TRACE(fmt::format("nodes {} dp_shard {} tp {} cp {}", c.nodes, c.dp_shard, c.tp, c.cp));
    Result<Scenario> s =
        Parse(json{{"model", "llama3-8b"},
                   {"cluster", {{"nodes", c.nodes}}},
                   {"parallelism", {{"dp_shard", c.dp_shard}, {"tp", c.tp}, {"cp", c.cp}}}});
    ASSERT_TRUE(s.ok()) << s.status().message();
    EXPECT_EQ(s->parallelism.dp_replicate, c.want_replicate);
    EXPECT_EQ(s->resolved["parallelism"]["dp_replicate"], c.want_replicate);
    Result<MeshContext> mesh = BuildMeshContext(ScenarioMeshLayout(*s));
    ASSERT_TRUE(mesh.ok()) << mesh.status().message();
    EXPECT_EQ(mesh->dp_replicate, mesh->dp * c.cp / (c.dp_shard * c.cp));
    EXPECT_EQ(mesh->dp_replicate, c.want_replicate);
  }
  // dp_shard = -1 with dp_replicate omitted fills the world with one replica.
  Result<Scenario> fill = Parse(json{{"model", "llama3-8b"}, {"cluster", {{"nodes", 2}}}});
  ASSERT_TRUE(fill.ok()) << fill.status().message();
  EXPECT_EQ(fill->parallelism.dp_replicate, 1);
  EXPECT_EQ(fill->parallelism.dp_shard, 16);
  EXPECT_EQ(ErrorOf(json{{"model", "llama3-8b"}, {"parallelism", {{"dp_shard", 3}}}}),
            "job.json: parallelism.dp_shard = 3: world size 8 (nodes·gpus_per_node) is not "
            "divisible by dp_shard·tp·cp·pp = 3·1·1·1 = 3, so parallelism.dp_replicate (omitted) "
            "cannot be derived");
}

TEST(ScenarioTest, WorldSizeMismatch) {
  EXPECT_EQ(ErrorOf(json{{"model", "llama3-8b"},
                         {"parallelism", {{"dp_shard", 2}, {"dp_replicate", 1}, {"tp", 2}}}}),
            "job.json: parallelism.dp_replicate = 1 and parallelism.dp_shard = 2 do not fit the "
            "world size: dp_replicate·dp_shard·tp·cp·pp = 1·2·2·1·1 = 4 but nodes·gpus_per_node "
            "= 1·8 = 8");
  EXPECT_EQ(ErrorOf(json{{"model", "llama3-8b"},
                         {"cluster", {{"nodes", 2}}},
                         {"parallelism", {{"dp_shard", 4}, {"dp_replicate", 2}}}}),
            "job.json: parallelism.dp_replicate = 2 and parallelism.dp_shard = 4 do not fit the "
            "world size: dp_replicate·dp_shard·tp·cp·pp = 2·4·1·1·1 = 8 but nodes·gpus_per_node "
            "= 2·8 = 16");
  EXPECT_NE(ErrorOf(json{{"model", "llama3-8b"}, {"parallelism", {{"tp", 3}}}})
                .find("parallelism.dp_shard = -1: world size 8 (nodes·gpus_per_node) is not "
                      "divisible by dp_replicate·tp·cp·pp = 1·3·1·1 = 3"),
            std::string::npos);
  // Expert sizes go through the mesh checks.
  EXPECT_NE(
      ErrorOf(json{{"model", "llama3-8b"}, {"parallelism", {{"ep", 3}}}})
          .find("job.json: parallelism: mesh: dp·cp·tp = 8·1·1 = 8 is not divisible by ep = 3"),
      std::string::npos);
}

TEST(ScenarioTest, UnknownKeysSuggestTheNearest) {
  EXPECT_EQ(ErrorOf(json{{"model", "llama3-8b"}, {"fsdp", {{"forward_prefech_depth", 2}}}}),
            "job.json: fsdp.forward_prefech_depth: unknown key (did you mean "
            "fsdp.forward_prefetch_depth?)");
  EXPECT_EQ(ErrorOf(json{{"model", "llama3-8b"}, {"trainig", json::object()}}),
            "job.json: trainig: unknown key (did you mean training?)");
  EXPECT_EQ(ErrorOf(json{{"model", "llama3-8b"}, {"parallelism", {{"tp", true}}}}),
            "job.json: parallelism.tp: expected an integer, got boolean");
}

TEST(ScenarioTest, ValueErrorsNameTheField) {
  EXPECT_NE(ErrorOf(json{{"model", "llama3-8b"},
                         {"fsdp", {{"mix_precision", {{"param_dtype", "bfloat17"}}}}}})
                .find("fsdp.mix_precision.param_dtype: unknown mixed-precision dtype 'bfloat17'"),
            std::string::npos);
  EXPECT_EQ(ErrorOf(json{{"model", "llama3-8b"}, {"fsdp", {{"forward_prefetch_depth", -1}}}}),
            "job.json: fsdp.forward_prefetch_depth = -1 (expected 0 to 1024)");
  EXPECT_EQ(ErrorOf(json{{"model", "llama3-8b"}, {"parallelism", {{"tp", 0}}}}),
            "job.json: parallelism.tp = 0 (expected 1 to 8)");
  EXPECT_NE(ErrorOf(json{{"model", "llama3-8b"}, {"training", {{"optimizer", "lion"}}}})
                .find("training.optimizer: unknown optimizer 'lion'"),
            std::string::npos);
  EXPECT_NE(
      ErrorOf(json{{"model", "llama3-8b"}, {"training", {{"attention_backend", "fa3"}}}})
          .find("training.attention_backend: unknown backend 'fa3' (expected flash or cudnn)"),
      std::string::npos);
  EXPECT_NE(ErrorOf(json{{"model", "llama3-8b"}, {"training", {{"activation_checkpoint", "some"}}}})
                .find("training.activation_checkpoint"),
            std::string::npos);
  EXPECT_NE(ErrorOf(json{{"model", "llama3-8b"}, {"parallelism", {{"pp_schedule", "zb"}}}})
                .find("parallelism.pp_schedule: unknown schedule 'zb'"),
            std::string::npos);
  EXPECT_NE(ErrorOf(json{{"cluster", {{"nodes", 1}}}}).find("model: missing"), std::string::npos);
  EXPECT_EQ(ErrorOf(json{{"model", "llama3-8b"}, {"training", {{"seq_len", 0}}}}),
            "job.json: training.seq_len = 0 (expected 1 to 16777216)");
}

// Issue 15: absurd sizes are refused with the field and the valid range, never wrapped.
TEST(ScenarioTest, AbsurdSizesNameTheFieldAndRange) {
  const json llama = "llama3-8b";
  EXPECT_EQ(ErrorOf(json{{"model", llama}, {"fsdp", {{"forward_prefetch_depth", 2147483647}}}}),
            "job.json: fsdp.forward_prefetch_depth = 2147483647 (expected 0 to 1024)");
  EXPECT_EQ(ErrorOf(json{{"model", llama}, {"training", {{"seq_len", 2147483647}}}}),
            "job.json: training.seq_len = 2147483647 (expected 1 to 16777216)");
  EXPECT_EQ(ErrorOf(json{{"model", llama}, {"training", {{"local_batch", int64_t{1} << 40}}}}),
            "job.json: training.local_batch = 1099511627776 (expected 1 to 65536)");
  EXPECT_NE(
      ErrorOf(json{{"model", llama}, {"training", {{"local_batch", 65536}, {"seq_len", 8192}}}})
          .find("training.local_batch·training.seq_len = 65536·8192"),
      std::string::npos);
  EXPECT_EQ(ErrorOf(json{{"model", llama}, {"training", {{"grad_accum", 10000}}}}),
            "job.json: training.grad_accum = 10000 (expected 1 to 1024)");
  EXPECT_NE(ErrorOf(json{{"model", llama},
                         {"training", {{"grad_accum", 64}}},
                         {"parallelism", {{"pp_microbatches", 64}}}})
                .find("training.grad_accum·parallelism.pp_microbatches = 64·64 = 4096"),
            std::string::npos);
  EXPECT_EQ(ErrorOf(json{{"model", llama}, {"parallelism", {{"dp_shard", UINT64_MAX}}}}),
            "job.json: parallelism.dp_shard = 18446744073709551615 is outside the 64-bit integer "
            "range");
  EXPECT_EQ(ErrorOf(json{{"model", llama}, {"parallelism", {{"tp", 1 << 20}}}}),
            "job.json: parallelism.tp = 1048576 (expected 1 to 8)");
  EXPECT_NE(ErrorOf(json{{"model", llama},
                         {"cluster", {{"nodes", 1 << 20}, {"gpus_per_node", 16}}},
                         {"parallelism", {{"tp", 1 << 20}, {"cp", 1 << 20}, {"pp", 1 << 20}}}})
                .find("more than"),
            std::string::npos);
  EXPECT_NE(ErrorOf(json{{"model", llama}, {"cluster", {{"cost_model", ""}}}})
                .find("cluster.cost_model: empty path"),
            std::string::npos);
  EXPECT_NE(ErrorOf(json{{"model", llama},
                         {"parallelism", {{"cp", 3}, {"dp_shard", 1}, {"dp_replicate", 1}}},
                         {"cluster", {{"gpus_per_node", 3}}},
                         {"training", {{"seq_len", 8192}}}})
                .find("training.seq_len = 8192 is not divisible by 2·parallelism.cp = 6"),
            std::string::npos);  // PyTorch's 1F1B and GPipe (single-stage schedules) raise for
                                 // fewer micro-batches than stages.
  EXPECT_NE(ErrorOf(json{{"model", llama},
                         {"parallelism", {{"pp", 4}, {"pp_microbatches", 2}}},
                         {"training", {{"local_batch", 2}}}})
                .find("parallelism.pp_microbatches = 2: fewer than the 4 pipeline stages "
                      "(parallelism.pp); PyTorch's 1f1b schedule needs at least one micro-batch "
                      "per stage (expected 4 or more)"),
            std::string::npos);
  EXPECT_NE(
      ErrorOf(json{{"model", llama},
                   {"parallelism", {{"pp", 2}, {"pp_microbatches", 1}, {"pp_schedule", "gpipe"}}}})
          .find("PyTorch's gpipe schedule"),
      std::string::npos);
}

TEST(ScenarioTest, SimulatorKeysAreParsed) {
  Result<Scenario> s = Parse(json{{"model", "llama3-8b"},
                                  {"cluster", {{"cost_model", "calib/h100.json"}, {"nodes", 2}}},
                                  {"parallelism",
                                   {{"pp", 2},
                                    {"pp_schedule", "interleaved_1f1b"},
                                    {"pp_virtual_stages", 2},
                                    {"sequence_parallel", false},
                                    {"tp", 2}}},
                                  {"training",
                                   {{"activation_checkpoint", "selective_layer:2"},
                                    {"optimizer", "sgd"},
                                    {"attention_backend", "cudnn"}}}});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->cluster.cost_model, "/jobs/calib/h100.json");
  EXPECT_EQ(s->parallelism.pp_schedule, PpSchedule::kInterleaved1F1B);
  EXPECT_EQ(s->parallelism.pp_microbatches, 2);  // defaults to pp
  EXPECT_EQ(s->parallelism.pp_virtual_stages, 2);
  EXPECT_FALSE(s->parallelism.sequence_parallel);
  EXPECT_EQ(s->training.activation_checkpoint.mode, CheckpointMode::kSelectiveLayer);
  EXPECT_EQ(s->training.activation_checkpoint.every_k, 2);
  EXPECT_EQ(s->training.optimizer, Optimizer::kSgd);
  EXPECT_EQ(PpScheduleName(s->parallelism.pp_schedule), "interleaved_1f1b");
  EXPECT_EQ(OptimizerName(s->training.optimizer), "sgd");
  EXPECT_EQ(s->training.attention_backend, AttentionBackend::kCudnn);
  EXPECT_EQ(AttentionBackendName(s->training.attention_backend), "cudnn");
}

TEST(ScenarioTest, ReshardAfterForwardTakesABooleanOrFsdp2sInt) {
  Result<Scenario> two = Parse(json{{"model", "llama3-8b"}}, {"fsdp.reshard_after_forward=2"});
  ASSERT_TRUE(two.ok()) << two.status().message();
  EXPECT_TRUE(two->fsdp.reshard_after_forward);
  EXPECT_EQ(two->fsdp.reshard_after_forward_ranks, 2);
  Result<Scenario> plain = Parse(json{{"model", "llama3-8b"}}, {"fsdp.reshard_after_forward=true"});
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->fsdp.reshard_after_forward_ranks, 0);
  // 3 does not divide the 16 ranks of the default job's shard group; 0 is no group size.
  for (const char* bad : {"fsdp.reshard_after_forward=3", "fsdp.reshard_after_forward=0"}) {
    Result<Scenario> s = Parse(json{{"model", "llama3-8b"}}, {bad, "cluster.nodes=2"});
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.status().code(), ErrorCode::kInvalidInput);
    EXPECT_NE(s.status().message().find("reshard_after_forward = "), std::string::npos)
        << s.status().message();
  }
  Result<Scenario> text = Parse(json{{"model", "llama3-8b"}}, {"fsdp.reshard_after_forward=\"2\""});
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.status().message().find("a boolean or an integer"), std::string::npos)
      << text.status().message();
}

TEST(ScenarioTest, SetOverrides) {
  Result<Scenario> s = Parse(
      json{{"model", "llama3-8b"}},
      {"training.local_batch=4", "fsdp.forward_prefetch_depth=2", "parallelism.pp_schedule=gpipe",
       "fsdp.reshard_after_forward=false", "fsdp.mix_precision.param_dtype=null",
       "fsdp.ignored_params=[\"a.b\"]", "cluster.nodes=2"});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->training.local_batch, 4);
  EXPECT_EQ(s->fsdp.forward_prefetch_depth, 2);
  EXPECT_EQ(s->parallelism.pp_schedule, PpSchedule::kGPipe);  // not JSON: taken as a string
  EXPECT_FALSE(s->fsdp.reshard_after_forward);
  EXPECT_FALSE(s->fsdp.mix_precision.param_dtype.has_value());
  EXPECT_EQ(s->fsdp.ignored_params, (std::vector<std::string>{"a.b"}));
  EXPECT_EQ(s->parallelism.dp_shard, 16);
  // Later overrides win; a model path set on the command line resolves like the file's.
  Result<Scenario> t =
      Parse(json{{"model", "llama3-8b"}},
            {"training.seq_len=1024", "training.seq_len=2048", "model.module_tree=trees/t.json"});
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->training.seq_len, 2048);
  EXPECT_EQ(t->model.kind, ModelSource::Kind::kModuleTreeFile);
  EXPECT_EQ(t->model.name_or_path, "/jobs/trees/t.json");
}

TEST(ScenarioTest, SetErrors) {
  EXPECT_EQ(ErrorOf(json{{"model", "llama3-8b"}}, {"training.local_bach=4"}),
            "--set training.local_bach: unknown key (did you mean training.local_batch?)");
  EXPECT_NE(
      ErrorOf(json{{"model", "llama3-8b"}}, {"training.local_batch"}).find("expected path=value"),
      std::string::npos);
  EXPECT_EQ(ErrorOf(json{{"model", "llama3-8b"}}, {"training.local_batch=four"}),
            "job.json: training.local_batch: expected an integer, got string (from --set "
            "training.local_batch=four)");
  // A value that is not JSON is taken as a string, which must be text: the scenario is
  // written back as JSON (summaries, traces), where those bytes cannot go.
  EXPECT_EQ(ErrorOf(json{{"model", "llama3-8b"}}, {"description=h20\xFF"}),
            "--set description: not valid UTF-8 (byte 0xFF at offset 3)");
  EXPECT_EQ(ErrorOf(json{{"model", "llama3-8b"}}, {"description=\"h20\xFF\""}),
            "--set description: not valid UTF-8 (byte 0xFF at offset 4)");
}

TEST(ScenarioTest, LoadResolvesModelPathsAgainstTheFile) {
  const std::filesystem::path dir = std::filesystem::path(testing::TempDir()) / "scenario_test";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "job.json").string();
  {
    std::ofstream f(path);
    f << R"({"model": {"module_tree": "trees/small.json"}, "parallelism": {"tp": 2}})";
  }
  Result<Scenario> s = LoadScenario(path, {"training.grad_accum=2"});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->model.kind, ModelSource::Kind::kModuleTreeFile);
  EXPECT_EQ(s->model.name_or_path, (dir / "trees/small.json").lexically_normal().string());
  EXPECT_EQ(s->resolved["model"]["module_tree"], s->model.name_or_path);
  EXPECT_EQ(s->training.grad_accum, 2);
  EXPECT_EQ(s->parallelism.dp_shard, 4);
  EXPECT_EQ(s->source, path);
  {
    std::ofstream f(path);
    f << R"({"model": "m",)";
  }
  Result<Scenario> bad = LoadScenario(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(path + ": not valid JSON at byte"), std::string::npos)
      << bad.status().message();
  Result<Scenario> missing = LoadScenario((dir / "nope.json").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("nope.json"), std::string::npos);
}

TEST(ScenarioTest, HfInlineAndConfigSources) {
  Result<Scenario> s = Parse(json{{"model", {{"hf", {{"model_type", "llama"}}}}}});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->model.kind, ModelSource::Kind::kHfInline);
  EXPECT_EQ(s->model.inline_config["model_type"], "llama");
  Result<Scenario> c = Parse(json{{"model", {{"hf_config", "/abs/config.json"}}}});
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->model.kind, ModelSource::Kind::kHfConfigFile);
  EXPECT_EQ(c->model.name_or_path, "/abs/config.json");
  // The resolved scenario (summaries and traces carry it; calibrate reads it back from any
  // folder) names files absolutely, also when the scenario's folder was given relatively.
  Result<Scenario> rel = ParseScenario(json{{"model", {{"hf_config", "cfg/config.json"}}},
                                            {"cluster", {{"cost_model", "cal.json"}}}},
                                       "job.json", "jobs");
  ASSERT_TRUE(rel.ok()) << rel.status().message();
  EXPECT_EQ(rel->model.name_or_path, "jobs/cfg/config.json");  // as messages name it
  const std::filesystem::path cwd = std::filesystem::current_path();
  EXPECT_EQ(rel->resolved["model"]["hf_config"], (cwd / "jobs/cfg/config.json").string());
  EXPECT_EQ(rel->resolved["cluster"]["cost_model"], (cwd / "jobs/cal.json").string());
}

// Issue 15: an expert shard size without expert parallelism was dropped without a word.
TEST(ScenarioTest, EdpShardNeedsExpertParallelism) {
  EXPECT_NE(ErrorOf(json{{"model", "llama3-8b"}, {"parallelism", {{"edp_shard", 4}}}})
                .find("parallelism.edp_shard = 4: the expert shard size applies only with expert "
                      "parallelism (parallelism.ep > 1"),
            std::string::npos);
  EXPECT_NE(ErrorOf(json{{"model", "llama3-8b"}}, {"parallelism.edp_shard=2"})
                .find("parallelism.edp_shard = 2"),
            std::string::npos);
  // 1 and -1 (fill) mean "no separate expert sharding" and stay accepted.
  EXPECT_TRUE(Parse(json{{"model", "llama3-8b"}, {"parallelism", {{"edp_shard", 1}}}}).ok());
}

TEST(ScenarioTest, AdapterAndExpertSizes) {
  Result<Scenario> s = Parse(json{{"model", "llama3-8b"},
                                  {"cluster", {{"nodes", 8}}},
                                  {"parallelism", {{"ep", 8}, {"edp_shard", -1}}},
                                  {"adapter", {{"fsdp_wrap_modules", {"visual.blocks.*"}}}}});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->parallelism.edp_shard, 8);  // 64 / 8
  EXPECT_EQ(s->fsdp.edp_shard_size, 8);
  EXPECT_TRUE(s->adapter.declared());
  EXPECT_EQ(s->adapter.fsdp_wrap_modules, (std::vector<std::string>{"visual.blocks.*"}));
  EXPECT_NE(ErrorOf(json{{"model", "llama3-8b"}, {"adapter", {{"fsdp_wrap_modules", {""}}}}})
                .find("adapter.fsdp_wrap_modules[0]: empty module FQN"),
            std::string::npos);
}

}  // namespace
}  // namespace shardscope

namespace shardscope {
namespace {

TEST(ScenarioTest, UnknownModelNamesTheFileAndTheNearestBuiltin) {
  const std::string e = ErrorOf(json{{"model", "llama3-8"}});
  EXPECT_EQ(e.find("job.json: model: unknown built-in model 'llama3-8' (did you mean "), 0u) << e;
  EXPECT_NE(e.find("llama3-8b"), std::string::npos) << e;
  EXPECT_NE(e.find("{\"hf_config\": PATH}"), std::string::npos) << e;
}

TEST(ScenarioTest, ErrorsInASetValueNameTheSetFlag) {
  EXPECT_EQ(ErrorOf(json{{"model", "llama3-8b"}}, {"training.local_batch=abc"}),
            "job.json: training.local_batch: expected an integer, got string (from --set "
            "training.local_batch=abc)");
  const std::string e = ErrorOf(json{{"model", "llama3-8b"}}, {"parallelism.dp_shard=3"});
  EXPECT_EQ(e.find("job.json: parallelism.dp_shard = 3: "), 0u) << e;
  EXPECT_NE(e.find("(from --set parallelism.dp_shard=3)"), std::string::npos) << e;
  // A field the file set keeps a plain message even when other fields come from --set.
  const std::string file_error = ErrorOf(
      json{{"model", "llama3-8b"}, {"parallelism", {{"dp_shard", 3}}}}, {"parallelism.tp=1"});
  EXPECT_EQ(file_error.find("--set"), std::string::npos) << file_error;
  // A longer key with the same prefix is not the one that was set.
  const std::string longer =
      ErrorOf(json{{"model", "llama3-8b"}, {"fsdp", {{"comm_fusion_zero_copy", "x"}}}},
              {"fsdp.comm_fusion=true"});
  EXPECT_EQ(longer.find("job.json: fsdp.comm_fusion_zero_copy: "), 0u) << longer;
  EXPECT_EQ(longer.find("--set"), std::string::npos) << longer;
}

}  // namespace
}  // namespace shardscope

// MPT (MosaicML) as transformers' MptForCausalLM builds it: fused Wqkv, a GELU MLP of
// 4·d_model, weight-only LayerNorms (HF drops their biases), tied embeddings by default.
// MosaicML's own model adds a learned position table when `learned_pos_emb` is set and ALiBi
// is off (its config turns learned_pos_emb off when alibi or rope is on); HF's port only runs
// ALiBi, so that table appears only for such configs.
#include <string>

#include "core/model/hf_build_util.h"
#include "core/model/hf_builder.h"
#include "core/model/hf_config_reader.h"

namespace shardscope {

Result<ModelTree> BuildMptTree(const nlohmann::json& config, const std::string& source,
                               const ModelBuildOptions& options) {
  ConfigReader r(config, source);
  SS_ASSIGN_OR_RETURN(int64_t d, r.Int("d_model"));
  SS_ASSIGN_OR_RETURN(int64_t heads, r.Int("n_heads"));
  SS_ASSIGN_OR_RETURN(int64_t layers, r.Int("n_layers", 1, 1024));
  SS_ASSIGN_OR_RETURN(int64_t vocab, r.Int("vocab_size"));
  SS_ASSIGN_OR_RETURN(int64_t max_seq_len, r.IntOr("max_seq_len", 2048, 1));
  SS_ASSIGN_OR_RETURN(bool learned_pos_emb, r.BoolOr("learned_pos_emb", true));
  SS_ASSIGN_OR_RETURN(bool tie, r.BoolOr("tie_word_embeddings", true));
  SS_ASSIGN_OR_RETURN(ConfigReader attn, r.Object("attn_config"));
  SS_ASSIGN_OR_RETURN(bool alibi, attn.BoolOr("alibi", true));
  SS_ASSIGN_OR_RETURN(bool rope, attn.BoolOr("rope", false));
  if (d % heads != 0) {
    return r.Error("n_heads", "expected a divisor of d_model (" + std::to_string(d) + "), got " +
                                  std::to_string(heads));
  }
  const int64_t ffn = 4 * d;  // HF hard-codes 4·hidden (expansion_ratio is ignored)

  ModelTree tree;
  TreeBuilder b(tree, options);
  tree.identity = {"mpt", "MptForCausalLM"};
  tree.root().class_name = "MptForCausalLM";
  tree.root().op = MakeOp(OpKind::kLoss, {{"vocab", vocab}});
  const int model = b.Plain(0, "transformer", "MptModel", /*gc=*/true);
  const std::string tie_id = tie ? "transformer.wte.weight" : "";
  b.Embedding(model, "wte", "Embedding", vocab, d, tie_id);
  if (learned_pos_emb && !alibi && !rope) {
    // Positions are not vocabulary: the table is replicated over tp.
    const int wpe = b.Embedding(model, "wpe", "Embedding", max_seq_len, d);
    Module& m = tree.modules[static_cast<size_t>(wpe)];
    if (m.params[0].layout) (*m.params[0].layout)["tp"] = Placement::Replicate();
    m.op->variant.clear();
  }
  const int blocks = b.Plain(model, "blocks", "ModuleList");
  for (int64_t i = 0; i < layers; ++i) {
    const int block = b.Plain(blocks, std::to_string(i), "MptBlock", /*gc=*/true);
    b.Norm(block, "norm_1", "LayerNorm", d, "layernorm");
    Module attn = MakeModule("attn", "MptAttention");
    attn.op =
        MakeOp(OpKind::kAttention,
               {{"heads", heads}, {"kv_heads", heads}, {"head_dim", d / heads}, {"causal", 1}});
    const int a = tree.AddModule(block, std::move(attn));
    b.Linear(a, "Wqkv", d, 3 * d, false, TpStyle::kColumn);
    b.Linear(a, "out_proj", d, d, false, TpStyle::kRow, true);
    b.Norm(block, "norm_2", "LayerNorm", d, "layernorm");
    const int mlp = b.Plain(block, "ffn", "MptMLP");
    b.Linear(mlp, "up_proj", d, ffn, false, TpStyle::kColumn);
    b.Activation(mlp, "act", "GELU", "gelu", ffn, false);
    b.Linear(mlp, "down_proj", ffn, d, false, TpStyle::kRow);
    b.Plain(block, "resid_attn_dropout", "Dropout");
  }
  b.Norm(model, "norm_f", "LayerNorm", d, "layernorm");
  const int head = b.Linear(0, "lm_head", d, vocab, false, TpStyle::kColumn);
  tree.modules[static_cast<size_t>(head)].params[0].id = tie_id;
  tree.config = config;
  if (!tree.config.contains("architectures")) {
    tree.config["architectures"] = nlohmann::json::array({"MptForCausalLM"});
  }
  return tree;
}

}  // namespace shardscope

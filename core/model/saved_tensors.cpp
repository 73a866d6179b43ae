#include "core/model/saved_tensors.h"

#include <string>

// Sources read for the table (torch 2.15, transformers 5.24, torchtitan main of 2026-08):
// - torch: tools/autograd/derivatives.yaml (mm saves its input for the weight gradient; silu,
//   gelu save their input, relu its result; mul saves both operands that need them; pow saves
//   its input; rsqrt its result; _log_softmax saves its result; _to_copy saves nothing),
//   _scaled_dot_product_flash_attention (q, k, v, output, fp32 log-sum-exp per query and
//   head), _fused_rms_norm (input, fp32 rstd: what torch.rms_norm runs on CUDA),
//   native_layer_norm (input, mean, rstd), embedding_dense_backward (the indices).
// - transformers: LlamaRMSNorm.forward (hidden_states.to(float32), pow(2).mean, * rsqrt,
//   .to(input_dtype), weight *; Qwen3RMSNorm the same, also as q_norm / k_norm over
//   [tokens, heads, head_dim]); LlamaMLP.forward down_proj(act_fn(gate_proj(x)) * up_proj(x));
//   apply_rotary_pos_emb (q * cos + rotate_half(q) * sin: saves cos / sin, shared buffers);
//   sdpa_attention_forward (enable_gqa, no repeat_kv, when there is no mask); the output's
//   transpose(1, 2).contiguous() is a no-op on the flash kernel's [batch, seq, heads, dim]
//   output, so o_proj saves the attention output itself.
// - torchtitan: models/common/nn_modules.RMSNorm (nn.RMSNorm), feed_forward.FeedForward
//   w2(F.silu(w1(x)) * w3(x)), rope.apply_rotary_emb (complex multiply by freqs_cis, which
//   needs no gradient: nothing of q / k saved), attention (F.scaled_dot_product_attention with
//   enable_gqa), distributed/activation_checkpoint.SelectiveAC (save mm and SDPA outputs, every
//   second mm recomputed).
namespace shardscope {
namespace {

int64_t TokensIn(const SavedDims& d) { return d.tokens * d.in; }
int64_t TokensOut(const SavedDims& d) { return d.tokens * d.out; }
int64_t TokensDim(const SavedDims& d) { return d.tokens * d.dim; }
int64_t TokensHeads(const SavedDims& d) { return d.tokens * d.heads; }
int64_t Tokens(const SavedDims& d) { return d.tokens; }
int64_t GatedTokensDim(const SavedDims& d) { return d.branches > 1 ? d.tokens * d.dim : 0; }
int64_t Query(const SavedDims& d) { return d.tokens * d.heads * d.head_dim; }
int64_t Key(const SavedDims& d) { return d.tokens * d.kv_heads * d.head_dim; }
int64_t Value(const SavedDims& d) { return d.tokens * d.kv_heads * d.v_head_dim; }
int64_t Output(const SavedDims& d) { return d.tokens * d.heads * d.v_head_dim; }
int64_t RouterIn(const SavedDims& d) { return d.tokens * d.dim; }
int64_t RouterScores(const SavedDims& d) { return d.tokens * d.experts; }
int64_t RoutedIn(const SavedDims& d) { return d.routed * d.dim; }
int64_t RoutedUp(const SavedDims& d) { return d.routed * d.branches * d.ffn; }
int64_t RoutedFfn(const SavedDims& d) { return d.routed * d.ffn; }
int64_t GatedRoutedFfn(const SavedDims& d) { return d.branches > 1 ? d.routed * d.ffn : 0; }
int64_t RoutingWeights(const SavedDims& d) { return d.tokens * d.top_k; }
int64_t Logits(const SavedDims& d) { return d.tokens * d.vocab; }

constexpr SavedDType kC = SavedDType::kCompute;
constexpr SavedDType kF32 = SavedDType::kFloat32;

std::vector<SavedTensorRule> BothImplementations(SavedTensorRule rule) {
  SavedTensorRule titan = rule;
  titan.impl = Implementation::kTorchtitan;
  return {std::move(rule), std::move(titan)};
}

std::vector<SavedTensorRule> MakeRules() {
  std::vector<SavedTensorRule> rules;
  auto add = [&](std::vector<SavedTensorRule> r) {
    for (SavedTensorRule& x : r) rules.push_back(std::move(x));
  };
  add(BothImplementations(
      {OpKind::kLinear,
       "",
       Implementation::kTransformers,
       "torch.nn.functional.linear -> aten.mm (mm_mat2_backward needs the input)",
       {{"input", kC, "[tokens, in]", &TokensIn, /*is_input=*/true}},
       {{"output (mm)", kC, "[tokens, out]", &TokensOut}}}));
  add(BothImplementations({OpKind::kEmbedding,
                           "",
                           Implementation::kTransformers,
                           "torch.nn.functional.embedding (embedding_dense_backward)",
                           {{"indices", SavedDType::kInt64, "[tokens]", &Tokens}},
                           {{"indices", SavedDType::kInt64, "[tokens]", &Tokens}}}));
  rules.push_back({OpKind::kNorm,
                   "rmsnorm",
                   Implementation::kTransformers,
                   "transformers LlamaRMSNorm.forward / Qwen3RMSNorm.forward (eager fp32 "
                   "upcast, pow, mean, rsqrt, downcast, weight multiply)",
                   {{"fp32 upcast", kF32, "[tokens, heads * dim]", &TokensDim},
                    {"rstd", kF32, "[tokens, heads]", &TokensHeads},
                    {"normalised (compute dtype)", kC, "[tokens, heads * dim]", &TokensDim}},
                   {}});
  rules.push_back({OpKind::kNorm,
                   "rmsnorm",
                   Implementation::kTorchtitan,
                   "torch.nn.RMSNorm -> torch.rms_norm -> aten._fused_rms_norm (CUDA)",
                   {{"input", kC, "[tokens, heads * dim]", &TokensDim},
                    {"rstd", kF32, "[tokens, heads]", &TokensHeads}},
                   {}});
  add(BothImplementations({OpKind::kNorm,
                           "layernorm",
                           Implementation::kTransformers,
                           "torch.nn.LayerNorm -> aten.native_layer_norm",
                           {{"input", kC, "[tokens, dim]", &TokensDim},
                            {"mean", kF32, "[tokens]", &Tokens},
                            {"rstd", kF32, "[tokens]", &Tokens}},
                           {}}));
  add(BothImplementations(
      {OpKind::kActivation,
       "",
       Implementation::kTransformers,
       "transformers LlamaMLP.forward act_fn(gate_proj(x)) * up_proj(x) / torchtitan "
       "FeedForward.forward F.silu(w1(x)) * w3(x) (silu_backward: its input; mul: both "
       "operands); ungated: the activation's input",
       {{"activation input (gate output)", kC, "[tokens, dim]", &TokensDim},
        {"activation output (gated)", kC, "[tokens, dim]", &GatedTokensDim},
        {"up output (gated)", kC, "[tokens, dim]", &GatedTokensDim}},
       {}}));
  add(BothImplementations(
      {OpKind::kAttention,
       "",
       Implementation::kTransformers,
       "torch.nn.functional.scaled_dot_product_attention -> "
       "aten._scaled_dot_product_flash_attention (enable_gqa; RoPE saves only cos / sin)",
       {{"query (after RoPE)", kC, "[tokens, heads * head_dim]", &Query},
        {"key (after RoPE)", kC, "[tokens, kv_heads * head_dim]", &Key},
        {"value", kC, "[tokens, kv_heads * v_head_dim]", &Value},
        {"output", kC, "[tokens, heads * v_head_dim]", &Output},
        {"log-sum-exp", kF32, "[heads, tokens]", &TokensHeads}},
       {{"output", kC, "[tokens, heads * v_head_dim]", &Output},
        {"log-sum-exp", kF32, "[heads, tokens]", &TokensHeads}}}));
  add(BothImplementations(
      {OpKind::kRouter,
       "",
       Implementation::kTransformers,
       "router gate linear + softmax(logits, dtype=float32) (transformers MoE blocks)",
       {{"input", kC, "[tokens, dim]", &RouterIn, /*is_input=*/true},
        {"scores", kF32, "[tokens, experts]", &RouterScores}},
       {{"logits (mm)", kC, "[tokens, experts]", &RouterScores}}}));
  // The routed experts differ by implementation in what the routing weights multiply. Under
  // torchtitan's op-level SAC (_op_sac_save_list: aten.mm, the SDPA kernels, all_to_all_single,
  // not aten._grouped_mm) only the all-to-all's output is kept: the experts' forward is
  // recomputed in backward (step_builder.cpp).
  rules.push_back(
      {OpKind::kExperts,
       "",
       Implementation::kTransformers,
       "transformers 5.25's default experts (_experts_implementation grouped_mm): "
       "grouped_mm(x, gate_up) -> act_fn(gate) * up -> grouped_mm(., down) * routing weights "
       "(mm: its input; silu: its input; mul: both operands, the routing weights needing a "
       "gradient); measured with saved_tensors_hooks and FSDPMemTracker "
       "(tests/memory_reference, qwen3_30b_a3b_moe_r64_s2048_none)",
       {{"permuted input", kC, "[routed, dim]", &RoutedIn},
        {"gate / up outputs", kC, "[routed, branches * ffn]", &RoutedUp},
        {"activation output", kC, "[routed, ffn]", &RoutedFfn},
        {"gated product (down input)", kC, "[routed, ffn]", &GatedRoutedFfn},
        {"down output (times the routing weights)", kC, "[routed, dim]", &RoutedIn},
        {"routing weights", kF32, "[tokens, top_k]", &RoutingWeights}},
       {{"permuted input (the all-to-all's output)", kC, "[routed, dim]", &RoutedIn}}});
  rules.push_back(
      {OpKind::kExperts,
       "",
       Implementation::kTorchtitan,
       "torchtitan MoE.forward with score_before_experts: (routed_input.float() * top_scores)"
       ".to(dtype), then _run_experts_grouped_mm: silu(grouped_mm(x, w1)) * grouped_mm(x, w3), "
       "grouped_mm(h, w2) (the float multiply saves the float input for the scores' gradient)",
       {{"permuted input", kC, "[routed, dim]", &RoutedIn},
        {"scored input (float32)", kF32, "[routed, dim]", &RoutedIn},
        {"gate / up outputs", kC, "[routed, branches * ffn]", &RoutedUp},
        {"activation output", kC, "[routed, ffn]", &RoutedFfn},
        {"gated product (down input)", kC, "[routed, ffn]", &GatedRoutedFfn},
        {"routing weights", kF32, "[tokens, top_k]", &RoutingWeights}},
       {{"permuted input (the all-to-all's output)", kC, "[routed, dim]", &RoutedIn}}});
  rules.push_back({OpKind::kLoss,
                   "",
                   Implementation::kTransformers,
                   "transformers ForCausalLMLoss: logits.float(), F.cross_entropy -> "
                   "_log_softmax (saves its result) + nll_loss",
                   {{"log-probabilities", kF32, "[tokens, vocab]", &Logits}},
                   {{"log-probabilities", kF32, "[tokens, vocab]", &Logits}}});
  rules.push_back({OpKind::kLoss,
                   "",
                   Implementation::kTorchtitan,
                   "torchtitan components/loss.cross_entropy_loss: "
                   "F.cross_entropy(pred.float(), labels) outside the model",
                   {{"log-probabilities", kF32, "[tokens, vocab]", &Logits}},
                   {{"log-probabilities", kF32, "[tokens, vocab]", &Logits}}});
  return rules;
}

int64_t Bytes(SavedDType t, DType compute) {
  switch (t) {
    case SavedDType::kCompute:
      return DTypeBytes(compute);
    case SavedDType::kFloat32:
      return 4;
    case SavedDType::kInt64:
      return 8;
  }
  return 0;
}

}  // namespace

Result<Implementation> ParseImplementation(std::string_view text, std::string_view what) {
  if (text == "transformers") return Implementation::kTransformers;
  if (text == "torchtitan") return Implementation::kTorchtitan;
  return InvalidInput(std::string(what) + ": unknown implementation '" + std::string(text) +
                      "' (expected transformers or torchtitan)");
}

std::string_view ImplementationName(Implementation impl) {
  return impl == Implementation::kTorchtitan ? "torchtitan" : "transformers";
}

const std::vector<SavedTensorRule>& SavedTensorRules() {
  static const std::vector<SavedTensorRule> rules = MakeRules();
  return rules;
}

const SavedTensorRule* FindSavedTensorRule(OpKind kind, std::string_view variant,
                                           Implementation impl) {
  const SavedTensorRule* generic = nullptr;
  for (const SavedTensorRule& r : SavedTensorRules()) {
    if (r.kind != kind || r.impl != impl) continue;
    if (!r.variant.empty() && r.variant == variant) return &r;
    if (r.variant.empty() && generic == nullptr) generic = &r;
  }
  if (generic != nullptr) return generic;
  // A norm without a variant is an RMSNorm (the builders' default).
  if (kind == OpKind::kNorm) return FindSavedTensorRule(kind, "rmsnorm", impl);
  return nullptr;
}

int64_t SavedBytes(const std::vector<SavedTensor>& tensors, const SavedDims& dims, DType compute) {
  int64_t total = 0;
  for (const SavedTensor& t : tensors) {
    if (t.is_input && dims.shared_input) continue;
    total += t.elements(dims) * Bytes(t.dtype, compute);
  }
  return total;
}

}  // namespace shardscope

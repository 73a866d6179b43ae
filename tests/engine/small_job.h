// A Llama-shaped scenario small enough to simulate in milliseconds, shared by the engine tests.
//
// Contents:
//   SmallJob          hidden 1024, 8 heads / 4 KV heads, 32k vocabulary, seq_len 2048, `layers`
//                     blocks
//   MovingReserveJob  a 1F1B pipeline whose reserve moves with its micro-batch count
#pragma once

#include <nlohmann/json.hpp>

#include "sim/engine/simulator.h"

namespace shardscope::sim::testing {

inline nlohmann::json SmallJob(int layers) {
  nlohmann::json j = DefaultScenarioJson();
  j["model"] = {{"hf",
                 {{"model_type", "llama"},
                  {"architectures", {"LlamaForCausalLM"}},
                  {"hidden_size", 1024},
                  {"intermediate_size", 3584},
                  {"num_hidden_layers", layers},
                  {"num_attention_heads", 8},
                  {"num_key_value_heads", 4},
                  {"vocab_size", 32000},
                  {"max_position_embeddings", 4096},
                  {"rms_norm_eps", 1e-5},
                  {"tie_word_embeddings", false}}}};
  j["training"]["seq_len"] = 2048;
  return j;
}

// Llama-shaped, 32 blocks of hidden 4096 on 4 stages of TP 2 (2 nodes), seq_len 4096, full
// checkpointing, 1F1B with `micro_batches` micro-batches of one sequence. Its reserve is not
// periodic in the count: 16.174 GiB with 5 micro-batches, 16.096 with 9, 16.088 with 30 and
// 16.127 with 31 (`simulate --exact`); step time is affine from 5 on.
inline nlohmann::json MovingReserveJob(int micro_batches) {
  nlohmann::json j = SmallJob(32);
  nlohmann::json& hf = j["model"]["hf"];
  hf["hidden_size"] = 4096;
  hf["intermediate_size"] = 14336;
  hf["num_attention_heads"] = 32;
  hf["num_key_value_heads"] = 8;
  j["training"]["seq_len"] = 4096;
  j["training"]["activation_checkpoint"] = "full";
  j["training"]["local_batch"] = micro_batches;
  j["cluster"]["nodes"] = 2;
  j["parallelism"]["pp"] = 4;
  j["parallelism"]["tp"] = 2;
  j["parallelism"]["pp_schedule"] = "1f1b";
  j["parallelism"]["pp_microbatches"] = micro_batches;
  return j;
}

}  // namespace shardscope::sim::testing

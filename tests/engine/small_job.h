// A Llama-shaped scenario small enough to simulate in milliseconds, shared by the engine tests.
//
// Contents:
//   SmallJob   hidden 1024, 8 heads / 4 KV heads, 32k vocabulary, seq_len 2048, `layers` blocks
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

}  // namespace shardscope::sim::testing

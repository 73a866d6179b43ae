// Building blocks shared by the config.json builders: leaves with their descriptors and source
// layouts (the standard tensor-parallel plan and expert-parallel sharding).
//
// Contents:
//   TpStyle        how a linear is split over tp: column (Shard(0) of [out, in]), row (Shard(1)),
//                  replicated
//   TreeBuilder    appends modules to a ModelTree: Linear, Norm, Embedding, Activation, Plain
//
// Layouts are attached only when options.tp > 1 (a `tp` entry on every dense parameter) or
// options.ep > 1 (an `ep` entry on routed-expert parameters), as planning.md §1.1 expects.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/model/model_source.h"
#include "core/model/tree.h"

namespace shardscope {

enum class TpStyle { kReplicate, kColumn, kRow };

class TreeBuilder {
 public:
  TreeBuilder(ModelTree& tree, const ModelBuildOptions& options) : tree_(tree), options_(options) {}

  // A parameter in the build dtype; `tp` is its placement under tensor parallelism, used only
  // when options.tp > 1.
  Param MakeParam(std::string name, std::vector<int64_t> shape,
                  std::optional<Placement> tp = Placement::Replicate()) const;
  // A parameter of routed experts (leading dim = experts): Shard(0) over ep when ep > 1, else
  // `tp` over tp when tp > 1.
  Param MakeExpertParam(std::string name, std::vector<int64_t> shape, Placement tp) const;

  // A module without parameters or op (containers, rotary embeddings, dropout).
  int Plain(int parent, std::string name, std::string class_name, bool gc = false);
  // nn.Linear(in, out): weight [out, in] (+ bias [out]) and a linear descriptor.
  int Linear(int parent, std::string name, int64_t in, int64_t out, bool bias, TpStyle style,
             bool shared_input = false);
  // A norm with weight [dim] (+ bias for a LayerNorm that has one).
  int Norm(int parent, std::string name, std::string class_name, int64_t dim,
           std::string variant = "rmsnorm", bool bias = false);
  // A per-head RMSNorm with weight [head_dim] applied to [tokens, heads, head_dim] (Qwen3's
  // q_norm / k_norm): its tensors are heads times the weight's size.
  int HeadNorm(int parent, std::string name, std::string class_name, int64_t head_dim,
               int64_t heads);
  // An embedding table [rows, dim], vocab-parallel (Shard(0)) under tp; `id` ties it.
  int Embedding(int parent, std::string name, std::string class_name, int64_t rows, int64_t dim,
                std::string id = "");
  // A parameter-less activation module carrying its descriptor.
  int Activation(int parent, std::string name, std::string class_name, std::string variant,
                 int64_t dim, bool gated);

  ModelTree& tree() { return tree_; }
  const ModelBuildOptions& options() const { return options_; }
  bool tp_layouts() const { return options_.tp > 1; }
  bool ep_layouts() const { return options_.ep > 1; }

 private:
  ModelTree& tree_;
  const ModelBuildOptions& options_;
};

// Descriptor helpers.
OpDescriptor MakeOp(OpKind kind, std::map<std::string, int64_t> dims, std::string variant = "");

}  // namespace shardscope

#include "core/model/hf_build_util.h"

#include <utility>

namespace shardscope {

OpDescriptor MakeOp(OpKind kind, std::map<std::string, int64_t> dims, std::string variant) {
  OpDescriptor op;
  op.kind = kind;
  op.dims = std::move(dims);
  op.variant = std::move(variant);
  return op;
}

Param TreeBuilder::MakeParam(std::string name, std::vector<int64_t> shape,
                             std::optional<Placement> tp) const {
  Param p;
  p.name = std::move(name);
  p.shape = std::move(shape);
  p.dtype = options_.param_dtype;
  if (tp_layouts() && tp) p.layout = SourceLayout{{"tp", *tp}};
  return p;
}

Param TreeBuilder::MakeExpertParam(std::string name, std::vector<int64_t> shape,
                                   Placement tp) const {
  Param p = MakeParam(std::move(name), std::move(shape), std::nullopt);
  // The expert mesh has no tp dim: with ep the experts are split over ep only; without ep,
  // tensor parallelism splits each expert's ffn dimension like a dense MLP.
  if (ep_layouts()) {
    p.layout = SourceLayout{{"ep", Placement::Shard(0)}};
  } else if (tp_layouts()) {
    p.layout = SourceLayout{{"tp", tp}};
  }
  return p;
}

int TreeBuilder::Plain(int parent, std::string name, std::string class_name, bool gc) {
  return tree_.AddModule(parent, MakeModule(std::move(name), std::move(class_name), gc));
}

int TreeBuilder::Linear(int parent, std::string name, int64_t in, int64_t out, bool bias,
                        TpStyle style, bool shared_input) {
  Module m = MakeModule(std::move(name), "Linear");
  Placement weight_tp = Placement::Replicate();
  Placement bias_tp = Placement::Replicate();
  std::string variant;
  if (style == TpStyle::kColumn) {
    weight_tp = bias_tp = Placement::Shard(0);
    variant = "column";
  } else if (style == TpStyle::kRow) {
    weight_tp = Placement::Shard(1);  // the bias is added after the reduction: replicated
    variant = "row";
  }
  m.params.push_back(MakeParam("weight", {out, in}, weight_tp));
  if (bias) m.params.push_back(MakeParam("bias", {out}, bias_tp));
  std::map<std::string, int64_t> dims = {{"in", in}, {"out", out}};
  if (bias) dims["bias"] = 1;
  if (shared_input) dims["shared_input"] = 1;
  m.op = MakeOp(OpKind::kLinear, std::move(dims), std::move(variant));
  return tree_.AddModule(parent, std::move(m));
}

int TreeBuilder::Norm(int parent, std::string name, std::string class_name, int64_t dim,
                      std::string variant, bool bias) {
  Module m = MakeModule(std::move(name), std::move(class_name));
  m.params.push_back(MakeParam("weight", {dim}));
  if (bias) m.params.push_back(MakeParam("bias", {dim}));
  m.op = MakeOp(OpKind::kNorm, {{"dim", dim}}, std::move(variant));
  return tree_.AddModule(parent, std::move(m));
}

int TreeBuilder::HeadNorm(int parent, std::string name, std::string class_name, int64_t head_dim,
                          int64_t heads) {
  const int m = Norm(parent, std::move(name), std::move(class_name), head_dim);
  tree_.modules[m].op->dims["heads"] = heads;
  return m;
}

int TreeBuilder::Embedding(int parent, std::string name, std::string class_name, int64_t rows,
                           int64_t dim, std::string id) {
  Module m = MakeModule(std::move(name), std::move(class_name));
  Param w = MakeParam("weight", {rows, dim}, Placement::Shard(0));
  w.id = std::move(id);
  m.params.push_back(std::move(w));
  m.op = MakeOp(OpKind::kEmbedding, {{"vocab", rows}, {"dim", dim}}, "vocab");
  return tree_.AddModule(parent, std::move(m));
}

int TreeBuilder::Activation(int parent, std::string name, std::string class_name,
                            std::string variant, int64_t dim, bool gated) {
  Module m = MakeModule(std::move(name), std::move(class_name));
  m.op = MakeOp(OpKind::kActivation, {{"dim", dim}, {"gated", gated ? 1 : 0}}, std::move(variant));
  return tree_.AddModule(parent, std::move(m));
}

}  // namespace shardscope

#include "sim/cost/cost_params.h"

#include <fmt/format.h>

namespace shardscope {

CostParams DefaultCostParams(const Hardware& hw) {
  CostParams p;
  if (hw.gpu.peak_bf16_flops > 0 && hw.gpu.best_matmul_flops > 0) {
    p.gemm_efficiency = hw.gpu.best_matmul_flops / hw.gpu.peak_bf16_flops;
  }
  if (hw.gpu.attention_efficiency > 0) p.attention_efficiency = hw.gpu.attention_efficiency;
  if (hw.gpu.memory_bound_efficiency > 0)
    p.memory_bound_efficiency = hw.gpu.memory_bound_efficiency;
  if (hw.gpu.elementwise_efficiency > 0) p.elementwise_efficiency = hw.gpu.elementwise_efficiency;
  p.nvls_enabled = hw.gpu.nvls;
  return p;
}

Status UseCudnnAttention(const Hardware& hw, CostParams* params) {
  if (hw.gpu.cudnn_attention_efficiency <= 0) {
    return InvalidInput(fmt::format(
        "training.attention_backend: cudnn has no catalog figure for {} (measured on Hopper "
        "only); use flash, or give gpu.cudnn_attention_efficiency in a calibration file",
        hw.gpu.name));
  }
  params->attention_efficiency = hw.gpu.cudnn_attention_efficiency;
  if (hw.gpu.cudnn_attention_backward_ratio > 0)
    params->attention_backward_ratio = hw.gpu.cudnn_attention_backward_ratio;
  return Status::Ok();
}

}  // namespace shardscope

#include "sim/cost/cost_params.h"

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

}  // namespace shardscope

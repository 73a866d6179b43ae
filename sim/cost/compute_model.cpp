#include "sim/cost/compute_model.h"

#include <algorithm>
#include <cmath>

namespace shardscope {
namespace {

// Share of a tile-quantised dimension that does useful work (a 130-wide GEMM pays for 256).
double TileShare(int64_t d, int tile) {
  if (d <= 0 || tile <= 1) return 1.0;
  const int64_t tiles = (d + tile - 1) / tile;
  return static_cast<double>(d) / static_cast<double>(tiles * tile);
}

// t / (t + ramp): the share of a kernel's time spent at full rate when it also pays a fixed
// ramp (first and last wave, launch tail).
double RampShare(double ideal_us, double ramp_us) {
  if (ramp_us <= 0) return 1.0;
  if (ideal_us <= 0) return 0.0;
  return ideal_us / (ideal_us + ramp_us);
}

bool IsGemmKind(OpKind kind) {
  return kind == OpKind::kLinear || kind == OpKind::kExperts || kind == OpKind::kRouter;
}

}  // namespace

int64_t UsToNs(double us) { return static_cast<int64_t>(std::llround(std::max(0.0, us) * 1e3)); }

double GemmEfficiency(const Hardware& hw, const CostParams& p, int64_t m, int64_t n, int64_t k,
                      double flops_if_unknown) {
  const double cap = p.gemm_efficiency;
  const double peak = hw.gpu.peak_bf16_flops;
  if (peak <= 0 || cap <= 0) return 0;
  const bool shaped = m > 0 && n > 0 && k > 0;
  const double flops =
      shaped ? 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k)
             : flops_if_unknown;
  const double ideal_us = flops / (peak * cap) * 1e6;
  double eff = cap * RampShare(ideal_us, p.gemm_ramp_us);
  if (shaped) eff *= TileShare(m, p.gemm_tile) * TileShare(n, p.gemm_tile);
  return std::min(eff, cap);
}

ComputeTime ComputeItemTime(const ComputeItem& item, const Hardware& hw, const CostParams& p) {
  const bool bwd = item.backward && !item.recompute;
  const double flops = bwd ? item.cost.bwd_flops : item.cost.fwd_flops;
  const double bytes = static_cast<double>(bwd ? item.cost.bwd_bytes : item.cost.fwd_bytes);
  const double kernels = bwd ? p.backward_kernels : 1.0;  // GEMMs the FLOPs split into
  const int launched = bwd ? item.cost.bwd_kernels : item.cost.fwd_kernels;
  const double launches = launched > 0 ? launched : kernels;  // each leaves an idle gap
  if (flops <= 0 && bytes <= 0) return {};
  const double peak = hw.gpu.peak_bf16_flops;
  // The model's own eager kernels run at elementwise_efficiency; streaming work (optimizer,
  // casts) at memory_bound_efficiency.
  const bool model_eager =
      !item.elementwise && !IsGemmKind(item.kind) && item.kind != OpKind::kAttention;
  const double hbm_bps = hw.gpu.hbm_gbps * 1e9;
  const double mem_bps =
      hbm_bps * (model_eager ? p.elementwise_efficiency : p.memory_bound_efficiency);
  const double side_bytes =
      static_cast<double>(bwd ? item.cost.side_bwd_bytes : item.cost.side_fwd_bytes);
  const double eager_bps = hbm_bps * p.elementwise_efficiency;
  const double side_us = eager_bps > 0 ? side_bytes / eager_bps * 1e6 : 0.0;
  const double memory_us = mem_bps > 0 ? (bytes - side_bytes) / mem_bps * 1e6 : 0.0;
  double compute_us = 0;
  if (flops > 0 && peak > 0) {
    double eff = p.gemm_efficiency;  // elementwise work that also computes (loss) runs at the cap
    if (!item.elementwise && IsGemmKind(item.kind)) {
      // One GEMM's shape sets the efficiency; the item's FLOPs may hold several (bwd = 2).
      eff = GemmEfficiency(hw, p, item.cost.gemm_m, item.cost.gemm_n, item.cost.gemm_k,
                           flops / kernels);
    } else if (!item.elementwise && item.kind == OpKind::kAttention) {
      const double cap = p.attention_efficiency * (bwd ? p.attention_backward_ratio : 1.0);
      eff = cap * RampShare(flops / kernels / (peak * cap) * 1e6, p.gemm_ramp_us);
    }
    compute_us = eff > 0 ? flops / (peak * eff) * 1e6 : 0.0;
  }
  ComputeTime t;
  // The binding side of the roofline is what contention stretches; the side kernels are eager
  // memory-bound work whichever side binds.
  (compute_us >= memory_us ? t.sm_us : t.hbm_us) = std::max(compute_us, memory_us);
  t.hbm_us += side_us;
  t.other_us = launches * p.kernel_overhead_us;
  return t;
}

int64_t ComputeItemNs(const ComputeItem& item, const Hardware& hw, const CostParams& p) {
  return UsToNs(ComputeItemTime(item, hw, p).total_us());
}

double DeviceCopyHbmUs(int64_t bytes, const Hardware& hw, const CostParams& p) {
  const double mem_bps = hw.gpu.hbm_gbps * 1e9 * p.memory_bound_efficiency;
  return mem_bps > 0 ? 2.0 * static_cast<double>(std::max<int64_t>(0, bytes)) / mem_bps * 1e6 : 0.0;
}

int64_t DeviceCopyNs(int64_t bytes, const Hardware& hw, const CostParams& p) {
  return UsToNs(DeviceCopyHbmUs(bytes, hw, p) + p.kernel_overhead_us);
}

int64_t HostCopyNs(int64_t bytes, const Hardware& hw, const CostParams& p) {
  const double bps = hw.gpu.pcie_gbps * 1e9;
  const double us = bps > 0 ? static_cast<double>(std::max<int64_t>(0, bytes)) / bps * 1e6 : 0.0;
  return UsToNs(us + p.kernel_overhead_us);
}

int64_t HostItemNs(const ComputeItem& item, const CostParams& p) {
  const double bps = p.host_optimizer_gbps * 1e9;
  const double bytes = static_cast<double>(std::max<int64_t>(0, item.cost.fwd_bytes));
  return UsToNs(bps > 0 ? bytes / bps * 1e6 : 0.0);
}

}  // namespace shardscope

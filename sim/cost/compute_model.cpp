#include "sim/cost/compute_model.h"

#include <algorithm>
#include <cmath>

#include "core/util/checked_math.h"

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

// How the default model prices an item: by the kind of work, not the module it came from.
enum class PriceClass { kGemm, kAttention, kEager, kStreaming };

// One item's work as the formulas need it, in the direction it runs.
struct PricedWork {
  PriceClass price = PriceClass::kEager;
  double flops = 0;
  double bytes = 0;
  double side_bytes = 0;  // eager side kernels in series with a fused kernel (in `bytes` too)
  double kernels = 1;     // GEMMs the FLOPs split into
  double launches = 1;    // kernels launched, each leaving an idle gap
  int64_t m = 0, n = 0, k = 0;
};

double OptimizerBytes(const OptimizerWork& w, const OptimizerKernels& k) {
  return k.param_passes * static_cast<double>(w.param_bytes) +
         k.grad_passes * static_cast<double>(w.grad_bytes) +
         (w.states() > 0 ? k.state_passes * static_cast<double>(w.elements) *
                               static_cast<double>(DTypeBytes(w.state_dtype))
                         : 0.0);
}

PricedWork Priced(const ComputeItem& item, const CostParams& p) {
  PricedWork w;
  if (const auto* o = std::get_if<OptimizerWork>(&item.work)) {
    const OptimizerKernels& k = o->impl == OptimizerImpl::kFused ? p.fused_adamw : p.foreach_adamw;
    w.price = PriceClass::kStreaming;
    w.bytes = OptimizerBytes(*o, k);
    w.flops = k.flops_per_element * static_cast<double>(o->elements);
    const int64_t per = std::max<int64_t>(1, k.elements_per_launch);
    w.launches = static_cast<double>(k.ops * std::max<int64_t>(1, (o->elements + per - 1) / per));
    return w;
  }
  if (const auto* c = std::get_if<FsdpCopyWork>(&item.work)) {
    w.price = PriceClass::kStreaming;
    w.bytes = static_cast<double>(c->src_bytes + c->dst_bytes);
    w.launches = c->kernels;
    return w;
  }
  const bool bwd = item.backward && !item.recompute;
  const OpCost& c = item.cost;
  if (std::holds_alternative<GemmWork>(item.work) ||
      std::holds_alternative<GroupedGemmWork>(item.work)) {
    w.price = PriceClass::kGemm;
  } else if (std::holds_alternative<AttentionWork>(item.work)) {
    w.price = PriceClass::kAttention;
  }
  w.flops = bwd ? c.bwd_flops : c.fwd_flops;
  w.bytes = static_cast<double>(bwd ? c.bwd_bytes : c.fwd_bytes);
  w.side_bytes = static_cast<double>(bwd ? c.side_bwd_bytes : c.side_fwd_bytes);
  w.kernels = bwd ? p.backward_kernels : 1.0;
  const int launched = bwd ? c.bwd_kernels : c.fwd_kernels;
  w.launches = launched > 0 ? launched : w.kernels;
  w.m = c.gemm_m;
  w.n = c.gemm_n;
  w.k = c.gemm_k;
  return w;
}

}  // namespace

int64_t UsToNs(double us) { return SaturatingNs(us * 1e3); }

double GemmEfficiency(const Hardware& hw, const CostParams& p, int64_t m, int64_t n, int64_t k,
                      double flops_if_unknown) {
  const double cap = p.gemm_efficiency;
  const double peak = hw.gpu.peak_bf16_flops;
  if (peak <= 0 || cap <= 0) return 0;
  const bool shaped = m > 0 && n > 0 && k > 0;
  const double flops =
      shaped ? 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k)
             : flops_if_unknown;
  // The tiles a GEMM runs are whole: below one tile of m or n it computes the padding too, at
  // the same time whatever the real size. The ramp is a fixed cost per kernel on top.
  const double fill = shaped ? TileShare(m, p.gemm_tile) * TileShare(n, p.gemm_tile) : 1.0;
  const double padded_us = flops / (peak * cap * fill) * 1e6;
  return std::min(cap * fill * RampShare(padded_us, p.gemm_ramp_us), cap);
}

ComputeTime ComputeItemTime(const ComputeItem& item, const Hardware& hw, const CostParams& p) {
  const PricedWork w = Priced(item, p);
  const bool bwd = item.backward && !item.recompute;
  if (w.flops <= 0 && w.bytes <= 0) return {};
  const double peak = hw.gpu.peak_bf16_flops;
  // The model's own eager kernels run at elementwise_efficiency; streaming work (optimizer,
  // copies) and the fused kernels' own I/O at memory_bound_efficiency.
  const double hbm_bps = hw.gpu.hbm_gbps * 1e9;
  const double mem_bps = hbm_bps * (w.price == PriceClass::kEager ? p.elementwise_efficiency
                                                                  : p.memory_bound_efficiency);
  const double eager_bps = hbm_bps * p.elementwise_efficiency;
  const double side_us = eager_bps > 0 ? w.side_bytes / eager_bps * 1e6 : 0.0;
  const double memory_us = mem_bps > 0 ? (w.bytes - w.side_bytes) / mem_bps * 1e6 : 0.0;
  double compute_us = 0;
  if (w.flops > 0 && peak > 0) {
    double eff = p.gemm_efficiency;  // eager or streaming work that also computes runs at the cap
    if (w.price == PriceClass::kGemm) {
      // One GEMM's shape sets the efficiency; the item's FLOPs may hold several (bwd = 2).
      eff = GemmEfficiency(hw, p, w.m, w.n, w.k, w.flops / w.kernels);
    } else if (w.price == PriceClass::kAttention) {
      const double cap = p.attention_efficiency * (bwd ? p.attention_backward_ratio : 1.0);
      eff = cap * RampShare(w.flops / w.kernels / (peak * cap) * 1e6, p.gemm_ramp_us);
    }
    compute_us = eff > 0 ? w.flops / (peak * eff) * 1e6 : 0.0;
  }
  ComputeTime t;
  // The binding side of the roofline is what contention stretches; the side kernels are eager
  // memory-bound work whichever side binds.
  (compute_us >= memory_us ? t.sm_us : t.hbm_us) = std::max(compute_us, memory_us);
  t.hbm_us += side_us;
  t.other_us = w.launches * p.kernel_overhead_us;
  t.flops = w.flops;
  return t;
}

double ItemFlops(const ComputeItem& item, const CostParams& p) { return Priced(item, p).flops; }

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
  const double bytes = std::max(0.0, Priced(item, p).bytes);
  return UsToNs(bps > 0 ? bytes / bps * 1e6 : 0.0);
}

}  // namespace shardscope

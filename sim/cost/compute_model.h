// Compute durations of the default cost model (formulas in sim/cost/cost_params.h), priced by
// each item's work description (core/model/op_work.h): GEMMs on an efficiency curve capped by
// the best measured matmul, fused attention at its own efficiency, everything else at memory
// bandwidth, each as a roofline plus launch gaps.
//
// Contents:
//   GemmEfficiency   fraction of peak a GEMM of shape m×k·k×n reaches
//   ComputeTime      one item's time split by the resource that bounds it
//   ComputeItemTime  one ComputeItem → ComputeTime
//   ComputeItemNs    one ComputeItem → ns (what CostModel::ComputeNs returns)
//   ItemFlops        the FLOPs the model counts for an item (optimizer steps included)
//   DeviceCopyNs     a device-local copy/cast producing `bytes`
//   HostCopyNs       an H2D / D2H copy over PCIe
//   HostItemNs       one ComputeItem run on the host CPU (offloaded optimizer step)
#pragma once

#include <cstdint>

#include "core/schedule/schedule.h"
#include "sim/cost/cost_params.h"
#include "sim/hardware/hardware.h"

namespace shardscope {

// eff = gemm_efficiency · q(m) · q(n) · tp / (tp + gemm_ramp_us), with q the share of the
// padded tiles a dimension fills and tp = 2mnk / (peak · cap · q(m) · q(n)) the padded tiles'
// time: a GEMM takes tp + gemm_ramp_us, so a smaller m or n never takes longer (the fixed ramp
// is paid once, not scaled by the padding). Never above gemm_efficiency. m, n or k of 0 → the
// ramp alone on `flops_if_unknown`.
double GemmEfficiency(const Hardware& hw, const CostParams& p, int64_t m, int64_t n, int64_t k,
                      double flops_if_unknown = 0);

// Communication running beside compute takes SMs from FLOP-bound work and HBM bandwidth from
// memory-bound work, so the engine stretches each part by its own factor (engine.h).
struct ComputeTime {
  double sm_us = 0;     // roofline part bound by SM throughput (GEMM / attention FLOPs)
  double hbm_us = 0;    // roofline part bound by HBM bandwidth (eager kernels, streaming work)
  double other_us = 0;  // launch gaps: neither resource
  double flops = 0;     // the work's FLOPs in the direction it runs
  double total_us() const { return sm_us + hbm_us + other_us; }
};

ComputeTime ComputeItemTime(const ComputeItem& item, const Hardware& hw, const CostParams& p);
int64_t ComputeItemNs(const ComputeItem& item, const Hardware& hw, const CostParams& p);
double ItemFlops(const ComputeItem& item, const CostParams& p);
// Microseconds → integer nanoseconds (negative → 0, beyond kMaxDurationNs → kMaxDurationNs,
// which PriceSchedule refuses), as every duration of the model rounds.
int64_t UsToNs(double us);

int64_t DeviceCopyNs(int64_t bytes, const Hardware& hw, const CostParams& p);
// Its HBM-bound part (the rest is the launch gap).
double DeviceCopyHbmUs(int64_t bytes, const Hardware& hw, const CostParams& p);
int64_t HostCopyNs(int64_t bytes, const Hardware& hw, const CostParams& p);
// Memory-bound on the host: the item's bytes over host_optimizer_gbps (no GPU launch gap).
int64_t HostItemNs(const ComputeItem& item, const CostParams& p);

}  // namespace shardscope

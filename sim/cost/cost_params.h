// Every tunable figure of the default cost model in one struct, so a calibration file (or the
// `calibrate` fitter) can override any of them and say which ones it changed.
//
// Contents:
//   CollectiveOverride  measured latency + bus bandwidth for one collective on one group shape
//   OptimizerKernels    per-element traffic, FLOPs and launches of one optimizer implementation
//   ForeachAdamW / FusedAdamW   PyTorch's foreach (default) and fused AdamW kernels
//   CostParams          compute efficiencies, overheads, overlap model, collective scaling
//   DefaultCostParams   the defaults for a hardware (from the catalog's per-GPU figures)
//
// The compute model (sim/cost/compute_model.cpp), per ComputeItem, as a roofline plus gaps:
//   GEMM       t = max(flops / (peak × eff), bytes / (hbm × mem_eff)) + kernels × kernel_overhead
//              eff(m,n,k) = gemm_efficiency × q(m) × q(n) × t0 / (t0 + gemm_ramp_us),
//              t0 = 2mnk / (peak × gemm_efficiency × q(m) × q(n)) (the padded tiles' time),
//              q(d) = d / roundup(d, gemm_tile): a GEMM takes t0 + gemm_ramp_us.
//              Each GEMM pays a fixed ramp (first and last wave, launch tail), so efficiency
//              rises with size toward the measured best and never exceeds it: on an H100 with
//              the 0.6 µs default, 512³ reaches ~29% of peak, 1024³ ~66%, 4096³ ~80.1% (cap
//              80.3%). Partial tiles waste the rest of the tile.
//   attention  the same with attention_efficiency (fused kernels) in place of the GEMM cap;
//              backward at attention_efficiency × attention_backward_ratio.
//              Its eager side kernels (OpCost::side_*_bytes: RoPE, repeat_kv, layout copies)
//              run in series with it: + side_bytes / (hbm × elementwise_efficiency).
//   others     norms, activations, embeddings, loss: t = bytes / (hbm × elementwise_efficiency);
//              streaming work (optimizer steps, FSDP copies):
//              t = max(bytes / (hbm × memory_bound_efficiency), flops / (peak × cap)).
//   optimizer  OptimizerWork's traffic and launches as PyTorch's kernels run it (figures below):
//              bytes = param_passes × param_bytes + grad_passes × grad_bytes
//                      + state_passes × elements × state dtype (Adam / AdamW only),
//              launches = ops × ceil(elements / elements_per_launch), flops = 12 per element.
//   FSDP copy  one kernel reading src_bytes and writing dst_bytes.
//   kernels    each launch adds kernel_overhead_us: OpCost's eager launch counts, else 1
//              forward / recompute and backward_kernels (data- and weight-gradient) backward.
//   host       work with ScheduleOp::on_host (offloaded optimizer step):
//              bytes / host_optimizer_gbps.
//   overlap    while collectives run beside a compute op (engine.h), its SM-bound part
//              stretches by S / (S - C), S = the GPU's SMs, C = the channels (thread blocks)
//              of the running collectives, and its HBM-bound part by 1 / (1 - B / B_hbm),
//              B = their HBM traffic (CollectiveEstimate::hbm_gbps), B_hbm = hbm ×
//              memory_bound_efficiency; C is capped at S / 2 and B at B_hbm / 2. An H100 beside
//              one 32-channel all-gather runs GEMMs at 100 of 132 SMs: ×1.32. Published
//              measurements bracket it: Lee et al. 2025 (arXiv 2507.03114, A100/H100/MI250,
//              GPT and Llama training) found overlapped compute 18.9% slower on average and up
//              to 40%, memory-bound kernels included. A calibration's overlap_slowdown >= 1
//              replaces the model with one factor for every overlapped op.
// Defaults without a measured source are deliberately round and meant to be calibrated:
// kernel_overhead_us (eager PyTorch leaves 1-3 µs between kernels), unit_overhead_us (FSDP2
// pre/post hooks and stream waits per unit).
#pragma once

#include <cstdint>
#include <vector>

#include "core/schedule/schedule.h"
#include "core/util/status.h"
#include "sim/hardware/hardware.h"

namespace shardscope {

// Replaces NCCL's model for `type` on groups of exactly this shape:
// t = latency_us + bytes × busbw_factor / busbw_gbps (nccl-tests factor of the collective).
struct CollectiveOverride {
  OpType type = OpType::kAllGather;
  int ranks_per_node = 1;
  int nodes = 1;
  double latency_us = 0;
  double busbw_gbps = 0;
};

// How one optimizer implementation's kernels move memory, per parameter element, after
// torchtitan's gradient-norm clipping (whose norm and scale are included).
struct OptimizerKernels {
  double param_passes = 0;  // times each parameter byte is read or written
  double grad_passes = 0;   // same for the gradient (stored in the parameter's dtype)
  double state_passes = 0;  // same for each state byte (Adam's moments, the denominator)
  double flops_per_element = 0;
  int ops = 0;                      // multi-tensor ops, each launching its own kernels
  int64_t elements_per_launch = 1;  // elements one multi_tensor_apply launch covers
};

// torch.optim._multi_tensor_adamw (foreach, PyTorch's and torchtitan's default), read for these
// figures and confirmed on an H200 (bench/device/README.md: ~2,200 launches for 4.5 G elements,
// the step within 2% of its prediction). The parameter is read and written twice (decoupled
// weight decay, addcdiv); the gradient read by the norm, the clip scale (read + write), lerp
// and addcmul (twice); the fp32 states 14 passes of 4 B: exp_avg lerp r+w and addcdiv r (12 B),
// exp_avg_sq mul r+w, addcmul r+w, sqrt r (20 B), the denominator sqrt w, div r+w, add eps r+w,
// addcdiv r (24 B). ~12 FLOPs per element. multi_tensor_apply launches one kernel per 320
// chunks of 65536 elements, for each of ~10 foreach ops (AdamW's 8, the clip's norm and scale).
// SGD is priced with the same parameter and gradient passes and no states.
constexpr OptimizerKernels ForeachAdamW() { return {4, 6, 14, 12, 10, int64_t{65536} * 320}; }
// torch._fused_adamw_ (fused=True), from the kernel's reads and writes (not measured): the
// parameter read and written once, the gradient read by the norm, the clip scale (read +
// write) and the step, both states read and written once (4 passes); the step's one
// multi-tensor op plus the clip's two.
constexpr OptimizerKernels FusedAdamW() { return {2, 4, 4, 12, 3, int64_t{65536} * 320}; }

struct CostParams {
  // Compute.
  double gemm_efficiency = 0.8;       // cap: best measured matmul / peak
  double gemm_ramp_us = 0.6;          // fixed time per GEMM that keeps small GEMMs below the cap
  int gemm_tile = 128;                // output tile edge for the quantisation factor q(d)
  double attention_efficiency = 0.4;  // fused attention forward FLOP/s / peak
  // Backward over forward efficiency of fused attention. FlashAttention-2 (Dao 2023, Fig. 4-7,
  // A100, causal, head dim 128, seq 8k) runs forward at ~70% of peak and forward+backward at
  // ~61%, i.e. backward at ~0.8x the forward rate (it is split into more, smaller matmuls with
  // atomics for dQ); FA2 on H100 shows the same gap (Shah et al. 2024, FlashAttention-3, Fig. 5-6).
  double attention_backward_ratio = 0.8;
  double memory_bound_efficiency = 0.8;  // achieved HBM fraction of streaming work: optimizer
                                         // foreach kernels, casts, device copies
  // Achieved HBM fraction of the model's own eager kernels (composite RMSNorm, SwiGLU, RoPE,
  // repeat_kv, embedding, fp32 cross-entropy) at the bytes op_cost.cpp counts. They are short
  // (tens of microseconds), many include reductions, and backward adds autograd's extra passes,
  // so they run well below a streaming copy. Measured on an H200 (torch 2.11, a 16-layer Llama 3
  // 8B-shaped FSDP2 step, bench/device/README.md): ~0.55 of HBM peak in forward and backward
  // together, where a 1 GiB copy reaches 0.86. Catalog entries may set their own.
  double elementwise_efficiency = 0.55;
  double backward_kernels = 2;  // kernels per backward item (data- and weight-gradient)
  // GPU idle gap per launched kernel while the host keeps ahead (OpCost::*_kernels counts eager
  // PyTorch's launches): 1.7-1.9 µs mean gap over ~5,000 kernels per step measured on an H200
  // step (bench/device/README.md).
  double kernel_overhead_us = 1.8;
  double unit_overhead_us = 30.0;  // per compute op (FSDP pre/post hooks, Python)
  // The optimizer step's kernels (OptimizerWork), per implementation.
  OptimizerKernels foreach_adamw = ForeachAdamW();
  OptimizerKernels fused_adamw = FusedAdamW();
  // One compute stretch factor for every op overlapped by communication; 0 = the SM / HBM
  // contention model above (the default).
  double overlap_slowdown = 0;
  // Offloaded optimizer step on the host CPU (ScheduleOp::on_host): bytes it reads and writes
  // over this rate, per rank. A 2-socket DDR5 host streams ~200-300 GB/s in all and the 8 ranks
  // of a node share it; PyTorch's CPU AdamW is far from streaming speed (ZeRO-Offload, Ren et
  // al. ATC'21, measured its CPU-Adam ~6x faster than PyTorch's): a rough default to calibrate.
  double host_optimizer_gbps = 10.0;
  // Collectives (sim/cost/nccl_model.h; the scales multiply NCCL's figures, 1 = as NCCL).
  double collective_launch_us = 15.0;  // kernel launch + stream sync per collective
  double collective_latency_scale = 1.0;
  double collective_bandwidth_scale = 1.0;
  bool nvls_enabled = true;  // NCCL_NVLS_ENABLE (only where the GPU has NVLS)
  std::vector<CollectiveOverride> collective_overrides;
};

// Defaults for `hw`: gemm_efficiency = best_matmul / peak, attention and memory-bound
// efficiencies from the catalog entry, the rest as in the struct.
CostParams DefaultCostParams(const Hardware& hw);

// Prices attention at the catalog's figures for SDPA's cuDNN backend instead of
// FlashAttention-2's. An error naming the GPU when the catalog has none for it.
Status UseCudnnAttention(const Hardware& hw, CostParams* params);

}  // namespace shardscope

#include "sim/cost/compute_model.h"

#include <gtest/gtest.h>

#include "sim/cost/cost_model.h"

namespace shardscope {
namespace {

Hardware Gpu(const char* name) { return *LookupHardware(name, 8, 1); }

ComputeItem Gemm(int64_t m, int64_t n, int64_t k) {
  ComputeItem item;
  item.kind = OpKind::kLinear;
  GemmWork g;
  g.m = m;
  g.n = n;
  g.k = k;
  item.work = g;
  item.cost.gemm_m = m;
  item.cost.gemm_n = n;
  item.cost.gemm_k = k;
  item.cost.fwd_flops = 2.0 * m * n * k;
  item.cost.bwd_flops = 2.0 * item.cost.fwd_flops;
  item.cost.fwd_bytes = 2 * (m * k + k * n + m * n);
  item.cost.bwd_bytes = 2 * item.cost.fwd_bytes;
  return item;
}

ComputeItem Attention(double flops) {
  ComputeItem item;
  item.kind = OpKind::kAttention;
  item.work = AttentionWork{};
  item.cost.fwd_flops = flops;
  return item;
}

// A foreach AdamW step over `elements` fp32 parameters.
ComputeItem AdamW(int64_t elements) {
  OptimizerWork w;
  w.elements = elements;
  w.param_bytes = w.grad_bytes = 4 * elements;
  ComputeItem item;
  item.kind = OpKind::kNorm;
  item.work = w;
  return item;
}

ComputeItem Norm(int64_t bytes) {
  ComputeItem item;
  item.kind = OpKind::kNorm;
  item.work = EltwiseWork{};
  item.cost.fwd_bytes = bytes;
  item.cost.bwd_bytes = 2 * bytes;
  return item;
}

TEST(GemmEfficiency, RisesWithSizeTowardTheMeasuredBest) {
  for (const char* name : {"h100-sxm", "a100-80g", "b200", "mi300x"}) {
    const Hardware hw = Gpu(name);
    const CostParams p = DefaultCostParams(hw);
    const double best = hw.gpu.best_matmul_flops / hw.gpu.peak_bf16_flops;
    double previous = 0;
    for (int64_t d : {256, 512, 1024, 2048, 4096, 8192, 16384}) {
      const double eff = GemmEfficiency(hw, p, d, d, d);
      EXPECT_LE(eff, best + 1e-12) << name << " " << d;
      EXPECT_GT(eff, previous) << name << " " << d;
      previous = eff;
    }
    EXPECT_GT(previous, 0.99 * best) << name;                             // 16k³ is at the plateau
    EXPECT_LT(GemmEfficiency(hw, p, 256, 256, 256), 0.5 * best) << name;  // tiny GEMMs are not
  }
}

TEST(GemmEfficiency, PartialTilesCost) {
  const Hardware hw = Gpu("h100-sxm");
  const CostParams p = DefaultCostParams(hw);
  EXPECT_LT(GemmEfficiency(hw, p, 4096 + 1, 4096, 4096), GemmEfficiency(hw, p, 4096, 4096, 4096));
  EXPECT_NEAR(
      GemmEfficiency(hw, p, 8192, 8192 + 64, 8192) / GemmEfficiency(hw, p, 8192, 8192, 8192),
      (8192.0 + 64) / (8192 + 128), 0.01);
}

// Fewer rows or columns never take longer: below one tile the GEMM computes the padding at the
// same time, and the fixed ramp is paid once. (The ramp used to be scaled by the padding: with
// one token, a Llama 3 8B step's GEMMs took 3.4 times as long as with 64.)
TEST(ComputeItemNs, AGemmWithFewerRowsOrColumnsIsNeverSlower) {
  for (const char* name : {"h100-sxm", "a100-80g", "b200", "mi300x"}) {
    const Hardware hw = Gpu(name);
    const CostParams p = DefaultCostParams(hw);
    int64_t previous_m = 0, previous_n = 0;
    for (int64_t d : {1, 2, 7, 31, 64, 100, 127, 128, 129, 200, 256, 1000, 4096, 4097, 8192}) {
      const int64_t by_m = ComputeItemNs(Gemm(d, 4096, 4096), hw, p);
      const int64_t by_n = ComputeItemNs(Gemm(4096, d, 4096), hw, p);
      EXPECT_GE(by_m, previous_m) << name << " m = " << d;
      EXPECT_GE(by_n, previous_n) << name << " n = " << d;
      previous_m = by_m;
      previous_n = by_n;
    }
    // Below one tile the time is the one tile's.
    EXPECT_NEAR(GemmEfficiency(hw, p, 1, 4096, 4096) * 128, GemmEfficiency(hw, p, 128, 4096, 4096),
                1e-12)
        << name;
  }
}

TEST(ComputeItemNs, GemmFollowsTheFormula) {
  const Hardware hw = Gpu("h100-sxm");
  const CostParams p = DefaultCostParams(hw);
  const ComputeItem item = Gemm(8192, 4096, 4096);
  const double eff = GemmEfficiency(hw, p, 8192, 4096, 4096);
  const double expect_us =
      item.cost.fwd_flops / (hw.gpu.peak_bf16_flops * eff) * 1e6 + p.kernel_overhead_us;
  EXPECT_NEAR(ComputeItemNs(item, hw, p), expect_us * 1e3, 2);
  // Backward: twice the FLOPs in two kernels, each at the same shape's efficiency.
  ComputeItem bwd = item;
  bwd.backward = true;
  const double bwd_us =
      item.cost.bwd_flops / (hw.gpu.peak_bf16_flops * eff) * 1e6 + 2 * p.kernel_overhead_us;
  EXPECT_NEAR(ComputeItemNs(bwd, hw, p), bwd_us * 1e3, 2);
  // Recompute repeats the forward.
  ComputeItem recompute = bwd;
  recompute.recompute = true;
  EXPECT_EQ(ComputeItemNs(recompute, hw, p), ComputeItemNs(item, hw, p));
}

TEST(ComputeItemNs, NeverFasterThanTheMeasuredBestMatmul) {
  for (const char* name :
       {"h100-sxm", "h100-96g", "h200", "b200", "a100-80g", "a100-40g", "mi300x"}) {
    const Hardware hw = Gpu(name);
    const CostParams p = DefaultCostParams(hw);
    for (int64_t d : {1024, 4096, 16384}) {
      const ComputeItem item = Gemm(d, d, d);
      const double floor_ns = item.cost.fwd_flops / hw.gpu.best_matmul_flops * 1e9;
      EXPECT_GE(ComputeItemNs(item, hw, p), floor_ns) << name << " " << d;
    }
  }
}

TEST(ComputeItemNs, MemoryBoundWorkRunsAtHbmBandwidth) {
  const Hardware hw = Gpu("h100-sxm");
  const CostParams p = DefaultCostParams(hw);
  const int64_t bytes = int64_t{1} << 30;
  // The model's eager kernels (a norm) run at elementwise_efficiency ...
  const double eager_us =
      bytes / (hw.gpu.hbm_gbps * 1e3 * p.elementwise_efficiency) + p.kernel_overhead_us;
  EXPECT_NEAR(ComputeItemNs(Norm(bytes), hw, p), eager_us * 1e3, 2);
  // ... streaming work (an FSDP copy: one read, one write) at memory_bound_efficiency.
  FsdpCopyWork copy;
  copy.elements = bytes / 2;
  copy.src_bytes = copy.dst_bytes = bytes / 2;
  ComputeItem copy_item;
  copy_item.work = copy;
  const double expect_us =
      bytes / (hw.gpu.hbm_gbps * 1e3 * p.memory_bound_efficiency) + p.kernel_overhead_us;
  EXPECT_NEAR(ComputeItemNs(copy_item, hw, p), expect_us * 1e3, 2);
  EXPECT_EQ(ItemFlops(copy_item, p), 0.0);
  // A skinny GEMM (one token) is limited by reading its weight, not by FLOPs.
  const ComputeItem skinny = Gemm(1, 8192, 8192);
  EXPECT_GE(ComputeItemNs(skinny, hw, p),
            skinny.cost.fwd_bytes / (hw.gpu.hbm_gbps * p.memory_bound_efficiency));
}

TEST(ComputeItemNs, AttentionSideKernelsAddToTheFusedKernel) {
  const Hardware hw = Gpu("h100-sxm");
  const CostParams p = DefaultCostParams(hw);
  ComputeItem attn = Attention(1e12);
  attn.cost.fwd_bytes = int64_t{1} << 28;  // the fused kernel's own I/O, hidden under its FLOPs
  const int64_t alone = ComputeItemNs(attn, hw, p);
  // RoPE / repeat_kv / layout copies run as separate kernels: their time adds, it is not
  // hidden under the fused kernel's FLOPs by the roofline max.
  ComputeItem with_side = attn;
  with_side.cost.side_fwd_bytes = int64_t{1} << 30;
  with_side.cost.fwd_bytes += with_side.cost.side_fwd_bytes;
  const double side_ns = (int64_t{1} << 30) / (hw.gpu.hbm_gbps * p.elementwise_efficiency);
  EXPECT_NEAR(ComputeItemNs(with_side, hw, p) - alone, side_ns, 2);
}

TEST(ComputeItemNs, EachLaunchedKernelLeavesAGap) {
  const Hardware hw = Gpu("h100-sxm");
  const CostParams p = DefaultCostParams(hw);
  ComputeItem one = Norm(int64_t{1} << 24);
  ComputeItem nine = one;
  nine.cost.fwd_kernels = 9;
  EXPECT_NEAR(ComputeItemNs(nine, hw, p) - ComputeItemNs(one, hw, p),
              8 * p.kernel_overhead_us * 1e3, 2);
  // Without a count, backward assumes backward_kernels launches.
  one.backward = true;
  one.cost.bwd_bytes = one.cost.fwd_bytes;
  nine.backward = true;
  nine.cost.bwd_bytes = nine.cost.fwd_bytes;
  nine.cost.bwd_kernels = 9;
  EXPECT_NEAR(ComputeItemNs(nine, hw, p) - ComputeItemNs(one, hw, p),
              (9 - p.backward_kernels) * p.kernel_overhead_us * 1e3, 2);
}

// Foreach AdamW (the default optimizer) as sim/cost prices its description: the kernels'
// traffic per element and their launches come from CostParams, none from the schedule.
TEST(ComputeItemNs, OptimizerStepFollowsItsKernels) {
  const Hardware hw = Gpu("h200");
  CostParams p = DefaultCostParams(hw);
  const int64_t elements = int64_t{4500} * 1000 * 1000;
  const ComputeItem step = AdamW(elements);
  // fp32 parameters and gradients: 4 + 6 passes of 4 B, the states 14 passes of 4 B: 96 B.
  const double bytes = 96.0 * static_cast<double>(elements);
  const double launches = 10.0 * 215;  // ceil(4.5e9 / (320 · 65536)) = 215 per foreach op
  const double expect_us =
      bytes / (hw.gpu.hbm_gbps * 1e3 * p.memory_bound_efficiency) + launches * p.kernel_overhead_us;
  EXPECT_NEAR(ComputeItemNs(step, hw, p), expect_us * 1e3, 2);
  EXPECT_DOUBLE_EQ(ItemFlops(step, p), 12.0 * static_cast<double>(elements));
  // SGD has no states; the fused kernel moves less and launches fewer kernels.
  ComputeItem sgd = step;
  std::get<OptimizerWork>(sgd.work).kind = OptimizerKind::kSgd;
  EXPECT_LT(ComputeItemNs(sgd, hw, p), ComputeItemNs(step, hw, p));
  ComputeItem fused = step;
  std::get<OptimizerWork>(fused.work).impl = OptimizerImpl::kFused;
  EXPECT_LT(ComputeItemNs(fused, hw, p), ComputeItemNs(sgd, hw, p));
  // The figures are the cost model's: changing them changes the price.
  p.foreach_adamw.state_passes = 0;
  EXPECT_EQ(ComputeItemNs(step, hw, p), ComputeItemNs(sgd, hw, p));
}

TEST(ComputeItemNs, MoreBandwidthOrFlopsNeverSlower) {
  const Hardware h100 = Gpu("h100-sxm");
  const Hardware h200 = Gpu("h200");
  EXPECT_LT(ComputeItemNs(Norm(1 << 28), h200, DefaultCostParams(h200)),
            ComputeItemNs(Norm(1 << 28), h100, DefaultCostParams(h100)));
  const Hardware a100 = Gpu("a100-80g");
  const ComputeItem g = Gemm(4096, 4096, 4096);
  EXPECT_LT(ComputeItemNs(g, h100, DefaultCostParams(h100)),
            ComputeItemNs(g, a100, DefaultCostParams(a100)));
}

TEST(ComputeItemNs, AttentionHasItsOwnEfficiency) {
  const Hardware hw = Gpu("h100-sxm");
  CostParams p = DefaultCostParams(hw);
  const ComputeItem attn = Attention(1e12);
  const int64_t t = ComputeItemNs(attn, hw, p);
  EXPECT_GE(t, 1e12 / (hw.gpu.peak_bf16_flops * p.attention_efficiency) * 1e9);
  EXPECT_GT(t, ComputeItemNs(Gemm(8192, 8192, 7451), hw, p));  // ~ the same FLOPs as a GEMM
  p.attention_efficiency *= 2;
  EXPECT_LT(ComputeItemNs(attn, hw, p), t);
}

// FlashAttention-2's backward runs below its forward rate: the same FLOPs take longer.
TEST(ComputeItemNs, AttentionBackwardRunsBelowTheForwardRate) {
  const Hardware hw = Gpu("h100-sxm");
  CostParams p = DefaultCostParams(hw);
  p.kernel_overhead_us = 0;
  ComputeItem fwd = Attention(1e12);
  fwd.cost.bwd_flops = 1e12;
  ComputeItem bwd = fwd;
  bwd.backward = true;
  const double fwd_ns = static_cast<double>(ComputeItemNs(fwd, hw, p));
  const double bwd_ns = static_cast<double>(ComputeItemNs(bwd, hw, p));
  EXPECT_NEAR(bwd_ns / fwd_ns, 1.0 / p.attention_backward_ratio, 0.01);
  p.attention_backward_ratio = 1.0;
  EXPECT_NEAR(static_cast<double>(ComputeItemNs(bwd, hw, p)), fwd_ns, fwd_ns * 0.01);
}

// The offloaded optimizer step is priced at the host's rate, not at HBM bandwidth.
TEST(CostModel, HostWorkRunsAtTheHostRate) {
  const Hardware hw = Gpu("h100-sxm");
  CostParams p = DefaultCostParams(hw);
  // SGD over 1e9 parameters: 4 parameter and 6 gradient passes of 1 GB each.
  OptimizerWork sgd;
  sgd.kind = OptimizerKind::kSgd;
  sgd.elements = 250 * 1000 * 1000;
  sgd.param_bytes = sgd.grad_bytes = int64_t{1000} * 1000 * 1000;
  ComputeItem step;
  step.work = sgd;
  const auto model = MakeDefaultCostModel(hw, p);
  const int64_t host = model->HostComputeOpNs({step});
  EXPECT_EQ(host, model->UnitOverheadNs() +
                      static_cast<int64_t>(1e10 / (p.host_optimizer_gbps * 1e9) * 1e9));
  EXPECT_GT(host, 10 * model->ComputeOpNs({step}));
  EXPECT_EQ(model->HostComputeOpNs({}), 0);
}

TEST(CostModel, CopiesOpsAndOverheads) {
  const Hardware hw = Gpu("h100-sxm");
  const CostParams p = DefaultCostParams(hw);
  const auto model = MakeDefaultCostModel(hw, p);
  const int64_t bytes = int64_t{1} << 30;
  EXPECT_NEAR(model->CopyNs(OpType::kCopyH2D, bytes),
              bytes / hw.gpu.pcie_gbps + p.kernel_overhead_us * 1e3, 2);
  EXPECT_EQ(model->CopyNs(OpType::kCopyD2H, bytes), model->CopyNs(OpType::kCopyH2D, bytes));
  // The all-gather copy-in reads and writes its bytes in HBM: much faster than PCIe.
  EXPECT_NEAR(
      model->CopyNs(OpType::kCopyIn, bytes),
      2.0 * bytes / (hw.gpu.hbm_gbps * p.memory_bound_efficiency) + p.kernel_overhead_us * 1e3, 2);
  EXPECT_LT(model->CopyNs(OpType::kCopyIn, bytes), model->CopyNs(OpType::kCopyH2D, bytes));
  const std::vector<ComputeItem> items = {Gemm(4096, 4096, 4096), Norm(1 << 20)};
  EXPECT_EQ(model->ComputeOpNs(items),
            model->UnitOverheadNs() + model->ComputeNs(items[0]) + model->ComputeNs(items[1]));
  EXPECT_EQ(model->ComputeOpNs({}), 0);
  EXPECT_GT(model->UnitOverheadNs(), 0);
  // An op of FSDP copies alone pays no unit overhead: its hook's is the compute op's.
  FsdpCopyWork copy;
  copy.src_bytes = copy.dst_bytes = bytes;
  ComputeItem copy_item;
  copy_item.work = copy;
  EXPECT_EQ(model->ComputeOpNs({copy_item}), model->ComputeNs(copy_item));
  EXPECT_EQ(model->ComputeOpNs({copy_item, items[1]}),
            model->UnitOverheadNs() + model->ComputeNs(copy_item) + model->ComputeNs(items[1]));
  EXPECT_EQ(model->hardware().gpu.name, "h100-sxm");
}

TEST(CostModel, SplitsTimeByTheResourceThatBoundsIt) {
  const Hardware hw = Gpu("h100-sxm");
  const CostParams p = DefaultCostParams(hw);
  const auto model = MakeDefaultCostModel(hw, p);
  const ComputeItem gemm = Gemm(4096, 4096, 4096);
  const ComputeSplit g = model->ComputeSplitNs(gemm);
  EXPECT_GT(g.sm_ns, 0.9 * g.ns);
  EXPECT_EQ(g.hbm_ns, 0.0);
  EXPECT_NEAR(g.sm_ns + p.kernel_overhead_us * 1e3, g.ns, 1.0);  // one launch gap
  const ComputeItem norm = Norm(1 << 20);
  const ComputeSplit n = model->ComputeSplitNs(norm);
  EXPECT_EQ(n.sm_ns, 0.0);
  EXPECT_GT(n.hbm_ns, 0.0);
  EXPECT_LE(n.hbm_ns, static_cast<double>(n.ns));
  const ComputeSplit both = model->ComputeOpSplit({gemm, norm});
  EXPECT_EQ(both.ns, model->ComputeOpNs({gemm, norm}));
  EXPECT_DOUBLE_EQ(both.sm_ns, g.sm_ns);
  EXPECT_DOUBLE_EQ(both.hbm_ns, n.hbm_ns);
  const int64_t bytes = int64_t{1} << 30;
  const ComputeSplit copy = model->CopySplitNs(OpType::kCopyIn, bytes);
  EXPECT_NEAR(copy.hbm_ns, 2.0 * bytes / (hw.gpu.hbm_gbps * p.memory_bound_efficiency), 1.0);
  EXPECT_EQ(copy.sm_ns, 0.0);
  const ComputeSplit h2d = model->CopySplitNs(OpType::kCopyH2D, bytes);  // copy engines
  EXPECT_EQ(h2d.sm_ns + h2d.hbm_ns, 0.0);
  const OverlapModel overlap = model->Overlap();
  EXPECT_EQ(overlap.uniform_slowdown, 0.0);
  EXPECT_EQ(overlap.sm_count, 132);
  EXPECT_DOUBLE_EQ(overlap.hbm_gbps, hw.gpu.hbm_gbps * p.memory_bound_efficiency);
}

TEST(CostModel, CollectivesReportTheBlocksAndHbmTrafficTheyHold) {
  const GroupShape node{8, 8, 1};
  const int64_t bytes = int64_t{512} << 20;
  for (const char* gpu : {"h100-sxm", "a100-80g"}) {
    const Hardware hw = Gpu(gpu);
    const auto model = MakeDefaultCostModel(hw, DefaultCostParams(hw));
    const CollectiveEstimate ag = model->CollectiveNs(OpType::kAllGather, bytes, node);
    EXPECT_GT(ag.channels, 0) << gpu;
    EXPECT_LE(ag.channels, hw.gpu.sm_count / 2) << gpu;
    EXPECT_DOUBLE_EQ(ag.hbm_gbps, 2.0 * ag.busbw_gbps)
        << gpu;  // read what it sends, write what it gets
    const CollectiveEstimate ar = model->CollectiveNs(OpType::kAllReduce, bytes, node);
    // A ring reduction also reads the local operand; NVLS reduces in the switch.
    const bool nvls = ar.algo == NcclAlgo::kNvls || ar.algo == NcclAlgo::kNvlsTree;
    EXPECT_DOUBLE_EQ(ar.hbm_gbps, (nvls ? 2.0 : 3.0) * ar.busbw_gbps) << gpu;
    EXPECT_EQ(nvls, hw.gpu.nvls) << gpu;
  }
}

}  // namespace
}  // namespace shardscope

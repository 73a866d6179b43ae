// The Kineto importer's naming rules (kineto_import.h), one small synthetic profiler trace per
// rule, and the label sweep against a brute-force search.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/trace/kineto_import_timeline.h"
#include "core/trace/trace_io.h"

namespace shardscope {
namespace {

using trace_internal::FsdpKind;
using trace_internal::LabelRange;

// One `X` event: tid 1 is the main thread, tid 2 a gloo worker.
struct Ev {
  const char* cat;
  std::string name;
  double ts, dur;
  std::string args = "";
  int tid = 1;
  int pid = 100;  // the process; GPU kernels carry the device (0)
};

std::string KinetoJson(const std::vector<Ev>& events, int world = 4) {
  std::string out = R"({"schemaVersion":1,"distributedInfo":{"backend":"gloo","rank":0,)";
  out += "\"world_size\":" + std::to_string(world) + "},\"traceEvents\":[";
  for (size_t i = 0; i < events.size(); ++i) {
    const Ev& e = events[i];
    out += std::string(i ? "," : "") + R"({"ph":"X","cat":")" + e.cat + R"(","name":")" + e.name +
           R"(","pid":)" + std::to_string(e.pid) + ",\"tid\":" + std::to_string(e.tid) +
           ",\"ts\":" + std::to_string(e.ts) + ",\"dur\":" + std::to_string(e.dur) + ",\"args\":{" +
           e.args + "}}";
  }
  return out + "]}";
}

Trace Import(const std::vector<Ev>& events) {
  auto r = ParseTrace(KinetoJson(events), "k.json");
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? std::move(r).value() : Trace();
}

// op_id of the first event named `name` (after `after_us` µs).
std::string OpIdOf(const Trace& t, std::string_view name, double after_us = -1) {
  const WorkEvent* best = nullptr;
  for (const WorkEvent& e : t.events) {
    if (t.Str(e.name) == name && e.start_ns > after_us * 1000 &&
        (best == nullptr || e.start_ns < best->start_ns)) {
      best = &e;
    }
  }
  return best != nullptr ? std::string(t.Str(best->op_id)) : "<no event " + std::string(name) + ">";
}

const WorkEvent* Named(const Trace& t, std::string_view name) {
  for (const WorkEvent& e : t.events) {
    if (t.Str(e.name) == name) return &e;
  }
  return nullptr;
}

constexpr const char* kCpu = "cpu_op";
constexpr const char* kAnn = "user_annotation";
const std::string kAgDims =
    R"("Input Dims":[[400],[100],[],[],[]],"Input type":["float","float","","Scalar","Scalar"])";
const std::string kRsDims =
    R"("Input Dims":[[100],[400],[],[],[],[]],"Input type":["float","float","","","Scalar","Scalar"])";

// One gloo FSDP2 step of a root and one block: every CPU-side naming rule.
std::vector<Ev> GlooStep() {
  return {
      {kAnn, "ProfilerStep#3", 0, 1000},
      {kAnn, "FSDP::root_pre_forward", 1, 2},
      {kAnn, "FSDP::pre_forward", 5, 40},
      {kAnn, "FSDP::all_gather", 6, 30},
      {kCpu, "fsdp::all_gather_copy_in", 7, 3},
      {kCpu, "c10d::_allgather_base_", 11, 2, kAgDims},
      {kAnn, "gloo:all_gather", 12, 20, R"("Input Dims":[[100]],"Input type":["float"])", 2},
      {kAnn, "FSDP::all_gather_copy_out", 37, 5},
      {kCpu, "fsdp::split_with_sizes_copy", 38, 3},
      {kCpu, "aten::embedding", 50, 5},
      {kAnn, "FSDP::pre_forward (model.layers.0)", 60, 10},
      {kCpu, "aten::linear", 75, 10},
      {kAnn, "FSDP::post_forward (model.layers.0)", 90, 2},
      {kCpu, "aten::mm", 95, 5},  // lm_head
      {kAnn, "FSDP::post_forward", 102, 2},
      {kCpu, "aten::cross_entropy_loss", 105, 3},  // a loss computed outside the root
      // The loss's autograd node runs the root's pre-backward hook inside it.
      {kCpu, "autograd::engine::evaluate_function: NllLossBackward0", 110, 20},
      {kAnn, "FSDP::pre_backward", 112, 5},
      {kCpu, "NllLossBackward0", 120, 5},
      {kCpu, "aten::nll_loss_backward", 121, 3},  // inside it: not a loss forward
      {kCpu, "autograd::engine::evaluate_function: AccumulateGrad", 126, 1},  // inside it
      // log_softmax's backward ends the loss's run; the lm_head's backward is the root's next.
      {kCpu, "autograd::engine::evaluate_function: LogSoftmaxBackward0", 131, 1.5},
      {kCpu, "autograd::engine::evaluate_function: TBackward0", 133, 1.5},
      {kCpu, "autograd::engine::evaluate_function: AddBackward0", 135, 30},
      {kAnn, "FSDP::pre_backward (model.layers.0)", 136, 4},
      {kCpu, "AddBackward0", 145, 2},
      {kCpu, "autograd::engine::evaluate_function: MmBackward0", 170, 10},
      {kCpu, "autograd::engine::evaluate_function: RegisterPostBackwardFunctionBackward", 185, 60},
      {kAnn, "FSDP::post_backward_reshard (model.layers.0)", 186, 2},
      {kAnn, "FSDP::post_backward_reduce (model.layers.0)", 190, 50},
      {kCpu, "fsdp::chunk_cat", 191, 4},
      {kCpu, "c10d::_reduce_scatter_base_", 196, 2, kRsDims},
      {kAnn, "gloo:all_reduce", 198, 30, R"("Input Dims":[[400]],"Input type":["float"])", 2},
      {kCpu, "aten::copy_", 230, 3},
      {kCpu, "autograd::engine::evaluate_function: EmbeddingBackward0", 250, 5},
      {kAnn, "FSDP::root_post_backward_callback", 260, 20},
      {kAnn, "FSDP::post_backward_reshard", 261, 1},
      {kAnn, "FSDP::post_backward_reduce", 263, 15},
      {kCpu, "c10d::_reduce_scatter_base_", 265, 2,
       R"("Input Dims":[[50],[200],[],[],[],[]],"Input type":["c10::BFloat16","c10::BFloat16"])"},
      {kAnn, "gloo:all_reduce", 266, 10, R"("Input Dims":[[200]])", 2},
      {kCpu, "aten::detach", 279, 0.5},
      {kAnn, "Optimizer.step#AdamW.step", 300, 50},
      {kCpu, "aten::add_", 305, 5},
      {kAnn, "Optimizer.zero_grad#AdamW.zero_grad", 360, 5},
      {kCpu, "aten::zero_", 361, 1},
  };
}

TEST(KinetoNaming, GlooStepNamesEveryOpAsTheSchedule) {
  const Trace t = Import(GlooStep());
  EXPECT_EQ(OpIdOf(t, "fsdp::all_gather_copy_in"), "fwd/root/copy_in");
  EXPECT_EQ(OpIdOf(t, "gloo:all_gather"), "fwd/root/all_gather");
  EXPECT_EQ(OpIdOf(t, "fsdp::split_with_sizes_copy"), "fwd/root/copy_out");
  EXPECT_EQ(OpIdOf(t, "aten::embedding"), "fwd/root/compute");
  EXPECT_EQ(OpIdOf(t, "aten::linear"), "fwd/model.layers.0/compute");
  // The root's work after its block: its second run; the loss (here after the root's
  // post-forward) its own run, as the schedule has it each way.
  EXPECT_EQ(OpIdOf(t, "aten::mm"), "fwd/root/compute:1");
  EXPECT_EQ(OpIdOf(t, "aten::cross_entropy_loss"), "fwd/root/compute:2");
  // The loss's backward runs before the root's pre-backward hook: still backward, a run of its
  // own with log_softmax's node; the head's backward is the root's next run.
  EXPECT_EQ(OpIdOf(t, "NllLossBackward0"), "bwd/root/compute");
  EXPECT_EQ(OpIdOf(t, "autograd::engine::evaluate_function: LogSoftmaxBackward0"),
            "bwd/root/compute");
  EXPECT_EQ(OpIdOf(t, "autograd::engine::evaluate_function: TBackward0"), "bwd/root/compute:1");
  EXPECT_EQ(OpIdOf(t, "AddBackward0"), "bwd/model.layers.0/compute");
  EXPECT_EQ(OpIdOf(t, "autograd::engine::evaluate_function: MmBackward0"),
            "bwd/model.layers.0/compute");
  EXPECT_EQ(OpIdOf(t, "fsdp::chunk_cat"), "bwd/model.layers.0/reduce_copy_in");
  EXPECT_EQ(OpIdOf(t, "aten::copy_"), "bwd/model.layers.0/reduce_scatter");
  EXPECT_EQ(OpIdOf(t, "autograd::engine::evaluate_function: EmbeddingBackward0"),
            "bwd/root/compute:2");
  EXPECT_EQ(OpIdOf(t, "aten::detach"), "step/wait_reductions");
  EXPECT_EQ(OpIdOf(t, "aten::add_"), "step/optimizer");
  EXPECT_EQ(OpIdOf(t, "aten::zero_"), "step/optimizer");
  // Autograd wrappers that hold FSDP hooks and c10d issue calls are not compute themselves.
  EXPECT_EQ(Named(t, "autograd::engine::evaluate_function: NllLossBackward0"), nullptr);
  EXPECT_EQ(Named(t, "c10d::_allgather_base_"), nullptr);
  EXPECT_EQ(t.import.unknown_by_name.at("cpu_op c10d issue (its gloo range is the collective)"), 3);
}

// Non-reentrant activation checkpointing re-runs a block's forward inside the first backward
// node that unpacks a saved tensor, with no label around it: the forward ops (a sequence number
// with "Fwd thread id" 0) are the block's recompute run, the node's own ops its compute, the
// same run before and after the re-run. Forward ops in forward stay compute.
TEST(KinetoNaming, ReRunForwardInABackwardNodeIsTheRecompute) {
  const std::string fwd = R"("Sequence number":7,"Fwd thread id":0)";
  const std::string bwd = R"("Sequence number":7,"Fwd thread id":1)";
  const Trace t = Import({
      {kAnn, "ProfilerStep#1", 0, 1000},
      {kAnn, "FSDP::root_pre_forward", 1, 2},
      {kAnn, "FSDP::pre_forward (model.layers.0)", 10, 5},
      {kCpu, "aten::linear", 20, 10, fwd},
      {kAnn, "FSDP::post_forward (model.layers.0)", 35, 2},
      {kCpu, "autograd::engine::evaluate_function: SumBackward0", 100, 10, bwd},
      {kCpu, "autograd::engine::evaluate_function: AddBackward0", 120, 10, bwd},
      {kAnn, "FSDP::pre_backward (model.layers.0)", 121, 4},
      {kCpu, "autograd::engine::evaluate_function: MmBackward0", 140, 60, bwd},
      {kCpu, "MmBackward0", 141, 58, bwd},
      {kCpu, "aten::t", 142, 2},  // the node's own, before it unpacks
      {kCpu, "aten::rms_norm", 150, 10, fwd},
      {kCpu, "aten::linear", 162, 20, fwd},
      {kCpu, "aten::mm", 185, 10},
      {kCpu, "autograd::engine::evaluate_function: PowBackward0", 205, 5, bwd},
      {kAnn, "FSDP::post_backward_reshard (model.layers.0)", 220, 2},
  });
  EXPECT_EQ(OpIdOf(t, "aten::linear"), "fwd/model.layers.0/compute");
  EXPECT_EQ(OpIdOf(t, "aten::rms_norm"), "bwd/model.layers.0/recompute");
  EXPECT_EQ(OpIdOf(t, "aten::linear", 100), "bwd/model.layers.0/recompute");
  EXPECT_EQ(OpIdOf(t, "aten::t"), "bwd/model.layers.0/compute");
  EXPECT_EQ(OpIdOf(t, "aten::mm"), "bwd/model.layers.0/compute");
  EXPECT_EQ(OpIdOf(t, "autograd::engine::evaluate_function: PowBackward0"),
            "bwd/model.layers.0/compute");
  // The node around the re-run is not work itself: its pieces are.
  EXPECT_EQ(Named(t, "autograd::engine::evaluate_function: MmBackward0"), nullptr);
}

TEST(KinetoNaming, GlooCollectivesTakeKindAndSizeFromTheirIssue) {
  const Trace t = Import(GlooStep());
  const WorkEvent* ag = Named(t, "gloo:all_gather");
  ASSERT_NE(ag, nullptr);
  EXPECT_EQ(ag->lane, kLaneAllGather);
  EXPECT_EQ(ag->bytes, 400 * 4);  // gathered fp32 bytes, as the schedule counts them
  EXPECT_EQ(ag->group_size, 4);
  // gloo reduce-scatters with an all-reduce over the whole input: named and sized as the
  // reduce-scatter that issued it (input bytes).
  std::vector<const WorkEvent*> rs;
  for (const WorkEvent& e : t.events) {
    if (t.Str(e.name) == "gloo:all_reduce") rs.push_back(&e);
  }
  ASSERT_EQ(rs.size(), 2u);
  std::sort(rs.begin(), rs.end(),
            [](const WorkEvent* a, const WorkEvent* b) { return a->start_ns < b->start_ns; });
  EXPECT_EQ(rs[0]->lane, kLaneReduceScatter);
  EXPECT_EQ(t.Str(rs[0]->op_id), "bwd/model.layers.0/reduce_scatter");
  EXPECT_EQ(rs[0]->bytes, 400 * 4);
  EXPECT_EQ(rs[0]->group_size, 4);
  EXPECT_EQ(t.Str(rs[1]->op_id), "bwd/root/reduce_scatter");
  EXPECT_EQ(rs[1]->bytes, 200 * 2);  // bf16
}

TEST(KinetoNaming, WithoutRecordShapesSizesStayUnknown) {
  std::vector<Ev> events = GlooStep();
  for (Ev& e : events) e.args.clear();
  const Trace t = Import(events);
  const WorkEvent* ag = Named(t, "gloo:all_gather");
  ASSERT_NE(ag, nullptr);
  EXPECT_EQ(ag->bytes, 0);
  EXPECT_EQ(ag->group_size, 4);  // distributedInfo.world_size
  EXPECT_EQ(OpIdOf(t, "gloo:all_reduce"), "bwd/model.layers.0/reduce_scatter");
}

// A root with two blocks and nothing of its own between them: its work after the blocks is its
// second chunk (compute:1), as the schedule splits it; a block with two nested units between
// its own work has three.
TEST(KinetoNaming, ComputeRunsCountOnlyRunsThatHoldWork) {
  const Trace t = Import({
      {kAnn, "ProfilerStep#1", 0, 1000},
      {kCpu, "aten::embedding", 1, 2},
      {kAnn, "FSDP::pre_forward (layers.0)", 5, 1},
      {kCpu, "op_a", 7, 1},
      {kAnn, "FSDP::post_forward (layers.0)", 9, 1},
      {kAnn, "FSDP::pre_forward (layers.1)", 11, 1},
      {kCpu, "op_b0", 13, 1},
      {kAnn, "FSDP::pre_forward (layers.1.x)", 15, 1},
      {kCpu, "op_x", 17, 1},
      {kAnn, "FSDP::post_forward (layers.1.x)", 19, 1},
      {kCpu, "op_b1", 21, 1},
      {kAnn, "FSDP::post_forward (layers.1)", 23, 1},
      {kCpu, "aten::mm", 25, 2},
  });
  EXPECT_EQ(OpIdOf(t, "aten::embedding"), "fwd/root/compute");
  EXPECT_EQ(OpIdOf(t, "op_a"), "fwd/layers.0/compute");
  EXPECT_EQ(OpIdOf(t, "op_b0"), "fwd/layers.1/compute");
  EXPECT_EQ(OpIdOf(t, "op_x"), "fwd/layers.1.x/compute");
  EXPECT_EQ(OpIdOf(t, "op_b1"), "fwd/layers.1/compute:1");
  EXPECT_EQ(OpIdOf(t, "aten::mm"), "fwd/root/compute:1");
}

TEST(KinetoNaming, MicroBatchesAndRecompute) {
  const Trace t = Import({
      {kAnn, "ProfilerStep#1", 0, 1000},
      {kAnn, "FSDP::root_pre_forward", 1, 1},
      {kCpu, "fwd0", 3, 1},
      {kCpu, "autograd::engine::evaluate_function: MulBackward0", 10, 2},
      {kAnn, "FSDP::root_pre_forward", 20, 1},
      {kCpu, "fwd1", 23, 1},
      {kCpu, "autograd::engine::evaluate_function: MulBackward0", 30, 10},
      {kAnn, "FSDP::pre_backward (layers.0)", 31, 1},
      // Activation checkpointing re-runs the block's forward inside its backward.
      {kAnn, "FSDP::pre_forward (layers.0)", 33, 1},
      {kCpu, "again", 35, 1},
      {kAnn, "FSDP::post_forward (layers.0)", 37, 1},
      {kCpu, "grad", 39, 0.5},
  });
  EXPECT_EQ(OpIdOf(t, "fwd0"), "mb0/fwd/root/compute");
  EXPECT_EQ(OpIdOf(t, "autograd::engine::evaluate_function: MulBackward0"), "mb0/bwd/root/compute");
  EXPECT_EQ(OpIdOf(t, "fwd1"), "mb1/fwd/root/compute");
  EXPECT_EQ(OpIdOf(t, "again"), "mb1/bwd/layers.0/recompute");
  EXPECT_EQ(OpIdOf(t, "grad"), "mb1/bwd/layers.0/compute");
}

// A GPU backward (launched from autograd's thread, tid 3) of an HSDP unit: the reduce-scatter's
// copy-in kernel on the compute stream, the reduce-scatter and the replicate all-reduce.
TEST(KinetoNaming, GpuReductionKernels) {
  auto launch = [](int corr, double ts) {
    return Ev{
        "cuda_runtime", "cudaLaunchKernel", ts, 1, "\"correlation\":" + std::to_string(corr), 3};
  };
  auto kernel = [](const char* name, int corr, double ts, int stream, std::string more = "") {
    return Ev{
        "kernel",
        name,
        ts,
        5,
        "\"correlation\":" + std::to_string(corr) + ",\"stream\":" + std::to_string(stream) + more,
        stream,
        0};
  };
  const Trace t = Import({
      {kAnn, "ProfilerStep#1", 0, 1000},
      {kAnn, "FSDP::pre_backward (layers.0)", 10, 5, "", 3},
      launch(1, 20),
      kernel("sm90_gemm_bwd", 1, 21, 7),
      {kAnn, "FSDP::post_backward_reshard (layers.0)", 30, 2, "", 3},
      {kAnn, "FSDP::post_backward_reduce (layers.0)", 33, 30, "", 3},
      launch(2, 34),
      kernel("void at::native::chunk_cat_cuda_kernel", 2, 40, 7),
      launch(3, 40),
      kernel("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL", 3, 46, 24,
             R"(,"In msg nelems":4096,"Out msg nelems":1024,"Group size":4,"dtype":"Float")"),
      launch(4, 45),
      kernel("void at::native::vectorized_elementwise_kernel", 4, 52, 24),  // the post-divide
      launch(5, 50),
      kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 5, 60, 28,
             R"(,"In msg nelems":1024,"Out msg nelems":1024,"Group size":2,"dtype":"Float")"),
  });
  EXPECT_EQ(OpIdOf(t, "sm90_gemm_bwd"), "bwd/layers.0/compute");
  EXPECT_EQ(OpIdOf(t, "void at::native::chunk_cat_cuda_kernel"), "bwd/layers.0/reduce_copy_in");
  EXPECT_EQ(Named(t, "void at::native::chunk_cat_cuda_kernel")->lane, kLaneCompute);
  const WorkEvent* rs = Named(t, "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL");
  ASSERT_NE(rs, nullptr);
  EXPECT_EQ(t.Str(rs->op_id), "bwd/layers.0/reduce_scatter");
  EXPECT_EQ(rs->bytes, 4096 * 4);  // the input, as the schedule counts a reduce-scatter
  EXPECT_EQ(rs->group_size, 4);
  // A kernel on the reduce-scatter's stream is that reduction's work.
  EXPECT_EQ(Named(t, "void at::native::vectorized_elementwise_kernel")->lane, kLaneReduceScatter);
  EXPECT_EQ(OpIdOf(t, "void at::native::vectorized_elementwise_kernel"),
            "bwd/layers.0/reduce_scatter");
  const WorkEvent* ar = Named(t, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  ASSERT_NE(ar, nullptr);
  EXPECT_EQ(t.Str(ar->op_id), "bwd/layers.0/all_reduce");
  EXPECT_EQ(ar->bytes, 1024 * 4);
  EXPECT_EQ(ar->group_size, 2);
}

TEST(KinetoNaming, ParsesEveryFsdpLabelForm) {
  using trace_internal::ParseFsdpLabel;
  EXPECT_EQ(ParseFsdpLabel("FSDP::pre_forward").kind, FsdpKind::kPreForward);
  EXPECT_EQ(ParseFsdpLabel("FSDP::pre_forward").unit, "root");
  EXPECT_EQ(ParseFsdpLabel("FSDP::all_gather (model.layers.3)").unit, "model.layers.3");
  EXPECT_EQ(ParseFsdpLabel("FSDP::all_gather (model.layers.3) [pg=8]").unit, "model.layers.3");
  EXPECT_EQ(ParseFsdpLabel("FSDP::all_gather (model.layers.3) [pg=8]").kind, FsdpKind::kAllGather);
  EXPECT_EQ(ParseFsdpLabel("FSDP::post_backward_rs_wait ()").unit, "root");
  EXPECT_EQ(ParseFsdpLabel("FSDP::post_backward_rs_wait ()").kind, FsdpKind::kPostBackward);
  EXPECT_EQ(ParseFsdpLabel("FSDP::backward_prefetch for model.layers.1").kind, FsdpKind::kPrefetch);
  EXPECT_EQ(ParseFsdpLabel("FSDP::backward_prefetch for model.layers.1").unit, "model.layers.1");
  EXPECT_EQ(ParseFsdpLabel("FSDP::forward_prefetch for ").unit, "root");
  EXPECT_EQ(ParseFsdpLabel("FSDP::root_post_backward_callback").kind, FsdpKind::kRootPostBackward);
  EXPECT_EQ(ParseFsdpLabel("FSDP::cast_forward_inputs").kind, FsdpKind::kOther);
}

// The sweep gives what a search over every label gives: the shortest label containing t.
TEST(KinetoNaming, LabelSweepMatchesBruteForce) {
  std::mt19937 rng(7);
  std::vector<LabelRange> labels;
  // Nested ranges, as one thread's record_function ranges are: split [lo, hi) recursively.
  std::function<void(int64_t, int64_t, int)> split = [&](int64_t lo, int64_t hi, int depth) {
    if (depth > 4 || hi - lo < 4) return;
    int64_t at = lo;
    while (at + 2 < hi) {
      const int64_t len = 2 + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - at - 1));
      if (rng() % 3 != 0) {
        labels.push_back({at, at + len, {}});
        split(at + 1, at + len - 1, depth + 1);
      }
      at += len + static_cast<int64_t>(rng() % 3);
    }
  };
  split(0, 5000, 0);
  std::sort(labels.begin(), labels.end(), [](const LabelRange& a, const LabelRange& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
  });
  ASSERT_GT(labels.size(), 100u);
  std::vector<int64_t> times;
  for (int i = 0; i < 3000; ++i) times.push_back(static_cast<int64_t>(rng() % 5100));
  const std::vector<int> got = trace_internal::InnermostLabels(labels, times);
  for (size_t q = 0; q < times.size(); ++q) {
    int best = -1;
    for (size_t i = 0; i < labels.size(); ++i) {
      if (labels[i].start_ns <= times[q] && times[q] < labels[i].end_ns &&
          (best < 0 ||
           labels[i].end_ns - labels[i].start_ns < labels[best].end_ns - labels[best].start_ns)) {
        best = static_cast<int>(i);
      }
    }
    ASSERT_EQ(got[q], best) << "t = " << times[q];
  }
}

}  // namespace
}  // namespace shardscope

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "core/trace/trace_io.h"
#include "core/trace/trace_stats.h"

namespace shardscope {
namespace {

// A hand-made GPU trace: an all-gather (with its copy-in on the same stream), forward and
// backward GEMMs (the backward launched from autograd's thread, tid 11, as on a GPU), a
// reduce-scatter, the optimizer, a host-to-device copy and memory events.
constexpr const char* kGpuTrace = R"JSON({
"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100"}],
"distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 8},
"traceEvents": [
 {"ph":"M","name":"process_name","pid":0,"tid":0,"args":{"name":"GPU 0"}},
 {"ph":"X","cat":"user_annotation","name":"ProfilerStep#5","pid":10,"tid":10,"ts":1000.000,"dur":1000},
 {"ph":"X","cat":"user_annotation","name":"FSDP::pre_forward (layers.0)","pid":10,"tid":10,"ts":1010,"dur":20},
 {"ph":"X","cat":"user_annotation","name":"FSDP::all_gather (layers.0)","pid":10,"tid":10,"ts":1012,"dur":10},
 {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":10,"tid":10,"ts":1015,"dur":2,"args":{"correlation":1}},
 {"ph":"X","cat":"kernel","name":"void at::native::copy_kernel","pid":0,"tid":20,"ts":1016,"dur":3,"args":{"stream":20,"correlation":9}},
 {"ph":"X","cat":"kernel","name":"ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)","pid":0,"tid":20,"ts":1020.5,"dur":50.25,"args":{"stream":20,"correlation":1,"device":0,"In msg nelems":1024,"Out msg nelems":8192,"Group size":8,"dtype":"BFloat16"}},
 {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":10,"tid":10,"ts":1040,"dur":2,"args":{"correlation":2}},
 {"ph":"X","cat":"user_annotation","name":"FSDP::post_forward (layers.0)","pid":10,"tid":10,"ts":1060,"dur":5},
 {"ph":"X","cat":"kernel","name":"sm90_xmma_gemm_bf16","pid":0,"tid":7,"ts":1075,"dur":100,"args":{"stream":7,"correlation":2}},
 {"ph":"X","cat":"user_annotation","name":"FSDP::pre_backward (layers.0)","pid":10,"tid":11,"ts":1300,"dur":10},
 {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":10,"tid":11,"ts":1320,"dur":2,"args":{"correlation":3}},
 {"ph":"X","cat":"kernel","name":"sm90_gemm_bwd","pid":0,"tid":7,"ts":1330,"dur":200,"args":{"stream":7,"correlation":3}},
 {"ph":"X","cat":"user_annotation","name":"FSDP::post_backward_reduce (layers.0)","pid":10,"tid":11,"ts":1540,"dur":20},
 {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":10,"tid":11,"ts":1545,"dur":2,"args":{"correlation":4}},
 {"ph":"X","cat":"kernel","name":"ncclKernel_ReduceScatter_RING_LL_Sum_float","pid":0,"tid":24,"ts":1550,"dur":80,"args":{"stream":24,"correlation":4}},
 {"ph":"X","cat":"user_annotation","name":"Optimizer.step#AdamW.step","pid":10,"tid":10,"ts":1700,"dur":100},
 {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":10,"tid":10,"ts":1710,"dur":2,"args":{"correlation":5}},
 {"ph":"X","cat":"kernel","name":"multi_tensor_apply_kernel","pid":0,"tid":7,"ts":1720,"dur":50,"args":{"stream":7,"correlation":5}},
 {"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD (Pageable -> Device)","pid":0,"tid":7,"ts":1800,"dur":5,"args":{"stream":7,"correlation":6}},
 {"ph":"i","cat":"cpu_instant_event","s":"t","name":"[memory]","pid":10,"tid":10,"ts":1018,"args":{"Device Type":1,"Device Id":0,"Total Allocated":1000,"Total Reserved":2097152,"Bytes":1000}},
 {"ph":"i","cat":"cpu_instant_event","s":"t","name":"[memory]","pid":10,"tid":10,"ts":1300,"args":{"Device Type":1,"Device Id":0,"Total Allocated":5000,"Total Reserved":2097152,"Bytes":4000}},
 {"ph":"i","cat":"cpu_instant_event","s":"t","name":"[memory]","pid":10,"tid":10,"ts":1400,"args":{"Device Type":0,"Device Id":-1,"Total Allocated":99999,"Total Reserved":0,"Bytes":99999}},
 {"ph":"s","cat":"ac2g","name":"ac2g","pid":10,"tid":10,"ts":1015,"id":1},
 {"ph":"f","cat":"ac2g","name":"ac2g","pid":0,"tid":20,"ts":1020,"id":1,"bp":"e"}
], "traceName": "hand-made"})JSON";

const WorkEvent* Find(const Trace& t, std::string_view name_prefix) {
  for (const WorkEvent& e : t.events) {
    if (t.Str(e.name).substr(0, name_prefix.size()) == name_prefix) return &e;
  }
  return nullptr;
}

TEST(KinetoImport, HandMadeGpuTrace) {
  auto r = ParseTrace(kGpuTrace, "gpu.json");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const Trace& t = *r;
  EXPECT_EQ(t.import.source, "kineto");
  EXPECT_EQ(t.metadata.kind, "measured");
  EXPECT_EQ(t.Ranks(), std::vector<int>{3});
  ASSERT_EQ(t.events.size(), 7u);

  const WorkEvent* ag = Find(t, "ncclDevKernel_AllGather");
  ASSERT_NE(ag, nullptr);
  EXPECT_EQ(ag->lane, kLaneAllGather);
  EXPECT_EQ(ag->start_ns, 1020500);
  EXPECT_EQ(ag->dur_ns, 50250);
  EXPECT_EQ(t.Str(ag->op_id), "fwd/layers.0/all_gather");
  EXPECT_EQ(ag->bytes, 8192 * 2);  // Out msg nelems · bf16: the gathered bytes
  EXPECT_EQ(ag->group_size, 8);
  const WorkEvent* copy_in = Find(t, "void at::native::copy_kernel");
  ASSERT_NE(copy_in, nullptr);
  EXPECT_EQ(copy_in->lane, kLaneAllGather);  // the stream carries NCCL all-gathers
  EXPECT_EQ(t.Str(copy_in->op_id), "fwd/layers.0/copy_in");
  EXPECT_EQ(t.Str(Find(t, "sm90_xmma_gemm_bf16")->op_id), "fwd/layers.0/compute");
  EXPECT_EQ(Find(t, "sm90_xmma_gemm_bf16")->lane, kLaneCompute);
  EXPECT_EQ(t.Str(Find(t, "sm90_gemm_bwd")->op_id), "bwd/layers.0/compute");
  const WorkEvent* rs = Find(t, "ncclKernel_ReduceScatter");
  EXPECT_EQ(rs->lane, kLaneReduceScatter);
  EXPECT_EQ(t.Str(rs->op_id), "bwd/layers.0/reduce_scatter");
  EXPECT_EQ(rs->bytes, 0);       // the profiler recorded no size for it
  EXPECT_EQ(rs->group_size, 8);  // distributedInfo.world_size
  EXPECT_EQ(t.Str(Find(t, "multi_tensor_apply_kernel")->op_id), "step/optimizer");
  EXPECT_EQ(Find(t, "Memcpy HtoD")->lane, kLaneH2D);

  ASSERT_EQ(t.markers.size(), 1u);
  EXPECT_EQ(t.Str(t.markers[0].name), "step_begin");
  EXPECT_EQ(t.markers[0].time_ns, 1000000);
  EXPECT_EQ(t.ExtraArgs(t.markers[0].extra_args)["step"], 5);

  // GPU allocator only: the CPU sample (99999) is not this device's memory.
  ASSERT_EQ(t.counters.size(), 3u);
  const TraceStats s = ComputeStats(t);
  ASSERT_EQ(s.memory.size(), 1u);
  EXPECT_EQ(s.memory[0].peak_bytes, 5000);
  EXPECT_EQ(s.memory[0].time_ns, 1300000);
  EXPECT_EQ(t.import.unknown_by_name.at("ph=s cat=ac2g"), 1);
  EXPECT_EQ(t.import.unknown_by_name.at("M process_name"), 1);
  EXPECT_GT(t.import.unit_labels, 0);
}

TEST(KinetoImport, ErrorsNameTheEvent) {
  std::string bad = kGpuTrace;
  bad.replace(bad.find("\"dur\":100,"), 10, "\"dur\":\"x\",");
  auto r = ParseTrace(bad, "gpu.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("gpu.json: traceEvents[9].dur"), std::string::npos)
      << r.status().message();
}

// A real FSDP2 step recorded by tools/record_fsdp2_trace.py (2 gloo ranks on CPU, torch 2.15).
TEST(KinetoImport, RealFsdp2CpuTrace) {
  for (int rank : {0, 1}) {
    const std::string path = std::string(SHARDSCOPE_SOURCE_DIR) +
                             "/tests/fixtures/kineto/fsdp2_cpu_rank" + std::to_string(rank) +
                             ".json.gz";
    auto r = ReadTrace(path);
    ASSERT_TRUE(r.ok()) << r.status().message();
    const Trace& t = *r;
    EXPECT_EQ(t.import.source, "kineto");
    EXPECT_EQ(t.Ranks(), std::vector<int>{rank});
    std::map<int, int> per_lane;
    std::set<std::string> op_ids;
    for (const WorkEvent& e : t.events) {
      ++per_lane[e.lane];
      op_ids.insert(std::string(t.Str(e.op_id)));
    }
    // 2 blocks + root: forward all-gathers of root, layers.0, layers.1 and backward re-gathers
    // of the two resharded blocks; one reduce-scatter per unit.
    EXPECT_EQ(per_lane[kLaneAllGather], 5);
    EXPECT_EQ(per_lane[kLaneReduceScatter], 3);
    EXPECT_GT(per_lane[kLaneCompute], 50);
    for (const char* id :
         {"fwd/root/all_gather", "fwd/layers.0/all_gather", "fwd/layers.1/all_gather",
          "bwd/layers.0/all_gather", "bwd/layers.1/all_gather", "bwd/layers.1/reduce_scatter",
          "bwd/layers.0/reduce_scatter", "bwd/root/reduce_scatter", "fwd/layers.0/compute",
          "bwd/layers.1/compute", "step/optimizer", "fwd/root/copy_in", "fwd/layers.0/copy_out",
          "fwd/root/compute:1", "bwd/root/compute", "bwd/root/compute:1",
          "bwd/layers.0/reduce_copy_in"}) {
      EXPECT_EQ(op_ids.count(id), 1u) << "rank " << rank << " lacks " << id;
    }
    ASSERT_EQ(t.markers.size(), 1u);
    EXPECT_GT(t.counters.size(), 10u);
    EXPECT_GT(t.import.unknown_events, 0);
    const TraceStats s = ComputeStats(t);
    ASSERT_EQ(s.steps.size(), 1u);
    EXPECT_GT(s.steps[0].comm_ns, 0);
    EXPECT_GT(s.steps[0].compute_ns, 0);
    EXPECT_LE(s.steps[0].busy_ns, s.steps[0].step_ns);
    ASSERT_EQ(s.memory.size(), 1u);
    EXPECT_GT(s.memory[0].peak_bytes, 0);
  }
}

}  // namespace
}  // namespace shardscope

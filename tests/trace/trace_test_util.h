// Hand-made traces shared by the trace tests.
#pragma once

#include <string>

#include "core/trace/trace.h"

namespace shardscope::testing {

// Two ranks, one step each: compute 0–100 µs and 150–250 µs, all-gather 50–120 µs (overlapping
// compute for 50 µs, exposed for 20 µs), reduce-scatter 240–300 µs, memory counters, markers.
inline Trace SmallTrace() {
  Trace t;
  t.metadata.kind = "predicted";
  t.metadata.tool_version = "shardscope test";
  t.metadata.scenario = {{"model", "tiny"}};
  for (int r = 0; r < 2; ++r) {
    t.AddMarker(r, 0, "step_begin");
    WorkEvent& c0 = t.AddWork(r, kLaneCompute, "fwd layers.0", "fwd/layers.0/compute", 0, 100000);
    c0.flops = 1.5e12;
    WorkEvent& ag =
        t.AddWork(r, kLaneAllGather, "nccl:all_gather", "fwd/layers.1/all_gather", 50000, 70000);
    ag.bytes = 64 << 20;
    ag.group_size = 8;
    ag.busbw_gbps = 123.25;
    t.AddWork(r, kLaneCompute, "fwd layers.1", "fwd/layers.1/compute", 150000, 100000).flops = 2e12;
    WorkEvent& rs = t.AddWork(r, kLaneReduceScatter, "nccl:reduce_scatter",
                              "bwd/layers.1/reduce_scatter", 240000, 60000);
    rs.bytes = 128 << 20;
    rs.group_size = 8;
    t.AddCounter(r, 0, "sharded_params_bytes", 1000);
    t.AddCounter(r, 0, "allocated_bytes", 1000);
    t.AddCounter(r, 50000, "unsharded_params_bytes", 4000);
    t.AddCounter(r, 50000, "allocated_bytes", 5000);
    t.AddCounter(r, 250000, "unsharded_params_bytes", 0);
    t.AddCounter(r, 250000, "allocated_bytes", 1000);
  }
  t.AddMarker(0, 50000, "peak_memory");
  return t;
}

}  // namespace shardscope::testing

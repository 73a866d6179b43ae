// Small traces built in memory for the viewer's tests.
#pragma once

#include <string>

#include "core/trace/trace.h"

namespace shardscope::viewer::testing {

// One rank: compute [0,100) "fwd/model.layers.0/compute", an all-gather [10,60) hidden by it
// (op "fwd/model.layers.0/all_gather"), compute [200,300) "bwd/root/compute", a step_begin at 0,
// and memory: activations 10 → 50 at 150 → 20 at 250, allocated = activations + 5.
inline Trace PredictedPair() {
  Trace t;
  t.metadata.kind = "predicted";
  t.AddMarker(0, 0, "step_begin");
  t.AddWork(0, kLaneCompute, "gemm", "fwd/model.layers.0/compute", 0, 100);
  WorkEvent& ag =
      t.AddWork(0, kLaneAllGather, "ncclAllGather", "fwd/model.layers.0/all_gather", 10, 50);
  ag.bytes = 1 << 20;
  ag.group_size = 8;
  ag.busbw_gbps = 100;
  t.AddWork(0, kLaneCompute, "gemm", "bwd/root/compute", 200, 100);
  t.AddCounter(0, 0, "activations_bytes", 10);
  t.AddCounter(0, 0, "allocated_bytes", 15);
  t.AddCounter(0, 150, "activations_bytes", 50);
  t.AddCounter(0, 150, "allocated_bytes", 55);
  t.AddCounter(0, 250, "activations_bytes", 20);
  t.AddCounter(0, 250, "allocated_bytes", 25);
  return t;
}

// The "measured" side, torchtitan's FQNs (no "model." prefix), starting at 1000: the layer's
// compute is two kernels (70 + 80), its all-gather runs [1100,1180) (20 ns exposed past the
// compute's end at 1160... see the test), and bwd/root/compute takes 90.
inline Trace MeasuredPair() {
  Trace t;
  t.metadata.kind = "measured";
  t.AddMarker(0, 1000, "step_begin");
  t.AddWork(0, kLaneCompute, "k1", "fwd/layers.0/compute", 1000, 70);
  t.AddWork(0, kLaneCompute, "k2", "fwd/layers.0/compute", 1080, 80);
  t.AddWork(0, kLaneAllGather, "ncclAllGather", "fwd/layers.0/all_gather", 1100, 80);
  t.AddWork(0, kLaneCompute, "k3", "bwd/root/compute", 1200, 90);
  t.AddWork(0, kLaneCompute, "k4", "bwd/only_here/compute", 1300, 5);
  return t;
}

}  // namespace shardscope::viewer::testing

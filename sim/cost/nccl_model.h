// NCCL's own collective cost model, in one place: a table of constants (NVIDIA/nccl
// src/graph/tuning.cc and src/tuning/*.cc, NCCL 2.30) and one formula. For every algorithm
// (Ring, Tree, NVLS, NVLSTree, PAT) and protocol (LL, LL128, Simple) that NCCL would consider
// for the collective and the group, it computes
//
//   time = launch + baseLat + bytes / effBw(bytes)
//   effBw = min(maxAlgBw, nCh × channelBytes / Tpipe)                     (NCCL 2.30 pipeline)
//   Tpipe = stages × (hwLat / 2 + s / bwCh) + (slices − 1) × s / bwCh     per channel
//
// and keeps the fastest, as NCCL's tuner does. maxAlgBw is NCCL's bandwidth table (protocol
// factors and per-channel caps; NVLink figures inside a node, the per-GPU NIC for the
// inter-node steps); the pipeline term is why bandwidth only approaches its plateau at
// hundreds of MB: a channel's share is cut into slices of at most the protocol's slice size
// and the first slice must cross all `stages` steps before the pipeline is full. Sends,
// receives and all-to-all are point-to-point transfers over the same links.
//
// Contents:
//   NcclSystem       the links and knobs the formula needs (from Hardware + CostParams)
//   NcclSystemFor    Hardware + CostParams → NcclSystem
//   NcclCollective   one estimate (the engine goes through CostModel::CollectiveNs)
// Bus bandwidth: core/schedule/op_kind.h BusBandwidthFactor (the project's one convention).
#pragma once

#include <cstdint>

#include "core/schedule/op_kind.h"
#include "core/schedule/schedule.h"
#include "sim/cost/cost_model.h"
#include "sim/cost/cost_params.h"
#include "sim/hardware/hardware.h"

namespace shardscope {

struct NcclSystem {
  GpuArch arch = GpuArch::kHopper;
  double intra_bus_gbps = 0;   // ring bus bandwidth over NVLink: links × NCCL's per-link rate
  double nic_gbps = 0;         // achievable network bandwidth per GPU
  double local_copy_gbps = 0;  // device-local copy rate (group of one rank)
  int channels = 32;           // ring / tree channels
  int nvls_channels = 16;
  bool nvls = false;         // hardware has NVLS and it is enabled
  double launch_us = 15;     // per collective, outside NCCL's own model
  double latency_scale = 1;  // calibration multipliers
  double bandwidth_scale = 1;
};

NcclSystem NcclSystemFor(const Hardware& hw, const CostParams& params);

// `group.domains` > 0 (an NVLink domain spanning nodes) replaces its nodes: inside a domain
// every step runs over NVLink. `type` must be a communication op (all-gather, reduce-scatter,
// all-reduce, all-to-all, send, recv); anything else is priced as a device-local copy.
CollectiveEstimate NcclCollective(OpType type, int64_t bytes, const GroupShape& group,
                                  const NcclSystem& sys);

}  // namespace shardscope

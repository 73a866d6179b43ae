// The order in which each pipeline stage runs forward and backward of its model chunks
// (torch.distributed.pipelining's ScheduleGPipe / Schedule1F1B / ScheduleInterleaved1F1B,
// Megatron's interleaved order, which PyTorch's is when the micro-batches are a multiple of pp;
// PyTorch's rounds rule otherwise). Without pipelining it is F, B per micro-batch.
//
// Contents:
//   PipeAction      forward or backward of one model chunk for one micro-batch
//   PipelineOrder   per stage, its actions in issue order; errors name the option
//   RepeatedPipelineOrder  several passes of it (gradient accumulation)
#pragma once

#include <string>
#include <vector>

#include "core/util/status.h"

namespace shardscope {

struct PipeAction {
  bool forward = true;
  int chunk = 0;  // global model chunk: stage s runs chunks s, s + pp, s + 2·pp, ...
  int micro = 0;
  bool operator==(const PipeAction&) const = default;
};

// `schedule`: "1f1b" | "interleaved_1f1b" | "gpipe". `virtual_stages` chunks per stage (only
// interleaved_1f1b allows more than one); `micro_batches` ≥ 1.
Result<std::vector<std::vector<PipeAction>>> PipelineOrder(const std::string& schedule, int pp,
                                                           int virtual_stages, int micro_batches);

// `passes` runs of PipelineOrder(micro_batches) one after another on each stage, micro-batches
// numbered on (pass p's micro-batch m is p · micro_batches + m): gradient accumulation under a
// pipeline, where each accumulation step is its own schedule.step().
Result<std::vector<std::vector<PipeAction>>> RepeatedPipelineOrder(const std::string& schedule,
                                                                   int pp, int virtual_stages,
                                                                   int micro_batches, int passes);

}  // namespace shardscope

// The op_id grammar: the one stable name of an operation of the step, shared by the schedule
// builder, the pipeline emitter, the PyTorch (Kineto) importer, `diff`, the viewer and
// `calibrate` (formats.md §3 `args.op_id`). Nothing else formats or splits op_ids.
//
// Contents:
//   OpPhase        fwd | bwd | step
//   OpId           the parsed parts of one op_id
//   FormatOpId     parts → text
//   ParseOpId      text → parts (InvalidInput naming the text on a malformed id)
//   UnitOpLabel    the unit part for a unit FQN ("root" for the root, whose FQN is "")
//   ChunkRootLabel / ChunkLabel   pipeline labels: "root.chunk<c>", "chunk<c>"
//   op_what::*     the `what` names FSDP2's own operations use
//
// Grammar:
//   op_id  := [ "mb" <micro> "/" ] phase "/" ( unit "/" what | what )
//   phase  := "fwd" | "bwd" | "step"        (step-level ops have no unit: "step/optimizer")
//   unit   := "root" | "root.chunk" <c> | "chunk" <c> | <unit FQN>   (no '/' inside)
//   what   := <base> [ ":" <index> ]        (index ≥ 1; index 0 is written without suffix)
// Examples: "fwd/model.layers.3/all_gather", "bwd/model.layers.3/compute:1",
//   "mb2/bwd/root.chunk1/reduce_scatter", "fwd/chunk0/send", "step/optimizer".
// The micro-batch prefix appears only when a step has more than one micro-batch.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/util/status.h"

namespace shardscope {

enum class OpPhase : uint8_t { kForward, kBackward, kStep };
std::string_view OpPhaseName(OpPhase phase);  // "fwd" | "bwd" | "step"

struct OpId {
  int micro = -1;  // micro-batch; -1: no "mb<k>/" prefix
  OpPhase phase = OpPhase::kForward;
  std::string unit;  // unit label (UnitOpLabel); empty for step-level ops
  std::string what;  // base name, e.g. "compute", "all_gather", "tp_all_reduce"
  int index = 0;     // the ":k" suffix; 0 means none
  bool operator==(const OpId&) const = default;
};

std::string FormatOpId(const OpId& id);
// Convenience for builders: FormatOpId({micro, phase, unit, what, index}).
std::string MakeOpId(OpPhase phase, std::string_view unit, std::string_view what, int index = 0,
                     int micro = -1);
Result<OpId> ParseOpId(std::string_view text);

std::string UnitOpLabel(const std::string& unit_fqn);
std::string ChunkRootLabel(int chunk);  // "root.chunk<c>": the FSDP root of pipeline chunk c
std::string ChunkLabel(int chunk);      // "chunk<c>": pipeline sends / receives of chunk c

// The `what` of FSDP2's operations (runtime.md), so every producer spells them alike.
namespace op_what {
inline constexpr std::string_view kCompute = "compute";      // a unit's own module work
inline constexpr std::string_view kRecompute = "recompute";  // activation checkpointing
inline constexpr std::string_view kCopyIn = "copy_in";       // all-gather copy-in / cast
inline constexpr std::string_view kAllGather = "all_gather";
inline constexpr std::string_view kCopyOut = "copy_out";             // all-gather copy-out
inline constexpr std::string_view kReduceCopyIn = "reduce_copy_in";  // reduce-scatter copy-in
// A micro-step without gradient sync: the gradients folded into the unsharded accumulator.
inline constexpr std::string_view kAccumulateGrad = "accumulate_grad";
inline constexpr std::string_view kReduceScatter = "reduce_scatter";
inline constexpr std::string_view kAllReduce = "all_reduce";  // HSDP replicate reduction
inline constexpr std::string_view kAllReduceReplicate = "all_reduce_replicate";  // replicate params
inline constexpr std::string_view kH2D = "h2d";
inline constexpr std::string_view kD2H = "d2h";
inline constexpr std::string_view kD2HReplicate = "d2h_replicate";
inline constexpr std::string_view kSend = "send";
inline constexpr std::string_view kRecv = "recv";
inline constexpr std::string_view kOptimizer = "optimizer";             // step/optimizer
inline constexpr std::string_view kWaitReductions = "wait_reductions";  // step/wait_reductions
}  // namespace op_what

}  // namespace shardscope

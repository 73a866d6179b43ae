// What a collective is for: FSDP's parameter all-gather and gradient reduce-scatter, the
// data-parallel (HSDP / replicated-parameter) all-reduce, tensor, context, expert and pipeline
// parallel traffic. The summary, `stats` and the printed report break communication time down
// by it (core/trace/accounting.h keeps one interval set per purpose).
//
// Contents:
//   CommPurpose, kNumCommPurposes, CommPurposeName   the purposes and their JSON names
//   PurposeOfDims     a schedule's process group (its mesh dims) → purpose
//   PurposeOfOpId     an op_id's `what` (the builder names each collective by its purpose)
//   EventPurpose      a trace event → purpose (its op_id, else its kind)
//
// The one rule: the group a collective runs on says what it is for. A schedule knows the group
// (ProcessGroup::dims); a trace keeps only the op_id, whose `what` the schedule builder derives
// from that group ("tp_all_reduce" on the tp group, "all_gather" on the shard group, "send" on
// a pp pair), so both sides agree (tests/accounting checks it op by op). An FSDP all-gather's
// copy-in counts with the all-gather, as it does in the kind accounting. Without an op_id
// (a profiler trace FSDP labels did not reach) the kind decides: all-gather → FSDP, reduce-
// scatter → FSDP, all-reduce → data parallel, all-to-all → EP, p2p → PP.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "core/trace/trace.h"
#include "core/trace/work_kind.h"

namespace shardscope {

enum class CommPurpose : uint8_t {
  kNone,  // not communication
  kFsdpAllGather,
  kFsdpReduceScatter,
  kDpAllReduce,  // HSDP's replicate all-reduce and replicated parameters' all-reduce
  kTp,
  kCp,
  kEp,
  kPp,
};
constexpr int kNumCommPurposes = 8;
// "", "fsdp_all_gather", "fsdp_reduce_scatter", "hsdp_all_reduce", "tp", "cp", "ep", "pp".
std::string_view CommPurposeName(CommPurpose purpose);

// `dims`: the mesh dims of the collective's group (ProcessGroup::dims); `kind` its WorkKind.
// kNone when `kind` is not communication.
CommPurpose PurposeOfDims(std::span<const std::string> dims, WorkKind kind);
// `op_id`: any text; one that does not parse as an op_id falls back on `kind`.
CommPurpose PurposeOfOpId(std::string_view op_id, WorkKind kind);
// PurposeOfOpId(event's op_id, kind) for a communication `kind`, else kNone.
CommPurpose EventPurpose(const Trace& trace, const WorkEvent& event, WorkKind kind);

}  // namespace shardscope

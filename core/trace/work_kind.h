// What a piece of work counts as in the step's time accounting, and the bus bandwidth of a
// collective: one classifier and one nccl-tests convention for predicted and measured steps
// (formats.md §2: work is classified by kind, not by lane).
//
// Contents:
//   WorkKind, kNumWorkKinds, WorkKindName   compute, host, the five communication kinds, copies
//   IsCommunication                         the kinds that count as communication
//   CollectiveKindOfName                    the collective an NCCL / gloo name stands for
//   ClassifyWork                            the one rule: (collective?, lane, on host?) → kind
//   EventCollective, ClassifyEvent          that rule applied to a trace's WorkEvent
//   BusBandwidthFactor                      busbw / algbw of a collective over n ranks
//
// The rule: work on the host (the offloaded optimizer step) is host time; a collective is
// communication of its own kind on whatever lane it runs (TP, CP and EP collectives issued on
// the compute stream included); other work on a collective lane (FSDP2's all-gather copy-in,
// copy kernels on an NCCL stream) counts with that lane's collective; h2d / d2h copies are
// copies (busy, neither compute nor communication); everything else is compute.
// A ScheduleOp is classified by its OpType (core/timeline/op_kind.h), a trace event by its
// name (collectives begin with "nccl", formats.md §3) or its group_size: both feed ClassifyWork.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/trace/trace.h"

namespace shardscope {

enum class WorkKind : uint8_t {
  kCompute,
  kHost,
  kAllGather,
  kReduceScatter,
  kAllReduce,
  kAllToAll,
  kP2P,
  kH2D,
  kD2H,
};
constexpr int kNumWorkKinds = 9;
// "compute", "host", "all_gather", "reduce_scatter", "all_reduce", "all_to_all", "p2p", "h2d",
// "d2h".
std::string_view WorkKindName(WorkKind kind);
// all_gather, reduce_scatter, all_reduce, all_to_all, p2p.
bool IsCommunication(WorkKind kind);

// The collective `name` stands for when it names one: it begins with "nccl" (any case;
// ncclAllGather, ncclDevKernel_ReduceScatter_RING_LL, nccl:all_to_all) or "gloo:". The kind
// comes from the name (allgather / reducescatter / allreduce / alltoall / send / recv, with or
// without underscores); a name that says none (ncclKernel_Broadcast) takes `lane`'s collective,
// else all_reduce. nullopt for any other name.
std::optional<WorkKind> CollectiveKindOfName(std::string_view name, int lane);

// `collective`: the op's collective kind when it is one (must be a communication kind).
WorkKind ClassifyWork(std::optional<WorkKind> collective, int lane, bool on_host);

// The event's collective kind when it is one: its name says so (CollectiveKindOfName) or it
// carries a group size (then its lane's collective, else all_reduce).
std::optional<WorkKind> EventCollective(const Trace& trace, const WorkEvent& event);
// ClassifyWork(EventCollective, lane, on host), on the host when the event's extra args hold
// "on_host": true (what core/timeline/make_trace.h writes for ScheduleOp::on_host).
WorkKind ClassifyEvent(const Trace& trace, const WorkEvent& event);

// nccl-tests PERFORMANCE.md: busbw = algbw × factor, with all-reduce 2(n−1)/n, all-gather and
// reduce-scatter (n−1)/n of the gathered size, all-to-all (n−1)/n, p2p 1. For n ≤ 1 the
// factor is 0 (what nccl-tests prints): nothing crosses a link, whatever the local copy costs.
// 0 for kinds that are not communication.
double BusBandwidthFactor(WorkKind kind, int n);

}  // namespace shardscope

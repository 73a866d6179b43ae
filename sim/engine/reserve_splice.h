// A long step's allocator calls from two short runs' (steady_state.h), so that the fast path
// gets the whole step's reserve without simulating the whole step.
//
// Why: the caching allocator's reserve is not periodic in the micro-batch count even where
// everything else is. Its blocks split and coalesce differently as a step goes on, and the
// cool-down's allocations (the last reductions, the optimizer step) find a differently
// fragmented cache: GPT-3 175B-sized stages on TP 8 x PP 8 reserve 40.58 GiB with 9
// micro-batches, 40.86 with 17, 40.58 with 25, 40.72 with 33 and 64 (`simulate --exact`), while
// step time is affine and the allocated peak constant from 9 on. The calls themselves are
// periodic: the run of b micro-batches is the run of a with b − a more periods of the steady
// state inserted, and so is the step of M. Replaying the spliced calls gives the reserve of M;
// no interpolation of reserves does.
//
// Contents:
//   SpliceAllocatorCalls   one role's calls of the runs of a and b micro-batches → its calls
//                          with m, or nullopt where b is not a with periods inserted
//
// How. With a's calls P·S and b's P·X·S (P their common start, X the b − a inserted periods,
// checked to repeat with period |X| / (b − a), together with the period before X), the calls of
// m are P·X'·S with m − a periods in X'. A free names its allocation by index: in X' it keeps
// its distance (in allocations) back to it, in S it names the same allocation as in a (one
// allocated before the steady state: a gradient accumulator) or one moved by the inserted
// allocations, as it is in b. Any call that fits neither rule, a free of an allocation of
// another size, or one freed twice, ends the splice (nullopt): the caller then simulates the
// whole step.
#pragma once

#include <optional>

#include "sim/engine/memory_tracker.h"

namespace shardscope::sim {

// `a` and `b`: one role's calls (TrackMemory) in the runs of `ma` < `mb` micro-batches; `m` >
// `mb` the step's.
std::optional<AllocatorCalls> SpliceAllocatorCalls(const AllocatorCalls& a, const AllocatorCalls& b,
                                                   int ma, int mb, int m);

}  // namespace shardscope::sim

// The MPI communicators of a rank's schedule groups, made collectively over the world.
// Each rank's schedule lists only its own groups, so the ranks first exchange their group
// lists (name and ranks), check that they agree (every member of a group lists it), and then
// all call MPI_Comm_split once per distinct group of the whole world, in one sorted order:
// no rank can wait in a split another rank never reaches.
//
// Contents:
//   GroupKey        "name|r0,r1,..." (+ "#k" for the k-th repeat), what the ranks compare
//   SplitGroups     the communicators of `groups`, in their order (errors returned, not fatal)
#pragma once

#include <mpi.h>

#include <span>
#include <string>
#include <vector>

#include "core/schedule/schedule.h"
#include "core/util/status.h"

namespace shardscope::backend {

std::string GroupKey(const ProcessGroup& group);

// Collective over MPI_COMM_WORLD: every rank calls it once with its schedule's groups (each
// holding the rank). RuntimeError naming the group and the rank when the schedules disagree.
Result<std::vector<MPI_Comm>> SplitGroups(std::span<const ProcessGroup> groups, int world_rank,
                                          int world_size);

}  // namespace shardscope::backend

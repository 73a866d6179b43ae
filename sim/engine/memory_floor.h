// What a step certainly holds in memory, read off its schedule without running it: a lower
// bound on every role's peak allocated bytes, so that a sweep can call a variant "does not fit"
// before pricing, running and replaying it (sim/explore; the simulation is what costs, the
// schedule is already built).
//
// Why it is a bound whatever the timing: the ops of one (role, lane) stream run one after the
// other in issue order (schedule.h, rule 1), so their starts and ends follow one another in the
// memory replay's log in that order (start 1, end 1, start 2, ...), however long each op takes.
// A buffer that one op of the stream allocates and a later transition of the same stream frees
// is live at every transition in between; the buffers live before the step
// (Schedule::initial_memory) are live throughout. So at each transition of a stream the replay's
// allocated bytes are at least the initial bytes plus that stream's live buffers, and its peak
// is at least their maximum over the stream. A buffer that crosses streams is placed on its
// role's compute stream through direct dependencies: allocated on another stream, it is live
// from the start of the first compute op that waits for the allocating op (or a later op of
// its stream); freed on another stream, up to the end of the last compute op that the freeing
// op (or an earlier op of its stream) waits for. One that no such wait pins, and anonymous
// effects, are left out: their order against the stream depends on the timing.
//
// Why that proves a job does not fit: the allocator model (caching_allocator.h) reserves at
// least what is allocated (blocks round sizes up), unless an allocation failed; either way the
// summary's `fits` is false once allocated bytes exceed the capacity. tests/engine/
// memory_floor_test.cpp checks the bound against replays with random durations and full
// simulations of the goldens and random small jobs (the 70B sweep grid: docs/sweep.md).
#pragma once

#include <cstdint>

#include "core/schedule/schedule.h"

namespace shardscope::sim {

struct MemoryFloor {
  int role = -1;      // the role with the highest floor; -1 for a schedule without roles
  int64_t bytes = 0;  // allocated bytes that role certainly holds at one instant
  int op = -1;        // the op at whose start or end it holds them; -1: before the step
};

// The highest floor over the schedule's roles. Ignores effects it cannot place (buffer ids
// outside the table, ops out of range): the engine and the memory replay report those.
MemoryFloor ScheduleMemoryFloor(const Schedule& schedule);

}  // namespace shardscope::sim

#include "sim/engine/memory_floor.h"

#include <algorithm>
#include <vector>

namespace shardscope::sim {

MemoryFloor ScheduleMemoryFloor(const Schedule& schedule) {
  const int ops = static_cast<int>(schedule.ops.size());
  const int roles = static_cast<int>(schedule.roles.size());
  const int streams = roles * kNumLanes;
  // Each op's place in its stream; a stream's transitions are numbered 2·place (start) and
  // 2·place + 1 (end), and `base[k]` is where stream k's run of them begins in `delta`.
  std::vector<int> place(ops, -1);
  std::vector<int> length(streams, 0);
  for (int i = 0; i < ops; ++i) {
    const ScheduleOp& op = schedule.ops[i];
    if (op.role < 0 || op.role >= roles) continue;
    const int k = LaneKey(op);
    if (k < 0 || k >= streams) continue;
    place[i] = length[k]++;
  }
  std::vector<int64_t> base(streams + 1, 0);
  for (int k = 0; k < streams; ++k) base[k + 1] = base[k] + 2 * int64_t{length[k]};
  std::vector<int64_t> delta(base[streams], 0);
  auto transition = [&](int op, MemoryEffect::When when) {
    return 2 * place[op] + (when == MemoryEffect::When::kEnd ? 1 : 0);
  };
  for (const Buffer& b : schedule.buffers) {
    if (b.alloc_op < 0 || b.alloc_op >= ops || place[b.alloc_op] < 0 || b.bytes <= 0) continue;
    const int k = LaneKey(schedule.ops[b.alloc_op]);
    const int from = transition(b.alloc_op, b.alloc_when);
    if (b.free_op < 0) {  // live past the step
      delta[base[k] + from] += b.bytes;
      continue;
    }
    if (b.free_op >= ops || place[b.free_op] < 0 || LaneKey(schedule.ops[b.free_op]) != k) continue;
    const int to = transition(b.free_op, b.free_when);
    if (to <= from) continue;
    delta[base[k] + from] += b.bytes;
    delta[base[k] + to] -= b.bytes;
  }
  MemoryFloor out;
  int out_stream = -1;
  int out_place = -1;
  for (int r = 0; r < roles; ++r) {
    int64_t initial = 0;
    if (r < static_cast<int>(schedule.initial_memory.size())) {
      for (int64_t c : schedule.initial_memory[r]) initial += std::max<int64_t>(0, c);
    }
    if (out.role < 0 || initial > out.bytes) {
      out = {r, initial, -1};
      out_stream = -1;
    }
    for (int lane = 0; lane < kNumLanes; ++lane) {
      const int k = r * kNumLanes + lane;
      int64_t live = initial;
      for (int64_t t = base[k]; t < base[k + 1]; ++t) {
        live += delta[t];
        if (live > out.bytes) {
          out = {r, live, -1};
          out_stream = k;
          out_place = static_cast<int>((t - base[k]) / 2);
        }
      }
    }
  }
  // The op it is held at, found once rather than recorded per transition.
  for (int i = 0; out_stream >= 0 && i < ops; ++i) {
    if (place[i] == out_place && LaneKey(schedule.ops[i]) == out_stream) {
      out.op = i;
      break;
    }
  }
  return out;
}

}  // namespace shardscope::sim

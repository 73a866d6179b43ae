#include "sim/engine/memory_floor.h"

#include <algorithm>
#include <vector>

namespace shardscope::sim {

MemoryFloor ScheduleMemoryFloor(const Schedule& schedule) {
  const int ops = static_cast<int>(schedule.ops.size());
  const int roles = static_cast<int>(schedule.roles.size());
  const int streams = roles * kNumLanes;
  // Each op's place in its stream, and `base[k]` where stream k's ops begin in the per-op
  // arrays; its transitions are numbered 2·place (start) and 2·place + 1 (end), and begin at
  // 2·base[k] in `delta`.
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
  for (int k = 0; k < streams; ++k) base[k + 1] = base[k] + length[k];
  std::vector<int64_t> delta(2 * base[streams], 0);
  auto transition = [&](int op, MemoryEffect::When when) {
    return 2 * place[op] + (when == MemoryEffect::When::kEnd ? 1 : 0);
  };
  // Ordering across streams through direct dependencies on the compute stream. For the op at
  // place q of stream k: `after` is the first compute op that waits for it or for a later op of
  // k (it starts after that op ends: suffix minimum), `before` the last compute op that it or
  // an earlier op of k waits for (prefix maximum). A buffer that another stream allocates is
  // live on the compute stream from the start of the first such compute op; one that another
  // stream frees, up to the end of the last.
  constexpr int kNone = -1;
  std::vector<int> after(base[streams], kNone), before(base[streams], kNone);
  auto compute_stream = [](int role) { return role * kNumLanes; };  // Lane::kCompute
  for (int i = 0; i < ops; ++i) {
    if (place[i] < 0) continue;
    const ScheduleOp& op = schedule.ops[i];
    const int ki = LaneKey(op);
    if (!OpListsInRange(schedule, op)) continue;  // the engine reports it
    for (int d : DepsOf(schedule, op)) {
      if (d < 0 || d >= ops || place[d] < 0 || schedule.ops[d].role != op.role) continue;
      const int kd = LaneKey(schedule.ops[d]);
      if (kd == ki) continue;
      if (ki == compute_stream(op.role)) {
        int& a = after[base[kd] + place[d]];
        if (a == kNone || place[i] < a) a = place[i];
      } else if (kd == compute_stream(op.role)) {
        int& b = before[base[ki] + place[i]];
        b = std::max(b, place[d]);
      }
    }
  }
  for (int k = 0; k < streams; ++k) {
    for (int64_t q = base[k + 1] - 2; q >= base[k]; --q) {
      if (after[q] == kNone || (after[q + 1] != kNone && after[q + 1] < after[q]))
        after[q] = after[q + 1];
    }
    for (int64_t q = base[k] + 1; q < base[k + 1]; ++q)
      before[q] = std::max(before[q], before[q - 1]);
  }

  for (const Buffer& b : schedule.buffers) {
    if (b.alloc_op < 0 || b.alloc_op >= ops || place[b.alloc_op] < 0 || b.bytes <= 0) continue;
    const ScheduleOp& alloc = schedule.ops[b.alloc_op];
    int k = LaneKey(alloc);
    int from = transition(b.alloc_op, b.alloc_when);
    if (b.free_op < 0) {  // live past the step
      delta[2 * base[k] + from] += b.bytes;
      continue;
    }
    if (b.free_op >= ops || place[b.free_op] < 0) continue;
    const ScheduleOp& free = schedule.ops[b.free_op];
    const int kf = LaneKey(free);
    int to = transition(b.free_op, b.free_when);
    if (kf != k) {
      if (free.role != alloc.role) continue;
      const int kc = compute_stream(alloc.role);
      if (k != kc) {
        const int first = after[base[k] + place[b.alloc_op]];
        if (first == kNone) continue;
        from = 2 * first;
      }
      if (kf != kc) {
        const int last = before[base[kf] + place[b.free_op]];
        if (last == kNone) continue;
        to = 2 * last + 2;
      }
      k = kc;
    }
    if (to <= from) continue;
    delta[2 * base[k] + from] += b.bytes;
    delta[2 * base[k] + to] -= b.bytes;
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
      for (int64_t t = 2 * base[k]; t < 2 * base[k + 1]; ++t) {
        live += delta[t];
        if (live > out.bytes) {
          out = {r, live, -1};
          out_stream = k;
          out_place = static_cast<int>(t / 2 - base[k]);
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

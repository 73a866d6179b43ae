// When every operation of every rank of one step ran: what the simulator's engine predicts and
// what a backend measures, for the same Schedule. MakeTrace (make_trace.h) and the step
// accounting (op_accounting.h) take it whichever produced it.
//
// Contents:
//   OpTiming     when one op ran
//   Transition   one op start or end, in the order its producer saw them
//   Timeline     every op's timing (parallel to Schedule::ops) + that order + counters
#pragma once

#include <cstdint>
#include <vector>

namespace shardscope {

struct OpTiming {
  int64_t start_ns = -1;
  int64_t end_ns = -1;
  int64_t duration_ns() const { return end_ns - start_ns; }
};

struct Transition {
  int64_t time_ns = 0;
  int op = 0;
  bool is_start = true;
};

struct Timeline {
  std::vector<OpTiming> ops;         // parallel to Schedule::ops
  std::vector<Transition> log;       // every start and end, in processing order
  std::vector<int64_t> role_end_ns;  // last end time per role
  int64_t step_ns = 0;               // max over roles
  int64_t events_processed = 0;      // simulator: heap pops, stale re-rated ends included
  int64_t stretched_ns = 0;          // simulator: extra compute time caused by overlap contention
};

}  // namespace shardscope

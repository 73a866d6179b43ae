// Hand-made schedules for the engine tests: a tiny builder so each test states only the ops
// it cares about.
#pragma once

#include <string>
#include <vector>

#include "core/schedule/schedule.h"

namespace shardscope::sim::testing {

class ScheduleMaker {
 public:
  explicit ScheduleMaker(int roles = 1) {
    for (int r = 0; r < roles; ++r) {
      s_.roles.push_back(Role{"role" + std::to_string(r), r, 1});
      s_.initial_memory.push_back({});
    }
  }
  int Group(const std::string& name, std::vector<int> ranks) {
    s_.groups.push_back(ProcessGroup{name, std::move(ranks), {}});
    return static_cast<int>(s_.groups.size()) - 1;
  }
  // Adds an op with duration `ns`; returns its index.
  int Op(const std::string& id, Lane lane, OpType type, int64_t ns, std::vector<int> deps = {},
         int role = 0, int group = -1) {
    ScheduleOp op;
    op.role = role;
    op.lane = lane;
    op.type = type;
    SetOpId(s_, op, id);
    op.name = AddWord(s_, id);
    SetDeps(s_, op, deps);
    op.group = group;
    s_.ops.push_back(std::move(op));
    ns_.push_back(ns);
    return static_cast<int>(s_.ops.size()) - 1;
  }
  int Compute(const std::string& id, int64_t ns, std::vector<int> deps = {}, int role = 0) {
    return Op(id, Lane::kCompute, OpType::kCompute, ns, std::move(deps), role);
  }
  int AllGather(const std::string& id, int64_t ns, std::vector<int> deps = {}, int role = 0,
                int group = -1) {
    return Op(id, Lane::kAllGather, OpType::kAllGather, ns, std::move(deps), role, group);
  }
  int ReduceScatter(const std::string& id, int64_t ns, std::vector<int> deps = {}, int role = 0,
                    int group = -1) {
    return Op(id, Lane::kReduceScatter, OpType::kReduceScatter, ns, std::move(deps), role, group);
  }
  void Mem(int op, MemoryEffect::When when, MemCategory c, int64_t bytes, int buffer = -1) {
    AddEffect(s_, s_.ops[op], MemoryEffect{when, c, bytes, buffer});
  }
  Schedule& schedule() { return s_; }
  std::vector<int64_t>& durations() { return ns_; }

 private:
  Schedule s_;
  std::vector<int64_t> ns_;
};

}  // namespace shardscope::sim::testing

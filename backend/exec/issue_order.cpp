#include "backend/exec/issue_order.h"

#include <fmt/format.h>

#include <functional>
#include <queue>

namespace shardscope::backend {

Result<std::vector<int>> IssueOrder(const Schedule& s, int role) {
  const int n = static_cast<int>(s.ops.size());
  std::vector<std::vector<int>> next(n);
  std::vector<int> indegree(n, 0), last_on_lane(kNumLanes, -1), last_on_group(s.groups.size(), -1);
  std::vector<char> mine(n, 0);
  auto edge = [&](int from, int to) {
    next[from].push_back(to);
    ++indegree[to];
  };
  int count = 0;
  for (int i = 0; i < n; ++i) {
    const ScheduleOp& op = s.ops[i];
    if (op.role != role) continue;
    mine[i] = 1;
    ++count;
    const int lane = static_cast<int>(op.lane) - 1;
    if (last_on_lane[lane] >= 0) edge(last_on_lane[lane], i);
    last_on_lane[lane] = i;
    if (op.group >= 0 && op.group < static_cast<int>(s.groups.size())) {
      if (last_on_group[op.group] >= 0) edge(last_on_group[op.group], i);
      last_on_group[op.group] = i;
    }
  }
  for (int i = 0; i < n; ++i) {
    if (!OpListsInRange(s, s.ops[i])) {
      return InvalidInput(OpListsRangeError(s, s.ops[i], fmt::format("schedule: op {}", i)));
    }
  }
  for (int i = 0; i < n; ++i) {
    if (!mine[i]) continue;
    for (int d : DepsOf(s, s.ops[i])) {
      if (d < 0 || d >= n) {
        return InvalidInput(fmt::format("schedule: op '{}' depends on op {}, out of range",
                                        OpIdOf(s, s.ops[i]), d));
      }
      if (mine[d]) edge(d, i);  // another role's op is a peer's: the communicator orders it
    }
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; ++i) {
    if (mine[i] && indegree[i] == 0) ready.push(i);
  }
  std::vector<int> order;
  order.reserve(count);
  while (!ready.empty()) {
    const int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int j : next[i]) {
      if (--indegree[j] == 0) ready.push(j);
    }
  }
  if (static_cast<int>(order.size()) != count) {
    std::string stuck;
    for (int i = 0; i < n && stuck.size() < 400; ++i) {
      if (mine[i] && indegree[i] > 0) stuck += (stuck.empty() ? "" : ", ") + OpIdOf(s, s.ops[i]);
    }
    return InvalidInput(fmt::format(
        "schedule: ops of role {} wait on each other across lanes, deps and communicators "
        "(a cycle): {}",
        role, stuck));
  }
  return order;
}

}  // namespace shardscope::backend

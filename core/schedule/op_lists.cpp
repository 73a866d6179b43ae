// ScheduleOp's lists as ranges of the schedule's shared lists, written op by op (schedule.h).
#include <fmt/format.h>

#include <vector>

#include "core/schedule/schedule.h"

namespace shardscope {
namespace {

template <typename T>
OpRange Append(std::vector<T>& list, std::span<const T> items) {
  // `items` may lie in `list` itself: copied out before the list grows.
  const std::vector<T> copy(items.begin(), items.end());
  const OpRange range{static_cast<int32_t>(list.size()), static_cast<int32_t>(copy.size())};
  list.insert(list.end(), copy.begin(), copy.end());
  return range;
}

template <typename T>
void AddTo(std::vector<T>& list, OpRange& range, const T& item) {
  if (range.count == 0 || range.first + range.count != static_cast<int32_t>(list.size())) {
    range = Append(list,
                   std::span<const T>(list.data() + range.first, static_cast<size_t>(range.count)));
  }
  list.push_back(item);
  ++range.count;
}

}  // namespace

std::string OpListsRangeError(const Schedule& schedule, const ScheduleOp& op,
                              std::string_view where) {
  return fmt::format(
      "{}: dependencies [{}, +{}) or memory effects [{}, +{}) are not ranges of the schedule's "
      "lists ({} and {} entries)",
      where, op.deps.first, op.deps.count, op.memory.first, op.memory.count,
      schedule.dep_list.size(), schedule.effect_list.size());
}

void SetDeps(Schedule& schedule, ScheduleOp& op, std::span<const int> deps) {
  op.deps = Append(schedule.dep_list, deps);
}

void SetDeps(Schedule& schedule, ScheduleOp& op, std::initializer_list<int> deps) {
  SetDeps(schedule, op, std::span<const int>(deps.begin(), deps.size()));
}

void AddDep(Schedule& schedule, ScheduleOp& op, int dep) { AddTo(schedule.dep_list, op.deps, dep); }

void SetEffects(Schedule& schedule, ScheduleOp& op, std::span<const MemoryEffect> effects) {
  op.memory = Append(schedule.effect_list, effects);
}

void AddEffect(Schedule& schedule, ScheduleOp& op, const MemoryEffect& effect) {
  AddTo(schedule.effect_list, op.memory, effect);
}

}  // namespace shardscope

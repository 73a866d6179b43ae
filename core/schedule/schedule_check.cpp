#include "core/schedule/schedule_check.h"

#include <fmt/core.h>

#include <set>
#include <string>
#include <unordered_map>

namespace shardscope {
namespace {

std::string Where(const Schedule& s, size_t i) {
  return fmt::format("schedule op {} ('{}')", i, s.ops[i].op_id);
}

}  // namespace

Status ValidateSchedule(const Schedule& s) {
  struct Live {
    MemCategory category;
    int64_t bytes;
    int role;
  };
  std::unordered_map<int, Live> live;
  std::set<std::pair<int, std::string>> ids;
  for (size_t i = 0; i < s.ops.size(); ++i) {
    const ScheduleOp& op = s.ops[i];
    if (op.role < 0 || op.role >= static_cast<int>(s.roles.size())) {
      return InvalidInput(fmt::format("{}: role {} does not exist", Where(s, i), op.role));
    }
    if (!ids.insert({op.role, op.op_id}).second) {
      return InvalidInput(fmt::format("{}: op_id repeated within role {}", Where(s, i), op.role));
    }
    for (int d : op.deps) {
      if (d < 0 || d >= static_cast<int>(i)) {
        return InvalidInput(fmt::format("{}: dependency {} is not an earlier op", Where(s, i), d));
      }
    }
    if (IsCollective(op.type)) {
      if (op.group < 0 || op.group >= static_cast<int>(s.groups.size())) {
        return InvalidInput(fmt::format("{}: collective without a valid group", Where(s, i)));
      }
      if (op.name.rfind("nccl", 0) != 0) {
        return InvalidInput(
            fmt::format("{}: collective name '{}' must begin with nccl", Where(s, i), op.name));
      }
    }
    for (const MemoryEffect::When when : {MemoryEffect::When::kStart, MemoryEffect::When::kEnd}) {
      for (const MemoryEffect& m : op.memory) {
        if (m.when != when) continue;
        if (m.bytes > 0) {
          if (!live.emplace(m.buffer, Live{m.category, m.bytes, op.role}).second) {
            return InvalidInput(
                fmt::format("{}: buffer {} allocated twice", Where(s, i), m.buffer));
          }
        } else if (m.bytes < 0) {
          auto it = live.find(m.buffer);
          if (it == live.end() || it->second.bytes != -m.bytes ||
              it->second.category != m.category || it->second.role != op.role) {
            return InvalidInput(fmt::format(
                "{}: frees buffer {} ({} bytes of {}) that is not live with that size and category",
                Where(s, i), m.buffer, -m.bytes, MemCategoryName(m.category)));
          }
          live.erase(it);
        }
      }
    }
  }
  if (!live.empty()) {
    const auto& [buffer, l] = *live.begin();
    return InvalidInput(fmt::format(
        "schedule: {} allocation(s) still live at the step's end, e.g. buffer {} ({} bytes of {})",
        live.size(), buffer, l.bytes, MemCategoryName(l.category)));
  }
  if (s.initial_memory.size() != s.roles.size()) {
    return InvalidInput("schedule: initial_memory must have one entry per role");
  }
  return Status::Ok();
}

StepTotals ComputeStepTotals(const Schedule& s, int role) {
  StepTotals t;
  for (const ScheduleOp& op : s.ops) {
    if (op.role != role) continue;
    t.count[op.type]++;
    t.bytes[op.type] += op.bytes;
    if (IsCollective(op.type) && op.group >= 0) {
      const double n = s.groups[op.group].size();
      const double factor = op.type == OpType::kAllReduce ? 2.0 * (n - 1) / n : (n - 1) / n;
      t.bus_bytes[op.type] += factor * static_cast<double>(op.bytes);
      const std::string phase = op.op_id.substr(0, op.op_id.find('/'));
      t.collective_bytes_by_id_kind[phase + "/" + std::string(OpTypeName(op.type))] += op.bytes;
    }
    for (const ComputeItem& item : op.items) {
      if (item.recompute) {
        t.recompute_flops += item.cost.fwd_flops;
      } else if (item.backward) {
        t.bwd_flops += item.cost.bwd_flops;
      } else if (!item.elementwise) {
        t.fwd_flops += item.cost.fwd_flops;
      }
    }
  }
  return t;
}

MemoryPeak IssueOrderPeak(const Schedule& s, int role) {
  MemoryPeak peak;
  std::array<int64_t, kNumMemCategories> cur{};
  if (role < static_cast<int>(s.initial_memory.size())) cur = s.initial_memory[role];
  auto total = [&] {
    int64_t sum = 0;
    for (int64_t v : cur) sum += v;
    return sum;
  };
  auto observe = [&] {
    const int64_t sum = total();
    if (sum > peak.total_bytes) {
      peak.total_bytes = sum;
      peak.by_category = cur;
    }
    for (int c = 0; c < kNumMemCategories; ++c) {
      peak.max_by_category[c] = std::max(peak.max_by_category[c], cur[c]);
    }
  };
  observe();
  for (const ScheduleOp& op : s.ops) {
    if (op.role != role) continue;
    for (const MemoryEffect::When when : {MemoryEffect::When::kStart, MemoryEffect::When::kEnd}) {
      for (const MemoryEffect& m : op.memory) {
        if (m.when == when) cur[static_cast<int>(m.category)] += m.bytes;
      }
      observe();
    }
  }
  return peak;
}

std::string FormatSchedule(const Schedule& s, int role) {
  std::string out;
  for (size_t i = 0; i < s.ops.size(); ++i) {
    const ScheduleOp& op = s.ops[i];
    if (op.role != role) continue;
    std::string deps, mem;
    for (int d : op.deps) deps += fmt::format("{}{}", deps.empty() ? "" : ",", d);
    for (const MemoryEffect& m : op.memory) {
      mem += fmt::format(" {}{}{:+}#{}", m.when == MemoryEffect::When::kStart ? "S:" : "E:",
                         MemCategoryName(m.category), m.bytes, m.buffer);
    }
    out += fmt::format("{:4} {:<14} {:<44} bytes={} items={} deps=[{}]{}\n", i, LaneName(op.lane),
                       op.op_id, op.bytes, op.items.size(), deps, mem);
  }
  return out;
}

}  // namespace shardscope

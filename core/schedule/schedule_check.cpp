#include "core/schedule/schedule_check.h"

#include <fmt/core.h>

#include <array>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include "core/schedule/op_kind.h"
#include "core/trace/op_id_view.h"

namespace shardscope {
namespace {

std::string Where(const Schedule& s, size_t i) {
  return fmt::format("schedule op {} ('{}')", i, OpIdOf(s, s.ops[i]));
}

// The table's own consistency: dense ids, sizes from dtype and count, persistent buffers
// summing to the initial memory.
Status ValidateBufferTable(const Schedule& s) {
  const size_t roles = s.roles.size();
  std::vector<std::array<int64_t, kNumMemCategories>> device(roles), host(roles);
  for (size_t i = 0; i < s.buffers.size(); ++i) {
    const Buffer& b = s.buffers[i];
    if (b.id != static_cast<int>(i)) {
      return InvalidInput(fmt::format("schedule buffer {}: id {} is not its index", i, b.id));
    }
    if (b.role < 0 || b.role >= static_cast<int>(roles)) {
      return InvalidInput(fmt::format("schedule buffer {}: role {} does not exist", i, b.role));
    }
    if (b.numel <= 0 || b.bytes != b.numel * DTypeBytes(b.dtype)) {
      return InvalidInput(fmt::format(
          "schedule buffer {} ('{}', {}): {} bytes is not numel {} × {} bytes of {}", i, b.unit,
          MemCategoryName(b.category), b.bytes, b.numel, DTypeBytes(b.dtype), DTypeName(b.dtype)));
    }
    const int n = static_cast<int>(s.ops.size());
    if (b.alloc_op < -1 || b.alloc_op >= n || b.free_op < -1 || b.free_op >= n) {
      return InvalidInput(fmt::format("schedule buffer {}: op out of range", i));
    }
    if (b.alloc_op < 0) {
      if (b.free_op >= 0) {
        return InvalidInput(
            fmt::format("schedule buffer {}: freed by op {} but never allocated", i, b.free_op));
      }
      (b.host ? host : device)[b.role][static_cast<int>(b.category)] += b.bytes;
    }
  }
  for (size_t r = 0; r < roles; ++r) {
    const bool host_ok = r >= s.initial_host_memory.size() || host[r] == s.initial_host_memory[r];
    if (r < s.initial_memory.size() && device[r] != s.initial_memory[r]) {
      return InvalidInput(
          fmt::format("schedule role {}: the persistent buffers do not sum to initial_memory", r));
    }
    if (!host_ok) {
      return InvalidInput(fmt::format(
          "schedule role {}: the persistent host buffers do not sum to initial_host_memory", r));
    }
  }
  return Status::Ok();
}

// A collective's spec against its op: count and size agree, buffers exist on its role.
Status ValidateCollective(const Schedule& s, size_t i) {
  const ScheduleOp& op = s.ops[i];
  const CollectiveSpec& c = op.collective;
  const int64_t n = s.groups[op.group].size();
  int64_t expected = c.count * DTypeBytes(c.dtype);
  if (op.type == OpType::kAllGather || op.type == OpType::kReduceScatter) expected *= n;
  if (op.type == OpType::kRecv) expected = 0;
  if (c.count <= 0 || op.bytes != expected) {
    return InvalidInput(
        fmt::format("{}: collective count {} of {} over {} ranks does not give its {} bytes",
                    Where(s, i), c.count, DTypeName(c.dtype), n, op.bytes));
  }
  const bool reduces = op.type == OpType::kReduceScatter || op.type == OpType::kAllReduce;
  if (reduces != (c.reduce != CollectiveReduce::kNone)) {
    return InvalidInput(fmt::format("{}: reduce op '{}' does not fit a {}", Where(s, i),
                                    CollectiveReduceName(c.reduce), OpTypeName(op.type)));
  }
  if (!(c.pre_scale > 0) || !(c.post_scale > 0)) {
    return InvalidInput(fmt::format("{}: scaling factors must be > 0", Where(s, i)));
  }
  for (int b : {c.input_buffer, c.output_buffer}) {
    if (b < -1 || b >= static_cast<int>(s.buffers.size()) ||
        (b >= 0 && s.buffers[b].role != op.role)) {
      return InvalidInput(fmt::format("{}: buffer {} is not one of its role's", Where(s, i), b));
    }
    if (b < 0) continue;
    const Buffer& buf = s.buffers[b];
    const int at = static_cast<int>(i);
    if (buf.alloc_op > at || (buf.free_op >= 0 && buf.free_op < at)) {
      return InvalidInput(
          fmt::format("{}: buffer {} is not live around it (allocated by op {}, freed by op {})",
                      Where(s, i), b, buf.alloc_op, buf.free_op));
    }
  }
  return Status::Ok();
}

}  // namespace

Status ValidateSchedule(const Schedule& s) {
  SS_RETURN_IF_ERROR(ValidateBufferTable(s));
  struct Live {
    MemCategory category;
    int64_t bytes;
    int role;
  };
  std::unordered_map<int, Live> live;
  std::set<std::pair<int, std::string>> ids;
  std::vector<char> allocated(s.buffers.size(), 0);
  for (size_t i = 0; i < s.ops.size(); ++i) {
    const ScheduleOp& op = s.ops[i];
    if (op.role < 0 || op.role >= static_cast<int>(s.roles.size())) {
      return InvalidInput(fmt::format("{}: role {} does not exist", Where(s, i), op.role));
    }
    const std::string op_id = OpIdOf(s, op);
    if (!ids.insert({op.role, op_id}).second) {
      return InvalidInput(fmt::format("{}: op_id repeated within role {}", Where(s, i), op.role));
    }
    if (op.id_phase) {
      // Formed from parts (OpIdKey): words of the table, a unit part unless a step-level op,
      // and together an op_id of the grammar with the recorded phase.
      const auto word = [&](int32_t k) {
        return k >= 0 && static_cast<size_t>(k) < s.words.size();
      };
      if (!word(op.id.what) ||
          (*op.id_phase == OpPhase::kStep ? op.id.unit != -1 : !word(op.id.unit))) {
        return InvalidInput(fmt::format(
            "{}: op_id parts (unit {}, what {}) are not words of the "
            "schedule's {} for a '{}' op",
            Where(s, i), op.id.unit, op.id.what, s.words.size(), OpPhaseName(*op.id_phase)));
      }
      const std::optional<OpIdView> id = ParseOpIdView(op_id);
      if (!id || id->phase != *op.id_phase) {
        return InvalidInput(fmt::format("{}: op_id formed from its parts is not a '{}' op_id",
                                        Where(s, i), OpPhaseName(*op.id_phase)));
      }
    }
    if (!OpListsInRange(s, op)) return InvalidInput(OpListsRangeError(s, op, Where(s, i)));
    for (int d : DepsOf(s, op)) {
      if (d < 0 || d >= static_cast<int>(i)) {
        return InvalidInput(fmt::format("{}: dependency {} is not an earlier op", Where(s, i), d));
      }
    }
    if (IsCollective(op.type)) {
      if (op.group < 0 || op.group >= static_cast<int>(s.groups.size())) {
        return InvalidInput(fmt::format("{}: collective without a valid group", Where(s, i)));
      }
      if (NameOf(s, op).rfind("nccl", 0) != 0) {
        return InvalidInput(fmt::format("{}: collective name '{}' must begin with nccl",
                                        Where(s, i), NameOf(s, op)));
      }
      SS_RETURN_IF_ERROR(ValidateCollective(s, i));
    }
    for (const MemoryEffect::When when : {MemoryEffect::When::kStart, MemoryEffect::When::kEnd}) {
      for (const MemoryEffect& m : EffectsOf(s, op)) {
        if (m.when != when) continue;
        if (m.buffer < 0 || m.buffer >= static_cast<int>(s.buffers.size())) {
          return InvalidInput(
              fmt::format("{}: buffer {} is not in the buffer table", Where(s, i), m.buffer));
        }
        const Buffer& b = s.buffers[m.buffer];
        const bool alloc = m.bytes > 0;
        if (b.category != m.category || b.bytes != (alloc ? m.bytes : -m.bytes) ||
            b.role != op.role || (alloc ? b.alloc_op : b.free_op) != static_cast<int>(i) ||
            (alloc ? b.alloc_when : b.free_when) != m.when) {
          return InvalidInput(fmt::format(
              "{}: {} of buffer {} disagrees with its table entry ({} bytes of {}, role {}, "
              "allocated by op {}, freed by op {})",
              Where(s, i), alloc ? "allocation" : "free", m.buffer, b.bytes,
              MemCategoryName(b.category), b.role, b.alloc_op, b.free_op));
        }
        if (m.bytes > 0) {
          allocated[m.buffer] = 1;
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
  for (size_t b = 0; b < s.buffers.size(); ++b) {
    if (s.buffers[b].alloc_op >= 0 && !allocated[b]) {
      return InvalidInput(
          fmt::format("schedule buffer {}: op {} does not allocate it", b, s.buffers[b].alloc_op));
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
      const double factor = BusBandwidthFactor(op.type, s.groups[op.group].size());
      t.bus_bytes[op.type] += factor * static_cast<double>(op.bytes);
      const std::string op_id = OpIdOf(s, op);
      const std::string phase = op_id.substr(0, op_id.find('/'));
      t.collective_bytes_by_id_kind[phase + "/" + std::string(OpTypeName(op.type))] += op.bytes;
    }
    for (const ComputeItem& item : op.items) {
      if (item.recompute) {
        t.recompute_flops += item.cost.fwd_flops;
      } else if (item.backward) {
        t.bwd_flops += item.cost.bwd_flops;
      } else if (item.is_module()) {
        t.fwd_flops += item.cost.fwd_flops;
      }
    }
  }
  return t;
}

IssueOrderMemory IssueOrderPeak(const Schedule& s, int role) {
  IssueOrderMemory peak;
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
      for (const MemoryEffect& m : EffectsOf(s, op)) {
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
    for (int d : DepsOf(s, op)) deps += fmt::format("{}{}", deps.empty() ? "" : ",", d);
    for (const MemoryEffect& m : EffectsOf(s, op)) {
      mem += fmt::format(" {}{}{:+}#{}", m.when == MemoryEffect::When::kStart ? "S:" : "E:",
                         MemCategoryName(m.category), m.bytes, m.buffer);
    }
    std::string coll;
    if (IsCollective(op.type) && op.group >= 0) {
      const CollectiveSpec& c = op.collective;
      coll = fmt::format(" {}[{}]×{} {}", DTypeName(c.dtype), c.count, s.groups[op.group].size(),
                         CollectiveReduceName(c.reduce));
      if (c.pre_scale != 1.0) coll += fmt::format(" pre={:g}", c.pre_scale);
      if (c.post_scale != 1.0) coll += fmt::format(" post={:g}", c.post_scale);
      if (c.input_buffer >= 0 || c.output_buffer >= 0) {
        coll += fmt::format(" #{}→#{}", c.input_buffer, c.output_buffer);
      }
    }
    out += fmt::format("{:4} {:<14} {:<44} bytes={} items={} deps=[{}]{}{}\n", i, LaneName(op.lane),
                       OpIdOf(s, op), op.bytes, op.items.size(), deps, coll, mem);
  }
  return out;
}

}  // namespace shardscope

#include "sim/engine/summary_comm.h"

#include <algorithm>
#include <string>
#include <vector>

#include "core/schedule/op_kind.h"
#include "core/timeline/op_accounting.h"
#include "core/trace/op_id.h"
#include "core/util/units.h"

namespace shardscope::sim {
namespace {

constexpr size_t kMaxExposedCollectives = 5;

// A unit's own module work on the compute lane (forward, backward, recompute), not FSDP's
// copies or the optimizer.
bool IsModuleCompute(const ScheduleOp& op) {
  if (op.type != OpType::kCompute || op.lane != Lane::kCompute) return false;
  return std::any_of(op.items.begin(), op.items.end(),
                     [](const ComputeItem& i) { return i.is_module(); });
}

}  // namespace

StepEdges FindStepEdges(const Schedule& schedule, const Timeline& timeline, int role,
                        int64_t step_end_ns) {
  struct Run {
    int64_t start, end;
    const std::string* unit;
  };
  std::vector<Run> fwd, bwd;
  for (size_t i = 0; i < schedule.ops.size(); ++i) {
    const ScheduleOp& op = schedule.ops[i];
    const OpTiming& t = timeline.ops[i];
    if (op.role != role || t.start_ns < 0 || !IsModuleCompute(op)) continue;
    const std::optional<OpPhase> phase = OpIdPhaseOf(schedule, op);
    const std::string* unit = &UnitOf(schedule, op);
    if (phase == OpPhase::kForward) fwd.push_back({t.start_ns, t.end_ns, unit});
    if (phase == OpPhase::kBackward) bwd.push_back({t.start_ns, t.end_ns, unit});
  }
  auto by_start = [](const Run& a, const Run& b) { return a.start < b.start; };
  std::stable_sort(fwd.begin(), fwd.end(), by_start);
  std::stable_sort(bwd.begin(), bwd.end(),
                   [](const Run& a, const Run& b) { return a.end < b.end; });
  StepEdges e;
  e.end_ns = step_end_ns;
  if (!fwd.empty()) {
    e.head_end_ns = fwd.front().start;
    for (const Run& r : fwd) {
      if (*r.unit != *fwd.front().unit) {
        e.head_end_ns = r.start;
        break;
      }
    }
  }
  e.tail_start_ns = step_end_ns;
  if (!bwd.empty()) {
    e.tail_start_ns = bwd.back().end;
    for (auto it = bwd.rbegin(); it != bwd.rend(); ++it) {
      if (*it->unit != *bwd.back().unit) {
        e.tail_start_ns = it->end;
        break;
      }
    }
  }
  e.tail_start_ns =
      std::clamp(e.tail_start_ns, e.head_end_ns, std::max(e.head_end_ns, step_end_ns));
  return e;
}

void AddCommBreakdown(const Schedule& schedule, const Timeline& timeline, int role,
                      const StepAccount& m, const RankAccounting& accounting, Summary* s) {
  for (int p = 1; p < kNumCommPurposes; ++p) {
    if (m.busy_by_purpose_ns[p] == 0) continue;
    const std::string name(CommPurposeName(static_cast<CommPurpose>(p)));
    s->comm_by_purpose_s[name] = NsToSeconds(m.busy_by_purpose_ns[p]);
    s->exposed_comm_by_purpose_s[name] = NsToSeconds(m.exposed_by_purpose_ns[p]);
  }
  if (m.exposed_comm_ns == 0) return;
  const StepEdges edges = FindStepEdges(schedule, timeline, role, m.end_ns);
  s->edge_exposed_comm_s =
      NsToSeconds(accounting.Window(m.start_ns, edges.head_end_ns).exposed_comm_ns +
                  accounting.Window(edges.tail_start_ns, m.end_ns).exposed_comm_ns);
  struct Candidate {
    size_t op;
    int64_t exposed_ns;
  };
  std::vector<Candidate> found;
  for (size_t i = 0; i < schedule.ops.size(); ++i) {
    const ScheduleOp& op = schedule.ops[i];
    const OpTiming& t = timeline.ops[i];
    if (op.role != role || !IsTracedOp(op, t) || !IsCommunication(WorkKindOf(op))) continue;
    if (const int64_t exposed = accounting.ExposedNs(t.start_ns, t.end_ns); exposed > 0)
      found.push_back({i, exposed});
  }
  std::stable_sort(found.begin(), found.end(), [&](const Candidate& a, const Candidate& b) {
    // The order `stats` lists them in (trace_stats.h), so both name the same ops.
    if (a.exposed_ns != b.exposed_ns) return a.exposed_ns > b.exposed_ns;
    if (timeline.ops[a.op].start_ns != timeline.ops[b.op].start_ns)
      return timeline.ops[a.op].start_ns < timeline.ops[b.op].start_ns;
    return OpIdOf(schedule, schedule.ops[a.op]) < OpIdOf(schedule, schedule.ops[b.op]);
  });
  for (size_t k = 0; k < found.size() && k < kMaxExposedCollectives; ++k) {
    const ScheduleOp& op = schedule.ops[found[k].op];
    const OpTiming& t = timeline.ops[found[k].op];
    const int64_t edge = accounting.ExposedNs(t.start_ns, std::min(t.end_ns, edges.head_end_ns)) +
                         accounting.ExposedNs(std::max(t.start_ns, edges.tail_start_ns), t.end_ns);
    s->exposed_collectives.push_back(
        {OpIdOf(schedule, op), std::string(CommPurposeName(PurposeOf(schedule, op))),
         NsToSeconds(t.duration_ns()), NsToSeconds(found[k].exposed_ns), NsToSeconds(edge)});
  }
}

}  // namespace shardscope::sim

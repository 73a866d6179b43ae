#include "core/trace/kineto_import_timeline.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <tuple>

namespace shardscope::trace_internal {
namespace {

FsdpKind KindOf(std::string_view kind) {
  if (kind == "pre_forward") return FsdpKind::kPreForward;
  if (kind == "post_forward") return FsdpKind::kPostForward;
  if (kind == "pre_backward") return FsdpKind::kPreBackward;
  if (kind == "post_backward_reshard" || kind == "post_backward_rs_wait" ||
      kind == "post_backward") {
    return FsdpKind::kPostBackward;
  }
  if (kind == "all_gather") return FsdpKind::kAllGather;
  if (kind == "all_gather_copy_out") return FsdpKind::kCopyOut;
  if (kind == "post_backward_reduce") return FsdpKind::kReduce;
  if (kind == "forward_prefetch" || kind == "backward_prefetch") return FsdpKind::kPrefetch;
  if (kind == "root_pre_forward") return FsdpKind::kRootPreForward;
  if (kind == "root_post_backward_callback") return FsdpKind::kRootPostBackward;
  return FsdpKind::kOther;
}

}  // namespace

FsdpLabel ParseFsdpLabel(std::string_view name) {
  std::string_view rest = name.substr(std::min<size_t>(6, name.size()));  // after "FSDP::"
  // FSDPParamGroup._with_fqn appends " [pg=<size>]" when a module has several groups.
  if (const auto pg = rest.rfind(" [pg="); pg != std::string_view::npos && rest.back() == ']') {
    rest = rest.substr(0, pg);
  }
  std::string_view kind = rest, fqn;
  if (const auto paren = rest.find(" ("); paren != std::string_view::npos && rest.back() == ')') {
    kind = rest.substr(0, paren);
    fqn = rest.substr(paren + 2, rest.size() - paren - 3);
  } else if (const auto for_pos = rest.find(" for "); for_pos != std::string_view::npos) {
    kind = rest.substr(0, for_pos);
    fqn = rest.substr(for_pos + 5);
  } else if (rest.starts_with("backward_prefetch for") ||
             rest.starts_with("forward_prefetch for")) {
    kind = rest.substr(0, rest.find(' '));  // "... for " with the root's empty FQN, trimmed
  }
  FsdpLabel label;
  label.kind = KindOf(kind);
  if (label.kind != FsdpKind::kOther) label.unit = UnitOpLabel(std::string(fqn));
  return label;
}

std::vector<int> InnermostLabels(const std::vector<LabelRange>& labels,
                                 const std::vector<int64_t>& times) {
  std::vector<int> order(times.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return times[a] < times[b]; });
  std::vector<int> result(times.size(), -1);
  std::vector<int> open;  // labels begun by the sweep's time, innermost last
  size_t next = 0;
  for (int q : order) {
    const int64_t t = times[q];
    while (next < labels.size() && labels[next].start_ns <= t) {
      // Drop what ended before this label began, so nested ranges keep a true stack.
      while (!open.empty() && labels[open.back()].end_ns <= labels[next].start_ns) open.pop_back();
      open.push_back(static_cast<int>(next++));
    }
    while (!open.empty() && labels[open.back()].end_ns <= t) open.pop_back();
    // Ranges that cross (two threads) can leave an ended range below an open one.
    for (auto it = open.rbegin(); it != open.rend(); ++it) {
      if (labels[*it].end_ns > t) {
        result[q] = *it;
        break;
      }
    }
  }
  return result;
}

StepTimeline::StepTimeline(const std::vector<LabelRange>& labels, std::vector<int64_t> step_starts,
                           std::vector<int64_t> backward_marks,
                           std::vector<std::pair<int64_t, int64_t>> optimizer,
                           const std::vector<std::pair<int64_t, int64_t>>& loss,
                           const std::vector<std::pair<int64_t, int64_t>>& recompute)
    : steps_(std::move(step_starts)), optimizer_(std::move(optimizer)), root_(UnitOpLabel("")) {
  std::sort(steps_.begin(), steps_.end());
  std::sort(optimizer_.begin(), optimizer_.end());
  std::vector<int64_t> pass_marks;
  for (const LabelRange& r : labels) {
    if (r.label.kind == FsdpKind::kRootPreForward) pass_marks.push_back(r.start_ns);
    if (r.label.kind == FsdpKind::kPreBackward) backward_marks.push_back(r.start_ns);
  }
  std::sort(pass_marks.begin(), pass_marks.end());
  std::sort(backward_marks.begin(), backward_marks.end());

  // Passes: each step's root pre-forwards (the first extended back to the step's start), or
  // the whole step when it has none.
  for (size_t s = 0; s <= steps_.size(); ++s) {
    const int64_t begin = s == 0 ? INT64_MIN : steps_[s - 1];
    const int64_t end = s == steps_.size() ? INT64_MAX : steps_[s];
    auto lo = std::lower_bound(pass_marks.begin(), pass_marks.end(), begin);
    auto hi = std::lower_bound(pass_marks.begin(), pass_marks.end(), end);
    const int n = static_cast<int>(hi - lo);
    for (int k = 0; k < std::max(1, n); ++k) {
      Pass p;
      p.start_ns = k == 0 ? begin : *(lo + k);
      p.step = static_cast<int>(s);
      p.micro = n > 1 ? k : -1;
      passes_.push_back(p);
    }
  }
  for (size_t i = 0; i < passes_.size(); ++i) {
    const int64_t end = i + 1 < passes_.size() ? passes_[i + 1].start_ns : INT64_MAX;
    auto b = std::lower_bound(backward_marks.begin(), backward_marks.end(), passes_[i].start_ns);
    if (b != backward_marks.end() && *b < end) passes_[i].backward_ns = *b;
  }

  // Unit changes, in time order; at equal times a phase boundary first, then pops, then pushes,
  // then the loss's splits.
  struct Change {
    int64_t t;
    int order;  // 0 boundary, 1 pop, 2 push, 3 a new run of the same unit (the loss),
                // 4 a re-run forward begins, 5 it ends
    const FsdpLabel* label;
  };
  std::vector<Change> changes;
  for (const Pass& p : passes_) {
    changes.push_back({p.start_ns, 0, nullptr});
    if (p.backward_ns != INT64_MAX) changes.push_back({p.backward_ns, 0, nullptr});
  }
  for (const LabelRange& r : labels) {
    const FsdpKind k = r.label.kind;
    if (k == FsdpKind::kPreForward || k == FsdpKind::kPreBackward) {
      changes.push_back({r.end_ns, 2, &r.label});
    } else if (k == FsdpKind::kPostForward || k == FsdpKind::kPostBackward) {
      changes.push_back({r.start_ns, 1, &r.label});
    }
  }
  for (const auto& [start, end] : loss) {
    changes.push_back({start, 3, nullptr});
    changes.push_back({end, 3, nullptr});
  }
  for (const auto& [start, end] : recompute) {
    if (PassPhase(start) % 2 == 0) continue;  // forward ops in forward are the forward
    changes.push_back({start, 4, nullptr});
    changes.push_back({end, 5, nullptr});
  }
  std::stable_sort(changes.begin(), changes.end(), [](const Change& a, const Change& b) {
    return std::tie(a.t, a.order) < std::tie(b.t, b.order);
  });
  const std::string root = UnitOpLabel("");
  std::vector<std::pair<std::string, bool>> stack;  // (unit, recompute)
  std::map<std::pair<std::string, bool>, int64_t> runs;
  std::pair<std::string, bool> top{root, false};
  std::pair<std::pair<std::string, bool>, int64_t> resume{{root, false}, -1};
  auto begin_run = [&](int64_t t, const std::pair<std::string, bool>& now) {
    const int64_t run = runs[now]++;
    segments_.push_back({t, PassPhase(t), now.first, run, now.second});
    top = now;
  };
  for (const Change& c : changes) {
    if (c.order == 0) {
      stack.clear();
      runs.clear();
      begin_run(c.t, {root, false});
      continue;
    }
    if (c.order == 3) {
      begin_run(c.t, top);
      continue;
    }
    if (c.order == 4) {
      resume = {top, runs[top] - 1};
      begin_run(c.t, {top.first, true});
      continue;
    }
    if (c.order == 5) {
      if (resume.second >= 0) {  // back to the run the re-run forward interrupted
        segments_.push_back({c.t, PassPhase(c.t), resume.first.first, resume.second, false});
        top = resume.first;
      }
      resume.second = -1;
      continue;
    }
    if (c.order == 2) {
      const bool recompute = c.label->kind == FsdpKind::kPreForward && PassPhase(c.t) % 2 == 1;
      stack.emplace_back(c.label->unit, recompute);
    } else {
      auto it = std::find_if(stack.rbegin(), stack.rend(),
                             [&](const auto& e) { return e.first == c.label->unit; });
      if (it == stack.rend()) continue;
      stack.erase(std::next(it).base(), stack.end());
    }
    const std::pair<std::string, bool> now =
        stack.empty() ? std::pair<std::string, bool>{root, false} : stack.back();
    if (now != top) begin_run(c.t, now);
  }
  for (size_t i = 0; i < segments_.size(); ++i) {
    unit_segments_[segments_[i].unit].push_back(static_cast<int>(i));
  }
}

int StepTimeline::PassIndex(int64_t t) const {
  auto it = std::upper_bound(passes_.begin(), passes_.end(), t,
                             [](int64_t v, const Pass& p) { return v < p.start_ns; });
  return it == passes_.begin() ? 0 : static_cast<int>(it - passes_.begin()) - 1;
}

int StepTimeline::PassPhase(int64_t t) const {
  const int p = PassIndex(t);
  return 2 * p + (t >= passes_[p].backward_ns ? 1 : 0);
}

bool StepTimeline::InOptimizer(int64_t t) const {
  auto it = std::upper_bound(optimizer_.begin(), optimizer_.end(), std::make_pair(t, INT64_MAX));
  return it != optimizer_.begin() && t < std::prev(it)->second;
}

Place StepTimeline::At(int64_t t) const {
  const int p = PassIndex(t);
  const int pp = PassPhase(t);
  Place place;
  place.step = passes_[p].step;
  place.micro = passes_[p].micro;
  place.phase =
      InOptimizer(t) ? OpPhase::kStep : (pp % 2 == 1 ? OpPhase::kBackward : OpPhase::kForward);
  place.unit = root_;
  auto it = std::upper_bound(segments_.begin(), segments_.end(), t,
                             [](int64_t v, const Segment& s) { return v < s.t; });
  if (it != segments_.begin() && std::prev(it)->pass_phase == pp) {
    const Segment& s = *std::prev(it);
    place.unit = s.unit;
    place.run = s.run;
    place.recompute = s.recompute;
  }
  return place;
}

int64_t StepTimeline::RunOf(std::string_view unit, int64_t t) const {
  auto found = unit_segments_.find(unit);
  if (found == unit_segments_.end()) return 0;
  const std::vector<int>& idx = found->second;
  const int pp = PassPhase(t);
  auto it = std::upper_bound(idx.begin(), idx.end(), t,
                             [&](int64_t v, int i) { return v < segments_[i].t; });
  if (it != idx.begin() && segments_[*std::prev(it)].pass_phase == pp) {
    return segments_[*std::prev(it)].run;
  }
  if (it != idx.end() && segments_[*it].pass_phase == pp) return segments_[*it].run;
  return 0;
}

}  // namespace shardscope::trace_internal

#include "core/trace/trace.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "core/util/flat_index.h"
#include "core/util/json_guard.h"

namespace shardscope {

std::string_view TraceLaneName(int lane) {
  switch (lane) {
    case kLaneCompute:
      return "compute";
    case kLaneAllGather:
      return "all_gather";
    case kLaneReduceScatter:
      return "reduce_scatter";
    case kLaneAllReduce:
      return "all_reduce";
    case kLaneH2D:
      return "h2d";
    case kLaneD2H:
      return "d2h";
    case kLaneP2P:
      return "p2p";
    default:
      return "";
  }
}

bool IsCommLane(int lane) {
  return lane == kLaneAllGather || lane == kLaneReduceScatter || lane == kLaneAllReduce ||
         lane == kLaneP2P;
}

StringTable::StringTable() : slots_(64) { strings_.emplace_back(); }

size_t StringTable::Probe(std::string_view s, uint64_t hash) const {
  const size_t mask = slots_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const Slot& slot = slots_[i];
    if (slot.id == kEmptyStr || (slot.hash == hash && strings_[slot.id] == s)) return i;
  }
}

void StringTable::Grow() {
  std::vector<Slot> old =
      std::exchange(slots_, std::vector<Slot>(std::max<size_t>(64, slots_.size() * 2)));
  const size_t mask = slots_.size() - 1;
  for (const Slot& s : old) {
    if (s.id == kEmptyStr) continue;
    size_t i = s.hash & mask;
    while (slots_[i].id != kEmptyStr) i = (i + 1) & mask;
    slots_[i] = s;
  }
}

StrId StringTable::Intern(std::string_view s) {
  // Most events carry some empty field (AddWork's name before a reader sets it): no lookup.
  if (s.empty()) return kEmptyStr;
  if (strings_.empty()) strings_.emplace_back();          // a moved-from table starts again
  if (2 * (strings_.size() + 1) > slots_.size()) Grow();  // room for one more
  const uint64_t hash = std::hash<std::string_view>{}(s);
  const size_t slot = Probe(s, hash);
  if (slots_[slot].id != kEmptyStr) return slots_[slot].id;
  const StrId id = static_cast<StrId>(strings_.size());
  strings_.emplace_back(s);
  slots_[slot] = {hash, id};
  return id;
}

bool StringTable::Find(std::string_view s, StrId* id) const {
  if (s.empty()) {
    *id = kEmptyStr;
    return true;
  }
  if (slots_.empty()) return false;
  const Slot& found = slots_[Probe(s, std::hash<std::string_view>{}(s))];
  if (found.id == kEmptyStr) return false;
  *id = found.id;
  return true;
}

WorkEvent& Trace::AddWork(int rank, int lane, std::string_view name, std::string_view op_id,
                          int64_t start_ns, int64_t dur_ns) {
  WorkEvent& e = events.emplace_back();
  e.rank = rank;
  e.lane = lane;
  e.name = strings.Intern(name);
  e.op_id = strings.Intern(op_id);
  e.start_ns = start_ns;
  e.dur_ns = dur_ns;
  return e;
}

void Trace::AddCounter(int rank, int64_t time_ns, std::string_view key, int64_t value) {
  AddCounterSample(rank, time_ns, "memory", key, value);
}

void Trace::AddCounterSample(int rank, int64_t time_ns, std::string_view counter,
                             std::string_view key, int64_t value) {
  CounterSample& c = counters.emplace_back();
  c.rank = rank;
  c.time_ns = time_ns;
  c.counter = strings.Intern(counter);
  c.key = strings.Intern(key);
  c.value = value;
}

Marker& Trace::AddMarker(int rank, int64_t time_ns, std::string_view name) {
  Marker& m = markers.emplace_back();
  m.rank = rank;
  m.time_ns = time_ns;
  m.name = strings.Intern(name);
  return m;
}

namespace {
// `{"a":1}` → `"a":1`: the members text Trace::extra_args stores.
std::string MembersText(const nlohmann::json& object) {
  const std::string text = DumpJson(object);
  return text.size() >= 2 ? text.substr(1, text.size() - 2) : std::string();
}
}  // namespace

void Trace::SetExtraArgs(WorkEvent& event, const nlohmann::json& object) {
  if (!object.is_object() || object.empty()) {
    event.extra_args = kNoArgs;
    return;
  }
  event.extra_args = static_cast<uint32_t>(extra_args.size());
  extra_args.push_back(MembersText(object));
}

void Trace::SetExtraArgs(Marker& marker, const nlohmann::json& object) {
  if (!object.is_object() || object.empty()) {
    marker.extra_args = kNoArgs;
    return;
  }
  marker.extra_args = static_cast<uint32_t>(extra_args.size());
  extra_args.push_back(MembersText(object));
}

nlohmann::json Trace::ExtraArgs(uint32_t index) const {
  if (index == kNoArgs || index >= extra_args.size()) return nlohmann::json::object();
  return nlohmann::json::parse("{" + extra_args[index] + "}", nullptr, /*allow_exceptions=*/false);
}

std::vector<int> Trace::Ranks() const {
  // Ranks repeat in runs (events come by rank once sorted): one set insert per run.
  std::set<int> ranks;
  const auto add_runs = [&ranks](const auto& items) {
    for (size_t i = 0; i < items.size(); ++i) {
      if (i == 0 || items[i].rank != items[i - 1].rank) ranks.insert(items[i].rank);
    }
  };
  add_runs(events);
  add_runs(counters);
  add_runs(markers);
  return {ranks.begin(), ranks.end()};
}

void Trace::SortEvents() {
  // By start, longer first at equal starts, within each (rank, lane).
  const auto by_start = [](const WorkEvent& a, const WorkEvent& b) {
    return std::tie(a.start_ns, b.dur_ns) < std::tie(b.start_ns, a.dur_ns);
  };
  // A file holds events by time across ranks and lanes, and each (rank, lane) is then in order
  // already: a stable distribution by (rank, lane), then a sort of only the lanes out of order,
  // is what one stable sort by (rank, lane, start, -dur) gives, in linear time. Lanes interleave
  // in time, so the (rank, lane) changes at nearly every event: it is found in a flat index,
  // once per event, and remembered for the second pass.
  FlatIndex index_of;  // (rank, lane) → index into lanes
  index_of.Reset(64);
  std::vector<std::pair<std::pair<int32_t, int32_t>, size_t>> lanes;  // (rank, lane), count
  std::vector<uint32_t> lane_of(events.size());
  for (size_t k = 0; k < events.size(); ++k) {
    const WorkEvent& e = events[k];
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(e.rank)) << 32) |
                         static_cast<uint32_t>(e.lane);
    const auto [lane, added] = index_of.Emplace(key, static_cast<int>(lanes.size()));
    if (added) lanes.push_back({{e.rank, e.lane}, 0});
    lane_of[k] = static_cast<uint32_t>(lane);
    ++lanes[lane].second;
  }
  // Offsets in (rank, lane) order.
  std::vector<uint32_t> order(lanes.size());
  for (uint32_t k = 0; k < order.size(); ++k) order[k] = k;
  std::sort(order.begin(), order.end(),
            [&](uint32_t x, uint32_t y) { return lanes[x].first < lanes[y].first; });
  std::vector<size_t> next(lanes.size());
  std::vector<size_t> begins;
  size_t offset = 0;
  for (uint32_t k : order) {
    begins.push_back(offset);
    next[k] = offset;
    offset += lanes[k].second;
  }
  begins.push_back(events.size());
  std::vector<WorkEvent> sorted(events.size());
  for (size_t k = 0; k < events.size(); ++k) sorted[next[lane_of[k]]++] = events[k];
  for (size_t k = 0; k + 1 < begins.size(); ++k) {
    const auto first = sorted.begin() + static_cast<std::ptrdiff_t>(begins[k]);
    const auto last = sorted.begin() + static_cast<std::ptrdiff_t>(begins[k + 1]);
    if (!std::is_sorted(first, last, by_start)) std::stable_sort(first, last, by_start);
  }
  events = std::move(sorted);
  std::stable_sort(counters.begin(), counters.end(),
                   [](const CounterSample& a, const CounterSample& b) {
                     return std::tie(a.rank, a.time_ns) < std::tie(b.rank, b.time_ns);
                   });
  std::stable_sort(markers.begin(), markers.end(), [](const Marker& a, const Marker& b) {
    return std::tie(a.rank, a.time_ns) < std::tie(b.rank, b.time_ns);
  });
}

}  // namespace shardscope

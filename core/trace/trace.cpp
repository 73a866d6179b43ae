#include "core/trace/trace.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

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

StringTable::StringTable() {
  strings_.emplace_back();
  index_.emplace(std::string_view(strings_.back()), kEmptyStr);
}

StringTable::StringTable(const StringTable& other) : strings_(other.strings_) { Rebuild(); }

StringTable& StringTable::operator=(const StringTable& other) {
  if (this != &other) {
    strings_ = other.strings_;
    Rebuild();
  }
  return *this;
}

// The index holds views into strings_, so a copy must point its views at its own strings.
void StringTable::Rebuild() {
  index_.clear();
  index_.reserve(strings_.size());
  for (size_t i = 0; i < strings_.size(); ++i) {
    index_.emplace(std::string_view(strings_[i]), static_cast<StrId>(i));
  }
}

StrId StringTable::Intern(std::string_view s) {
  // Most events carry some empty field (AddWork's name before a reader sets it): no lookup.
  if (s.empty()) return kEmptyStr;
  auto it = index_.find(s);
  if (it != index_.end()) return it->second;
  const StrId id = static_cast<StrId>(strings_.size());
  strings_.emplace_back(s);
  index_.emplace(std::string_view(strings_.back()), id);
  return id;
}

bool StringTable::Find(std::string_view s, StrId* id) const {
  auto it = index_.find(s);
  if (it == index_.end()) return false;
  *id = it->second;
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
  const std::string text = object.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
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
  std::set<int> ranks;
  for (const auto& e : events) ranks.insert(e.rank);
  for (const auto& c : counters) ranks.insert(c.rank);
  for (const auto& m : markers) ranks.insert(m.rank);
  return {ranks.begin(), ranks.end()};
}

void Trace::SortEvents() {
  // By start, longer first at equal starts, within each (rank, lane).
  const auto by_start = [](const WorkEvent& a, const WorkEvent& b) {
    return std::tie(a.start_ns, b.dur_ns) < std::tie(b.start_ns, a.dur_ns);
  };
  // A file holds events by time across ranks and lanes, and each (rank, lane) is then in order
  // already: a stable distribution by (rank, lane), then a sort of only the lanes out of order,
  // is what one stable sort by (rank, lane, start, -dur) gives, in linear time.
  std::map<std::pair<int32_t, int32_t>, size_t> lanes;  // (rank, lane) → count, then offset
  std::pair<int32_t, int32_t> last_key{0, 0};
  size_t* last_count = nullptr;
  for (const WorkEvent& e : events) {
    const std::pair<int32_t, int32_t> key{e.rank, e.lane};
    if (last_count == nullptr || key != last_key) {
      last_key = key;
      last_count = &lanes[key];
    }
    ++*last_count;
  }
  size_t offset = 0;
  for (auto& [key, n] : lanes) offset += std::exchange(n, offset);
  std::vector<size_t> begins;
  for (const auto& [key, start] : lanes) begins.push_back(start);
  begins.push_back(events.size());
  std::vector<WorkEvent> sorted(events.size());
  last_count = nullptr;
  for (const WorkEvent& e : events) {
    const std::pair<int32_t, int32_t> key{e.rank, e.lane};
    if (last_count == nullptr || key != last_key) {
      last_key = key;
      last_count = &lanes[key];
    }
    sorted[(*last_count)++] = e;
  }
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

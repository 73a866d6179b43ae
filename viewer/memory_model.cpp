#include "viewer/memory_model.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string_view>

#include "core/util/units.h"

namespace shardscope::viewer {
namespace {

constexpr std::string_view kSuffix = "_bytes";

// The GPU's memory: the predicted summary's hbm_gib, else Kineto's deviceProperties.
int64_t HbmBytes(const TraceMetadata& md) {
  if (md.summary.is_object() && md.summary.contains("hbm_gib") &&
      md.summary["hbm_gib"].is_number()) {
    return static_cast<int64_t>(std::llround(md.summary["hbm_gib"].get<double>() * kGiB));
  }
  const nlohmann::json* dev = &md.device;
  if (dev->is_array() && !dev->empty()) dev = &(*dev)[0];
  if (dev->is_object() && dev->contains("totalGlobalMem") && (*dev)["totalGlobalMem"].is_number()) {
    return (*dev)["totalGlobalMem"].get<int64_t>();
  }
  return 0;
}

}  // namespace

int64_t MemoryModel::SampleAt(int64_t t_ns) const {
  const auto it = std::upper_bound(times_ns.begin(), times_ns.end(), t_ns);
  return static_cast<int64_t>(it - times_ns.begin()) - 1;
}

MemoryModel BuildMemoryModel(const Trace& trace, int64_t origin_ns) {
  MemoryModel m;
  m.hbm_bytes = HbmBytes(trace.metadata);
  StrId memory_id = kEmptyStr;
  if (!trace.strings.Find("memory", &memory_id)) return m;
  for (const CounterSample& s : trace.counters) {
    if (s.counter == memory_id && (m.rank < 0 || s.rank < m.rank)) m.rank = s.rank;
  }
  if (m.rank < 0) return m;

  // Series: every key of the rank; allocated/reserved are lines, the rest stack.
  std::map<std::string, int> category_index;
  StrId allocated_id = kEmptyStr, reserved_id = kEmptyStr;
  trace.strings.Find("allocated_bytes", &allocated_id);
  trace.strings.Find("reserved_bytes", &reserved_id);
  std::vector<const CounterSample*> samples;
  for (const CounterSample& s : trace.counters) {
    if (s.counter != memory_id || s.rank != m.rank) continue;
    samples.push_back(&s);
    if (s.key == allocated_id || s.key == reserved_id) continue;
    std::string name(trace.Str(s.key));
    if (name.size() > kSuffix.size() && name.ends_with(kSuffix)) {
      name.resize(name.size() - kSuffix.size());
    }
    category_index.emplace(name, 0);
  }
  // Stable stacking order: the trace's first-seen order would depend on the writer; names sort.
  for (auto& [name, index] : category_index) {
    index = static_cast<int>(m.categories.size());
    m.categories.push_back(name);
  }
  std::vector<int> key_to_category(trace.strings.size(), -1);
  for (const CounterSample* s : samples) {
    if (s->key == allocated_id || s->key == reserved_id) continue;
    std::string name(trace.Str(s->key));
    if (name.size() > kSuffix.size() && name.ends_with(kSuffix)) {
      name.resize(name.size() - kSuffix.size());
    }
    key_to_category[s->key] = category_index[name];
  }
  std::stable_sort(
      samples.begin(), samples.end(),
      [](const CounterSample* a, const CounterSample* b) { return a->time_ns < b->time_ns; });

  const size_t nc = m.categories.size();
  std::vector<int64_t> current(nc, 0);
  int64_t cur_allocated = 0, cur_reserved = 0;
  for (size_t i = 0; i < samples.size();) {
    const int64_t t = samples[i]->time_ns;
    for (; i < samples.size() && samples[i]->time_ns == t; ++i) {
      const CounterSample& s = *samples[i];
      if (s.key == allocated_id) {
        cur_allocated = s.value;
        m.has_allocated = true;
      } else if (s.key == reserved_id) {
        cur_reserved = s.value;
        m.has_reserved = true;
      } else {
        current[key_to_category[s.key]] = s.value;
      }
    }
    int64_t total = 0;
    for (int64_t v : current) total += v;
    m.times_ns.push_back(t - origin_ns);
    m.values.insert(m.values.end(), current.begin(), current.end());
    m.total.push_back(total);
    m.allocated.push_back(cur_allocated);
    m.reserved.push_back(cur_reserved);
  }
  if (!m.has_allocated) m.allocated = m.total;
  for (size_t t = 0; t < m.times_ns.size(); ++t) {
    if (m.allocated[t] > m.peak_allocated) {
      m.peak_allocated = m.allocated[t];
      m.peak_allocated_ns = m.times_ns[t];
    }
    if (m.reserved[t] > m.peak_reserved) {
      m.peak_reserved = m.reserved[t];
      m.peak_reserved_ns = m.times_ns[t];
    }
  }
  return m;
}

std::vector<MemoryColumn> DownsampleMemory(const MemoryModel& m, int64_t lo_ns, int64_t hi_ns,
                                           int columns) {
  std::vector<MemoryColumn> out(std::max(columns, 0));
  if (m.empty() || columns <= 0 || hi_ns <= lo_ns) return out;
  const double ns_per_col = static_cast<double>(hi_ns - lo_ns) / columns;
  const int64_t last_time = m.times_ns.back();
  int64_t s = m.SampleAt(lo_ns);
  for (int c = 0; c < columns; ++c) {
    const int64_t c0 = lo_ns + static_cast<int64_t>(std::llround(c * ns_per_col));
    const int64_t c1 = lo_ns + static_cast<int64_t>(std::llround((c + 1) * ns_per_col));
    // The curve ends at the last sample: columns after it stay empty.
    if (c0 > last_time) break;
    MemoryColumn& col = out[c];
    // Samples in effect during [c0, c1): the one at c0 and every change before c1.
    int64_t first = std::max<int64_t>(s, 0);
    while (s + 1 < static_cast<int64_t>(m.times_ns.size()) && m.times_ns[s + 1] < c1) ++s;
    if (s < 0) continue;
    for (int64_t k = first; k <= s; ++k) {
      if (m.times_ns[k] >= c1) break;
      if (col.sample < 0 || m.total[k] > m.total[col.sample]) col.sample = k;
      col.allocated = std::max(col.allocated, m.allocated[k]);
      col.reserved = std::max(col.reserved, m.reserved[k]);
    }
  }
  return out;
}

}  // namespace shardscope::viewer

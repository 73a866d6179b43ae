// The Chrome trace-event writer. Streams text by hand: a DOM for a million events would cost
// gigabytes and seconds; this costs the output string and one sorted index.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "core/trace/json_text.h"
#include "core/trace/trace_io.h"
#include "core/util/file_io.h"
#include "core/util/json_guard.h"
#include "core/util/output_files.h"

namespace shardscope {

void AppendNsAsUs(int64_t ns, std::string* out) {
  // Unsigned magnitude so INT64_MIN has one too; never through a double.
  uint64_t magnitude = ns < 0 ? uint64_t{0} - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  if (ns < 0) out->push_back('-');
  const uint64_t whole = magnitude / 1000;
  const uint64_t frac = magnitude % 1000;
  fmt::format_to(std::back_inserter(*out), "{}.{:03d}", whole, static_cast<unsigned>(frac));
}

std::string FormatNsAsUs(int64_t ns) {
  std::string s;
  AppendNsAsUs(ns, &s);
  return s;
}

namespace {

// Doubles in shortest round-trip form; non-finite values are not JSON, so they become null.
void AppendDouble(double v, std::string* out) {
  if (!std::isfinite(v)) {
    out->append("null");
    return;
  }
  fmt::format_to(std::back_inserter(*out), "{}", v);
}

void AppendEventHead(std::string* out, char ph, std::string_view name, int pid, int tid) {
  out->append("{\"ph\":\"");
  out->push_back(ph);
  out->append("\",\"name\":");
  AppendJsonString(name, out);
  fmt::format_to(std::back_inserter(*out), ",\"pid\":{},\"tid\":{}", pid, tid);
}

void AppendMetadataEvents(const Trace& trace, std::string* out, bool* first) {
  auto sep = [&] {
    if (!*first) out->append(",\n");
    *first = false;
  };
  // Every rank gets a process_name and every used lane a thread_name, named or not.
  std::map<int, std::string> ranks = trace.rank_names;
  std::map<std::pair<int, int>, std::string> lanes = trace.lane_names;
  for (int r : trace.Ranks()) ranks.emplace(r, fmt::format("rank {}", r));
  for (const auto& e : trace.events) {
    lanes.emplace(std::make_pair(e.rank, e.lane), std::string(TraceLaneName(e.lane)));
  }
  for (const auto& [rank, name] : ranks) {
    sep();
    AppendEventHead(out, 'M', "process_name", rank, 0);
    out->append(",\"args\":{\"name\":");
    AppendJsonString(name, out);
    out->append("}}");
  }
  for (const auto& [key, name] : lanes) {
    sep();
    AppendEventHead(out, 'M', "thread_name", key.first, key.second);
    out->append(",\"args\":{\"name\":");
    AppendJsonString(name.empty() ? fmt::format("lane {}", key.second) : name, out);
    out->append("}}");
  }
}

void AppendWork(const Trace& trace, const WorkEvent& e, std::string* out) {
  AppendEventHead(out, 'X', trace.Str(e.name), e.rank, e.lane);
  out->append(",\"ts\":");
  AppendNsAsUs(e.start_ns, out);
  out->append(",\"dur\":");
  AppendNsAsUs(e.dur_ns, out);
  out->append(",\"args\":{\"op_id\":");
  AppendJsonString(trace.Str(e.op_id), out);
  const bool comm_like =
      IsCommLane(e.lane) || e.bytes != 0 || e.group_size != 0 || e.busbw_gbps != 0;
  if (comm_like) {
    fmt::format_to(std::back_inserter(*out),
                   ",\"bytes\":{},\"group_size\":{},\"busbw_GBps\":", e.bytes, e.group_size);
    AppendDouble(e.busbw_gbps, out);
  }
  if (e.lane == kLaneCompute || e.flops != 0) {
    out->append(",\"flops\":");
    AppendDouble(e.flops, out);
  }
  if (e.extra_args != kNoArgs && e.extra_args < trace.extra_args.size() &&
      !trace.extra_args[e.extra_args].empty()) {
    out->push_back(',');
    out->append(trace.extra_args[e.extra_args]);
  }
  out->append("}}");
}

void AppendMarker(const Trace& trace, const Marker& m, std::string* out) {
  AppendEventHead(out, 'i', trace.Str(m.name), m.rank, kLaneCompute);
  out->append(",\"s\":\"p\",\"ts\":");
  AppendNsAsUs(m.time_ns, out);
  if (m.extra_args != kNoArgs && m.extra_args < trace.extra_args.size() &&
      !trace.extra_args[m.extra_args].empty()) {
    out->append(",\"args\":{");
    out->append(trace.extra_args[m.extra_args]);
    out->push_back('}');
  }
  out->push_back('}');
}

nlohmann::json MetadataJson(const TraceMetadata& m) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [key, value] : m.extra.items()) j[key] = value;
  j["format"] = m.format;
  j["kind"] = m.kind;
  j["tool_version"] = m.tool_version;
  j["scenario"] = m.scenario;
  j["summary"] = m.summary;
  j["device"] = m.device;
  j["library_versions"] = m.library_versions;
  return j;
}

enum class ItemKind : uint8_t { kWork, kCounter, kMarker };
struct Item {
  int64_t time_ns;
  int32_t rank;
  ItemKind kind;
  uint32_t index;
};

}  // namespace

std::string SerializeTrace(const Trace& trace) {
  std::string out;
  out.reserve(trace.events.size() * 170 + trace.counters.size() * 90 + 4096);
  out.append("{\"traceEvents\":[\n");
  bool first = true;
  AppendMetadataEvents(trace, &out, &first);

  std::vector<Item> items;
  items.reserve(trace.events.size() + trace.counters.size() + trace.markers.size());
  for (size_t i = 0; i < trace.events.size(); ++i) {
    items.push_back({trace.events[i].start_ns, trace.events[i].rank, ItemKind::kWork,
                     static_cast<uint32_t>(i)});
  }
  for (size_t i = 0; i < trace.markers.size(); ++i) {
    items.push_back({trace.markers[i].time_ns, trace.markers[i].rank, ItemKind::kMarker,
                     static_cast<uint32_t>(i)});
  }
  for (size_t i = 0; i < trace.counters.size(); ++i) {
    items.push_back({trace.counters[i].time_ns, trace.counters[i].rank, ItemKind::kCounter,
                     static_cast<uint32_t>(i)});
  }
  // Deterministic: ties keep (rank, kind, input order).
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    return std::tie(a.time_ns, a.rank, a.kind) < std::tie(b.time_ns, b.rank, b.kind);
  });

  // Last value written per (rank, counter, key): samples that change nothing are dropped.
  std::map<std::tuple<int, StrId, StrId>, int64_t> last_value;
  for (size_t i = 0; i < items.size(); ++i) {
    const Item& it = items[i];
    if (it.kind == ItemKind::kWork) {
      if (!first) out.append(",\n");
      first = false;
      AppendWork(trace, trace.events[it.index], &out);
    } else if (it.kind == ItemKind::kMarker) {
      if (!first) out.append(",\n");
      first = false;
      AppendMarker(trace, trace.markers[it.index], &out);
    } else {
      // One C event per run of samples with one (time, rank, counter).
      const CounterSample& head = trace.counters[it.index];
      size_t end = i;
      while (end < items.size() && items[end].kind == ItemKind::kCounter &&
             items[end].time_ns == it.time_ns && items[end].rank == it.rank &&
             trace.counters[items[end].index].counter == head.counter) {
        ++end;
      }
      std::string args;
      for (size_t k = i; k < end; ++k) {
        const CounterSample& c = trace.counters[items[k].index];
        auto [pos, inserted] = last_value.try_emplace({c.rank, c.counter, c.key}, c.value);
        if (!inserted) {
          if (pos->second == c.value) continue;
          pos->second = c.value;
        }
        if (!args.empty()) args.push_back(',');
        AppendJsonString(trace.Str(c.key), &args);
        fmt::format_to(std::back_inserter(args), ":{}", c.value);
      }
      if (!args.empty()) {
        if (!first) out.append(",\n");
        first = false;
        AppendEventHead(&out, 'C', trace.Str(head.counter), head.rank, 0);
        out.append(",\"ts\":");
        AppendNsAsUs(head.time_ns, &out);
        out.append(",\"args\":{");
        out.append(args);
        out.append("}}");
      }
      i = end - 1;
    }
  }
  out.append("\n],\n\"displayTimeUnit\":\"ns\",\n\"metadata\":");
  out.append(DumpJson(MetadataJson(trace.metadata)));
  out.append("}\n");
  return out;
}

Status WriteTrace(const Trace& trace, const std::string& path) {
  return WriteFileAtomic(path, SerializeTrace(trace));
}

}  // namespace shardscope

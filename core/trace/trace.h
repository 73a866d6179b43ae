// The trace model: one in-memory form for predicted (simulator) and measured (backend, PyTorch
// profiler) timelines of one training step, shared by the writer, the readers, `stats`, `diff`,
// `check-trace` and the viewer (formats.md §3, runtime.md lanes and memory categories).
//
// Contents:
//   kLane*, TraceLaneName, IsCommLane   lane ids (trace tid) and their names
//   StrId, StringTable                 interned strings (names, op_ids, counter keys)
//   WorkEvent                          one `X` event: an operation on one lane of one rank
//   CounterSample                      one value change of one counter series (`C` events)
//   Marker                             one instant event (`i`): step_begin, peak_memory, oom
//   TraceMetadata                      the top-level `metadata` object
//   ImportReport                       what a reader kept, derived and skipped (Kineto import)
//   Trace                              all of the above for every rank of one run
//
// Example (what the simulator does):
//   Trace t;
//   t.metadata.kind = "predicted";
//   WorkEvent& ag = t.AddWork(/*rank=*/0, kLaneAllGather, "nccl:all_gather",
//                             "fwd/model.layers.0/all_gather", /*start_ns=*/0, /*dur_ns=*/1500);
//   ag.bytes = 1 << 20; ag.group_size = 8; ag.busbw_gbps = 300.0;
//   t.AddCounter(0, 0, "unsharded_params_bytes", 1 << 20);
//   t.AddMarker(0, 0, "step_begin");
//   SS_RETURN_IF_ERROR(WriteTrace(t, "step.trace.json"));   // trace_io.h
//
// Memory: a WorkEvent is 64 bytes and strings are interned, so 1 M events take ~70 MB.
// Time is int64 nanoseconds everywhere; only the writer converts to µs (three decimals).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace shardscope {

// Trace tids (formats.md §3; 7 = pipeline p2p is an addition). Same numbering as
// schedule.h's Lane, kept as plain ints here so core_trace depends on nothing but core_util.
constexpr int kLaneCompute = 1;
constexpr int kLaneAllGather = 2;
constexpr int kLaneReduceScatter = 3;
constexpr int kLaneAllReduce = 4;
constexpr int kLaneH2D = 5;
constexpr int kLaneD2H = 6;
constexpr int kLaneP2P = 7;
constexpr int kMaxLane = 7;

// "compute", "all_gather", "reduce_scatter", "all_reduce", "h2d", "d2h", "p2p"; "" if unknown.
std::string_view TraceLaneName(int lane);
// True for the lanes whose busy time counts as communication (all_gather, reduce_scatter,
// all_reduce, p2p). h2d/d2h copies are neither compute nor communication.
bool IsCommLane(int lane);

// Index into a StringTable. 0 is always the empty string.
using StrId = uint32_t;
constexpr StrId kEmptyStr = 0;

// Interned strings: each distinct string is stored once; ids are dense and stable. The index is
// flat open addressing (a hash and an id per slot, the text compared in the table): a trace
// interns tens of thousands of op_ids and looks one up per event, and a node-based map costs a
// dependent cache miss or two a lookup.
class StringTable {
 public:
  StringTable();

  // Returns the id of `s`, adding it when new.
  StrId Intern(std::string_view s);
  // The id of `s` if present.
  bool Find(std::string_view s, StrId* id) const;
  // The string of `id` (valid while the table lives; ids must come from this table).
  std::string_view Get(StrId id) const { return strings_[id]; }
  size_t size() const { return strings_.size(); }

 private:
  struct Slot {
    uint64_t hash = 0;
    StrId id = kEmptyStr;  // kEmptyStr: a free slot (the empty string is id 0, never indexed)
  };
  // The index of the slot holding `s` (hash `hash`), or of the free slot where it would go.
  size_t Probe(std::string_view s, uint64_t hash) const;
  void Grow();
  std::deque<std::string> strings_;  // a deque never moves its elements: views stay valid
  std::vector<Slot> slots_;          // a power of two, at most half full
};

// Marks "no extra arguments" in WorkEvent::extra_args / Marker::extra_args.
constexpr uint32_t kNoArgs = 0xFFFFFFFFu;

// One operation on one lane of one rank (an `X` event).
struct WorkEvent {
  int64_t start_ns = 0;
  int64_t dur_ns = 0;
  int64_t bytes = 0;            // collectives: nccl-tests size; copies: bytes moved
  double flops = 0;             // compute events
  double busbw_gbps = 0;        // collectives: bus bandwidth achieved (GB/s, nccl-tests definition)
  StrId name = kEmptyStr;       // display name; collectives begin with "nccl"
  StrId op_id = kEmptyStr;      // stable key, e.g. "fwd/model.layers.3/all_gather"
  int32_t rank = 0;             // trace pid
  int32_t lane = kLaneCompute;  // trace tid
  int32_t group_size = 0;       // collectives: ranks in the process group
  uint32_t extra_args = kNoArgs;  // index into Trace::extra_args
  int64_t end_ns() const { return start_ns + dur_ns; }
};

// One change of one counter series of one rank: `key` (e.g. "allocated_bytes") takes `value`
// at `time_ns`. Several samples with one (rank, counter, time) form one `C` event.
struct CounterSample {
  int64_t time_ns = 0;
  int64_t value = 0;
  int32_t rank = 0;
  StrId counter = kEmptyStr;  // the `C` event's name: "memory"
  StrId key = kEmptyStr;      // the series: "<category>_bytes", "allocated_bytes", ...
};

// An instant event (`i`): "step_begin", "peak_memory", "oom".
struct Marker {
  int64_t time_ns = 0;
  int32_t rank = 0;
  StrId name = kEmptyStr;
  uint32_t extra_args = kNoArgs;  // index into Trace::extra_args
};

// The top-level `metadata` object (formats.md §3).
struct TraceMetadata {
  std::string format = "shardscope-trace/1";
  std::string kind = "predicted";   // "predicted" | "measured"
  std::string tool_version;         // e.g. "shardscope 0.1.0"
  nlohmann::json scenario;          // the resolved scenario (null when unknown)
  nlohmann::json summary;           // the summary of formats.md §2 (null when unknown)
  nlohmann::json device;            // GPU / host description (null when unknown)
  nlohmann::json library_versions;  // {"torch": "...", "nccl": "...", ...}
  nlohmann::json extra = nlohmann::json::object();  // any other metadata keys, kept as read
};

// What a reader did with its input; empty for traces built in memory.
struct ImportReport {
  std::string source;       // "shardscope" | "kineto"
  std::string path;         // file read
  int64_t events_read = 0;  // entries of traceEvents
  int64_t work_events = 0;  // became WorkEvents
  int64_t counter_samples = 0;
  int64_t markers = 0;
  int64_t unit_labels = 0;     // Kineto: FSDP record_function ranges used for op_ids
  int64_t unknown_events = 0;  // kept out of the model (counted by name below)
  std::map<std::string, int64_t> unknown_by_name;  // name (or "ph=<c> cat=<cat>") → count
  // Our format's reader: each of those kinds' first traceEvents index (check-trace names it).
  std::map<std::string, int64_t> first_unknown_index;
  std::vector<std::string> problems;  // non-fatal format problems (check-trace lists them)
};

// All ranks of one run. Events are kept in the order they were added or read; SortEvents()
// orders them by (rank, lane, start) as the analyses expect.
struct Trace {
  TraceMetadata metadata;
  StringTable strings;
  std::vector<WorkEvent> events;
  std::vector<CounterSample> counters;
  std::vector<Marker> markers;
  std::map<int, std::string> rank_names;                  // pid → "rank 3" (M process_name)
  std::map<std::pair<int, int>, std::string> lane_names;  // (pid, tid) → "compute"
  // Extra `args` members of an event, as JSON object members without braces
  // (`"stream":7,"note":"x"`), written back verbatim.
  std::vector<std::string> extra_args;
  ImportReport import;

  // Adds one work event; the reference is valid until the next Add*.
  WorkEvent& AddWork(int rank, int lane, std::string_view name, std::string_view op_id,
                     int64_t start_ns, int64_t dur_ns);
  // Adds one counter sample of the "memory" counter (the only counter formats.md names).
  void AddCounter(int rank, int64_t time_ns, std::string_view key, int64_t value);
  // Adds one counter sample of any counter.
  void AddCounterSample(int rank, int64_t time_ns, std::string_view counter, std::string_view key,
                        int64_t value);
  // Adds an instant marker.
  Marker& AddMarker(int rank, int64_t time_ns, std::string_view name);
  // Attaches extra args (a JSON object; other keys than the model's fields) to an event.
  void SetExtraArgs(WorkEvent& event, const nlohmann::json& object);
  void SetExtraArgs(Marker& marker, const nlohmann::json& object);
  // The extra args of an event as a JSON object (empty object when none).
  nlohmann::json ExtraArgs(uint32_t index) const;

  std::string_view Str(StrId id) const { return strings.Get(id); }
  // Ranks that have any event, counter or marker, ascending.
  std::vector<int> Ranks() const;
  // Orders events by (rank, lane, start, -dur), counters and markers by (rank, time).
  // Stable, so equal keys keep their input order.
  void SortEvents();
};

}  // namespace shardscope

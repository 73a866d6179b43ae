// libFuzzer target: arbitrary bytes through the trace readers (ours and PyTorch profiler), the
// JSON scanner, the analyses and the summary diff. Every input must give a value or a Status,
// never a crash, a sanitizer report or an exception, and:
//   - the scanner accepts exactly what nlohmann accepts, with the same values;
//   - a trace that was read writes back to text that reads again, and writing that gives the
//     same bytes (the writer's output is a fixed point of read → write);
//   - a trace compared with itself is within tolerance.
//
//   cmake -S . -B build-fuzz -DSHARDSCOPE_BUILD_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++ \
//       -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined"
//   cmake --build build-fuzz --target trace_fuzz
//   mkdir -p /tmp/trace_corpus && zcat tests/fixtures/kineto/fsdp2_cpu_rank0.json.gz | head -c
//   20000 \
//       > /tmp/trace_corpus/kineto_head.json   # a truncated real trace is a good seed too
//   build-fuzz/tests/fuzz/trace_fuzz -max_total_time=300 -max_len=65536 /tmp/trace_corpus
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "core/trace/trace_check.h"
#include "core/trace/trace_diff.h"
#include "core/trace/trace_io.h"
#include "core/trace/trace_stats.h"
#include "tests/trace/json_scan_dom.h"

using namespace shardscope;

namespace {

void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "trace_fuzz: %s\n%s\n", what, detail.c_str());
  std::abort();
}

void Exercise(const Trace& t) {
  const TraceStats s = ComputeStats(t);
  (void)StatsToJson(s).dump();
  (void)CheckTrace(t);
  auto self = DiffTraces(t, t, DefaultTolerances());
  if (!self.ok() || !self->within_tolerance) Fail("a trace differs from itself", SerializeTrace(t));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);

  nlohmann::json mine;
  const bool scanned = testing::ScanToDom(text, &mine);
  const nlohmann::json theirs = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  // nlohmann stops at a NUL byte as if the input ended there ("2\0junk" parses as 2); the
  // scanner rejects it, as RFC 8259 asks, so only NUL-free inputs are compared.
  if (text.find('\0') == std::string::npos) {
    if (scanned != !theirs.is_discarded())
      Fail("scanner and nlohmann disagree on acceptance", text);
    if (scanned && mine != theirs) Fail("scanner and nlohmann disagree on the value", text);
  }

  for (TraceFormat format : {TraceFormat::kAuto, TraceFormat::kShardscope, TraceFormat::kKineto}) {
    ReadTraceOptions options;
    options.format = format;
    auto t = ParseTrace(text, "fuzz.json", options);
    if (!t.ok()) {
      if (t.status().message().empty()) Fail("an error without a message", text);
      continue;
    }
    Exercise(*t);
    const std::string written = SerializeTrace(*t);
    ReadTraceOptions ours;
    ours.format = TraceFormat::kShardscope;
    auto again = ParseTrace(written, "written.json", ours);
    if (!again.ok())
      Fail("the writer's output does not read back", again.status().message() + "\n" + written);
    const std::string rewritten = SerializeTrace(*again);
    if (rewritten != written)
      Fail("read → write is not a fixed point", written + "\n----\n" + rewritten);
  }

  if (scanned && theirs.is_object()) {
    auto d = DiffSummaries(theirs, theirs, DefaultTolerances(), "a.json", "b.json");
    if (d.ok() && !d->within_tolerance) Fail("a summary differs from itself", text);
  }
  return 0;
}

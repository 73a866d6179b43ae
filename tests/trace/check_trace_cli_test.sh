#!/bin/sh
# `shardscope check-trace` on a raw PyTorch profiler trace: says what it is, exit 0 when valid,
# exit 2 naming the file and the field when not (formats.md §4).
# Usage: check_trace_cli_test.sh SHARDSCOPE_BINARY   (run from the repository root)
bin="$1"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

fixture=tests/fixtures/kineto/fsdp2_llama_cpu_rank0.json.gz
"$bin" check-trace "$fixture" > "$out/stdout" 2>&1
rc=$?
[ $rc -eq 0 ] || { cat "$out/stdout"; fail "valid profiler trace exit $rc (expected 0)"; }
grep -q "valid PyTorch profiler (Kineto) trace (rank 0 of 4" "$out/stdout" ||
  { cat "$out/stdout"; fail "output does not say it is a PyTorch profiler (Kineto) trace"; }

# A string ts in an X event: exit 2, the file, the event and the field named.
gzip -dc "$fixture" | sed 's/"ph":"X","cat":"cpu_op","name":"aten::embedding","pid":\([0-9]*\),"tid":\([0-9]*\),"ts":\([0-9.]*\)/"ph":"X","cat":"cpu_op","name":"aten::embedding","pid":\1,"tid":\2,"ts":"\3"/' > "$out/bad.json"
cmp -s "$out/bad.json" /dev/null && fail "could not write the broken copy"
"$bin" check-trace "$out/bad.json" > "$out/bad_out" 2>&1
rc=$?
[ $rc -eq 2 ] || { cat "$out/bad_out"; fail "broken profiler trace exit $rc (expected 2)"; }
grep -q "$out/bad.json: traceEvents\[[0-9]*\].ts: expected a number of microseconds, got a string" \
  "$out/bad_out" || { cat "$out/bad_out"; fail "message does not name the file, event and field"; }
# What check-trace refuses, stats and diff read past, and say so on stderr: a fractional pid.
gzip -dc "$fixture" | sed '0,/"name":"aten::embedding","pid":[0-9]*/s//"name":"aten::embedding","pid":1.5/' > "$out/pid.json"
"$bin" check-trace "$out/pid.json" > /dev/null 2>&1 && fail "check-trace accepted a pid of 1.5"
"$bin" stats "$out/pid.json" > /dev/null 2> "$out/stats_err" || fail "stats refused a readable trace"
grep -q "warning: $out/pid.json: 1 format problem the figures below read past" "$out/stats_err" ||
  { cat "$out/stats_err"; fail "stats did not say the trace has a problem check-trace refuses"; }
echo "check-trace CLI: ok"

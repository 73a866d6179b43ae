#!/bin/sh
# Usage: hostile_input_test.sh SHARDSCOPE_BINARY   (run from the repository root)
# Issue 15's reproducers: absurd input exits 2 naming the file and field, never a crash.
bin="$1"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# expect_error RC PATTERN CMD...: CMD exits RC and its stderr contains PATTERN.
expect_error() {
  want=$1; pattern=$2; shift 2
  "$@" > "$out/stdout" 2> "$out/stderr"
  rc=$?
  [ $rc -eq "$want" ] || { cat "$out/stderr"; fail "$*: exit $rc (expected $want)"; }
  grep -qF -- "$pattern" "$out/stderr" || { cat "$out/stderr"; fail "$*: stderr lacks '$pattern'"; }
}
# nest N OPEN CLOSE: OPEN repeated N times, 1, CLOSE repeated N times (no recursion, no python).
nest() { awk -v n="$1" -v o="$2" -v c="$3" 'BEGIN { for (i = 0; i < n; i++) printf "%s", o;
  printf "1"; for (i = 0; i < n; i++) printf "%s", c; }'; }

# Deeply nested JSON: refused before nlohmann builds (and recursively copies) it.
{ printf '{"model": {"hf": '; nest 100000 '{"a":' '}'; printf '}}\n'; } > "$out/deep.json"
expect_error 2 "deep.json: JSON nested deeper than 512 levels at model.hf.a" "$bin" plan "$out/deep.json"
printf '{"model": "llama3-8b"}\n' > "$out/job.json"
expect_error 2 "--set description: JSON nested deeper than 512 levels" \
  "$bin" plan "$out/job.json" --set "description=$(nest 30000 '[' ']')"
{ printf '{"model_type": "llama", "x": '; nest 100000 '[' ']'; printf '}\n'; } > "$out/config.json"
printf '{"model": {"hf_config": "config.json"}}\n' > "$out/hf.json"
expect_error 2 "config.json: JSON nested deeper than 512 levels at x" "$bin" plan "$out/hf.json"
{ printf '{"step_time_s": '; nest 100000 '[' ']'; printf '}\n'; } > "$out/deep_summary.json"
printf '{"step_time_s": 1.0}\n' > "$out/a.json"
expect_error 2 "deep_summary.json: JSON nested deeper than 512 levels" \
  "$bin" diff "$out/a.json" "$out/deep_summary.json"
# Huge figures in a summary print as they are, never wrapped through int64.
printf '{"step_time_s": 1e300}\n' > "$out/huge_summary.json"
"$bin" diff "$out/a.json" "$out/huge_summary.json" > "$out/diff" 2>&1
rc=$?
[ $rc -eq 1 ] || { cat "$out/diff"; fail "diff to a 1e300 s step: exit $rc (expected 1)"; }
grep -Eq "1000.000 ms → 1e\+303 ms +\+1e\+302%" "$out/diff" || { cat "$out/diff"; fail "1e300 s not printed honestly"; }
grep -q -- "-9223372036854" "$out/diff" && fail "1e300 s wrapped through int64"

# A number beyond the double range: exit 2 naming the file and the field.
printf '{"model": "llama3-8b", "training": {"seq_len": 1e400}}\n' > "$out/huge.json"
expect_error 2 "huge.json: training.seq_len: number 1e400 is outside the range of a double" \
  "$bin" plan "$out/huge.json"

# plan validates the cluster as simulate does: the GPU catalog and the cost model file.
expect_error 2 "job.json: cluster.gpu: unknown GPU 'Z100'" "$bin" plan "$out/job.json" --set cluster.gpu=Z100
expect_error 2 "gpus_per_node 1024 for" "$bin" plan "$out/job.json" --set cluster.gpus_per_node=1024
expect_error 2 "cluster.cost_model: empty path" "$bin" plan "$out/job.json" --set 'cluster.cost_model=""'
expect_error 2 "nope.json: cannot open" "$bin" plan "$out/job.json" --set cluster.cost_model=nope.json

# Absurd sizes: the field and the valid range, not a wrapped number or minutes of work.
expect_error 2 "fsdp.forward_prefetch_depth = 2147483647 (expected 0 to 1024)" \
  "$bin" plan "$out/job.json" --set fsdp.forward_prefetch_depth=2147483647
expect_error 2 "training.seq_len = 2147483647 (expected 1 to 16777216)" \
  "$bin" simulate "$out/job.json" --set training.seq_len=2147483647
expect_error 2 "training.grad_accum = 100000 (expected 1 to 1024)" \
  "$bin" simulate "$out/job.json" --set training.grad_accum=100000
expect_error 2 "parallelism.dp_shard = 18446744073709551615 is outside the 64-bit integer range" \
  "$bin" plan "$out/job.json" --set parallelism.dp_shard=18446744073709551615

# Consistency with the model: tp splits whole heads (and KV heads: k/v are column-sharded).
expect_error 2 "tp=3 does not divide num_attention_heads (32)" "$bin" model llama3-8b --tp 3
printf '{"model": "llama3-8b", "cluster": {"nodes": 2}, "parallelism": {"tp": 16, "dp_shard": 1}}\n' > "$out/tp16.json"
expect_error 2 "tp=16 does not divide num_key_value_heads (8)" "$bin" plan "$out/tp16.json"

# Filesystem: a directory as input says so; an unwritable output names the user's path.
expect_error 2 "$out: is a directory" "$bin" plan "$out"
expect_error 3 "$out/no-such-dir/plan.json: cannot write" \
  "$bin" plan "$out/job.json" --json "$out/no-such-dir/plan.json"
grep -q "\.tmp\." "$out/stderr" && { cat "$out/stderr"; fail "unwritable output names the temporary file"; }
echo "hostile_input_test: ok"

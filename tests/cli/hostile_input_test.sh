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
{ printf '{"format": "shardscope-tree/1", "config": {"x": '; nest 100000 '[' ']'
  printf '}, "root": {"name": "", "class": "M"}}\n'; } > "$out/deep.tree.json"
expect_error 2 "deep.tree.json: JSON nested deeper than 512 levels at config.x" "$bin" model "$out/deep.tree.json"
{ printf '{"metadata": {"format": "shardscope-trace/1", "x": '; nest 100000 '[' ']'
  printf '}, "traceEvents": []}\n'; } > "$out/deep.trace.json"
expect_error 2 "deep.trace.json: JSON nested deeper than 512 levels at metadata.x" "$bin" stats "$out/deep.trace.json"
# A `.gz` name promises gzip: plain text under it, or a gzip stream cut short, is refused.
"$bin" simulate "$out/job.json" --trace "$out/whole.json.gz" > /dev/null 2>&1 || fail "simulate --trace .gz"
gzip -dc "$out/whole.json.gz" > "$out/plain.json.gz"
expect_error 2 "plain.json.gz: not gzip data" "$bin" stats "$out/plain.json.gz"
head -c 2000 "$out/whole.json.gz" > "$out/cut.json.gz"
expect_error 2 "cut.json.gz: not a valid gzip file (it ends in the middle" "$bin" stats "$out/cut.json.gz"
# Text handed over as it is must be UTF-8 (it ends up in JSON); a file's name need not be, and
# a report naming it is still written (the byte as U+FFFD), not an internal error.
bad=$(printf 'h20\377')
expect_error 2 "--set description: not valid UTF-8 (byte 0xFF at offset 3)" \
  "$bin" simulate "$out/job.json" --set "description=$bad"
expect_error 2 "--vary cluster.gpu=h100-sxm,$bad: cluster.gpu: not valid UTF-8" \
  "$bin" sweep "$out/job.json" --vary "cluster.gpu=h100-sxm,$bad"
printf 'id,scenario,step_time_s\nr1,a.json,1\nr%s,b.json,2\n' "$bad" > "$out/runs.csv"
expect_error 2 "runs.csv: line 3: not valid UTF-8 (byte 0xFF at offset" \
  "$bin" calibrate "$out/runs.csv" --out "$out/cal.json"
cp "$out/job.json" "$out/$bad.json"
"$bin" sweep "$out/$bad.json" --vary parallelism.tp=1,2 --json "$out/sweep.json" > /dev/null 2>&1 ||
  fail "sweep of a scenario whose name is not UTF-8: exit $?"
grep -q "$(printf '\357\277\275').json" "$out/sweep.json" || fail "the name's byte is not U+FFFD in the JSON"
"$bin" simulate "$out/$bad.json" --summary "$out/summary.json" > /dev/null 2>&1 ||
  fail "simulate --summary of a scenario whose name is not UTF-8: exit $?"
# An empty --tol is refused, not read as the defaults.
expect_error 2 "--tol: expected a non-empty value" "$bin" diff "$out/a.json" "$out/a.json" --tol ''
# Absurd figures in a summary are refused naming the file and field, whichever side they are on:
# a 1e300 s step as A once read as a -100% change within every tolerance (exit 0).
printf '{"step_time_s": 1e300}\n' > "$out/huge_summary.json"
expect_error 2 "huge_summary.json: step_time_s: expected a number > 0 and at most 1e+12, got 1e+300" \
  "$bin" diff "$out/a.json" "$out/huge_summary.json"
expect_error 2 "huge_summary.json: step_time_s: expected a number > 0" \
  "$bin" diff "$out/huge_summary.json" "$out/a.json"
printf '{"step_time_s": 1.0, "peak_memory_reserved_gib": -3}\n' > "$out/negative_summary.json"
expect_error 2 "negative_summary.json: peak_memory_reserved_gib: expected a number >= 0" \
  "$bin" diff "$out/a.json" "$out/negative_summary.json"
printf '{"step_time_s": 0}\n' > "$out/zero_summary.json"
expect_error 2 "zero_summary.json: step_time_s: expected a number > 0" \
  "$bin" diff "$out/a.json" "$out/zero_summary.json"
printf '{"step_time_s": 1.0, "comm_s": {"all_gather": 1e300}}\n' > "$out/huge_comm.json"
expect_error 2 "huge_comm.json: comm_s.all_gather: expected a number >= 0" \
  "$bin" diff "$out/a.json" "$out/huge_comm.json"

# A number beyond the double range: exit 2 naming the file and the field.
printf '{"model": "llama3-8b", "training": {"seq_len": 1e400}}\n' > "$out/huge.json"
expect_error 2 "huge.json: training.seq_len: number 1e400 is outside the range of a double" \
  "$bin" plan "$out/huge.json"

# plan validates the cluster as simulate does: the GPU catalog and the cost model file.
expect_error 2 "job.json: cluster.gpu: unknown GPU 'Z100'" "$bin" plan "$out/job.json" --set cluster.gpu=Z100
expect_error 2 "gpus_per_node 1024 for" "$bin" plan "$out/job.json" --set cluster.gpus_per_node=1024
expect_error 2 "cluster.cost_model: empty path" "$bin" plan "$out/job.json" --set 'cluster.cost_model=""'
expect_error 2 "nope.json: cannot open" "$bin" plan "$out/job.json" --set cluster.cost_model=nope.json

printf '{"x":\n' > "$out/broken_cost.json"
expect_error 2 "broken_cost.json: not valid JSON" "$bin" plan "$out/job.json" --set cluster.cost_model=broken_cost.json

# Absurd sizes: the field and the valid range, not a wrapped number or minutes of work.
expect_error 2 "fsdp.forward_prefetch_depth = 2147483647 (expected 0 to 1024)" \
  "$bin" plan "$out/job.json" --set fsdp.forward_prefetch_depth=2147483647
expect_error 2 "training.seq_len = 2147483647 (expected 1 to 16777216)" \
  "$bin" simulate "$out/job.json" --set training.seq_len=2147483647
expect_error 2 "training.grad_accum = 100000 (expected 1 to 1024)" \
  "$bin" simulate "$out/job.json" --set training.grad_accum=100000
expect_error 2 "parallelism.pp_microbatches = 100000 (expected 1 to 1024)" \
  "$bin" simulate "$out/job.json" --set parallelism.pp_microbatches=100000
expect_error 2 "training.local_batch = 2147483647 (expected 1 to 65536)" \
  "$bin" simulate "$out/job.json" --set training.local_batch=2147483647
expect_error 2 "training.local_batch·training.seq_len = 65536·16777216 = 1099511627776 tokens per microbatch" \
  "$bin" simulate "$out/job.json" --set training.local_batch=65536 --set training.seq_len=16777216
expect_error 2 "job.json: cluster: 16777216·8 GPUs is more than 2^24" \
  "$bin" plan "$out/job.json" --set cluster.nodes=16777216 --set parallelism.dp_replicate=16777216
expect_error 2 "parallelism.dp_shard = 18446744073709551615 is outside the 64-bit integer range" \
  "$bin" plan "$out/job.json" --set parallelism.dp_shard=18446744073709551615

# Consistency with the model: tp splits whole heads (and KV heads: k/v are column-sharded).
expect_error 2 "tp=3 does not divide num_attention_heads (32)" "$bin" model llama3-8b --tp 3
printf '{"model": "llama3-8b", "cluster": {"nodes": 2}, "parallelism": {"tp": 16, "dp_shard": 1}}\n' > "$out/tp16.json"
expect_error 2 "tp=16 does not divide num_key_value_heads (8)" "$bin" plan "$out/tp16.json"

# Context parallelism gives each rank two equal chunks of the sequence.
expect_error 2 "training.seq_len = 8192 is not divisible by 2·parallelism.cp = 6" \
  "$bin" plan "$out/job.json" --set cluster.nodes=3 --set parallelism.cp=3 --set training.seq_len=8192

# Expert sizes only with experts: an edp_shard without ep, or ep on a dense model, is refused
# (both used to be accepted and silently meaningless).
expect_error 2 "parallelism.edp_shard = 4: the expert shard size applies only with expert parallelism" \
  "$bin" plan "$out/job.json" --set parallelism.edp_shard=4
expect_error 2 "job.json: parallelism.ep = 8 (edp_shard = 1): the model has no routed experts" \
  "$bin" simulate "$out/job.json" --set parallelism.ep=8

# Module-tree op dimensions are bounded; within the bounds, a product past 64 bits is refused
# where it would form, never priced as a wrapped (negative) duration.
# Blocks of the tiny model: one with a parameter and no op, one with a linear op.
noop_block() { printf '{"name": "%s", "class": "Block", "params": [{"name": "scale", "shape": [64], "dtype": "float32"}]}' "$1"; }
fc_block() { printf '{"name": "%s", "class": "Block", "children": [
    {"name": "fc", "class": "Linear", "op": {"kind": "linear", "in": 64, "out": 64},
     "params": [{"name": "weight", "shape": [64, 64], "dtype": "float32"}]}]}' "$1"; }
# tree FILE HEAD_IN HEAD_OUT [LAYERS]: a tiny model whose head is IN x OUT and whose
# gradient-checkpointed ModuleList holds LAYERS (default: a block without an op, then one with).
tree() {
  printf '{"format": "shardscope-tree/1", "config": {"model_type": "toy"}, "root": {"name": "",
 "class": "Toy", "op": {"kind": "loss", "vocab": 128}, "children": [
 {"name": "model", "class": "ToyModel", "gradient_checkpointing": true, "children": [
  {"name": "emb", "class": "Embedding", "op": {"kind": "embedding", "vocab": 128, "dim": 64},
   "params": [{"name": "weight", "shape": [128, 64], "dtype": "float32"}]},
  {"name": "layers", "class": "ModuleList", "children": [%s]}]},
 {"name": "head", "class": "Linear", "op": {"kind": "linear", "in": %s, "out": %s},
  "params": [{"name": "weight", "shape": [128, 64], "dtype": "float32"}]}]}}\n' \
    "${4:-$(noop_block 0), $(fc_block 1)}" "$2" "$3" > "$1"
}
tree "$out/wide.tree.json" 4611686018427387904 4611686018427387904
printf '{"model": {"module_tree": "wide.tree.json"}, "cluster": {"gpus_per_node": 2}}\n' > "$out/wide.json"
expect_error 2 "wide.tree.json: root.children[1].op.in = 4611686018427387904: expected an integer from 0 to 2^32" \
  "$bin" simulate "$out/wide.json"
tree "$out/wide.tree.json" 4294967296 4294967296
expect_error 2 "module 'head': op cost: linear op on 16384 tokens per micro-batch forms tensors of 1.84e+19 elements" \
  "$bin" simulate "$out/wide.json"
grep -q -- "negative duration" "$out/stderr" && { cat "$out/stderr"; fail "a wrapped duration"; }

# A checkpointed block with a parameter and no op plans, schedules and simulates, first, last
# or alone in the layers, whatever the checkpointing, accumulation, pipelining and loss
# placement: it used to fail with "frees buffer 16 which is not live".
tree "$out/first.tree.json" 64 128
tree "$out/last.tree.json" 64 128 "$(fc_block 0), $(noop_block 1)"
tree "$out/only.tree.json" 64 128 "$(noop_block 0), $(noop_block 1)"
for t in first last only; do
  printf '{"model": {"module_tree": "%s.tree.json"}, "cluster": {"gpus_per_node": 2}}\n' $t > "$out/$t.json"
  for ac in none full selective_op selective_layer:1; do
    for more in training.grad_accum=1 training.grad_accum=2 parallelism.pp=2 model.implementation=torchtitan; do
      "$bin" simulate "$out/$t.json" --set training.activation_checkpoint=$ac --set $more \
        > "$out/stdout" 2> "$out/stderr" ||
        { cat "$out/stderr"; fail "checkpointed block without an op ($t), $ac, $more: exit $?"; }
    done
  done
done

# What an input expands into is bounded: 40 levels each registering the one below twice are
# 2^42 module visits; an endless input stops at the byte limit. Each names how to raise it.
awk 'BEGIN { s = "{\"name\": \"x\", \"class\": \"L\", \"id\": \"m0\"}";
  for (i = 1; i <= 40; i++) s = sprintf("{\"name\": \"x\", \"class\": \"L\", \"id\": \"m%d\", \"children\": [{\"name\": \"a\", \"class\": \"P\", \"children\": [%s]}, {\"name\": \"b\", \"class\": \"P\", \"children\": [{\"name\": \"x\", \"class\": \"L\", \"id\": \"m%d\"}]}]}", i, s, i - 1);
  printf "{\"format\": \"shardscope-tree/1\", \"root\": {\"name\": \"\", \"class\": \"M\", \"children\": [%s]}}\n", s }' > "$out/bomb.tree.json"
expect_error 2 "modules, more than the limit of 1048576 (set SHARDSCOPE_MAX_MODULES to raise it)" \
  "$bin" model "$out/bomb.tree.json"
expect_error 2 "/dev/zero: is larger than 100000 bytes, the limit on any input (set SHARDSCOPE_MAX_INPUT_BYTES to raise it)" \
  env SHARDSCOPE_MAX_INPUT_BYTES=100000 "$bin" plan /dev/zero
expect_error 2 "more than the limit of 100 (set SHARDSCOPE_MAX_SCHEDULE_OPS to raise it)" \
  env SHARDSCOPE_MAX_SCHEDULE_OPS=100 "$bin" simulate "$out/job.json"

# Filesystem: a directory as input says so; an unwritable output names the user's path.
expect_error 2 "$out: is a directory" "$bin" plan "$out"
expect_error 2 "$out/no-such-dir/plan.json: the folder '$out/no-such-dir' does not exist" \
  "$bin" plan "$out/job.json" --json "$out/no-such-dir/plan.json"
# A key twice in one object: the last one used to win silently.
printf '{"model": "llama3-8b", "cluster": {"gpus_per_node": 4, "gpus_per_node": 2}}\n' > "$out/dup.json"
expect_error 2 "$out/dup.json: cluster: the key \"gpus_per_node\" appears twice in one object" \
  "$bin" plan "$out/dup.json"
grep -q "\.tmp\." "$out/stderr" && { cat "$out/stderr"; fail "unwritable output names the temporary file"; }
# run: outputs checked before the step (a scenario, its model file or the other output are not
# overwritten), bounds on the numbers it converts.
cp tests/backend_mpi/scenarios/fsdp.json tests/backend_mpi/scenarios/tiny_llama.config.json "$out/"
expect_error 2 "is the scenario $out/fsdp.json" \
  "$bin" run "$out/fsdp.json" --device cpu --emulate-world 4 --trace "$out/fsdp.json"
expect_error 2 "is the scenario's model file" \
  "$bin" run "$out/fsdp.json" --device cpu --emulate-world 4 --summary "$out/tiny_llama.config.json"
expect_error 2 "the same file as --summary" \
  "$bin" run "$out/fsdp.json" --device cpu --emulate-world 4 --summary "$out/s.json" --trace "$out/./s.json"
expect_error 2 "--timeout: expected a number > 0 and <= 1e+06, got '1e300'" \
  "$bin" run "$out/fsdp.json" --device cpu --emulate-world 4 --timeout 1e300
expect_error 2 "--memory-limit: expected a number > 0" \
  "$bin" run "$out/fsdp.json" --device cpu --emulate-world 4 --memory-limit 0
# An event kind our format does not define fails check-trace and is counted by stats, not
# dropped silently.
"$bin" simulate --set training.local_batch=1 --set training.seq_len=2048 \
  --trace "$out/t.json" > /dev/null 2>&1 || fail "simulate --trace"
sed '0,/"ph":"X"/s//"ph":"Q"/' "$out/t.json" > "$out/tq.json"
expect_error 2 "1 event of a kind the format does not define (ph=Q), the first traceEvents[" \
  "$bin" check-trace "$out/tq.json"
# An empty op_id is no op_id (diff cannot join it): a problem check-trace names, as a missing one.
sed '0,/"op_id":"[^"]*"/s//"op_id":""/' "$out/t.json" > "$out/te.json"
"$bin" check-trace "$out/te.json" > "$out/stdout" 2> "$out/stderr" &&
  fail "check-trace accepted an empty op_id"
grep -q "te.json: traceEvents\[[0-9]*\].args.op_id: empty" "$out/stderr" ||
  { cat "$out/stderr"; fail "check-trace does not name the empty op_id"; }
# diff of a trace and a file that is not JSON, or JSON of neither kind, says which (it called
# either one "a summary").
printf 'not json\n' > "$out/nj.json"
expect_error 2 "$out/nj.json: not valid JSON at byte" "$bin" diff "$out/t.json" "$out/nj.json"
printf '{}\n' > "$out/obj.json"
expect_error 2 "$out/obj.json: neither a trace (no traceEvents) nor a summary" \
  "$bin" diff "$out/obj.json" "$out/t.json"
# Output lost on the way out is a failure (exit 3), not success.
if [ -w /dev/full ]; then
  "$bin" stats "$out/t.json" > /dev/full 2> "$out/stderr"
  rc=$?
  [ $rc -eq 3 ] || { cat "$out/stderr"; fail "stats > /dev/full: exit $rc (expected 3)"; }
  grep -q "writing the output to standard output failed" "$out/stderr" ||
    { cat "$out/stderr"; fail "stats > /dev/full: no message"; }
fi
"$bin" stats "$out/tq.json" > "$out/stats" 2>&1 || fail "stats on a trace with one unknown event"
grep -q "events of a kind the format does not define, skipped: 1" "$out/stats" ||
  { cat "$out/stats"; fail "stats does not say it skipped the event"; }
# calibrate refuses a trace check-trace refuses (one event stretched over the rest of its lane)
# instead of fitting every figure to its bound.
sed '0,/"dur":[0-9.]*/s//"dur":1000000000000.000/' "$out/t.json" > "$out/t_long.json"
expect_error 2 "t_long.json: not a valid trace" "$bin" calibrate "$out/t_long.json" --out "$out/cal.json"
[ -e "$out/cal.json" ] && fail "calibrate wrote a calibration from an invalid trace"
# A calibration with no network or NVLink bandwidth is refused (0 made those collectives free),
# and its errors name the scenario field that points at it.
printf '{"node": {"nic_gbit_per_s": 0}}\n' > "$out/nic0.json"
expect_error 2 "cluster.cost_model: $out/nic0.json: node.nic_gbit_per_s: 0 is out of range [0.001" \
  "$bin" simulate "$out/job.json" --set "cluster.cost_model=$out/nic0.json"
printf '{"gpu": {"nvlink_links": 0}}\n' > "$out/links0.json"
expect_error 2 "gpu.nvlink_links: 0 is out of range [1" \
  "$bin" simulate "$out/job.json" --set "cluster.cost_model=$out/links0.json"
expect_error 2 "cluster.cost_model: $out/job.json: model: unknown key" \
  "$bin" simulate "$out/job.json" --set "cluster.cost_model=$out/job.json"
printf '{"collectives": {"overrides": [%s, %s]}}\n' \
  '{"op": "all_gather", "ranks_per_node": 8, "nodes": 1, "latency_us": 20, "busbw_gbps": 300}' \
  '{"op": "all_gather", "ranks_per_node": 8, "nodes": 1, "latency_us": 30000, "busbw_gbps": 1}' \
  > "$out/twice.json"
expect_error 2 "collectives.overrides[1]: the same op, ranks_per_node and nodes as entry 0" \
  "$bin" simulate "$out/job.json" --set "cluster.cost_model=$out/twice.json"
# Control bytes a user wrote (an ESC sequence in a GPU name) are printed escaped, not sent to
# the terminal.
printf '{"model": "llama3-8b", "cluster": {"gpu": "h100\\u001b[31m-sxm"}}\n' > "$out/esc.json"
expect_error 2 'unknown GPU '"'"'h100\x1b[31m-sxm'"'" "$bin" plan "$out/esc.json"
grep -q "$(printf '\033')" "$out/stderr" && fail "an ESC byte reached stderr"
# Sequence parallelism over more ranks than tokens: refused, not priced as a fraction of a token.
expect_error 2 "training.seq_len = 4 is not divisible by parallelism.tp = 8" \
  "$bin" simulate "$out/job.json" --set parallelism.tp=8 --set training.seq_len=4
# recommend says a budget priced every plan out, not that a margin did; one-token sequences
# have plans (cp 1 needs no even length).
expect_error 1 "no plan within --budget-per-hour 1e-300: 872 of the 872 plans cost more per hour" \
  "$bin" recommend --model llama3.2-1b --global-batch-tokens 65536 --budget-per-hour 1e-300
"$bin" recommend --model llama3.2-1b --global-batch-tokens 8 --seq-len 1 --top 1 > "$out/rec1" 2>&1 ||
  { cat "$out/rec1"; fail "recommend for one-token sequences"; }
# recommend --set fixes what the search does not choose, and pins a searched axis by its own
# path; what it searches and cannot pin is exit 2 naming the flag to use instead, as is an
# object holding a searched path, a pin that is no count, and pins no plan has.
expect_error 2 "--set training.local_batch=2: recommend searches training.local_batch itself (batching is searched for --global-batch-tokens)" \
  "$bin" recommend --model llama3.2-1b --global-batch-tokens 65536 --set training.local_batch=2
expect_error 2 "--set parallelism.tp=0: expected a whole number >= 1" \
  "$bin" recommend --model llama3.2-1b --global-batch-tokens 65536 --set parallelism.tp=0
expect_error 2 "--set parallelism.ep=2: llama3.2-1b has no routed experts" \
  "$bin" recommend --model llama3.2-1b --global-batch-tokens 65536 --set parallelism.ep=2
expect_error 2 "h100-sxm: 4 nodes are 32 GPUs, above --max-gpus 8" \
  "$bin" recommend --model llama3.2-1b --global-batch-tokens 65536 --set cluster.nodes=4 --max-gpus 8
expect_error 2 "--set training={\"seq_len\": 4096}: recommend searches training.local_batch itself" \
  "$bin" recommend --model llama3.2-1b --global-batch-tokens 65536 --set 'training={"seq_len": 4096}'
expect_error 2 "--set training.expandabel_segments: unknown key (did you mean training.expandable_segments?)" \
  "$bin" recommend --model llama3.2-1b --global-batch-tokens 65536 --set training.expandabel_segments=true
# model checks what plan checks: an expert mesh over a dense model, a parameter dtype nothing
# trains in, a source layout that shards a dimension the tensor lacks; a scenario lists a
# parameter once.
expect_error 2 "--ep 2: llama3-8b has no routed experts" "$bin" model llama3-8b --ep 2
expect_error 2 "--param-dtype int8: expected float32, bfloat16 or float16" \
  "$bin" model llama3-8b --param-dtype int8
# An unknown spelling gets the same message, not a list of dtypes some of which are then refused.
expect_error 2 "--param-dtype BF16: expected float32, bfloat16 or float16" \
  "$bin" model llama3-8b --param-dtype BF16
# A NUL byte ends no JSON input early: what follows it was ignored (exit 0).
printf '{"model": "llama3-8b"}\000 garbage {{{' > "$out/nul.json"
expect_error 2 "nul.json: not valid JSON at byte 22: a NUL byte" "$bin" simulate "$out/nul.json"
# Errors of the scenario's model and schedule name its file, and its fields as a scenario
# spells them (fsdp, not the planner's fsdp_config).
printf '{"model": "llama3-8b", "training": {"seq_len": 2048}}\n' > "$out/named.json"
expect_error 2 "named.json: training.local_batch = 2 does not split into parallelism.pp_microbatches" \
  "$bin" simulate "$out/named.json" --set parallelism.pp=8
expect_error 2 "named.json: built-in llama3-8b: tp=6 does not divide num_attention_heads" \
  "$bin" plan "$out/named.json" --set cluster.gpus_per_node=6 --set parallelism.tp=6 \
  --set training.seq_len=2052
printf '{"model": "qwen3-30b-a3b", "parallelism": {"ep": 8}, "fsdp": {"reshard_after_forward": 2},
  "training": {"seq_len": 1024, "local_batch": 1}}\n' > "$out/raf.json"
expect_error 2 "raf.json: fsdp.reshard_after_forward = 2: unit 'model.layers.0.mlp.experts'" \
  "$bin" simulate "$out/raf.json"
printf '{"format": "shardscope-tree/1", "config": {}, "root": {"name": "", "class": "M", %s}}\n' \
  '"params": [{"name": "w", "shape": [4, 4], "dtype": "float32", "layout": {"tp": "Shard(5)"}}]' \
  > "$out/shard5_tree.json"
expect_error 2 "shard5_tree.json: root.params[0].layout.tp: Shard(5) but the parameter has 2 dims" \
  "$bin" model "$out/shard5_tree.json"
expect_error 2 "fsdp.ignored_params[1]: 'lm_head.weight' is already listed at [0]" \
  "$bin" plan "$out/job.json" --set 'fsdp.ignored_params=["lm_head.weight","lm_head.weight"]'
# An inline config's error names the scenario file and the value.
expect_error 2 "job.json: model.hf: hidden_size: expected an integer in [1, 16777216], got -3" \
  "$bin" plan "$out/job.json" --set 'model={"hf": {"model_type": "llama", "hidden_size": -3,
  "vocab_size": 100, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 8}}'
# view: the screenshot may not replace an input, and it is checked before anything renders (so
# also in a build without the viewer); --frames is bounded and needs --screenshot.
expect_error 2 "--screenshot $out/t.json: is the trace A $out/t.json" \
  "$bin" view "$out/t.json" --screenshot "$out/t.json"
expect_error 2 "--screenshot $out/job.json: is the --scenario $out/job.json" \
  "$bin" view --scenario "$out/job.json" --screenshot "$out/job.json"
expect_error 2 "--screenshot: expected a non-empty value" "$bin" view "$out/t.json" --screenshot ''
expect_error 2 "--frames: only with --screenshot" "$bin" view "$out/t.json" --frames 5
expect_error 2 "--frames: expected 1 to 10000, got 100000000" \
  "$bin" view "$out/t.json" --screenshot "$out/v.png" --frames 100000000
expect_error 2 "--max-gpus 7: below one node (8 GPUs)" \
  "$bin" recommend --model llama3.2-1b --global-batch-tokens 1024 --seq-len 32 --max-gpus 7
# A module tree's layouts are its own: --tp on one is refused, not ignored.
"$bin" model llama3.2-1b --tree "$out/tree.json" > /dev/null 2>&1 || fail "model --tree"
expect_error 2 "a module tree carries its own layouts and dtypes" "$bin" model "$out/tree.json" --tp 2
# sweep: an output that is a file a variant reads (its model file, named by the base, an axis
# or --set; its calibration file) is refused before the run, and the file is left whole.
cp tests/backend_mpi/scenarios/tiny_llama.config.json "$out/tree_a.json"
cp tests/backend_mpi/scenarios/tiny_llama.config.json "$out/tree_b.json"
printf '{"model": {"hf_config": "tree_a.json"}}\n' > "$out/sweep_job.json"
expect_error 2 "--csv $out/tree_a.json: is the scenario's model file (of a variant)" \
  "$bin" sweep "$out/sweep_job.json" --vary training.local_batch=1,2 --csv "$out/tree_a.json"
expect_error 2 "--json $out/tree_b.json: is the scenario's model file (of a variant)" \
  "$bin" sweep "$out/sweep_job.json" --vary "model.hf_config=tree_a.json,tree_b.json" \
  --json "$out/tree_b.json"
cmp -s "$out/tree_b.json" tests/backend_mpi/scenarios/tiny_llama.config.json ||
  fail "sweep replaced a model file an axis names"
# recommend --scenarios: a plan file would replace the model file kept in the folder.
mkdir "$out/plans"
cp tests/backend_mpi/scenarios/tiny_llama.config.json "$out/plans/plan_1.json"
expect_error 2 "--scenarios $out/plans/plan_1.json: is the --model $out/plans/plan_1.json" \
  "$bin" recommend --model "$out/plans/plan_1.json" --global-batch-tokens 8192 --seq-len 1024 \
  --scenarios "$out/plans" --top 1
cmp -s "$out/plans/plan_1.json" tests/backend_mpi/scenarios/tiny_llama.config.json ||
  fail "recommend replaced its model file"
echo "hostile_input_test: ok"

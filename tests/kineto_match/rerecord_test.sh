#!/bin/sh
# Re-records a tiny FSDP2 step with tools/record_fsdp2_trace.py (2 gloo ranks, a 2-layer
# transformers Llama; without and with full activation checkpointing) and checks that the
# importer finds the predicted op_ids in it
# (kineto_match_test on the fresh recording). Needs torch and transformers: exit 77 (skipped)
# when they do not import. SHARDSCOPE_TORCH_PYTHON overrides the Python that CMake found.
# Usage: rerecord_test.sh PYTHON KINETO_MATCH_TEST   (run from the repository root)
py="${SHARDSCOPE_TORCH_PYTHON:-$1}"
test_bin="$2"
if ! "$py" -c "import torch, transformers" > /dev/null 2>&1; then
  echo "torch or transformers does not import with $py: skipped"
  exit 77
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# Once as is, once with full activation checkpointing (its re-run forward has no label: the
# importer finds it by its forward ops inside a backward node).
for ac in none full; do
  "$py" tools/record_fsdp2_trace.py --out "$out" --prefix "tiny_$ac" --model llama --world 2 \
    --layers 2 --hidden 128 --intermediate 256 --heads 4 --kv-heads 2 --vocab 256 --batch 2 \
    --seq 32 --ac "$ac" --scenario "$out/tiny_$ac.scenario.json" > "$out/log" 2>&1 ||
    { cat "$out/log"; exit 1; }
  SHARDSCOPE_KINETO_MATCH_DIR="$out" SHARDSCOPE_KINETO_MATCH_PREFIX="tiny_$ac" \
    SHARDSCOPE_KINETO_MATCH_RANKS=2 "$test_bin" || exit 1
done

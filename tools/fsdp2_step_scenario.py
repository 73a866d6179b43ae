#!/usr/bin/env python3
"""The torch-free half of tools/measure_fsdp2_step.py: what a measurement means to shardscope.

scenario() turns a measurement's arguments into the shardscope scenario it ran, so
bench/device/compare.py and tests/measured/ can re-predict the committed results on a machine
without PyTorch; summarize_kernels() classifies the kernels of a Kineto trace; write_atomic()
writes a result file in one step. Standard library only: nothing here may import torch.
"""
import collections
import gzip
import json
import os


KERNEL_CLASSES = (
    ("nccl", ("nccl",)),
    ("attention", ("flash", "fmha", "cudnn", "attention", "sdpa")),
    ("gemm", ("gemm", "cutlass", "xmma", "nvjet", "sm90_", "sm80_", "cublas", "matmul")),
)


def kernel_class(name):
    n = name.lower()
    for cls, keys in KERNEL_CLASSES:
        if any(k in n for k in keys):
            return cls
    return "elementwise"


def summarize_kernels(trace_path):
    """GPU time per kernel class and GPU idle time inside the profiled step (Kineto JSON)."""
    opener = gzip.open if trace_path.endswith(".gz") else open
    with opener(trace_path, "rt") as f:
        events = json.load(f)["traceEvents"]
    kernels = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and "dur" in e]
    by_class = collections.defaultdict(float)
    count = collections.Counter()
    busy = []
    for e in kernels:
        cls = "memcpy" if e["cat"] != "kernel" else kernel_class(e["name"])
        by_class[cls] += e["dur"] * 1e-6
        count[cls] += 1
        if cls != "nccl":
            busy.append((e["ts"], e["ts"] + e["dur"]))
    busy.sort()
    union, end, first = 0.0, None, None
    for s, t in busy:
        first = s if first is None else first
        if end is None or s > end:
            union += t - s
            end = t
        elif t > end:
            union += t - end
            end = t
    span = (end - first) if busy else 0.0
    top = collections.Counter()
    for e in kernels:
        top[e["name"][:90]] += e["dur"] * 1e-6
    return {"gpu_s_by_class": dict(by_class), "kernels_by_class": dict(count),
            "compute_busy_s": union * 1e-6, "compute_span_s": span * 1e-6,
            "compute_idle_s": (span - union) * 1e-6,
            "top_kernels_s": [[k, v] for k, v in top.most_common(25)]}


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def scenario(a, world):
    return {
        "description": f"measure_fsdp2_step.py: torchtitan-style Llama, {a.layers} layers, {world} x {a.gpu}",
        "model": {"hf": {"model_type": "llama", "architectures": ["LlamaForCausalLM"],
                         "hidden_size": a.hidden, "intermediate_size": a.ffn,
                         "num_hidden_layers": a.layers, "num_attention_heads": a.heads,
                         "num_key_value_heads": a.kv_heads, "vocab_size": a.vocab,
                         "max_position_embeddings": max(a.seq, 4096), "rms_norm_eps": 1e-5,
                         "rope_theta": a.rope_theta, "tie_word_embeddings": False}},
        "cluster": {"gpu": a.gpu, "nodes": 1, "gpus_per_node": world},
        "parallelism": {"dp_shard": world},
        "fsdp": {"mix_precision": {"param_dtype": "bfloat16", "reduce_dtype": "float32"}},
        "training": {"local_batch": a.batch, "seq_len": a.seq,
                     "activation_checkpoint": {"none": "none", "full": "full",
                                               "selective_op": "selective_op:2"}[a.ac]},
    }

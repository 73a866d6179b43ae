#!/usr/bin/env python3
"""Records a PyTorch profiler (Kineto) trace of one real FSDP2 training step.

A model is sharded with `fully_shard` (one unit per block, plus the root) over WORLD processes
on the CPU with the gloo backend (or NCCL on GPUs with --cuda), runs one warm-up step, then
profiles one step (memory profiling and record_shapes on, so collectives carry their sizes),
and writes one compressed Chrome trace per rank: <out>/<prefix>_rank<r>.json.gz.

Models: `--model llama` is a transformers LlamaForCausalLM built from the shape flags (random
weights, nothing downloaded; the loss is transformers' own, computed inside the root's forward
from `labels`); `--model tiny` is a small self-contained transformer (torch only).
`--scenario FILE` also writes the shardscope scenario of the same configuration (model as an
inline `{"hf": {...}}` config, world size, batch, sequence, precision, checkpointing, prefetch),
so `shardscope simulate FILE` predicts what was recorded. `--ac full` wraps every block in
torchtitan's checkpoint_wrapper (non-reentrant) and `--no-reshard-after-forward` keeps blocks
gathered into backward.

With --ac full, PyTorch re-runs each block's forward inside the first backward node that unpacks
a saved tensor, with no label around it; the importer finds those forward ops by their
"Sequence number" with "Fwd thread id" 0 and names them `bwd/<unit>/recompute`
(2026-12-05, torch 2.15: 45 of 45 predicted op_ids, 34 of 34 with 2 layers).

The shardscope importer tests (tests/trace/kineto_test.cpp, tests/kineto_match/) read the
result without torch.

Usage:
  python3 tools/record_fsdp2_trace.py --out tests/fixtures/kineto --prefix fsdp2_llama_cpu \\
      --model llama --world 4 --layers 3 --hidden 384 --heads 6 --kv-heads 2 \\
      --scenario tests/fixtures/kineto/fsdp2_llama_cpu.scenario.json
"""
import argparse
import gzip
import json
import os
import shutil
import socket
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class TinyTransformer(nn.Module):
    def __init__(self, vocab=512, dim=64, heads=4, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, tokens):
        x = self.embed(tokens)
        for layer in self.layers:
            x = layer(x)
        return self.head(self.norm(x))


def hf_config(args):
    """The transformers Llama config of --model llama (also the scenario's inline model)."""
    return {
        "model_type": "llama", "architectures": ["LlamaForCausalLM"],
        "vocab_size": args.vocab, "hidden_size": args.hidden,
        "intermediate_size": args.intermediate, "num_hidden_layers": args.layers,
        "num_attention_heads": args.heads, "num_key_value_heads": args.kv_heads,
        "max_position_embeddings": max(256, args.seq), "rms_norm_eps": 1e-5,
        "tie_word_embeddings": False, "torch_dtype": "float32",
    }


def build_model(args):
    """(model, the blocks to shard) for args.model."""
    if args.model == "tiny":
        model = TinyTransformer(layers=args.layers)
        return model, list(model.layers)
    from transformers import LlamaConfig, LlamaForCausalLM
    config = {k: v for k, v in hf_config(args).items() if k not in ("model_type", "architectures")}
    config["attn_implementation"] = "sdpa"
    model = LlamaForCausalLM(LlamaConfig(**config))
    return model, list(model.model.layers)


def fully_shard_fn():
    try:
        from torch.distributed.fsdp import fully_shard  # torch >= 2.6
    except ImportError:
        from torch.distributed._composable.fsdp import fully_shard  # torch 2.4 / 2.5
    return fully_shard


def worker(rank, world, args, tmpdir):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    backend = "nccl" if args.cuda else "gloo"
    dist.init_process_group(backend, rank=rank, world_size=world)
    device = torch.device("cuda", rank) if args.cuda else torch.device("cpu")
    if args.cuda:
        torch.cuda.set_device(device)
    torch.manual_seed(0)
    torch.set_num_threads(1)  # world processes share the CPU; keeps the timeline readable
    fully_shard = fully_shard_fn()
    model, blocks = build_model(args)
    model = model.to(device)
    if args.ac == "full":
        # torchtitan's full activation checkpointing: each block wrapped, then sharded.
        from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
            checkpoint_wrapper)
        layers = model.layers if args.model == "tiny" else model.model.layers
        for i in range(len(layers)):
            layers[i] = checkpoint_wrapper(layers[i], preserve_rng_state=False)
        blocks = list(layers)
    for block in blocks:
        fully_shard(block, reshard_after_forward=args.reshard_after_forward)
    fully_shard(model)
    if args.forward_prefetch > 0:
        # Explicit forward prefetch of the next `depth` blocks (FSDP2 does none by default).
        for i, block in enumerate(blocks):
            targets = blocks[i + 1:i + 1 + args.forward_prefetch]
            if targets:
                block.set_modules_to_forward_prefetch(targets)
    optim = torch.optim.AdamW(model.parameters(), lr=1e-3)
    vocab = args.vocab if args.model == "llama" else 512
    tokens = torch.randint(0, vocab, (args.batch, args.seq), device=device)

    def step():
        if args.model == "llama":
            loss = model(input_ids=tokens, labels=tokens).loss
        else:
            loss = model(tokens).float().pow(2).mean()
        loss.backward()
        optim.step()
        optim.zero_grad()

    activities = [torch.profiler.ProfilerActivity.CPU]
    if args.cuda:
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    schedule = torch.profiler.schedule(wait=0, warmup=1, active=1, repeat=1)
    path = os.path.join(tmpdir, f"rank{rank}.json")
    with torch.profiler.profile(activities=activities, schedule=schedule, profile_memory=True,
                                record_shapes=True, with_stack=False) as prof:
        for _ in range(2):
            step()
            prof.step()
    prof.export_chrome_trace(path)
    dist.barrier()
    dist.destroy_process_group()


def scenario(args):
    """The shardscope scenario (docs/scenario.md) of the recorded configuration."""
    return {
        "description": ("FSDP2 step recorded by tools/record_fsdp2_trace.py "
                        f"(--model {args.model}, {args.world} "
                        f"{'NCCL GPU' if args.cuda else 'gloo CPU'} ranks, torch "
                        f"{torch.__version__}); the cluster is only where the step is predicted"),
        "model": {"hf": hf_config(args)},
        "cluster": {"gpu": "h100-sxm", "nodes": 1, "gpus_per_node": args.world},
        "fsdp": {"reshard_after_forward": args.reshard_after_forward,
                 "forward_prefetch_depth": args.forward_prefetch,
                 "backward_prefetch_depth": 1,
                 "mix_precision": {"param_dtype": "float32", "reduce_dtype": "float32"}},
        "training": {"local_batch": args.batch, "seq_len": args.seq, "grad_accum": 1,
                     "activation_checkpoint": args.ac, "optimizer": "adamw"},
    }


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="folder for <prefix>_rank<r>.json.gz")
    parser.add_argument("--prefix", help="file name prefix (default fsdp2_<device>)")
    parser.add_argument("--model", choices=["tiny", "llama"], default="tiny")
    parser.add_argument("--world", type=int, default=2)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=384, help="llama: hidden size")
    parser.add_argument("--intermediate", type=int, default=1024, help="llama: MLP size")
    parser.add_argument("--heads", type=int, default=6, help="llama: attention heads")
    parser.add_argument("--kv-heads", type=int, default=2, help="llama: key/value heads (GQA)")
    parser.add_argument("--vocab", type=int, default=1024, help="llama: vocabulary")
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--seq", type=int, default=16)
    parser.add_argument("--forward-prefetch", type=int, default=0,
                        help="explicit forward prefetch depth (0: FSDP2's default, none)")
    parser.add_argument("--ac", choices=["none", "full"], default="none",
                        help="activation checkpointing of every block (torchtitan's full AC)")
    parser.add_argument("--no-reshard-after-forward", dest="reshard_after_forward",
                        action="store_false",
                        help="blocks keep their parameters gathered from forward to backward")
    parser.add_argument("--port", type=int, default=0, help="rendezvous port (0: a free one)")
    parser.add_argument("--scenario", help="also write the shardscope scenario to this file")
    parser.add_argument("--cuda", action="store_true", help="NCCL on GPUs instead of gloo on CPU")
    args = parser.parse_args()
    if args.port == 0:
        args.port = free_port()
    device = "cuda" if args.cuda else "cpu"
    prefix = args.prefix or f"fsdp2_{device}"
    os.makedirs(args.out, exist_ok=True)
    tmpdir = tempfile.mkdtemp(prefix="fsdp2_trace_")
    try:
        mp.spawn(worker, args=(args.world, args, tmpdir), nprocs=args.world, join=True)
        for rank in range(args.world):
            with open(os.path.join(tmpdir, f"rank{rank}.json")) as f:
                trace = json.load(f)
            # Record what produced the fixture next to what Kineto already writes.
            recorder = {"script": "tools/record_fsdp2_trace.py", "torch": torch.__version__,
                        "backend": "nccl" if args.cuda else "gloo", "world": args.world,
                        "model": args.model, "layers": args.layers, "batch": args.batch,
                        "seq": args.seq, "forward_prefetch": args.forward_prefetch}
            if args.model == "llama":
                recorder["hf_config"] = hf_config(args)
            trace.setdefault("shardscope_recorder", {}).update(recorder)
            out = os.path.join(args.out, f"{prefix}_rank{rank}.json.gz")
            with gzip.open(out, "wt", compresslevel=9) as f:
                json.dump(trace, f, separators=(",", ":"))
            print(f"wrote {out} ({os.path.getsize(out)} bytes, "
                  f"{len(trace.get('traceEvents', []))} events)")
        if args.scenario:
            if args.model != "llama":
                print("--scenario needs --model llama (the tiny model has no HF config)",
                      file=sys.stderr)
                return 2
            with open(args.scenario, "w") as f:
                json.dump(scenario(args), f, indent=2)
                f.write("\n")
            print(f"wrote {args.scenario}")
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Records a PyTorch profiler (Kineto) trace of one real FSDP2 training step.

A tiny transformer is sharded with `fully_shard` (one unit per block, plus the root) over
WORLD processes on the CPU with the gloo backend (or NCCL on GPUs with --cuda), runs one
warm-up step, then profiles one step with memory profiling on, and writes one compressed
Chrome trace per rank: <out>/fsdp2_<device>_rank<r>.json.gz.

The shardscope importer test (tests/trace/kineto_test.cpp) reads the result without torch.

Usage:
  python3 tools/record_fsdp2_trace.py --out tests/fixtures/kineto [--world 2] [--cuda]
"""
import argparse
import gzip
import json
import os
import shutil
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
    fully_shard = fully_shard_fn()
    model = TinyTransformer(layers=args.layers).to(device)
    for block in model.layers:
        fully_shard(block)
    fully_shard(model)
    optim = torch.optim.AdamW(model.parameters(), lr=1e-3)
    tokens = torch.randint(0, 512, (args.batch, args.seq), device=device)

    def step():
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
                                record_shapes=False, with_stack=False) as prof:
        for _ in range(2):
            step()
            prof.step()
    prof.export_chrome_trace(path)
    dist.barrier()
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="folder for fsdp2_<device>_rank<r>.json.gz")
    parser.add_argument("--world", type=int, default=2)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--seq", type=int, default=16)
    parser.add_argument("--port", type=int, default=29533)
    parser.add_argument("--cuda", action="store_true", help="NCCL on GPUs instead of gloo on CPU")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    tmpdir = tempfile.mkdtemp(prefix="fsdp2_trace_")
    try:
        mp.spawn(worker, args=(args.world, args, tmpdir), nprocs=args.world, join=True)
        device = "cuda" if args.cuda else "cpu"
        for rank in range(args.world):
            with open(os.path.join(tmpdir, f"rank{rank}.json")) as f:
                trace = json.load(f)
            # Record what produced the fixture next to what Kineto already writes.
            trace.setdefault("shardscope_recorder", {}).update({
                "script": "tools/record_fsdp2_trace.py", "torch": torch.__version__,
                "backend": "nccl" if args.cuda else "gloo", "world": args.world,
                "layers": args.layers, "batch": args.batch, "seq": args.seq})
            out = os.path.join(args.out, f"fsdp2_{device}_rank{rank}.json.gz")
            with gzip.open(out, "wt", compresslevel=9) as f:
                json.dump(trace, f, separators=(",", ":"))
            print(f"wrote {out} ({os.path.getsize(out)} bytes, "
                  f"{len(trace.get('traceEvents', []))} events)")
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

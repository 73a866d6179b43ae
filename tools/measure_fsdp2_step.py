#!/usr/bin/env python3
"""Measures real FSDP2 training steps of a torchtitan-style Llama and writes what shardscope predicts.

The model is written the way torchtitan writes it (composite fp32 RMSNorm, complex fp32 RoPE,
repeat_kv + SDPA with is_causal, SwiGLU, fp32 cross-entropy), wrapped the way torchtitan wraps it
(activation checkpointing per block — none, full, or torchtitan's op-level SAC that saves every
mm output except every second one — then fully_shard per block and on the root with bf16 params
and fp32 reductions), and stepped with foreach AdamW after gradient-norm clipping. So the step is
the one `shardscope simulate` models for the same scenario, and the two can be compared:

  tools/measure_fsdp2_step.py --layers 16 --batch 2 --ac selective_op --out m.json \
      [--scenario m.scenario.json] [--trace m.trace.json.gz]

Writes (atomically) a JSON with the median step time, tokens/s per GPU, max allocated / reserved
memory (after the first steps, as torchtitan's logs report them), the measured GPU time per
kernel class of one profiled step (gemm, attention, elementwise, nccl, other) and the GPU's idle
time in it, and (with --scenario) the equivalent shardscope scenario. Runs one rank by default
(torchrun for more); on CPU (--device cpu, gloo) it is only a smoke test of the script itself.
"""
import argparse
import collections
import gzip
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

from fsdp2_step_scenario import scenario, summarize_kernels, write_atomic


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight


def rope_table(head_dim, seq, theta, device):
    freqs = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=device)[: head_dim // 2].float() / head_dim))
    t = torch.arange(seq, device=device, dtype=torch.float32)
    return torch.polar(torch.ones(seq, head_dim // 2, device=device), torch.outer(t, freqs))


def apply_rope(x, freqs):
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    out = torch.view_as_real(xc * freqs.view(1, xc.shape[1], 1, xc.shape[-1])).flatten(3)
    return out.type_as(x)


class Attention(nn.Module):
    def __init__(self, dim, heads, kv_heads):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, dim // heads
        self.wq = nn.Linear(dim, heads * self.head_dim, bias=False)
        self.wk = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(heads * self.head_dim, dim, bias=False)

    def forward(self, x, freqs):
        bs, seq, _ = x.shape
        q = self.wq(x).view(bs, seq, self.heads, self.head_dim)
        k = self.wk(x).view(bs, seq, self.kv_heads, self.head_dim)
        v = self.wv(x).view(bs, seq, self.kv_heads, self.head_dim)
        q, k = apply_rope(q, freqs), apply_rope(k, freqs)
        rep = self.heads // self.kv_heads
        if rep > 1:  # torchtitan's repeat_kv: expand + reshape (a copy)
            k = k[:, :, :, None, :].expand(bs, seq, self.kv_heads, rep, self.head_dim).reshape(
                bs, seq, self.heads, self.head_dim)
            v = v[:, :, :, None, :].expand(bs, seq, self.kv_heads, rep, self.head_dim).reshape(
                bs, seq, self.heads, self.head_dim)
        out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                             is_causal=True)
        return self.wo(out.transpose(1, 2).contiguous().view(bs, seq, -1))


class FeedForward(nn.Module):
    def __init__(self, dim, ffn):
        super().__init__()
        self.w1 = nn.Linear(dim, ffn, bias=False)
        self.w2 = nn.Linear(ffn, dim, bias=False)
        self.w3 = nn.Linear(dim, ffn, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    """torchtitan's decoder block. tools/memtracker_reference.py builds it with its own attention
    (enable_gqa SDPA, head_dim from the config) and norm (the fused kernel's saved tensors)."""

    def __init__(self, dim, heads, kv_heads, ffn, eps, attention=None, norm=RMSNorm):
        super().__init__()
        self.attention = attention if attention is not None else Attention(dim, heads, kv_heads)
        self.feed_forward = FeedForward(dim, ffn)
        self.attention_norm = norm(dim, eps)
        self.ffn_norm = norm(dim, eps)

    def forward(self, x, freqs):
        h = x + self.attention(self.attention_norm(x), freqs)
        return h + self.feed_forward(self.ffn_norm(h))


class Transformer(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.tok_embeddings = nn.Embedding(a.vocab, a.hidden)
        self.layers = nn.ModuleList(Block(a.hidden, a.heads, a.kv_heads, a.ffn, 1e-5) for _ in range(a.layers))
        self.norm = RMSNorm(a.hidden, 1e-5)
        self.output = nn.Linear(a.hidden, a.vocab, bias=False)
        self.head_dim = a.hidden // a.heads
        self.rope_theta = a.rope_theta

    def forward(self, tokens):
        freqs = rope_table(self.head_dim, tokens.shape[1], self.rope_theta, tokens.device)
        h = self.tok_embeddings(tokens)
        for layer in self.layers:
            h = layer(h, freqs)
        return self.output(self.norm(h))


class Checkpointed(nn.Module):
    """A block under activation checkpointing: full, or torchtitan's op-level SAC policy."""

    def __init__(self, block, mode):
        super().__init__()
        self.block, self.mode = block, mode

    def forward(self, x, freqs):
        from torch.utils.checkpoint import checkpoint
        if self.mode == "full":
            return checkpoint(self.block, x, freqs, use_reentrant=False, preserve_rng_state=False)
        return checkpoint(self.block, x, freqs, use_reentrant=False, preserve_rng_state=False,
                          context_fn=sac_context)


def sac_context():
    # torchtitan parallelize_llama.py `_custom_policy`: save mm, SDPA and max outputs, except
    # every second mm (counted separately in forward and recompute), which is recomputed.
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts
    save = {torch.ops.aten.mm.default, torch.ops.aten.max.default}
    for name in ("_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
                 "_scaled_dot_product_cudnn_attention"):
        op = getattr(torch.ops.aten, name, None)
        if op is not None:
            save.add(op.default)
    counts = collections.defaultdict(int)

    def policy(ctx, func, *args, **kwargs):
        key = "recompute" if ctx.is_recompute else "forward"
        if func == torch.ops.aten.mm.default:
            counts[key] += 1
        keep = func in save and not (func == torch.ops.aten.mm.default and counts[key] % 2 == 0)
        return CheckpointPolicy.MUST_SAVE if keep else CheckpointPolicy.PREFER_RECOMPUTE

    return create_selective_checkpoint_contexts(policy)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--layers", type=int, default=16)
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--ffn", type=int, default=14336)
    p.add_argument("--heads", type=int, default=32)
    p.add_argument("--kv-heads", type=int, default=8)
    p.add_argument("--vocab", type=int, default=128256)
    p.add_argument("--rope-theta", type=float, default=500000.0)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--seq", type=int, default=8192)
    p.add_argument("--ac", choices=("none", "full", "selective_op"), default="none")
    p.add_argument("--steps", type=int, default=5, help="timed steps after two warm-up steps")
    p.add_argument("--compile", action="store_true",
                   help="torch.compile each block (after AC, before fully_shard), as torchtitan does")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    p.add_argument("--init-optimizer-first", action="store_true",
                   help="create AdamW's moments before the first forward (zero gradients, one "
                        "step), so they do not land in blocks the first backward freed")
    p.add_argument("--gpu", default="h200", help="catalog name written into --scenario")
    p.add_argument("--out", required=True)
    p.add_argument("--scenario")
    p.add_argument("--trace", help="Kineto trace of one profiled step (.json or .json.gz)")
    a = p.parse_args()

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29511")
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    cuda = a.device == "cuda"
    if cuda:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group("nccl" if cuda else "gloo")
    world, rank = dist.get_world_size(), dist.get_rank()
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    mesh = init_device_mesh(a.device, (world,))
    dev = torch.device(a.device, torch.cuda.current_device()) if cuda else torch.device("cpu")

    torch.manual_seed(0)
    with torch.device(dev):
        model = Transformer(a)
    if a.ac != "none":
        for i, block in enumerate(model.layers):
            model.layers[i] = Checkpointed(block, a.ac)
    if a.compile:
        for i, block in enumerate(model.layers):
            model.layers[i] = torch.compile(block, fullgraph=True)
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for i, block in enumerate(model.layers):
        # torchtitan keeps the last block unsharded after forward: backward needs it at once.
        fully_shard(block, mesh=mesh, mp_policy=mp, reshard_after_forward=i < len(model.layers) - 1)
    fully_shard(model, mesh=mesh, mp_policy=mp, reshard_after_forward=True)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1,
                            foreach=True, fused=False)
    gen = torch.Generator(device=dev).manual_seed(rank)
    tokens = torch.randint(0, a.vocab, (a.batch, a.seq + 1), device=dev, generator=gen)
    inputs, labels = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()

    def step(mark=lambda phase: None):
        mark("before_step")
        opt.zero_grad(set_to_none=True)
        logits = model(inputs)
        loss = F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(0, 1))
        del logits
        mark("forward")
        loss.backward()
        mark("backward")
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True)
        opt.step()
        mark("optimizer")
        return loss

    def sync():
        if cuda:
            torch.cuda.synchronize()

    def phase_memory():
        """One more step, with allocated / reserved / the phase's peak after each phase."""
        gib = 2 ** 30
        out = {}

        def mark(phase):
            sync()
            out[phase] = {"allocated_gib": torch.cuda.memory_allocated() / gib,
                          "reserved_gib": torch.cuda.memory_reserved() / gib,
                          "peak_allocated_gib": torch.cuda.max_memory_allocated() / gib,
                          "peak_reserved_gib": torch.cuda.max_memory_reserved() / gib}
            torch.cuda.reset_peak_memory_stats()

        step(mark)
        return out

    if a.init_optimizer_first:
        for prm in model.parameters():
            prm.grad = torch.zeros_like(prm)
        opt.step()
        opt.zero_grad(set_to_none=True)
    for _ in range(2):
        step()
    sync()
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(a.steps):
        t0 = time.perf_counter()
        step()
        sync()
        times.append(time.perf_counter() - t0)
    result = {
        "tool": "tools/measure_fsdp2_step.py", "torch": torch.__version__,
        "device": torch.cuda.get_device_name() if cuda else "cpu", "world_size": world,
        "args": vars(a), "step_times_s": times, "step_time_s": statistics.median(times),
        "tokens_per_s_per_gpu": a.batch * a.seq / statistics.median(times),
    }
    if cuda:
        result["max_allocated_gib"] = torch.cuda.max_memory_allocated() / 2**30
        result["max_reserved_gib"] = torch.cuda.max_memory_reserved() / 2**30
        result["reserved_after_steps_gib"] = torch.cuda.memory_reserved() / 2**30
        result["memory_by_phase"] = phase_memory()
        result["sdpa_backends"] = {"flash": torch.backends.cuda.flash_sdp_enabled(),
                                   "cudnn": torch.backends.cuda.cudnn_sdp_enabled(),
                                   "mem_efficient": torch.backends.cuda.mem_efficient_sdp_enabled()}
    if a.trace and rank == 0:
        acts = [torch.profiler.ProfilerActivity.CPU]
        if cuda:
            acts.append(torch.profiler.ProfilerActivity.CUDA)
        with torch.profiler.profile(activities=acts) as prof:
            step()
            sync()
        raw = a.trace[:-3] if a.trace.endswith(".gz") else a.trace
        prof.export_chrome_trace(raw)
        result["kernels"] = summarize_kernels(raw)
        if a.trace.endswith(".gz"):
            with open(raw, "rb") as src, gzip.open(a.trace + ".tmp", "wb", compresslevel=6) as dst:
                dst.write(src.read())
            os.replace(a.trace + ".tmp", a.trace)
            os.remove(raw)
    if rank == 0:
        write_atomic(a.out, json.dumps(result, indent=1) + "\n")
        if a.scenario:
            write_atomic(a.scenario, json.dumps(scenario(a, world), indent=1) + "\n")
        print(json.dumps({k: result[k] for k in result if k not in ("kernels", "args")}))
        if "kernels" in result:
            k = result["kernels"]
            print("kernel classes (s):", {c: round(v, 4) for c, v in k["gpu_s_by_class"].items()},
                  "compute idle (s):", round(k["compute_idle_s"], 4))
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""PyTorch's own memory reference for FSDP2 steps: FSDPMemTracker under FakeTensorMode.

Runs torch.distributed._tools.fsdp2_mem_tracker.FSDPMemTracker on one FSDP2 training step per
case, the way torchtitan's scripts/estimate/estimation.py does: the fake process group
(init_process_group("fake", store=FakeStore())), every tensor a FakeTensor (nothing is
allocated, so an 8B model at 64 ranks runs on a laptop CPU), fully_shard per decoder layer and
the root with MixedPrecisionPolicy(bf16, fp32), foreach AdamW, the steady-state second
iteration. Writes a JSON reference (tests/memory_reference/reference.json): per case the peak
allocated, the phase and the op where it occurs, the tracker's categories at the peak, the
same mapped onto shardscope's categories, and the peak of each phase (forward, loss,
backward, optimizer).

Usage:
  memtracker_reference.py --out reference.json [--cases NAME,...] [--configs DIR]
  memtracker_reference.py --check reference.json --cases NAME,... (re-run, compare, exit 1 on
                                                                  a difference, 77 w/o torch)

The cases (CASES below) name a model config (core/model/configs/<model>.json, or a small
inline one), the implementation (`transformers`: transformers' eager modules, loss inside the
model from labels; `torchtitan`: torchtitan's Llama model code written out below, loss outside
it), ranks, sequence, activation checkpointing and the FSDP2 knobs.

Each case runs in a subprocess of its own (a fresh process group per world size).
"""
import argparse
import json
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
GIB = 1024**3
# FakeTensorMode fakes the storage, not the device: FSDP2's fully_shard asks the CUDA driver for
# the current device, so without a GPU the step runs on fake CPU tensors. What autograd saves
# and what FSDP2 allocates are the same; the attention kernel is SDPA's flash kernel for CPU,
# which saves what the CUDA flash kernel saves (q, k, v, output, fp32 log-sum-exp).
DEVICE = os.environ.get("MEMTRACKER_DEVICE", "cpu")

# Small configs for the torch-labelled re-run (seconds each); the others are the built-in
# configs shardscope ships.
TINY_LLAMA = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 512,
    "intermediate_size": 1408, "num_hidden_layers": 4, "num_attention_heads": 8,
    "num_key_value_heads": 2, "vocab_size": 8192, "max_position_embeddings": 4096,
    "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "tie_word_embeddings": False,
    "hidden_act": "silu", "attention_bias": False, "mlp_bias": False,
}
TINY_QWEN3 = {
    "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 512,
    "intermediate_size": 1408, "num_hidden_layers": 4, "num_attention_heads": 8,
    "num_key_value_heads": 4, "head_dim": 64, "vocab_size": 8192,
    "max_position_embeddings": 4096, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
    "tie_word_embeddings": True, "hidden_act": "silu", "attention_bias": False,
}


def case(name, model, ranks, seq, ac, impl="transformers", fwd=1, bwd=1, reshard=True,
         requires=None):
    c = {"name": name, "model": model, "implementation": impl, "ranks": ranks, "seq": seq,
         "batch": 1, "activation_checkpoint": ac, "forward_prefetch_depth": fwd,
         "backward_prefetch_depth": bwd, "reshard_after_forward": reshard}
    if requires:
        c["requires"] = requires
    return c


KNOBS = "fsdp2-prefetch-rules"
# The knobs' model: Llama 3 8B's layer shapes with 4 layers (a knob moves unit-sized buffers, so
# its change does not depend on the layer count, and the case runs in a minute).
LLAMA3_8B_4L = "llama3-8b:4"
CASES = [
    # Small cases, also the torch-labelled re-run's.
    case("tiny_llama_r8_s1024_sel2", TINY_LLAMA, 8, 1024, "selective_op:2"),
    case("tiny_llama_titan_r8_s1024_none", TINY_LLAMA, 8, 1024, "none", impl="torchtitan"),
    # The knobs (8 ranks, 4096, full checkpointing): prefetch depths 0-3, reshard_after_forward
    # False and 2.
    case("knob_base_f1_b1", LLAMA3_8B_4L, 8, 4096, "full", requires=KNOBS),
    case("knob_f0_b0", LLAMA3_8B_4L, 8, 4096, "full", fwd=0, bwd=0, requires=KNOBS),
    case("knob_f2_b1", LLAMA3_8B_4L, 8, 4096, "full", fwd=2, bwd=1, requires=KNOBS),
    case("knob_f3_b1", LLAMA3_8B_4L, 8, 4096, "full", fwd=3, bwd=1, requires=KNOBS),
    case("knob_f1_b2", LLAMA3_8B_4L, 8, 4096, "full", fwd=1, bwd=2, requires=KNOBS),
    case("knob_f1_b3", LLAMA3_8B_4L, 8, 4096, "full", fwd=1, bwd=3, requires=KNOBS),
    # The reshard knobs move the forward phase's peak, reached at nll_loss_forward with every
    # kept layer live (the forward phase runs to the end of the loss forward; simulate's
    # forward phase includes its loss forward op likewise). reshard_after_forward=2: FSDP2
    # builds its post-forward mesh inside fully_shard, under FakeTensorMode here, which rejects
    # the mesh's real rank tensor (aten.as_strided on a real tensor); run_case builds it with
    # fake mode suspended (real_post_forward_mesh). The tracker files that mesh's kept 1/2
    # slice as Activation.
    case("knob_reshard_false", LLAMA3_8B_4L, 8, 4096, "full", reshard=False, requires=KNOBS),
    case("knob_reshard_2", LLAMA3_8B_4L, 8, 4096, "full", reshard=2, requires=KNOBS),
    # Tied embeddings, selective_layer, a short sequence.
    case("llama3.2_1b_r8_s2048_layer2", "llama3.2-1b", 8, 2048, "selective_layer:2"),
    # What the memory model needs beyond Llama 3 (layer-cut built-in configs: a layer's memory
    # does not depend on how many there are, and a case runs in minutes on a CPU): MHA at 64
    # ranks (Llama 2 7B), Qwen3's per-head q_norm / k_norm, MoE experts at 64 ranks.
    case("llama2_7b_mha_r64_s4096_none", "llama2-7b:4", 64, 4096, "none"),
    case("qwen3_8b_r8_s4096_none", "qwen3-8b:4", 8, 4096, "none"),
    # The configuration of torchtitan's published Llama 3 8B runs (bench/validate:
    # torchtitan-2412-t1): its model code and op-level SAC at 8192 tokens, whose reserved memory
    # the validation compares; this holds the allocated part under it.
    case("llama3_8b_titan_r8_s8192_sel2", "llama3-8b:4", 8, 8192, "selective_op:2",
         impl="torchtitan"),
    # Open (simulate +13.8%, 9.64 against 8.47 GiB), the cause measured: at the tracker's peak
    # (layer 1's experts' grouped GEMM backward, layer 2's reduce-scatter still running) the
    # tracker holds the root, layer 1 and the prefetched layer 0 (3.48 GiB with the prefetch
    # it files as Temp; simulate 3.50) and no gradients of layer 2: FSDP2's foreach_reduce
    # drops them after the chunk_cat copy-in (unsharded_grads.clear()). simulate keeps a
    # layer's unsharded gradients until its reduce-scatter ends, as runtime.md (Backward,
    # rule 5) specifies: here 1,246,241,280 bytes (layer 2's bf16 gradients) for the whole of
    # layer 1's backward; without them simulate gives 8.48 GiB (+0.06%). Checked once the
    # spec frees the gradient after the copy-in (and the executor chunk_cats there).
    case("qwen3_30b_a3b_moe_r64_s2048_full", "qwen3-30b-a3b:4", 64, 2048, "full",
         requires="runtime-grad-freed-after-copy-in"),
    # The routed experts' saved tensors without checkpointing (transformers' default grouped_mm
    # experts: per routed token its input, gate / up, activation and gated product, and the
    # down output the routing weights multiply).
    # The step's peak is the backward's, open for the reason above; the forward and loss peaks
    # hold every saved tensor and are checked (checked_phases).
    dict(case("qwen3_30b_a3b_moe_r64_s2048_none", "qwen3-30b-a3b:4", 64, 2048, "none",
              requires="runtime-grad-freed-after-copy-in"),
         checked_phases=["forward", "loss"]),
]

# The knob cases measure a change against this one.
KNOB_BASE = "knob_base_f1_b1"

# FSDPMemTracker's categories onto shardscope's (docs/memory.md). The tracker labels a tensor
# by when it was allocated, not by its role: everything allocated in forward (saved tensors and
# forward transients alike) is "Activation", everything allocated in backward outside
# checkpoint recomputation (activation gradients, loss-backward tensors, recomputed tensors of
# full checkpointing's non-AC part) is "Temp". shardscope splits by role (saved for backward vs.
# transient), so the two are compared as one sum: activations + temporaries.
CATEGORY_MAP = {
    "Sharded Param": "sharded_params",
    "OptState": "optimizer",
    "Sharded Grad": "sharded_grads",
    "Unsharded Param": "unsharded_params",
    "All Gather": "unsharded_params",
    "Unsharded Grad": "unsharded_grads",
    "Reduce Scatter": "comm_buffers",
    "Activation": "activations+temporaries",
    "Temp": "activations+temporaries",
    "Inputs": "activations+temporaries",
    "Buffer": "sharded_params",
}


def load_config(model, configs_dir):
    """An inline config, a built-in config name, or NAME:LAYERS (the config, that many layers)."""
    if isinstance(model, dict):
        return dict(model)
    name, _, layers = model.partition(":")
    with open(os.path.join(configs_dir, name + ".json")) as f:
        cfg = json.load(f)
    if layers:
        cfg["num_hidden_layers"] = int(layers)
    return cfg


# ----------------------------------------------------------------------------------------------
# Everything below runs in the per-case subprocess and needs torch.


def titan_llama(cfg):
    """torchtitan's Llama 3 (torchtitan/models/llama3 + models/common): complex RoPE on fp32
    q/k, SDPA with enable_gqa, nn.RMSNorm, SwiGLU w2(silu(w1(x)) * w3(x)), output head; the loss
    is outside the model (components/loss.py: cross_entropy(pred.float(), labels, sum)). The
    block and its feed-forward are tools/measure_fsdp2_step.py's, given this attention and norm."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from measure_fsdp2_step import Block

    dim, heads = cfg["hidden_size"], cfg["num_attention_heads"]
    kv = cfg.get("num_key_value_heads", heads)
    hd = cfg.get("head_dim") or dim // heads
    ffn, vocab, eps = cfg["intermediate_size"], cfg["vocab_size"], cfg.get("rms_norm_eps", 1e-5)

    class FusedRMSNormFn(torch.autograd.Function):
        # What torch.rms_norm runs on CUDA (aten._fused_rms_norm) saves: the input and the fp32
        # rstd. On the CPU device it runs the composite instead (fp32 upcast, fp32 normalised),
        # so the CPU reference would not hold what a GPU run saves.
        @staticmethod
        def forward(ctx, x, weight, eps):
            rstd = torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps)
            ctx.save_for_backward(x, rstd, weight)
            return (x.float() * rstd).type_as(x) * weight

        @staticmethod
        def backward(ctx, grad):
            x, rstd, weight = ctx.saved_tensors
            xhat = x.float() * rstd
            gw = (grad.float() * xhat).sum(dim=tuple(range(grad.dim() - 1))).to(weight.dtype)
            g = grad.float() * weight.float()
            gx = rstd * (g - xhat * (g * xhat).mean(-1, keepdim=True))
            return gx.type_as(x), gw, None

    class RMSNorm(nn.RMSNorm):
        def forward(self, x):
            if x.is_cuda:
                return super().forward(x)
            return FusedRMSNormFn.apply(x, self.weight, self.eps)

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.wq = nn.Linear(dim, heads * hd, bias=False)
            self.wk = nn.Linear(dim, kv * hd, bias=False)
            self.wv = nn.Linear(dim, kv * hd, bias=False)
            self.wo = nn.Linear(heads * hd, dim, bias=False)

        def forward(self, x, freqs):
            b, s, _ = x.shape
            q = self.wq(x).view(b, s, heads, hd)
            k = self.wk(x).view(b, s, kv, hd)
            v = self.wv(x).view(b, s, kv, hd)
            q_ = torch.view_as_complex(q.float().reshape(b, s, heads, -1, 2))
            k_ = torch.view_as_complex(k.float().reshape(b, s, kv, -1, 2))
            f = freqs.view(1, s, 1, -1)
            q = torch.view_as_real(q_ * f).flatten(3).type_as(v)
            k = torch.view_as_real(k_ * f).flatten(3).type_as(v)
            o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                               v.transpose(1, 2), is_causal=True,
                                               enable_gqa=kv != heads)
            return self.wo(o.transpose(1, 2).contiguous().view(b, s, -1))

    class Transformer(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok_embeddings = nn.Embedding(vocab, dim)
            self.layers = nn.ModuleDict({
                str(i): Block(dim, heads, kv, ffn, eps, attention=Attention(), norm=RMSNorm)
                for i in range(cfg["num_hidden_layers"])})
            self.norm = RMSNorm(dim, eps=eps)
            self.output = nn.Linear(dim, vocab, bias=False)
            theta = cfg.get("rope_theta", 500000.0)
            inv = 1.0 / (theta ** (torch.arange(0, hd, 2).float() / hd))
            t = torch.arange(cfg.get("max_position_embeddings", 8192) * 2).float()
            self.register_buffer("freqs_cis", torch.polar(torch.ones(t.numel(), inv.numel()),
                                                          torch.outer(t, inv)), persistent=False)

        def forward(self, tokens):
            h = self.tok_embeddings(tokens)
            freqs = self.freqs_cis[: tokens.shape[1]]
            for layer in self.layers.values():
                h = layer(h, freqs)
            return self.output(self.norm(h))

    return Transformer()


def selective_op_context(every):
    """torchtitan's op-level SAC policy (distributed/activation_checkpoint.py, SelectiveAC):
    save compute-intensive ops (and SDPA), except every `every`-th mm / linear."""
    import torch
    from torch._functorch.partitioners import get_default_op_list
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

    save_ops = {op.default for op in get_default_op_list().compute_intensive_ops}
    for op in ("_scaled_dot_product_cudnn_attention", "_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_attention_math",
               "_scaled_dot_product_fused_attention_overrideable", "max", "linear", "topk",
               "_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention"):
        if hasattr(torch.ops.aten, op):
            save_ops.add(getattr(torch.ops.aten, op).default)
    for op in ("reduce_scatter_tensor", "all_to_all_single"):
        save_ops.add(getattr(torch.ops._c10d_functional, op).default)
    mm_ops = (torch.ops.aten.mm.default, torch.ops.aten.linear.default)

    def context():
        meta = {"forward": 0, "recompute": 0}

        def policy(ctx, func, *args, **kwargs):
            key = "recompute" if ctx.is_recompute else "forward"
            if func in mm_ops:
                meta[key] += 1
            if func in save_ops:
                if func in mm_ops and meta[key] % every == 0:
                    return CheckpointPolicy.PREFER_RECOMPUTE
                return CheckpointPolicy.MUST_SAVE
            return CheckpointPolicy.PREFER_RECOMPUTE

        return create_selective_checkpoint_contexts(policy)

    return context


def wrap_checkpoint(blocks, ac, set_block):
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper

    for i, block in enumerate(blocks):
        if ac == "none":
            continue
        if ac == "full":
            set_block(i, checkpoint_wrapper(block, preserve_rng_state=False))
        elif ac.startswith("selective_op"):
            every = int(ac.split(":")[1]) if ":" in ac else 2
            set_block(i, checkpoint_wrapper(block, context_fn=selective_op_context(every),
                                            preserve_rng_state=False))
        elif ac.startswith("selective_layer:"):
            k = int(ac.split(":")[1])
            if (i + 1) % k == 0:  # torchtitan counts blocks from 1
                set_block(i, checkpoint_wrapper(block, preserve_rng_state=False))
        else:
            raise ValueError(f"unknown activation_checkpoint {ac!r}")


def real_post_forward_mesh():
    """fully_shard(reshard_after_forward=int) builds a DeviceMesh over the shard group's ranks
    (_get_post_forward_mesh_info: mesh.view(-1, factor)); under FakeTensorMode that view of the
    real rank tensor fails. The mesh is process-group bookkeeping, not model memory: build it
    with fake mode suspended, as a real run does."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily
    import torch.distributed.fsdp._fully_shard._fsdp_init as fsdp_init
    import torch.distributed.fsdp._fully_shard._fully_shard as fsdp_api

    real = fsdp_init._get_post_forward_mesh_info

    def post_forward_mesh_info(*args, **kwargs):
        with unset_fake_temporarily():
            return real(*args, **kwargs)

    fsdp_init._get_post_forward_mesh_info = post_forward_mesh_info
    fsdp_api._get_post_forward_mesh_info = post_forward_mesh_info


def run_case(c, configs_dir):
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.distributed._tools.fsdp2_mem_tracker import FSDPMemTracker
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    from torch.testing._internal.distributed.fake_pg import FakeStore

    cfg = load_config(c["model"], configs_dir)
    world, seq, batch = c["ranks"], c["seq"], c["batch"]
    real_post_forward_mesh()
    dist.init_process_group("fake", rank=0, world_size=world, store=FakeStore())
    mesh = init_device_mesh(DEVICE, (world,))
    torch.manual_seed(0)
    with FakeTensorMode():
        with torch.device(DEVICE):
            if c["implementation"] == "torchtitan":
                model = titan_llama(cfg)
                blocks = list(model.layers.values())
                head_name = "output"

                def set_block(i, m):
                    model.layers.register_module(str(i), m)
            else:
                from transformers import AutoConfig, AutoModelForCausalLM
                from transformers import masking_utils

                # A real run of one unpadded sequence per row skips the causal mask (is_causal
                # SDPA, enable_gqa, no repeat_kv). Under FakeTensorMode transformers cannot read
                # the fake position ids (packed-sequence detection) and cache position, takes
                # them for traced ones and builds an explicit [seq, seq] mask, which also turns
                # GQA into repeat_kv copies: restore the real run's choices.
                masking_utils.find_packed_sequence_indices = lambda position_ids: None
                real_ignore = masking_utils._ignore_causal_mask_sdpa

                def ignore_causal_mask(padding_mask, q_length, kv_length, q_offset, kv_offset,
                                       local_attention_size=None):
                    if padding_mask is None and kv_length == q_length and (
                            local_attention_size is None or kv_length < local_attention_size):
                        return True
                    return real_ignore(padding_mask, q_length, kv_length, q_offset, kv_offset,
                                       local_attention_size)

                masking_utils._ignore_causal_mask_sdpa = ignore_causal_mask

                hf = AutoConfig.for_model(**cfg)
                hf._attn_implementation = "sdpa"
                model = AutoModelForCausalLM.from_config(hf, dtype=torch.float32,
                                                         attn_implementation="sdpa")
                blocks = list(model.model.layers)
                head_name = "lm_head"

                def set_block(i, m):
                    model.model.layers[i] = m
        wrap_checkpoint(blocks, c["activation_checkpoint"], set_block)
        layers = (list(model.layers.values()) if c["implementation"] == "torchtitan"
                  else list(model.model.layers))
        mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        for layer in layers:
            fully_shard(layer, mesh=mesh, mp_policy=mp,
                        reshard_after_forward=c["reshard_after_forward"])
        fully_shard(model, mesh=mesh, mp_policy=mp)
        # The plan's prefetch lists (docs/plan.md): layer i forward-prefetches the next F
        # layers and backward-prefetches the previous B; depth 0 sets no list (FSDP2's
        # defaults).
        n = len(layers)
        for i, layer in enumerate(layers):
            f = [layers[j] for j in range(i + 1, min(n, i + 1 + c["forward_prefetch_depth"]))]
            b = [layers[j] for j in range(i - 1, max(-1, i - 1 - c["backward_prefetch_depth"]), -1)]
            if f:
                layer.set_modules_to_forward_prefetch(f)
            if b:
                layer.set_modules_to_backward_prefetch(b)
        optim = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
        vocab = cfg["vocab_size"]
        ids = torch.randint(0, vocab, (batch, seq), device=DEVICE)
        labels = torch.randint(0, vocab, (batch, seq), device=DEVICE)
        tracker = PhaseTracker(model, optim, head_name)
        tracker.track_inputs((ids, labels))
        with tracker:
            for it in range(2):
                if it == 1:
                    tracker.reset_mod_stats()
                    tracker.start_recording()
                tracker.phase = "forward"
                tracker.head_backward_seen = False
                if c["implementation"] == "torchtitan":
                    pred = model(ids)
                    loss = F.cross_entropy(pred.flatten(0, 1).float(), labels.flatten(0, 1),
                                           reduction="sum")
                    del pred
                else:
                    loss = model(input_ids=ids, labels=labels, use_cache=False).loss
                tracker.phase = "backward"
                loss.backward()
                del loss
                tracker.phase = "optimizer"
                optim.step()
                optim.zero_grad()
    dist.destroy_process_group()
    return tracker.result()


def make_phase_tracker():
    import torch
    from torch.distributed._tools.fsdp2_mem_tracker import FSDPMemTracker

    class Tracker(FSDPMemTracker):
        """Records, for the measured iteration, the op, module path and phase at the global
        peak and the peak of each phase (loss = the backward before the head's backward)."""

        def __init__(self, model, optim, head_name):
            super().__init__(model, optim)
            self.head_name = head_name
            self.fsdp_groups = [g for m in model.modules() if hasattr(m, "_get_fsdp_state")
                                for g in [m._get_fsdp_state()._fsdp_param_group] if g]
            self.phase = "forward"
            self.head_backward_seen = False
            self.recording = False
            self.func = None
            self.peaks = {}
            self.best = None

        def start_recording(self):
            self.recording = True

        def current_phase(self):
            if self.phase != "backward":
                return self.phase
            if not self.head_backward_seen:
                if any(p.split(".")[-1] == self.head_name for p in self._mod_tracker.parents):
                    self.head_backward_seen = True
            return "backward" if self.head_backward_seen else "loss"

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.func = func
            return super().__torch_dispatch__(func, types, args, kwargs)

        def _update_peak_stats(self, peak_state):
            super()._update_peak_stats(peak_state)
            if not self.recording:
                return
            for dev, snap in self._curr_mem_snap.items():
                if dev.type != DEVICE:
                    continue
                total = snap["Total"]
                phase = self.current_phase()
                entry = {"bytes": total, "op": str(self.func),
                         "modules": sorted(p for p in self._mod_tracker.parents if p != "Global"),
                         "phase": phase,
                         "categories": {str(k.value if hasattr(k, "value") else k): v
                                        for k, v in snap.items() if k != "Total"}}
                if phase not in self.peaks or self.peaks[phase]["bytes"] < total:
                    self.peaks[phase] = entry
                if self.best is None or self.best["bytes"] < total:
                    entry["relabelled"] = self.relabelled_bytes()
                    self.best = entry

        def relabelled_bytes(self):
            """FSDP2 tensors live now whose tracker label is not their role, by label and role
            (our category): the tracker labels a tensor by when it was allocated unless an
            FSDP hook it instruments names it, so (1) an all-gather output issued outside
            FSDPParamGroup.pre_forward / pre_backward, as FSDPState._pre_backward's explicit
            backward prefetch is (after the group's pre_backward returns), is Temp; (2) an
            unsharded parameter's gradient is Temp until its group's post_backward; (3)
            reshard_after_forward=int keeps each parameter's slice for the smaller group as a
            clone FSDP2 makes in forward (FSDPParam.to_sharded_post_forward), Activation."""
            roles = {}
            for g in self.fsdp_groups:
                if g._all_gather_result is not None:
                    roles[id(g._all_gather_result.all_gather_output.untyped_storage())] = (
                        g._all_gather_result.all_gather_output, "unsharded_params")
                for p in g.fsdp_params:
                    unsharded = getattr(p, "_unsharded_param", None)
                    if unsharded is not None and unsharded.grad is not None:
                        roles[id(unsharded.grad.untyped_storage())] = (unsharded.grad,
                                                                       "unsharded_grads")
                    kept = getattr(p, "_sharded_post_forward_param_data", None)
                    if kept is not None:
                        roles[id(kept.untyped_storage())] = (kept, "unsharded_params")
            out = {}
            for t, role in roles.values():
                winfo, _ = self._WINFO.get(t.untyped_storage(), (None, None))
                if winfo is None:
                    continue
                label = str(winfo.reftype.value if hasattr(winfo.reftype, "value")
                            else winfo.reftype)
                if CATEGORY_MAP.get(label) == role:
                    continue
                by_role = out.setdefault(label, {})
                by_role[role] = by_role.get(role, 0) + winfo.mem_consumed
            return out

        def result(self):
            return {"peak": self.best, "phase_peaks": self.peaks}

    return Tracker


def PhaseTracker(model, optim, head_name):
    return make_phase_tracker()(model, optim, head_name)


def mapped(categories):
    out = {}
    for k, v in categories.items():
        ours = CATEGORY_MAP.get(k)
        if ours is None:
            raise KeyError(f"tracker category {k!r} has no mapping")
        out[ours] = out.get(ours, 0) + v
    return out


def summarize(c, raw):
    peak = raw["peak"]
    rec = dict(c)
    rec["tracker"] = {
        "peak_allocated_bytes": peak["bytes"],
        "peak_allocated_gib": round(peak["bytes"] / GIB, 4),
        "peak_phase": peak["phase"],
        "peak_op": peak["op"],
        "peak_modules": peak["modules"],
        "categories_bytes": peak["categories"],
        "mapped_bytes": mapped(peak["categories"]),
        "relabelled_bytes": peak["relabelled"],
        "phase_peak_bytes": {k: v["bytes"] for k, v in raw["phase_peaks"].items()},
        "phase_peak_ops": {k: v["op"] for k, v in raw["phase_peaks"].items()},
    }
    return rec


def run_in_subprocess(c, configs_dir):
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", json.dumps(c),
                           "--configs", configs_dir], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-4000:])
        raise RuntimeError(f"case {c['name']} failed (exit {proc.returncode})")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out")
    ap.add_argument("--check")
    ap.add_argument("--cases", help="comma-separated case names (default: all)")
    ap.add_argument("--configs", default=os.path.join(ROOT, "core", "model", "configs"))
    ap.add_argument("--one", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        c = json.loads(a.one)
        print(json.dumps(summarize(c, run_case(c, a.configs))))
        return 0
    try:
        import torch  # noqa: F401
        from torch.distributed._tools.fsdp2_mem_tracker import FSDPMemTracker  # noqa: F401
    except ImportError:
        print("torch with FSDPMemTracker not available: skipping")
        return 77
    names = a.cases.split(",") if a.cases else [c["name"] for c in CASES]
    unknown = [n for n in names if n not in {c["name"] for c in CASES}]
    if unknown:
        print(f"unknown case(s): {', '.join(unknown)}", file=sys.stderr)
        return 2
    chosen = [c for c in CASES if c["name"] in names]
    if a.check:
        with open(a.check) as f:
            committed = {r["name"]: r for r in json.load(f)["cases"]}
        bad = 0
        for c in chosen:
            got = run_in_subprocess(c, a.configs)["tracker"]
            want = committed[c["name"]]["tracker"]
            same = (got["peak_allocated_bytes"] == want["peak_allocated_bytes"] and
                    got["categories_bytes"] == want["categories_bytes"] and
                    got["phase_peak_bytes"] == want["phase_peak_bytes"])
            print(f"{c['name']}: {got['peak_allocated_gib']} GiB "
                  f"(committed {want['peak_allocated_gib']}) {'ok' if same else 'DIFFERS'}")
            bad += not same
        return 1 if bad else 0
    if not a.out:
        ap.error("--out or --check is required")
    existing = {}
    if os.path.exists(a.out):
        with open(a.out) as f:
            existing = {r["name"]: r for r in json.load(f)["cases"]}
    for c in chosen:
        print(f"running {c['name']} ...", flush=True)
        existing[c["name"]] = run_in_subprocess(c, a.configs)
        print(f"  peak {existing[c['name']]['tracker']['peak_allocated_gib']} GiB", flush=True)
        import torch
        import transformers
        doc = {"generator": "tools/memtracker_reference.py",
               "torch": torch.__version__, "transformers": transformers.__version__,
               "knob_base": KNOB_BASE, "category_map": CATEGORY_MAP,
               "cases": [existing[n["name"]] for n in CASES if n["name"] in existing]}
        tmp = a.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        os.replace(tmp, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

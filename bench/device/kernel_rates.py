#!/usr/bin/env python3
"""Measures the kernel rates the cost model's defaults stand for, on the GPU it runs on.

For one dense transformer's training shapes (Llama 3 8B by default, T tokens per micro-batch):
  - GEMM forward (X W^T), data gradient (dY W) and weight gradient (dY^T X) of every linear,
    plus two reference shapes (8192^3, and 2048x2048x13312, the best MAMF shape on H100);
  - SDPA forward and backward, causal, per backend PyTorch offers (flash, cuDNN, default);
  - memory-bound kernels: a device copy, composite fp32 RMSNorm forward+backward, SiLU*mul,
    fp32 cross-entropy over the vocabulary, and a foreach AdamW step.
Each figure is the median of `--iters` CUDA-event-timed runs after warm-up. Writes JSON:

  bench/device/kernel_rates.py --out rates.json [--tokens 8192 16384]
"""
import argparse
import json
import os
import statistics
import sys

import torch
import torch.nn.functional as F


def timed(fn, iters, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(iters):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        out.append(s.elapsed_time(e) * 1e-3)
    return statistics.median(out)


def gemm_rates(a, dev):
    h, f, kv, v = a.hidden, a.ffn, a.kv_heads * (a.hidden // a.heads), a.vocab
    linears = [("wq", h, h), ("wk", kv, h), ("wo", h, h), ("w1", f, h), ("w2", h, f), ("output", v, h)]
    rows = []
    for tokens in a.tokens:
        for name, out_f, in_f in linears:
            x = torch.randn(tokens, in_f, device=dev, dtype=torch.bfloat16)
            w = torch.randn(out_f, in_f, device=dev, dtype=torch.bfloat16)
            dy = torch.randn(tokens, out_f, device=dev, dtype=torch.bfloat16)
            flops = 2.0 * tokens * out_f * in_f
            for kind, fn in (("fwd", lambda: x @ w.t()), ("dgrad", lambda: dy @ w),
                             ("wgrad", lambda: dy.t() @ x)):
                t = timed(fn, a.iters)
                rows.append({"linear": name, "tokens": tokens, "out": out_f, "in": in_f, "kind": kind,
                             "s": t, "tflops": flops / t / 1e12})
            del x, w, dy
    for m, n, k in ((8192, 8192, 8192), (2048, 2048, 13312)):
        x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
        w = torch.randn(k, n, device=dev, dtype=torch.bfloat16)
        t = timed(lambda: x @ w, a.iters)
        rows.append({"linear": f"ref_{m}x{n}x{k}", "tokens": m, "out": n, "in": k, "kind": "fwd",
                     "s": t, "tflops": 2.0 * m * n * k / t / 1e12})
    return rows


def attention_rates(a, dev):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    hd = a.hidden // a.heads
    rows = []
    for tokens in a.tokens:
        b, s = max(tokens // a.seq, 1), a.seq
        q = torch.randn(b, a.heads, s, hd, device=dev, dtype=torch.bfloat16, requires_grad=True)
        k = torch.randn(b, a.heads, s, hd, device=dev, dtype=torch.bfloat16, requires_grad=True)
        v = torch.randn(b, a.heads, s, hd, device=dev, dtype=torch.bfloat16, requires_grad=True)
        fwd_flops = 4.0 * b * a.heads * s * s * hd / 2  # causal: half the score matrix
        for label, backends in (("default", None), ("flash", [SDPBackend.FLASH_ATTENTION]),
                                ("cudnn", [SDPBackend.CUDNN_ATTENTION])):
            def run_fwd():
                return F.scaled_dot_product_attention(q, k, v, is_causal=True)
            try:
                if backends is None:
                    t_f = timed(run_fwd, a.iters)
                    out = run_fwd()
                else:
                    with sdpa_kernel(backends):
                        t_f = timed(run_fwd, a.iters)
                        out = run_fwd()
                g = torch.randn_like(out)

                def run_bwd():
                    torch.autograd.grad(out, (q, k, v), g, retain_graph=True)
                t_b = timed(run_bwd, a.iters)
            except RuntimeError as err:
                rows.append({"backend": label, "tokens": tokens, "error": str(err)[:200]})
                continue
            rows.append({"backend": label, "tokens": tokens, "batch": b, "seq": s, "fwd_s": t_f,
                         "bwd_s": t_b, "fwd_tflops": fwd_flops / t_f / 1e12,
                         "bwd_tflops": 2.5 * fwd_flops / t_b / 1e12})
    return rows


def rmsnorm(x, w, eps=1e-5):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).type_as(x) * w


def memory_rates(a, dev):
    rows = []
    n = 1 << 29  # 1 GiB of bf16
    src = torch.empty(n, device=dev, dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    t = timed(lambda: dst.copy_(src), a.iters)
    rows.append({"op": "copy_bf16_1GiB", "s": t, "bytes": 2 * 2 * n, "tbps": 4 * n / t / 1e12})
    del src, dst
    tokens = a.tokens[0]
    x = torch.randn(tokens, a.hidden, device=dev, dtype=torch.bfloat16, requires_grad=True)
    w = torch.ones(a.hidden, device=dev, dtype=torch.bfloat16, requires_grad=True)
    g = torch.randn(tokens, a.hidden, device=dev, dtype=torch.bfloat16)
    t_f = timed(lambda: rmsnorm(x, w), a.iters)
    t_fb = timed(lambda: torch.autograd.grad(rmsnorm(x, w), (x, w), g), a.iters)
    rows.append({"op": "rmsnorm_fp32_composite", "tokens": tokens, "hidden": a.hidden,
                 "fwd_s": t_f, "fwd_bwd_s": t_fb, "elements": tokens * a.hidden})
    u = torch.randn(tokens, a.ffn, device=dev, dtype=torch.bfloat16)
    z = torch.randn(tokens, a.ffn, device=dev, dtype=torch.bfloat16)
    t = timed(lambda: F.silu(u) * z, a.iters)
    rows.append({"op": "silu_mul", "tokens": tokens, "ffn": a.ffn, "fwd_s": t,
                 "elements": tokens * a.ffn})
    del u, z
    logits = torch.randn(tokens, a.vocab, device=dev, dtype=torch.bfloat16, requires_grad=True)
    labels = torch.randint(0, a.vocab, (tokens,), device=dev)
    t_f = timed(lambda: F.cross_entropy(logits.float(), labels), a.iters)
    t_fb = timed(lambda: torch.autograd.grad(F.cross_entropy(logits.float(), labels), logits), a.iters)
    rows.append({"op": "cross_entropy_fp32", "tokens": tokens, "vocab": a.vocab, "fwd_s": t_f,
                 "fwd_bwd_s": t_fb, "elements": tokens * a.vocab})
    del logits
    params = [torch.nn.Parameter(torch.randn(4096, 4096, device=dev)) for _ in range(64)]
    for p in params:
        p.grad = torch.randn_like(p)
    opt = torch.optim.AdamW(params, lr=1e-4, foreach=True, fused=False)
    t = timed(opt.step, max(a.iters // 2, 3))
    numel = sum(p.numel() for p in params)
    rows.append({"op": "adamw_foreach_fp32", "numel": numel, "s": t, "ns_per_param": t / numel * 1e9})
    t = timed(lambda: torch.nn.utils.clip_grad_norm_(params, 1.0, foreach=True), a.iters)
    rows.append({"op": "clip_grad_norm_foreach_fp32", "numel": numel, "s": t,
                 "ns_per_param": t / numel * 1e9})
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--ffn", type=int, default=14336)
    p.add_argument("--heads", type=int, default=32)
    p.add_argument("--kv-heads", type=int, default=8)
    p.add_argument("--vocab", type=int, default=128256)
    p.add_argument("--seq", type=int, default=8192)
    p.add_argument("--tokens", type=int, nargs="+", default=[8192, 16384])
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    if not torch.cuda.is_available():
        print("kernel_rates.py: no CUDA device", file=sys.stderr)
        return 2
    dev = torch.device("cuda")
    res = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
           "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(), "args": vars(a),
           "gemm": gemm_rates(a, dev), "attention": attention_rates(a, dev),
           "memory": memory_rates(a, dev)}
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(res, f, indent=1)
    os.replace(tmp, a.out)
    for r in res["gemm"]:
        print(f"gemm {r['linear']:>22} T={r['tokens']:6d} {r['kind']:5s} {r['tflops']:7.1f} TFLOP/s")
    for r in res["attention"]:
        print("attention", json.dumps(r))
    for r in res["memory"]:
        print("memory", json.dumps(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())

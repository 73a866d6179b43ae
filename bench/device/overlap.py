#!/usr/bin/env python3
"""How much a collective running beside compute slows the compute (the cost model's overlap_slowdown).

One GPU cannot run NCCL between ranks, so the collective is emulated by what it does to the
local GPU: NCCL's kernels keep one persistent block of 512 threads per channel on an SM for the
collective's whole duration, polling flags between chunks, and stream the data through HBM
(an all-gather at bus bandwidth B reads and writes ~B bytes/s each on every GPU). The emulator is
a kernel of C such blocks that copy 64 KiB chunks, pacing themselves with %globaltimer to an
aggregate HBM rate R (read + write) and busy-waiting in between, on a second stream.

For each emulated collective (C, R) and each compute workload (a Llama 3 8B FFN GEMM and the
composite RMSNorm forward + SiLU·mul, memory-bound), it times the workload alone and with the
emulator running for longer than the workload, alternating the two 5 times, and reports the
median ratio. It also alternates 8k- and 16k-token FFN GEMMs to separate a size effect from the
GPU's power state. Writes JSON:  bench/device/overlap.py --out overlap.json

Status: written 2026-11-29 and not yet run. The device machine stopped lending before it could
run, so no result from it is used anywhere. Run it with bench/device/run_h200_overlap.sh.
"""
import argparse
import json
import os
import statistics
import sys

import torch
import torch.nn.functional as F

KERNEL = r"""
extern "C" __global__ void comm_emulator(const float4* __restrict__ src, float4* __restrict__ dst,
                                         long long vec_per_block, long long chunk_vec,
                                         long long chunks, long long ns_per_chunk) {
  const float4* s = src + blockIdx.x * vec_per_block;
  float4* d = dst + blockIdx.x * vec_per_block;
  unsigned long long t0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  for (long long c = 0; c < chunks; ++c) {
    const long long off = (c * chunk_vec) % vec_per_block;
    for (long long i = threadIdx.x; i < chunk_vec; i += blockDim.x) d[off + i] = s[off + i];
    if (ns_per_chunk > 0) {
      const unsigned long long target = t0 + (unsigned long long)((c + 1) * ns_per_chunk);
      unsigned long long now;
      do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); } while (now < target);
    }
  }
}
"""


def rmsnorm(x, w, eps=1e-5):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).type_as(x) * w


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--reps", type=int, default=5)
    a = p.parse_args()
    import cupy as cp

    kernel = cp.RawKernel(KERNEL, "comm_emulator")
    dev = torch.device("cuda")
    comm_stream = torch.cuda.Stream()
    cp_stream = cp.cuda.ExternalStream(comm_stream.cuda_stream)
    blocks_max, threads = 32, 512
    vec_per_block = (64 << 20) // 16  # 64 MiB per block: the chunks cycle through it
    src = cp.zeros(blocks_max * vec_per_block * 4, dtype=cp.float32)
    dst = cp.zeros_like(src)
    chunk_vec = (64 << 10) // 16

    x = torch.randn(8192, 4096, device=dev, dtype=torch.bfloat16)
    w1 = torch.randn(14336, 4096, device=dev, dtype=torch.bfloat16)
    h = torch.randn(8192, 4096, device=dev, dtype=torch.bfloat16)
    nw = torch.ones(4096, device=dev, dtype=torch.bfloat16)
    u = torch.randn(8192, 14336, device=dev, dtype=torch.bfloat16)
    z = torch.randn(8192, 14336, device=dev, dtype=torch.bfloat16)
    workloads = {
        "gemm_w1_fwd_x20": lambda: [x @ w1.t() for _ in range(20)],
        "rmsnorm_silu_mul_x20": lambda: [(rmsnorm(h, nw), F.silu(u) * z) for _ in range(20)],
    }
    # (channels, aggregate HBM rate in GB/s counting read + write); 0 = spin without traffic.
    configs = [(32, 0), (32, 740), (16, 740), (24, 460)]

    def timed(fn):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        return s.elapsed_time(e) * 1e-3

    def launch_comm(channels, gbps, seconds):
        if gbps > 0:
            per_block_bps = gbps * 1e9 / channels / 2  # bytes copied per block per second
            ns_per_chunk = int(chunk_vec * 16 / per_block_bps * 1e9)
        else:
            ns_per_chunk = 2000  # spin-only: one chunk per 2 us... of zero length
        chunks = int(seconds * 1e9 / ns_per_chunk)
        cv = chunk_vec if gbps > 0 else 0
        with cp_stream:
            kernel((channels,), (threads,), (src, dst, cp.int64(vec_per_block), cp.int64(cv),
                                             cp.int64(chunks), cp.int64(ns_per_chunk)))

    results = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": []}
    for name, fn in workloads.items():
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        base = timed(fn)
        for channels, gbps in configs:
            ratios, alone_s, with_s, comm_s = [], [], [], []
            for _ in range(a.reps):
                t_alone = timed(fn)
                ce0, ce1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                with torch.cuda.stream(comm_stream):
                    ce0.record()
                launch_comm(channels, gbps, 2.0 * base + 0.002)
                with torch.cuda.stream(comm_stream):
                    ce1.record()
                t_with = timed(fn)
                ce1.synchronize()
                torch.cuda.synchronize()
                comm_s.append(ce0.elapsed_time(ce1) * 1e-3)
                alone_s.append(t_alone)
                with_s.append(t_with)
                ratios.append(t_with / t_alone)
            row = {"workload": name, "channels": channels, "hbm_gbps": gbps,
                   "alone_s": statistics.median(alone_s), "with_comm_s": statistics.median(with_s),
                   "slowdown": statistics.median(ratios), "comm_kernel_s": statistics.median(comm_s),
                   "comm_target_s": 2.0 * base + 0.002}
            results["rows"].append(row)
            print(json.dumps(row), flush=True)
    # Is a 16k-token GEMM slower than an 8k-token one at the same GPU state? Alternate them.
    x16 = torch.randn(16384, 4096, device=dev, dtype=torch.bfloat16)
    rates = {"8192": [], "16384": []}
    for _ in range(a.reps):
        for label, xin in (("8192", x), ("16384", x16)):
            t = timed(lambda: [xin @ w1.t() for _ in range(10)])
            rates[label].append(10 * 2.0 * xin.shape[0] * 4096 * 14336 / t / 1e12)
    results["gemm_w1_fwd_interleaved_tflops"] = {k: statistics.median(v) for k, v in rates.items()}
    print(json.dumps(results["gemm_w1_fwd_interleaved_tflops"]), flush=True)
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(results, f, indent=1)
    os.replace(tmp, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

// BatchedCopy: FSDP2's copies as one launch per (up to) 1024 segments. The segment table
// travels in the kernel's parameters (up to 32 KiB since CUDA 12.1 on sm_70+), so a copy-out
// of a unit over 64 ranks needs no device-side table and no host-to-device copy.
#include <algorithm>

#include "backend/cuda/kernels/kernel_util.cuh"
#include "backend/cuda/kernels/kernels.h"

namespace shardscope::backend::cuda {
namespace {

constexpr int kMaxSegmentsPerLaunch = 1024;
// Blocks of one launch in all: enough to fill an H200 (132 SMs) several times.
constexpr int64_t kMaxBlocksPerLaunch = 8192;

struct SegmentTable {
  CopySegment seg[kMaxSegmentsPerLaunch];
};
static_assert(sizeof(SegmentTable) < 32000, "kernel parameters are limited to 32764 bytes");

template <typename Src, typename Dst>
__device__ __forceinline__ Dst Convert(Src v) {
  if constexpr (std::is_same_v<Src, Dst>) {
    return v;  // bit-exact, also for raw bytes
  } else if constexpr (std::is_same_v<Dst, bf16>) {
    return __float2bfloat16_rn(v);
  } else {
    return __bfloat162float(v);
  }
}

// blockIdx.y: the segment; the x blocks stride over its elements.
template <typename Src, typename Dst>
__global__ void BatchedCopyKernel(const Src* __restrict__ src, Dst* __restrict__ dst,
                                  const __grid_constant__ SegmentTable table) {
  const CopySegment s = table.seg[blockIdx.y];
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < s.count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dst[s.dst_offset + i] = s.src_offset < 0 ? Dst{} : Convert<Src, Dst>(src[s.src_offset + i]);
  }
}

template <typename Src, typename Dst>
Status LaunchCopies(const void* src, void* dst, std::span<const CopySegment> segments,
                    cudaStream_t stream) {
  for (size_t first = 0; first < segments.size(); first += kMaxSegmentsPerLaunch) {
    const size_t n = std::min<size_t>(kMaxSegmentsPerLaunch, segments.size() - first);
    SegmentTable table;
    int64_t longest = 0;
    for (size_t i = 0; i < n; ++i) {
      table.seg[i] = segments[first + i];
      longest = std::max(longest, table.seg[i].count);
    }
    if (longest == 0) continue;
    const int64_t per_segment =
        std::clamp<int64_t>((longest + kThreads - 1) / kThreads, 1,
                            std::max<int64_t>(1, kMaxBlocksPerLaunch / static_cast<int64_t>(n)));
    dim3 grid(static_cast<unsigned>(per_segment), static_cast<unsigned>(n));
    BatchedCopyKernel<Src, Dst><<<grid, kThreads, 0, stream>>>(
        static_cast<const Src*>(src), static_cast<Dst*>(dst), table);
    SS_RETURN_IF_ERROR(LaunchStatus("BatchedCopyKernel"));
  }
  return Status::Ok();
}

}  // namespace

Status BatchedCopy(const void* src, ElemType src_type, void* dst, ElemType dst_type,
                   std::span<const CopySegment> segments, cudaStream_t stream) {
  for (const CopySegment& s : segments) {
    if (s.count < 0 || s.dst_offset < 0) {
      return InvalidInput("BatchedCopy: segment with negative count or destination offset");
    }
  }
  using F = float;
  using B = bf16;
  if (src_type == ElemType::kFloat32 && dst_type == ElemType::kFloat32) {
    return LaunchCopies<F, F>(src, dst, segments, stream);
  }
  if (src_type == ElemType::kFloat32 && dst_type == ElemType::kBFloat16) {
    return LaunchCopies<F, B>(src, dst, segments, stream);
  }
  if (src_type == ElemType::kBFloat16 && dst_type == ElemType::kFloat32) {
    return LaunchCopies<B, F>(src, dst, segments, stream);
  }
  if (src_type == ElemType::kBFloat16 && dst_type == ElemType::kBFloat16) {
    return LaunchCopies<B, B>(src, dst, segments, stream);
  }
  if (src_type == ElemType::kByte && dst_type == ElemType::kByte) {
    return LaunchCopies<uint8_t, uint8_t>(src, dst, segments, stream);
  }
  return InvalidInput("BatchedCopy: raw bytes copy only to raw bytes");
}

}  // namespace shardscope::backend::cuda

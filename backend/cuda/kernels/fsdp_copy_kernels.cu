// FSDP2's copies (copy-in, copy-out, reduce copy-in / chunk_cat) and casts as one launch per
// up to 1024 segments. The segment table travels in the kernel's parameters (up to 32 KiB
// since CUDA 12.1 on sm_70+), so a copy-out of a unit over 64 ranks needs no device-side
// table and no host-to-device copy before it.
#include <algorithm>
#include <string>

#include "backend/cuda/kernels/kernel_util.cuh"
#include "backend/cuda/kernels/kernels.h"
#include "backend/device/dtype_access.h"

namespace shardscope::backend::cuda {
namespace {

constexpr int kMaxSegmentsPerLaunch = 1024;
// Blocks of one launch in all: enough to fill an H200 (132 SMs) many times over.
constexpr int64_t kMaxBlocksPerLaunch = 8192;

struct SegmentTable {
  CopySegment seg[kMaxSegmentsPerLaunch];
};
static_assert(sizeof(SegmentTable) < 32000, "kernel parameters are limited to 32764 bytes");

// Same type, no scale: the bytes, 16 at a time where both ends allow, else one at a time.
__global__ void CopyBytesKernel(const __grid_constant__ SegmentTable table, int64_t elem_bytes) {
  const CopySegment s = table.seg[blockIdx.y];
  const int64_t bytes = s.elements * elem_bytes;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  unsigned char* dst = static_cast<unsigned char*>(s.dst);
  if (s.src == nullptr) {
    for (int64_t i = first; i < bytes; i += stride) dst[i] = 0;
    return;
  }
  const unsigned char* src = static_cast<const unsigned char*>(s.src);
  if ((reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(dst)) % 16 == 0) {
    const int64_t vecs = bytes / 16;
    for (int64_t i = first; i < vecs; i += stride) {
      reinterpret_cast<int4*>(dst)[i] = reinterpret_cast<const int4*>(src)[i];
    }
    for (int64_t i = vecs * 16 + first; i < bytes; i += stride) dst[i] = src[i];
  } else {
    for (int64_t i = first; i < bytes; i += stride) dst[i] = src[i];
  }
}

// dst = cast(scale · src) per element (scale 1: no multiply, so casts are exact roundings);
// with `accumulate`, dst = cast(dst + scale · src), a segment without src left as it is.
__global__ void CastCopyKernel(const __grid_constant__ SegmentTable table, DType src_type,
                               DType dst_type, float scale, bool accumulate) {
  const CopySegment s = table.seg[blockIdx.y];
  if (accumulate && s.src == nullptr) return;
  SS_GRID_STRIDE(i, s.elements) {
    float v = 0.0f;
    if (s.src != nullptr) {
      v = LoadAsFloat(s.src, src_type, i);
      if (scale != 1.0f) v = __fmul_rn(scale, v);
    }
    if (accumulate) v = __fadd_rn(LoadAsFloat(s.dst, dst_type, i), v);
    StoreFromFloat(s.dst, dst_type, i, v);
  }
}

}  // namespace

Status FsdpCopy(const FsdpCopyArgs& a, cudaStream_t stream) {
  for (const CopySegment& s : a.segments) {
    if (s.dst == nullptr || s.elements < 0) {
      return InvalidInput("fsdp copy kernel: a segment without dst or with a negative count");
    }
  }
  const bool raw = a.src_dtype == a.dst_dtype && a.scale == 1.0f && !a.accumulate;
  if (!raw && !(IsFloatingDType(a.src_dtype) && IsFloatingDType(a.dst_dtype))) {
    return InvalidInput(std::string("fsdp copy kernel: cannot cast ") +
                        std::string(DTypeName(a.src_dtype)) + " to " +
                        std::string(DTypeName(a.dst_dtype)) + " (floating types only)");
  }
  const int64_t elem_bytes = DTypeBytes(a.src_dtype);
  for (size_t first = 0; first < a.segments.size(); first += kMaxSegmentsPerLaunch) {
    const size_t n = std::min<size_t>(kMaxSegmentsPerLaunch, a.segments.size() - first);
    SegmentTable table;
    int64_t longest = 0;
    for (size_t i = 0; i < n; ++i) {
      table.seg[i] = a.segments[first + i];
      longest = std::max(longest,
                         raw ? table.seg[i].elements * elem_bytes / 16 + 1 : table.seg[i].elements);
    }
    const int64_t per_segment =
        std::clamp<int64_t>((longest + kThreads - 1) / kThreads, 1,
                            std::max<int64_t>(1, kMaxBlocksPerLaunch / static_cast<int64_t>(n)));
    dim3 grid(static_cast<unsigned>(per_segment), static_cast<unsigned>(n));
    if (raw) {
      CopyBytesKernel<<<grid, kThreads, 0, stream>>>(table, elem_bytes);
    } else {
      CastCopyKernel<<<grid, kThreads, 0, stream>>>(table, a.src_dtype, a.dst_dtype, a.scale,
                                                    a.accumulate);
    }
    SS_RETURN_IF_ERROR(LaunchStatus(raw ? "CopyBytesKernel" : "CastCopyKernel"));
  }
  return Status::Ok();
}

Status Cast(const CastArgs& a, cudaStream_t stream) {
  if (a.src == nullptr || a.dst == nullptr) return InvalidInput("cast kernel: src and dst buffers");
  if (a.elements <= 0) return Status::Ok();
  if (a.src_dtype == a.dst_dtype && a.scale == 1.0f) {
    // In place or overlapping (the host uses memmove): a stream-ordered device copy.
    if (a.src == a.dst) return Status::Ok();
    return CudaStatus(cudaMemcpyAsync(a.dst, a.src, a.elements * DTypeBytes(a.src_dtype),
                                      cudaMemcpyDefault, stream),
                      "cast kernel: cudaMemcpyAsync");
  }
  FsdpCopyArgs copy;
  copy.src_dtype = a.src_dtype;
  copy.dst_dtype = a.dst_dtype;
  copy.scale = a.scale;
  copy.segments.push_back(CopySegment{a.src, a.dst, a.elements});
  return FsdpCopy(copy, stream);
}

}  // namespace shardscope::backend::cuda

// Typed element access for kernels whose element types are run-time DTypes (copies, casts,
// fills, eltwise chains, AdamW): load any floating type as float and store a float back with
// the rounding every device uses (backend/device/deterministic.h for bf16, IEEE round to
// nearest even for fp16, truncation toward zero for integers, as the host device's
// StoreFromFloat does). The type is uniform across a launch, so the switch never diverges.
//
// Contents:
//   LoadAs / StoreAs   one element of a typed buffer
//   IsFloatingDType    the types Eltwise, AdamW and the norms accept
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "backend/device/deterministic.h"
#include "core/model/dtype.h"

namespace shardscope::backend::cuda {

__device__ __forceinline__ float LoadAs(const void* p, DType d, int64_t i) {
  switch (d) {
    case DType::kFloat32:
      return static_cast<const float*>(p)[i];
    case DType::kBFloat16:
      return Bf16BitsToFloat(static_cast<const uint16_t*>(p)[i]);
    case DType::kFloat16:
      return __half2float(static_cast<const __half*>(p)[i]);
    case DType::kFloat64:
      return static_cast<float>(static_cast<const double*>(p)[i]);
    case DType::kInt64:
      return static_cast<float>(static_cast<const int64_t*>(p)[i]);
    case DType::kInt32:
      return static_cast<float>(static_cast<const int32_t*>(p)[i]);
    case DType::kInt8:
      return static_cast<float>(static_cast<const int8_t*>(p)[i]);
    default:  // uint8, bool, fp8: raw bytes
      return static_cast<float>(static_cast<const uint8_t*>(p)[i]);
  }
}

__device__ __forceinline__ void StoreAs(void* p, DType d, int64_t i, float v) {
  switch (d) {
    case DType::kFloat32:
      static_cast<float*>(p)[i] = v;
      return;
    case DType::kBFloat16:
      static_cast<uint16_t*>(p)[i] = FloatToBf16Bits(v);
      return;
    case DType::kFloat16:
      static_cast<__half*>(p)[i] = __float2half_rn(v);
      return;
    case DType::kFloat64:
      static_cast<double*>(p)[i] = v;
      return;
    case DType::kInt64:
      static_cast<int64_t*>(p)[i] = static_cast<int64_t>(v);
      return;
    case DType::kInt32:
      static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v);
      return;
    case DType::kInt8:
      static_cast<int8_t*>(p)[i] = static_cast<int8_t>(static_cast<int32_t>(v));
      return;
    default:
      static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(static_cast<int32_t>(v));
      return;
  }
}

__host__ __device__ inline bool IsFloatingDType(DType d) {
  return d == DType::kFloat32 || d == DType::kBFloat16 || d == DType::kFloat16;
}

}  // namespace shardscope::backend::cuda

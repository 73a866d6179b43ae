// Typed element access for buffers whose element type is a run-time DType, in one header for
// the host kernels and the CUDA kernels alike (`__host__ __device__` under nvcc), so both
// devices load and round the same way: any floating type loads as float; a float stores back
// with the rounding every device uses (deterministic.h for bfloat16, IEEE round to nearest
// even for float16), integers truncated toward zero (through int32 for the narrow ones). The
// type is uniform across a kernel launch, so the switch never diverges.
//
// Contents:
//   LoadAsFloat / StoreFromFloat         one element of a typed buffer
//   HalfBitsToFloat / FloatToHalfBits    IEEE binary16 (round to nearest even)
//   IsFloatingDType                      the types Eltwise, AdamW and the norms accept
#pragma once

#include <cstdint>
#include <cstring>

#include "backend/device/deterministic.h"  // SS_HOST_DEVICE, the bfloat16 rounding
#include "core/model/dtype.h"

#if defined(__CUDACC__)
#define SS_DTYPE_INLINE __host__ __device__ __forceinline__
#else
#define SS_DTYPE_INLINE inline
#endif

namespace shardscope::backend {

SS_HOST_DEVICE inline float HalfBitsToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t u;
  if (exp == 0) {
    if (mant == 0) {
      u = sign;
    } else {  // subnormal: normalise
      exp = 127 - 15 + 1;
      while ((mant & 0x400u) == 0) {
        mant <<= 1;
        --exp;
      }
      u = sign | (exp << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 0x1f) {
    u = sign | 0x7f800000u | (mant << 13);
  } else {
    u = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  memcpy(&f, &u, sizeof(f));
  return f;
}

SS_HOST_DEVICE inline uint16_t FloatToHalfBits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof(u));
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs >= 0x7f800000u) return sign | (abs > 0x7f800000u ? 0x7e00 : 0x7c00);
  if (abs >= 0x477ff000u) return sign | 0x7c00;  // rounds to inf
  if (abs < 0x38800000u) {                       // subnormal or zero in half
    if (abs < 0x33000000u) return sign;
    const uint32_t exp = abs >> 23;
    const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - exp;  // 14 .. 24
    uint32_t h = mant >> shift;
    const uint32_t rest = mant & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (h & 1u))) ++h;
    return sign | static_cast<uint16_t>(h);
  }
  uint32_t h = ((abs >> 13) - ((127 - 15) << 10));
  const uint32_t rest = abs & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return sign | static_cast<uint16_t>(h);
}

SS_DTYPE_INLINE float LoadAsFloat(const void* p, DType d, int64_t i) {
  switch (d) {
    case DType::kFloat32:
      return static_cast<const float*>(p)[i];
    case DType::kBFloat16:
      return Bf16BitsToFloat(static_cast<const uint16_t*>(p)[i]);
    case DType::kFloat16:
      return HalfBitsToFloat(static_cast<const uint16_t*>(p)[i]);
    case DType::kFloat64:
      return static_cast<float>(static_cast<const double*>(p)[i]);
    case DType::kInt64:
      return static_cast<float>(static_cast<const int64_t*>(p)[i]);
    case DType::kInt32:
      return static_cast<float>(static_cast<const int32_t*>(p)[i]);
    case DType::kInt8:
      return static_cast<float>(static_cast<const int8_t*>(p)[i]);
    default:  // uint8, bool, fp8 stored as raw bytes
      return static_cast<float>(static_cast<const uint8_t*>(p)[i]);
  }
}

SS_DTYPE_INLINE void StoreFromFloat(void* p, DType d, int64_t i, float v) {
  switch (d) {
    case DType::kFloat32:
      static_cast<float*>(p)[i] = v;
      return;
    case DType::kBFloat16:
      static_cast<uint16_t*>(p)[i] = FloatToBf16Bits(v);
      return;
    case DType::kFloat16:
      static_cast<uint16_t*>(p)[i] = FloatToHalfBits(v);
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

// The types Eltwise, AdamW and the norms accept.
SS_HOST_DEVICE inline bool IsFloatingDType(DType d) {
  return d == DType::kFloat32 || d == DType::kBFloat16 || d == DType::kFloat16;
}

}  // namespace shardscope::backend

// AdamW's per-element update in the operation order of PyTorch's foreach implementation
// (torch/optim/adam.py _multi_tensor_adam with decoupled weight decay, the AdamW default on
// CUDA, non-capturable), one definition for the CUDA kernel and host references:
//   step += 1
//   p  = p · (1 − lr · wd)                       _foreach_mul_
//   m  = lerp(m, g, 1 − β1)                      _foreach_lerp_
//   v  = v · β2;  v = v + (1 − β2) · g · g       _foreach_mul_, _foreach_addcmul_
//   d  = sqrt(v) / sqrt(1 − β2^step) + eps       _foreach_sqrt, _foreach_div_, _foreach_add_
//   p  = p + (−lr / (1 − β1^step)) · (m / d)     _foreach_addcdiv_
// The scalars are computed in double (Python floats) and enter the fp32 kernels as fp32
// (their opmath type); every fp32 operation is rounded on its own (no fused multiply-add),
// so the kernel and a host loop give bit-identical results.
//
// Contents:
//   AdamWHyper      lr, betas, eps, weight decay and the step count after the increment
//   AdamWScalars    the fp32 scalars of one step; AdamWScalarsFor computes them
//   AdamWElement    one element's update
#pragma once

#include <cmath>
#include <cstdint>

#include "backend/cuda/kernels/deterministic_value.h"  // SS_HOST_DEVICE

namespace shardscope::backend::cuda {

struct AdamWHyper {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 1e-2;
  int64_t step = 1;  // the step count after this step's increment (1 on the first step)
};

struct AdamWScalars {
  float decay = 1.0f;  // 1 − lr · wd
  float lerp_weight = 0.1f;
  float beta2 = 0.999f;
  float one_minus_beta2 = 0.001f;
  float bias_correction2_sqrt = 1.0f;
  float eps = 1e-8f;
  float step_size = -1e-3f;  // −lr / (1 − β1^step)
};

inline AdamWScalars AdamWScalarsFor(const AdamWHyper& h) {
  const double step = static_cast<double>(h.step);
  AdamWScalars s;
  s.decay = static_cast<float>(1.0 - h.lr * h.weight_decay);
  s.lerp_weight = static_cast<float>(1.0 - h.beta1);
  s.beta2 = static_cast<float>(h.beta2);
  s.one_minus_beta2 = static_cast<float>(1.0 - h.beta2);
  s.bias_correction2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(h.beta2, step)));
  s.eps = static_cast<float>(h.eps);
  s.step_size = static_cast<float>(h.lr / (1.0 - std::pow(h.beta1, step)) * -1.0);
  return s;
}

#if defined(__CUDA_ARCH__)
#define SS_FMUL(a, b) __fmul_rn(a, b)
#define SS_FADD(a, b) __fadd_rn(a, b)
#define SS_FSUB(a, b) __fsub_rn(a, b)
#define SS_FDIV(a, b) __fdiv_rn(a, b)
#define SS_FSQRT(a) __fsqrt_rn(a)
#else
// Host: separate statements keep every operation rounded to fp32 on its own, whatever the
// compiler's contraction setting.
#define SS_FMUL(a, b) ::shardscope::backend::cuda::internal::Mul(a, b)
#define SS_FADD(a, b) ::shardscope::backend::cuda::internal::Add(a, b)
#define SS_FSUB(a, b) ::shardscope::backend::cuda::internal::Sub(a, b)
#define SS_FDIV(a, b) ::shardscope::backend::cuda::internal::Div(a, b)
#define SS_FSQRT(a) std::sqrt(a)
namespace internal {
inline float Mul(float a, float b) {
  volatile float r = a * b;
  return r;
}
inline float Add(float a, float b) {
  volatile float r = a + b;
  return r;
}
inline float Sub(float a, float b) {
  volatile float r = a - b;
  return r;
}
inline float Div(float a, float b) {
  volatile float r = a / b;
  return r;
}
}  // namespace internal
#endif

SS_HOST_DEVICE inline void AdamWElement(float& p, float g, float& m, float& v,
                                        const AdamWScalars& s) {
  p = SS_FMUL(p, s.decay);
  // at::lerp: weight < 0.5 ? self + weight · (end − self) : end − (end − self) · (1 − weight)
  if (s.lerp_weight < 0.5f) {
    m = SS_FADD(m, SS_FMUL(s.lerp_weight, SS_FSUB(g, m)));
  } else {
    m = SS_FSUB(g, SS_FMUL(SS_FSUB(g, m), SS_FSUB(1.0f, s.lerp_weight)));
  }
  v = SS_FMUL(v, s.beta2);
  v = SS_FADD(v, SS_FMUL(SS_FMUL(s.one_minus_beta2, g), g));  // addcmul: self + value·t1·t2
  const float denom = SS_FADD(SS_FDIV(SS_FSQRT(v), s.bias_correction2_sqrt), s.eps);
  p = SS_FADD(p, SS_FMUL(s.step_size, SS_FDIV(m, denom)));  // addcdiv: self + value·(t1/t2)
}

}  // namespace shardscope::backend::cuda

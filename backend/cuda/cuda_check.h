// CUDA, cuBLASLt and NCCL error codes as Status values (the NCCL model of errors travelling
// upward with where they came from).
//
// Contents:
//   CudaStatus     cudaError_t → Status (RuntimeError naming the call and the CUDA error)
//   CublasStatus   cublasStatus_t → Status
//   SS_CUDA_RETURN_IF_ERROR   returns the Status of a failing CUDA runtime call
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <source_location>
#include <string>

#include "core/util/status.h"

namespace shardscope::backend::cuda {

// OK for cudaSuccess; otherwise a RuntimeError "`what`: cudaErrorX (description)". Out of
// memory is a runtime failure too (exit 3): the caller adds the op_id and the breakdown.
inline Status CudaStatus(cudaError_t err, const std::string& what,
                         std::source_location at = std::source_location::current()) {
  if (err == cudaSuccess) return Status::Ok();
  return RuntimeError(what + ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")",
                      at);
}

inline Status CublasStatus(cublasStatus_t err, const std::string& what,
                           std::source_location at = std::source_location::current()) {
  if (err == CUBLAS_STATUS_SUCCESS) return Status::Ok();
  return RuntimeError(
      what + ": " + cublasLtGetStatusName(err) + " (" + cublasLtGetStatusString(err) + ")", at);
}

}  // namespace shardscope::backend::cuda

#define SS_CUDA_RETURN_IF_ERROR(call) \
  SS_RETURN_IF_ERROR(::shardscope::backend::cuda::CudaStatus((call), #call))

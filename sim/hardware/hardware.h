// The machines shardscope can simulate: one GPU type, the node it sits in, how many nodes.
// Figures come from sim/hardware/catalog.json (embedded into the library at build time; each
// figure cites its source there) and a calibration file may override any of them
// (sim/cost/calibration.h).
//
// Units: `_gbps` is 10^9 BYTES per second (GB/s, like nccl-tests); network line rates are
// `_gbit_per_s` (10^9 bits per second); `_flops` is FLOP/s; `_bytes` is bytes.
//
// Contents:
//   GpuArch         NCCL's architecture rows (Ampere / Hopper / Blackwell) + AMD CDNA3
//   GpuSpec         one GPU: peak and measured matmul FLOP/s, HBM, NVLink, NVLS, PCIe, efficiencies
//   NodeSpec        one node: GPUs, NVLink domain, NICs and their line rate
//   Hardware        GPU + node + node count (what the cost model prices against)
//   LookupHardware  catalog name + gpus_per_node + nodes → Hardware (did-you-mean on typos)
//   CatalogGpuNames the names LookupHardware accepts
//   CatalogJson     the embedded catalog text (for `shardscope` to print, and for tests)
//   ApplyGpuFields / ApplyNodeFields   set figures from catalog-style JSON keys (the catalog
//                   and calibration files share these keys)
//   GpuFieldNames / NodeFieldNames     those keys
//
// Example:
//   SS_ASSIGN_OR_RETURN(Hardware hw, LookupHardware("h100-sxm", 8, 4));
//   double nic = hw.NicGbpsPerGpu();   // 50 GB/s for one 400 Gb/s NIC per GPU
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/util/status.h"

namespace shardscope {

// Selects the rows of NCCL's tuning tables (src/graph/tuning.cc) and the NVLS availability.
enum class GpuArch { kAmpere, kHopper, kBlackwell, kCdna3 };
std::string_view GpuArchName(GpuArch arch);  // "ampere", "hopper", "blackwell", "cdna3"

struct GpuSpec {
  std::string name;         // catalog key, e.g. "h100-sxm"
  std::string description;  // human-readable, e.g. "NVIDIA H100 SXM 80 GB"
  // The catalog GPU whose measured runs the predictions reproduce (catalog.json `_sources`):
  // this one, one of the same die, or "" (no measured run checks this GPU's figures).
  std::string validated_by;
  GpuArch arch = GpuArch::kHopper;
  double peak_bf16_flops = 0;       // dense datasheet peak
  double best_matmul_flops = 0;     // best measured bf16 matmul (MAMF); GEMM efficiency cap
  int64_t hbm_bytes = 0;            // memory as torch.cuda reports it (total)
  int64_t reserved_bytes = 0;       // CUDA context + NCCL buffers + allocator slack, not usable
  double hbm_gbps = 0;              // HBM bandwidth (datasheet)
  double nvlink_gbps = 0;           // NVLink (xGMI) per direction, per GPU (datasheet)
  int nvlink_links = 0;             // links per GPU (NCCL multiplies links by the per-link rate)
  double nvlink_link_gbps = 0;      // NCCL's effective per-link rate (src/graph/topo.h)
  bool nvls = false;                // NVLink SHARP (NVSwitch multicast) available
  int nccl_channels = 32;           // ring/tree channels NCCL opens on a full node
  int nvls_channels = 16;           // NVLS channels (NCCL_NVLS_NCHANNELS default)
  double pcie_gbps = 0;             // host<->device copy rate, pinned memory, per direction
  int sm_count = 0;                 // SMs (CUs); communication blocks take some (cost_params.h)
  double attention_efficiency = 0;  // fused attention (FlashAttention-2) forward / peak
  double cudnn_attention_efficiency = 0;      // SDPA's cuDNN backend forward / peak; 0: no figure
  double cudnn_attention_backward_ratio = 0;  // its backward rate over forward; 0: cost default
  double memory_bound_efficiency = 0;         // achieved fraction of hbm_gbps for streaming kernels
  double elementwise_efficiency = 0;  // same for the model's eager kernels (0: cost default)
  // Absolute jitter of one measured operation's duration (clock, launch gaps, a shared host's
  // time slices): `calibrate` fits shorter operations by absolute, not relative, error.
  // 0: timed to well under a microsecond (GPU events).
  double timing_jitter_ns = 0;

  // HBM the training job can allocate (hbm_bytes - reserved_bytes).
  int64_t usable_bytes() const { return hbm_bytes - reserved_bytes; }
};

struct NodeSpec {
  int gpus_per_node = 8;
  // GPUs one NVLink fabric joins: the node's own for HGX / OAM nodes; a whole number of nodes
  // when larger (GB200 NVL72: 72 over 18 trays), which collectives then cross over NVLink.
  int nvlink_domain = 8;
  int nics_per_node = 8;
  double nic_gbit_per_s = 400;   // line rate of one NIC
  double nic_efficiency = 0.94;  // achievable fraction of line rate (46–48 GB/s of 50 for NDR)
};

struct Hardware {
  GpuSpec gpu;
  NodeSpec node;
  int nodes = 1;

  int world_size() const { return node.gpus_per_node * nodes; }
  // Achievable network bandwidth per GPU (NICs shared evenly by the node's GPUs), GB/s.
  double NicGbpsPerGpu() const;
};

// Builds the hardware for `gpus_per_node` GPUs of type `gpu_name` per node (1..the catalog
// node's size) on `nodes` nodes. Unknown name → InvalidInput listing the closest catalog
// names ("did you mean h100-sxm?") and all valid ones.
Result<Hardware> LookupHardware(std::string_view gpu_name, int gpus_per_node, int nodes);

// The GPU names of the catalog, in catalog order.
std::vector<std::string> CatalogGpuNames();

// The embedded sim/hardware/catalog.json.
std::string_view CatalogJson();

// Sets every field of `gpu` named by a key of the object `j` ("peak_bf16_tflops": 989, ...;
// see catalog.json). Unknown keys, wrong types and out-of-range values → InvalidInput
// "<where>.<key>: ..." (with a did-you-mean for unknown keys). Only numeric/boolean figures:
// name, description, arch and node are the catalog's own business.
Status ApplyGpuFields(const nlohmann::json& j, std::string_view where, GpuSpec* gpu);
// Same for the node keys (gpus_per_node, nvlink_domain, nics_per_node, nic_gbit_per_s,
// nic_efficiency).
Status ApplyNodeFields(const nlohmann::json& j, std::string_view where, NodeSpec* node);
std::vector<std::string> GpuFieldNames();
std::vector<std::string> NodeFieldNames();

}  // namespace shardscope

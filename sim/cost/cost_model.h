// How long work takes: the one interface between the event engine and the figures. The engine
// asks for durations; it never sees an efficiency or a bandwidth (the ASTRA-sim split). A
// calibrated model (sim/calibrate) replaces the default one without touching the engine.
//
// Contents:
//   GroupShape          size / ranks per node / nodes of a process group (decides the links)
//   GroupShapeOf        ProcessGroup + gpus_per_node (+ NVLink domain) → GroupShape
//   NcclAlgo, NcclProto which algorithm / protocol won (NCCL's names)
//   CollectiveEstimate  duration + the winning algorithm/protocol + bus and algorithm bandwidth
//                       + what the collective holds while it runs (SMs, HBM traffic)
//   ComputeSplit        a compute duration and the parts of it SMs / HBM bound
//   OverlapModel        how communication beside compute slows it
//   CostModel           the abstract interface the engine calls
//   MakeDefaultCostModel  catalog hardware + parameters → the default model (cost-model.md)
//
// Example (engine side):
//   SS_ASSIGN_OR_RETURN(Hardware hw, LookupHardware("h100-sxm", 8, 1));
//   CostParams params = DefaultCostParams(hw);           // sim/cost/cost_params.h
//   SS_RETURN_IF_ERROR(ApplyCalibration(cal, &hw, &params));  // optional
//   std::unique_ptr<CostModel> cost = MakeDefaultCostModel(hw, params);
//   int64_t t = cost->ComputeOpNs(op.items);
//   CollectiveEstimate c = cost->CollectiveNs(op.type, op.bytes,
//                                             GroupShapeOf(schedule.groups[op.group], 8));
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "core/schedule/schedule.h"
#include "sim/cost/cost_params.h"
#include "sim/hardware/hardware.h"

namespace shardscope {

struct GroupShape {
  int size = 1;            // ranks in the group
  int ranks_per_node = 1;  // most group ranks sharing one node
  int nodes = 1;           // distinct nodes the group spans
  // The same over NVLink domains when a domain spans several nodes (GB200 NVL72); 0: the
  // node is the domain (HGX / OAM nodes), so shapes written as {size, per node, nodes} hold.
  int ranks_per_domain = 0;
  int domains = 0;
  bool operator==(const GroupShape&) const = default;
};

// Ranks are placed row-major: global rank r lives on node r / gpus_per_node and in NVLink
// domain r / nvlink_domain (<= 0 or below gpus_per_node: the node is the domain).
GroupShape GroupShapeOf(const ProcessGroup& group, int gpus_per_node, int nvlink_domain = 0);

enum class NcclAlgo {
  kRing,
  kTree,
  kNvls,        // NVLink SHARP (single node)
  kNvlsTree,    // NVLS inside nodes + tree across nodes
  kPat,         // one GPU per node all-gather / reduce-scatter
  kAllToAll,    // n-1 concurrent point-to-point transfers (EP dispatch/combine)
  kP2p,         // one send/recv (PP)
  kLocal,       // group of one rank: a device-local copy
  kCalibrated,  // a calibration file's latency/bandwidth for this op and group shape
};
enum class NcclProto { kLL, kLL128, kSimple };
std::string_view NcclAlgoName(NcclAlgo algo);     // "Ring", "Tree", "NVLS", ...
std::string_view NcclProtoName(NcclProto proto);  // "LL", "LL128", "Simple"

struct CollectiveEstimate {
  int64_t ns = 0;
  NcclAlgo algo = NcclAlgo::kRing;
  NcclProto proto = NcclProto::kSimple;
  int channels = 0;       // channels the message actually uses
  double busbw_gbps = 0;  // nccl-tests bus bandwidth of this estimate (bytes / ns × factor)
  double algbw_gbps = 0;  // bytes / time
  // HBM traffic on each rank while it runs (GB/s): the data it sends is read, what it receives
  // is written, and a reduction also reads the local operand.
  double hbm_gbps = 0;
};

// ns is what ComputeNs returns; sm_ns + hbm_ns <= ns, the rest being launch gaps and overheads.
struct ComputeSplit {
  int64_t ns = 0;
  double sm_ns = 0;   // bound by SM throughput
  double hbm_ns = 0;  // bound by HBM bandwidth
  double flops = 0;   // FLOPs of the work (what traces and summaries report)
};

// cost-model.md: communication kernels beside compute "take SMs and memory bandwidth". NCCL
// runs one thread block per channel for the whole collective, and those blocks use enough
// registers that no GEMM or attention block shares their SMs: SM-bound work runs on
// sm_count - channels SMs. Memory-bound work loses the HBM bandwidth the collective moves.
// A calibrated uniform_slowdown (>= 1) replaces both terms with one factor.
struct OverlapModel {
  double uniform_slowdown = 0;  // 0: the contention model below
  int sm_count = 0;             // 0: no SM term
  double hbm_gbps = 0;          // achievable HBM rate of streaming work; 0: no HBM term
};

class CostModel {
 public:
  virtual ~CostModel() = default;

  // Duration of one compute item on this GPU, including its kernel-launch gaps, and the parts
  // of it SMs and HBM bound.
  virtual ComputeSplit ComputeSplitNs(const ComputeItem& item) const = 0;
  // Duration of work the CPU runs (ScheduleOp::on_host: the offloaded optimizer step), priced
  // at the host's rate instead of the GPU's; includes UnitOverheadNs(). 0 items → 0.
  virtual int64_t HostComputeOpNs(const std::vector<ComputeItem>& items) const = 0;
  // Framework overhead paid once per compute op (FSDP hooks, Python between modules).
  virtual int64_t UnitOverheadNs() const = 0;
  // A collective of `bytes` (nccl-tests size: gathered size for all-gather, input size for
  // reduce-scatter, per-rank buffer for all-reduce / all-to-all, message for send/recv).
  virtual CollectiveEstimate CollectiveNs(OpType type, int64_t bytes,
                                          const GroupShape& group) const = 0;
  // kCopyH2D / kCopyD2H over PCIe; kCopyIn is a device-local copy/cast of `bytes` output
  // (HBM-bound: hbm_ns; host copies use copy engines and bind neither).
  virtual ComputeSplit CopySplitNs(OpType type, int64_t bytes) const = 0;
  // How compute slows while communication kernels run beside it.
  virtual OverlapModel Overlap() const = 0;
  // The hardware priced against (after calibration).
  virtual const Hardware& hardware() const = 0;

  int64_t ComputeNs(const ComputeItem& item) const { return ComputeSplitNs(item).ns; }
  int64_t CopyNs(OpType type, int64_t bytes) const { return CopySplitNs(type, bytes).ns; }
  // Sum of ComputeSplitNs over `items` plus OpOverheadNs(items).
  ComputeSplit ComputeOpSplit(const std::vector<ComputeItem>& items) const;
  // UnitOverheadNs() for an op that runs module work or the optimizer; 0 for an op of FSDP
  // copies alone (their hook's Python is the overhead of the compute op they serve) or none.
  int64_t OpOverheadNs(const std::vector<ComputeItem>& items) const;
  int64_t ComputeOpNs(const std::vector<ComputeItem>& items) const {
    return ComputeOpSplit(items).ns;
  }
};

// The default model of cost-model.md: GEMM efficiency curve, attention efficiency,
// memory-bound roofline, NCCL's own collective model (sim/cost/nccl_model.h).
std::unique_ptr<CostModel> MakeDefaultCostModel(const Hardware& hw, const CostParams& params);

}  // namespace shardscope
